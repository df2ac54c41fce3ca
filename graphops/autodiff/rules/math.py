"""Gradients of the math ops (TF's math_grad.py, nn_grad.py): the binary cwise ops (summed
back over broadcast axes; TruncateDiv none, Mod and TruncateMod not registered, as TF),
MatMul, Cast, Conj, AddN, L2Loss, the unary cwise ops (the trigonometric and hyperbolic
functions and their inverses too) and their gradient ops, FloorDiv, Rint and ClipByValue;
comparisons, Range, the logical ops and the float predicates have none. The reductions are
in `reduction`, the special functions in `math_special`, the batched products in `linalg`."""

import numpy as np

from graphops.api import raw_ops
from graphops.autodiff.gradients import NotDifferentiable, RegisterGradient, accepts_indexed_slices
from graphops.autodiff.rules.util import conj, scalar_like, sum_to_operand, sum_to_operands
from graphops.building.indexed_slices import IndexedSlices


for _op in ("Less", "LessEqual", "Greater", "GreaterEqual", "Equal", "NotEqual", "Range"):
    NotDifferentiable(_op)


def _binary(op, grad_x, grad_y):
    x, y = op.inputs
    return sum_to_operands(grad_x, grad_y, x, y)


@RegisterGradient("AddV2")
@RegisterGradient("Add")
def _add_grad(op, grad):
    return _binary(op, grad, grad)


@RegisterGradient("Sub")
def _sub_grad(op, grad):
    return _binary(op, grad, raw_ops.Neg(x=grad))


@RegisterGradient("Mul")
def _mul_grad(op, grad):
    """z = x y: dz/dx = conj(y), dz/dy = conj(x) (the complex gradient is conjugated)."""
    x, y = op.inputs
    return _binary(op, raw_ops.Mul(x=grad, y=conj(y)), raw_ops.Mul(x=conj(x), y=grad))


@RegisterGradient("RealDiv")
@RegisterGradient("Div")
def _div_grad(op, grad):
    """z = x / y: dz/dx = 1 / conj(y), dz/dy = (-conj(x) / conj(y)) / conj(y)."""
    cx, cy = conj(op.inputs[0]), conj(op.inputs[1])
    grad_y = raw_ops.Mul(x=grad, y=raw_ops.RealDiv(
        x=raw_ops.RealDiv(x=raw_ops.Neg(x=cx), y=cy), y=cy))
    return _binary(op, raw_ops.RealDiv(x=grad, y=cy), grad_y)


@RegisterGradient("TruncateDiv")
def _truncate_div_grad(op, grad):
    return [None, None]


@RegisterGradient("Atan2")
def _atan2_grad(op, grad):
    """z = atan2(y, x): dz/dy = x / (x^2 + y^2), dz/dx = -y / (x^2 + y^2)."""
    y, x = op.inputs
    grad_inv = raw_ops.RealDiv(x=grad, y=raw_ops.AddV2(x=raw_ops.Square(x=y),
                                                       y=raw_ops.Square(x=x)))
    return _binary(op, raw_ops.Mul(x=x, y=grad_inv), raw_ops.Mul(x=raw_ops.Neg(x=y), y=grad_inv))


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
@accepts_indexed_slices
def _cast_grad(op, grad):
    src, dst = op.get_attr("SrcT"), op.get_attr("DstT")
    differentiable = (src.is_floating or src.is_complex) and (dst.is_floating or dst.is_complex)
    if not differentiable:
        return [None]
    if isinstance(grad, IndexedSlices):         # TF's math_ops.cast keeps the slices
        return [IndexedSlices(raw_ops.Cast(x=grad.values, DstT=src), grad.indices,
                              grad.dense_shape)]
    return [raw_ops.Cast(x=grad, DstT=src)]


@RegisterGradient("MatMul")
def _matmul_grad(op, grad):
    """Products of `grad` with the conjugated operands (their adjoints, for complex)."""
    a, b = conj(op.inputs[0]), conj(op.inputs[1])
    ta, tb = op.get_attr("transpose_a"), op.get_attr("transpose_b")

    def mm(x, y, tx, ty, of_a):
        return raw_ops.MatMul(a=x, b=y, transpose_a=tx, transpose_b=ty,
                              grad_a=of_a, grad_b=not of_a)

    if not ta and not tb:
        return [mm(grad, b, False, True, True), mm(a, grad, True, False, False)]
    if not ta and tb:
        return [mm(grad, b, False, False, True), mm(grad, a, True, False, False)]
    if ta and not tb:
        return [mm(b, grad, False, True, True), mm(a, grad, False, False, False)]
    return [mm(b, grad, True, True, True), mm(grad, a, True, True, False)]


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
    x, y = conj(op.inputs[0]), conj(op.inputs[1])
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


# -----------------------------------------------------------------------------
# unary functions and their gradient ops
#
# Gradients of the unary cwise math ops (TF's math_grad.py) and of their gradient ops
# (SigmoidGrad, TanhGrad, SqrtGrad, RsqrtGrad, ReciprocalGrad/InvGrad): the same nodes TF's
# rules build, conjugating complex operands as TF does.
def _mul(*factors):
    """The left-to-right product of `factors` as Mul nodes."""
    product = factors[0]
    for factor in factors[1:]:
        product = raw_ops.Mul(x=product, y=factor)
    return product


@RegisterGradient("Neg")
def _neg_grad(op, grad):
    return [raw_ops.Neg(x=grad)]


@RegisterGradient("Square")
def _square_grad(op, grad):
    x = conj(op.inputs[0])
    return [raw_ops.Mul(x=grad, y=raw_ops.Mul(x=x, y=scalar_like(2, x)))]


@RegisterGradient("Exp")
def _exp_grad(op, grad):
    return [raw_ops.Mul(x=grad, y=conj(op.outputs[0]))]


@RegisterGradient("Log")
def _log_grad(op, grad):
    return [raw_ops.Mul(x=grad, y=raw_ops.Reciprocal(x=conj(op.inputs[0])))]


@RegisterGradient("Sigmoid")
def _sigmoid_grad(op, grad):
    return [raw_ops.SigmoidGrad(y=conj(op.outputs[0]), dy=grad)]


@RegisterGradient("Tanh")
def _tanh_grad(op, grad):
    return [raw_ops.TanhGrad(y=conj(op.outputs[0]), dy=grad)]


@RegisterGradient("Sqrt")
def _sqrt_grad(op, grad):
    return [raw_ops.SqrtGrad(y=op.outputs[0], dy=grad)]


@RegisterGradient("Rsqrt")
def _rsqrt_grad(op, grad):
    return [raw_ops.RsqrtGrad(y=op.outputs[0], dy=grad)]


@RegisterGradient("Reciprocal")
@RegisterGradient("Inv")
def _reciprocal_grad(op, grad):
    return [raw_ops.ReciprocalGrad(y=op.outputs[0], dy=grad)]


@RegisterGradient("SigmoidGrad")
def _sigmoid_grad_grad(op, grad):
    """z = b a (1 - a): dz/da = b - 2ab, dz/db = a (1 - a)."""
    a, b = conj(op.inputs[0]), conj(op.inputs[1])
    grad_b = raw_ops.Mul(x=grad, y=b)
    return [raw_ops.Sub(x=grad_b, y=_mul(scalar_like(2, grad), grad_b, a)),
            raw_ops.SigmoidGrad(y=a, dy=grad)]


@RegisterGradient("TanhGrad")
def _tanh_grad_grad(op, grad):
    """z = b (1 - a^2): dz/da = -2ab, dz/db = 1 - a^2."""
    a, b = conj(op.inputs[0]), conj(op.inputs[1])
    return [_mul(grad, scalar_like(-2, grad), b, a), raw_ops.TanhGrad(y=a, dy=grad)]


@RegisterGradient("SqrtGrad")
def _sqrt_grad_grad(op, grad):
    """z = 0.5 b / conj(a): dz/da = -z / a, dz/db = 0.5 / a."""
    a, z = op.inputs[0], op.outputs[0]
    grad_over_a = raw_ops.RealDiv(x=grad, y=a)
    return [raw_ops.Mul(x=raw_ops.Neg(x=conj(grad_over_a)), y=z),
            raw_ops.Mul(x=scalar_like(0.5, grad), y=grad_over_a)]


@RegisterGradient("RsqrtGrad")
def _rsqrt_grad_grad(op, grad):
    """z = -0.5 b conj(a)^3: dz/da = -1.5 b a^2, dz/db = -0.5 a^3."""
    a, b = conj(op.inputs[0]), op.inputs[1]
    grad_a = _mul(scalar_like(-1.5, grad), conj(grad), b, raw_ops.Square(x=a))
    return [grad_a, raw_ops.RsqrtGrad(y=a, dy=grad)]


@RegisterGradient("ReciprocalGrad")
@RegisterGradient("InvGrad")
def _reciprocal_grad_grad(op, grad):
    """z = -b conj(a)^2: dz/da = -2ab, dz/db = -a^2."""
    a, b = conj(op.inputs[0]), op.inputs[1]
    return [_mul(conj(grad), scalar_like(-2, grad), b, a), raw_ops.ReciprocalGrad(y=a, dy=grad)]


@RegisterGradient("Abs")
def _abs_grad(op, grad):
    return [raw_ops.Mul(x=grad, y=raw_ops.Sign(x=op.inputs[0]))]


@RegisterGradient("Sign")
def _sign_grad(op, grad):
    return [raw_ops.ZerosLike(x=op.inputs[0])]


@RegisterGradient("Floor")
@RegisterGradient("Ceil")
@RegisterGradient("Round")
def _step_grad(op, grad):
    """Piecewise constant: TF returns no gradient (None), not zeros."""
    return [None]


@RegisterGradient("Sin")
def _sin_grad(op, grad):
    return [raw_ops.Mul(x=grad, y=raw_ops.Cos(x=conj(op.inputs[0])))]


@RegisterGradient("Cos")
def _cos_grad(op, grad):
    return [raw_ops.Mul(x=raw_ops.Neg(x=grad), y=raw_ops.Sin(x=conj(op.inputs[0])))]


@RegisterGradient("Tan")
def _tan_grad(op, grad):
    """sec(x)^2."""
    secant = raw_ops.Reciprocal(x=raw_ops.Cos(x=conj(op.inputs[0])))
    return [raw_ops.Mul(x=raw_ops.Square(x=secant), y=grad)]


def _inverse_root(x, one_plus):
    """1 / sqrt(1 - x^2) (1 / (1 + x^2) when `one_plus`), of conj(x), as TF's nodes."""
    x = conj(x)
    one, square = scalar_like(1, x), raw_ops.Square(x=x)
    if one_plus:
        return raw_ops.Reciprocal(x=raw_ops.AddV2(x=one, y=square))
    return raw_ops.Reciprocal(x=raw_ops.Sqrt(x=raw_ops.Sub(x=one, y=square)))


@RegisterGradient("Asin")
def _asin_grad(op, grad):
    return [raw_ops.Mul(x=grad, y=_inverse_root(op.inputs[0], False))]


@RegisterGradient("Acos")
def _acos_grad(op, grad):
    return [raw_ops.Mul(x=raw_ops.Neg(x=grad), y=_inverse_root(op.inputs[0], False))]


@RegisterGradient("Atan")
def _atan_grad(op, grad):
    return [raw_ops.Mul(x=grad, y=_inverse_root(op.inputs[0], True))]


@RegisterGradient("Sinh")
def _sinh_grad(op, grad):
    return [raw_ops.Mul(x=grad, y=raw_ops.Cosh(x=conj(op.inputs[0])))]


@RegisterGradient("Cosh")
def _cosh_grad(op, grad):
    return [raw_ops.Mul(x=grad, y=raw_ops.Sinh(x=conj(op.inputs[0])))]


@RegisterGradient("Asinh")
def _asinh_grad(op, grad):
    """1 / cosh(y), from the output y."""
    return [raw_ops.RealDiv(x=grad, y=raw_ops.Cosh(x=conj(op.outputs[0])))]


@RegisterGradient("Acosh")
def _acosh_grad(op, grad):
    """1 / sinh(y), from the output y."""
    return [raw_ops.RealDiv(x=grad, y=raw_ops.Sinh(x=conj(op.outputs[0])))]


@RegisterGradient("Atanh")
def _atanh_grad(op, grad):
    """1 / (1 - x^2)."""
    x = conj(op.inputs[0])
    inverse = raw_ops.Reciprocal(x=raw_ops.Sub(x=scalar_like(1, x), y=raw_ops.Square(x=x)))
    return [raw_ops.Mul(x=grad, y=inverse)]


@RegisterGradient("Log1p")
def _log1p_grad(op, grad):
    x = conj(op.inputs[0])
    return [raw_ops.Mul(x=grad, y=raw_ops.Reciprocal(x=raw_ops.AddV2(x=scalar_like(1, x), y=x)))]


@RegisterGradient("Expm1")
def _expm1_grad(op, grad):
    return [raw_ops.Mul(x=grad, y=raw_ops.Exp(x=conj(op.inputs[0])))]


@RegisterGradient("Erf")
def _erf_grad(op, grad):
    """2 / sqrt(pi) exp(-x^2)."""
    x = conj(op.inputs[0])
    slope = raw_ops.Exp(x=raw_ops.Neg(x=raw_ops.Square(x=x)))
    return [_mul(grad, scalar_like(2 / np.sqrt(np.pi), grad), slope)]


@RegisterGradient("Erfc")
def _erfc_grad(op, grad):
    """-2 / sqrt(pi) exp(-x^2)."""
    slope = raw_ops.Exp(x=raw_ops.Neg(x=raw_ops.Square(x=conj(op.inputs[0]))))
    return [_mul(grad, scalar_like(-2 / np.sqrt(np.pi), grad), slope)]


# -----------------------------------------------------------------------------
# TF1's extras: FloorDiv, Rint, ClipByValue; the logical ops and predicates
#
# TF's math_grad.py: FloorDiv
# and Rint have none (TF returns None), the logical ops and predicates are not
# differentiable, ClipByValue routes the gradient to whichever input set each value.
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
