"""Property tests: conv_algorithms.depthwise against the slow float64 reference."""

import concurrent.futures
import multiprocessing
import os
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from graphops.kernels.conv_algorithms import depthwise as conv_depthwise
from graphops.kernels.support import parallelism
from graphops.kernels.conv_algorithms.depthwise import (depthwise_backprop_filter,
                                                        depthwise_backprop_input,
                                                        depthwise_forward)
from graphops.kernels.compiled import host_isa
from graphops.kernels.compiled.constants import DEPTHWISE_TAPS
from tests.cache_lines import at_line_offset
from tests.conv_tolerance import assert_conv_close
from tests.reference_depthwise import (depthwise_backprop_filter_ref,
                                       depthwise_backprop_input_ref, depthwise_forward_ref)
from tests.paths import ROOT

SETTINGS = settings(max_examples=120, deadline=None)
FLOAT_DTYPES = [np.float16, ml_dtypes.bfloat16, np.float32, np.float64]
VECTOR_DTYPES = [np.float32, ml_dtypes.bfloat16, np.float16]   # the vector kernels' dtypes


def _converts(dtype):
    """Whether numba's code converts ``dtype`` to float32 in vectors (float16: where the CPU
    it compiles for has F16C or the like, ``host_isa.float16_conversions``)."""
    return np.dtype(dtype) != np.float16 or host_isa.float16_conversions()


def _out_size(size, k, s, d, before, after):
    span = size + before + after - ((k - 1) * d + 1)
    return span // s + 1 if span >= 0 else 0


@st.composite
def cases(draw, min_size=0, max_size=7):
    """A random depthwise problem: geometry, layout and an RNG seed."""
    dims = [dict(k=draw(st.integers(1, 3)), s=draw(st.integers(1, 3)), d=draw(st.integers(1, 3)),
                 pad=(draw(st.integers(0, 3)), draw(st.integers(0, 3))),
                 size=draw(st.integers(min_size, max_size))) for _ in range(2)]
    return dict(n=draw(st.integers(min_size, 2)), c=draw(st.integers(min_size, 3)),
                m=draw(st.integers(max(min_size, 1), 3)) if draw(st.integers(0, 7)) else 0,
                dims=dims, channels_last=draw(st.booleans()),
                seed=draw(st.integers(0, 2**32 - 1)))


def _layout(shape_last, channels_last):
    return shape_last if channels_last else (shape_last[0], shape_last[3], *shape_last[1:3])


def _arrays(case, dtype):
    """x, w, dy of ``dtype`` (uniform in [-1, 1]), the geometry and x's full shape."""
    dims, cl = case["dims"], case["channels_last"]
    strides = tuple(d["s"] for d in dims)
    dilations = tuple(d["d"] for d in dims)
    pads = tuple(d["pad"] for d in dims)
    out_hw = tuple(_out_size(d["size"], d["k"], d["s"], d["d"], *d["pad"]) for d in dims)
    rng = np.random.default_rng(case["seed"])
    make = lambda shape: rng.uniform(-1, 1, shape).astype(dtype)
    x_shape = _layout((case["n"], dims[0]["size"], dims[1]["size"], case["c"]), cl)
    x = make(x_shape)
    w = make((dims[0]["k"], dims[1]["k"], case["c"], case["m"]))
    dy = make(_layout((case["n"], *out_hw, case["c"] * case["m"]), cl))
    return x, w, dy, (strides, dilations, pads), x_shape


def _check_close(got, ref, dtype):
    """Half types: depthwise: half an ulp, one rounding."""
    assert_conv_close(got, ref, dtype, half_ulps=0.5)


@SETTINGS
@given(case=cases(), dtype=st.sampled_from(FLOAT_DTYPES))
def test_all_three_match_reference(case, dtype):
    x, w, dy, geo, x_shape = _arrays(case, dtype)
    cl = case["channels_last"]
    _check_close(depthwise_forward(x, w, *geo, channels_last=cl),
                 depthwise_forward_ref(x, w, *geo, channels_last=cl), dtype)
    _check_close(depthwise_backprop_input(dy, w, x_shape, *geo, channels_last=cl),
                 depthwise_backprop_input_ref(dy, w, x_shape, *geo, channels_last=cl), dtype)
    _check_close(depthwise_backprop_filter(x, dy, w.shape, *geo, channels_last=cl),
                 depthwise_backprop_filter_ref(x, dy, w.shape, *geo, channels_last=cl), dtype)


@settings(max_examples=60, deadline=None)
@given(case=cases(min_size=1))
def test_adjoint_identities(case):
    """<dwconv(x, w), dy> = <x, backprop_input(dy, w)> = <w, backprop_filter(x, dy)>."""
    x, w, dy, geo, x_shape = _arrays(case, np.float64)
    cl = case["channels_last"]
    lhs = np.vdot(depthwise_forward(x, w, *geo, channels_last=cl), dy)
    via_input = np.vdot(x, depthwise_backprop_input(dy, w, x_shape, *geo, channels_last=cl))
    via_filter = np.vdot(w, depthwise_backprop_filter(x, dy, w.shape, *geo, channels_last=cl))
    scale = np.abs(x).sum() * np.abs(w).sum() * np.abs(dy).max(initial=0.0) + 1.0
    assert abs(lhs - via_input) <= 1e-12 * scale
    assert abs(lhs - via_filter) <= 1e-12 * scale


@settings(max_examples=25, deadline=None)
@given(case=cases(min_size=1, max_size=13), dtype=st.sampled_from([np.float32, np.float64]),
       run=st.integers(1, 40), parts=st.integers(1, 9))
def test_any_run_length_and_row_blocks_match_reference(case, dtype, run, parts):
    """Short inner-loop runs and many row blocks even for small problems: every seam (column
    chunks, row pairs, lone rows, block edges, row-cache reuse) gets exercised."""
    x, w, dy, geo, x_shape = _arrays(case, dtype)
    cl = case["channels_last"]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(conv_depthwise, "RUN_VALUES", run)
        mp.setattr(parallelism, "SHARES_PER_THREAD", parts)
        y = depthwise_forward(x, w, *geo, channels_last=cl)
        dx = depthwise_backprop_input(dy, w, x_shape, *geo, channels_last=cl)
        dw = depthwise_backprop_filter(x, dy, w.shape, *geo, channels_last=cl)
    _check_close(y, depthwise_forward_ref(x, w, *geo, channels_last=cl), dtype)
    _check_close(dx, depthwise_backprop_input_ref(dy, w, x_shape, *geo, channels_last=cl), dtype)
    _check_close(dw, depthwise_backprop_filter_ref(x, dy, w.shape, *geo, channels_last=cl), dtype)


@st.composite
def vector_cases(draw):
    """A float32 problem with multiplier 1 (the vector kernels' ops): channels for two
    vectors, one and a masked part, filters of more taps than a kernel call holds."""
    dims = [dict(k=draw(st.integers(1, 5)), s=draw(st.integers(1, 3)), d=draw(st.integers(1, 3)),
                 pad=(draw(st.integers(0, 3)), draw(st.integers(0, 3))),
                 size=draw(st.integers(1, 12))) for _ in range(2)]
    channels = st.sampled_from([1, 7, 15, 16, 17, 31, 32, 33, 48, 64, 70])
    return dict(n=draw(st.integers(1, 2)), c=draw(channels), m=1, dims=dims,
                channels_last=draw(st.booleans()), seed=draw(st.integers(0, 2**32 - 1)))


@settings(max_examples=80, deadline=None)
@given(case=vector_cases(), parts=st.integers(1, 5),
       dtype=st.sampled_from(VECTOR_DTYPES))
def test_vector_kernels_match_reference(case, parts, dtype):
    """float32, bfloat16 and float16 with multiplier 1 run on compiled.depthwise_vectors
    (the 16-bit floats' forward conv and input gradient with at most DEPTHWISE_TAPS taps):
    row interiors, edges, tap groups, channel groups and row blocks all against the
    reference."""
    x, w, dy, geo, x_shape = _arrays(case, dtype)
    cl = case["channels_last"]
    converts = _converts(dtype)
    assert conv_depthwise._on_vectors(x.dtype, w.shape, float32_sums=True) == converts
    taps = w.shape[0] * w.shape[1]
    assert conv_depthwise._on_vectors(x.dtype, w.shape) == (
        dtype == np.float32 or taps <= DEPTHWISE_TAPS and converts)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(parallelism, "SHARES_PER_THREAD", parts)
        y = depthwise_forward(x, w, *geo, channels_last=cl)
        dx = depthwise_backprop_input(dy, w, x_shape, *geo, channels_last=cl)
        dw = depthwise_backprop_filter(x, dy, w.shape, *geo, channels_last=cl)
    wide = [a.astype(np.float64) for a in (x, w, dy)]
    _check_close(y, depthwise_forward_ref(wide[0], wide[1], *geo, channels_last=cl), dtype)
    _check_close(dx, depthwise_backprop_input_ref(wide[2], wide[1], x_shape, *geo,
                                                  channels_last=cl), dtype)
    _check_close(dw, depthwise_backprop_filter_ref(wide[0], wide[2], w.shape, *geo,
                                                   channels_last=cl), dtype)


@SETTINGS
@given(case=cases(min_size=1), bad=st.sampled_from([None, np.nan, np.inf, -np.inf]),
       where=st.integers(0, 2**16), in_filter=st.booleans())
def test_channels_first_planes_match_reference(case, bad, where, in_filter):
    """float32 NCHW forward convs and input gradients run plane by plane on NCHW operands
    (``compiled.depthwise_planes``, no transposes) for any stride, dilation, padding and
    multiplier: the reference's values, and a NaN/Inf in x, dy or the filter reaches
    exactly the outputs it is multiplied into (taps that read the padding left out)."""
    case = dict(case, channels_last=False, m=max(case["m"], 1))
    x, w, dy, geo, x_shape = _arrays(case, np.float32)
    if bad is not None:
        for array in ((w,) if in_filter else (x, dy)):
            if array.size:
                array.flat[where % array.size] = bad
    wide = [a.astype(np.float64) for a in (x, w, dy)]
    calls = []
    real = conv_depthwise._planes
    with pytest.MonkeyPatch.context() as mp, np.errstate(invalid="ignore"):   # Inf - Inf
        mp.setattr(conv_depthwise, "_planes", lambda *args: calls.append(args[0]) or real(*args))
        got = (depthwise_forward(x, w, *geo, channels_last=False),
               depthwise_backprop_input(dy, w, x_shape, *geo, channels_last=False))
        refs = (depthwise_forward_ref(wide[0], wide[1], *geo, channels_last=False),
                depthwise_backprop_input_ref(wide[2], wide[1], x_shape, *geo,
                                             channels_last=False))
    assert calls == ["forward", "backprop_input"]
    for out, ref in zip(got, refs):
        assert out.dtype == np.float32 and out.shape == ref.shape
        np.testing.assert_array_equal(np.isnan(out), np.isnan(ref))
        np.testing.assert_array_equal(np.isinf(out), np.isinf(ref))
        finite = np.isfinite(ref)
        _check_close(out[finite], ref[finite], np.float32)


@pytest.mark.parametrize("strides", [(1, 1), (2, 2), (1, 3)])
def test_channels_first_planes_on_wide_rows_and_threads(strides):
    """The NCHW planes on rows wide enough for the vector loops (150 columns), above
    ``SINGLE_THREAD_MAX_VALUES`` (the threads share the planes), with multiplier 2 and x a
    strided view: the reference's values."""
    rng = np.random.default_rng(sum(strides))
    x = rng.uniform(-1, 1, (2, 8, 80, 300)).astype(np.float32)[..., ::2]
    w = rng.uniform(-1, 1, (3, 3, 8, 2)).astype(np.float32)
    geo = (strides, (1, 2), ((1, 1), (2, 2)))
    y = depthwise_forward(x, w, *geo, channels_last=False)
    assert x.size >= conv_depthwise.SINGLE_THREAD_MAX_VALUES      # on every thread
    dy = rng.uniform(-1, 1, y.shape).astype(np.float32)
    _check_close(y, depthwise_forward_ref(x, w, *geo, channels_last=False), np.float32)
    _check_close(depthwise_backprop_input(dy, w, x.shape, *geo, channels_last=False),
                 depthwise_backprop_input_ref(dy, w, x.shape, *geo, channels_last=False),
                 np.float32)


@settings(max_examples=40, deadline=None)
@given(case=vector_cases(), channels=st.sampled_from([16, 32, 48, 64]),
       offset=st.integers(0, 31), bad=st.sampled_from([None, np.nan, np.inf]),
       where=st.integers(0, 2**16), parts=st.integers(1, 5),
       dtype=st.sampled_from(VECTOR_DTYPES))
def test_vector_kernels_take_operands_at_any_address(case, channels, offset, bad, where,
                                                     parts, dtype):
    """With stride 1 along W and whole vectors of channels, the vector kernels read row
    interiors on their source's vector boundaries wherever it starts (vectors that span two
    positions): x and dy placed at every element offset within a line match the reference,
    and a NaN/Inf in x or dy reaches exactly the outputs whose taps read it."""
    case = dict(case, c=channels, channels_last=True)
    case["dims"][1]["s"] = 1
    if dtype != np.float32:        # on the vectors: one tap group per sum
        for dim in case["dims"]:
            dim["k"] = min(dim["k"], 3)
    offset %= 64 // np.dtype(dtype).itemsize
    x, w, dy, geo, x_shape = _arrays(case, dtype)
    x, dy = at_line_offset(x, offset), at_line_offset(dy, offset)
    if bad is not None and dy.size:
        x.flat[where % x.size] = bad
        dy.flat[where % dy.size] = bad
    wide = [a.astype(np.float64) for a in (x, w, dy)]
    with pytest.MonkeyPatch.context() as mp, np.errstate(invalid="ignore"):   # Inf - Inf
        mp.setattr(parallelism, "SHARES_PER_THREAD", parts)
        got = (depthwise_forward(x, w, *geo), depthwise_backprop_input(dy, w, x_shape, *geo),
               depthwise_backprop_filter(x, dy, w.shape, *geo))
        refs = (depthwise_forward_ref(wide[0], wide[1], *geo),
                depthwise_backprop_input_ref(wide[2], wide[1], x_shape, *geo),
                depthwise_backprop_filter_ref(wide[0], wide[2], w.shape, *geo))
    for out, ref in zip(got, refs):
        np.testing.assert_array_equal(np.isnan(out), np.isnan(ref))
        np.testing.assert_array_equal(np.isinf(out), np.isinf(ref))
        finite = np.isfinite(ref)
        _check_close(out[finite], ref[finite], dtype)
    for out, source in zip(got[:2], (x, dy)):     # outputs start where their source does
        assert (out.ctypes.data % 64 == offset * x.itemsize
                or not (out.size and source.size))


def _rounding_pairs(dtype):
    """Pairs of values whose float32 sums round to ``dtype`` at its edges: ties to even,
    overflow to infinity and just below, NaN, infinities, subnormals."""
    top = float(ml_dtypes.finfo(dtype).max)
    ulp = 2.0 ** -(ml_dtypes.finfo(dtype).nmant + 1)          # half an ulp of 1
    over = 2.0 ** (ml_dtypes.finfo(dtype).maxexp - ml_dtypes.finfo(dtype).nmant - 2)
    tiny = float(ml_dtypes.finfo(dtype).smallest_subnormal)
    return [(1.0, ulp), (1.0 + 2 * ulp, ulp), (-1.0, -ulp), (top, over), (top, over / 2),
            (-top, -over), (np.nan, 1.0), (-np.nan, 1.0), (np.inf, 1.0), (-np.inf, -1.0),
            (tiny, tiny), (-tiny, 0.0)]


@pytest.mark.parametrize("dtype", [ml_dtypes.bfloat16, np.float16])
@pytest.mark.parametrize("channels", [16, 21, 48])
@pytest.mark.parametrize("spread", [False, True])
def test_half_outputs_round_once_as_numpy_rounds(channels, dtype, spread):
    """A 1x2 filter of ones sums two 16-bit values in float32: each output is that sum
    rounded once as NumPy / ml_dtypes round float32 to the dtype (ties to even, overflow to
    infinity, a NaN to the quiet NaN of its sign, subnormals kept); ``spread``: each sum
    at a position of its own, so that most vectors of outputs hold no NaN or subnormal
    (the stores that round them with AVX512-BF16, ``ir.VectorAccess.store_pairs``)."""
    rng = np.random.default_rng(9)
    pairs = _rounding_pairs(dtype)
    x = rng.standard_normal((len(pairs), 1, 2, channels)).astype(dtype)
    for i, (a, b) in enumerate(pairs):
        x.reshape(-1, 2, channels)[i if spread else i // channels, :, i % channels] = (a, b)
    y = depthwise_forward(x, np.ones((1, 2, channels, 1), dtype), (1, 1), (1, 1),
                          ((0, 0), (0, 0)))
    sums = x[:, :, :1].astype(np.float32) + x[:, :, 1:].astype(np.float32)
    with np.errstate(over="ignore"):
        want = sums.astype(dtype)
    assert conv_depthwise._on_vectors(x.dtype, (1, 2, channels, 1)) == _converts(dtype)
    nonzero = sums != 0           # a sum starts from +0: the sign of a zero is not kept
    np.testing.assert_array_equal(y.view(np.uint16)[nonzero], want.view(np.uint16)[nonzero])
    assert not y.astype(np.float32)[~nonzero].any()


@settings(max_examples=30, deadline=None)
@given(case=vector_cases(), channels=st.sampled_from([32, 33, 48, 64, 70, 96]),
       offset=st.integers(0, 31), parts=st.integers(1, 3))
def test_bfloat16_sums_are_the_float32_sums_rounded_once(case, channels, offset, parts):
    """bfloat16's forward conv and input gradient (two vectors of channels loaded as their
    even and odd channels, ``VectorAccess.load_pairs``) give, bit for bit, the float32
    kernels' results on the same values rounded to bfloat16: the same sums in other lanes,
    at every address and for channel counts past whole pairs of vectors."""
    case = dict(case, c=channels, channels_last=True)
    for dim in case["dims"]:
        dim["k"] = min(dim["k"], 3)                 # one tap group per sum
    x, w, dy, geo, x_shape = _arrays(case, ml_dtypes.bfloat16)
    x, dy = at_line_offset(x, offset), at_line_offset(dy, offset)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(parallelism, "SHARES_PER_THREAD", parts)
        got = (depthwise_forward(x, w, *geo), depthwise_backprop_input(dy, w, x_shape, *geo))
        wide = (depthwise_forward(x.astype(np.float32), w.astype(np.float32), *geo),
                depthwise_backprop_input(dy.astype(np.float32), w.astype(np.float32),
                                         x_shape, *geo))
    assert conv_depthwise._on_vectors(x.dtype, w.shape)
    for out, sums in zip(got, wide):
        assert out.dtype == ml_dtypes.bfloat16 and out.shape == sums.shape
        np.testing.assert_array_equal(out.view(np.uint16),
                                      sums.astype(ml_dtypes.bfloat16).view(np.uint16))


@pytest.mark.parametrize("stride, channels", [(2, 32), (1, 24)])
def test_outputs_start_on_lines_where_sources_are_not_streamed(stride, channels):
    """Strided along W or channels short of whole vectors, the vector kernels read rows
    position by position: the forward and input-gradient outputs then start on a cache line
    (their stores stream whole lines) wherever the source starts."""
    rng = np.random.default_rng(5)
    x = at_line_offset(rng.standard_normal((2, 9, 12, channels)).astype(np.float32), 4)
    w = rng.standard_normal((3, 3, channels, 1)).astype(np.float32)
    geo = ((1, stride), (1, 1), ((1, 1), (1, 1)))
    y = depthwise_forward(x, w, *geo)
    dx = depthwise_backprop_input(at_line_offset(y, 4), w, x.shape, *geo)
    assert y.ctypes.data % 64 == 0 and dx.ctypes.data % 64 == 0
    _check_close(dx, depthwise_backprop_input_ref(y.astype(np.float64), w.astype(np.float64),
                                                  x.shape, *geo), np.float32)


@settings(max_examples=30, deadline=None)
@given(case=vector_cases(), bad=st.sampled_from([np.nan, np.inf, -np.inf]),
       where=st.integers(0, 2**16), in_x=st.booleans(),
       dtype=st.sampled_from(VECTOR_DTYPES))
def test_vector_kernels_never_multiply_padding(case, bad, where, in_x, dtype):
    """NaN/Inf in x or dy reach only the outputs their taps reach: the padding is never
    multiplied, in the forward conv and the filter gradient alike."""
    x, w, dy, geo, _ = _arrays(case, dtype)
    target = x if in_x else dy
    if dy.size == 0:
        return
    target.flat[where % target.size] = bad
    cl = case["channels_last"]
    wide = [a.astype(np.float64) for a in (x, w, dy)]
    for got, ref in ((depthwise_forward(x, w, *geo, channels_last=cl),
                      depthwise_forward_ref(wide[0], wide[1], *geo, channels_last=cl)),
                     (depthwise_backprop_filter(x, dy, w.shape, *geo, channels_last=cl),
                      depthwise_backprop_filter_ref(wide[0], wide[2], w.shape, *geo,
                                                    channels_last=cl))):
        np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
        np.testing.assert_array_equal(np.isinf(got), np.isinf(ref))


@pytest.mark.parametrize("multiplier", [1, 2])
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_results_repeat_run_to_run_for_a_thread_count(threads, multiplier):
    """Fixed row blocks summed in order: bit-identical results on every run (multiplier 1:
    the vector kernels; 2: the row-cache loops)."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((3, 41, 23, 37)).astype(np.float32)
    w = rng.standard_normal((3, 3, 37, multiplier)).astype(np.float32)
    geo = ((2, 1), (1, 2), ((1, 1), (2, 2)))
    dy = rng.standard_normal(depthwise_forward(x, w, *geo).shape).astype(np.float32)
    parallelism.set_intra_op_threads(threads)
    try:
        runs = [(depthwise_forward(x, w, *geo), depthwise_backprop_input(dy, w, x.shape, *geo),
                 depthwise_backprop_filter(x, dy, w.shape, *geo)) for _ in range(4)]
    finally:
        parallelism.set_intra_op_threads(0)
    for again in runs[1:]:
        for a, b in zip(runs[0], again):
            np.testing.assert_array_equal(a, b)
    _check_close(runs[0][2], depthwise_backprop_filter_ref(x, dy, w.shape, *geo), np.float32)


@pytest.mark.parametrize("multiplier", [1, 2])
def test_calls_from_several_threads_at_once(multiplier):
    """Sessions may run kernels on several Python threads: concurrent calls stay exact."""
    rng = np.random.default_rng(12)
    x = rng.standard_normal((2, 30, 17, 20)).astype(np.float32)
    w = rng.standard_normal((3, 3, 20, multiplier)).astype(np.float32)
    geo = ((1, 2), (2, 1), ((2, 2), (1, 1)))
    dy = rng.standard_normal(depthwise_forward(x, w, *geo).shape).astype(np.float32)

    def all_three(_):
        return (depthwise_forward(x, w, *geo), depthwise_backprop_input(dy, w, x.shape, *geo),
                depthwise_backprop_filter(x, dy, w.shape, *geo))

    expect = all_three(None)
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        for got in pool.map(all_three, range(16)):
            for a, b in zip(got, expect):
                np.testing.assert_array_equal(a, b)


def test_numba_loads_on_first_use_only():
    code = ("import sys, numpy as np; from graphops.kernels.conv_algorithms import depthwise as cd;"
            "assert 'numba' not in sys.modules;"
            "cd.depthwise_forward(np.ones((1, 3, 3, 1)), np.ones((1, 1, 1, 1)), (1, 1), (1, 1),"
            " ((0, 0), (0, 0)));"
            "assert 'numba' in sys.modules")
    root = ROOT
    subprocess.run([sys.executable, "-c", code], cwd=root, check=True, timeout=120)


def test_filter_gradient_of_a_long_sum_stays_accurate():
    """N*OH*OW = 2**17 terms per tap, all of one sign: float32 partial sums stay short."""
    rng = np.random.default_rng(5)
    x = rng.uniform(0, 1, (8, 128, 128, 4)).astype(np.float32)
    dy = rng.uniform(0, 1, (8, 128, 128, 4)).astype(np.float32)
    geo = ((1, 1), (1, 1), ((1, 1), (1, 1)))
    got = depthwise_backprop_filter(x, dy, (3, 3, 4, 1), *geo)
    x64 = np.pad(x.astype(np.float64), ((0, 0), (1, 1), (1, 1), (0, 0)))
    want = np.array([[np.einsum("nhwc,nhwc->c", x64[:, i:i + 128, j:j + 128], dy)
                      for j in range(3)] for i in range(3)])[..., None]
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_channel_order_is_c_times_m_plus_m():
    """Output channel c*M + m is input channel c filtered by w[:, :, c, m] (TF's order)."""
    x = np.zeros((1, 1, 1, 2), np.float32)
    x[..., 1] = 1.0
    w = np.arange(2 * 3, dtype=np.float32).reshape(1, 1, 2, 3)
    y = depthwise_forward(x, w, (1, 1), (1, 1), ((0, 0), (0, 0)))
    np.testing.assert_array_equal(y.reshape(-1), [0, 0, 0, 3, 4, 5])


def test_stride_and_dilation_together():
    """Stride 2 with dilation 2 in both dims on a hand-checked 1-channel case."""
    x = np.arange(36, dtype=np.float64).reshape(1, 6, 6, 1)
    w = np.array([[1.0, 10.0], [100.0, 1000.0]]).reshape(2, 2, 1, 1)
    y = depthwise_forward(x, w, (2, 2), (2, 2), ((0, 1), (1, 0)))
    # output (o_h, o_w) reads rows 2*o_h + {0, 2}, columns 2*o_w - 1 + {0, 2}
    expect = np.zeros((3, 3))
    for oh in range(3):
        for ow in range(3):
            for i in range(2):
                for j in range(2):
                    r, c = 2 * oh + 2 * i, 2 * ow - 1 + 2 * j
                    if 0 <= r < 6 and 0 <= c < 6:
                        expect[oh, ow] += x[0, r, c, 0] * w[i, j, 0, 0]
    np.testing.assert_array_equal(y[0, :, :, 0], expect)


def test_uncovered_inputs_get_zero_gradient():
    """Stride 3 with a 1x1 filter touches every third row/column only."""
    dy = np.ones((1, 2, 2, 1), np.float32)
    w = np.full((1, 1, 1, 1), 2.0, np.float32)
    dx = depthwise_backprop_input(dy, w, (1, 5, 5, 1), (3, 3), (1, 1), ((0, 0), (0, 0)))
    expect = np.zeros((5, 5), np.float32)
    expect[::3, ::3] = 2.0
    np.testing.assert_array_equal(dx[0, :, :, 0], expect)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("x_shape, w_shape", [
    ((0, 4, 4, 2), (3, 3, 2, 1)),   # empty batch
    ((2, 4, 4, 0), (3, 3, 0, 2)),   # no channels
    ((2, 0, 4, 2), (1, 1, 2, 1)),   # empty spatial dim
    ((2, 4, 4, 2), (3, 3, 2, 0)),   # depth multiplier 0
    ((1, 2, 2, 1), (3, 3, 1, 1)),   # filter larger than the input: empty output
])
def test_empty_dims_give_shaped_zeros(dtype, x_shape, w_shape):
    x = np.ones(x_shape, dtype)
    w = np.ones(w_shape, dtype)
    geo = ((1, 1), (1, 1), ((0, 0), (0, 0)))
    out_hw = tuple(max(s - k + 1, 0) for s, k in zip(x_shape[1:3], w_shape[:2]))
    y_shape = (x_shape[0], *out_hw, w_shape[2] * w_shape[3])
    y = depthwise_forward(x, w, *geo)
    assert y.shape == y_shape and y.dtype == np.dtype(dtype) and not y.any()
    dy = np.ones(y_shape, dtype)
    dx = depthwise_backprop_input(dy, w, x_shape, *geo)
    assert dx.shape == x_shape and dx.dtype == np.dtype(dtype) and not dx.any()
    dw = depthwise_backprop_filter(x, dy, w_shape, *geo)
    assert dw.shape == w_shape and dw.dtype == np.dtype(dtype) and not dw.any()


def test_padding_only_output_is_zero():
    """An empty input with enough padding still has outputs, all zero (pure padding)."""
    x = np.ones((1, 0, 3, 2), np.float32)
    w = np.ones((1, 1, 2, 1), np.float32)
    y = depthwise_forward(x, w, (1, 1), (1, 1), ((1, 1), (0, 0)))
    assert y.shape == (1, 2, 3, 2) and not y.any()


def test_non_contiguous_inputs():
    """Strided views are read correctly in both layouts."""
    rng = np.random.default_rng(7)
    base = rng.uniform(-1, 1, (2, 9, 11, 6)).astype(np.float32)
    x = base[:, ::2, 1:, ::2]                       # [2, 5, 10, 3], no axis contiguous
    w = rng.uniform(-1, 1, (3, 2, 3, 2)).astype(np.float32)
    geo = ((2, 1), (1, 2), ((1, 2), (0, 1)))
    ref = depthwise_forward_ref(x, w, *geo)
    _check_close(depthwise_forward(x, w, *geo), ref, np.float32)
    dy = rng.uniform(-1, 1, ref.shape + (2,)).astype(np.float32)[..., 0]
    _check_close(depthwise_backprop_input(dy, w, x.shape, *geo),
                 depthwise_backprop_input_ref(dy, w, x.shape, *geo), np.float32)
    _check_close(depthwise_backprop_filter(x, dy, w.shape, *geo),
                 depthwise_backprop_filter_ref(x, dy, w.shape, *geo), np.float32)


def _forward_in_child(queue, x, w):
    queue.put(depthwise_forward(x, w, (1, 1), (1, 1), ((1, 1), (1, 1))))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_computes_the_same():
    """A child forked after the compiled (OpenMP) loops ran cannot run them; it gets the
    same results another way."""
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, (2, 9, 9, 3)).astype(np.float32)
    w = rng.uniform(-1, 1, (3, 3, 3, 2)).astype(np.float32)
    expect = depthwise_forward(x, w, (1, 1), (1, 1), ((1, 1), (1, 1)))  # loads numba
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_forward_in_child, args=(queue, x, w))
    child.start()
    try:
        got = queue.get(timeout=60)
    finally:
        child.join(5)
        if child.is_alive():
            child.kill()
    _check_close(got, expect.astype(np.float64), np.float32)


@settings(max_examples=40, deadline=None)
@given(case=cases(min_size=1), dtype=st.sampled_from([np.float32, np.float64]),
       bad=st.sampled_from([np.nan, np.inf, -np.inf]), where=st.integers(0, 2**16))
def test_non_finite_out_backprop_reaches_only_its_taps(case, dtype, bad, where):
    """IEEE semantics: NaN/Inf in dy show up exactly where the reference puts them."""
    _, w, dy, geometry, x_shape = _arrays(case, dtype)
    if dy.size == 0:
        return
    dy.flat[where % dy.size] = bad
    got = depthwise_backprop_input(dy, w, x_shape, *geometry, channels_last=case["channels_last"])
    ref = depthwise_backprop_input_ref(dy.astype(np.float64), w.astype(np.float64), x_shape,
                                       *geometry, channels_last=case["channels_last"])
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(ref))
    finite = np.isfinite(ref)
    _check_close(np.where(finite, got, 0).astype(dtype), np.where(finite, ref, 0), dtype)
