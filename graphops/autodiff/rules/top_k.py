"""Gradients of the top-k ops (TF's nn_grad.py): TopKV2 scatters the values' gradient
back to the positions the indices name; InTopKV2 is not differentiable."""

from graphops.api import raw_ops
from graphops.autodiff.gradients import NotDifferentiable, RegisterGradient
from graphops.autodiff.rules.util import const, shape_of
from graphops.registry import dtypes

NotDifferentiable("InTopKV2")


def _last_dim(shape, rank):
    """shape[-1] of an int32 shape vector, as int64 (TF gathers it from a cast)."""
    size = const(rank) if rank is not None else raw_ops.Size(input=shape)
    return raw_ops.GatherV2(params=raw_ops.Cast(x=shape, DstT=dtypes.int64),
                            indices=raw_ops.Sub(x=size, y=const(1)), axis=const(0))


@RegisterGradient("TopKV2")
def _top_k_grad(op, grad, _):
    """Each row's indices offset by row * columns, then ScatterNd of the flat gradient into
    a zero vector of the input's size, reshaped to the input's shape."""
    x, indices = op.inputs[0], op.outputs[1]
    in_shape, ind_shape = shape_of(x), shape_of(indices)
    rank = x.shape.rank
    ind_2d = raw_ops.Reshape(tensor=indices, shape=raw_ops.Pack(
        values=[const(-1, dtypes.int64), _last_dim(ind_shape, rank)]))
    columns = _last_dim(in_shape, rank)
    rows = raw_ops.StridedSlice(input=raw_ops.Shape(input=ind_2d), begin=const([0]),
                                end=const([1]), strides=const([1]), shrink_axis_mask=1)
    offsets = raw_ops.Range(start=const(0, dtypes.int64),
                            limit=raw_ops.Mul(x=raw_ops.Cast(x=rows, DstT=dtypes.int64),
                                              y=columns), delta=columns)
    offsets = raw_ops.Cast(x=raw_ops.ExpandDims(input=offsets, axis=const(-1)),
                           DstT=indices.dtype)
    flat = raw_ops.Reshape(tensor=raw_ops.AddV2(x=ind_2d, y=offsets), shape=const([-1]))
    size = raw_ops.Pack(values=[raw_ops.Prod(input=in_shape, axis=const([0]))])
    if indices.dtype != dtypes.int32:
        size = raw_ops.Cast(x=size, DstT=indices.dtype)
    scattered = raw_ops.ScatterNd(indices=raw_ops.ExpandDims(input=flat, axis=const(-1)),
                                  updates=raw_ops.Reshape(tensor=grad, shape=const([-1])),
                                  shape=size)
    return [raw_ops.Reshape(tensor=scattered, shape=in_shape), const(0)]
