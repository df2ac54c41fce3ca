"""TF1's math convenience wrappers: gp.reduce_sum, gp.reduce_mean, gp.argmax, gp.equal,
gp.cast. Each builds (or, eagerly, runs) the raw op with TF's argument handling."""

import numpy as np

from graphops.api import raw_ops
from graphops.building.values import convert_value, dtype_of
from graphops.api.nn import deprecated_argument_lookup
from graphops.building.tensor import Tensor
from registry import dtypes


def _reduce(op_type, input_tensor, axis, keepdims, name):
    tensor = convert_value(input_tensor)
    rank = tensor.shape.rank if isinstance(tensor, Tensor) else tensor.ndim
    if axis is None:
        if rank is None:
            if keepdims:
                raise ValueError(f"{op_type} over all axes with keepdims needs a known rank.")
            tensor, axis = raw_ops.Reshape(tensor=tensor, shape=np.int32([-1])), [0]
        else:
            axis = list(range(rank))
    return getattr(raw_ops, op_type)(input=tensor, axis=np.asarray(axis, np.int32),
                                     keep_dims=bool(keepdims), name=name)


def reduce_sum(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
               keep_dims=None):
    """Sum over `axis` (all axes when None)."""
    axis = deprecated_argument_lookup("axis", axis, "reduction_indices", reduction_indices)
    keepdims = deprecated_argument_lookup("keepdims", keepdims, "keep_dims", keep_dims)
    return _reduce("Sum", input_tensor, axis, keepdims, name)


def reduce_mean(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
                keep_dims=None):
    """Mean over `axis` (all axes when None)."""
    axis = deprecated_argument_lookup("axis", axis, "reduction_indices", reduction_indices)
    keepdims = deprecated_argument_lookup("keepdims", keepdims, "keep_dims", keep_dims)
    return _reduce("Mean", input_tensor, axis, keepdims, name)


def argmax(input, axis=None, name=None, dimension=None, output_type=dtypes.int64):  # noqa: A002
    """Index of the largest value along `axis` (0 when None)."""
    axis = deprecated_argument_lookup("axis", axis, "dimension", dimension)
    return raw_ops.ArgMax(input=input, dimension=np.int32(0 if axis is None else axis),
                          output_type=output_type, name=name)


def equal(x, y, name=None):
    """Element-wise x == y, with broadcasting."""
    return raw_ops.Equal(x=x, y=y, name=name)


def cast(x, dtype, name=None):
    """`x` converted to `dtype` (x itself when it already has that dtype)."""
    dtype = dtypes.as_dtype(dtype)
    x = convert_value(x)
    if dtype_of(x) is dtype:
        return x
    return raw_ops.Cast(x=x, DstT=dtype, name=name)
