"""gp.losses against tf.compat.v1.losses: the same op types (Const/Placeholder aside),
output names, LOSSES collection and values. Skips without TensorFlow."""

import numpy as np
import pytest

import graphops as gp

tf = pytest.importorskip("tensorflow")
tf1 = tf.compat.v1


def _probs(rng, shape):
    p = rng.uniform(0.05, 1, shape)
    return (p / p.sum(axis=-1, keepdims=True)).astype(np.float32)


def _inputs(rng):
    return {"x": rng.standard_normal((4, 3)).astype(np.float32),
            "y": rng.standard_normal((4, 3)).astype(np.float32),
            "p": _probs(rng, (4, 3)),
            "b": rng.integers(0, 2, (4, 3)).astype(np.float32),
            "w": np.float32([[1], [0], [2], [0.5]]),
            "k": rng.integers(0, 3, (4,)).astype(np.int32),
            "x64": rng.standard_normal((4, 3))}


# name: build(losses module, namespace of placeholders)
CASES = {
    "mean_squared_error": lambda L, t: L.mean_squared_error(t.y, t.x),
    "mse_weighted": lambda L, t: L.mean_squared_error(t.y, t.x, weights=t.w),
    "mse_mean": lambda L, t: L.mean_squared_error(t.y, t.x, reduction=L.Reduction.MEAN),
    "mse_sum": lambda L, t: L.mean_squared_error(t.y, t.x, weights=2.0,
                                                 reduction=L.Reduction.SUM),
    "mse_none": lambda L, t: L.mean_squared_error(t.y, t.x, reduction=L.Reduction.NONE),
    "mse_batch": lambda L, t: L.mean_squared_error(
        t.y, t.x, reduction=L.Reduction.SUM_OVER_BATCH_SIZE),
    "absolute_difference": lambda L, t: L.absolute_difference(t.y, t.x, scope="abs"),
    "huber_loss": lambda L, t: L.huber_loss(t.y, t.x, delta=0.5),
    "log_loss": lambda L, t: L.log_loss(t.b, t.p),
    "hinge_loss": lambda L, t: L.hinge_loss(t.b, t.x),
    "cosine_distance": lambda L, t: L.cosine_distance(t.p, t.p, axis=1),
    "sigmoid_cross_entropy": lambda L, t: L.sigmoid_cross_entropy(t.b, t.x,
                                                                  label_smoothing=0.2),
    "softmax_cross_entropy": lambda L, t: L.softmax_cross_entropy(t.p, t.x,
                                                                  label_smoothing=0.1),
    "sparse_softmax_cross_entropy": lambda L, t: L.sparse_softmax_cross_entropy(t.k, t.x),
    "compute_weighted_loss_float64": lambda L, t: L.compute_weighted_loss(t.x64, t.w),
    "total_loss": lambda L, t: (L.absolute_difference(t.y, t.x),
                                L.mean_squared_error(t.y, t.x), L.get_total_loss())[-1],
}


class _Holders:
    def __init__(self, module, values):
        for key, value in values.items():
            dtype = {np.float32: module.float32, np.int32: module.int32,
                     np.float64: module.float64}[value.dtype.type]
            setattr(self, key, module.placeholder(dtype, value.shape, name=key))


def _build(module, case, values):
    graph = module.Graph()
    with graph.as_default():
        holders = _Holders(module, values)
        out = CASES[case](module.losses, holders)
        collection = [t.name for t in graph.get_collection("losses")]
    feeds = {getattr(holders, k): v for k, v in values.items()}
    return graph, out, feeds, collection


def _types(graph):
    return [op.type for op in graph.get_operations() if op.type not in ("Const", "Placeholder")]


@pytest.mark.parametrize("case", sorted(CASES))
def test_loss_matches_tensorflow(case):
    values = _inputs(np.random.default_rng(len(case)))
    tf_graph, tf_out, tf_feeds, tf_collection = _build(tf1, case, values)
    gp_graph, gp_out, gp_feeds, gp_collection = _build(gp, case, values)
    assert _types(gp_graph) == _types(tf_graph)
    assert gp_out.name == tf_out.name
    assert gp_collection == tf_collection
    with tf1.Session(graph=tf_graph) as sess:
        want = sess.run(tf_out, tf_feeds)
    with gp.Session(graph=gp_graph) as sess:
        got = sess.run(gp_out, gp_feeds)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6)
