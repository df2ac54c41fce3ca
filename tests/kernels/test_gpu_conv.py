"""The 13 conv ops on the GPU (simulated always, real CUDA when present) against the CPU.

Every graph is run pinned to '/GPU:0' and to '/CPU:0'; the CPU result is the reference,
and every result is also checked against the slow float64 references. Placement is read
from the session's log_device_placement output, copies from the simulated device's
TransferCounter (None on a real GPU, where those checks are skipped).
"""

import contextlib
import io

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import graphops as gp
from graphops.runtime import devices
from graphops.kernels.conv_algorithms import layout as conv_layout
from graphops.kernels.conv_algorithms.dense import (conv_backprop_filter, conv_backprop_input,
                                                    conv_forward)
from graphops.kernels.conv_algorithms.depthwise import (depthwise_backprop_filter,
                                                        depthwise_backprop_input,
                                                        depthwise_forward)
from graphops.registry import errors, memory
from graphops.registry.conv_shapes import CONV_OPS
from tests.reference_conv import (conv_backprop_filter_ref, conv_backprop_input_ref,
                                  conv_forward_ref, output_size)
from tests.reference_depthwise import (depthwise_backprop_filter_ref,
                                       depthwise_backprop_input_ref, depthwise_forward_ref)
from tests import placement_log
from tests.placement_log import CPU_NAME as CPU_DEVICE, GPU_NAME as GPU_DEVICE
from tests.kernels.test_conv_ops import cases, op_kwargs

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

GPU_TYPES = ("float16", "float32", "float64", "int32")
# GPU vs CPU, relative to max(1, |CPU result|): both sum in float32/float64 but in other
# orders; half results may then round one ulp apart.
GPU_RTOL = {"float64": 1e-12, "float32": 1e-5, "float16": 2e-3, "int32": 0}
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[
    HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture])


def run_op(op, arrays, attrs, device, allow_soft_placement=True):
    """Runs ``op`` (node 'conv') on placeholders fed with ``arrays``, pinned to ``device``.
    Returns (NumPy result, placement log)."""
    log = io.StringIO()
    with gp.Graph().as_default():
        inputs = [gp.placeholder(a.dtype, a.shape) for a in arrays]
        with gp.device(device):
            y = getattr(gp.raw_ops, op)(**op_kwargs(op, inputs), **attrs, name="conv")
        with contextlib.redirect_stderr(log), gp.Session(
                log_device_placement=True, allow_soft_placement=allow_soft_placement) as sess:
            value = sess.run(y, dict(zip(inputs, arrays)))
    return value, log.getvalue()


def placed_on(log, op):
    """The device the log says node 'conv' (of type ``op``) ran on."""
    op_type, device = placement_log.parse(log)["conv"]
    assert op_type == op
    return device


def check_on_gpu(case, counter):
    """Runs ``case`` on GPU and CPU: placement, copies, GPU == CPU, GPU == reference."""
    if counter is not None:
        counter.reset()
    got, log = run_op(case.op, case.arrays, case.attrs, "/GPU:0")
    assert placed_on(log, case.op) == GPU_DEVICE
    if counter is not None:   # every tensor input copied in once, sizes vectors never
        tensors = len(case.arrays) - (CONV_OPS[case.op].sizes_input >= 0)
        assert (counter.to_device, counter.to_host) == (tensors, 1)
    want, log = run_op(case.op, case.arrays, case.attrs, "/CPU:0")
    assert placed_on(log, case.op) == CPU_DEVICE
    assert got.dtype == want.dtype and got.shape == want.shape
    tol = GPU_RTOL[got.dtype.name] * max(1.0, float(np.abs(want.astype(np.float64)).max(
        initial=0)))
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=0,
                               atol=tol)
    case.check(got)


# ----------------------------------------------------------------------------- values


@SETTINGS
@given(case=cases(ops=("Conv2D", "Conv2DBackpropInput", "Conv2DBackpropInputV2",
                       "Conv2DBackpropFilter", "Conv2DBackpropFilterV2"), dtypes_=GPU_TYPES))
def test_conv2d_family_on_gpu_matches_cpu(gpu, case):
    check_on_gpu(case, gpu)


@SETTINGS
@given(case=cases(ops=("Conv3D", "Conv3DBackpropInput", "Conv3DBackpropInputV2",
                       "Conv3DBackpropFilter", "Conv3DBackpropFilterV2"), dtypes_=GPU_TYPES))
def test_conv3d_family_on_gpu_matches_cpu(gpu, case):
    check_on_gpu(case, gpu)


@SETTINGS
@given(case=cases(ops=("DepthwiseConv2dNative", "DepthwiseConv2dNativeBackpropInput",
                       "DepthwiseConv2dNativeBackpropFilter"), dtypes_=GPU_TYPES))
def test_depthwise_family_on_gpu_matches_cpu(gpu, case):
    check_on_gpu(case, gpu)


@st.composite
def geometries(draw, rank):
    """(strides, dilations, pads, spatial sizes, kernel) of a small random conv."""
    dims = [(draw(st.integers(1, 3)), draw(st.integers(1, 2)),
             (draw(st.integers(0, 2)), draw(st.integers(0, 2))), draw(st.integers(1, 6)),
             draw(st.integers(1, 3))) for _ in range(rank)]
    return tuple(tuple(d[i] for d in dims) for i in range(5))


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), depthwise=st.booleans(), channels_last=st.booleans(),
       budget=st.sampled_from([1, 300, 4000]))
def test_device_math_in_small_chunks_matches_reference(gpu, monkeypatch, data, depthwise,
                                                       channels_last, budget):
    """The math on device arrays, with chunk budgets that split every op into many
    blocks (down to single output positions): results stay device arrays and exact."""
    monkeypatch.setattr(conv_layout, "GPU_CHUNK_BYTES", budget)
    xp = devices.get_device_type("GPU").xp
    rank = 2 if depthwise else data.draw(st.integers(1, 3))
    strides, dilations, pads, spatial, kernel = data.draw(geometries(rank))
    out_sp = tuple(output_size(*args) for args in zip(spatial, kernel, strides, dilations,
                                                      *zip(*pads)))
    c, o = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    layout = (lambda s, ch: (2, *s, ch)) if channels_last else (lambda s, ch: (2, ch, *s))
    x = rng.standard_normal(layout(spatial, c))
    w = rng.standard_normal((*kernel, c, o))
    dy = rng.standard_normal(layout(out_sp, c * o if depthwise else o))
    geo = (strides, dilations, pads)
    funcs = ((depthwise_forward, depthwise_backprop_input, depthwise_backprop_filter)
             if depthwise else (conv_forward, conv_backprop_input, conv_backprop_filter))
    refs = ((depthwise_forward_ref, depthwise_backprop_input_ref, depthwise_backprop_filter_ref)
            if depthwise else (conv_forward_ref, conv_backprop_input_ref,
                               conv_backprop_filter_ref))
    dx_, dw_, ddy = (xp.asarray(a) for a in (x, w, dy))
    results = [funcs[0](dx_, dw_, *geo, channels_last, xp=xp),
               funcs[1](ddy, dw_, x.shape, *geo, channels_last, xp=xp),
               funcs[2](dx_, ddy, w.shape, *geo, channels_last, xp=xp)]
    expected = [refs[0](x, w, *geo, channels_last), refs[1](dy, w, x.shape, *geo, channels_last),
                refs[2](x, dy, w.shape, *geo, channels_last)]
    for got, want in zip(results, expected):
        assert isinstance(got, xp.ndarray) and got.dtype == np.float64
        np.testing.assert_allclose(got.get(), want, rtol=0, atol=1e-10 * max(
            1.0, np.abs(want).max(initial=0)))


@pytest.mark.parametrize("depthwise", [False, True])
@pytest.mark.parametrize("channels_last", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_filter_gradient_where_the_output_is_taller_than_the_input(gpu, depthwise,
                                                                   channels_last, dtype):
    """A 1-row input padded (1, 2) under a 3-row filter gives a 2-row output, and the
    filter gradient's first row is the sum over the second output row alone. Two of the
    first plans cuDNN 9.19's heuristics offer for it return other numbers (seen on an
    H200); the plan kept agrees with the own kernels, so the result is the reference's."""
    xp = devices.get_device_type("GPU").xp
    rng = np.random.default_rng(0)
    c, o = 2, 1 if depthwise else 3
    out_c = c * o if depthwise else o
    x = rng.standard_normal((2, 1, 4, c) if channels_last else (2, c, 1, 4)).astype(dtype)
    dy = rng.standard_normal((2, 2, 3, out_c) if channels_last else (2, out_c, 2, 3))
    dy = dy.astype(dtype)
    geo = ((1, 1), (1, 1), ((1, 2), (0, 0)))
    op, ref = ((depthwise_backprop_filter, depthwise_backprop_filter_ref) if depthwise
               else (conv_backprop_filter, conv_backprop_filter_ref))
    got = op(xp.asarray(x), xp.asarray(dy), (3, 2, c, o), *geo, channels_last, xp=xp)
    want = ref(x.astype(np.float64), dy.astype(np.float64), (3, 2, c, o), *geo, channels_last)
    assert np.abs(want[0]).max() > 0
    np.testing.assert_allclose(got.get(), want, rtol=0, atol=1e-5 * np.abs(want).max())


@pytest.mark.parametrize("op, arrays, attrs", [
    ("Conv2D", [np.zeros((0, 5, 5, 2), np.float32), np.ones((3, 3, 2, 4), np.float32)],
     {"padding": "SAME"}),
    ("Conv3DBackpropFilterV2", [np.ones((1, 2, 3, 3, 2), np.float16),
                                np.array([2, 2, 2, 2, 0], np.int32),
                                np.ones((1, 1, 2, 2, 0), np.float16)], {"padding": "VALID"}),
    ("DepthwiseConv2dNativeBackpropInput", [np.array([1, 4, 0, 3], np.int32),
                                            np.ones((2, 2, 3, 1), np.float64),
                                            np.ones((1, 4, 0, 3), np.float64)],
     {"padding": "SAME"}),
])
def test_empty_results_are_zeros_on_gpu(gpu, op, arrays, attrs):
    strides = [1] * (5 if op.startswith("Conv3D") else 4)
    got, log = run_op(op, arrays, dict(attrs, strides=strides), "/GPU:0")
    want, _ = run_op(op, arrays, dict(attrs, strides=strides), "/CPU:0")
    assert placed_on(log, op) == GPU_DEVICE
    assert got.dtype == want.dtype and got.shape == want.shape and not got.any()


# ----------------------------------------------------------------------------- placement


def _conv2d_arrays(dtype):
    rng = np.random.default_rng(7)
    return [rng.standard_normal((1, 5, 5, 2)).astype(dtype),
            rng.standard_normal((3, 3, 2, 3)).astype(dtype)]


CONV2D_ATTRS = {"strides": [1, 1, 1, 1], "padding": "SAME"}


def test_unpinned_convs_go_to_the_gpu(gpu):
    with gp.Graph().as_default():
        x = gp.placeholder(gp.float32, [1, 5, 5, 2])
        w = gp.placeholder(gp.float32, [3, 3, 2, 3])
        y = gp.raw_ops.Conv2D(input=x, filter=w, **CONV2D_ATTRS, name="y")
        dx = gp.raw_ops.Conv2DBackpropInput(input_sizes=[1, 5, 5, 2], filter=w,
                                            out_backprop=y, **CONV2D_ATTRS, name="dx")
        dw = gp.raw_ops.Conv2DBackpropFilter(input=x, filter_sizes=[3, 3, 2, 3],
                                             out_backprop=y, **CONV2D_ATTRS, name="dw")
        log = io.StringIO()
        with contextlib.redirect_stderr(log), gp.Session(log_device_placement=True) as sess:
            values = sess.run([y, dx, dw], dict(zip((x, w), _conv2d_arrays(np.float32))))
    lines = log.getvalue().splitlines()
    for name, op in (("y", "Conv2D"), ("dx", "Conv2DBackpropInput"),
                     ("dw", "Conv2DBackpropFilter")):
        assert f"{name}: ({op}): {GPU_DEVICE}" in lines
    assert all(type(v) is np.ndarray and v.dtype == np.float32 for v in values)


def test_bfloat16_conv_pinned_to_gpu_soft_places_to_cpu(gpu):
    arrays = _conv2d_arrays(gp.bfloat16.as_numpy_dtype)
    got, log = run_op("Conv2D", arrays, CONV2D_ATTRS, "/GPU:0")
    assert log.splitlines()[-1] == (f"conv: (Conv2D): {CPU_DEVICE} (soft placement: "
                                    "'/device:GPU:0' could not be used)")
    want, _ = run_op("Conv2D", arrays, CONV2D_ATTRS, "/CPU:0")
    np.testing.assert_array_equal(got.astype(np.float32), want.astype(np.float32))
    with pytest.raises(errors.InvalidArgumentError) as info:
        run_op("Conv2D", arrays, CONV2D_ATTRS, "/GPU:0", allow_soft_placement=False)
    assert info.value.op.name == "conv"
    assert info.value.message.startswith(
        "Cannot assign a device for operation conv: Could not satisfy explicit device "
        "specification '/device:GPU:0' because no supported kernel for GPU devices is "
        "available.\nRegistered kernels:\n")
    assert "device='GPU'; T in [DT_HALF, DT_FLOAT, DT_DOUBLE, DT_INT32]" in info.value.message


# ----------------------------------------------------------------------------- errors


@pytest.mark.parametrize("op, arrays, error, message", [
    ("Conv2D", [np.ones((1, 4, 4, 4), np.float32), np.ones((2, 2, 3, 2), np.float32)],
     errors.InvalidArgumentError, "input depth must be evenly divisible by filter depth: 4 vs 3"),
    ("Conv2DBackpropInput", [np.array([1, 4, 4], np.int32), np.ones((2, 2, 3, 2), np.float32),
                             np.ones((1, 4, 4, 2), np.float32)], errors.InvalidArgumentError,
     "Conv2DBackpropInput requires input_sizes to contain 4 values or 2 values, but got: 3"),
    ("Conv3DBackpropInputV2", [np.ones((2, 5), np.int32), np.ones((1, 1, 1, 2, 2)),
                               np.ones((1, 2, 2, 2, 2))],
     errors.InvalidArgumentError, "shape must be a vector of {int32,int64}, got shape [2,5]"),
    ("DepthwiseConv2dNativeBackpropFilter", [np.ones((1, 4, 4, 2), np.float16),
                                             np.array([2, -2, 2, 1], np.int32),
                                             np.ones((1, 4, 4, 2), np.float16)],
     errors.InvalidArgumentError, "Dimension 1 of filter_sizes must be >= 0"),
    ("DepthwiseConv2dNative", [np.ones((1, 4, 4, 3), np.float32),
                               np.ones((2, 2, 2, 1), np.float32)],
     errors.InvalidArgumentError, "input and filter must have the same depth: 3 vs 2"),
    ("Conv2D", [np.ones((1, 64, 64, 2), np.float32), np.ones((3, 3, 2, 1), np.float32)],
     errors.ResourceExhaustedError, "OOM when allocating the zero-padded input buffer of shape "
     "[1, 66, 66, 2] and type float32 for node conv: 34848 bytes exceed the memory budget of "
     "20000 bytes"),
])
def test_validation_errors_are_the_same_on_gpu_and_cpu(gpu, op, arrays, error, message):
    attrs = {"strides": [1] * (5 if op.startswith("Conv3D") else 4), "padding": "SAME"}
    caught = {}
    old_budget = memory.get_memory_budget()
    memory.set_memory_budget(20000)     # only the last case comes near it
    try:
        for device in ("/GPU:0", "/CPU:0"):
            with gp.Graph().as_default():
                inputs = [gp.placeholder(a.dtype) for a in arrays]   # unknown shapes
                with gp.device(device):
                    y = getattr(gp.raw_ops, op)(**op_kwargs(op, inputs), **attrs, name="conv")
                with gp.Session() as sess, pytest.raises(errors.OpError) as info:
                    sess.run(y, dict(zip(inputs, arrays)))
            caught[device] = info.value
    finally:
        memory.set_memory_budget(old_budget)
    on_gpu, on_cpu = caught["/GPU:0"], caught["/CPU:0"]
    assert type(on_gpu) is type(on_cpu) is error
    assert f"(op: {op}, device: {GPU_DEVICE})" in on_gpu.message
    assert on_gpu.message.replace(GPU_DEVICE, CPU_DEVICE) == on_cpu.message
    assert f"\n{message}\n" in on_gpu.message
