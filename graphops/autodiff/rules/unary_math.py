"""Gradients of the unary cwise math ops (TF's math_grad.py) and of their gradient ops
(SigmoidGrad, TanhGrad, SqrtGrad, RsqrtGrad, ReciprocalGrad/InvGrad): the same nodes TF's
rules build, conjugating complex operands as TF does."""

import numpy as np

from graphops.api import raw_ops
from graphops.autodiff.gradients import RegisterGradient
from graphops.autodiff.rules.util import conj, scalar_like


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
    slope = raw_ops.Exp(x=raw_ops.Neg(x=raw_ops.Square(x=op.inputs[0])))
    return [_mul(grad, scalar_like(-2 / np.sqrt(np.pi), grad), slope)]
