"""Helpers for gradient functions: constants, shapes known while building, broadcasting sums.

Whatever is known while building is used as a constant (so shape functions of the gradient
nodes give exact shapes); what is only known at run time (dims, ranks, axes, perms) falls back
to nodes computing it: Shape, Rank, BroadcastGradientArgs, Range, `reduced_shape`.
"""

import numpy as np

from graphops.api import raw_ops
from graphops.building.constant_op import constant_value
from graphops.registry import dtypes
from graphops.registry.op_registry import get_op_def


def const(value, dtype=dtypes.int32, name="Const"):
    """A Const node holding `value` as `dtype`."""
    return raw_ops.Const(value=np.asarray(value, dtype=dtype.np_dtype), dtype=dtype, name=name)


def with_attrs_of(op, op_type, **inputs):
    """`op_type` applied to `inputs` with every attr of `op` that `op_type` declares (the
    forward op's attrs passed through to its gradient ops)."""
    target = get_op_def(op_type)
    inferred = target.inferred_attrs()
    attrs = {a.name: op.get_attr(a.name) for a in target.attr
             if a.name not in inferred and a.name in op.attrs}
    return getattr(raw_ops, op_type)(**inputs, **attrs)


def scalar_like(value, tensor):
    """A scalar constant of `tensor`'s dtype."""
    return const(value, tensor.dtype)


def as_vector(value, dtype=dtypes.int32):
    """A Python int or a scalar tensor as a length-1 vector of `dtype` (TF packs `[t]`)."""
    if isinstance(value, int):
        return const([value], dtype)
    if value.dtype != dtype:
        value = raw_ops.Cast(x=value, DstT=dtype)
    return raw_ops.Pack(values=[value])


def vector_slice(vector, begin=None, end=None):
    """vector[begin:end] as a StridedSlice (begin/end: Python ints, scalar tensors or None)."""
    return raw_ops.StridedSlice(
        input=vector, begin=as_vector(0 if begin is None else begin),
        end=as_vector(0 if end is None else end), strides=const([1]),
        begin_mask=int(begin is None), end_mask=int(end is None))


def vector_item(vector, i):
    """vector[i] as a StridedSlice that shrinks the axis (i: a Python int, -1 included, or a
    scalar tensor)."""
    after = i + 1 if isinstance(i, int) else raw_ops.AddV2(x=i, y=const(1, i.dtype))
    return raw_ops.StridedSlice(input=vector, begin=as_vector(i), end=as_vector(after),
                                strides=const([1]), end_mask=int(isinstance(i, int) and i == -1),
                                shrink_axis_mask=1)


def shape_of(tensor):
    """`tensor`'s shape as an int32 vector: a constant when fully known, else a Shape node."""
    if tensor.shape.is_fully_defined():
        return const(tensor.shape.as_list())
    return raw_ops.Shape(input=tensor)


def constant_list(tensor):
    """A build-time constant int tensor as a flat list of ints, else None."""
    value = constant_value(tensor)
    return None if value is None else [int(v) for v in np.reshape(value, -1)]


def reduced_shape(input_shape, axes):
    """The kept-dims shape of reducing a tensor of shape `input_shape` (an int32 vector)
    over `axes`, built at run time: input_shape with 1 at each axis. TF stitches ones in
    with DynamicStitch; here a one-hot match of range(rank) against the wrapped axes
    picks the reduced dims: shape - (shape - 1) * hit."""
    rank = raw_ops.Size(input=input_shape)
    axes = raw_ops.Reshape(tensor=axes, shape=const([-1]))
    if axes.dtype != dtypes.int32:
        axes = raw_ops.Cast(x=axes, DstT=dtypes.int32)
    axes = raw_ops.FloorMod(x=axes, y=rank)
    dims = raw_ops.ExpandDims(input=raw_ops.Range(start=const(0), limit=rank, delta=const(1)),
                              axis=const(-1))
    hit = raw_ops.Cast(x=raw_ops.Equal(x=dims, y=axes), DstT=dtypes.int32)
    hit = raw_ops.Sum(input=hit, axis=const([1]))
    shrink = raw_ops.Mul(x=raw_ops.Sub(x=input_shape, y=const(1)), y=hit)
    return raw_ops.Sub(x=input_shape, y=shrink)


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
    return sum_to_operands(grad, None, x, other)[0]


def sum_to_operands(grad_x, grad_y, x, y):
    """The gradients of `x` and `y` in a broadcasting binary op from `grad_x` and `grad_y`
    (either None), each summed over its broadcast axes and shaped like its operand. Static
    shapes give the axes where they decide them; else one BroadcastGradientArgs of the two
    operands' shapes serves both (the graph of TF's binary gradients)."""
    dynamic, results = None, []
    for k, (grad, operand, other) in enumerate(((grad_x, x, y), (grad_y, y, x))):
        static = None if grad is None else _static_reduction_axes(operand, other)
        if grad is None or static is not None:
            results.append(grad if grad is None else _sum_statically(grad, *static))
            continue
        if dynamic is None:
            shapes = (raw_ops.Shape(input=x), raw_ops.Shape(input=y))
            dynamic = shapes, raw_ops.BroadcastGradientArgs(s0=shapes[0], s1=shapes[1])
        shapes, axes = dynamic
        results.append(raw_ops.Reshape(tensor=raw_ops.Sum(input=grad, axis=axes[k]),
                                       shape=shapes[k]))
    return results


def _sum_statically(grad, axes, lead):
    """`grad` summed over broadcast `axes` (kept), its `lead` leading axes squeezed."""
    if axes:
        grad = reduce_sum(grad, axes, keep_dims=True)
    if lead:
        grad = raw_ops.Squeeze(input=grad, axis=list(range(lead)))
    return grad


def is_zeros(tensor):
    """True when `tensor` is an implicit zero gradient made by `gradients`."""
    return tensor is None or tensor.op.type == "ZerosLike"


def conj(tensor):
    """The complex conjugate of `tensor` (a Conj node), `tensor` itself when it is real."""
    return raw_ops.Conj(input=tensor) if tensor.dtype.is_complex else tensor
