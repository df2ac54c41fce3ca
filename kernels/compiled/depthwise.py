"""Compiled loops of the depthwise conv ops (numba): forward, filter and input gradients,
for the ops ``compiled.depthwise_vectors`` does not take (float16 and float64, bfloat16
with filters of more taps than one of its calls holds, and depth multipliers above 1).

Each op is one pass over its operands. Output rows are split into ``parts`` contiguous
blocks (threads take one at a time); within a block every input row streams from memory
once. Operands are C-contiguous and channels-last: x and dx ``[N, H, W, C]``, y and dy
``[N, OH, OW, CM]`` with ``CM = C*M`` (output channel ``c*M + m`` is input channel c
filtered by ``w[..., c, m]``).

Inner loops run over a chunk of ``cols`` output columns times CM channels, a contiguous
run in every operand, and share loads: two output rows per pass (they meet the same filter
taps), three taps per pass. Hence:

* source rows are copied once into a per-block row cache: x rows zero-padded, split by
  column phase (padded column % stride) and with each channel repeated M times, for the
  forward and the filter gradient; dy rows zero-padded for the input gradient. Any tap of
  any column chunk then reads one contiguous run. As in TF's CPU kernels, padding zeros
  are multiplied;
* the filter comes tiled ``cols`` times along the columns: ``taps[i*KW + j, t*CM + cm]``;
* the input gradient is a gather per column phase of a dx row (with stride 1 and M = 1 the
  row itself): dy value (oh, ow) meets tap (i, j) only where it lands, so NaN/Inf in dy
  reach only the dx positions their taps reach; phases and M channels are then folded
  into dx;
* output rows are computed in cache-resident buffers and written out whole by streaming
  (non-temporal) stores, which skip reading the output's lines from memory first;
* the forward and the filter gradient prefetch, while computing a row pair, the rows the
  next pair reads, so they stream in meanwhile;
* buffers start on cache lines (a vector load straddling two costs twice as much), and
  float16/bfloat16 operands (given as their bits) are widened to float32 as rows load and
  rounded as output rows are stored.

Every output element is summed in a fixed order (taps row-major; the filter gradient over
each block's rows, then blocks in order), so results depend only on the block count.
"""

import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.core import cgutils
from numba.extending import intrinsic, overload

from graphops.kernels.compiled import host_isa
from graphops.kernels.compiled.casts import (bfloat16_bits, bfloat16_value, converted_half_bits,
                                             converted_half_value, half_bits, half_value)
from graphops.kernels.compiled.constants import CACHE_LINE_BYTES
from graphops.kernels.compiled.ir import fence

# float16 <-> float32 by the CPU's vector conversions where numba's code has them (every
# value the loops convert is widened for arithmetic or is an arithmetic result, where they
# agree with the bit conversions), else by the bit conversions
CPU_HALF = host_isa.float16_conversions()

FLUSH_ROWS = 64   # filter gradient: rows summed in the input dtype between float64 flushes


@njit(cache=True, nogil=True)
def _add_products(out, out1, src, offsets, offsets1, weights, rows, base):
    """out += sum over taps t (in order) of src[base + offsets[t] + k] * weights[rows[t], k],
    and out1 likewise from ``offsets1``: two output rows sharing each weight load.

    Three taps per pass: one load and one store of out per three products.
    """
    count = out.shape[0]
    t, taps = 0, offsets.shape[0]
    while t + 3 <= taps:
        a0 = src[base + offsets[t]:base + offsets[t] + count]
        a1 = src[base + offsets[t + 1]:base + offsets[t + 1] + count]
        a2 = src[base + offsets[t + 2]:base + offsets[t + 2] + count]
        c0 = src[base + offsets1[t]:base + offsets1[t] + count]
        c1 = src[base + offsets1[t + 1]:base + offsets1[t + 1] + count]
        c2 = src[base + offsets1[t + 2]:base + offsets1[t + 2] + count]
        b0, b1 = weights[rows[t], :count], weights[rows[t + 1], :count]
        b2 = weights[rows[t + 2], :count]
        for k in range(count):
            w0, w1, w2 = b0[k], b1[k], b2[k]
            v = out[k] + a0[k] * w0 + a1[k] * w1 + a2[k] * w2
            v1 = out1[k] + c0[k] * w0 + c1[k] * w1 + c2[k] * w2
            out[k] = v
            out1[k] = v1
        t += 3
    while t < taps:
        a0 = src[base + offsets[t]:base + offsets[t] + count]
        c0 = src[base + offsets1[t]:base + offsets1[t] + count]
        b0 = weights[rows[t], :count]
        for k in range(count):
            w0 = b0[k]
            v = out[k] + a0[k] * w0
            v1 = out1[k] + c0[k] * w0
            out[k] = v
            out1[k] = v1
        t += 1


@njit(cache=True, nogil=True)
def _add_dot_products(partial, src, offsets, offsets1, d, d1, start):
    """partial[t, k] += src[offsets[t] + start + k] * d[k] + src[offsets1[t] + start + k] * d1[k]
    for every tap t: two output rows per pass, three taps sharing each load of d and d1."""
    count = d.shape[0]
    t, taps = 0, offsets.shape[0]
    while t + 3 <= taps:
        p0, p1, p2 = partial[t, :count], partial[t + 1, :count], partial[t + 2, :count]
        a0 = src[offsets[t] + start:offsets[t] + start + count]
        a1 = src[offsets[t + 1] + start:offsets[t + 1] + start + count]
        a2 = src[offsets[t + 2] + start:offsets[t + 2] + start + count]
        c0 = src[offsets1[t] + start:offsets1[t] + start + count]
        c1 = src[offsets1[t + 1] + start:offsets1[t + 1] + start + count]
        c2 = src[offsets1[t + 2] + start:offsets1[t + 2] + start + count]
        for k in range(count):
            e, e1 = d[k], d1[k]
            v0 = p0[k] + a0[k] * e + c0[k] * e1
            v1 = p1[k] + a1[k] * e + c1[k] * e1
            v2 = p2[k] + a2[k] * e + c2[k] * e1
            p0[k] = v0
            p1[k] = v1
            p2[k] = v2
        t += 3
    while t < taps:
        p0 = partial[t, :count]
        a0 = src[offsets[t] + start:offsets[t] + start + count]
        c0 = src[offsets1[t] + start:offsets1[t] + start + count]
        for k in range(count):
            p0[k] = p0[k] + a0[k] * d[k] + c0[k] * d1[k]
        t += 1


@intrinsic
def _prefetch(typingctx, array, index):
    """Asks the CPU to start fetching the cache line of ``array[index]`` (LLVM's prefetch:
    a hint, never a fault), so rows stream in while the current ones are computed."""
    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        byte_pointer = ir.IntType(8).as_pointer()
        int32 = ir.IntType(32)
        hint = builder.module.declare_intrinsic(
            "llvm.prefetch", fnty=ir.FunctionType(ir.VoidType(), [byte_pointer] + [int32] * 3))
        address = builder.bitcast(builder.gep(data, [args[1]]), byte_pointer)
        # read, keep in all cache levels, data cache
        builder.call(hint, [address, int32(0), int32(3), int32(1)])
        return context.get_dummy_value()
    return types.void(array, index), codegen


@njit(cache=True, nogil=True)
def _row(flat, rows, length, n, row):
    """Row (n, row) of a C-contiguous ``[N, rows, ...]`` array given as its flat view
    (``length`` values a row). A slice of the flat view: reshaping each row costs a call."""
    start = (n * rows + row) * length
    return flat[start:start + length]


@njit(cache=True, nogil=True)
def _prefetch_rows(flat, rows, length, n, first_row, count, piece, pieces):
    """Prefetches piece ``piece`` of ``pieces`` of rows [first_row, first_row + count) of
    image n of ``flat`` (rows outside skipped), a C-contiguous ``[N, rows, ...]`` array's
    flat view with ``length`` values a row."""
    for row in range(max(first_row, 0), min(first_row + count, rows)):
        start = (n * rows + row) * length
        for k in range(start + length * piece // pieces, start + length * (piece + 1) // pieces,
                       CACHE_LINE_BYTES // flat.itemsize):
            _prefetch(flat, k)


def _cast(value, like, bfloat):
    """``value`` as an element of array ``like``: a float as it is (in like's type), float16
    bits (uint16) widened to a float32 value or a float32 value narrowed to float16 bits;
    bfloat16 instead when ``bfloat``. Chosen by type when compiled."""


@overload(_cast, inline="always")
def _cast_typed(value, like, bfloat):
    widen, narrow = ((converted_half_value, converted_half_bits) if CPU_HALF
                     else (half_value, half_bits))
    if isinstance(value, types.Integer):
        return lambda value, like, bfloat: (bfloat16_value(value) if bfloat
                                            else widen(value))
    if isinstance(like.dtype, types.Integer):
        return lambda value, like, bfloat: (bfloat16_bits(np.float32(value)) if bfloat
                                            else narrow(np.float32(value)))
    return lambda value, like, bfloat: like.dtype.type(value)    # noqa: E731


def _copy(dst, src, bfloat):
    """dst[:] = src cast (``_cast``), for 1-D contiguous arrays known not to overlap: of one
    dtype a memcpy (a compiled loop checks for overlap on every call, which costs more than
    copying a pixel's channels), else a converting loop."""


@overload(_copy, inline="always")
def _copy_typed(dst, src, bfloat):
    if dst.dtype == src.dtype:
        return lambda dst, src, bfloat: _memcpy(dst, src)

    def convert(dst, src, bfloat):
        for k in range(dst.shape[0]):
            dst[k] = _cast(src[k], dst, bfloat)
    return convert


@intrinsic
def _memcpy(typingctx, dst, src):
    """Copies 1-D contiguous ``src`` into ``dst`` (same dtype and size) by llvm.memcpy."""
    def codegen(context, builder, signature, args):
        target = context.make_array(signature.args[0])(context, builder, args[0])
        source = context.make_array(signature.args[1])(context, builder, args[1])
        cgutils.raw_memcpy(builder, target.data, source.data, target.nitems,
                           context.get_abi_sizeof(context.get_data_type(
                               signature.args[0].dtype)))
        return context.get_dummy_value()
    return types.void(dst, src), codegen


def _store_row(row, computed, bfloat):
    """row[:] = computed, cast (``_cast``): a float row by streaming stores (``_stream``),
    half bits rounded."""


@overload(_store_row, inline="always")
def _store_row_typed(row, computed, bfloat):
    if isinstance(row.dtype, types.Integer):
        return lambda row, computed, bfloat: _copy(row, computed, bfloat)
    return lambda row, computed, bfloat: _stream(row, computed)     # noqa: E731


@njit(cache=True, nogil=True)
def _stream(dst, src):
    """dst[:] = src (1-D, same dtype), the cache lines of dst written whole with
    non-temporal stores: they go to memory without first being read into the cache (a third
    of a copy's memory traffic) and without evicting what the loops still use. A thread
    ends its stores with ``fence``."""
    lanes = CACHE_LINE_BYTES // dst.itemsize
    head = min(dst.shape[0], (-dst.ctypes.data % CACHE_LINE_BYTES) // dst.itemsize)
    k = 0
    while k < head:
        dst[k] = src[k]
        k += 1
    while k + lanes <= dst.shape[0]:
        _stream_line(dst, k, src, k)
        k += lanes
    while k < dst.shape[0]:
        dst[k] = src[k]
        k += 1


@intrinsic
def _stream_line(typingctx, dst, at, src, src_at):
    """dst[at:at + L] = src[src_at:src_at + L], L values making one cache line, by one
    non-temporal vector store; ``dst[at]`` starts a cache line."""
    def codegen(context, builder, signature, args):
        dst_type, _, src_type, _ = signature.args
        line = ir.VectorType(context.get_value_type(dst_type.dtype),
                             CACHE_LINE_BYTES // context.get_abi_sizeof(
                                 context.get_value_type(dst_type.dtype)))
        source = context.make_array(src_type)(context, builder, args[2]).data
        target = context.make_array(dst_type)(context, builder, args[0]).data
        value = builder.load(builder.bitcast(builder.gep(source, [args[3]]),
                                             line.as_pointer()), align=1)
        store = builder.store(value, builder.bitcast(builder.gep(target, [args[1]]),
                                                     line.as_pointer()), align=CACHE_LINE_BYTES)
        store.set_metadata("nontemporal",
                           builder.module.add_metadata([ir.Constant(ir.IntType(32), 1)]))
        return context.get_dummy_value()
    return types.void(dst, at, src, src_at), codegen


@njit(cache=True, nogil=True)
def _rows_of_part(rows, parts, part):
    """Row block ``part`` of ``parts``: [first, last)."""
    return rows * part // parts, rows * (part + 1) // parts


@njit(cache=True, nogil=True)
def _load_row(cache, flat, c, left, m, bfloat):
    """Copies row ``flat`` (W*C values, cast to the cache's dtype) into
    ``cache[phase, q*C*M + c*M + m]``, where padded column ``q*s + phase`` holds source
    column ``q*s + phase - left``; the rest is zero."""
    s = cache.shape[0]
    width = flat.shape[0] // c
    cm = c * m
    for phase in range(s):
        first = max(0, -((phase - left) // s))               # first q inside src
        last = max(first, min(cache.shape[1] // cm, (width - 1 - phase + left) // s + 1))
        dst = cache[phase]
        dst[:first * cm] = 0
        dst[last * cm:] = 0
        if s == 1 and m == 1:
            _copy(dst[first * c:last * c], flat[(first - left) * c:(last - left) * c], bfloat)
            continue
        for q in range(first, last):
            col = q * s + phase - left
            if m == 1:
                _copy(dst[q * c:(q + 1) * c], flat[col * c:(col + 1) * c], bfloat)
                continue
            for ch in range(c):
                value = _cast(flat[col * c + ch], dst, bfloat)
                for mm in range(m):
                    dst[q * cm + ch * m + mm] = value


@njit(cache=True, nogil=True)
def _fetch(cache, keys, flat, shape, n, row, left, m, bfloat):
    """The cache slot holding row (n, row) of the ``shape`` ``[N, R, W, C]`` array of flat
    view ``flat`` as ``_load_row`` lays it out (zeros for rows outside it), loading it if
    needed.

    Row r lives in slot ``r % len(keys)``: the rows a pair of output rows reads span at
    most that many consecutive rows, so they never share a slot. ``keys`` records each
    slot's (n, row). The cache's last slot stays zero.
    """
    slot = row % keys.shape[0]
    if keys[slot, 0] != n or keys[slot, 1] != row:
        _, rows, width, c = shape
        if 0 <= row < rows:
            _load_row(cache[slot], _row(flat, rows, width * c, n, row), c, left, m, bfloat)
        else:
            cache[slot] = 0
        keys[slot, 0] = n
        keys[slot, 1] = row
    return slot


@njit(cache=True, nogil=True)
def aligned_scratch(shape, dtype_of):
    """A compiled loop's scratch buffer: an empty array of ``shape`` and ``dtype_of``'s dtype
    (an array's) starting on a cache line. (``kernel_util.aligned_empty`` is the NumPy one,
    for a dtype and any offset within a line.)"""
    size = 1
    for extent in shape:
        size *= extent
    step = CACHE_LINE_BYTES // dtype_of.itemsize
    buf = np.empty(size + step, dtype_of.dtype)
    skip = (-buf.ctypes.data % CACHE_LINE_BYTES) // dtype_of.itemsize
    return buf[skip:skip + size].reshape(shape)


@njit(cache=True, nogil=True)
def _new_cache(span, phases, width, dtype_of):
    """An empty row cache of ``span`` slots and a zero slot, ``[span + 1, phases, width']``
    of ``dtype_of``'s dtype (``width`` rounded up so every row starts on a cache line), and
    its keys."""
    step = CACHE_LINE_BYTES // dtype_of.itemsize
    cache = aligned_scratch((span + 1, phases, (width + step - 1) // step * step), dtype_of)
    cache[span] = 0
    return cache, np.full((span, 2), -1, np.int64)


@njit(cache=True, nogil=True)
def _x_offsets(offsets, cache, keys, xf, x_shape, n, oh, geometry, bfloat):
    """Loads the x rows of output row (n, oh) (oh = -1: none, the zero slot stands in);
    ``offsets[i*KW + j]``: where tap (i, j) of output column 0 starts in the flat cache."""
    kh, kw, m, sh, sw, dh, dw, pt, pl = geometry
    cm = x_shape[3] * m
    for i in range(kh):
        slot = keys.shape[0]
        if oh >= 0:
            slot = _fetch(cache, keys, xf, x_shape, n, oh * sh + i * dh - pt, pl, m, bfloat)
        for j in range(kw):
            offsets[i * kw + j] = ((slot * sw + j * dw % sw) * cache.shape[2]
                                   + j * dw // sw * cm)


@njit(cache=True, parallel=True, nogil=True)
def forward(x, taps, y, geometry, cols, parts, bfloat):
    """y[n, oh, ow, cm] = sum over taps (i, j) of x[n, oh*sh + i*dh - pt, ow*sw + j*dw - pl,
    cm // M] * w[i, j, cm] (zero outside x); ``taps`` is w tiled ``cols`` times, in the
    compute dtype; ``geometry`` is (KH, KW, M, sh, sw, dh, dw, pt, pl). x and y are floats
    or (compute dtype float32) half bits, widened as rows load and narrowed as they finish.

    Output rows go in pairs (oh, oh + 1); a lone row is paired with a scratch row.
    """
    kh, kw, m, sh, sw, dh, dw, pt, pl = geometry
    n_total, oh_total, ow_total, cm = y.shape
    rows = n_total * oh_total
    parts = max(1, min(parts, rows))
    width = (ow_total + (kw - 1) * dw // sw) * cm
    xf, yf = x.reshape(x.size), y.reshape(y.size)
    x_len, y_len = x.shape[2] * x.shape[3], ow_total * cm
    for part in prange(parts):
        order = np.arange(kh * kw)
        cache, keys = _new_cache((kh - 1) * dh + 1 + sh, sw, width, taps)
        flat = cache.reshape(cache.size)
        offsets = np.empty((2, kh * kw), np.int64)
        buffers = aligned_scratch((3, y_len), taps)     # rows computed, then stored
        scratch = buffers[2]
        first, last = _rows_of_part(rows, parts, part)
        r = first
        while r < last:
            n, oh = r // oh_total, r % oh_total
            pair = r + 1 < last and oh + 1 < oh_total
            _x_offsets(offsets[0], cache, keys, xf, x.shape, n, oh, geometry, bfloat)
            y_row, y_next = buffers[0], scratch
            if pair:
                _x_offsets(offsets[1], cache, keys, xf, x.shape, n, oh + 1, geometry, bfloat)
                y_next = buffers[1]
            else:
                offsets[1] = offsets[0]
            fresh = (oh + 1) * sh + (kh - 1) * dh - pt + 1   # next pair's first new x row
            chunks = (ow_total + cols - 1) // cols
            for ow0 in range(0, ow_total, cols):
                lo, hi = ow0 * cm, min(ow0 + cols, ow_total) * cm
                _prefetch_rows(xf, x.shape[1], x_len, n, fresh, 2 * sh, ow0 // cols, chunks)
                y_row[lo:hi] = 0
                y_next[lo:hi] = 0
                _add_products(y_row[lo:hi], y_next[lo:hi], flat, offsets[0], offsets[1],
                              taps, order, lo)
            for k in range(1 + pair):
                _store_row(_row(yf, oh_total, y_len, n, oh + k), buffers[k], bfloat)
            r += 2 if pair else 1
        fence()


@njit(cache=True, parallel=True, nogil=True)
def backprop_filter(x, dy, sums, partials, geometry, cols, bfloat):
    """Adds per-block filter-gradient sums to ``sums`` (float64 ``[parts, KH*KW, cols*CM]``,
    one block per row block): ``sums[p, i*KW + j, t*CM + cm]`` gets x * dy summed over
    block p's rows and the output columns with ``ow % cols == t``. The caller adds the
    blocks in order, then the column groups. (Allocated in here, it made every block a
    thread takes cost milliseconds more under numba's dynamic scheduling.) ``partials``
    (``[parts, KH*KW, cols*CM]``, the compute dtype) hold each block's running sums
    between float64 flushes; x and dy are floats or half bits, widened as rows load.

    Output rows go in pairs (oh, oh + 1); a lone row is paired with zeros.
    """
    kh, kw, m, sh, sw, dh, dw, pt, pl = geometry
    n_total, oh_total, ow_total, cm = dy.shape
    rows, parts = n_total * oh_total, sums.shape[0]
    width = (ow_total + (kw - 1) * dw // sw) * cm
    xf, dyf = x.reshape(x.size), dy.reshape(dy.size)
    x_len, dy_len = x.shape[2] * x.shape[3], ow_total * cm
    for part in prange(parts):
        partial = partials[part]
        cache, keys = _new_cache((kh - 1) * dh + 1 + sh, sw, width, partial)
        flat = cache.reshape(cache.size)
        offsets = np.empty((2, kh * kw), np.int64)
        rows_in = aligned_scratch((2, dy_len), partial)
        zeros = np.zeros(dy_len, partial.dtype)
        partial[:] = 0
        first, last = _rows_of_part(rows, parts, part)
        r, flushed = first, first
        while r < last:
            n, oh = r // oh_total, r % oh_total
            pair = r + 1 < last and oh + 1 < oh_total
            _x_offsets(offsets[0], cache, keys, xf, x.shape, n, oh, geometry, bfloat)
            _x_offsets(offsets[1], cache, keys, xf, x.shape, n, oh + 1 if pair else -1,
                       geometry, bfloat)
            # dy rows copied (widened) into cache-resident buffers: the products' loop then
            # never waits on memory (measured 8% faster than reading dy in place)
            dy_row, dy_next = rows_in[0], zeros
            _copy(dy_row, _row(dyf, oh_total, dy_len, n, oh), bfloat)
            if pair:
                dy_next = rows_in[1]
                _copy(dy_next, _row(dyf, oh_total, dy_len, n, oh + 1), bfloat)
            fresh = (oh + 1) * sh + (kh - 1) * dh - pt + 1   # next pair's first new x row
            chunks = (ow_total + cols - 1) // cols
            for ow0 in range(0, ow_total, cols):
                lo, hi = ow0 * cm, min(ow0 + cols, ow_total) * cm
                _prefetch_rows(xf, x.shape[1], x_len, n, fresh, 2 * sh, ow0 // cols, chunks)
                _prefetch_rows(dyf, oh_total, dy_len, n, oh + 2, 2, ow0 // cols, chunks)
                _add_dot_products(partial, flat, offsets[0], offsets[1], dy_row[lo:hi],
                                  dy_next[lo:hi], lo)
            r += 2 if pair else 1
            if r - flushed >= FLUSH_ROWS or r >= last:
                sums[part] += partial
                partial[:] = 0
                flushed = r


@njit(cache=True, nogil=True)
def _dy_offsets(offsets, chosen, cache, keys, dyf, dy_shape, n, row, pair, phase, geometry,
                reach, bfloat):
    """Loads the dy rows that dx row (n, row) meets (and row + sh with ``pair``; the cache's
    rows padded by ``reach`` zero columns each side) and lists the taps (i, j) of column
    phase ``phase`` that reach it, in order: ``chosen[t] = i*KW + j``, and ``offsets[0, t]``
    (``offsets[1, t]``: for row + sh) where the tap's column shift of dy starts in the flat
    cache. Returns the number of taps listed."""
    kh, kw, m, sh, sw, dh, dw, pt, pl = geometry
    cm = dy_shape[3]
    count = 0
    for i in range(kh):
        t = row + pt - i * dh
        if t % sh != 0:
            continue
        slot0 = slot1 = _fetch(cache, keys, dyf, dy_shape, n, t // sh, reach, 1, bfloat)
        if pair:
            slot1 = _fetch(cache, keys, dyf, dy_shape, n, t // sh + 1, reach, 1, bfloat)
        for j in range(kw):
            if j * dw % sw == phase:
                shift = (reach - j * dw // sw) * cm
                offsets[0, count] = slot0 * cache.shape[2] + shift
                offsets[1, count] = slot1 * cache.shape[2] + shift
                chosen[count] = i * kw + j
                count += 1
    return count


@njit(cache=True, parallel=True, nogil=True)
def backprop_input(dy, taps, dx, geometry, cols, parts, bfloat):
    """dx[n, ih, iw, c] = sum of dy[n, oh, ow, c*M + mm] * w[i, j, c*M + mm] over the taps
    (i, j) and mm with oh*sh + i*dh - pt = ih and ow*sw + j*dw - pl = iw; ``taps`` is w
    tiled ``cols`` times, in the compute dtype. dy and dx are floats or half bits, widened
    as rows load and narrowed as they finish.

    dx rows go in pairs (ih, ih + sh), which meet the same taps; a lone row is paired with
    a scratch row.
    """
    kh, kw, m, sh, sw, dh, dw, pt, pl = geometry
    n_total, oh_total, ow_total, cm = dy.shape
    _, h_total, w_total, _ = dx.shape
    direct = sw == 1 and m == 1
    rows = n_total * h_total
    parts = max(1, min(parts, rows))
    reach = (kw - 1) * dw // sw
    q_total = ow_total + reach      # gathered columns per phase
    dyf, dxf, dx_len = dy.reshape(dy.size), dx.reshape(dx.size), w_total * dx.shape[3]
    for part in prange(parts):
        # dy rows, padded by ``reach`` zero columns each side: tap column shift q_j reads
        # dy column q - q_j at padded column q - q_j + reach; rows outside dy are zero
        cache, keys = _new_cache(((kh - 1) * dh) // sh + 3, 1, (ow_total + 2 * reach) * cm,
                                 taps)
        flat = cache.reshape(cache.size)
        gathered = aligned_scratch((2, sw, q_total * cm), taps)
        buffers = aligned_scratch((3, dx_len), taps)   # rows computed, then stored
        spare = buffers[2]
        offsets = np.empty((2, kh * kw), np.int64)
        chosen = np.empty(kh * kw, np.int64)
        first, last = _rows_of_part(rows, parts, part)
        r = first
        while r < last:
            n, ih = r // h_total, r % h_total
            block = min(2 * sh, last - r, h_total - ih)
            paired = sh if block == 2 * sh else 0
            for u in range(paired or block):     # paired: rows ih + u and ih + u + sh
                row, pair = ih + u, u < paired
                dx_row = _row(dxf, h_total, dx_len, n, row)
                dx_next = _row(dxf, h_total, dx_len, n, row + sh)    # used if pair
                for phase in range(sw):
                    count = _dy_offsets(offsets, chosen, cache, keys, dyf, dy.shape, n, row,
                                        pair, phase, geometry, reach, bfloat)
                    # gathered column q is padded dx column q*sw + phase; with sw = M = 1
                    # dx's own rows (or for half bits their buffers) take its columns
                    # q = pl + iw directly
                    out, out1 = gathered[0, phase], gathered[1, phase]
                    q_first, q_stop = 0, q_total
                    if direct:
                        out, out1 = buffers[0], buffers[1] if pair else spare
                        q_first, q_stop = pl, min(pl + w_total, q_total)
                    out[:] = 0
                    out1[:] = 0
                    for q0 in range(q_first, q_stop, cols):
                        lo, hi = q0 * cm, min(q0 + cols, q_stop) * cm
                        at = lo - q_first * cm
                        _add_products(out[at:at + hi - lo], out1[at:at + hi - lo], flat,
                                      offsets[0, :count], offsets[1, :count], taps,
                                      chosen[:count], lo)
                    if direct:
                        _store_row(dx_row, buffers[0], bfloat)
                        if pair:
                            _store_row(dx_next, buffers[1], bfloat)
                if not direct:
                    c = dx.shape[3]
                    _fold_row(dx_row.reshape(w_total, c), gathered[0], pl, m, bfloat)
                    if pair:
                        _fold_row(dx_next.reshape(w_total, c), gathered[1], pl, m, bfloat)
            r += block
        fence()


@njit(cache=True, nogil=True)
def _fold_row(dx_row, gathered, pl, m, bfloat):
    """dx_row[iw, c] = sum over mm of gathered[phase, q*CM + c*M + mm] (cast to dx_row's
    type), where padded column ``iw + pl = q*s + phase``; columns past the gathered ones get
    zero."""
    s = gathered.shape[0]
    w_total, c = dx_row.shape
    cm = c * m
    q_total = gathered.shape[1] // cm
    for iw in range(w_total):
        q, phase = divmod(iw + pl, s)
        if q >= q_total:
            dx_row[iw] = 0
            continue
        src = gathered[phase, q * cm:(q + 1) * cm]
        if m == 1:
            _copy(dx_row[iw], src, bfloat)
            continue
        for ch in range(c):
            total = src[ch * m]
            for mm in range(1, m):
                total += src[ch * m + mm]
            dx_row[iw, ch] = _cast(total, dx_row, bfloat)
