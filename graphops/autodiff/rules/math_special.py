"""Gradients of the special-function ops (TF's math_grad.py): Lgamma (digamma), Digamma
(polygamma of order 1), Zeta and Polygamma (by their second input only, as TF), and Xlogy,
Xdivy, Xlog1py (summed back over broadcast axes)."""

from graphops.api import raw_ops
from graphops.autodiff.gradients import RegisterGradient
from graphops.autodiff.rules.util import conj, scalar_like, sum_to_operand, sum_to_operands


@RegisterGradient("Lgamma")
def _lgamma_grad(op, grad):
    return [raw_ops.Mul(x=grad, y=raw_ops.Digamma(x=conj(op.inputs[0])))]


@RegisterGradient("Digamma")
def _digamma_grad(op, grad):
    x = conj(op.inputs[0])
    return [raw_ops.Mul(x=grad, y=raw_ops.Polygamma(a=scalar_like(1, x), x=x))]


@RegisterGradient("Zeta")
def _zeta_grad(op, grad):
    """d zeta(x, q) / dq = -x zeta(x + 1, q); none for x."""
    x, q = op.inputs
    cx, cq = conj(x), conj(q)
    partial_q = raw_ops.Mul(x=raw_ops.Neg(x=cx),
                            y=raw_ops.Zeta(x=raw_ops.AddV2(x=cx, y=scalar_like(1, x)), q=cq))
    return [None, sum_to_operand(raw_ops.Mul(x=partial_q, y=grad), q, x)]


@RegisterGradient("Polygamma")
def _polygamma_grad(op, grad):
    """d psi^(n)(x) / dx = psi^(n+1)(x); none for n."""
    n, x = op.inputs
    cn, cx = conj(n), conj(x)
    partial_x = raw_ops.Polygamma(a=raw_ops.AddV2(x=cn, y=scalar_like(1, n)), x=cx)
    return [None, sum_to_operand(raw_ops.Mul(x=partial_x, y=grad), x, n)]


def _x_weighted_grad(op, grad, partial_x, partial_y):
    x, y = op.inputs
    return sum_to_operands(raw_ops.Mul(x=partial_x, y=grad), raw_ops.Mul(x=partial_y, y=grad),
                           x, y)


def _nonzero(x):
    """1 where x != 0, else 0, in x's type."""
    return raw_ops.Cast(x=raw_ops.NotEqual(x=x, y=scalar_like(0, x)), DstT=x.dtype)


@RegisterGradient("Xlogy")
def _xlogy_grad(op, grad):
    x, y = op.inputs
    return _x_weighted_grad(op, grad, raw_ops.Xlogy(x=_nonzero(x), y=y), raw_ops.Xdivy(x=x, y=y))


@RegisterGradient("Xdivy")
def _xdivy_grad(op, grad):
    x, y = op.inputs
    return _x_weighted_grad(
        op, grad, raw_ops.Xdivy(x=_nonzero(x), y=y),
        raw_ops.Xdivy(x=raw_ops.Neg(x=x), y=raw_ops.Pow(x=y, y=scalar_like(2, y))))


@RegisterGradient("Xlog1py")
def _xlog1py_grad(op, grad):
    x, y = op.inputs
    return _x_weighted_grad(
        op, grad, raw_ops.Xlog1py(x=_nonzero(x), y=y),
        raw_ops.Xdivy(x=x, y=raw_ops.AddV2(x=y, y=scalar_like(1, y))))
