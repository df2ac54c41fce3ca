"""The per-channel chains (a BatchNorm's scale and shift, a bias, then Relu or Relu6) that
fusion runs as one pass (``kernel_util.channel_chain``, ``compiled.elementwise``) against
the separate NumPy ops, bit for bit (NaN for NaN): any sequence of stages, NaN,
infinities and signed zeros, chunks cut short, in place and into a new array, on one
thread and on several."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from graphops.kernels.compiled import loops
from graphops.kernels.support import kernel_util

OPS = {"mul": np.multiply, "add": np.add, "sub": np.subtract}
HOSTILE = [np.nan, np.inf, -np.inf, 0.0, -0.0, 6.0, -6.0, 1e-40]
SHORTER = 7      # chunks a seventh of the tiles' length: many chunks, the last cut short


def _separately(x, stages, activation):
    """The chain as the separate ops give it: each stage rounded, then Relu or Relu6."""
    y = x.copy()
    for kind, value in stages:
        y = OPS[kind](y, value).astype(x.dtype)
    if activation is not None:
        y = np.where(y < 0, x.dtype.type(0), y)
    if activation == "Relu6":
        y = np.where(y > 6, x.dtype.type(6), y)
    return y


@st.composite
def chains(draw):
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    channels = draw(st.sampled_from([1, 3, 16, 40, 130]))
    rows = draw(st.integers(1, 400))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    x = (rng.standard_normal((rows, channels)) * 8).astype(dtype)
    x.flat[rng.integers(0, x.size, x.size // 5 + 1)] = rng.choice(HOSTILE, x.size // 5 + 1)
    stages = []
    for kind in draw(st.lists(st.sampled_from(sorted(OPS)), max_size=4)):
        value = (rng.standard_normal(channels) * 4).astype(dtype)
        value[rng.integers(0, channels)] = rng.choice(HOSTILE)
        stages.append((kind, value))
    return x, stages, draw(st.sampled_from([None, "Relu", "Relu6"]))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")    # the reference's inf - inf
@settings(max_examples=150, deadline=None)
@given(case=chains(), in_place=st.booleans(), single=st.booleans())
def test_the_compiled_chain_gives_the_separate_ops_bits(case, in_place, single):
    x, stages, activation = case
    want = _separately(x, stages, activation)
    tiled, kinds = kernel_util.chain_tiles(stages, x.shape[-1], x.dtype)
    rows = max(1, tiled.shape[1] // SHORTER // x.shape[-1])     # chunks of a few rows
    tiled = np.ascontiguousarray(tiled[:, :rows * x.shape[-1]])
    got = x.copy() if in_place else np.empty_like(x)
    loops("elementwise", single=single).channel_chain(
        got.reshape(-1) if in_place else x.copy().reshape(-1), tiled, kinds,
        kernel_util.ACTIVATION_CODES[activation], x.dtype.type(0), x.dtype.type(6),
        got.reshape(-1))
    _assert_same_bits(got, want)


def _assert_same_bits(got, want):
    """Equal bits where the ops give a number (signed zeros included), NaN where they give
    NaN (which NaN comes of two NaN operands is the hardware's choice)."""
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    unsigned = f"u{got.itemsize}"
    assert np.array_equal(got[~nan].view(unsigned), want[~nan].view(unsigned))


def test_a_conv_epilogue_chunk_in_place_gives_the_same_bits():
    """``chain_rows``, as the conv loops call it on a block they wrote."""
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((37, 24)) * 8).astype(np.float32)
    x.flat[::5] = -0.0
    stages = [("mul", rng.standard_normal(24).astype(np.float32)),
              ("sub", rng.standard_normal(24).astype(np.float32)),
              ("add", rng.standard_normal(24).astype(np.float32))]
    tiled, kinds = kernel_util.chain_tiles(stages, 24, np.float32)
    got = x.copy().reshape(-1)
    loops("elementwise").chain_rows(got, tiled, kinds, 2, np.float32(0), np.float32(6))
    _assert_same_bits(got, _separately(x, stages, "Relu6").reshape(-1))


@pytest.mark.parametrize("kinds", [["sub"], ["mul", "sub"], ["sub", "add"], ["add", "mul", "sub"]])
def test_a_nan_subtracted_keeps_its_bits(kinds):
    """x - NaN is that NaN, its sign and payload kept (finite x: one NaN operand, so the
    hardware's choice is fixed), as the separate Sub gives it."""
    x = np.linspace(-3, 3, 64 * 8, dtype=np.float32).reshape(64, 8)
    nans = np.array([np.nan, -np.nan, 1, 2, 3, 4, 5, 6], np.float32)
    nans.view(np.uint32)[0] |= 0b1010
    stages = [(kind, nans if kind == "sub" else np.full(8, 0.5, np.float32))
              for kind in kinds]
    tiled, codes = kernel_util.chain_tiles(stages, 8, np.float32)
    got = np.empty_like(x)
    loops("elementwise").channel_chain(x.reshape(-1), tiled, codes, 1, np.float32(0),
                                       np.float32(6), got.reshape(-1))
    want = _separately(x, stages, "Relu")
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("activation", [None, "Relu", "Relu6"])
def test_a_small_chain_with_an_activation_takes_the_compiled_pass(activation, monkeypatch):
    """``channel_chain`` on 3 rows: one compiled pass where an activation follows (NumPy's
    maximum and minimum cost more than the call), NumPy's ops without one; the separate
    ops' bits either way."""
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((3, 16)) * 8).astype(np.float32)
    x.flat[::7] = np.nan
    x.flat[1::5] = -0.0
    stages = [("mul", rng.standard_normal(16).astype(np.float32)),
              ("add", rng.standard_normal(16).astype(np.float32))]
    module, calls = loops("elementwise"), []
    compiled_chain = module.channel_chain
    monkeypatch.setattr(module, "channel_chain",
                        lambda *args: calls.append(1) or compiled_chain(*args))
    got = kernel_util.channel_chain(x, stages, activation)
    assert len(calls) == (activation is not None)
    _assert_same_bits(got, _separately(x, stages, activation))


@pytest.mark.parametrize("shape", [(), (4, 0), (0, 3)])
def test_a_chain_without_rows_of_channels_runs_numpy(shape):
    """A scalar, rows of no channels and no rows, with an activation: NumPy's ops (the
    compiled pass lays its tiles along a last dim of channels, and has nothing to do on no
    values), the separate ops' values."""
    x = np.full(shape, -2.5, np.float32)
    stages = [("mul", np.float32(2)), ("add", np.float32(1))]
    got = kernel_util.channel_chain(x, stages, "Relu")
    assert got.shape == shape
    _assert_same_bits(np.asarray(got), _separately(x, stages, "Relu"))
