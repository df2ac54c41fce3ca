"""TF's convolution wrappers (``tf.compat.v1.nn.conv2d``, ``conv3d``, the depthwise and
backprop ops, ``convolution``), built on ``graphops.raw_ops``: same names, signatures and
defaults as TF1's (padding given as a list of [before, after] pairs becomes
``padding="EXPLICIT"``; ``conv2d`` broadcasts 1- or 2-element strides/dilations)."""

import numpy as np

from graphops.api import raw_ops
from graphops.api.nn_args import (convert_padding, deprecated_argument_lookup, get_sequence,
                                  static_dims)


def conv2d(input, filter=None, strides=None, padding=None, use_cudnn_on_gpu=True,  # noqa: A002
           data_format="NHWC", dilations=[1, 1, 1, 1], name=None, filters=None):  # noqa: B006
    """2-D convolution (``tf.compat.v1.nn.conv2d``)."""
    filter = deprecated_argument_lookup("filters", filters, "filter", filter)
    padding, explicit_paddings = convert_padding(padding)
    if data_format is None:
        data_format = "NHWC"
    channel_index = 1 if data_format.startswith("NC") else 3
    strides = get_sequence(strides, 2, channel_index, "strides")
    dilations = get_sequence(dilations, 2, channel_index, "dilations")
    return raw_ops.Conv2D(input=input, filter=filter, strides=strides, padding=padding,
                          use_cudnn_on_gpu=use_cudnn_on_gpu, explicit_paddings=explicit_paddings,
                          data_format=data_format, dilations=dilations, name=name)


def conv2d_backprop_input(input_sizes, filter=None, out_backprop=None, strides=None,  # noqa: A002
                          padding=None, use_cudnn_on_gpu=True, data_format="NHWC",
                          dilations=[1, 1, 1, 1], name=None, filters=None):  # noqa: B006
    """Gradient of conv2d w.r.t. its input (``tf.compat.v1.nn.conv2d_backprop_input``)."""
    filter = deprecated_argument_lookup("filters", filters, "filter", filter)
    padding, explicit_paddings = convert_padding(padding)
    return raw_ops.Conv2DBackpropInput(
        input_sizes=input_sizes, filter=filter, out_backprop=out_backprop, strides=strides,
        padding=padding, use_cudnn_on_gpu=use_cudnn_on_gpu, explicit_paddings=explicit_paddings,
        data_format=data_format, dilations=dilations, name=name)


def conv2d_backprop_filter(input, filter_sizes, out_backprop, strides, padding,  # noqa: A002
                           use_cudnn_on_gpu=True, data_format="NHWC",
                           dilations=[1, 1, 1, 1], name=None):  # noqa: B006
    """Gradient of conv2d w.r.t. its filter (``tf.compat.v1.nn.conv2d_backprop_filter``)."""
    padding, explicit_paddings = convert_padding(padding)
    return raw_ops.Conv2DBackpropFilter(
        input=input, filter_sizes=filter_sizes, out_backprop=out_backprop, strides=strides,
        padding=padding, use_cudnn_on_gpu=use_cudnn_on_gpu, explicit_paddings=explicit_paddings,
        data_format=data_format, dilations=dilations, name=name)


def conv3d(input, filter=None, strides=None, padding=None, data_format="NDHWC",  # noqa: A002
           dilations=[1, 1, 1, 1, 1], name=None, filters=None):  # noqa: B006
    """3-D convolution (``tf.compat.v1.nn.conv3d``)."""
    filter = deprecated_argument_lookup("filters", filters, "filter", filter)
    return raw_ops.Conv3D(input=input, filter=filter, strides=strides, padding=padding,
                          data_format=data_format, dilations=dilations, name=name)


def conv3d_backprop_filter(input, filter_sizes, out_backprop, strides, padding,  # noqa: A002
                           data_format="NDHWC", dilations=[1, 1, 1, 1, 1],  # noqa: B006
                           name=None):
    """Gradient of conv3d w.r.t. its filter (``tf.compat.v1.nn.conv3d_backprop_filter``)."""
    return raw_ops.Conv3DBackpropFilterV2(
        input=input, filter_sizes=filter_sizes, out_backprop=out_backprop, strides=strides,
        padding=padding, data_format=data_format, dilations=dilations, name=name)


conv3d_backprop_filter_v2 = conv3d_backprop_filter


def conv3d_backprop_input_v2(input_sizes, filter, out_backprop, strides, padding,  # noqa: A002
                             data_format="NDHWC", dilations=[1, 1, 1, 1, 1],  # noqa: B006
                             name=None):
    """Gradient of conv3d w.r.t. its input (``gen_nn_ops.conv3d_backprop_input_v2``)."""
    return raw_ops.Conv3DBackpropInputV2(
        input_sizes=input_sizes, filter=filter, out_backprop=out_backprop, strides=strides,
        padding=padding, data_format=data_format, dilations=dilations, name=name)


def depthwise_conv2d_native(input, filter, strides, padding, data_format="NHWC",  # noqa: A002
                            dilations=[1, 1, 1, 1], name=None):  # noqa: B006
    """Depthwise 2-D convolution (``tf.compat.v1.nn.depthwise_conv2d_native``)."""
    padding, explicit_paddings = convert_padding(padding)
    return raw_ops.DepthwiseConv2dNative(
        input=input, filter=filter, strides=strides, padding=padding,
        explicit_paddings=explicit_paddings, data_format=data_format, dilations=dilations,
        name=name)


def depthwise_conv2d_native_backprop_input(input_sizes, filter, out_backprop, strides,  # noqa: A002
                                           padding, data_format="NHWC",
                                           dilations=[1, 1, 1, 1], name=None):  # noqa: B006
    """Gradient of depthwise_conv2d_native w.r.t. its input."""
    padding, explicit_paddings = convert_padding(padding)
    return raw_ops.DepthwiseConv2dNativeBackpropInput(
        input_sizes=input_sizes, filter=filter, out_backprop=out_backprop, strides=strides,
        padding=padding, explicit_paddings=explicit_paddings, data_format=data_format,
        dilations=dilations, name=name)


def depthwise_conv2d_native_backprop_filter(input, filter_sizes,  # noqa: A002
                                            out_backprop, strides, padding, data_format="NHWC",
                                            dilations=[1, 1, 1, 1], name=None):  # noqa: B006
    """Gradient of depthwise_conv2d_native w.r.t. its filter."""
    padding, explicit_paddings = convert_padding(padding)
    return raw_ops.DepthwiseConv2dNativeBackpropFilter(
        input=input, filter_sizes=filter_sizes, out_backprop=out_backprop, strides=strides,
        padding=padding, explicit_paddings=explicit_paddings, data_format=data_format,
        dilations=dilations, name=name)


depthwise_conv2d_backprop_input = depthwise_conv2d_native_backprop_input
depthwise_conv2d_backprop_filter = depthwise_conv2d_native_backprop_filter


def convolution(input, filter=None, padding=None, strides=None,  # noqa: A002
                dilation_rate=None, name=None, data_format=None, filters=None, dilations=None):
    """tf.compat.v1.nn.convolution: an N-d convolution by the filter's rank (the input's
    when the filter's is unknown). As TF's wrapper: 1-D is ExpandDims + Conv2D + Squeeze,
    2-D Conv2D, 3-D Conv3D; dilations go to the op (TF's CPU path would build
    SpaceToBatchND around it), and an input with several batch dims builds the generic
    Conv with its batch_dims (TF reshapes around Conv2D/Conv3D)."""
    filter = deprecated_argument_lookup("filters", filters, "filter", filter)
    dilations = deprecated_argument_lookup("dilations", dilations, "dilation_rate",
                                           dilation_rate)
    input_dims, filter_dims = static_dims(input), static_dims(filter)
    if filter_dims is not None:
        num_spatial = len(filter_dims) - 2
    elif input_dims is not None:
        num_spatial = len(input_dims) - 2
    else:
        raise ValueError("When `num_spatial_dims` is not set, one of `input.shape.rank` or "
                         "`filters.shape.rank` must be known.")
    if num_spatial not in (1, 2, 3):
        raise ValueError("`num_spatial_dims` must be 1, 2, or 3. Received: "
                         f"num_spatial_dims={num_spatial}.")
    batch_dims = 1 if input_dims is None else len(input_dims) - num_spatial - 1
    channels_first = data_format is not None and data_format.startswith("NC")
    channel_index = 1 if channels_first else num_spatial + 1
    strides = get_sequence(strides, num_spatial, channel_index, "strides")
    dilations = get_sequence(dilations, num_spatial, channel_index, "dilations")
    if num_spatial == 1:
        return _conv1d(input, filter, padding, strides, dilations, channels_first, name)
    if batch_dims != 1:
        padding, explicit_paddings = convert_padding(padding, num_spatial + 2)
        return raw_ops.Conv(input=input, filter=filter, strides=strides, padding=padding,
                            explicit_paddings=explicit_paddings, dilations=dilations,
                            data_format="CHANNELS_FIRST" if channels_first else "CHANNELS_LAST",
                            batch_dims=batch_dims, name=name)
    if num_spatial == 2:
        return conv2d(input, filter, strides, padding, data_format=data_format or "NHWC",
                      dilations=dilations, name=name)
    return conv3d(input, filter, strides, padding, data_format=data_format or "NDHWC",
                  dilations=dilations, name=name)


def _conv1d(input, filter, padding, strides, dilations, channels_first, name):  # noqa: A002
    """TF's conv1d: a 2-D convolution over a height-1 image (the one spatial dim is W)."""
    spatial = -2 if channels_first else -3
    image = raw_ops.ExpandDims(input=input, axis=np.int32(spatial))
    kernel = raw_ops.ExpandDims(input=filter, axis=np.int32(0))
    height = 4 + spatial        # the new H's index in the 4-d strides/dilations
    strides, dilations = ([*v[:height], 1, *v[height:]] for v in (strides, dilations))
    y = conv2d(image, kernel, strides, padding, data_format="NCHW" if channels_first else "NHWC",
               dilations=dilations)
    return raw_ops.Squeeze(input=y, axis=[spatial], name=name)
