"""Elementwise clusters in TF1 loops run as straight-line code (graphops/runtime/
loop_clusters.py): which steps of a loop's body and condition cluster, and that the loop
gives what its unfused steps and the node-by-node dataflow give: values (the arithmetic
bit for bit), the order of side effects, and errors naming the node."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import graphops as gp
from graphops.api import raw_ops as R
from graphops.registry import OpKernel, register_kernel, register_op
from graphops.registry.kernel_registry import deregister_kernels
from graphops.registry.op_registry import deregister_op
from graphops.runtime import elementwise_clusters, frame_loops, loop_clusters
from graphops.runtime.executor import build_plan
from graphops.runtime.steps import ClusterStep
from tests.graphops.runtime.test_elementwise_clusters import _SHAPES, _hostile, random_dag
from tests.graphops.runtime.test_frame_executor import v1_while

RECORDED = []      # node names, one per compute of a LcRecord node


class _Record(OpKernel):
    """Forwards its input and records that it ran (a side effect to order)."""

    def compute(self, ctx):
        RECORDED.append(ctx.node_name)
        ctx.set_output(0, ctx.input(0))


@pytest.fixture(autouse=True, scope="module")
def _registered():
    register_op("LcRecord").input("x: float").output("y: float").set_is_stateful() \
        .set_shape_fn(lambda c: c.set_output(0, c.input(0)))
    register_kernel("LcRecord", "CPU")(_Record)
    yield
    deregister_kernels("LcRecord")
    deregister_op("LcRecord")


@pytest.fixture(autouse=True)
def _graph():
    """A default graph; the program runs wherever a recipe fits."""
    RECORDED.clear()
    with pytest.MonkeyPatch.context() as patch, gp.Graph().as_default() as g:
        patch.setattr(elementwise_clusters, "_prior", lambda *args: ("program", "program"))
        yield g


def _loop_clusters(feeds, fetches):
    """{frame name: ([member op types] per cluster of its condition, of its body)}."""
    return {name: tuple([[op.type for op in step.kernel.ops] for step in steps
                         if isinstance(step, ClusterStep)] for steps in loop.steps)
            for name, loop in build_plan(feeds, fetches, []).loops.items()}


def _run(fetches, feeds, how="clustered"):
    """The fetched values: loops with their clusters, with their steps unfused, or run
    node by node by the dataflow."""
    with pytest.MonkeyPatch.context() as patch:
        if how == "unfused":
            patch.setattr(loop_clusters, "clustered", lambda plan, steps: steps)
        elif how == "dataflow":
            patch.setattr(frame_loops.LoopPlan, "analyse", classmethod(lambda *a: None))
        with np.errstate(all="ignore"), gp.Session() as sess:
            return sess.run(fetches, feeds)


def _lstm(n, x, c0, w):
    """n steps of an LSTM cell on input x (its state c, h; the gates from [x, h] w)."""
    def body(i, c, h, n_in, x_in, w_in):
        z = gp.matmul(gp.concat([x_in, h], axis=1), w_in)
        gate_i, gate_f, cand, gate_o = gp.split(z, 4, axis=1)
        c = gp.sigmoid(gate_f) * c + gp.sigmoid(gate_i) * gp.tanh(cand)
        return [i + 1, c, gp.sigmoid(gate_o) * gp.tanh(c)]

    return v1_while(lambda i, c, h, n_in, x_in, w_in: gp.less(i, n_in), body,
                    [gp.constant(0), c0, c0], "lstm", [n, x, w])[1:]


def test_an_lstm_cells_gates_are_one_step_of_the_loops_body():
    """The cell's nine gate nodes are one step; c and h after 6 steps are the unfused
    loop's and the dataflow's (within an ulp a step: the transcendentals round once from
    float64) and NumPy's in float64."""
    rng = np.random.default_rng(0)
    n = gp.placeholder(gp.int32, [])
    x = gp.placeholder(gp.float32, [None, 5])
    c0 = gp.placeholder(gp.float32, [None, 8])
    weights = rng.standard_normal((13, 32)).astype(np.float32) * 0.5
    c, h = _lstm(n, x, c0, gp.constant(weights))
    assert _loop_clusters([n, x, c0], [c, h]) == {"lstm": ([], [
        ["Sigmoid", "Mul", "Sigmoid", "Tanh", "Mul", "AddV2", "Sigmoid", "Tanh", "Mul"]])}
    feed = {n: 6, x: rng.standard_normal((3, 5)).astype(np.float32),
            c0: rng.standard_normal((3, 8)).astype(np.float32)}
    got = _run([c, h], feed)
    for how in ("unfused", "dataflow"):
        for value, want in zip(got, _run([c, h], feed, how)):
            np.testing.assert_allclose(value, want, rtol=2e-6, atol=2e-6)
    sig = lambda v: 1 / (1 + np.exp(-v))       # noqa: E731
    ref_c, ref_h = feed[c0].astype(np.float64), feed[c0].astype(np.float64)
    for _ in range(6):
        z = np.concatenate([feed[x], ref_h], axis=1) @ weights.astype(np.float64)
        zi, zf, zc, zo = np.split(z, 4, axis=1)
        ref_c = sig(zf) * ref_c + sig(zi) * np.tanh(zc)
        ref_h = sig(zo) * np.tanh(ref_c)
    np.testing.assert_allclose(got[0], ref_c, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[1], ref_h, rtol=1e-5, atol=1e-5)


_UNARY = (gp.negative, gp.abs, gp.square, gp.nn.relu, gp.math.reciprocal, gp.sqrt,
          gp.identity)


@settings(max_examples=30, deadline=None)
@given(st.sampled_from([np.float32, np.float64]),
       st.lists(st.tuples(st.booleans(), st.integers(0, 6), st.integers(0, 20),
                          st.integers(0, 20)), min_size=2, max_size=10),
       st.lists(st.sampled_from(sorted(_SHAPES)), min_size=1, max_size=3),
       st.integers(0, 3), st.integers(0, 2 ** 31))
def test_random_loop_bodies_give_the_unfused_bits(dtype, recipe, shapes, steps, seed):
    """Random DAGs of the exactly rounded ops (and Identities, which share their input's
    slot and split clusters) over two loop variables and invariants that broadcast in
    every pattern: the unfused loop's bits and the dataflow's, for 0 to 3 iterations."""
    rng = np.random.default_rng(seed)
    tf_dtype = gp.as_dtype(dtype)
    starts = [gp.placeholder(tf_dtype, _SHAPES["full"]) for _ in range(2)]
    invariants = [gp.placeholder(tf_dtype, _SHAPES[name]) for name in shapes]
    n = gp.placeholder(gp.int32, [])

    def body(i, h, g, n_in, *inside):
        made = random_dag(recipe, [h, g, *inside], _UNARY)
        return [i + 1, made[-1], made[len(made) // 2]]

    outs = v1_while(lambda i, h, g, n_in, *inside: gp.less(i, n_in), body,
                    [gp.constant(0)] + starts, "random", [n] + invariants)[1:]
    feed = {t: _hostile(rng, t.shape.as_list(), dtype) for t in starts + invariants}
    feed[n] = steps
    got = _run(outs, feed)
    for how in ("unfused", "dataflow"):
        for value, want in zip(got, _run(outs, feed, how)):
            np.testing.assert_array_equal(value, want)
            assert np.all((np.signbit(value) == np.signbit(want)) | (value == 0))


def test_a_cluster_in_the_condition():
    """The condition's elementwise nodes cluster too (but the Square, which v1_while has
    wait for the first Merge by a control edge); the loop stops where NumPy's does."""
    x = gp.placeholder(gp.float32, [4])

    def cond(i, h):
        return gp.less(gp.reduce_sum(gp.abs(gp.square(h) * 2.0 - 0.5)), 40.0)

    _, h = v1_while(cond, lambda i, h: [i + 1, h * 1.5 + 1.0], [gp.constant(0), x], "grow")
    assert _loop_clusters([x], [h]) == {"grow": ([["Mul", "Sub", "Abs"]], [])}
    start = np.float32([0.1, -0.2, 0.3, 0.0])
    want = start.copy()
    while np.sum(np.abs(np.square(want) * np.float32(2) - np.float32(0.5))) < 40:
        want = want * np.float32(1.5) + np.float32(1)
    np.testing.assert_array_equal(_run(h, {x: start}), want)


def test_a_member_read_before_the_clusters_last_node_comes_out_in_time():
    """A node that reads a member and sits before the cluster's last member (in the
    graph's order) runs after the cluster's step, and reads the member's value."""
    x = gp.placeholder(gp.float32, [4])
    y = gp.placeholder(gp.float32, [4])

    def body(i, h, y_in):
        first = h * y_in
        side = gp.reduce_max(first)
        return [i + 1, (gp.square(first - 1.0) + y_in) * side]

    _, h = v1_while(lambda i, h, y_in: gp.less(i, 2), body, [gp.constant(0), x], "early",
                    [y])
    assert _loop_clusters([x, y], [h])["early"][1] == [["Mul", "Sub", "Square", "AddV2"]]
    feed = {x: np.float32([1, 2, -3, 0.5]), y: np.float32([0.5, -1, 0.25, 2])}
    want = feed[x]
    for _ in range(2):
        first = want * feed[y]
        want = (np.square(first - np.float32(1)) + feed[y]) * first.max()
    np.testing.assert_array_equal(_run(h, feed), want)


def test_side_effects_keep_the_order_of_their_edges():
    """A stateful reader of a member waits for the cluster's step; a node that waits for
    it through a NoOp's control edges runs after it, every iteration, as the dataflow
    orders them."""
    x = gp.placeholder(gp.float32, [3])

    def body(i, h):
        first = gp.tanh(h)
        seen = R.LcRecord(x=first, name="after_cluster")
        with gp.control_dependencies([seen.op]):
            barrier = gp.no_op()
        with gp.control_dependencies([barrier]):
            later = R.LcRecord(x=h, name="after_barrier")
        out = (first * 2.0 + 1.0) + later * 0.0
        return [i + 1, out]

    _, h = v1_while(lambda i, h: gp.less(i, 3), body, [gp.constant(0), x], "ordered")
    assert _loop_clusters([x], [h])["ordered"][1] == [["Tanh", "Mul", "AddV2"]]
    value = np.float32([0.5, -1, 2])
    got = _run(h, {x: value})
    assert RECORDED == ["after_cluster", "after_barrier"] * 3
    RECORDED.clear()
    exact = value.astype(np.float64)
    for _ in range(3):
        exact = np.tanh(exact) * 2 + 1
    # the cluster's float32 tanh and NumPy's (the kernel's) each within 2 ulp a step
    for values in (got, _run(h, {x: value}, "dataflow")):
        np.testing.assert_array_max_ulp(values, exact.astype(np.float32), maxulp=4)
    assert RECORDED == ["after_cluster", "after_barrier"] * 3


def test_a_members_error_names_it_as_the_dataflow_does():
    """Shapes the kernels refuse (known only when the loop runs): the members' kernels run
    and the error names the failing member, in the dataflow's words."""
    x = gp.placeholder(gp.float32, None)
    y = gp.placeholder(gp.float32, None)

    def body(i, h, y_in):
        return [i + 1, gp.tanh(gp.add(gp.exp(h), y_in, name="sum")) * 2.0]

    _, h = v1_while(lambda i, h, y_in: gp.less(i, 2), body, [gp.constant(0), x], "refuse",
                    [y])
    assert _loop_clusters([x, y], [h])["refuse"][1] == [["Exp", "AddV2", "Tanh", "Mul"]]
    feed = {x: np.zeros((2, 3), np.float32), y: np.zeros(4, np.float32)}
    messages = []
    for how in ("clustered", "dataflow"):
        with pytest.raises(gp.errors.InvalidArgumentError,
                           match=r"Incompatible shapes: \[2,3\] vs. \[4\]") as caught:
            _run(h, feed, how)
        assert caught.value.op.name == "sum"
        messages.append(caught.value.message)
    assert messages[0] == messages[1]
