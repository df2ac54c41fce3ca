"""The normalisation ops and wrappers against TensorFlow itself (skipped without TF): values,
error messages, static shapes, first and second order gradients.

Where TF's CPU kernel refuses a configuration (FusedBatchNormGrad in NCHW inference mode),
TF's answer comes from the same op on channels-last transposes of the inputs. In inference
mode TF's Eigen kernel leaves reserve_space_1/2 uninitialised (graphops, like TF's oneDNN
path, passes mean and variance through): they are not compared there. V3's reserve_space_3
is compared only where TF gives a value (its oneDNN path gives an empty tensor instead of
the Eigen kernel's scalar 0).
"""


import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import graphops as gp  # noqa: E402
from tests.reference_normalization import batch_norm_inputs, grad_inputs  # noqa: E402
from tests.kernels.test_normalization_ops import (BATCH_NORM_ERRORS, BN_SHAPES,  # noqa: E402
                                          GRAD_ERRORS, GRAD_SHAPES, LRN_ERRORS, _grad,
                                          _static, _v3)

R = gp.raw_ops
TOLERANCE = {np.float32: 1e-4, np.float16: 2e-3}
FORMATS = [("FusedBatchNorm", "NHWC"), ("FusedBatchNorm", "NCHW"), ("FusedBatchNormV2", "NCHW"),
           ("FusedBatchNormV3", "NHWC"), ("FusedBatchNormV3", "NCHW"),
           ("FusedBatchNormV3", "NDHWC"), ("FusedBatchNormV3", "NCDHW")]


def assert_like_tf(got, want, dtype=np.float32):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape
    scale = max(1.0, float(np.max(np.abs(want)))) if want.size else 1.0
    np.testing.assert_allclose(got, want, rtol=0, atol=TOLERANCE[dtype] * scale, equal_nan=True)


def _rest(data_format):
    return (2, 3, 2, 2) if data_format in ("NDHWC", "NCDHW") else (2, 3, 2)


def _tf_message(fn):
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        fn()
    return info.value.message.split("}} ")[-1].split(" [Op:")[0]


# ----------------------------------------------------------------------------- values

@pytest.mark.parametrize("op, data_format", FORMATS)
@pytest.mark.parametrize("is_training, factor", [(True, 1.0), (True, 0.3), (False, 1.0)])
def test_fused_batch_norm_like_tf(op, data_format, is_training, factor):
    dtypes = [np.float32] + ([np.float16] if op != "FusedBatchNorm" else [])
    for dtype in dtypes:
        inputs = batch_norm_inputs(np.random.default_rng(0), data_format, 3, _rest(data_format),
                                   dtype=dtype)
        attrs = {"epsilon": 0.001, "exponential_avg_factor": factor,
                 "data_format": data_format, "is_training": is_training}
        got = getattr(R, op)(**inputs, **attrs)
        want = [t.numpy() for t in getattr(tf.raw_ops, op)(**inputs, **attrs)]
        assert got[0].dtype == want[0].dtype
        assert_like_tf(got[0], want[0], dtype)
        compared = 5 if is_training else 3       # inference: TF leaves the reserve
        for g, w in zip(got[1:compared], want[1:compared]):   # spaces uninitialised
            assert_like_tf(g, w)
        if op == "FusedBatchNormV3" and want[5].size:
            assert_like_tf(got[5], want[5])


def test_fused_batch_norm_of_empty_input_like_tf():
    inputs = batch_norm_inputs(np.random.default_rng(1), rest=(0, 2, 2))
    for is_training in (True, False):
        got = R.FusedBatchNormV3(**inputs, is_training=is_training)
        want = tf.raw_ops.FusedBatchNormV3(**inputs, is_training=is_training)
        for g, w in zip(got[:3], want[:3]):
            assert_like_tf(g, w.numpy())


def _tf_grad(op, inputs, attrs):
    """TF's Grad op; NCHW/NCDHW in inference mode through channels-last transposes."""
    data_format = attrs["data_format"]
    if attrs["is_training"] or not data_format.startswith("NC"):
        return [t.numpy() for t in getattr(tf.raw_ops, op)(**inputs, **attrs)]
    to_last = [0] + list(range(2, inputs["x"].ndim)) + [1]
    moved = dict(inputs, x=np.transpose(inputs["x"], to_last),
                 y_backprop=np.transpose(inputs["y_backprop"], to_last))
    outs = [t.numpy() for t in getattr(tf.raw_ops, op)(
        **moved, **dict(attrs, data_format="NDHWC" if inputs["x"].ndim == 5 else "NHWC"))]
    return [np.transpose(outs[0], np.argsort(to_last))] + outs[1:]


GRAD_FORMATS = [("FusedBatchNormGrad" + op[len("FusedBatchNorm"):], data_format)
                for op, data_format in FORMATS]


@pytest.mark.parametrize("op, data_format", GRAD_FORMATS)
@pytest.mark.parametrize("is_training", [True, False])
def test_fused_batch_norm_grad_like_tf(op, data_format, is_training):
    version = op[-2:] if op[-2:] in ("V2", "V3") else "V1"
    for dtype in [np.float32] + ([np.float16] if version != "V1" else []):
        inputs = grad_inputs(np.random.default_rng(2), version, data_format, 3,
                             _rest(data_format), dtype=dtype)
        attrs = {"epsilon": 0.001, "data_format": data_format, "is_training": is_training}
        got = getattr(R, op)(**inputs, **attrs)
        want = _tf_grad(op, inputs, attrs)
        assert_like_tf(got[0], want[0], dtype)
        for g, w in zip(got[1:], want[1:]):
            assert_like_tf(g, w)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("depth_radius, bias, alpha, beta", [
    (5, 1.0, 1.0, 0.5), (0, 2.0, 0.5, 0.75), (2, 1.0, 1e-3, 1.0), (100, 0.5, 2.0, 0.3)])
def test_lrn_and_lrn_grad_like_tf(dtype, depth_radius, bias, alpha, beta):
    rng = np.random.default_rng(3)
    image = rng.standard_normal((2, 3, 2, 7)).astype(dtype)
    grads = rng.standard_normal(image.shape).astype(dtype)
    attrs = {"depth_radius": depth_radius, "bias": bias, "alpha": alpha, "beta": beta}
    output = R.LRN(input=image, **attrs)
    assert_like_tf(output, tf.raw_ops.LRN(input=image, **attrs).numpy(), dtype)
    got = R.LRNGrad(input_grads=grads, input_image=image, output_image=output, **attrs)
    want = tf.raw_ops.LRNGrad(input_grads=grads, input_image=image, output_image=output, **attrs)
    assert_like_tf(got, want.numpy(), dtype)


# ----------------------------------------------------------------------------- errors, shapes

@pytest.mark.parametrize("change, message", BATCH_NORM_ERRORS)
def test_fused_batch_norm_messages_are_tfs(change, message):
    inputs, attrs = _v3(**change)
    assert _tf_message(lambda: tf.raw_ops.FusedBatchNormV3(**inputs, **attrs)) == message


@pytest.mark.parametrize("change, message", GRAD_ERRORS)
def test_fused_batch_norm_grad_messages_are_tfs(change, message):
    assert _tf_message(lambda: tf.raw_ops.FusedBatchNormGradV3(**_grad(**change))) == message


@pytest.mark.parametrize("op, inputs, attrs, message", LRN_ERRORS)
def test_lrn_messages_are_tfs(op, inputs, attrs, message):
    assert _tf_message(lambda: getattr(tf.raw_ops, op)(**inputs, **attrs)) == message


@pytest.mark.parametrize("op, shapes, attrs", [
    ("FusedBatchNormV3", BN_SHAPES, {}),
    ("FusedBatchNorm", BN_SHAPES, {}),
    ("FusedBatchNormV2", dict(BN_SHAPES, offset=[2]), {"data_format": "NCHW"}),
    ("FusedBatchNormV3", dict(BN_SHAPES, x=[None, 2, 3, None, 4], offset=[4]),
     {"data_format": "NDHWC"}),
    ("FusedBatchNormV3", dict(BN_SHAPES, mean=None, variance=[None]), {"is_training": False}),
    ("FusedBatchNormV3", dict(BN_SHAPES, x=None, scale=None, offset=None), {}),
    ("FusedBatchNormGradV3", GRAD_SHAPES, {}),
    ("FusedBatchNormGradV3", dict(GRAD_SHAPES, y_backprop=[None, 2, 3, 5, 6],
                                  x=[1, None, 4, 5, None]), {"data_format": "NCDHW"}),
    ("FusedBatchNormGradV2", {"y_backprop": None, "x": None, "scale": [3],
                              "reserve_space_1": [None], "reserve_space_2": None}, {}),
    ("LRN", {"input": [None, 2, None, 3]}, {}),
    ("LRNGrad", {"input_grads": None, "input_image": [None, 2, None, 3],
                 "output_image": [1, None, None, None]}, {}),
])
def test_static_shapes_are_tfs(op, shapes, attrs):
    with tf.Graph().as_default():
        holders = {k: tf.compat.v1.placeholder(tf.float32, v) for k, v in shapes.items()}
        outs = getattr(tf.raw_ops, op)(**holders, **attrs)
        outs = outs if isinstance(outs, (list, tuple)) else [outs]
        want = [None if t.shape.rank is None else tuple(t.shape.as_list()) for t in outs]
    assert _static(op, shapes, **attrs) == want


# ----------------------------------------------------------------------------- gradients

@pytest.mark.parametrize("version", ["", "V2", "V3"])
@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
@pytest.mark.parametrize("is_training", [True, False])
@pytest.mark.parametrize("squared", [False, True])
def test_first_and_second_order_gradients_like_tf(version, data_format, is_training, squared):
    """d(sum(y * w))/d(x, scale, offset) (or of sum(y * y * w), whose y_backprop depends on
    x), then the gradient of sum(dx * v) + sum(dscale) w.r.t. x and scale (TF's
    FusedBatchNormGrad gradient, through its composition)."""
    rng = np.random.default_rng(4)
    inputs = batch_norm_inputs(rng, data_format, 2, (2, 3, 2))
    w = rng.standard_normal(inputs["x"].shape).astype(np.float32)
    v = rng.standard_normal(inputs["x"].shape).astype(np.float32)
    attrs = {"epsilon": 0.01, "data_format": data_format, "is_training": is_training}
    op = "FusedBatchNorm" + version

    x_tf, scale_tf, offset_tf = (tf.constant(inputs[k]) for k in ("x", "scale", "offset"))
    with tf.GradientTape(persistent=True) as outer:
        outer.watch([x_tf, scale_tf])
        with tf.GradientTape() as inner:
            inner.watch([x_tf, scale_tf, offset_tf])
            y = getattr(tf.raw_ops, op)(x=x_tf, scale=scale_tf, offset=offset_tf,
                                        mean=inputs["mean"], variance=inputs["variance"],
                                        **attrs)[0]
            loss = tf.reduce_sum((y * y if squared else y) * w)
        first = inner.gradient(loss, [x_tf, scale_tf, offset_tf])
        second_loss = tf.reduce_sum(first[0] * v) + tf.reduce_sum(first[1])
    second = outer.gradient(second_loss, [x_tf, scale_tf])

    with gp.Graph().as_default():
        holders = {k: gp.constant(a) for k, a in inputs.items()}
        y = getattr(R, op)(**holders, **attrs)[0]
        grads = gp.gradients(y * y if squared else y,
                             [holders["x"], holders["scale"], holders["offset"]],
                             grad_ys=gp.constant(w))
        second_loss = gp.reduce_sum(grads[0] * gp.constant(v)) + gp.reduce_sum(grads[1])
        second_gp = gp.gradients(second_loss, [holders["x"], holders["scale"]])
        with gp.Session() as sess:
            got_first, got_second = sess.run([grads, second_gp])
    for g, t in zip(got_first + got_second, first + second):
        assert_like_tf(g, t.numpy())


# ----------------------------------------------------------------------------- wrappers

def test_wrappers_like_tf():
    rng = np.random.default_rng(5)
    inputs = batch_norm_inputs(rng)
    x = inputs["x"]
    for got, want in zip(gp.nn.fused_batch_norm(x, inputs["scale"], inputs["offset"]),
                         tf.compat.v1.nn.fused_batch_norm(x, inputs["scale"], inputs["offset"])):
        assert_like_tf(got, want.numpy())
    for got, want in zip(gp.nn.moments(x, [0, 1, 2]), tf.nn.moments(x, [0, 1, 2])):
        assert_like_tf(got, want.numpy())
    half = x.astype(np.float16)
    for got, want in zip(gp.nn.moments(half, [1], keep_dims=True),
                         tf.compat.v1.nn.moments(half, [1], keep_dims=True)):
        assert got.dtype == want.dtype
        assert_like_tf(got, want.numpy(), np.float16)
    args = (x, inputs["mean"], inputs["variance"], inputs["offset"], inputs["scale"], 0.01)
    assert_like_tf(gp.nn.batch_normalization(*args), tf.nn.batch_normalization(*args).numpy())
    assert_like_tf(gp.nn.lrn(x, 2, 1.5, 0.5, 0.75),
                   tf.nn.lrn(x, 2, 1.5, 0.5, 0.75).numpy())
