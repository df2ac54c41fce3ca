"""Direct convolution on a register-blocked micro-kernel (numba, with the kernel's inner loop
written in LLVM IR): the forward conv and the filter gradient without a patch matrix, for
float32 channels-last operands whose output channels come in groups of ``HALF_LANES``.

Each micro-kernel call keeps 1 to ``ROWS`` rows of accumulators in vector registers, each
one or two vectors of ``LANES`` output channels (or one of ``HALF_LANES`` for a last group
of 8), or up to ``WIDE_ROWS`` rows of four: the forward conv's rows are output positions,
and for every (kernel tap, input channel) pair it loads the filter's vectors once and adds
them, scaled by each position's input value (one broadcast load each), with fused
multiply-adds; the filter gradient's rows are (tap, channel) pairs, and for every output
position of a plane it loads dy's vectors once and adds them scaled by each pair's input
value. numba's own loops leave such code scalar or spill it (measured 7-35 GFLOP/s); this
runs at 175-190 GFLOP/s a core of a full-width AVX-512 Xeon with its operands in the L2
cache (the core's peak: about 190), and needs no copy of the input per tap. Two vectors a
row load less per multiply-add than one: 1.2-1.4x faster where the output channels allow;
four vectors (each x value broadcast once for 64 channels) are faster again where 64
channels are left (``host_isa.tiles`` gives their rows).

The tiles follow the vector unit numba compiles for (``host_isa.tiles``; numba caches code
per CPU, so one source serves every level): the figures above are AVX-512's 16 lanes and 32
registers. At AVX2 (8 lanes, 16 registers) a call keeps up to 6 rows of two 8-lane vectors
(12 accumulators) and makes no four-vector calls (the same loop on AVX-512's tiles would
spill its accumulators).
"""

import numpy as np
from llvmlite import ir
from numba import njit, prange
from numba.extending import intrinsic

from graphops.kernels.compiled import host_isa
from graphops.kernels.compiled import ir as loops_ir
from graphops.kernels.compiled.elementwise import chain_chunk, chain_rows

# The register tiles of the vector unit numba compiles for (``host_isa.tiles``): at
# AVX-512 16 lanes, 8 rows and 6 of four vectors; at AVX2 8 lanes, 6 rows and none of four.
LANES, HALF_LANES, ROWS, WIDE_ROWS = host_isa.tiles()
BLOCK = max(2 * ROWS, 4 * WIDE_ROWS)   # output positions a call of ``_accumulate`` takes
CALL_CHANNELS = (4 if WIDE_ROWS else 2) * LANES   # output channels a call takes at most
CHUNK_BYTES = 1 << 14   # filter gradient: dy bytes (positions x O) a call's positions span
STEPS = 256       # filter gradient: positions a run of planes holds at least (whole planes)
GEMM_ROWS = 64    # batched_gemm: rows a pass over b's column groups takes
ADD, GO_ON = 1, 2   # a micro-kernel call's ``add``: add its sums, or go on from those held

_INT = loops_ir.INT


def _micro_kernel(vectors, lanes=LANES, max_rows=ROWS):
    """The micro-kernel for ``vectors`` (1, 2 or 4) vectors of ``lanes`` channels, a numba
    intrinsic ``(rows, x, x_base, steps, row_offsets, v, v_step, v_col, out, out_base,
    out_offsets, add)`` over flat float32 arrays: for r < rows (1 to max_rows) and lanes
    l < vectors * lanes, ``out[out_base + out_offsets[r] + l] (+)= sum over i < len(steps) of
    x[x_base + steps[i] + row_offsets[r]] * v[i*v_step + v_col + l]``, in order with fused
    multiply-adds: ``add`` 0 stores the sums, ``ADD`` adds them to what ``out`` holds,
    ``GO_ON`` starts them from what it holds (a run of steps goes on where the last left off,
    as one sum would: the forward conv's runs of pairs). The forward conv takes rows as
    output positions and i as (tap, channel) pairs; the filter gradient rows as (tap,
    channel) pairs and i as output positions. Each row count has its own loop (a switch on
    ``rows``): its accumulators stay in registers."""

    @intrinsic
    def kernel(typingctx, rows, x, x_base, steps, row_offsets, v, v_step, v_col, out,
               out_base, out_offsets, add):
        def codegen(context, builder, signature, args):
            operands = dict(zip(("x", "x_base", "steps", "row_offsets", "v", "v_step", "v_col",
                                 "out", "out_base", "out_offsets", "add"),
                                loops_ir.arguments(context, builder, signature, args)[1:]))
            count = builder.extract_value(
                context.make_array(signature.args[3])(context, builder, args[3]).shape, 0)
            loops_ir.switch(builder, args[0], range(1, max_rows + 1),
                           lambda rows: _emit_loop(builder, rows, vectors, lanes, count=count,
                                                   **operands))
            return context.get_dummy_value()

        return loops_ir.typed((rows, x, x_base, steps, row_offsets, v, v_step, v_col, out,
                               out_base, out_offsets, add), (1, 5, 8), (3, 4, 10), codegen)

    return kernel


def _emit_loop(builder, rows, vectors, lanes, x, steps, row_offsets, count, x_base, v,
               v_step, v_col, out, out_base, out_offsets, add):
    """The IR of one micro-kernel: ``rows`` x ``vectors`` accumulators, starting from zero
    or (``add`` GO_ON) from what ``out`` holds, summed over the ``count`` steps, then stored
    into ``out`` (``add`` ADD: added to what it holds); leaves the builder at its end."""
    vector_type = ir.VectorType(ir.FloatType(), lanes)
    fma = loops_ir.fma(builder, vector_type)
    zero = ir.Constant(vector_type, [0.0] * lanes)
    row_at = [builder.load(builder.gep(row_offsets, [_INT(r)])) for r in range(rows)]

    def step(i, sums):
        first = builder.add(builder.mul(i, v_step), v_col)
        loaded = [builder.load(builder.bitcast(
            builder.gep(v, [builder.add(first, _INT(j * lanes))]), vector_type.as_pointer()),
            align=4) for j in range(vectors)]
        at = builder.add(x_base, builder.load(builder.gep(steps, [i])))
        added = []
        for r, offset in enumerate(row_at):
            value = builder.load(builder.gep(x, [builder.add(at, offset)]))
            broadcast = loops_ir.broadcast(builder, value, vector_type)
            added += [builder.call(fma, [broadcast, vector, sums[r * vectors + j]])
                      for j, vector in enumerate(loaded)]
        return added

    places = []
    for r in range(rows):
        start = builder.add(out_base, builder.load(builder.gep(out_offsets, [_INT(r)])))
        places += [builder.bitcast(builder.gep(out, [builder.add(start, _INT(j * lanes))]),
                                   vector_type.as_pointer()) for j in range(vectors)]
    held = _held_sums(builder, add, places, zero)
    results = loops_ir.counted_loop(builder, count, held, step)
    with builder.if_else(builder.icmp_signed("==", add, _INT(ADD))) as (adding, storing):
        with adding:
            for where, result in zip(places, results):
                builder.store(builder.fadd(builder.load(where, align=4), result), where,
                              align=4)
        with storing:
            for where, result in zip(places, results):
                builder.store(result, where, align=4)


def _held_sums(builder, add, places, zero):
    """The accumulators' starting values: what ``places`` hold where ``add`` is GO_ON, else
    zeros. Branched, not selected, so that a fresh sum never loads its output: such a load
    misses the cache (the output is new memory) and every multiply-add would wait on it."""
    entry = builder.block
    with builder.if_then(builder.icmp_signed("==", add, _INT(GO_ON))):
        loaded = [builder.load(where, align=4) for where in places]
        loaded_block = builder.block
    held = []
    for value in loaded:
        phi = builder.phi(zero.type)
        phi.add_incoming(value, loaded_block)
        phi.add_incoming(zero, entry)
        held.append(phi)
    return held


_half_vector, _one_vector, _two_vectors = (_micro_kernel(1, HALF_LANES), _micro_kernel(1),
                                           _micro_kernel(2))
_four_vectors = _micro_kernel(4, max_rows=max(1, WIDE_ROWS))


@njit(cache=True, nogil=True)
def _accumulate(rows, x, x_base, steps, row_offsets, v, v_step, v_col, out, out_base,
                out_offsets, add, channels_left):
    """The micro-kernels for ``rows`` rows of accumulators (as many as ``row_offsets`` and
    ``out_offsets`` hold, split evenly into calls of WIDE_ROWS rows at most on four vectors,
    ROWS on fewer), on four vectors of channels when at least that many are left from
    ``v_col`` on and the tiles have such calls, else two, else one, else half of one;
    returns the channels it took. Four vectors of WIDE_ROWS rows load v's vectors less often
    per multiply-add than two of ROWS and broadcast each x value once for 64 channels."""
    four = WIDE_ROWS > 0 and channels_left >= CALL_CHANNELS
    calls = -(-rows // (WIDE_ROWS if four else ROWS))
    for call in range(calls):
        first = rows * call // calls
        count = rows * (call + 1) // calls - first
        ro, oo = row_offsets[first:], out_offsets[first:]
        if four:
            _four_vectors(count, x, x_base, steps, ro, v, v_step, v_col, out, out_base, oo, add)
        elif channels_left >= 2 * LANES:
            _two_vectors(count, x, x_base, steps, ro, v, v_step, v_col, out, out_base, oo, add)
        elif channels_left >= LANES:
            _one_vector(count, x, x_base, steps, ro, v, v_step, v_col, out, out_base, oo, add)
        else:
            _half_vector(count, x, x_base, steps, ro, v, v_step, v_col, out, out_base, oo,
                         add)
    if four:
        return 4 * LANES
    if channels_left >= 2 * LANES:
        return 2 * LANES
    return LANES if channels_left >= LANES else HALF_LANES


@njit(cache=True, nogil=True)
def _positions(geometry, planes):
    """Where each output position of ``planes`` consecutive planes (q1, q2, q3) of an image
    starts its window in x, from the first plane's window origin; flat elements."""
    _, _, q2n, q3n, _, _, p2, p3, channels, s1, s2, s3 = geometry
    positions = np.empty(planes * q2n * q3n, np.int64)
    for q1 in range(planes):
        for q2 in range(q2n):
            for q3 in range(q3n):
                positions[(q1 * q2n + q2) * q3n + q3] = (
                    (q1 * s1 * p2 + q2 * s2) * p3 + q3 * s3) * channels
    return positions


@njit(cache=True, nogil=True)
def _fill_slab(x, n, first1, rows1, first2, rows2, first3, columns, source, slab, p2, p3,
               channels):
    """Pads image n of the unpadded input into ``slab`` ``[rows1, P2, P3, C]`` (flat): its
    planes ``first1 ..`` of the padded input, and in each the rows ``first2 ..`` (rows2 of
    them) and columns ``first3 ..`` (``columns``) that the windows read; the rest is left
    as it was. ``source``: (S1, S2, S3, b1, b2, b3, ...), x's sizes and the padding before.
    Flat unsigned indices, as ``compiled.conv.pad`` takes them (a signed index keeps the copy
    from vectorizing)."""
    size1, size2, size3, before1, before2, before3 = source[:6]
    inner = max(first3, before3)                          # the columns that hold x
    outer = max(inner, min(first3 + columns, before3 + size3))
    head, copied = np.uint64((inner - first3) * channels), np.uint64((outer - inner) * channels)
    length = np.uint64(columns * channels)
    for r1 in range(rows1):
        i1 = first1 + r1 - before1
        for r2 in range(first2, first2 + rows2):
            i2 = r2 - before2
            out = np.uint64(((r1 * p2 + r2) * p3 + first3) * channels)
            inside = 0 <= i1 < size1 and 0 <= i2 < size2
            zeros = head if inside else length
            taken = copied if inside else np.uint64(0)
            at = np.uint64((((n * size1 + max(i1, 0)) * size2 + max(i2, 0)) * size3
                            + inner - before3) * channels)
            for k in range(zeros):
                slab[out + k] = 0
            for k in range(taken):
                slab[out + zeros + k] = x[at + k]
            for k in range(zeros + taken, length):
                slab[out + k] = 0


@njit(cache=True, nogil=True)
def _unpadded(geometry, source):
    """Whether the padded input is x itself (no padding, no extent past x's): the loops
    then read x in place, with no slab."""
    return (geometry[5] == source[0] and geometry[6] == source[1] and geometry[7] == source[2]
            and source[3] == 0 and source[4] == 0 and source[5] == 0)


@njit(cache=True, parallel=True, nogil=True)
def forward(x, offsets, w, y, geometry, source, bands, parts, splits, depth, width, tiled,
            kinds, activation):
    """y = the conv of x by w on the micro-kernels. ``x``: the input ``[N, S1, S2, S3, C]``
    as a flat float32 array, unpadded; ``offsets[t*C + c]``: where tap t's channel c lies
    from a window's origin in the zero-padded input ``[N, P1, P2, P3, C]``; ``w``: the
    filter ``[taps*C, O]`` (O a multiple of HALF_LANES), flat, in runs of ``depth`` rows,
    each run as strips of ``width`` columns (``packed_filters.pack``; ``width`` O: the
    rows as they lie); ``y``: ``[N, Q1, Q2, Q3, O]``
    flat; ``geometry``: (N, Q1, Q2, Q3, O, P1, P2, P3, C, s1, s2, s3); ``source``: (S1, S2,
    S3, b1, b2, b3, span1, span2, span3), x's sizes, the padding before and the padded rows a
    window spans in each dim. The output planes (q1) are cut into ``bands`` of consecutive
    positions, and ``parts`` runs of (plane, band) items are the threads' to take: a part
    pads the input that each of its items reads into a slab of its own, which stays in the
    cache while the micro-kernel reads it (1.1-1.5x faster than reading a padded copy made
    first; an input without padding is read in place). A part sums ``depth`` (tap, channel)
    pairs at a time over all its items, so that those filter rows stay in the cache while
    the items read them; each later run of pairs goes on from the sums in y. The calls share
    the positions of a block of BLOCK evenly (``_accumulate``), which may span rows, so narrow
    rows still fill the accumulators. A finished block goes through the epilogue ``(tiled,
    kinds, activation)`` while it is in the cache (``compiled.elementwise.chain_rows``; no
    kinds and activation 0 for none)."""
    n_total, q1n, q2n, q3n, outs, p1, p2, p3, channels, s1, s2, s3 = geometry
    span1, span2, span3 = source[6:9]
    unpadded = _unpadded(geometry, source)
    plane_size = q2n * q3n
    items = n_total * q1n * bands
    band_size = (plane_size + bands - 1) // bands
    positions = _positions(geometry, 1)
    pairs = offsets.shape[0]
    for task in prange(parts * splits):
        part, split = task // splits, task % splits
        columns = (split_at(outs, split, splits), split_at(outs, split + 1, splits))
        slab = np.empty(0 if unpadded else span1 * p2 * p3 * channels, np.float32)
        for low in range(0, pairs, depth):
            high = min(pairs, low + depth)
            finished = high == pairs and has_epilogue(kinds, activation)
            for item in range(items * part // parts, items * (part + 1) // parts):
                plane, band = item // bands, item % bands
                begin, end = band * band_size, min(plane_size, (band + 1) * band_size)
                if begin >= end:
                    continue
                top, bottom = begin // q3n, (end - 1) // q3n
                left, right = (begin % q3n, (end - 1) % q3n) if top == bottom else (0, q3n - 1)
                read, origin = slab, 0
                if unpadded:
                    read, origin = x, (plane // q1n * p1 + plane % q1n * s1) * p2 * p3 * channels
                else:
                    _fill_slab(x, plane // q1n, plane % q1n * s1, span1, top * s2,
                               (bottom - top) * s2 + span2, left * s3,
                               (right - left) * s3 + span3, source, slab, p2, p3, channels)
                _band_sums(read, origin, offsets[low:high], positions[begin:end],
                           w[low * outs:], width, y, (plane * plane_size + begin) * outs,
                           outs, columns, GO_ON * min(low, 1), finished, tiled, kinds,
                           activation)


@njit(cache=True, nogil=True)
def has_epilogue(kinds, activation):
    """Whether an epilogue ``(kinds, activation)`` does anything."""
    return kinds.shape[0] > 0 or activation != 0


@njit(cache=True, nogil=True)
def split_at(outs, split, splits):
    """Where column run ``split`` of ``splits`` starts among ``outs`` output channels: at a
    multiple of two vectors where the runs allow, else of HALF_LANES."""
    unit = 2 * LANES if outs % (2 * LANES) == 0 else HALF_LANES
    return outs // unit * split // splits * unit


@njit(cache=True, nogil=True)
def _band_sums(read, origin, offsets, positions, w, width, y, y_first, outs, columns, add,
               finished, tiled, kinds, activation):
    """The sums over ``offsets``' (tap, channel) pairs of a band's output ``positions`` in
    the output channels ``columns`` (first, end), block by block of BLOCK, written to y
    from ``y_first`` (``add``: the micro-kernels' mode); through the epilogue where
    ``finished``.
    ``w`` holds the pairs' filter rows as strips of ``width`` channels, each strip its rows
    in order (``width`` = O: the rows as they lie)."""
    outputs = np.arange(BLOCK) * outs             # a block's positions, in y
    strip = offsets.shape[0] * width
    for first in range(0, positions.shape[0], BLOCK):
        size = min(BLOCK, positions.shape[0] - first)
        y_block = y_first + first * outs
        strip_sums(read, origin, offsets, positions[first:first + size], w, width, strip, 0,
                   y, y_block, outputs, columns, add)
        if finished:
            _epilogue(y, y_block, size, outs, columns, tiled, kinds, activation)


@njit(cache=True, nogil=True)
def strip_sums(x, x_base, offsets, rows_x, w, width, strip, row_at, y, y_base, rows_y, columns,
               add):
    """The sums over ``offsets``' pairs of the rows ``rows_x`` (where each row's window
    starts in x, from ``x_base``) in the output channels ``columns`` (first, end), at
    ``rows_y`` in y from ``y_base``, in the micro-kernels' mode ``add``; the pairs' filter
    rows start at ``row_at`` in each strip of ``width`` channels, the strips ``strip``
    apart in ``w``."""
    column = columns[0]
    while column < columns[1]:
        column += _accumulate(rows_x.shape[0], x, x_base, offsets, rows_x, w, width,
                              column // width * strip + row_at + column % width, y,
                              y_base + column, rows_y, add,
                              min(columns[1] - column, width - column % width))


@njit(cache=True, nogil=True)
def _epilogue(y, y_block, size, outs, columns, tiled, kinds, activation):
    """The epilogue on the block's ``size`` rows from ``y_block``, in the output channels
    ``columns``: whole rows at once where they span all ``outs`` channels."""
    zero, six = y.dtype.type(0), y.dtype.type(6)
    if columns[0] == 0 and columns[1] == outs:
        chain_rows(y[y_block:y_block + size * outs], tiled, kinds, activation, zero, six)
        return
    for row in range(size):
        row_epilogue(y, y_block + row * outs, columns, tiled, kinds, activation)


@njit(cache=True, nogil=True)
def row_epilogue(y, start, columns, tiled, kinds, activation):
    """The epilogue on one output row from ``start`` in y, in the output channels
    ``columns``."""
    chain_chunk(y[start + columns[0]:start + columns[1]], tiled[:, columns[0]:columns[1]],
                kinds, activation, y.dtype.type(0), y.dtype.type(6))


@njit(cache=True, parallel=True, nogil=True)
def filter_grad(x, offsets, dy, partials, geometry, source):
    """partials[p] = the filter gradient ``[taps*C, O]`` (flat) over block p of the output
    planes (n, q1): x, offsets, geometry and source as ``forward`` takes them, dy ``[N, Q1,
    Q2, Q3, O]`` flat. The positions of consecutive planes of an image (about STEPS: small
    planes go together) are read padded into the block's slab and summed a chunk of about
    CHUNK_BYTES of dy at a time: the chunk stays in the L1 cache while calls sum it for
    every block of (tap, channel) pairs, 64 output channels at a time on four vectors for
    WIDE_ROWS pairs, the rest on ``_accumulate`` (1.03-1.1x faster than a plane at a time on
    x[4, 16, 32, 32, 32] f[3, 3, 3, 32, 64] s2)."""
    n_total, q1n, q2n, q3n, outs, p1, p2, p3, channels, s1, s2, s3 = geometry
    span1, span2, span3 = source[6:9]
    unpadded = _unpadded(geometry, source)
    pairs, parts = offsets.shape[0], partials.shape[0]
    planes = n_total * q1n
    plane_size = q2n * q3n
    plane_elements = p2 * p3 * channels
    positions = _positions(geometry, q1n)
    pair_rows = np.arange(ROWS) * outs            # a call's (tap, channel) pairs, in partials
    run = max(1, STEPS // plane_size)          # planes a slab holds
    chunk_size = max(ROWS, CHUNK_BYTES // (4 * outs))
    for part in prange(parts):
        total = partials[part]
        slab = np.empty(0 if unpadded else ((run - 1) * s1 + span1) * plane_elements,
                        np.float32)
        start, stop = planes * part // parts, planes * (part + 1) // parts
        plane = start
        while plane < stop:
            n, q1 = plane // q1n, plane % q1n
            last = min(stop, (n + 1) * q1n, plane + run)
            read, origin = slab, -q1 * s1 * plane_elements
            if unpadded:
                read, origin = x, n * p1 * plane_elements
            else:
                _fill_slab(x, n, q1 * s1, (last - plane - 1) * s1 + span1, 0,
                           (q2n - 1) * s2 + span2, 0, (q3n - 1) * s3 + span3, source, slab, p2,
                           p3, channels)
            steps = positions[q1 * plane_size:(last - n * q1n) * plane_size]
            dy_run = plane * plane_size * outs
            for first in range(0, len(steps), chunk_size):
                chunk = steps[first:first + chunk_size]
                add = 0 if plane == start and first == 0 else ADD   # the part's first sums
                column = 0
                while WIDE_ROWS and outs - column >= 4 * LANES:   # 1.07-1.15x faster
                    for pair in range(0, pairs, WIDE_ROWS):
                        rows = min(WIDE_ROWS, pairs - pair)
                        _four_vectors(rows, read, origin, chunk, offsets[pair:pair + rows], dy,
                                      outs, dy_run + first * outs + column, total,
                                      pair * outs + column, pair_rows, add)
                    column += 4 * LANES
                while column < outs:
                    for pair in range(0, pairs, ROWS):
                        rows = min(ROWS, pairs - pair)
                        taken = _accumulate(rows, read, origin, chunk,
                                            offsets[pair:pair + rows], dy, outs,
                                            dy_run + first * outs + column, total,
                                            pair * outs + column, pair_rows, add,
                                            outs - column)
                    column += taken
            plane = last


@njit(cache=True, nogil=True)
def batched_gemm(a, b, out, transposed_a, add):
    """``out[i] (+)= A_i @ b[i]`` on the micro-kernels, one thread, for C-contiguous float32
    ``b`` ``[batch, K, N]`` and ``out`` ``[batch, M, N]`` (N a multiple of HALF_LANES):
    ``A_i`` is ``a[i]`` ``[M, K]``, or with ``transposed_a`` ``a[i].T`` (``a`` ``[batch, K,
    M]``); added to what ``out`` holds where ``add`` is ADD. Rows go GEMM_ROWS at a time
    and within them a vector group of b's columns at a time (the group's slice of b stays in
    the L1 cache), split evenly into the micro-kernels' calls; each element one sum over k
    in order."""
    batch, rows_total, columns = out.shape
    depth = b.shape[1]
    k_step, m_step = (rows_total, 1) if transposed_a else (1, depth)
    steps = np.arange(depth) * k_step
    row_offsets = np.arange(GEMM_ROWS) * m_step
    out_rows = np.arange(GEMM_ROWS) * columns
    af, bf, outf = a.reshape(a.size), b.reshape(b.size), out.reshape(out.size)
    for i in range(batch):
        a_at, b_at, out_at = i * rows_total * depth, i * depth * columns, i * rows_total * columns
        for chunk in range(0, rows_total, GEMM_ROWS):
            chunk_stop = min(rows_total, chunk + GEMM_ROWS)
            column = 0
            while column < columns:
                column += _accumulate(chunk_stop - chunk, af, a_at + chunk * m_step, steps,
                                      row_offsets, bf, columns, b_at + column, outf,
                                      out_at + chunk * columns + column, out_rows, add,
                                      columns - column)


@njit(cache=True, parallel=True, nogil=True)
def strip_gemm(at, packed, out, width, block, parts):
    """``out = a @ b`` for float32 ``a`` ``[M, K]`` (M at most ROWS), given as C-contiguous
    ``at`` = ``a.T`` ``[K, M]`` (a step's M values in one cache line), and ``b`` ``[K, N]``
    packed flat in blocks of ``block`` rows, each block as strips of ``width`` columns
    (2*LANES), each strip its rows in order (block j, strip s: b[j*block:, s*width:]). One
    micro-kernel call per (block, strip), each element one sum over k in order. The strips
    go in ``parts`` runs of neighbours: a thread streams one stretch of memory per block,
    with that block's ``at`` rows in the L1 cache."""
    depth, rows = at.shape
    columns = out.shape[1]
    count = columns // width
    steps = np.arange(min(block, depth)) * rows
    row_offsets = np.arange(rows)
    out_rows = np.arange(rows) * columns
    af, of = at.reshape(at.size), out.reshape(out.size)
    for part in prange(parts):
        for first in range(0, depth, block):
            taken = steps[:min(block, depth - first)]
            for s in range(part * count // parts, (part + 1) * count // parts):
                _two_vectors(rows, af, first * rows, taken, row_offsets, packed, width,
                             first * columns + s * len(taken) * width, of, s * width,
                             out_rows, GO_ON * min(first, 1))


@njit(cache=True, parallel=True, nogil=True)
def input_grad_phases(dy, dx, steps, step_starts, filters, filter_starts, phases, geometry,
                      depth, width):
    """dx = the strided conv's input gradient, phase by phase of dx, on the micro-kernels.
    ``dy``: dy ``[N, P1, P2, P3, O]`` zero-padded, flat; ``dx``: ``[N, I1, I2, I3, C]``
    flat; phase f (``phases[f]``: residues r1-r3, position counts c1-c3, dy bases b1-b3,
    and its taps t1 and their distance d1 in the first dim) holds dx positions ``p = r +
    s*m`` per dim, each the sum over its (tap, dy channel) pairs i (t1 runs of equal
    length, the first dim's taps in order) of ``dy[window origin + steps[step_starts[f] +
    i]] * filters[filter_starts[f] + (c // width * pairs + i) * width + c % width]``
    (each phase's filter rows as strips of ``width`` channels, which divides C), the
    window origin at dy position ``m + b``; a phase without pairs is zeros. ``geometry``:
    (N, P1, P2, P3, O, I1, I2, I3, C, s1, s2, s3, first, end), the last two the padded
    first dim's planes that hold dy: the taps that read a plane of padding alone are
    skipped. The threads share (image, phase) pairs; a pair sums its (tap, dy channel)
    pairs ``depth`` at a time over all its planes, each run's sums added to the last's (so
    that a run's strips stay in the cache); the calls share a phase plane's (m1)
    positions BLOCK at a time, across its rows."""
    n_total, p1n, p2n, p3n, outs, i1n, i2n, i3n, channels, s1, s2, s3, lo1, hi1 = geometry
    count = phases.shape[0]
    for item in prange(n_total * count):
        n, phase = item // count, item % count
        r1, r2, r3, c1, c2, c3, b1, b2, b3, t1, d1 = phases[phase]
        pairs = steps[step_starts[phase]:step_starts[phase + 1]]
        taps_at = filter_starts[phase]
        sources, targets = _phase_plane(c2, c3, p3n, outs, s2, s3, i3n, channels)
        per_tap = pairs.shape[0] // max(t1, 1)
        for low in range(0, max(pairs.shape[0], 1), depth):
            for m1 in range(c1):
                dx_plane = ((n * i1n + r1 + s1 * m1) * i2n + r2) * i3n * channels + r3 * channels
                first, last = _reached_pairs(m1 + b1, t1, d1, lo1, hi1, per_tap)
                if first >= last:                  # no tap reads dy here
                    if low == 0:
                        for target in targets:
                            dx[dx_plane + target:dx_plane + target + channels] = 0
                    continue
                start, stop = max(low, first), min(low + depth, last)
                if start >= stop:
                    continue
                dy_plane = (((n * p1n + m1 + b1) * p2n + b2) * p3n + b3) * outs
                for block in range(0, c2 * c3, BLOCK):
                    rows = min(BLOCK, c2 * c3 - block)
                    column = 0
                    while column < channels:
                        strip = taps_at + column // width * width * pairs.shape[0]
                        column += _accumulate(rows, dy, dy_plane, pairs[start:stop],
                                              sources[block:block + rows], filters, width,
                                              strip + start * width + column % width, dx,
                                              dx_plane + column, targets[block:block + rows],
                                              ADD * min(start - first, 1),
                                              width - column % width)


@njit(cache=True, nogil=True)
def _phase_plane(c2, c3, p3n, outs, s2, s3, i3n, channels):
    """Where each position of a phase's plane (m2, m3) lies: in dy, from the plane's window
    origin, and in dx, from the plane's first position; flat elements."""
    sources = np.empty(c2 * c3, np.int64)
    targets = np.empty(c2 * c3, np.int64)
    for m2 in range(c2):
        for m3 in range(c3):
            sources[m2 * c3 + m3] = (m2 * p3n + m3) * outs
            targets[m2 * c3 + m3] = (s2 * m2 * i3n + s3 * m3) * channels
    return sources, targets


@njit(cache=True, nogil=True)
def _reached_pairs(origin, taps, distance, first_plane, end_plane, per_tap):
    """The (first, end) of a phase's pairs whose first-dim tap reads a plane of dy, for a
    phase plane whose first tap reads padded plane ``origin`` and tap j plane ``origin +
    j*distance``; dy's planes are ``first_plane`` to ``end_plane`` (exclusive)."""
    if taps == 0:
        return 0, 0
    low = max(0, -((origin - first_plane) // distance))
    high = min(taps, (end_plane - 1 - origin) // distance + 1)
    return low * per_tap, max(low, high) * per_tap
