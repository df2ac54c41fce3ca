"""gp.nn against tf.compat.v1.nn: each wrapper built in a graph here and in TF from the
same placeholders gives the same op types (Const and Placeholder aside, in creation order),
the same output name and the same values. Skips without TensorFlow."""

import numpy as np
import pytest

import graphops as gp

tf = pytest.importorskip("tensorflow")
tf1 = tf.compat.v1

F64 = np.float64


def _floats(*shape):
    return ("float", shape)


def _ints(high, *shape):
    return ("int", high, shape)


def _probs(*shape):
    return ("probs", shape)


def _value(spec, rng):
    if spec[0] == "float":
        return rng.standard_normal(spec[1]).astype(F64)
    if spec[0] == "int":
        return rng.integers(0, spec[1], spec[2]).astype(np.int32)
    p = rng.uniform(0.1, 1, spec[1])
    return (p / p.sum(axis=-1, keepdims=True)).astype(F64)


def _placeholder_dtype(module, spec):
    if spec[0] == "int":
        return module.int32
    return module.float64


# name: (build(nn, *placeholders), input specs)
CASES = {
    "conv1d": (lambda nn, x, w: nn.conv1d(x, w, 2, "SAME"), [_floats(2, 9, 3), _floats(3, 3, 4)]),
    "conv1d_ncw_dilated": (
        lambda nn, x, w: nn.conv1d(x, w, 1, "VALID", data_format="NCW", dilations=2),
        [_floats(2, 3, 9), _floats(3, 3, 4)]),
    "conv2d_folded_batch": (lambda nn, x, w: nn.conv2d(x, w, [1, 1, 1, 1], "SAME"),
                            [_floats(2, 5, 2, 3, 3), _floats(1, 1, 3, 4)]),
    "conv2d_transpose": (
        lambda nn, x, w: nn.conv2d_transpose(x, w, [2, 8, 8, 3], [1, 2, 2, 1], "SAME"),
        [_floats(2, 4, 4, 4), _floats(3, 3, 3, 4)]),
    "conv3d_transpose": (
        lambda nn, x, w: nn.conv3d_transpose(x, w, [1, 5, 5, 5, 2], [1, 2, 2, 2, 1], "VALID"),
        [_floats(1, 2, 2, 2, 3), _floats(3, 3, 3, 2, 3)]),
    "conv1d_transpose": (
        lambda nn, x, w: nn.conv1d_transpose(x, w, [2, 8, 3], 2, "SAME"),
        [_floats(2, 4, 4), _floats(3, 3, 4)]),
    "atrous_conv2d_transpose": (
        lambda nn, x, w: nn.atrous_conv2d_transpose(x, w, [2, 7, 8, 3], 2, "SAME"),
        [_floats(2, 7, 8, 2), _floats(3, 3, 3, 2)]),
    "depthwise_conv2d": (lambda nn, x, w: nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "SAME"),
                         [_floats(2, 8, 8, 3), _floats(3, 3, 3, 2)]),
    "depthwise_conv2d_rate": (
        lambda nn, x, w: nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "SAME", rate=[2, 2]),
        [_floats(2, 7, 8, 3), _floats(3, 3, 3, 2)]),
    "depthwise_conv2d_rate_valid": (
        lambda nn, x, w: nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "VALID", rate=[2, 3]),
        [_floats(1, 9, 10, 2), _floats(2, 3, 2, 2)]),
    "separable_conv2d": (
        lambda nn, x, d, p: nn.separable_conv2d(x, d, p, [1, 1, 1, 1], "SAME", rate=[2, 2]),
        [_floats(2, 8, 8, 3), _floats(3, 3, 3, 2), _floats(1, 1, 6, 5)]),
    "atrous_conv2d": (lambda nn, x, w: nn.atrous_conv2d(x, w, 2, "SAME"),
                      [_floats(2, 8, 9, 3), _floats(3, 3, 3, 2)]),
    "convolution_dilated_3d": (
        lambda nn, x, w: nn.convolution(x, w, "VALID", dilation_rate=[1, 2, 2]),
        [_floats(1, 5, 6, 6, 2), _floats(2, 2, 2, 2, 3)]),
    "convolution_nchw_dilated": (
        lambda nn, x, w: nn.convolution(x, w, "SAME", dilation_rate=[2, 2], data_format="NCHW"),
        [_floats(2, 3, 8, 8), _floats(3, 3, 3, 2)]),
    "sigmoid_xent": (lambda nn, z, x: nn.sigmoid_cross_entropy_with_logits(labels=z, logits=x),
                     [_floats(4, 3), _floats(4, 3)]),
    "weighted_xent": (lambda nn, z, x: nn.weighted_cross_entropy_with_logits(
        labels=z, logits=x, pos_weight=2.5), [_probs(4, 3), _floats(4, 3)]),
    "softmax_xent_v1": (lambda nn, z, x: nn.softmax_cross_entropy_with_logits(
        labels=z, logits=x), [_probs(4, 3), _floats(4, 3)]),
    "softmax_xent_v2_3d": (lambda nn, z, x: nn.softmax_cross_entropy_with_logits_v2(
        labels=z, logits=x), [_probs(2, 4, 3), _floats(2, 4, 3)]),
    "softmax_xent_v2_axis0": (lambda nn, z, x: nn.softmax_cross_entropy_with_logits_v2(
        labels=z, logits=x, axis=0), [_probs(4, 3), _floats(4, 3)]),
    "softmax_xent_broadcast_labels": (lambda nn, z, x: nn.softmax_cross_entropy_with_logits(
        labels=z, logits=x), [_probs(2), _floats(1, 2)]),
    "sparse_xent": (lambda nn, z, x: nn.sparse_softmax_cross_entropy_with_logits(
        labels=z, logits=x), [_ints(3, 4), _floats(4, 3)]),
    "sparse_xent_3d": (lambda nn, z, x: nn.sparse_softmax_cross_entropy_with_logits(
        labels=z, logits=x), [_ints(3, 2, 4), _floats(2, 4, 3)]),
    "l2_loss": (lambda nn, x: nn.l2_loss(x), [_floats(4, 3)]),
    "l2_normalize": (lambda nn, x: nn.l2_normalize(x, 1), [_floats(4, 3)]),
    "l2_normalize_dim": (lambda nn, x: nn.l2_normalize(x, dim=[0, 1], epsilon=1e-3),
                         [_floats(4, 3)]),
    "relu_layer": (lambda nn, x, w, b: nn.relu_layer(x, w, b),
                   [_floats(4, 3), _floats(3, 2), _floats(2)]),
    "xw_plus_b": (lambda nn, x, w, b: nn.xw_plus_b(x, w, b, name="dense"),
                  [_floats(4, 3), _floats(3, 2), _floats(2)]),
    "crelu": (lambda nn, x: nn.crelu(x), [_floats(4, 3)]),
    "sigmoid": (lambda nn, x: nn.sigmoid(x), [_floats(4, 3)]),
    "softmax_dim0": (lambda nn, x: nn.softmax(x, dim=0), [_floats(4, 3)]),
    "log_softmax_axis1_of_3": (lambda nn, x: nn.log_softmax(x, axis=1, name="ls"),
                               [_floats(2, 4, 3)]),
    "softmax_last_axis_positive": (lambda nn, x: nn.softmax(x, axis=1), [_floats(4, 3)]),
    "tanh": (lambda nn, x: nn.tanh(x), [_floats(4, 3)]),
    "weighted_moments": (lambda nn, x, w: nn.weighted_moments(x, [0], w)[1],
                         [_floats(4, 3), _probs(1, 3)]),
    "moments_keep_dims": (lambda nn, x: nn.moments(x, [0, 1], keep_dims=True)[1],
                          [_floats(4, 3)]),
    "embedding_lookup": (lambda nn, p, i: nn.embedding_lookup(p, i), [_floats(10, 3),
                                                                       _ints(10, 5)]),
    "embedding_lookup_list": (lambda nn, p, i: nn.embedding_lookup([p], i, name="emb"),
                              [_floats(10, 3), _ints(10, 2, 2)]),
    "embedding_lookup_max_norm": (lambda nn, p, i: nn.embedding_lookup(p, i, max_norm=1.5),
                                  [_floats(10, 3), _ints(10, 2, 2)]),
    "top_k_values": (lambda nn, x: nn.top_k(x, 2).values, [_floats(4, 5)]),
    "top_k_indices": (lambda nn, x: nn.top_k(x, 3).indices, [_floats(4, 5)]),
    "in_top_k": (lambda nn, x, t: nn.in_top_k(x, t, 2), [_floats(4, 5), _ints(5, 4)]),
}
CASES["in_top_k"][1][0] = ("float32", (4, 5))     # InTopKV2 takes float32 predictions
# TF's CPU kernels refuse channels-first convolutions: op types only (tests/test_tf1_nn.py
# checks the values against a reference).
TYPES_ONLY = {"conv1d_ncw_dilated", "convolution_nchw_dilated"}


def _build(module, nn, case):
    build, specs = CASES[case]
    graph = module.Graph()
    with graph.as_default():
        holders = [module.placeholder(module.float32 if spec[0] == "float32"
                                      else _placeholder_dtype(module, spec), spec[-1])
                   for spec in specs]
        out = build(nn, *holders)
    return graph, holders, out


def _values(case):
    rng = np.random.default_rng(len(case))
    specs = CASES[case][1]
    return [rng.standard_normal(s[1]).astype(np.float32) if s[0] == "float32"
            else _value(s, rng) for s in specs]


def _types(graph):
    return [op.type for op in graph.get_operations() if op.type not in ("Const", "Placeholder")]


@pytest.mark.parametrize("case", sorted(CASES))
def test_wrapper_matches_tensorflow(case):
    values = _values(case)
    tf_graph, tf_holders, tf_out = _build(tf1, tf1.nn, case)
    gp_graph, gp_holders, gp_out = _build(gp, gp.nn, case)
    assert _types(gp_graph) == _types(tf_graph)
    assert gp_out.name == tf_out.name
    if case in TYPES_ONLY:
        return
    with tf1.Session(graph=tf_graph) as sess:
        want = sess.run(tf_out, dict(zip(tf_holders, values)))
    with gp.Session(graph=gp_graph) as sess:
        got = sess.run(gp_out, dict(zip(gp_holders, values)))
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-10)
    eager = CASES[case][0](gp.nn, *values)
    np.testing.assert_allclose(eager, want, rtol=1e-9, atol=1e-10)
