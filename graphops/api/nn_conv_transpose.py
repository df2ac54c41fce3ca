"""TF1's transposed convolutions (``tf.compat.v1.nn.conv2d_transpose``,
``conv3d_transpose``, ``conv1d_transpose``, ``atrous_conv2d_transpose``): the gradients of
the convolutions w.r.t. their input, built as TF builds them (Conv2DBackpropInput,
Conv3DBackpropInputV2; ExpandDims/ConcatV2/Squeeze around the 2-D op for 1-D;
SpaceToBatchND/BatchToSpaceND around it for atrous)."""

import numpy as np

from graphops.api import raw_ops
from graphops.api.nn_args import (convert_padding, deprecated_argument_lookup, get_sequence,
                                  op_scope, static_dims)
from graphops.building.values import convert_value


def conv2d_transpose(value=None, filter=None, output_shape=None, strides=None,  # noqa: A002
                     padding="SAME", data_format="NHWC", name=None, input=None,  # noqa: A002
                     filters=None, dilations=None):
    """The transpose of conv2d: `value` [N, H, W, in] with a filter [kh, kw, out, in] to
    `output_shape` (``tf.compat.v1.nn.conv2d_transpose``)."""
    value = deprecated_argument_lookup("input", input, "value", value)
    filter = deprecated_argument_lookup("filters", filters, "filter", filter)
    with op_scope(name, "conv2d_transpose", [value, filter, output_shape]) as scope:
        data_format = data_format or "NHWC"
        channel_index = 1 if data_format.startswith("NC") else 3
        padding, explicit_paddings = convert_padding(padding)
        return raw_ops.Conv2DBackpropInput(
            input_sizes=_sizes(output_shape), filter=filter, out_backprop=value,
            strides=get_sequence(strides, 2, channel_index, "strides"), padding=padding,
            explicit_paddings=explicit_paddings, data_format=data_format,
            dilations=get_sequence(dilations, 2, channel_index, "dilations"), name=scope)


def conv3d_transpose(value, filter=None, output_shape=None, strides=None,  # noqa: A002
                     padding="SAME", data_format="NDHWC", name=None, input=None,  # noqa: A002
                     filters=None, dilations=None):
    """The transpose of conv3d (``tf.compat.v1.nn.conv3d_transpose``)."""
    filter = deprecated_argument_lookup("filters", filters, "filter", filter)
    value = deprecated_argument_lookup("input", input, "value", value)
    with op_scope(name, "conv3d_transpose", [value, filter, output_shape]) as scope:
        data_format = data_format or "NDHWC"
        channel_index = 1 if data_format.startswith("NC") else 4
        return raw_ops.Conv3DBackpropInputV2(
            input_sizes=_sizes(output_shape), filter=filter, out_backprop=value,
            strides=get_sequence(strides, 3, channel_index, "strides"), padding=padding,
            data_format=data_format,
            dilations=get_sequence(dilations, 3, channel_index, "dilations"), name=scope)


def conv1d_transpose(input, filters, output_shape, strides, padding="SAME",  # noqa: A002
                     data_format="NWC", dilations=None, name=None):
    """The transpose of conv1d (``tf.nn.conv1d_transpose``): a height-1 Conv2DBackpropInput
    between ExpandDims and Squeeze."""
    with op_scope(name, "conv1d_transpose", [input, filters, output_shape]) as scope:
        if data_format is None or data_format == "NWC":
            data_format, spatial_start_dim, channel_index = "NHWC", 1, 2
        elif data_format == "NCW":
            data_format, spatial_start_dim, channel_index = "NCHW", 2, 1
        else:
            raise ValueError("`data_format` must be 'NWC' or 'NCW'. "
                             f"Received: data_format={data_format}")
        strides = [1] + get_sequence(strides, 1, channel_index, "stride")
        dilations = [1] + get_sequence(dilations, 1, channel_index, "dilations")
        input = raw_ops.ExpandDims(input=input, axis=np.int32(spatial_start_dim))
        filters = raw_ops.ExpandDims(input=filters, axis=np.int32(0))
        output_shape = _sizes(output_shape)
        parts = [output_shape[:spatial_start_dim], np.int32([1]),
                 output_shape[spatial_start_dim:]]
        sizes = raw_ops.ConcatV2(values=[_as_int32(p) for p in parts], axis=np.int32(0))
        result = raw_ops.Conv2DBackpropInput(
            input_sizes=sizes, filter=filters, out_backprop=input, strides=strides,
            padding=padding, data_format=data_format, dilations=dilations, name=scope)
        if hasattr(result, "set_shape") and not hasattr(output_shape, "op"):
            known = [int(d) for d in output_shape]   # what TF's shape inference folds
            result.set_shape(known[:spatial_start_dim] + [1] + known[spatial_start_dim:])
        return raw_ops.Squeeze(input=result, axis=[spatial_start_dim])


def atrous_conv2d_transpose(value, filters, output_shape, rate, padding, name=None):
    """The transpose of atrous_conv2d (``tf.nn.atrous_conv2d_transpose``): a
    Conv2DBackpropInput on the rate x rate phases (SpaceToBatchND), put back together by
    BatchToSpaceND and cropped. NHWC only; `output_shape` a list of ints when rate > 1."""
    with op_scope(name, "atrous_conv2d_transpose", [value, filters, output_shape]):
        value, filters = convert_value(value), convert_value(filters)
        in_channels, filter_in = static_dims(value)[3], static_dims(filters)[3]
        if None not in (in_channels, filter_in) and in_channels != filter_in:
            raise ValueError(
                "`value` channel count must be compatible with `filters` input channel count. "
                f"Received: value.shape={_shape_text(value)} with channel count {in_channels} "
                f"and filters.shape={_shape_text(filters)} with input channel count "
                f"{filter_in}.")
        if rate < 1:
            raise ValueError(f"`rate` cannot be less than one. Received: rate={rate}")
        if rate == 1:
            return conv2d_transpose(value, filters, output_shape, strides=[1, 1, 1, 1],
                                    padding=padding, data_format="NHWC")
        output_shape = [int(d) for d in np.reshape(np.asarray(output_shape), -1)]
        if len(output_shape) != 4:
            raise ValueError("`output_shape` must have shape (4,). "
                             f"Received: output_shape=({len(output_shape)},)")
        if padding == "SAME":
            kh, kw = static_dims(filters)[:2]
            pad_h, pad_w = (kh - 1) * rate, (kw - 1) * rate
            pads = [pad_h // 2, pad_h - pad_h // 2, pad_w // 2, pad_w - pad_w // 2]
        elif padding == "VALID":
            pads = [0, 0, 0, 0]
        else:
            raise ValueError("`padding` must be either 'VALID' or 'SAME'. "
                             f"Received: padding={padding}")
        in_h = output_shape[1] + pads[0] + pads[1]
        in_w = output_shape[2] + pads[2] + pads[3]
        extra_h, extra_w = (rate - in_h % rate) % rate, (rate - in_w % rate) % rate
        block = np.int32([rate, rate])
        phases = raw_ops.SpaceToBatchND(input=value, block_shape=block,
                                        paddings=np.int32([[0, extra_h], [0, extra_w]]))
        sizes = np.int32([rate * rate * output_shape[0], (in_h + extra_h) // rate,
                          (in_w + extra_w) // rate, output_shape[3]])
        phases = raw_ops.Conv2DBackpropInput(input_sizes=sizes, filter=filters,
                                             out_backprop=phases, strides=[1, 1, 1, 1],
                                             padding="VALID", data_format="NHWC")
        crops = np.int32([[pads[0], pads[1] + extra_h], [pads[2], pads[3] + extra_w]])
        return raw_ops.BatchToSpaceND(input=phases, block_shape=block, crops=crops)


def _sizes(output_shape):
    """`output_shape` as the op's sizes input: a tensor as it is, else an int32 vector."""
    value = convert_value(output_shape)
    return value if hasattr(value, "op") else np.asarray(value, np.int32)


def _as_int32(part):
    return part if hasattr(part, "op") else np.asarray(part, np.int32)


def _shape_text(value):
    dims = static_dims(value)
    return "(" + ", ".join("None" if d is None else str(d) for d in dims) + ")"
