"""Pooling loops (numba): the max and average pools in one pass where NumPy makes a strided
pass per window tap (5-8x slower than TF on x[32, 112, 112, 64]), and the max pool gradient
where NumPy's masked selections are slow."""

import numpy as np
from numba import njit, prange


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
    TF's CPU kernel. Parallel over output rows; the channel loop innermost."""
    channels = x.shape[-1]
    images, out_depth, out_height, out_width, _ = out.shape
    width, k_w, s_w, p_w = x.shape[3], ksize[2], strides[2], pads_before[2]
    for row in prange(images * out_depth * out_height):
        n, od, oh, d0, d1, h0, h1 = _window_rows(row, x, out, ksize, strides, pads_before)
        for ow in range(out_width):
            w0 = max(ow * s_w - p_w, 0)
            w1 = min(ow * s_w - p_w + k_w, width)
            best = out[n, od, oh, ow]
            best[:] = floor
            for i in range(d0, d1):
                for j in range(h0, h1):
                    for k in range(w0, w1):
                        values = x[n, i, j, k]
                        for c in range(channels):
                            value, held = values[c], best[c]
                            best[c] = value if value > held else held


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
    """MaxPoolGrad on channels-last [N, H, W, C] arrays: each output's gradient added into
    `dx` (zeros) at the position TF's argmax rule picks in its window: the first position
    inside the input in scan order, then any later one strictly greater (so NaN is never
    picked over a number, nor a number over a NaN found first). Parallel over images,
    whose windows never overlap; the channel loops are innermost."""
    images, height, width, channels = x.shape
    _, out_height, out_width, _ = grad.shape
    (k_h, k_w), (s_h, s_w), (p_h, p_w) = ksize, strides, pads_before
    for n in prange(images):
        best = np.empty(channels, x.dtype)
        best_row = np.empty(channels, np.int64)
        best_col = np.empty(channels, np.int64)
        for oh in range(out_height):
            for ow in range(out_width):
                found = False
                for kh in range(k_h):
                    i = oh * s_h + kh - p_h
                    if i < 0 or i >= height:
                        continue
                    for kw in range(k_w):
                        j = ow * s_w + kw - p_w
                        if j < 0 or j >= width:
                            continue
                        if not found:
                            for c in range(channels):
                                best[c] = x[n, i, j, c]
                                best_row[c] = i
                                best_col[c] = j
                            found = True
                            continue
                        for c in range(channels):
                            value = x[n, i, j, c]
                            if best[c] < value:
                                best[c] = value
                                best_row[c] = i
                                best_col[c] = j
                if found:
                    for c in range(channels):
                        dx[n, best_row[c], best_col[c], c] += grad[n, oh, ow, c]


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
