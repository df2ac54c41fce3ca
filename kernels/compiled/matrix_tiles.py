"""The bfloat16 forward conv on AMX tiles (numba, the tile operations written in LLVM IR).

An AMX unit keeps eight tile registers of 16 rows x 64 bytes and multiplies them whole:
``tdpbf16ps`` adds a [16 x 32] bfloat16 tile times a [32 x 16] one (packed in pairs of
rows) into a [16 x 16] float32 tile, 8,192 multiply-adds in one instruction, where a
fused multiply-add of vectors does 16. A block here is 32 output positions by 32 output
channels, four float32 tiles, summed over the (tap, 32-channel group) steps of the filter:
each step loads two tiles of the input (16 positions each, a row every ``x_step`` values
apart, read in place from the padded input) and two of the packed filter, and makes four
products. Products of bfloat16 values are exact in float32; the sums are float32 (the
unit treats subnormal inputs as zero and flushes subnormal sums, as TF's oneDNN does on
the same unit), each rounded once to bfloat16 as it is written.

Only for a host whose code numba generates with AMX-BF16 and whose kernel grants the
process the tile state (``host_isa.matrix_tiles``): LLVM cannot compile these operations
for any other CPU, and numba compiles a function at its first call.
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

_I8, _I64 = ir.IntType(8), ir.IntType(64)
_BYTES = _I8.as_pointer()


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
        x_bytes, w_bytes = builder.mul(x_step, _I64(2)), _I64(64)
        for tile in range(4):
            _call(builder, "llvm.x86.tilezero", _I8(tile))

        def step(i, carried):
            first = builder.add(x_at, builder.load(builder.gep(steps, [i])))
            second = builder.add(first, builder.mul(x_step, _I64(TILE_ROWS)))
            packed = builder.add(w_at, builder.mul(i, _I64(2 * TILE_VALUES)))
            for tile, at in ((4, first), (5, second)):
                _call(builder, "llvm.x86.tileloadd64", _I8(tile), _address(builder, x, at),
                      x_bytes)
            for tile, at in ((6, packed), (7, builder.add(packed, _I64(TILE_VALUES)))):
                _call(builder, "llvm.x86.tileloadd64", _I8(tile), _address(builder, w, at),
                      w_bytes)
            for tile, (rows, columns) in enumerate(((4, 6), (4, 7), (5, 6), (5, 7))):
                _call(builder, "llvm.x86.tdpbf16ps", _I8(tile), _I8(rows), _I8(columns))
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


@njit(cache=True, parallel=True, nogil=True)
def forward(xp, steps, packed, y, runs, items, x_step, outs, config):
    """y = the conv whose padded channels-last input is ``xp`` (bfloat16 bits, flat, with
    room for a block's last rows past its run), ``steps`` the (tap, channel group) offsets
    from a window's origin and ``packed`` the filter, block of 32 output channels after
    block, each its steps' tile pairs in order. ``y``: ``[positions, outs]`` as bfloat16
    bits, flat, each sum rounded once. A run (``runs[r]``: x origin, y origin, length,
    width, valid) is a line of output positions ``x_step`` values apart in xp; position m
    of it lies at y position ``y origin + (m // width) * valid + m % width``, and only where
    ``m % width < valid`` (a plane of a stride-1 conv runs over its padded rows whole).
    ``items``: (run, first position) of each block of 32, shared by the threads; each
    block's sums for every 32 output channels."""
    blocks = -(-outs // BLOCK)
    per_block = steps.shape[0] * 2 * TILE_VALUES
    for item in prange(items.shape[0]):
        run, first = items[item, 0], items[item, 1]
        x_origin, y_origin, length, width, valid = runs[run]
        spare = np.empty(BLOCK * BLOCK + LINE_VALUES, np.float32)
        skip = (-spare.ctypes.data) % (4 * LINE_VALUES) // 4
        sums = spare[skip:skip + BLOCK * BLOCK]       # tile rows on cache lines
        load_configuration(config)
        for block in range(blocks):
            block_sums(xp, x_origin + first * x_step, x_step, steps, packed, block * per_block)
            store_sums(sums)
            low = block * BLOCK
            taken = min(BLOCK, outs - low)
            for row in range(min(BLOCK, length - first)):
                column = (first + row) % width
                if column < valid:
                    at = (y_origin + (first + row) // width * valid + column) * outs + low
                    for k in range(taken):
                        y[at + k] = bfloat16_bits(sums[row * BLOCK + k])
        release()
