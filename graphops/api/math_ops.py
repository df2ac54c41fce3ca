"""TF1's math convenience wrappers: gp.reduce_sum / mean / max / min / prod / any / all,
gp.argmax, gp.argmin, gp.equal, gp.cast, gp.abs, gp.sign, gp.pow, gp.add_n, gp.matmul,
gp.einsum. Each builds (or, eagerly, runs) the raw op with TF's argument handling."""

import numpy as np

from graphops.api import raw_ops
from graphops.building.values import convert_value, dtype_of
from graphops.api.nn_args import deprecated_argument_lookup
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


def _reduction(op_type, what):
    def reduce(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
               keep_dims=None):
        axis = deprecated_argument_lookup("axis", axis, "reduction_indices", reduction_indices)
        keepdims = deprecated_argument_lookup("keepdims", keepdims, "keep_dims", keep_dims)
        return _reduce(op_type, input_tensor, axis, keepdims, name)
    reduce.__name__ = reduce.__qualname__ = f"reduce_{op_type.lower()}"
    reduce.__doc__ = f"{what} over `axis` (all axes when None)."
    return reduce


reduce_sum = _reduction("Sum", "Sum")
reduce_mean = _reduction("Mean", "Mean")
reduce_max = _reduction("Max", "Maximum")
reduce_min = _reduction("Min", "Minimum")
reduce_prod = _reduction("Prod", "Product")
reduce_any = _reduction("Any", "Logical or")
reduce_all = _reduction("All", "Logical and")


def argmax(input, axis=None, name=None, dimension=None, output_type=dtypes.int64):  # noqa: A002
    """Index of the largest value along `axis` (0 when None)."""
    axis = deprecated_argument_lookup("axis", axis, "dimension", dimension)
    return raw_ops.ArgMax(input=input, dimension=np.int32(0 if axis is None else axis),
                          output_type=output_type, name=name)


def argmin(input, axis=None, name=None, dimension=None, output_type=dtypes.int64):  # noqa: A002
    """Index of the smallest value along `axis` (0 when None)."""
    axis = deprecated_argument_lookup("axis", axis, "dimension", dimension)
    return raw_ops.ArgMin(input=input, dimension=np.int32(0 if axis is None else axis),
                          output_type=output_type, name=name)


def abs(x, name=None):  # noqa: A001
    """|x| element-wise."""
    return raw_ops.Abs(x=x, name=name)


def sign(x, name=None):
    """-1, 0 or 1 element-wise (x / |x| for complex x)."""
    return raw_ops.Sign(x=x, name=name)


def pow(x, y, name=None):  # noqa: A001
    """x ** y element-wise, with broadcasting."""
    return raw_ops.Pow(x=x, y=y, name=name)


def add_n(inputs, name=None):
    """The element-wise sum of a list of same-shaped tensors."""
    if not inputs:
        raise ValueError("Inputs must be an iterable of at least one Tensor/IndexedSlices "
                         "with the same dtype and shape.")
    if len(inputs) == 1:
        return raw_ops.Identity(input=inputs[0], name=name) if name else inputs[0]
    return raw_ops.AddN(inputs=list(inputs), name=name)


def _rank(value):
    value = convert_value(value)
    return value.shape.rank if isinstance(value, Tensor) else value.ndim


def _conj(value):
    return raw_ops.Conj(input=value) if dtype_of(convert_value(value)).is_complex else value


def matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False,
           a_is_sparse=False, b_is_sparse=False, output_type=None, grad_a=False,
           grad_b=False, name=None):
    """a @ b: MatMul for matrices, BatchMatMulV2 (V3 with `output_type`) when a rank may
    exceed 2 (the batch dims broadcast). Transposing and taking the adjoint of one operand
    are exclusive."""
    if (transpose_a and adjoint_a) or (transpose_b and adjoint_b):
        raise ValueError("Only one of transpose_a and adjoint_a can be True.")
    ranks = (_rank(a), _rank(b))
    if output_type is not None or any(r is None or r > 2 for r in ranks):
        if transpose_a:
            a, adjoint_a = _conj(a), True
        if transpose_b:
            b, adjoint_b = _conj(b), True
        if output_type is not None:
            return raw_ops.BatchMatMulV3(x=a, y=b, Tout=output_type, adj_x=adjoint_a,
                                         adj_y=adjoint_b, grad_x=grad_a, grad_y=grad_b,
                                         name=name)
        return raw_ops.BatchMatMulV2(x=a, y=b, adj_x=adjoint_a, adj_y=adjoint_b,
                                     grad_x=grad_a, grad_y=grad_b, name=name)
    if adjoint_a:
        a, transpose_a = _conj(a), True
    if adjoint_b:
        b, transpose_b = _conj(b), True
    return raw_ops.MatMul(a=a, b=b, transpose_a=transpose_a, transpose_b=transpose_b,
                          grad_a=grad_a, grad_b=grad_b, name=name)


def einsum(equation, *inputs, name=None):
    """Einstein summation over one or two tensors; spaces are dropped, and an equation
    without "->" sums the labels that appear twice (the output: the others, sorted, after
    any "...")."""
    equation = equation.replace(" ", "")
    if "->" not in equation:
        labels = equation.replace(".", "").replace(",", "")
        output = "".join(sorted(c for c in set(labels) if labels.count(c) == 1))
        equation += "->" + ("..." if "..." in equation else "") + output
    return raw_ops.Einsum(inputs=list(inputs), equation=equation, name=name)


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
