"""Plans specialised to their feeds' shapes (graphops/runtime/shape_folding.py, executor.Plan):
shape nodes and the arithmetic behind them fold once the fed shapes are known, every
specialisation computes what the generic plan computes, and a shape function that lies
is caught by the guard, never turned into a wrong value."""

import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import graphops as gp
from graphops.runtime import executor
from graphops.registry import OpKernel, errors, register_kernel, register_op

register_op("ShapeFoldTestLiar").input("x: float").output("y: float").set_shape_fn(
    lambda c: c.set_output(0, [2]))      # promises [2]; the kernel gives x's own shape


@register_kernel("ShapeFoldTestLiar", "CPU")
class LiarKernel(OpKernel):
    def compute(self, ctx):
        ctx.set_output(0, ctx.input(0) + np.float32(1))


@pytest.fixture(autouse=True)
def graph():
    g = gp.Graph()
    with g.as_default():
        yield g


def step_types(plan):
    return [step.op.type for step in plan.steps if type(step).__name__ != "ShapeGuardStep"
            and getattr(step, "op", None) is not None]


W = np.arange(6, dtype=np.float32).reshape(3, 2) / 4


def regression_gradients():
    """A loss over a batch of unknown size scaled per example, and its gradients: Shape,
    BroadcastGradientArgs and the reshapes of TF's gradient rules, all decided by the batch
    size."""
    x = gp.placeholder(gp.float32, [None, 3], name="x")
    b = gp.placeholder(gp.float32, [2], name="b")
    s = gp.placeholder(gp.float32, [None, 1], name="s")
    y = (gp.matmul(x, gp.constant(W, name="w")) + b) * s
    loss = gp.reduce_mean(gp.square(y - 1.0))
    grads = gp.gradients(loss, [x, b, s])
    return [x, b, s], [loss, *grads]


def reference(xv, bv, sv):
    """Loss and gradients by NumPy, written out."""
    pre = xv @ W + bv
    y = pre * sv
    dy = 2.0 * (y - 1.0) / y.size
    return [np.mean(np.square(y - 1.0)), (dy * sv) @ W.T, (dy * sv).sum(axis=0),
            (dy * pre).sum(axis=1, keepdims=True)]


def feed_values(n):
    return [(np.arange(3 * n, dtype=np.float32).reshape(n, 3) - n) / 5,
            np.array([0.5, -0.25], np.float32), np.linspace(0.5, 2, n, dtype=np.float32)[:, None]]


def test_shape_nodes_fold_for_the_fed_shapes_and_values_match_numpy():
    feeds, fetches = regression_gradients()
    plan = executor.build_plan(feeds, fetches, [])
    generic_steps = step_types(plan)
    assert "Shape" in generic_steps and "BroadcastGradientArgs" in generic_steps
    values = feed_values(4)
    specialised = plan.for_shapes(values)
    assert specialised is not plan
    for op_type in ("Shape", "BroadcastGradientArgs", "Size", "Rank", "OnesLike"):
        assert op_type not in step_types(specialised)
    assert len(step_types(specialised)) < len(generic_steps)
    for got, want in zip(plan.run(values), reference(*values)):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
        assert got.shape == np.shape(want)
    assert plan.for_shapes(values) is specialised        # one plan per signature


@settings(max_examples=15, deadline=None)
@given(st.lists(st.integers(1, 6), min_size=1, max_size=5))
def test_every_batch_size_gets_the_generic_plans_numbers(batch_sizes):
    with gp.Graph().as_default():
        feeds, fetches = regression_gradients()
        plan = executor.build_plan(feeds, fetches, [])
        for n in batch_sizes:
            values = feed_values(n)
            specialised = plan.run(values)
            generic = plan._run(values, None)          # the plan before specialising
            for s, g in zip(specialised, generic):
                np.testing.assert_array_equal(s, g)
                assert s.shape == g.shape
        assert len(plan.by_shapes) == len(set(batch_sizes))


def test_past_the_cap_other_shapes_run_the_generic_plan():
    feeds, fetches = regression_gradients()
    plan = executor.build_plan(feeds, fetches, [])
    for n in range(1, executor.MAX_SHAPE_SIGNATURES + 4):
        values = feed_values(n)
        for got, want in zip(plan.run(values), reference(*values)):
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    assert len(plan.by_shapes) == executor.MAX_SHAPE_SIGNATURES
    assert plan.for_shapes(feed_values(50)) is plan


def test_a_plan_whose_shapes_decide_nothing_new_does_not_specialise():
    x = gp.placeholder(gp.float32, [2, 3], name="x")
    y = gp.reshape(x, gp.shape(x)[::-1])
    plan = executor.build_plan([x], [y], [])
    assert plan.specialize is None and "Shape" not in step_types(plan)
    np.testing.assert_array_equal(plan.run([np.arange(6, dtype=np.float32).reshape(2, 3)])[0],
                                  np.arange(6, dtype=np.float32).reshape(3, 2))


def test_session_runs_with_feeds_in_any_order_share_the_specialisations():
    (x, b, s), (loss, *grads) = regression_gradients()
    xv, bv, sv = feed_values(5)
    with gp.Session() as sess:
        first = sess.run([loss, *grads], {x: xv, b: bv, s: sv})
        second = sess.run([grads[2], loss], {s: sv, b: bv, x: xv})
        third = sess.run([grads[0], grads[2]], {b: bv, s: sv[:2], x: xv[:2]})
    for got, want in zip(first, reference(xv, bv, sv)):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(second[0], first[3])
    assert second[1] == first[0]
    want = reference(xv[:2], bv, sv[:2])
    np.testing.assert_allclose(third[0], want[1], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(third[1], want[3], rtol=1e-6, atol=1e-7)


def test_folded_zeros_and_ones_like_are_read_only_and_not_shared_with_the_caller():
    x = gp.placeholder(gp.float32, [None], name="x")
    ones, zeros = gp.ones_like(x), gp.zeros_like(x)
    with gp.Session() as sess:
        for n in (3, 3, 4):
            got_ones, got_zeros = sess.run([ones, zeros], {x: np.full(n, 7, np.float32)})
            np.testing.assert_array_equal(got_ones, np.ones(n, np.float32))
            np.testing.assert_array_equal(got_zeros, np.zeros(n, np.float32))
            got_ones[:] = 5              # the caller's copy: the plan's value stays ones
            assert got_ones.flags.writeable


@pytest.mark.parametrize("specialised", [False, True])
def test_a_shape_function_that_lies_is_an_internal_error_naming_the_node(specialised):
    x = gp.placeholder(gp.float32, [None], name="x")
    lied = gp.raw_ops.ShapeFoldTestLiar(x=x, name="liar")
    size = gp.raw_ops.Shape(input=lied, name="size_of_liar")
    fetches = [size, gp.raw_ops.Shape(input=x)] if specialised else [size]
    with gp.Session() as sess:
        with pytest.raises(errors.InternalError) as caught:
            sess.run(fetches, {x: np.zeros(3, np.float32)})
    message = str(caught.value)
    assert "Node 'size_of_liar' (Shape) was folded for input 'liar:0' of shape [2]" in message
    assert "but that tensor has shape [3]" in message
    assert "the shape function of 'ShapeFoldTestLiar' disagrees with its kernel" in message


def test_a_shape_node_whose_kernel_refuses_the_shape_stays_a_step_and_raises_at_run_time():
    x = gp.placeholder(gp.float32, [None, None], name="x")
    shape = gp.raw_ops.Shape(input=x, out_type=gp.int32, name="int32_shape")
    plan = executor.build_plan([x], [shape], [])
    huge = np.broadcast_to(np.float32(0), (2**31, 1))     # a zero-stride view: no memory
    assert "Shape" in step_types(plan.for_shapes([huge]))
    small = plan.for_shapes([np.zeros((2, 1), np.float32)])
    assert "Shape" not in step_types(small)
    with pytest.raises(errors.InvalidArgumentError,
                       match="Shape output type is 32-bit  but dim 0 is 2147483648"):
        plan.run([np.broadcast_to(np.float32(0), (2**31, 1))])


def test_a_shape_set_by_the_user_is_not_folded_from():
    """`set_shape` is the user's claim, which no kernel keeps: the Shape node still runs and
    gives the value's own shape, as TF's raw Shape op does."""
    x = gp.placeholder(gp.float32, [None], name="x")
    y = gp.py_func(lambda v: np.concatenate([v, v]), [x], gp.float32)
    y.set_shape([2])
    shape = gp.raw_ops.Shape(input=y, name="shape_of_y")
    with gp.Session() as sess:
        got = sess.run([shape, gp.raw_ops.Shape(input=x)], {x: np.ones(2, np.float32)})
    np.testing.assert_array_equal(got[0], [4])
    np.testing.assert_array_equal(got[1], [2])


def test_reads_of_a_variable_fold_for_the_shape_its_handle_declares():
    """A bias added to a batch of unknown rank: once the batch is fed, the read's shape
    comes from the variable's VarHandleOp (TF's handle data), so the gradient's Shape,
    BroadcastGradientArgs and reshapes fold."""
    x = gp.placeholder(gp.float32, None, name="x")
    bias = gp.Variable(np.array([0.5, -1.0, 2.0], np.float32), name="bias")
    loss = gp.reduce_sum(gp.square(x + bias))
    (grad,) = gp.gradients(loss, [bias])
    xv = np.arange(12, dtype=np.float32).reshape(4, 3) / 3
    with gp.Session() as sess:
        sess.run(bias.initializer)
        got = sess.run([loss, grad], {x: xv})
        plan = next(p for p in sess._plans.values() if p.by_shapes)
    specialised = plan.for_shapes([xv])
    for op_type in ("Shape", "BroadcastGradientArgs"):
        assert op_type in step_types(plan) and op_type not in step_types(specialised)
    pre = xv + np.array([0.5, -1.0, 2.0], np.float32)
    np.testing.assert_allclose(got[0], np.sum(pre * pre), rtol=1e-6)
    np.testing.assert_allclose(got[1], 2 * pre.sum(axis=0), rtol=1e-6)


def test_a_variable_a_raw_assign_gave_another_shape_fails_the_guard():
    """A raw AssignVariableOp without validate_shape may store a value whose shape only the
    run knows: a shape node folded from the declared one then raises, never gives the
    stale shape."""
    v = gp.Variable(np.zeros(3, np.float32), name="v")
    value = gp.placeholder(gp.float32, None)
    resize = gp.raw_ops.AssignVariableOp(resource=v.handle, value=value)
    read = v.value()
    shape = gp.raw_ops.Shape(input=read, name="shape_of_v")
    with gp.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(shape), [3])
        sess.run(resize, {value: np.ones(5, np.float32)})
        with pytest.raises(errors.InternalError, match=re.escape(
                f"Node 'shape_of_v' (Shape) was folded for input '{read.name}' of shape [3], "
                "but that tensor has shape [5]")):
            sess.run(shape)
