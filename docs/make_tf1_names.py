"""Writes graphops/api/tf1_api_names.txt: the public names of TensorFlow's TF1 API.

One dotted name per line, relative to `tf.compat.v1` (`reshape`, `nn.conv2d`,
`train.Saver`), for every public non-module attribute of `tf.compat.v1` and of its
namespaces, recursively. graphops reads the file to say, for a name it lacks, that TF1 has
it (graphops/api/tf1_names.py). Needs TensorFlow; run from the repository root:

    .venv/bin/python docs/make_tf1_names.py
"""

import os
import pathlib
import types

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf  # noqa: E402

OUT = pathlib.Path(__file__).resolve().parent.parent / "graphops" / "api" / "tf1_api_names.txt"
# namespaces left out: the compat cycle, raw_ops (graphops has gp.raw_ops for every op it
# registers) and Keras (a separate library)
SKIP = {"compat", "raw_ops", "keras"}
# TF 1.x names that TF 2's compat.v1 no longer has
REMOVED_IN_TF2 = ["contrib"]
# tf.compat.v1.layers loads only with the tf_keras package; TF 1.15's tf.layers held these
LAYERS = ["AveragePooling1D", "AveragePooling2D", "AveragePooling3D", "BatchNormalization",
          "Conv1D", "Conv2D", "Conv2DTranspose", "Conv3D", "Conv3DTranspose", "Dense",
          "Dropout", "Flatten", "InputSpec", "Layer", "MaxPooling1D", "MaxPooling2D",
          "MaxPooling3D", "SeparableConv1D", "SeparableConv2D", "average_pooling1d",
          "average_pooling2d", "average_pooling3d", "batch_normalization", "conv1d", "conv2d",
          "conv2d_transpose", "conv3d", "conv3d_transpose", "dense", "dropout", "flatten",
          "max_pooling1d", "max_pooling2d", "max_pooling3d", "separable_conv1d",
          "separable_conv2d"]


def _module_name(value):
    try:
        return value.__name__
    except AttributeError:       # Keras 3's lazy loader
        return ""


def _names(module, prefix, seen):
    """Dotted public names under `module`. TF's generated namespaces (tensorflow._api...)
    are walked into; other TensorFlow modules they expose (flags) give their own names."""
    for name in sorted(dir(module)):
        if name.startswith("_"):
            continue
        try:
            value = getattr(module, name)
        except Exception:        # a lazily loaded namespace whose library is missing
            continue
        if not isinstance(value, types.ModuleType):
            yield prefix + name
            continue
        module_name = _module_name(value)
        if name in SKIP or not module_name.startswith("tensorflow."):
            continue
        if module_name.startswith("tensorflow._api."):
            if id(value) not in seen:
                seen.add(id(value))
                yield from _names(value, f"{prefix}{name}.", seen)
        else:
            yield from (f"{prefix}{name}.{n}" for n in dir(value)
                        if not n.startswith("_")
                        and not isinstance(getattr(value, n), types.ModuleType))


def main():
    names = set(_names(tf.compat.v1, "", set())) | set(REMOVED_IN_TF2)
    if not any(n.startswith("layers.") for n in names):
        names.update("layers." + n for n in LAYERS)
    names = sorted(names)
    header = (f"# Public names of TensorFlow {tf.__version__}'s tf.compat.v1 API, one per line\n"
              "# (written by docs/make_tf1_names.py; plus TF 1.x's contrib and, without tf_keras,\n"
              "# TF 1.15's tf.layers)\n")
    OUT.write_text(header + "\n".join(names) + "\n")
    print(f"{len(names)} names -> {OUT}")


if __name__ == "__main__":
    main()
