"""Gradients of the everyday nn ops and the fused losses (TF's nn_grad.py)."""

from graphops.api import raw_ops
from graphops.autodiff.gradients import NotDifferentiable, RegisterGradient
from graphops.autodiff.rules.util import const, is_zeros, reduce_sum, sum_to_operand

NotDifferentiable("ArgMax")


@RegisterGradient("Relu")
def _relu_grad(op, grad):
    y = op.outputs[0]
    positive = raw_ops.Greater(x=y, y=raw_ops.ZerosLike(x=y))
    return [raw_ops.Mul(x=grad, y=raw_ops.Cast(x=positive, DstT=grad.dtype))]


@RegisterGradient("BiasAdd")
def _bias_add_grad(op, grad):
    """The bias gradient sums all but the channel axis (range(rank) at run time when the
    rank is unknown; TF has a BiasAddGrad op for this)."""
    rank = op.inputs[0].shape.rank
    channels_first = op.get_attr("data_format") == "NCHW"
    if rank is None:
        rank_t = raw_ops.Rank(input=grad)
        if channels_first:
            rest = raw_ops.Range(start=const(2), limit=rank_t, delta=const(1))
            axes = raw_ops.ConcatV2(values=[const([0]), rest], axis=const(0))
        else:
            axes = raw_ops.Range(start=const(0), limit=raw_ops.Sub(x=rank_t, y=const(1)),
                                 delta=const(1))
        return [grad, raw_ops.Sum(input=grad, axis=axes)]
    channel = 1 if channels_first else rank - 1
    return [grad, reduce_sum(grad, [d for d in range(rank) if d != channel])]


def _softmax_backprop(softmax, grad):
    """(grad - sum(grad * softmax, -1)) * softmax: the softmax Jacobian applied to grad."""
    dot = reduce_sum(raw_ops.Mul(x=grad, y=softmax), [-1], keep_dims=True)
    return raw_ops.Mul(x=raw_ops.Sub(x=grad, y=dot), y=softmax)


@RegisterGradient("Softmax")
def _softmax_grad(op, grad):
    return [_softmax_backprop(op.outputs[0], grad)]


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


@RegisterGradient("SoftmaxCrossEntropyWithLogits")
def _xent_grad(op, grad_loss, grad_backprop):
    """loss = -sum(labels * log_softmax(logits)), backprop = softmax(logits) - labels."""
    logits, labels = op.inputs
    softmax = raw_ops.Softmax(logits=logits)
    grad_logits = _broadcast_mul(grad_loss, op.outputs[1])
    grad_labels = _broadcast_mul(grad_loss, raw_ops.Neg(x=raw_ops.Log(x=softmax)))
    if not is_zeros(grad_backprop):
        grad_logits = raw_ops.AddV2(x=grad_logits, y=_softmax_backprop(softmax, grad_backprop))
        grad_labels = raw_ops.Sub(x=grad_labels, y=grad_backprop)
    return [sum_to_operand(grad_logits, logits, labels),
            sum_to_operand(grad_labels, labels, logits)]
