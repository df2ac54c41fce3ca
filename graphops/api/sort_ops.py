"""tf.sort and tf.argsort as TF builds them: a descending TopKV2 over the whole axis (the
axis moved last by a Transpose when it is not), ascending order by negating the values
first (-x - 1 for signed integers, max - x for unsigned ones)."""

import numpy as np

from graphops.api import raw_ops
from graphops.api.nn_args import op_scope
from graphops.api.shape_ops import rank, shape
from graphops.api.tensor_args import constant_value, graph_of, static_shape, to_tensor
from graphops.building.values import dtype_of
from graphops.registry.errors import UnimplementedError


def _descending(values, axis, want_indices):
    k = shape(values)[axis]
    rank(values)
    static_rank = static_shape(values).rank
    transposition = None
    if not (axis == -1 or axis + 1 == static_rank):
        if static_rank is None:
            raise UnimplementedError("sorting along an inner axis needs a known rank here")
        axis %= static_rank
        perm = np.r_[np.arange(axis), [static_rank - 1], np.arange(axis + 1, static_rank - 1),
                     [axis]].astype(np.int32)
        transposition = to_tensor(perm, graph_of(values), name="transposition")
        values = raw_ops.Transpose(x=values, perm=transposition, name="transpose")
    top_values, indices = raw_ops.TopKV2(input=values, k=k)
    result = indices if want_indices else top_values
    if transposition is not None:
        result = raw_ops.Transpose(x=result, perm=transposition, name="transpose")
    return result


def _sort(values, axis, direction, want_indices):
    if direction not in ("ASCENDING", "DESCENDING"):
        raise ValueError("Argument `direction` should be one of ASCENDING, DESCENDING. "
                         f"Received: direction={direction}")
    graph = graph_of(values, axis)
    axis_value = constant_value(to_tensor(axis, graph, name="axis"))
    if axis_value is None or np.ndim(axis_value) != 0:
        raise ValueError(f"Argument `axis` must be a constant scalar. Received: axis={axis}.")
    axis = int(axis_value)
    values = to_tensor(values, graph, name="values")
    if direction == "DESCENDING":
        return _descending(values, axis, want_indices)
    dtype = dtype_of(values)
    if dtype.is_unsigned:
        result = _descending(dtype.max - values, axis, want_indices)
        return result if want_indices else dtype.max - result
    if dtype.is_integer:
        result = _descending(-values - 1, axis, want_indices)
        return result if want_indices else -result - 1
    result = _descending(-values, axis, want_indices)
    return result if want_indices else -result


def sort(values, axis=-1, direction="ASCENDING", name=None):
    """`values` sorted along `axis`."""
    with op_scope(name, "sort", [values]):
        return _sort(values, axis, direction, False)


def argsort(values, axis=-1, direction="ASCENDING", stable=False, name=None):
    """The indices that sort `values` along `axis` (int32)."""
    del stable
    with op_scope(name, "argsort", [values]):
        return _sort(values, axis, direction, True)
