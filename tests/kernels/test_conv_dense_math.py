"""Property tests: kernels.conv_dense against the slow float64 reference."""

import ml_dtypes
import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

from graphops.kernels.conv_algorithms import dense as conv_dense
from graphops.kernels.conv_algorithms import direct as conv_direct
from graphops.kernels.conv_algorithms import layout as conv_layout
from graphops.kernels.compiled import loops
from graphops.kernels.support.parallelism import intra_op_threads
from graphops.kernels.conv_algorithms.dense import conv_backprop_filter, conv_backprop_input, conv_forward
from graphops.kernels.support.kernel_util import channel_chain
from tests.conv_tolerance import assert_conv_close
from tests.module_settings import module_settings
from tests.reference_conv import (conv_backprop_filter_ref, conv_backprop_input_ref,
                                  conv_forward_ref, output_size)

SETTINGS = settings(max_examples=200, deadline=None)


@pytest.fixture(autouse=True)
def on_every_thread(monkeypatch):
    """These small cases run on every intra-op thread, as large ones do, so the shares and
    the pool's splits of every path are what they test (`test_parallelism.py` tests the
    one-thread choice for small convs)."""
    monkeypatch.setattr(conv_dense, "SERIAL_MAX_FLOPS", 0)
FLOAT_DTYPES = [np.float16, ml_dtypes.bfloat16, np.float32, np.float64]


@st.composite
def conv_cases(draw, min_size=0):
    """A random conv problem: geometry per spatial dim, layout and an RNG seed."""
    rank = draw(st.integers(1, 3))
    pointwise = draw(st.integers(0, 3)) == 0  # 1x1 filter, no padding: the GEMM shortcut
    dims = []
    for _ in range(rank):
        k = 1 if pointwise else draw(st.integers(1, 3))
        pad = (0, 0) if pointwise else (draw(st.integers(0, 2)), draw(st.integers(0, 2)))
        dims.append(dict(k=k, s=draw(st.integers(1, 3)), d=draw(st.integers(1, 2)),
                         pad=pad, size=draw(st.integers(min_size, 7))))
    return dict(n=draw(st.integers(min_size, 2)), c=draw(st.integers(min_size, 3)),
                o=draw(st.integers(min_size, 3)), dims=dims,
                channels_last=draw(st.booleans()), seed=draw(st.integers(0, 2**32 - 1)))


def _geometry(case):
    dims = case["dims"]
    strides = tuple(d["s"] for d in dims)
    dilations = tuple(d["d"] for d in dims)
    pads = tuple(d["pad"] for d in dims)
    spatial = tuple(d["size"] for d in dims)
    out_sp = tuple(output_size(d["size"], d["k"], d["s"], d["d"], *d["pad"]) for d in dims)
    kernel = tuple(d["k"] for d in dims)
    return strides, dilations, pads, spatial, out_sp, kernel


def _layout(shape_last, channels_last):
    """Channels-last shape [N, *S, C] in the requested layout."""
    return shape_last if channels_last else (shape_last[0], shape_last[-1], *shape_last[1:-1])


def _arrays(case, dtype):
    """Random x, w, dy of ``dtype`` for ``case``, plus the geometry."""
    strides, dilations, pads, spatial, out_sp, kernel = _geometry(case)
    rng = np.random.default_rng(case["seed"])
    cl = case["channels_last"]
    x_shape = _layout((case["n"], *spatial, case["c"]), cl)
    dy_shape = _layout((case["n"], *out_sp, case["o"]), cl)
    w_shape = (*kernel, case["c"], case["o"])
    if np.dtype(dtype).kind == "i":
        make = lambda shape: rng.integers(-5, 6, shape).astype(dtype)
    else:
        make = lambda shape: rng.uniform(-1, 1, shape).astype(dtype)
    return make(x_shape), make(w_shape), make(dy_shape), (strides, dilations, pads), x_shape


def _check_close(got, ref, dtype, magnitude=None):
    """Half types: dense: an ulp at 1.0, twice the rounding error."""
    assert_conv_close(got, ref, dtype, half_ulps=1.0, magnitude=magnitude)


def _check_close_non_finite(got, ref, dtype, magnitude=None):
    """NaN exactly where ``ref`` has NaN, its infinities, and the finite rest close."""
    finite = np.isfinite(ref)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    np.testing.assert_array_equal(got[np.isinf(ref)], ref[np.isinf(ref)])
    _check_close(np.where(finite, got, 0).astype(got.dtype), np.where(finite, ref, 0), dtype,
                 magnitude)


@SETTINGS
@given(case=conv_cases(), dtype=st.sampled_from(FLOAT_DTYPES))
def test_forward_matches_reference(case, dtype):
    x, w, _, geo, _ = _arrays(case, dtype)
    ref = conv_forward_ref(x.astype(np.float64), w.astype(np.float64), *geo,
                           channels_last=case["channels_last"])
    got = conv_forward(x, w, *geo, channels_last=case["channels_last"])
    _check_close(got, ref, dtype)


@SETTINGS
@given(case=conv_cases(), dtype=st.sampled_from(FLOAT_DTYPES))
def test_backprop_input_matches_reference(case, dtype):
    _, w, dy, geo, x_shape = _arrays(case, dtype)
    ref = conv_backprop_input_ref(dy.astype(np.float64), w.astype(np.float64), x_shape, *geo,
                                  channels_last=case["channels_last"])
    got = conv_backprop_input(dy, w, x_shape, *geo, channels_last=case["channels_last"])
    _check_close(got, ref, dtype)


@SETTINGS
@given(case=conv_cases(), dtype=st.sampled_from(FLOAT_DTYPES))
def test_backprop_filter_matches_reference(case, dtype):
    x, w, dy, geo, _ = _arrays(case, dtype)
    ref = conv_backprop_filter_ref(x.astype(np.float64), dy.astype(np.float64), w.shape, *geo,
                                   channels_last=case["channels_last"])
    got = conv_backprop_filter(x, dy, w.shape, *geo, channels_last=case["channels_last"])
    _check_close(got, ref, dtype)


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
    x, w, dy, geo, x_shape = _arrays(case, dtype)
    cl = case["channels_last"]
    with module_settings(conv_dense, SMALL_MAX_CHANNEL_PAIRS=0, SCATTER_MIN_DEPTH=1,
                         SCATTER_MIN_SOURCES=1, SCATTER_BLOCK_BYTES=block_bytes,
                         SCATTER_MIN_UNIT_ROWS=unit_rows):
        y = conv_forward(x, w, *geo, channels_last=cl)
        dx = conv_backprop_input(dy, w, x_shape, *geo, channels_last=cl)
    _check_close(y, conv_forward_ref(x.astype(np.float64), w.astype(np.float64), *geo,
                                     channels_last=cl), dtype)
    _check_close(dx, conv_backprop_input_ref(dy.astype(np.float64), w.astype(np.float64),
                                             x_shape, *geo, channels_last=cl), dtype)


@settings(max_examples=100, deadline=None)
@given(case=conv_cases(), dtype=st.sampled_from(FLOAT_DTYPES))
def test_array_module_col2im_matches_reference(case, dtype):
    """The input gradient written once against ``xp`` (CuPy's path, and NumPy's where the
    compiled loops cannot run), forced on the CPU."""
    _, w, dy, geo, x_shape = _arrays(case, dtype)
    with module_settings(conv_dense, _scatters=lambda *args: False,
                         _by_phases=lambda *args: False):
        got = conv_backprop_input(dy, w, x_shape, *geo, channels_last=case["channels_last"])
    ref = conv_backprop_input_ref(dy.astype(np.float64), w.astype(np.float64), x_shape, *geo,
                                  channels_last=case["channels_last"])
    _check_close(got, ref, dtype)


@SETTINGS
@given(case=conv_cases(), dtype=st.sampled_from(FLOAT_DTYPES), non_finite=st.booleans())
def test_few_channel_direct_loops_match_reference(case, dtype, non_finite):
    """The direct loops for few channels (forced on for every channel count; stride 1 past the
    first of 3 dims), NaN and infinity in x reaching exactly the outputs they feed."""
    for dim in case["dims"][1 if len(case["dims"]) == 3 else 0:]:
        dim["s"] = 1
    x, w, dy, geo, _ = _arrays(case, dtype)
    if non_finite and x.size:
        x.reshape(-1)[::7] = np.inf
        x.reshape(-1)[3::11] = np.nan
    cl = case["channels_last"]
    with module_settings(conv_dense, SMALL_MAX_CHANNEL_PAIRS=10**6), \
            np.errstate(invalid="ignore"):
        y = conv_forward(x, w, *geo, channels_last=cl)
        dw = conv_backprop_filter(x, dy, w.shape, *geo, channels_last=cl)
    x64, w64, dy64 = (a.astype(np.float64) for a in (x, w, dy))
    with np.errstate(invalid="ignore"):
        want_y = conv_forward_ref(x64, w64, *geo, channels_last=cl)
        want_dw = conv_backprop_filter_ref(x64, dy64, w.shape, *geo, channels_last=cl)
    for got, want in ((y, want_y), (dw, want_dw)):
        _check_close_non_finite(got, want, dtype)


@settings(max_examples=100, deadline=None)
@given(case=conv_cases(min_size=1), outs=st.sampled_from(conv_dense.PLANAR_OUTPUTS),
       width=st.integers(1, 40), height=st.integers(1, 19), non_finite=st.booleans())
def test_planar_vector_kernels_match_reference(case, outs, width, height, non_finite):
    """The float32 few-channel forward and filter gradient on the vector kernels with
    positions along the lanes (``loops_planar``: 1-16 output channels, the filter gradient
    up to 8, rows of any width, whole vectors and a masked rest, any row and pair count a
    call): against the reference, NaN and infinity in x reaching exactly the outputs they
    feed; the forward's epilogue gives the bits of the chain run after."""
    dims = case["dims"]
    for dim in dims[1 if len(dims) == 3 else 0:]:
        dim["s"] = 1
    dims[-1]["size"] = width
    if len(dims) > 1:
        dims[-2]["size"] = height
    case["o"] = outs
    x, w, dy, geo, _ = _arrays(case, np.float32)
    if non_finite:
        x.reshape(-1)[::7] = np.inf
        x.reshape(-1)[3::11] = np.nan
    cl = case["channels_last"]
    epilogue = ([("add", np.linspace(-1, 1, outs, dtype=np.float32))], "Relu", None)
    used = []
    module = loops("planar")
    spies = {name: lambda *a, run=getattr(module, name), name=name: used.append(name) or run(*a)
             for name in ("forward", "filter_grad")}
    with module_settings(conv_dense, SMALL_MAX_CHANNEL_PAIRS=10**6), \
            module_settings(module, **spies), np.errstate(invalid="ignore"):
        y = conv_forward(x, w, *geo, channels_last=cl)
        fused = conv_forward(x, w, *geo, channels_last=True, epilogue=epilogue) if cl else y
        dw = conv_backprop_filter(x, dy, w.shape, *geo, channels_last=cl)
        x64, w64, dy64 = (a.astype(np.float64) for a in (x, w, dy))
        want_y = conv_forward_ref(x64, w64, *geo, channels_last=cl)
        want_dw = conv_backprop_filter_ref(x64, dy64, w.shape, *geo, channels_last=cl)
    kernel, pads = tuple(d["k"] for d in dims), geo[2]
    if 0 not in y.shape and not conv_dense._pointwise(kernel, pads):
        assert set(used) == ({"forward", "filter_grad"} if outs <= 8 else {"forward"})
    _check_close_non_finite(y, want_y, np.float32)
    _check_close_non_finite(dw, want_dw, np.float32)
    if cl:
        with np.errstate(invalid="ignore"):
            np.testing.assert_array_equal(fused, channel_chain(y, *epilogue))


@pytest.mark.parametrize("outs", [1, 8])
def test_planar_kernels_read_strided_operands(outs):
    """A group's slice of x, the filter and dy (strided views, some reshaping to strided
    flat views) gives what its contiguous copy gives."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 1, 5, 2)).astype(np.float32)[..., :1]
    w = rng.standard_normal((1, 3, 1, 2 * outs)).astype(np.float32)[..., ::2]
    dy = rng.standard_normal((2, 1, 5, 2 * outs)).astype(np.float32)[..., :outs]
    geo = ((1, 1), (1, 1), ((0, 0), (1, 1)))
    copies = [np.ascontiguousarray(a) for a in (x, w, dy)]
    np.testing.assert_array_equal(conv_forward(x, w, *geo), conv_forward(*copies[:2], *geo))
    np.testing.assert_array_equal(conv_backprop_filter(x, dy, w.shape, *geo),
                                  conv_backprop_filter(copies[0], copies[2], w.shape, *geo))
    np.testing.assert_allclose(conv_forward(x, w, *geo),
                               conv_forward_ref(x.astype(np.float64), w.astype(np.float64),
                                                *geo), rtol=1e-5, atol=1e-5)


@SETTINGS
@given(case=conv_cases(min_size=1), dtype=st.sampled_from(FLOAT_DTYPES),
       vectors=st.integers(1, 17), non_finite=st.booleans())
def test_direct_micro_kernels_match_reference(case, dtype, vectors, non_finite):
    """The forward conv and filter gradient on the register-blocked micro-kernels (forced
    on for any width and size: 8-136 output channels, so every mix of the four-, two-, one-
    and half-vector kernels, every stride, dilation, padding,
    rank, layout and float type, float64 taking the other paths; the filter gradient where
    every thread gets an output plane), NaN and infinity in x reaching exactly the outputs
    they feed. (A non-finite filter meets the padding's zeros, as on the patch matrices and
    in TF's CPU kernels.)"""
    case["o"] = 8 * vectors
    x, w, dy, geo, _ = _arrays(case, dtype)
    if non_finite and x.size:
        x.reshape(-1)[::7] = np.inf
        x.reshape(-1)[3::11] = np.nan
    calls = []
    forward, backprop_filter = conv_direct.forward, conv_direct.backprop_filter
    cl = case["channels_last"]
    with module_settings(conv_direct, MIN_WIDTH=1, MAX_UNIT_STRIDE_MACS=10**18,
                         forward=lambda *a, **k: calls.append("forward") or forward(*a, **k),
                         backprop_filter=lambda *a: calls.append("filter") or
                         backprop_filter(*a)), \
            module_settings(conv_dense, SMALL_MAX_CHANNEL_PAIRS=0), \
            np.errstate(invalid="ignore"):
        y = conv_forward(x, w, *geo, channels_last=cl)
        dw = conv_backprop_filter(x, dy, w.shape, *geo, channels_last=cl)
        x64, w64, dy64 = (a.astype(np.float64) for a in (x, w, dy))
        want_y = conv_forward_ref(x64, w64, *geo, channels_last=cl)
        want_dw = conv_backprop_filter_ref(x64, dy64, w.shape, *geo, channels_last=cl)
    pointwise = all(k == 1 for k in w.shape[:-2]) and not any(b or a for b, a in geo[2])
    taken = np.dtype(dtype) != np.float64 and not pointwise and y.size > 0
    out_shape = (y.shape[0], *(y.shape[1:-1] if cl else y.shape[2:]), w.shape[-1])
    assert calls == ["forward"] * taken + ["filter"] * (
        taken and conv_direct.planes(out_shape) >= intra_op_threads())
    for got, want in ((y, want_y), (dw, want_dw)):
        _check_close_non_finite(got, want, dtype)


@SETTINGS
@given(case=conv_cases(min_size=1), dtype=st.sampled_from(FLOAT_DTYPES),
       vectors=st.integers(1, 7))
def test_stride_1_input_gradient_on_the_direct_kernels_matches_reference(case, dtype,
                                                                         vectors):
    """The stride-1 input gradient as the direct forward of dy with the filter flipped
    (8-56 input channels; taken where no padding exceeds (k-1)*d), every dilation,
    padding, rank, layout and float type."""
    for dim in case["dims"]:
        dim["s"] = 1
    case["c"] = 8 * vectors
    _, w, dy, geo, x_shape = _arrays(case, dtype)
    calls = []
    forward = conv_direct.forward
    with module_settings(conv_direct, MIN_WIDTH=1,
                         forward=lambda *a, **k: calls.append(1) or forward(*a, **k)), \
            module_settings(conv_dense, SMALL_MAX_CHANNEL_PAIRS=0):
        got = conv_backprop_input(dy, w, x_shape, *geo, channels_last=case["channels_last"])
    want = conv_backprop_input_ref(dy.astype(np.float64), w.astype(np.float64), x_shape, *geo,
                                   channels_last=case["channels_last"])
    _check_close(got, want, dtype)
    assert len(calls) == (np.dtype(dtype) != np.float64 and _flips_to_forward(w, dy, geo))


def _flips_to_forward(w, dy, geo):
    """Whether a stride-1 input gradient may run as a forward conv of dy: no padding past
    (k-1)*d, not pointwise, not empty."""
    reach = all(b <= (k - 1) * d and a <= (k - 1) * d
                for k, d, (b, a) in zip(w.shape[:-2], geo[1], geo[2]))
    pointwise = all(k == 1 for k in w.shape[:-2]) and not any(b or a for b, a in geo[2])
    return reach and not pointwise and dy.size > 0


@SETTINGS
@given(case=conv_cases(min_size=1), dtype=st.sampled_from(FLOAT_DTYPES),
       channels=st.sampled_from([(1, 1), (1, 8), (1, 16), (2, 8), (4, 4), (8, 2), (3, 5)]),
       non_finite=st.booleans())
def test_stride_1_input_gradient_of_few_channels_matches_reference(case, dtype, channels,
                                                                   non_finite):
    """The stride-1 input gradient to few channels (a first layer's, dx with 1-8 channels)
    as the few-channel forward loops on dy with the filter flipped, every dilation,
    padding, rank, layout and float type; a non-finite filter takes the other paths (the
    loops would multiply it by dy's zero padding) and gives the reference's NaNs only
    (where dx's channels come in groups of 8 the direct kernels take it, NaNs and all)."""
    assume(not (non_finite and channels[0] % 8 == 0))
    for dim in case["dims"]:
        dim["s"] = 1
    case["c"], case["o"] = channels
    _, w, dy, geo, x_shape = _arrays(case, dtype)
    if non_finite:
        w.reshape(-1)[::3] = np.inf
    calls = []
    small_forward = conv_dense._small_forward
    with module_settings(conv_dense, _small_forward=lambda *a, **k: calls.append(1) or
                         small_forward(*a, **k)), np.errstate(invalid="ignore"):
        got = conv_backprop_input(dy, w, x_shape, *geo, channels_last=case["channels_last"])
        want = conv_backprop_input_ref(dy.astype(np.float64), w.astype(np.float64), x_shape,
                                       *geo, channels_last=case["channels_last"])
    _check_close_non_finite(got, want, dtype)
    assert len(calls) == (not non_finite and _flips_to_forward(w, dy, geo))


@SETTINGS
@given(case=conv_cases(min_size=1), dtype=st.sampled_from(FLOAT_DTYPES),
       vectors=st.integers(1, 17), strides=st.lists(st.integers(2, 3), min_size=3, max_size=3))
def test_strided_input_gradient_on_the_direct_kernels_matches_reference(case, dtype, vectors,
                                                                       strides):
    """The strided input gradient phase by phase of dx on the micro-kernels (8-136 input
    channels: every mix of the kernels' widths; dy channels past the few-channel phases):
    every stride, dilation, padding (phases reading padding alone, or reached by no tap,
    give zeros), rank, layout and float type."""
    for dim, stride in zip(case["dims"], strides):
        dim["s"] = stride
    case["c"], case["o"] = 8 * vectors, case["o"] + conv_dense.PHASE_MAX_DEPTH
    _, w, dy, geo, x_shape = _arrays(case, dtype)
    calls = []
    strided = conv_direct.backprop_input_strided
    with module_settings(conv_direct, MIN_WIDTH=1,
                         backprop_input_strided=lambda *a: calls.append(1) or strided(*a)):
        got = conv_backprop_input(dy, w, x_shape, *geo, channels_last=case["channels_last"])
    want = conv_backprop_input_ref(dy.astype(np.float64), w.astype(np.float64), x_shape, *geo,
                                   channels_last=case["channels_last"])
    _check_close(got, want, dtype)
    pointwise = all(k == 1 for k in w.shape[:-2]) and not any(b or a for b, a in geo[2])
    assert len(calls) == (np.dtype(dtype) != np.float64 and not pointwise and dy.size > 0)


@SETTINGS
@given(case=conv_cases(min_size=1), dtype=st.sampled_from(FLOAT_DTYPES[:3]),
       last=st.tuples(st.integers(1, 5), st.integers(2, 3), st.integers(1, 3),
                      st.integers(0, 4), st.integers(0, 4), st.integers(1, 5)),
       non_finite=st.booleans())
def test_strided_input_gradient_folds_the_last_dim_into_channels(case, dtype, last,
                                                                 non_finite):
    """With 8 input channels and the last dim a multiple of its stride (2-3; 1-5 taps,
    dilations 1-3, any padding), the last dim's phases run as channels of one stride-1
    dim: against the reference. A non-finite dy runs unfolded, NaN and infinity reaching
    exactly the positions they feed."""
    k, s, d, before, after, blocks = last
    case["dims"][-1].update(k=k, s=s, d=d, pad=(before, after), size=s * blocks)
    case["c"], case["o"] = 8, case["o"] + conv_dense.PHASE_MAX_DEPTH
    _, w, dy, geo, x_shape = _arrays(case, dtype)
    if non_finite and dy.size:
        dy.reshape(-1)[::7] = np.inf
        dy.reshape(-1)[3::11] = np.nan
    last_strides = []
    phases = conv_direct._phases
    with module_settings(conv_direct, MIN_WIDTH=1, _phases=lambda dyc, w, shape, strides, *a:
                         last_strides.append(strides[-1]) or phases(dyc, w, shape, strides, *a)), \
            np.errstate(invalid="ignore"):
        got = conv_backprop_input(dy, w, x_shape, *geo, channels_last=case["channels_last"])
        want = conv_backprop_input_ref(dy.astype(np.float64), w.astype(np.float64), x_shape,
                                       *geo, channels_last=case["channels_last"])
    _check_close_non_finite(got, want, dtype)
    pointwise = all(k == 1 for k in w.shape[:-2]) and not any(b or a for b, a in geo[2])
    assert last_strides == ([] if dy.size == 0 or pointwise else [s if non_finite else 1])


@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16])
@pytest.mark.parametrize("channels_last", [True, False])
def test_direct_micro_kernels_on_whole_and_partial_blocks(dtype, channels_last):
    """Rows of 22 outputs (two blocks of 8, then 6; for the filter gradient 54 pairs of
    taps and channels: six blocks of 8, then 6), 3-D, strided, dilated, uneven padding,
    two vectors of output channels, against the float64 reference."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 5, 9, 21, 3)).astype(dtype)
    w = rng.standard_normal((3, 2, 3, 3, 32)).astype(dtype)
    if not channels_last:
        x = np.ascontiguousarray(np.moveaxis(x, -1, 1))
    geo = ((2, 1, 1), (1, 2, 1), ((1, 0), (1, 1), (2, 1)))
    calls = []
    original = conv_direct.forward
    with module_settings(conv_direct,
                         forward=lambda *a, **k: calls.append(a[-1]) or original(*a, **k)):
        got = conv_forward(x, w, *geo, channels_last=channels_last)
    assert calls == [(2, 9, 22)]
    want = conv_forward_ref(x.astype(np.float64), w.astype(np.float64), *geo,
                            channels_last=channels_last)
    _check_close(got, want, dtype)
    dy = np.random.default_rng(12).standard_normal(got.shape).astype(dtype)
    dw = conv_backprop_filter(x, dy, w.shape, *geo, channels_last=channels_last)
    _check_close(dw, conv_backprop_filter_ref(x.astype(np.float64), dy.astype(np.float64),
                                              w.shape, *geo, channels_last=channels_last),
                 dtype)


@pytest.mark.parametrize("x_shape, kernel, geo", [
    ((1, 61, 8), (3,), ((2,), (2,), ((2, 3),))),
    ((1, 3, 40, 8), (2, 3), ((1, 2), (1, 1), ((0, 1), (1, 1)))),
    ((1, 2, 3, 37, 8), (1, 2, 3), ((1, 1, 3), (1, 1, 2), ((0, 0), (1, 0), (4, 2)))),
])
def test_direct_forward_cuts_few_images_into_bands(x_shape, kernel, geo):
    """One image's outputs cut into bands of positions for the threads (1-D: bands within
    its one row, each padding only the columns it reads; 2-D and 3-D: within and across
    rows), strided, dilated, uneven padding, against the float64 reference."""
    from graphops.kernels.compiled import direct as loops_direct
    rng = np.random.default_rng(5)
    x = rng.standard_normal(x_shape).astype(np.float32)
    w = rng.standard_normal((*kernel, x_shape[-1], 16)).astype(np.float32)
    bands = []
    original = loops_direct.forward
    with module_settings(loops_direct, forward=lambda *a: bands.append(a[6]) or original(*a)):
        got = conv_forward(x, w, *geo)
    assert len(bands) == 1 and bands[0] > 1
    want = conv_forward_ref(x.astype(np.float64), w.astype(np.float64), *geo)
    _check_close(got, want, np.float32)


def test_direct_kernels_channel_groups_are_the_kernels_own():
    from graphops.kernels.compiled import direct as loops_direct
    assert conv_direct.VECTOR_CHANNELS == loops_direct.HALF_LANES


@SETTINGS
@given(case=conv_cases(min_size=1), dtype=st.sampled_from(FLOAT_DTYPES),
       non_finite=st.sampled_from(["", "dy", "filter"]), direct=st.booleans(),
       wide=st.lists(st.tuples(st.integers(1, 4), st.integers(0, 5), st.integers(0, 5)),
                     min_size=3, max_size=3))
def test_input_gradient_by_phases_matches_reference(case, dtype, non_finite, direct, wide):
    """The input gradient as one stride-1 conv per phase of dx (forced on for every stride
    and channel count; each phase on the direct loops or, with ``direct`` off, the other
    forward paths), NaN and infinity in dy or the filter reaching exactly the positions
    they feed (a non-finite filter takes the other paths: the phases would multiply it by
    dy's zero padding)."""
    for dim, (d, before, after) in zip(case["dims"], wide):    # dilations past the stride
        dim.update(d=d, pad=(before, after))
    _, w, dy, geo, x_shape = _arrays(case, dtype)
    hit = {"dy": dy, "filter": w}.get(non_finite)
    if hit is not None and hit.size:
        hit.reshape(-1)[::7] = np.inf
        hit.reshape(-1)[3::11] = np.nan
    cl = case["channels_last"]
    with module_settings(conv_dense, PHASE_MAX_DEPTH=10**6,
                         SMALL_MAX_CHANNEL_PAIRS=10**6 if direct else 0), \
            module_settings(conv_dense, _by_phases=lambda xp, kernel, *args: len(kernel) <= 3), \
            np.errstate(invalid="ignore"):
        got = conv_backprop_input(dy, w, x_shape, *geo, channels_last=cl)
        want = conv_backprop_input_ref(dy.astype(np.float64), w.astype(np.float64), x_shape,
                                       *geo, channels_last=cl)
    finite = [np.abs(np.nan_to_num(a.astype(np.float64), posinf=0, neginf=0)) for a in (dy, w)]
    terms = conv_backprop_input_ref(*finite, x_shape, *geo, channels_last=cl)   # may cancel
    _check_close_non_finite(got, want, dtype, float(np.max(terms, initial=0.0)))


@pytest.mark.parametrize("in_size, out_size, k, s, d, before", [
    (8, 4, 3, 2, 1, 0), (7, 3, 3, 3, 2, 1), (9, 2, 2, 4, 3, 2), (5, 5, 3, 1, 2, 2)])
def test_phase_plans_cover_every_offset_once(in_size, out_size, k, s, d, before):
    """Every (position, offset) pair the direct sum adds lands in exactly one phase, at the
    dy position and filter offset the plan gives."""
    from graphops.kernels.conv_algorithms.phases import phase_plans
    planned = set()
    for r, taps, dil, lo in phase_plans(k, s, d, before):
        for m in range(len(range(r, in_size, s))):
            for j in range(len(taps)):
                planned.add((r + s * m, m + lo + j * dil, taps[-1 - j]))
    direct = {(q * s + t * d - before, q, t) for q in range(out_size + k) for t in range(k)
              if 0 <= q * s + t * d - before < in_size}
    assert {p for p in planned if 0 <= p[1] < out_size} == \
        {p for p in direct if p[1] < out_size}
    assert all(0 <= p < in_size for p, _, _ in planned)


@settings(max_examples=60, deadline=None)
@given(case=conv_cases())
def test_int32_forward_and_backprop_input_exact(case):
    x, w, dy, geo, x_shape = _arrays(case, np.int32)
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
    x, w, dy, geo, x_shape = _arrays(case, np.float64)
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
    x, w, dy, geo, x_shape = _arrays(case, np.float64)
    cl = case["channels_last"]

    def run_all():
        return (conv_forward(x, w, *geo, channels_last=cl),
                conv_backprop_input(dy, w, x_shape, *geo, channels_last=cl),
                conv_backprop_filter(x, dy, w.shape, *geo, channels_last=cl))

    whole = run_all()
    with module_settings(conv_dense, CHUNK_BYTES=budget, SCATTER_BLOCK_BYTES=budget,
                         SCATTER_MIN_SOURCES=1):
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
    x = np.ones(_layout(shape_last, channels_last), np.float32)
    w = np.ones((*kernel, c, 4), np.float32)
    dy = np.ones(_layout((n, *out_sp, 4), channels_last), np.float32)
    y = conv_forward(x, w, *geo, channels_last=channels_last)
    assert y.shape == _layout((n, *out_sp, 4), channels_last) and not y.any()
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


@settings(max_examples=80, deadline=None)
@given(batch=st.integers(1, 3), rows=st.integers(1, 70), depth=st.integers(1, 40),
       columns=st.sampled_from([8, 16, 24, 32, 40, 56, 64, 72, 120, 136]), transposed=st.booleans(),
       add=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_micro_kernel_gemm_matches_matmul(batch, rows, depth, columns, transposed, add, seed):
    """``loops_direct.batched_gemm`` (Winograd's products): every row count, column group
    and A layout against a float64 matmul, adding to what out holds or not."""
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, (batch, depth, rows) if transposed else (batch, rows, depth))
    b = rng.uniform(-1, 1, (batch, depth, columns))
    out = rng.uniform(-1, 1, (batch, rows, columns))
    want = (a.transpose(0, 2, 1) if transposed else a) @ b + (out if add else 0)
    got = out.astype(np.float32)
    loops("direct").batched_gemm(a.astype(np.float32), b.astype(np.float32), got,
                                       transposed, int(add))
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * (depth + 1))


@pytest.mark.parametrize("x_shape, pads", [((2, 5, 17, 17, 8), ((0, 0),) * 3),
                                           ((2, 4, 16, 15, 8), ((1, 1), (1, 0), (1, 1)))])
@pytest.mark.parametrize("parts", [1, 3, 6])
def test_direct_filter_gradient_writes_every_partial_sum(x_shape, pads, parts):
    """``loops_direct.filter_grad`` stores each part's first sums and adds the rest: partials
    that start as NaN come out as the float64 reference's part sums. 64 output channels make
    chunks of 64 of a plane's 15x15 positions (the last one short), two vector groups of
    channels and 216 (tap, channel) pairs, 27 blocks of 8; 1-8 planes a part, read in place
    or from padded slabs."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal(x_shape).astype(np.float32)
    q = [size + b + a - 2 for size, (b, a) in zip(x_shape[1:-1], pads)]
    dy = rng.standard_normal((2, *q, 64)).astype(np.float32)
    shape = (3, 3, 3, 8, 64)
    flat, offsets, geometry, source = conv_direct._layout(x, shape, (1, 1, 1), (1, 1, 1), pads,
                                                          dy.shape[1:-1])
    partials = np.full((parts, np.prod(shape)), np.nan, np.float32)
    loops("direct", chunk=1).filter_grad(flat, offsets, dy.reshape(-1), partials,
                                               geometry, source)
    planes = 2 * q[0]
    x64, dy64 = x.astype(np.float64), dy.astype(np.float64)
    for p in range(parts):
        first, stop = planes * p // parts, planes * (p + 1) // parts
        mask = np.zeros(dy.shape[:2], bool)
        mask.reshape(-1)[first:stop] = True
        want = conv_backprop_filter_ref(x64, dy64 * mask[..., None, None, None], shape,
                                        (1, 1, 1), (1, 1, 1), pads)
        np.testing.assert_allclose(partials[p], want.reshape(-1), rtol=0, atol=2e-4)
