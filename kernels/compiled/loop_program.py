"""A whole TF1 loop run as one compiled call: a small register machine whose program is an
iteration of the loop (its body, the loop variables' update, its condition), built once
per shape signature by ``graphops.runtime.loop_programs``.

Float values live in one flat ``arena`` (each a rows x cols block with a row stride, so a
Split or a column slice is the same memory read with other numbers), integer and bool
scalars in ``ints`` (int64 registers), and a TensorList in the arena as room for its
elements end to end, with a register holding its length and one per element saying
whether it is set. Every instruction is a row of ``code``; its offsets and sizes were
checked against the arena when the program was built, so only the list indices and a
push's room are checked here.

Elementwise instructions run ``fused_elementwise``'s block machine over arena views, so
they round as the elementwise kernels round. float32 products run on the conv's
register-blocked micro-kernels, others a row of the right operand at a time into every
output row; both accumulate in the arena's dtype, each sum over k in order. A sum over a
block's rows (a bias's gradient) accumulates in float64, as the Sum kernel does.
"""

import numpy as np
from numba import njit, types
from numba.extending import overload

from graphops.kernels.compiled.constants import (
    FUSED_BLOCK as BLOCK, LOOP_DONE as DONE, LOOP_ELEMENTWISE as ELEMENTWISE,
    LOOP_LIST_GET as LIST_GET, LOOP_LIST_PUSH as LIST_PUSH, LOOP_LIST_SET as LIST_SET,
    LOOP_MATMUL as MATMUL, LOOP_MORE as MORE, LOOP_SCALAR as SCALAR, LOOP_SUM_ROWS as SUM_ROWS)
from graphops.kernels.compiled.direct import ADD, BLOCK as PRODUCT_ROWS, HALF_LANES, _accumulate
from graphops.kernels.compiled.fused_elementwise import _block, _blocks


@njit(cache=True, nogil=True, error_model="numpy")
def _wrap(value, bits):
    """``value`` wrapped to a signed integer of ``bits`` bits (0: as it is)."""
    if bits == 0:
        return value
    half = np.int64(1) << (bits - 1)
    return ((value + half) & ((half << 1) - 1)) - half


@njit(cache=True, nogil=True, error_model="numpy")
def _scalar(code, a, b):
    """``constants.LOOP_SCALAR_OPS[code]`` of int64 values (bools as 0 and 1)."""
    if code == 0:
        return a + b
    if code == 1:
        return a - b
    if code == 2:
        return a * b
    if code == 3:
        return max(a, b)
    if code == 4:
        return min(a, b)
    if code == 5:
        return np.int64(a < b)
    if code == 6:
        return np.int64(a <= b)
    if code == 7:
        return np.int64(a > b)
    if code == 8:
        return np.int64(a >= b)
    if code == 9:
        return np.int64(a == b)
    if code == 10:
        return np.int64(a != b)
    if code == 11:
        return np.int64(a != 0 and b != 0)
    if code == 12:
        return np.int64(a != 0 or b != 0)
    if code == 13:
        return np.int64(a == 0)
    if code == 14:
        return -a
    return a


@njit(cache=True, nogil=True, fastmath={"contract"}, error_model="numpy")
def _add_scaled(arena, target, scale, source, cols):
    """arena[target + j] += scale * arena[source + j] for j < cols (vectorized)."""
    into, values = arena[target:target + cols], arena[source:source + cols]
    for j in range(cols):
        into[j] += scale * values[j]


@njit(cache=True, nogil=True, error_model="numpy")
def _loop_product(arena, row, first_column):
    """Columns from ``first_column`` of out (+)= a @ b (``_product``'s row), a row of b at
    a time added into every output row; a b whose rows are not contiguous is first copied
    into ``scratch``."""
    out, rows, cols, out_stride = row[1], row[2], row[3], row[4]
    a, a_rows, a_cols, b, b_rows, b_cols, depth = (row[5], row[6], row[7], row[8], row[9],
                                                   row[10], row[11])
    scratch, width = row[12], cols - first_column
    zero = arena.dtype.type(0)
    for i in range(rows if row[13] == 0 else 0):
        start = out + i * out_stride + first_column
        target = arena[start:start + width]
        for j in range(width):
            target[j] = zero
    for k in range(depth):
        start = b + k * b_rows + first_column * b_cols
        if b_cols != 1:
            for j in range(width):
                arena[scratch + j] = arena[start + j * b_cols]
            start = scratch
        for i in range(rows):
            _add_scaled(arena, out + i * out_stride + first_column,
                        arena[a + i * a_rows + k * a_cols], start, width)


@njit(cache=True, nogil=True, error_model="numpy")
def _micro_product(arena, row):
    """float32 out = a @ b on the conv's register-blocked micro-kernels (``direct``), up
    to PRODUCT_ROWS rows a call, for the columns in whole groups of HALF_LANES where b's
    rows are contiguous; ``_loop_product`` for the rest."""
    out, rows, cols, out_stride = row[1], row[2], row[3], row[4]
    a, a_rows, a_cols, b, b_rows, b_cols, depth = (row[5], row[6], row[7], row[8], row[9],
                                                   row[10], row[11])
    wide = cols - cols % HALF_LANES if b_cols == 1 else 0
    if wide:
        steps = np.arange(depth) * a_cols
        row_offsets = np.arange(PRODUCT_ROWS) * a_rows
        out_offsets = np.arange(PRODUCT_ROWS) * out_stride
        column = 0
        while column < wide:
            taken = 0
            for first in range(0, rows, PRODUCT_ROWS):
                taken = _accumulate(min(PRODUCT_ROWS, rows - first), arena, a + first * a_rows,
                                    steps, row_offsets, arena, b_rows, b + column, arena,
                                    out + first * out_stride + column, out_offsets,
                                    ADD if row[13] != 0 else 0, wide - column)
            column += taken
    if wide < cols:
        _loop_product(arena, row, wide)


def _product(arena, row):
    """out = a @ b for instruction ``row`` (MATMUL), or out += a @ b where its accumulate
    word (``row[13]``) is set: each operand's element (i, k) at its offset + i * row
    stride + k * column stride (a transpose swaps the two). Chosen by the arena's dtype
    when compiled."""


@overload(_product, inline="always")
def _product_typed(arena, row):
    if arena.dtype == types.float32:
        return lambda arena, row: _micro_product(arena, row)    # noqa: E731
    return lambda arena, row: _loop_product(arena, row, 0)    # noqa: E731


@njit(cache=True, nogil=True, error_model="numpy")
def _copy_block(arena, target, target_stride, source, source_stride, rows, cols):
    for r in range(rows):
        into, start = target + r * target_stride, source + r * source_stride
        destination = arena[into:into + cols]
        values = arena[start:start + cols]
        for c in range(cols):
            destination[c] = values[c]


@njit(cache=True, nogil=True, error_model="numpy")
def _sum_rows(arena, out, source, rows, cols, stride):
    """arena[out + j] = column j of the rows x cols block at ``source`` summed in float64
    from its first row down (the Sum kernel's order and accumulator), rounded once."""
    total = arena[source:source + cols].astype(np.float64)
    for i in range(1, rows):
        values = arena[source + i * stride:source + i * stride + cols]
        for j in range(cols):
            total[j] += values[j]
    into = arena[out:out + cols]
    for j in range(cols):
        into[j] = total[j]


@njit(cache=True, nogil=True, error_model="numpy")
def _elementwise(arena, plans, regs, row):
    """One elementwise program (``plans[row[1]:]``, as ``fused_elementwise.run`` takes it)
    over arena views: outputs from ``row[2]``, end to end, inputs at ``row[4:]``."""
    plan = plans[row[1]:]
    size = plan[0] * plan[1]
    out = arena[row[2]:row[2] + plan[3] * size].reshape((plan[3], size))
    a0, a1, a2, a3 = arena[row[4]:], arena[row[5]:], arena[row[6]:], arena[row[7]:]
    a4, a5, a6, a7 = arena[row[8]:], arena[row[9]:], arena[row[10]:], arena[row[11]:]
    for block in range(_blocks(plan[0], plan[1])):
        _block(block, plan, regs, out, a0, a1, a2, a3, a4, a5, a6, a7)


@njit(cache=True, nogil=True, error_model="numpy")
def _step(code, r, arena, ints, plans, regs):
    """Runs instruction row ``r``; False where a list index is out of range, a read finds
    an unset element or a push no room (the caller then runs the loop again: its kernels
    say why, or a program with more room)."""
    row = code[r]
    kind = row[0]
    if kind == ELEMENTWISE:
        _elementwise(arena, plans, regs, row)
    elif kind == MATMUL:
        _product(arena, row)
    elif kind == LIST_GET:
        out, start, count, size, index, mask = row[1], row[2], row[3], row[4], row[5], row[6]
        at = ints[index]
        if at < 0 or at >= ints[count] or ints[mask + at] == 0:
            return False
        _copy_block(arena, out, size, start + at * size, size, 1, size)
    elif kind == LIST_SET or kind == LIST_PUSH:
        start, count, mask = row[1], row[2], row[4]
        at = ints[count] if kind == LIST_PUSH else ints[row[3]]
        if at < 0 or at >= (row[3] if kind == LIST_PUSH else ints[count]):
            return False
        rows, cols = row[6], row[7]
        _copy_block(arena, start + at * rows * cols, cols, row[5], row[8], rows, cols)
        ints[mask + at] = 1
        if kind == LIST_PUSH:
            ints[count] = at + 1
    elif kind == SCALAR:
        ints[row[2]] = _wrap(_scalar(row[1], ints[row[3]], ints[row[4]]), row[5])
    elif kind == SUM_ROWS:
        _sum_rows(arena, row[1], row[2], row[3], row[4], row[5])
    else:                        # COPY
        _copy_block(arena, row[1], row[2], row[3], row[4], row[5], row[6])
    return True


@njit(cache=True, nogil=True, error_model="numpy")
def run(code, predicate, iterations, arena, ints, plans, registers):
    """Runs iterations of ``code`` (body, update, condition) while register ``predicate``
    holds after one, at most ``iterations`` of them: DONE when it no longer holds, MORE
    when the iterations ran out first, else the row of the instruction that failed."""
    regs = np.empty((max(registers, 1), BLOCK), arena.dtype)
    for _ in range(iterations):
        for r in range(code.shape[0]):
            if not _step(code, r, arena, ints, plans, regs):
                return r
        if ints[predicate] == 0:
            return DONE
    return MORE
