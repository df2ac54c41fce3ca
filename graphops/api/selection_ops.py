"""TF1's wrappers that pick or place elements: gather, gather_nd, scatter_nd, one_hot,
where (TF1's: Where for a condition alone, Select with x and y), where_v2, boolean_mask,
sequence_mask, sparse_to_dense and unique."""

import numpy as np

from graphops.api import raw_ops
from graphops.api.nn_args import op_scope
from graphops.api.tensor_args import (autopack, constant_value, graph_of, static_shape,
                                      to_tensor)
from graphops.api.shape_ops import shape
from graphops.building.values import dtype_of
from graphops.registry import dtypes
from graphops.registry.errors import UnimplementedError


def gather(params, indices, validate_indices=None, name=None, axis=None, batch_dims=0):
    """Slices of `params` along `axis` (default `batch_dims`) at `indices` (GatherV2; a
    variable reads its rows itself when it can)."""
    del validate_indices
    if axis is None:
        axis = batch_dims
    axis_value = constant_value(axis)
    if axis_value is None or int(axis_value) != 0 or batch_dims != 0:
        return raw_ops.GatherV2(params=params, indices=indices, axis=axis,
                                batch_dims=batch_dims, name=name)
    if hasattr(params, "sparse_read"):
        return params.sparse_read(indices, name=name)
    return raw_ops.GatherV2(params=params, indices=indices, axis=axis, name=name)


def gather_nd(params, indices, name=None, batch_dims=0):
    """The slices of `params` that the last axis of `indices` addresses."""
    if batch_dims != 0:
        raise UnimplementedError("gather_nd with batch_dims != 0 is not implemented; reshape "
                                 "the batch into the indices instead.")
    return raw_ops.GatherNd(params=params, indices=indices, name=name)


def scatter_nd(indices, updates, shape, name=None):  # noqa: A002
    """Zeros of `shape` with `updates` added at `indices`."""
    return raw_ops.ScatterNd(indices=indices, updates=updates, shape=autopack(shape),
                             name=name)


def sparse_to_dense(sparse_indices, output_shape, sparse_values, default_value=0,
                    validate_indices=True, name=None):
    """A dense tensor of `output_shape` with `sparse_values` at `sparse_indices` and
    `default_value` elsewhere (TF1's deprecated sparse_to_dense)."""
    return raw_ops.SparseToDense(sparse_indices=autopack(sparse_indices),
                                 output_shape=autopack(output_shape),
                                 sparse_values=sparse_values, default_value=default_value,
                                 validate_indices=validate_indices, name=name)


def unique(x, out_idx=dtypes.int32, name=None):
    """(y, idx): the distinct values of the vector x in order of first appearance, and
    x's positions among them (x = y[idx])."""
    return raw_ops.Unique(x=x, out_idx=out_idx, name=name)


def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None, name=None):
    """One-hot vectors of length `depth` along `axis` (last by default): `on_value` (1)
    at each index, `off_value` (0) elsewhere; dtype from the values, else float32."""
    with op_scope(name, "one_hot", [indices, depth, on_value, off_value]) as scope:
        graph = graph_of(indices, depth, on_value, off_value)
        dtype = None if dtype is None else dtypes.as_dtype(dtype)
        given = {}
        for key, value in (("on_value", on_value), ("off_value", off_value)):
            if value is not None:
                given[key] = to_tensor(value, graph, preferred_dtype=dtype)
                if dtype is not None and dtype_of(given[key]) != dtype:
                    raise TypeError(f"dtype {dtype_of(given[key]).name} of {key} does not "
                                    f"match dtype parameter {dtype.name}")
        if dtype is None:
            dtype = dtype_of(next(iter(given.values()))) if given else dtypes.float32
        on_value = given.get("on_value")
        off_value = given.get("off_value")
        if on_value is None:
            on_value = to_tensor(1, graph, dtype, name="on_value")
        if off_value is None:
            off_value = to_tensor(0, graph, dtype, name="off_value")
        if dtype_of(on_value) != dtype_of(off_value):
            raise TypeError(f"dtype {dtype_of(on_value).name} of on_value does not match "
                            f"dtype {dtype_of(off_value).name} of off_value")
        return raw_ops.OneHot(indices=indices, depth=depth, on_value=on_value,
                              off_value=off_value, axis=-1 if axis is None else axis,
                              name=scope)


def _where_indices(condition, name):
    with op_scope(name, "Where", [condition]) as scope:
        condition = to_tensor(condition, graph_of(condition), name="condition",
                              preferred_dtype=dtypes.bool_)
        return raw_ops.Where(condition=condition, name=scope)


def where(condition, x=None, y=None, name=None):
    """TF1's where: the coordinates of the true elements of `condition` (a [n, rank]
    int64 matrix), or, given x and y, x where `condition` holds else y (Select: a
    vector condition picks rows)."""
    if x is None and y is None:
        return _where_indices(condition, name)
    if x is not None and y is not None:
        return raw_ops.Select(condition=condition, x=x, y=y, name=name)
    raise ValueError("x and y must both be non-None or both be None.")


def where_v2(condition, x=None, y=None, name=None):
    """TF 2's where: as TF1's, but x, y and condition broadcast (SelectV2)."""
    if x is None and y is None:
        return _where_indices(condition, name)
    if x is not None and y is not None:
        return raw_ops.SelectV2(condition=condition, t=x, e=y, name=name)
    raise ValueError("x and y must both be non-None or both be None.")


def boolean_mask(tensor, mask, name="boolean_mask", axis=None):
    """The elements (or slices from `axis` on) of `tensor` where the bool `mask`, whose
    shape matches `tensor`'s dims axis..axis+rank(mask), is true."""
    with op_scope(name, "boolean_mask", [tensor, mask]):
        graph = graph_of(tensor, mask)
        tensor = to_tensor(tensor, graph, name="tensor")
        mask = to_tensor(mask, graph, name="mask")
        mask_shape, tensor_shape = static_shape(mask), static_shape(tensor)
        if mask_shape.rank == 0:
            raise ValueError("mask cannot be scalar.")
        if mask_shape.rank is None:
            raise ValueError("Number of mask dimensions must be specified, even if some "
                             "dimensions are None.  E.g. shape=[None] is ok, but shape=None "
                             "is not.")
        axis = 0 if axis is None else int(axis)
        n = mask_shape.rank
        if tensor_shape.rank is not None:
            part = tensor_shape.dims[axis:axis + n]
            if len(part) != n or any(a is not None and b is not None and a != b
                                     for a, b in zip(part, mask_shape.dims)):
                raise ValueError(f"Shapes {tensor_shape.dims[axis:axis + n]} and "
                                 f"{mask_shape.dims} are incompatible")
        if graph is None:
            flat = np.reshape(tensor, tensor.shape[:axis] + (-1,) + tensor.shape[axis + n:])
            return raw_ops.GatherV2(params=flat, indices=np.flatnonzero(np.reshape(mask, -1)),
                                    axis=np.int32(axis))
        leading = raw_ops.Prod(input=shape(tensor)[axis:axis + n], axis=np.int32([0]))
        before, after = shape(tensor)[:axis], shape(tensor)[axis + n:]
        with op_scope(None, "concat") as concat:
            packed = raw_ops.Pack(values=[leading], name="values_1")
            new_shape = raw_ops.ConcatV2(values=[before, packed, after], axis=np.int32(0),
                                         name=concat)
        tensor_dims = tensor_shape.dims
        tensor = raw_ops.Reshape(tensor=tensor, shape=new_shape)
        if tensor_dims is not None:
            tensor.set_shape(tensor_dims[:axis] + [mask_shape.num_elements()]
                             + tensor_dims[axis + n:])
        mask = raw_ops.Reshape(tensor=mask, shape=np.int32([-1]))
        indices = raw_ops.Squeeze(input=raw_ops.Where(condition=mask), axis=[1])
        return raw_ops.GatherV2(params=tensor, indices=indices, axis=np.int32(axis))


def sequence_mask(lengths, maxlen=None, dtype=dtypes.bool_, name=None):
    """mask[..., j] = j < lengths[...], for j below `maxlen` (default: the largest
    length), as `dtype`."""
    with op_scope(name, "SequenceMask", [lengths, maxlen]):
        graph = graph_of(lengths, maxlen)
        lengths = to_tensor(lengths, graph)
        if maxlen is None:
            rank = static_shape(lengths).rank
            axes = np.arange(rank, dtype=np.int32) if rank is not None else raw_ops.Range(
                start=np.int32(0), limit=raw_ops.Rank(input=lengths), delta=np.int32(1))
            maxlen = raw_ops.Max(input=lengths, axis=axes)
            maxlen = raw_ops.Maximum(x=to_tensor(0, graph, dtype_of(maxlen)), y=maxlen)
        else:
            maxlen = to_tensor(maxlen, graph)
        if static_shape(maxlen).rank not in (None, 0):
            raise ValueError(f"Argument `maxlen` must be scalar for sequence_mask, received "
                             f"`maxlen` = {maxlen}with shape '{static_shape(maxlen)}' instead")
        index_type = dtype_of(maxlen)
        row = raw_ops.Range(start=to_tensor(0, graph, index_type), limit=maxlen,
                            delta=to_tensor(1, graph, index_type))
        matrix = raw_ops.Cast(x=raw_ops.ExpandDims(input=lengths, axis=np.int32(-1)),
                              DstT=index_type)
        result = raw_ops.Less(x=row, y=matrix)
        dtype = dtypes.as_dtype(dtype) if dtype is not None else None
        if dtype is None or dtype == dtypes.bool_:
            return result
        return raw_ops.Cast(x=result, DstT=dtype)
