"""A squeeze-and-excite block's gate and product in one pass per image: x's channel means,
the two pointwise convs (each a product by a [C, R] or [R, C] filter, then its chain of
constant stages and activation), the swish between them, the sigmoid gate and x times it.
Past the means the block's tensors hold a few thousand values, so the work is a few
microseconds, where the block's nodes one by one cost a plan tens of microseconds each.
"""

import numpy as np
from numba import njit, prange

from graphops.kernels.compiled.elementwise import chain_rows, sigmoid_narrow


@njit(cache=True, parallel=True, nogil=True, fastmath={"contract"}, error_model="numpy")
def gated(x, w1, tiled1, kinds1, activation1, swish, beta, w2, tiled2, kinds2, activation2,
          zero, six, out):
    """out ``[N, P, C]`` = x ``[N, P, C]`` times its gate per (image, channel): the channel
    means over P (float64 sums in order of position, divided, rounded once, as the Mean
    kernel makes them), ``h = chain1(means @ w1)`` (``w1`` ``[C, R]``; each sum float32
    fused multiply-adds in order of channel; ``chain_rows`` with ``tiled1, kinds1,
    activation1``), with ``swish`` ``h * sigmoid(beta * h)`` (the fused swish's rounding),
    ``gate = sigmoid(chain2(h @ w2))`` (``sigmoid_narrow``), then ``x * gate``."""
    images, positions, channels = x.shape
    reduced = w1.shape[1]
    for image in prange(images):
        sums = np.zeros(channels)
        for p in range(positions):
            for c in range(channels):
                sums[c] += x[image, p, c]
        means = np.empty(channels, np.float32)
        for c in range(channels):
            means[c] = sums[c] / positions
        h = np.zeros(reduced, np.float32)
        _add_product(means, w1, h)
        chain_rows(h, tiled1, kinds1, activation1, zero, six)
        if swish:
            for r in range(reduced):
                h[r] = h[r] * sigmoid_narrow(h[r] * beta)
        gate = np.zeros(channels, np.float32)
        _add_product(h, w2, gate)
        chain_rows(gate, tiled2, kinds2, activation2, zero, six)
        for c in range(channels):
            gate[c] = sigmoid_narrow(gate[c])
        for p in range(positions):
            for c in range(channels):
                out[image, p, c] = x[image, p, c] * gate[c]


@njit(cache=True, nogil=True, inline="always", fastmath={"contract"}, error_model="numpy")
def _add_product(v, w, out):
    """out += v @ w (``w`` ``[K, M]``), each sum in order of k with fused multiply-adds,
    four rows of ``w`` a pass over ``out`` (the same sums, a quarter of its loads and
    stores)."""
    rows, cols = w.shape
    main = rows - rows % 4
    for k in range(0, main, 4):
        v0, v1, v2, v3 = v[k], v[k + 1], v[k + 2], v[k + 3]
        for m in range(cols):
            out[m] = (((out[m] + v0 * w[k, m]) + v1 * w[k + 1, m]) + v2 * w[k + 2, m]
                      + v3 * w[k + 3, m])
    for k in range(main, rows):
        value = v[k]
        for m in range(cols):
            out[m] += value * w[k, m]
