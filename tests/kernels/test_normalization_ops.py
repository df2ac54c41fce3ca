"""The normalisation ops: FusedBatchNorm (V1-V3), FusedBatchNormGrad (V1-V3), LRN, LRNGrad,
and the gp.nn wrappers fused_batch_norm, batch_normalization, moments, lrn.

Values are checked against the slow float64 references of tests/reference_normalization.py
(eager and in a Session), errors against TF's messages, static shapes against what TF's
shape functions infer. Gradients, GPU kernels and the wrappers: test_normalization_gradients.py.
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import graphops as gp
from graphops.registry import errors, memory
from tests.op_runners import invalid, make_runner
from tests.reference_normalization import (HALF_TYPES, assert_close, batch_norm_inputs,
                                           grad_inputs, ref_batch_norm, ref_batch_norm_grad,
                                           ref_lrn, ref_lrn_grad)

R = gp.raw_ops
SETTINGS = settings(max_examples=15, deadline=None)
MODES = pytest.mark.parametrize("mode", ["eager", "graph"])


FORMATS = {"FusedBatchNorm": ["NHWC", "NCHW"], "FusedBatchNormV2": ["NHWC", "NCHW"],
           "FusedBatchNormV3": ["NHWC", "NCHW", "NDHWC", "NCDHW"]}


def _rest(data_format, draw_rest):
    return draw_rest[:4] if data_format in ("NDHWC", "NCDHW") else draw_rest[:3]


# ----------------------------------------------------------------------------- FusedBatchNorm

@MODES
@SETTINGS
@given(data=st.data(), op=st.sampled_from(sorted(FORMATS)),
       is_training=st.booleans(), factor=st.sampled_from([1.0, 0.25]),
       epsilon=st.sampled_from([1e-4, 0.01]), seed=st.integers(0, 99))
def test_fused_batch_norm_matches_the_reference(data, op, is_training, factor, epsilon, seed,
                                                mode):
    data_format = data.draw(st.sampled_from(FORMATS[op]))
    rest = data.draw(st.lists(st.integers(1, 3), min_size=4, max_size=4))
    channels = data.draw(st.integers(1, 4))
    inputs = batch_norm_inputs(np.random.default_rng(seed), data_format, channels,
                               _rest(data_format, rest))
    attrs = {"epsilon": epsilon, "exponential_avg_factor": factor,
             "data_format": data_format, "is_training": is_training}
    got = make_runner(mode)(op, **inputs, **attrs)
    want = ref_batch_norm(**inputs, **attrs)
    for g, w in zip(got, want):
        assert_close(g, w)
    if op == "FusedBatchNormV3":
        assert got[5].shape == () and got[5] == 0


@pytest.mark.parametrize("op", ["FusedBatchNormV2", "FusedBatchNormV3"])
@pytest.mark.parametrize("dtype", HALF_TYPES)
def test_fused_batch_norm_half_types_are_computed_in_float32(run, op, dtype):
    inputs = batch_norm_inputs(np.random.default_rng(1), dtype=dtype)
    got = run(op, **inputs)
    assert got[0].dtype == dtype and got[1].dtype == np.float32
    want = ref_batch_norm(**inputs)
    assert_close(got[0], want[0], dtype)
    for g, w in zip(got[1:5], want[1:]):
        assert_close(g, w)


def test_fused_batch_norm_v3_with_bfloat16_statistics(run):
    inputs = batch_norm_inputs(np.random.default_rng(2), stat_dtype=gp.bfloat16.np_dtype)
    got = run("FusedBatchNormV3", **inputs, is_training=False)
    assert [a.dtype for a in got] == [np.float32] + [gp.bfloat16.np_dtype] * 5
    assert_close(got[0], ref_batch_norm(**inputs, is_training=False)[0])


def test_training_outputs_bessel_corrected_running_variance_and_biased_saved_variance(run):
    x = np.arange(8, dtype=np.float32).reshape(1, 2, 2, 2)        # channels: 0,2,4,6 / 1,3,5,7
    one = np.ones(2, np.float32)
    y, mean, variance, saved_mean, saved_variance = run(
        "FusedBatchNorm", x=x, scale=one, offset=0 * one, mean=one, variance=one, epsilon=0.0)
    np.testing.assert_allclose(mean, [3, 4])
    np.testing.assert_allclose(saved_mean, [3, 4])
    np.testing.assert_allclose(saved_variance, [5, 5])            # biased: /4
    np.testing.assert_allclose(variance, [20 / 3, 20 / 3], rtol=1e-6)   # corrected: /3
    np.testing.assert_allclose(y[0, 0, 0], [-3 / math.sqrt(5)] * 2, rtol=1e-6)


def test_exponential_avg_factor_blends_the_running_statistics(run):
    x = np.arange(8, dtype=np.float32).reshape(1, 2, 2, 2)
    mean, variance = np.float32([1, -1]), np.float32([2, 4])
    outs = run("FusedBatchNormV2", x=x, scale=np.ones(2, np.float32),
               offset=np.zeros(2, np.float32), mean=mean, variance=variance,
               exponential_avg_factor=0.25)
    np.testing.assert_allclose(outs[1], 0.75 * mean + 0.25 * np.float32([3, 4]), rtol=1e-6)
    np.testing.assert_allclose(outs[2], 0.75 * variance + 0.25 * 20 / 3, rtol=1e-6)
    np.testing.assert_allclose(outs[3], [3, 4])


def test_a_single_value_per_channel_has_zero_variance():
    x = np.float32([[[[1, 2]]]])
    outs = R.FusedBatchNormV3(x=x, scale=np.ones(2, np.float32), offset=np.zeros(2, np.float32),
                              mean=np.ones(2, np.float32), variance=np.ones(2, np.float32),
                              exponential_avg_factor=0.5)
    np.testing.assert_allclose(outs[2], [0.5, 0.5])                # n / max(n - 1, 1) = 1
    np.testing.assert_allclose(outs[0], 0 * x)


def test_inference_passes_mean_and_variance_through(run):
    inputs = batch_norm_inputs(np.random.default_rng(3))
    outs = run("FusedBatchNormV3", **inputs, is_training=False, exponential_avg_factor=0.5)
    for got, name in zip(outs[1:5], ["mean", "variance", "mean", "variance"]):
        np.testing.assert_array_equal(got, inputs[name])


@pytest.mark.parametrize("is_training", [True, False])
def test_empty_input_gives_nan_statistics_and_zero_reserve_space(run, is_training):
    inputs = batch_norm_inputs(np.random.default_rng(4), rest=(0, 2, 2))
    y, mean, variance, saved_mean, saved_variance, reserve_3 = run(
        "FusedBatchNormV3", **inputs, is_training=is_training)
    assert y.shape == (0, 2, 2, 3)
    assert np.isnan(mean).all() and np.isnan(variance).all() and mean.shape == (3,)
    np.testing.assert_array_equal(saved_mean, np.zeros(3))
    np.testing.assert_array_equal(saved_variance, np.zeros(3))
    assert reserve_3.shape == ()


def test_training_ignores_mean_and_variance_of_any_size(run):
    inputs = batch_norm_inputs(np.random.default_rng(5))
    inputs["mean"] = inputs["variance"] = np.zeros(0, np.float32)
    y = run("FusedBatchNorm", **inputs)[0]
    assert_close(y, ref_batch_norm(**inputs)[0])


def _v3(**kwargs):
    rng = np.random.default_rng(0)
    inputs = batch_norm_inputs(rng)
    inputs.update({k: v for k, v in kwargs.items() if k in inputs})
    return inputs, {k: v for k, v in kwargs.items() if k not in inputs}


F = np.float32
BATCH_NORM_ERRORS = [
    ({"x": np.ones((2, 2, 3), F)}, "input must be 4 or 5-dimensional[2,2,3]"),
    ({"x": np.ones((1, 1, 1, 1, 1, 3), F)}, "input must be 4 or 5-dimensional[1,1,1,1,1,3]"),
    ({"scale": np.ones((3, 1), F)}, "scale must be 1-dimensional[3,1]"),
    ({"offset": np.ones((3, 1), F)}, "offset must be 1-dimensional[3,1]"),
    ({"mean": np.ones((3, 1), F)}, "estimated_mean must be 1-dimensional[3,1]"),
    ({"variance": np.ones((3, 1), F)}, "estimated_variance must be 1-dimensional[3,1]"),
    ({"scale": np.ones(2, F)},
     "scale must have the same number of elements as the channels of x, got 2 and 3"),
    ({"offset": np.ones(2, F)},
     "offset must have the same number of elements as the channels of x, got 2 and 3"),
    ({"mean": np.ones(2, F), "is_training": False}, "When is_training=false, mean must have "
     "the same number of elements as the channels of x, got 2 and 3"),
    ({"variance": np.ones(2, F), "is_training": False}, "When is_training=false, variance "
     "must have the same number of elements as the channels of x, got 2 and 3"),
    ({"mean": np.ones(2, F), "exponential_avg_factor": 0.5}, "When exponential_avg_factor != "
     "1, mean must have the same number of elements as the channels of x, got 2 and 3"),
    ({"variance": np.ones(2, F), "exponential_avg_factor": 0.5}, "When exponential_avg_factor "
     "!= 1, variance must have the same number of elements as the channels of x, got 2 and 3"),
]


@pytest.mark.parametrize("change, message", BATCH_NORM_ERRORS)
def test_fused_batch_norm_errors(run, change, message):
    inputs, attrs = _v3(**change)
    with invalid(message):
        run("FusedBatchNormV3", **inputs, **attrs)


# ----------------------------------------------------------------------------- FusedBatchNormGrad

GRAD_OPS = {"FusedBatchNormGrad": ("V1", ["NHWC", "NCHW"]),
            "FusedBatchNormGradV2": ("V2", ["NHWC", "NCHW"]),
            "FusedBatchNormGradV3": ("V3", ["NHWC", "NCHW", "NDHWC", "NCDHW"])}


@MODES
@SETTINGS
@given(data=st.data(), op=st.sampled_from(sorted(GRAD_OPS)), is_training=st.booleans(),
       seed=st.integers(0, 99))
def test_fused_batch_norm_grad_matches_the_reference(data, op, is_training, seed, mode):
    version, formats = GRAD_OPS[op]
    data_format = data.draw(st.sampled_from(formats))
    rest = data.draw(st.lists(st.integers(1, 3), min_size=4, max_size=4))
    inputs = grad_inputs(np.random.default_rng(seed), version, data_format,
                         data.draw(st.integers(1, 4)), _rest(data_format, rest))
    attrs = {"epsilon": 0.001, "data_format": data_format, "is_training": is_training}
    got = make_runner(mode)(op, **inputs, **attrs)
    want = ref_batch_norm_grad(*list(inputs.values())[:5], **attrs)
    for g, w in zip(got, want):
        assert_close(g, w)
    assert got[3].shape == got[4].shape == (0,)


@pytest.mark.parametrize("dtype", HALF_TYPES)
@pytest.mark.parametrize("is_training", [True, False])
def test_fused_batch_norm_grad_half_types(run, dtype, is_training):
    inputs = grad_inputs(np.random.default_rng(6), "V3", dtype=dtype)
    got = run("FusedBatchNormGradV3", **inputs, is_training=is_training)
    assert got[0].dtype == dtype and got[1].dtype == np.float32
    want = ref_batch_norm_grad(*list(inputs.values())[:5], is_training=is_training)
    assert_close(got[0], want[0], dtype)
    assert_close(got[1], want[1])


def test_fused_batch_norm_grad_of_empty_input(run):
    inputs = grad_inputs(np.random.default_rng(7), "V2", rest=(0, 2, 2))
    dx, dscale, doffset, r3, r4 = run("FusedBatchNormGradV2", **inputs)
    assert dx.shape == (0, 2, 2, 3) and r3.shape == r4.shape == (0,)
    np.testing.assert_array_equal(dscale, np.zeros(3))
    np.testing.assert_array_equal(doffset, np.zeros(3))


def _grad(**kwargs):
    inputs = grad_inputs(np.random.default_rng(0), "V3")
    inputs.update(kwargs)
    return inputs


GRAD_ERRORS = [
    ({"y_backprop": np.ones((2, 2, 3), F)}, "input must be 4 or 5-dimensional[2,2,3]"),
    ({"x": np.ones((2, 2, 3), F)}, "input must be 4 or 5-dimensional[2,2,3]"),
    ({"scale": np.ones((3, 1), F)}, "scale must be 1-dimensional[3,1]"),
    ({"reserve_space_1": np.ones((3, 1), F)}, "saved mean must be 1-dimensional[3,1]"),
    ({"reserve_space_2": np.ones((3, 1), F)}, "saved variance must be 1-dimensional[3,1]"),
    ({"y_backprop": np.ones((2, 3, 1, 3), F)}, "x and y_backprop must have same shape, but x "
     "has shape [2,3,2,3] and y_backprop has shape [2,3,1,3]"),
    ({"scale": np.ones(2, F)},
     "scale must have the same number of elements as the channels of x, got 2 and 3"),
    ({"reserve_space_1": np.ones(2, F)},
     "reserve_space_1 must have the same number of elements as the channels of x, got 2 and 3"),
    ({"reserve_space_2": np.ones(2, F)},
     "reserve_space_2 must have the same number of elements as the channels of x, got 2 and 3"),
]


@pytest.mark.parametrize("change, message", GRAD_ERRORS)
def test_fused_batch_norm_grad_errors(run, change, message):
    with invalid(message):
        run("FusedBatchNormGradV3", **_grad(**change))


# ----------------------------------------------------------------------------- LRN

@MODES
@SETTINGS
@given(shape=st.tuples(st.integers(1, 2), st.integers(1, 2), st.integers(1, 2),
                       st.integers(1, 7)),
       depth_radius=st.sampled_from([0, 1, 2, 5, 2**31 - 2]),
       bias=st.sampled_from([1.0, 2.5]), alpha=st.sampled_from([1.0, 0.3]),
       beta=st.sampled_from([0.5, 0.75, 1.0]), seed=st.integers(0, 99))
def test_lrn_and_lrn_grad_match_the_reference(shape, depth_radius, bias, alpha, beta, seed,
                                              mode):
    rng = np.random.default_rng(seed)
    image = rng.standard_normal(shape).astype(np.float32)
    attrs = {"depth_radius": depth_radius, "bias": bias, "alpha": alpha, "beta": beta}
    run = make_runner(mode)
    output = run("LRN", input=image, **attrs)
    assert_close(output, ref_lrn(image, **attrs))
    grads = rng.standard_normal(shape).astype(np.float32)
    got = run("LRNGrad", input_grads=grads, input_image=image, output_image=output, **attrs)
    assert_close(got, ref_lrn_grad(grads, image, output, **attrs))


@pytest.mark.parametrize("dtype", HALF_TYPES)
def test_lrn_half_types(run, dtype):
    rng = np.random.default_rng(8)
    image = rng.standard_normal((2, 2, 1, 6)).astype(dtype)
    output = run("LRN", input=image, depth_radius=2)
    assert output.dtype == dtype
    assert_close(output, ref_lrn(image, depth_radius=2), dtype)
    grads = rng.standard_normal(image.shape).astype(dtype)
    got = run("LRNGrad", input_grads=grads, input_image=image, output_image=output,
              depth_radius=2)
    assert_close(got, ref_lrn_grad(grads, image, output, depth_radius=2), dtype)


def test_lrn_of_empty_input(run):
    empty = np.zeros((0, 2, 2, 3), np.float32)
    assert run("LRN", input=empty).shape == (0, 2, 2, 3)
    assert run("LRNGrad", input_grads=empty, input_image=empty, output_image=empty).shape == \
        (0, 2, 2, 3)


X4 = np.ones((2, 2, 2, 3), F)


LRN_ERRORS = [
    ("LRN", {"input": np.ones((2, 2, 3), F)}, {}, "in must be 4-dimensional"),
    ("LRN", {"input": X4}, {"depth_radius": -1}, "depth_radius = -1 larger than int max"),
    ("LRN", {"input": X4}, {"depth_radius": 2**31 - 1},
     "depth_radius = 2147483647 larger than int max"),
    ("LRNGrad", {"input_grads": np.ones((2, 2, 3), F), "input_image": X4, "output_image": X4},
     {}, "inputs must be 4-dimensional"),
    ("LRNGrad", {"input_grads": X4, "input_image": np.ones((2, 2, 3), F), "output_image": X4},
     {}, "inputs must be 4-dimensional"),
    ("LRNGrad", {"input_grads": X4, "input_image": X4, "output_image": np.ones((2, 2, 3), F)},
     {}, "input_grads, input_image, and out_image should have the same shape"),
    ("LRNGrad", {"input_grads": np.ones((2, 2, 2, 4), F), "input_image": X4,
                 "output_image": X4}, {},
     "input_grads, input_image, and out_image should have the same shape"),
    ("LRNGrad", {"input_grads": X4, "input_image": X4, "output_image": X4},
     {"depth_radius": 2**31}, "depth_radius = 2147483648 larger than int max"),
]


@pytest.mark.parametrize("op, inputs, attrs, message", LRN_ERRORS)
def test_lrn_errors(run, op, inputs, attrs, message):
    with invalid(message):
        run(op, **inputs, **attrs)


def test_lrn_band_matrix_is_bounded_by_the_memory_budget():
    old = memory.get_memory_budget()
    memory.set_memory_budget(2**20)
    try:
        with pytest.raises(errors.ResourceExhaustedError):
            R.LRN(input=np.ones((1, 1, 1, 1024), np.float32))
    finally:
        memory.set_memory_budget(old)


# ----------------------------------------------------------------------------- static shapes

def _placeholders(shapes):
    return {name: gp.placeholder(gp.float32, shape, name=name) for name, shape in shapes.items()}


def _static(op, shapes, **attrs):
    with gp.Graph().as_default():
        outs = getattr(R, op)(**_placeholders(shapes), **attrs)
        outs = outs if isinstance(outs, (list, tuple)) else [outs]
        return [None if t.shape.rank is None else tuple(t.shape.as_list()) for t in outs]


BN_SHAPES = {"x": [None, 2, 3, None], "scale": [None], "offset": [5], "mean": [7],
             "variance": [8]}
GRAD_SHAPES = {"y_backprop": [None, 2, 3, None], "x": [1, None, 4, 5], "scale": [None],
               "reserve_space_1": [None], "reserve_space_2": None, "reserve_space_3": [3, 3]}


@pytest.mark.parametrize("op, shapes, attrs, expected", [   # as TF's graph mode infers them
    ("FusedBatchNormV3", BN_SHAPES, {}, [(None, 2, 3, 5)] + [(5,)] * 4 + [None]),
    ("FusedBatchNorm", BN_SHAPES, {}, [(None, 2, 3, 5)] + [(5,)] * 4),
    ("FusedBatchNormV3", dict(BN_SHAPES, offset=[2]), {"data_format": "NCHW"},
     [(None, 2, 3, None)]
     + [(2,)] * 4 + [None]),
    ("FusedBatchNormV3", dict(BN_SHAPES, x=[None, 2, 3, None, 4], offset=[4]),
     {"data_format": "NDHWC"}, [(None, 2, 3, None, 4)] + [(4,)] * 4 + [None]),
    ("FusedBatchNormV3", dict(BN_SHAPES, x=[None, 2, 3, None, 4], offset=[None]),
     {"data_format": "NCDHW"}, [(None, 2, 3, None, 4)] + [(2,)] * 4 + [None]),
    ("FusedBatchNormV3", dict(BN_SHAPES, mean=None, variance=[None]), {"is_training": False},
     [(None, 2, 3, 5)] + [(5,)] * 4 + [None]),
    ("FusedBatchNormV3", dict(BN_SHAPES, x=None, scale=None, offset=None), {},
     [(None,) * 4] + [(None,)] * 4 + [None]),
    ("FusedBatchNormGradV3", GRAD_SHAPES, {}, [(None, 2, 3, 5), (5,), (5,), (0,), (0,)]),
    ("FusedBatchNormGradV3", dict(GRAD_SHAPES, y_backprop=[None, 2, 3, 5, 6],
                                  x=[1, None, 4, 5, None]), {"data_format": "NCDHW"},
     [(None, 2, 3, 5, 6), (2,), (2,), (0,), (0,)]),
    ("FusedBatchNormGrad", {"y_backprop": None, "x": None, "scale": [3],
                            "reserve_space_1": [None], "reserve_space_2": None}, {},
     [(None, None, None, 3), (3,), (3,), (0,), (0,)]),
    ("LRN", {"input": [None, 2, None, 3]}, {}, [(None, 2, None, 3)]),
    ("LRN", {"input": None}, {}, [(None,) * 4]),
    ("LRNGrad", {"input_grads": None, "input_image": [None, 2, None, 3],
                 "output_image": [1, None, None, None]}, {}, [(1, 2, None, 3)]),
])
def test_static_shapes(op, shapes, attrs, expected):
    assert _static(op, shapes, **attrs) == expected


@pytest.mark.parametrize("op, shapes, attrs, message", [
    ("FusedBatchNormV3", BN_SHAPES, {"is_training": False},
     "Dimensions must be equal, but are 5 and 7"),
    ("FusedBatchNormV3", BN_SHAPES, {"exponential_avg_factor": 0.5},
     "Dimensions must be equal, but are 5 and 7"),
    ("FusedBatchNormV3", dict(BN_SHAPES, x=[None, 2, 3, None, 4]), {},
     "Shape must be rank 4 but is rank 5"),
    ("FusedBatchNormV3", dict(BN_SHAPES, scale=[3, 1]), {}, "Shape must be rank 1 but is rank 2"),
    ("FusedBatchNormGradV3", dict(GRAD_SHAPES, y_backprop=[None, 2, 3, 4]), {},
     "Dimensions must be equal, but are 4 and 5"),
    ("FusedBatchNormGradV3", dict(GRAD_SHAPES, x=[1, 2, 3]), {},
     "Shape must be rank 4 but is rank 3"),
    ("LRN", {"input": [1, 2, 3]}, {}, "Shape must be rank 4 but is rank 3"),
    ("LRNGrad", {"input_grads": [1, 2, 3, 4], "input_image": [1, 2, 3, 5],
                 "output_image": None}, {}, "Dimension 3 in both shapes must be equal, but are "
     "4 and 5. Shapes are [1,2,3,4] and [1,2,3,5]."),
    ("LRNGrad", {"input_grads": None, "input_image": [1, 2, 3], "output_image": None}, {},
     "Shapes must be equal rank, but are 4 and 3"),
])
def test_static_shape_errors(op, shapes, attrs, message):
    with pytest.raises(errors.InvalidArgumentError, match=message.replace("[", r"\[")
                       .replace("]", r"\]").replace(".", r"\.")):
        _static(op, shapes, **attrs)
