"""The pooling ops: MaxPool(V2), AvgPool, MaxPool3D, AvgPool3D, their gradient and
second-gradient ops, MaxPoolWithArgmax / MaxPoolGradWithArgmax.

Values are checked against the slow float64 loops of tests/reference_pooling.py (eager and
in a Session, inputs with many ties), errors against TF's messages, static shapes against
TF's shape functions. Error messages: test_pooling_errors.py; registered gradients, GPU kernels and the gp.nn wrappers:
test_pooling_gradients.py; TF itself: test_pooling_tf_oracle.py.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import graphops as gp
from graphops.kernels import compiled
from graphops.kernels.ops import pooling as pooling_kernels
from graphops.kernels.numerics import pooling_windows
from tests import reference_pooling as ref
from tests.module_settings import module_settings
from tests.op_runners import invalid, make_runner

R = gp.raw_ops
SETTINGS = settings(max_examples=15, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
MODES = pytest.mark.parametrize("mode", ["eager", "graph"])
HALF = (np.dtype(np.float16), np.dtype(gp.bfloat16.np_dtype))
MAX_TYPES = [np.float32, np.float64, np.float16, gp.bfloat16.np_dtype, np.int32, np.uint8,
             np.int64]
FLOAT_TYPES = [np.float32, np.float64, np.float16, gp.bfloat16.np_dtype]


def _close(got, want, dtype):
    """float32 within 1e-5 of the output's scale, half types within their rounding."""
    dtype = np.dtype(dtype)
    assert got.dtype == dtype and got.shape == want.shape
    if dtype.kind in "iu":
        np.testing.assert_array_equal(got, want.astype(dtype))
        return
    tol = {np.dtype(np.float64): 1e-12, np.dtype(np.float32): 1e-5}.get(dtype, 1e-2)
    scale = max(1.0, float(np.nanmax(np.abs(want), initial=0.0)))
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol, atol=tol * scale,
                               equal_nan=True)


def _values(rng, shape, dtype):
    """Few distinct values (ties everywhere), as ``dtype``."""
    return rng.integers(-2, 3, shape).astype(dtype)


def _nchw(shape, data_format):
    return shape if data_format in ("NHWC", "NDHWC") else [shape[0], shape[-1], *shape[1:-1]]


def _full(values, data_format, one=1):
    """Spatial ksize/strides -> the op's attr for ``data_format``."""
    if data_format in ("NHWC", "NDHWC"):
        return [1, *values, one]
    return [1, one, *values]


@st.composite
def pool_case(draw, num_spatial=2, explicit=False, formats=None):
    """(channels-last shape, spatial ksize, spatial strides, padding, explicit pads, format)."""
    spatial = [draw(st.integers(1, 5)) for _ in range(num_spatial)]
    ksize = [draw(st.integers(1, 3)) for _ in range(num_spatial)]
    strides = [draw(st.integers(1, 3)) for _ in range(num_spatial)]
    paddings = ["SAME", "VALID"] + (["EXPLICIT"] if explicit else [])
    padding = draw(st.sampled_from(paddings))
    pads = None
    if padding == "VALID":
        spatial = [max(n, k) for n, k in zip(spatial, ksize)]
    if padding == "EXPLICIT":
        pads = [(draw(st.integers(0, k - 1)), draw(st.integers(0, k - 1))) for k in ksize]
        spatial = [max(n, k - b - a) for n, k, (b, a) in zip(spatial, ksize, pads)]
    formats = formats or (["NHWC", "NCHW"] if num_spatial == 2 else ["NDHWC", "NCDHW"])
    shape = [draw(st.integers(1, 2)), *spatial, draw(st.integers(1, 3))]
    return shape, ksize, strides, padding, pads, draw(st.sampled_from(formats))


def _explicit_attr(pads, data_format):
    flat = [p for pair in pads for p in pair]
    return [0, 0, *flat, 0, 0] if data_format == "NHWC" else [0, 0, 0, 0, *flat]


def _attrs(ksize, strides, padding, pads, data_format):
    attrs = {"ksize": _full(ksize, data_format), "strides": _full(strides, data_format),
             "padding": padding, "data_format": data_format}
    if pads is not None:
        attrs["explicit_paddings"] = _explicit_attr(pads, data_format)
    return attrs


# ----------------------------------------------------------------------------- forward


@MODES
@SETTINGS
@given(case=pool_case(explicit=True), dtype=st.sampled_from(MAX_TYPES),
       seed=st.integers(0, 99), v2=st.booleans())
def test_max_pool_matches_the_reference(mode, case, dtype, seed, v2):
    shape, ksize, strides, padding, pads, data_format = case
    if v2 and padding == "EXPLICIT":
        padding, pads = "SAME", None
    x = _values(np.random.default_rng(seed), shape, dtype)
    attrs = _attrs(ksize, strides, padding, pads, data_format)
    x_in = ref.from_cl(x, data_format)
    if v2:
        attrs["ksize"], attrs["strides"] = (np.int32(attrs[k]) for k in ("ksize", "strides"))
        got = make_runner(mode)("MaxPoolV2", input=x_in, **attrs)
    else:
        got = make_runner(mode)("MaxPool", input=x_in, **attrs)
    want = ref.pool(x, ksize, strides, padding, "max", pads)
    _close(ref.to_cl(got, data_format), want, dtype)


@MODES
@SETTINGS
@given(case=pool_case(), dtype=st.sampled_from(FLOAT_TYPES), seed=st.integers(0, 99))
def test_avg_pool_matches_the_reference(mode, case, dtype, seed):
    shape, ksize, strides, padding, _, data_format = case
    x = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    got = make_runner(mode)("AvgPool", value=ref.from_cl(x, data_format),
                            **_attrs(ksize, strides, padding, None, data_format))
    _close(ref.to_cl(got, data_format), ref.pool(x, ksize, strides, padding, "avg"), dtype)


@MODES
@SETTINGS
@given(case=pool_case(num_spatial=3), op=st.sampled_from(["MaxPool3D", "AvgPool3D"]),
       dtype=st.sampled_from([np.float32, np.float16]), seed=st.integers(0, 99))
def test_3d_pools_match_the_reference(mode, case, op, dtype, seed):
    shape, ksize, strides, padding, _, data_format = case
    x = _values(np.random.default_rng(seed), shape, dtype)
    got = make_runner(mode)(op, input=ref.from_cl(x, data_format),
                            **_attrs(ksize, strides, padding, None, data_format))
    want = ref.pool(x, ksize, strides, padding, "max" if op == "MaxPool3D" else "avg")
    _close(ref.to_cl(got, data_format), want, dtype)


@MODES
@SETTINGS
@given(case=st.one_of(pool_case(explicit=True, formats=["NHWC", "NCHW"]),
                      pool_case(num_spatial=3)),
       channels=st.sampled_from([8, 9, 16, 24, 33]), dtype=st.sampled_from(FLOAT_TYPES),
       seed=st.integers(0, 99), specials=st.booleans())
def test_compiled_max_pool_matches_the_reference(mode, case, channels, dtype, seed, specials):
    """From COMPILED_MIN_CHANNELS channels on the max pool is one compiled pass: every
    window, stride, padding and layout, 2-D and 3-D, ties, NaN and -inf (ignored: never
    below the dtype's lowest)."""
    shape, ksize, strides, padding, pads, data_format = case
    shape = [*shape[:-1], channels]
    if len(shape) == 5 and dtype == np.float64:          # MaxPool3D has no float64
        dtype = np.float32
    x = _values(np.random.default_rng(seed), shape, dtype)
    if specials:
        x.reshape(-1)[::5] = np.nan
        x.reshape(-1)[1::7] = -np.inf
    taken = []
    compiled = pooling_kernels.compiled_pool
    op = "MaxPool3D" if len(shape) == 5 else "MaxPool"
    with module_settings(pooling_kernels,
                         compiled_pool=lambda *a: taken.append(a[0]) or compiled(*a)):
        got = make_runner(mode)(op, input=ref.from_cl(x, data_format),
                                **_attrs(ksize, strides, padding, pads, data_format))
    want = ref.pool(x, ksize, strides, padding, "max", pads)
    got = ref.to_cl(got, data_format)
    assert got.dtype == dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.astype(np.float64), want)     # maxima are exact
    assert taken == ["max_pool" if dtype == np.float64 else "max_pool_float32"]


@MODES
@SETTINGS
@given(case=st.one_of(pool_case(formats=["NHWC", "NCHW"]), pool_case(num_spatial=3)),
       channels=st.sampled_from([2, 8, 9, 33]), dtype=st.sampled_from(FLOAT_TYPES),
       seed=st.integers(0, 99))
def test_compiled_avg_pool_matches_the_reference(mode, case, channels, dtype, seed):
    """From COMPILED_MIN_CHANNELS channels on the average pool is one compiled pass: every
    window, stride, padding (not counted) and layout, 2-D and 3-D."""
    shape, ksize, strides, padding, _, data_format = case
    shape = [*shape[:-1], channels]
    if len(shape) == 5 and dtype == np.float64:          # AvgPool3D has no float64
        dtype = np.float32
    x = _values(np.random.default_rng(seed), shape, dtype)
    taken = []
    compiled = pooling_kernels.compiled_pool
    op = "AvgPool3D" if len(shape) == 5 else "AvgPool"
    with module_settings(pooling_kernels,
                         compiled_pool=lambda *a: taken.append(a[0]) or compiled(*a)):
        got = make_runner(mode)(op, **{"input" if len(shape) == 5 else "value":
                                       ref.from_cl(x, data_format)},
                                **_attrs(ksize, strides, padding, None, data_format))
    want = ref.pool(x, ksize, strides, padding, "avg")
    _close(ref.to_cl(got, data_format), want, dtype)
    assert taken == ["avg_pool"]


@pytest.mark.parametrize("serial_max_outputs", [0, 1 << 30])
@pytest.mark.parametrize("rank", [2, 3])
@pytest.mark.parametrize("channels", [1, 3, 8, 16, 17, 24, 41])
@pytest.mark.parametrize("loop, dtype", [("max_pool", np.float32), ("max_pool", np.float64),
                                         ("max_pool_float32", np.float32)])
def test_compiled_max_pool_loop_equals_the_strided_passes(monkeypatch, serial_max_outputs,
                                                          rank, channels, loop, dtype):
    """The compiled loops bit for bit against the NumPy passes they replace, at any channel
    count (the kernel routes fewer than COMPILED_MIN_CHANNELS to the passes; the float32
    loop takes 16 channels at a time, then 8, then one by one), 2-D and 3-D, with windows
    past every edge, on one thread or rows split over threads, NaN, -inf and zeros of both
    signs (the first of equal maxima kept)."""
    monkeypatch.setattr(pooling_kernels, "SERIAL_MAX_OUTPUTS", serial_max_outputs)
    rng = np.random.default_rng(channels)
    x = rng.standard_normal((3, *(5, 40, 37)[3 - rank:], channels)).astype(dtype)
    x.reshape(-1)[::11] = np.nan
    x.reshape(-1)[2::13] = -np.inf
    x[x < 0] *= 0.01                  # so that zeros of either sign are often the maxima
    x.reshape(-1)[3::7] = -0.0
    x.reshape(-1)[4::9] = 0.0
    floor = np.finfo(dtype).min
    ksize, strides = (2, 3, 4)[3 - rank:], (2, 2, 3)[3 - rank:]
    pads = ((1, 0), (1, 2), (2, 1))[3 - rank:]
    out_sp = [(n + b + a - k) // s + 1 for n, k, s, (b, a) in
              zip(x.shape[1:-1], ksize, strides, pads)]
    got = pooling_kernels.compiled_pool(loop, x, ksize, strides, pads, (3, *out_sp, channels),
                                        x.dtype.type(floor))
    want = pooling_windows.max_pool(pooling_windows.clamp_lowest(x, floor, np), floor, ksize,
                                 strides, pads, out_sp, np)
    np.testing.assert_array_equal(got, want)
    assert np.array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize("rank", [2, 3])
@pytest.mark.parametrize("channels", [1, 3, 8, 17])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_compiled_avg_pool_loop_equals_the_strided_passes(rank, channels, dtype):
    """The compiled average pool bit for bit against the NumPy passes it replaces (signs of
    zeros and NaN too), with windows past every edge, 2-D and 3-D, rows split over
    threads."""
    rng = np.random.default_rng(channels)
    x = rng.standard_normal((3, *(9, 40, 37)[3 - rank:], channels)).astype(dtype)
    x.reshape(-1)[::11] = np.nan
    x.reshape(-1)[2::13] = -np.inf
    x.reshape(-1)[5::7] = -0.0
    ksize, strides = (3, 3, 4)[3 - rank:], (2, 2, 3)[3 - rank:]
    pads = ((1, 1), (1, 2), (2, 1))[3 - rank:]
    out_sp = [(n + b + a - k) // s + 1 for n, k, s, (b, a) in
              zip(x.shape[1:-1], ksize, strides, pads)]
    got = pooling_kernels.compiled_pool("avg_pool", x, ksize, strides, pads,
                                        (3, *out_sp, channels))
    want = pooling_windows.avg_pool(x, ksize, strides, pads, out_sp, np)
    np.testing.assert_array_equal(got, want)
    assert np.array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize("channels", [1, 4, 17])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_compiled_max_pool_3d_grad_equals_the_strided_passes(channels, dtype):
    """MaxPool3DGrad's compiled loop against the NumPy passes it replaces: near ties within
    the tolerance, NaN and infinities, overlapping windows past every edge (whole-number
    gradients, so that the order of the sums cannot matter)."""
    rng = np.random.default_rng(channels)
    x = rng.integers(-3, 4, (2, 7, 9, 8, channels)).astype(dtype)
    x.reshape(-1)[::7] += dtype(4e-6)
    x.reshape(-1)[::11] = np.nan
    x.reshape(-1)[2::13] = -np.inf
    ksize, strides, pads = (3, 2, 3), (2, 1, 2), ((1, 1), (0, 1), (2, 1))
    out_sp = [(n + b + a - k) // s + 1 for n, k, s, (b, a) in
              zip(x.shape[1:4], ksize, strides, pads)]
    floor = np.finfo(dtype).min
    y = pooling_windows.max_pool(pooling_windows.clamp_lowest(x, floor, np), floor, ksize,
                                 strides, pads, out_sp, np)
    grad = rng.integers(-2, 3, y.shape).astype(dtype)
    got = pooling_kernels._tied_grad(x, y, grad, ksize, strides, pads, np)
    want = pooling_windows.tied_grad(x, y, grad, ksize, strides, pads, np)
    assert np.count_nonzero(got) > got.size // 10
    np.testing.assert_array_equal(got, want)


def test_max_pool_ignores_nan_and_never_goes_below_lowest(run):
    x = np.array([[np.nan, 3], [3, 0]], np.float32)
    windows = np.stack([x, [[np.nan, np.nan], [np.nan, np.nan]],
                        [[-np.inf, -np.inf], [-np.inf, np.nan]]]).reshape(3, 2, 2, 1)
    for dtype in (np.float32, np.float16):
        got = run("MaxPool", input=windows.astype(dtype), ksize=[1, 2, 2, 1],
                  strides=[1, 2, 2, 1], padding="VALID")
        want = ref.pool(windows.astype(dtype), [2, 2], [2, 2], "VALID", "max")
        _close(got, want, dtype)
        assert got[0, 0, 0, 0] == 3 and got[1, 0, 0, 0] == np.finfo(dtype).min


def test_avg_pool_propagates_nan_and_counts_only_real_positions(run):
    x = np.arange(9, dtype=np.float64).reshape(1, 3, 3, 1)
    got = run("AvgPool", value=x, ksize=[1, 3, 3, 1], strides=[1, 1, 1, 1], padding="SAME")
    assert got[0, 0, 0, 0] == np.mean([0, 1, 3, 4])
    x[0, 1, 1, 0] = np.nan
    assert np.isnan(run("AvgPool", value=x, ksize=[1, 2, 2, 1], strides=[1, 1, 1, 1],
                        padding="VALID")).all()


@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
def test_max_pool_across_channels(run, data_format):
    x = np.random.default_rng(3).standard_normal([2, 3, 2, 6]).astype(np.float32)
    attrs = {"ksize": _full([1, 1], data_format, 3), "strides": _full([1, 1], data_format, 3)}
    got = run("MaxPool", input=ref.from_cl(x, data_format), padding="VALID",
              data_format=data_format, **attrs)
    want = ref.pool(x, [1, 1], [1, 1], "VALID", "max", depth_window=3)
    _close(ref.to_cl(got, data_format), want, np.float32)


def test_huge_same_window_over_a_small_input_is_cheap(run):
    x = np.random.default_rng(4).standard_normal([1, 3, 2, 2])
    for op, arg in (("MaxPool", "input"), ("AvgPool", "value")):
        got = run(op, **{arg: x}, ksize=[1, 2**31 - 1, 2**31 - 1, 1], strides=[1, 1, 1, 1],
                  padding="SAME")
        assert got.shape == (1, 3, 2, 2)
        want = x.max(axis=(1, 2)) if op == "MaxPool" else x.mean(axis=(1, 2))
        np.testing.assert_allclose(got, np.broadcast_to(want[:, None, None], got.shape))


def test_empty_inputs_give_empty_outputs(run):
    for shape in ([0, 4, 4, 2], [1, 4, 4, 0], [1, 0, 4, 2]):
        x = np.zeros(shape, np.float32)
        got = run("MaxPool", input=x, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="SAME")
        assert got.size == 0
        dx = run("MaxPoolGrad", orig_input=x, orig_output=got, grad=got, ksize=[1, 2, 2, 1],
                 strides=[1, 2, 2, 1], padding="SAME")
        assert dx.shape == x.shape


# ----------------------------------------------------------------------------- argmax


@MODES
@SETTINGS
@given(case=pool_case(formats=["NHWC"]), include_batch=st.booleans(),
       dtype=st.sampled_from([np.float32, np.int32, np.float16]),
       index_type=st.sampled_from([gp.int32, gp.int64]), seed=st.integers(0, 99))
def test_max_pool_with_argmax_and_its_gradient(mode, case, include_batch, dtype, index_type,
                                               seed):
    shape, ksize, strides, padding, _, _ = case
    rng = np.random.default_rng(seed)
    x = _values(rng, shape, dtype)
    attrs = {"ksize": [1, *ksize, 1], "strides": [1, *strides, 1], "padding": padding,
             "include_batch_in_index": include_batch}
    out, argmax = make_runner(mode)("MaxPoolWithArgmax", input=x, Targmax=index_type, **attrs)
    values, chosen = ref.argmax_pool(x, ksize, strides, padding)
    _close(out, values, dtype)
    assert argmax.dtype == index_type.np_dtype
    np.testing.assert_array_equal(argmax, ref.flat_argmax(x.shape, out.shape, chosen,
                                                          include_batch))
    grad = _values(rng, out.shape, dtype)
    dx = make_runner(mode)("MaxPoolGradWithArgmax", input=x, grad=grad, argmax=argmax, **attrs)
    _close(dx, ref.grad_with_argmax(x.shape, grad, argmax, include_batch), dtype)


def test_argmax_rule_with_nan(run):
    x = np.array([np.nan, 3, 3, 0, 2, np.nan, 5, np.nan], np.float32).reshape(2, 2, 2, 1)
    out, argmax = run("MaxPoolWithArgmax", input=x, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1],
                      padding="VALID")
    values, chosen = ref.argmax_pool(x, [2, 2], [2, 2], "VALID")
    _close(out, values, np.float32)
    assert np.isnan(out[0, 0, 0, 0]) and out[1, 0, 0, 0] == 5
    np.testing.assert_array_equal(argmax, ref.flat_argmax(x.shape, out.shape, chosen, False))


def test_grad_with_argmax_refuses_indices_outside_the_batch(run):
    x = np.zeros([2, 2, 2, 1], np.float32)
    grad = np.ones([2, 1, 1, 1], np.float32)
    attrs = {"ksize": [1, 2, 2, 1], "strides": [1, 2, 2, 1], "padding": "VALID"}
    with invalid("Invalid output gradient index: 4, 0, 4"):
        run("MaxPoolGradWithArgmax", input=x, grad=grad,
            argmax=np.int64([4, 0]).reshape(2, 1, 1, 1), **attrs)
    with invalid("Invalid output gradient index: 3, 4, 8"):
        run("MaxPoolGradWithArgmax", input=x, grad=grad, include_batch_in_index=True,
            argmax=np.int64([0, 3]).reshape(2, 1, 1, 1), **attrs)


# ----------------------------------------------------------------------------- gradients ops


@MODES
@SETTINGS
@given(case=pool_case(explicit=True), dtype=st.sampled_from([np.float32, np.float64,
                                                              np.float16, np.int32]),
       seed=st.integers(0, 99), v2=st.booleans())
def test_max_pool_grad_and_grad_grad_match_the_reference(mode, case, dtype, seed, v2):
    shape, ksize, strides, padding, pads, data_format = case
    if v2 and padding == "EXPLICIT":
        padding, pads = "SAME", None
    rng, run = np.random.default_rng(seed), make_runner(mode)
    x = _values(rng, shape, dtype)
    attrs = _attrs(ksize, strides, padding, pads, data_format)
    x_in = ref.from_cl(x, data_format)
    y = run("MaxPool", input=x_in, **attrs)
    grad = _values(rng, y.shape, dtype)
    suffix = ""
    if v2:
        attrs["ksize"], attrs["strides"] = (np.int32(attrs[k]) for k in ("ksize", "strides"))
        suffix = "V2"
    dx = run("MaxPoolGrad" + suffix, orig_input=x_in, orig_output=y, grad=grad, **attrs)
    want = ref.max_pool_grad(x, ref.to_cl(grad, data_format), ksize, strides, padding, pads)
    _close(ref.to_cl(dx, data_format), want, dtype)
    if padding == "EXPLICIT":
        return
    gg = _values(rng, x_in.shape, dtype)
    out = run("MaxPoolGradGrad" + suffix, orig_input=x_in, orig_output=y, grad=gg, **attrs)
    want = ref.max_pool_grad_grad(x, ref.to_cl(y, data_format), ref.to_cl(gg, data_format),
                                  ksize, strides, padding)
    _close(ref.to_cl(out, data_format), want, dtype)


@pytest.mark.parametrize("serial_max_outputs", [0, 1 << 30])
def test_compiled_max_pool_grad_on_one_thread_or_several_matches_the_reference(
        monkeypatch, serial_max_outputs):
    """Small gradients run on one thread, larger ones over the images in parallel: both
    route every gradient as the reference does."""
    monkeypatch.setattr(pooling_kernels, "SERIAL_MAX_OUTPUTS", serial_max_outputs)
    rng, run = np.random.default_rng(5), make_runner("graph")
    x = rng.standard_normal((6, 9, 11, 8)).astype(np.float32)
    attrs = _attrs((3, 2), (2, 2), "SAME", None, "NHWC")
    y = run("MaxPool", input=x, **attrs)
    grad = rng.standard_normal(y.shape).astype(np.float32)
    dx = run("MaxPoolGrad", orig_input=x, orig_output=y, grad=grad, **attrs)
    _close(dx, ref.max_pool_grad(x, grad, (3, 2), (2, 2), "SAME"), np.float32)


@pytest.mark.parametrize("channels", [1, 8, 9, 16, 24, 41])
@pytest.mark.parametrize("window", [((3, 3), (2, 1), ((1, 1), (0, 2))),
                                    ((2, 2), (2, 2), ((0, 1), (0, 1)))])
def test_the_float32_max_pool_grad_loop_routes_as_the_generic_one(channels, window):
    """The float32 loop (16 channels at a time, then 8, then one by one) bit for bit against
    the generic loop: ties (integers), NaN first and later, zeros of both signs, windows
    that overlap (sums in the same order) or reach past the edges, rows over threads."""
    rng = np.random.default_rng(channels)
    x = rng.integers(-2, 3, (3, 10, 9, channels)).astype(np.float32)
    x.reshape(-1)[::13] = np.nan
    x.reshape(-1)[5::11] = -0.0
    ksize, strides, pads = window
    out_sp = [(n + b + a - k) // s + 1 for n, k, s, (b, a) in
              zip(x.shape[1:3], ksize, strides, pads)]
    grad = rng.standard_normal((3, *out_sp, channels)).astype(np.float32)
    loops = compiled.loops("pooling", chunk=1)
    got, want = np.empty_like(x), np.empty_like(x)
    loops.max_pool_grad_float32(x, grad, got, ksize, strides, tuple(b for b, _ in pads))
    loops.max_pool_grad(x, grad, want, ksize, strides, tuple(b for b, _ in pads))
    np.testing.assert_array_equal(got, want)
    assert np.array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
def test_max_pool_grad_on_the_compiled_loop_or_the_passes_routes_alike(monkeypatch,
                                                                        data_format):
    """Planes of 2**31 positions or more (int32 picks) go to the NumPy passes, which route
    every gradient as the compiled loop does, NaN and ties included; channels-first input
    is read as a channels-last copy."""
    rng, run = np.random.default_rng(6), make_runner("graph")
    x = rng.integers(-2, 3, (3, 10, 9, 8)).astype(np.float32)
    x.reshape(-1)[::13] = np.nan
    x = ref.from_cl(x, data_format)
    attrs = _attrs((3, 3), (2, 1), "SAME", None, data_format)
    y = run("MaxPool", input=x, **attrs)
    grad = rng.standard_normal(y.shape).astype(np.float32)
    compiled = run("MaxPoolGrad", orig_input=x, orig_output=y, grad=grad, **attrs)
    monkeypatch.setattr(pooling_kernels, "MAX_COMPILED_GRAD_PLANE", 10 * 9)
    passes = run("MaxPoolGrad", orig_input=x, orig_output=y, grad=grad, **attrs)
    _close(compiled, passes, np.float32)    # (overlapping windows: sums in another order)


@MODES
@SETTINGS
@given(case=pool_case(num_spatial=3), dtype=st.sampled_from([np.float32, np.float16]),
       seed=st.integers(0, 99))
def test_max_pool_3d_grads_match_the_reference(mode, case, dtype, seed):
    shape, ksize, strides, padding, _, data_format = case
    rng, run = np.random.default_rng(seed), make_runner(mode)
    x = _values(rng, shape, dtype)
    attrs = _attrs(ksize, strides, padding, None, data_format)
    x_in = ref.from_cl(x, data_format)
    y = run("MaxPool3D", input=x_in, **attrs)
    grad, gg = _values(rng, y.shape, dtype), _values(rng, x_in.shape, dtype)
    y_cl = ref.to_cl(y, data_format)
    dx = run("MaxPool3DGrad", orig_input=x_in, orig_output=y, grad=grad, **attrs)
    want = ref.max_pool_grad_ties(x, y_cl, ref.to_cl(grad, data_format), ksize, strides, padding)
    _close(ref.to_cl(dx, data_format), want, dtype)
    out = run("MaxPool3DGradGrad", orig_input=x_in, orig_output=y, grad=gg, **attrs)
    want = ref.max_pool_grad_grad(x, y_cl, ref.to_cl(gg, data_format), ksize, strides, padding)
    _close(ref.to_cl(out, data_format), want, dtype)


@MODES
@SETTINGS
@given(case=st.one_of(pool_case(), pool_case(num_spatial=3)), seed=st.integers(0, 99),
       dtype=st.sampled_from(FLOAT_TYPES))
def test_avg_pool_grads_match_the_reference(mode, case, seed, dtype):
    shape, ksize, strides, padding, _, data_format = case
    outs, _ = ref.geometry(shape[1:-1], ksize, strides, padding)
    grad = np.random.default_rng(seed).standard_normal([shape[0], *outs, shape[-1]])
    op = "AvgPoolGrad" if len(shape) == 4 else "AvgPool3DGrad"
    got = make_runner(mode)(op, orig_input_shape=np.int32(_nchw(shape, data_format)),
                            grad=ref.from_cl(grad.astype(dtype), data_format),
                            **_attrs(ksize, strides, padding, None, data_format))
    want = ref.avg_pool_grad(shape, grad.astype(dtype), ksize, strides, padding)
    _close(ref.to_cl(got, data_format), want, dtype)


def test_max_pool_grad_ignores_orig_output_and_grad_grad_follows_it(run):
    """TF recomputes MaxPoolGrad's argmax from orig_input, while MaxPoolGradGrad and
    MaxPool3DGrad match orig_output."""
    x = np.array([1, 3, 3, 0], np.float32).reshape(1, 2, 2, 1)
    fake = np.full([1, 1, 1, 1], 0.0, np.float32)
    attrs = {"ksize": [1, 2, 2, 1], "strides": [1, 2, 2, 1], "padding": "VALID"}
    dx = run("MaxPoolGrad", orig_input=x, orig_output=fake, grad=np.ones_like(fake), **attrs)
    assert dx.reshape(-1).tolist() == [0, 1, 0, 0]
    gg = np.arange(1, 5, dtype=np.float32).reshape(x.shape)
    out = run("MaxPoolGradGrad", orig_input=x, orig_output=fake, grad=gg, **attrs)
    assert out.reshape(-1).tolist() == [4]
    attrs3 = {"ksize": [1, 1, 2, 2, 1], "strides": [1, 1, 2, 2, 1], "padding": "VALID"}
    dx3 = run("MaxPool3DGrad", orig_input=x[None], orig_output=np.full([1, 1, 1, 1, 1], 3.0,
                                                                       np.float32),
              grad=np.ones([1, 1, 1, 1, 1], np.float32), **attrs3)
    assert dx3.reshape(-1).tolist() == [0, 1, 1, 0]


def test_max_pool_3d_grad_with_a_wider_gradient_type(run):
    x = np.random.default_rng(5).standard_normal([1, 2, 2, 2, 1]).astype(np.float16)
    attrs = {"ksize": [1, 2, 2, 2, 1], "strides": [1, 1, 1, 1, 1], "padding": "VALID"}
    y = run("MaxPool3D", input=x, **attrs)
    dx = run("MaxPool3DGrad", orig_input=x, orig_output=y, grad=np.ones(y.shape, np.float32),
             **attrs)
    assert dx.dtype == np.float32 and dx.sum() == 1 and dx.reshape(-1)[x.argmax()] == 1


# ----------------------------------------------------------------------------- static shapes


def _ph(shape, dtype=gp.float32):
    return gp.placeholder(dtype, shape)


def test_static_shapes():
    with gp.Graph().as_default():
        k, s = [1, 2, 2, 1], [1, 1, 1, 1]
        assert R.MaxPool(input=_ph([None, 4, None, 3]), ksize=k, strides=s,
                         padding="VALID").shape.as_list() == [None, 3, None, 3]
        assert R.MaxPool(input=_ph(None), ksize=k, strides=s,
                         padding="SAME").shape.as_list() == [None] * 4
        assert R.MaxPool(input=_ph([1, 4, 4, 4]), ksize=[1, 1, 1, 2], strides=[1, 1, 1, 2],
                         padding="VALID").shape.as_list() == [1, 4, 4, 2]
        assert R.MaxPool(input=_ph([1, 4, 5, 2]), ksize=k, strides=[1, 2, 2, 1],
                         padding="EXPLICIT", explicit_paddings=[0, 0, 1, 1, 0, 1, 0, 0]
                         ).shape.as_list() == [1, 3, 3, 2]
        assert R.AvgPool(value=_ph([2, 1, 5, 5]), ksize=[1, 1, 3, 3], strides=[1, 1, 2, 2],
                         padding="SAME", data_format="NCHW").shape.as_list() == [2, 1, 3, 3]
        assert R.MaxPool3D(input=_ph([1, 4, 4, 4, 2]), ksize=[1, 2, 2, 2, 1],
                           strides=[1, 2, 2, 2, 1], padding="VALID").shape.as_list() == \
            [1, 2, 2, 2, 2]
        ksize = gp.placeholder(gp.int32, [4])
        assert R.MaxPoolV2(input=_ph([1, 4, 4, 2]), ksize=ksize, strides=ksize,
                           padding="VALID").shape.rank is None
        assert R.MaxPoolV2(input=_ph([1, 4, 4, 2]), ksize=np.int32(k), strides=np.int32(s),
                           padding="VALID").shape.as_list() == [1, 3, 3, 2]
        out, argmax = R.MaxPoolWithArgmax(input=_ph([1, 4, 4, 2]), ksize=k,
                                          strides=[1, 2, 2, 1], padding="SAME")
        assert out.shape.as_list() == argmax.shape.as_list() == [1, 2, 2, 2]
        assert R.AvgPoolGrad(orig_input_shape=np.int32([1, 4, 4, 2]), grad=_ph(None), ksize=k,
                             strides=s, padding="SAME").shape.as_list() == [1, 4, 4, 2]
        assert R.AvgPoolGrad(orig_input_shape=gp.placeholder(gp.int32, [4]), grad=_ph(None),
                             ksize=k, strides=s, padding="SAME").shape.as_list() == [None] * 4
        assert R.MaxPoolGrad(orig_input=_ph([1, 4, 4, 2]), orig_output=_ph(None),
                             grad=_ph(None), ksize=k, strides=s,
                             padding="SAME").shape.as_list() == [1, 4, 4, 2]
        assert R.MaxPoolGradGrad(orig_input=_ph([1, 4, 4, 2]), orig_output=_ph(None),
                                 grad=_ph(None), ksize=k, strides=[1, 2, 2, 1],
                                 padding="SAME").shape.as_list() == [1, 2, 2, 2]


@pytest.mark.parametrize("a, b, want", [
    (1.0, 1.000009, [1.0, 1.0]),      # within 1e-5: both share the gradient
    (1.0, 1.000011, [0.0, 1.0]),
    (100.0, 100.0005, [0.0, 1.0]),    # the tolerance is absolute
    (0.0, 9e-6, [1.0, 1.0]),
    (-np.inf, -np.inf, [0.0, 0.0]),   # inf - inf is NaN: nothing routed
    (np.inf, 1.0, [0.0, 0.0]),
])
def test_max_pool_3d_grad_shares_near_ties_as_tf(run, a, b, want):
    """TF 2.21's CPU MaxPool3DGrad routes to every position within 1e-5 of the max."""
    x = np.array([a, b], np.float32).reshape(1, 1, 1, 2, 1)
    attrs = dict(ksize=[1, 1, 1, 2, 1], strides=[1, 1, 1, 2, 1], padding="VALID")
    y = run("MaxPool3D", input=x, **attrs)
    dx = run("MaxPool3DGrad", orig_input=x, orig_output=y, grad=np.ones_like(y), **attrs)
    np.testing.assert_array_equal(dx.ravel(), want)
