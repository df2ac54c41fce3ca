"""Gradients of Pad and PadV2 (TF's array_grad.py): a Slice of the gradient at the `before`
paddings."""

from graphops.api import raw_ops
from graphops.autodiff.gradients import RegisterGradient
from graphops.autodiff.rules.util import const
from graphops.building.constant_op import constant_value


@RegisterGradient("Pad")
@RegisterGradient("PadV2")
def _pad_grad(op, grad):
    """The input's part of the gradient: a Slice starting at the `before` paddings (PadV2's
    constant_values gets none, as in TF)."""
    x, paddings = op.inputs[:2]
    known = constant_value(paddings)
    if known is not None:
        begin = const(known[:, 0], paddings.dtype)
    else:
        before = raw_ops.Slice(input=paddings, begin=const([0, 0], paddings.dtype),
                               size=const([-1, 1], paddings.dtype))
        begin = raw_ops.Reshape(tensor=before, shape=const([-1]))
    size = (const(x.shape.as_list(), paddings.dtype) if x.shape.is_fully_defined()
            else raw_ops.Shape(input=x, out_type=paddings.dtype))
    return [raw_ops.Slice(input=grad, begin=begin, size=size)] + [None] * (len(op.inputs) - 1)
