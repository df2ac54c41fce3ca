"""SparseToDense's kernel (CPU and GPU): TF's argument checks and, with
`validate_indices`, its index checks (in bounds, sorted, unique), then one scatter."""

import numpy as np

from graphops.kernels.support.kernel_util import DEVICES, host_copy, nonnegative_dims
from graphops.registry.errors import InvalidArgumentError
from graphops.registry.kernel_registry import OpKernel, register_kernel
from graphops.registry.op_defs.array import int_values
from graphops.registry.tensor_shape import shape_str


def _index_str(index):
    return "[" + ",".join(str(int(i)) for i in index) + "]"


def _first(flags):
    hits = np.flatnonzero(flags)
    return int(hits[0]) if hits.size else None


def check_indices(indices, shape):
    """TF's SparseTensor::IndicesValid on an [n, rank] NumPy array: each index in bounds,
    and the list sorted without repeats; the first bad index is reported."""
    out_of_bounds = _first(((indices < 0) | (indices >= np.asarray(shape))).any(axis=1))
    steps = np.sign(indices[1:] - indices[:-1])          # per row: the first nonzero decides
    first_change = np.take_along_axis(
        steps, np.argmax(steps != 0, axis=1)[:, None], axis=1)[:, 0] if steps.size else steps
    unordered = _first(first_change <= 0) if indices.shape[0] > 1 else None
    bad = [i for i in (out_of_bounds, None if unordered is None else unordered + 1)
           if i is not None]
    if not bad:
        return
    n = min(bad)
    index = indices[n]
    if n == out_of_bounds:
        raise InvalidArgumentError(f"indices[{n}] = {_index_str(index)} is out of bounds: "
                                   f"need 0 <= index < {_index_str(shape)}")
    if first_change[n - 1] == 0:
        raise InvalidArgumentError(f"indices[{n}] = {_index_str(index)} is repeated")
    raise InvalidArgumentError(
        f"indices[{n}] = {_index_str(index)} is out of order. Many sparse ops require "
        "sorted indices.\n    Use `tf.sparse.reorder` to create a correctly ordered "
        "copy.\n\n")


@register_kernel("SparseToDense", DEVICES, host_memory=("output_shape",))
class SparseToDenseOp(OpKernel):
    def __init__(self, ctx):
        super().__init__(ctx)
        self._validate = ctx.get_attr("validate_indices")

    def compute(self, ctx):
        indices, output_shape, values, default = ctx.inputs
        if indices.ndim > 2:
            raise InvalidArgumentError("sparse_indices should be a scalar, vector, or matrix, "
                                       f"got shape {shape_str(indices.shape)}")
        if output_shape.ndim != 1:
            raise InvalidArgumentError(
                f"output_shape must be rank 1, got shape {shape_str(output_shape.shape)}")
        count = indices.shape[0] if indices.ndim > 0 else 1
        depth = indices.shape[1] if indices.ndim > 1 else 1
        if not (values.ndim == 0 or (values.ndim == 1 and values.shape[0] == count)):
            raise InvalidArgumentError(f"sparse_values has incorrect shape "
                                       f"{shape_str(values.shape)}, should be [] or [{count}]")
        if output_shape.size != depth:
            raise InvalidArgumentError("output_shape has incorrect number of elements: "
                                       f"{output_shape.size} should be: {depth}")
        if default.ndim != 0:
            raise InvalidArgumentError("default_value should be a scalar.")
        shape = nonnegative_dims(int_values(output_shape))
        index_rows = host_copy(indices).reshape(count, depth).astype(np.int64)
        if self._validate:
            check_indices(index_rows, shape)
        elif index_rows.size and bool(((index_rows < 0) | (index_rows >= shape)).any()):
            raise InvalidArgumentError(
                f"Indices are not valid (out of bounds).  Shape: {_index_str(shape)}")
        xp, dtype = ctx.xp, ctx.output_dtype(0).np_dtype
        ctx.check_allocation(shape, dtype)
        dense = xp.full(shape, default[()] if dtype != object else default.item(), dtype=dtype)
        if count:
            dense[tuple(xp.asarray(index_rows.T))] = values
        ctx.set_output(0, dense)
