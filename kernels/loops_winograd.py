"""Winograd tile transforms (numba) for 3x3 and 3x3x3 stride-1 convolutions.

Per spatial dim F(2,3) turns 4 inputs into 4 transformed values (``B^T d``) and 4 products
into 2 outputs (``A^T m``); the filter gradient's F(3,2) turns 2 output-gradient values
into 4 (``A e``):

    B^T = [[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]]
    A^T = [[1, 1, 1, 0], [0, 1, -1, -1]]

applied along each dim in turn. Every value is a vector over channels (the contiguous last
axis), so each 1-D step is a loop over channels that vectorizes. Tiles are numbered row-major
over the block's tile grid; transformed tiles are stored ``[alpha, tile, channel]``
(alpha = 16 or 64 transform positions, row-major), the layout of the batched GEMM that
follows. The input and output-gradient tile loops are written out separately on purpose:
one loop for both, choosing its 1-D step at run time, measured 30-45% slower.
"""

import numpy as np
from numba import njit


@njit(cache=True, nogil=True, inline="always")
def _input_1d(a0, a1, a2, a3, o0, o1, o2, o3):
    """(o0..o3) = B^T (a0..a3), channel by channel; the outputs may alias the inputs."""
    for c in range(o0.shape[0]):
        x0, x1, x2, x3 = a0[c], a1[c], a2[c], a3[c]
        o0[c] = x0 - x2
        o1[c] = x1 + x2
        o2[c] = x2 - x1
        o3[c] = x1 - x3


@njit(cache=True, nogil=True, inline="always")
def _output_1d(m0, m1, m2, m3, o0, o1):
    """(o0, o1) = A^T (m0..m3), channel by channel."""
    for c in range(o0.shape[0]):
        x1, x2 = m1[c], m2[c]
        o0[c] = m0[c] + x1 + x2
        o1[c] = x1 - x2 - m3[c]


@njit(cache=True, nogil=True, fastmath={"reassoc"})
def _poison(values):
    """NaN if any of ``values`` is infinite or NaN (v - v is then NaN), else 0; reassociated
    so that it vectorizes."""
    total = values.dtype.type(0)
    for i in range(values.shape[0]):
        total += values[i] - values[i]
    return total


@njit(cache=True, nogil=True)
def input_2d(xpad, n, first_row, rows, v):
    """v[a*4 + b, t, :] = (B^T d B)[a, b] for the tiles of image n in tile rows
    [first_row, first_row + rows); d = xpad[n, 2i:2i+4, 2j:2j+4, :], t = (i - first_row)*TW + j.
    The transform along the rows runs over whole padded rows at once (long loops)."""
    width, channels = xpad.shape[2], xpad.shape[3]
    tiles_w = (width - 2) // 2
    across = np.empty((4, width * channels), xpad.dtype)
    for i in range(rows):
        top = 2 * (first_row + i)
        image = xpad[n]
        _input_1d(image[top].reshape(-1), image[top + 1].reshape(-1),
                  image[top + 2].reshape(-1), image[top + 3].reshape(-1),
                  across[0], across[1], across[2], across[3])
        for j in range(tiles_w):
            t = i * tiles_w + j
            for a in range(4):
                row = across[a]
                base = 2 * j * channels
                _input_1d(row[base:base + channels], row[base + channels:base + 2 * channels],
                          row[base + 2 * channels:base + 3 * channels],
                          row[base + 3 * channels:base + 4 * channels],
                          v[a * 4, t], v[a * 4 + 1, t], v[a * 4 + 2, t], v[a * 4 + 3, t])


@njit(cache=True, nogil=True)
def output_2d(m, y, n, first_row, rows):
    """y[n, 2i:2i+2, 2j:2j+2, :] = A^T M A for the block's tiles (cropped at y's edges); the
    transform along the rows runs over whole output rows at once. Returns NaN if any value
    written is not finite (else 0)."""
    height, width, channels = y.shape[1], y.shape[2], y.shape[3]
    tiles_w = (width + 1) // 2
    across = np.empty((4, 2 * tiles_w * channels), y.dtype)
    pair = np.empty((2, 2 * tiles_w * channels), y.dtype)
    poison = y.dtype.type(0)
    for i in range(rows):
        top = 2 * (first_row + i)
        for j in range(tiles_w):
            t = i * tiles_w + j
            base = 2 * j * channels
            for a in range(4):
                row = across[a]
                _output_1d(m[a * 4, t], m[a * 4 + 1, t], m[a * 4 + 2, t], m[a * 4 + 3, t],
                           row[base:base + channels], row[base + channels:base + 2 * channels])
        _output_1d(across[0], across[1], across[2], across[3], pair[0], pair[1])
        for a in range(2):
            if top + a < height:
                row = pair[a, :width * channels]
                y[n, top + a].reshape(-1)[:] = row
                poison += _poison(row)
    return poison


@njit(cache=True, nogil=True)
def input_3d(xpad, n, first_row, rows, v):
    """3-D ``input_2d``: tiles of image n in tile rows [first_row, first_row + rows) of the
    first spatial dim, t = ((i - first_row)*TH + j)*TW + k, v[(a*4 + b)*4 + e, t, :]. The
    transforms along the first two dims run over whole padded planes and rows at once."""
    height, width, channels = xpad.shape[2], xpad.shape[3], xpad.shape[4]
    tiles_h, tiles_w = (height - 2) // 2, (width - 2) // 2
    plane = height * width * channels
    deep = np.empty((4, plane), xpad.dtype)
    rows_buf = np.empty((4, 4, width * channels), xpad.dtype)
    image = xpad[n]
    for i in range(rows):
        d0 = 2 * (first_row + i)
        _input_1d(image[d0].reshape(-1), image[d0 + 1].reshape(-1),
                  image[d0 + 2].reshape(-1), image[d0 + 3].reshape(-1),
                  deep[0], deep[1], deep[2], deep[3])
        for j in range(tiles_h):
            for a in range(4):
                layer = deep[a].reshape(height, width * channels)
                _input_1d(layer[2 * j], layer[2 * j + 1], layer[2 * j + 2], layer[2 * j + 3],
                          rows_buf[a, 0], rows_buf[a, 1], rows_buf[a, 2], rows_buf[a, 3])
            for k in range(tiles_w):
                t = (i * tiles_h + j) * tiles_w + k
                base = 2 * k * channels
                for a in range(4):
                    for b in range(4):
                        row = rows_buf[a, b]
                        r = (a * 4 + b) * 4
                        _input_1d(row[base:base + channels],
                                  row[base + channels:base + 2 * channels],
                                  row[base + 2 * channels:base + 3 * channels],
                                  row[base + 3 * channels:base + 4 * channels],
                                  v[r, t], v[r + 1, t], v[r + 2, t], v[r + 3, t])


@njit(cache=True, nogil=True)
def output_3d(m, y, n, first_row, rows):
    """3-D ``output_2d``: y[n, 2i:2i+2, 2j:2j+2, 2k:2k+2, :] = A^T M A, cropped; the
    transforms along the first two dims run over whole rows and planes at once. Returns NaN
    if any value written is not finite (else 0)."""
    depth, height, width, channels = y.shape[1], y.shape[2], y.shape[3], y.shape[4]
    tiles_h, tiles_w = (height + 1) // 2, (width + 1) // 2
    row_len = 2 * tiles_w * channels
    rows_buf = np.empty((4, 4, row_len), y.dtype)
    planes = np.empty((4, 2 * tiles_h, row_len), y.dtype)
    pair = np.empty((2, 2 * tiles_h * row_len), y.dtype)
    poison = y.dtype.type(0)
    for i in range(rows):
        d0 = 2 * (first_row + i)
        for j in range(tiles_h):
            for k in range(tiles_w):
                t = (i * tiles_h + j) * tiles_w + k
                base = 2 * k * channels
                for a in range(4):
                    for b in range(4):
                        row = rows_buf[a, b]
                        r = (a * 4 + b) * 4
                        _output_1d(m[r, t], m[r + 1, t], m[r + 2, t], m[r + 3, t],
                                   row[base:base + channels],
                                   row[base + channels:base + 2 * channels])
            for a in range(4):
                _output_1d(rows_buf[a, 0], rows_buf[a, 1], rows_buf[a, 2], rows_buf[a, 3],
                           planes[a, 2 * j], planes[a, 2 * j + 1])
        _output_1d(planes[0].reshape(-1), planes[1].reshape(-1), planes[2].reshape(-1),
                   planes[3].reshape(-1), pair[0], pair[1])
        for a in range(2):
            if d0 + a >= depth:
                continue
            out = pair[a].reshape(2 * tiles_h, 2 * tiles_w, channels)
            y[n, d0 + a] = out[:height, :width]
            poison += _poison(y[n, d0 + a].reshape(-1))
    return poison


@njit(cache=True, nogil=True, inline="always")
def _gradient_1d(a0, a1, o0, o1, o2, o3):
    """(o0..o3) = A (a0, a1) with A = A^T's transpose: (a0, a0 + a1, a0 - a1, -a1)."""
    for c in range(o0.shape[0]):
        x0, x1 = a0[c], a1[c]
        o0[c] = x0
        o1[c] = x0 + x1
        o2[c] = x0 - x1
        o3[c] = -x1


@njit(cache=True, nogil=True)
def gradient_2d(dypad, n, first_row, rows, g):
    """g[a*4 + b, t, :] = (A e A^T)[a, b] for the 2x2 tiles e = dypad[n, 2i:2i+2, 2j:2j+2, :]
    of image n in tile rows [first_row, first_row + rows) (the filter gradient's transform of
    the output gradient), t = (i - first_row)*TW + j."""
    width, channels = dypad.shape[2], dypad.shape[3]
    tiles_w = width // 2
    across = np.empty((4, width * channels), dypad.dtype)
    image = dypad[n]
    for i in range(rows):
        top = 2 * (first_row + i)
        _gradient_1d(image[top].reshape(-1), image[top + 1].reshape(-1),
                     across[0], across[1], across[2], across[3])
        for j in range(tiles_w):
            t = i * tiles_w + j
            base = 2 * j * channels
            for a in range(4):
                row = across[a]
                _gradient_1d(row[base:base + channels], row[base + channels:base + 2 * channels],
                             g[a * 4, t], g[a * 4 + 1, t], g[a * 4 + 2, t], g[a * 4 + 3, t])


@njit(cache=True, nogil=True)
def gradient_3d(dypad, n, first_row, rows, g):
    """3-D ``gradient_2d``: 2x2x2 tiles, t = ((i - first_row)*TH + j)*TW + k,
    g[(a*4 + b)*4 + e, t, :]."""
    height, width, channels = dypad.shape[2], dypad.shape[3], dypad.shape[4]
    tiles_h, tiles_w = height // 2, width // 2
    plane = height * width * channels
    deep = np.empty((4, plane), dypad.dtype)
    rows_buf = np.empty((4, 4, width * channels), dypad.dtype)
    image = dypad[n]
    for i in range(rows):
        d0 = 2 * (first_row + i)
        _gradient_1d(image[d0].reshape(-1), image[d0 + 1].reshape(-1),
                     deep[0], deep[1], deep[2], deep[3])
        for j in range(tiles_h):
            for a in range(4):
                layer = deep[a].reshape(height, width * channels)
                _gradient_1d(layer[2 * j], layer[2 * j + 1],
                             rows_buf[a, 0], rows_buf[a, 1], rows_buf[a, 2], rows_buf[a, 3])
            for k in range(tiles_w):
                t = (i * tiles_h + j) * tiles_w + k
                base = 2 * k * channels
                for a in range(4):
                    for b in range(4):
                        row = rows_buf[a, b]
                        r = (a * 4 + b) * 4
                        _gradient_1d(row[base:base + channels],
                                     row[base + channels:base + 2 * channels],
                                     g[r, t], g[r + 1, t], g[r + 2, t], g[r + 3, t])
