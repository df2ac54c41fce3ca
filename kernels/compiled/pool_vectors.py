"""The pools' windows a vector of channels at a time (numba intrinsics written in LLVM IR)
over flat float32 channels-last arrays: a window's maximum (MaxPool) and the position of
its first maximum (MaxPoolGrad). A loop over a few channels per tap, as the generic pooling
loops run (8 or 16 channels: a vector or two), costs more than the values it compares;
here each tap is one vector load and a compare-and-select, the window's values held in a
register. A call takes ``lanes`` channels, 16 or 8 (``WINDOW_LANES``); the caller takes
the last few channels one by one."""

from llvmlite import ir
from numba.extending import intrinsic

from graphops.kernels.compiled import ir as loops_ir

WINDOW_LANES = (16, 8)    # channels a call takes: 16, then 8 (other counts: no code, no store)


def _taps(builder, count, step, start, initial, body):
    """``for k in range(count): values = body(start + k*step, values)``, the carried values
    in registers."""
    return loops_ir.counted_loop(builder, count, initial, lambda k, held: body(
        builder.add(start, builder.mul(k, step)), held))


@intrinsic
def window_max(typingctx, lanes, x, at, depth, d_step, height, h_step, width, w_step, floor,
               out, out_at):
    """A max pool's window over ``lanes`` (in WINDOW_LANES) channels, a numba intrinsic over
    flat float32 arrays: ``out[out_at + l]`` = the largest of ``floor[0]`` and
    ``x[at + i*d_step + j*h_step + k*w_step + l]`` for i < depth, j < height, k < width,
    each taken only when greater than the largest so far (NaN never), in that order."""

    def codegen(context, builder, signature, args):
        x, at, depth, d_step, height, h_step, width, w_step, floor, out, out_at = \
            loops_ir.arguments(context, builder, signature, args)[1:]
        lowest = builder.load(floor)

        def emit(lanes):
            vector = ir.VectorType(ir.FloatType(), lanes)

            def tap(offset, held):
                value = builder.load(_pointer(builder, x, offset, vector), align=4)
                return [builder.select(builder.fcmp_ordered(">", value, held[0]), value,
                                       held[0])]

            def row(start, held):
                return _taps(builder, width, w_step, start, held, tap)

            def plane(start, held):
                return _taps(builder, height, h_step, start, held, row)

            best = _taps(builder, depth, d_step, at, [loops_ir.broadcast(builder, lowest, vector)],
                         plane)
            builder.store(best[0], _pointer(builder, out, out_at, vector), align=4)

        loops_ir.switch(builder, args[0], WINDOW_LANES, emit)
        return context.get_dummy_value()

    return loops_ir.typed((lanes, x, at, depth, d_step, height, h_step, width, w_step, floor,
                           out, out_at), (1, 9, 10), (), codegen)


@intrinsic
def window_argmax(typingctx, lanes, x, at, height, h_step, width, w_step, first, row, picks):
    """Where MaxPoolGrad routes a window's gradient, ``lanes`` (in WINDOW_LANES) channels at a
    time, a numba intrinsic over a flat float32 ``x`` and int64 ``picks``: ``picks[l]`` =
    the position ``first + i*row + j`` of the tap of ``x[at + i*h_step + j*w_step + l]``
    held last, taps taken in order (i < height, j < width) from the first, each later
    one replacing the held one when strictly greater (so NaN never replaces a number nor a
    number a NaN held: TF's argmax rule)."""

    def codegen(context, builder, signature, args):
        x, at, height, h_step, width, w_step, first, row, picks = \
            loops_ir.arguments(context, builder, signature, args)[1:]

        def emit(lanes):
            vector = ir.VectorType(ir.FloatType(), lanes)
            positions = ir.VectorType(loops_ir.INT, lanes)

            def tap(at_and_position, held):
                value = builder.load(_pointer(builder, x, at_and_position[0], vector), align=4)
                greater = builder.fcmp_ordered(">", value, held[0])
                return [builder.select(greater, value, held[0]),
                        builder.select(greater, loops_ir.broadcast(
                            builder, at_and_position[1], positions), held[1])]

            def tap_row(i, held):
                start = builder.add(at, builder.mul(i, h_step))
                position = builder.add(first, builder.mul(i, row))
                return loops_ir.counted_loop(builder, width, held, lambda j, carried: tap(
                    (builder.add(start, builder.mul(j, w_step)), builder.add(position, j)),
                    carried))

            start = [builder.load(_pointer(builder, x, at, vector), align=4),
                     loops_ir.broadcast(builder, first, positions)]
            best = loops_ir.counted_loop(builder, height, start, tap_row)
            builder.store(best[1], _pointer(builder, picks, loops_ir.INT(0), positions),
                          align=8)

        loops_ir.switch(builder, args[0], WINDOW_LANES, emit)
        return context.get_dummy_value()

    return loops_ir.typed((lanes, x, at, height, h_step, width, w_step, first, row, picks),
                          (1,), (9,), codegen)


def _pointer(builder, base, offset, vector):
    """``base + offset`` as a pointer to ``vector``s."""
    return builder.bitcast(builder.gep(base, [offset]), vector.as_pointer())
