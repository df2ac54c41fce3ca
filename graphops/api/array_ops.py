"""TF1's array wrappers (``tf.compat.v1``): identity, reshape, transpose, concat, stack,
split, squeeze, expand_dims, tile, slice, reverse(_sequence), broadcast_to, pad, meshgrid,
... Each takes TF's argument names (deprecated spellings too), opens TF's name scope and
builds the ops TF's wrapper builds; outside any graph they run eagerly on arrays."""

import numbers

import numpy as np

from graphops.api import raw_ops
from graphops.api.nn_args import deprecated_argument_lookup, op_scope
from graphops.api.shape_ops import ones, ones_like, size
from graphops.api.tensor_args import (autopack, flatten, graph_of, is_symbolic, static_shape,
                                      to_tensor)
from graphops.building.tensor import Tensor
from graphops.building.values import dtype_of
from graphops.registry import dtypes

_MIRROR_MODES = ("REFLECT", "SYMMETRIC")


def identity(input, name=None):  # noqa: A002
    """`input` itself, as a new Identity node."""
    return raw_ops.Identity(input=input, name=name)


def identity_n(input, name=None):  # noqa: A002
    """Each of a list of tensors, as one IdentityN node."""
    return raw_ops.IdentityN(input=list(input), name=name)


def stop_gradient(input, name=None):  # noqa: A002
    """`input`, with no gradient flowing back through it."""
    return raw_ops.StopGradient(input=input, name=name)


def placeholder_with_default(input, shape, name=None):  # noqa: A002
    """`input` unless a value of `shape` is fed in its place."""
    return raw_ops.PlaceholderWithDefault(input=input, shape=shape, name=name)


def reshape(tensor, shape, name=None):
    """`tensor`'s values in `shape` (one dim may be -1)."""
    return raw_ops.Reshape(tensor=tensor, shape=autopack(shape), name=name)


def tile(input, multiples, name=None):  # noqa: A002
    """`input` repeated `multiples[i]` times along axis i."""
    return raw_ops.Tile(input=input, multiples=autopack(multiples), name=name)


def slice(input_, begin, size, name=None):  # noqa: A001
    """The block of `input_` starting at `begin` of `size` (-1: to the end)."""
    return raw_ops.Slice(input=input_, begin=autopack(begin), size=autopack(size),
                        name=name)


def broadcast_to(input, shape, name=None):  # noqa: A002
    """`input` broadcast to `shape`."""
    return raw_ops.BroadcastTo(input=input, shape=autopack(shape), name=name)


def reverse(tensor, axis, name=None):
    """`tensor` with the axes in `axis` reversed (ReverseV2; also tf.reverse_v2)."""
    return raw_ops.ReverseV2(tensor=tensor, axis=axis, name=name)


reverse_v2 = reverse


def reverse_sequence(input, seq_lengths, seq_axis=None, batch_axis=None, name=None,  # noqa: A002
                     seq_dim=None, batch_dim=None):
    """For each b along `batch_axis`, the first seq_lengths[b] entries along `seq_axis`
    reversed."""
    seq_axis = deprecated_argument_lookup("seq_axis", seq_axis, "seq_dim", seq_dim)
    batch_axis = deprecated_argument_lookup("batch_axis", batch_axis, "batch_dim", batch_dim)
    return raw_ops.ReverseSequence(input=input, seq_lengths=seq_lengths, seq_dim=seq_axis,
                                   batch_dim=0 if batch_axis is None else batch_axis,
                                   name=name)


def _transpose_op(a, perm, conjugate, name):
    if conjugate and dtype_of(a).is_complex:
        return raw_ops.ConjugateTranspose(x=a, perm=perm, name=name)
    return raw_ops.Transpose(x=a, perm=perm, name=name)


def transpose(a, perm=None, name="transpose", conjugate=False):
    """`a` with its axes permuted by `perm` (reversed when None); `conjugate` also
    conjugates complex values."""
    with op_scope(name, "transpose", [a]) as scope:
        a = to_tensor(a, graph_of(a), name="a")
        if perm is None:
            rank = static_shape(a).rank
            if rank is not None:
                perm = np.arange(rank - 1, -1, -1, dtype=np.int32)
            else:
                rank = raw_ops.Rank(input=a)
                perm = raw_ops.Sub(x=raw_ops.Sub(x=rank, y=np.int32(1)),
                                   y=raw_ops.Range(start=np.int32(0), limit=rank,
                                                   delta=np.int32(1)))
        return _transpose_op(a, perm, conjugate, scope)


def matrix_transpose(a, name="matrix_transpose", conjugate=False):
    """`a` with its last two axes swapped (a batch of matrices transposed)."""
    with op_scope(name, "matrix_transpose", [a]):
        a = to_tensor(a, graph_of(a), name="a")
        shape = static_shape(a)
        if shape.rank is not None:
            if shape.rank < 2:
                raise ValueError("Argument `a` should be a (batch) matrix with rank >= 2.  "
                                 f"Received `a` = {a} with shape: {shape}")
            perm = list(range(shape.rank - 2)) + [shape.rank - 1, shape.rank - 2]
        else:
            rank = raw_ops.Rank(input=a)
            perm = raw_ops.ConcatV2(values=[
                raw_ops.Range(start=np.int32(0), limit=raw_ops.Sub(x=rank, y=np.int32(2)),
                              delta=np.int32(1)),
                raw_ops.Pack(values=[raw_ops.Sub(x=rank, y=np.int32(1)),
                                     raw_ops.Sub(x=rank, y=np.int32(2))])], axis=np.int32(0))
        return transpose(a, perm=perm, conjugate=conjugate)


def concat(values, axis, name="concat"):
    """The tensors in `values` joined along `axis` (one tensor: an Identity of it)."""
    if not isinstance(values, (list, tuple)):
        values = [values]
    if len(values) == 1:
        with op_scope(name, name, values) as scope:
            axis_value = to_tensor(axis, graph_of(values, axis), dtypes.int32,
                                   name="concat_dim")
            if static_shape(axis_value).rank not in (None, 0):
                raise ValueError(f"Shape {static_shape(axis_value)} must have rank 0")
            if scope is None:
                return raw_ops.Identity(input=values[0])
            return raw_ops.Identity(input=values[0], name=name)
    return raw_ops.ConcatV2(values=list(values), axis=axis, name=name)


def stack(values, axis=0, name="stack"):
    """The equally shaped tensors in `values` stacked along a new axis `axis` (a Const when
    they are all plain values and axis is 0)."""
    graph = graph_of(values)
    if axis == 0 and (not isinstance(values, (list, tuple))
                      or not any(is_symbolic(v) for v in flatten(values))):
        return to_tensor(values, graph, name=name)     # TF's convert_to_tensor fast path
    first = to_tensor(values[0], graph, name=name) if values else None
    if first is not None and static_shape(first).rank is not None:
        count = static_shape(first).rank + 1
        if not -count <= axis < count:
            raise ValueError(f"Argument `axis` = {axis} not in range [{-count}, {count})")
    return raw_ops.Pack(values=list(values), axis=axis, name=name)


def unstack(value, num=None, axis=0, name="unstack"):
    """The slices of `value` along `axis`, as a list of `num` tensors (inferred from the
    static shape when None)."""
    if num is None:
        value = to_tensor(value, graph_of(value))
        shape = static_shape(value)
        if shape.rank is not None:
            if not -shape.rank <= axis < shape.rank:
                raise ValueError(f"Argument `axis` = {axis} not in range "
                                 f"[{-shape.rank}, {shape.rank})")
            num = shape.dims[axis]
        if num is None:
            raise ValueError(f"Cannot infer argument `num` from shape {shape}")
    return raw_ops.Unpack(value=value, num=num, axis=axis, name=name)


def split(value, num_or_size_splits, axis=0, num=None, name="split"):
    """`value` cut along `axis` into `num_or_size_splits` equal pieces (an int: Split) or
    into pieces of the given sizes (a list or vector: SplitV)."""
    if isinstance(num_or_size_splits, numbers.Integral) and \
            not isinstance(num_or_size_splits, bool):
        return raw_ops.Split(axis=axis, value=value, num_split=int(num_or_size_splits),
                             name=name)
    size_splits = to_tensor(num_or_size_splits, graph_of(value, num_or_size_splits, axis))
    shape = static_shape(size_splits)
    if shape.rank == 0:
        raise ValueError("Rank-0 tensors are not supported as the num_or_size_splits argument "
                         f"to split. Argument provided: {num_or_size_splits}")
    if num is None:
        num = shape.dims[0] if shape.rank else None
        if num is None:
            raise ValueError(f"Cannot infer argument `num` from shape {num_or_size_splits}")
    return raw_ops.SplitV(value=value, size_splits=size_splits, axis=axis, num_split=num,
                          name=name)


def squeeze(input, axis=None, name=None, squeeze_dims=None):  # noqa: A002
    """`input` without its size-1 axes (only those in `axis` when given)."""
    axis = deprecated_argument_lookup("axis", axis, "squeeze_dims", squeeze_dims)
    if np.isscalar(axis):
        axis = [axis]
    return raw_ops.Squeeze(input=input, axis=list(axis or []), name=name)


def expand_dims(input, axis=None, name=None, dim=None):  # noqa: A002
    """`input` with a new size-1 axis at `axis`."""
    axis = deprecated_argument_lookup("axis", axis, "dim", dim)
    if axis is None:
        raise ValueError("Must specify an axis argument to tf.expand_dims()")
    return raw_ops.ExpandDims(input=input, axis=axis, name=name)


def strided_slice(input_, begin, end, strides=None, begin_mask=0, end_mask=0,
                  ellipsis_mask=0, new_axis_mask=0, shrink_axis_mask=0, var=None,
                  name=None):
    """TF's strided slice of `input_` (strides default to ones)."""
    del var
    if strides is None:
        strides = ones_like(begin)
    return raw_ops.StridedSlice(input=input_, begin=begin, end=end, strides=strides,
                                begin_mask=begin_mask, end_mask=end_mask,
                                ellipsis_mask=ellipsis_mask, new_axis_mask=new_axis_mask,
                                shrink_axis_mask=shrink_axis_mask, name=name)


def _is_plain_zero(value):
    """TF's test for Pad over PadV2: a scalar Python/NumPy value equal to zero."""
    if isinstance(value, Tensor) or hasattr(value, "__cuda_array_interface__"):
        return False
    return np.ndim(value) == 0 and value == np.zeros_like(value)


def pad(tensor, paddings, mode="CONSTANT", name=None, constant_values=0):
    """Pads `tensor` by `paddings` ([rank, 2]): with `constant_values` ("CONSTANT", a Pad
    when it is a plain zero, else a PadV2) or mirrored ("REFLECT", "SYMMETRIC"); `mode` is
    case-insensitive."""
    mode = mode.upper()
    if mode == "CONSTANT":
        if _is_plain_zero(constant_values):
            return raw_ops.Pad(input=tensor, paddings=paddings, name=name)
        return raw_ops.PadV2(input=tensor, paddings=paddings, constant_values=constant_values,
                             name=name)
    if mode in _MIRROR_MODES:
        return raw_ops.MirrorPad(input=tensor, paddings=paddings, mode=mode, name=name)
    raise ValueError('Value of argument `mode` expected to be one of "CONSTANT", "REFLECT", '
                     f'or "SYMMETRIC". Received `mode` = {mode}')


def meshgrid(*args, indexing="xy", name="meshgrid"):
    """N-d coordinate grids from N vectors ("xy": the first two axes swapped, as
    matplotlib's; "ij": matrix indexing)."""
    if indexing not in ("xy", "ij"):
        raise ValueError("Argument `indexing` parameter must be either 'xy' or 'ij', got "
                         f"'{indexing}'")
    with op_scope(name, "meshgrid", list(args)):
        count = len(args)
        if not count:
            return []
        graph = graph_of(args)
        outputs = [raw_ops.Reshape(tensor=stack(x), shape=np.int32([1] * i + [-1] +
                                                                    [1] * (count - i - 1)))
                   for i, x in enumerate(args)]
        sizes = [size(x) for x in args]
        dtype = to_tensor(args[0], graph).dtype
        if indexing == "xy" and count > 1:
            outputs[0] = raw_ops.Reshape(tensor=outputs[0], shape=np.int32([1, -1] +
                                                                          [1] * (count - 2)))
            outputs[1] = raw_ops.Reshape(tensor=outputs[1], shape=np.int32([-1, 1] +
                                                                          [1] * (count - 2)))
            sizes[0], sizes[1] = sizes[1], sizes[0]
        factor = ones(sizes, dtype)
        return [raw_ops.Mul(x=x, y=factor, name="mul") for x in outputs]


__all__ = ["identity", "identity_n", "stop_gradient", "placeholder_with_default", "reshape",
           "tile", "slice", "broadcast_to", "reverse", "reverse_v2", "reverse_sequence",
           "transpose",
           "matrix_transpose", "concat", "stack", "unstack", "split", "squeeze",
           "expand_dims", "strided_slice", "pad", "meshgrid"]
