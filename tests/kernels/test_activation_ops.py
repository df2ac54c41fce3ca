"""The activations, their gradient ops, LogSoftmax and the bias ops (BiasAddV1, BiasAddGrad):
values against a slow per-element float64 reference, TF's special values and messages,
static shapes, gradients (the ops TF's gradients build, and central differences) and the
GPU kernels. `tests/test_activation_tf_oracle.py` compares with TensorFlow itself."""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import graphops as gp
from graphops.kernels.support.kernel_util import COMPILED_MIN_SIZE, PARALLEL_MIN_SIZE
from graphops.registry import dtypes, get_op_def
from tests.gpu_compare import compare
from tests.op_runners import invalid

SETTINGS = settings(max_examples=15, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])
SCALE, SCALE_ALPHA = 1.0507009873554804934193349852946, 1.7580993408473768599402175208123
FLOATS = ("float16", "bfloat16", "float32", "float64")
ALPHA = 0.3

# ----------------------------------------------------------------------------- the reference
# One float64 number at a time, by the textbook formula (NaN and inf as IEEE has them).


def _softplus(x):
    return np.maximum(x, 0.0) + np.log1p(np.exp(-np.abs(x)))


UNARY = {   # op: f(x)
    "Relu6": lambda x: x if np.isnan(x) else min(max(x, 0.0), 6.0),
    "Elu": lambda x: np.exp(x) - 1 if x < 0 else x,
    "Selu": lambda x: SCALE_ALPHA * (np.exp(x) - 1) if x < 0 else SCALE * x,
    "LeakyRelu": lambda x: x if x > 0 else x * float(np.float32(ALPHA)),
    "Softplus": _softplus,
    "Softsign": lambda x: x / (np.abs(x) + 1),
}
BINARY = {  # op: (name of the second input, f(gradient, second input))
    "ReluGrad": ("features", lambda g, x: g * (1.0 if x > 0 else 0.0)),   # a product, as TF's
    "Relu6Grad": ("features", lambda g, x: g * (1.0 if 0 < x < 6 else 0.0)),
    "EluGrad": ("outputs", lambda g, y: g * (y + 1) if y < 0 else g),
    "SeluGrad": ("outputs", lambda g, y: g * (y + SCALE_ALPHA) if y < 0 else g * SCALE),
    "LeakyReluGrad": ("features", lambda g, x: g if x > 0 else g * float(np.float32(ALPHA))),
    "SoftplusGrad": ("features", lambda g, x: g / (1 + np.exp(-x))),
    "SoftsignGrad": ("features", lambda g, x: g / (1 + np.abs(x)) ** 2),
}
ATTRS = {"LeakyRelu": {"alpha": ALPHA}, "LeakyReluGrad": {"alpha": ALPHA}}


def _elementwise(f, *arrays):
    flat = [np.asarray(a, np.float64).ravel() for a in arrays]
    with np.errstate(all="ignore"):
        out = [f(*(np.float64(a[i]) for a in flat)) for i in range(flat[0].size)]
    return np.array(out, np.float64).reshape(np.shape(arrays[0]))


def log_softmax_ref(x):
    x = np.asarray(x, np.float64)
    rows = x.reshape(-1, x.shape[-1])
    out = np.empty_like(rows)
    for i, row in enumerate(rows):
        m = max(row)
        out[i] = [v - m - math.log(sum(math.exp(u - m) for u in row)) for v in row]
    return out.reshape(x.shape)


def tolerance(op, dtype):
    if dtype == "bfloat16":     # TF's bfloat16 softplus switches to exp(x) below -2.85
        return 5e-2 if op == "Softplus" else 1.6e-2
    return {"float16": 2e-3, "float32": 2e-6, "float64": 1e-12}[dtype]


def assert_close(got, want, op, dtype):
    assert got.dtype == dtypes.as_dtype(dtype).np_dtype
    tol = tolerance(op, dtype)
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=tol, atol=tol,
                               equal_nan=True)


def _values(draw, dtype, shape, scale=8.0):
    data = draw(st.lists(st.floats(-scale, scale, width=32), min_size=math.prod(shape),
                         max_size=math.prod(shape)))
    return np.array(data, np.float64).reshape(shape).astype(dtypes.as_dtype(dtype).np_dtype)


SHAPES = st.lists(st.integers(0, 4), min_size=0, max_size=3).map(tuple)


@SETTINGS
@given(op=st.sampled_from(sorted(UNARY)), dtype=st.sampled_from(FLOATS), shape=SHAPES,
       data=st.data())
def test_activations_match_the_reference(run, op, dtype, shape, data):
    x = _values(data.draw, dtype, shape)
    got = run(op, features=x, **ATTRS.get(op, {}))
    assert_close(got, _elementwise(UNARY[op], x), op, dtype)


@SETTINGS
@given(op=st.sampled_from(sorted(BINARY)), dtype=st.sampled_from(FLOATS), shape=SHAPES,
       data=st.data())
def test_gradient_ops_match_the_reference(run, op, dtype, shape, data):
    second, f = BINARY[op]
    g, x = _values(data.draw, dtype, shape), _values(data.draw, dtype, shape)
    got = run(op, gradients=g, **{second: x}, **ATTRS.get(op, {}))
    assert_close(got, _elementwise(f, g, x), op, dtype)


SPECIAL = np.array([np.nan, -np.inf, np.inf, -40, -1e-3, -0.0, 0.0, 1e-3, 5.99, 6, 6.01,
                    13.9, 14, 40, 1e4])


@pytest.mark.parametrize("op", sorted(UNARY))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_special_values(run, op, dtype):
    """NaN stays NaN (Relu6 too, as TF's), infinities and the thresholds as TF has them."""
    x = SPECIAL.astype(dtype)
    assert_close(run(op, features=x, **ATTRS.get(op, {})), _elementwise(UNARY[op], x), op,
                 dtype)


@pytest.mark.parametrize("op", sorted(BINARY))
def test_gradient_ops_special_values(run, op):
    second, f = BINARY[op]
    x = SPECIAL.astype(np.float64)
    g = np.linspace(-2, 3, x.size)
    assert_close(run(op, gradients=g, **{second: x}, **ATTRS.get(op, {})),
                 _elementwise(f, g, x), op, "float64")


def test_softplus_switches_formula_at_tf_thresholds(run):
    """log(eps) + 2: x itself above -threshold, exp(x) below threshold (TF's softplus_op.h);
    float16 uses float32's threshold (TF computes it in float32), bfloat16 its own."""
    for dtype, threshold in (("float32", math.log(2.0 ** -23) + 2),
                             ("float64", math.log(2.0 ** -52) + 2),
                             ("float16", math.log(2.0 ** -23) + 2),
                             ("bfloat16", math.log(2.0 ** -7) + 2)):
        np_type = dtypes.as_dtype(dtype).np_dtype
        above = np.array([-threshold + 0.5], np_type)
        below = np.array([threshold - 0.5], np_type)
        assert run("Softplus", features=above)[0] == above[0], dtype
        want = np.exp(below.astype(np.float64)).astype(np_type)
        assert run("Softplus", features=below)[0] == want[0], dtype


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "int64", "uint16"])
def test_relu6_and_relu_grads_on_integers(run, dtype):
    info = np.iinfo(dtype)
    x = np.array([info.min, -1, 0, 1, 5, 6, 7, info.max], np.int64).clip(info.min, info.max)
    x = x.astype(dtype)
    g = np.arange(1, x.size + 1).astype(dtype)
    np.testing.assert_array_equal(run("Relu6", features=x), np.clip(x, 0, 6).astype(dtype))
    np.testing.assert_array_equal(run("ReluGrad", gradients=g, features=x),
                                  np.where(x > 0, g, 0).astype(dtype))
    np.testing.assert_array_equal(run("Relu6Grad", gradients=g, features=x),
                                  np.where((x > 0) & (x < 6), g, 0).astype(dtype))


@SETTINGS
@given(dtype=st.sampled_from(FLOATS),
       shape=st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple), data=st.data())
def test_log_softmax_matches_the_reference(run, dtype, shape, data):
    x = _values(data.draw, dtype, shape, scale=30.0)
    assert_close(run("LogSoftmax", logits=x), log_softmax_ref(x), "LogSoftmax", dtype)


def test_log_softmax_is_stable_and_empty_safe(run):
    x = np.array([[1000.0, 0.0, -1000.0], [-np.inf, 1.0, 2.0], [np.inf, 1.0, 2.0]], np.float32)
    got = run("LogSoftmax", logits=x)
    np.testing.assert_array_equal(got[0], [0.0, -1000.0, -2000.0])
    assert got[1, 0] == -np.inf and np.all(np.isfinite(got[1, 1:]))
    assert np.all(np.isnan(got[2]))       # inf - inf, as TF's
    assert run("LogSoftmax", logits=np.zeros((2, 0), np.float32)).shape == (2, 0)


# ----------------------------------------------------------------------------- bias ops


def bias_grad_ref(grad, channels_first):
    grad = np.asarray(grad, np.complex128)
    channel = 1 if channels_first else grad.ndim - 1
    return np.array([sum(np.take(grad, c, axis=channel).ravel())
                     for c in range(grad.shape[channel])], np.complex128)


@SETTINGS
@given(dtype=st.sampled_from(["float16", "float32", "float64", "int32", "complex64"]),
       shape=st.lists(st.integers(0, 4), min_size=2, max_size=4).map(tuple),
       channels_first=st.booleans(), data=st.data())
def test_bias_add_grad_matches_the_reference(run, dtype, shape, channels_first, data):
    x = (_values(data.draw, "float64", shape) * 4).astype(dtype)
    got = run("BiasAddGrad", out_backprop=x, data_format="NCHW" if channels_first else "NHWC")
    want = bias_grad_ref(x, channels_first)
    want = want if x.dtype.kind == "c" else want.real
    assert got.dtype == x.dtype
    tol = 2e-3 * max(1, np.abs(want).max(initial=0)) if dtype == "float16" else 1e-5
    np.testing.assert_allclose(got, want.astype(x.dtype), rtol=tol, atol=tol)


def test_bias_add_grad_wraps_integers_as_tf(run):
    x = np.full((2, 3, 4, 5), 200, np.uint8)
    np.testing.assert_array_equal(run("BiasAddGrad", out_backprop=x), np.full(5, 192, np.uint8))


def test_bias_add_v1_is_bias_add_nhwc(run):
    value, bias = np.arange(24.0).reshape(2, 3, 4), np.array([1.0, -2.0, 3.0, 0.5])
    np.testing.assert_array_equal(run("BiasAddV1", value=value, bias=bias), value + bias)


@pytest.mark.parametrize("op, kwargs, message", [
    ("BiasAddGrad", {"out_backprop": np.ones(3, np.float32)},
     "Input tensor must be at least 2D: [3]"),
    ("BiasAddV1", {"value": np.ones(3, np.float32), "bias": np.ones(3, np.float32)},
     "Input tensor must be at least 2D: [3]"),
    ("BiasAddV1", {"value": np.ones((2, 3), np.float32), "bias": np.ones((2, 3), np.float32)},
     "Biases must be 1D: [2,3]"),
    ("BiasAddV1", {"value": np.ones((2, 3), np.float32), "bias": np.ones(2, np.float32)},
     "Must provide as many biases as the last dimension of the input tensor: [2] vs. [2,3]"),
    ("LogSoftmax", {"logits": np.float32(1)}, "logits must have >= 1 dimension, got []"),
])
def test_kernel_messages(run, op, kwargs, message):
    with invalid(message):
        run(op, **kwargs)


@pytest.mark.parametrize("op", sorted(BINARY))
def test_gradient_ops_need_equal_shapes(op):
    second = BINARY[op][0]
    with invalid(f"Inputs to operation {op} of type {op} must have the same size and shape.  "
                 "Input 0: [3] != input 1: [4]"):
        getattr(gp.raw_ops, op)(gradients=np.ones(3), **{second: np.ones(4)})


# ----------------------------------------------------------------------------- static shapes


def _static_shape(op, *shapes, **attrs):
    with gp.Graph().as_default():
        inputs = [gp.placeholder(gp.float32, s) for s in shapes]
        names = [a.name for a in get_op_def(op).input_arg]
        return getattr(gp.raw_ops, op)(**dict(zip(names, inputs)), **attrs).shape.as_list()


def test_static_shapes():
    assert _static_shape("Elu", [None, 3]) == [None, 3]
    assert _static_shape("ReluGrad", [None, 3], [2, None]) == [2, 3]
    assert _static_shape("LogSoftmax", [2, None]) == [2, None]
    assert _static_shape("BiasAddGrad", [2, None, 5]) == [5]
    assert _static_shape("BiasAddGrad", [2, 7, 5], data_format="NCHW") == [7]
    assert _static_shape("BiasAddV1", [None, 4], [None]) == [None, 4]


@pytest.mark.parametrize("op, shapes, attrs, message", [
    ("SeluGrad", ([3], [4]), {}, "Dimension 0 in both shapes must be equal, but are 3 and 4. "
                                 "Shapes are [3] and [4]."),
    ("ReluGrad", ([3], [3, 1]), {}, "Shapes must be equal rank, but are 1 and 2"),
    ("LogSoftmax", ([],), {}, "Shape must be at least rank 1 but is rank 0"),
    ("BiasAddGrad", ([3],), {}, "Shape must be at least rank 2 but is rank 1"),
    ("BiasAddGrad", ([3, 2],), {"data_format": "NCHW"},
     "Shape must be at least rank 3 but is rank 2"),
    ("BiasAddV1", ([2, 3], [4]), {}, "Dimensions must be equal, but are 3 and 4"),
])
def test_shape_function_messages(op, shapes, attrs, message):
    with invalid(message):
        _static_shape(op, *shapes, **attrs)


# ----------------------------------------------------------------------------- gradients


def _gradient_op_types(op, inputs, attrs, grad_input=0):
    with gp.Graph().as_default() as g:
        tensors = {k: gp.constant(v) for k, v in inputs.items()}
        y = getattr(gp.raw_ops, op)(**tensors, **attrs)
        before = set(g.get_operations())
        grads = gp.gradients(y, list(tensors.values()))
        types = {o.type for o in g.get_operations() if o not in before}
    assert grads[grad_input] is not None
    return types


X = np.array([[-1.5, 0.5, 2.0], [7.0, -0.25, 3.0]])
G = np.array([[0.5, -1.0, 2.0], [1.5, 0.75, -2.0]])


@pytest.mark.parametrize("op, inputs, attrs, expected", [
    ("Relu", {"features": X}, {}, {"ReluGrad"}),
    ("Relu6", {"features": X}, {}, {"Relu6Grad"}),
    ("Elu", {"features": X}, {}, {"EluGrad"}),
    ("Selu", {"features": X}, {}, {"SeluGrad"}),
    ("LeakyRelu", {"features": X}, {"alpha": 0.1}, {"LeakyReluGrad"}),
    ("Softplus", {"features": X}, {}, {"Sigmoid", "Mul"}),
    ("Softsign", {"features": X}, {}, {"SoftsignGrad"}),
    ("LogSoftmax", {"logits": X}, {}, {"Exp", "Sum", "Mul", "Sub"}),
    ("BiasAdd", {"value": X, "bias": X[0]}, {}, {"BiasAddGrad"}),
    ("BiasAddV1", {"value": X, "bias": X[0]}, {}, {"Sum"}),
    ("BiasAddGrad", {"out_backprop": X}, {}, {"Reshape", "Tile"}),
    ("ReluGrad", {"gradients": G, "features": X}, {}, {"ReluGrad", "ZerosLike"}),
    ("Relu6Grad", {"gradients": G, "features": X}, {}, {"Relu6Grad", "ZerosLike"}),
    ("LeakyReluGrad", {"gradients": G, "features": X}, {}, {"LeakyReluGrad", "ZerosLike"}),
    ("EluGrad", {"gradients": G, "outputs": X}, {}, {"EluGrad", "Less", "Select"}),
    ("SeluGrad", {"gradients": G, "outputs": X}, {}, {"SeluGrad", "Less", "Select"}),
    ("SoftplusGrad", {"gradients": G, "features": X}, {},
     {"SoftplusGrad", "Exp", "Neg", "AddV2", "RealDiv", "Mul"}),
])
def test_gradients_build_the_ops_tf_builds(op, inputs, attrs, expected):
    assert expected <= _gradient_op_types(op, inputs, attrs)


def test_relu_gradient_is_one_relu_grad_node():
    types = _gradient_op_types("Relu", {"features": X}, {})
    assert not types & {"Greater", "Cast"}


@pytest.mark.parametrize("op, inputs, attrs", [
    ("Relu", {"features": X}, {}), ("Relu6", {"features": X}, {}),
    ("Elu", {"features": X}, {}), ("Selu", {"features": X}, {}),
    ("LeakyRelu", {"features": X}, {"alpha": 0.1}), ("Softplus", {"features": X}, {}),
    ("Softsign", {"features": X}, {}), ("LogSoftmax", {"logits": X}, {}),
    ("BiasAddV1", {"value": X, "bias": X[0]}, {}),
    ("BiasAdd", {"value": X.reshape(2, 3, 1), "bias": X[0]}, {"data_format": "NCHW"}),
    ("BiasAddGrad", {"out_backprop": X.reshape(1, 2, 3)}, {}),
    ("BiasAddGrad", {"out_backprop": X.reshape(1, 2, 3)}, {"data_format": "NCHW"}),
    ("ReluGrad", {"gradients": G, "features": X}, {}),
    ("Relu6Grad", {"gradients": G, "features": X}, {}),
    ("LeakyReluGrad", {"gradients": G, "features": X}, {"alpha": 0.1}),
    ("EluGrad", {"gradients": G, "outputs": X}, {}),
    ("SeluGrad", {"gradients": G, "outputs": X}, {}),
    ("SoftplusGrad", {"gradients": G, "features": X}, {}),
])
def test_gradients_match_central_differences(op, inputs, attrs):
    gp.test.check_op(op, inputs, attrs)


def test_bias_add_grad_gradient_with_unknown_shape():
    """The Reshape/Tile multiples come from run-time Shape nodes when shapes are unknown."""
    x = np.arange(24.0).reshape(2, 3, 4)
    for data_format, channel in (("NHWC", 2), ("NCHW", 1)):
        with gp.Graph().as_default():
            ph = gp.placeholder(gp.float64, [None, None, None])
            ph_unknown = gp.placeholder(gp.float64, None)
            for feed in (ph, ph_unknown):
                y = gp.raw_ops.BiasAddGrad(out_backprop=feed, data_format=data_format)
                up = np.arange(1.0, x.shape[channel] + 1)
                grad = gp.gradients(y, [feed], grad_ys=[gp.constant(up)])[0]
                with gp.Session() as sess:
                    got = sess.run(grad, {feed: x})
                shape = [1, 1, 1]
                shape[channel] = -1
                np.testing.assert_array_equal(got, np.broadcast_to(up.reshape(shape), x.shape))


def test_softsign_grad_has_no_gradient_as_in_tf():
    with gp.Graph().as_default():
        x = gp.constant(X)
        y = gp.raw_ops.SoftsignGrad(gradients=x, features=x)
        with pytest.raises(LookupError):
            gp.gradients(y, [x])


# ----------------------------------------------------------------------------- GPU


@pytest.mark.parametrize("op", sorted(UNARY))
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_gpu_activations(gpu, op, dtype):
    x = np.linspace(-8, 8, 24).reshape(2, 3, 4).astype(dtype)
    compare(op, {"features": x}, **ATTRS.get(op, {}))


@pytest.mark.parametrize("op", sorted(BINARY))
@pytest.mark.parametrize("dtype", ["float16", "float64"])
def test_gpu_gradient_ops(gpu, op, dtype):
    second = BINARY[op][0]
    x = np.linspace(-8, 8, 24).reshape(2, 3, 4).astype(dtype)
    compare(op, {"gradients": x[::-1].copy(), second: x}, **ATTRS.get(op, {}))


@pytest.mark.parametrize("op, inputs, attrs", [
    ("LogSoftmax", {"logits": np.linspace(-5, 5, 12).reshape(3, 4)}, {}),
    ("BiasAddGrad", {"out_backprop": np.arange(24.0).reshape(2, 3, 4)}, {"data_format": "NCHW"}),
    ("BiasAddGrad", {"out_backprop": np.arange(24).reshape(2, 3, 4).astype(np.int32)}, {}),
    ("BiasAddV1", {"value": np.ones((2, 3)), "bias": np.arange(3.0)}, {}),
    ("Relu6", {"features": np.arange(-3, 9).astype(np.int32)}, {}),
])
def test_gpu_other_ops(gpu, op, inputs, attrs):
    compare(op, inputs, **attrs)


# ----------------------------------------------------------------------------- gp.nn wrappers


@pytest.mark.parametrize("name, op", [("relu6", "Relu6"), ("elu", "Elu"), ("selu", "Selu"),
                                      ("softplus", "Softplus"), ("softsign", "Softsign")])
def test_nn_wrappers(name, op):
    x = np.linspace(-8, 8, 12).reshape(3, 4)
    assert_close(getattr(gp.nn, name)(x), _elementwise(UNARY[op], x), op, "float64")


def test_nn_leaky_relu_and_log_softmax():
    x = np.linspace(-8, 8, 12).reshape(3, 4)
    np.testing.assert_allclose(gp.nn.leaky_relu(x, alpha=0.5), np.where(x > 0, x, 0.5 * x))
    ints = gp.nn.leaky_relu(np.array([-2, 3], np.int32))
    assert ints.dtype == np.float32     # TF casts integer features to float32
    np.testing.assert_allclose(ints, [-0.4, 3.0], rtol=1e-6)
    np.testing.assert_allclose(gp.nn.log_softmax(x), log_softmax_ref(x), atol=1e-12)
    np.testing.assert_allclose(gp.nn.log_softmax(x, axis=0), log_softmax_ref(x.T).T,
                               atol=1e-12)


@pytest.mark.parametrize("size", [7, COMPILED_MIN_SIZE + 5, PARALLEL_MIN_SIZE + 5])
@pytest.mark.parametrize("dtype", ["float32", "float64"])      # NumPy, loops on 1 and all threads
def test_relu_and_its_grads_keep_tf_special_values(run, dtype, size):
    """Relu and Relu6 keep NaN and -0; ReluGrad and Relu6Grad multiply by the mask as TF does
    (checked against TF 2.21), so a NaN or infinite gradient gives NaN where the mask is 0."""
    rng = np.random.default_rng(3)
    x = rng.uniform(-8, 8, size).astype(dtype)
    g = rng.uniform(-2, 2, size).astype(dtype)
    x[:7] = [np.nan, -0.0, -1.0, 0.0, 7.0, 3.0, np.inf]
    g[:7] = [1.0, 2.0, np.nan, np.inf, np.nan, -np.inf, 1.0]
    relu = run("Relu", features=x)
    np.testing.assert_array_equal(relu, np.where(x < 0, 0, x))
    assert np.isnan(relu[0]) and np.signbit(relu[1])
    relu6 = run("Relu6", features=x)
    np.testing.assert_array_equal(relu6, np.where(x < 0, 0, np.where(x > 6, 6, x)))
    assert np.isnan(relu6[0]) and np.signbit(relu6[1]) and relu6[4] == 6
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(run("ReluGrad", gradients=g, features=x),
                                      g * (x > 0).astype(dtype))
        np.testing.assert_array_equal(run("Relu6Grad", gradients=g, features=x),
                                      g * ((x > 0) & (x < 6)).astype(dtype))
    assert np.isnan(run("ReluGrad", gradients=g, features=x)[[2, 3]]).all()
    assert run("ReluGrad", gradients=g, features=x)[6] == 1.0      # features +inf: mask 1


@pytest.mark.parametrize("shape", [(COMPILED_MIN_SIZE + 3, 1), (4099, 3, 8), (517, 200),
                                   (3, 5, 2731, 8), (4097, 130)])   # the last on all threads
def test_bias_add_grad_of_large_floats_sums_in_float64(run, shape):
    """Large float gradients are summed by the compiled column sums, narrow rows side by
    side: any row count and width, the float64 sum rounded once."""
    rng = np.random.default_rng(4)
    grad = rng.normal(size=shape).astype(np.float32) * 100
    want = grad.reshape(-1, shape[-1]).sum(axis=0, dtype=np.float64).astype(np.float32)
    got = run("BiasAddGrad", out_backprop=grad)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-3)
