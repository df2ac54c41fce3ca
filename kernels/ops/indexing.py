"""Kernels of the array plumbing ops (CPU and GPU, written against `ctx.xp`) with TF's checks:
IdentityN, ShapeN, Split, SplitV, Unpack, Select, SelectV2, Where, OneHot, Reverse,
ReverseV2, BroadcastTo (Cumsum's kernel is the scan in `reduction_kernels`, with Cumprod).

Axes, sizes and shapes are host memory as in TF's GPU registrations (Split's split_dim,
SplitV's size_splits and split_dim, OneHot's depth, Reverse's dims, ReverseV2's axis,
BroadcastTo's shape, ShapeN's outputs).
"""

import numpy as np

from graphops.kernels.ops.array import pack_axis
from graphops.kernels.support.kernel_util import (COMPILED_MIN_SIZE, DEVICES, broadcast_shape,
                                                  computable_types, make_shape, where)
from graphops.kernels.ops.strided_slice import index_key
from graphops.registry import dtypes
from graphops.registry.errors import InvalidArgumentError, UnimplementedError
from graphops.registry.kernel_registry import OpKernel, register_kernel
from graphops.registry.op_defs.array import int_values
from graphops.registry.op_defs.indexing import reverse_axes
from graphops.registry.tensor_shape import shape_str

_INT32_MAX = 2**31 - 1


@register_kernel("IdentityN", DEVICES)
class IdentityNOp(OpKernel):
    """Forwards each input unchanged (a custom gradient's marker around a swish): a plan
    gives its outputs the inputs' slots and runs no step."""

    forwards_inputs = True

    def compute(self, ctx):
        for i, x in enumerate(ctx.inputs):
            ctx.set_output(i, x)


@register_kernel("ShapeN", DEVICES, host_memory=("output",))
class ShapeNOp(OpKernel):
    reads_shape_only = True

    def compute(self, ctx):
        out_type = ctx.output_dtype(0)
        for i, x in enumerate(ctx.inputs):
            if out_type == dtypes.int32:
                for j, d in enumerate(x.shape):
                    if d > _INT32_MAX:
                        raise InvalidArgumentError(
                            f"ShapeN output type is 32-bit but shape {i} dim {j} is {d}")
            ctx.set_output(i, np.asarray(x.shape, dtype=out_type.np_dtype))


# ----------------------------------------------------------------------------- splitting

def _split_axis(axis, rank):
    """TF's split_dim check: `axis` wrapped into [0, rank)."""
    wrapped = axis + rank if axis < 0 else axis
    if not 0 <= wrapped < rank:
        raise InvalidArgumentError(
            f"-input rank(-{rank}) <= split_dim < input rank ({rank}), but got {axis}")
    return wrapped


def _pieces(axis, sizes):
    """The NumPy indexes of consecutive pieces of `sizes` along `axis`."""
    bounds = np.cumsum([0] + sizes).tolist()
    head = (slice(None),) * axis
    return tuple(head + (slice(bounds[i], bounds[i + 1]),) for i in range(len(sizes)))


class _NumSplit(OpKernel):
    """The pieces' indexes are kept for the last (input shape, index inputs) seen: repeats
    of it skip the checks. None: the input is the only output."""

    moves_data = True

    def __init__(self, ctx):
        super().__init__(ctx)
        self._num_split = ctx.get_attr("num_split")

    def compute(self, ctx):
        inputs = ctx.inputs
        x = inputs[self.value_input]
        key = (x.shape, index_key(*[inputs[i] for i in self.index_inputs]))
        pieces = self.checked_once(key, lambda: self.pieces(x, *inputs))
        if pieces is None:
            ctx.set_output(0, x)
            return
        for i, index in enumerate(pieces):
            ctx.set_output(i, x[index])


@register_kernel("Split", DEVICES, host_memory=("split_dim",))
class SplitOp(_NumSplit):
    value_input, index_inputs = 1, (0,)

    def pieces(self, x, axis_t, _):
        if axis_t.ndim != 0:
            raise InvalidArgumentError(
                f"split_dim must be a scalar but has rank {axis_t.ndim}")
        axis = _split_axis(int(axis_t), x.ndim)
        num_split = self._num_split
        size = x.shape[axis]
        if size % num_split:
            raise InvalidArgumentError(
                f"Number of ways to split should evenly divide the split dimension, but got "
                f"split_dim {axis} (size = {size}) and num_split {num_split}")
        return _pieces(axis, [size // num_split] * num_split)


@register_kernel("SplitV", DEVICES, host_memory=("size_splits", "split_dim"))
class SplitVOp(_NumSplit):
    value_input, index_inputs = 0, (1, 2)

    def pieces(self, x, _, sizes_t, axis_t):
        num_split = self._num_split
        if axis_t.size != 1:
            raise InvalidArgumentError("split_dim_tensor must have exactly one element.")
        if sizes_t.ndim != 1 or sizes_t.size != num_split:
            raise InvalidArgumentError(
                f"size of the split_tensor must be 1-D and have the same elements as outputs "
                f"got {sizes_t.ndim} -D and {sizes_t.size} elements")
        axis = _split_axis(int_values(axis_t)[0], x.ndim)
        whole, sizes = x.shape[axis], int_values(sizes_t)
        if num_split == 1:
            if sizes[0] != whole:
                raise InvalidArgumentError(
                    f"If there is only one output, it must have the same size as the input. "
                    f"Input size: {whole} output size: {sizes[0]}")
            return None
        if sizes.count(-1) > 1:
            raise InvalidArgumentError("There can only be one -1 in the input.")
        determined = sum(s for s in sizes if s != -1)
        if not (determined == whole if -1 not in sizes else determined <= whole):
            raise InvalidArgumentError(
                "Determined shape must either match input shape along split_dim exactly if "
                "fully specified, or be less than the size of the input along split_dim if "
                f"not fully specified.  Got: {determined}")
        if -1 in sizes:
            sizes[sizes.index(-1)] = whole - determined
        for i, size in enumerate(sizes):
            if size < 0:
                raise InvalidArgumentError(f"Split size at index {i} must be >= 0. Got: {size}")
        return _pieces(axis, sizes)


@register_kernel("Unpack", DEVICES)
class UnpackOp(OpKernel):
    def __init__(self, ctx):
        super().__init__(ctx)
        self._num, self._axis = ctx.get_attr("num"), ctx.get_attr("axis")

    def compute(self, ctx):
        x, num = ctx.input(0), self._num
        wrapped = pack_axis(self._axis, x.ndim)
        if x.shape[wrapped] != num:
            raise InvalidArgumentError(
                f"Input shape axis {wrapped} must equal {num}, got shape {shape_str(x.shape)}")
        index = [slice(None)] * x.ndim
        for i in range(num):
            index[wrapped] = i
            ctx.set_output(i, x[tuple(index)])


# ----------------------------------------------------------------------------- selecting

def _check_same_size(t, e):
    if t.shape != e.shape:
        raise InvalidArgumentError(
            f"'then' and 'else' must have the same size.  but received: {shape_str(t.shape)} "
            f"vs. {shape_str(e.shape)}")


@register_kernel("Select", DEVICES)
class SelectOp(OpKernel):
    """TF1's select: a scalar condition picks a whole input, a vector one picks rows of
    higher-rank inputs, otherwise all three shapes are equal."""

    def compute(self, ctx):
        cond, t, e = ctx.inputs
        xp = ctx.xp
        if cond.ndim == 0:
            _check_same_size(t, e)
            ctx.set_output(0, t if bool(cond) else e)
            return
        if cond.ndim == 1 and t.ndim != 1:
            if t.ndim < 1:
                raise InvalidArgumentError(
                    f"'then' must be at least a vector, but saw shape: {shape_str(t.shape)}")
            if t.shape[0] != cond.size:
                raise InvalidArgumentError(
                    f"Number of batches of 'then' must match size of 'cond', but saw: "
                    f"{t.shape[0]} vs. {cond.size}")
            _check_same_size(t, e)
            cond = cond.reshape(cond.shape + (1,) * (t.ndim - 1))
        else:
            for i, other in ((1, t), (2, e)):
                if other.shape != cond.shape:
                    raise InvalidArgumentError(
                        f"Inputs to operation {self.node_name} of type Select must have the "
                        f"same size and shape.  Input 0: {shape_str(cond.shape)} != input {i}: "
                        f"{shape_str(other.shape)}")
        ctx.set_output(0, where(xp, cond, t, e))


@register_kernel("SelectV2", DEVICES)
class SelectV2Op(OpKernel):
    """The checks run once per (shapes, memory budget) in a row."""

    def compute(self, ctx):
        cond, t, e = ctx.inputs
        self.checked_once((cond.shape, t.shape, e.shape),
                          lambda: self._check(ctx, cond, t, e))
        # `where` blends large ones in a compiled loop; NumPy's own where serves the others.
        xp = ctx.xp
        ctx.set_output(0, xp.where(cond, t, e) if t.size < COMPILED_MIN_SIZE else
                       where(xp, cond, t, e))

    @staticmethod
    def _check(ctx, cond, t, e):
        shape = broadcast_shape(cond.shape, t.shape, e.shape)
        if shape is None:
            raise InvalidArgumentError(
                f"condition {shape_str(cond.shape)}, then {shape_str(t.shape)}, and else "
                f"{shape_str(e.shape)} must be broadcastable")
        ctx.check_allocation(shape, t.dtype)


@register_kernel("Where", DEVICES, type_constraints={"T": computable_types("Where")})
class WhereOp(OpKernel):
    """The coordinates of the true / nonzero elements, in row-major order."""

    def compute(self, ctx):
        x = ctx.input(0)
        if not 1 <= x.ndim <= 8:
            raise InvalidArgumentError(f"WhereOp : Unhandled input dimensions: {x.ndim}")
        ctx.set_output(0, ctx.xp.argwhere(x != 0).astype(np.int64))


@register_kernel("OneHot", DEVICES, host_memory=("depth",))
class OneHotOp(OpKernel):
    def __init__(self, ctx):
        super().__init__(ctx)
        self._axis = ctx.get_attr("axis")

    def compute(self, ctx):
        indices, depth_t, on, off = ctx.inputs
        axis, xp = self._axis, ctx.xp
        out_rank = indices.ndim + 1
        if not (axis == -1 or 0 <= axis < out_rank):
            raise InvalidArgumentError(f"Expected axis to be -1 or between [0, {out_rank}).  "
                                       f"But received: {axis}")
        for name, value in (("depth", depth_t), ("on_value", on), ("off_value", off)):
            if value.ndim != 0:
                raise InvalidArgumentError(
                    f"{name} must be a scalar, but got: {shape_str(value.shape)}")
        depth = int(depth_t)
        if depth < 0:
            raise InvalidArgumentError(f"depth must be non-negative, got: {depth}")
        axis = indices.ndim if axis == -1 else axis
        shape = indices.shape[:axis] + (depth,) + indices.shape[axis:]
        ctx.check_allocation(shape, on.dtype)
        flat = indices.reshape(-1).astype(np.int64)
        out = xp.full((flat.size, depth), off, on.dtype)      # the only big buffer
        valid = (flat >= 0) & (flat < depth)
        out[xp.arange(flat.size)[valid], flat[valid]] = on
        out = out.reshape(indices.shape + (depth,))
        ctx.set_output(0, out if axis == indices.ndim else
                       xp.ascontiguousarray(xp.moveaxis(out, -1, axis)))


# ----------------------------------------------------------------------------- reversing

def _check_reverse_rank(x):
    if x.ndim > 8:
        raise UnimplementedError("reverse is not implemented for tensors of rank > 8.")


def _flip(x, axes):
    index = [slice(None)] * x.ndim
    for axis in axes:
        index[axis] = slice(None, None, -1)
    return x[tuple(index)]


@register_kernel("Reverse", DEVICES, host_memory=("dims",))
class ReverseOp(OpKernel):
    def compute(self, ctx):
        x, dims = ctx.inputs
        if x.ndim == 0:
            ctx.set_output(0, x)
            return
        if x.shape[0] == 0:
            raise InvalidArgumentError("Invalid input first dimension. Found 0.")
        if dims.ndim != 1:
            raise InvalidArgumentError(f"'dims' must be 1-dimension, not {dims.ndim}")
        if dims.size != x.ndim:
            raise InvalidArgumentError(
                f"'dims' must have the same number of values as 'input' has dimensions. "
                f"'input' has {x.ndim}'dims' has {dims.size} values")
        _check_reverse_rank(x)
        axes = [i for i, flip in enumerate(dims.tolist()) if flip]
        ctx.set_output(0, _flip(x, axes))


@register_kernel("ReverseV2", DEVICES, host_memory=("axis",))
class ReverseV2Op(OpKernel):
    def compute(self, ctx):
        x, axis = ctx.inputs
        if x.ndim == 0 or x.size == 0:
            ctx.set_output(0, x)
            return
        if axis.ndim != 1:
            raise InvalidArgumentError(f"'dims' must be 1-dimension, not {axis.ndim}")
        axes = reverse_axes(int_values(axis), x.ndim)
        _check_reverse_rank(x)
        ctx.set_output(0, _flip(x, axes))


# ----------------------------------------------------------------------------- broadcasting

@register_kernel("BroadcastTo", DEVICES, host_memory=("shape",))
class BroadcastToOp(OpKernel):
    def compute(self, ctx):
        x, shape_t = ctx.inputs
        shape = tuple(make_shape(shape_t))
        if shape == x.shape:
            ctx.set_output(0, x)
            return
        if x.ndim > len(shape):
            raise InvalidArgumentError(f"Rank of input ({x.ndim}) must be no greater than rank "
                                       f"of output shape ({len(shape)}).")
        both = broadcast_shape(x.shape, shape)
        if both is None:
            raise InvalidArgumentError(
                f"Incompatible shapes: {shape_str(x.shape)} vs. {shape_str(shape)}")
        if tuple(both) != shape:
            raise InvalidArgumentError(f"Unable to broadcast tensor of shape "
                                       f"{shape_str(x.shape)} to tensor of shape "
                                       f"{shape_str(shape)}")
        ctx.check_allocation(shape, x.dtype)
        ctx.set_output(0, ctx.xp.array(ctx.xp.broadcast_to(x, shape)))
