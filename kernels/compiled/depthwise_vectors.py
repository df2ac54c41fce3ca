"""Depthwise convs on explicit vector kernels (numba, inner loops written in LLVM IR): the
forward conv and both gradients for float32, bfloat16 or float16 channels-last operands
with multiplier 1. 16-bit operands come as their bits (bfloat16's as uint16, float16's as
int16: ``ir.half_kind``): the kernels widen them to float32 as they load, sum in float32
and round each output once as they store it (``ir.VectorAccess``), so the ops move half
the bytes of float32 ones; the filter stays float32. A 16-bit sum takes one call (at most
``TAPS`` taps; its caller sends the rest to the row-cache loops), so no rounded output is
ever added to.

A depthwise conv multiplies channel by channel: its work is vectors of channels times
vectors of channels, with no sum across channels. Two kernels, each one loop over the
positions of an output row that reads its operands in place (no row copies: the CPU's
prefetchers stream the rows in, and a tap row's loads are cache hits for the next rows):

* ``_weighted``: ``out[k] = sum over taps t of src[start_t + k*src_step] * w_t`` for the
  positions k of a row, the taps' filter vectors held in registers. The forward conv (src
  x, a start per tap) and the input gradient (src dy; per column phase of dx, the taps
  that reach it) are both this sum.
* ``_products``: ``acc_t += sum over k of x[start_t + k*x_step] * dy[k]``, a register
  accumulator per tap: the filter gradient, each of dy's vectors loaded once for all taps.

A call takes up to ``TAPS`` taps (a switch on the count picks a loop with that many
registers) and channels two vectors of ``LANES`` at a time, then one, then a masked one for
the last few. bfloat16's two vectors load as their even and odd channels
(``ir.VectorAccess.load_pairs``: a shift or a mask a vector, where widening 16 values in
order moves them across the register's lanes), each summed as in the plain loop, and store
back in order. The positions of a row whose taps all fall inside the source go in one call;
the few at its edges one by one with the taps that reach them, so padding is never read
(nor multiplied: NaN/Inf reach only the outputs their taps reach). Output rows of whole
cache lines are written with non-temporal stores, which skip reading the lines first.

Operands need not start on cache lines (NumPy aligns large buffers to 16 bytes only, and
vectors that straddle two lines load at half speed). With stride 1 along W and whole
vectors of channels, a row's interior is read as one stream of vectors from the source's
first vector boundary on (a line for float32, half a line for 16-bit floats' shorter
vectors): a vector's lanes are channels ``rotation`` to ``rotation + LANES`` (mod C)
of one position or two neighbours, the filter's tap rows repeat their first LANES values to
match (``_wrapped``), and the filter gradient's sums that a vector carries past a
position's end fold back when a block is flushed. The forward conv and the input gradient
allocate their output at the source's offset within a line when ``line_rotation`` is nonzero
(the caller), so its stores take whole lines too.

Output rows are shared among the threads in contiguous blocks (threads take one at a
time). Each output element is summed in a fixed order (taps row-major, TAPS at a time; the
filter gradient by rows within a block in float32, flushed to float64 every FLUSH_ROWS
rows, then blocks in order), so results depend only on the block count (and the filter
gradient's also on x's offset within a cache line, which decides where a row's stream of
vectors starts).
"""

import numpy as np
from numba import njit, prange
from numba.extending import intrinsic

from graphops.kernels.compiled import ir as loops_ir
from graphops.kernels.compiled.constants import CACHE_LINE_BYTES, DEPTHWISE_TAPS, LANES
from graphops.kernels.compiled.ir import VectorAccess, fence, half_kind

TAPS = DEPTHWISE_TAPS   # taps a kernel call holds in registers
FLUSH_ROWS = 64   # filter gradient: rows summed in float32 between float64 flushes

_INT = loops_ir.INT
_INT32 = loops_ir.INT32
_VECTOR = loops_ir.VECTOR
_ZERO = loops_ir.ZERO


def _tap_start(builder, array, first, t, channel):
    """``array[first + t] + channel``: where tap t of a call starts."""
    return builder.add(builder.load(builder.gep(array, [builder.add(first, _INT(t))])), channel)


def _weighted_kernel(vectors, masked=False, stream=False):
    """The intrinsic ``(taps, first, src, src_starts, src_step, w, w_starts, out, out_start,
    out_step, count, add, channel, left)`` over flat arrays: for k < count and
    ``vectors`` vectors of lanes l from ``channel`` on (the first ``left`` with ``masked``),
    ``out[out_start + k*out_step + channel + l] = (out's value if add else 0) + sum over
    t < taps of src[src_starts[first + t] + k*src_step + channel + l] *
    w[w_starts[first + t] + channel + l]``, the even and the odd taps summed apart (two
    dependent chains of multiply-adds, not one), then added; ``stream``: by non-temporal
    stores, never adding. src and out may hold 16-bit float bits (w float32): an out of
    them is never added to."""

    @intrinsic
    def kernel(typingctx, taps, first, src, src_starts, src_step, w, w_starts, out,
               out_start, out_step, count, add, channel, left):
        def codegen(context, builder, signature, args):
            (_, first, src, src_starts, src_step, w, w_starts, out, out_start, out_step,
             count, add, channel, left) = loops_ir.arguments(context, builder, signature, args)
            half = half_kind(signature.args[2])     # src and out alike
            source = VectorAccess(builder, masked, False, left, half)
            target = VectorAccess(builder, masked, stream, left, half)
            filter_access = VectorAccess(builder, masked, False, left)
            fma = loops_ir.fma(builder, _VECTOR)
            adding = builder.icmp_signed("!=", add, _INT(0))
            out_first = builder.add(out_start, channel)

            def emit(taps):
                starts = [_tap_start(builder, src_starts, first, t, channel)
                          for t in range(taps)]
                weights = [[filter_access.load(w, builder.add(
                    _tap_start(builder, w_starts, first, t, channel), _INT(v * LANES)))
                    for v in range(vectors)] for t in range(taps)]
                if vectors == 2 and not masked and source.half == "bfloat16":
                    _weighted_pairs(builder, fma, source, target, src, starts, src_step,
                                    weights, out, out_first, out_step, count)
                    return

                def body(k, held):
                    src_at = builder.mul(k, src_step)
                    out_at = builder.add(out_first, builder.mul(k, out_step))
                    for v in range(vectors):
                        at = builder.add(out_at, _INT(v * LANES))
                        totals = [target.load(out, at) if held else _ZERO, _ZERO]
                        for t, start in enumerate(starts):
                            value = source.load(src, builder.add(builder.add(start, src_at),
                                                                 _INT(v * LANES)))
                            totals[t % 2] = builder.call(fma, [value, weights[t][v],
                                                               totals[t % 2]])
                        target.store(builder.fadd(totals[0], totals[1]), out, at)
                    return []

                # streamed stores and 16-bit outputs (rounded once: their sums take one
                # call) take a whole sum, never added to
                if stream or target.half:
                    loops_ir.counted_loop(builder, count, [], lambda k, _: body(k, False))
                    return
                with builder.if_else(adding) as (then, otherwise):
                    with then:
                        loops_ir.counted_loop(builder, count, [], lambda k, _: body(k, True))
                    with otherwise:
                        loops_ir.counted_loop(builder, count, [], lambda k, _: body(k, False))

            loops_ir.switch(builder, args[0], range(TAPS + 1), emit)
            return context.get_dummy_value()

        if src.dtype != out.dtype:
            return None
        return loops_ir.typed((taps, first, src, src_starts, src_step, w, w_starts, out,
                               out_start, out_step, count, add, channel, left), (5,),
                              (3, 6), codegen, halves=(2, 7))

    return kernel


def _weighted_pairs(builder, fma, source, target, src, starts, src_step, weights, out,
                    out_first, out_step, count):
    """``_weighted_kernel``'s loop over two vectors of bfloat16 channels: each tap's
    2*LANES values loaded at once as their even and odd channels (``load_pairs``), the
    filter's taps deinterleaved to match, each channel summed as the plain loop sums it (the
    same values, multiply-adds and order, in other lanes), stored back in order."""
    weights = [loops_ir.deinterleaved(builder, *tap) for tap in weights]

    def body(k, _):
        src_at = builder.mul(k, src_step)
        totals = [[_ZERO, _ZERO], [_ZERO, _ZERO]]          # [even/odd channels][tap parity]
        for t, start in enumerate(starts):
            values = source.load_pairs(src, builder.add(start, src_at))
            for p in range(2):
                totals[p][t % 2] = builder.call(fma, [values[p], weights[t][p],
                                                      totals[p][t % 2]])
        target.store_pairs(*(builder.fadd(*sums) for sums in totals), out,
                           builder.add(out_first, builder.mul(k, out_step)))
        return []

    loops_ir.counted_loop(builder, count, [], body)


def _products_kernel(vectors, masked=False):
    """The intrinsic ``(taps, first, x, x_starts, x_step, dy, dy_start, dy_step, count, out,
    out_starts, channel, left)`` over flat arrays: for t < taps and ``vectors``
    vectors of lanes l from ``channel`` on (the first ``left`` with ``masked``),
    ``out[out_starts[first + t] + channel + l] += sum over k < count of
    x[x_starts[first + t] + k*x_step + channel + l] * dy[dy_start + k*dy_step + channel + l]``;
    x and dy may both hold 16-bit float bits."""

    @intrinsic
    def kernel(typingctx, taps, first, x, x_starts, x_step, dy, dy_start, dy_step, count, out,
               out_starts, channel, left):
        def codegen(context, builder, signature, args):
            (_, first, x, x_starts, x_step, dy, dy_start, dy_step, count, out, out_starts,
             channel, left) = loops_ir.arguments(context, builder, signature, args)
            half = half_kind(signature.args[2])     # x and dy alike
            source = VectorAccess(builder, masked, False, left, half)
            access = VectorAccess(builder, masked, False, left)
            fma = loops_ir.fma(builder, _VECTOR)
            dy_first = builder.add(dy_start, channel)

            def emit(taps):
                starts = [_tap_start(builder, x_starts, first, t, channel) for t in range(taps)]

                def body(k, sums):
                    dy_at = builder.add(dy_first, builder.mul(k, dy_step))
                    d = [source.load(dy, builder.add(dy_at, _INT(v * LANES)))
                         for v in range(vectors)]
                    x_at = builder.mul(k, x_step)
                    return [builder.call(fma, [source.load(x, builder.add(
                        builder.add(start, x_at), _INT(v * LANES))), d[v], sums[t * vectors + v]])
                        for t, start in enumerate(starts) for v in range(vectors)]

                sums = loops_ir.counted_loop(builder, count, [_ZERO] * (taps * vectors), body)
                for t in range(taps):
                    base = _tap_start(builder, out_starts, first, t, channel)
                    for v in range(vectors):
                        at = builder.add(base, _INT(v * LANES))
                        access.store(builder.fadd(access.load(out, at), sums[t * vectors + v]),
                                     out, at)

            loops_ir.switch(builder, args[0], range(TAPS + 1), emit)
            return context.get_dummy_value()

        if x.dtype != dy.dtype:
            return None
        return loops_ir.typed((taps, first, x, x_starts, x_step, dy, dy_start, dy_step, count,
                               out, out_starts, channel, left), (9,), (3, 10), codegen,
                              halves=(2, 5))

    return kernel


_weighted_two, _weighted_one, _weighted_part = (_weighted_kernel(2), _weighted_kernel(1),
                                                _weighted_kernel(1, masked=True))
_streamed_two, _streamed_one = _weighted_kernel(2, stream=True), _weighted_kernel(1, stream=True)
_products_two, _products_one, _products_part = (_products_kernel(2), _products_kernel(1),
                                                _products_kernel(1, masked=True))


@njit(cache=True, nogil=True)
def _weighted(taps, src, src_starts, src_step, w, w_starts, out, out_start, out_step, count,
              column, stop, stream):
    """The channels from ``column`` to ``stop`` of out's ``count`` positions from
    ``out_start`` (``out_step`` apart) = the sum over the ``taps`` taps of src * w
    (``_weighted_kernel``), TAPS taps a call; zeros when there are no taps. ``stream``:
    stores may be non-temporal (the channels start on cache lines, whole lines written)."""
    first = 0
    while True:
        size = min(TAPS, taps - first)
        streamed = stream and size == taps
        at = column
        while at < stop:
            left = stop - at
            if left >= 2 * LANES:
                if streamed:
                    _streamed_two(size, first, src, src_starts, src_step, w, w_starts, out,
                                  out_start, out_step, count, 0, at, 0)
                else:
                    _weighted_two(size, first, src, src_starts, src_step, w, w_starts, out,
                                  out_start, out_step, count, first, at, 0)
                at += 2 * LANES
            elif left >= LANES:
                if streamed:
                    _streamed_one(size, first, src, src_starts, src_step, w, w_starts, out,
                                  out_start, out_step, count, 0, at, 0)
                else:
                    _weighted_one(size, first, src, src_starts, src_step, w, w_starts, out,
                                  out_start, out_step, count, first, at, 0)
                at += LANES
            else:
                _weighted_part(size, first, src, src_starts, src_step, w, w_starts, out,
                               out_start, out_step, count, first, at, left)
                at += LANES
        first += size
        if first >= taps:
            return


@njit(cache=True, nogil=True)
def _products(taps, x, x_starts, x_step, dy, dy_start, dy_step, count, out, out_starts,
              column, stop):
    """out's tap rows += the sums of x * dy over ``count`` positions (``_products_kernel``)
    for the channels from ``column`` to ``stop``, TAPS taps a call."""
    for first in range(0, taps, TAPS):
        size = min(TAPS, taps - first)
        at = column
        while at < stop:
            left = stop - at
            if left >= 2 * LANES:
                _products_two(size, first, x, x_starts, x_step, dy, dy_start, dy_step, count,
                              out, out_starts, at, 0)
                at += 2 * LANES
            elif left >= LANES:
                _products_one(size, first, x, x_starts, x_step, dy, dy_start, dy_step, count,
                              out, out_starts, at, 0)
                at += LANES
            else:
                _products_part(size, first, x, x_starts, x_step, dy, dy_start, dy_step, count,
                               out, out_starts, at, left)
                at += LANES


@njit(cache=True, nogil=True)
def _segments(rotation, at, first, stop):
    """How many segments (``_segment``) the run from output position ``at`` takes: 3 for a
    row interior (``first`` to ``stop``) read on the source's cache lines, else 1."""
    return 3 if rotation and at == first and stop > first else 1


@njit(cache=True, nogil=True)
def _segment(index, segments, rotation, channels, count, starts, taps, step):
    """Segment ``index`` of a run of ``count`` adjacent positions: (first channel, stop
    channel, positions, positions skipped, whether it may stream), the ``taps`` source
    offsets in ``starts`` moved on by the positions skipped (``step`` apart). One segment,
    every channel of every position, unless the run is read on the source's cache lines
    (3 segments): the first position's channels below ``rotation``; then the run as one
    stream of vectors from channel ``rotation`` on over ``count - 1`` positions, each
    vector's lanes channels ``rotation`` to ``rotation + LANES`` (mod C) of one position or
    two neighbours (sums a vector carries past a position's end land at the channels from C
    on: the filter's tap rows and the filter gradient's sums hold ``C + LANES`` values);
    then the last position's channels from ``rotation``. The kernels' calls for all segments
    go through one call site (compiling the vector kernels once)."""
    if segments == 1:
        return 0, channels, count, 0, rotation == 0
    if index == 0:
        return 0, rotation, 1, 0, False
    if index == 1:
        return rotation, rotation + channels, count - 1, 0, True
    for t in range(taps):
        starts[t] += (count - 1) * step
    return rotation, channels, 1, count - 1, False


@njit(cache=True, nogil=True)
def line_rotation(flat, channels, step):
    """The channel from which a position's vectors start on ``flat``'s vector boundaries
    (``_vector_bytes``: for float32 its cache lines), when a run of positions ``step``
    channels apart can be read as one stream of vectors: 0 when it cannot (vectors that are
    not whole, positions not adjacent) or ``flat`` starts on a boundary."""
    if step != channels or channels % LANES or flat.ctypes.data % flat.itemsize:
        return 0
    return (-flat.ctypes.data) % _vector_bytes(flat) // flat.itemsize


@njit(cache=True, nogil=True)
def _vector_bytes(flat):
    """The bytes of a vector of ``flat``'s values in memory: a cache line for float32, half
    of one for 16-bit float bits."""
    return min(CACHE_LINE_BYTES, LANES * flat.itemsize)


@njit(cache=True, nogil=True)
def _wrapped(w, channels, rotation):
    """Filter taps ``[KH*KW, C]`` (flat) as rows of ``C + LANES``, each tap's values
    followed by its first LANES again; ``w`` itself when ``rotation`` is 0."""
    if not rotation:
        return w, channels
    taps = w.size // channels
    pitch = channels + LANES
    wide = np.empty(taps * pitch, np.float32)
    for t in range(taps):
        row = w[t * channels:(t + 1) * channels]
        wide[t * pitch:t * pitch + channels] = row
        wide[t * pitch + channels:(t + 1) * pitch] = row[:LANES]
    return wide, pitch


@njit(cache=True, nogil=True)
def _interior(size, reach_first, reach_last, stride, positions):
    """The positions k of an output row (``positions`` of them) whose every tap lands
    inside a source row of ``size``: ``0 <= k*stride + offset < size`` for every tap offset
    from ``reach_first`` to ``reach_last``; as [first, stop)."""
    first = min(positions, max(0, -(reach_first // stride)))
    stop = max(first, min(positions, (size - 1 - reach_last) // stride + 1))
    return first, stop


@njit(cache=True, nogil=True)
def _row_taps(starts, w_starts, n, row, column, geometry, src_rows, src_width, channels,
              w_pitch):
    """Fills ``starts`` (and ``w_starts``, each tap's filter offset, taps ``w_pitch``
    apart) with where in the flat source ``[N, src_rows, src_width, C]`` each tap of output
    position (row, column) reads, for the taps inside the source: forward-conv geometry
    (KH, KW, M, sh, sw, dh, dw, pt, pl). Returns the tap count."""
    kh, kw, _, sh, sw, dh, dw, pt, pl = geometry
    count = 0
    for i in range(kh):
        h = row * sh + i * dh - pt
        if h < 0 or h >= src_rows:
            continue
        for j in range(kw):
            col = column * sw + j * dw - pl
            if 0 <= col < src_width:
                starts[count] = ((n * src_rows + h) * src_width + col) * channels
                w_starts[count] = (i * kw + j) * w_pitch
                count += 1
    return count


@njit(cache=True, parallel=True, nogil=True)
def forward(x, w, y, geometry, parts):
    """y[n, oh, ow, c] = sum over taps (i, j) inside x of x[n, oh*sh + i*dh - pt,
    ow*sw + j*dw - pl, c] * w[i, j, c]: x ``[N, H, W, C]``, w ``[KH, KW, C, 1]``, y ``[N, OH,
    OW, C]``, C-contiguous, x and y float32 or 16-bit float bits (then at most TAPS taps), w
    float32; ``geometry`` (KH, KW, 1, sh, sw, dh, dw, pt, pl). With
    stride 1 and whole vectors of channels, row interiors run on x's cache lines wherever x
    starts (``_segment``): y placed at x's offset within a line is then written in whole
    lines too."""
    kh, kw, _, sh, sw, dh, dw, pt, pl = geometry
    n_total, oh_total, ow_total, channels = y.shape
    h_total, w_total = x.shape[1], x.shape[2]
    xf, yf = x.reshape(x.size), y.reshape(y.size)
    rows = n_total * oh_total
    first, stop = _interior(w_total, -pl, (kw - 1) * dw - pl, sw, ow_total)
    rotation = line_rotation(xf, channels, sw * channels)
    wf, pitch = _wrapped(w.reshape(w.size), channels, rotation)
    stream = (channels % LANES == 0
              and (yf.ctypes.data + yf.itemsize * rotation) % _vector_bytes(yf) == 0)
    for part in prange(parts):
        starts = np.empty(kh * kw, np.int64)
        w_starts = np.empty(kh * kw, np.int64)
        for r in range(rows * part // parts, rows * (part + 1) // parts):
            n, oh = r // oh_total, r % oh_total
            y_row = r * ow_total * channels
            ow = 0
            while ow < ow_total:          # the edges one by one, the interior at once
                taps = _row_taps(starts, w_starts, n, oh, ow, geometry, h_total, w_total,
                                 channels, pitch)
                count = max(1, stop - first) if ow == first else 1
                segments = _segments(rotation, ow, first, stop)
                for index in range(segments):
                    column, end, positions, skip, streams = _segment(
                        index, segments, rotation, channels, count, starts, taps, sw * channels)
                    _weighted(taps, xf, starts, sw * channels, wf, w_starts, yf,
                              y_row + (ow + skip) * channels, channels, positions, column, end,
                              stream and streams)
                ow += count
        fence()


@njit(cache=True, parallel=True, nogil=True)
def backprop_input(dy, w, dx, geometry, parts):
    """dx[n, ih, iw, c] = sum of dy[n, oh, ow, c] * w[i, j, c] over the taps (i, j) with
    oh*sh + i*dh - pt = ih and ow*sw + j*dw - pl = iw inside dy; operands as ``forward``
    takes them (dy in y's place, dx in x's).

    dx row ih meets the tap rows i with (ih + pt - i*dh) % sh == 0; its columns
    iw = phase + u*sw of one phase meet the taps j with (phase + pl - j*dw) % sw == 0, at
    dy column u + (phase + pl - j*dw) // sw: per phase, a forward conv over u (with stride 1
    on dy's cache lines, as ``forward`` reads x).
    """
    kh, kw, _, sh, sw, dh, dw, pt, pl = geometry
    n_total, oh_total, ow_total, channels = dy.shape
    h_total, w_total = dx.shape[1], dx.shape[2]
    dyf, dxf = dy.reshape(dy.size), dx.reshape(dx.size)
    rows = n_total * h_total
    rotation = line_rotation(dyf, channels, sw * channels)
    wf, pitch = _wrapped(w.reshape(w.size), channels, rotation)
    stream = (channels % LANES == 0
              and (dxf.ctypes.data + dxf.itemsize * rotation) % _vector_bytes(dxf) == 0)
    for part in prange(parts):
        starts = np.empty(kh * kw, np.int64)
        w_starts = np.empty(kh * kw, np.int64)
        shifts = np.empty(kw, np.int64)
        for r in range(rows * part // parts, rows * (part + 1) // parts):
            n, ih = r // h_total, r % h_total
            dx_row = r * w_total * channels
            for phase in range(min(sw, w_total)):
                columns = (w_total - phase + sw - 1) // sw
                reach = 0                      # the phase's taps j: dy column u + shifts[.]
                for j in range(kw):
                    if (phase + pl - j * dw) % sw == 0:
                        shifts[reach] = (phase + pl - j * dw) // sw
                        reach += 1
                first, stop = 0, 0
                if reach:
                    first, stop = _interior(ow_total, shifts[reach - 1], shifts[0], 1,
                                            columns)
                u = 0
                while u < columns:        # the edges one by one, the interior at once
                    taps = 0
                    for i in range(kh):
                        t = ih + pt - i * dh
                        if t % sh != 0 or t < 0 or t // sh >= oh_total:
                            continue
                        for j in range(kw):
                            shift = phase + pl - j * dw
                            if shift % sw != 0 or not 0 <= u + shift // sw < ow_total:
                                continue
                            starts[taps] = ((n * oh_total + t // sh) * ow_total + u
                                            + shift // sw) * channels
                            w_starts[taps] = (i * kw + j) * pitch
                            taps += 1
                    count = max(1, stop - first) if u == first else 1
                    segments = _segments(rotation, u, first, stop)
                    for index in range(segments):
                        column, end, positions, skip, streams = _segment(
                            index, segments, rotation, channels, count, starts, taps, channels)
                        _weighted(taps, dyf, starts, channels, wf, w_starts, dxf,
                                  dx_row + (phase + (u + skip) * sw) * channels, sw * channels,
                                  positions, column, end, stream and streams)
                    u += count
        fence()


@njit(cache=True, parallel=True, nogil=True)
def backprop_filter(x, dy, sums, geometry):
    """Adds per-block filter-gradient sums to ``sums`` (float64 ``[parts, KH*KW*C]``, one
    block of dy rows each; the caller adds the blocks in order): the sum of x[n, oh*sh +
    i*dh - pt, ow*sw + j*dw - pl, c] * dy[n, oh, ow, c] over the block's rows and the taps
    inside x; operands as ``forward`` takes them (dy in y's place). With stride 1 and whole
    vectors of channels, a row's interior runs on x's cache lines (``_segment``)
    wherever x starts; its sums then also depend on x's address modulo 64 bytes."""
    kh, kw, _, sh, sw, dh, dw, pt, pl = geometry
    n_total, oh_total, ow_total, channels = dy.shape
    h_total, w_total = x.shape[1], x.shape[2]
    xf, dyf = x.reshape(x.size), dy.reshape(dy.size)
    rows, parts = n_total * oh_total, sums.shape[0]
    first, stop = _interior(w_total, -pl, (kw - 1) * dw - pl, sw, ow_total)
    rotation = line_rotation(xf, channels, sw * channels)
    pitch = channels + (LANES if rotation else 0)      # a tap row of the partial sums
    for part in prange(parts):
        partial = np.zeros(kh * kw * pitch, np.float32)
        starts = np.empty(kh * kw, np.int64)
        out_starts = np.empty(kh * kw, np.int64)
        block_first, block_stop = rows * part // parts, rows * (part + 1) // parts
        for r in range(block_first, block_stop):
            n, oh = r // oh_total, r % oh_total
            dy_row = r * ow_total * channels
            ow = 0
            while ow < ow_total:          # the edges one by one, the interior at once
                taps = _row_taps(starts, out_starts, n, oh, ow, geometry, h_total, w_total,
                                 channels, pitch)
                count = max(1, stop - first) if ow == first else 1
                segments = _segments(rotation, ow, first, stop)
                for index in range(segments):
                    column, end, positions, skip, _ = _segment(
                        index, segments, rotation, channels, count, starts, taps, sw * channels)
                    _products(taps, xf, starts, sw * channels, dyf,
                              dy_row + (ow + skip) * channels, channels, positions, partial,
                              out_starts, column, end)
                ow += count
            if (r - block_first + 1) % FLUSH_ROWS == 0 or r + 1 == block_stop:
                for t in range(kh * kw):
                    for c in range(channels):
                        sums[part, t * channels + c] += partial[t * pitch + c]
                        if c < pitch - channels:    # the sums carried past a position
                            sums[part, t * channels + c] += partial[t * pitch + channels + c]
                partial[:] = 0
