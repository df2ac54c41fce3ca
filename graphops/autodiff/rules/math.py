"""Gradients of the math ops (TF's math_grad.py): cwise ops with broadcasting, MatMul,
Cast and the reductions."""

from graphops.api import raw_ops
from graphops.autodiff.gradients import NotDifferentiable, RegisterGradient
from graphops.autodiff.rules.util import (const, constant_list, reduced_shape, scalar_like,
                                sum_to_operand)

for _op in ("Less", "LessEqual", "Greater", "GreaterEqual", "Equal", "NotEqual", "Range"):
    NotDifferentiable(_op)


def _binary(op, grad_x, grad_y):
    x, y = op.inputs
    return [sum_to_operand(grad_x, x, y), sum_to_operand(grad_y, y, x)]


@RegisterGradient("AddV2")
def _add_grad(op, grad):
    return _binary(op, grad, grad)


@RegisterGradient("Sub")
def _sub_grad(op, grad):
    return _binary(op, grad, raw_ops.Neg(x=grad))


@RegisterGradient("Mul")
def _mul_grad(op, grad):
    x, y = op.inputs
    return _binary(op, raw_ops.Mul(x=grad, y=y), raw_ops.Mul(x=x, y=grad))


@RegisterGradient("RealDiv")
def _real_div_grad(op, grad):
    x, y = op.inputs
    grad_y = raw_ops.Neg(x=raw_ops.Mul(x=grad, y=raw_ops.RealDiv(x=op.outputs[0], y=y)))
    return _binary(op, raw_ops.RealDiv(x=grad, y=y), grad_y)


def _select_grad(op, grad, x_wins):
    """Maximum/Minimum: the gradient goes to x where `x_wins` (a bool tensor), else to y."""
    mask = raw_ops.Cast(x=x_wins, DstT=grad.dtype)
    grad_x = raw_ops.Mul(x=grad, y=mask)
    return _binary(op, grad_x, raw_ops.Sub(x=grad, y=grad_x))


@RegisterGradient("Maximum")
def _maximum_grad(op, grad):
    return _select_grad(op, grad, raw_ops.GreaterEqual(x=op.inputs[0], y=op.inputs[1]))


@RegisterGradient("Minimum")
def _minimum_grad(op, grad):
    return _select_grad(op, grad, raw_ops.LessEqual(x=op.inputs[0], y=op.inputs[1]))


@RegisterGradient("FloorMod")
def _floor_mod_grad(op, grad):
    """z = x - floor(x / y) * y: dz/dx = 1, dz/dy = -floor(x / y) = (z - x) / y. (TF takes
    floor(x / y) from FloorDiv, which is not here: integer operands get no y gradient.)"""
    x, y = op.inputs
    grad_y = None
    if x.dtype.is_floating:
        grad_y = raw_ops.Mul(x=grad, y=raw_ops.RealDiv(x=raw_ops.Sub(x=op.outputs[0], y=x), y=y))
    return _binary(op, grad, grad_y)


@RegisterGradient("Neg")
def _neg_grad(op, grad):
    return [raw_ops.Neg(x=grad)]


@RegisterGradient("Square")
def _square_grad(op, grad):
    x = op.inputs[0]
    return [raw_ops.Mul(x=grad, y=raw_ops.Mul(x=scalar_like(2, x), y=x))]


@RegisterGradient("Sqrt")
def _sqrt_grad(op, grad):
    y = op.outputs[0]
    return [raw_ops.RealDiv(x=raw_ops.Mul(x=grad, y=scalar_like(0.5, y)), y=y)]


@RegisterGradient("Rsqrt")
def _rsqrt_grad(op, grad):
    y = op.outputs[0]
    cube = raw_ops.Mul(x=raw_ops.Square(x=y), y=y)
    return [raw_ops.Mul(x=grad, y=raw_ops.Mul(x=scalar_like(-0.5, y), y=cube))]


@RegisterGradient("Exp")
def _exp_grad(op, grad):
    return [raw_ops.Mul(x=grad, y=op.outputs[0])]


@RegisterGradient("Log")
def _log_grad(op, grad):
    return [raw_ops.RealDiv(x=grad, y=op.inputs[0])]


@RegisterGradient("Tanh")
def _tanh_grad(op, grad):
    y = op.outputs[0]
    return [raw_ops.Mul(x=grad, y=raw_ops.Sub(x=scalar_like(1, y), y=raw_ops.Square(x=y)))]


@RegisterGradient("Sigmoid")
def _sigmoid_grad(op, grad):
    y = op.outputs[0]
    slope = raw_ops.Mul(x=y, y=raw_ops.Sub(x=scalar_like(1, y), y=y))
    return [raw_ops.Mul(x=grad, y=slope)]


@RegisterGradient("Cast")
def _cast_grad(op, grad):
    src, dst = op.get_attr("SrcT"), op.get_attr("DstT")
    differentiable = (src.is_floating or src.is_complex) and (dst.is_floating or dst.is_complex)
    return [raw_ops.Cast(x=grad, DstT=src) if differentiable else None]


@RegisterGradient("MatMul")
def _matmul_grad(op, grad):
    a, b = op.inputs
    ta, tb = op.get_attr("transpose_a"), op.get_attr("transpose_b")

    def mm(x, y, tx, ty):
        return raw_ops.MatMul(a=x, b=y, transpose_a=tx, transpose_b=ty)

    if not ta and not tb:
        return [mm(grad, b, False, True), mm(a, grad, True, False)]
    if not ta and tb:
        return [mm(grad, b, False, False), mm(grad, a, True, False)]
    if ta and not tb:
        return [mm(b, grad, False, True), mm(a, grad, False, False)]
    return [mm(b, grad, True, True), mm(grad, a, True, True)]


def _reduced_axes(op):
    """The reduced axes, wrapped and sorted, when the rank and axes are known while building;
    else None."""
    rank, axes = op.inputs[0].shape.rank, constant_list(op.inputs[1])
    if rank is None or axes is None:
        return None
    return sorted({a % rank for a in axes}) if rank else []


def _broadcast_back(op, grad, axes):
    """The reduction's output gradient spread back over the reduced axes of its input
    (`axes` None: reshaped to the kept-dims shape computed at run time)."""
    x = op.inputs[0]
    if axes is None:
        if not op.get_attr("keep_dims"):
            kept = reduced_shape(raw_ops.Shape(input=x), op.inputs[1])
            grad = raw_ops.Reshape(tensor=grad, shape=kept)
        return raw_ops.Mul(x=grad, y=raw_ops.OnesLike(x=x))
    if not op.get_attr("keep_dims"):
        for axis in axes:
            grad = raw_ops.ExpandDims(input=grad, axis=const(axis))
    if x.shape.is_fully_defined():
        multiples = [d if i in axes else 1 for i, d in enumerate(x.shape.as_list())]
        return raw_ops.Tile(input=grad, multiples=const(multiples)) if axes else grad
    return raw_ops.Mul(x=grad, y=raw_ops.OnesLike(x=x))


@RegisterGradient("Sum")
def _sum_grad(op, grad):
    return [_broadcast_back(op, grad, _reduced_axes(op)), None]


@RegisterGradient("Mean")
def _mean_grad(op, grad):
    x, axes = op.inputs[0], _reduced_axes(op)
    dims = None if axes is None else [x.shape[i] for i in axes]
    if dims is not None and None not in dims:
        count = 1
        for d in dims:
            count *= d
        count = scalar_like(max(count, 1), grad)
    else:
        count = raw_ops.RealDiv(x=raw_ops.Cast(x=raw_ops.Size(input=x), DstT=grad.dtype),
                                y=raw_ops.Cast(x=raw_ops.Size(input=op.outputs[0]),
                                               DstT=grad.dtype))
    return [raw_ops.RealDiv(x=_broadcast_back(op, grad, axes), y=count), None]
