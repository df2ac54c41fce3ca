"""The activations, their gradient ops, LogSoftmax and the bias ops against TensorFlow: values
for every type the OpDefs allow, kernel and shape-function messages, and the op types TF's
registered gradients build. Skipped when TensorFlow is not installed."""


import numpy as np
import pytest

import graphops as gp
from graphops.registry import dtypes, get_op_def
from tests.kernels.test_activation_ops import ATTRS, BINARY, UNARY

tf = pytest.importorskip("tensorflow")
tf1 = tf.compat.v1

RNG = np.random.default_rng(7)
SPECIAL = [np.nan, -np.inf, np.inf, -40.0, -14.0, -3.0, -1e-3, 0.0, 1e-3, 3.0, 6.0, 14.0, 40.0]


def _types(op):
    return [t for t in get_op_def(op).attr_def("T").allowed_values if not t.is_quantized]


def _inputs(op, dtype):
    np_type = dtype.np_dtype
    if dtype.is_floating:
        x = np.concatenate([SPECIAL, RNG.uniform(-8, 8, 11)]).astype(np_type)
    else:
        x = np.clip(np.arange(-6, 18), np.iinfo(np_type).min, np.iinfo(np_type).max).astype(np_type)
    names = [a.name for a in get_op_def(op).input_arg]
    if len(names) == 1:
        return {names[0]: x}
    return {names[0]: np.linspace(-3, 3, x.size).astype(np_type) if dtype.is_floating
            else np.arange(x.size).astype(np_type), names[1]: x}


def _tolerance(dtype):
    return {"float16": 1e-3, "bfloat16": 8e-3, "float32": 2e-6, "float64": 1e-12}.get(
        dtype.name, 0)


def _assert_like_tf(got, want, dtype, op=""):
    want = np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    tol = _tolerance(dtype)
    if dtype.name == "bfloat16" and op == "Softplus":
        tol = 2e-2      # TF rounds bfloat16's exp before its log1p; graphops rounds once
    wide = np.complex128 if want.dtype.kind == "c" else np.float64
    np.testing.assert_allclose(got.astype(wide), want.astype(wide), rtol=tol, atol=tol,
                               equal_nan=True)


CASES = [(op, t) for op in sorted(UNARY) + sorted(BINARY) + ["Relu", "LogSoftmax"]
         for t in _types(op)]


@pytest.mark.parametrize("op, dtype", CASES, ids=[f"{op}-{t.name}" for op, t in CASES])
def test_values_match_tensorflow(op, dtype):
    inputs = _inputs(op, dtype)
    if op == "LogSoftmax":
        inputs = {"logits": inputs["logits"].reshape(-1, 4)[:, ::-1].copy()
                  if inputs["logits"].size % 4 == 0 else inputs["logits"]}
    attrs = ATTRS.get(op, {})
    tf_inputs = {k: tf.constant(v) for k, v in inputs.items()}
    want = getattr(tf.raw_ops, op)(**tf_inputs, **attrs).numpy()
    got = getattr(gp.raw_ops, op)(**inputs, **attrs)
    _assert_like_tf(got, want, dtype, op)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32", "uint8",
                                   "complex64"])
@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
def test_bias_ops_match_tensorflow(dtype, data_format):
    x = (RNG.uniform(-50, 50, (2, 3, 4, 5))).astype(dtype)
    want = tf.raw_ops.BiasAddGrad(out_backprop=x, data_format=data_format).numpy()
    got = gp.raw_ops.BiasAddGrad(out_backprop=x, data_format=data_format)
    assert got.dtype == want.dtype
    # sums: TF adds in another order (and float16 in float16); bound by the sum of |x|
    scale = np.abs(x.astype(np.complex128)).sum() * (1e-3 if dtype == "float16" else 1e-6)
    np.testing.assert_allclose(got.astype(np.complex128), want.astype(np.complex128),
                               rtol=0, atol=scale)
    bias = x[0, 0, 0]
    want = tf.raw_ops.BiasAddV1(value=x, bias=bias).numpy()
    _assert_like_tf(gp.raw_ops.BiasAddV1(value=x, bias=bias), want, dtypes.as_dtype(dtype))


def _message(fn):
    with pytest.raises(Exception) as info:
        fn()
    return str(info.value).split(" [Op:")[0].split("}} ")[-1].split(" for '{{node")[0]


@pytest.mark.parametrize("op, inputs", [
    ("ReluGrad", {"gradients": np.ones(3), "features": np.ones(4)}),
    ("EluGrad", {"gradients": np.ones((2, 3)), "outputs": np.ones((3, 2))}),
    ("BiasAddGrad", {"out_backprop": np.ones(3)}),
    ("BiasAddV1", {"value": np.ones((2, 3)), "bias": np.ones(2)}),
    ("BiasAddV1", {"value": np.ones((2, 3)), "bias": np.ones((1, 3))}),
    ("LogSoftmax", {"logits": np.float64(1)}),
])
def test_kernel_messages_match_tensorflow(op, inputs):
    want = _message(lambda: getattr(tf.raw_ops, op)(**inputs))
    assert want in _message(lambda: getattr(gp.raw_ops, op)(**inputs))


def _build(module, placeholder, op, shapes, attrs):
    names = [a.name for a in get_op_def(op).input_arg]
    inputs = {n: placeholder(module.float32, s) for n, s in zip(names, shapes)}
    return getattr(module.raw_ops, op)(**inputs, **attrs)


@pytest.mark.parametrize("op, shapes, attrs", [
    ("SeluGrad", ([3, None], [None, 4]), {}), ("SeluGrad", ([3], [4]), {}),
    ("ReluGrad", ([3], [3, 1]), {}), ("LogSoftmax", ([],), {}), ("LogSoftmax", (None,), {}),
    ("BiasAddGrad", ([3],), {}), ("BiasAddGrad", ([2, None, 4],), {"data_format": "NCHW"}),
    ("BiasAddGrad", ([3, 2],), {"data_format": "NCHW"}), ("BiasAddGrad", (None,), {}),
    ("BiasAddV1", ([2, 3], [4]), {}), ("BiasAddV1", ([None, None], [4]), {}),
])
def test_static_shapes_and_messages_match_tensorflow(op, shapes, attrs):
    with tf.Graph().as_default():
        try:
            want = _build(tf, tf1.placeholder, op, shapes, attrs).shape.as_list()
        except ValueError as e:
            want = str(e).split(" for '{{node")[0]
    with gp.Graph().as_default():
        try:
            got = _build(gp, gp.placeholder, op, shapes, attrs).shape.as_list()
        except ValueError as e:
            got = str(e).split(" for '{{node")[0]
    assert got == want


def _gradient_types(module, gradients, op, inputs, attrs):
    """The op types `gradients` (tf1's or graphops') adds to a `module` graph of `op`."""
    g = module.Graph()
    with g.as_default():
        tensors = {k: module.constant(v) for k, v in inputs.items()}
        y = getattr(module.raw_ops, op)(**tensors, **attrs)
        before = set(g.get_operations())
        gradients(y, list(tensors.values()))
        return {o.type for o in g.get_operations() if o not in before}


X = np.array([[-1.5, 0.5, 2.0], [7.0, -0.25, 3.0]])
# Ops TF builds that graphops leaves out: Identity/Const/Fill plumbing, and the
# StridedSlice/ConcatV2 TF's BiasAddGrad gradient computes its Reshape/Tile shapes with.
PLUMBING = {"Identity", "Const", "Fill", "StridedSlice", "StridedSliceGrad", "ConcatV2",
            "Shape", "ZerosLike", "OnesLike"}


@pytest.mark.parametrize("op", sorted(UNARY) + sorted(set(BINARY) - {"SoftsignGrad"})
                         + ["Relu", "LogSoftmax", "BiasAdd", "BiasAddV1", "BiasAddGrad"])
def test_gradient_op_types_match_tensorflow(op):
    names = [a.name for a in get_op_def(op).input_arg]
    inputs = {n: X if i == 0 else (X[0] if op.startswith("BiasAdd") else X[::-1].copy())
              for i, n in enumerate(names)}
    attrs = ATTRS.get(op, {})
    want = _gradient_types(tf, tf1.gradients, op, inputs, attrs) - PLUMBING
    assert want == _gradient_types(gp, gp.gradients, op, inputs, attrs) - PLUMBING
