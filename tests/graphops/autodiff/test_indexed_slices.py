"""IndexedSlices: the object, its dense conversion (TF's UnsortedSegmentSum and warning),
the gather gradients that produce it, and how `gradients` passes and adds it up."""

import warnings

import numpy as np
import pytest

import graphops as gp


def _run(*fetches, feed=None):
    with gp.Session() as sess:
        sess.run(gp.global_variables_initializer())
        return sess.run(list(fetches), feed)


def _dense(slices, rows):
    """The slow dense form: each value row added to its index's row."""
    values, indices = np.asarray(slices[0]), np.asarray(slices[1])
    out = np.zeros((rows,) + values.shape[1:], values.dtype)
    for value, index in zip(values, indices):
        out[index] += value
    return out


def test_indexed_slices_object():
    with gp.Graph().as_default() as graph:
        values = gp.constant(np.ones((2, 3), np.float32), name="v")
        slices = gp.IndexedSlices(values, gp.constant([4, 0]), gp.constant([5, 3]))
        assert slices.dtype == gp.float32 and slices.graph is graph
        assert slices.op is values.op and slices.name == "v:0"
        assert slices.shape.as_list() == [5, 3]
        assert str(slices).startswith("IndexedSlices(indices=")
        assert gp.IndexedSlices(values, slices.indices).shape.rank is None
        dense = gp.convert_to_tensor(slices)
        assert dense.op.type == "UnsortedSegmentSum"
        assert dense.op.inputs[2].op.name == "strided_slice"
        negated, = _run((-slices).values)
        np.testing.assert_array_equal(negated, -np.ones((2, 3)))
        got, = _run(dense)
        np.testing.assert_array_equal(got, _dense((np.ones((2, 3)), [4, 0]), 5))


def test_dense_conversion_errors_and_warning():
    with gp.Graph().as_default():
        values = gp.constant(np.ones((1, 2), np.float32))
        with pytest.raises(ValueError, match="without dense_shape"):
            gp.convert_to_tensor(gp.IndexedSlices(values, gp.constant([0])))
        with pytest.raises(ValueError):
            gp.convert_to_tensor(gp.IndexedSlices(values, gp.constant([0]),
                                                  gp.constant([3, 2])), dtype=gp.int32)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            gp.convert_to_tensor(gp.IndexedSlices(values, gp.constant([0]),
                                                  gp.constant([100000, 1000])))
            gp.convert_to_tensor(gp.IndexedSlices(values, gp.constant([0]),
                                                  gp.constant([10, 2])))
        assert [str(w.message) for w in caught] == [
            "Converting sparse IndexedSlices to a dense Tensor with 100000000 elements. "
            "This may consume a large amount of memory."]


PARAMS = np.arange(12, dtype=np.float32).reshape(6, 2)


@pytest.mark.parametrize("gather", [
    lambda p, i: gp.gather(p, i),
    lambda p, i: gp.raw_ops.Gather(params=p, indices=i),
    lambda p, i: gp.nn.embedding_lookup(p, i)])
def test_gathers_along_axis_0_give_indexed_slices(gather):
    with gp.Graph().as_default():
        params = gp.placeholder(gp.float32, [None, 2])
        ids = gp.constant([[1, 3], [1, 5]])
        grad, = gp.gradients(gp.reduce_sum(gather(params, ids) * 2.0), [params])
        assert isinstance(grad, gp.IndexedSlices)
        values, indices, shape = _run(grad.values, grad.indices, grad.dense_shape,
                                      feed={params: PARAMS})
    np.testing.assert_array_equal(indices, [1, 3, 1, 5])
    np.testing.assert_array_equal(values, np.full((4, 2), 2.0))
    np.testing.assert_array_equal(shape, [6, 2])


def test_resource_gather_gradient_is_shaped_like_the_variable():
    with gp.Graph().as_default():
        var = gp.Variable(PARAMS)
        grad, = gp.gradients(gp.reduce_sum(gp.nn.embedding_lookup(var, [2, 2])), [var])
        assert isinstance(grad, gp.IndexedSlices)
        assert grad.dense_shape.op.type == "VariableShape"
        dense, = _run(gp.convert_to_tensor(grad))
    np.testing.assert_array_equal(dense[:, 0], [0, 0, 2, 0, 0, 0])


def test_dense_where_tf_is_dense():
    with gp.Graph().as_default():
        params = gp.constant(PARAMS)
        axis1, = gp.gradients(gp.reduce_sum(gp.gather(params, [1, 1], axis=1)), [params])
        nd_pairs, = gp.gradients(gp.reduce_sum(gp.gather_nd(params, [[1, 0]])), [params])
        nd_rows, = gp.gradients(gp.reduce_sum(gp.gather_nd(params, [[4]])), [params])
        assert isinstance(axis1, gp.Tensor) and isinstance(nd_pairs, gp.Tensor)
        assert isinstance(nd_rows, gp.IndexedSlices)
        got = _run(axis1, nd_pairs, gp.convert_to_tensor(nd_rows))
    np.testing.assert_array_equal(got[0], np.tile([0, 2], (6, 1)))
    assert got[1][1, 0] == 1 and got[1].sum() == 1
    np.testing.assert_array_equal(got[2][4], [1, 1])


def test_gradients_add_up_indexed_slices_as_tf():
    with gp.Graph().as_default():
        params = gp.constant(PARAMS)
        two_gathers = gp.reduce_sum(gp.gather(params, [0, 1])) + \
            gp.reduce_sum(gp.gather(params, [1]))
        sparse, = gp.gradients(two_gathers, [params])
        assert isinstance(sparse, gp.IndexedSlices)
        assert sparse.values.op.type == "ConcatV2"
        mixed, = gp.gradients(two_gathers + gp.reduce_sum(params * 3.0), [params])
        assert isinstance(mixed, gp.Tensor) and mixed.op.type == "AddN"
        wide = gp.reduce_sum(gp.gather(params, gp.constant([2], gp.int64))) + \
            gp.reduce_sum(gp.gather(params, [3]))
        cast, = gp.gradients(wide, [params])
        assert cast.indices.dtype == gp.int64
        values, indices, dense, cast_indices = _run(sparse.values, sparse.indices, mixed,
                                                    cast.indices)
    np.testing.assert_array_equal(indices, [0, 1, 1])
    assert values.shape == (3, 2)
    np.testing.assert_array_equal(dense[:, 0], [4, 5, 3, 3, 3, 3])
    np.testing.assert_array_equal(sorted(cast_indices), [2, 3])


def test_identity_and_cast_pass_indexed_slices_other_rules_get_them_dense():
    with gp.Graph().as_default():
        params = gp.constant(PARAMS.astype(np.float64))
        rows = gp.cast(gp.identity(params), gp.float32)
        grad, = gp.gradients(gp.reduce_sum(gp.gather(rows, [5])), [params])
        assert isinstance(grad, gp.IndexedSlices) and grad.dtype == gp.float64
        through_mul, = gp.gradients(
            gp.reduce_sum(gp.gather(params * 2.0, [5, 5])), [params])
        assert isinstance(through_mul, gp.Tensor)
        got, = _run(through_mul)
    np.testing.assert_array_equal(got[5], [4, 4])


def test_norms_and_histograms_read_indexed_slices_as_tf():
    with gp.Graph().as_default():
        params = gp.constant(PARAMS)
        grad, = gp.gradients(gp.reduce_sum(gp.gather(params, [1, 1])), [params])
        norm = gp.global_norm([grad, gp.constant([3.0])])
        clipped, _ = gp.clip_by_global_norm([grad], 1.0)
        assert isinstance(clipped[0], gp.IndexedSlices)
        summary = gp.summary.histogram("grad", grad)
        assert summary.op.inputs[1].op.type == "UnsortedSegmentSum"
        got = _run(norm, clipped[0].values)
    np.testing.assert_allclose(got[0], np.sqrt(13.0), rtol=1e-6)
    np.testing.assert_allclose(got[1], np.full((2, 2), 0.5), rtol=1e-6)


def test_session_fetches_an_indexed_slices_value_as_tf():
    """`sess.run(indexed_slices)` gives TF's IndexedSlicesValue (dense_shape None when the
    slices have none), inside any fetch structure."""
    with gp.Graph().as_default():
        params = gp.placeholder(gp.float32, [None, 2])
        grad, = gp.gradients(gp.reduce_sum(gp.gather(params, [2, 0, 2])), [params])
        shapeless = gp.IndexedSlices(grad.values, grad.indices)
        with gp.Session() as sess:
            fetched, (bare,) = sess.run([grad, [shapeless]], {params: PARAMS})
    assert isinstance(fetched, gp.IndexedSlicesValue)
    np.testing.assert_array_equal(fetched.values, np.ones((3, 2)))
    np.testing.assert_array_equal(fetched.indices, [2, 0, 2])
    np.testing.assert_array_equal(fetched.dense_shape, [6, 2])
    assert bare.dense_shape is None
    np.testing.assert_array_equal(_dense(bare, 6), _dense(fetched, 6))


def test_an_op_on_indexed_slices_joins_their_graph_outside_its_context():
    with gp.Graph().as_default() as graph:
        params = gp.placeholder(gp.float32, [None, 2])
        grad, = gp.gradients(gp.reduce_sum(gp.gather(params, [1, 0])), [params])
    dense = gp.raw_ops.Identity(input=grad)
    assert isinstance(dense, gp.Tensor) and dense.graph is graph


def test_gate_gradients_gates_each_ops_input_gradients_as_tf():
    """GATE_OP: an op's input gradients (an IndexedSlices' values included) leave through
    one `tuple`; the numbers do not change."""
    with gp.Graph().as_default() as graph:
        params = gp.placeholder(gp.float32, [None, 2])
        weights = gp.constant([[2.0], [3.0]])
        loss = gp.reduce_sum(gp.matmul(gp.gather(params, [1, 1, 4]), weights))
        gated = gp.gradients(loss, [params, weights], gate_gradients=True)
        plain = gp.gradients(loss, [params, weights])
        ops = {op.name: op for op in graph.get_operations()}
        gate = ops["gradients/MatMul_grad/tuple/group_deps"]
        assert {op.name for op in gate.control_inputs} == {
            "gradients/MatMul_grad/MatMul", "gradients/MatMul_grad/MatMul_1"}
        assert gated[1].op.name == "gradients/MatMul_grad/tuple/control_dependency_1"
        assert list(gated[1].op.control_inputs) == [gate]
        assert isinstance(gated[0], gp.IndexedSlices)
        with gp.Session() as sess:
            got, want = sess.run([gated, plain], {params: PARAMS})
    np.testing.assert_array_equal(_dense(got[0], 6), _dense(want[0], 6))
    np.testing.assert_array_equal(got[1], want[1])
