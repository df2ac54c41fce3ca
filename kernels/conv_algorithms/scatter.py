"""Dense convs as GEMMs whose products are scattered into place by compiled loops (the
"scatter" paths ``dense`` picks): the input gradient, ``dy[rows, O] @ w.T[O, taps*C]``, and
the stride-1 forward conv, ``x[rows, C] @ w[C, taps*O]``, per block of source positions, each
product added where it lands (``compiled.conv.add_taps``), on the intra-op pool. No patch
matrix is built and the GEMMs have taps x channels columns, a shape BLAS runs well."""

import math

import numpy as np

from graphops.kernels.compiled import loops
from graphops.kernels.conv_algorithms.layout import blocks
from graphops.kernels.support.parallelism import intra_op_threads, pool_map, share_count

SCATTER_MIN_UNIT_ROWS = 512   # source positions a pool unit gets at least
SCATTER_BLOCK_BYTES = 4 << 20  # products per block (fit the cache)


def reaching_taps(in_shape, pads, out_sp, kernel, strides, dilations):
    """Per spatial dim, the kernel offsets that can reach the unpadded input (a huge filter
    has few of them)."""
    return [range(max(0, -(((q - 1) * s - b) // d)), min(k, (b + i - 1) // d + 1))
            for i, (b, _), q, k, s, d in zip(in_shape[1:-1], pads, out_sp, kernel, strides,
                                              dilations)]


def backprop_input(dyc, w, in_shape, strides, dilations, pads):
    """Input gradient on the CPU: ``dy[rows, O] @ w.T[O, taps*C]`` per block of output
    positions, scattered into dx (see ``_products``)."""
    c, o = w.shape[-2:]
    reaching = reaching_taps(in_shape, pads, dyc.shape[1:-1], w.shape[:-2], strides,
                             dilations)
    dx = np.zeros(in_shape, dyc.dtype)
    taps = math.prod(len(r) for r in reaching)
    if taps:
        wt = np.ascontiguousarray(w[tuple(slice(r.start, r.stop) for r in reaching)]
                                  .reshape(taps * c, o)).T
        _products(dyc, wt, dx, [len(r) for r in reaching], strides, dilations,
                  [b for b, _ in pads], [r.start for r in reaching])
    return dx


def forward(xc, w, out_sp, dilations, pads):
    """Stride-1 forward conv on the CPU: ``x[rows, C] @ w[C, taps*O]`` per block of input
    positions, each product added into the output it feeds (see ``_products``): the GEMM
    has taps*O columns (an efficient shape for BLAS) and no patch matrix is built.
    Input position i meets offset k at output ``i + before - k*d``: the scatter's offset
    ``K-1-k`` at dilation d, with "padding" ``(K-1)*d - before``."""
    kernel, (c, o) = w.shape[:-2], w.shape[-2:]
    y = np.zeros((xc.shape[0], *out_sp, o), xc.dtype)
    flipped = w[tuple(slice(None, None, -1) for _ in kernel)]
    wt = np.ascontiguousarray(np.moveaxis(flipped, -2, 0)).reshape(c, math.prod(kernel) * o)
    _products(xc, wt, y, kernel, (1,) * len(kernel), dilations,
              [(k - 1) * d - b for k, d, (b, _) in zip(kernel, dilations, pads)],
              (0,) * len(kernel))
    return y


def _products(src, wt, out, taps, strides, dilations, before, tap_first):
    """out[n, q*s + (t0+t)*d - before] += src[n, q] @ wt[:, t] for every source position q
    and offset t (``taps`` per dim, ``tap_first`` the first): one GEMM per block of source
    positions and a compiled scatter-add of its products (``compiled.conv.add_taps``), on the
    intra-op pool. Spatial dims are padded to three with size-1 dims after the first. The
    pool's units are whole images, or slabs of the first spatial dim thick enough that units
    two apart never add into one place: then even units run first, odd ones after."""
    rank, m = src.ndim - 2, out.shape[-1]

    def three(values, fill):     # (v1, fill..., v2, v3) for the 3-d loops
        values = tuple(values)
        return values[:1] + (fill,) * (3 - rank) + values[1:]

    tap_shape = three(taps, 1)
    geometry = (three(strides, 1), three(dilations, 1), three(before, 0), three(tap_first, 0))
    src3 = src.reshape(src.shape[0], *three(src.shape[1:-1], 1), src.shape[-1])
    out3 = out.reshape(out.shape[0], *three(out.shape[1:-1], 1), m)
    compiled = loops("conv")
    row_bytes = wt.shape[1] * out.itemsize

    def work(units):
        prods = None
        for unit in units:
            grid = src3[unit].shape[:-1]
            for idx, rows in blocks(grid, row_bytes, SCATTER_BLOCK_BYTES):
                idx = tuple(slice(u.start + i.start, u.start + i.stop)
                            for u, i in zip(unit, idx)) + unit[len(idx):] + idx[len(unit):]
                if prods is None or prods.shape[0] < rows:
                    prods = np.empty((rows, wt.shape[1]), out.dtype)
                part = src3[idx]
                block = prods[:rows]
                np.matmul(part.reshape(rows, -1), wt, out=block)
                first = tuple(i.start for i in idx) + (0,) * (4 - len(idx))
                compiled.add_taps(block.reshape(*part.shape[:-1], *tap_shape, m), out3, first,
                                  *geometry)

    plane = math.prod(src3.shape[2:-1])
    for wave in _waves(src3.shape[:2], plane, tap_shape[0], strides[0], dilations[0]):
        pool_map(work, wave)


def _waves(grid, plane, taps, stride, dilation):
    """Lists of units ``(images, first-dim slab)`` of the source grid ``[N, Q1]`` (``plane``
    positions per Q1 index) to run one list after the other; units in one list add into
    disjoint parts of the result. Runs of whole images when there are enough of them; else
    slabs at least thick enough that those two apart never meet (``taps`` kernel offsets
    along the dim): even slabs, then odd. A unit has ``SCATTER_MIN_UNIT_ROWS`` positions
    or more where the grid allows."""
    (n, q1), wanted = grid, 2 * share_count()
    if n >= wanted or q1 == 1:
        per_unit = max(-(-n // wanted), -(-SCATTER_MIN_UNIT_ROWS // (q1 * plane)))
        return [[(slice(i, min(i + per_unit, n)), slice(0, q1))
                 for i in range(0, n, per_unit)]]
    thinnest = max(1, (taps - 1) * dilation // stride, -(-SCATTER_MIN_UNIT_ROWS // plane))
    slabs = min(max(1, q1 // thinnest), -(-wanted // n))      # per image
    pair = 2 * intra_op_threads()          # a wave of slab pairs keeps every thread busy
    if n == 1 and slabs >= pair:
        slabs -= slabs % pair
    thick = -(-q1 // slabs)
    units = [(slice(i, i + 1), slice(j, min(j + thick, q1)))
             for i in range(n) for j in range(0, q1, thick)]
    return [[u for u in units if u[1].start // thick % 2 == parity] for parity in (0, 1)]
