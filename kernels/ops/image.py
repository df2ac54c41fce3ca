"""CPU and GPU kernels of the resize ops (ResizeBilinear, ResizeNearestNeighbor, ResizeBicubic
and their gradients, ResizeArea), written once against `ctx.xp`, with TF's checks and TF's coordinate arithmetic.

The source coordinates are computed on the host in float32 exactly as TF's kernels do
(image_resizer_state.h): scale = in / out, or (in - 1) / (out - 1) with align_corners;
bilinear samples x * scale (legacy) or (x + 0.5) * scale - 0.5 (half-pixel centers), with
lower = max(floor, 0), upper = min(ceil, in - 1) and lerp = src - floor; nearest neighbour
samples x * scale or (x + 0.5) * scale, floored (roundf with align_corners), clamped to
in - 1 (and to 0 with half-pixel centers). Forward passes gather; gradients sum the output
gradient onto the sampled positions, one axis at a time (`sum_by_target`). Bicubic samples
four taps around floor(src) with TF's 1024-entry table of Keys' cubic (`bicubic_weights`);
area averaging weighs each input pixel by its overlap with the output pixel.
"""

import functools

import numpy as np

from graphops.kernels.compiled import loops
from graphops.kernels.support.kernel_util import (DEVICES, PARALLEL_MIN_SIZE, compiled_cpu,
                                                  computable_types)
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


def _read_only(array):
    """``array`` made read-only: the cached coordinates are shared by every call."""
    array.flags.writeable = False
    return array


@functools.lru_cache(maxsize=64)
def bilinear_weights(out_size, in_size, scale, half_pixel_centers):
    """(lower, upper, lerp) per output position, read-only host arrays, as TF computes
    them; kept per geometry, as a model resizes the same shapes every run."""
    x = _positions(out_size)
    src = (x + np.float32(0.5)) * scale - np.float32(0.5) if half_pixel_centers else x * scale
    floor = np.floor(src)
    lower = np.clip(floor.astype(np.int64), 0, in_size - 1)
    upper = np.minimum(np.ceil(src).astype(np.int64), in_size - 1)
    return tuple(map(_read_only, (lower, upper, (src - floor).astype(np.float32))))


@functools.lru_cache(maxsize=64)
def nearest_indices(out_size, in_size, scale, align_corners, half_pixel_centers):
    """The source index of each output position (read-only host int64), as TF's
    nearest-neighbour kernels compute it; roundf rounds halves away from zero (the sources
    are >= 0). Kept per geometry."""
    x = _positions(out_size)
    src = (x + np.float32(0.5)) * scale if half_pixel_centers else x * scale
    index = np.floor(src)
    if align_corners:
        index = np.where(src - index >= 0.5, index + 1, index)
    index = np.minimum(index.astype(np.int64), in_size - 1)
    return _read_only(np.maximum(index, 0) if half_pixel_centers else index)


@functools.lru_cache(maxsize=64)
def _nearest_pixels(out_sizes, in_sizes, scales, align_corners, half_pixel_centers):
    """The flat source pixel (row * width + column) of each output pixel, read-only, so
    that the resize is one gather of whole pixels; kept per geometry."""
    rows, cols = (nearest_indices(o, i, s, align_corners, half_pixel_centers)
                  for o, i, s in zip(out_sizes, in_sizes, scales))
    return _read_only((rows[:, None] * in_sizes[1] + cols).reshape(-1))


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


def check_sizes(images, height, width):
    """TF's checks of a resize's positive output size and non-empty 4-D input image."""
    if height <= 0 or width <= 0:
        raise InvalidArgumentError("output dimensions must be positive")
    if images.shape[3] <= 0:
        raise InvalidArgumentError("image must have at least one channel")
    if images.shape[1] <= 0 or images.shape[2] <= 0:
        raise InvalidArgumentError("input image must be of non-zero size")


def check_gradient_ranks(grads, original):
    """A resize gradient's `grads` and `original_image` must both be 4-D images."""
    if grads.ndim != 4:
        raise InvalidArgumentError(f"input_grad must be 4-dimensional{shape_str(grads.shape)}")
    if original.ndim != 4:
        raise InvalidArgumentError(
            f"original_image must be 4-dimensional{shape_str(original.shape)}")


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
        check_sizes(images, height, width)
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

    def gradient_plan(self, ctx):
        """The gradient ops' start, TF's ImageResizerGradientState: (grads, work dtype,
        original (height, width), scales), the output checked against the budget; None
        when `grads` is empty (its zero output set)."""
        xp, grads, original, dtype = ctx.xp, ctx.input(0), ctx.input(1), ctx.output_dtype(0)
        self.check_flags()
        check_gradient_ranks(grads, original)
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
            return None
        work = np.float64 if dtype == dtypes.float64 else np.float32
        return grads, work, (out_h, out_w), self.scales((out_h, out_w), (in_h, in_w))

    def spread_gradient(self, ctx, taps):
        """A separable resize's gradient: each gradient pixel spread onto its sources, the
        width first, then the height. `taps(out_size, in_size, scale)` gives the forward
        op's (source indices, weights), a list of host vectors each."""
        plan = self.gradient_plan(ctx)
        if plan is None:
            return
        grads, work, (out_h, out_w), (h_scale, w_scale) = plan
        xp = ctx.xp
        g = grads.astype(work)
        for axis, size, scale in ((2, out_w, w_scale), (1, out_h, h_scale)):
            indices, weights = taps(g.shape[axis], size, scale)
            spread = xp.concatenate([g * _along(xp, w, axis).astype(work) for w in weights],
                                    axis=axis)
            g = sum_by_target(xp, spread, axis, np.concatenate(indices), size)
        ctx.set_output(0, g.astype(ctx.output_dtype(0).np_dtype, copy=False))


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
        image = images.astype(np.float32, copy=False)
        if compiled_cpu(xp, image, min_size=0):
            out = np.empty((image.shape[0], out_h, out_w, image.shape[3]), np.float32)
            loops("resize", chunk=1, single=out.size < PARALLEL_MIN_SIZE).bilinear(
                image, y_lo, y_hi, y_lerp, x_lo, x_hi, x_lerp, out)
            return ctx.set_output(0, out)
        x_lerp = _along(xp, x_lerp, 2)

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
        batch, in_h, in_w, channels = images.shape
        pixels = _nearest_pixels((out_h, out_w), (in_h, in_w), (h_scale, w_scale),
                                 self.align_corners, self.half_pixel_centers)
        out = xp.take(xp.reshape(images, (batch, in_h * in_w, channels)), xp.asarray(pixels),
                      axis=1)
        ctx.set_output(0, xp.reshape(out, (batch, out_h, out_w, channels)))


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
        self.spread_gradient(ctx, self._taps)

    def _taps(self, out_size, in_size, scale):
        lower, upper, lerp = bilinear_weights(out_size, in_size, scale, self.half_pixel_centers)
        return [lower, upper], [np.float32(1) - lerp, lerp]

# ----------------------------------------------------------------------------- bicubic

_TABLE_SIZE = 1024


def _cubic_table(a):
    """TF's coefficient table of Keys' cubic with parameter `a`, float32: column 0 the
    weight of a tap at distance x in [0, 1], column 1 at distance x + 1."""
    x = (np.arange(_TABLE_SIZE + 1) / _TABLE_SIZE).astype(np.float32).astype(np.float64)
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = ((a * (x + 1) - 5 * a) * (x + 1) + 8 * a) * (x + 1) - 4 * a
    return np.stack([near, far], axis=1).astype(np.float32)


_TABLES = {False: _cubic_table(-0.75), True: _cubic_table(-0.5)}


def bicubic_weights(out_size, in_size, scale, half_pixel_centers):
    """TF's GetWeightsAndIndices for every output position: (indices, weights), each a list
    of 4 host arrays. Half-pixel centers use Keys' a = -0.5 and drop the taps outside the
    image, renormalizing the rest; the legacy mode uses a = -0.75 and repeats edge pixels."""
    x = _positions(out_size)
    src = (x + np.float32(0.5)) * scale - np.float32(0.5) if half_pixel_centers else x * scale
    loc = np.floor(src).astype(np.int64)
    delta = src - loc.astype(np.float32)
    offset = np.rint(delta * np.float32(_TABLE_SIZE)).astype(np.int64)
    table = _TABLES[bool(half_pixel_centers)]
    weights = [table[offset, 1], table[offset, 0], table[_TABLE_SIZE - offset, 0],
               table[_TABLE_SIZE - offset, 1]]
    taps = [loc - 1 + k for k in range(4)]
    indices = [np.clip(t, 0, in_size - 1) for t in taps]
    if half_pixel_centers:
        weights = [np.where(i == t, w, np.float32(0)) for i, t, w in zip(indices, taps, weights)]
        total = ((weights[0] + weights[1]) + weights[2]) + weights[3]
        usable = np.abs(total) >= np.float32(1000) * np.finfo(np.float32).tiny
        inverse = np.float32(1) / np.where(usable, total, np.float32(1))
        weights = [np.where(usable, w * inverse, w) for w in weights]
    return indices, weights


def _cubic_along(xp, image, axis, indices, weights):
    """w0 * v0 + w1 * v1 + w2 * v2 + w3 * v3 along `axis`, in float32, in TF's order."""
    total = None
    for index, weight in zip(indices, weights):
        term = xp.take(image, xp.asarray(index), axis=axis) * _along(xp, weight, axis)
        total = term if total is None else total + term
    return total


@register_kernel("ResizeBicubic", DEVICES, host_memory=("size",),
                 type_constraints={"T": computable_types("ResizeBicubic")})
class ResizeBicubicOp(ResizeKernel):
    """Cubic convolution in float32: along the height first, then the width, as TF's
    cached loop."""

    def compute(self, ctx):
        plan = self.forward_plan(ctx, dtypes.float32)
        if plan is None:
            return
        xp, (images, out_h, out_w, h_scale, w_scale) = ctx.xp, plan
        in_h, in_w = images.shape[1:3]
        ctx.check_allocation([images.shape[0], out_h, in_w, images.shape[3]], dtypes.float32)
        image = images.astype(np.float32)
        rows = bicubic_weights(out_h, in_h, h_scale, self.half_pixel_centers)
        cols = bicubic_weights(out_w, in_w, w_scale, self.half_pixel_centers)
        ctx.set_output(0, _cubic_along(xp, _cubic_along(xp, image, 1, *rows), 2, *cols))


@register_kernel("ResizeBicubicGrad", DEVICES,
                 type_constraints={"T": computable_types("ResizeBicubicGrad")})
class ResizeBicubicGradOp(ResizeKernel):
    """Each gradient pixel spread onto its 16 sources with the forward weights, one axis at
    a time; float64 for a double image, else float32."""

    def compute(self, ctx):
        self.spread_gradient(ctx, self._taps)

    def _taps(self, out_size, in_size, scale):
        return bicubic_weights(out_size, in_size, scale, self.half_pixel_centers)

# ----------------------------------------------------------------------------- area


def area_matrix(out_size, in_size, scale):
    """[out_size, in_size] float64 host weights of TF's ResizeArea along one axis: output
    position x covers [x * scale, (x + 1) * scale) (float32), each input pixel weighted by
    its overlap, indices past the edge clamped onto it. A zero scale (align_corners from a
    single pixel) copies that pixel, as TF's kernel gives."""
    if scale == 0:
        matrix = np.zeros((out_size, in_size))
        matrix[:, 0] = 1
        return matrix
    x = _positions(out_size)
    low, high = x * scale, (x + np.float32(1)) * scale
    start = np.floor(low).astype(np.int64)
    span = int((np.ceil(high).astype(np.int64) - start).max()) if out_size else 0
    v = start[:, None] + np.arange(max(span, 1))
    vf, low, high = v.astype(np.float32), low[:, None], high[:, None]
    inside = v < np.ceil(high).astype(np.int64)
    weight = np.where(vf < low, np.where(vf + 1 > high, scale, vf + 1 - low),
                      np.where(vf + 1 > high, high - vf, np.float32(1)))
    matrix = np.zeros((out_size, in_size))
    rows = np.broadcast_to(np.arange(out_size)[:, None], v.shape)
    np.add.at(matrix, (rows[inside], np.clip(v[inside], 0, in_size - 1)),
              weight[inside].astype(np.float64))
    return matrix


@register_kernel("ResizeArea", DEVICES, host_memory=("size",),
                 type_constraints={"T": computable_types("ResizeArea")})
class ResizeAreaOp(ResizeKernel):
    """The overlap-weighted mean of the input pixels under each output pixel, computed in
    float64 as two matrix products and rounded once to float32."""

    def __init__(self, ctx):
        OpKernel.__init__(self, ctx)
        self.align_corners = ctx.get_attr("align_corners")
        self.half_pixel_centers = False

    def compute(self, ctx):
        plan = self.forward_plan(ctx, dtypes.float32)
        if plan is None:
            return
        xp, (images, out_h, out_w, h_scale, w_scale) = ctx.xp, plan
        batch, in_h, in_w, channels = images.shape
        for shape in ([out_h, in_h], [out_w, in_w], [batch, out_h, in_w, channels],
                      [batch, in_h, in_w, channels]):
            ctx.check_allocation(shape, dtypes.float64)
        rows = xp.asarray(area_matrix(out_h, in_h, h_scale))
        cols = xp.asarray(area_matrix(out_w, in_w, w_scale))
        image = images.astype(np.float64)
        tall = xp.moveaxis(xp.tensordot(rows, image, axes=([1], [1])), 0, 1)
        out = xp.moveaxis(xp.tensordot(cols, tall, axes=([1], [2])), 0, 2)
        h_scale, w_scale = (s if s else np.float32(1) for s in (h_scale, w_scale))
        scale = np.float32(1.0 / float(np.float32(h_scale * w_scale)))
        ctx.set_output(0, (out * float(scale)).astype(np.float32))
