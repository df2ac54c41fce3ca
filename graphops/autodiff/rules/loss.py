"""Gradients of the fused softmax cross-entropy losses (TF's nn_grad.py)."""

from graphops.api import raw_ops
from graphops.autodiff.gradients import RegisterGradient
from graphops.autodiff.rules.util import const, is_zeros, sum_to_operand


def _broadcast_mul(vector, matrix):
    """vector[:, None] * matrix."""
    return raw_ops.Mul(x=raw_ops.ExpandDims(input=vector, axis=const(-1)), y=matrix)


@RegisterGradient("SparseSoftmaxCrossEntropyWithLogits")
def _sparse_xent_grad(op, grad_loss, grad_backprop):
    if not is_zeros(grad_backprop):
        raise LookupError(
            "Gradient explicitly disabled. Reason: Currently there is no way to take the "
            "second derivative of sparse_softmax_cross_entropy_with_logits due to the fused "
            "implementation's interaction with tf.gradients()")
    return [_broadcast_mul(grad_loss, op.outputs[1]), None]


def _broadcasts(x, other):
    """True when `x` is known to be broadcast against `other` (fewer dims, or a 1 where
    `other`'s dim is not)."""
    if x.shape.rank is None or other.shape.rank is None:
        return False
    if x.shape.rank < other.shape.rank:
        return True
    return any(a == 1 and b != 1 for a, b in zip(x.shape.as_list(), other.shape.as_list()))


def _to_operand(grad, x, other):
    """`grad` summed to `x`'s shape where `x` was broadcast (TF sums nothing: its gradient
    keeps the broadcast shape)."""
    return sum_to_operand(grad, x, other) if _broadcasts(x, other) else grad


@RegisterGradient("SoftmaxCrossEntropyWithLogits")
def _xent_grad(op, grad_loss, grad_backprop):
    """loss = -sum(labels * log_softmax(logits)), backprop = softmax(logits) - labels; the
    ops of TF's rule, plus the -grad_backprop TF leaves out of the labels' gradient."""
    logits, labels = op.inputs
    grad_logits = _broadcast_mul(grad_loss, op.outputs[1])
    rows = logits
    if _broadcasts(logits, labels):     # the softmax of the rows the op saw
        rows = raw_ops.BroadcastTo(input=logits, shape=raw_ops.Shape(input=op.outputs[1]))
    grad_labels = _broadcast_mul(grad_loss, raw_ops.Neg(x=raw_ops.LogSoftmax(logits=rows)))
    if not is_zeros(grad_backprop):
        softmax = raw_ops.Softmax(logits=rows)
        dot = raw_ops.Squeeze(input=raw_ops.BatchMatMulV2(
            x=raw_ops.ExpandDims(input=grad_backprop, axis=const(1)),
            y=raw_ops.ExpandDims(input=softmax, axis=const(2))), axis=[1])
        grad_logits = raw_ops.AddV2(
            x=grad_logits, y=raw_ops.Mul(x=raw_ops.Sub(x=grad_backprop, y=dot), y=softmax))
        grad_labels = raw_ops.Sub(x=grad_labels, y=grad_backprop)
    return [_to_operand(grad_logits, logits, labels), _to_operand(grad_labels, labels, logits)]
