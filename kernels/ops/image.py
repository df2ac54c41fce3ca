"""CPU and GPU kernels of the resize ops (ResizeBilinear, ResizeNearestNeighbor and their
gradients), written once against `ctx.xp`, with TF's checks and TF's coordinate arithmetic.

The source coordinates are computed on the host in float32 exactly as TF's kernels do
(image_resizer_state.h): scale = in / out, or (in - 1) / (out - 1) with align_corners;
bilinear samples x * scale (legacy) or (x + 0.5) * scale - 0.5 (half-pixel centers), with
lower = max(floor, 0), upper = min(ceil, in - 1) and lerp = src - floor; nearest neighbour
samples x * scale or (x + 0.5) * scale, floored (roundf with align_corners), clamped to
in - 1 (and to 0 with half-pixel centers). Forward passes gather; gradients sum the output
gradient onto the sampled positions, one axis at a time (`sum_by_target`).
"""

import numpy as np

from graphops.kernels.support.kernel_util import DEVICES, computable_types
from graphops.kernels.ops.math import float32_if_half
from graphops.registry import dtypes
from graphops.registry.errors import InvalidArgumentError
from graphops.registry.kernel_registry import OpKernel, register_kernel
from graphops.registry.op_defs.array import int_values
from graphops.registry.tensor_shape import shape_str

_INT32_MAX = 2**31 - 1
BOTH_FLAGS = "If half_pixel_centers is True, align_corners must be False."

# ----------------------------------------------------------------------------- coordinates


def resize_scale(in_size, out_size, align_corners):
    """TF's CalculateResizeScale, in float32."""
    if align_corners and out_size > 1:
        return np.float32(in_size - 1) / np.float32(out_size - 1)
    return np.float32(in_size) / np.float32(out_size)


def _positions(out_size):
    return np.arange(out_size).astype(np.float32)


def bilinear_weights(out_size, in_size, scale, half_pixel_centers):
    """(lower, upper, lerp) per output position, host arrays, as TF computes them."""
    x = _positions(out_size)
    src = (x + np.float32(0.5)) * scale - np.float32(0.5) if half_pixel_centers else x * scale
    floor = np.floor(src)
    lower = np.clip(floor.astype(np.int64), 0, in_size - 1)
    upper = np.minimum(np.ceil(src).astype(np.int64), in_size - 1)
    return lower, upper, (src - floor).astype(np.float32)


def nearest_indices(out_size, in_size, scale, align_corners, half_pixel_centers):
    """The source index of each output position (host int64), as TF's nearest-neighbour
    kernels compute it; roundf rounds halves away from zero (the sources are >= 0)."""
    x = _positions(out_size)
    src = (x + np.float32(0.5)) * scale if half_pixel_centers else x * scale
    index = np.floor(src)
    if align_corners:
        index = np.where(src - index >= 0.5, index + 1, index)
    index = np.minimum(index.astype(np.int64), in_size - 1)
    return np.maximum(index, 0) if half_pixel_centers else index


def sum_by_target(xp, values, axis, targets, num_targets):
    """Sums the slices of `values` along `axis` into `num_targets` slices: slice i is added
    to slice targets[i] (host ints). A gather of each target's sources (padded with a zero
    slice to the largest count) and a sum: no scatter, so it is the same on every device
    and for every dtype (integers wrap)."""
    shape = list(values.shape)
    counts = np.bincount(targets, minlength=num_targets)
    width = int(counts.max()) if counts.size else 0
    if width == 0 or values.size == 0:
        return xp.zeros(shape[:axis] + [num_targets] + shape[axis + 1:], values.dtype)
    order = np.argsort(targets, kind="stable")
    slot = (np.cumsum(counts) - counts)[:, None] + np.arange(width)
    sources = np.where(np.arange(width) < counts[:, None],
                       order[np.minimum(slot, order.size - 1)], order.size)
    zero = xp.zeros(shape[:axis] + [1] + shape[axis + 1:], values.dtype)
    padded = xp.concatenate([values, zero], axis=axis)
    picked = xp.take(padded, xp.asarray(sources.reshape(-1)), axis=axis)
    picked = picked.reshape(shape[:axis] + [num_targets, width] + shape[axis + 1:])
    return picked.sum(axis=axis + 1, dtype=values.dtype)


def _along(xp, values, axis):
    """A host vector shaped to broadcast along `axis` of a 4-D image."""
    return xp.asarray(values).reshape((-1,) + (1,) * (3 - axis))

# ----------------------------------------------------------------------------- validation


class ResizeKernel(OpKernel):
    """Reads align_corners / half_pixel_centers; checks images + size as TF's
    ImageResizerState does."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.align_corners = ctx.get_attr("align_corners")
        self.half_pixel_centers = ctx.get_attr("half_pixel_centers")

    def check_flags(self):
        if self.half_pixel_centers and self.align_corners:
            raise InvalidArgumentError(BOTH_FLAGS)

    def output_size(self, ctx):
        """(out_height, out_width), validated; the images are 4-D and non-empty."""
        self.check_flags()
        images, size = ctx.input(0), ctx.input(1)
        if images.ndim != 4:
            raise InvalidArgumentError(f"input must be 4-dimensional{shape_str(images.shape)}")
        height, width = _size_vector(size)
        if images.shape[1] > _INT32_MAX or images.shape[2] > _INT32_MAX:
            raise InvalidArgumentError("input sizes must be between 0 and max int32")
        if height <= 0 or width <= 0:
            raise InvalidArgumentError("output dimensions must be positive")
        if images.shape[3] <= 0:
            raise InvalidArgumentError("image must have at least one channel")
        if images.shape[1] <= 0 or images.shape[2] <= 0:
            raise InvalidArgumentError("input image must be of non-zero size")
        return height, width

    def scales(self, in_sizes, out_sizes):
        return [resize_scale(i, o, self.align_corners) for i, o in zip(in_sizes, out_sizes)]

    def forward_plan(self, ctx, dtype):
        """The forward ops' start: (images, out_h, out_w, h_scale, w_scale), the output of
        `dtype` checked against the memory budget; None when the batch is empty (its empty
        output set)."""
        xp, images = ctx.xp, ctx.input(0)
        out_h, out_w = self.output_size(ctx)
        batch, in_h, in_w, channels = images.shape
        shape = [batch, out_h, out_w, channels]
        ctx.check_allocation(shape, dtype)
        if batch == 0:
            ctx.set_output(0, xp.zeros(shape, dtype.np_dtype))
            return None
        return (images, out_h, out_w, *self.scales((in_h, in_w), (out_h, out_w)))


def _size_vector(size):
    if size.ndim != 1:
        raise InvalidArgumentError(f"shape_t must be 1-dimensional{shape_str(size.shape)}")
    if size.size != 2:
        raise InvalidArgumentError(f"shape_t must have two elements{shape_str(size.shape)}")
    return int_values(size)

# ----------------------------------------------------------------------------- kernels


@register_kernel("ResizeBilinear", DEVICES, host_memory=("size",),
                 type_constraints={"T": computable_types("ResizeBilinear")})
class ResizeBilinearOp(ResizeKernel):
    """Bilinear interpolation in float32 (any input type is cast first), as TF's
    compute_lerp: top/bottom along x, then along y."""

    def compute(self, ctx):
        plan = self.forward_plan(ctx, dtypes.float32)
        if plan is None:
            return
        xp, (images, out_h, out_w, h_scale, w_scale) = ctx.xp, plan
        in_h, in_w = images.shape[1:3]
        y_lo, y_hi, y_lerp = bilinear_weights(out_h, in_h, h_scale, self.half_pixel_centers)
        x_lo, x_hi, x_lerp = bilinear_weights(out_w, in_w, w_scale, self.half_pixel_centers)
        x_lerp = _along(xp, x_lerp, 2)
        image = images.astype(np.float32)

        def across(rows):
            left = xp.take(rows, xp.asarray(x_lo), axis=2)
            right = xp.take(rows, xp.asarray(x_hi), axis=2)
            return left + (right - left) * x_lerp

        top = across(xp.take(image, xp.asarray(y_lo), axis=1))
        bottom = across(xp.take(image, xp.asarray(y_hi), axis=1))
        ctx.set_output(0, top + (bottom - top) * _along(xp, y_lerp, 1))


@register_kernel("ResizeNearestNeighbor", DEVICES, host_memory=("size",),
                 type_constraints={"T": computable_types("ResizeNearestNeighbor")})
class ResizeNearestNeighborOp(ResizeKernel):
    """A gather of the nearest source row and column."""

    def compute(self, ctx):
        plan = self.forward_plan(ctx, ctx.output_dtype(0))
        if plan is None:
            return
        xp, (images, out_h, out_w, h_scale, w_scale) = ctx.xp, plan
        in_h, in_w = images.shape[1:3]
        rows = nearest_indices(out_h, in_h, h_scale, self.align_corners, self.half_pixel_centers)
        cols = nearest_indices(out_w, in_w, w_scale, self.align_corners, self.half_pixel_centers)
        out = xp.take(xp.take(images, xp.asarray(rows), axis=1), xp.asarray(cols), axis=2)
        ctx.set_output(0, out)


@register_kernel("ResizeNearestNeighborGrad", DEVICES, host_memory=("size",),
                 type_constraints={"T": computable_types("ResizeNearestNeighborGrad")})
class ResizeNearestNeighborGradOp(ResizeKernel):
    """Each gradient pixel added onto the source pixel the forward pass sampled; half types
    summed in float32 and rounded once. TF's CPU kernel accepts both flags together."""

    def compute(self, ctx):
        xp, grads, dtype = ctx.xp, ctx.input(0), ctx.output_dtype(0)
        if grads.ndim != 4:
            raise InvalidArgumentError(f"input must be 4-dimensional{shape_str(grads.shape)}")
        out_h, out_w = _size_vector(ctx.input(1))
        if out_h <= 0 or out_w <= 0:
            raise InvalidArgumentError("shape_t's elements must be positive")
        batch, in_h, in_w, channels = grads.shape
        shape = [batch, out_h, out_w, channels]
        ctx.check_allocation(shape, grads.dtype)
        if grads.size == 0:
            ctx.set_output(0, xp.zeros(shape, grads.dtype))
            return
        h_scale, w_scale = self.scales((out_h, out_w), (in_h, in_w))
        rows = nearest_indices(in_h, out_h, h_scale, self.align_corners, self.half_pixel_centers)
        cols = nearest_indices(in_w, out_w, w_scale, self.align_corners, self.half_pixel_centers)
        summed = sum_by_target(xp, float32_if_half(grads, dtype), 1, rows, out_h)
        summed = sum_by_target(xp, summed, 2, cols, out_w)
        ctx.set_output(0, summed.astype(dtype.np_dtype, copy=False))


@register_kernel("ResizeBilinearGrad", DEVICES,
                 type_constraints={"T": computable_types("ResizeBilinearGrad")})
class ResizeBilinearGradOp(ResizeKernel):
    """Each gradient pixel spread onto its four sources with TF's bilinear weights, one axis
    at a time; float64 for a double image, else float32, rounded once. The batch and
    channel sizes come from `grads` (as in TF's kernel)."""

    def compute(self, ctx):
        xp, grads, original, dtype = ctx.xp, ctx.input(0), ctx.input(1), ctx.output_dtype(0)
        self.check_flags()
        if grads.ndim != 4:
            raise InvalidArgumentError(f"input_grad must be 4-dimensional{shape_str(grads.shape)}")
        if original.ndim != 4:
            raise InvalidArgumentError(
                f"original_image must be 4-dimensional{shape_str(original.shape)}")
        batch, in_h, in_w, channels = grads.shape
        out_h, out_w = original.shape[1:3]
        if in_h <= 0 or in_w <= 0:
            raise InvalidArgumentError("resized dimensions must be positive")
        if out_h <= 0 or out_w <= 0:
            raise InvalidArgumentError("original dimensions must be positive")
        shape = [batch, out_h, out_w, channels]
        ctx.check_allocation(shape, dtype)
        if grads.size == 0:
            ctx.set_output(0, xp.zeros(shape, dtype.np_dtype))
            return
        work = np.float64 if dtype == dtypes.float64 else np.float32
        h_scale, w_scale = self.scales((out_h, out_w), (in_h, in_w))
        g = grads.astype(work)
        for axis, size, scale in ((2, out_w, w_scale), (1, out_h, h_scale)):
            lower, upper, lerp = bilinear_weights(g.shape[axis], size, scale,
                                                  self.half_pixel_centers)
            weights = [_along(xp, w, axis).astype(work) for w in (np.float32(1) - lerp, lerp)]
            spread = xp.concatenate([g * w for w in weights], axis=axis)
            g = sum_by_target(xp, spread, axis, np.concatenate([lower, upper]), size)
        ctx.set_output(0, g.astype(dtype.np_dtype, copy=False))
