"""Gradients of the normalisation ops, their GPU kernels and the gp.nn wrappers.

The ops take only half types and float32, so the symbolic Jacobians (gp.test.compute_gradient
on float32 graphs) are compared with central differences of the float64 references of
tests/reference_normalization.py, not with differences of the float32 kernels.
"""

import numpy as np
import pytest

import graphops as gp
from tests.gpu_compare import compare
from tests.reference_normalization import (assert_close, batch_norm_inputs, grad_inputs,
                                           ref_batch_norm, ref_batch_norm_grad, ref_lrn)

R = gp.raw_ops
VERSIONS = {"FusedBatchNorm": "FusedBatchNormGrad", "FusedBatchNormV2": "FusedBatchNormGradV2",
            "FusedBatchNormV3": "FusedBatchNormGradV3"}


def float64_jacobian(fn, point, name, delta=1e-6):
    """d fn(**point) / d point[name] by central differences in float64, [x size, y size]."""
    point = {k: np.asarray(v, np.float64) for k, v in point.items()}
    x = point[name]
    columns = []
    for i in range(x.size):
        shifted = []
        for step in (delta, -delta):
            moved = x.copy()
            moved.flat[i] += step
            shifted.append(np.asarray(fn(**dict(point, **{name: moved})), np.float64))
        columns.append(((shifted[0] - shifted[1]) / (2 * delta)).ravel())
    return np.array(columns)


def symbolic_jacobians(build, inputs, wrt, output_shape):
    """The float32 graph's Jacobians of build(placeholders) w.r.t. each name in `wrt`."""
    with gp.Graph().as_default():
        holders = {k: gp.placeholder(gp.as_dtype(v.dtype), v.shape, name=k)
                   for k, v in inputs.items()}
        y = build(holders)
        pairs = gp.test.compute_gradient(
            [holders[n] for n in wrt], [inputs[n].shape for n in wrt], y, output_shape,
            x_init_value=[inputs[n] for n in wrt],
            extra_feed_dict={holders[k]: v for k, v in inputs.items() if k not in wrt})
    return [theoretical for theoretical, _ in pairs]


def assert_jacobians(build, reference, inputs, wrt, output_shape):
    for name, got in zip(wrt, symbolic_jacobians(build, inputs, wrt, output_shape)):
        want = float64_jacobian(reference, inputs, name)
        np.testing.assert_allclose(got, want, atol=2e-4 * max(1.0, np.abs(want).max()),
                                   err_msg=name)


# ----------------------------------------------------------------------------- first order

@pytest.mark.parametrize("op, data_format", [
    ("FusedBatchNorm", "NHWC"), ("FusedBatchNorm", "NCHW"), ("FusedBatchNormV2", "NHWC"),
    ("FusedBatchNormV2", "NCHW"), ("FusedBatchNormV3", "NHWC"), ("FusedBatchNormV3", "NCHW"),
    ("FusedBatchNormV3", "NDHWC"), ("FusedBatchNormV3", "NCDHW")])
@pytest.mark.parametrize("is_training", [True, False])
def test_fused_batch_norm_gradient(op, data_format, is_training):
    rest = (2, 2, 1, 2) if data_format in ("NDHWC", "NCDHW") else (2, 2, 2)
    inputs = batch_norm_inputs(np.random.default_rng(0), data_format, channels=2, rest=rest)
    weights = np.random.default_rng(1).standard_normal(inputs["x"].shape)
    attrs = {"epsilon": 0.01, "data_format": data_format, "is_training": is_training}

    def build(t):
        return getattr(R, op)(**t, **attrs)[0] * weights.astype(np.float32)

    def reference(**t):
        return ref_batch_norm(**t, **attrs)[0] * weights

    assert_jacobians(build, reference, inputs, ["x", "scale", "offset"], inputs["x"].shape)


@pytest.mark.parametrize("op", sorted(VERSIONS))
@pytest.mark.parametrize("data_format, is_training, transposed", [
    ("NHWC", True, False), ("NCHW", True, False), ("NHWC", False, False),
    ("NCHW", False, True)])
def test_fused_batch_norm_gradient_builds_the_grad_op_of_its_version(
        op, data_format, is_training, transposed):
    with gp.Graph().as_default() as g:
        x = gp.placeholder(gp.float32, [2, 3, 4, 5])
        channels = 3 if data_format == "NCHW" else 5
        vec = gp.placeholder(gp.float32, [channels])
        outs = getattr(R, op)(x=x, scale=vec, offset=vec, mean=vec, variance=vec,
                              data_format=data_format, is_training=is_training)
        dx, dscale, doffset, dmean = gp.gradients(outs[0], [x, vec, vec, vec])[:4]
        grads = [o for o in g.get_operations() if o.type == VERSIONS[op]]
        assert len(grads) == 1
        grad = grads[0]
        if is_training:
            assert grad.inputs[3].op is outs[3].op and grad.inputs[3].value_index == 3
            assert grad.get_attr("data_format") == data_format
        else:
            assert grad.inputs[3] is vec or grad.inputs[3].op is vec.op
            assert grad.get_attr("data_format") == "NHWC"
        if op == "FusedBatchNormV3":
            assert grad.inputs[5].value_index == 5
        assert (dx.op.type == "Transpose") == transposed
        assert dx.shape.as_list() == [2, 3, 4, 5]


def test_lrn_gradient():
    rng = np.random.default_rng(2)
    inputs = {"input": rng.standard_normal((1, 2, 1, 5)).astype(np.float32)}
    attrs = {"depth_radius": 1, "bias": 1.5, "alpha": 0.7, "beta": 0.75}
    weights = rng.standard_normal((1, 2, 1, 5))

    def build(t):
        return R.LRN(**t, **attrs) * weights.astype(np.float32)

    assert_jacobians(build, lambda **t: ref_lrn(t["input"], **attrs) * weights, inputs,
                     ["input"], (1, 2, 1, 5))
    with gp.Graph().as_default():
        x = gp.placeholder(gp.float32, [1, 2, 1, 5])
        grad_op = gp.gradients(R.LRN(input=x, **attrs), [x])[0].op
        assert grad_op.type == "LRNGrad"
        assert {k: grad_op.get_attr(k) for k in attrs} == attrs


def test_lrn_grad_has_no_gradient_as_in_tf():
    with gp.Graph().as_default():
        x = gp.placeholder(gp.float32, [1, 1, 1, 3])
        y = R.LRNGrad(input_grads=x, input_image=x, output_image=x)
        with pytest.raises(LookupError, match="op type: LRNGrad"):
            gp.gradients(y, [x])


# ----------------------------------------------------------------------------- second order

@pytest.mark.parametrize("version", ["", "V2", "V3"])
@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
@pytest.mark.parametrize("is_training", [True, False])
def test_fused_batch_norm_grad_gradient(version, data_format, is_training):
    """The Grad op fed by the forward op's saved statistics (as in double backprop),
    differentiated w.r.t. y_backprop, x and scale."""
    inputs = batch_norm_inputs(np.random.default_rng(3), data_format, channels=2,
                               rest=(2, 2, 1))
    inputs["y_backprop"] = np.random.default_rng(4).standard_normal(
        inputs["x"].shape).astype(np.float32)
    attrs = {"epsilon": 0.01, "data_format": data_format, "is_training": is_training}

    def build(t, output):
        forward = getattr(R, "FusedBatchNorm" + version)(
            x=t["x"], scale=t["scale"], offset=t["offset"], mean=t["mean"],
            variance=t["variance"], **attrs)
        saved = {"reserve_space_1": forward[3], "reserve_space_2": forward[4]} if is_training \
            else {"reserve_space_1": t["mean"], "reserve_space_2": t["variance"]}
        if version == "V3":
            saved["reserve_space_3"] = forward[5]
        return getattr(R, "FusedBatchNormGrad" + version)(
            y_backprop=t["y_backprop"], x=t["x"], scale=t["scale"], **saved, **attrs)[output]

    def reference(output, y_backprop, x, scale, offset, mean, variance):
        if is_training:
            _, _, _, mean, variance = ref_batch_norm(x, scale, offset, mean, variance, **attrs)
        return ref_batch_norm_grad(y_backprop, x, scale, mean, variance, **attrs)[output]

    for output, shape in ((0, inputs["x"].shape), (1, (2,))):
        assert_jacobians(lambda t: build(t, output), lambda **t: reference(output, **t),
                         inputs, ["y_backprop", "x", "scale"], shape)


@pytest.mark.parametrize("is_training", [True, False])
def test_double_backprop_when_y_backprop_depends_on_x(is_training):
    """dx of sum(y * y * w) (its y_backprop 2 y w depends on x), differentiated again: the
    path through y_backprop is counted once, via the Grad op's y_backprop gradient."""
    inputs = batch_norm_inputs(np.random.default_rng(5), "NCHW", channels=2, rest=(2, 2, 1))
    weights = np.random.default_rng(6).standard_normal(inputs["x"].shape)
    attrs = {"epsilon": 0.01, "data_format": "NCHW", "is_training": is_training}

    def build(t):
        y = R.FusedBatchNormV3(**t, **attrs)[0]
        return gp.gradients(y * y * weights.astype(np.float32), [t["x"]])[0]

    def reference(x, scale, offset, mean, variance):
        y, _, _, saved_mean, saved_variance = ref_batch_norm(x, scale, offset, mean, variance,
                                                             **attrs)
        if is_training:
            mean, variance = saved_mean, saved_variance
        return ref_batch_norm_grad(2 * y * weights, x, scale, mean, variance, **attrs)[0]

    assert_jacobians(build, reference, inputs, ["x", "scale"], inputs["x"].shape)


def test_fused_batch_norm_grad_gradient_is_the_tf_composition():
    with gp.Graph().as_default() as g:
        x = gp.placeholder(gp.float16, [2, 3, 4, 5])
        vec = gp.placeholder(gp.float32, [3])
        outs = R.FusedBatchNormV3(x=x, scale=vec, offset=vec, mean=vec, variance=vec,
                                  data_format="NCHW")
        dx = gp.gradients(outs[0], [x])[0]
        second = gp.gradients(dx, [x, vec])
        assert second[0].shape.as_list() == [2, 3, 4, 5] and second[0].dtype == gp.float16
        types = {o.type for o in g.get_operations() if "FusedBatchNormGradV3_grad" in o.name}
        assert {"Mean", "SquaredDifference", "StopGradient", "Rsqrt", "Reciprocal", "Cast",
                "Reshape", "Squeeze"} <= types
        assert not any(t.startswith("FusedBatchNorm") for t in types - {"FusedBatchNormGradV3"})


# ----------------------------------------------------------------------------- GPU

@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("op", sorted(VERSIONS))
def test_fused_batch_norm_on_the_gpu(gpu, op, dtype):
    if op == "FusedBatchNorm" and dtype != np.float32:
        pytest.skip("FusedBatchNorm takes float32 only")
    rng = np.random.default_rng(5)
    for data_format, is_training, factor in (("NHWC", True, 1.0), ("NCHW", True, 0.5),
                                             ("NCHW", False, 1.0)):
        compare(op, batch_norm_inputs(rng, data_format, dtype=dtype),
                data_format=data_format, is_training=is_training,
                exponential_avg_factor=factor)
    compare(op, batch_norm_inputs(rng, rest=(0, 2, 2), dtype=dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("op", sorted(VERSIONS.values()))
def test_fused_batch_norm_grad_on_the_gpu(gpu, op, dtype):
    if op == "FusedBatchNormGrad" and dtype != np.float32:
        pytest.skip("FusedBatchNormGrad takes float32 only")
    rng = np.random.default_rng(6)
    version = "V3" if op.endswith("V3") else "V1"
    for data_format, is_training in (("NHWC", True), ("NCHW", False)):
        compare(op, grad_inputs(rng, version, data_format, dtype=dtype),
                data_format=data_format, is_training=is_training)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_lrn_on_the_gpu(gpu, dtype):
    rng = np.random.default_rng(7)
    image = rng.standard_normal((2, 3, 1, 6)).astype(dtype)
    output = compare("LRN", {"input": image}, depth_radius=2, beta=0.75)
    compare("LRNGrad", {"input_grads": rng.standard_normal(image.shape).astype(dtype),
                        "input_image": image, "output_image": output},
            depth_radius=2, beta=0.75)


# ----------------------------------------------------------------------------- gp.nn wrappers

def test_fused_batch_norm_wrapper():
    inputs = batch_norm_inputs(np.random.default_rng(8))
    y, mean, variance = gp.nn.fused_batch_norm(inputs["x"], inputs["scale"], inputs["offset"])
    want = ref_batch_norm(**inputs, epsilon=0.001)
    for got, expected in zip((y, mean, variance), want):
        assert_close(got, expected)
    y, mean, _ = gp.nn.fused_batch_norm(**inputs, is_training=False)
    assert_close(y, ref_batch_norm(**inputs, epsilon=0.001, is_training=False)[0])
    with pytest.raises(ValueError, match="Both `mean` and `variance` must be a 1D tensor"):
        gp.nn.fused_batch_norm(inputs["x"], inputs["scale"], inputs["offset"],
                               is_training=False)
    with gp.Graph().as_default():
        x = gp.placeholder(gp.float32, [None, 3, 2, 3])
        y, _, _ = gp.nn.fused_batch_norm(x, inputs["scale"], inputs["offset"], name="bn")
        assert y.op.type == "FusedBatchNormV3" and y.op.name == "bn"


def test_batch_normalization_wrapper():
    rng = np.random.default_rng(9)
    x = rng.standard_normal((4, 3)).astype(np.float32)
    mean, variance = x.mean(0), x.var(0)
    offset, scale = rng.standard_normal(3).astype(np.float32), np.float32(2)
    got = gp.nn.batch_normalization(x, mean, variance, offset, scale, 0.01)
    np.testing.assert_allclose(got, (x - mean) / np.sqrt(variance + 0.01) * 2 + offset,
                               rtol=1e-5, atol=1e-5)
    got = gp.nn.batch_normalization(x, mean, variance, None, None, 0.01)
    np.testing.assert_allclose(got, (x - mean) / np.sqrt(variance + 0.01), rtol=1e-5, atol=1e-5)
    with gp.Graph().as_default() as g:
        t = gp.placeholder(gp.float32, [None, 3])
        y = gp.nn.batch_normalization(t, mean, variance, offset, scale, 0.01, name="bn")
        assert y.op.name.startswith("bn/") and y.shape.as_list() == [None, 3]
        assert {"Rsqrt", "Mul", "Sub", "AddV2"} <= {o.type for o in g.get_operations()}


@pytest.mark.parametrize("keep_dims", [False, True])
def test_moments_wrapper(keep_dims):
    x = np.random.default_rng(10).standard_normal((3, 2, 4)).astype(np.float32)
    mean, variance = gp.nn.moments(x, [0, 2], keep_dims=keep_dims)
    np.testing.assert_allclose(mean, x.mean((0, 2), keepdims=keep_dims), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(variance, x.var((0, 2), keepdims=keep_dims), rtol=1e-5)
    half_mean, half_variance = gp.nn.moments(x.astype(np.float16), [0], keepdims=keep_dims)
    assert half_mean.dtype == half_variance.dtype == np.float16
    with gp.Graph().as_default() as g:
        t = gp.placeholder(gp.float16, [None, 2, 4])
        m, v = gp.nn.moments(t, [0, 1], keep_dims=keep_dims)
        assert m.shape.as_list() == ([1, 1, 4] if keep_dims else [4])
        names = {o.name: o.type for o in g.get_operations()}
        assert names["moments/mean"] == "Mean" and names["moments/variance"] == "Mean"
        assert {"SquaredDifference", "StopGradient", "Cast"} <= set(names.values())
    with pytest.raises(ValueError, match="Cannot specify both 'keep_dims' and 'keepdims'"):
        gp.nn.moments(x, [0], keep_dims=True, keepdims=True)


def test_moments_and_batch_normalization_gradients_in_float64():
    rng = np.random.default_rng(12)
    x0 = rng.standard_normal((3, 2, 2))
    with gp.Graph().as_default():
        x = gp.placeholder(gp.float64, [3, 2, 2])
        mean, variance = gp.nn.moments(x, [0, 1])
        y = gp.nn.batch_normalization(x, mean, variance, gp.constant(rng.standard_normal(2)),
                                      gp.constant(rng.standard_normal(2)), 1e-3)
        for out, shape in ((mean, [2]), (variance, [2]), (y, [3, 2, 2])):
            assert gp.test.compute_gradient_error(x, [3, 2, 2], out, shape, x_init_value=x0,
                                                  delta=1e-6) < 1e-6


def test_local_response_normalization_wrapper():
    x = np.random.default_rng(11).standard_normal((1, 2, 2, 7)).astype(np.float32)
    assert gp.nn.lrn is gp.nn.local_response_normalization
    assert_close(gp.nn.lrn(x, depth_radius=2, bias=2, alpha=0.5, beta=0.75),
                 ref_lrn(x, depth_radius=2, bias=2, alpha=0.5, beta=0.75))
    assert_close(gp.nn.local_response_normalization(x), ref_lrn(x))
