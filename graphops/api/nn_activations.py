"""TF's activation wrappers (``tf.nn.relu``, ``relu6``, ``elu``, ``selu``, ``leaky_relu``,
``softplus``, ``softsign``, ``softmax``, ``log_softmax``) and ``bias_add``, built on
``graphops.raw_ops``."""

import numpy as np

from graphops.api import raw_ops
from graphops.api.nn_args import deprecated_argument_lookup, static_dims
from graphops.building.values import dtype_of
from registry import dtypes


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
    """`last_axis_op` (Softmax, LogSoftmax) over `axis`: that axis swapped with the last."""
    axis = deprecated_argument_lookup("axis", axis, "dim", dim)
    if axis is None or axis == -1:
        return last_axis_op(logits=logits, name=name)
    rank = len(static_dims(logits)) if static_dims(logits) is not None else None
    if rank is None:
        raise ValueError("softmax over an axis other than the last needs a known rank")
    if not -rank <= axis < rank:
        raise ValueError(f"axis {axis} is out of range for a rank {rank} tensor")
    perm = list(range(rank))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    moved = raw_ops.Transpose(x=logits, perm=np.int32(perm))
    return raw_ops.Transpose(x=last_axis_op(logits=moved), perm=np.int32(perm), name=name)


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
