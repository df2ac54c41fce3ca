"""Property tests: the dense conv on the direct micro-kernels (``conv_direct``) and by phases
of dx (``conv_phases``), forced on, against the slow float64 reference; the micro-kernels'
GEMM and filter-gradient loops on their own."""

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from graphops.kernels.conv_algorithms import dense as conv_dense
from graphops.kernels.conv_algorithms import direct as conv_direct
from graphops.kernels.conv_algorithms import gemm as conv_gemm
from graphops.kernels.compiled import loops
from graphops.kernels.support.parallelism import intra_op_threads
from graphops.kernels.conv_algorithms.dense import (conv_backprop_filter, conv_backprop_input,
                                                    conv_forward)
from tests.kernels.dense_conv_cases import (  # noqa: F401 (on_every_thread: autouse)
    FLOAT_DTYPES, SETTINGS, arrays, check_close, check_close_non_finite, conv_cases,
    flips_to_forward, on_every_thread, padded_windows_only)
from tests.module_settings import module_settings
from tests.reference_conv import (conv_backprop_filter_ref, conv_backprop_input_ref,
                                  conv_forward_ref)


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
    x, w, dy, geo, _ = arrays(case, dtype)
    if non_finite and x.size:
        x.reshape(-1)[::7] = np.inf
        x.reshape(-1)[3::11] = np.nan
    calls = []
    forward, backprop_filter = conv_direct.forward, conv_direct.backprop_filter
    cl = case["channels_last"]
    with module_settings(conv_direct, MIN_PLANE_POSITIONS=1, MAX_UNIT_STRIDE_MACS=10**18,
                         forward=lambda *a, **k: calls.append("forward") or forward(*a, **k),
                         backprop_filter=lambda *a: calls.append("filter") or
                         backprop_filter(*a)), \
            module_settings(conv_dense, SMALL_MAX_CHANNEL_PAIRS=0), \
            module_settings(conv_gemm, FEW_MAX_POSITIONS=0), np.errstate(invalid="ignore"):
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
        check_close_non_finite(got, want, dtype)


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
    _, w, dy, geo, x_shape = arrays(case, dtype)
    calls = []
    forward = conv_direct.forward
    with module_settings(conv_direct, MIN_PLANE_POSITIONS=1,
                         forward=lambda *a, **k: calls.append(1) or forward(*a, **k)), \
            module_settings(conv_dense, SMALL_MAX_CHANNEL_PAIRS=0):
        got = conv_backprop_input(dy, w, x_shape, *geo, channels_last=case["channels_last"])
    want = conv_backprop_input_ref(dy.astype(np.float64), w.astype(np.float64), x_shape, *geo,
                                   channels_last=case["channels_last"])
    check_close(got, want, dtype)
    assert len(calls) == (np.dtype(dtype) != np.float64 and flips_to_forward(w, dy, geo))


@SETTINGS
@given(case=conv_cases(min_size=1), dtype=st.sampled_from(FLOAT_DTYPES),
       vectors=st.integers(1, 17), strides=st.lists(st.integers(2, 3), min_size=3, max_size=3),
       run_bytes=st.sampled_from([1, conv_direct.PHASE_RUN_BYTES]))
def test_strided_input_gradient_on_the_direct_kernels_matches_reference(case, dtype, vectors,
                                                                       strides, run_bytes):
    """The strided input gradient phase by phase of dx on the micro-kernels (8-136 input
    channels: every mix of the kernels' widths; dy channels past the few-channel phases;
    a phase's taps summed all at once or a few rows at a time): every stride, dilation,
    padding (phases reading padding alone, or reached by no tap, give zeros), rank, layout
    and float type."""
    for dim, stride in zip(case["dims"], strides):
        dim["s"] = stride
    case["c"], case["o"] = 8 * vectors, case["o"] + conv_dense.PHASE_MAX_DEPTH
    _, w, dy, geo, x_shape = arrays(case, dtype)
    calls = []
    strided = conv_direct.backprop_input_strided
    with module_settings(conv_direct, MIN_PLANE_POSITIONS=1, phases_win=lambda channels: True,
                         PHASE_RUN_BYTES=run_bytes,
                         backprop_input_strided=lambda *a: calls.append(1) or strided(*a)):
        got = conv_backprop_input(dy, w, x_shape, *geo, channels_last=case["channels_last"])
    want = conv_backprop_input_ref(dy.astype(np.float64), w.astype(np.float64), x_shape, *geo,
                                   channels_last=case["channels_last"])
    check_close(got, want, dtype)
    pointwise = all(k == 1 for k in w.shape[:-2]) and not any(b or a for b, a in geo[2])
    assert len(calls) == (np.dtype(dtype) != np.float64 and not pointwise and dy.size > 0)


@pytest.mark.parametrize("channels", [16, 48, 64, 72, 128, 192])
def test_strided_input_gradient_reads_each_phases_filter_as_strips(channels):
    """dx channels a whole number of a call's, and more: each phase's filter rows gathered
    as strips of a call's channels (else as whole rows); the same sums in the same order
    as from whole rows, so the same bits, within a few roundings of the reference."""
    rng = np.random.default_rng(channels)
    w = rng.standard_normal((3, 3, channels, 24)).astype(np.float32)
    dy = rng.standard_normal((2, 5, 6, 24)).astype(np.float32)
    geo = ((2, 2), (1, 1), ((1, 1), (0, 1)))
    in_shape = (2, 10, 12, channels)
    module = loops("direct", chunk=1)
    call = module.CALL_CHANNELS
    want_width = call if channels > call and channels % call == 0 else channels
    widths, phases = [], module.input_grad_phases
    with module_settings(module, input_grad_phases=lambda *a: widths.append(a[-1])
                         or phases(*a)):
        got = conv_direct.backprop_input_strided(dy, w, in_shape, *geo)
    with module_settings(conv_direct, _strip_width=lambda channels, call: channels):
        whole_rows = conv_direct.backprop_input_strided(dy, w, in_shape, *geo)
    assert widths == [want_width]
    np.testing.assert_array_equal(got.view(np.uint32), whole_rows.view(np.uint32))
    want = conv_backprop_input_ref(dy.astype(np.float64), w.astype(np.float64), in_shape, *geo)
    check_close(got, want, np.float32)


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
    _, w, dy, geo, x_shape = arrays(case, dtype)
    if non_finite and dy.size:
        dy.reshape(-1)[::7] = np.inf
        dy.reshape(-1)[3::11] = np.nan
    last_strides = []
    phases = conv_direct._phases
    with module_settings(conv_direct, MIN_PLANE_POSITIONS=1,
                         _phases=lambda dyc, w, shape, strides, *a: last_strides.append(
                             strides[-1]) or phases(dyc, w, shape, strides, *a)), \
            np.errstate(invalid="ignore"):
        got = conv_backprop_input(dy, w, x_shape, *geo, channels_last=case["channels_last"])
        want = conv_backprop_input_ref(dy.astype(np.float64), w.astype(np.float64), x_shape,
                                       *geo, channels_last=case["channels_last"])
    check_close_non_finite(got, want, dtype)
    pointwise = all(k == 1 for k in w.shape[:-2]) and not any(b or a for b, a in geo[2])
    assert last_strides == ([] if dy.size == 0 or pointwise else [s if non_finite else 1])


@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16])
@pytest.mark.parametrize("channels_last", [True, False])
def test_direct_micro_kernels_on_whole_and_partial_blocks(dtype, channels_last):
    """Rows of 22 outputs (two blocks of 8, then 6; for the filter gradient 54 pairs of
    taps and channels: six blocks of 8, then 6), 3-D, strided, dilated, uneven padding,
    two vectors of output channels, against the float64 reference (the forward on the
    padded windows' loops)."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 5, 9, 21, 3)).astype(dtype)
    w = rng.standard_normal((3, 2, 3, 3, 32)).astype(dtype)
    if not channels_last:
        x = np.ascontiguousarray(np.moveaxis(x, -1, 1))
    geo = ((2, 1, 1), (1, 2, 1), ((1, 0), (1, 1), (2, 1)))
    calls = []
    original = conv_direct.forward
    with module_settings(conv_direct,
                         forward=lambda *a, **k: calls.append(a[-1]) or original(*a, **k)), \
            padded_windows_only():
        got = conv_forward(x, w, *geo, channels_last=channels_last)
    assert calls == [(2, 9, 22)]
    want = conv_forward_ref(x.astype(np.float64), w.astype(np.float64), *geo,
                            channels_last=channels_last)
    check_close(got, want, dtype)
    dy = np.random.default_rng(12).standard_normal(got.shape).astype(dtype)
    dw = conv_backprop_filter(x, dy, w.shape, *geo, channels_last=channels_last)
    check_close(dw, conv_backprop_filter_ref(x.astype(np.float64), dy.astype(np.float64),
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
    rows), strided, dilated, uneven padding, against the float64 reference. (The padded
    windows' loops: no classes of inner taps.)"""
    from graphops.kernels.compiled import direct as loops_direct
    rng = np.random.default_rng(5)
    x = rng.standard_normal(x_shape).astype(np.float32)
    w = rng.standard_normal((*kernel, x_shape[-1], 16)).astype(np.float32)
    bands = []
    original = loops_direct.forward
    with module_settings(loops_direct, forward=lambda *a: bands.append(a[6]) or original(*a)), \
            module_settings(conv_gemm, FEW_MAX_POSITIONS=0), padded_windows_only():
        got = conv_forward(x, w, *geo)
    assert len(bands) == 1 and bands[0] > 1
    want = conv_forward_ref(x.astype(np.float64), w.astype(np.float64), *geo)
    check_close(got, want, np.float32)


def test_direct_kernels_channel_groups_are_the_kernels_own():
    from graphops.kernels.compiled import direct as loops_direct
    assert conv_direct.VECTOR_CHANNELS % loops_direct.HALF_LANES == 0


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
    _, w, dy, geo, x_shape = arrays(case, dtype)
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
    check_close_non_finite(got, want, dtype, float(np.max(terms, initial=0.0)))


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


@settings(max_examples=80, deadline=None)
@given(batch=st.integers(1, 3), rows=st.integers(1, 70), depth=st.integers(1, 40),
       columns=st.sampled_from([8, 16, 24, 32, 40, 56, 64, 72, 120, 136]), transposed=st.booleans(),
       add=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_micro_kernel_gemm_matches_matmul(batch, rows, depth, columns, transposed, add, seed):
    """``compiled.direct.batched_gemm`` (Winograd's products): every row count, column group
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
    """``compiled.direct.filter_grad`` stores each part's first sums and adds the rest: partials
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
    loops("direct", chunk=1).filter_grad(flat, offsets, dy.reshape(-1), partials, geometry,
                                         source)
    planes = 2 * q[0]
    x64, dy64 = x.astype(np.float64), dy.astype(np.float64)
    for p in range(parts):
        first, stop = planes * p // parts, planes * (p + 1) // parts
        mask = np.zeros(dy.shape[:2], bool)
        mask.reshape(-1)[first:stop] = True
        want = conv_backprop_filter_ref(x64, dy64 * mask[..., None, None, None], shape,
                                        (1, 1, 1), (1, 1, 1), pads)
        np.testing.assert_allclose(partials[p], want.reshape(-1), rtol=0, atol=2e-4)


@pytest.mark.parametrize("registers", [16, 32])
@pytest.mark.parametrize("strides", [(1, 1), (2, 2)])
def test_pointwise_convs_of_many_multiply_adds_take_the_direct_kernels(registers, strides):
    """A 1x1 conv of ``POINTWISE_MIN_MACS`` multiply-adds (a ResNet block's 256 -> 64
    reduction) runs on the direct kernels with 16 or 32 vector registers; a row of
    positions fewer is one GEMM. Against the float64 reference, its bias and ReLU fused
    where it runs here."""
    from graphops.kernels.compiled import host_isa
    rng = np.random.default_rng(8)
    positions = conv_direct.POINTWISE_MIN_MACS // (256 * 64)
    x = rng.standard_normal((2, 16 * strides[0], positions // 32 * strides[1], 256))
    w = rng.standard_normal((1, 1, 256, 64))
    bias = rng.standard_normal(64).astype(np.float32)
    geo = (strides, (1, 1), ((0, 0), (0, 0)))
    loops("direct")                      # the kernels' tiles are the host's, read first
    isa = host_isa.isa()._replace(registers=registers)
    calls = []
    original = conv_direct.forward
    with module_settings(host_isa, isa=lambda: isa), module_settings(
            conv_direct, forward=lambda *a, **k: calls.append(1) or original(*a, **k)):
        got = conv_forward(x.astype(np.float32), w.astype(np.float32), *geo,
                           epilogue=([("add", bias)], "Relu", None))
        conv_forward(x[:, :, strides[1]:].astype(np.float32), w.astype(np.float32), *geo)
    assert len(calls) == 1
    want = np.maximum(conv_forward_ref(x, w, *geo) + bias, 0)
    check_close(got, want, np.float32)
