"""TF's convolution wrappers (``tf.compat.v1.nn.conv2d``, ``conv3d``, the depthwise and
backprop ops, ``convolution``), built on ``graphops.raw_ops``: same names, signatures and
defaults as TF1's (padding given as a list of [before, after] pairs becomes
``padding="EXPLICIT"``; ``conv2d`` broadcasts 1- or 2-element strides/dilations)."""

import functools

import numpy as np

from graphops.api import raw_ops
from graphops.api.nn_conv_dilated import dilated_conv
from graphops.api.nn_args import (convert_padding, deprecated_argument_lookup, get_sequence,
                                  op_scope, static_dims)
from graphops.building.values import convert_value


def conv2d(input, filter=None, strides=None, padding=None, use_cudnn_on_gpu=True,  # noqa: A002
           data_format="NHWC", dilations=[1, 1, 1, 1], name=None, filters=None):  # noqa: B006
    """2-D convolution (``tf.compat.v1.nn.conv2d``); an input of rank > 4 has its leading
    batch dims folded into one around the Conv2D, as TF's squeeze_batch_dims does."""
    filter = deprecated_argument_lookup("filters", filters, "filter", filter)
    padding, explicit_paddings = convert_padding(padding)
    if data_format is None:
        data_format = "NHWC"
    channel_index = 1 if data_format.startswith("NC") else 3
    strides = get_sequence(strides, 2, channel_index, "strides")
    dilations = get_sequence(dilations, 2, channel_index, "dilations")

    def conv(x, name=None):
        return raw_ops.Conv2D(input=x, filter=filter, strides=strides, padding=padding,
                              use_cudnn_on_gpu=use_cudnn_on_gpu,
                              explicit_paddings=explicit_paddings, data_format=data_format,
                              dilations=dilations, name=name)

    dims = static_dims(input)
    if dims is None or len(dims) <= 4:
        return conv(input, name)
    return squeeze_batch_dims(input, conv, 3, name)


def squeeze_batch_dims(input, op, inner_rank, name=None):  # noqa: A002
    """op(input reshaped to [-1] + its last `inner_rank` dims), reshaped back to input's
    leading dims (TF's squeeze_batch_dims, under its name scope)."""
    with op_scope(name, "squeeze_batch_dims", [input]):
        input = convert_value(input)
        dims = static_dims(input)
        batch, inner = dims[:-inner_rank], dims[-inner_rank:]
        if None in inner:
            inner = _shape_slice(input, -inner_rank, None)
            folded_shape = raw_ops.ConcatV2(values=[np.int32([-1]), inner], axis=np.int32(-1),
                                            name="concat")
        else:
            folded_shape = np.int32([-1] + inner)
        batch = _shape_slice(input, None, -inner_rank) if None in batch else np.int32(batch)
        result = op(raw_ops.Reshape(tensor=input, shape=folded_shape))
        out_inner = static_dims(result)[-inner_rank:]
        if None in out_inner:
            out_inner = _shape_slice(result, -inner_rank, None)
        out = raw_ops.Reshape(tensor=result, shape=raw_ops.ConcatV2(
            values=[batch, np.asarray(out_inner, np.int32) if isinstance(out_inner, list)
                    else out_inner], axis=np.int32(-1), name="concat"))
        if hasattr(out, "set_shape"):
            out.set_shape(dims[:-inner_rank] + static_dims(result)[-inner_rank:])
        return out


def _shape_slice(value, begin, end):
    """shape(value)[begin:end] (a StridedSlice of a Shape, as TF's slicing builds it)."""
    return raw_ops.StridedSlice(
        input=raw_ops.Shape(input=value), begin=np.int32([begin or 0]),
        end=np.int32([end or 0]), strides=np.int32([1]), begin_mask=int(begin is None),
        end_mask=int(end is None), name="strided_slice")


def conv1d(value=None, filters=None, stride=None, padding=None, use_cudnn_on_gpu=None,
           data_format=None, name=None, input=None, dilations=None):  # noqa: A002
    """1-D convolution of a [batch, width, channels] (NWC) or [batch, channels, width]
    (NCW) input with a [width, in, out] filter (``tf.compat.v1.nn.conv1d``): ExpandDims of
    both, Conv2D, Squeeze, under the scope "conv1d". `use_cudnn_on_gpu` is accepted and
    ignored (the attr's default)."""
    del use_cudnn_on_gpu
    value = deprecated_argument_lookup("input", input, "value", value)
    with op_scope(name, "conv1d", [value, filters]) as scope:
        if data_format is None or data_format in ("NHWC", "NWC"):
            channels_first = False
        elif data_format in ("NCHW", "NCW"):
            channels_first = True
        else:
            raise ValueError("`data_format` must be 'NWC' or 'NCW'. "
                             f"Received: data_format={data_format}")
        channel_index = 1 if channels_first else 2
        return _conv1d(value, filters, padding, get_sequence(stride, 1, channel_index, "stride"),
                       get_sequence(dilations, 1, channel_index, "dilations"), channels_first,
                       scope)


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
    when the filter's is unknown), under the scope "convolution", built as TF builds it: 1-D
    is ExpandDims + Conv2D + Squeeze, 2-D Conv2D, 3-D Conv3D; extra leading batch dims are
    folded around them (squeeze_batch_dims); a dilation rate > 1 goes through
    SpaceToBatchND/BatchToSpaceND (`dilated_conv`)."""
    filter = deprecated_argument_lookup("filters", filters, "filter", filter)
    dilations = deprecated_argument_lookup("dilations", dilations, "dilation_rate",
                                           dilation_rate)
    with op_scope(name, "convolution", [input, filter]) as scope:
        input, filter = convert_value(input), convert_value(filter)
        input_dims, filter_dims = static_dims(input), static_dims(filter)
        if filter_dims is not None:
            num_spatial = len(filter_dims) - 2
        elif input_dims is not None:
            num_spatial = len(input_dims) - 2
        else:
            raise ValueError("When `num_spatial_dims` is not set, one of `input.shape.rank` "
                             "or `filters.shape.rank` must be known.")
        if num_spatial not in (1, 2, 3):
            raise ValueError("`num_spatial_dims` must be 1, 2, or 3. Received: "
                             f"num_spatial_dims={num_spatial}.")
        channels_first = data_format is not None and data_format.startswith("NC")
        channel_index = 1 if channels_first else num_spatial + 1
        strides = get_sequence(strides, num_spatial, channel_index, "strides")
        rate = get_sequence(dilations, num_spatial, channel_index, "dilations")
        rate = rate[2:] if channels_first else rate[1:-1]

        def op(x, op_padding, op_rate):
            full_rate = [1, 1, *op_rate] if channels_first else [1, *op_rate, 1]
            if num_spatial == 1:
                return _conv1d(x, filter, op_padding, strides, full_rate, channels_first, scope)
            if num_spatial == 2:
                return conv2d(x, filter, strides, op_padding, data_format=data_format or "NHWC",
                              dilations=full_rate, name=scope)
            conv = functools.partial(raw_ops.Conv3D, filter=filter, strides=strides,
                                     padding=op_padding, data_format=data_format or "NDHWC",
                                     dilations=full_rate)
            if input_dims is None or len(input_dims) <= 5:
                return conv(input=x, name=scope)
            return squeeze_batch_dims(x, lambda y: conv(input=y), 4, scope)

        batch_dims = 1 if input_dims is None else len(input_dims) - num_spatial - 1
        if batch_dims != 1 or any(s != 1 for s in strides):
            return op(input, padding, rate)
        return dilated_conv(input, filter, rate, padding, channels_first, op)


def atrous_conv2d(value, filters, rate, padding, name=None):
    """2-D convolution with holes: `convolution` with dilation_rate (rate, rate)
    (``tf.nn.atrous_conv2d``)."""
    return convolution(input=value, filter=filters, padding=padding,
                       dilation_rate=np.broadcast_to(rate, (2,)).tolist(), name=name)


def _conv1d(input, filter, padding, strides, dilations, channels_first, name):  # noqa: A002
    """TF's conv1d: a 2-D convolution over a height-1 image (the one spatial dim is W),
    named `name`; the Squeeze under it."""
    spatial = -2 if channels_first else -3
    image = raw_ops.ExpandDims(input=input, axis=np.int32(spatial))
    kernel = raw_ops.ExpandDims(input=filter, axis=np.int32(0))
    height = 4 + spatial        # the new H's index in the 4-d strides/dilations
    strides, dilations = ([*v[:height], 1, *v[height:]] for v in (strides, dilations))
    y = conv2d(image, kernel, strides, padding, data_format="NCHW" if channels_first else "NHWC",
               dilations=dilations, name=name)
    return raw_ops.Squeeze(input=y, axis=[spatial])
