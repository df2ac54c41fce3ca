"""The elementwise clusters' compiled program (kernels/compiled/fused_elementwise.py) against
NumPy: every instruction, every way an input broadcasts onto the grid (full, a row
repeated, a value per row, a scalar), grids of one block, many blocks and pieces of rows,
one thread and several. The arithmetic gives NumPy's bits; float32 exp, tanh and sigmoid
are within an ulp of float64's value rounded once."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from graphops.kernels.compiled import loops
from graphops.kernels.compiled.constants import (FUSED_BINARY, FUSED_BLOCK,
                                                 FUSED_MAX_INPUTS, FUSED_UNARY)
from graphops.runtime.elementwise_clusters import _plan


def _sigmoid(x):
    return np.where(x >= 0, 1 / (1 + np.exp(-x)), np.exp(x) / (1 + np.exp(x)))


REFERENCES = {
    "neg": np.negative, "abs": np.abs, "square": np.square, "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x), "reciprocal": lambda x: 1 / x, "exp": np.exp,
    "log": np.log, "tanh": np.tanh, "sigmoid": _sigmoid,
    "relu": lambda x: np.where(x < 0, x.dtype.type(0), x),
    "relu6": lambda x: np.where(x < 0, x.dtype.type(0), np.where(x > 6, x.dtype.type(6), x)),
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
    "max": lambda a, b: np.where((a >= b) | np.isnan(a), a, b),
    "min": lambda a, b: np.where((a <= b) | np.isnan(a), a, b),
    "squared_difference": lambda a, b: (a - b) * (a - b),
    "tanh_grad": lambda y, dy: dy * (1 - y * y),
    "sigmoid_grad": lambda y, dy: dy * y * (1 - y),
}
ROUNDED_ONCE = {"exp", "tanh", "sigmoid"}       # float32: float64's value, rounded
PATTERNS = {"full": (True, True), "row": (False, True), "column": (True, False),
            "scalar": (False, False)}


def _source(rng, rows, cols, pattern, dtype):
    """(the input as its pattern stores it, its (row, column) strides, it broadcast)."""
    has_rows, has_cols = PATTERNS[pattern]
    shape = (rows if has_rows else 1, cols if has_cols else 1)
    value = (rng.standard_normal(shape) * 4).astype(dtype)
    value.reshape(-1)[:1] = [np.nan, np.inf, -np.inf, -0.0, 0.0][rng.integers(5)]
    strides = ((cols if has_cols else 1) if has_rows else 0, 1 if has_cols else 0)
    return value.reshape(-1), strides, np.broadcast_to(value, (rows, cols))


def _run(program, sources, registers, rows, cols, dtype, out_regs):
    plan = _plan((rows, cols, [s for _, s, _ in sources]), (program, out_regs, registers),
                 np.dtype(dtype), len(sources), len(out_regs))
    out = np.empty((len(out_regs), rows * cols), dtype)
    flat = [v for v, _, _ in sources]
    flat += [flat[0]] * (FUSED_MAX_INPUTS - len(flat))
    single = rows * cols < 1 << 16
    module = loops("fused_elementwise", single=single)
    (module.run if single else module.run_parallel)(plan, out, *flat)
    return out.reshape(len(out_regs), rows, cols)


def _assert_matches(name, got, want, dtype):
    if name in ROUNDED_ONCE and dtype == np.float32:
        want = want.astype(np.float32)
        assert np.array_equal(np.isnan(got), np.isnan(want))
        finite = ~np.isnan(want)
        ulps = np.abs(got[finite].view(np.int32).astype(np.int64)
                      - want[finite].view(np.int32).astype(np.int64))
        assert ulps.max(initial=0) <= 1, name
    elif name in ROUNDED_ONCE or name == "log":
        np.testing.assert_allclose(got, want, rtol=4 * np.finfo(dtype).eps, atol=0)
    else:
        np.testing.assert_array_equal(got, want)
        assert np.array_equal(np.signbit(got), np.signbit(want)), name


GRIDS = [(1, 1), (3, 7), (5, FUSED_BLOCK + 3), (2 * FUSED_BLOCK + 1, 2), (260, 260)]


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(FUSED_UNARY + FUSED_BINARY), st.sampled_from(GRIDS),
       st.sampled_from(sorted(PATTERNS)), st.sampled_from(sorted(PATTERNS)),
       st.sampled_from([np.float32, np.float64]), st.integers(0, 2 ** 31))
def test_each_instruction_on_each_pattern(name, grid, first, second, dtype, seed):
    rng = np.random.default_rng(seed)
    rows, cols = grid
    binary = name in FUSED_BINARY
    sources = [_source(rng, rows, cols, first, dtype)]
    if binary:
        sources.append(_source(rng, rows, cols, second, dtype))
    target = len(sources)
    code = (FUSED_UNARY + FUSED_BINARY).index(name)
    got = _run([code, target, 0, target - 1], sources, target + 1, rows, cols, dtype,
               [target])[0]
    wide = [s[2].astype(np.float64) if name in ROUNDED_ONCE else s[2] for s in sources]
    with np.errstate(all="ignore"):
        want = REFERENCES[name](*wide)
    _assert_matches(name, got, want.astype(dtype) if name not in ROUNDED_ONCE else want,
                    dtype)


@pytest.mark.parametrize("rows, cols", [(4, 9), (600, 700)])
def test_a_program_of_many_instructions_and_outputs(rows, cols):
    """h = sigmoid(a) * tanh(b) + c * d, and c * d as a second output: registers reused,
    two outputs stored, on one thread and on several (600 x 700 elements)."""
    rng = np.random.default_rng(1)
    sources = [_source(rng, rows, cols, p, np.float32) for p in
               ("full", "row", "column", "scalar")]
    op = {n: (FUSED_UNARY + FUSED_BINARY).index(n) for n in ("sigmoid", "tanh", "mul", "add")}
    program = [op["sigmoid"], 4, 0, 0, op["tanh"], 5, 1, 1, op["mul"], 4, 4, 5,
               op["mul"], 5, 2, 3, op["add"], 0, 4, 5]
    got_h, got_cd = _run(program, sources, 6, rows, cols, np.float32, [0, 5])
    a, b, c, d = (s[2] for s in sources)
    with np.errstate(all="ignore"):
        cd = c * d
        sig = _sigmoid(a.astype(np.float64)).astype(np.float32)
        tanh = np.tanh(b.astype(np.float64)).astype(np.float32)
        np.testing.assert_allclose(got_h, sig * tanh + cd, rtol=2e-7, atol=2e-7)
    np.testing.assert_array_equal(got_cd, cd)
