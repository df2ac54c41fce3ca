"""TF1's shape and filler wrappers: shape, shape_n, size, rank (folded to a Const whenever
the static shape decides them, as TF's graph-mode wrappers do), zeros, ones, fill,
zeros_like, ones_like (a Const when small and static, else Fill, as TF chooses), range
(TF's dtype inference), broadcast_static_shape and broadcast_dynamic_shape."""

import numpy as np

from graphops.api import raw_ops
from graphops.api.nn_args import op_scope
from graphops.api.tensor_args import (autopack, cast_if_needed, graph_of, is_symbolic,
                                      static_shape, to_tensor)
from graphops.building.tensor import Tensor
from graphops.registry import dtypes
from graphops.registry.op_defs.math import broadcast_shapes
from graphops.registry.tensor_shape import as_shape

_RANGE_TYPES = [dtypes.int32, dtypes.int64, dtypes.float16, dtypes.bfloat16, dtypes.float32,
                dtypes.float64]


def _index_type(out_type):
    return dtypes.int32 if out_type is None else dtypes.as_dtype(out_type)


def shape(input, name=None, out_type=None):  # noqa: A002
    """The shape of `input` as a vector of `out_type` (int32): a Const when fully known
    while building, else a Shape op."""
    out_type = _index_type(out_type)
    with op_scope(name, "Shape", [input]) as scope:
        graph = graph_of(input)
        value = to_tensor(input, graph)
        static = static_shape(value)
        if graph is not None and static.is_fully_defined():
            return to_tensor(np.array(static.as_list(), out_type.np_dtype), graph, name=scope)
        return raw_ops.Shape(input=value, out_type=out_type, name=scope)


def shape_n(input, out_type=dtypes.int32, name=None):  # noqa: A002
    """The shapes of a list of tensors (one ShapeN op)."""
    return raw_ops.ShapeN(input=list(input), out_type=out_type, name=name)


def size(input, name=None, out_type=dtypes.int32):  # noqa: A002
    """The number of elements of `input` (a Const when known while building)."""
    out_type = _index_type(out_type)
    with op_scope(name, "Size", [input]) as scope:
        graph = graph_of(input)
        value = to_tensor(input, graph)
        static = static_shape(value)
        if graph is None:
            return np.asarray(np.prod(static.as_list(), dtype=out_type.np_dtype))
        if static.is_fully_defined() or (static.rank and 0 in static.dims):
            count = static.num_elements() if static.is_fully_defined() else 0
            return to_tensor(np.asarray(count, out_type.np_dtype), graph, name=scope)
        return raw_ops.Size(input=value, out_type=out_type, name=scope)


def rank(input, name=None):  # noqa: A002
    """The number of dimensions of `input` as an int32 scalar (a Const when known)."""
    with op_scope(name, "Rank", [input]) as scope:
        graph = graph_of(input)
        value = to_tensor(input, graph)
        if static_shape(value).rank is not None:
            return to_tensor(np.int32(static_shape(value).rank), graph, name=scope)
        return raw_ops.Rank(input=value, name=scope)


def fill(dims, value, name=None):
    """A tensor of shape `dims` filled with the scalar `value`."""
    return raw_ops.Fill(dims=autopack(dims), value=value, name=name)


def _filled(number, shape_value, dtype, name, default_name):
    dtype = dtypes.as_dtype(dtype)
    number = b"" if dtype == dtypes.string and number == 0 else \
        bool(number) if dtype == dtypes.bool_ else number
    with op_scope(name, default_name, [shape_value]) as scope:
        graph = graph_of(shape_value)
        shape_value = autopack(shape_value)
        if not isinstance(shape_value, Tensor):
            dims = as_shape(shape_value)
            if graph is not None and dims.is_fully_defined() and \
                    np.prod(dims.as_list(), dtype=np.int64) < 1000:
                array = np.full(dims.as_list(), number, dtype.np_dtype)
                return to_tensor(array, graph, name=scope)
            shape_value = to_tensor(np.asarray(dims.as_list(), np.int32), graph,
                                    name="shape_as_tensor")
        if static_shape(shape_value).rank == 0:
            shape_value = raw_ops.Reshape(tensor=shape_value, shape=np.int32([-1]))
        filler = to_tensor(np.asarray(number, dtype.np_dtype), graph)
        return raw_ops.Fill(dims=shape_value, value=filler, name=scope)


def zeros(shape, dtype=dtypes.float32, name=None):  # noqa: A002
    """A tensor of `shape` full of zeros."""
    return _filled(0, shape, dtype, name, "zeros")


def ones(shape, dtype=dtypes.float32, name=None):  # noqa: A002
    """A tensor of `shape` full of ones."""
    return _filled(1, shape, dtype, name, "ones")


def zeros_like(tensor, dtype=None, name=None, optimize=True):
    """Zeros of `tensor`'s shape (and dtype unless given): a filler when the shape is
    known while building (or the dtype changes), else a ZerosLike op."""
    with op_scope(name, "zeros_like", [tensor]) as scope:
        graph = graph_of(tensor)
        value = to_tensor(tensor, graph, name="tensor")
        same = dtype is None or dtypes.as_dtype(dtype) == value.dtype
        if graph is None:
            return raw_ops.ZerosLike(x=value) if same else zeros(value.shape, dtype)
        static = static_shape(value)
        dtype = value.dtype if dtype is None else dtypes.as_dtype(dtype)
        if optimize and static.is_fully_defined():
            return zeros(static.as_list(), dtype, name=scope)
        if not same:
            return zeros(shape(value) if optimize else raw_ops.Shape(input=value), dtype,
                         name=scope)
        return raw_ops.ZerosLike(x=value, name=scope)


def ones_like(tensor, dtype=None, name=None, optimize=True):
    """Ones of `tensor`'s shape (and dtype unless given): Fill of its shape."""
    with op_scope(name, "ones_like", [tensor]) as scope:
        graph = graph_of(tensor)
        value = to_tensor(tensor, graph, name="tensor")
        dtype = value.dtype if dtype is None else dtypes.as_dtype(dtype)
        if graph is None:
            return ones(value.shape, dtype)
        static = static_shape(value)
        if optimize and static.is_fully_defined():
            with op_scope(None, "Shape"):
                dims = to_tensor(np.int32(static.as_list()), graph, name="shape_as_tensor")
        else:
            dims = raw_ops.Shape(input=value)
        result = ones(dims, dtype, name=scope)
        result.set_shape(static)
        return result


def range(start, limit=None, delta=1, dtype=None, name="range"):  # noqa: A001
    """[start, start + delta, ...) up to `limit` (`range(n)` counts from 0); the dtype is
    the widest of the arguments' (int32 < int64 < float16 < bfloat16 < float32 < float64)
    unless given."""
    if limit is None:
        start, limit = 0, start
    with op_scope(name, "Range", [start, limit, delta]) as scope:
        graph = graph_of(start, limit, delta)
        args = [to_tensor(v, graph, None if is_symbolic(v) or isinstance(v, np.ndarray)
                          else dtype, name=n)
                for v, n in ((start, "start"), (limit, "limit"), (delta, "delta"))]
        if dtype is None:
            kinds = [a.dtype if isinstance(a, Tensor) else dtypes.as_dtype(a.dtype)
                     for a in args]
            for kind in kinds:
                if kind not in _RANGE_TYPES:
                    raise TypeError(f"Range arguments must be of types "
                                    f"{[t.name for t in _RANGE_TYPES]}, got {kind.name}")
            dtype = max(kinds, key=_RANGE_TYPES.index)
        args = [cast_if_needed(a, dtype) for a in args]
        return raw_ops.Range(start=args[0], limit=args[1], delta=args[2], name=scope)


def broadcast_static_shape(shape_x, shape_y):
    """The static shape two shapes broadcast to; ValueError when they cannot."""
    x, y = as_shape(shape_x), as_shape(shape_y)
    try:
        return broadcast_shapes(x, y)
    except ValueError:
        raise ValueError(f"Incompatible shapes for broadcasting: {x} and {y}") from None


def broadcast_dynamic_shape(shape_x, shape_y):
    """The shape two shape vectors broadcast to, computed when run (BroadcastArgs)."""
    return raw_ops.BroadcastArgs(s0=shape_x, s1=shape_y)
