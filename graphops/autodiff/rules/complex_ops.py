"""Gradients of the complex-number ops (TF's math_grad.py): Complex's are the real and
imaginary parts of the gradient (summed back over broadcast axes), Real's and Imag's the
gradient as the real or imaginary part, Angle's -grad / (imag + real * 1j), ComplexAbs's
grad * x / |x| (0 where |x| is 0)."""

from graphops.api import raw_ops
from graphops.autodiff.gradients import RegisterGradient
from graphops.autodiff.rules.util import const, sum_to_operands


def _parts(real, imag, like):
    """Complex(real, imag) of `like`'s precision."""
    return raw_ops.Complex(real=real, imag=imag, Tout=like.dtype)


@RegisterGradient("Complex")
def _complex_grad(op, grad):
    x, y = op.inputs
    grad_x = raw_ops.Real(input=grad, Tout=x.dtype)
    grad_y = raw_ops.Imag(input=grad, Tout=y.dtype)
    return sum_to_operands(grad_x, grad_y, x, y)


@RegisterGradient("Real")
def _real_grad(op, grad):
    return [_parts(grad, const(0, grad.dtype), op.inputs[0])]


@RegisterGradient("Imag")
def _imag_grad(op, grad):
    return [_parts(const(0, grad.dtype), grad, op.inputs[0])]


@RegisterGradient("Angle")
def _angle_grad(op, grad):
    x = op.inputs[0]
    real = raw_ops.Real(input=x, Tout=grad.dtype)
    imag = raw_ops.Imag(input=x, Tout=grad.dtype)
    z = raw_ops.Reciprocal(x=_parts(imag, real, x))
    complex_grad = _parts(grad, const(0, grad.dtype), x)
    return [raw_ops.Mul(x=raw_ops.Neg(x=complex_grad), y=z)]


@RegisterGradient("ComplexAbs")
def _complex_abs_grad(op, grad):
    x, y = op.inputs[0], op.outputs[0]
    scaled = raw_ops.Mul(x=_parts(grad, raw_ops.ZerosLike(x=grad), x), y=x)
    return [raw_ops.DivNoNan(x=scaled, y=_parts(y, raw_ops.ZerosLike(x=y), x))]
