"""TF1's optimizers on an embedding model against TensorFlow: a table read only through
lookups with repeated ids (a sparse gradient), a second table read by a lookup and densely
(its gradient made dense), a bias (dense), four steps of different batches, on resource
and on reference variables; all values equal within 1e-6, and the same update nodes
(names and types).
Skipped when TensorFlow is not installed."""

import numpy as np
import pytest

import graphops as gp

tf = pytest.importorskip("tensorflow")
tf1 = tf.compat.v1

OPTIMIZERS = {
    "gradient_descent": lambda t: t.GradientDescentOptimizer(0.1),
    "momentum": lambda t: t.MomentumOptimizer(0.1, 0.9),
    "nesterov": lambda t: t.MomentumOptimizer(0.1, 0.9, use_nesterov=True),
    "rms_prop": lambda t: t.RMSPropOptimizer(0.05),
    "rms_prop_momentum": lambda t: t.RMSPropOptimizer(0.05, momentum=0.5),
    "rms_prop_centered": lambda t: t.RMSPropOptimizer(0.05, momentum=0.5, centered=True),
    "adagrad": lambda t: t.AdagradOptimizer(0.1),
    "adam": lambda t: t.AdamOptimizer(0.1),
    "adadelta": lambda t: t.AdadeltaOptimizer(1.0, epsilon=1e-3),
    "ftrl": lambda t: t.FtrlOptimizer(0.1, l1_regularization_strength=0.01,
                                      l2_regularization_strength=0.02, beta=0.1),
    "ftrl_shrinkage": lambda t: t.FtrlOptimizer(0.1, learning_rate_power=-0.3,
                                                l2_shrinkage_regularization_strength=0.01),
    "proximal_adagrad": lambda t: t.ProximalAdagradOptimizer(
        0.1, l1_regularization_strength=0.01, l2_regularization_strength=0.02),
    "proximal_gradient_descent": lambda t: t.ProximalGradientDescentOptimizer(
        0.1, l1_regularization_strength=0.01, l2_regularization_strength=0.02),
}
BATCHES = ([1, 3, 1, 5], [0, 0, 2], [3, 4], [2, 2, 2])


def _model(lib, nn, use_resource):
    table = lib.Variable(np.linspace(-1, 1, 12).reshape(6, 2).astype(np.float32),
                         name="table", use_resource=use_resource)
    mixed = lib.Variable(np.linspace(1, 2, 12).reshape(6, 2).astype(np.float32),
                         name="mixed", use_resource=use_resource)
    bias = lib.Variable(np.float32([0.5, -0.5]), name="bias", use_resource=use_resource)
    ids = lib.placeholder(lib.int32, [None], name="ids")
    rows = nn.embedding_lookup(table, ids) + nn.embedding_lookup(mixed, ids) + bias
    loss = lib.reduce_sum(lib.square(rows)) + 0.1 * lib.reduce_sum(lib.square(mixed))
    return [table, mixed, bias], ids, loss


def _train(lib, nn, session, optimizer, use_resource):
    variables, ids, loss = _model(lib, nn, use_resource)
    train = optimizer.minimize(loss)
    nodes = {(op.name, op.type) for op in train.graph.get_operations() if "/update_" in op.name}
    with session() as sess:
        sess.run(lib.global_variables_initializer())
        for batch in BATCHES:
            sess.run(train, {ids: batch})
        return sess.run(variables), nodes


@pytest.mark.parametrize("use_resource", [True, False])
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_optimizers_on_sparse_gradients_match_tensorflow(name, use_resource):
    with gp.Graph().as_default():
        got, got_nodes = _train(gp, gp.nn, gp.Session, OPTIMIZERS[name](gp.train),
                                use_resource)
    with tf.Graph().as_default():
        want, want_nodes = _train(tf1, tf1.nn, tf1.Session, OPTIMIZERS[name](tf1.train),
                                  use_resource)
    assert got_nodes == want_nodes          # the update nodes' names and types
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)


def test_gradients_of_lookups_match_tensorflow():
    def grads(lib, nn):
        variables, ids, loss = _model(lib, nn, True)
        result = lib.gradients(loss, variables)
        kinds = [type(g).__name__ for g in result]
        table = result[0]
        with (gp.Session if lib is gp else tf1.Session)() as sess:
            sess.run(lib.global_variables_initializer())
            values = sess.run([table.values, table.indices, result[1], result[2]],
                              {ids: [1, 3, 1, 5]})
        return kinds, values

    with gp.Graph().as_default():
        got_kinds, got = grads(gp, gp.nn)
    with tf.Graph().as_default():
        want_kinds, want = grads(tf1, tf1.nn)
    assert got_kinds == ["IndexedSlices", "Tensor", "Tensor"]
    assert want_kinds[0] == "IndexedSlices"
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)
