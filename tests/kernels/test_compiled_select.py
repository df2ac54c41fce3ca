"""``kernel_util.where`` on the compiled blend of the values' bits (Select, SelectV2 and the
activations' branches on large float arrays) against NumPy's where, bit for bit: NaN
payloads, signed zeros, a scalar or an array on the false side, on one thread and on
several."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from graphops.kernels.support import kernel_util
from tests.module_settings import module_settings

HOSTILE = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0]


def _operands(dtype, size, seed):
    """Two arrays with NaNs of both signs and several payloads, infinities and signed
    zeros among normal values, and a random condition."""
    rng = np.random.default_rng(seed)
    a, b = (rng.standard_normal(size).astype(dtype) for _ in range(2))
    for values in (a, b):
        values[rng.integers(0, size, size // 4)] = rng.choice(HOSTILE, size // 4)
    bits = a.view(f"u{a.itemsize}")
    payloads = np.isnan(a) & (rng.random(size) < 0.5)
    bits[payloads] ^= 0b110
    return rng.random(size) < 0.5, a, b


def _assert_where(condition, a, other):
    calls = []
    compiled = kernel_util.compiled_elementwise
    with module_settings(kernel_util, compiled_elementwise=lambda name, *args, **kwargs:
                         calls.append(name) or compiled(name, *args, **kwargs)):
        got = kernel_util.where(np, condition, a, other)
    assert calls == ["select_scalar" if np.ndim(other) == 0 else "select"]
    want = np.where(condition, a, other)
    assert got.dtype == want.dtype
    unsigned = f"u{a.itemsize}"
    assert np.array_equal(got.view(unsigned), want.view(unsigned))


@settings(max_examples=40, deadline=None)
@given(dtype=st.sampled_from([np.float32, np.float64]),
       size=st.integers(kernel_util.COMPILED_MIN_SIZE, kernel_util.COMPILED_MIN_SIZE + 100),
       scalar=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_the_blend_gives_numpys_where_bit_for_bit(dtype, size, scalar, seed):
    condition, a, b = _operands(dtype, size, seed)
    hostile = HOSTILE[seed % len(HOSTILE)]
    _assert_where(condition, a, dtype(hostile) if scalar else b)


@pytest.mark.parametrize("scalar", [False, True])
def test_the_blend_on_every_thread(scalar):
    condition, a, b = _operands(np.float32, kernel_util.PARALLEL_MIN_SIZE + 17, 5)
    _assert_where(condition, a, -1.5 if scalar else b)      # a Python float: a's dtype
