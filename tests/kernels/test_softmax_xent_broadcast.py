"""SoftmaxCrossEntropyWithLogits broadcasting its labels against its features as TF 2.21
does (xent_op.cc's BCast; the shape function's broadcast fallback): shapes, values on every
device path, TF's messages, and gradients summed back to a broadcast operand."""

import numpy as np
import pytest

import graphops as gp
from op_runners import P, build, invalid

R = gp.raw_ops


def _reference(features, labels):
    features, labels = np.broadcast_arrays(np.asarray(features, np.float64),
                                           np.asarray(labels, np.float64))
    shifted = features - features.max(-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    return -(labels * log_probs).sum(-1), np.exp(log_probs) - labels


@pytest.mark.parametrize("features, labels", [
    ((1, 2), (2,)), ((2,), (1, 2)), ((4, 3), (1, 3)), ((1, 3), (4, 3)), ((4, 1), (4, 3)),
    ((5, 1), (1, 3)), ((4, 3), (3,)), ((4, 3), (4, 3))])
def test_values_broadcast(run, features, labels):
    rng = np.random.default_rng(sum(features) + 7 * sum(labels))
    f = rng.standard_normal(features)
    lab = rng.dirichlet(np.ones(labels[-1]), labels[:-1] or None).reshape(labels)
    loss, backprop = run("SoftmaxCrossEntropyWithLogits", features=f, labels=lab)
    want_loss, want_backprop = _reference(f, lab)
    np.testing.assert_allclose(loss, want_loss, rtol=1e-12)
    np.testing.assert_allclose(backprop, want_backprop, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("features, labels, message", [
    ((3, 3), (2, 3), "logits and labels must be broadcastable: logits_size=[3,3] "
                     "labels_size=[2,3]"),
    ((3,), (3,), "logits and labels must be either 2-dimensional, or broadcasted to be "
                 "2-dimensional"),
    ((2, 3), (1, 1, 3), "logits and labels must be either 2-dimensional, or broadcasted to "
                        "be 2-dimensional")])
def test_kernel_errors(run, features, labels, message):
    with invalid(message):
        run("SoftmaxCrossEntropyWithLogits", features=np.zeros(features), labels=np.zeros(labels))


@pytest.mark.parametrize("features, labels, loss, backprop", [
    ([1, 2], [2], [1], [1, 2]), ([2], [1, 2], [1], [1, 2]), ([4, 1], [1, 3], [4], [4, 3]),
    ([None, 3], [2, None], [2], [2, 3]), ([1, 3], [None], [1], [1, 3]),
    ([None, None], [1], [None], [None, None]), (None, None, [None], [None, None]),
    ([None, 3], None, [None], [None, 3])])
def test_shape_inference(features, labels, loss, backprop):
    out = build("SoftmaxCrossEntropyWithLogits", features=P(features), labels=P(labels))
    assert out.loss.shape.as_list() == loss
    assert out.backprop.shape.as_list() == backprop


@pytest.mark.parametrize("features, labels, message", [
    ([3], [3], "Shape must be broadcasted with rank 2, but is rank 1"),
    ([2, 3], [1, 1, 3], "Shape must be broadcasted with rank 2, but is rank 3"),
    ([3, 3], [2, 3], "Dimensions must be equal, but are 3 and 2"),
    (None, [None], "Shape must be broadcasted with rank 2, but is rank is unknown."),
    ([None], None, "Shape must be broadcasted with rank 2, but is rank is unknown.")])
def test_shape_errors(features, labels, message):
    with invalid(message):
        build("SoftmaxCrossEntropyWithLogits", features=P(features), labels=P(labels))


@pytest.mark.parametrize("features, labels", [((1, 3), (4, 3)), ((4, 3), (3,)),
                                              ((2, 1), (2, 3))])
def test_gradients_sum_back_to_each_operand(features, labels):
    rng = np.random.default_rng(3)
    # rows of labels sum to 1: the fused op's gradient (softmax - labels) assumes it
    values = [rng.standard_normal(features),
              rng.dirichlet(np.ones(labels[-1]), labels[:-1] or None).reshape(labels)]
    with gp.Graph().as_default():
        f, lab = (gp.placeholder(gp.float64, v.shape) for v in values)
        loss = R.SoftmaxCrossEntropyWithLogits(features=f, labels=lab).loss
        grads = gp.gradients(loss, [f, lab])
        assert [g.shape.as_list() for g in grads] == [list(features), list(labels)]
        with gp.Session():
            error = gp.test.compute_gradient_error(
                [f, lab], [features, labels], loss, loss.shape.as_list(), x_init_value=values)
    assert error < 1e-6


def test_wrapper_trains_through_broadcast_labels():
    """Issue 14's program: labels [2] against logits [1, 2] trains instead of failing."""
    with gp.Graph().as_default():
        w = gp.Variable(np.zeros((1, 2), np.float32))
        loss = gp.reduce_mean(gp.nn.softmax_cross_entropy_with_logits(
            labels=np.float32([0, 1]), logits=w))
        step = gp.train.GradientDescentOptimizer(1.0).minimize(loss)
        with gp.Session() as sess:
            sess.run(gp.global_variables_initializer())
            before = sess.run(loss)
            for _ in range(3):
                sess.run(step)
            assert sess.run(loss) < before
