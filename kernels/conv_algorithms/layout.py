"""Layout, padding and chunking helpers shared by the dense and depthwise conv math.

The conv math works on a canonical channels-last layout: activations are
``[N, *S, C]`` (NHWC / NDHWC) and filters stay in TF's ``[*K, C, O]`` order.
Channels-first inputs are moved to channels-last on entry and back on exit.

Every helper takes the array module ``xp`` (NumPy on the CPU, CuPy on a GPU) and uses
only functions both have. How much work one chunk holds is decided here too
(``chunk_bytes``): cache-sized on the CPU, large on a GPU.
"""

import itertools
import math

import numpy as np

import ml_dtypes

from graphops.kernels.compiled import loops, usable
from graphops.kernels.support.kernel_util import aligned_empty
from graphops.kernels.support.parallelism import pool_map

_HALF_TYPES = (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))

# One chunk of conv work on a GPU: GEMMs of thousands of rows keep cuBLAS busy, larger
# chunks buy little, and CuPy's memory pool reuses the same blocks chunk after chunk.
GPU_CHUNK_BYTES = 128 << 20
COMPILED_PAD_MIN_SIZE = 1 << 20   # padded values from which a compiled loop pads (NumPy below)
COMPILED_TRANSPOSE_MIN_SIZE = 1 << 18   # values from which compiled loops move layouts


def chunk_bytes(xp, cpu_bytes):
    """Target size of one chunk's buffers: ``cpu_bytes`` (each CPU algorithm's cache-tuned
    figure) with NumPy, ``GPU_CHUNK_BYTES`` with a device array module."""
    return cpu_bytes if xp is np else GPU_CHUNK_BYTES


def to_channels_last(x, channels_last, xp=np):
    """``[N, C, *S]`` -> ``[N, *S, C]`` (a view); identity when already channels-last."""
    return x if channels_last else xp.moveaxis(x, 1, -1)


def channels_last_copy(x, channels_last, xp=np):
    """``x`` ([N, C, *S] or [N, *S, C]) as a C-contiguous channels-last array: ``x`` itself
    when it is one, else a copy (with NumPy transposed image by image on the intra-op pool)."""
    view = to_channels_last(x, channels_last, xp)
    if view.flags.c_contiguous:
        return view
    if xp is not np:
        return xp.ascontiguousarray(view)
    out = aligned_empty(view.shape, view.dtype)
    if channels_last or not _transposed(x, out, channels_first=True):
        copy_images(out, view)
    return out


def from_channels_last(y, channels_last, xp=np):
    """``[N, *S, C]`` -> ``[N, C, *S]`` as a contiguous array (with NumPy transposed image by
    image on the intra-op pool); identity when channels-last."""
    if channels_last:
        return y
    if xp is not np:
        return xp.ascontiguousarray(xp.moveaxis(y, -1, 1))
    out = aligned_empty((y.shape[0], y.shape[-1], *y.shape[1:-1]), y.dtype)
    if not _transposed(y, out, channels_first=False):
        copy_images(np.moveaxis(out, 1, -1), y)
    return out


def _transposed(src, dst, channels_first):
    """Whether ``dst`` (C-contiguous) now holds C-contiguous ``src`` moved between [N, C,
    *S] (``channels_first``: src's layout) and [N, *S, C] by the compiled transposes
    (``compiled.transpose``: 4-byte values, ``COMPILED_TRANSPOSE_MIN_SIZE`` of them at least;
    2x NumPy's rate); False where they do not take it."""
    if not (src.dtype.itemsize == 4 and src.flags.c_contiguous
            and src.size >= COMPILED_TRANSPOSE_MIN_SIZE and usable()):
        return False
    n, c = src.shape[0], src.shape[1] if channels_first else src.shape[-1]
    positions = src.size // max(n * c, 1)
    rows, columns = (c, positions) if channels_first else (positions, c)
    loops("transpose", chunk=1).transpose(src.reshape(-1).view(np.float32),
                                               dst.reshape(-1).view(np.float32), n, rows,
                                               columns)
    return True


def copy_images(dst, src):
    """dst[...] = src for [N, ...] NumPy arrays, the images shared out on the intra-op pool
    (NumPy casts and transposes at a few GB/s a thread)."""
    def copy(images):
        for i in images:
            dst[i] = src[i]
    pool_map(copy, range(src.shape[0]))


def channels_last_shape(shape, channels_last):
    """The channels-last form of a full activation shape given in either layout."""
    shape = tuple(int(d) for d in shape)
    return shape if channels_last else (shape[0],) + shape[2:] + (shape[1],)


def compute_dtype(dtype):
    """The dtype the math runs in for an input of ``dtype``.

    float16/bfloat16 -> float32 (rounded once at the end, as TF's CPU kernels do);
    float32 and float64 stay; integers -> int64, whose wrap-around product sums are
    exact modulo 2**64 and so equal to int32 arithmetic once cast back.
    """
    dtype = np.dtype(dtype)
    if dtype in _HALF_TYPES:
        return np.dtype(np.float32)
    if dtype.kind in "iu":
        return np.dtype(np.int64)
    return dtype


def conv_output_size(in_size, k, stride, dilation, before, after):
    """Output length of one dim: ``floor((in + pads - eff_k) / stride) + 1``, at least 0."""
    eff_k = (k - 1) * dilation + 1
    span = in_size + before + after - eff_k
    return span // stride + 1 if span >= 0 else 0


def conv_output_shape(x_shape, w_shape, strides, dilations, pads, channels_last, depthwise):
    """The forward conv's output shape, in ``x``'s layout: ``w`` ``[*K, C, O]`` (a
    depthwise filter's O its multiplier, giving C*O channels)."""
    spatial = x_shape[1:-1] if channels_last else x_shape[2:]
    kernel, (c, o) = w_shape[:-2], w_shape[-2:]
    out_sp = [conv_output_size(s, k, st, d, b, a) for s, k, st, d, (b, a)
              in zip(spatial, kernel, strides, dilations, pads)]
    channels = c * o if depthwise else o
    n = x_shape[0]
    return (n, *out_sp, channels) if channels_last else (n, channels, *out_sp)


def pad_spatial(x, pads, dtype=None, min_shape=None, xp=np):
    """Copy channels-last ``x`` into a zero buffer padded by ``pads`` ((before, after) per dim).

    ``min_shape`` optionally enlarges each padded spatial dim to at least that length
    (extra zeros at the end). Returns ``x`` itself (cast if needed) when nothing is added.
    """
    dtype = x.dtype if dtype is None else np.dtype(dtype)
    spatial = x.shape[1:-1]
    padded = [s + b + a for s, (b, a) in zip(spatial, pads)]
    if min_shape is not None:
        padded = [max(p, m) for p, m in zip(padded, min_shape)]
    if tuple(padded) == tuple(spatial):
        return xp.ascontiguousarray(x, dtype=dtype)
    shape = (x.shape[0], *padded, x.shape[-1])
    if (xp is np and x.dtype == dtype and len(spatial) <= 3 and x.flags.c_contiguous
            and math.prod(shape) >= COMPILED_PAD_MIN_SIZE and usable()):
        buf = np.empty(shape, dtype)
        lead = (1,) * (3 - len(spatial))        # the loop takes three spatial dims
        loops("conv", chunk=1).pad(
            x.reshape(x.shape[0], *lead, *spatial, x.shape[-1]),
            buf.reshape(x.shape[0], *lead, *padded, x.shape[-1]),
            np.array((0,) * len(lead) + tuple(b for b, _ in pads), np.int64))
        return buf
    buf = xp.zeros(shape, dtype=dtype)
    inner = tuple(slice(b, b + s) for s, (b, _) in zip(spatial, pads))
    buf[(slice(None),) + inner + (slice(None),)] = x
    return buf


def padded_for_windows(x, pads, kernel, strides, dilations, out_spatial, dtype, xp=np):
    """Zero-padded input, enlarged if needed so every window of ``out_spatial`` lies in it."""
    need = [(q - 1) * s + (k - 1) * d + 1
            for q, k, s, d in zip(out_spatial, kernel, strides, dilations)]
    return pad_spatial(x, pads, dtype, min_shape=need, xp=xp)


def window_view(padded, kernel, strides, dilations, out_spatial, xp=np):
    """Read-only ``[N, *O, *K, C]`` view of the windows of padded channels-last ``padded``.

    Element ``[n, *o, *k, c]`` is ``padded[n, *(o*stride + k*dilation), c]``. Never write
    to it (its windows overlap); NumPy marks it read-only, CuPy cannot.
    """
    st = padded.strides
    sp = st[1:-1]
    shape = (padded.shape[0], *out_spatial, *kernel, padded.shape[-1])
    strides = (st[0], *(a * s for a, s in zip(sp, strides)),
               *(a * d for a, d in zip(sp, dilations)), st[-1])
    if xp is np:
        return np.lib.stride_tricks.as_strided(padded, shape, strides, writeable=False)
    return xp.lib.stride_tricks.as_strided(padded, shape, strides)


def blocks(grid, row_bytes, budget):
    """Split the output grid ``(N, *out_sp)`` into index blocks of about ``budget`` bytes.

    Blocks run along the outermost axis whose inner rows fit the budget; the axes
    before it are taken one index at a time. Yields ``(idx, rows)``: ``idx`` is a tuple
    of slices (so a block keeps every axis) indexing ``[N, *out_sp, ...]`` arrays, and
    ``rows`` is the block's number of positions.
    """
    for axis in range(len(grid)):
        inner = math.prod(grid[axis + 1:])
        if inner * row_bytes <= budget:
            break
    step = max(1, budget // (inner * row_bytes))
    for prefix in itertools.product(*(range(g) for g in grid[:axis])):
        for start in range(0, grid[axis], step):
            stop = min(start + step, grid[axis])
            yield tuple(slice(i, i + 1) for i in prefix) + (slice(start, stop),), \
                (stop - start) * inner


def tap_index(idx, grid, offset, strides, dilations):
    """Index into a padded ``[N, *P, C]`` array of the positions kernel ``offset`` reads for
    the output block ``idx`` of ``blocks(grid, ...)`` (position ``o * stride + k * dilation``):
    a plain strided slice, shaped like the block."""
    parts = [idx[0]]
    for axis in range(1, len(grid)):
        k, s = offset[axis - 1] * dilations[axis - 1], strides[axis - 1]
        sel = idx[axis] if axis < len(idx) else slice(0, grid[axis])
        parts.append(slice(sel.start * s + k, (sel.stop - 1) * s + k + 1, s))
    return tuple(parts) + (slice(None),)


def flipped_filter(w, xp=np, copy=True):
    """The filter ``[*K, O, C]`` whose stride-1 forward conv of dy is the input gradient of
    the conv by ``w`` ``[*K, C, O]``: spatially flipped, its channel axes swapped; a
    contiguous copy, or (``copy`` False) a view of ``w``."""
    rank = w.ndim - 2
    flipped = xp.swapaxes(w[(slice(None, None, -1),) * rank], -1, -2)
    return xp.ascontiguousarray(flipped) if copy else flipped


def flipped_pads(kernel, dilations, pads):
    """The padding of the stride-1 forward conv of dy by ``flipped_filter(w)`` that gives the
    input gradient of a stride-1 conv padded ``pads``: ``(k-1)*d`` less each side's
    (negative where the conv's padding passes that)."""
    return [((k - 1) * d - b, (k - 1) * d - a) for k, d, (b, a) in zip(kernel, dilations, pads)]


def tap_offsets(kernel, dilations, steps, channels):
    """Each (tap, channel) pair's offset from a window's origin, taps in row-major order and
    channels fastest, in an input whose spatial dims lie ``steps`` elements apart."""
    taps = np.array([sum(t * d * step for t, d, step in zip(tap, dilations, steps))
                     for tap in itertools.product(*(range(k) for k in kernel))], np.int64)
    return (taps[:, None] + np.arange(channels)).reshape(-1)
