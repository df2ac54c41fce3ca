"""The compiled loop machine (kernels/compiled/loop_program.py) instruction by instruction:
products over arena blocks (strided rows, transposes, both float dtypes, the micro-kernels'
column groups and the loop's tail) against float64 NumPy, scalar instructions against
NumPy's int32 and bool arithmetic (wrapping), list reads and writes that refuse an index
out of range or an unset element, pushes that refuse when the list's room is full, and
sums over rows bit for bit as the Sum kernel's float64 sums."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from graphops.kernels.compiled import loops
from graphops.kernels.compiled.constants import (LOOP_DONE, LOOP_LIST_GET, LOOP_LIST_PUSH,
                                                 LOOP_LIST_SET, LOOP_MATMUL, LOOP_SCALAR,
                                                 LOOP_SCALAR_OPS, LOOP_SUM_ROWS, LOOP_WIDTH)

machine = loops("loop_program", single=True)


def _run(rows, arena, ints):
    """Runs the instruction rows once (register 0 holds 0: one iteration); the answer."""
    code = np.zeros((len(rows), LOOP_WIDTH), np.int64)
    for r, row in enumerate(rows):
        code[r, :len(row)] = row
    return machine.run(code, 0, 1, arena, ints, np.zeros(1, np.int64), 0)


def _place(arena, at, matrix, stride):
    rows, cols = matrix.shape
    for r in range(rows):
        arena[at + r * stride:at + r * stride + cols] = matrix[r]


@settings(max_examples=60, deadline=None)
@given(rows=st.integers(1, 19), cols=st.integers(1, 70), depth=st.integers(1, 21),
       pads=st.tuples(*[st.integers(0, 5)] * 3), transposes=st.tuples(st.booleans(),
                                                                      st.booleans()),
       dtype=st.sampled_from([np.float32, np.float64]), accumulate=st.booleans(),
       seed=st.integers(0, 2 ** 16))
def test_a_product_of_strided_blocks_is_numpys(rows, cols, depth, pads, transposes, dtype,
                                               accumulate, seed):
    """With the accumulate word, the product is added to what the output block holds."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((rows, depth)).astype(dtype)
    b = rng.standard_normal((depth, cols)).astype(dtype)
    stored_a, stored_b = (a.T if transposes[0] else a), (b.T if transposes[1] else b)
    a_stride, b_stride = stored_a.shape[1] + pads[0], stored_b.shape[1] + pads[1]
    out_stride = cols + pads[2]
    a_at, b_at = 3, 3 + stored_a.shape[0] * a_stride
    out_at = b_at + stored_b.shape[0] * b_stride
    scratch = out_at + rows * out_stride
    arena = np.full(scratch + cols + 4, np.nan, dtype)
    _place(arena, a_at, stored_a, a_stride)
    _place(arena, b_at, stored_b, b_stride)
    held = rng.standard_normal((rows, cols)).astype(dtype)
    if accumulate:
        _place(arena, out_at, held, out_stride)
    a_rows, a_cols = (1, a_stride) if transposes[0] else (a_stride, 1)
    b_rows, b_cols = (1, b_stride) if transposes[1] else (b_stride, 1)
    before = arena.copy()
    status = _run([[LOOP_MATMUL, out_at, rows, cols, out_stride, a_at, a_rows, a_cols, b_at,
                    b_rows, b_cols, depth, scratch, int(accumulate)]], arena,
                  np.zeros(1, np.int64))
    assert status == LOOP_DONE
    got = np.stack([arena[out_at + r * out_stride:out_at + r * out_stride + cols]
                    for r in range(rows)])
    want = a.astype(np.float64) @ b.astype(np.float64) + (held if accumulate else 0)
    bound = (np.abs(a).astype(np.float64) @ np.abs(b) + np.abs(held) * accumulate) * (
        (depth + 1) * np.finfo(dtype).eps)
    assert np.all(np.abs(got - want) <= bound + np.finfo(dtype).tiny)
    outside = np.ones(arena.shape, bool)       # nothing else written but the scratch
    for r in range(rows):
        outside[out_at + r * out_stride:out_at + r * out_stride + cols] = False
    outside[scratch:scratch + cols] = False
    np.testing.assert_array_equal(arena[outside], before[outside])


_NUMPY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "max": np.maximum,
          "min": np.minimum, "less": np.less, "less_equal": np.less_equal,
          "greater": np.greater, "greater_equal": np.greater_equal, "equal": np.equal,
          "not_equal": np.not_equal, "logical_and": np.logical_and,
          "logical_or": np.logical_or, "logical_not": lambda a, b: np.logical_not(a),
          "neg": lambda a, b: np.negative(a), "copy": lambda a, b: a}


@pytest.mark.parametrize("name", LOOP_SCALAR_OPS)
@settings(max_examples=30, deadline=None)
@given(a=st.integers(-2 ** 31, 2 ** 31 - 1), b=st.integers(-2 ** 31, 2 ** 31 - 1))
def test_a_scalar_instruction_is_numpys_int32_arithmetic(name, a, b):
    ints = np.array([0, a, b, 0], np.int64)
    logical = name.startswith("logical")
    if logical:
        ints[1:3] = [a % 2, b % 2]
    bits = 0 if logical or name in ("less", "less_equal", "greater", "greater_equal",
                                    "equal", "not_equal") else 32
    with np.errstate(over="ignore"):
        operands = ints[1:3].astype(bool if logical else np.int32)
        want = _NUMPY[name](operands[0], operands[1])
    status = _run([[LOOP_SCALAR, LOOP_SCALAR_OPS.index(name), 3, 1, 2, bits]],
                  np.zeros(1, np.float32), ints)
    assert status == LOOP_DONE
    assert ints[3] == int(want)


def test_list_instructions_refuse_an_index_out_of_range_or_an_unset_element():
    """A list of 3 elements of 2 values at arena offset 0, its length in register 7, its
    set marks in registers 4-6; the index in register 1. Answers: the row of the failing
    instruction."""
    arena = np.zeros(12, np.float32)
    arena[8:10] = [5, 6]                          # the item to set
    ints = np.array([0, 1, 0, 0, 0, 0, 0, 3], np.int64)
    get = [LOOP_LIST_GET, 10, 0, 7, 2, 1, 4]      # into arena[10:12]
    put = [LOOP_LIST_SET, 0, 7, 1, 4, 8, 1, 2, 2]
    assert _run([get], arena, ints) == 0          # element 1 is unset
    assert _run([put, get], arena, ints) == LOOP_DONE
    np.testing.assert_array_equal(arena[:12], [0, 0, 5, 6, 0, 0, 0, 0, 5, 6, 5, 6])
    np.testing.assert_array_equal(ints[4:], [0, 1, 0, 3])
    for index in (-1, 3):
        ints[1] = index
        assert _run([put], arena, ints) == 0
        assert _run([put, get], arena, ints) == 0
    ints[1], ints[7] = 1, 1                       # a list of 1 element: index 1 is past it
    assert _run([get], arena, ints) == 0
    assert _run([put], arena, ints) == 0


def test_a_push_fills_the_lists_room_then_answers_its_row():
    """Room for 3 elements of 2 values at offset 0, the length in register 0 (1 already),
    marks in registers 1-3; the item a strided column block at offset 6."""
    arena = np.zeros(12, np.float32)
    arena[6:12] = [7, 0, 8, 0, 9, 0]              # rows of stride 2: the item is [7, 8]
    ints = np.array([1, 1, 0, 0, 0], np.int64)    # (register 4: the predicate, 0)
    push = [LOOP_LIST_PUSH, 0, 0, 3, 1, 6, 2, 1, 2]
    code = np.zeros((1, LOOP_WIDTH), np.int64)
    code[0, :len(push)] = push
    assert machine.run(code, 4, 1, arena, ints, np.zeros(1, np.int64), 0) == LOOP_DONE
    assert machine.run(code, 4, 1, arena, ints, np.zeros(1, np.int64), 0) == LOOP_DONE
    np.testing.assert_array_equal(arena[:6], [0, 0, 7, 8, 7, 8])
    np.testing.assert_array_equal(ints[:4], [3, 1, 1, 1])
    assert machine.run(code, 4, 1, arena, ints, np.zeros(1, np.int64), 0) == 0
    np.testing.assert_array_equal(ints[:4], [3, 1, 1, 1])


@settings(max_examples=40, deadline=None)
@given(rows=st.integers(1, 40), cols=st.integers(1, 40), pad=st.integers(0, 3),
       dtype=st.sampled_from([np.float32, np.float64]), seed=st.integers(0, 2 ** 16))
def test_a_sum_over_rows_is_the_sum_kernels_float64_sum(rows, cols, pad, dtype, seed):
    """Bit for bit what NumPy's float64 sum over axis 0 gives, rounded once (the Sum
    kernel's), with values of many magnitudes; neighbours untouched."""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((rows, cols)) * 10.0 ** rng.uniform(-4, 4, (rows, cols)))
    x = x.astype(dtype)
    stride = cols + pad
    arena = np.full(2 + rows * stride + cols + 2, np.nan, dtype)
    _place(arena, 2, x, stride)
    out = 2 + rows * stride
    before = arena.copy()
    assert _run([[LOOP_SUM_ROWS, out, 2, rows, cols, stride]], arena,
                np.zeros(1, np.int64)) == LOOP_DONE
    want = np.add.reduce(x, axis=0, dtype=np.float64).astype(dtype)
    np.testing.assert_array_equal(arena[out:out + cols], want)
    np.testing.assert_array_equal(arena[:out], before[:out])
    assert np.isnan(arena[out + cols:]).all()
