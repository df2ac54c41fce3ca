"""Gradients of the bias ops: BiasAdd, BiasAddV1 and BiasAddGrad (TF's nn_grad.py)."""

from graphops.api import raw_ops
from graphops.autodiff.gradients import RegisterGradient
from graphops.autodiff.rules.util import const, reduced_shape

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
