"""Pooling loops (numba) where NumPy's masked selections are slow."""

import numpy as np
from numba import njit, prange


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
