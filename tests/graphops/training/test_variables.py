"""gp.Variable in graph mode and the resource-variable kernels behind it.

State lives in each Session's ResourceMgr: reads before initialisation fail naming the
variable, reads return copies, assignments follow TF's dtype/shape rules.
"""

import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import graphops as gp
from graphops.registry import errors, get_op_def


@pytest.fixture
def graph():
    g = gp.Graph()
    with g.as_default():
        yield g


def test_variable_nodes_names_and_properties(graph):
    with gp.name_scope("layer"):
        v = gp.Variable(np.arange(6, dtype=np.float32).reshape(2, 3), name="kernel")
    assert v.name == "layer/kernel:0" and v.op.name == "layer/kernel"
    assert v.op.type == "VarHandleOp" and v.op.get_attr("shared_name") == "layer/kernel"
    assert v.dtype is gp.float32 and v.shape == gp.TensorShape([2, 3])
    assert v.initializer.type == "AssignVariableOp" and v.initializer.name == "layer/kernel/Assign"
    assert v.value().shape == gp.TensorShape([2, 3]) and v.value().op.type == "ReadVariableOp"
    assert v.trainable and gp.global_variables() == [v] and gp.trainable_variables() == [v]
    w = gp.Variable(1.5, trainable=False, dtype=gp.float64)
    assert w.name == "Variable:0" and w.dtype is gp.float64 and w.shape == gp.TensorShape([])
    assert gp.global_variables() == [v, w] and gp.trainable_variables() == [v]
    assert gp.global_variables(scope="layer") == [v]
    for name in ("VarHandleOp", "ReadVariableOp", "AssignVariableOp", "AssignAddVariableOp",
                 "AssignSubVariableOp", "VarIsInitializedOp"):
        assert get_op_def(name).is_stateful


def test_uninitialized_read_names_the_variable(graph):
    v = gp.Variable([1.0, 2.0], name="weights")
    with gp.Session() as sess:
        with pytest.raises(errors.FailedPreconditionError,
                           match="Attempting to use uninitialized value weights"):
            sess.run(v)
        with pytest.raises(errors.FailedPreconditionError,
                           match="Attempting to use uninitialized value weights"):
            sess.run(v.assign_add([1.0, 1.0]))
        assert not sess.run(v.is_initialized())
        sess.run(v.initializer)
        assert sess.run(v.is_initialized())
        np.testing.assert_array_equal(sess.run(v), [1.0, 2.0])


def test_each_session_has_its_own_state_and_reads_are_copies(graph):
    v = gp.Variable(np.zeros(3, np.float32))
    bump = v.assign_add(np.ones(3, np.float32))
    init = gp.global_variables_initializer()
    assert init.type == "NoOp" and init.name == "init"
    with gp.Session() as a, gp.Session() as b:
        a.run(init)
        b.run(init)
        a.run(bump)
        a.run(bump)
        value = a.run(v)
        value[:] = 100.0                      # mutating a fetched value changes nothing
        np.testing.assert_array_equal(a.run(v), [2.0, 2.0, 2.0])
        np.testing.assert_array_equal(b.run(v), [0.0, 0.0, 0.0])
        assert a.run(v) is not a.run(v)


def test_assign_variants_and_read_value(graph):
    v = gp.Variable(np.array([1.0, 2.0]), name="v")
    assigned = v.assign([5.0, 6.0])
    added = v.assign_add(np.array([1.0, 1.0]))
    subbed = v.assign_sub(np.array([0.5, 0.5]), read_value=False)
    assert isinstance(assigned, gp.Tensor) and assigned.op.type == "ReadVariableOp"
    assert isinstance(subbed, gp.Operation) and subbed.type == "AssignSubVariableOp"
    with gp.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(assigned), [5.0, 6.0])
        np.testing.assert_array_equal(sess.run(added), [6.0, 7.0])
        sess.run(subbed)
        np.testing.assert_array_equal(sess.run(v), [5.5, 6.5])
        np.testing.assert_array_equal(sess.run(v * 2.0), [11.0, 13.0])
        np.testing.assert_array_equal(sess.run(1.0 - v), [-4.5, -5.5])


def test_variables_ignore_enclosing_control_dependencies(graph):
    gate = gp.raw_ops.NoOp(name="gate")
    with gp.control_dependencies([gate]):
        v = gp.Variable(1.0)
        read = v.value()
    assert v.initializer.control_inputs == () and v.op.control_inputs == ()
    assert read.op.control_inputs == (gate,)


def test_callable_and_tensor_initial_values(graph):
    base = gp.constant([3.0, 4.0])
    v = gp.Variable(lambda: base * 2.0, name="doubled")
    w = gp.Variable(v.initial_value + 1.0, name="shifted")
    assert v.initial_value.op.name.startswith("doubled/Initializer/")
    with gp.Session() as sess:
        sess.run(gp.variables_initializer([v, w]))
        np.testing.assert_array_equal(sess.run([v, w]), [[6.0, 8.0], [7.0, 9.0]])
    with pytest.raises(ValueError, match="`initial_value` arg to `tf.Variable` must be specified"):
        gp.Variable(None)


def test_assignment_errors(graph):
    v = gp.Variable(np.zeros(2, np.float32), name="v")
    handle = v.handle
    with pytest.raises(errors.InvalidArgumentError, match=re.escape(
            "Dimension 0 in both shapes must be equal, but are 2 and 3. Shapes are [2] and "
            "[3]. for '{{node AssignAddVariableOp}} = AssignAddVariableOp[dtype=DT_FLOAT](v, "
            "AssignAddVariableOp/value)' with input shapes: [], [3].")):
        gp.raw_ops.AssignAddVariableOp(resource=handle, value=np.ones(3, np.float32))
    fed = gp.placeholder(gp.float32, None)      # a shape only the run knows
    with gp.Session() as sess:
        sess.run(v.initializer)
        with pytest.raises(errors.InvalidArgumentError,
                           match=r"Cannot update variable with shape \[2\] using a Tensor with "
                                 r"shape \[3\], shapes must be equal."):
            sess.run(gp.raw_ops.AssignAddVariableOp(resource=handle, value=fed),
                     {fed: np.ones(3, np.float32)})
        with pytest.raises(errors.InvalidArgumentError,
                           match="Trying to assign variable with wrong dtype. Expected float got "
                                 "double"):
            sess.run(gp.raw_ops.AssignVariableOp(resource=handle, value=np.ones(2)))
        with pytest.raises(errors.InvalidArgumentError,
                           match="Trying to read variable with wrong dtype. Expected float got "
                                 "int32"):
            sess.run(gp.raw_ops.ReadVariableOp(resource=handle, dtype=gp.int32))
        with pytest.raises(errors.InvalidArgumentError,
                           match=r"Trying to assign to variable with tensor with wrong shape. "
                                 r"Expected \[2\] got \[3\]"):
            sess.run(gp.raw_ops.AssignVariableOp(resource=handle, value=fed, validate_shape=True),
                     {fed: np.ones(3, np.float32)})
        sess.run(gp.raw_ops.AssignVariableOp(resource=handle, value=fed),
                 {fed: np.ones(3, np.float32)})
        np.testing.assert_array_equal(sess.run(gp.raw_ops.ReadVariableOp(
            resource=handle, dtype=gp.float32)), [1.0, 1.0, 1.0])


def test_a_read_has_the_shape_its_handle_declares(graph):
    """TF's handle data: VarHandleOp's shape function declares its `shape` on the handle,
    an Identity of the handle keeps it, and ReadVariableOp's shape function reads it, in
    graphs built here and in graphs imported from a GraphDef."""
    handle = gp.raw_ops.VarHandleOp(dtype=gp.float32, shape=[2, 3], name="h")
    undeclared = gp.raw_ops.VarHandleOp(dtype=gp.float32, shape=None, name="u")
    gp.raw_ops.ReadVariableOp(resource=gp.identity(handle), dtype=gp.float32, name="read")
    gp.raw_ops.ReadVariableOp(resource=undeclared, dtype=gp.float32, name="free")
    for g in (graph, gp.Graph()):
        if g is not graph:
            with g.as_default():
                gp.import_graph_def(graph.as_graph_def(), name="")
        read, free = (g.get_tensor_by_name(name) for name in ("read:0", "free:0"))
        assert read.shape.as_list() == [2, 3] and read._inferred_shape.as_list() == [2, 3]
        assert free.shape.rank is None


def test_assign_checks_the_shape_as_tf_does(graph):
    """A value of another static shape is a ValueError at once; one whose shape only the
    run knows is checked by the AssignVariableOp (validate_shape where the variable's shape
    is fully known and it was made with validate_shape); a variable made with
    validate_shape=False takes any shape."""
    v = gp.Variable(np.zeros(2, np.float32), name="v")
    with pytest.raises(ValueError, match=re.escape(
            "Cannot assign value to variable ' v:0': Shape mismatch.The variable shape (2,), "
            "and the assigned value shape (3,) are incompatible.")):
        v.assign(np.ones(3, np.float32))
    fed = gp.placeholder(gp.float32, [None])
    checked = v.assign(fed)
    free = gp.Variable(np.zeros(2, np.float32), validate_shape=False, name="free")
    resized = free.assign(fed)
    declared = gp.Variable(np.zeros(2, np.float32), validate_shape=False, shape=[2])
    assert not declared.assign(fed).op.control_inputs[0].get_attr("validate_shape")
    assert checked.op.control_inputs[0].get_attr("validate_shape")
    with gp.Session() as sess:
        sess.run([v.initializer, free.initializer])
        np.testing.assert_array_equal(sess.run(checked, {fed: [4.0, 5.0]}), [4.0, 5.0])
        with pytest.raises(errors.InvalidArgumentError, match=re.escape(
                "Trying to assign to variable with tensor with wrong shape. Expected [2] "
                "got [3]")):
            sess.run(checked, {fed: np.ones(3, np.float32)})
        np.testing.assert_array_equal(sess.run(resized, {fed: np.ones(3, np.float32)}),
                                      [1.0, 1.0, 1.0])


def test_gradients_flow_through_every_read_of_a_variable(graph):
    v = gp.Variable(np.array([1.0, -2.0]))
    loss = gp.reduce_sum(v * v + 3.0 * v)         # three reads: v, v (operands) and v
    (grad,) = gp.gradients(loss, [v])
    assert gp.gradients(loss, [gp.Variable(0.0)]) == [None]
    with gp.Session() as sess:
        sess.run(gp.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(grad), [5.0, -1.0])


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["assign", "add", "sub", "read"]),
                          st.integers(-5, 5)), min_size=1, max_size=12))
def test_update_sequences_match_numpy(steps):
    """A random sequence of assign/add/sub/read runs, against the obvious NumPy state."""
    g = gp.Graph()
    with g.as_default():
        v = gp.Variable(np.zeros(3, np.int64))
        delta = gp.placeholder(gp.int64, [3])
        ops = {"assign": v.assign(delta, read_value=False),
               "add": v.assign_add(delta, read_value=False),
               "sub": v.assign_sub(delta, read_value=False)}
        with gp.Session() as sess:
            sess.run(v.initializer)
            state = np.zeros(3, np.int64)
            for kind, k in steps:
                value = np.array([k, 2 * k, -k], np.int64)
                if kind == "read":
                    np.testing.assert_array_equal(sess.run(v), state)
                    continue
                sess.run(ops[kind], {delta: value})
                state = value.copy() if kind == "assign" else \
                    state + value if kind == "add" else state - value
            np.testing.assert_array_equal(sess.run(v), state)


def test_disable_copy_on_read_checks_the_variable_exists_and_changes_no_value():
    """TF's save functions run DisableCopyOnRead before reading; reads here never copy."""
    with gp.Graph().as_default():
        var = gp.Variable(np.arange(3, dtype=np.float32))
        disable = gp.raw_ops.DisableCopyOnRead(resource=var.handle)
        with gp.Session() as sess:
            with pytest.raises(gp.errors.NotFoundError, match="does not exist"):
                sess.run(disable)
            sess.run(var.initializer)
            sess.run(disable)
            np.testing.assert_array_equal(sess.run(var), [0, 1, 2])
