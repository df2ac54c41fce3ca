"""The pooling ops against TensorFlow itself (skipped when TF is not installed): values on
inputs full of ties and NaN, static shapes, and shape-function messages.

TF's CPU build runs only NHWC/NDHWC for most pooling kernels, so values are compared in
those layouts; NCHW is checked against the reference in test_pooling_ops.py. The tests hold
with and without TF's oneDNN kernels (TF_ENABLE_ONEDNN_OPTS), except where TF's Eigen path
is itself inconsistent: its MaxPool3D treats NaN differently depending on the channel count
(so 3-D max pooling is compared without NaN; graphops follows the oneDNN build and the 2-D
op: NaN ignored) and shifts SAME windows whose stride exceeds the window by a position
(e.g. H = 3, window 1, stride 3 reads row 1 instead of 0; compared only with stride <=
window; graphops uses TF's documented SAME padding), and its MaxPoolGrad leaves the output uninitialised when the pooled
output is empty (not compared).
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import graphops as gp
from graphops.registry import errors
from tests.op_runners import raises

tf = pytest.importorskip("tensorflow")

SETTINGS = settings(max_examples=15, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def _ours(op, **kwargs):
    out = getattr(gp.raw_ops, op)(**kwargs)
    return [np.asarray(o) for o in out] if isinstance(out, (list, tuple)) else np.asarray(out)


def _tf(op, **kwargs):
    """TF's eager result; arrays become constants of their own dtype (raw_ops would convert
    a NumPy array to an attr's default type)."""
    kwargs = {k: tf.constant(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    out = getattr(tf.raw_ops, op)(**kwargs)
    return [o.numpy() for o in out] if isinstance(out, (list, tuple)) else out.numpy()


def _assert_same(got, want):
    if isinstance(want, list):
        for g, w in zip(got, want):
            _assert_same(g, w)
        return
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)


@st.composite
def case(draw, num_spatial, nan=True):
    spatial = [draw(st.integers(1, 5)) for _ in range(num_spatial)]
    ksize = [draw(st.integers(1, 3)) for _ in range(num_spatial)]
    # TF's Eigen 3-D pooling misplaces SAME windows whose stride exceeds the window
    strides = [draw(st.integers(1, 3 if num_spatial == 2 else k)) for k in ksize]
    padding = draw(st.sampled_from(["SAME", "VALID"]))
    if padding == "VALID":
        spatial = [max(n, k) for n, k in zip(spatial, ksize)]
    shape = [draw(st.integers(1, 2)), *spatial, draw(st.integers(1, 3))]
    rng = np.random.default_rng(draw(st.integers(0, 999)))
    x = rng.integers(-2, 3, shape).astype(np.float32)
    if nan and draw(st.booleans()):
        x[rng.random(shape) < 0.2] = np.nan
    return x, {"ksize": [1, *ksize, 1], "strides": [1, *strides, 1], "padding": padding}


def _both(op, **kwargs):
    _assert_same(_ours(op, **kwargs), _tf(op, **kwargs))


@SETTINGS
@given(c=case(2), seed=st.integers(0, 99))
def test_2d_pools_and_gradients_match_tf(c, seed):
    x, attrs = c
    rng = np.random.default_rng(seed)
    y = _tf("MaxPool", input=x, **attrs)
    _both("MaxPool", input=x, **attrs)
    _both("AvgPool", value=x, **attrs)
    grad = rng.integers(-2, 3, y.shape).astype(np.float32)
    _both("MaxPoolGrad", orig_input=x, orig_output=y, grad=grad, **attrs)
    _both("MaxPoolGradGrad", orig_input=x, orig_output=y,
          grad=rng.integers(-2, 3, x.shape).astype(np.float32), **attrs)
    _both("AvgPoolGrad", orig_input_shape=np.int32(x.shape), grad=grad, **attrs)
    for include_batch in (False, True):
        out, argmax = _tf("MaxPoolWithArgmax", input=x, include_batch_in_index=include_batch,
                          **attrs)
        _both("MaxPoolWithArgmax", input=x, include_batch_in_index=include_batch, **attrs)
        _both("MaxPoolGradWithArgmax", input=x, grad=grad, argmax=argmax,
              include_batch_in_index=include_batch, **attrs)


@SETTINGS
@given(c=case(2), pads=st.lists(st.integers(0, 2), min_size=4, max_size=4),
       seed=st.integers(0, 99))
def test_explicit_max_pool_and_gradient_match_tf(c, pads, seed):
    x, attrs = c
    ksize = [max(k, p + 1) for k, p in zip(attrs["ksize"][1:3] * 2, pads)]
    attrs = {"ksize": [1, max(ksize[0], ksize[2]), max(ksize[1], ksize[3]), 1],
             "strides": attrs["strides"], "padding": "EXPLICIT",
             "explicit_paddings": [0, 0, *pads, 0, 0]}
    try:
        y = _tf("MaxPool", input=x, **attrs)
    except tf.errors.InvalidArgumentError:          # window longer than the padded input
        with pytest.raises(errors.InvalidArgumentError):
            _ours("MaxPool", input=x, **attrs)
        return
    _both("MaxPool", input=x, **attrs)
    grad = np.random.default_rng(seed).integers(-2, 3, y.shape).astype(np.float32)
    if y.size:
        _both("MaxPoolGrad", orig_input=x, orig_output=y, grad=grad, **attrs)


@SETTINGS
@given(c=case(3, nan=False), seed=st.integers(0, 99))
def test_3d_pools_and_gradients_match_tf(c, seed):
    x, attrs = c
    rng = np.random.default_rng(seed)
    y = _tf("MaxPool3D", input=x, **attrs)
    _both("MaxPool3D", input=x, **attrs)
    _both("AvgPool3D", input=np.where(rng.random(x.shape) < 0.2, np.nan, x), **attrs)
    grad = rng.integers(-2, 3, y.shape).astype(np.float32)
    _both("MaxPool3DGrad", orig_input=x, orig_output=y, grad=grad, **attrs)
    _both("MaxPool3DGradGrad", orig_input=x, orig_output=y,
          grad=rng.integers(-2, 3, x.shape).astype(np.float32), **attrs)
    _both("AvgPool3DGrad", orig_input_shape=np.int32(x.shape), grad=grad, **attrs)


@pytest.mark.parametrize("dtype", [np.float64, np.float16, np.int32, np.uint8, np.int64])
def test_max_pool_types_match_tf(dtype):
    x = np.random.default_rng(1).integers(0, 50, [2, 5, 4, 3]).astype(dtype)
    attrs = {"ksize": [1, 3, 2, 1], "strides": [1, 2, 1, 1], "padding": "SAME"}
    _both("MaxPool", input=x, **attrs)


def test_max_pool_across_channels_matches_tf():
    x = np.random.default_rng(2).standard_normal([2, 3, 2, 6]).astype(np.float32)
    _both("MaxPool", input=x, ksize=[1, 1, 1, 3], strides=[1, 1, 1, 3], padding="VALID")


# ----------------------------------------------------------------------------- static shapes


def _static(module, op, shapes, **attrs):
    """The output shapes ``op`` infers in graph mode for inputs of ``shapes``."""
    placeholder = tf.compat.v1.placeholder if module is tf else gp.placeholder
    with module.Graph().as_default():
        args = {k: placeholder(module.float32, s) if not isinstance(s, np.ndarray)
                else module.constant(s) for k, s in shapes.items()}
        out = getattr(module.raw_ops, op)(**args, **attrs)
        outs = out if isinstance(out, (list, tuple)) else [out]
        return [None if t.shape.rank is None else t.shape.as_list() for t in outs]


@st.composite
def partial_shape(draw, rank):
    return [draw(st.sampled_from([None, 3, 4, 5, 7])) for _ in range(rank)]


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_static_shapes_match_tf(data):
    op = data.draw(st.sampled_from(["MaxPool", "AvgPool", "MaxPool3D", "AvgPool3D",
                                    "MaxPoolWithArgmax", "MaxPoolGradGrad"]))
    rank = 5 if "3D" in op else 4
    data_format = data.draw(st.sampled_from(
        ["NHWC", "NCHW"] if rank == 4 and op != "MaxPoolWithArgmax" else
        (["NDHWC", "NCDHW"] if rank == 5 else ["NHWC"])))
    shape = data.draw(partial_shape(rank))
    window = [1] + [data.draw(st.integers(1, 3)) for _ in range(rank - 2)] + [1]
    strides = [1] + [data.draw(st.integers(1, 3)) for _ in range(rank - 2)] + [1]
    if data_format.startswith("NC"):
        window, strides = [1, 1, *window[1:-1]], [1, 1, *strides[1:-1]]
    attrs = {"ksize": window, "strides": strides, "padding": "SAME"}
    if op != "MaxPoolWithArgmax":
        attrs["data_format"] = data_format
    inputs = {"input" if op != "AvgPool" else "value": shape}
    if op == "MaxPoolGradGrad":
        inputs = {"orig_input": shape, "orig_output": None, "grad": None}
    assert _static(gp, op, inputs, **attrs) == _static(tf, op, inputs, **attrs)


SHAPE_ERRORS = [
    ("MaxPool", {"input": [1, 4, 4, 2]}, {"ksize": [1, 2, 2, 1, 1], "strides": [1] * 4}),
    ("MaxPool", {"input": [1, 4, 4, 2]}, {"ksize": [1, 5, 2, 1], "strides": [1] * 4}),
    ("AvgPool", {"value": [1, 4, 4, 2]}, {"ksize": [1, 2, 2, 1], "strides": [1] * 5}),
    ("MaxPool3D", {"input": [1, 4, 4, 4, 2]}, {"ksize": [1] * 6, "strides": [1] * 5}),
    ("AvgPool3D", {"input": [1, 4, 4, 4, 2]}, {"ksize": [1] * 5, "strides": [1] * 6}),
    ("MaxPool", {"input": [1, 4, 4, 2]}, {"ksize": [1, 2, 2, 1], "strides": [1, 0, 1, 1]}),
    ("MaxPool", {"input": [1, 4, 4, 2]}, {"ksize": [1, 2, 2, 1], "strides": [1] * 4,
                                          "padding": "EXPLICIT",
                                          "explicit_paddings": [0, 0, -1, 1, 1, 1, 0, 0]}),
    ("MaxPoolWithArgmax", {"input": [1, 4, 4, 2]}, {"ksize": [1, 0, 2, 1], "strides": [1] * 4}),
    ("MaxPoolGradGrad", {"orig_input": [1, 4, 4, 2], "orig_output": [1, 4, 4, 2],
                         "grad": [1, 4, 4, 2]}, {"ksize": [1, 2, 2, 1], "strides": [1, 2, 2, 1]}),
    ("MaxPool3DGradGrad", {"orig_input": [1, 4, 4, 4, 2], "orig_output": [1, 2, 2, 2, 2],
                           "grad": [1, 2, 2, 2, 2]},
     {"ksize": [1, 2, 2, 2, 1], "strides": [1, 2, 2, 2, 1]}),
    ("AvgPoolGrad", {"orig_input_shape": np.int32([1, 4, 4]), "grad": [1, 2, 2, 2]},
     {"ksize": [1, 2, 2, 1], "strides": [1, 2, 2, 1]}),
]


@pytest.mark.parametrize("op,inputs,attrs", SHAPE_ERRORS)
def test_shape_function_messages_match_tf(op, inputs, attrs):
    attrs = {"padding": "VALID", **attrs}
    with pytest.raises(ValueError) as tf_error:
        _static(tf, op, inputs, **attrs)
    message = str(tf_error.value).split(" for '{{node")[0]
    with raises(errors.InvalidArgumentError, message):
        _static(gp, op, inputs, **attrs)


@pytest.mark.parametrize("channels", [1, 16])
def test_max_pool_keeps_the_first_of_equal_maxima_as_tf(channels):
    """Zeros of both signs in one window: the first in scan order is the output, on the
    strided passes (few channels) and the compiled loop alike."""
    x = np.array([-0.0, 0.0, 0.0, -0.0, -1.0, -0.0, 0.0, -1.0], np.float32)
    x = np.repeat(x.reshape(1, 1, 8, 1), channels, axis=3)
    kwargs = dict(input=x, ksize=[1, 1, 2, 1], strides=[1, 1, 2, 1], padding="VALID")
    got, want = _ours("MaxPool", **kwargs), _tf("MaxPool", **kwargs)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
