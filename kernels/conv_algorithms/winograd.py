"""Winograd F(2,3) convolution on the CPU: 3x3 and 3x3x3 filters at stride and dilation 1.

Each output tile of 2 (2x2, 2x2x2) positions is computed from a 4 (4x4, 4x4x4) input tile
with 16 (64) multiplications per channel pair instead of 36 (216): the input tiles and the
filter are transformed (``B^T d B``, ``G g G^T``), multiplied position by position over the
channels (one batched GEMM ``V[alpha, tiles, C] @ U[alpha, C, O]``), and the products
transformed back (``A^T m A``). F(2,3)'s transforms add and subtract only (and halve, in the
filter's), so float32 results stay within a few units in the last place of the direct sum.

Tiles go through in blocks of whole tile rows of the first spatial dim, sized so that a
block's transformed tiles and products stay in the cache (each alpha's slab one zero tile
longer, ``_block_views``), spread over the intra-op pool
(each thread transforms its blocks with compiled loops, ``compiled.winograd.py``, and runs
single-threaded GEMMs: float32 with output channels in groups of 8 on the direct convs'
register-blocked micro-kernels, ``compiled.direct.batched_gemm``, at about twice the rate of
OpenBLAS's SGEMM on the AVX2 kernels this machine's environment selects; else NumPy's
matmul). The input
gradient of such a conv is this forward conv of dy with the filter flipped and its channel
axes swapped; the filter gradient is F(3,2): products of transformed input and
output-gradient tiles summed over the tiles (``winograd_backprop_filter``).
"""

import math

import numpy as np

from graphops.kernels.compiled import loops, usable
from graphops.kernels.conv_algorithms.direct import VECTOR_CHANNELS
from graphops.kernels.conv_algorithms.layout import flipped_filter, pad_spatial
from graphops.kernels.support.parallelism import pool_map

BLOCK_BYTES = 4 << 20   # a block's transformed tiles and products (measured best at 2-8 MB)
MIN_CHANNELS = 16       # with fewer input or output channels the transforms dominate
MAX_CHANNELS = 128
MIN_TILES = 256
MAX_ROW_BYTES = 32 << 20  # a tile row's transformed tiles (a block holds one at least)
_G = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0.0, 0.0, 1.0]])


def applies(xp, dtype, kernel, strides, dilations, in_channels, out_channels, tile_grid):
    """Whether a conv goes through Winograd: NumPy, a float compute ``dtype`` (the filter's
    transform halves values), 2 or 3 spatial dims, 3-wide filters, stride and dilation 1,
    ``MIN_CHANNELS`` to ``MAX_CHANNELS`` channels in and out and ``MIN_TILES`` output tiles
    or more (``tile_grid``: the batch and output spatial sizes). Measured: with more channels
    or fewer tiles a block's GEMMs have too few tiles for their filter, and the direct paths
    win. A block is at least one tile row, so a row's transforms must fit ``MAX_ROW_BYTES``."""
    tiles = [-(-q // 2) for q in tile_grid[1:]]
    row_bytes = 4 ** len(kernel) * math.prod(tiles[1:]) * (in_channels + out_channels) * 8
    return (xp is np and np.dtype(dtype).kind == "f" and usable() and len(kernel) in (2, 3)
            and row_bytes <= MAX_ROW_BYTES and set(kernel) == {3}
            and set(strides) == {1} and set(dilations) == {1}
            and MIN_CHANNELS <= min(in_channels, out_channels)
            and max(in_channels, out_channels) <= MAX_CHANNELS
            and tile_grid[0] * math.prod(tiles) >= MIN_TILES)


def winograd_forward(x, w, out_sp, pads):
    """y[N, *out_sp, O] of the stride-1 conv of channels-last ``x`` ([N, *S, C], C-contiguous,
    the compute dtype) with ``w`` ([3, 3, (3,) C, O]) and padding ``pads`` ((before, after)
    per dim; ``out_sp`` follows from them); None if any output is not finite. The transforms
    add and subtract inputs before multiplying, so an infinite input (or an overflow of those
    sums) gives NaN where the direct sum gives an infinity or a number: the caller then
    takes a direct path."""
    rank, n, c, o = x.ndim - 2, x.shape[0], x.shape[-1], w.shape[-1]
    tiles = [-(-q // 2) for q in out_sp]
    padded = pad_spatial(x, pads, min_shape=[2 * t + 2 for t in tiles])
    alpha = 4 ** rank
    u = np.ascontiguousarray(_transformed(w.astype(np.float64), _G).reshape(alpha, c, o),
                             dtype=x.dtype)
    y = np.empty((n, *out_sp, o), x.dtype)
    row_tiles, units = _tile_blocks(n, tiles, alpha, c + o, x.itemsize)
    compiled = loops("winograd")
    transform_in, transform_out = ((compiled.input_2d, compiled.output_2d) if rank == 2 else
                                   (compiled.input_3d, compiled.output_3d))
    compiled_gemm = _compiled_gemm(x.dtype, o)

    def work(share):
        poison = 0.0
        for image, first, count, (v, m) in _block_views(share, row_tiles, alpha, (c, o),
                                                        x.dtype):
            transform_in(padded, image, first, count, v)
            _matmul(v, u, m, compiled_gemm)
            poison += transform_out(m, y, image, first, count)
        return poison

    return y if math.isfinite(sum(pool_map(work, units))) else None


def winograd_backprop_input(dy, w, in_sp, pads):
    """dx[N, *in_sp, C] of the stride-1 conv with ``w`` given ``dy`` ([N, *Q, O]): the
    forward conv of dy with the filter flipped (padding 2 - before, 2 - after); None where
    a padding exceeds 2 or, as in ``winograd_forward``, a result is not finite."""
    if any(b > 2 or a > 2 for b, a in pads):
        return None
    return winograd_forward(dy, flipped_filter(w), in_sp, [(2 - b, 2 - a) for b, a in pads])


def winograd_backprop_filter(x, dy, pads):
    """dw[3, 3, (3,) C, O] of the stride-1 conv of channels-last ``x`` ([N, *S, C]) giving
    ``dy`` ([N, *Q, O]; both C-contiguous in the compute dtype) with padding ``pads``:
    F(3,2) per dim. Each 2 (2x2, 2x2x2) tile of dy meets a 4 (4x4, 4x4x4) input tile;
    both are transformed (``B^T d B``, ``A e A^T``), their products summed over tiles as
    one batched GEMM per block (``V[alpha].T @ E[alpha]``), and the sums transformed back
    (``G^T m G``). Partial sums are kept per pool share and added in share order. As in
    ``winograd_forward``, None if any result is not finite (the caller takes a direct
    path)."""
    rank, n, c, o = x.ndim - 2, x.shape[0], x.shape[-1], dy.shape[-1]
    out_sp = dy.shape[1:-1]
    tiles = [-(-q // 2) for q in out_sp]
    padded = pad_spatial(x, pads, min_shape=[2 * t + 2 for t in tiles])
    dy_padded = pad_spatial(dy, [(0, 0)] * rank, min_shape=[2 * t for t in tiles])
    alpha = 4 ** rank
    row_tiles, units = _tile_blocks(n, tiles, alpha, c + o, x.itemsize)
    compiled = loops("winograd")
    transform_in, transform_dy = ((compiled.input_2d, compiled.gradient_2d) if rank == 2 else
                                  (compiled.input_3d, compiled.gradient_3d))

    compiled_gemm = _compiled_gemm(x.dtype, o)

    def work(share):
        total = np.zeros((alpha, c, o), x.dtype)
        for image, first, count, (v, e) in _block_views(share, row_tiles, alpha, (c, o),
                                                        x.dtype):
            transform_in(padded, image, first, count, v)
            transform_dy(dy_padded, image, first, count, e)
            if compiled_gemm is None:
                total += np.matmul(v.transpose(0, 2, 1), e)
            else:
                compiled_gemm.batched_gemm(v, e, total, True, 1)
        return total

    sums = sum(pool_map(work, units)).astype(np.float64)
    dw = _transformed(sums.reshape((4,) * rank + (c, o)), _G.T)
    return dw if np.isfinite(dw).all() else None


def _compiled_gemm(dtype, columns):
    """The micro-kernel GEMMs (``compiled.direct.batched_gemm``) where they take the
    products: float32 with output channels in groups of 8 (they run at about twice the
    rate of OpenBLAS's SGEMM on the AVX2 kernels this machine's environment selects); else
    None, and NumPy's matmul takes them."""
    if np.dtype(dtype) != np.float32 or columns % VECTOR_CHANNELS != 0:
        return None
    return loops("direct", chunk=1)


def _matmul(v, u, m, compiled_gemm):
    """m = v @ u (batched), on the micro-kernels when ``compiled_gemm`` is given."""
    if compiled_gemm is None:
        np.matmul(v, u, out=m)
    else:
        compiled_gemm.batched_gemm(v, u, m, False, 0)


def _tile_blocks(n, tiles, alpha, width, itemsize):
    """Tiles per tile row of the first spatial dim, and the pool's units ``(image, first tile
    row, tile rows)``: whole tile rows whose transformed tiles (``width`` values per tile and
    transform position) fit ``BLOCK_BYTES``."""
    row_tiles = math.prod(tiles[1:])
    rows = max(1, BLOCK_BYTES // (alpha * row_tiles * width * itemsize))
    return row_tiles, [(i, r, min(rows, tiles[0] - r)) for i in range(n)
                       for r in range(0, tiles[0], rows)]


def _block_views(share, row_tiles, alpha, widths, dtype):
    """Per unit of a pool share: ``(image, first, count, views)``, one ``[alpha, tiles + 1,
    width]`` view per width, over buffers allocated once for the share. The extra tile,
    zeros, keeps the alpha slabs off multiples of 4 KB: slabs a multiple of 4 KB apart share
    the L1 cache's sets, and the transforms, which touch every slab for each tile, then run
    1.5x slower. The GEMMs
    take it along (its products are never read; in the filter gradient's sums it adds
    zeros)."""
    most = max(count for _, _, count in share) * row_tiles + 1
    buffers = [np.empty(alpha * most * width, dtype) for width in widths]
    for image, first, count in share:
        size = count * row_tiles + 1
        views = [buffer[:alpha * size * width].reshape(alpha, size, width)
                 for buffer, width in zip(buffers, widths)]
        for view in views:
            view[:, -1] = 0
        yield image, first, count, views


def _transformed(a, matrix):
    """``matrix`` applied along each spatial axis of ``a`` ([*K, C, O], float64)."""
    for axis in range(a.ndim - 2):
        a = np.moveaxis(np.tensordot(matrix, a, axes=([1], [axis])), 0, axis)
    return a
