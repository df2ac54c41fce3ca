"""TF1's dilated and depthwise-separable convolutions (``tf.compat.v1.nn.depthwise_conv2d``,
``separable_conv2d``) and the space-to-batch construction TF builds for a
dilation rate > 1: SpaceToBatchND splits the input into rate-strided phases, an undilated
VALID convolution runs on them, BatchToSpaceND interleaves the results and crops them.

That construction needs the input's spatial dims and the filter's window while building;
when either is unknown (or the padding is explicit, or strides are combined with a rate),
the dilations go to the op itself instead: the same values, different nodes from TF's."""

import warnings

import numpy as np

from graphops.api import raw_ops
from graphops.api.nn_args import deprecated_argument_lookup, op_scope, static_dims
from graphops.building.values import convert_value


def _rate_list(rate, n):
    """A rate given as an int or n values -> a list of n ints."""
    return [int(r) for r in np.broadcast_to(np.asarray(rate if rate is not None else 1), (n,))]


def dilated_conv(input, filter, rate, padding, channels_first, op):  # noqa: A002
    """`op(x, padding, dilations)` (dilations: one int per spatial dim) on `input` with
    dilation `rate`, through SpaceToBatchND/BatchToSpaceND when rate > 1 as TF's
    with_space_to_batch builds it."""
    n = len(rate)
    if all(r == 1 for r in rate):
        return op(input, padding, rate)
    dims, kernel = static_dims(input), static_dims(filter)
    first = 2 if channels_first else 1
    spatial = None if dims is None else dims[first:first + n]
    window = None if kernel is None else kernel[:n]
    if (spatial is None or window is None or None in spatial + window
            or padding not in ("SAME", "VALID")):
        return op(input, padding, rate)
    paddings, crops = [], []
    for size, k, r in zip(spatial, window, rate):
        extra = (k - 1) * r if padding == "SAME" else 0
        start, end = extra // 2, extra - extra // 2
        end_extra = (r - (size + start + end) % r) % r
        paddings.append([start, end + end_extra])
        crops.append([0, end_extra])
    block = list(rate)
    if channels_first:          # the channel dim sits between batch and space: block 1
        block, paddings, crops = [1] + block, [[0, 0]] + paddings, [[0, 0]] + crops
    phases = raw_ops.SpaceToBatchND(input=input, block_shape=np.int32(block),
                                    paddings=np.int32(paddings))
    result = op(phases, "VALID", [1] * n)
    return raw_ops.BatchToSpaceND(input=result, block_shape=np.int32(block),
                                  crops=np.int32(crops))


def depthwise_conv2d(input, filter, strides, padding, rate=None, name=None,  # noqa: A002
                     data_format=None, dilations=None):
    """Depthwise 2-D convolution with an optional dilation `rate` (``tf.compat.v1.nn.
    depthwise_conv2d``; `dilations` is rate's new spelling)."""
    rate = deprecated_argument_lookup("dilations", dilations, "rate", rate)
    with op_scope(name, "depthwise", [input, filter]) as scope:
        input, filter = convert_value(input), convert_value(filter)
        return _depthwise(input, filter, strides, padding, _rate_list(rate, 2), data_format,
                          scope)


def _depthwise(input, filter, strides, padding, rate, data_format, name):  # noqa: A002
    channels_first = data_format == "NCHW"

    def op(x, op_padding, op_rate):
        dilations = [1, 1, *op_rate] if channels_first else [1, *op_rate, 1]
        return raw_ops.DepthwiseConv2dNative(
            input=x, filter=filter, strides=strides, padding=op_padding,
            data_format=data_format or "NHWC", dilations=dilations, name=name)

    if any(r > 1 for r in rate) and any(s != 1 for s in strides):
        warnings.warn("When dilation rate is greater than 1, then all values of strides must "
                      f"be 1. Received: `dilation rate` {rate} and `strides` {strides}")
        return op(input, padding, rate)     # strided and dilated: the op computes it
    return dilated_conv(input, filter, rate, padding, channels_first, op)


def separable_conv2d(input, depthwise_filter, pointwise_filter, strides, padding,  # noqa: A002
                     rate=None, name=None, data_format=None, dilations=None):
    """A depthwise convolution followed by a 1x1 Conv2D mixing its channels
    (``tf.compat.v1.nn.separable_conv2d``)."""
    rate = deprecated_argument_lookup("dilations", dilations, "rate", rate)
    with op_scope(name, "separable_conv2d",
                  [input, depthwise_filter, pointwise_filter]) as scope:
        input = convert_value(input)
        depthwise_filter, pointwise_filter = (convert_value(depthwise_filter),
                                              convert_value(pointwise_filter))
        pointwise = static_dims(pointwise_filter)
        if pointwise is not None and len(pointwise) != 4:
            raise ValueError(f"Shape must be rank 4 but is rank {len(pointwise)}")
        if pointwise is not None and any(d not in (None, 1) for d in pointwise[:2]):
            raise ValueError(f"Dimensions {pointwise[0]} and 1 are not compatible"
                             if pointwise[0] not in (None, 1)
                             else f"Dimensions {pointwise[1]} and 1 are not compatible")
        depthwise = _depthwise(input, depthwise_filter, strides, padding, _rate_list(rate, 2),
                               data_format, "depthwise" if scope else None)
        return raw_ops.Conv2D(input=depthwise, filter=pointwise_filter, strides=[1, 1, 1, 1],
                              padding="VALID", data_format=data_format or "NHWC", name=scope)
