"""gp.losses (TF1's tf.compat.v1.losses) against plain NumPy: each loss under each
Reduction, weights broadcast, the LOSSES collection and get_total_loss, eager use, and
TF's errors. tests/test_losses_tf_oracle.py compares op types and values with TF."""

import numpy as np
import pytest

import graphops as gp

L = gp.losses
RNG = np.random.default_rng(0)
X = RNG.standard_normal((4, 3)).astype(np.float32)
Y = RNG.standard_normal((4, 3)).astype(np.float32)
W = np.float32([[1], [0], [2], [0.5]])


def _reduce(losses, weights, reduction):
    """What compute_weighted_loss computes, in float64."""
    losses = np.asarray(losses, np.float64)
    weighted = losses * weights
    if reduction == L.Reduction.NONE:
        return weighted
    total = weighted.sum()
    if reduction == L.Reduction.SUM:
        return total
    if reduction == L.Reduction.MEAN:
        denominator = (np.ones_like(losses) * weights).sum()
    elif reduction == L.Reduction.SUM_OVER_BATCH_SIZE:
        denominator = losses.size
    else:
        denominator = np.broadcast_to(np.asarray(weights) != 0, losses.shape).sum()
    return total / denominator if denominator else 0.0


def _in_graph(build, *values):
    with gp.Graph().as_default() as g:
        holders = [gp.placeholder(gp.as_dtype(v.dtype), v.shape) for v in values]
        out = build(*holders)
        with gp.Session() as sess:
            return sess.run(out, dict(zip(holders, values))), g


REDUCTIONS = [L.Reduction.NONE, L.Reduction.SUM, L.Reduction.MEAN,
              L.Reduction.SUM_OVER_BATCH_SIZE, L.Reduction.SUM_BY_NONZERO_WEIGHTS]


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weights", [1.0, 0.0, W], ids=["one", "zero", "rows"])
def test_reductions(reduction, weights):
    want = _reduce((X - Y) ** 2, weights, reduction)
    got, graph = _in_graph(lambda y, x: L.mean_squared_error(y, x, weights, reduction=reduction),
                           Y, X)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
    assert graph.get_collection(gp.GraphKeys.LOSSES)[0].name.startswith("mean_squared_error/")
    np.testing.assert_allclose(L.mean_squared_error(Y, X, weights, reduction=reduction), want,
                               rtol=1e-5, atol=1e-7)


def _sigmoid_xent(z, x):
    return np.maximum(x, 0) - x * z + np.log1p(np.exp(-np.abs(x)))


def _log_softmax(x):
    s = x - x.max(-1, keepdims=True)
    return s - np.log(np.exp(s).sum(-1, keepdims=True))


P = RNG.uniform(0.05, 0.95, (4, 3)).astype(np.float32)
B = RNG.integers(0, 2, (4, 3)).astype(np.float32)
K = RNG.integers(0, 3, (4,)).astype(np.int32)
ONEHOT = np.eye(3, dtype=np.float32)[K]


@pytest.mark.parametrize("build, elementwise", [
    (lambda: L.absolute_difference(Y, X, W), np.abs(X - Y)),
    (lambda: L.huber_loss(Y, X, W, delta=0.5),
     np.where(np.abs(X - Y) <= 0.5, 0.5 * (X - Y) ** 2, 0.5 * np.abs(X - Y) - 0.125)),
    (lambda: L.log_loss(B, P, W),
     -B * np.log(P + 1e-7) - (1 - B) * np.log(1 - P + 1e-7)),
    (lambda: L.hinge_loss(B, X, W), np.maximum(1 - (2 * B - 1) * X, 0)),
    (lambda: L.cosine_distance(P, X, axis=1, weights=W),
     1 - (P * X).sum(1, keepdims=True)),
    (lambda: L.sigmoid_cross_entropy(B, X, W, label_smoothing=0.2),
     _sigmoid_xent(B * 0.8 + 0.1, X)),
    (lambda: L.softmax_cross_entropy(ONEHOT, X, W[:, 0], label_smoothing=0.3),
     -((ONEHOT * 0.7 + 0.1) * _log_softmax(X)).sum(-1)),
    (lambda: L.sparse_softmax_cross_entropy(K, X, W),
     -_log_softmax(X)[np.arange(4), K]),
    (lambda: L.sparse_softmax_cross_entropy(K[:, None], X, W[:, 0]),
     -_log_softmax(X)[np.arange(4), K]),
], ids=["absolute_difference", "huber", "log_loss", "hinge", "cosine", "sigmoid_xent",
        "softmax_xent", "sparse_xent", "sparse_xent_squeezed"])
def test_losses_match_reference(build, elementwise):
    weights = W if elementwise.shape == (4, 3) or elementwise.shape == (4, 1) else W[:, 0]
    want = _reduce(elementwise, weights, L.Reduction.SUM_BY_NONZERO_WEIGHTS)
    np.testing.assert_allclose(build(), want, rtol=2e-5)
    with gp.Graph().as_default() as g:
        loss = build()
        assert g.get_collection(gp.GraphKeys.LOSSES) == [loss]
        with gp.Session() as sess:
            np.testing.assert_allclose(sess.run(loss), want, rtol=2e-5)


def test_compute_weighted_loss_keeps_the_losses_dtype_and_collections():
    x64 = RNG.standard_normal((4, 3))
    got, graph = _in_graph(lambda x: L.compute_weighted_loss(x, W, loss_collection="mine"), x64)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, _reduce(x64, W, L.Reduction.SUM_BY_NONZERO_WEIGHTS),
                               rtol=1e-6)
    assert len(graph.get_collection("mine")) == 1 and not graph.get_collection("losses")


def test_total_and_regularization_losses():
    with gp.Graph().as_default():
        assert L.get_regularization_loss().op.type == "Const"
        a = L.absolute_difference(Y, X)
        b = L.mean_squared_error(Y, X, scope="second")
        gp.add_to_collection(gp.GraphKeys.REGULARIZATION_LOSSES, gp.constant(2.0))
        assert L.get_losses() == [a, b] and L.get_losses(scope="second") == [b]
        total = L.get_total_loss()
        assert total.name == "total_loss:0" and total.op.type == "AddN"
        only_a = L.get_total_loss(add_regularization_losses=False, scope="absolute")
        assert only_a.op.type == "Identity"
        reg = L.get_regularization_loss()
        assert reg.name == "total_regularization_loss:0"
        with gp.Session() as sess:
            want = np.abs(X - Y).mean() + ((X - Y) ** 2).mean() + 2
            np.testing.assert_allclose(sess.run(total), want, rtol=1e-5)
    L.add_loss(np.float32(1))   # eagerly: nothing to collect, no error


def test_errors():
    with pytest.raises(ValueError, match="Invalid Reduction Key bogus"):
        L.mean_squared_error(Y, X, reduction="bogus")
    with pytest.raises(ValueError, match="Argument `labels` must not be None."):
        L.mean_squared_error(None, X)
    with pytest.raises(ValueError, match="You must specify argument `axis`."):
        L.cosine_distance(Y, X)
    with pytest.raises(ValueError, match=r"Shapes \(4, 3\) and \(3, 4\) are incompatible"):
        L.absolute_difference(Y.T, X)
    with pytest.raises(ValueError, match=r"weights can not be broadcast to values. Mismatch at "
                                         r"dim 0. values.shape=\[4 3\], weights.shape=\[2 3\]."):
        L.mean_squared_error(Y, X, weights=np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match=r"weights can not be broadcast to values. values.rank=2. "
                                         r"weights.rank=1. values.shape=\(4, 3\). "
                                         r"weights.shape=\(3,\)."):
        L.mean_squared_error(Y, X, weights=np.ones(3, np.float32))
