"""Constant folding when a plan is built (graphops/runtime/constant_folding.py): which nodes
are computed once, and that folding never changes a value, an error or a side effect that
TF's semantics promise."""

import numpy as np
import pytest

import graphops as gp
from graphops.runtime import constant_folding
from graphops.registry import OpKernel, errors, register_kernel, register_op
from tests.op_runners import plan_kernel_steps

COMPUTES = []   # node names, one per compute of FoldTestPure / FoldTestStateful / FoldTestBig

register_op("FoldTestPure").input("x: float").output("y: float")
register_op("FoldTestStateful").input("x: float").output("y: float").set_is_stateful()
register_op("FoldTestBig").input("x: float").output("y: float")
register_op("FoldTestFail").input("x: float").output("y: float")


@register_kernel("FoldTestPure", "CPU")
@register_kernel("FoldTestStateful", "CPU")
class CountKernel(OpKernel):
    def compute(self, ctx):
        COMPUTES.append(ctx.node_name)
        ctx.set_output(0, ctx.input(0) * np.float32(2))


@register_kernel("FoldTestBig", "CPU")
class BigKernel(OpKernel):
    """2 MiB of output, whatever its input."""

    def compute(self, ctx):
        COMPUTES.append(ctx.node_name)
        ctx.set_output(0, np.full(1 << 19, ctx.input(0), np.float32))


@register_kernel("FoldTestFail", "CPU")
class FailKernel(OpKernel):
    def compute(self, ctx):
        COMPUTES.append(ctx.node_name)
        raise errors.InvalidArgumentError("never computes")


@pytest.fixture(autouse=True)
def graph():
    COMPUTES.clear()
    g = gp.Graph()
    with g.as_default():
        yield g


def test_a_constant_subgraph_is_computed_once_per_plan():
    scale = gp.raw_ops.FoldTestPure(x=gp.math.rsqrt(gp.constant([4.0, 16.0])), name="scale")
    x = gp.placeholder(gp.float32, [2])
    y = x * scale
    with gp.Session() as sess:
        for k in range(3):
            np.testing.assert_array_equal(sess.run(y, {x: [k, k]}), [k * 1.0, k * 0.5])
    assert COMPUTES == ["scale"]


def test_stateful_random_and_placeholder_dependent_nodes_run_every_time():
    stateful = gp.raw_ops.FoldTestStateful(x=gp.constant(1.0), name="stateful")
    noise = gp.random.uniform([4], seed=1)
    x = gp.placeholder_with_default(gp.constant(3.0), [])
    downstream = gp.raw_ops.FoldTestPure(x=x, name="downstream")
    with gp.Session() as sess:
        first = sess.run([stateful, noise, downstream])
        second = sess.run([stateful, noise, downstream])
        assert sess.run(downstream, {x: 5.0}) == 10.0
    assert first[0] == second[0] == 2.0 and first[2] == second[2] == 6.0
    assert not np.array_equal(first[1], second[1])
    assert COMPUTES.count("stateful") == 2 and COMPUTES.count("downstream") == 3


def test_a_fed_constant_is_not_folded_in_its_place():
    c = gp.constant(1.0)
    y = gp.raw_ops.FoldTestPure(x=c, name="y")
    with gp.Session() as sess:
        assert sess.run(y) == 2.0
        assert sess.run(y, {c: 7.0}) == 14.0
        assert sess.run(y) == 2.0
    assert COMPUTES == ["y", "y"]      # once per plan: without, then with the feed


def test_a_failing_node_raises_at_run_time_with_its_name_every_run():
    bad = gp.raw_ops.FoldTestFail(x=gp.constant(1.0), name="bad")
    with gp.Session() as sess:
        for _ in range(2):
            with pytest.raises(errors.InvalidArgumentError, match="never computes") as info:
                sess.run(bad)
            assert "bad" in str(info.value)


def test_outputs_over_the_size_cap_are_computed_every_run(monkeypatch):
    monkeypatch.setattr(constant_folding, "FOLD_MAX_BYTES", 1 << 20)
    big = gp.raw_ops.FoldTestBig(x=gp.constant(1.5), name="big")
    with gp.Session() as sess:
        for _ in range(2):
            assert sess.run(big).sum() == 1.5 * (1 << 19)
    assert COMPUTES == ["big"] * 3     # the refused fold, then both runs


def test_a_plan_holds_at_most_its_budget_of_folded_values(monkeypatch):
    monkeypatch.setattr(constant_folding, "PLAN_FOLD_MAX_BYTES", 3 << 20)
    bigs = [gp.raw_ops.FoldTestBig(x=gp.constant(float(k)), name=f"big{k}") for k in range(3)]
    with gp.Session() as sess:
        for _ in range(2):
            assert [b.sum() for b in sess.run(bigs)] == [k * (1 << 19) for k in range(3)]
    assert COMPUTES.count("big0") == 1 and COMPUTES.count("big2") == 3   # 2 MiB each


def test_fetched_folded_values_are_the_callers_to_write():
    y = gp.constant([1.0, 2.0]) * 3.0
    with gp.Session() as sess:
        got = sess.run(y)
        got[0] = -1.0
        np.testing.assert_array_equal(sess.run(y), [3.0, 6.0])


def test_a_node_run_as_a_target_alone_keeps_running():
    side = gp.raw_ops.FoldTestPure(x=gp.constant(1.0), name="side")
    with gp.Session() as sess:
        sess.run(side.op)
        sess.run(side.op)
    assert COMPUTES == ["side", "side"]


def test_a_constant_under_control_dependencies_folds_and_keeps_their_order():
    v = gp.Variable(0.0)
    first = v.assign(5.0)
    with gp.control_dependencies([first]):
        one = gp.raw_ops.FoldTestPure(x=gp.constant(0.5), name="one")
    second = v.assign_add(one)
    assert "FoldTestPure" not in _step_types([second])
    with gp.Session() as sess:
        sess.run(v.initializer)
        for _ in range(2):
            assert sess.run(second) == 6.0     # the assign, then the add: the graph's order
    assert COMPUTES.count("one") == 2     # once per plan: _step_types's, the session's


def test_variable_handles_are_made_once_per_plan():
    v = gp.Variable(np.float32([1, 2]))
    read = v.read_value()
    assert _step_types([read]) == ["ReadVariableOp"]
    with gp.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(read), [1, 2])
        sess.run(v.assign([3.0, 4.0]))
        np.testing.assert_array_equal(sess.run(read), [3, 4])
    with gp.Session() as sess:
        with pytest.raises(errors.FailedPreconditionError, match="uninitialized"):
            sess.run(read)


def _step_types(fetches, feeds=()):
    return [step.op.type for step in plan_kernel_steps(fetches, feeds)]


def test_a_constant_channel_scale_after_a_conv_folds_into_its_filter():
    """Conv2D/Conv3D (channels-last) then Mul by a constant per-output-channel vector: the
    conv runs with the scaled filter and the Mul not at all, as TF's grappler does; the
    values match the unfolded graph's within rounding."""
    rng = np.random.default_rng(0)
    for rank, conv in ((2, gp.nn.conv2d), (3, gp.nn.conv3d)):
        x = gp.placeholder(gp.float32, [2] + [6] * rank + [3])
        w = gp.constant(rng.normal(size=(3,) * rank + (3, 4)).astype(np.float32))
        y = conv(x, w, [1] * (rank + 2), "SAME")
        scale = rng.normal(size=(1,) * rank + (4,)).astype(np.float32)
        scaled = y * gp.constant(scale)
        assert _step_types([scaled], [x]) == [f"Conv{rank}D"]
        feed = {x: rng.normal(size=(2,) + (6,) * rank + (3,)).astype(np.float32)}
        with gp.Session() as sess:
            folded = sess.run(scaled, feed)
            unfolded_conv, unfolded = sess.run([y, scaled], feed)   # y fetched: no fold
        np.testing.assert_allclose(folded, unfolded_conv * scale, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(folded, unfolded, rtol=1e-5, atol=1e-5)


def test_a_channel_scale_after_a_depthwise_conv_folds_channel_by_multiplier():
    rng = np.random.default_rng(2)
    x = gp.placeholder(gp.float32, [2, 7, 7, 3])
    w = gp.constant(rng.normal(size=(3, 3, 3, 2)).astype(np.float32))    # M = 2
    y = gp.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "SAME")
    scale = rng.normal(size=6).astype(np.float32)                       # C*M channels
    scaled = y * gp.constant(scale)
    assert _step_types([scaled], [x]) == ["DepthwiseConv2dNative"]
    feed = {x: rng.normal(size=(2, 7, 7, 3)).astype(np.float32)}
    with gp.Session() as sess:
        folded = sess.run(scaled, feed)
        plain, _ = sess.run([y, scaled], feed)
    np.testing.assert_allclose(folded, plain * scale, rtol=1e-5, atol=1e-5)


def test_a_scale_is_not_folded_where_the_conv_output_is_read_elsewhere_or_not_per_channel():
    rng = np.random.default_rng(1)
    x = gp.placeholder(gp.float32, [1, 5, 5, 2])
    w = gp.constant(rng.normal(size=(3, 3, 2, 3)).astype(np.float32))
    y = gp.nn.conv2d(x, w, [1, 1, 1, 1], "SAME")
    shared = y * gp.constant(np.float32([1, 2, 3]))
    also = y + 1.0
    assert _step_types([shared, also], [x]).count("Mul") == 1
    spatial = y * gp.constant(rng.normal(size=(5, 5, 1)).astype(np.float32))
    assert _step_types([spatial], [x]).count("Mul") == 1
    s = gp.placeholder(gp.float32, [3])
    assert _step_types([y * s], [x, s]).count("Mul") == 1
    assert _step_types([shared], [y]) == ["Mul"]                 # the conv's output fed
    scaled = y * gp.constant(np.float32([1, 2, 3]))
    with gp.control_dependencies([scaled.op]):
        after = gp.identity(scaled) + 1.0
    with gp.Session() as sess:                                   # the Mul's output fed
        got = sess.run(after, {x: np.ones((1, 5, 5, 2), np.float32),
                               scaled: np.zeros((1, 5, 5, 3), np.float32)})
    np.testing.assert_array_equal(got, np.ones((1, 5, 5, 3), np.float32))
    nchw = gp.nn.conv2d(gp.placeholder(gp.float32, [1, 2, 5, 5]), w, [1, 1, 1, 1], "SAME",
                        data_format="NCHW")
    assert _step_types([nchw * gp.constant(np.float32([1, 2, 3]).reshape(3, 1, 1))],
                       [nchw.op.inputs[0]]).count("Mul") == 1


def test_a_channel_scale_after_conv_and_bias_add_scales_filter_and_bias():
    rng = np.random.default_rng(3)
    x = gp.placeholder(gp.float32, [2, 6, 6, 3])
    w = gp.constant(rng.normal(size=(3, 3, 3, 4)).astype(np.float32))
    b = rng.normal(size=4).astype(np.float32)
    y = gp.nn.bias_add(gp.nn.conv2d(x, w, [1, 1, 1, 1], "SAME"), gp.constant(b))
    scale = rng.normal(size=4).astype(np.float32)
    scaled = y * gp.constant(scale)
    assert _step_types([scaled], [x]) == ["BiasAdd"]    # one step: the conv, its scaled bias
    feed = {x: rng.normal(size=(2, 6, 6, 3)).astype(np.float32)}
    with gp.Session() as sess:
        folded = sess.run(scaled, feed)
        plain, _ = sess.run([y, scaled], feed)
    np.testing.assert_allclose(folded, plain * scale, rtol=1e-5, atol=1e-5)
