"""Arrays placed at a chosen offset within a cache line, for the compiled loops' alignment
paths."""

import numpy as np


def at_line_offset(a, offset):
    """A copy of ``a`` starting ``offset`` elements past a 64-byte cache line."""
    line = np.empty(a.size + 64 // a.itemsize, a.dtype)
    shift = (-line.ctypes.data // a.itemsize + offset) % (64 // a.itemsize)
    placed = line[shift:shift + a.size].reshape(a.shape)
    placed[...] = a
    assert placed.ctypes.data % 64 == offset * a.itemsize or not a.size
    return placed
