"""Property tests: the dense conv's few-channel loops (``conv_few_channels``: the scalar
direct loops and ``compiled.planar``'s vector kernels), forced on, against the slow float64
reference, NaN and infinity reaching exactly the outputs they feed."""

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

from graphops.kernels.conv_algorithms import dense as conv_dense
from graphops.kernels.conv_algorithms import gemm as conv_gemm
from graphops.kernels.conv_algorithms import few_channels as conv_few_channels
from graphops.kernels.conv_algorithms import phases as conv_phases
from graphops.kernels.compiled import loops
from graphops.kernels.conv_algorithms.dense import (conv_backprop_filter, conv_backprop_input,
                                                    conv_forward)
from graphops.kernels.support.kernel_util import channel_chain
from tests.kernels.dense_conv_cases import (  # noqa: F401 (on_every_thread: autouse)
    FLOAT_DTYPES, SETTINGS, arrays, check_close_non_finite, conv_cases, flips_to_forward,
    on_every_thread)
from tests.module_settings import module_settings
from tests.reference_conv import (conv_backprop_filter_ref, conv_backprop_input_ref,
                                  conv_forward_ref)


@SETTINGS
@given(case=conv_cases(), dtype=st.sampled_from(FLOAT_DTYPES), non_finite=st.booleans())
def test_few_channel_direct_loops_match_reference(case, dtype, non_finite):
    """The direct loops for few channels (forced on for every channel count; stride 1 past the
    first of 3 dims), NaN and infinity in x reaching exactly the outputs they feed."""
    for dim in case["dims"][1 if len(case["dims"]) == 3 else 0:]:
        dim["s"] = 1
    x, w, dy, geo, _ = arrays(case, dtype)
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
        check_close_non_finite(got, want, dtype)


@settings(max_examples=100, deadline=None)
@given(case=conv_cases(min_size=1), outs=st.sampled_from(conv_few_channels.PLANAR_OUTPUTS),
       width=st.integers(1, 40), height=st.integers(1, 19), non_finite=st.booleans())
def test_planar_vector_kernels_match_reference(case, outs, width, height, non_finite):
    """The float32 few-channel forward and filter gradient on the vector kernels with
    positions along the lanes (``compiled.planar``: 1-16 output channels, the filter gradient
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
    x, w, dy, geo, _ = arrays(case, np.float32)
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
    if 0 not in y.shape and not conv_gemm.pointwise(kernel, pads):
        assert set(used) == ({"forward", "filter_grad"} if outs <= 8 else {"forward"})
    check_close_non_finite(y, want_y, np.float32)
    check_close_non_finite(dw, want_dw, np.float32)
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
    _, w, dy, geo, x_shape = arrays(case, dtype)
    if non_finite:
        w.reshape(-1)[::3] = np.inf
    calls = []
    small_forward = conv_few_channels.forward
    with module_settings(conv_few_channels, forward=lambda *a, **k: calls.append(1) or
                         small_forward(*a, **k)), np.errstate(invalid="ignore"):
        got = conv_backprop_input(dy, w, x_shape, *geo, channels_last=case["channels_last"])
        want = conv_backprop_input_ref(dy.astype(np.float64), w.astype(np.float64), x_shape,
                                       *geo, channels_last=case["channels_last"])
    check_close_non_finite(got, want, dtype)
    assert len(calls) == (not non_finite and flips_to_forward(w, dy, geo))


@settings(max_examples=100, deadline=None)
@given(case=conv_cases(min_size=1), channels=st.sampled_from([(1, 1), (1, 3), (2, 1), (4, 2),
                                                              (8, 2), (3, 1)]),
       stride=st.integers(2, 4), multiple=st.integers(1, 4), non_finite=st.booleans())
def test_strided_input_gradient_folds_last_dim_into_planar_kernels(case, channels, stride,
                                                                   multiple, non_finite):
    """A strided float32 input gradient to few channels by phases, the last dim's phases
    folded into channels where stride x C is a power of two up to 16 (and the folded pairs
    at most ``SMALL_MAX_CHANNEL_PAIRS``): each phase of the other dims written by the
    planar kernels into its strided view of dx. Against the reference, every rank,
    padding, dilation and layout; a non-finite dy keeps the unfolded phases (the folded
    filter's zero taps would turn infinity into NaN)."""
    case["c"], case["o"] = channels
    case["dims"][-1].update(s=stride, size=stride * multiple)
    _, w, dy, geo, x_shape = arrays(case, np.float32)
    if non_finite:
        dy.reshape(-1)[::5] = np.inf
    calls = []
    by_phases = conv_phases.backprop_input_by_phases
    spy = lambda dy, w, shape, strides, *a: calls.append(strides) or by_phases(dy, w, shape,
                                                                              strides, *a)
    with module_settings(conv_phases, backprop_input_by_phases=spy), \
            np.errstate(invalid="ignore"):
        got = conv_backprop_input(dy, w, x_shape, *geo, channels_last=case["channels_last"])
        want = conv_backprop_input_ref(dy.astype(np.float64), w.astype(np.float64), x_shape,
                                       *geo, channels_last=case["channels_last"])
    check_close_non_finite(got, want, np.float32)
    reached = dy.size > 0 and not conv_gemm.pointwise(w.shape[:-2], geo[2])
    assert len(calls) == (reached and conv_dense._by_phases(np, w.shape[:-2], geo[0], *channels))
    folds = (stride * case["c"] in conv_few_channels.PLANAR_OUTPUTS and not non_finite
             and stride * case["c"] * case["o"] <= conv_dense.SMALL_MAX_CHANNEL_PAIRS)
    assert [s[-1] for s in calls] == [1 if folds else stride] * len(calls)
