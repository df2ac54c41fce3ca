"""gp.saved_model: TF1's `tf.compat.v1.saved_model` (SavedModel directories).

    gp.saved_model.simple_save(sess, export_dir, {"x": x}, {"y": y})
    builder = gp.saved_model.builder.SavedModelBuilder(export_dir)   # or gp.saved_model.Builder
    meta = gp.saved_model.loader.load(sess, [gp.saved_model.tag_constants.SERVING], export_dir)

The constants import here; the modules that read and write protobuf (loader, builder,
signature_def_utils, utils, main_op) and the functions from them load on first use, so
`import graphops` pays for no protobuf.
"""

import importlib

from graphops.api.tf1_names import missing_tf1_attribute
from graphops.saved_model import constants, signature_constants, tag_constants
from graphops.saved_model.constants import (  # TF's gp.saved_model.* names
    ASSETS_DIRECTORY, ASSETS_KEY, DEBUG_DIRECTORY, DEBUG_INFO_FILENAME_PB, LEGACY_INIT_OP_KEY,
    MAIN_OP_KEY, SAVED_MODEL_FILENAME_PB, SAVED_MODEL_FILENAME_PBTXT,
    SAVED_MODEL_SCHEMA_VERSION, VARIABLES_DIRECTORY, VARIABLES_FILENAME)
from graphops.saved_model.signature_constants import (
    CLASSIFY_INPUTS, CLASSIFY_METHOD_NAME, CLASSIFY_OUTPUT_CLASSES, CLASSIFY_OUTPUT_SCORES,
    DEFAULT_SERVING_SIGNATURE_DEF_KEY, PREDICT_INPUTS, PREDICT_METHOD_NAME, PREDICT_OUTPUTS,
    REGRESS_INPUTS, REGRESS_METHOD_NAME, REGRESS_OUTPUTS)
from graphops.saved_model.tag_constants import GPU, SERVING, TPU, TRAINING

__all__ = [
    "constants", "signature_constants", "tag_constants", "ASSETS_DIRECTORY", "ASSETS_KEY",
    "DEBUG_DIRECTORY", "DEBUG_INFO_FILENAME_PB", "LEGACY_INIT_OP_KEY", "MAIN_OP_KEY",
    "SAVED_MODEL_FILENAME_PB", "SAVED_MODEL_FILENAME_PBTXT", "SAVED_MODEL_SCHEMA_VERSION",
    "VARIABLES_DIRECTORY", "VARIABLES_FILENAME", "CLASSIFY_INPUTS", "CLASSIFY_METHOD_NAME",
    "CLASSIFY_OUTPUT_CLASSES", "CLASSIFY_OUTPUT_SCORES", "DEFAULT_SERVING_SIGNATURE_DEF_KEY",
    "PREDICT_INPUTS", "PREDICT_METHOD_NAME", "PREDICT_OUTPUTS", "REGRESS_INPUTS",
    "REGRESS_METHOD_NAME", "REGRESS_OUTPUTS", "GPU", "SERVING", "TPU", "TRAINING",
    "loader", "builder", "signature_def_utils", "utils", "main_op", "load",
    "maybe_saved_model_directory", "contains_saved_model", "Builder", "simple_save",
    "build_signature_def", "classification_signature_def", "predict_signature_def",
    "regression_signature_def", "is_valid_signature", "build_tensor_info",
    "get_tensor_from_tensor_info", "main_op_with_restore",
]

_PACKAGE = "graphops.saved_model"
_MODULES = ("loader", "builder", "signature_def_utils", "utils", "main_op")
_FUNCTIONS = {     # name: (module, name there)
    "load": ("loader", "load"),
    "maybe_saved_model_directory": ("loader", "maybe_saved_model_directory"),
    "contains_saved_model": ("loader", "contains_saved_model"),
    "Builder": ("builder", "SavedModelBuilder"),
    "simple_save": ("simple", "simple_save"),
    "build_signature_def": ("signature_def_utils", "build_signature_def"),
    "classification_signature_def": ("signature_def_utils", "classification_signature_def"),
    "predict_signature_def": ("signature_def_utils", "predict_signature_def"),
    "regression_signature_def": ("signature_def_utils", "regression_signature_def"),
    "is_valid_signature": ("signature_def_utils", "is_valid_signature"),
    "build_tensor_info": ("utils", "build_tensor_info"),
    "get_tensor_from_tensor_info": ("utils", "get_tensor_from_tensor_info"),
    "main_op_with_restore": ("main_op", "main_op_with_restore"),
}


def __getattr__(name):
    if name in _MODULES:
        value = importlib.import_module(f"{_PACKAGE}.{name}")
    elif name in _FUNCTIONS:
        module, attr = _FUNCTIONS[name]
        value = getattr(importlib.import_module(f"{_PACKAGE}.{module}"), attr)
    else:
        raise missing_tf1_attribute("saved_model", name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_MODULES) | set(_FUNCTIONS))
