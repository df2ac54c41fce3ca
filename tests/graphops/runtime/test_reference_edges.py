"""Reference edges (TF1 variables' `float32_ref` tensors) in the runtime: a plain consumer
reads the variable's value when it runs (never folded, fused chains included), a fed
reference is its fed value, a fetched one its value, and placement colocates the ops whose
`Ref(T)` inputs take the reference with the variable, as TF's placer does."""

import numpy as np

import graphops as gp
from graphops.runtime import placement


def test_plain_consumers_read_the_value_when_they_run():
    g = gp.Graph()
    with g.as_default():
        var = gp.raw_ops.VariableV2(shape=[3], dtype=gp.float32, name="v")
        init = gp.raw_ops.Assign(ref=var, value=[-1.0, 2.0, -3.0])
        bump = gp.raw_ops.AssignAdd(ref=var, value=[5.0, 5.0, 5.0])
        chain = gp.nn.relu(var * 2.0 + 1.0)             # an elementwise chain on the ref
        total = gp.reduce_sum(var)
        with gp.Session() as sess:
            sess.run(init)
            np.testing.assert_array_equal(sess.run(chain), [0.0, 5.0, 0.0])
            sess.run(bump)
            np.testing.assert_array_equal(sess.run(chain), [9.0, 15.0, 5.0])
            assert sess.run(total) == 13.0
            np.testing.assert_array_equal(sess.run(var), [4.0, 7.0, 2.0])


def test_a_fed_reference_is_its_fed_value():
    g = gp.Graph()
    with g.as_default():
        var = gp.raw_ops.VariableV2(shape=[2], dtype=gp.float32)
        doubled = var * 2.0
        with gp.Session() as sess:       # never initialized: the feed stands in for it
            out = sess.run(doubled, {var: np.array([1.0, 3.0], np.float32)})
    np.testing.assert_array_equal(out, [2.0, 6.0])


def test_ref_inputs_colocate_with_the_variable():
    g = gp.Graph()
    with g.as_default():
        var = gp.raw_ops.VariableV2(shape=[2], dtype=gp.float32, name="v")
        assign = gp.raw_ops.Assign(ref=var, value=[1.0, 2.0])
        scatter = gp.raw_ops.ScatterAdd(ref=assign, indices=[0], updates=[1.0])
        read = gp.identity(var)
    requested = placement._colocated_requests(g.get_operations(), True)
    grouped = {op.name for op in g.get_operations() if op._id in requested}
    assert {"v", "Assign", "ScatterAdd"} <= grouped
    assert read.op.name not in grouped
