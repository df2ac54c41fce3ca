"""The forward conv and the filter gradient for a few input channels on vector kernels
(numba, the inner loops written in LLVM IR): output positions along the vector lanes, for
float32 operands whose output channels number a power of two up to ``LANES``.

With one input channel and 8 output channels (a 3-D CNN's first layer) a tap is 8
multiply-adds a position: vectors of output channels would be half empty and each need a
broadcast of the input value. Here a vector holds ``LANES`` consecutive positions of an
output row instead, loaded in one piece from the channel-planar padded input, and each
(tap, channel)'s filter value is broadcast to all of them: a call keeps ``rows`` rows'
vectors for every output channel in registers and sums all (tap, channel) pairs into them
in order, then transposes them to channels-last with shuffles (``_interleaved``) and
stores the block. The filter gradient transposes each plane of dy to channel-planar
vectors (``_channel_planar``), then a call keeps ``pairs`` (tap, channel) pairs' vectors
for every output channel in registers and adds the products of the pairs' input rows and
dy's vectors over the plane, lane by lane; the lanes are summed when a thread is done.
"""

import numpy as np
from llvmlite import ir
from numba import njit, prange
from numba.extending import intrinsic, register_jitable

from graphops.kernels.compiled import host_isa
from graphops.kernels.compiled import ir as loops_ir
from graphops.kernels.compiled.constants import LANES
from graphops.kernels.compiled.elementwise import chain_rows
from graphops.kernels.compiled.ir import VectorAccess

# Vectors of accumulators a call keeps in registers, out of the LANES-value vectors the
# register file holds (32 with AVX-512's 32 registers; 8 at AVX2, where one takes two of
# its 16; 8 with NEON's 32 of 4 lanes): half of them for the forward conv, three quarters
# for the filter gradient. The counts sized for 32 spill to the stack on every step at AVX2
# (the forward conv 1.6-1.9x slower on 1 -> 4 and 1 -> 8 channel layers).
_ISA = host_isa.isa()
_HELD = _ISA.registers * _ISA.lanes // LANES
ACCUMULATORS = max(1, _HELD // 2)
FILTER_ACCUMULATORS = max(1, _HELD * 3 // 4)
FLUSH_PLANES = 16      # filter gradient: planes summed in float32 between float64 flushes
MAX_ROWS = 8           # output rows a call takes at most (each holds a pointer register)
OUTPUTS = (1, 2, 4, 8, 16)   # the output channel counts these kernels take

_INT = loops_ir.INT
_INT32 = loops_ir.INT32
_VECTOR = loops_ir.VECTOR


@register_jitable
def rows_per_call(outs):
    """The output rows a call for ``outs`` output channels holds in registers."""
    return max(1, min(MAX_ROWS, ACCUMULATORS // outs))


@register_jitable
def pairs_per_call(outs):
    """The (tap, channel) pairs a filter-gradient call for ``outs`` output channels holds."""
    return max(1, min(MAX_ROWS, FILTER_ACCUMULATORS // outs))


def _interleaved(builder, first, second):
    """The vectors of the sequence ``a0 b0 a1 b1 ...`` of the sequences ``first`` (a) and
    ``second`` (b), each given as a list of vectors."""
    half = LANES // 2
    return [builder.shuffle_vector(
        first[k // 2], second[k // 2],
        ir.Constant(ir.VectorType(_INT32, LANES),
                    [(k % 2) * half + i // 2 + (LANES if i % 2 else 0) for i in range(LANES)]))
        for k in range(2 * len(first))]


def _channels_last(builder, vectors):
    """The vectors of ``flat[p*O + o] = vectors[o][p]`` (O a power of two): the positions'
    channels side by side, by rounds of interleaving."""
    if len(vectors) == 1:
        return list(vectors)
    return _interleaved(builder, _channels_last(builder, vectors[0::2]),
                        _channels_last(builder, vectors[1::2]))


def _channel_planar(builder, vectors):
    """The inverse of ``_channels_last``: from the vectors of ``flat[p*O + o]`` (O =
    ``len(vectors)``, a power of two), the O vectors of positions p of each channel o, by
    rounds of splitting a sequence into its even and odd elements."""
    if len(vectors) == 1:
        return list(vectors)
    lanes = ir.VectorType(_INT32, LANES)
    even, odd = ([builder.shuffle_vector(vectors[k], vectors[k + 1],
                                         ir.Constant(lanes, list(range(parity, 2 * LANES, 2))))
                  for k in range(0, len(vectors), 2)] for parity in (0, 1))
    return [vector for pair in zip(_channel_planar(builder, even),
                                   _channel_planar(builder, odd)) for vector in pair]


def _clamped_mask(builder, filled, j):
    """A store or load of vector j of a run of ``filled`` floats: masked to the lanes
    inside it (none past its end)."""
    rest = builder.sub(filled, _INT(j * LANES))
    rest = builder.select(builder.icmp_signed(">", rest, _INT(0)), rest, _INT(0))
    return VectorAccess(builder, True, False, rest)


@intrinsic
def _forward_rows(typingctx, outs, rows, left, x, x_base, steps, row_offsets, w, out,
                    out_base, out_offsets):
    """The forward kernel, a numba intrinsic over flat float32 arrays: for rows r < rows
    (at most ``rows_per_call(outs)``, ``outs`` in OUTPUTS) and lanes l < left (at most
    LANES), ``out[out_base + out_offsets[r] + l*outs + o] = sum over i < len(steps) of
    x[x_base + steps[i] + row_offsets[r] + l] * w[i*outs + o]``, summed in order of i."""

    def codegen(context, builder, signature, args):
        operands = dict(zip(("left", "x", "x_base", "steps", "row_offsets", "w", "out",
                             "out_base", "out_offsets"),
                            loops_ir.arguments(context, builder, signature, args)[2:]))
        count = builder.extract_value(
            context.make_array(signature.args[5])(context, builder, args[5]).shape, 0)
        full = builder.icmp_signed("==", operands["left"], _INT(LANES))
        loops_ir.switch(builder, args[0], OUTPUTS, lambda outs: loops_ir.switch(
            builder, args[1], range(1, rows_per_call(outs) + 1),
            lambda rows: _emit_both(builder, full, rows, outs, count=count, **operands)))
        return context.get_dummy_value()

    return loops_ir.typed((outs, rows, left, x, x_base, steps, row_offsets, w, out, out_base,
                           out_offsets), (3, 7, 8), (5, 6, 10), codegen)


def _emit_both(builder, full, rows, outs, **operands):
    """The loop for whole vectors of positions and, for a row's last few, a masked one."""
    with builder.if_else(full) as (whole, partial):
        with whole:
            _emit_loop(builder, rows, outs, masked=False, **operands)
        with partial:
            _emit_loop(builder, rows, outs, masked=True, **operands)


def _emit_loop(builder, rows, outs, masked, left, x, x_base, steps, row_offsets, w, out,
               out_base, out_offsets, count):
    """The IR of one call: ``rows`` x ``outs`` accumulators summed over the ``count`` steps,
    transposed and stored."""
    fma = loops_ir.fma(builder, _VECTOR)
    source = VectorAccess(builder, masked, False, left)
    zero = ir.Constant(_VECTOR, [0.0] * LANES)
    row_at = [builder.add(x_base, builder.load(builder.gep(row_offsets, [_INT(r)])))
              for r in range(rows)]

    def step(i, sums):
        at = builder.load(builder.gep(steps, [i]))
        weights_at = builder.mul(i, _INT(outs))
        weights = []
        for o in range(outs):
            value = builder.load(builder.gep(w, [builder.add(weights_at, _INT(o))]))
            weights.append(loops_ir.broadcast(builder, value, _VECTOR))
        added = []
        for r in range(rows):
            values = source.load(x, builder.add(at, row_at[r]))
            added += [builder.call(fma, [values, weights[o], sums[r * outs + o]])
                      for o in range(outs)]
        return added

    sums = loops_ir.counted_loop(builder, count, [zero] * (rows * outs), step)
    filled = builder.mul(left, _INT(outs))      # floats a row stores
    for r in range(rows):
        start = builder.add(out_base, builder.load(builder.gep(out_offsets, [_INT(r)])))
        for j, vector in enumerate(_channels_last(builder, sums[r * outs:(r + 1) * outs])):
            at = builder.add(start, _INT(j * LANES))
            if masked:
                _clamped_mask(builder, filled, j).store(vector, out, at)
            else:
                VectorAccess(builder, False, False, None).store(vector, out, at)


@intrinsic
def _dy_planar(typingctx, outs, src, src_at, left, dst, dst_at):
    """The dy transposition, a numba intrinsic over flat float32 arrays: ``dst[dst_at +
    o*LANES + l] = src[src_at + l*outs + o]`` for lanes l < left (at most LANES), zeros
    past them; ``outs`` in OUTPUTS."""

    def codegen(context, builder, signature, args):
        src, src_at, left, dst, dst_at = loops_ir.arguments(context, builder, signature,
                                                            args)[1:]

        def emit(outs):
            filled = builder.mul(left, _INT(outs))
            loaded = [_clamped_mask(builder, filled, j).load(
                src, builder.add(src_at, _INT(j * LANES))) for j in range(outs)]
            for o, vector in enumerate(_channel_planar(builder, loaded)):
                VectorAccess(builder, False, False, None).store(
                    vector, dst, builder.add(dst_at, _INT(o * LANES)))

        loops_ir.switch(builder, args[0], OUTPUTS, emit)
        return context.get_dummy_value()

    return loops_ir.typed((outs, src, src_at, left, dst, dst_at), (1, 4), (), codegen)


@intrinsic
def _products(typingctx, outs, pairs, x, x_base, steps, dyt, rows, full, chunks,
                     x_row, left, sums, sums_at):
    """The filter-gradient kernel, a numba intrinsic over flat arrays: for pairs t < pairs
    (at most ``pairs_per_call(outs)``, ``outs`` in OUTPUTS), output channels o and lanes l,
    ``sums[sums_at + (t*outs + o)*LANES + l] +=`` the sum over rows r < rows and chunks
    k < full (then one chunk of ``left`` lanes when left > 0) of ``x[x_base + steps[t] +
    r*x_row + k*LANES + l] * dyt[((r*chunks + k)*outs + o)*LANES + l]``."""

    def codegen(context, builder, signature, args):
        operands = dict(zip(("x", "x_base", "steps", "dyt", "rows", "full", "chunks",
                             "x_row", "left", "sums", "sums_at"),
                            loops_ir.arguments(context, builder, signature, args)[2:]))
        loops_ir.switch(builder, args[0], OUTPUTS, lambda outs: loops_ir.switch(
            builder, args[1], range(1, pairs_per_call(outs) + 1),
            lambda pairs: _emit_products(builder, pairs, outs, **operands)))
        return context.get_dummy_value()

    return loops_ir.typed((outs, pairs, x, x_base, steps, dyt, rows, full, chunks, x_row,
                           left, sums, sums_at), (2, 5, 11), (4,), codegen)


def _emit_products(builder, pairs, outs, x, x_base, steps, dyt, rows, full, chunks, x_row,
                   left, sums, sums_at):
    """The IR of one filter-gradient call: its ``pairs`` x ``outs`` vectors of sums loaded,
    added to over the rows' chunks, stored back."""
    fma = loops_ir.fma(builder, _VECTOR)
    plain = VectorAccess(builder, False, False, None)
    starts = [builder.add(x_base, builder.load(builder.gep(steps, [_INT(t)])))
              for t in range(pairs)]
    held = [plain.load(sums, builder.add(sums_at, _INT(i * LANES)))
            for i in range(pairs * outs)]

    def chunk(access, at, dy_at, values):
        inputs = [access.load(x, builder.add(start, at)) for start in starts]
        added = list(values)
        for o in range(outs):
            grads = plain.load(dyt, builder.add(dy_at, _INT(o * LANES)))
            for t in range(pairs):
                added[t * outs + o] = builder.call(fma, [inputs[t], grads, added[t * outs + o]])
        return added

    def row(r, values):
        x_at = builder.mul(r, x_row)
        dy_row = builder.mul(builder.mul(r, chunks), _INT(outs * LANES))
        values = loops_ir.counted_loop(
            builder, full, values,
            lambda k, carried: chunk(plain, builder.add(x_at, builder.mul(k, _INT(LANES))),
                                     builder.add(dy_row, builder.mul(k, _INT(outs * LANES))),
                                     carried))
        last = builder.icmp_signed(">", left, _INT(0))
        before = builder.block
        with builder.if_then(last):
            masked = chunk(VectorAccess(builder, True, False, left),
                           builder.add(x_at, builder.mul(full, _INT(LANES))),
                           builder.add(dy_row, builder.mul(full, _INT(outs * LANES))), values)
            inside = builder.block
        merged = []
        for value, updated in zip(values, masked):
            phi = builder.phi(value.type)
            phi.add_incoming(value, before)
            phi.add_incoming(updated, inside)
            merged.append(phi)
        return merged

    totals = loops_ir.counted_loop(builder, rows, held, row)
    for i, value in enumerate(totals):
        plain.store(value, sums, builder.add(sums_at, _INT(i * LANES)))


@njit(cache=True, parallel=True, nogil=True)
def forward(xp, steps, w, y, y_strides, geometry, tiled, kinds, activation):
    """y = the conv of the channel-planar zero-padded input ``xp`` ``[N, C, P1, P2, P3]``
    (flat) by w ``[pairs, O]`` (flat; pairs of (tap, channel), ``steps[i]``: where pair i
    lies from a window's origin in xp), into y ``[N, Q1, Q2, Q3, O]`` (O in OUTPUTS): the
    flat memory it spans, ``y_strides`` apart (image, plane, row; a row's Q3 x O values
    consecutive), so that it may be a strided view (a phase of an input gradient).
    ``geometry``: (N, Q1, Q2, Q3, O, C, P1, P2, P3, s1): stride s1 along the first spatial
    dim, 1 along the others. The threads take the output planes (n, q1) one at a time; a
    finished plane goes through the epilogue ``(tiled, kinds, activation)`` while it is in
    the cache (``compiled.elementwise.chain_rows``; no kinds and activation 0 for none)."""
    n_total, q1n, q2n, q3n, outs, channels, p1, p2, p3, s1 = geometry
    image_stride, plane_stride, row_stride = y_strides
    rows_max = rows_per_call(outs)
    row_offsets = np.arange(rows_max) * p3
    out_offsets = np.arange(rows_max) * row_stride
    for plane in prange(n_total * q1n):
        n, q1 = plane // q1n, plane % q1n
        x_plane = (n * channels * p1 + q1 * s1) * p2 * p3
        y_plane = n * image_stride + q1 * plane_stride
        for q2 in range(0, q2n, rows_max):
            rows = min(rows_max, q2n - q2)
            for q3 in range(0, q3n, LANES):
                _forward_rows(outs, rows, min(LANES, q3n - q3), xp, x_plane + q2 * p3 + q3,
                              steps, row_offsets, w, y, y_plane + q2 * row_stride + q3 * outs,
                              out_offsets)
        if kinds.shape[0] or activation:
            for q2 in range(q2n):
                row = y_plane + q2 * row_stride
                chain_rows(y[row:row + q3n * outs], tiled, kinds, activation,
                           y.dtype.type(0), y.dtype.type(6))


@njit(cache=True, parallel=True, nogil=True)
def filter_grad(xp, steps, dy, sums, geometry):
    """sums[p, i*O + o] += the filter gradient of pair i (as ``forward`` takes xp, steps
    and geometry) and output channel o over block p of the output planes (n, q1), dy ``[N,
    Q1, Q2, Q3, O]`` flat, sums float64 ``[parts, pairs*O]``. Each (pair, channel) sums
    lane by lane in float32 over FLUSH_PLANES planes at a time, flushed to float64, the
    lanes added last."""
    n_total, q1n, q2n, q3n, outs, channels, p1, p2, p3, s1 = geometry
    pairs, parts = steps.shape[0], sums.shape[0]
    planes = n_total * q1n
    chunks, full, left = (q3n + LANES - 1) // LANES, q3n // LANES, q3n % LANES
    per_call = pairs_per_call(outs)
    for part in prange(parts):
        lanes = np.zeros(pairs * outs * LANES, np.float32)
        flushed = np.zeros(pairs * outs * LANES)
        dyt = np.empty(q2n * chunks * outs * LANES, np.float32)
        first, stop = planes * part // parts, planes * (part + 1) // parts
        for plane in range(first, stop):
            n, q1 = plane // q1n, plane % q1n
            dy_plane = plane * q2n * q3n * outs
            for q2 in range(q2n):
                for k in range(chunks):
                    _dy_planar(outs, dy, dy_plane + (q2 * q3n + k * LANES) * outs,
                               min(LANES, q3n - k * LANES), dyt,
                               (q2 * chunks + k) * outs * LANES)
            x_plane = (n * channels * p1 + q1 * s1) * p2 * p3
            for t in range(0, pairs, per_call):
                _products(outs, min(per_call, pairs - t), xp, x_plane, steps[t:t + per_call],
                          dyt, q2n, full, chunks, p3, left, lanes, t * outs * LANES)
            if (plane - first) % FLUSH_PLANES == FLUSH_PLANES - 1 or plane == stop - 1:
                flushed += lanes
                lanes[:] = 0
        total = sums[part]
        for i in range(pairs * outs):
            total[i] += flushed[i * LANES:(i + 1) * LANES].sum()
