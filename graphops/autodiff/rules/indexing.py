"""Gradients of the array plumbing ops (TF's array_grad.py): Split/SplitV/Unpack, IdentityN,
Select/SelectV2, Reverse/ReverseV2, BroadcastTo; ShapeN, OneHot and Where have none."""

from graphops.api import raw_ops
from graphops.autodiff.gradients import NotDifferentiable, RegisterGradient
from graphops.autodiff.rules.util import const, sum_to_operand

for _op in ("ShapeN", "OneHot", "Where"):
    NotDifferentiable(_op)


@RegisterGradient("Split")
def _split_grad(op, *grads):
    return [None, raw_ops.ConcatV2(values=list(grads), axis=op.inputs[0])]


@RegisterGradient("SplitV")
def _split_v_grad(op, *grads):
    return [raw_ops.ConcatV2(values=list(grads), axis=op.inputs[2]), None, None]


@RegisterGradient("Unpack")
def _unpack_grad(op, *grads):
    return [raw_ops.Pack(values=list(grads), axis=op.get_attr("axis"))]


@RegisterGradient("IdentityN")
def _identity_n_grad(op, *grads):
    return list(grads)


@RegisterGradient("Select")
def _select_grad(op, grad):
    condition, x = op.inputs[0], op.inputs[1]
    zeros = raw_ops.ZerosLike(x=x)
    return [None, raw_ops.Select(condition=condition, x=grad, y=zeros),
            raw_ops.Select(condition=condition, x=zeros, y=grad)]


@RegisterGradient("SelectV2")
def _select_v2_grad(op, grad):
    condition, x, y = op.inputs
    out = op.outputs[0]
    zeros = const(0, grad.dtype)
    grad_x = raw_ops.SelectV2(condition=condition, t=grad, e=zeros)
    grad_y = raw_ops.SelectV2(condition=condition, t=zeros, e=grad)
    return [None, sum_to_operand(grad_x, x, out), sum_to_operand(grad_y, y, out)]


@RegisterGradient("Reverse")
def _reverse_grad(op, grad):
    return [raw_ops.Reverse(tensor=grad, dims=op.inputs[1]), None]


@RegisterGradient("ReverseV2")
def _reverse_v2_grad(op, grad):
    return [raw_ops.ReverseV2(tensor=grad, axis=op.inputs[1]), None]


@RegisterGradient("BroadcastTo")
def _broadcast_to_grad(op, grad):
    """Sum over the axes BroadcastGradientArgs finds, reshaped to the input's shape."""
    x, shape = op.inputs
    out = op.outputs[0]
    if x.shape.is_fully_defined():
        x_shape = const(x.shape.as_list(), shape.dtype)
    else:
        x_shape = raw_ops.Shape(input=x, out_type=shape.dtype)
    if out.shape.is_fully_defined():
        shape = const(out.shape.as_list(), shape.dtype)
    _, axes = raw_ops.BroadcastGradientArgs(s0=shape, s1=x_shape)
    summed = raw_ops.Sum(input=grad, axis=axes, keep_dims=True)
    return [raw_ops.Reshape(tensor=summed, shape=x_shape), None]
