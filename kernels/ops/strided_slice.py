"""StridedSlice and StridedSliceGrad kernels (CPU and GPU, written against `ctx.xp`).

begin, end, strides (and StridedSliceGrad's shape) are host memory, as in TF's GPU
registrations; `strided_slice_spec` (registry) validates them with TF's messages and gives
the NumPy index and the shapes. Both kernels keep the index they derived for the last
(input shape, index inputs) seen: a loop slicing the same way each step skips the checks.
"""

from graphops.kernels.support.kernel_util import DEVICES, nonnegative_dims, zeros
from graphops.registry.errors import InvalidArgumentError
from graphops.registry.kernel_registry import OpKernel, register_kernel
from graphops.registry.op_defs.array import int_values
from graphops.registry.op_defs.strided_slice import masks, strided_slice_spec
from graphops.registry.tensor_shape import shape_str


def index_key(*vectors):
    """What the checks read of host index inputs: each one's shape and bytes."""
    return tuple((v.shape, v.tobytes()) for v in vectors)


@register_kernel("StridedSlice", DEVICES, host_memory=("begin", "end", "strides"))
class StridedSliceOp(OpKernel):
    moves_data = True

    def __init__(self, ctx):
        super().__init__(ctx)
        self._masks = masks(ctx.get_attr)

    def compute(self, ctx):
        x, begin, end, strides = ctx.inputs
        index, final_shape = self.checked_once((x.shape, index_key(begin, end, strides)),
                                               lambda: self._index(x, begin, end, strides))
        y = x[index]
        ctx.set_output(0, y if y.shape == final_shape else y.reshape(final_shape))

    def _index(self, x, begin, end, strides):
        spec = strided_slice_spec(begin, end, strides, list(x.shape), self._masks)
        return spec.slices(), tuple(spec.final_shape)


@register_kernel("StridedSliceGrad", DEVICES, host_memory=("shape", "begin", "end", "strides"))
class StridedSliceGradOp(OpKernel):
    """`dy` written into zeros of `shape` where StridedSlice read it."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self._masks = masks(ctx.get_attr)

    def compute(self, ctx):
        shape_t, begin, end, strides, dy = ctx.inputs
        key = (dy.shape, index_key(shape_t, begin, end, strides))
        shape, index, processing_shape = self.checked_once(
            key, lambda: self._checked(ctx, shape_t, begin, end, strides, dy))
        out = zeros(ctx.xp, shape, dy.dtype)
        out[index] = dy.reshape(processing_shape)
        ctx.set_output(0, out)

    def _checked(self, ctx, shape_t, begin, end, strides, dy):
        """TF's checks: (output shape, index, processing shape)."""
        if shape_t.ndim != 1:
            raise InvalidArgumentError(
                f"shape must be 1-D, got shape.shape = {shape_str(shape_t.shape)}")
        shape = nonnegative_dims(int_values(shape_t))
        spec = strided_slice_spec(begin, end, strides, shape, self._masks)
        if list(dy.shape) != spec.final_shape:
            raise InvalidArgumentError(f"shape of dy was {shape_str(dy.shape)} instead of "
                                       f"{shape_str(spec.final_shape)}")
        ctx.check_allocation(shape, dy.dtype)
        return tuple(shape), spec.slices(), tuple(spec.processing_shape)
