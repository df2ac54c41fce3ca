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

from graphops.kernels.conv_algorithms.layout import tap_offsets

MIN_SAVED = 0.05       # the share of the padded windows' work the classes must save
MIN_CALL_ROWS = 0.5    # a call costs at least this share of a full call's rows
CALL_PAIRS = 8         # ... and as many pairs more (its accumulators loaded and stored)


def layout(x_shape, filter_shape, strides, dilations, pads, out_sp, block, call_rows=None,
           whole=False):
    """``(offsets, rows_x, rows_y, blocks, runs, run_starts)``, as
    ``compiled.inner_taps.forward`` takes them, for a conv of these shapes (channels last)
    with blocks of up to ``block`` rows. None where there are no outputs or a position
    reads no input, where no window reads padding (with ``whole``: one class of all taps
    then, whatever the cost below says, as it sees no cost in a plane's block of fewer rows
    than a call holds), or (with ``call_rows``, the micro-kernels' rows a call; four-vector
    calls are costed alike) where the classes would not save ``MIN_SAVED`` of the padded
    windows' work."""
    kernel, c = filter_shape[:-2], filter_shape[-2]
    dims = [_range_groups(size, k, s, d, before, q) for size, k, s, d, (before, _), q
            in zip(x_shape[1:-1], kernel, strides, dilations, pads, out_sp)]
    if not x_shape[0] or not all(dims) or any(first >= end for dim in dims
                                                for (first, end), _ in dim):
        return None
    padding_free = all(len(dim) == 1 and dim[0][0] == (0, k) for dim, k in zip(dims, kernel))
    if padding_free and not whole:
        return None
    classes = [(_pair_runs([key for key, _ in group], kernel, c),
                [members for _, members in group]) for group in itertools.product(*dims)]
    if call_rows is not None and not padding_free:
        n, planes = x_shape[0], math.prod(out_sp[:-2])
        padded = n * planes * _calls_cost(math.prod(out_sp[-2:]), block, call_rows, [(0, 0)],
                                          math.prod(kernel) * c)
        cost = sum(_calls_cost(n * math.prod(map(len, members)), block, call_rows, runs)
                   for runs, members in classes)
        if cost > (1 - MIN_SAVED) * padded:
            return None
    return _arrays(x_shape, filter_shape, strides, dilations, pads, out_sp, classes, block)


def tap_range(size, k, s, d, before, p):
    """The (first, end) of the ``k`` taps of output position ``p`` along a dim of ``size``
    input positions that read the input, not its padding (``0 <= p*s - before + t*d <
    size``); first == end where none does."""
    origin = p * s - before
    first = min(k, -(origin // d) if origin < 0 else 0)
    end = min(k, (size - 1 - origin) // d + 1) if origin < size else 0
    return first, max(first, end)


def _range_groups(size, k, s, d, before, q):
    """The ``q`` output positions along a dim grouped by the (first, end) of their taps
    that read the input (``tap_range``): [(range, positions)]."""
    groups = {}
    for p in range(q):
        groups.setdefault(tap_range(size, k, s, d, before, p), []).append(p)
    return [(key, np.array(members, np.int64)) for key, members in groups.items()]


def _pair_runs(key, kernel, channels):
    """The runs (first, end) of (tap, channel) pairs inside the tap ranges ``key`` (one
    per dim), in the filter's row-major order: a run per row of taps of the leading dims,
    merged where they meet."""
    runs = []
    (last_first, last_end), lead = key[-1], key[:-1]
    for taps in itertools.product(*(range(first, end) for first, end in lead)):
        row = 0
        for t, k in zip(taps, kernel[:-1]):
            row = row * k + t
        first = (row * kernel[-1] + last_first) * channels
        end = (row * kernel[-1] + last_end) * channels
        if runs and runs[-1][1] == first:
            runs[-1] = (runs[-1][0], end)
        else:
            runs.append((first, end))
    return runs


def _calls_cost(rows, block, call_rows, runs, extra_pairs=0):
    """The cost, in (row, pair) steps, of summing ``rows`` rows over ``runs`` of pairs (and
    ``extra_pairs`` more in one run) in blocks of up to ``block`` rows and calls of up to
    ``call_rows`` rows (each split evenly), a call a run: a call costs at least
    ``MIN_CALL_ROWS`` of a full one's rows (its filter loads) over ``CALL_PAIRS`` pairs
    more than its run."""
    call_cost = sum(count * sum(count_rows * max(size, MIN_CALL_ROWS * call_rows)
                                for count_rows, size in _even_pieces(rows_block, call_rows))
                    for count, rows_block in _even_pieces(rows, block))
    return call_cost * sum(e - a + extra_pairs + CALL_PAIRS for a, e in runs)


def _even_pieces(total, most):
    """``total`` split evenly into the fewest pieces of at most ``most``: [(count, size)],
    the two sizes that occur."""
    pieces = -(-total // most)
    small, larger = divmod(total, pieces) if pieces else (0, 0)
    return [(pieces - larger, small), (larger, small + 1)]


def _arrays(x_shape, filter_shape, strides, dilations, pads, out_sp, classes, block):
    """The loops' arrays for ``classes``: the pair offsets from a window's origin in x, each
    row's window origin in x (negative where it starts in the padding) and its position in
    y, the blocks (first row, end row, class) and the classes' runs and where they start.
    A class's rows are its positions in row-major order, image by image."""
    kernel, (c, o) = filter_shape[:-2], filter_shape[-2:]
    x_steps = [c * math.prod(x_shape[i + 2:-1]) for i in range(len(kernel))]
    offsets = tap_offsets(kernel, dilations, x_steps, c)
    images = np.arange(x_shape[0], dtype=np.int64)[:, None]
    rows_x, rows_y, blocks, runs, run_starts = [], [], [], [], [0]
    count = 0
    for group, (class_runs, members) in enumerate(classes):
        origins = _outer_sum([(p * s - before) * step for p, s, (before, _), step
                              in zip(members, strides, pads, x_steps)])
        places = _outer_sum([p * math.prod(out_sp[i + 1:]) for i, p in enumerate(members)])
        rows_x.append((images * (c * math.prod(x_shape[1:-1])) + origins).reshape(-1))
        rows_y.append(((images * math.prod(out_sp) + places) * o).reshape(-1))
        size = rows_x[-1].size
        pieces = -(-size // block)
        blocks += [(count + size * b // pieces, count + size * (b + 1) // pieces, group)
                   for b in range(pieces)]
        count += size
        runs += class_runs
        run_starts.append(len(runs))
    return (offsets, np.concatenate(rows_x), np.concatenate(rows_y),
            np.array(blocks, np.int64).reshape(-1, 3), np.array(runs, np.int64).reshape(-1, 2),
            np.array(run_starts, np.int64))


def _outer_sum(vectors):
    """Every sum of one element of each vector, row-major over them, flat."""
    total = np.zeros(1, np.int64)
    for vector in vectors:
        total = (total[:, None] + vector[None, :]).reshape(-1)
    return total
