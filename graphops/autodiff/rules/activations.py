"""Gradients of the activations (Softmax included) and of their gradient ops (TF's nn_grad.py).

Each activation's gradient is its gradient op (Relu -> ReluGrad, ...), as TF registers
them, but Softplus's (grad * sigmoid(x)) and LogSoftmax's (a composition). The gradient ops'
own gradients are TF's second-derivative rules. TF registers none for SoftsignGrad, and
neither does graphops.
"""

from graphops.api import raw_ops
from graphops.autodiff.gradients import RegisterGradient
from graphops.autodiff.rules.util import reduce_sum, scalar_like, with_attrs_of


def _register_activation(forward, grad_op, arg, of_output):
    """forward -> grad_op(gradients=grad, arg=its output or input), forward's attrs passed on."""
    @RegisterGradient(forward)
    def _grad(op, grad):
        value = op.outputs[0] if of_output else op.inputs[0]
        return [with_attrs_of(op, grad_op, gradients=grad, **{arg: value})]


for _args in (("Relu", "ReluGrad", "features", True), ("Relu6", "Relu6Grad", "features", True),
              ("Elu", "EluGrad", "outputs", True), ("Selu", "SeluGrad", "outputs", True),
              ("LeakyRelu", "LeakyReluGrad", "features", False),
              ("Softsign", "SoftsignGrad", "features", False)):
    _register_activation(*_args)


@RegisterGradient("Softplus")
def _softplus_grad(op, grad):
    return [raw_ops.Mul(x=grad, y=raw_ops.Sigmoid(x=op.inputs[0]))]


@RegisterGradient("LogSoftmax")
def _log_softmax_grad(op, grad):
    """grad - sum(grad, -1) * softmax, softmax being exp(log_softmax)."""
    softmax = raw_ops.Exp(x=op.outputs[0])
    total = reduce_sum(grad, [-1], keep_dims=True)
    return [raw_ops.Sub(x=grad, y=raw_ops.Mul(x=total, y=softmax))]


# ----------------------------------------------------------------------------- gradient ops
# A gradient op g(dy, x) is linear in dy: d/d(dy) is the same op applied to the incoming
# gradient; d/dx is zero for the piecewise-linear ones.


def _linear_in_gradients(op_type):
    """ReluGrad, Relu6Grad, LeakyReluGrad: (same op of (grad, x), zeros)."""

    def gradient(op, grad):
        x = op.inputs[1]
        return [with_attrs_of(op, op_type, gradients=grad, features=x), raw_ops.ZerosLike(x=x)]

    return gradient


for _op_type in ("ReluGrad", "Relu6Grad", "LeakyReluGrad"):
    RegisterGradient(_op_type)(_linear_in_gradients(_op_type))


def _exponential_unit_grad_grad(op_type):
    """EluGrad, SeluGrad: (same op of (grad, y), grad * dy where y < 0, else 0)."""

    def gradient(op, grad):
        dy, y = op.inputs
        negative = raw_ops.Less(x=y, y=scalar_like(0, y))
        return [getattr(raw_ops, op_type)(gradients=grad, outputs=y),
                raw_ops.Select(condition=negative, x=raw_ops.Mul(x=grad, y=dy),
                               y=raw_ops.ZerosLike(x=y))]

    return gradient


for _op_type in ("EluGrad", "SeluGrad"):
    RegisterGradient(_op_type)(_exponential_unit_grad_grad(_op_type))


@RegisterGradient("SoftplusGrad")
def _softplus_grad_grad(op, grad):
    """dx = dy / (1 + exp(-x)): d/d(dy) = SoftplusGrad(grad, x),
    d/dx = grad * dy / (exp(-x) + 2 + exp(x)). (TF builds these under a control dependency
    on `grad`, which is already their input.)"""
    dy, x = op.inputs
    denominator = raw_ops.AddV2(
        x=raw_ops.AddV2(x=raw_ops.Exp(x=raw_ops.Neg(x=x)), y=scalar_like(2, x)),
        y=raw_ops.Exp(x=x))
    d2x = raw_ops.RealDiv(x=raw_ops.Mul(x=grad, y=dy), y=denominator)
    return [raw_ops.SoftplusGrad(gradients=grad, features=x), d2x]


def _softmax_backprop(softmax, grad):
    """(grad - sum(grad * softmax, -1)) * softmax: the softmax Jacobian applied to grad."""
    dot = reduce_sum(raw_ops.Mul(x=grad, y=softmax), [-1], keep_dims=True)
    return raw_ops.Mul(x=raw_ops.Sub(x=grad, y=dot), y=softmax)


@RegisterGradient("Softmax")
def _softmax_grad(op, grad):
    return [_softmax_backprop(op.outputs[0], grad)]
