"""The bfloat16 forward conv on AMX tiles, or on AVX512-BF16 dot products of vectors where
a host has those and no tiles (numba, the tile operations written in LLVM IR).

An AMX unit keeps eight tile registers of 16 rows x 64 bytes and multiplies them whole:
``tdpbf16ps`` adds a [16 x 32] bfloat16 tile times a [32 x 16] one (packed in pairs of
rows) into a [16 x 16] float32 tile, 8,192 multiply-adds in one instruction, where a
fused multiply-add of vectors does 16. A block here is 32 output positions by 32 output
channels, four float32 tiles, summed over the (tap, 32-channel group) steps its line takes:
each step loads two tiles of the input (16 positions each, a row every ``x_step`` values
apart, read in place from the padded input) and two of the packed filter, and makes four
products. Products of bfloat16 values are exact in float32; the sums are float32 (the
unit treats subnormal inputs as zero and flushes subnormal sums, as TF's oneDNN does on
the same unit), each rounded once to bfloat16 as it is written.

The tile loops only for a host whose code numba generates with AMX-BF16 and whose kernel
grants the process the tile state (``host_isa.matrix_tiles``): LLVM cannot compile these
operations for any other CPU, and numba compiles a function at its first call.

Without tiles, a host with AVX512-BF16 (``host_isa.bfloat16_dots``: AMD Zen 4 on, Intel
Cooper Lake) sums the same blocks from the same packed operands on vectors
(``dot_forward``): ``vdpbf16ps`` adds the products of 16 pairs of bfloat16 values to 16
float32 sums, 32 multiply-adds an instruction where a float32 one does 16, with the same
arithmetic as a tile product (exact products, subnormal inputs as zero, subnormal sums
flushed).
"""

import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.extending import intrinsic

from graphops.kernels.compiled import ir as loops_ir
from graphops.kernels.compiled.casts import bfloat16_bits

TILE_ROWS = 16          # rows of a tile: output positions of an input tile
GROUP = 32              # input channels a step takes (a tile row's 64 bytes of bfloat16)
BLOCK = 2 * TILE_ROWS   # output positions and output channels a block takes
TILE_VALUES = TILE_ROWS * GROUP   # bfloat16 values of a packed filter tile
LINE_VALUES = 16        # float32 values of a cache line

DOT_ROWS = 8            # block rows whose sums (two vectors a row) a dot pass keeps

_I8, _I32, _I64 = ir.IntType(8), ir.IntType(32), ir.IntType(64)
_BYTES = _I8.as_pointer()


_SUMS = ir.VectorType(ir.FloatType(), LINE_VALUES)   # 16 float32 sums
_WORDS = ir.VectorType(_I32, LINE_VALUES)            # 16 pairs of bfloat16 bits


def configuration():
    """The tile configuration every block loads (palette 1): all eight tiles 16 rows of 64
    bytes. Tiles 0-3 hold the block's float32 sums, 4-5 the input, 6-7 the filter."""
    config = np.zeros(64, np.uint8)
    config[0] = 1
    config[16:32].view(np.uint16)[:8] = 64
    config[48:56] = TILE_ROWS
    return config


def _call(builder, name, *args):
    """Calls the LLVM intrinsic ``name`` (returning nothing) on ``args``."""
    function = builder.module.declare_intrinsic(
        name, fnty=ir.FunctionType(ir.VoidType(), [arg.type for arg in args]))
    builder.call(function, list(args))


def _address(builder, data, index):
    """The byte address of element ``index`` of the array whose data pointer is ``data``."""
    return builder.bitcast(builder.gep(data, [index]), _BYTES)


def _products(builder, rows, columns):
    """Emits one step of a block's sums: the row operand's two tiles (4, 5) and the column
    operand's two (6, 7) loaded, then the four products into tiles 0-3 (tile t: rows from
    tile 4 + t // 2, columns from tile 6 + t % 2). Each operand ``(data, at, row values,
    apart)``: a tile's rows ``row values`` bfloat16 values apart from ``at``, its second
    tile ``apart`` values further on."""
    for first_tile, (data, at, row_values, apart) in ((4, rows), (6, columns)):
        row_bytes = builder.mul(row_values, _I64(2))
        for tile, start in ((first_tile, at), (first_tile + 1, builder.add(at, apart))):
            _call(builder, "llvm.x86.tileloadd64", _I8(tile), _address(builder, data, start),
                  row_bytes)
    for tile, (row_tile, column_tile) in enumerate(((4, 6), (4, 7), (5, 6), (5, 7))):
        _call(builder, "llvm.x86.tdpbf16ps", _I8(tile), _I8(row_tile), _I8(column_tile))


@intrinsic
def load_configuration(typingctx, config):
    """Loads the tile configuration ``config`` (64 bytes) into the calling thread's unit."""
    def codegen(context, builder, signature, args):
        data = loops_ir.arguments(context, builder, signature, args)[0]
        _call(builder, "llvm.x86.ldtilecfg", builder.bitcast(data, _BYTES))
        return context.get_dummy_value()
    return types.void(config), codegen


@intrinsic
def release(typingctx):
    """Returns the calling thread's tiles to their initial state."""
    def codegen(context, builder, signature, args):
        _call(builder, "llvm.x86.tilerelease")
        return context.get_dummy_value()
    return types.void(), codegen


@intrinsic
def block_sums(typingctx, x, x_at, x_step, steps, w, w_at):
    """Tiles 0-3 = the block's sums ([32, 32] float32: tile t rows 16*(t // 2) .., columns
    16*(t % 2) ..): for block rows r and columns o, the sum over steps
    i of ``x[x_at + steps[i] + r*x_step + j] * filter_i[j, o]`` for j < 32, where step i's
    filter is the two packed tiles from ``w[w_at + 2*i*TILE_VALUES]`` (tile t its columns
    16t.., rows as pairs of j: ``[j // 2, o % 16, j % 2]``). x and w hold bfloat16 bits."""
    if x.dtype != types.uint16 or w.dtype != types.uint16:
        return None

    def codegen(context, builder, signature, args):
        x, x_at, x_step, steps, w, w_at = loops_ir.arguments(
            context, builder, signature, args)
        count = builder.extract_value(
            context.make_array(signature.args[3])(context, builder, args[3]).shape, 0)
        for tile in range(4):
            _call(builder, "llvm.x86.tilezero", _I8(tile))

        def step(i, carried):
            first = builder.add(x_at, builder.load(builder.gep(steps, [i])))
            packed = builder.add(w_at, builder.mul(i, _I64(2 * TILE_VALUES)))
            _products(builder, (x, first, x_step, builder.mul(x_step, _I64(TILE_ROWS))),
                      (w, packed, _I64(GROUP), _I64(TILE_VALUES)))
            return carried

        loops_ir.counted_loop(builder, count, [], step)
        return context.get_dummy_value()

    return types.void(x, types.int64, types.int64, steps, w, types.int64), codegen


@intrinsic
def store_sums(typingctx, sums):
    """Stores the block's sums (tiles 0-3) into ``sums``, float32 ``[32, 32]`` flat."""
    if sums.dtype != types.float32:
        return None

    def codegen(context, builder, signature, args):
        data = loops_ir.arguments(context, builder, signature, args)[0]
        for tile in range(4):
            at = _I64((tile // 2) * TILE_ROWS * BLOCK + (tile % 2) * TILE_ROWS)
            _call(builder, "llvm.x86.tilestored64", _I8(tile), _address(builder, data, at),
                  _I64(4 * BLOCK))
        return context.get_dummy_value()

    return types.void(sums), codegen


@intrinsic
def dot_block_sums(typingctx, x, x_at, x_step, steps, w, w_at, sums):
    """``block_sums`` on AVX512-BF16 dot products of vectors, written to ``sums`` (float32
    ``[32, 32]`` flat): ``DOT_ROWS`` rows of the block at a time, each row's 32 sums in two
    vectors; per step and pair of input channels, the filter's rows of that pair in its two
    packed tiles (16 output channels each, both channels' values) and each row's two input
    values broadcast, one ``vdpbf16ps`` adding both products per sum."""
    if x.dtype != types.uint16 or w.dtype != types.uint16 or sums.dtype != types.float32:
        return None

    def codegen(context, builder, signature, args):
        x, x_at, x_step, steps, w, w_at, sums = loops_ir.arguments(
            context, builder, signature, args)
        count = builder.extract_value(
            context.make_array(signature.args[3])(context, builder, args[3]).shape, 0)
        dot = builder.module.declare_intrinsic(   # the pairs as words: LLVM reads it so
            "llvm.x86.avx512bf16.dpbf16ps.512", fnty=ir.FunctionType(_SUMS, [_SUMS] + [_WORDS] * 2))

        def pass_of_rows(chunk, carried):
            row_at = builder.add(x_at, builder.mul(chunk, builder.mul(x_step, _I64(DOT_ROWS))))

            def step(i, held):
                first = builder.add(row_at, builder.load(builder.gep(steps, [i])))
                packed = builder.add(w_at, builder.mul(i, _I64(2 * TILE_VALUES)))
                held = list(held)
                for j in range(GROUP // 2):
                    columns = [_load(builder, w, builder.add(packed, _I64(
                        t * TILE_VALUES + 2 * j * TILE_ROWS)), _WORDS) for t in (0, 1)]
                    for r in range(DOT_ROWS):
                        pair = _load(builder, x, builder.add(first, builder.add(
                            builder.mul(x_step, _I64(r)), _I64(2 * j))), _I32)
                        both = loops_ir.broadcast(builder, pair, _WORDS)
                        for t in (0, 1):
                            held[2 * r + t] = builder.call(dot, [held[2 * r + t], both,
                                                                 columns[t]])
                return held

            zero = ir.Constant(_SUMS, [0.0] * LINE_VALUES)
            held = loops_ir.counted_loop(builder, count, [zero] * (2 * DOT_ROWS), step)
            for r in range(DOT_ROWS):
                for t in (0, 1):
                    at = builder.add(builder.mul(builder.add(builder.mul(chunk, _I64(DOT_ROWS)),
                                                             _I64(r)), _I64(BLOCK)),
                                     _I64(t * TILE_ROWS))
                    builder.store(held[2 * r + t], builder.bitcast(builder.gep(sums, [at]),
                                                                   _SUMS.as_pointer()), align=4)
            return carried

        loops_ir.counted_loop(builder, _I64(BLOCK // DOT_ROWS), [], pass_of_rows)
        return context.get_dummy_value()

    return types.void(x, types.int64, types.int64, steps, w, types.int64, sums), codegen


def _load(builder, data, index, kind):
    """The ``kind`` value at element ``index`` of the bfloat16 bits at ``data``."""
    return builder.load(builder.bitcast(builder.gep(data, [index]), kind.as_pointer()),
                        align=2)


@njit(cache=True, nogil=True)
def _sums_buffer():
    """A float32 ``[32, 32]`` buffer (flat) for a block's sums, its rows on cache lines."""
    spare = np.empty(BLOCK * BLOCK + LINE_VALUES, np.float32)
    skip = (-spare.ctypes.data) % (4 * LINE_VALUES) // 4
    return spare[skip:skip + BLOCK * BLOCK]


@njit(cache=True, parallel=True, nogil=True)
def forward(xp, steps, packed, y, runs, items, x_step, outs, config):
    """y = the conv whose padded channels-last input is ``xp`` (bfloat16 bits, flat, with
    room for a block's last rows past its run), ``steps`` the (tap, channel group) offsets
    from a window's origin. ``y``: ``[positions, outs]`` as bfloat16 bits, flat, each sum
    rounded once. A run (``runs[r]``: x origin, y origin, length, width, valid, first step,
    step count, filter start) is a line of output positions ``x_step`` values apart in xp
    that sums the steps ``steps[first step:][:step count]``, their filter in ``packed`` from
    ``filter start`` on, block of 32 output channels after block, each its steps' tile
    pairs in order. Position m of a run lies at y position ``y origin + (m // width) *
    valid + m % width``, and only where ``m % width < valid`` (a plane of a stride-1 conv
    runs over its padded rows whole). ``items``: (run, first position) of each block of 32
    positions; the threads share its (item, block of 32 output channels) pairs."""
    blocks = -(-outs // BLOCK)
    for task in prange(items.shape[0] * blocks):
        item, block = task // blocks, task % blocks
        run, first = items[item, 0], items[item, 1]
        x_origin, y_origin, length, width, valid, low, count, filter_start = runs[run]
        sums = _sums_buffer()
        load_configuration(config)
        block_sums(xp, x_origin + first * x_step, x_step, steps[low:low + count], packed,
                   filter_start + block * count * 2 * TILE_VALUES)
        store_sums(sums)
        release()
        _write_block(y, sums, y_origin, first, length, width, valid, block * BLOCK, outs)


@njit(cache=True, parallel=True, nogil=True)
def dot_forward(xp, steps, packed, y, runs, items, x_step, outs):
    """``forward`` on AVX512-BF16 dot products of vectors (``dot_block_sums``), the same
    blocks from the same operands, for a host with those and no tiles."""
    blocks = -(-outs // BLOCK)
    for task in prange(items.shape[0] * blocks):
        item, block = task // blocks, task % blocks
        run, first = items[item, 0], items[item, 1]
        x_origin, y_origin, length, width, valid, low, count, filter_start = runs[run]
        sums = _sums_buffer()
        dot_block_sums(xp, x_origin + first * x_step, x_step, steps[low:low + count],
                       packed, filter_start + block * count * 2 * TILE_VALUES, sums)
        _write_block(y, sums, y_origin, first, length, width, valid, block * BLOCK, outs)


@njit(cache=True, parallel=True, nogil=True)
def pack_filter(w3, packed):
    """``packed`` ``[blocks, taps, groups, 2, TILE_ROWS, TILE_ROWS, 2]`` = the filter ``w3``
    ``[taps, C, O]`` (bfloat16 bits, any strides: a flipped filter's view) as the products
    read it: ``packed[b, t, g, h, p, k, e] = w3[t, GROUP*g + 2*p + e, BLOCK*b + TILE_ROWS*h
    + k]``, zero past C and O. Each [GROUP, BLOCK] tile of a tap is read along the axis
    that lies contiguous in memory into a transposed buffer, whose channel pairs are then
    written as 32-bit words."""
    taps, channels, outs = w3.shape
    blocks, _, groups = packed.shape[:3]
    along_channels = abs(w3.strides[1]) <= abs(w3.strides[2])
    for task in prange(blocks * taps):
        block, tap = task // taps, task % taps
        source = w3[tap]
        out = packed[block, tap].reshape(-1).view(np.uint32)
        tile = np.zeros((BLOCK, GROUP), np.uint16)
        pairs = tile.view(np.uint32)            # [output channel, channel pair]
        o_low = BLOCK * block
        o_count = min(BLOCK, outs - o_low)
        for group in range(groups):
            c_low = GROUP * group
            c_count = min(GROUP, channels - c_low)
            if c_count < GROUP:
                tile[:] = 0
            if along_channels:
                for o in range(o_count):
                    for c in range(c_count):
                        tile[o, c] = source[c_low + c, o_low + o]
            else:
                for c in range(c_count):
                    for o in range(o_count):
                        tile[o, c] = source[c_low + c, o_low + o]
            at = group * BLOCK * GROUP // 2
            for half in range(2):
                for p in range(TILE_ROWS):
                    for k in range(TILE_ROWS):
                        out[at] = pairs[TILE_ROWS * half + k, p]
                        at += 1


@njit(cache=True, nogil=True)
def _write_block(y, sums, y_origin, first, length, width, valid, low, outs):
    """Rounds a block's sums (its rows the run's positions from ``first``, its columns the
    output channels from ``low``) once to bfloat16 into ``y``, where they are outputs."""
    taken = min(BLOCK, outs - low)
    for row in range(min(BLOCK, length - first)):
        column = (first + row) % width
        if column < valid:
            at = (y_origin + (first + row) // width * valid + column) * outs + low
            for k in range(taken):
                y[at + k] = bfloat16_bits(sums[row * BLOCK + k])


@intrinsic
def zero_sums(typingctx):
    """Tiles 0-3 (a block's float32 sums) = 0."""
    def codegen(context, builder, signature, args):
        for tile in range(4):
            _call(builder, "llvm.x86.tilezero", _I8(tile))
        return context.get_dummy_value()
    return types.void(), codegen


@intrinsic
def gradient_sums(typingctx, xt, x_at, x_row, dyp, dy_at, dy_row, chunks):
    """Tiles 0-3 += a filter gradient block's products over ``chunks`` runs of 32
    positions: input tiles (16 channels a tile, rows ``x_row`` values apart, 32 positions
    a row, from ``xt[x_at + 32*j]``) times dy tiles (16 output channels a tile, rows of
    position pairs ``dy_row`` values apart, from ``dyp[dy_at + 16*j*dy_row]``). xt and
    dyp hold bfloat16 bits."""
    if xt.dtype != types.uint16 or dyp.dtype != types.uint16:
        return None

    def codegen(context, builder, signature, args):
        xt, x_at, x_row, dyp, dy_at, dy_row, chunks = loops_ir.arguments(
            context, builder, signature, args)
        def step(j, carried):
            first = builder.add(x_at, builder.mul(j, _I64(GROUP)))
            pairs = builder.add(dy_at, builder.mul(j, builder.mul(dy_row, _I64(TILE_ROWS))))
            _products(builder, (xt, first, x_row, builder.mul(x_row, _I64(TILE_ROWS))),
                      (dyp, pairs, dy_row, _I64(2 * TILE_ROWS)))
            return carried

        loops_ir.counted_loop(builder, chunks, [], step)
        return context.get_dummy_value()

    return types.void(xt, types.int64, types.int64, dyp, types.int64, types.int64,
                      types.int64), codegen


@njit(cache=True, parallel=True, nogil=True)
def filter_grad(xt, dyp, dw, taps, planes, x_row, dy_plane, chunks, c_blocks, o_blocks,
                config):
    """dw (float32 ``[taps, C', O']`` flat, C' and O' multiples of 32) = the filter
    gradient, a block of 32 input x 32 output channels of one tap at a time, each summed
    over every plane of positions. ``xt``: the padded input transposed, ``[N, P1, C',
    x_row]`` (each channel's plane of positions in a row); ``dyp``: dy in pairs of
    positions, ``[planes, positions / 2, O', 2]``, zero where a position is not an
    output; ``taps[t]``: (planes the tap shifts by, its offset in a plane); ``planes[p]``:
    the x plane of dy plane p; ``chunks``: runs of 32 positions a plane."""
    outs = o_blocks * BLOCK
    channels = c_blocks * BLOCK
    for item in prange(taps.shape[0] * c_blocks * o_blocks):
        tap, rest = item // (c_blocks * o_blocks), item % (c_blocks * o_blocks)
        c_block, o_block = rest // o_blocks, rest % o_blocks
        sums = _sums_buffer()
        load_configuration(config)
        zero_sums()
        for plane in range(planes.shape[0]):
            x_at = (((planes[plane] + taps[tap, 0]) * channels + c_block * BLOCK) * x_row
                    + taps[tap, 1])
            gradient_sums(xt, x_at, x_row, dyp, plane * dy_plane + o_block * 2 * BLOCK,
                          2 * outs, chunks)
        store_sums(sums)
        release()
        for row in range(BLOCK):
            at = (tap * channels + c_block * BLOCK + row) * outs + o_block * BLOCK
            for k in range(BLOCK):
                dw[at + k] = sums[row * BLOCK + k]


@njit(cache=True, parallel=True, nogil=True)
def transposed_planes(x, before, xt):
    """xt ``[N, P1, C', row]`` = ``x`` ``[N, S1, S2, S3, C]`` zero-padded (``before`` each
    spatial dim) to planes of ``P2 x P3`` positions, each channel's plane a row: ``xt[n, p1,
    c, p2 * P3 + p3]`` = ``x[n, p1 - b1, p2 - b2, p3 - b3, c]`` inside x, else 0 (and 0
    past the plane and past C); ``before`` = (b1, b2, b3, P2, P3). bfloat16 bits."""
    n_total, s1, s2, s3, channels = x.shape
    _, p1n, wide, row = xt.shape
    p2n, p3n = before[3], before[4]
    for plane in prange(n_total * p1n):
        n, p1 = plane // p1n, plane % p1n
        i1 = p1 - before[0]
        out = xt[n, p1]
        out[:] = 0
        if i1 < 0 or i1 >= s1:
            continue
        for p2 in range(p2n):
            i2 = p2 - before[1]
            if i2 < 0 or i2 >= s2:
                continue
            for i3 in range(s3):
                at = p2 * p3n + i3 + before[2]
                for c in range(channels):
                    out[c, at] = x[n, i1, i2, i3, c]


@njit(cache=True, parallel=True, nogil=True)
def position_pairs(dy, width, pairs):
    """pairs ``[planes, positions / 2, O', 2]`` = dy ``[planes, Q2, Q3, O]`` laid along each
    plane's padded rows (position ``q2 * width + q3``) in pairs of positions, zero at the
    padding's columns, past the last position and past O."""
    planes, q2n, q3n, outs = dy.shape
    for plane in prange(planes):
        out = pairs[plane]
        out[:] = 0
        for q2 in range(q2n):
            for q3 in range(q3n):
                m = q2 * width + q3
                for o in range(outs):
                    out[m // 2, o, m % 2] = dy[plane, q2, q3, o]
