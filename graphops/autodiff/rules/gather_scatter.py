"""Gradients of the gather and scatter ops (TF's array_grad.py, math_grad.py and
resource_variable_ops.py), built from the same ops as TF's: a gather along axis 0
(Gather, GatherV2, ResourceGather) and a GatherNd with one index column give
IndexedSlices, as in TF; the resource scatters have none."""

from graphops.api import raw_ops
from graphops.autodiff.gradients import NotDifferentiable, RegisterGradient
from graphops.autodiff.rules.util import as_vector, const, constant_list, vector_item, vector_slice
from graphops.building.indexed_slices import IndexedSlices
from graphops.registry import dtypes

for _op in ("ResourceScatterAdd", "ResourceScatterSub", "ResourceScatterMul",
            "ResourceScatterDiv", "ResourceScatterMin", "ResourceScatterMax",
            "ResourceScatterUpdate", "ResourceScatterNdUpdate", "ResourceScatterNdAdd",
            "ResourceScatterNdSub"):
    NotDifferentiable(_op)


def _concat(parts):
    return raw_ops.ConcatV2(values=parts, axis=const(0))


def _axis0_slices(params_shape, indices, grad):
    """TF's IndexedSlices gradient of a gather along axis 0: the gradient's rows, one per
    index, of a tensor of shape `params_shape`."""
    size = raw_ops.ExpandDims(input=raw_ops.Size(input=indices), axis=const(0))
    values = raw_ops.Reshape(tensor=grad, shape=_concat([size, vector_slice(params_shape, 1)]))
    return IndexedSlices(values, raw_ops.Reshape(tensor=indices, shape=size), params_shape)


@RegisterGradient("Gather")
def _gather_grad(op, grad):
    return [_axis0_slices(raw_ops.Shape(input=op.inputs[0]), op.inputs[1], grad), None]


@RegisterGradient("ResourceGather")
def _resource_gather_grad(op, grad):
    """TF's: IndexedSlices shaped like the variable (VariableShape), batch_dims ignored."""
    shape = raw_ops.VariableShape(input=op.inputs[0])
    return [_axis0_slices(shape, op.inputs[1], grad), None]


def _batch_indices(params_shape, indices, batch_dims):
    """TF's _GetBatchIndices: each batch's indices offset into the flattened batch."""
    dtype = indices.dtype
    shape = raw_ops.Cast(x=params_shape, DstT=dtype)
    accumulated = const(1, dtype)
    for dim in range(batch_dims, 0, -1):
        size = vector_item(shape, dim - 1)
        accumulated = raw_ops.Mul(x=accumulated, y=vector_item(shape, dim))
        steps = raw_ops.Range(start=const(0, dtype), limit=size, delta=const(1, dtype))
        steps = raw_ops.Mul(x=steps, y=accumulated)
        trailing = raw_ops.Sub(x=raw_ops.Rank(input=indices), y=const(dim))
        step_shape = _concat([raw_ops.Tile(input=const([1]), multiples=const([dim - 1])),
                              as_vector(size),
                              raw_ops.Tile(input=const([1]), multiples=as_vector(trailing))])
        indices = raw_ops.AddV2(x=indices, y=raw_ops.Reshape(tensor=steps, shape=step_shape))
    return indices


def _batch_gather_grad(params_shape, values, indices, batch_dims, gather_dim_size):
    """TF's _BatchGatherGrad: segment sums over the batch-offset indices."""
    indices_size = raw_ops.ExpandDims(input=raw_ops.Size(input=indices), axis=const(0))
    if batch_dims:
        values_shape = raw_ops.Shape(input=values)
        outer_shape = vector_slice(values_shape, end=batch_dims)
        inner_shape = vector_slice(vector_slice(values_shape, batch_dims), 1)
        batch_size = raw_ops.Prod(input=outer_shape, axis=const([0]))
        flat_values_shape = _concat([const([-1]), inner_shape])
        gather_dim_size = raw_ops.Mul(x=gather_dim_size, y=batch_size)
        indices = _batch_indices(params_shape, indices, batch_dims)
        values = raw_ops.Reshape(tensor=values, shape=flat_values_shape)
    indices = raw_ops.Reshape(tensor=indices, shape=indices_size)
    grad = raw_ops.UnsortedSegmentSum(data=values, segment_ids=indices,
                                      num_segments=gather_dim_size)
    if batch_dims:
        grad = raw_ops.Reshape(tensor=grad, shape=_concat([outer_shape, flat_values_shape]))
    return grad


@RegisterGradient("GatherV2")
def _gather_v2_grad(op, grad):
    """Axis 0: TF's IndexedSlices, made dense. Other axes: the gathered axis moved next to
    the batch dims, batch-offset segment sums, and the axis moved back (TF's way)."""
    params, indices, axis = op.inputs
    batch_dims = op.get_attr("batch_dims")
    if batch_dims < 0:
        if indices.shape.rank is None:
            raise ValueError(
                "Currently, it is unsupported to take the gradient of tf.gather when "
                "batch_dims < 0 and the rank of the indices is unknown. Please pass a positive "
                "batch_dims or use tf.ensure_shape to update the shape of indices when calling "
                f"tf.gather. Got batch_dims={batch_dims} and indices={indices}")
        batch_dims += indices.shape.rank
    params_shape = raw_ops.Shape(input=params)
    if constant_list(axis) == [0]:
        return [_axis0_slices(params_shape, indices, grad), None, None]
    if axis.dtype != dtypes.int32:
        axis = raw_ops.Cast(x=axis, DstT=dtypes.int32)
    outer_shape = vector_slice(params_shape, end=axis)
    inner_shape = vector_slice(vector_slice(params_shape, axis), 1)
    values_shape = _concat([outer_shape, const([-1]), inner_shape])
    values_dims = raw_ops.Size(input=values_shape)
    axis_dims = raw_ops.Size(input=outer_shape)

    def span(start, limit):
        start = const(start) if isinstance(start, int) else start
        limit = const(limit) if isinstance(limit, int) else limit
        return raw_ops.Range(start=start, limit=limit, delta=const(1))

    outer_batches = span(0, batch_dims)
    batch_axes = span(batch_dims, axis_dims)
    inner_axes = span(raw_ops.AddV2(x=axis_dims, y=const(1)), values_dims)
    values = raw_ops.Reshape(tensor=grad, shape=values_shape)
    perm = _concat([outer_batches, as_vector(axis_dims), batch_axes, inner_axes])
    moved = raw_ops.Transpose(x=values, perm=perm)
    moved_shape = raw_ops.GatherV2(params=params_shape, indices=perm, axis=const(0))
    params_grad = _batch_gather_grad(moved_shape, moved, indices, batch_dims,
                                     vector_item(params_shape, axis))
    inverse = _concat([outer_batches, raw_ops.AddV2(x=batch_axes, y=const(1)),
                       const([batch_dims]), inner_axes])
    params_grad = raw_ops.Transpose(x=params_grad, perm=inverse)
    return [raw_ops.Reshape(tensor=params_grad, shape=raw_ops.Shape(input=params)), None, None]


def _gather_nd_grad(grad, indices, ref_shape, **policy):
    """IndexedSlices for one index column, else a ScatterNd of the gradient (TF's)."""
    if indices.dtype != ref_shape.dtype:
        indices = raw_ops.Cast(x=indices, DstT=ref_shape.dtype)
    if indices.shape.rank == 2 and indices.shape[-1] == 1:
        return IndexedSlices(grad, raw_ops.Squeeze(input=indices, axis=[-1]), ref_shape)
    return raw_ops.ScatterNd(indices=indices, updates=grad, shape=ref_shape, **policy)


def _shape_index_type(indices):
    return dtypes.int64 if indices.dtype == dtypes.int64 else dtypes.int32


@RegisterGradient("GatherNd")
def _gather_nd_params_grad(op, grad):
    params, indices = op.inputs
    shape = raw_ops.Shape(input=params, out_type=_shape_index_type(indices))
    return [_gather_nd_grad(grad, indices, shape,
                            bad_indices_policy=op.get_attr("bad_indices_policy")), None]


@RegisterGradient("ResourceGatherNd")
def _resource_gather_nd_grad(op, grad):
    handle, indices = op.inputs
    shape = raw_ops.VariableShape(input=handle, out_type=_shape_index_type(indices))
    return [_gather_nd_grad(grad, indices, shape), None]


@RegisterGradient("UnsortedSegmentSum")
def _unsorted_segment_sum_grad(op, grad):
    """TF's _GatherDropNegatives: the gradient rows by segment id, zero for negative ids."""
    ids = op.inputs[1]
    clipped = raw_ops.Maximum(x=ids, y=raw_ops.ZerosLike(x=ids))
    gathered = raw_ops.GatherV2(params=grad, indices=clipped, axis=const(0))
    is_positive = raw_ops.GreaterEqual(x=ids, y=const(0, ids.dtype))
    positive_shape = raw_ops.Shape(input=is_positive)
    extra = raw_ops.Sub(x=raw_ops.Rank(input=gathered), y=raw_ops.Rank(input=is_positive))
    ones = raw_ops.Fill(dims=as_vector(extra), value=const(1))
    is_positive = raw_ops.Reshape(tensor=is_positive, shape=_concat([positive_shape, ones]))
    zeros = raw_ops.ZerosLike(x=gathered)
    return [raw_ops.SelectV2(condition=is_positive, t=gathered, e=zeros), None, None]


@RegisterGradient("ScatterNd")
def _scatter_nd_grad(op, grad):
    return [None, raw_ops.GatherNd(params=grad, indices=op.inputs[0]), None]
