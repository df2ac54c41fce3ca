"""TF1 reference variables (`use_resource=False`): the nodes TF1 builds, reads, updates,
state-op functions, VariableDef protos, checkpoints, eager refusal, and a hypothesis test
of update sequences against NumPy. TF-written fixtures (tests/data/tf_ref_variables, made
by tests/data/make_tf_ref_variables.py) are read without TensorFlow; the live comparisons
are in test_ref_variables_tf_oracle.py."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import graphops as gp
from graphops.registry import dtypes, errors
from graphops.training.ref_variable import RefVariable
from tests.data.make_tf_ref_variables import expected_values
from tests.paths import ROOT

FIXTURES = ROOT / "tests" / "data" / "tf_ref_variables"


@pytest.fixture
def graph():
    g = gp.Graph()
    with g.as_default():
        yield g


def test_nodes_are_tf1s(graph):
    v = gp.Variable([1.0, 2.0], name="w", use_resource=False)
    assert isinstance(v, RefVariable) and isinstance(v, gp.Variable)
    assert [(op.name, op.type) for op in graph.get_operations()] == [
        ("w/initial_value", "Const"), ("w", "VariableV2"), ("w/Assign", "Assign"),
        ("w/read", "Identity")]
    assert v.name == "w:0" and v.op.name == "w" and v.dtype is dtypes.float32_ref
    assert v.value().name == "w/read:0" and v._ref().name == "w:0"
    assert v.initializer.name == "w/Assign" and v.initial_value.name == "w/initial_value:0"
    assert v.shape.as_list() == [2] and repr(v).startswith("<gp.Variable 'w:0'")
    assert gp.trainable_variables() == [v] and gp.global_variables() == [v]
    assert not hasattr(v, "_should_act_as_resource_variable")


def test_default_stays_resource_and_scopes_choose(graph):
    assert not isinstance(gp.Variable(1.0), RefVariable)
    with gp.variable_scope("old", use_resource=False):
        a = gp.get_variable("a", shape=[2], initializer=gp.zeros_initializer())
        b = gp.Variable(1.0, name="b")
        with gp.variable_scope("inner"):
            c = gp.get_variable("c", shape=[], use_resource=True)
    d = gp.get_variable("d", shape=[1], use_resource=False)
    assert [type(x).__name__ for x in (a, b, c, d)] == [
        "RefVariable", "RefVariable", "Variable", "RefVariable"]
    assert a.op.name == "old/a" and graph.get_operation_by_name("old/a/read").type == "Identity"
    with gp.variable_scope("old", reuse=True):
        assert gp.get_variable("a", shape=[2], dtype=gp.float32) is a


def test_reads_updates_and_operators(graph):
    v = gp.Variable(np.array([1.0, 2.0, 3.0], np.float32), name="v", use_resource=False)
    doubled = v * 2.0
    add = v.assign_add([1.0, 1.0, 1.0])
    sub = gp.assign_sub(v, [0.5, 0.5, 0.5])
    put = gp.assign(v, [9.0, 8.0, 7.0])
    rows = v.scatter_update(gp.IndexedSlices(values=[5.0], indices=[1]))
    nd = gp.scatter_nd_add(v, [[0], [2]], [10.0, 20.0])
    assert not hasattr(v, "sparse_read")          # TF's RefVariable has none either
    assert add.dtype is dtypes.float32_ref
    assert v.assign([1.0] * 3, read_value=False).type == "Assign"
    with gp.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(doubled), [2.0, 4.0, 6.0])
        np.testing.assert_array_equal(sess.run(add), [2.0, 3.0, 4.0])
        np.testing.assert_array_equal(sess.run(sub), [1.5, 2.5, 3.5])
        np.testing.assert_array_equal(sess.run(put), [9.0, 8.0, 7.0])
        np.testing.assert_array_equal(sess.run(rows), [9.0, 5.0, 7.0])
        np.testing.assert_array_equal(sess.run(nd), [19.0, 5.0, 27.0])
        np.testing.assert_array_equal(v.eval(), [19.0, 5.0, 27.0])
        np.testing.assert_array_equal(sess.run(v.read_value()), [19.0, 5.0, 27.0])
        v.load([0.0, 0.0, 1.0])
        np.testing.assert_array_equal(sess.run(v), [0.0, 0.0, 1.0])


def test_state_functions_on_resource_variables_keep_working(graph):
    v = gp.Variable([1.0, 2.0])
    updated = gp.scatter_update(v, [0], [5.0])
    added = gp.scatter_nd_add(v, [[1]], [3.0])
    with gp.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(updated), [5.0, 2.0])
        np.testing.assert_array_equal(sess.run(added), [5.0, 5.0])
        np.testing.assert_array_equal(sess.run(gp.assign(v, [0.0, 1.0])), [0.0, 1.0])


def test_initialization_reports(graph):
    a = gp.Variable(1.0, name="a", use_resource=False)
    b = gp.Variable(2.0, name="b")
    report = gp.report_uninitialized_variables()
    initialized = gp.is_variable_initialized(a)
    assert initialized.op.type == "IsVariableInitialized"
    with gp.Session() as sess:
        assert sess.run(report).tolist() == [b"a", b"b"] and not sess.run(initialized)
        sess.run(a.initializer)
        assert sess.run(report).tolist() == [b"b"] and sess.run(initialized)
        c = gp.Variable(3.0, use_resource=False, name="c")
        sess.run(c.initializer)
        with pytest.raises(errors.FailedPreconditionError,
                           match="Attempting to use uninitialized value b"):
            sess.run(c + b.value())
        sess.run(a.assign(5.0).op)
        with pytest.raises(errors.FailedPreconditionError,
                           match="Attempting to use uninitialized value d"):
            sess.run(c + gp.Variable(0.0, use_resource=False, name="d"))


def test_gradients_reach_the_variable(graph):
    v = gp.Variable([1.0, -2.0], use_resource=False)
    loss = gp.reduce_sum(v * v)
    (grad,) = gp.gradients(loss, [v])
    with gp.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(grad), [2.0, -4.0])


def test_to_proto_and_from_proto_wrap_the_same_nodes(graph):
    ref = gp.Variable([1.0, 2.0], name="scope/w", use_resource=False)
    res = gp.Variable(3.0, name="scope/r")
    ref_def, res_def = ref.to_proto(), res.to_proto()
    assert (ref_def.variable_name, ref_def.snapshot_name, ref_def.initializer_name,
            ref_def.initial_value_name, ref_def.is_resource, ref_def.trainable) == (
        "scope/w:0", "scope/w/read:0", "scope/w/Assign", "scope/w/initial_value:0", False,
        True)
    assert (res_def.variable_name, res_def.snapshot_name, res_def.is_resource) == (
        "scope/r:0", "scope/r/Read/ReadVariableOp:0", True)
    assert ref.to_proto(export_scope="scope").variable_name == "w:0"
    assert ref.to_proto(export_scope="elsewhere") is None
    again, other = gp.Variable.from_proto(ref_def), gp.Variable(variable_def=res_def)
    assert isinstance(again, RefVariable) and not isinstance(other, RefVariable)
    assert again._ref() is ref._ref() and again.value() is ref.value()
    assert other.handle is res.handle and other.dtype is gp.float32
    with gp.Session() as sess:
        sess.run([again.initializer, other.initializer])
        got = sess.run([again, other])
        np.testing.assert_array_equal(got[0], [1.0, 2.0])
        assert got[1] == 3.0


def test_from_proto_under_an_import_scope():
    exporter = gp.Graph()
    with exporter.as_default():
        v = gp.Variable([4.0], name="w", use_resource=False)
        proto = v.to_proto()
    importer = gp.Graph()
    with importer.as_default():
        gp.import_graph_def(exporter.as_graph_def(), name="imported")
        w = gp.Variable.from_proto(proto, import_scope="imported")
        assert w.name == "imported/w:0" and w.initializer.name == "imported/w/Assign"
        with gp.Session() as sess:
            sess.run(w.initializer)
            np.testing.assert_array_equal(sess.run(w.value()), [4.0])


def test_eager_mode_makes_resource_variables_and_refuses_reference_ones():
    assert not isinstance(gp.Variable(1.0, use_resource=False), RefVariable)    # as TF's
    with pytest.raises(RuntimeError, match="Reference variables are not supported when eager"):
        RefVariable(1.0)


def test_saver_round_trip_uses_assign(graph, tmp_path):
    w = gp.Variable([1.0, 2.0], name="w", use_resource=False)
    saver = gp.train.Saver()
    assert graph.get_operation_by_name("save/Assign").type == "Assign"
    with gp.Session() as sess:
        sess.run(w.initializer)
        path = saver.save(sess, str(tmp_path / "model"))
        sess.run(w.assign([0.0, 0.0]))
        saver.restore(sess, path)
        np.testing.assert_array_equal(sess.run(w), [1.0, 2.0])


def test_tf_written_graph_def_imports_and_runs():
    graph_def = gp.GraphDef()
    graph_def.ParseFromString((FIXTURES / "graph.pb").read_bytes())
    g = gp.Graph()
    with g.as_default():
        gp.import_graph_def(graph_def, name="")
        assert g.get_tensor_by_name("w:0").dtype is dtypes.float32_ref
        assert g.get_tensor_by_name("bump:0").dtype is dtypes.float32_ref
        w0 = expected_values()["w"]
        x = np.array([[1.0, 2.0, 3.0]], np.float32)
        with gp.Session() as sess:
            sess.run(["w/Assign", "b/Assign"])
            np.testing.assert_allclose(sess.run("y:0", {"x:0": x}), x @ w0)
            np.testing.assert_array_equal(sess.run("bump:0"), [1.0, 2.0])
            poked = w0.copy()
            poked[1] = [10.0, 20.0]
            np.testing.assert_array_equal(sess.run("poke:0"), poked)
            np.testing.assert_allclose(sess.run("y:0", {"x:0": x}), x @ poked + [1.0, 2.0])


def test_tf_written_checkpoint_restores_into_reference_variables(graph):
    w = gp.Variable(np.zeros((3, 2), np.float32), name="w", use_resource=False)
    b = gp.Variable(np.zeros(2, np.float32), name="b", use_resource=False)
    saver = gp.train.Saver()
    with gp.Session() as sess:
        saver.restore(sess, str(FIXTURES / "model.ckpt"))
        got = sess.run({"w": w, "b": b})
    for name, value in expected_values().items():
        np.testing.assert_array_equal(got[name], value)


_STEPS = st.lists(st.tuples(st.sampled_from(["assign", "assign_add", "assign_sub"]),
                            st.lists(st.integers(-50, 50), min_size=3, max_size=3)),
                  min_size=1, max_size=8)


@settings(max_examples=25, deadline=None)
@given(_STEPS)
def test_update_sequences_match_numpy(steps):
    g = gp.Graph()
    with g.as_default():
        v = gp.Variable(np.zeros(3, np.int64), use_resource=False)
        ops = [getattr(gp, kind)(v, np.array(delta, np.int64)) for kind, delta in steps]
        with gp.Session() as sess:
            sess.run(v.initializer)
            expected = np.zeros(3, np.int64)
            for (kind, delta), op in zip(steps, ops):
                delta = np.array(delta)
                expected = {"assign": delta, "assign_add": expected + delta,
                            "assign_sub": expected - delta}[kind]
                np.testing.assert_array_equal(sess.run(op), expected)
            np.testing.assert_array_equal(sess.run(v), expected)


def test_graph_def_import_refuses_a_plain_tensor_for_a_reference_input():
    graph_def = gp.GraphDef()
    graph_def.ParseFromString((FIXTURES / "graph.pb").read_bytes())
    assign = next(node for node in graph_def.node if node.name == "w/Assign")
    assign.input[0] = "w/initial_value"
    with gp.Graph().as_default():
        with pytest.raises(errors.InvalidArgumentError,
                           match="Input 0 of node w/Assign was passed float from "
                                 "w/initial_value:0 incompatible with expected float_ref."):
            gp.import_graph_def(graph_def, name="")


def test_disable_resource_variables_makes_tf1s_default(graph):
    """TF 1.x's default (`disable_resource_variables`): reference variables unless a scope or
    the call asks for a resource one."""
    assert gp.resource_variables_enabled()
    gp.disable_resource_variables()
    try:
        assert not gp.resource_variables_enabled()
        plain = gp.Variable(1.0, name="plain")
        got = gp.get_variable("got", shape=[2])
        asked = gp.Variable(1.0, name="asked", use_resource=True)
        with gp.variable_scope("res", use_resource=True):
            scoped = gp.get_variable("scoped", shape=[1])
    finally:
        gp.enable_resource_variables()
    assert [type(v).__name__ for v in (plain, got, asked, scoped)] == [
        "RefVariable", "RefVariable", "Variable", "Variable"]
    assert type(gp.Variable(1.0)).__name__ == "Variable"


def test_a_reference_tensor_converts_to_its_base_dtype(graph):
    v = gp.Variable([1.0, 2.0], name="w", use_resource=False)
    assert gp.convert_to_tensor(v._ref(), dtype=gp.float32) is v._ref()
    with pytest.raises(ValueError, match="requested dtype int32 for Tensor with dtype "
                                         "float32_ref"):
        gp.convert_to_tensor(v._ref(), dtype=gp.int32)


@pytest.mark.parametrize("use_resource", [False, True])
def test_optimizers_gate_gradients_where_a_variable_is_a_reference(use_resource):
    """GATE_OP's tuples guard in-place updates of reference variables (as TF builds them);
    resource variables are read as snapshots, so their graphs go without."""
    with gp.Graph().as_default() as g:
        w = gp.Variable(np.ones((3, 1), np.float32), name="w", use_resource=use_resource)
        loss = gp.reduce_sum(gp.matmul(gp.constant(np.ones((2, 3), np.float32)), w))
        gp.train.GradientDescentOptimizer(0.1).minimize(loss)
        names = {op.name for op in g.get_operations()}
    assert ("gradients/MatMul_grad/tuple/group_deps" in names) == (not use_resource)
