"""Gradients of the math ops (TF's math_grad.py, nn_grad.py): the binary cwise ops (summed
back over broadcast axes), MatMul, Cast, Conj, AddN and L2Loss. The unary cwise ops are in
`unary_math`, the reductions in `reduction`, the batched products in `linalg`."""

from graphops.api import raw_ops
from graphops.autodiff.gradients import NotDifferentiable, RegisterGradient
from graphops.autodiff.rules.util import conj, scalar_like, sum_to_operand

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


@RegisterGradient("Pow")
def _pow_grad(op, grad):
    """z = x^y: dz/dx = y x^(y-1); dz/dy = z log(x), taken as 0 where x <= 0 (x == 0 for
    complex x)."""
    x, y = op.inputs
    cx, cy = conj(x), conj(y)
    grad_x = raw_ops.Mul(x=raw_ops.Mul(x=grad, y=cy),
                         y=raw_ops.Pow(x=cx, y=raw_ops.Sub(x=cy, y=scalar_like(1, y))))
    if x.dtype.is_complex:
        mask = raw_ops.NotEqual(x=cx, y=scalar_like(0, x))
    else:
        mask = raw_ops.Greater(x=cx, y=scalar_like(0, x))
    safe_x = raw_ops.Select(condition=mask, x=cx, y=raw_ops.OnesLike(x=x))
    log_x = raw_ops.Select(condition=mask, x=raw_ops.Log(x=safe_x), y=raw_ops.ZerosLike(x=x))
    grad_y = raw_ops.Mul(x=raw_ops.Mul(x=grad, y=conj(op.outputs[0])), y=log_x)
    return _binary(op, grad_x, grad_y)


@RegisterGradient("SquaredDifference")
def _squared_difference_grad(op, grad):
    x, y = op.inputs
    grad_x = raw_ops.Mul(x=raw_ops.Mul(x=scalar_like(2, grad), y=grad), y=raw_ops.Sub(x=x, y=y))
    grad_y = raw_ops.Neg(x=grad_x)
    if x.shape.is_fully_defined() and x.shape == y.shape == grad.shape:
        return [grad_x, grad_y]
    return _binary(op, grad_x, grad_y)


@RegisterGradient("DivNoNan")
def _div_no_nan_grad(op, grad):
    x, y = op.inputs
    grad_y = raw_ops.Mul(x=grad, y=raw_ops.DivNoNan(
        x=raw_ops.DivNoNan(x=raw_ops.Neg(x=x), y=y), y=y))
    return _binary(op, raw_ops.DivNoNan(x=grad, y=y), grad_y)


@RegisterGradient("Conj")
def _conj_grad(op, grad):
    return [raw_ops.Conj(input=grad)]


@RegisterGradient("AddN")
def _add_n_grad(op, grad):
    return [grad] * len(op.inputs)


@RegisterGradient("L2Loss")
def _l2_loss_grad(op, grad):
    return [raw_ops.Mul(x=op.inputs[0], y=grad)]
