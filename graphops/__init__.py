"""graphops: TensorFlow-style dataflow graphs of registered ops, run on NumPy or CuPy.

    import graphops as gp
    x = gp.placeholder(gp.float32, [None, 3], name="x")
    y = x * 2.0 + 1.0
    with gp.Session() as sess:
        sess.run(y, feed_dict={x: [[1, 2, 3]]})

See DESIGN.md ("Public contract") for the whole surface.
"""

import importlib

import kernels  # noqa: F401  (registers the op definitions, then their kernels)
from registry import errors
from registry.dtypes import (DType, as_dtype, bfloat16, complex64, complex128, double,
                             float16, float32, float64, half, int8, int16, int32, int64, string,
                             uint8, uint16, uint32, uint64)
from registry.dtypes import bool_ as bool  # noqa: A001  (TF's name: gp.bool)
from registry.tensor_shape import TensorShape

from graphops import config, nn, ops, raw_ops
from graphops.constant_op import constant, convert_to_tensor, placeholder
from graphops.graph import (Graph, control_dependencies, device, get_default_graph, name_scope,
                            reset_default_graph)
from graphops.scope import ClientSession, Scope
from graphops.session import Session
from graphops.tensor import Operation, Tensor

__all__ = [
    "errors", "DType", "as_dtype", "bfloat16", "bool", "complex64", "complex128", "double",
    "float16", "float32", "float64", "half", "int8", "int16", "int32", "int64", "string",
    "uint8", "uint16", "uint32", "uint64", "TensorShape", "config", "nn", "ops", "raw_ops",
    "constant", "convert_to_tensor", "placeholder", "Graph", "control_dependencies", "device",
    "get_default_graph", "name_scope", "reset_default_graph", "ClientSession", "Scope",
    "Session", "Operation", "Tensor", "import_graph_def", "graph_def_from_json",
    "graph_def_to_json", "visualize",
]

# ---- gradients, variables and training (gradients.py, grad/, variables.py, train.py) ----
from graphops import test_util as test, train  # noqa: E402
from graphops.gradients import (NoGradient, NotDifferentiable, RegisterGradient,  # noqa: E402
                                gradients)
from graphops.executor import to_host as to_numpy  # noqa: E402  (eager GPU results -> NumPy)
from graphops.math_ops import argmax, cast, equal, reduce_mean, reduce_sum  # noqa: E402
from graphops.variables import (Variable, global_variables,  # noqa: E402
                                global_variables_initializer, trainable_variables,
                                variables_initializer)

# GraphDef interchange and pictures load on first use (they pull in json, subprocess, ...).
_LAZY = {"import_graph_def": "graphops.graph_def", "graph_def_from_json": "graphops.graph_json",
         "graph_def_to_json": "graphops.graph_json", "visualize": "graphops.pictures"}


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module 'graphops' has no attribute {name!r}")
    value = globals()[name] = getattr(importlib.import_module(_LAZY[name]), name)
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


__all__ += [
    "test", "train", "NoGradient", "NotDifferentiable", "RegisterGradient", "gradients",
    "argmax", "cast", "equal", "reduce_mean", "reduce_sum", "Variable", "global_variables",
    "global_variables_initializer", "trainable_variables", "variables_initializer", "to_numpy",
]
