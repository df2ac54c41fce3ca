"""Gradients of BiasAdd (V1, BiasAddGrad), Softmax and the fused losses (TF's nn_grad.py)."""

from graphops.api import raw_ops
from graphops.autodiff.gradients import NotDifferentiable, RegisterGradient
from graphops.autodiff.rules.util import (const, is_zeros, reduce_sum, reduced_shape,
                                          sum_to_operand)

NotDifferentiable("ArgMax")


@RegisterGradient("BiasAdd")
def _bias_add_grad(op, grad):
    return [grad, raw_ops.BiasAddGrad(out_backprop=grad, data_format=op.get_attr("data_format"))]


def _other_axes(grad, channels_first):
    """The axes of `grad` but its channel axis: a list, or a run-time vector when the rank
    is unknown."""
    rank = grad.shape.rank
    if rank is not None:
        channel = 1 if channels_first else rank - 1
        return [d for d in range(rank) if d != channel]
    rank_t = raw_ops.Rank(input=grad)
    if channels_first:
        rest = raw_ops.Range(start=const(2), limit=rank_t, delta=const(1))
        return raw_ops.ConcatV2(values=[const([0]), rest], axis=const(0))
    return raw_ops.Range(start=const(0), limit=raw_ops.Sub(x=rank_t, y=const(1)),
                         delta=const(1))


@RegisterGradient("BiasAddV1")
def _bias_add_v1_grad(op, grad):
    """The bias gradient sums all but the last axis: range(rank - 1), as TF builds it."""
    rank = raw_ops.Rank(input=grad) if grad.shape.rank is None else const(grad.shape.rank)
    axes = raw_ops.Range(start=const(0), limit=raw_ops.Sub(x=rank, y=const(1)),
                         delta=const(1))
    return [grad, raw_ops.Sum(input=grad, axis=axes)]


@RegisterGradient("BiasAddGrad")
def _bias_add_grad_grad(op, grad):
    """The bias-shaped `grad` broadcast back over out_backprop's shape: reshaped to ones but
    the channel dim, then tiled by out_backprop's dims (1 at the channel)."""
    value = op.inputs[0]
    channels_first = op.get_attr("data_format") == "NCHW"
    if value.shape.is_fully_defined():
        dims = value.shape.as_list()
        channel = 1 if channels_first else len(dims) - 1
        expanded = [-1 if d == channel else 1 for d in range(len(dims))]
        multiples = [1 if d == channel else n for d, n in enumerate(dims)]
        expanded, multiples = const(expanded), const(multiples)
    else:
        shape = raw_ops.Shape(input=value)
        axes = _other_axes(value, channels_first)
        expanded = reduced_shape(shape, axes if not isinstance(axes, list) else const(axes))
        channel = const([1 if channels_first else -1])
        multiples = reduced_shape(shape, channel)
    return [raw_ops.Tile(input=raw_ops.Reshape(tensor=grad, shape=expanded),
                         multiples=multiples)]


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
