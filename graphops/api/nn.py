"""TF's ``tf.nn`` / ``tf.compat.v1.nn`` wrappers, built on ``graphops.raw_ops``.

Same names, signatures, defaults and argument handling as TF1's wrappers (padding given
as a list of [before, after] pairs becomes ``padding="EXPLICIT"``; ``conv2d`` broadcasts
1- or 2-element strides/dilations). They work in graph and eager mode alike, since
``raw_ops`` does. Also relu, bias_add, softmax and the softmax cross-entropy losses.
"""

from collections.abc import Sized

import numpy as np

from graphops.api import raw_ops
from graphops.building.values import convert_value


def convert_padding(padding, expected_length=4):
    """A padding string, or a list of [before, after] pairs -> ("EXPLICIT", flat list)."""
    explicit_paddings = []
    if padding == "EXPLICIT":
        raise ValueError("'EXPLICIT' is not a valid value for `padding`. To use explicit "
                         "padding, `padding` must be a list.")
    if isinstance(padding, (list, tuple)):
        for i, dim_paddings in enumerate(padding):
            if not isinstance(dim_paddings, (list, tuple)):
                raise ValueError(
                    "When `padding` is a list, each element of `padding` must be a list/tuple "
                    f"of size 2. Received: padding={padding} with element at index {i} of type "
                    f"{type(dim_paddings)}")
            if len(dim_paddings) != 2:
                raise ValueError(
                    "When `padding` is a list, each element of `padding` must be a list/tuple "
                    f"of size 2. Received: padding={padding} with element at index {i} of size "
                    f"{len(dim_paddings)}")
            explicit_paddings.extend(dim_paddings)
        if len(padding) != expected_length:
            raise ValueError(f"When padding is a list, it must be of size {expected_length}. "
                             f"Received: padding={padding} of size {len(padding)}")
        padding = "EXPLICIT"
    return padding, explicit_paddings


def _get_sequence(value, n, channel_index, name):
    """strides/dilations of length 1, n or n+2 -> the n+2 values the op wants."""
    if value is None:
        return [1] * (n + 2)
    if isinstance(value, list):
        pass
    elif isinstance(value, tuple):
        value = list(value)
    elif isinstance(value, int) or not isinstance(value, Sized):
        value = [value]
    else:
        value = list(value)
    len_value = len(value)
    if len_value == n + 2:
        return value
    if len_value == 1:
        value = value * n
    elif len_value != n:
        raise ValueError(f"{name} should be of length 1, {n} or {n + 2}. "
                         f"Received: {name}={value} of length {len_value}")
    return [1, 1] + value if channel_index == 1 else [1] + value + [1]


def deprecated_argument_lookup(new_name, new_value, old_name, old_value):
    """TF's lookup of an argument with a deprecated spelling: at most one may be given."""
    if old_value is not None:
        if new_value is not None:
            raise ValueError(f"Cannot specify both '{old_name}' and '{new_name}'")
        return old_value
    return new_value


def conv2d(input, filter=None, strides=None, padding=None, use_cudnn_on_gpu=True,  # noqa: A002
           data_format="NHWC", dilations=[1, 1, 1, 1], name=None, filters=None):  # noqa: B006
    """2-D convolution (``tf.compat.v1.nn.conv2d``)."""
    filter = deprecated_argument_lookup("filters", filters, "filter", filter)
    padding, explicit_paddings = convert_padding(padding)
    if data_format is None:
        data_format = "NHWC"
    channel_index = 1 if data_format.startswith("NC") else 3
    strides = _get_sequence(strides, 2, channel_index, "strides")
    dilations = _get_sequence(dilations, 2, channel_index, "dilations")
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


# ----------------------------------------------------------------------------- activations

def relu(features, name=None):
    """tf.nn.relu: max(features, 0)."""
    return raw_ops.Relu(features=features, name=name)


def bias_add(value, bias, data_format=None, name=None):
    """tf.nn.bias_add: adds a 1-D bias along the channel dim (last, or 1 for "NCHW")."""
    return raw_ops.BiasAdd(value=value, bias=bias, data_format=data_format or "NHWC", name=name)


def softmax(logits, axis=None, name=None, dim=None):
    """tf.compat.v1.nn.softmax over `axis` (default the last one)."""
    axis = deprecated_argument_lookup("axis", axis, "dim", dim)
    if axis is None or axis == -1:
        return raw_ops.Softmax(logits=logits, name=name)
    rank = len(_static_dims(logits)) if _static_dims(logits) is not None else None
    if rank is None:
        raise ValueError("softmax over an axis other than the last needs a known rank")
    if not -rank <= axis < rank:
        raise ValueError(f"axis {axis} is out of range for a rank {rank} tensor")
    perm = list(range(rank))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    moved = raw_ops.Transpose(x=logits, perm=np.int32(perm))
    return raw_ops.Transpose(x=raw_ops.Softmax(logits=moved), perm=np.int32(perm), name=name)


# ----------------------------------------------------------------------------- losses


def _static_dims(value):
    """The static dims of a Tensor (None if its rank is unknown) or of an array."""
    shape = value.shape
    return shape.dims if hasattr(shape, "dims") else list(shape)


def _rows(value, classes):
    """`value` reshaped to [rows, classes] (or to a vector of rows when `classes` is None)."""
    return raw_ops.Reshape(tensor=value, shape=np.int32([-1] if classes is None else [-1, classes]))


def sparse_softmax_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None,
                                             name=None):
    """Per-example softmax cross-entropy of `logits` [..., classes] against class indices
    `labels` [...] (TF1's tf.nn.sparse_softmax_cross_entropy_with_logits)."""
    if _sentinel is not None:
        raise ValueError("Only call `sparse_softmax_cross_entropy_with_logits` with named "
                         "arguments (labels=..., logits=..., ...)")
    labels, logits = convert_value(labels), convert_value(logits)
    label_dims, logit_dims = _static_dims(labels), _static_dims(logits)
    if label_dims is not None and logit_dims is not None:
        if len(label_dims) != len(logit_dims) - 1:
            raise ValueError(f"Rank mismatch: Rank of labels (received {len(label_dims)}) should "
                             f"equal rank of logits minus 1 (received {len(logit_dims)}).")
        if any(a is not None and b is not None and a != b
               for a, b in zip(label_dims, logit_dims[:-1])):
            raise ValueError(
                f"Shape mismatch: The shape of labels (received {tuple(label_dims)}) should "
                f"equal the shape of logits except for the last dimension (received "
                f"{tuple(logit_dims)}).")
    if logit_dims is not None and len(logit_dims) == 2:
        return raw_ops.SparseSoftmaxCrossEntropyWithLogits(features=logits, labels=labels,
                                                           name=name).loss
    classes = -1 if logit_dims is None or logit_dims[-1] is None else logit_dims[-1]
    loss = raw_ops.SparseSoftmaxCrossEntropyWithLogits(
        features=_rows(logits, classes), labels=_rows(labels, None)).loss
    return raw_ops.Reshape(tensor=loss, shape=raw_ops.Shape(input=labels), name=name)


def softmax_cross_entropy_with_logits(labels, logits, axis=-1, name=None):
    """Per-example softmax cross-entropy of `logits` against probability rows `labels`
    along the last axis; gradients flow into both (TF2's form, TF1's _v2)."""
    labels, logits = convert_value(labels), convert_value(logits)
    dims = _static_dims(logits)
    if dims is None:
        raise ValueError("softmax_cross_entropy_with_logits needs logits of known rank")
    if axis % max(len(dims), 1) != len(dims) - 1:
        raise ValueError(f"softmax_cross_entropy_with_logits supports only the last axis, "
                         f"got axis={axis} for logits of rank {len(dims)}")
    if len(dims) == 2:
        return raw_ops.SoftmaxCrossEntropyWithLogits(features=logits, labels=labels,
                                                     name=name).loss
    classes = dims[-1] if dims and dims[-1] is not None else -1
    loss = raw_ops.SoftmaxCrossEntropyWithLogits(features=_rows(logits, classes),
                                                 labels=_rows(labels, classes)).loss
    batch = raw_ops.Slice(input=raw_ops.Shape(input=logits), begin=np.int32([0]),
                          size=np.int32([len(dims) - 1]))
    return raw_ops.Reshape(tensor=loss, shape=batch, name=name)


softmax_cross_entropy_with_logits_v2 = softmax_cross_entropy_with_logits
