"""Property tests: conv_algorithms.dense against the slow float64 reference, whatever path each
case takes, and its GEMM paths forced on (patch matrices, GEMMs scattered by compiled loops);
integer, empty, chunked and half-type cases. The fast CPU paths' own tests are in
test_conv_dense_few_channels and test_conv_dense_direct."""

import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from graphops.kernels.compiled import usable
from graphops.kernels.conv_algorithms import dense as conv_dense
from graphops.kernels.conv_algorithms import direct as conv_direct
from graphops.kernels.conv_algorithms import gemm as conv_gemm
from graphops.kernels.conv_algorithms import layout as conv_layout
from graphops.kernels.conv_algorithms import scatter as conv_scatter
from graphops.kernels.conv_algorithms.layout import compute_dtype
from graphops.kernels.conv_algorithms.dense import (conv_backprop_filter, conv_backprop_input,
                                                    conv_forward)
from tests.kernels.dense_conv_cases import (  # noqa: F401 (on_every_thread: autouse)
    FLOAT_DTYPES, SETTINGS, arrays, check_close, conv_cases, layout, on_every_thread)
from tests.module_settings import module_settings
from tests.reference_conv import (conv_backprop_filter_ref, conv_backprop_input_ref,
                                  conv_forward_ref)


@SETTINGS
@given(case=conv_cases(), dtype=st.sampled_from(FLOAT_DTYPES))
def test_forward_matches_reference(case, dtype):
    x, w, _, geo, _ = arrays(case, dtype)
    ref = conv_forward_ref(x.astype(np.float64), w.astype(np.float64), *geo,
                           channels_last=case["channels_last"])
    got = conv_forward(x, w, *geo, channels_last=case["channels_last"])
    check_close(got, ref, dtype)


@SETTINGS
@given(case=conv_cases(), dtype=st.sampled_from(FLOAT_DTYPES))
def test_backprop_input_matches_reference(case, dtype):
    _, w, dy, geo, x_shape = arrays(case, dtype)
    ref = conv_backprop_input_ref(dy.astype(np.float64), w.astype(np.float64), x_shape, *geo,
                                  channels_last=case["channels_last"])
    got = conv_backprop_input(dy, w, x_shape, *geo, channels_last=case["channels_last"])
    check_close(got, ref, dtype)


@SETTINGS
@given(case=conv_cases(), dtype=st.sampled_from(FLOAT_DTYPES))
def test_backprop_filter_matches_reference(case, dtype):
    x, w, dy, geo, _ = arrays(case, dtype)
    ref = conv_backprop_filter_ref(x.astype(np.float64), dy.astype(np.float64), w.shape, *geo,
                                   channels_last=case["channels_last"])
    got = conv_backprop_filter(x, dy, w.shape, *geo, channels_last=case["channels_last"])
    check_close(got, ref, dtype)


@SETTINGS
@given(case=conv_cases(), dtype=st.sampled_from(FLOAT_DTYPES), unit_strides=st.booleans(),
       block_bytes=st.sampled_from([1, 300, 4 << 20]), unit_rows=st.sampled_from([1, 512]))
def test_gemm_and_scatter_path_matches_reference(case, dtype, unit_strides, block_bytes,
                                                 unit_rows):
    """The forward (stride 1) and input gradient as GEMMs scattered by compiled loops, forced
    on at every depth, with blocks down to one position and pool units down to one slab."""
    if unit_strides:
        for dim in case["dims"]:
            dim["s"] = 1
    x, w, dy, geo, x_shape = arrays(case, dtype)
    cl = case["channels_last"]
    with module_settings(conv_dense, SMALL_MAX_CHANNEL_PAIRS=0, SCATTER_MIN_DEPTH=1,
                         SCATTER_MIN_SOURCES=1), \
            module_settings(conv_scatter, SCATTER_BLOCK_BYTES=block_bytes,
                            SCATTER_MIN_UNIT_ROWS=unit_rows), \
            module_settings(conv_gemm, FEW_MAX_POSITIONS=0):
        y = conv_forward(x, w, *geo, channels_last=cl)
        dx = conv_backprop_input(dy, w, x_shape, *geo, channels_last=cl)
    check_close(y, conv_forward_ref(x.astype(np.float64), w.astype(np.float64), *geo,
                                    channels_last=cl), dtype)
    check_close(dx, conv_backprop_input_ref(dy.astype(np.float64), w.astype(np.float64),
                                            x_shape, *geo, channels_last=cl), dtype)


@pytest.mark.parametrize("dy_shape, w_shape, strides", [
    ((12, 2, 2, 2, 6), (3, 3, 3, 4, 6), (2, 2, 2)),      # a 3-D CNN's second conv
    ((1, 16, 16, 32), (3, 3, 3, 32), (2, 2)),
    ((2, 5, 6), (5, 3, 6), (3,)),
])
def test_small_strided_input_gradients_take_the_compiled_scatter(dy_shape, w_shape, strides):
    """A strided input gradient of few dy positions (under ``SCATTER_MIN_SOURCES``) that
    neither the phases nor the direct kernels take runs as GEMMs scattered by compiled
    loops, not NumPy's pass per tap: against the float64 reference."""
    rng = np.random.default_rng(4)
    dy = rng.standard_normal(dy_shape).astype(np.float32)
    w = rng.standard_normal(w_shape).astype(np.float32)
    in_shape = (dy_shape[0], *(q * s for q, s in zip(dy_shape[1:-1], strides)), w_shape[-2])
    pads = tuple((0, max(0, (q - 1) * s + k - i)) for q, s, k, i
                 in zip(dy_shape[1:-1], strides, w_shape[:-2], in_shape[1:-1]))
    geo = (strides, (1,) * len(strides), pads)
    calls = []
    scatter = conv_scatter.backprop_input
    with module_settings(conv_scatter, backprop_input=lambda *a: calls.append(1) or scatter(*a)):
        got = conv_backprop_input(dy, w, in_shape, *geo)
    assert calls == [1] and math.prod(dy_shape[:-1]) < conv_dense.SCATTER_MIN_SOURCES
    want = conv_backprop_input_ref(dy.astype(np.float64), w.astype(np.float64), in_shape, *geo)
    check_close(got, want, np.float32)


@settings(max_examples=100, deadline=None)
@given(case=conv_cases(), dtype=st.sampled_from(FLOAT_DTYPES))
def test_array_module_col2im_matches_reference(case, dtype):
    """The input gradient written once against ``xp`` (CuPy's path, and NumPy's where the
    compiled loops cannot run), forced on the CPU."""
    _, w, dy, geo, x_shape = arrays(case, dtype)
    with module_settings(conv_dense, _scatters=lambda *args, **kwargs: False,
                         _by_phases=lambda *args: False):
        got = conv_backprop_input(dy, w, x_shape, *geo, channels_last=case["channels_last"])
    ref = conv_backprop_input_ref(dy.astype(np.float64), w.astype(np.float64), x_shape, *geo,
                                  channels_last=case["channels_last"])
    check_close(got, ref, dtype)


@settings(max_examples=60, deadline=None)
@given(case=conv_cases())
def test_int32_forward_and_backprop_input_exact(case):
    x, w, dy, geo, x_shape = arrays(case, np.int32)
    cl = case["channels_last"]
    y = conv_forward(x, w, *geo, channels_last=cl)
    assert y.dtype == np.int32
    np.testing.assert_array_equal(y, conv_forward_ref(x, w, *geo, channels_last=cl))
    dx = conv_backprop_input(dy, w, x_shape, *geo, channels_last=cl)
    assert dx.dtype == np.int32
    np.testing.assert_array_equal(dx, conv_backprop_input_ref(dy, w, x_shape, *geo,
                                                              channels_last=cl))


def test_int32_forward_wraps_like_int32_arithmetic():
    x = np.full((1, 2, 2, 3), 2**20, np.int32)
    w = np.full((2, 2, 3, 1), 2**12, np.int32)
    y = conv_forward(x, w, (1, 1), (1, 1), ((0, 0), (0, 0)))
    expected = (12 * 2**32) % 2**32  # 12 products of 2**32 wrap to 0 modulo 2**32
    assert y.dtype == np.int32 and y.shape == (1, 1, 1, 1) and int(y[0, 0, 0, 0]) == expected
    w[0, 0, 0, 0] = 2**12 + 1
    y = conv_forward(x, w, (1, 1), (1, 1), ((0, 0), (0, 0)))
    assert int(y[0, 0, 0, 0]) == 2**20


@settings(max_examples=80, deadline=None)
@given(case=conv_cases())
def test_adjoint_identities_float64(case):
    """<conv(x, w), dy> == <x, backprop_input(dy)> == <w, backprop_filter(x, dy)>."""
    x, w, dy, geo, x_shape = arrays(case, np.float64)
    cl = case["channels_last"]
    lhs = np.vdot(conv_forward(x, w, *geo, channels_last=cl), dy)
    via_input = np.vdot(x, conv_backprop_input(dy, w, x_shape, *geo, channels_last=cl))
    via_filter = np.vdot(w, conv_backprop_filter(x, dy, w.shape, *geo, channels_last=cl))
    tol = 1e-9 * (1 + np.abs(x).sum() * np.abs(w).sum() * max(1, np.abs(dy).max(initial=0)))
    assert abs(lhs - via_input) <= tol
    assert abs(lhs - via_filter) <= tol


@settings(max_examples=60, deadline=None)
@given(case=conv_cases(min_size=1), budget=st.sampled_from([1, 64, 700, 5000]))
def test_chunked_and_unchunked_agree(case, budget):
    """Tiny im2col and scatter budgets (blocks down to single output positions) give the same
    results."""
    x, w, dy, geo, x_shape = arrays(case, np.float64)
    cl = case["channels_last"]

    def run_all():
        return (conv_forward(x, w, *geo, channels_last=cl),
                conv_backprop_input(dy, w, x_shape, *geo, channels_last=cl),
                conv_backprop_filter(x, dy, w.shape, *geo, channels_last=cl))

    whole = run_all()
    with module_settings(conv_dense, CHUNK_BYTES=budget, SCATTER_MIN_SOURCES=1), \
            module_settings(conv_scatter, SCATTER_BLOCK_BYTES=budget), \
            module_settings(conv_gemm, FEW_MAX_POSITIONS=0):
        chunked = run_all()
    for a, b in zip(whole, chunked):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("channels_last", [True, False])
@pytest.mark.parametrize("shape_last, kernel, out_sp", [
    ((0, 5, 5, 3), (3, 3), (3, 3)),      # empty batch
    ((2, 5, 5, 0), (3, 3), (3, 3)),      # no input channels
    ((2, 0, 5, 3), (3, 3), (0, 3)),      # empty spatial dim
    ((2, 2, 5, 3), (3, 3), (0, 3)),      # window larger than the input: no outputs
])
def test_empty_dims_give_zero_results(shape_last, kernel, out_sp, channels_last):
    n, c = shape_last[0], shape_last[-1]
    geo = ((1, 1), (1, 1), ((0, 0), (0, 0)))
    x = np.ones(layout(shape_last, channels_last), np.float32)
    w = np.ones((*kernel, c, 4), np.float32)
    dy = np.ones(layout((n, *out_sp, 4), channels_last), np.float32)
    y = conv_forward(x, w, *geo, channels_last=channels_last)
    assert y.shape == layout((n, *out_sp, 4), channels_last) and not y.any()
    dx = conv_backprop_input(dy, w, x.shape, *geo, channels_last=channels_last)
    assert dx.shape == x.shape and dx.dtype == np.float32 and not dx.any()
    dw = conv_backprop_filter(x, dy, w.shape, *geo, channels_last=channels_last)
    assert dw.shape == w.shape and dw.dtype == np.float32 and not dw.any()


def test_uncovered_input_rows_get_zero_gradient():
    """Stride 3 over 8 rows with a 2-tap filter (VALID): rows 2, 5, 6 and 7 see no window."""
    dy = np.ones((1, 2, 1, 1))
    w = np.ones((2, 1, 1, 1))
    dx = conv_backprop_input(dy, w, (1, 8, 1, 1), (3, 1), (1, 1), ((0, 0), (0, 0)))
    assert dx[0, :, 0, 0].tolist() == [1, 1, 0, 1, 1, 0, 0, 0]


@pytest.mark.parametrize("dtype, count", [(np.float16, 2100), (ml_dtypes.bfloat16, 300)])
def test_half_types_accumulate_in_float32_and_round_once(dtype, count, monkeypatch):
    """Sums of ``count`` unit products, spread over GEMM depth (forward), kernel offsets
    (backprop-input) and im2col blocks (backprop-filter). float32 sums are exact and
    ``count`` is representable; a half-precision running sum stalls at 2048 (float16)
    or 256 (bfloat16)."""
    geo = ((1,), (1,), ((0, 0),))
    ones = lambda *shape: np.ones(shape, dtype)
    y = conv_forward(ones(1, count, 1), ones(count, 1, 1), *geo)
    dx = conv_backprop_input(ones(1, count, 1), ones(count, 1, 1), (1, 2 * count - 1, 1), *geo)
    monkeypatch.setattr(conv_dense, "CHUNK_BYTES", 256)  # 32 positions per block
    dw = conv_backprop_filter(ones(1, count + 1, 1), ones(1, count, 1), (2, 1, 1), *geo)
    assert y.shape == (1, 1, 1) and dx.shape == (1, 2 * count - 1, 1) and dw.shape == (2, 1, 1)
    for got in (y.ravel()[0], dx[0, count - 1, 0], dw[0, 0, 0], dw[1, 0, 0]):
        assert got.dtype == np.dtype(dtype) and float(got) == count


@settings(max_examples=60, deadline=None)
@given(rank=st.integers(1, 3), data=st.data())
def test_compiled_padding_matches_numpy_pad(rank, data):
    """``pad_spatial``'s compiled loop (large inputs) gives np.pad's zeros and values, also
    with a window-sized minimum shape adding zeros past the padding."""
    shape = (data.draw(st.integers(1, 3)),
             *(data.draw(st.integers(1, 6)) for _ in range(rank)), data.draw(st.integers(1, 9)))
    pads = tuple((data.draw(st.integers(0, 3)), data.draw(st.integers(0, 3))) for _ in range(rank))
    extra = tuple(data.draw(st.integers(0, 2)) for _ in range(rank))
    x = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1))).standard_normal(
        shape).astype(np.float32)
    want = np.pad(x, ((0, 0), *((b, a + e) for (b, a), e in zip(pads, extra)), (0, 0)))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(conv_layout, "COMPILED_PAD_MIN_SIZE", 0)
        got = conv_layout.pad_spatial(x, pads, min_shape=want.shape[1:-1])
    np.testing.assert_array_equal(got, want)


@SETTINGS
@given(rank=st.integers(1, 3), batch=st.integers(1, 3), side=st.integers(1, 9),
       channels=st.integers(1, 40), outputs=st.integers(1, 40),
       dtype=st.sampled_from([np.float32, np.float64]), seed=st.integers(0, 2**16))
def test_pointwise_convs_as_one_gemm_give_the_general_paths_bits(rank, batch, side, channels,
                                                                 outputs, dtype, seed):
    """A 1x1, stride-1, unpadded channels-last conv is one plain GEMM (``gemm_forward``,
    the kernels' path for it): the general path's bits, the reference's values."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch,) + (side,) * rank + (channels,)).astype(dtype)
    w = rng.standard_normal((1,) * rank + (channels, outputs)).astype(dtype)
    geo = ((1,) * rank, (1,) * rank, ((0, 0),) * rank)
    assert conv_gemm.plain_gemm(w.shape[:-2], geo[0], geo[2], True, dtype)
    got = conv_gemm.gemm_forward(x, w)
    np.testing.assert_array_equal(got, conv_forward(x, w, *geo))
    check_close(got, conv_forward_ref(x.astype(np.float64), w.astype(np.float64), *geo), dtype)


def test_what_is_not_one_plain_gemm():
    one, pads = (1, 1), ((0, 0), (0, 0))
    assert not conv_gemm.plain_gemm((1, 3), one, pads, True, np.float32)       # a 1x3 filter
    assert not conv_gemm.plain_gemm((1, 1), (2, 1), pads, True, np.float32)    # strided
    assert not conv_gemm.plain_gemm((1, 1), one, ((0, 1), (0, 0)), True, np.float32)
    assert not conv_gemm.plain_gemm((1, 1), one, pads, False, np.float32)      # NCHW
    assert not conv_gemm.plain_gemm((1, 1), one, pads, True, np.float16)
    assert not conv_gemm.plain_gemm((1, 1), one, pads, True, np.int32)


@SETTINGS
@given(case=conv_cases(), dtype=st.sampled_from(FLOAT_DTYPES))
def test_convs_on_few_positions_as_one_patch_matrix_match_reference(case, dtype):
    """A forward conv of at most ``FEW_MAX_POSITIONS`` output positions (every stride,
    dilation, padding, rank and layout) runs as one patch matrix and one GEMM."""
    x, w, _, geo, _ = arrays(case, dtype)
    cl = case["channels_last"]
    taken = []
    original = conv_gemm.few_positions
    with module_settings(conv_dense, SMALL_MAX_CHANNEL_PAIRS=0), \
            module_settings(conv_gemm, few_positions=lambda *a: taken.append(1) or original(*a)):
        got = conv_forward(x, w, *geo, channels_last=cl)
    check_close(got, conv_forward_ref(x.astype(np.float64), w.astype(np.float64), *geo,
                                      channels_last=cl), dtype)
    pointwise = all(k == 1 for k in w.shape[:-2]) and not any(b or a for b, a in geo[2])
    positions = got.size // max(1, w.shape[-1])
    out_shape = (got.shape[0], *(got.shape[1:-1] if cl else got.shape[2:]))
    direct = conv_direct.takes_few_positions(np, compute_dtype(dtype), w.shape[:-2], geo[0],
                                             w.shape[-1], out_shape, w.shape[-2])
    expected = (0 < positions <= conv_gemm.FEW_MAX_POSITIONS and not pointwise and not direct
                and 0 not in x.shape and 0 not in w.shape)         # half types: in float32
    assert len(taken) == expected


def test_which_convs_run_on_few_positions():
    """Few positions, a patch matrix within its budget, a float type; with up to 4096 output
    values on planes of 4 positions or more, or a filter they stream, the direct
    micro-kernels take the conv."""
    most, one = conv_gemm.FEW_MAX_POSITIONS, (1, 1)
    assert conv_gemm.on_few_positions(np, np.float32, most, one, (3, 3), one, 128, 32)
    assert not conv_gemm.on_few_positions(np, np.float32, most + 1, one, (3, 3), one, 128, 32)
    assert not conv_gemm.on_few_positions(np, np.int64, 4, one, (3, 3), one, 128, 32)
    wide = conv_gemm.FEW_MAX_PATCH_BYTES // (4 * 9 * 4) + 1          # channels past the budget
    assert not conv_gemm.on_few_positions(np, np.float32, 4, one, (3, 3), one, wide, 32)
    on_direct = usable()
    for n, planes, out_channels, few in ((16, (2, 2), 64, False), (1, (8, 8), 64, False),
                                         (4, (2, 2), 256, False), (2, (4, 4), 128, False),
                                         (4, (4, 4), 128, True), (8, (2, 2), 256, True)):
        assert conv_gemm.on_few_positions(np, np.float32, n, planes, (3, 3), one, 16,
                                          out_channels) == (few or not on_direct)
    streamed = conv_direct.STREAMED_FILTER_BYTES // (4 * 9 * 128) + 1   # in channels
    assert conv_gemm.on_few_positions(np, np.float32, 4, (4, 4), (3, 3), one, streamed,
                                      128) == (not on_direct)
    assert conv_gemm.on_few_positions(np, np.float32, 8, (1, 2), (3, 3), one, 64, 32)
    assert conv_gemm.on_few_positions(np, np.float64, 8, (2, 2), (3, 3), one, 64, 32)
