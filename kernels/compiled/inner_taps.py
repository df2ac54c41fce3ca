"""The direct forward conv summing only the taps that read the input: output positions go
in classes of those whose windows meet the padding alike (``conv_algorithms.inner_taps``),
and each class sums its own runs of (tap, channel) pairs on the direct micro-kernels. Where
outputs are few (a deep network's last blocks: at 4x4 outputs a SAME 3x3 conv reads
padding with 31% of its taps, at 2x2 with 56%) that is work the padded windows do for
nothing.
"""

import numpy as np
from numba import njit, prange

from graphops.kernels.compiled.direct import GO_ON, _accumulate, _split_at
from graphops.kernels.compiled.elementwise import chain_chunk


@njit(cache=True, parallel=True, nogil=True)
def forward(x, offsets, w, y, rows_x, rows_y, blocks, runs, run_starts, outs, parts, splits,
            depth, width, tiled, kinds, activation):
    """y = the conv of x by w over each output position's inner taps. ``x``: the input
    ``[N, S1, S2, S3, C]`` flat, unpadded; ``offsets[t*C + c]``: where tap t's channel c
    lies from a window's origin in x; ``w``: the filter's rows as ``compiled.direct.forward``
    reads them (``depth`` pairs at a time, strips of ``width`` channels); ``y`` ``[N, Q1,
    Q2, Q3, O]`` flat. Row r of the output is position ``rows_y[r]`` (flat, in y) whose
    window starts at ``rows_x[r]`` in x (negative where it starts in the padding); block b
    is rows ``blocks[b, 0]`` to ``blocks[b, 1]`` of class ``blocks[b, 2]``, whose pairs are
    the runs ``runs[run_starts[k]:run_starts[k + 1]]`` (first, end). The blocks go in
    ``parts`` runs and the output channels in ``splits`` runs, a task each; a block's
    first run writes its sums, later runs go on from them (one sum, as the padded windows'
    loops make it); the epilogue ``(tiled, kinds,
    activation)`` follows a block's last pairs."""
    pairs = offsets.shape[0]
    count = blocks.shape[0]
    finishing = kinds.shape[0] > 0 or activation != 0
    for task in prange(parts * splits):
        part, split = task // splits, task % splits
        columns = (_split_at(outs, split, splits), _split_at(outs, split + 1, splits))
        for low in range(0, pairs, depth):
            high = min(pairs, low + depth)
            rows_w = w[low * outs:]
            strip = (high - low) * width
            for block in range(count * part // parts, count * (part + 1) // parts):
                first, end, kind = blocks[block]
                start = runs[run_starts[kind], 0]
                for run in range(run_starts[kind], run_starts[kind + 1]):
                    a, e = max(runs[run, 0], low), min(runs[run, 1], high)
                    if a < e:
                        _run_sums(x, offsets[a:e], rows_x[first:end], rows_w, width, strip,
                                  (a - low) * width, y, rows_y[first:end], columns,
                                  GO_ON * min(a - start, 1))
                if finishing and high == pairs:
                    _rows_epilogue(y, rows_y[first:end], columns, tiled, kinds, activation)


@njit(cache=True, nogil=True)
def _run_sums(x, offsets, rows_x, w, width, strip, row_at, y, rows_y, columns, add):
    """The sums of one run of pairs for a block's rows in the output channels ``columns``
    (first, end), written to y (added where ``add``): the run's filter rows start at
    ``row_at`` in each strip of ``width`` channels, the strips ``strip`` apart."""
    column = columns[0]
    while column < columns[1]:
        column += _accumulate(rows_x.shape[0], x, 0, offsets, rows_x, w, width,
                              column // width * strip + row_at + column % width, y, column,
                              rows_y, add,
                              min(columns[1] - column, width - column % width))


@njit(cache=True, nogil=True)
def _rows_epilogue(y, rows_y, columns, tiled, kinds, activation):
    """The epilogue on a block's rows (``rows_y``: where each starts in y), in the output
    channels ``columns``."""
    zero, six = y.dtype.type(0), y.dtype.type(6)
    for start in rows_y:
        chain_chunk(y[start + columns[0]:start + columns[1]], tiled[:, columns[0]:columns[1]],
                    kinds, activation, zero, six)
