"""The generic N-d Conv against TensorFlow: values where TF's CPU kernel computes the config
(one group, channels-last), static shapes and shape-function messages in graph mode, the
kernel's messages eagerly, and the ops Keras' transposed-conv layers emit. Skipped when
TensorFlow is not installed."""


import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings

import graphops as gp
from graphops.registry import get_op_def
from tests.kernels.test_conv_generic import configs

tf = pytest.importorskip("tensorflow")
tf1 = tf.compat.v1


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(config=configs(max_groups=1, layouts=(True,)))
def test_values_match_tensorflow(config):
    x, w, attrs, _ = config
    try:
        want = tf.raw_ops.Conv(input=x, filter=w, **attrs).numpy()
    except (tf.errors.UnimplementedError, tf.errors.InvalidArgumentError):
        assume(False)   # a valid config TF's CPU build refuses (3-D dilations, ...)
    got = gp.raw_ops.Conv(input=x, filter=w, **attrs)
    assert got.shape == want.shape
    scale = max(1.0, np.abs(want).max(initial=0))
    np.testing.assert_allclose(got, want, rtol=0,
                               atol=(1e-4 if x.dtype == np.float32 else 1e-10) * scale)


SHAPE_CASES = [
    ([None, 5, 5, 2], [3, 3, 2, 4], {}),
    ([2, None, 5, 5, 2], [3, 3, 2, 4], {"batch_dims": 2}),
    ([5, 5, 2], [3, 3, 2, 4], {"batch_dims": 0}),
    ([1, 2, None, 5, 5], [3, 3, 3, 2, 4], {"strides": [1] * 5, "padding": "SAME",
                                           "data_format": "CHANNELS_FIRST"}),
    ([1, 5, 5, 2], [None, 3, 2, 4], {"dilations": [1, 1, 2, 1]}),
    ([1, 5, 5, 2], [3, 3, 2, 4], {"padding": "EXPLICIT", "strides": [1, 2, 1, 1],
                                  "explicit_paddings": [0, 0, 1, 2, 3, 0, 0, 0]}),
    ([1, 2, 5, 5], [3, 3, 2, 4], {"padding": "EXPLICIT", "data_format": "CHANNELS_FIRST",
                                  "explicit_paddings": [0, 0, 0, 0, 1, 2, 3, 0]}),
    ([1, 5, 5, 4], [3, 3, 2, 4], {"groups": 2}),
    ([1, 5, 5, None], [3, 3, 2, 4], {"groups": 2}),
    (None, [3, 3, 2, 4], {"batch_dims": -1}),
    ([1, 5, 5, 2], None, {"strides": [1]}),
    ([1, 5, 5], [3, 3, 2, 4], {}),
    ([1, 5, 5, 2], [3, 3, 4], {"strides": [1, 1, 1]}),
    ([1, 5, 5, 2], [3, 3, 3, 2, 4], {"strides": [1] * 5}),
    ([1, 5, 5, 2], [3, 3, 2, 4], {"batch_dims": -1}),
    ([1, 5, 5, 2], [3, 3, 2, 4], {"batch_dims": 0}),
    ([1, 5, 5, 2], [3, 3, 2, 4], {"dilations": [1, 2, 1]}),
    ([1, 5, 5, 2], [3, 3, 2, 4], {"strides": [1, 1, 1]}),
    ([1, 5, 5, 4], [3, 3, 3, 4], {"groups": 3}),
    ([1, 5, 5, 4], [3, 3, 2, 3], {"groups": 2}),
    ([1, 5, 5, 4], [3, 3, 0, 4], {"groups": 2}),
    ([1, 5, 5, 6], [3, 3, 4, 4], {"groups": 2}),
    ([1, 5, 5, 6], [3, 3, 2, 4], {"groups": 2}),
    ([1, 5, 5, 4], [3, 3, 2, 4], {}),
    ([1, 5, 5, 2], [3, 3, 2, 4], {"groups": 0}),
    ([1, 5, 5, 5, 2], [3, 3, 3, 2, 4], {"strides": [1] * 5, "padding": "EXPLICIT"}),
    ([1, 5, 5, 2], [3, 3, 2, 4], {"padding": "EXPLICIT", "explicit_paddings": [1, 2, 3]}),
    ([1, 5, 5, 2], [3, 3, 2, 4], {"padding": "EXPLICIT", "data_format": "CHANNELS_FIRST",
                                  "explicit_paddings": [0, 0, 1, 1, 0, 0, 0, 0]}),
    ([1, 5, 5, 2], [6, 3, 2, 4], {}),
    ([1, 2, 2, 2], [3, 3, 2, 4], {"padding": "EXPLICIT", "explicit_paddings": [0] * 8}),
    ([1, 5, 5, 2], [3, 3, 2, 4], {"strides": [1, 0, 1, 1], "dilations": [1, 0, 1, 1]}),
    ([1, 5, 5, 2], [3, 3, 2, 4], {"padding": "SAME", "dilations": [1, 1, 0, 1]}),
]


def _static(module, placeholder, x_shape, w_shape, attrs):
    attrs = {"strides": [1, 1, 1, 1], "padding": "VALID", **attrs}
    try:
        shape = module.raw_ops.Conv(input=placeholder(module.float32, x_shape),
                                    filter=placeholder(module.float32, w_shape), **attrs).shape
    except ValueError as e:
        return str(e).split(" for '{{node")[0]
    return None if shape.rank is None else shape.as_list()


@pytest.mark.parametrize("x_shape, w_shape, attrs", SHAPE_CASES)
def test_static_shapes_and_messages_match_tensorflow(x_shape, w_shape, attrs):
    with tf.Graph().as_default():
        want = _static(tf, tf1.placeholder, x_shape, w_shape, attrs)
    with gp.Graph().as_default():
        got = _static(gp, gp.placeholder, x_shape, w_shape, attrs)
    assert got == want


X4, W4 = np.ones((1, 5, 5, 2), np.float32), np.ones((3, 3, 2, 4), np.float32)


@pytest.mark.parametrize("x, w, attrs", [
    (X4, W4, {"batch_dims": 0}), (X4[0, 0], W4, {}), (X4, np.ones((3, 3, 2, 0), np.float32), {}),
    (X4, np.ones((3, 3, 4), np.float32), {}), (X4, W4, {"strides": [1, 1, 1]}),
    (X4, W4, {"strides": [2, 1, 1, 1]}), (X4, W4, {"strides": [1, 0, 1, 1]}),
    (X4, W4, {"dilations": [1, 2, 2]}), (X4, W4, {"dilations": [1, 1, 1, 2]}),
    (X4, W4, {"dilations": [1, 0, 1, 1]}),
    (X4, W4, {"padding": "EXPLICIT", "explicit_paddings": [0, 0, 1, 1]}),
    (X4, W4, {"padding": "EXPLICIT", "explicit_paddings": [1, 0, 0, 0, 0, 0, 0, 0]}),
    (X4, W4, {"padding": "EXPLICIT", "explicit_paddings": [0, 0, -1, 0, 0, 0, 0, 0]}),
    (X4, W4, {"explicit_paddings": [0] * 8}),
    (np.ones((1, 5, 5, 4), np.float32), W4, {}),
    (np.ones((1, 1, 1, 2), np.float32), W4, {}),
])
def test_kernel_messages_match_tensorflow(x, w, attrs):
    attrs = {"strides": [1, 1, 1, 1], "padding": "VALID", **attrs}
    with pytest.raises(tf.errors.OpError) as want:
        tf.raw_ops.Conv(input=x, filter=w, **attrs)
    with pytest.raises(gp.errors.OpError) as got:
        gp.raw_ops.Conv(input=x, filter=w, **attrs)
    assert type(got.value).__name__ == type(want.value).__name__
    message = want.value.message.split("}} ")[-1].split(" [Op:")[0]
    assert message in got.value.message


@pytest.mark.parametrize("layer, shape, op", [
    ("Conv2DTranspose", (1, 5, 5, 2), "Conv2DBackpropInput"),
    ("Conv3DTranspose", (1, 4, 4, 4, 2), "Conv3DBackpropInputV2"),
    ("Conv1DTranspose", (1, 5, 2), "Conv2DBackpropInput"),
])
def test_keras_transposed_convs_emit_ops_graphops_has(layer, shape, op):
    keras = pytest.importorskip("keras")
    conv = getattr(keras.layers, layer)(3, 3, strides=2, padding="same")
    graph = tf.function(conv).get_concrete_function(tf.TensorSpec(shape, tf.float32)).graph
    types = {o.type for o in graph.get_operations()}
    assert op in types
    for op_type in types - {"NoOp", "ReadVariableOp", "Placeholder"}:   # variables: graphops'
        assert get_op_def(op_type) is not None                           # own resource ops


@pytest.mark.parametrize("x_shape, w_shape, kwargs", [
    ((2, 7, 3), (3, 3, 4), {"padding": "SAME", "strides": 2}),
    ((1, 6, 6, 2), (3, 3, 2, 4), {"padding": "VALID", "dilations": 2}),
    ((2, 5, 5, 5, 2), (2, 2, 2, 2, 3), {"padding": "SAME", "strides": [1, 2, 1]}),
    ((2, 3, 6, 6, 2), (3, 3, 2, 4), {"padding": "VALID"}),
])
def test_nn_convolution_matches_tensorflow(x_shape, w_shape, kwargs):
    rng = np.random.default_rng(6)
    x, w = rng.standard_normal(x_shape), rng.standard_normal(w_shape)
    want = tf1.nn.convolution(x, w, **kwargs).numpy()
    np.testing.assert_allclose(gp.nn.convolution(x, w, **kwargs), want, atol=1e-10)
