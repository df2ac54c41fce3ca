"""TF's activation wrappers (``tf.nn.relu``, ``relu6``, ``elu``, ``selu``, ``leaky_relu``,
``softplus``, ``softsign``, ``softmax``, ``log_softmax``, ``sigmoid``, ``tanh``, ``crelu``),
``bias_add`` and the dense layers ``xw_plus_b`` / ``relu_layer``, built on
``graphops.raw_ops``."""

import numpy as np

from graphops.api import raw_ops
from graphops.api.nn_args import deprecated_argument_lookup, op_scope, static_dims
from graphops.building.values import convert_value, dtype_of
from graphops.registry import dtypes
from graphops.registry.errors import InvalidArgumentError


def relu(features, name=None):
    """tf.nn.relu: max(features, 0)."""
    return raw_ops.Relu(features=features, name=name)


def bias_add(value, bias, data_format=None, name=None):
    """tf.nn.bias_add: adds a 1-D bias along the channel dim (last, or 1 for "NCHW")."""
    return raw_ops.BiasAdd(value=value, bias=bias, data_format=data_format or "NHWC", name=name)


def softmax(logits, axis=None, name=None, dim=None):
    """tf.compat.v1.nn.softmax over `axis` (default the last one)."""
    return _over_axis(raw_ops.Softmax, logits, axis, dim, name)


def log_softmax(logits, axis=None, name=None, dim=None):
    """tf.compat.v1.nn.log_softmax over `axis` (default the last one)."""
    return _over_axis(raw_ops.LogSoftmax, logits, axis, dim, name)


def _over_axis(last_axis_op, logits, axis, dim, name):
    """`last_axis_op` (Softmax, LogSoftmax) over `axis`: that axis swapped with the last
    and back, with TF's ops (Range, Pack, ConcatV2, Transpose; the rank a constant)."""
    axis = deprecated_argument_lookup("axis", axis, "dim", dim)
    logits = convert_value(logits)
    dims = static_dims(logits)
    if axis is None or axis == -1 or (dims is not None and axis == len(dims) - 1):
        return last_axis_op(logits=logits, name=name)
    if dims is None:
        raise ValueError("softmax over an axis other than the last needs a known rank")
    if not -len(dims) <= axis < len(dims):
        raise InvalidArgumentError(
            f"`dim` must be in the range [{-len(dims)}, {len(dims)}) where {len(dims)} is "
            f"the number of dimensions in the input. Received: dim={axis}")
    axis %= len(dims)
    swapped = last_axis_op(logits=_swap_axis(logits, axis, len(dims)))
    result = _swap_axis(swapped, axis, len(dims), name)
    if hasattr(result, "set_shape"):
        result.set_shape(dims)
    return result


def _swap_axis(value, axis, rank, name=None):
    """`value` with dims `axis` and rank - 1 swapped (TF's _swap_axis)."""
    last = raw_ops.Sub(x=np.int32(rank), y=np.int32(1))
    before = raw_ops.Range(start=np.int32(0), limit=np.int32(axis), delta=np.int32(1))
    after = raw_ops.Range(start=np.int32(axis + 1), limit=last, delta=np.int32(1))
    perm = raw_ops.ConcatV2(values=[before, raw_ops.Pack(values=[last]), after,
                                    np.int32([axis])], axis=np.int32(0))
    return raw_ops.Transpose(x=value, perm=perm, name=name or "transpose")


def relu6(features, name=None):
    """tf.nn.relu6: min(max(features, 0), 6)."""
    return raw_ops.Relu6(features=features, name=name)


def elu(features, name=None):
    """tf.nn.elu: features if > 0, else exp(features) - 1."""
    return raw_ops.Elu(features=features, name=name)


def selu(features, name=None):
    """tf.nn.selu: scale * features if > 0, else scale * alpha * (exp(features) - 1)."""
    return raw_ops.Selu(features=features, name=name)


def leaky_relu(features, alpha=0.2, name=None):
    """tf.nn.leaky_relu: features if > 0, else alpha * features (integers as float32)."""
    if dtype_of(features).is_integer:
        features = raw_ops.Cast(x=features, DstT=dtypes.float32)
    return raw_ops.LeakyRelu(features=features, alpha=alpha, name=name)


def softplus(features, name=None):
    """tf.nn.softplus: log(exp(features) + 1)."""
    return raw_ops.Softplus(features=features, name=name)


def softsign(features, name=None):
    """tf.nn.softsign: features / (abs(features) + 1)."""
    return raw_ops.Softsign(features=features, name=name)


def sigmoid(x, name=None):
    """tf.nn.sigmoid: 1 / (1 + exp(-x))."""
    return raw_ops.Sigmoid(x=x, name=name)


def tanh(x, name=None):
    """tf.nn.tanh: the hyperbolic tangent."""
    return raw_ops.Tanh(x=x, name=name)


def crelu(features, name=None, axis=-1):
    """tf.compat.v1.nn.crelu: relu of [features, -features] concatenated along `axis`."""
    with op_scope(name, "CRelu", [features]) as scope:
        features = convert_value(features)
        both = raw_ops.ConcatV2(values=[features, raw_ops.Neg(x=features)],
                                axis=np.int32(axis), name=scope)
        return raw_ops.Relu(features=both)


def xw_plus_b(x, weights, biases, name=None):
    """tf.compat.v1.nn.xw_plus_b: matmul(x, weights) + biases (MatMul, BiasAdd)."""
    with op_scope(name, "xw_plus_b", [x, weights, biases]) as scope:
        return raw_ops.BiasAdd(value=raw_ops.MatMul(a=x, b=weights), bias=biases, name=scope)


def relu_layer(x, weights, biases, name=None):
    """tf.compat.v1.nn.relu_layer: relu(matmul(x, weights) + biases)."""
    with op_scope(name, "relu_layer", [x, weights, biases]) as scope:
        return raw_ops.Relu(features=raw_ops.BiasAdd(value=raw_ops.MatMul(a=x, b=weights),
                                                     bias=biases), name=scope)
