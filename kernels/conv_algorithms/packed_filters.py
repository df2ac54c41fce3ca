"""Products of a few rows by a large constant filter, on the filter packed once.

A conv over few output positions (a deep network's last blocks at batch 1: 2x2 outputs, 4
rows) multiplies a handful of rows by a filter of megabytes, so its time is the time to
stream the filter from memory. OpenBLAS packs its operand on every call (reading the
filter, writing the copy, reading that) and streams about 8 GB/s of filter on a machine
whose memory reads 22. A filter nobody can write (a graph's constant: read-only down to
the array that owns its memory) is packed once instead, as oneDNN keeps a constant filter
reordered: in blocks of ``BLOCK_ROWS`` rows, each block as strips of the micro-kernels' two
vectors of columns (``compiled.direct.strip_gemm``), so that a product reads the pack
front to back while the rows' block of values stays in the L1 cache. One thread streams
17-21 GB/s of it on a Zen 4, where a second adds little; on an Intel Xeon one streams about
9 GB/s and two about 14 (ResNet50's last 3x3 filter, 9.4 MB: 1.0 ms a conv on one, 0.69 on
two), and numba's threads, spinning briefly between loops, join without a wake-up inside a
model: threads join past ``BYTES_PER_THREAD`` each. The direct forward conv streams a
large constant filter from the same packs (``strips``), and reads a smaller one whose rows
are a whole number of a micro-kernel call's channels, and more, from a pack of one block:
read as it lies, a call's slices of rows ``4 * O`` bytes apart fall in a fraction of the L1
cache's sets (a quarter of them for 64 channels at AVX2's calls of 16), while a strip fills
them all. A pack lives as long as its filter, which it references weakly; a filter that
may change is packed afresh for each conv (``pack``) and the pack is not kept.
"""

import threading
import weakref

import numpy as np

from graphops.kernels.compiled import loops, usable
from graphops.kernels.support.parallelism import intra_op_threads

MIN_ROWS = 2                   # one row: BLAS's GEMV already streams the filter as it lies
MAX_ROWS = 8                   # the most rows any host's micro-kernel call keeps
MIN_FILTER_BYTES = 1 << 20     # smaller filters stay in the cache between products
BLOCK_ROWS = 512               # filter rows a micro-kernel call takes (their x in L1)
BYTES_PER_THREAD = 1 << 20     # filter bytes a thread streams at least

_packs = {}                    # filter key -> packed strips
_lock = threading.Lock()


def product(rows, w2):
    """``rows @ w2`` for 2-D ``rows`` ``[M, K]`` and ``w2`` ``[K, N]``: on ``w2``'s packed
    strips where ``_packable`` and the host's micro-kernel rows take them, else by NumPy."""
    if not _packable(rows, w2):
        return rows @ w2
    parts = max(1, min(intra_op_threads(), w2.nbytes // BYTES_PER_THREAD))
    module = loops("direct", chunk=1, single=parts == 1)
    width = 2 * module.LANES
    if rows.shape[0] > module.ROWS or w2.shape[1] % width:
        return rows @ w2
    out = np.empty((rows.shape[0], w2.shape[1]), np.float32)
    module.strip_gemm(np.ascontiguousarray(rows.T), _packed(w2, width), out, width,
                      BLOCK_ROWS, parts)
    return out


def strips(w2, width, block_rows=None):
    """``w2`` ``[K, N]`` packed (``_packed``, in blocks of ``block_rows`` rows, by default
    ``BLOCK_ROWS``) where it is a float32 filter nobody can write with N a multiple of
    ``width``, else None."""
    if w2.shape[1] % width or not _constant_float32(w2):
        return None
    return _packed(w2, width, block_rows)


def one_block(w2, width):
    """``w2`` ``[K, N]`` packed as one block of strips of ``width`` columns (N a multiple of
    ``width``): a constant filter's pack, kept (``strips``), another's made afresh and not
    kept (``pack``), as it may change before the next call."""
    packed = strips(w2, width, block_rows=w2.shape[0])
    return pack(w2, width, w2.shape[0]) if packed is None else packed


def _constant_float32(w2):
    """Whether ``w2`` is a float32 array nobody can write and compiled loops are usable."""
    return (isinstance(w2, np.ndarray) and w2.dtype == np.float32 and _owner(w2) is not None
            and usable())


def _packable(rows, w2):
    """Whether ``product`` may pack ``w2``: float32 operands, ``MIN_ROWS`` to ``MAX_ROWS``
    rows, a filter of ``MIN_FILTER_BYTES`` or more that nobody can write, and compiled
    loops usable in this process."""
    return (isinstance(rows, np.ndarray) and rows.dtype == np.float32
            and _constant_float32(w2)
            and MIN_ROWS <= rows.shape[0] <= MAX_ROWS and w2.nbytes >= MIN_FILTER_BYTES)


def _owner(array):
    """The array owning ``array``'s memory when it and every array between are read-only
    (nothing in the process can write that memory through NumPy), else None."""
    while isinstance(array, np.ndarray):
        if array.flags.writeable:
            return None
        if array.base is None:
            return array
        array = array.base
    return None


def _packed(w2, width, block_rows=None):
    """``w2`` ``[K, N]`` packed (``pack``, blocks of ``block_rows`` rows, by default
    ``BLOCK_ROWS``) on its first use, and kept until its owner is collected."""
    block_rows = block_rows or BLOCK_ROWS
    key = (w2.__array_interface__["data"][0], w2.shape, w2.strides, width, block_rows)
    packed = _packs.get(key)
    if packed is None:
        packed = pack(w2, width, block_rows)
        packed.flags.writeable = False
        with _lock:
            if key not in _packs:
                weakref.finalize(_owner(w2), _packs.pop, key, None)
            _packs[key] = packed
    return packed


def pack(w2, width, block_rows):
    """``w2`` ``[K, N]`` as ``compiled.direct.strip_gemm`` reads it, a fresh flat array:
    blocks of ``block_rows`` rows, each as strips of ``width`` columns (N a multiple of
    ``width``)."""
    depth, columns = w2.shape
    packed = np.empty(w2.size, np.float32)
    for first in range(0, depth, block_rows):
        block = w2[first:first + block_rows]
        strips = packed[first * columns:(first + len(block)) * columns]
        strips.reshape(columns // width, len(block), width)[...] = (
            block.reshape(len(block), columns // width, width).transpose(1, 0, 2))
    return packed
