"""Matrix products for CPU kernels, spread over the intra-op pool.

Inside kernels BLAS runs single-threaded (see `parallelism`), so a large product is split
here instead: its rows in contiguous ranges, a few per pool thread, each range a BLAS call
writing its own rows of the result.
"""

import math

import numpy as np

from kernels.parallelism import SHARES_PER_THREAD, intra_op_threads, pool_map

MIN_PARALLEL_FLOPS = 1 << 22     # smaller products run in one call (the pool costs ~20 us)


def matmul(xp, a, b):
    """`xp.matmul(a, b)` for operands of rank >= 2 (batch dims broadcast)."""
    if xp is not np or a.ndim < 2 or b.ndim < 2:
        return xp.matmul(a, b)
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    if 2 * math.prod(batch) * m * n * k < MIN_PARALLEL_FLOPS or m < 2 or k != b.shape[-2]:
        return np.matmul(a, b)
    out = np.empty(batch + (m, n), np.result_type(a, b))
    parts = min(SHARES_PER_THREAD * intra_op_threads(), m)
    ranges = [(m * i // parts, m * (i + 1) // parts) for i in range(parts)]

    def work(share):
        for start, stop in share:
            np.matmul(a[..., start:stop, :], b, out=out[..., start:stop, :])

    pool_map(work, ranges)
    return out
