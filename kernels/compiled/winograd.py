"""Winograd tile transforms (numba, the 1-D steps in LLVM IR) for 3x3 and 3x3x3 stride-1
convolutions.

Per spatial dim F(2,3) turns 4 inputs into 4 transformed values (``B^T d``) and 4 products
into 2 outputs (``A^T m``); the filter gradient's F(3,2) turns 2 output-gradient values
into 4 (``A e``):

    B^T = [[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]]
    A^T = [[1, 1, 1, 0], [0, 1, -1, -1]]

applied along each dim in turn. Every value is a vector over channels (the contiguous last
axis): a 1-D step (``_input_step``, ``_output_step``, ``_gradient_step``) reads its inputs
``src_step`` apart and writes its outputs ``dst_step`` apart, 64 bytes of channels a vector
and the last few one by one. The steps along the first dims run over whole padded planes
and rows at once; the last dim's run tile by tile, a step per channel vector of each tile
row. Written as numba loops over array views, the tile-by-tile steps cost 5-7x their
arithmetic (a view and an overlap check a step); as IR they take flat offsets. Tiles are
numbered row-major over the block's tile grid; transformed tiles are stored ``[alpha, tile,
channel]`` (alpha = 16 or 64 transform positions, row-major), the layout of the batched
GEMM that follows.
"""

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from graphops.kernels.compiled import ir as loops_ir

# A 1-D step's outputs, each a sum of +-inputs in the order written: (sign, input index)
_INPUT = (((1, 0), (-1, 2)), ((1, 1), (1, 2)), ((1, 2), (-1, 1)), ((1, 1), (-1, 3)))
_OUTPUT = (((1, 0), (1, 1), (1, 2)), ((1, 1), (-1, 2), (-1, 3)))
_GRADIENT = (((1, 0),), ((1, 0), (1, 1)), ((1, 0), (-1, 1)), ((-1, 1),))


def _step_kernel(outputs):
    """The intrinsic ``(src, src_at, src_step, dst, dst_at, dst_step, count)`` over flat
    float32 or float64 arrays: for c < count, ``dst[dst_at + q*dst_step + c]`` = output q of
    the inputs ``src[src_at + e*src_step + c]`` (``outputs``: each a sum of signed inputs in
    order)."""
    inputs = 1 + max(i for terms in outputs for _, i in terms)

    def combine(builder, values):
        results = []
        for terms in outputs:
            (sign, first), *rest = terms
            total = values[first] if sign > 0 else builder.fneg(values[first])
            for sign, i in rest:
                total = (builder.fadd if sign > 0 else builder.fsub)(total, values[i])
            results.append(total)
        return results

    @intrinsic
    def step(typingctx, src, src_at, src_step, dst, dst_at, dst_step, count):
        if not (isinstance(src, types.Array) and src.dtype in (types.float32, types.float64)
                and dst == src):
            return None

        def codegen(context, builder, signature, args):
            src, src_at, src_step, dst, dst_at, dst_step, count = loops_ir.arguments(
                context, builder, signature, args)
            element = context.get_value_type(signature.args[0].dtype)
            size = 4 if signature.args[0].dtype == types.float32 else 8
            lanes = 64 // size

            def run(kind, at, width):
                def load(e):
                    where = builder.gep(src, [builder.add(builder.add(src_at, at), builder.mul(
                        src_step, loops_ir.INT(e)))])
                    return builder.load(builder.bitcast(where, kind.as_pointer()), align=size)

                for q, value in enumerate(combine(builder, [load(e) for e in range(inputs)])):
                    where = builder.gep(dst, [builder.add(builder.add(dst_at, at), builder.mul(
                        dst_step, loops_ir.INT(q)))])
                    builder.store(value, builder.bitcast(where, kind.as_pointer()),
                                  align=size)

            vector = ir.VectorType(element, lanes)
            whole = builder.sdiv(count, loops_ir.INT(lanes))
            loops_ir.counted_loop(builder, whole, [], lambda k, _: run(
                vector, builder.mul(k, loops_ir.INT(lanes)), lanes) or [])
            done = builder.mul(whole, loops_ir.INT(lanes))
            loops_ir.counted_loop(builder, builder.sub(count, done), [], lambda k, _: run(
                element, builder.add(done, k), 1) or [])
            return context.get_dummy_value()

        return types.void(src, types.int64, types.int64, dst, types.int64, types.int64,
                          types.int64), codegen

    return step


_input_step, _output_step, _gradient_step = (_step_kernel(_INPUT), _step_kernel(_OUTPUT),
                                             _step_kernel(_GRADIENT))


@njit(cache=True, nogil=True, fastmath={"reassoc"})
def _poison(values):
    """NaN if any of ``values`` is infinite or NaN (v - v is then NaN), else 0; reassociated
    so that it vectorizes."""
    total = values.dtype.type(0)
    for i in range(values.shape[0]):
        total += values[i] - values[i]
    return total


@njit(cache=True, nogil=True)
def input_2d(xpad, n, first_row, rows, v):
    """v[a*4 + b, t, :] = (B^T d B)[a, b] for the tiles of image n in tile rows
    [first_row, first_row + rows); d = xpad[n, 2i:2i+4, 2j:2j+4, :], t = (i - first_row)*TW + j.
    The transform along the rows runs over whole padded rows at once (long loops)."""
    height, width, channels = xpad.shape[1], xpad.shape[2], xpad.shape[3]
    tiles_w, tiles = (width - 2) // 2, v.shape[1]
    row = width * channels
    src, out = xpad.reshape(xpad.size), v.reshape(v.size)
    across = np.empty(4 * row, xpad.dtype)
    for i in range(rows):
        _input_step(src, (n * height + 2 * (first_row + i)) * row, row, across, 0, row, row)
        for j in range(tiles_w):
            t = i * tiles_w + j
            for a in range(4):
                _input_step(across, a * row + 2 * j * channels, channels, out,
                            (a * 4 * tiles + t) * channels, tiles * channels, channels)


@njit(cache=True, nogil=True)
def output_2d(m, y, n, first_row, rows):
    """y[n, 2i:2i+2, 2j:2j+2, :] = A^T M A for the block's tiles (cropped at y's edges); the
    transform along the rows runs over whole output rows at once. Returns NaN if any value
    written is not finite (else 0)."""
    height, width, channels = y.shape[1], y.shape[2], y.shape[3]
    tiles_w, tiles = (width + 1) // 2, m.shape[1]
    row = 2 * tiles_w * channels
    products = m.reshape(m.size)
    across = np.empty(4 * row, y.dtype)
    pair = np.empty(2 * row, y.dtype)
    poison = y.dtype.type(0)
    for i in range(rows):
        top = 2 * (first_row + i)
        for j in range(tiles_w):
            t = i * tiles_w + j
            for a in range(4):
                _output_step(products, (a * 4 * tiles + t) * channels, tiles * channels,
                             across, a * row + 2 * j * channels, channels, channels)
        _output_step(across, 0, row, pair, 0, row, row)
        for a in range(2):
            if top + a < height:
                written = pair[a * row:a * row + width * channels]
                y[n, top + a].reshape(-1)[:] = written
                poison += _poison(written)
    return poison


@njit(cache=True, nogil=True)
def input_3d(xpad, n, first_row, rows, v):
    """3-D ``input_2d``: tiles of image n in tile rows [first_row, first_row + rows) of the
    first spatial dim, t = ((i - first_row)*TH + j)*TW + k, v[(a*4 + b)*4 + e, t, :]. The
    transforms along the first two dims run over whole padded planes and rows at once."""
    depth, height, width, channels = xpad.shape[1:]
    tiles_h, tiles_w, tiles = (height - 2) // 2, (width - 2) // 2, v.shape[1]
    row = width * channels
    plane = height * row
    src, out = xpad.reshape(xpad.size), v.reshape(v.size)
    deep = np.empty(4 * plane, xpad.dtype)
    across = np.empty(16 * row, xpad.dtype)
    for i in range(rows):
        _input_step(src, (n * depth + 2 * (first_row + i)) * plane, plane, deep, 0, plane,
                    plane)
        for j in range(tiles_h):
            for a in range(4):
                _input_step(deep, a * plane + 2 * j * row, row, across, 4 * a * row, row, row)
            for k in range(tiles_w):
                t = (i * tiles_h + j) * tiles_w + k
                for ab in range(16):
                    _input_step(across, ab * row + 2 * k * channels, channels, out,
                                (ab * 4 * tiles + t) * channels, tiles * channels, channels)


@njit(cache=True, nogil=True)
def output_3d(m, y, n, first_row, rows):
    """3-D ``output_2d``: y[n, 2i:2i+2, 2j:2j+2, 2k:2k+2, :] = A^T M A, cropped; the
    transforms along the first two dims run over whole rows and planes at once. Returns NaN
    if any value written is not finite (else 0)."""
    depth, height, width, channels = y.shape[1], y.shape[2], y.shape[3], y.shape[4]
    tiles_h, tiles_w, tiles = (height + 1) // 2, (width + 1) // 2, m.shape[1]
    row = 2 * tiles_w * channels
    plane = 2 * tiles_h * row
    products = m.reshape(m.size)
    across = np.empty(16 * row, y.dtype)
    planes = np.empty(4 * plane, y.dtype)
    pair = np.empty(2 * plane, y.dtype)
    poison = y.dtype.type(0)
    for i in range(rows):
        d0 = 2 * (first_row + i)
        for j in range(tiles_h):
            for k in range(tiles_w):
                t = (i * tiles_h + j) * tiles_w + k
                for ab in range(16):
                    _output_step(products, (ab * 4 * tiles + t) * channels, tiles * channels,
                                 across, ab * row + 2 * k * channels, channels, channels)
            for a in range(4):
                _output_step(across, 4 * a * row, row, planes, a * plane + 2 * j * row, row,
                             row)
        _output_step(planes, 0, plane, pair, 0, plane, plane)
        for a in range(2):
            if d0 + a >= depth:
                continue
            out = pair[a * plane:(a + 1) * plane].reshape(2 * tiles_h, 2 * tiles_w, channels)
            y[n, d0 + a] = out[:height, :width]
            poison += _poison(y[n, d0 + a].reshape(-1))
    return poison


@njit(cache=True, nogil=True)
def gradient_2d(dypad, n, first_row, rows, g):
    """g[a*4 + b, t, :] = (A e A^T)[a, b] for the 2x2 tiles e = dypad[n, 2i:2i+2, 2j:2j+2, :]
    of image n in tile rows [first_row, first_row + rows) (the filter gradient's transform of
    the output gradient), t = (i - first_row)*TW + j."""
    height, width, channels = dypad.shape[1], dypad.shape[2], dypad.shape[3]
    tiles_w, tiles = width // 2, g.shape[1]
    row = width * channels
    src, out = dypad.reshape(dypad.size), g.reshape(g.size)
    across = np.empty(4 * row, dypad.dtype)
    for i in range(rows):
        _gradient_step(src, (n * height + 2 * (first_row + i)) * row, row, across, 0, row, row)
        for j in range(tiles_w):
            t = i * tiles_w + j
            for a in range(4):
                _gradient_step(across, a * row + 2 * j * channels, channels, out,
                               (a * 4 * tiles + t) * channels, tiles * channels, channels)


@njit(cache=True, nogil=True)
def gradient_3d(dypad, n, first_row, rows, g):
    """3-D ``gradient_2d``: 2x2x2 tiles, t = ((i - first_row)*TH + j)*TW + k,
    g[(a*4 + b)*4 + e, t, :]."""
    depth, height, width, channels = dypad.shape[1:]
    tiles_h, tiles_w, tiles = height // 2, width // 2, g.shape[1]
    row = width * channels
    plane = height * row
    src, out = dypad.reshape(dypad.size), g.reshape(g.size)
    deep = np.empty(4 * plane, dypad.dtype)
    across = np.empty(16 * row, dypad.dtype)
    for i in range(rows):
        _gradient_step(src, (n * depth + 2 * (first_row + i)) * plane, plane, deep, 0, plane,
                       plane)
        for j in range(tiles_h):
            for a in range(4):
                _gradient_step(deep, a * plane + 2 * j * row, row, across, 4 * a * row, row,
                               row)
            for k in range(tiles_w):
                t = (i * tiles_h + j) * tiles_w + k
                for ab in range(16):
                    _gradient_step(across, ab * row + 2 * k * channels, channels, out,
                                   (ab * 4 * tiles + t) * channels, tiles * channels, channels)
