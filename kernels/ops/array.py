"""CPU and GPU kernels of the array ops, written once against `ctx.xp`, with TF's checks.

Index inputs (shapes, axes, perms) and the outputs of Shape, Size and Rank are host memory,
as in TF's GPU registrations: those are NumPy arrays on every device. An int32 Const on a GPU is host memory too (TF's
HostConstantOp: such constants are mostly shapes and axes that host-memory inputs read).
"""

import numpy as np

from graphops.kernels.support.kernel_util import computable_types, DEVICES, nonnegative_dims
from graphops.kernels.support.tensor_list import zeros_like_variant
from graphops.registry import dtypes, memory
from graphops.registry.errors import InvalidArgumentError
from graphops.registry.kernel_registry import OpKernel, register_kernel
from graphops.registry.op_defs.array import int_values
from graphops.registry.tensor_shape import shape_str


INDEX_TYPES = (dtypes.int32, dtypes.int64)


# ----------------------------------------------------------------------------- sources

@register_kernel("Placeholder", DEVICES)
class PlaceholderOp(OpKernel):
    """Always fails: a placeholder must be fed."""

    foldable, feed_satisfies_control = False, True

    def __init__(self, ctx):
        super().__init__(ctx)
        dtype, shape = ctx.get_attr("dtype"), ctx.get_attr("shape")
        message = (f"You must feed a value for placeholder tensor '{self.node_name}' with "
                   f"dtype {dtype.short_name}")
        if shape.rank is not None:
            message += f" and shape {shape.debug_string()}"
        self._message = message

    def compute(self, ctx):
        raise InvalidArgumentError(self._message)


@register_kernel("Identity", DEVICES)
@register_kernel("StopGradient", DEVICES)
class IdentityOp(OpKernel):
    """Forwards its input unchanged (no copy: kernels never write into inputs); a plan
    gives its output the input's slot and runs no step."""

    forwards_input = True
    moves_data = True

    def compute(self, ctx):
        ctx.set_output(0, ctx.input(0))


@register_kernel("PlaceholderWithDefault", DEVICES)
class PlaceholderWithDefaultOp(IdentityOp):
    """Its default input, when not fed; never folded, as TF's grappler leaves it."""

    foldable = False


@register_kernel("NoOp", DEVICES)
class NoOp(OpKernel):
    """Only orders (its control inputs): a plan's steps already run in order."""

    does_nothing = True

    def compute(self, ctx):
        pass


@register_kernel("Const")
@register_kernel("Const", "GPU", type_constraints={
    "dtype": [t for t in dtypes.GPU_TYPES if t != dtypes.int32]})
@register_kernel("Const", "GPU", type_constraints={"dtype": [dtypes.int32]},
                 host_memory=("output",))
class ConstOp(OpKernel):
    """Returns its `value` attr: one copy per kernel instance (so per node and device),
    made when the kernel is built: a GPU constant is uploaded once, never per run.
    Host copies are read-only."""

    invariant = True

    def __init__(self, ctx):
        super().__init__(ctx)
        value, dtype = ctx.get_attr("value"), ctx.get_attr("dtype")
        if value.dtype != dtype.np_dtype:
            raise InvalidArgumentError(
                f"Type mismatch between value ({dtypes.as_dtype(value.dtype).short_name}) and "
                f"dtype ({dtype.short_name})")
        xp = np if 0 in ctx.host_outputs else ctx.xp
        self._value = xp.array(value, copy=True)
        if xp is np:
            self._value.flags.writeable = False

    def compute(self, ctx):
        ctx.set_output(0, self._value)


@register_kernel("ZerosLike", DEVICES)
class ZerosLikeOp(OpKernel):
    reads_shape_only = True

    def compute(self, ctx):
        x = ctx.input(0)
        if ctx.output_dtype(0) == dtypes.variant:
            ctx.set_output(0, zeros_like_variant(x))
        elif ctx.output_dtype(0) == dtypes.string:
            ctx.set_output(0, ctx.xp.full(x.shape, b"", dtype=object))
        else:
            ctx.set_output(0, ctx.xp.zeros_like(x))

    def prepare(self, ctx):
        """`np.zeros_like` itself, for host values of any type but variants and strings."""
        if ctx.xp is not np or ctx.output_dtype(0) in (dtypes.variant, dtypes.string):
            return None
        return lambda inputs: [np.zeros_like(inputs[0])]


@register_kernel("OnesLike", DEVICES, type_constraints={"T": computable_types("OnesLike")})
class OnesLikeOp(OpKernel):
    reads_shape_only = True

    def compute(self, ctx):
        ctx.set_output(0, ctx.xp.ones_like(ctx.input(0)))

    def prepare(self, ctx):
        """`np.ones_like` itself, for host values."""
        return (lambda inputs: [np.ones_like(inputs[0])]) if ctx.xp is np else None


@register_kernel("Fill", DEVICES, host_memory=("dims",))
class FillOp(OpKernel):
    """The checked shape is kept for the last (dims, value shape, memory budget) seen."""

    def compute(self, ctx):
        dims, value = ctx.inputs
        key = (dims.shape, dims.tobytes(), value.shape)
        shape = self.checked_once(key, lambda: self._shape(ctx, dims, value))
        xp = ctx.xp
        if xp is np:
            out = np.empty(shape, value.dtype)
            out.fill(value.reshape(()))
        else:
            out = xp.full(shape, value.reshape(()), dtype=value.dtype)
        ctx.set_output(0, out)

    prepared_values = (0,)

    def prepare(self, ctx):
        dims, value = ctx.inputs
        shape = self._shape(ctx, dims, value)
        if ctx.xp is not np:
            return None

        def call(inputs):
            value = inputs[1]
            out = np.empty(shape, value.dtype)
            out.fill(value.reshape(()))
            return [out]
        return call

    @staticmethod
    def _shape(ctx, dims, value):
        if dims.ndim > 1:
            raise InvalidArgumentError(
                f"dims must represent a vector, got shape {shape_str(dims.shape)}")
        if value.size != 1 or value.ndim > 1:
            raise InvalidArgumentError(
                f"value must represent a scalar, got shape {shape_str(value.shape)}")
        shape = tuple(nonnegative_dims(int_values(dims)))
        ctx.check_allocation(shape, value.dtype)
        return shape


# ----------------------------------------------------------------------------- shapes

@register_kernel("Shape", DEVICES, host_memory=("output",))
class ShapeOp(OpKernel):
    reads_shape_only = True

    def compute(self, ctx):
        shape, out_type = ctx.input(0).shape, ctx.output_dtype(0)
        if out_type == dtypes.int32:
            for i, d in enumerate(shape):
                if d > 2**31 - 1:
                    raise InvalidArgumentError(
                        f"Shape output type is 32-bit  but dim {i} is {d}")
        ctx.set_output(0, np.asarray(shape, dtype=out_type.np_dtype))


@register_kernel("Size", DEVICES, host_memory=("output",))
class SizeOp(OpKernel):
    reads_shape_only = True

    def compute(self, ctx):
        size, out_type = ctx.input(0).size, ctx.output_dtype(0)
        if out_type == dtypes.int32 and size > 2**31 - 1:
            raise InvalidArgumentError(
                "Number of elements was larger than representable by 32-bit output type")
        ctx.set_output(0, np.asarray(size, dtype=out_type.np_dtype))


@register_kernel("Rank", DEVICES, host_memory=("output",))
class RankOp(OpKernel):
    reads_shape_only = True

    def compute(self, ctx):
        ctx.set_output(0, np.asarray(ctx.input(0).ndim, dtype=np.int32))


def reshaping_to(shape):
    """The prepared call of a kernel whose output 0 is input 0 in the checked `shape`."""
    return lambda inputs: [inputs[0].reshape(shape)]


@register_kernel("Reshape", DEVICES, host_memory=("shape",))
class ReshapeOp(OpKernel):
    """The output shape is kept for the last (input shape, sizes) seen: repeats of it skip
    the checks."""

    moves_data = True
    reshapes = True

    def compute(self, ctx):
        x, sizes = ctx.inputs
        shape = self.checked_once((x.shape, sizes.shape, sizes.tobytes()),
                                  lambda: self._target(ctx, x, sizes))
        ctx.set_output(0, x.reshape(shape))

    prepared_values = (1,)

    def prepare(self, ctx):
        """The reshape to the checked target shape."""
        x, sizes = ctx.inputs
        shape = self._target(ctx, x, sizes)
        return reshaping_to(shape)

    @staticmethod
    def _target(ctx, x, sizes):
        if sizes.ndim > 1:
            raise InvalidArgumentError(f"sizes input must be 1-D, not {shape_str(sizes.shape)}")
        shape = tuple(reshape_target(x.shape, int_values(sizes)))
        if x.size == 0:
            memory.check_representable(shape, x.dtype.itemsize, ctx.node_name)
        return shape


def reshape_target(in_shape, sizes):
    """TF's ReshapeOp::ValidateSizes and -1 inference: the concrete output shape."""
    shape, product, unknown, has_zero = [], 1, -1, False
    for d, size in enumerate(sizes):
        if size == -1:
            if unknown != -1:
                raise InvalidArgumentError(
                    f"Only one input size may be -1, not both {unknown} and {d}")
            unknown = d
            shape.append(1)
        elif size < 0:
            raise InvalidArgumentError(f"Size {d} must be non-negative, not {size}")
        else:
            shape.append(size)
            has_zero |= size == 0
            product *= size if size else 1
    num_elements = _product(in_shape)
    if unknown != -1:
        # Zero dims are left out on both sides so the other dims can still be inferred.
        counted = _product(d for d in in_shape if d > 0 or not has_zero)
        missing = counted // product
        if not (has_zero and 0 in in_shape) and product * missing != counted:
            raise InvalidArgumentError(
                f"Input to reshape is a tensor with {counted} values, but the requested "
                f"shape requires a multiple of {product}")
        shape[unknown] = missing
    if _product(shape) != num_elements:
        raise InvalidArgumentError(
            f"Input to reshape is a tensor with {num_elements} values, but the requested "
            f"shape has {_product(shape)}")
    return shape


def _product(values):
    n = 1
    for v in values:
        n *= v
    return n


@register_kernel("Transpose", DEVICES, host_memory=("perm",))
class TransposeOp(OpKernel):
    """The checked axes are kept for the last (rank, perm) seen."""

    def compute(self, ctx):
        x, perm = ctx.inputs
        axes = self.checked_once((x.ndim, perm.shape, perm.tobytes()),
                                 lambda: self._axes(x, perm))
        ctx.set_output(0, ctx.xp.transpose(x, axes))

    prepared_values = (1,)

    def prepare(self, ctx):
        """The transpose by the checked axes."""
        x, perm = ctx.inputs
        axes = self._axes(x, perm)
        return None if ctx.xp is not np else lambda inputs: [np.transpose(inputs[0], axes)]

    @staticmethod
    def _axes(x, perm):
        if perm.ndim != 1:
            raise InvalidArgumentError(f"perm must be rank 1, got shape {shape_str(perm.shape)}")
        rank = x.ndim
        if perm.size != rank:
            raise InvalidArgumentError(
                f"transpose expects a vector of size {rank}. But input(1) is a vector of size "
                f"{perm.size}")
        axes = []
        for d in int_values(perm):
            d = d + rank if d < 0 else d
            if not 0 <= d < rank:
                raise InvalidArgumentError(f"{d} is out of range [0 .. {rank})")
            axes.append(d)
        for i in range(rank):
            if i not in axes:
                raise InvalidArgumentError(
                    f"{i} is missing from {{{','.join(map(str, axes))}}}.")
        return tuple(axes)


@register_kernel("Squeeze", DEVICES)
class SqueezeOp(OpKernel):
    """The output shape is kept for the last input shape seen."""

    moves_data = True

    def __init__(self, ctx):
        super().__init__(ctx)
        self._axes = ctx.get_attr("squeeze_dims")

    def compute(self, ctx):
        x = ctx.inputs[0]
        ctx.set_output(0, x.reshape(self.checked_once(x.shape, lambda: self._squeezed(x.shape))))

    def prepare(self, ctx):
        shape = self._squeezed(ctx.inputs[0].shape)
        return reshaping_to(shape)

    def _squeezed(self, in_shape):
        rank, axes = len(in_shape), set()
        for axis in self._axes:
            if not -rank <= axis < rank:
                raise InvalidArgumentError(
                    f"Tried to squeeze dim index {axis} for tensor with {rank} dimensions.")
            axes.add(axis % rank)
        shape = []
        for i, d in enumerate(in_shape):
            if i in axes and d != 1:
                raise InvalidArgumentError(
                    f"Can not squeeze dim[{i}], expected a dimension of 1, got {d}")
            if (axes and i not in axes) or (not axes and d != 1):
                shape.append(d)
        return tuple(shape)


@register_kernel("ExpandDims", DEVICES, host_memory=("dim",))
class ExpandDimsOp(OpKernel):
    """The output shape is kept for the last (input shape, dim) seen."""

    moves_data = True

    def compute(self, ctx):
        x, dim = ctx.inputs
        shape = self.checked_once((x.shape, dim.shape, dim.tobytes()),
                                  lambda: self._expanded(x.shape, dim))
        ctx.set_output(0, x.reshape(shape))

    prepared_values = (1,)

    def prepare(self, ctx):
        x, dim = ctx.inputs
        shape = self._expanded(x.shape, dim)
        return reshaping_to(shape)

    @staticmethod
    def _expanded(shape, dim):
        if dim.size != 1:
            raise InvalidArgumentError("'dim' must be a tensor with a single value")
        axis, rank = int_values(dim)[0], len(shape)
        if not -1 - rank <= axis <= rank:
            raise InvalidArgumentError(
                f"Tried to expand dim index {axis} for tensor with {rank} dimensions.")
        if axis < 0:
            axis += rank + 1
        return shape[:axis] + (1,) + shape[axis:]


# ----------------------------------------------------------------------------- joining

def pack_axis(axis, rank):
    """Pack's and Unpack's axis check: `axis` in [-rank, rank), wrapped into [0, rank)."""
    wrapped = axis + rank if axis < 0 else axis
    if not 0 <= wrapped < rank:
        raise InvalidArgumentError(f"axis = {axis} not in [{-rank}, {rank})")
    return wrapped


@register_kernel("Pack", DEVICES)
class PackOp(OpKernel):
    """One concatenation of the inputs given a 1 at the axis (np.stack's work, with fewer
    calls); the checked axis is kept for the last input shapes seen."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self._axis = ctx.get_attr("axis")

    def compute(self, ctx):
        values = ctx.inputs
        shapes = tuple([value.shape for value in values])
        axis = self.checked_once(shapes, lambda: self._checked_axis(shapes))
        expanded = shapes[0][:axis] + (1,) + shapes[0][axis:]
        ctx.set_output(0, ctx.xp.concatenate([value.reshape(expanded) for value in values],
                                             axis=axis))

    def prepare(self, ctx):
        shapes = tuple([value.shape for value in ctx.inputs])
        axis = self._checked_axis(shapes)
        if ctx.xp is not np:
            return None
        expanded = shapes[0][:axis] + (1,) + shapes[0][axis:]
        return lambda inputs: [np.concatenate([value.reshape(expanded) for value in inputs],
                                              axis=axis)]

    def _checked_axis(self, shapes):
        first = shapes[0]
        axis = pack_axis(self._axis, len(first) + 1)
        for i, shape in enumerate(shapes):
            if shape != first:
                raise InvalidArgumentError(
                    f"Shapes of all inputs must match: values[0].shape = {shape_str(first)} "
                    f"!= values[{i}].shape = {shape_str(shape)}")
        return axis


@register_kernel("ConcatV2", DEVICES, host_memory=("axis",))
class ConcatV2Op(OpKernel):
    """The checked axis is kept for the last (input shapes, axis) seen."""

    def compute(self, ctx):
        inputs = ctx.inputs
        values, axis_t = inputs[:-1], inputs[-1]
        key = (tuple([value.shape for value in values]), axis_t.shape, axis_t.tobytes())
        axis = self.checked_once(key, lambda: self._checked_axis(values, axis_t))
        ctx.set_output(0, ctx.xp.concatenate(values, axis=axis))

    prepared_values = (-1,)       # the axis, after the values

    def prepare(self, ctx):
        values, axis_t = ctx.inputs[:-1], ctx.inputs[-1]
        axis = self._checked_axis(values, axis_t)
        if ctx.xp is not np:
            return None
        return lambda inputs: [np.concatenate(inputs[:-1], axis=axis)]

    @staticmethod
    def _checked_axis(values, axis_t):
        if axis_t.ndim > 1 or axis_t.size != 1:
            raise InvalidArgumentError(
                f"axis tensor should be a scalar integer, but got shape {shape_str(axis_t.shape)}")
        concat_dim = int_values(axis_t)[0]
        first = values[0].shape
        rank = len(first)
        axis = concat_dim + rank if concat_dim < 0 else concat_dim
        if not 0 <= axis < rank and not (rank == 0 and concat_dim == 0):
            raise InvalidArgumentError(
                f"ConcatOp : Expected concatenating dimensions in the range [{-rank}, {rank}), "
                f"but got {concat_dim}")
        if rank == 0:
            raise InvalidArgumentError(
                "ConcatOp : Can't concatenate scalars (use tf.stack instead)")
        for i, value in enumerate(values):
            shape = value.shape
            if len(shape) != rank:
                raise InvalidArgumentError(
                    f"ConcatOp : Ranks of all input tensors should match: shape[0] = "
                    f"{shape_str(first)} vs. shape[{i}] = {shape_str(shape)}")
            for j in range(rank):
                if j != axis and shape[j] != first[j]:
                    raise InvalidArgumentError(
                        f"ConcatOp : Dimension {j} in both shapes must be equal: shape[0] = "
                        f"{shape_str(first)} vs. shape[{i}] = {shape_str(shape)}")
        return axis


@register_kernel("Tile", DEVICES, host_memory=("multiples",))
class TileOp(OpKernel):
    def compute(self, ctx):
        x, multiples_t = ctx.input(0), ctx.input(1)
        if multiples_t.ndim != 1:
            raise InvalidArgumentError(
                f"Expected multiples to be 1-D, but got shape {shape_str(multiples_t.shape)}")
        if multiples_t.size != x.ndim:
            raise InvalidArgumentError(
                f"Expected multiples argument to be a vector of length {x.ndim} but got length "
                f"{multiples_t.size}")
        multiples = int_values(multiples_t)
        for i, m in enumerate(multiples):
            if m < 0:
                raise InvalidArgumentError(f"Expected multiples[{i}] >= 0, but got {m}")
        ctx.check_allocation([d * m for d, m in zip(x.shape, multiples)], x.dtype)
        ctx.set_output(0, ctx.xp.tile(x, multiples))


@register_kernel("Slice", DEVICES, host_memory=("begin", "size"))
class SliceOp(OpKernel):
    """The checked index is kept for the last (input shape, begin, size) seen."""

    moves_data = True

    def compute(self, ctx):
        x, begin_t, size_t = ctx.inputs
        key = (x.shape, begin_t.shape, begin_t.tobytes(), size_t.shape, size_t.tobytes())
        ctx.set_output(0, x[self.checked_once(key, lambda: self._index(x, begin_t, size_t))])

    @staticmethod
    def _index(x, begin_t, size_t):
        rank = x.ndim
        if not (begin_t.ndim == 1 and size_t.ndim == 1 and begin_t.size == rank
                and size_t.size == rank):
            raise InvalidArgumentError(
                f"Expected begin and size arguments to be 1-D tensors of size {rank}, but got "
                f"shapes {shape_str(begin_t.shape)} and {shape_str(size_t.shape)} instead.")
        index = []
        for i, (b, s, dim) in enumerate(zip(int_values(begin_t), int_values(size_t), x.shape)):
            if s == -1:
                s = dim - b
            if dim == 0:
                if b != 0 or s != 0:
                    raise InvalidArgumentError(
                        f"Expected begin[{i}] == 0 (got {b}) and size[{i}] == 0 (got {s}) when "
                        f"input.dim_size({i}) == 0")
            else:
                if not 0 <= b <= dim:
                    raise InvalidArgumentError(f"Expected begin[{i}] in [0, {dim}], but got {b}")
                if not (0 <= s and b + s <= dim):
                    raise InvalidArgumentError(
                        f"Expected size[{i}] in [0, {dim - b}], but got {s}")
            index.append(slice(b, b + s))
        return tuple(index)


@register_kernel("ConjugateTranspose", DEVICES, host_memory=("perm",))
class ConjugateTransposeOp(TransposeOp):
    def compute(self, ctx):
        super().compute(ctx)
        y = ctx.outputs[0]
        if y.dtype.kind == "c":
            ctx.set_output(0, ctx.xp.conj(y))
