"""Winograd convs (3x3 and 3x3x3, stride 1: F(2,3) forward and input gradient, F(3,2) filter
gradient) against the slow float64 reference."""

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from graphops.kernels.conv_algorithms import dense as conv_dense
from graphops.kernels.conv_algorithms import direct as conv_direct
from graphops.kernels.conv_algorithms import gemm as conv_gemm
from graphops.kernels.conv_algorithms import winograd as conv_winograd
from tests.conv_tolerance import assert_conv_close
from tests.module_settings import module_settings
from tests.reference_conv import (conv_backprop_filter_ref, conv_backprop_input_ref,
                                  conv_forward_ref)

FLOAT_DTYPES = [np.float16, ml_dtypes.bfloat16, np.float32, np.float64]


@st.composite
def cases(draw):
    rank = draw(st.sampled_from([2, 3]))
    spatial = tuple(draw(st.integers(1, 9)) for _ in range(rank))
    pads = tuple((draw(st.integers(0, 3)), draw(st.integers(0, 3))) for _ in range(rank))
    channels = st.sampled_from([1, 2, 3, 5, 8, 16, 24])    # groups of 8: micro-kernel GEMMs
    return dict(n=draw(st.integers(1, 2)), c=draw(channels), o=draw(channels),
                spatial=spatial, pads=pads, channels_last=draw(st.booleans()),
                dtype=draw(st.sampled_from(FLOAT_DTYPES)), seed=draw(st.integers(0, 2**32 - 1)),
                block_bytes=draw(st.sampled_from([1, 4096, 4 << 20])))


def _layout(a, channels_last):
    return a if channels_last else np.ascontiguousarray(np.moveaxis(a, -1, 1))


@settings(max_examples=150, deadline=None)
@given(case=cases())
def test_all_three_match_reference(case):
    """Winograd forced on for every channel and tile count, blocks down to one tile row;
    float32 products in groups of 8 channels on the micro-kernel GEMMs, the rest on NumPy's."""
    rank, dtype, cl = len(case["spatial"]), case["dtype"], case["channels_last"]
    out_sp = tuple(s + b + a - 2 for s, (b, a) in zip(case["spatial"], case["pads"]))
    if min(out_sp) < 1:
        return
    rng = np.random.default_rng(case["seed"])
    x = rng.uniform(-1, 1, (case["n"], *case["spatial"], case["c"])).astype(dtype)
    w = rng.uniform(-1, 1, (3,) * rank + (case["c"], case["o"])).astype(dtype)
    dy = rng.uniform(-1, 1, (case["n"], *out_sp, case["o"])).astype(dtype)
    x, dy = _layout(x, cl), _layout(dy, cl)
    geo = ((1,) * rank, (1,) * rank, case["pads"])
    with module_settings(conv_winograd, MIN_CHANNELS=1, MIN_TILES=1,
                         BLOCK_BYTES=case["block_bytes"]), \
            module_settings(conv_dense, SMALL_MAX_CHANNEL_PAIRS=0), \
            module_settings(conv_gemm, FEW_MAX_POSITIONS=0), \
            module_settings(conv_direct, MAX_UNIT_STRIDE_MACS=0):
        y = conv_dense.conv_forward(x, w, *geo, channels_last=cl)
        dx = conv_dense.conv_backprop_input(dy, w, x.shape, *geo, channels_last=cl)
        dw = conv_dense.conv_backprop_filter(x, dy, w.shape, *geo, channels_last=cl)
    w64 = w.astype(np.float64)
    assert_conv_close(y, conv_forward_ref(x.astype(np.float64), w64, *geo, channels_last=cl),
                      dtype, half_ulps=1.0)
    assert_conv_close(dx, conv_backprop_input_ref(dy.astype(np.float64), w64, x.shape, *geo,
                                                  channels_last=cl), dtype, half_ulps=1.0)
    assert_conv_close(dw, conv_backprop_filter_ref(x.astype(np.float64), dy.astype(np.float64),
                                                   w.shape, *geo, channels_last=cl),
                      dtype, half_ulps=1.0)


def test_the_winograd_path_is_taken_for_3x3_stride_1(monkeypatch):
    monkeypatch.setattr(conv_winograd, "MIN_TILES", 9)
    monkeypatch.setattr(conv_direct, "applies", lambda *args, **kwargs: False)  # Winograd's turn
    monkeypatch.setattr(conv_gemm, "FEW_MAX_POSITIONS", 0)
    calls, filter_calls = [], []
    original = conv_winograd.winograd_forward
    monkeypatch.setattr(conv_winograd, "winograd_forward",
                        lambda *a: calls.append(a[1].shape) or original(*a))
    original_filter = conv_winograd.winograd_backprop_filter
    monkeypatch.setattr(conv_winograd, "winograd_backprop_filter",
                        lambda *a: filter_calls.append(a[1].shape) or original_filter(*a))
    x = np.ones((1, 6, 6, 16), np.float32)
    w = np.ones((3, 3, 16, 24), np.float32)
    y = conv_dense.conv_forward(x, w, (1, 1), (1, 1), ((1, 1), (1, 1)))
    conv_dense.conv_backprop_input(y, w, x.shape, (1, 1), (1, 1), ((1, 1), (1, 1)))
    conv_dense.conv_forward(x, w, (2, 2), (1, 1), ((1, 1), (1, 1)))        # stride 2: not
    conv_dense.conv_forward(x, w, (1, 1), (2, 2), ((1, 1), (1, 1)))        # dilated, odd pads
    assert calls == [(3, 3, 16, 24), (3, 3, 24, 16)]
    dw = conv_dense.conv_backprop_filter(x, y, w.shape, (1, 1), (1, 1), ((1, 1), (1, 1)))
    np.testing.assert_allclose(dw, conv_backprop_filter_ref(x, y, w.shape, (1, 1), (1, 1),
                                                            ((1, 1), (1, 1))), rtol=1e-5)
    assert filter_calls == [y.shape]
    assert y[0, 0, 0, 0] == 4 * 16 and y[0, 2, 2, 0] == 9 * 16


def test_float32_error_stays_near_the_direct_sum(monkeypatch):
    calls = []
    monkeypatch.setattr(conv_direct, "applies", lambda *args, **kwargs: False)  # Winograd's turn
    original = conv_winograd.winograd_forward
    monkeypatch.setattr(conv_winograd, "winograd_forward",
                        lambda *a: calls.append(1) or original(*a))
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 32, 32, 32)).astype(np.float32)     # 512 tiles
    w = rng.standard_normal((3, 3, 32, 32)).astype(np.float32)
    pads = ((1, 1), (1, 1))
    y = conv_dense.conv_forward(x, w, (1, 1), (1, 1), pads)
    assert calls == [1]
    ref = conv_forward_ref(x.astype(np.float64), w.astype(np.float64), (1, 1), (1, 1), pads)
    assert np.abs(y - ref).max() <= 4e-6 * np.abs(ref).max()


def test_integer_convs_stay_exact_and_skip_winograd(monkeypatch):
    """Winograd's filter transform halves values: int32 convs of its shapes take the exact
    paths (and wrap as int32 arithmetic does)."""
    monkeypatch.setattr(conv_winograd, "winograd_forward", None)       # must not be reached
    monkeypatch.setattr(conv_winograd, "winograd_backprop_filter", None)
    rng = np.random.default_rng(3)
    x = rng.integers(-3, 4, (2, 32, 32, 16)).astype(np.int32)
    w = rng.integers(-3, 4, (3, 3, 16, 16)).astype(np.int32)
    geo = ((1, 1), (1, 1), ((1, 1), (1, 1)))
    y = conv_dense.conv_forward(x, w, *geo)
    assert y.dtype == np.int32
    np.testing.assert_array_equal(y, conv_forward_ref(x, w, *geo))
    dx = conv_dense.conv_backprop_input(y, w, x.shape, *geo)
    np.testing.assert_array_equal(dx, conv_backprop_input_ref(y, w, x.shape, *geo))


def test_paths_with_per_row_buffers_decline_huge_rows():
    """Winograd holds a tile row's transforms, the few-channel loops an output plane: shapes
    whose rows or planes would need hundreds of MB take the blocked paths instead."""
    assert conv_winograd.applies(np, np.float32, (3, 3, 3), (1, 1, 1), (1, 1, 1), 32, 32,
                                 (1, 64, 64, 64))
    assert not conv_winograd.applies(np, np.float32, (3, 3, 3), (1, 1, 1), (1, 1, 1), 32, 32,
                                     (1, 4, 1024, 1024))
    assert conv_dense.few_channel_loops(np, np.float32, (3, 3), (1, 1), (1, 1), 1, 8, (28, 28))
    assert not conv_dense.few_channel_loops(np, np.float32, (3, 3), (1, 1), (1, 1), 1, 8,
                                        (8192, 8192))


@pytest.mark.parametrize("rank", [2, 3])
def test_infinities_and_overflow_give_the_direct_sums_results(rank):
    """Winograd's transforms add inputs before multiplying: an infinity (or an overflowing
    sum) would give NaN where the direct sum gives an infinity or a number. Such results are
    redone on a direct path, so NaN and infinities land exactly where the reference has them."""
    rng = np.random.default_rng(11)
    shape = (1, 32, 32, 16) if rank == 2 else (1, 12, 12, 12, 16)
    x = rng.uniform(0, 1, shape).astype(np.float32)
    w = rng.uniform(0, 1, (3,) * rank + (16, 16)).astype(np.float32)
    dy = rng.uniform(0, 1, shape).astype(np.float32)
    bad_dy = dy.copy()
    x.reshape(-1)[1000] = np.inf
    bad_dy.reshape(-1)[2000] = -np.inf
    geo = ((1,) * rank, (1,) * rank, ((1, 1),) * rank)
    with np.errstate(all="ignore"):      # an infinite dy meets padding zeros: NaN, as in TF
        results = (conv_dense.conv_forward(x, w, *geo),
                   conv_dense.conv_backprop_input(bad_dy, w, x.shape, *geo),
                   conv_dense.conv_backprop_filter(x, dy, w.shape, *geo))
        x64, w64, dy64 = (a.astype(np.float64) for a in (x, w, dy))
        references = (conv_forward_ref(x64, w64, *geo),
                      conv_backprop_input_ref(bad_dy.astype(np.float64), w64, x.shape, *geo),
                      conv_backprop_filter_ref(x64, dy64, w.shape, *geo))
    for got, want in zip(results, references):
        assert np.isinf(want).any()
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_array_equal(got[np.isinf(want)], want[np.isinf(want)])
    huge = np.full(shape, 2e38, np.float32)                  # d1 + d2 overflows float32
    y = conv_dense.conv_forward(huge, np.full_like(w, 1e-4), *geo)
    np.testing.assert_allclose(y, conv_forward_ref(huge.astype(np.float64),
                                                   np.full(w.shape, 1e-4), *geo), rtol=1e-5)
