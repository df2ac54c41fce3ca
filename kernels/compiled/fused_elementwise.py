"""One compiled pass over a cluster of elementwise ops (XLA's loop fusion, run by a small
register machine rather than code generated per cluster, so one compiled function per
dtype serves every cluster and is cached on disk like the other loops).

The iteration space is a ``rows`` x ``cols`` grid (the cluster's output shape split in
two, see ``graphops.runtime.elementwise_clusters``); it is walked in blocks of at most
``BLOCK`` elements: a run of whole rows, or a piece of one row. For each block every input
is loaded into a register (a row of ``regs``), the program's instructions run one after
the other, each a plain loop over the block (which LLVM vectorizes), and the output
registers are stored. Input k, a flat array, holds element (i, j) at ``i * row stride +
j * column stride`` (its pair in the plan): a stride of 0 broadcasts it along that axis.

Each instruction ``(opcode, destination, a, b)`` (``constants.FUSED_OPCODES``: unary
codes below ``FIRST_BINARY``, binary from it) rounds in the arrays' dtype as the separate
kernel rounds it (no fused multiply-add): the arithmetic gives the kernels' bits. float32
exp is computed in float64 and rounded once (a polynomial exp, which vectorizes where the
C library's does not), float32 tanh and sigmoid in float32 (``elementwise.tanh_narrow``,
within 2 ulp, and the Sigmoid kernel's own ``elementwise.sigmoid_narrow``); float64 ones
call the C library.
"""

import math

import numpy as np
from numba import njit, prange

from graphops.kernels.compiled.constants import (FUSED_BLOCK as BLOCK, FUSED_MAX_INPUTS,
                                                 FUSED_MAX_OUTPUTS, FUSED_UNARY)
from graphops.kernels.compiled.elementwise import exp_wide, sigmoid_narrow, tanh_narrow

FIRST_BINARY = len(FUSED_UNARY)      # the codes below are unary instructions


@njit(cache=True, nogil=True, inline="always", error_model="numpy")
def _unary(code, x, out, n, wide):
    """out[:n] = f(x[:n]) for a unary ``code`` (``FUSED_UNARY``'s order); ``wide``: float32
    data (exp through float64, tanh and sigmoid in float32)."""
    one, zero, six = x.dtype.type(1), x.dtype.type(0), x.dtype.type(6)
    if code == 0:
        for j in range(n):
            out[j] = -x[j]
    elif code == 1:
        for j in range(n):
            out[j] = abs(x[j])
    elif code == 2:
        for j in range(n):
            out[j] = x[j] * x[j]
    elif code == 3:
        for j in range(n):
            out[j] = np.sqrt(x[j])
    elif code == 4:
        for j in range(n):
            out[j] = one / np.sqrt(x[j])
    elif code == 5:
        for j in range(n):
            out[j] = one / x[j]
    elif code == 6:
        if wide:
            for j in range(n):
                value = x[j]
                out[j] = value if value != value else exp_wide(np.float64(value))
        else:
            for j in range(n):
                out[j] = math.exp(x[j])
    elif code == 7:
        for j in range(n):
            out[j] = math.log(x[j]) if x[j] > 0 else (
                -np.inf if x[j] == 0 else np.nan)
    elif code == 8:
        if wide:
            for j in range(n):
                out[j] = tanh_narrow(np.float32(x[j]))     # (typed for float64 too)
        else:
            for j in range(n):
                out[j] = math.tanh(x[j])
    elif code == 9:
        if wide:
            for j in range(n):
                out[j] = sigmoid_narrow(np.float32(x[j]))   # (typed for float64 too)
        else:
            for j in range(n):
                value = x[j]
                e = math.exp(-abs(value))
                out[j] = value if value != value else (one if value >= 0 else e) / (one + e)
    elif code == 10:
        for j in range(n):
            value = x[j]
            out[j] = zero if value < zero else value
    else:
        for j in range(n):
            value = x[j]
            out[j] = zero if value < zero else (six if value > six else value)


@njit(cache=True, nogil=True, inline="always", error_model="numpy")
def _binary(code, a, b, out, n):
    """out[:n] = a[:n] op b[:n] for a binary ``code`` (``FUSED_BINARY``'s order): max and
    min give NaN from either side and, in a tie (-0 and 0), the first operand, as TF's;
    the gradients of tanh and sigmoid of output a and gradient b in the kernels' order."""
    one = a.dtype.type(1)
    if code == FIRST_BINARY:
        for j in range(n):
            out[j] = a[j] + b[j]
    elif code == FIRST_BINARY + 1:
        for j in range(n):
            out[j] = a[j] - b[j]
    elif code == FIRST_BINARY + 2:
        for j in range(n):
            out[j] = a[j] * b[j]
    elif code == FIRST_BINARY + 3:
        for j in range(n):
            out[j] = a[j] / b[j]
    elif code == FIRST_BINARY + 4:
        for j in range(n):
            x, y = a[j], b[j]
            out[j] = x if (x >= y or x != x) else y
    elif code == FIRST_BINARY + 5:
        for j in range(n):
            x, y = a[j], b[j]
            out[j] = x if (x <= y or x != x) else y
    elif code == FIRST_BINARY + 6:
        for j in range(n):
            d = a[j] - b[j]
            out[j] = d * d
    elif code == FIRST_BINARY + 7:
        for j in range(n):
            out[j] = b[j] * (one - a[j] * a[j])
    else:
        for j in range(n):
            out[j] = b[j] * a[j] * (one - a[j])


@njit(cache=True, nogil=True, inline="always", error_model="numpy")
def _pick(k, a0, a1, a2, a3, a4, a5, a6, a7):
    if k == 0:
        return a0
    if k == 1:
        return a1
    if k == 2:
        return a2
    if k == 3:
        return a3
    if k == 4:
        return a4
    if k == 5:
        return a5
    if k == 6:
        return a6
    return a7


@njit(cache=True, nogil=True, inline="always", error_model="numpy")
def _load(source, register, row_stride, col_stride, row, col, count_rows, count_cols):
    """The block's values of one input into ``register``: one run where its rows lie end
    to end, a row repeated (row stride 0), a value per row (column stride 0). Loops index
    views from 0, so LLVM sees no negative index and vectorizes them."""
    if col_stride == 1 and (row_stride == count_cols or count_rows == 1):
        start = row * row_stride + col
        _copy(source[start:start + count_rows * count_cols], register)
    elif col_stride == 1:
        for r in range(count_rows):
            start, at = (row + r) * row_stride + col, r * count_cols
            _copy(source[start:start + count_cols], register[at:at + count_cols])
    else:
        for r in range(count_rows):
            value, at = source[(row + r) * row_stride], r * count_cols
            target = register[at:at + count_cols]
            for c in range(count_cols):
                target[c] = value


@njit(cache=True, nogil=True, inline="always", error_model="numpy")
def _copy(source, target):
    for j in range(source.shape[0]):
        target[j] = source[j]


HEADER = 7 + 2 * FUSED_MAX_INPUTS + FUSED_MAX_OUTPUTS   # plan entries before the program


@njit(cache=True, nogil=True, fastmath={"contract"}, error_model="numpy", inline="always")
def _block(block, plan, regs, out, a0, a1, a2, a3, a4, a5, a6, a7):
    """Runs the plan's program on block number ``block``: whole rows when a row fits in
    BLOCK elements (as many as fit), else a piece of one row."""
    rows, cols, n_in, n_out, wide, n_instr = plan[0], plan[1], plan[2], plan[3], plan[5], plan[6]
    if cols <= BLOCK:
        span = BLOCK // cols
        row, col, count_rows, count_cols = block * span, 0, min(span, rows - block * span), cols
    else:
        pieces = (cols + BLOCK - 1) // BLOCK
        row, col = block // pieces, (block % pieces) * BLOCK
        count_rows, count_cols = 1, min(BLOCK, cols - col)
    n = count_rows * count_cols
    for k in range(n_in):
        _load(_pick(k, a0, a1, a2, a3, a4, a5, a6, a7), regs[k], plan[7 + 2 * k],
              plan[8 + 2 * k], row, col, count_rows, count_cols)
    for i in range(HEADER, HEADER + 4 * n_instr, 4):
        code, dst, a, b = plan[i], plan[i + 1], plan[i + 2], plan[i + 3]
        if code < FIRST_BINARY:
            _unary(code, regs[a], regs[dst], n, wide)
        else:
            _binary(code, regs[a], regs[b], regs[dst], n)
    start = row * cols + col
    for k in range(n_out):
        _copy(regs[plan[7 + 2 * FUSED_MAX_INPUTS + k], :n], out[k, start:start + n])


@njit(cache=True, nogil=True, error_model="numpy")
def _blocks(rows, cols):
    if cols <= BLOCK:
        span = BLOCK // cols
        return (rows + span - 1) // span
    return rows * ((cols + BLOCK - 1) // BLOCK)


@njit(cache=True, nogil=True, error_model="numpy")
def run(plan, out, a0, a1, a2, a3, a4, a5, a6, a7):
    """The plan's program over its grid on one thread (small clusters: no thread wake-up).
    ``plan`` (int64): rows, cols, inputs, outputs, registers, 1 for float32 data (whose
    transcendentals go through float64), instructions; each input's (row, column) stride
    (``MAX_INPUTS`` pairs); each output's register (``MAX_OUTPUTS``); the instructions.
    ``out``: [outputs, rows * cols]; a0..: the inputs, flat (unused ones repeat one)."""
    regs = np.empty((plan[4], BLOCK), out.dtype)
    for block in range(_blocks(plan[0], plan[1])):
        _block(block, plan, regs, out, a0, a1, a2, a3, a4, a5, a6, a7)


@njit(cache=True, nogil=True, parallel=True, error_model="numpy")
def run_parallel(plan, out, a0, a1, a2, a3, a4, a5, a6, a7):
    """``run`` with the blocks shared among threads, each with its own registers."""
    for block in prange(_blocks(plan[0], plan[1])):
        regs = np.empty((plan[4], BLOCK), out.dtype)
        _block(block, plan, regs, out, a0, a1, a2, a3, a4, a5, a6, a7)
