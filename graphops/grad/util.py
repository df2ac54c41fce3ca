"""Helpers for gradient functions: constants, shapes known while building, broadcasting sums.

Whatever is known while building is used as a constant (so shape functions of the gradient
nodes give exact shapes); only unknown dimensions fall back to Shape/BroadcastGradientArgs.
"""

import numpy as np

from graphops import raw_ops
from registry import dtypes
from registry.errors import UnimplementedError


def const(value, dtype=dtypes.int32, name="Const"):
    """A Const node holding `value` as `dtype`."""
    return raw_ops.Const(value=np.asarray(value, dtype=dtype.np_dtype), dtype=dtype, name=name)


def scalar_like(value, tensor):
    """A scalar constant of `tensor`'s dtype."""
    return const(value, tensor.dtype)


def constant_value(tensor):
    """The value of `tensor` as a NumPy array when known while building, else None."""
    op = tensor.op
    if op.type == "Const":
        return op.get_attr("value")
    if op.type == "Shape" and op.inputs[0].shape.is_fully_defined():
        return np.asarray(op.inputs[0].shape.as_list(), op.get_attr("out_type").np_dtype)
    return None


def shape_of(tensor):
    """`tensor`'s shape as an int32 vector: a constant when fully known, else a Shape node."""
    if tensor.shape.is_fully_defined():
        return const(tensor.shape.as_list())
    return raw_ops.Shape(input=tensor)


def known_rank(tensor, what):
    """The static rank of `tensor`; UnimplementedError naming `what` when unknown."""
    rank = tensor.shape.rank
    if rank is None:
        raise UnimplementedError(f"{what} needs an input of known rank, got {tensor}")
    return rank


def constant_ints(tensor, what):
    """A build-time constant int tensor as a list; UnimplementedError naming `what` if not."""
    value = constant_value(tensor)
    if value is None:
        raise UnimplementedError(f"{what} needs {tensor.name} to be a constant")
    return [int(v) for v in np.reshape(value, -1)]


def reduce_sum(tensor, axes, keep_dims=False):
    return raw_ops.Sum(input=tensor, axis=const(axes), keep_dims=keep_dims)


def _static_reduction_axes(x, other):
    """(axes of the broadcast shape that x's gradient is summed over, number of leading axes
    x lacks), or None if a dim of x is unknown where the other operand could broadcast it."""
    if x.shape.rank is None or other.shape.rank is None:
        return None
    rank = max(x.shape.rank, other.shape.rank)
    xs = [1] * (rank - x.shape.rank) + x.shape.as_list()
    ys = [1] * (rank - other.shape.rank) + other.shape.as_list()
    axes = []
    for i, (a, b) in enumerate(zip(xs, ys)):
        if a == 1 and b != 1:
            axes.append(i)
        elif a is None and b != 1:
            return None
    return axes, rank - x.shape.rank


def sum_to_operand(grad, x, other):
    """The gradient of `x` in a broadcasting binary op with `other`, from the output's
    gradient `grad`: summed over the broadcast axes and shaped like `x`."""
    if grad is None:
        return None
    static = _static_reduction_axes(x, other)
    if static is not None:
        axes, lead = static
        if axes:
            grad = reduce_sum(grad, axes, keep_dims=True)
        if lead:
            grad = raw_ops.Squeeze(input=grad, axis=list(range(lead)))
        return grad
    axes_x, _ = raw_ops.BroadcastGradientArgs(s0=raw_ops.Shape(input=x),
                                              s1=raw_ops.Shape(input=other))
    summed = raw_ops.Sum(input=grad, axis=axes_x)
    return raw_ops.Reshape(tensor=summed, shape=raw_ops.Shape(input=x))


def is_zeros(tensor):
    """True when `tensor` is an implicit zero gradient made by `gradients`."""
    return tensor is None or tensor.op.type == "ZerosLike"
