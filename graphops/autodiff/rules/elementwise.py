"""Gradients of the ops in `registry/op_defs/elementwise.py` (TF's math_grad.py): FloorDiv
and Rint have none (TF returns None), the logical ops and predicates are not
differentiable, ClipByValue routes the gradient to whichever input set each value, and
ConjugateTranspose transposes it back."""

from graphops.api import raw_ops
from graphops.autodiff.gradients import NotDifferentiable, RegisterGradient
from graphops.autodiff.rules.util import sum_to_operand

for _op in ("LogicalAnd", "LogicalOr", "LogicalNot", "IsNan", "IsInf", "IsFinite"):
    NotDifferentiable(_op)


@RegisterGradient("FloorDiv")
def _floor_div_grad(op, grad):
    return [None, None]


@RegisterGradient("Rint")
def _rint_grad(op, grad):
    return [None]


@RegisterGradient("ClipByValue")
def _clip_by_value_grad(op, grad):
    t, low, high = op.inputs
    zeros = raw_ops.ZerosLike(x=grad)
    below, above = raw_ops.Less(x=t, y=low), raw_ops.Greater(x=t, y=high)
    grad_t = raw_ops.SelectV2(condition=raw_ops.LogicalOr(x=below, y=above), t=zeros, e=grad)
    grad_low = raw_ops.SelectV2(condition=below, t=grad, e=zeros)
    grad_high = raw_ops.SelectV2(condition=above, t=grad, e=zeros)
    return [grad_t, sum_to_operand(grad_low, low, t), sum_to_operand(grad_high, high, t)]


@RegisterGradient("ConjugateTranspose")
def _conjugate_transpose_grad(op, grad):
    return [raw_ops.ConjugateTranspose(x=grad, perm=raw_ops.InvertPermutation(x=op.inputs[1])),
            None]
