"""Robustness guarantees: memory bounds, hostile sizes, no silent data loss, errors that
point at the user's code, failed and cancelled runs, NaN/Inf without errors or warnings."""

import inspect
import threading
import time
import tracemalloc
import warnings

import ml_dtypes
import numpy as np
import pytest

import graphops as gp
from graphops.registry import OpKernel, errors, register_kernel, register_op

IAE, RE = errors.InvalidArgumentError, errors.ResourceExhaustedError
CPU = "/job:localhost/replica:0/task:0/device:CPU:0"
BUDGET = 16 * 2**20

register_op("RobustTestBlock").input("x: float").output("y: float")
BLOCK_STARTED, BLOCK_RELEASE = threading.Event(), threading.Event()


@register_kernel("RobustTestBlock", "CPU")
class BlockKernel(OpKernel):
    """Signals that it runs, then waits (at most 10 s) to be released."""

    def compute(self, ctx):
        BLOCK_STARTED.set()
        BLOCK_RELEASE.wait(10)
        ctx.set_output(0, ctx.input(0) + np.float32(1))


def line_after():
    """The line number just after the caller's line: where the next statement is."""
    return inspect.currentframe().f_back.f_lineno + 1


# ----------------------------------------------------------------------------- memory budget


def test_config_exposes_the_memory_budget():
    old = gp.config.get_memory_budget()
    with gp.config.memory_budget(2**20):
        assert gp.config.get_memory_budget() == 2**20
        gp.config.set_memory_budget(2**21)
        assert gp.config.get_memory_budget() == 2**21
    assert gp.config.get_memory_budget() == old
    with pytest.raises(ValueError, match="memory budget must be positive, got 0"):
        gp.config.set_memory_budget(0)
    with pytest.raises(TypeError):
        gp.config.set_memory_budget(1.5)
    assert gp.config.get_memory_budget() == old
    assert gp.config.list_physical_devices("CPU")[0].name == "/physical_device:CPU:0"


def test_budget_bounds_a_single_output_exactly():
    with gp.config.memory_budget(2**20):
        full = gp.raw_ops.Fill(dims=np.array([512, 512], np.int32), value=np.float32(2))
        np.testing.assert_array_equal(full, np.full((512, 512), 2, np.float32))   # exactly 1 MiB
        with pytest.raises(RE) as info:
            gp.raw_ops.Fill(dims=np.array([513, 512], np.int32), value=np.float32(2))
    assert ("OOM when allocating tensor with shape[513, 512] and type float32 for Fill: "
            "1050624 bytes exceed the memory budget of 1048576 bytes") in info.value.message


def _eager(op, **kw):
    return lambda: getattr(gp.raw_ops, op)(**kw)


def _ones(*shape):
    return np.ones(shape, np.float32)


def _i32(*values):
    return np.array(values, np.int32)


HOSTILE = [
    ("Fill dims overflowing int64", IAE, "would have more than 2**63 - 1 elements",
     _eager("Fill", dims=np.array([2**62, 2**62], np.int64), value=np.float32(1))),
    ("Fill dims absurd", RE, "OOM when allocating tensor with shape[2147483647, 2147483647]",
     _eager("Fill", dims=_i32(2**31 - 1, 2**31 - 1), value=np.float32(1))),
    ("Fill empty with overflowing dims", IAE, "Shape [0, 4611686018427387904, 4611686018427387904]"
     " cannot be represented", _eager("Fill", dims=np.array([0, 2**62, 2**62], np.int64),
                                      value=np.float32(1))),
    ("Fill dims negative", IAE, "Dimension -1 must be >= 0",
     _eager("Fill", dims=_i32(-1, 3), value=np.float32(1))),
    ("Reshape negative", IAE, "Size 0 must be non-negative, not -5",
     _eager("Reshape", tensor=_ones(6), shape=_i32(-5))),
    ("Reshape overflowing", IAE, f"but the requested shape has {2**124}",
     _eager("Reshape", tensor=_ones(0), shape=np.array([2**62, 2**62], np.int64))),
    ("Tile absurd", RE, "OOM when allocating tensor with shape[2199023255552, 2]",
     _eager("Tile", input=_ones(2, 2), multiples=np.array([2**40, 1], np.int64))),
    ("broadcast absurd", RE, "OOM when allocating tensor with shape[65536, 65536]",
     _eager("AddV2", x=_ones(2**16, 1), y=_ones(1, 2**16))),
    ("MatMul absurd", RE, "OOM when allocating tensor with shape[65536, 65536]",
     _eager("MatMul", a=_ones(2**16, 1), b=_ones(1, 2**16))),
    ("input_sizes absurd", RE, "OOM when allocating tensor with shape[1, 40000, 40000, 1]",
     _eager("Conv2DBackpropInput", input_sizes=_i32(1, 40000, 40000, 1), filter=_ones(1, 1, 1, 1),
            out_backprop=_ones(1, 1, 1, 1), strides=[1, 40000, 40000, 1], padding="VALID")),
    ("filter_sizes absurd", RE, "OOM when allocating tensor with shape[40000, 40000, 1, 1]",
     _eager("Conv2DBackpropFilter", input=_ones(1, 2, 2, 1), filter_sizes=_i32(40000, 40000, 1, 1),
            out_backprop=_ones(1, 2, 2, 1), strides=[1, 1, 1, 1], padding="SAME")),
    ("3-D filter_sizes absurd", RE, "OOM when allocating",
     _eager("Conv3DBackpropFilterV2", input=_ones(1, 2, 2, 2, 1),
            filter_sizes=_i32(2000, 2000, 2000, 1, 1), out_backprop=_ones(1, 2, 2, 2, 1),
            strides=[1] * 5, padding="SAME")),
    ("huge explicit padding", RE, "OOM when allocating",
     _eager("Conv2D", input=_ones(1, 2, 2, 1), filter=_ones(1, 1, 1, 1), strides=[1] * 4,
            padding="EXPLICIT", explicit_paddings=[0, 0, 2**40, 2**40, 0, 0, 0, 0])),
    ("huge SAME dilation", RE, "OOM when allocating the zero-padded input buffer",
     _eager("Conv2D", input=_ones(1, 2, 2, 1), filter=_ones(2, 2, 1, 1), strides=[1] * 4,
            dilations=[1, 2**40, 1, 1], padding="SAME")),
]


@pytest.mark.parametrize("error, text, call", [h[1:] for h in HOSTILE],
                         ids=[h[0] for h in HOSTILE])
def test_hostile_sizes_fail_typed_before_allocating(error, text, call):
    tracemalloc.start()
    try:
        with gp.config.memory_budget(BUDGET), pytest.raises(error) as info:
            call()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert type(info.value) is error and text in info.value.message
    assert peak < BUDGET            # refused before any large buffer was made


def test_hostile_sizes_in_graph_mode_fail_at_build_or_run():
    with gp.Graph().as_default() as g:
        with pytest.raises(IAE, match=r"Fill dimensions must be >= 0 for '\{\{node bad_fill\}\}"):
            gp.raw_ops.Fill(dims=gp.constant(_i32(-2, 3)), value=np.float32(1), name="bad_fill")
        dims = gp.placeholder(gp.int32, [None], name="dims")
        fill = gp.raw_ops.Fill(dims=dims, value=np.float32(1), name="fill")
    with gp.Session(graph=g) as sess, gp.config.memory_budget(BUDGET):
        with pytest.raises(RE, match=r"OOM when allocating tensor with shape\[4096, 4096\]"):
            sess.run(fill, {dims: [4096, 4096]})
        with pytest.raises(IAE, match="Dimension -3 must be >= 0"):
            sess.run(fill, {dims: [2, -3]})
        assert sess.run(fill, {dims: [2, 1]}).tolist() == [[1.0], [1.0]]


# ----------------------------------------------------------------------------- no silent loss


def test_complex_values_never_lose_their_imaginary_part():
    with gp.Graph().as_default():
        x = gp.placeholder(gp.float32, [1], name="x")
        y = x * 2.0
        for value in (1 + 2j, [np.complex128(1 + 1j)], np.array([1 + 0j])):
            with pytest.raises(TypeError, match="Expected float32, but got"):
                gp.constant(value, dtype=gp.float32)
        with pytest.raises(TypeError, match="Expected float32"):
            gp.raw_ops.AddV2(x=x, y=[np.complex64(1 + 2j)])
        with gp.Session() as sess, warnings.catch_warnings():
            warnings.simplefilter("error")
            for value in (np.array([1 + 2j]), [np.complex64(3j)], 1 + 2j):
                with pytest.raises(TypeError, match="Cannot feed a complex value to Tensor "
                                                    "'x:0' of dtype float32"):
                    sess.run(y, {x: value})
            assert sess.run(y, {x: [1.5]}).tolist() == [3.0]
        c = gp.constant([np.complex64(1 + 2j)], dtype=gp.complex64)
        assert c.dtype == gp.complex64
    with pytest.raises(TypeError, match="Expected float32"):
        gp.raw_ops.AddV2(x=np.float32([1]), y=[np.complex128(2j)])


# ----------------------------------------------------------------------------- error sites


def build_failing_conv():
    """A conv gradient whose shapes only the kernel sees (the node is created in here)."""
    x = gp.placeholder(gp.float32, name="x")
    dy = gp.placeholder(gp.float32, name="dy")
    line = line_after()
    dw = gp.raw_ops.Conv2DBackpropFilter(input=x, filter_sizes=[3, 3, 2, 4], out_backprop=dy,
                                         strides=[1, 1, 1, 1], padding="VALID", name="dw")
    return x, dy, dw, line


def test_runtime_error_names_node_device_inputs_and_creation_site():
    with gp.Graph().as_default() as g:
        outer = line_after()
        x, dy, dw, inner = build_failing_conv()
    with gp.Session(graph=g) as sess:
        with pytest.raises(IAE) as info:
            sess.run(dw, {x: np.ones((1, 5, 5, 2), np.float32),
                          dy: np.ones((1, 4, 4, 4), np.float32)})
        err = info.value
        assert err.op is dw.op and err.node_def["name"] == "dw"
        message = err.message
        assert message.startswith("Graph execution error:\n\nDetected at node 'dw' defined at "
                                  "(most recent call last):\n")
        site = message[:message.index("Node: ")]
        assert site.index(f"{__file__}:{outer}") < site.index(f"{__file__}:{inner}")
        assert f"Node: 'dw' (op: Conv2DBackpropFilter, device: {CPU})\n" in message
        assert "Inputs: [float32[1,5,5,2], int32[4], float32[1,4,4,4]]\n" in message
        assert ("Conv2DCustomBackpropFilter: Size of out_backprop doesn't match computed: "
                "actual = 4, computed = 3 spatial_dim: 1 input: 5 filter: 3 output: 4 stride: 1 "
                "dilation: 1\n\t [[{{node dw}}]]") in message
        ok = sess.run(dw, {x: np.ones((1, 5, 5, 2), np.float32),
                           dy: np.ones((1, 3, 3, 4), np.float32)})
        assert ok.shape == (3, 3, 2, 4) and np.all(ok == 9)


def test_build_error_names_the_node_and_its_input_shapes():
    with gp.Graph().as_default():
        x = gp.placeholder(gp.float32, [1, 5, 5, 2])
        with pytest.raises(IAE) as info:
            gp.raw_ops.Conv2D(input=x, filter=np.ones((3, 3, 3, 4), np.float32),
                              strides=[1, 1, 1, 1], padding="VALID", name="conv")
    assert type(info.value) is IAE and info.value.op is None
    assert info.value.message.startswith(
        "Depth of input (2) is not a multiple of input depth of filter (3) for "
        "'{{node conv}} = Conv2D[")
    assert info.value.message.endswith("with input shapes: [1,5,5,2], [3,3,3,4].")


def test_eager_error_names_op_and_inputs():
    with pytest.raises(IAE) as info:
        gp.raw_ops.Reshape(tensor=np.ones((2, 3), np.float32), shape=_i32(5), name="r")
    assert info.value.message == (
        f"Eager execution error:\n\nNode: 'r' (op: Reshape, device: {CPU})\n"
        "Inputs: [float32[2,3], int32[1]]\nInput to reshape is a tensor with 6 values, but the "
        "requested shape has 5 [Op:Reshape] name: r")


# ----------------------------------------------------------------------------- failed runs


def test_failed_run_keeps_session_usable_and_skips_ops_after_the_failure():
    with gp.Graph().as_default() as g:
        v = gp.Variable(np.float32(1), name="v")
        shape = gp.placeholder(gp.int32, [None], name="shape")
        first = v.assign_add(np.float32(1), read_value=False)
        with gp.control_dependencies([first]):
            bad = gp.raw_ops.Reshape(tensor=gp.constant(np.zeros(6, np.float32)), shape=shape)
        with gp.control_dependencies([bad]):
            later = v.assign_add(np.float32(10), read_value=False)
        init = gp.global_variables_initializer()
    with gp.Session(graph=g) as sess:
        sess.run(init)
        with pytest.raises(IAE, match="Input to reshape is a tensor with 6 values"):
            sess.run(later, {shape: [5]})
        assert sess.run(v) == 2          # `first` ran before the failure, `later` never did
        with pytest.raises(IAE):
            sess.run([later, bad], {shape: [7]})
        assert sess.run(v) == 3
        sess.run(later, {shape: [2, 3]})
        assert sess.run(v) == 14


# ----------------------------------------------------------------------------- closing


def _close_during_run(block_is_last):
    """Starts a run blocked in RobustTestBlock, closes from another thread, releases the
    block; returns (what the run ended in, whether close waited, the session)."""
    BLOCK_STARTED.clear()
    BLOCK_RELEASE.clear()
    with gp.Graph().as_default() as g:
        x = gp.placeholder(gp.float32, [], name="x")
        y = gp.raw_ops.RobustTestBlock(x=x)
        if not block_is_last:
            y = y * 2.0
    sess = gp.Session(graph=g)
    outcome = []

    def runner():
        try:
            outcome.append(sess.run(y, {x: 1.0}))
        except Exception as e:  # noqa: BLE001 - reported to the test
            outcome.append(e)

    run_thread = threading.Thread(target=runner)
    run_thread.start()
    assert BLOCK_STARTED.wait(10)
    close_thread = threading.Thread(target=sess.close)
    close_thread.start()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:        # new runs are refused as soon as close starts
        try:
            sess.run(x, {x: 1.0})
        except RuntimeError as e:
            assert str(e) == "Attempted to use a closed Session."
            break
    waited = close_thread.is_alive()          # close waits for the run in flight
    BLOCK_RELEASE.set()
    run_thread.join(10)
    close_thread.join(10)
    assert not run_thread.is_alive() and not close_thread.is_alive()
    return outcome[0], waited, sess


def test_close_cancels_a_run_in_flight_before_its_next_step():
    outcome, waited, sess = _close_during_run(block_is_last=False)
    assert waited
    assert type(outcome) is errors.CancelledError
    assert outcome.message == "The Session was closed while this run was in progress."
    with pytest.raises(RuntimeError, match="^Attempted to use a closed Session.$"):
        sess.run(sess.graph.get_operations()[-1].outputs[0], {"x:0": 1.0})


def test_a_run_in_its_last_step_when_closed_finishes():
    outcome, waited, sess = _close_during_run(block_is_last=True)
    assert waited and outcome == 2.0
    sess.close()                              # closing twice is fine


# ----------------------------------------------------------------------------- NaN and Inf

SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 2.5, 1e30, -1e30])
UNARY = {"Neg": np.negative, "Square": np.square, "Sqrt": np.sqrt,
         "Rsqrt": lambda v: 1 / np.sqrt(v), "Exp": np.exp, "Log": np.log, "Tanh": np.tanh,
         "Sigmoid": lambda v: 1 / (1 + np.exp(-v))}
BINARY = {"AddV2": np.add, "Sub": np.subtract, "Mul": np.multiply, "RealDiv": np.divide,
          "Maximum": np.maximum, "Minimum": np.minimum}
DTYPES = [np.float64, np.float32, np.float16, ml_dtypes.bfloat16]


def _assert_ieee_equal(got, expected, dtype):
    with np.errstate(over="ignore"):
        expected = expected.astype(dtype).astype(np.float64)      # rounded like the kernel
    got = got.astype(np.float64)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    finite = np.isfinite(expected)
    np.testing.assert_array_equal(got[np.isinf(expected)], expected[np.isinf(expected)])
    tol = 1e-2 if np.dtype(dtype).itemsize == 2 else 1e-6
    np.testing.assert_allclose(got[finite], expected[finite], rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_nan_and_inf_follow_ieee_without_errors_or_warnings(dtype):
    with np.errstate(over="ignore"):
        x = SPECIAL.astype(dtype)              # 1e30 is inf in 16 bits
    a, b = np.meshgrid(x, x)
    exact = [v.astype(np.float64) for v in (x, a, b)]    # the inputs as the kernel sees them
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for op, fn in UNARY.items():
            with np.errstate(all="ignore"):
                expected = fn(exact[0])
            _assert_ieee_equal(getattr(gp.raw_ops, op)(x=x), expected, dtype)
        for op, fn in BINARY.items():
            with np.errstate(all="ignore"):
                expected = fn(exact[1], exact[2])
            _assert_ieee_equal(getattr(gp.raw_ops, op)(x=a, y=b), expected, dtype)
        soft = gp.raw_ops.Softmax(logits=np.array([[0, np.inf], [1, np.nan], [1, 2]], dtype))
        assert np.isnan(soft[0]).all() and np.isnan(soft[1]).all() and np.isfinite(soft[2]).all()
        total = gp.raw_ops.Sum(input=x, axis=_i32(0))
        mean = gp.raw_ops.Mean(input=np.zeros((0,), dtype), axis=_i32(0))
        assert np.isnan(total) and np.isnan(mean)
        gp.raw_ops.Cast(x=x, DstT=gp.int32)          # value unspecified (C++), but no error


def test_nan_and_inf_in_a_session_and_in_conv_threads_raise_no_warning():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 40, 40, 32)).astype(np.float32)
    x[0, 3, 3, 3], x[1, 5, 5, 5] = np.inf, np.nan
    w = rng.standard_normal((3, 3, 32, 2)).astype(np.float32)
    w[0, 0, 0, 0] = -np.inf
    with gp.Graph().as_default() as g:
        xs = gp.placeholder(gp.float32, [None, None, None, 32])
        y = gp.raw_ops.DepthwiseConv2dNative(input=xs, filter=w, strides=[1] * 4, padding="SAME")
        z = gp.raw_ops.Log(x=gp.raw_ops.Neg(x=gp.raw_ops.Square(x=y)))
        c = gp.raw_ops.Conv2D(input=xs, filter=np.full((1, 1, 32, 1), np.inf, np.float32),
                              strides=[1] * 4, padding="VALID")
    with warnings.catch_warnings(), gp.Session(graph=g) as sess:
        warnings.simplefilter("error")
        got_y, got_z, got_c = sess.run([y, z, c], {xs: x})
    assert np.isnan(got_c).all()                   # +inf and -inf terms in every sum
    assert np.isinf(got_y[0, 3, 3, 6]) and np.isnan(got_y[1, 5, 5, 10])
    finite = np.isfinite(got_y)
    assert finite.mean() > 0.95
    assert np.all(np.isnan(got_z[got_y != 0]))     # log of a negative number


def test_constant_conversion_overflow_is_inf_without_warnings():
    import warnings
    g = gp.Graph()
    with g.as_default(), warnings.catch_warnings():
        warnings.simplefilter("error")
        x = gp.placeholder(gp.float16, [2])
        y = x - np.array([1e10, 2.0])
    with gp.Session(graph=g) as sess:
        assert sess.run(y, {x: np.ones(2, np.float16)}).tolist() == [-np.inf, -1.0]
