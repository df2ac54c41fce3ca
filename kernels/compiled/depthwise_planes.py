"""Compiled loops of the float32 depthwise convs on channels-first operands (numba): the
forward conv and the input gradient of NCHW tensors, plane by plane, where the
channels-last loops (``compiled.depthwise``, ``compiled.depthwise_vectors``) would need
the operands transposed to NHWC and the result back (two more passes over memory each
way).

In NCHW each channel's plane is contiguous and a depthwise conv filters every plane alone,
so the loops run over output rows of one plane: a tap adds its weight times a run of an
input row to a run of the output row, the columns the tap reads inside the input (a
strided run where the stride is above 1). Rows stay in the L1 cache while a plane's taps
pass; threads take planes. Sums are float32 with fused multiply-adds, taps in row-major
order. Taps that read the padding are left out, as the channels-last vector kernels
(multiplier 1) and the float64 reference leave them out, and the input gradient adds each
dy value to the dx positions its taps land on: an infinite or NaN weight or value reaches
only the outputs it is multiplied into (where the channels-last row-cache loops, which take
multipliers above 1, multiply the padding's zeros too).
"""

import numpy as np
from numba import njit, prange

from graphops.kernels.compiled.ir import fused_multiply_add


@njit(cache=True, nogil=True, inline="always")
def _tap_run(count, size, stride, origin):
    """The run of a tap along a row: ``(length, first output, its input column)`` of the
    ``count`` outputs o whose column ``o * stride + origin`` lies in ``[0, size)``, the
    offsets unsigned (never negative), so that numba adds no wraparound of negative indices
    and the runs vectorize."""
    first = max(0, (-origin + stride - 1) // stride)
    end = min(count, (size - 1 - origin) // stride + 1) if origin < size else 0
    return max(0, end - first), np.uint64(first), np.uint64(first * stride + origin)


@njit(cache=True, parallel=True, nogil=True)
def forward(x, w, y, geometry):
    """y ``[N, C*M, OH, OW]`` = the depthwise conv of x ``[N, C, H, W]`` by w ``[KH, KW, C,
    M]`` (float32, C-contiguous), ``geometry``: KH, KW, M, sh, sw, dh, dw, top and left
    padding. Output plane ``c*M + m`` filters input plane c by ``w[:, :, c, m]``."""
    kh_n, kw_n, m_n, sh, sw, dh, dw, top, left = geometry
    n_total, channels, height, width = x.shape
    oh_n, ow_n = y.shape[2], y.shape[3]
    step = np.uint64(sw)
    for plane in prange(n_total * channels * m_n):
        n, c, m = plane // (channels * m_n), plane // m_n % channels, plane % m_n
        row = np.empty(ow_n, np.float32)
        for oh in range(oh_n):
            row[:] = 0
            for i in range(kh_n):
                ih = oh * sh + i * dh - top
                if ih < 0 or ih >= height:
                    continue
                for j in range(kw_n):
                    weight = w[i, j, c, m]
                    length, at, source = _tap_run(ow_n, width, sw, j * dw - left)
                    if sw == 1:                   # a contiguous run: vectors
                        for k in range(length):
                            column = at + np.uint64(k)
                            row[column] = fused_multiply_add(
                                weight, x[n, c, ih, source + np.uint64(k)], row[column])
                        continue
                    for k in range(length):
                        column = at + np.uint64(k)
                        row[column] = fused_multiply_add(
                            weight, x[n, c, ih, source + step * np.uint64(k)], row[column])
            for ow in range(ow_n):
                y[n, c * m_n + m, oh, ow] = row[ow]


@njit(cache=True, parallel=True, nogil=True)
def backprop_input(dy, w, dx, geometry):
    """dx ``[N, C, H, W]`` = the input gradient of the depthwise conv ``forward`` takes,
    from dy ``[N, C*M, OH, OW]`` and w ``[KH, KW, C, M]`` (float32, C-contiguous): each
    dy value times each tap's weight added where that tap of its window lands in dx, the
    multipliers m, then dy rows, then taps row-major, in order."""
    kh_n, kw_n, m_n, sh, sw, dh, dw, top, left = geometry
    n_total, channels, height, width = dx.shape
    oh_n, ow_n = dy.shape[2], dy.shape[3]
    step = np.uint64(sw)
    for plane in prange(n_total * channels):
        n, c = plane // channels, plane % channels
        dx[n, c] = 0
        for m in range(m_n):
            for oh in range(oh_n):
                for i in range(kh_n):
                    ih = oh * sh + i * dh - top
                    if ih < 0 or ih >= height:
                        continue
                    for j in range(kw_n):
                        weight = w[i, j, c, m]
                        length, at, target = _tap_run(ow_n, width, sw, j * dw - left)
                        if sw == 1:               # a contiguous run: vectors
                            for k in range(length):
                                column = target + np.uint64(k)
                                dx[n, c, ih, column] = fused_multiply_add(
                                    weight, dy[n, c * m_n + m, oh, at + np.uint64(k)],
                                    dx[n, c, ih, column])
                            continue
                        for k in range(length):
                            column = target + step * np.uint64(k)
                            dx[n, c, ih, column] = fused_multiply_add(
                                weight, dy[n, c * m_n + m, oh, at + np.uint64(k)],
                                dx[n, c, ih, column])
