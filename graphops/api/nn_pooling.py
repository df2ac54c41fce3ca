"""TF's pooling wrappers (``tf.nn.max_pool2d``, ``max_pool3d``, ``avg_pool2d``,
``avg_pool3d``, TF1's ``max_pool`` / ``avg_pool``, ``max_pool_with_argmax``) and the
spatial rearrangements ``space_to_depth`` / ``depth_to_space``, built on ``graphops.raw_ops``:
ksize/strides given as an int or 1, n or n+2 values."""

import numpy as np

from graphops.api import raw_ops
from graphops.api.nn_args import convert_padding, deprecated_argument_lookup, get_sequence
from graphops.registry import dtypes


def _pool_window(ksize, strides, n, data_format):
    """ksize/strides given as an int or a list of 1, n or n+2 values -> the op's n+2."""
    channel_index = 1 if data_format.startswith("NC") else n + 1
    return (get_sequence(ksize, n, channel_index, "ksize"),
            get_sequence(strides, n, channel_index, "strides"))


def _pool(pool_op, n, inputs, ksize, strides, padding, data_format, name):
    """`pool_op` on `inputs` ({arg name: tensor}) over `n` spatial dims."""
    ksize, strides = _pool_window(ksize, strides, n, data_format)
    return pool_op(**inputs, ksize=ksize, strides=strides, padding=padding,
                   data_format=data_format, name=name)


def max_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):  # noqa: A002
    """Max pooling over the two spatial dims (``tf.nn.max_pool2d``); ``padding`` may be a
    list of [before, after] pairs (EXPLICIT)."""
    data_format = data_format or "NHWC"
    ksize, strides = _pool_window(ksize, strides, 2, data_format)
    if isinstance(padding, (list, tuple)) and data_format == "NCHW_VECT_C":
        raise ValueError("`data_format='NCHW_VECT_C'` is not supported with explicit "
                         f"padding. Received: padding={padding}")
    padding, explicit_paddings = convert_padding(padding)
    return raw_ops.MaxPool(input=input, ksize=ksize, strides=strides, padding=padding,
                           explicit_paddings=explicit_paddings, data_format=data_format,
                           name=name)


def max_pool(value, ksize, strides, padding, data_format="NHWC", name=None,
             input=None):  # noqa: A002
    """TF1's ``tf.compat.v1.nn.max_pool`` (``input`` is an alias of ``value``)."""
    value = deprecated_argument_lookup("input", input, "value", value)
    if (np.isscalar(ksize) and ksize == 0) or (
            isinstance(ksize, (list, tuple, np.ndarray)) and any(v == 0 for v in ksize)):
        raise ValueError(f"`ksize` cannot be zero. Received: ksize={ksize}")
    return max_pool2d(value, ksize, strides, padding, data_format, name)


def max_pool3d(input, ksize, strides, padding, data_format="NDHWC", name=None):  # noqa: A002
    """3-D max pooling (``tf.nn.max_pool3d``)."""
    return _pool(raw_ops.MaxPool3D, 3, {"input": input}, ksize, strides, padding,
                 data_format or "NDHWC", name)


def avg_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):  # noqa: A002
    """Average pooling over the two spatial dims (``tf.nn.avg_pool2d``)."""
    return _pool(raw_ops.AvgPool, 2, {"value": input}, ksize, strides, padding,
                 data_format or "NHWC", name)


def avg_pool(value, ksize, strides, padding, data_format="NHWC", name=None,
             input=None):  # noqa: A002
    """TF1's ``tf.compat.v1.nn.avg_pool`` (``input`` is an alias of ``value``)."""
    value = deprecated_argument_lookup("input", input, "value", value)
    return avg_pool2d(value, ksize, strides, padding, data_format, name)


def avg_pool3d(input, ksize, strides, padding, data_format="NDHWC", name=None):  # noqa: A002
    """3-D average pooling (``tf.nn.avg_pool3d``)."""
    return _pool(raw_ops.AvgPool3D, 3, {"input": input}, ksize, strides, padding,
                 data_format or "NDHWC", name)


def max_pool_with_argmax(input, ksize, strides, padding, data_format="NHWC",  # noqa: A002
                         Targmax=None, name=None, output_dtype=None,  # noqa: N803
                         include_batch_in_index=False):
    """TF1's ``tf.compat.v1.nn.max_pool_with_argmax``: (output, argmax); ``output_dtype``
    is the new spelling of ``Targmax`` (int64 by default). ksize/strides take 4 values."""
    if data_format != "NHWC":
        raise ValueError("`data_format` values other  than 'NHWC' are not supported. "
                         f"Received: data_format={data_format}")
    Targmax = deprecated_argument_lookup("output_dtype", output_dtype, "Targmax", Targmax)
    return raw_ops.MaxPoolWithArgmax(
        input=input, ksize=ksize, strides=strides, padding=padding,
        Targmax=dtypes.int64 if Targmax is None else Targmax,
        include_batch_in_index=include_batch_in_index, name=name)


def space_to_depth(input, block_size, name=None, data_format="NHWC"):  # noqa: A002
    """TF1's ``tf.compat.v1.nn.space_to_depth``: spatial blocks moved into depth."""
    return raw_ops.SpaceToDepth(input=input, block_size=block_size, data_format=data_format,
                                name=name)


def depth_to_space(input, block_size, name=None, data_format="NHWC"):  # noqa: A002
    """TF1's ``tf.compat.v1.nn.depth_to_space``: depth moved into spatial blocks."""
    return raw_ops.DepthToSpace(input=input, block_size=block_size, data_format=data_format,
                                name=name)
