"""Dilated stride-1 convs as the undilated convs of their dilation phases: the moves into
and out of the phases against a slow loop, and Winograd's forward conv, input gradient and
filter gradient on the phases against the float64 reference."""

import itertools

import numpy as np
from hypothesis import assume, given, settings, strategies as st

from graphops.kernels.conv_algorithms import dense as conv_dense
from graphops.kernels.conv_algorithms import dilation_phases
from graphops.kernels.conv_algorithms import direct as conv_direct
from graphops.kernels.conv_algorithms import gemm as conv_gemm
from graphops.kernels.conv_algorithms import routes
from graphops.kernels.conv_algorithms import winograd as conv_winograd
from tests.conv_tolerance import assert_conv_close
from tests.module_settings import module_settings
from tests.reference_conv import (conv_backprop_filter_ref, conv_backprop_input_ref,
                                  conv_forward_ref)


def _phases_by_loop(x, dilations):
    """The phases as ``split`` lays them out, one slice at a time."""
    n = x.shape[0]
    out = np.empty(dilation_phases.phase_shape(x.shape, dilations), x.dtype)
    for phase, residues in enumerate(itertools.product(*(range(d) for d in dilations))):
        window = tuple(slice(r, None, d) for r, d in zip(residues, dilations))
        for image in range(n):
            out[phase * n + image] = x[(image, *window)]
    return out


@st.composite
def moves(draw):
    rank = draw(st.integers(1, 3))
    dilations = tuple(draw(st.integers(1, 3)) for _ in range(rank))
    sizes = tuple(d * draw(st.integers(1, 4)) for d in dilations)
    dtype = draw(st.sampled_from([np.float32, np.float64, np.float16, np.int32]))
    return draw(st.integers(1, 3)), sizes, draw(st.integers(1, 20)), dilations, dtype


@settings(max_examples=80, deadline=None)
@given(case=moves(), compiled=st.booleans())
def test_split_and_merge_match_the_loop(case, compiled):
    n, sizes, channels, dilations, dtype = case
    x = (np.arange(n * np.prod(sizes) * channels) % 251).astype(dtype).reshape(
        n, *sizes, channels)
    with module_settings(dilation_phases, COMPILED_MIN_SIZE=0 if compiled else 1 << 62):
        phased = dilation_phases.split(x, dilations)
        back = dilation_phases.merge(phased, dilations, n)
    np.testing.assert_array_equal(phased, _phases_by_loop(x, dilations))
    np.testing.assert_array_equal(back, x)


def test_which_convs_run_as_phases():
    assert dilation_phases.applies((56, 56), (1, 1), (2, 2), ((2, 2), (2, 2)))
    assert dilation_phases.applies((1, 64), (1, 1), (1, 4), ((0, 0), (4, 4)))
    assert dilation_phases.applies((9, 6), (1, 1), (3, 2), ((0, 0), (0, 0)))
    assert not dilation_phases.applies((56, 56), (1, 1), (1, 1), ((1, 1), (1, 1)))
    assert not dilation_phases.applies((56, 56), (2, 2), (2, 2), ((2, 2), (2, 2)))
    assert not dilation_phases.applies((55, 56), (1, 1), (2, 2), ((2, 2), (2, 2)))
    assert not dilation_phases.applies((56, 56), (1, 1), (2, 2), ((1, 3), (2, 2)))


@st.composite
def dilated_convs(draw):
    rank = draw(st.sampled_from([2, 3]))
    dilations = tuple(draw(st.integers(1, 3)) for _ in range(rank))
    if max(dilations) == 1:
        dilations = (2,) + dilations[1:]
    spatial = tuple(d * draw(st.integers(1, 5)) for d in dilations)
    pads = tuple((d * draw(st.integers(0, 2)), d * draw(st.integers(0, 2))) for d in dilations)
    channels = st.sampled_from([1, 3, 8, 16])
    return dict(n=draw(st.integers(1, 2)), c=draw(channels), o=draw(channels),
                spatial=spatial, pads=pads, dilations=dilations,
                seed=draw(st.integers(0, 2**32 - 1)))


@settings(max_examples=60, deadline=None)
@given(case=dilated_convs())
def test_winograd_on_the_phases_matches_the_dilated_reference(case):
    """Winograd forced on: each op's products run on the phases' shapes, and all three
    results match the dilated conv's float64 reference."""
    rank, dilations, pads = len(case["spatial"]), case["dilations"], case["pads"]
    out_sp = tuple(s + b + a - 2 * d for s, (b, a), d
                   in zip(case["spatial"], pads, dilations))
    assume(min(out_sp) >= 1)
    rng = np.random.default_rng(case["seed"])
    x = rng.uniform(-1, 1, (case["n"], *case["spatial"], case["c"])).astype(np.float32)
    w = rng.uniform(-1, 1, (3,) * rank + (case["c"], case["o"])).astype(np.float32)
    dy = rng.uniform(-1, 1, (case["n"], *out_sp, case["o"])).astype(np.float32)
    geo = ((1,) * rank, dilations, pads)
    seen = []
    forward = conv_winograd.winograd_forward
    backprop_filter = conv_winograd.winograd_backprop_filter
    with module_settings(conv_winograd, MIN_CHANNELS=1, MIN_TILES=1,
                         winograd_forward=lambda *a: seen.append(a[0].shape) or forward(*a),
                         winograd_backprop_filter=lambda *a: seen.append(a[0].shape)
                         or backprop_filter(*a)), \
            module_settings(conv_dense, SMALL_MAX_CHANNEL_PAIRS=0), \
            module_settings(conv_gemm, FEW_MAX_POSITIONS=0), \
            module_settings(conv_direct, MAX_UNIT_STRIDE_MACS=0):
        y = conv_dense.conv_forward(x, w, *geo)
        dx = conv_dense.conv_backprop_input(dy, w, x.shape, *geo)
        dw = conv_dense.conv_backprop_filter(x, dy, w.shape, *geo)
    x64, w64, dy64 = x.astype(np.float64), w.astype(np.float64), dy.astype(np.float64)
    assert_conv_close(y, conv_forward_ref(x64, w64, *geo), np.float32, half_ulps=1.0)
    assert_conv_close(dx, conv_backprop_input_ref(dy64, w64, x.shape, *geo), np.float32,
                      half_ulps=1.0)
    assert_conv_close(dw, conv_backprop_filter_ref(x64, dy64, w.shape, *geo), np.float32,
                      half_ulps=1.0)
    x_phases = dilation_phases.phase_shape(x.shape, dilations)
    dy_phases = dilation_phases.phase_shape(dy.shape, dilations)
    assert seen == [x_phases, dy_phases, x_phases]


def test_the_fixed_rule_treats_a_dilated_conv_as_its_phases_conv():
    """A large dilated 3x3 conv is left to the tuned choice with Winograd, as its phases'
    undilated conv is; where its geometry does not split, the direct kernels keep it."""
    def route(n, size, dilation):
        pads = ((dilation, dilation),) * 2
        return routes.kernel_route((n, size, size, 64), (3, 3, 64, 64), (1, 1),
                                   (dilation, dilation), pads, (size, size), np.float32)
    assert route(32, 56, 2) == route(128, 28, 1) is None
    assert route(32, 55, 2) == "direct"
