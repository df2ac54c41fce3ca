"""TF1 optimizers on sparse gradients: a gather's IndexedSlices gradient moves only the rows
in the batch and their slots (TF1's `_apply_sparse_duplicate_indices` path), on resource
and reference variables, with the nodes TF builds; a NumPy reference of that rule, checked
once against the number TensorFlow gives."""

import numpy as np
import pytest

import graphops as gp

# TF 2.21's value of row 0 below (tf.compat.v1, MomentumOptimizer(0.1, 0.9)): it moves in
# the first step only; a dense update would keep moving it as its momentum decays (0.6561).
TF_ROW_0_AFTER_FOUR_STEPS = 0.9
BATCHES = ([0, 1], [1, 2], [1, 2, 2], [2])


def numpy_sparse_momentum(table, batches, lr, momentum):
    """TF1's sparse momentum: per step, the rows' gradients summed per distinct id, then
    only those rows' accumulators and values updated."""
    table, accum = np.array(table, np.float64), np.zeros_like(table, np.float64)
    for ids in batches:
        grad = {}
        for i in ids:
            grad[i] = grad.get(i, 0.0) + 1.0          # d(sum of rows)/d(row) per occurrence
        for row, g in grad.items():
            accum[row] = accum[row] * momentum + g
            table[row] -= lr * accum[row]
    return table


def _train(make_optimizer, use_resource, batches=BATCHES):
    with gp.Graph().as_default():
        table = gp.Variable(np.ones((3, 1), np.float32), use_resource=use_resource)
        ids = gp.placeholder(gp.int32, [None])
        loss = gp.reduce_sum(gp.nn.embedding_lookup(table, ids))
        train = make_optimizer().minimize(loss)
        with gp.Session() as sess:
            sess.run(gp.global_variables_initializer())
            for batch in batches:
                sess.run(train, {ids: batch})
            return sess.run(table.value())


def test_numpy_reference_agrees_with_tensorflow_number():
    want = numpy_sparse_momentum(np.ones((3, 1)), BATCHES, 0.1, 0.9)
    assert want[0, 0] == pytest.approx(TF_ROW_0_AFTER_FOUR_STEPS, abs=1e-12)


@pytest.mark.parametrize("use_resource", [True, False])
def test_a_row_touched_once_moves_once(use_resource):
    got = _train(lambda: gp.train.MomentumOptimizer(0.1, 0.9), use_resource)
    want = numpy_sparse_momentum(np.ones((3, 1)), BATCHES, 0.1, 0.9)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert got[0, 0] == pytest.approx(TF_ROW_0_AFTER_FOUR_STEPS, abs=1e-6)


@pytest.mark.parametrize("use_resource, update", [
    (True, "ResourceSparseApplyMomentum"), (False, "SparseApplyMomentum")])
def test_sparse_updates_take_tf_nodes(use_resource, update):
    with gp.Graph().as_default() as graph:
        table = gp.Variable(np.ones((3, 2), np.float32), name="w", use_resource=use_resource)
        loss = gp.reduce_sum(gp.nn.embedding_lookup(table, [0, 0]))
        gp.train.MomentumOptimizer(0.1, 0.9).minimize(loss)
        names = {op.name: op.type for op in graph.get_operations()}
    assert names[f"Momentum/update_w/{update}"] == update
    assert names["Momentum/update_w/Unique"] == "Unique"
    assert names["Momentum/update_w/UnsortedSegmentSum"] == "UnsortedSegmentSum"


@pytest.mark.parametrize("use_resource, scatter", [(True, "ResourceScatterAdd"),
                                                   (False, "ScatterSub")])
def test_gradient_descent_scatters_without_summing(use_resource, scatter):
    with gp.Graph().as_default() as graph:
        table = gp.Variable(np.ones((3, 1), np.float32), name="w", use_resource=use_resource)
        loss = gp.reduce_sum(gp.nn.embedding_lookup(table, [2, 2]))
        train = gp.train.GradientDescentOptimizer(0.5).minimize(loss)
        types = {op.type for op in graph.get_operations() if op.name.startswith("Gradient")}
        assert scatter in types and "Unique" not in types
        with gp.Session() as sess:
            sess.run(gp.global_variables_initializer())
            sess.run(train)
            np.testing.assert_array_equal(sess.run(table.value())[:, 0], [1, 1, 0])


@pytest.mark.parametrize("use_resource", [True, False])
def test_adam_decays_all_moments_but_adds_the_batch_rows(use_resource):
    with gp.Graph().as_default() as graph:
        table = gp.Variable(np.zeros((2, 1), np.float32), name="w", use_resource=use_resource)
        loss = gp.reduce_sum(gp.nn.embedding_lookup(table, [1]))
        optimizer = gp.train.AdamOptimizer(0.1)
        train = optimizer.minimize(loss)
        types = {op.type for op in graph.get_operations() if op.name.startswith("Adam/")}
        assert not {"ResourceApplyAdam", "ApplyAdam"} & types
        with gp.Session() as sess:
            sess.run(gp.global_variables_initializer())
            sess.run(train)
            m = sess.run(optimizer.get_slot(table, "m").value())
            np.testing.assert_allclose(m[:, 0], [0, 0.1], rtol=1e-6)


def test_a_sparse_gradient_refuses_a_constraint():
    with gp.Graph().as_default():
        table = gp.Variable(np.ones((3, 1), np.float32), constraint=lambda v: v)
        loss = gp.reduce_sum(gp.nn.embedding_lookup(table, [1]))
        with pytest.raises(RuntimeError, match="Cannot use a constraint function on a "
                                               "sparse variable."):
            gp.train.MomentumOptimizer(0.1, 0.9).minimize(loss)


GPU_CASES = [(True, lambda: gp.train.MomentumOptimizer(0.1, 0.9)),
             (True, lambda: gp.train.GradientDescentOptimizer(0.1)),
             (True, lambda: gp.train.AdamOptimizer(0.1)),
             (False, lambda: gp.train.MomentumOptimizer(0.1, 0.9))]


@pytest.mark.parametrize("use_resource, make", GPU_CASES)
def test_sparse_updates_on_the_gpu_match_the_cpu(gpu, use_resource, make):
    """Unpinned variables live on the GPU; their sparse updates go through host copies."""
    def train(device):
        with gp.Graph().as_default(), gp.device(device):
            return _train(make, use_resource)
    np.testing.assert_allclose(train("/GPU:0"), train("/CPU:0"), rtol=1e-6)
