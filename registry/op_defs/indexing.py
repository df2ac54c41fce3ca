"""Array plumbing op definitions (TF's array_ops.cc and math_ops.cc) with TF's shape
functions: IdentityN, ShapeN, Split, SplitV, Unpack, Select, SelectV2, Where, OneHot,
Reverse, ReverseV2, BroadcastTo. Gathers and scatters are in gather_scatter.py,
StridedSlice in strided_slice.py, Cumsum with Cumprod in math.py."""

from graphops.registry.errors import InvalidArgumentError
from graphops.registry.op_defs.array import int_values, scalar_input_dim, shape_from_shape_tensor
from graphops.registry.op_defs.math import broadcast_shapes
from graphops.registry.op_registry import register_op
from graphops.registry.shape_inference import (merge_dim, merge_shapes, with_rank_at_most,
                                               with_value)
from graphops.registry.tensor_shape import TensorShape, unknown_shape

_REVERSE_TYPES = ("uint8, int8, uint16, int16, uint32, int32, uint64, int64, bool, bfloat16, "
                  "half, float, double, complex64, complex128, string")
_REVERSE_V2_TYPES = ("uint8, int8, uint16, int16, int32, uint32, int64, uint64, bool, "
                     "bfloat16, half, float, double, complex64, complex128, string")
_WHERE_TYPES = ("float, double, int32, uint8, int16, int8, complex64, int64, qint8, quint8, "
                "qint32, bfloat16, qint16, quint16, uint16, complex128, half, uint32, uint64, "
                "bool")


def _set_all(c, shape):
    for i in range(c.num_outputs):
        c.set_output(i, shape)


def scalar_dim(c, i, rank):
    """TF's MakeDimForScalarInputWithNegativeIndexing: input `i` is a scalar axis, wrapped
    by `rank` (None when unknown); None when the value (or a negative one's rank) is unknown."""
    c.with_rank(c.input(i), 0)
    value = c.input_value(i)
    if value is None:
        return None
    axis = int_values(value)[0]
    if rank is None:
        return axis if axis >= 0 else None
    if not -rank <= axis < rank:
        raise InvalidArgumentError(
            f"Dimension size, given by scalar input {axis} must be in range [-{rank}, {rank})")
    return axis % rank


def _replace_dim(shape, axis, dim):
    dims = shape.dims
    dims[axis] = dim
    return TensorShape(dims)


# ----------------------------------------------------------------------------- identity, shapes

def _identity_n_shape(c):
    for i in range(c.num_inputs):
        c.set_output(i, c.input(i))


register_op("IdentityN") \
    .input("input: T") \
    .output("output: T") \
    .attr("T: list(type) >= 1") \
    .set_shape_fn(_identity_n_shape) \
    .doc("Returns a list of tensors with the same shapes and contents as the input tensors.")


def _shape_n_shape(c):
    for i in range(c.num_inputs):
        c.set_output(i, TensorShape([c.input(i).rank]))


register_op("ShapeN") \
    .input("input: N * T") \
    .output("output: N * out_type") \
    .attr("N: int >= 1") \
    .attr("T: type") \
    .attr("out_type: {int32, int64} = DT_INT32") \
    .set_shape_fn(_shape_n_shape) \
    .doc("Returns shape of tensors.")

# ----------------------------------------------------------------------------- splitting


def _split_shape(c):
    src = c.input(1)
    axis = scalar_dim(c, 0, src.rank)
    num_split = c.num_outputs
    if axis is None:
        _set_all(c, unknown_shape(src.rank) if src.rank is not None else unknown_shape())
        return
    src = c.with_rank_at_least(src, axis + 1)
    if src.rank is None:
        _set_all(c, unknown_shape())
        return
    size = src[axis]
    if size is not None and size % num_split:
        raise InvalidArgumentError(
            f"Dimension size must be evenly divisible by {num_split} but is {size}\n\t"
            "Number of ways to split should evenly divide the split dimension")
    _set_all(c, _replace_dim(src, axis, None if size is None else size // num_split))


register_op("Split") \
    .input("split_dim: int32") \
    .input("value: T") \
    .output("output: num_split * T") \
    .attr("num_split: int >= 1") \
    .attr("T: type") \
    .python_name("split_dim", "axis") \
    .set_shape_fn(_split_shape) \
    .doc("Splits a tensor into `num_split` tensors along one dimension.")


def _split_v_shape(c):
    src = c.input(0)
    if src.rank == 0:
        raise InvalidArgumentError("Can't split scalars")
    axis = scalar_dim(c, 2, src.rank)
    sizes_value = c.input_value(1)
    if src.rank is None:
        _set_all(c, unknown_shape())
        return
    if sizes_value is None:
        for i in range(c.num_outputs):
            c.set_output(i, unknown_shape(src.rank) if axis is None
                         else _replace_dim(src, axis, None))
        return
    if axis is None:
        _set_all(c, unknown_shape(src.rank))
        return
    sizes = int_values(sizes_value)
    if len(sizes) != c.num_outputs:
        raise InvalidArgumentError("Length of size_splits should be equal to num_outputs")
    if sizes.count(-1) > 1:
        raise InvalidArgumentError("size_splits can only have one -1")
    total = sum(s for s in sizes if s != -1)
    whole = src[axis]
    for i, size in enumerate(sizes):
        if size == -1 and whole is not None:
            size = whole - total
        if size < -1 or (size == -1 and whole is not None):
            raise InvalidArgumentError(f"Split size at index {i} must be >= 0. Got: {size}")
        c.set_output(i, _replace_dim(src, axis, None if size == -1 else size))
    if whole is not None and (total > whole if -1 in sizes else total != whole):
        raise InvalidArgumentError(
            f"can't split axis of size {whole} into pieces of size "
            f"[{','.join(map(str, sizes))}]")


register_op("SplitV") \
    .input("value: T") \
    .input("size_splits: Tlen") \
    .input("split_dim: int32") \
    .output("output: num_split * T") \
    .attr("num_split: int >= 1") \
    .attr("T: type") \
    .attr("Tlen: {int8, int32, int64} = DT_INT64") \
    .python_name("split_dim", "axis") \
    .set_shape_fn(_split_v_shape) \
    .doc("Splits a tensor into `num_split` tensors of the given sizes along one dimension.")


def _unpack_shape(c):
    src = c.input(0)
    if src.rank is None:
        _set_all(c, unknown_shape())
        return
    rank, axis = src.rank, c.get_attr("axis")
    if not -rank <= axis < rank:
        raise InvalidArgumentError(f"Invalid axis: {axis}; must be in [{-rank},{rank})")
    axis %= rank
    with_value(src[axis], c.num_outputs)
    dims = src.dims
    _set_all(c, TensorShape(dims[:axis] + dims[axis + 1:]))


register_op("Unpack") \
    .input("value: T") \
    .output("output: num * T") \
    .attr("num: int >= 0") \
    .attr("T: type") \
    .attr("axis: int = 0") \
    .set_shape_fn(_unpack_shape) \
    .doc("Unpacks a given dimension of a rank-`R` tensor into `num` rank-`(R-1)` tensors.")

# ----------------------------------------------------------------------------- selecting


def _select_shape(c):
    """TF's Select shape fn: then/else merge; cond a scalar, a vector over dim 0, or the
    same shape."""
    data = merge_shapes(c.input(1), c.input(2))
    cond = c.input(0)
    if cond.rank is None or data.rank is None or cond.rank == 0:
        c.set_output(0, data)
    elif cond.rank != 1 or data.rank == 0:
        c.set_output(0, merge_shapes(data, cond))
    else:
        merge_shapes(cond, TensorShape([data[0]]))
        c.set_output(0, data)


def _select_v2_shape(c):
    other = broadcast_shapes(c.input(1), c.input(2))
    c.set_output(0, broadcast_shapes(c.input(0), other))


for _name, _shape_fn, _doc in (
        ("Select", _select_shape, "Selects elements from `t` or `e`, depending on `condition`."),
        ("SelectV2", _select_v2_shape, "Selects from `t` or `e` by `condition`, broadcasting.")):
    _builder = register_op(_name) \
        .input("condition: bool") \
        .input("t: T") \
        .input("e: T") \
        .output("output: T") \
        .attr("T: type") \
        .set_shape_fn(_shape_fn) \
        .doc(_doc)
    if _name == "Select":
        _builder.python_name("t", "x").python_name("e", "y")


register_op("Where") \
    .input("input: T") \
    .output("index: int64") \
    .attr(f"T: {{{_WHERE_TYPES}}} = DT_BOOL") \
    .python_name("input", "condition") \
    .set_shape_fn(lambda c: c.set_output(0, TensorShape([None, c.input(0).rank]))) \
    .doc("Returns locations of nonzero / true values in a tensor.")


def _one_hot_shape(c):
    axis = c.get_attr("axis")
    if axis < -1:
        raise InvalidArgumentError("axis must be >= -1")
    c.with_rank(c.input(1), 0)
    depth = scalar_input_dim(c, 1)
    indices = c.input(0)
    if indices.rank is None:
        c.set_output(0, unknown_shape())
        return
    new_rank = indices.rank + 1
    at = (axis + new_rank) % new_rank
    dims = indices.dims
    c.set_output(0, TensorShape(dims[:at] + [depth] + dims[at:]))


register_op("OneHot") \
    .input("indices: TI") \
    .input("depth: int32") \
    .input("on_value: T") \
    .input("off_value: T") \
    .output("output: T") \
    .attr("axis: int = -1") \
    .attr("T: type") \
    .attr("TI: {uint8, int8, int32, int64} = DT_INT64") \
    .set_shape_fn(_one_hot_shape) \
    .doc("Returns a one-hot tensor.")

# ----------------------------------------------------------------------------- reversing


def _check_reverse_rank(src):
    if src.rank is not None and src.rank > 8:
        raise InvalidArgumentError(
            "reverse does not work on tensors with more than 8 dimensions")


def _reverse_shape(c):
    src, dims = c.input(0), c.with_rank(c.input(1), 1)
    if dims[0] is not None:
        src = c.with_rank(src, dims[0])
    _check_reverse_rank(src)
    c.set_output(0, src)


def reverse_axes(axes, rank):
    """TF's checks of ReverseV2's axes against the rank: the axes, wrapped."""
    seen = []
    for i, axis in enumerate(axes):
        wrapped = axis + rank if axis < 0 else axis
        if not 0 <= wrapped < rank:
            raise InvalidArgumentError(
                f"'axis'[{i}] = {axis} is out of valid range [0, {rank - 1}")
        if wrapped in seen:
            raise InvalidArgumentError(f"axis {wrapped} specified more than once.")
        seen.append(wrapped)
    return seen


def _reverse_v2_shape(c):
    src = c.input(0)
    with_rank_at_most(c.input(1), 1)
    _check_reverse_rank(src)
    axes = c.input_value(1)
    if axes is not None and src.rank is not None:
        reverse_axes(int_values(axes), src.rank)
    c.set_output(0, src)


register_op("Reverse") \
    .input("tensor: T") \
    .input("dims: bool") \
    .output("output: T") \
    .attr(f"T: {{{_REVERSE_TYPES}}}") \
    .set_shape_fn(_reverse_shape) \
    .doc("Reverses specific dimensions of a tensor.")

register_op("ReverseV2") \
    .input("tensor: T") \
    .input("axis: Tidx") \
    .output("output: T") \
    .attr("Tidx: {int32, int64} = DT_INT32") \
    .attr(f"T: {{{_REVERSE_V2_TYPES}}}") \
    .set_shape_fn(_reverse_v2_shape) \
    .doc("Reverses specific dimensions of a tensor.")

# ----------------------------------------------------------------------------- broadcasting


def _broadcast_to_shape(c):
    c.with_rank(c.input(1), 1)
    out = shape_from_shape_tensor(c, 1)
    src = c.input(0)
    if out.rank is None or src.rank is None:
        c.set_output(0, out)
        return
    src = with_rank_at_most(src, out.rank)
    dims = out.dims
    for i in range(1, src.rank + 1):
        if src[-i] is not None and src[-i] > 1:
            dims[-i] = merge_dim(src[-i], dims[-i])
    c.set_output(0, TensorShape(dims))


register_op("BroadcastTo") \
    .input("input: T") \
    .input("shape: Tidx") \
    .output("output: T") \
    .attr("T: type") \
    .attr("Tidx: {int32, int64} = DT_INT32") \
    .set_shape_fn(_broadcast_to_shape) \
    .doc("Broadcast an array for a compatible shape.")
