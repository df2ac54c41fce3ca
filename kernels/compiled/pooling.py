"""Pooling loops (numba): the max and average pools in one pass where NumPy makes a strided
pass per window tap (5-8x slower than TF on x[32, 112, 112, 64]), and the max pool gradient
where NumPy's masked selections are slow. With float32 operands both take a window a
vector of channels at a time (``compiled.pool_vectors``)."""

import numpy as np
from numba import njit, prange

from graphops.kernels.compiled.pool_vectors import WINDOW_LANES, window_argmax, window_max


@njit(cache=True, nogil=True)
def _window_rows(row, x, out, ksize, strides, pads_before):
    """Where output ``row`` of a pool over channels-last [N, D, H, W, C] ``x`` into ``out``
    lies (image n, plane od, row oh) and the input planes and rows its windows hold inside
    x: (n, od, oh, d_first, d_end, h_first, h_end)."""
    _, depth, height, _, _ = x.shape
    _, out_depth, out_height, _, _ = out.shape
    (k_d, k_h, _), (s_d, s_h, _), (p_d, p_h, _) = ksize, strides, pads_before
    n, rest = row // (out_depth * out_height), row % (out_depth * out_height)
    od, oh = rest // out_height, rest % out_height
    d0, h0 = od * s_d - p_d, oh * s_h - p_h
    return n, od, oh, max(d0, 0), min(d0 + k_d, depth), max(h0, 0), min(h0 + k_h, height)


@njit(cache=True, parallel=True, nogil=True)
def max_pool(x, out, floor, ksize, strides, pads_before):
    """MaxPool on channels-last [N, D, H, W, C] arrays (2-D pools with D = 1) into `out`
    [N, OD, OH, OW, C]: each output the largest of its window's values inside the input and
    `floor` (the dtype's lowest), NaN never taken (a value is taken only when greater), as
    TF's CPU kernel. Parallel over output rows; the channel loop innermost. Each tap's
    maxima go from one of two rows into the other, always stored: kept in place, the
    unchanged ones would be left unstored, which AVX2 can only do with masked stores
    (slow on AMD's cores), where an unconditional store of the selected values vectorizes
    to a vector max."""
    channels = x.shape[-1]
    images, out_depth, out_height, out_width, _ = out.shape
    width, k_w, s_w, p_w = x.shape[3], ksize[2], strides[2], pads_before[2]
    for row in prange(images * out_depth * out_height):
        n, od, oh, d0, d1, h0, h1 = _window_rows(row, x, out, ksize, strides, pads_before)
        rows = np.empty((2, channels), x.dtype)
        for ow in range(out_width):
            w0 = max(ow * s_w - p_w, 0)
            w1 = min(ow * s_w - p_w + k_w, width)
            rows[0, :] = floor
            held = 0
            for i in range(d0, d1):
                for j in range(h0, h1):
                    for k in range(w0, w1):
                        values, best, taken = x[n, i, j, k], rows[held], rows[1 - held]
                        for c in range(channels):
                            value, kept = values[c], best[c]
                            taken[c] = value if value > kept else kept
                        held = 1 - held
            out[n, od, oh, ow] = rows[held]


@njit(cache=True, parallel=True, nogil=True)
def max_pool_float32(x, out, floor, ksize, strides, pads_before):
    """``max_pool`` of C-contiguous float32 arrays (``floor`` a float32 scalar): each
    window 16 channels at a time, then 8, on ``window_max``, the last few one by one."""
    images, depth, height, width, channels = x.shape
    _, out_depth, out_height, out_width, _ = out.shape
    k_w, s_w, p_w = ksize[2], strides[2], pads_before[2]
    wide, narrow = WINDOW_LANES
    by_wide = channels - channels % wide
    by_narrow = channels - channels % narrow
    flat_x, flat_out = x.reshape(-1), out.reshape(-1)
    floors = np.full(1, floor, np.float32)
    for row in prange(images * out_depth * out_height):
        n, _, _, d0, d1, h0, h1 = _window_rows(row, x, out, ksize, strides, pads_before)
        for ow in range(out_width):
            w0 = max(ow * s_w - p_w, 0)
            w1 = min(ow * s_w - p_w + k_w, width)
            at = (((n * depth + d0) * height + h0) * width + w0) * channels
            o = (row * out_width + ow) * channels
            for c in range(0, by_narrow, wide):
                window_max(wide if c < by_wide else narrow, flat_x, at + c, d1 - d0,
                            height * width * channels, h1 - h0, width * channels, w1 - w0,
                            channels, floors, flat_out, o + c)
            for c in range(by_narrow, channels):
                best = floor
                for i in range(d0, d1):
                    for j in range(h0, h1):
                        for k in range(w0, w1):
                            value = x[n, i, j, k, c]
                            best = value if value > best else best
                flat_out[o + c] = best


@njit(cache=True, parallel=True, nogil=True)
def avg_pool(x, out, ksize, strides, pads_before):
    """AvgPool on channels-last [N, D, H, W, C] arrays (2-D pools with D = 1) into `out`
    [N, OD, OH, OW, C]: each output the sum of its window's values inside the input, from 0
    in scan order, divided by how many there are (padding neither added nor counted; the
    sum NumPy's pass per tap makes, whose padded zeros change no sum begun at +0).
    Parallel over output rows; the channel loop innermost."""
    channels = x.shape[-1]
    images, out_depth, out_height, out_width, _ = out.shape
    width, k_w, s_w, p_w = x.shape[3], ksize[2], strides[2], pads_before[2]
    for row in prange(images * out_depth * out_height):
        n, od, oh, d0, d1, h0, h1 = _window_rows(row, x, out, ksize, strides, pads_before)
        for ow in range(out_width):
            w0 = max(ow * s_w - p_w, 0)
            w1 = min(ow * s_w - p_w + k_w, width)
            total = out[n, od, oh, ow]
            total[:] = 0
            for i in range(d0, d1):
                for j in range(h0, h1):
                    for k in range(w0, w1):
                        values = x[n, i, j, k]
                        for c in range(channels):
                            total[c] += values[c]
            divisor = x.dtype.type(max((d1 - d0) * (h1 - h0) * (w1 - w0), 1))
            for c in range(channels):
                total[c] /= divisor


@njit(cache=True, parallel=True, nogil=True)
def max_pool_grad(x, grad, dx, ksize, strides, pads_before):
    """MaxPoolGrad on channels-last [N, H, W, C] arrays: `dx` written whole, each image's
    zeros (on the threads, while its plane is in the cache) and then each output's
    gradient added at the position TF's argmax rule picks in its window: the first position
    inside the input in scan order, then any later one strictly greater (so NaN is never
    picked over a number, nor a number over a NaN found first). Parallel over images,
    whose windows never overlap; the channel loops are innermost. Each tap's picks go from
    one of two rows into the other, always stored (as in ``max_pool``: no masked stores);
    a pick is the position in the image's plane, flat, as int32 (the caller keeps planes
    below 2**31 positions): as wide as a float32 lane, so the selects vectorize with the
    compares."""
    images, height, width, channels = x.shape
    _, out_height, out_width, _ = grad.shape
    (k_h, k_w), (s_h, s_w), (p_h, p_w) = ksize, strides, pads_before
    for n in prange(images):
        best = np.empty((2, channels), x.dtype)
        picks = np.empty((2, channels), np.int32)
        plane = x[n].reshape(height * width, channels)
        dx_plane = dx[n].reshape(height * width, channels)
        dx_plane[:, :] = 0
        for oh in range(out_height):
            i0, i1 = max(oh * s_h - p_h, 0), min(oh * s_h - p_h + k_h, height)
            for ow in range(out_width):
                j0, j1 = max(ow * s_w - p_w, 0), min(ow * s_w - p_w + k_w, width)
                if i0 >= i1 or j0 >= j1:
                    continue
                held = 0
                first = i0 * width + j0
                values, kept, at = plane[first], best[0], picks[0]
                for c in range(channels):
                    kept[c] = values[c]
                    at[c] = np.int32(first)
                for i in range(i0, i1):
                    for j in range(j0 + 1 if i == i0 else j0, j1):
                        position = i * width + j
                        values, kept, at = plane[position], best[held], picks[held]
                        kept_to, at_to = best[1 - held], picks[1 - held]
                        for c in range(channels):
                            value, top = values[c], kept[c]
                            greater = top < value
                            kept_to[c] = value if greater else top
                            at_to[c] = np.int32(position) if greater else at[c]
                        held = 1 - held
                at = picks[held]
                for c in range(channels):
                    dx_plane[at[c], c] += grad[n, oh, ow, c]


@njit(cache=True, parallel=True, nogil=True)
def max_pool_grad_float32(x, grad, dx, ksize, strides, pads_before):
    """``max_pool_grad`` of C-contiguous float32 arrays: each window's picks 16 channels at a
    time, then 8, on ``window_argmax``, the last few channels one by one."""
    images, height, width, channels = x.shape
    _, out_height, out_width, _ = grad.shape
    (k_h, k_w), (s_h, s_w), (p_h, p_w) = ksize, strides, pads_before
    wide, narrow = WINDOW_LANES
    by_wide = channels - channels % wide
    by_narrow = channels - channels % narrow
    flat_x, flat_grad, flat_dx = x.reshape(-1), grad.reshape(-1), dx.reshape(-1)
    plane_size, row_size = height * width * channels, width * channels
    for n in prange(images):
        picks = np.empty(wide, np.int64)
        plane = n * plane_size
        flat_dx[plane:plane + plane_size] = 0
        for oh in range(out_height):
            i0, i1 = max(oh * s_h - p_h, 0), min(oh * s_h - p_h + k_h, height)
            for ow in range(out_width):
                j0, j1 = max(ow * s_w - p_w, 0), min(ow * s_w - p_w + k_w, width)
                if i0 >= i1 or j0 >= j1:
                    continue
                first = i0 * width + j0
                g = ((n * out_height + oh) * out_width + ow) * channels
                for c0 in range(0, by_narrow, wide):
                    lanes = wide if c0 < by_wide else narrow
                    window_argmax(lanes, flat_x, plane + first * channels + c0, i1 - i0,
                                  row_size, j1 - j0, channels, first, width, picks)
                    for c in range(lanes):
                        flat_dx[plane + picks[c] * channels + c0 + c] += flat_grad[g + c0 + c]
                for c in range(by_narrow, channels):
                    top, at = x[n, i0, j0, c], first
                    for i in range(i0, i1):
                        for j in range(j0, j1):
                            value = x[n, i, j, c]
                            if top < value:
                                top, at = value, i * width + j
                    flat_dx[plane + at * channels + c] += flat_grad[g + c]


@njit(cache=True, parallel=True, nogil=True)
def tied_max_pool_grad(x, y, grad, dx, ksize, strides, pads_before, tolerance):
    """MaxPool3DGrad on channels-last [N, D, H, W, C] arrays, as TF's CPU kernel: each
    output's gradient added into ``dx`` (zeros) at every position of its window inside the
    input whose value is within ``tolerance`` of the output (``y``), outputs in order.
    Parallel over images, whose windows never overlap; the channel loop innermost."""
    images, depth, height, width, channels = x.shape
    _, out_depth, out_height, out_width, _ = y.shape
    (k_d, k_h, k_w), (s_d, s_h, s_w), (p_d, p_h, p_w) = ksize, strides, pads_before
    for n in prange(images):
        for od in range(out_depth):
            d0 = od * s_d - p_d
            for oh in range(out_height):
                h0 = oh * s_h - p_h
                for ow in range(out_width):
                    w0 = ow * s_w - p_w
                    for i in range(max(d0, 0), min(d0 + k_d, depth)):
                        for j in range(max(h0, 0), min(h0 + k_h, height)):
                            for k in range(max(w0, 0), min(w0 + k_w, width)):
                                for c in range(channels):
                                    if abs(x[n, i, j, k, c] - y[n, od, oh, ow, c]) < tolerance:
                                        dx[n, i, j, k, c] += grad[n, od, oh, ow, c]
