"""Gradients of StridedSlice and StridedSliceGrad (TF's array_grad.py)."""

from graphops.api import raw_ops
from graphops.autodiff.gradients import RegisterGradient
from graphops.autodiff.rules.util import const
from graphops.registry import dtypes
from graphops.registry.op_defs.strided_slice import MASK_ATTRS


def _masks(op):
    return {name: op.get_attr(name) for name in MASK_ATTRS}


def _slice_index(tensor):
    """StridedSliceGrad takes int32/int64 only: an int16 spec is widened."""
    return raw_ops.Cast(x=tensor, DstT=dtypes.int32) if tensor.dtype == dtypes.int16 else tensor


@RegisterGradient("StridedSlice")
def _strided_slice_grad(op, grad):
    x, begin, end, strides = op.inputs
    begin, end, strides = (_slice_index(t) for t in (begin, end, strides))
    if x.shape.is_fully_defined():
        shape = const(x.shape.as_list(), begin.dtype)
    else:
        shape = raw_ops.Shape(input=x, out_type=begin.dtype)
    return [raw_ops.StridedSliceGrad(shape=shape, begin=begin, end=end, strides=strides,
                                     dy=grad, **_masks(op)), None, None, None]


@RegisterGradient("StridedSliceGrad")
def _strided_slice_grad_grad(op, grad):
    _, begin, end, strides, _ = op.inputs
    return [None] * 4 + [raw_ops.StridedSlice(input=grad, begin=begin, end=end,
                                              strides=strides, **_masks(op))]
