"""The direct forward conv summing only the taps that read the input: output positions go
in classes of those whose windows meet the padding alike (``conv_algorithms.inner_taps``),
and each class sums its own runs of (tap, channel) pairs on the direct micro-kernels. Where
outputs are few (a deep network's last blocks: at 4x4 outputs a SAME 3x3 conv reads
padding with 31% of its taps, at 2x2 with 56%) that is work the padded windows do for
nothing.
"""

from numba import njit, prange

from graphops.kernels.compiled.direct import (GO_ON, has_epilogue, row_epilogue, split_at,
                                              strip_sums)


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
    ``parts`` runs and the output channels in ``splits`` runs, a task each; a block's first
    run writes its sums, later runs go on from them (one sum, as the padded windows' loops
    make it); the epilogue ``(tiled, kinds, activation)`` follows a block's last pairs."""
    pairs = offsets.shape[0]
    count = blocks.shape[0]
    finishing = has_epilogue(kinds, activation)
    for task in prange(parts * splits):
        part, split = task // splits, task % splits
        columns = (split_at(outs, split, splits), split_at(outs, split + 1, splits))
        for low in range(0, pairs, depth):
            high = min(pairs, low + depth)
            for block in range(count * part // parts, count * (part + 1) // parts):
                first, end, group = blocks[block]
                start = runs[run_starts[group], 0]
                for run in range(run_starts[group], run_starts[group + 1]):
                    a, e = max(runs[run, 0], low), min(runs[run, 1], high)
                    if a < e:
                        strip_sums(x, 0, offsets[a:e], rows_x[first:end], w[low * outs:],
                                   width, (high - low) * width, (a - low) * width, y, 0,
                                   rows_y[first:end], columns, GO_ON * min(a - start, 1))
                if finishing and high == pairs:
                    for row in rows_y[first:end]:
                        row_epilogue(y, row, columns, tiled, kinds, activation)
