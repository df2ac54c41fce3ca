"""bfloat16 convs on AMX tiles (``compiled.matrix_tiles``): the forward conv, the stride-1
input gradient as the forward conv of dy by the flipped filter (``layout.flipped_filter``),
and the stride-1 filter gradient (``backprop_filter``).

On a CPU with AMX-BF16 (Intel Xeon from Sapphire Rapids on) a tile product does 8,192
multiply-adds of bfloat16 values in one instruction, where the float32 micro-kernels do 16
a vector, and TF's oneDNN runs its bfloat16 convs on these units. On a CPU with AVX512-BF16
and no tiles (AMD Zen 4 on) the forward conv and the input gradient sum the same blocks on
vector dot products of bfloat16 pairs, 32 multiply-adds an instruction, as oneDNN does
there; the filter gradient stays on the float32 paths. The input is padded once,
its channels up to a multiple of 32 with zeros (a step's tile row holds 32 channels), and
read in place: the 16 rows of an input tile are 16 output positions' windows, a fixed
distance apart along a line of the output (a stride-1 conv's plane runs over its padded rows
whole, the padding's columns computed and dropped, where that computes fewer positions than
its rows one by one). The filter is packed into the pairs of
rows the tile product takes, its output channels padded to a multiple of 32 with zeros
(by a compiled loop, which reads the input gradient's flipped filter in place). A line of
outputs (a row, or a plane over its padded rows whole) sums only the taps that read the
input, not its padding, along its leading dims: the lines that sum the same taps share a
copy of those taps' packed steps, where that leaves out at least ``inner_taps.MIN_SAVED``
of the products (a SAME 3x3x3 conv over 16x32x32 outputs computes 6% fewer). The threads share the (32 positions, 32 output channels) blocks. Each sum is
float32, rounded to bfloat16 once as it is written, as TF's CPU kernels round theirs.
"""

import functools
import itertools
import math

import ml_dtypes
import numpy as np

from graphops.kernels.compiled import host_isa, loops, usable
from graphops.kernels.conv_algorithms.inner_taps import MIN_SAVED, tap_range
from graphops.kernels.conv_algorithms.layout import (channels_last_copy, channels_last_shape,
                                                     conv_output_size, flipped_filter,
                                                     flipped_pads, from_channels_last)
from graphops.kernels.support.kernel_util import aligned_empty

MIN_CHANNELS = 16       # input and output channels a conv needs at least (half a tile row)
_TILE = 16              # rows of a tile
_GROUP = 32             # channels of a tile row
_BLOCK = 32             # output positions and channels of a block


def applies(xp, dtype, kernel, in_channels, out_channels, pads):
    """Whether the forward conv of a ``dtype`` input by a ``kernel`` filter of
    ``in_channels`` -> ``out_channels`` runs on the tiles: NumPy with compiled loops on a
    host with AMX-BF16 (``host_isa.matrix_tiles``) or AVX512-BF16 (``bfloat16_dots``),
    bfloat16, 1-3 spatial dims, no negative padding, and at least ``MIN_CHANNELS`` channels
    each way (with fewer, the zeros padding a tile row would be most of its work)."""
    return (xp is np and np.dtype(dtype) == ml_dtypes.bfloat16 and 1 <= len(kernel) <= 3
            and min(in_channels, out_channels) >= MIN_CHANNELS
            and all(b >= 0 and a >= 0 for b, a in pads)
            and usable() and (host_isa.matrix_tiles() or host_isa.bfloat16_dots()))


def takes_input_gradient(xp, dtype, filter_shape, strides, dilations, pads):
    """Whether the input gradient of a conv by a ``filter_shape`` ``[*K, C, O]`` filter
    runs on the tiles: stride 1, as the forward conv of dy by the flipped filter, where
    that conv ``applies`` (its padding, ``(k-1)*d`` less the conv's, not negative)."""
    kernel, (c, o) = filter_shape[:-2], filter_shape[-2:]
    return (all(s == 1 for s in strides)
            and applies(xp, dtype, kernel, o, c, flipped_pads(kernel, dilations, pads)))


def takes_filter_gradient(xp, dtype, filter_shape, strides, pads):
    """Whether the filter gradient ``filter_shape`` ``[*K, C, O]`` of a conv runs on the
    tiles: stride 1 (its positions run contiguously along a transposed input's rows), where
    the forward conv ``applies`` on AMX tiles."""
    kernel, (c, o) = filter_shape[:-2], filter_shape[-2:]
    return (all(s == 1 for s in strides) and applies(xp, dtype, kernel, c, o, pads)
            and host_isa.matrix_tiles())


def conv_backprop_filter(x, dy, filter_shape, dilations, pads, channels_last):
    """``dense.conv_backprop_filter`` of a stride-1 conv where ``takes_filter_gradient``,
    on the tiles; None where x is not finite (a plane's padding columns multiply dy's
    zeros by x's values, and an infinity would give NaN where the sum has none)."""
    xc, dyc = channels_last_copy(x, channels_last), channels_last_copy(dy, channels_last)
    if not _finite(xc):
        return None
    return backprop_filter(xc, dyc, tuple(filter_shape), dilations, pads)


def conv_forward(x, w, strides, dilations, pads, channels_last):
    """``dense.conv_forward`` of bfloat16 ``x`` (channels-last or not) by ``w``, where it
    ``applies``, on the tiles."""
    xc = channels_last_copy(x, channels_last)
    out_sp = tuple(conv_output_size(s, k, st, d, b, a) for s, k, st, d, (b, a)
                   in zip(xc.shape[1:-1], w.shape[:-2], strides, dilations, pads))
    return from_channels_last(forward(xc, w, strides, dilations, pads, out_sp), channels_last)


def conv_backprop_input(dy, w, input_shape, dilations, pads, channels_last):
    """``dense.conv_backprop_input`` of a stride-1 conv where ``takes_input_gradient``:
    the forward conv of dy by the flipped filter, on the tiles."""
    dyc = channels_last_copy(dy, channels_last)
    in_shape = channels_last_shape(input_shape, channels_last)
    kernel = w.shape[:-2]
    dx = forward(dyc, flipped_filter(w, copy=False), (1,) * len(kernel), dilations,
                 flipped_pads(kernel, dilations, pads), tuple(in_shape[1:-1]))
    return from_channels_last(dx, channels_last)


def forward(xc, w, strides, dilations, pads, out_sp):
    """The forward conv of channels-last bfloat16 ``xc`` ``[N, *S, C]`` by ``w`` ``[*K, C,
    O]`` (any float dtype, rounded to bfloat16) with ``pads`` (before, after) per spatial
    dim: bfloat16 ``[N, *out_sp, O]``. Each output element sums its taps' products in
    float32 (the order of a tile product's sums is the unit's), rounded once."""
    tiles = host_isa.matrix_tiles()
    if not (tiles or host_isa.bfloat16_dots()):
        raise RuntimeError("bfloat16 products need AMX-BF16 tiles or AVX512-BF16")
    y = np.zeros((xc.shape[0], *out_sp, w.shape[-1]), ml_dtypes.bfloat16)
    if y.size == 0 or xc.size == 0 or w.size == 0:
        return y
    n, o = xc.shape[0], w.shape[-1]
    x3, kernel, strides, dilations, pads, out3, extents = _three_dims(
        xc, w.shape[:-2], strides, dilations, pads, out_sp)
    channels = -(-xc.shape[-1] // _GROUP) * _GROUP
    rows = _by_rows(out3, extents, strides)
    runs, x_step = _runs(n, out3, extents, strides, channels, rows)
    tap_classes, line_class = _tap_classes(x3.shape[1:-1], kernel, strides, dilations,
                                            tuple(pads), out3, rows)
    steps, packed, table = _class_operands(
        _steps(kernel, dilations, extents, channels), _packed(w, kernel, channels),
        channels // _GROUP, -(-o // _BLOCK), tap_classes)
    padded = _padded(x3, extents, [b for b, _ in pads], channels,
                     tail=(_BLOCK + 1) * x_step + channels)
    operands = (padded, steps, packed, y.reshape(-1).view(np.uint16),
                np.hstack([runs, table[np.tile(line_class, n)]]), _items(runs[:, 2]), x_step, o)
    compiled = loops("matrix_tiles", chunk=1)
    if tiles:
        compiled.forward(*operands, _configuration())
    else:
        compiled.dot_forward(*operands)
    return y


def backprop_filter(xc, dyc, filter_shape, dilations, pads):
    """The filter gradient ``filter_shape`` ``[*K, C, O]`` of a stride-1 conv of finite
    channels-last bfloat16 ``xc`` with dy ``dyc``: bfloat16, each element's float32 sum
    rounded once. The padded input is transposed so that each channel's plane of positions
    is a row, and dy packed in pairs of positions over each output plane's padded rows
    whole, zero at the padding's columns: a tile product then sums 32 positions of 16
    channels by 16 output channels."""
    _require_tiles()
    if 0 in xc.shape or 0 in dyc.shape or 0 in filter_shape:
        return np.zeros(filter_shape, ml_dtypes.bfloat16)
    n, c, o = xc.shape[0], filter_shape[-2], filter_shape[-1]
    ones = (1,) * len(filter_shape[:-2])
    x3, kernel, _, dilations, pads, out3, extents = _three_dims(
        xc, filter_shape[:-2], ones, dilations, pads, dyc.shape[1:-1])
    channels, outs = -(-c // _GROUP) * _GROUP, -(-o // _BLOCK) * _BLOCK
    p1, p2, p3 = extents
    length = (out3[1] - 1) * p3 + out3[2]            # a plane's positions, padded rows whole
    chunks = -(-length // _BLOCK)
    reach = (kernel[1] - 1) * dilations[1] * p3 + (kernel[2] - 1) * dilations[2]
    row = -(-max(p2 * p3, chunks * _BLOCK + reach) // _BLOCK) * _BLOCK
    xt = _transposed_input(x3, extents, [b for b, _ in pads], channels, row)
    dyp = _position_pairs(dyc.reshape(n * out3[0], *out3[1:], o), p3, chunks, outs)
    taps = np.array([(k1 * dilations[0], (k2 * dilations[1] * p3 + k3 * dilations[2]))
                     for k1, k2, k3 in itertools.product(*(range(k) for k in kernel))],
                    np.int64)
    planes = (np.arange(n)[:, None] * p1 + np.arange(out3[0])).reshape(-1).astype(np.int64)
    dw = np.empty(len(taps) * channels * outs, np.float32)
    loops("matrix_tiles", chunk=1).filter_grad(
        xt, dyp, dw, taps, planes, row, chunks * _BLOCK * outs, chunks, channels // _BLOCK,
        outs // _BLOCK, _configuration())
    dw = dw.reshape(len(taps), channels, outs)[:, :c, :o]
    return dw.astype(ml_dtypes.bfloat16).reshape(filter_shape)


def _require_tiles():
    """Raises unless this process may run tile instructions (one would kill it)."""
    if not host_isa.matrix_tiles():
        raise RuntimeError("bfloat16 tile products need AMX-BF16 and the tile state")


def _three_dims(xc, kernel, strides, dilations, pads, out_sp):
    """``(x3, kernel, strides, dilations, pads, out_sp, extents)`` with 3 spatial dims
    (leading 1s; x3 a view of ``xc``), ``extents`` the padded input's: every window of
    ``out_sp`` inside it."""
    lead = 3 - len(out_sp)
    kernel, strides = (1,) * lead + tuple(kernel), (1,) * lead + tuple(strides)
    dilations = (1,) * lead + tuple(dilations)
    pads = [(0, 0)] * lead + [tuple(p) for p in pads]
    out3 = (1,) * lead + tuple(out_sp)
    x3 = xc.reshape(xc.shape[0], *((1,) * lead + xc.shape[1:-1]), xc.shape[-1])
    extents = [max(s + b + a, (q - 1) * st + (k - 1) * d + 1) for s, (b, a), q, st, k, d
               in zip(x3.shape[1:-1], pads, out3, strides, kernel, dilations)]
    return x3, kernel, strides, dilations, pads, out3, extents


def _finite(x):
    """Whether bfloat16 ``x`` holds no infinity or NaN (its exponent bits not all set)."""
    return not np.any(np.ascontiguousarray(x).view(np.uint16) & 0x7F80 == 0x7F80)


def _transposed_input(x3, extents, before, channels, row):
    """``x3`` zero-padded to ``extents`` and transposed to ``[N, P1, channels, row]``
    (bfloat16 bits, flat): each channel's padded plane a row, zeros after it and in the
    channels past x's (``compiled.matrix_tiles.transposed_planes``)."""
    xt = aligned_empty((x3.shape[0], extents[0], channels, row), np.uint16)   # rows on lines
    loops("matrix_tiles", chunk=1).transposed_planes(
        np.ascontiguousarray(x3).view(np.uint16), np.array([*before, *extents[1:]], np.int64),
        xt)
    return xt.reshape(-1)


def _position_pairs(dy4, width, chunks, outs):
    """dy ``[planes, Q2, Q3, O]`` laid along each plane's padded rows (position ``q2 *
    width + q3``) in pairs of positions, ``[planes, chunks * 16, outs, 2]`` (bfloat16
    bits, flat), zero at the padding's columns, past the last position and past O."""
    pairs = aligned_empty((dy4.shape[0], chunks * _TILE, outs, 2), np.uint16)
    loops("matrix_tiles", chunk=1).position_pairs(
        np.ascontiguousarray(dy4).view(np.uint16), width, pairs)
    return pairs.reshape(-1)


def _padded(x3, extents, before, channels, tail):
    """``x3`` ``[N, S1, S2, S3, C]`` zero-padded to ``[N, *extents, channels]`` (``before``
    each spatial dim, the rest after), as bfloat16 bits, flat, with ``tail`` zeros after it
    (where a run's last block reads past its end)."""
    n, c = x3.shape[0], x3.shape[-1]
    size = n * math.prod(extents) * channels
    flat = aligned_empty((size + tail,), np.uint16)     # tile rows on cache lines
    flat[size:] = 0
    body = flat[:size].reshape(n, *extents, channels)
    bits = np.ascontiguousarray(x3).view(np.uint16)
    if c == channels:           # every row written once, on the pool's threads
        loops("conv", chunk=1).pad(bits, body, np.array(before, np.int64))
    else:
        body[...] = 0
        body[:, before[0]:before[0] + x3.shape[1], before[1]:before[1] + x3.shape[2],
             before[2]:before[2] + x3.shape[3], :c] = bits
    return flat


def _by_rows(out3, extents, strides):
    """Whether the blocks run along each output row, not along each output plane over its
    padded rows whole: the planes need stride 1 in the last two dims, and are taken where
    they leave fewer positions to compute than blocks of whole rows (rows shorter than a
    block, or of part blocks)."""
    _, q2n, q3n = out3
    by_rows = q2n * -(-q3n // _BLOCK)
    return not (strides[1] == strides[2] == 1
                and -(-((q2n - 1) * extents[2] + q3n) // _BLOCK) < by_rows)


def _runs(n, out3, extents, strides, channels, rows):
    """``(runs, x_step)``: the lines of output positions the blocks run along (each output
    row where ``rows``, else each output plane over its padded rows whole), as
    ``compiled.matrix_tiles.forward`` takes their first five fields, and the distance
    between neighbours in the padded input."""
    q1n, q2n, q3n = out3
    p1, p2, p3 = extents
    if not rows:
        image, q1 = np.divmod(np.arange(n * q1n), q1n)
        origins = (image * p1 + q1 * strides[0]) * p2 * p3 * channels
        lines = np.stack([origins, np.arange(n * q1n) * q2n * q3n,
                          np.full(n * q1n, (q2n - 1) * p3 + q3n), np.full(n * q1n, p3),
                          np.full(n * q1n, q3n)], axis=1)
        return lines.astype(np.int64), channels
    plane, q2 = np.divmod(np.arange(n * q1n * q2n), q2n)
    image, q1 = np.divmod(plane, q1n)
    origins = ((image * p1 + q1 * strides[0]) * p2 + q2 * strides[1]) * p3 * channels
    size = np.full(n * q1n * q2n, q3n)
    lines = np.stack([origins, np.arange(n * q1n * q2n) * q3n, size, size, size], axis=1)
    return lines.astype(np.int64), strides[2] * channels


def _items(lengths):
    """(run, first position) of each block of ``_BLOCK`` positions along runs of
    ``lengths``."""
    counts = -(-lengths // _BLOCK)
    runs = np.repeat(np.arange(len(lengths)), counts)
    starts = np.repeat(np.cumsum(counts) - counts, counts)
    return np.stack([runs, (np.arange(len(runs)) - starts) * _BLOCK], axis=1).astype(np.int64)


@functools.lru_cache(maxsize=256)
def _tap_classes(sizes, kernel, strides, dilations, pads, out3, rows):
    """``(classes, line_class)``: each line of an image's output (``_runs``) sums only the
    taps that read the input, not its padding, along the first spatial dim, and the second
    where the lines are rows. ``classes``: the taps of each class of lines that sum the
    same ones, as indices in the filter's row-major order of taps; ``line_class``: each
    line's class. One class of every tap where the classes would leave out less than
    ``inner_taps.MIN_SAVED`` of the products (each class costs a copy of its part of the
    packed filter). Kept per geometry, read-only."""
    index = np.arange(math.prod(kernel)).reshape(kernel[0], kernel[1], -1)
    first_dim = np.array([tap_range(sizes[0], kernel[0], strides[0], dilations[0],
                                    pads[0][0], q) for q in range(out3[0])], np.int64)
    second_dim = np.array([tap_range(sizes[1], kernel[1], strides[1], dilations[1],
                                     pads[1][0], q) for q in range(out3[1])] if rows
                          else [(0, kernel[1])], np.int64)
    keys = np.hstack([np.repeat(first_dim, len(second_dim), axis=0),
                      np.tile(second_dim, (len(first_dim), 1))])
    codes = keys @ (max(kernel) + 1) ** np.arange(4, dtype=np.int64)   # a number for each
    _, first, line_class = np.unique(codes, return_index=True, return_inverse=True)
    line_class = line_class.reshape(-1).astype(np.int64)
    taps = [index[a1:e1, a2:e2].reshape(-1) for a1, e1, a2, e2 in keys[first]]
    summed = np.array([len(t) for t in taps])[line_class].sum()
    if summed > (1 - MIN_SAVED) * index.size * len(line_class):
        taps, line_class = [index.reshape(-1)], np.zeros_like(line_class)
    for array in (*taps, line_class):
        array.setflags(write=False)
    return tuple(taps), line_class


def _class_operands(offsets, packed, groups, blocks, tap_classes):
    """``(steps, packed, table)`` for ``tap_classes`` (each class's taps): every class's
    steps' offsets (``offsets``: all steps', ``groups`` a tap) one after another, the
    filter packed for each class (``packed``: for all steps, ``blocks`` blocks of output
    channels) one after another, and each class's (first step, step count, filter start).
    A single class of every tap takes the operands as they are."""
    if len(tap_classes) == 1 and len(tap_classes[0]) * groups == len(offsets):
        return offsets, packed, np.array([[0, len(offsets), 0]], np.int64)
    picked = [(taps[:, None] * groups + np.arange(groups)).reshape(-1) for taps in tap_classes]
    per_step = packed.size // (blocks * len(offsets))
    whole = packed.reshape(blocks, len(offsets), per_step)
    counts = np.array([len(p) for p in picked], np.int64)
    starts = np.cumsum(counts) - counts
    chosen = aligned_empty((blocks * counts.sum() * per_step,), np.uint16)   # lines aligned
    for steps, start in zip(picked, starts):
        chosen[blocks * start * per_step:blocks * (start + len(steps)) * per_step] = \
            whole[:, steps].reshape(-1)
    return (np.concatenate([offsets[p] for p in picked]), chosen,
            np.stack([starts, counts, blocks * starts * per_step], axis=1))


def _steps(kernel, dilations, extents, channels):
    """Each (tap, channel group)'s offset from a window's origin in the padded input, in the
    order of the packed filter's steps."""
    _, p2, p3 = extents
    return np.array([((k1 * dilations[0] * p2 + k2 * dilations[1]) * p3 + k3 * dilations[2])
                     * channels + group
                     for k1, k2, k3 in itertools.product(*(range(k) for k in kernel))
                     for group in range(0, channels, _GROUP)], np.int64)


def _packed(w, kernel, channels):
    """The filter ``w`` ``[*K, C, O]`` (any strides) as the tile products read it
    (bfloat16 bits, flat; ``compiled.matrix_tiles.pack_filter``): for each block of 32
    output channels, for each (tap, group of 32 input channels) step, two tiles of 16
    output channels, each 16 rows of channel pairs: ``[pair, output channel, 2]``."""
    taps, c, o = math.prod(kernel), w.shape[-2], w.shape[-1]
    w3 = np.asarray(w).reshape(taps, c, o)
    if w3.dtype != ml_dtypes.bfloat16:
        w3 = w3.astype(ml_dtypes.bfloat16)
    blocks, groups = -(-o // _BLOCK), channels // _GROUP
    packed = aligned_empty((blocks, taps, groups, 2, _TILE, _TILE, 2), np.uint16)  # lines
    loops("matrix_tiles", chunk=1).pack_filter(w3.view(np.uint16), packed)
    return packed.reshape(-1)


@functools.lru_cache(maxsize=None)
def _configuration():
    """The tile configuration (``compiled.matrix_tiles.configuration``), made once."""
    return loops("matrix_tiles", chunk=1).configuration()
