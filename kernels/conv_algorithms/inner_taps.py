"""Which direct forward convs skip the taps that read padding, and the layout their loops
(``compiled.inner_taps``) take.

A window of a padded conv reads the padding with the taps past the input's edge, and the
padded-window loops multiply those zeros like any other value. Along each spatial dim an
output position's taps inside the input are one range; positions with the same ranges in
every dim form a class, and a class sums its own (tap, channel) pairs: runs of
consecutive pairs, one per row of taps that the last dim's range cuts. Classes are worth
it where padding is a large share of the taps (a SAME 3x3 conv on 4x4 outputs: 31%, on
2x2: 56%) and each class has rows enough to fill a micro-kernel's accumulators: the
images of a batch add theirs together.
"""

import itertools
import math

import numpy as np

MIN_SAVED = 0.05       # the share of the padded windows' work the classes must save
MIN_CALL_ROWS = 0.5    # a call costs at least this share of a full call's rows


def layout(x_shape, filter_shape, strides, dilations, pads, out_sp, block, call_rows=None):
    """``(offsets, rows_x, rows_y, blocks, runs, run_starts)`` as ``compiled.inner_taps
    .forward`` takes them for a conv of these shapes (channels last), with blocks of up to
    ``block`` rows; None where a position reads no input, or (with ``call_rows``) where the
    classes would not save ``MIN_SAVED`` of the padded windows' work on calls of up to
    ``call_rows`` rows each."""
    kernel, c = filter_shape[:-2], filter_shape[-2]
    ranges = [_tap_ranges(size, k, s, d, before, q) for size, k, s, d, (before, _), q
              in zip(x_shape[1:-1], kernel, strides, dilations, pads, out_sp)]
    if any(first >= end for dim in ranges for first, end in dim) or not x_shape[0]:
        return None
    classes = _classes(ranges, kernel, c)
    if call_rows is not None:
        n, planes = x_shape[0], math.prod(out_sp[:-2])
        padded = n * planes * _calls_cost(math.prod(out_sp[-2:]), block, call_rows) * (
            math.prod(kernel) * c)
        cost = sum(_calls_cost(n * len(members), block, call_rows)
                   * sum(e - a for a, e in runs) for runs, members in classes)
        if cost > (1 - MIN_SAVED) * padded:
            return None
    return _arrays(x_shape, filter_shape, strides, dilations, pads, out_sp, classes, block)


def _tap_ranges(size, k, s, d, before, q):
    """For each of ``q`` output positions along a dim, the (first, end) of its taps that
    read the input: ``0 <= p*s - before + t*d < size``."""
    ranges = []
    for p in range(q):
        origin = p * s - before
        first = -(origin // d) if origin < 0 else 0
        end = min(k, (size - 1 - origin) // d + 1) if origin < size else 0
        ranges.append((min(first, k), max(min(first, k), end)))
    return ranges


def _classes(ranges, kernel, channels):
    """``[(runs, positions)]``: the classes of output positions with the same tap ranges in
    every dim (positions as index tuples, row-major), each with the runs (first, end) of
    (tap, channel) pairs its positions read, in the filter's row-major order."""
    groups = {}
    for position in itertools.product(*(range(len(dim)) for dim in ranges)):
        groups.setdefault(tuple(dim[p] for dim, p in zip(ranges, position)), []).append(
            position)
    return [(_pair_runs(key, kernel, channels), members) for key, members in groups.items()]


def _pair_runs(key, kernel, channels):
    """The runs of (tap, channel) pairs inside the tap ranges ``key`` (one per dim): a run
    per row of taps of the leading dims, merged where they meet."""
    runs = []
    (last_first, last_end), lead = key[-1], key[:-1]
    for taps in itertools.product(*(range(first, end) for first, end in lead)):
        row = 0
        for t, k in zip(taps, kernel[:-1]):
            row = row * k + t
        first, end = (row * kernel[-1] + last_first) * channels, (
            row * kernel[-1] + last_end) * channels
        if runs and runs[-1][1] == first:
            runs[-1] = (runs[-1][0], end)
        else:
            runs.append((first, end))
    return runs


def _calls_cost(rows, block, call_rows):
    """The cost of summing ``rows`` rows in blocks of up to ``block`` and calls of up to
    ``call_rows`` (each split evenly), in rows: a call costs at least ``MIN_CALL_ROWS`` of
    a full one (its filter loads)."""
    cost = 0.0
    blocks = -(-rows // block)
    for b in range(blocks):
        size = rows * (b + 1) // blocks - rows * b // blocks
        calls = -(-size // call_rows)
        cost += sum(max(size * (j + 1) // calls - size * j // calls,
                        MIN_CALL_ROWS * call_rows) for j in range(calls))
    return cost


def _arrays(x_shape, filter_shape, strides, dilations, pads, out_sp, classes, block):
    """The loops' arrays for ``classes``: the pair offsets from a window's origin in x, each
    row's window origin in x (negative where it starts in the padding) and its position in
    y, the blocks (first row, end row, class) and the classes' runs and where they start."""
    kernel, (c, o) = filter_shape[:-2], filter_shape[-2:]
    x_steps = [c * math.prod(x_shape[i + 2:-1]) for i in range(len(kernel))]
    taps = [sum(t * d * step for t, d, step in zip(tap, dilations, x_steps))
            for tap in itertools.product(*(range(k) for k in kernel))]
    offsets = (np.array(taps, np.int64)[:, None] + np.arange(c)).reshape(-1)
    image_x, image_y = c * math.prod(x_shape[1:-1]), math.prod(out_sp)
    rows_x, rows_y, blocks, runs, run_starts = [], [], [], [], [0]
    for kind, (class_runs, members) in enumerate(classes):
        origins = [sum((q * s - before) * step for q, s, (before, _), step
                       in zip(p, strides, pads, x_steps)) for p in members]
        places = [np.ravel_multi_index(p, out_sp) for p in members]
        first = len(rows_x)
        for n in range(x_shape[0]):
            rows_x += [n * image_x + origin for origin in origins]
            rows_y += [(n * image_y + place) * o for place in places]
        count = len(rows_x) - first
        pieces = -(-count // block)
        blocks += [(first + count * b // pieces, first + count * (b + 1) // pieces, kind)
                   for b in range(pieces)]
        runs += class_runs
        run_starts.append(len(runs))
    return (offsets, np.array(rows_x, np.int64), np.array(rows_y, np.int64),
            np.array(blocks, np.int64).reshape(-1, 3), np.array(runs, np.int64).reshape(-1, 2),
            np.array(run_starts, np.int64))
