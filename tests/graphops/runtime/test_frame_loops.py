"""TF1 while loops of the fixed shape run as straight-line code (frame_loops.LoopPlan): which
frames get a LoopPlan, and that such a loop gives what the node-by-node dataflow and plain
Python give: values, the Merge's index, side effects run once per iteration, errors naming
the node, cancellation, and loops whose Enters are dead."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import graphops as gp
from graphops.api import raw_ops as R
from graphops.registry import OpKernel, TensorShape, register_kernel, register_op
from graphops.registry.errors import CancelledError, InternalError, InvalidArgumentError
from graphops.registry.kernel_registry import deregister_kernels
from graphops.registry.op_registry import deregister_op
from graphops.runtime import frame_loops, loop_programs
from graphops.runtime.executor import build_plan
from tests.graphops.runtime.test_frame_executor import v1_while

COMPUTES = []     # node names, one per compute of a test kernel


class _Source(OpKernel):
    """Its `value` attr (an invariant kernel without inputs, as a Const's), counted."""

    invariant = True

    def compute(self, ctx):
        COMPUTES.append(ctx.node_name)
        ctx.set_output(0, np.float32(ctx.construction.attrs["value"]))


class _Pass(OpKernel):
    """Forwards its input (as an Identity's kernel declares), counted."""

    forwards_input = True

    def compute(self, ctx):
        COMPUTES.append(ctx.node_name)
        ctx.set_output(0, ctx.input(0))


class _Twice(OpKernel):
    """2 x (stateless, or stateful as FlTwiceStateful), counted."""

    def compute(self, ctx):
        COMPUTES.append(ctx.node_name)
        ctx.set_output(0, ctx.input(0) * np.float32(2))


class _Forget(OpKernel):
    """Sets no output (a faulty kernel)."""

    def compute(self, ctx):
        pass


@pytest.fixture(autouse=True, scope="module")
def _registered():
    register_op("FlSource").output("y: float").attr("value: float").set_shape_fn(
        lambda c: c.set_output(0, TensorShape([])))
    register_op("FlPass").input("x: float").output("y: float").set_shape_fn(
        lambda c: c.set_output(0, c.input(0)))
    register_op("FlForget").input("x: float").output("y: float").set_shape_fn(
        lambda c: c.set_output(0, c.input(0)))
    for name in ("FlTwice", "FlTwiceStateful"):
        made = register_op(name).input("x: float").output("y: float").set_shape_fn(
            lambda c: c.set_output(0, c.input(0)))
        if name.endswith("Stateful"):
            made.set_is_stateful()
        register_kernel(name, "CPU")(_Twice)
    register_kernel("FlSource", "CPU")(_Source)
    register_kernel("FlPass", "CPU")(_Pass)
    register_kernel("FlForget", "CPU")(_Forget)
    yield
    for name in ("FlSource", "FlPass", "FlForget", "FlTwice", "FlTwiceStateful"):
        deregister_kernels(name)
        deregister_op(name)


@pytest.fixture(autouse=True)
def _fresh_graph():
    COMPUTES.clear()
    with gp.Graph().as_default() as g:
        yield g


def _loops(feeds, fetches):
    """{frame name: whether it runs as a LoopPlan} of the plan for feeds and fetches."""
    return {name: loop is not None
            for name, loop in build_plan(feeds, fetches, []).loops.items()}


def _run(fetches, feeds=None, dataflow=False, monkeypatch=None):
    """The fetched values; with `dataflow`, every loop run node by node."""
    if dataflow:
        monkeypatch.setattr(frame_loops.LoopPlan, "analyse", classmethod(lambda *a: None))
    try:
        with gp.Session() as sess:
            return sess.run(fetches, feeds)
    finally:
        monkeypatch and monkeypatch.undo()


def _recurrence(n, x, w):
    """h <- tanh(h w + 0.5) n times (a loop counter and an invariant weight)."""
    return v1_while(lambda i, h, n_in, w_in: gp.less(i, n_in),
                    lambda i, h, n_in, w_in: [i + 1, gp.tanh(gp.matmul(h, w_in) + 0.5)],
                    [gp.constant(0), x], "rnn", [n, w])


def test_a_lowered_loop_gets_a_loop_plan_and_a_nested_loops_outer_frame_does_not():
    n = gp.placeholder(gp.int32, [])
    x = gp.placeholder(gp.float32, [2, 3])
    _, h = _recurrence(n, x, gp.constant(np.eye(3, dtype=np.float32)))
    assert _loops([n, x], [h]) == {"rnn": True}

    def outer_body(i, acc, n_in):
        _, acc = v1_while(lambda j, a: gp.less(j, 2), lambda j, a: [j + 1, a * 2.0],
                          [i * 0, acc], "inner")
        return [i + 1, acc]

    _, acc = v1_while(lambda i, a, n_in: gp.less(i, n_in), outer_body,
                      [gp.constant(0), gp.constant(1.0)], "outer", [n])
    assert _loops([n], [acc]) == {"outer": False, "inner": True}


def test_a_loop_with_a_cond_in_its_body_runs_by_dataflow():
    n = gp.placeholder(gp.int32, [])

    def body(i, v, n_in):
        odd = gp.equal(gp.math.floormod(i, 2), 1)
        false_side, true_side = R.Switch(data=v, pred=odd)
        return [i + 1, R.Merge(inputs=[false_side + 1.0, true_side * 3.0])[0]]

    _, v = v1_while(lambda i, v, n_in: gp.less(i, n_in), body,
                    [gp.constant(0), gp.constant(1.0)], "with_cond", [n])
    assert _loops([n], [v]) == {"with_cond": False}
    assert _run(v, {n: 4}) == ((1.0 + 1.0) * 3.0 + 1.0) * 3.0


@settings(max_examples=20, deadline=None)
@given(steps=st.integers(0, 6), seed=st.integers(0, 2**16))
def test_a_loop_plan_gives_the_dataflows_values_and_numpys(steps, seed):
    rng = np.random.default_rng(seed)
    start = rng.standard_normal((2, 3)).astype(np.float32)
    weight = rng.standard_normal((3, 3)).astype(np.float32)
    with gp.Graph().as_default(), pytest.MonkeyPatch.context() as mp:
        n = gp.placeholder(gp.int32, [])
        x = gp.placeholder(gp.float32, [2, 3])
        i, h = _recurrence(n, x, gp.constant(weight))
        feeds = {n: steps, x: start}
        compiled = _run([i, h], feeds)
        mp.setattr(loop_programs.LoopCompiler, "for_plan", classmethod(lambda *a: None))
        got = _run([i, h], feeds)          # step by step (loop programs: test_loop_programs)
        by_dataflow = _run([i, h], feeds, dataflow=True, monkeypatch=mp)
    expected = start
    for _ in range(steps):
        expected = np.tanh(expected @ weight + np.float32(0.5))
    assert got[0] == by_dataflow[0] == steps
    np.testing.assert_array_equal(got[1], by_dataflow[1])
    np.testing.assert_allclose(got[1], expected, rtol=1e-5, atol=1e-6)
    assert compiled[0] == steps
    np.testing.assert_allclose(compiled[1], expected, rtol=1e-5, atol=1e-6)


def test_the_merge_index_is_0_in_the_first_iteration_and_1_after():
    n = gp.placeholder(gp.int32, [])
    with gp.control_dependencies(None):
        enters = [R.Enter(data=gp.constant(0), frame_name="idx"),
                  R.Enter(data=gp.constant(0), frame_name="idx")]
        merges = [R.Merge(inputs=[e, e]) for e in enters]
        bound = R.Enter(data=n, frame_name="idx", is_constant=True)
        pivot = R.LoopCond(input=gp.less(merges[0][0], bound))
        switches = [R.Switch(data=m[0], pred=pivot) for m in merges]
        seen = R.Switch(data=merges[1][1], pred=pivot)[1]     # the Merge's index
        with gp.control_dependencies([pivot.op]):      # constants in the loop's frame
            results = [switches[0][1] + 1, switches[1][1] * 10 + seen]
        for m, result in zip(merges, results):
            m[0].op._update_input(1, R.NextIteration(data=result))
        _, digits = [R.Exit(data=s[0]) for s in switches]
    assert _loops([n], [digits]) == {"idx": True}
    assert _run(digits, {n: 4}) == 111     # 0, then 1 in each later iteration


@pytest.mark.parametrize("dataflow", [False, True])
def test_side_effects_run_once_per_iteration_in_the_body_and_once_more_in_the_condition(
        dataflow, monkeypatch):
    body_runs = gp.Variable(0.0, use_resource=True)
    cond_runs = gp.Variable(0.0, use_resource=True)
    n = gp.placeholder(gp.int32, [])

    def cond(i, t, n_in, body_handle, cond_handle):
        bump = R.AssignAddVariableOp(resource=cond_handle, value=gp.constant(1.0))
        with gp.control_dependencies([bump]):
            return gp.less(i, n_in)

    def body(i, t, n_in, body_handle, cond_handle):
        bump = R.AssignAddVariableOp(resource=body_handle, value=gp.constant(1.0))
        with gp.control_dependencies([bump]):
            return [i + 1, gp.identity(t)]

    _, t = v1_while(cond, body, [gp.constant(0), gp.constant(0.0)], "effects",
                    [n, body_runs.handle, cond_runs.handle])
    assert _loops([n], [t]) == {"effects": True}
    if dataflow:
        monkeypatch.setattr(frame_loops.LoopPlan, "analyse", classmethod(lambda *a: None))
    with gp.Session() as sess:
        sess.run([body_runs.initializer, cond_runs.initializer])
        for count in (5, 0):
            sess.run(t, {n: count})
        assert sess.run([body_runs.read_value(), cond_runs.read_value()]) == [5.0, 7.0]


def test_a_kernel_error_in_a_loop_plan_names_the_node_as_the_dataflow_does(monkeypatch):
    _, v = v1_while(lambda i, v: gp.less(i, 3),
                    lambda i, v: [i + 1, gp.reshape(v, [2], name="bad_reshape")],
                    [gp.constant(0), gp.constant([1.0, 2.0, 3.0])], "err")
    assert _loops([], [v]) == {"err": True}
    messages = []
    for dataflow in (False, True):
        with pytest.raises(InvalidArgumentError, match="Node: 'bad_reshape' \\(op: Reshape") \
                as caught:
            _run(v, dataflow=dataflow, monkeypatch=monkeypatch)
        messages.append(caught.value.message)
    assert messages[0] == messages[1]


def test_a_kernel_that_sets_no_output_is_an_internal_error_naming_the_node(monkeypatch):
    _, v = v1_while(lambda i, v: gp.less(i, 3),
                    lambda i, v: [i + 1, R.FlForget(x=v, name="forgetful")],
                    [gp.constant(0), gp.constant(1.0)], "forget")
    assert _loops([], [v]) == {"forget": True}
    messages = []
    for dataflow in (False, True):
        with pytest.raises(InternalError, match="(?s)Node: 'forgetful' \\(op: FlForget.*"
                           "The kernel did not set output 0\\.") as caught:
            _run(v, dataflow=dataflow, monkeypatch=monkeypatch)
        messages.append(caught.value.message)
    assert messages[0] == messages[1]


def test_a_loop_plan_stops_when_the_run_is_cancelled():
    _, v = v1_while(lambda i, v: gp.less(i, 10**9), lambda i, v: [i + 1, v + 1.0],
                    [gp.constant(0), gp.constant(0.0)], "endless")
    plan = build_plan([], [v], [])
    assert plan.loops == {"endless": plan.loops["endless"]} and plan.loops["endless"]
    calls = []

    def cancelled():
        calls.append(None)
        return len(calls) > 100

    with pytest.raises(CancelledError, match="The Session was closed while this run"):
        plan.run([], cancelled)
    assert len(calls) == 101


def test_a_loop_plan_whose_enters_are_dead_runs_by_dataflow_and_stays_dead():
    p = gp.placeholder(gp.bool, [])
    x = gp.placeholder(gp.float32, [])
    false_side, true_side = R.Switch(data=x, pred=p)
    _, looped = v1_while(lambda i, v: gp.less(i, 3), lambda i, v: [i + 1, v * 2.0],
                         [gp.cast(true_side, gp.int32) * 0, true_side], "maybe")
    merged, index = R.Merge(inputs=[false_side + 100.0, looped])
    assert _loops([p, x], [merged, index]) == {"maybe": True}
    assert _run([merged, index], {p: True, x: 1.5}) == [12.0, 1]
    assert _run([merged, index], {p: False, x: 1.5}) == [101.5, 0]


@pytest.mark.parametrize("dataflow", [False, True])
def test_invariant_and_forwarding_kernels_are_not_called_per_node(dataflow, monkeypatch):
    """A Const-like node computes once, when the plan is built; an Identity-like node
    gives its input without a kernel call, and its deadness: in a LoopPlan and by
    dataflow (in the loop, and in the root frame around a cond)."""
    n = gp.placeholder(gp.int32, [])
    p = gp.placeholder(gp.bool, [])
    _, v = v1_while(lambda i, v, n_in: gp.less(i, n_in),
                    lambda i, v, n_in: [i + 1, R.FlPass(x=v, name="pass_in_loop") +
                                        R.FlSource(value=1.5, name="source_in_loop")],
                    [gp.constant(0), gp.constant(0.0)], "counted", [n])
    false_side, true_side = R.Switch(data=v, pred=p)
    merged, index = R.Merge(inputs=[R.FlPass(x=false_side, name="pass_false"),
                                    R.FlPass(x=true_side, name="pass_true") * 2.0])
    assert _loops([n, p], [merged]) == {"counted": True}
    assert COMPUTES == ["source_in_loop"]          # building that plan
    COMPUTES.clear()
    if dataflow:
        monkeypatch.setattr(frame_loops.LoopPlan, "analyse", classmethod(lambda *a: None))
    with gp.Session() as sess:
        assert sess.run([merged, index], {n: 4, p: True}) == [12.0, 1]
        assert sess.run([merged, index], {n: 2, p: False}) == [3.0, 0]
    assert COMPUTES == ["source_in_loop"]          # once, for the Session's plan


def test_a_plan_whose_root_has_loops_alone_runs_as_straight_line_code():
    n = gp.placeholder(gp.int32, [])
    x = gp.placeholder(gp.float32, [2, 3])
    _, h = _recurrence(n, x, gp.constant(np.eye(3, dtype=np.float32)))
    assert build_plan([n, x], [h * 2.0], []).root_plan is not None
    p = gp.placeholder(gp.bool, [])
    _, true_side = R.Switch(data=h, pred=p)             # a cond in the root frame
    assert build_plan([n, x, p], [true_side], []).root_plan is None


def test_stacked_loops_with_feeds_and_fetches_in_any_order(monkeypatch):
    """The second loop reads the first's result (as stacked recurrent layers do); the
    Session asks for feeds and fetches in several orders, a fed tensor among them."""
    n = gp.placeholder(gp.int32, [], name="n")
    x = gp.placeholder(gp.float32, [2, 3], name="x")
    rng = np.random.default_rng(5)
    w1, w2 = (rng.standard_normal((3, 3)).astype(np.float32) for _ in range(2))
    _, h1 = _recurrence(n, x, gp.constant(w1))
    _, h2 = v1_while(lambda i, h, n_in, w_in: gp.less(i, n_in),
                     lambda i, h, n_in, w_in: [i + 1, gp.tanh(gp.matmul(h, w_in) + 0.5)],
                     [gp.constant(0), h1 - 1.0], "second", [n * 2, gp.constant(w2)])
    assert build_plan([n, x], [h2, h1], []).root_plan is not None
    start = rng.standard_normal((2, 3)).astype(np.float32)
    first = start
    for _ in range(3):
        first = np.tanh(first @ w1 + np.float32(0.5))
    second = first - np.float32(1)
    for _ in range(6):
        second = np.tanh(second @ w2 + np.float32(0.5))
    with gp.Session() as sess:
        got = sess.run([h2, x, h1], {n: 3, x: start})
        again = sess.run([h1, h2], {x: start, n: 3})
    np.testing.assert_allclose(got[0], second, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(got[1], start)
    np.testing.assert_allclose(got[2], first, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(again[0], got[2])
    np.testing.assert_array_equal(again[1], got[0])
    by_dataflow = _run([h2, x, h1], {n: 3, x: start}, dataflow=True, monkeypatch=monkeypatch)
    for ours, theirs in zip(got, by_dataflow):     # compiled products: another order
        np.testing.assert_allclose(ours, theirs, rtol=2e-6, atol=2e-7)


def test_a_value_that_leaves_a_loop_and_enters_it_again_runs_by_dataflow():
    """Exit -> Enter of the same frame instance: the dataflow runs the first variable's
    loop to its end, then the second variable's from the first one's exit value."""
    with gp.control_dependencies(None):
        counter_enter = R.Enter(data=gp.constant(0), frame_name="again")
        counter = R.Merge(inputs=[counter_enter, counter_enter])
        bound = R.Enter(data=gp.constant(3), frame_name="again", is_constant=True)
        pivot = R.LoopCond(input=gp.less(counter[0], bound))
        counter_switch = R.Switch(data=counter[0], pred=pivot)
        with gp.control_dependencies([pivot.op]):
            one = gp.constant(1)
        counter[0].op._update_input(1, R.NextIteration(data=counter_switch[1] + one))
        count = R.Exit(data=counter_switch[0])
        again_enter = R.Enter(data=count * 10, frame_name="again")
        again = R.Merge(inputs=[again_enter, again_enter])
        again_switch = R.Switch(data=again[0], pred=pivot)
        again[0].op._update_input(1, R.NextIteration(data=again_switch[1]))
        result = R.Exit(data=again_switch[0])
    assert _loops([], [result]) == {"again": False}
    assert _run([count, result]) == [3, 30]


def test_a_kernel_error_after_a_loop_names_the_node_as_the_dataflow_does(monkeypatch):
    _, v = v1_while(lambda i, v: gp.less(i, 2), lambda i, v: [i + 1, v * 2.0],
                    [gp.constant(0), gp.constant([1.0, 2.0, 3.0])], "before_error")
    bad = gp.reshape(v, [2], name="bad_after_loop")
    assert build_plan([], [bad], []).root_plan is not None
    messages = []
    for dataflow in (False, True):
        with pytest.raises(InvalidArgumentError, match="Node: 'bad_after_loop'") as caught:
            _run(bad, dataflow=dataflow, monkeypatch=monkeypatch)
        messages.append(caught.value.message)
    assert messages[0] == messages[1]


def test_a_root_plan_drops_each_value_after_its_last_reader():
    """Walking the plan's steps and loops: nothing is read after it was dropped, and at
    the end only the fetched values are held (the dataflow holds no more)."""
    n = gp.placeholder(gp.int32, [])
    x = gp.placeholder(gp.float32, [2, 3])
    _, h = _recurrence(n, x * 2.0, gp.constant(np.eye(3, dtype=np.float32)))
    total = gp.reduce_sum(gp.tanh(h) + x)
    plan = build_plan([n, x], [total, h], []).root_plan
    live = set(plan.feed_slots) | {slot for slot, _ in plan.initial}
    for steps, loop, enters, exits, frees in plan.segments:
        for step in steps:
            assert live.issuperset(step.reads())
            live |= {slot for _, slot in step.outs}
            live -= set(step.frees)
        if loop is not None:
            assert live.issuperset(slot for _, slot in enters)
            live = (live | set(exits)) - set(frees)
    assert live == set(plan.fetch_slots)


@pytest.mark.parametrize("dataflow", [False, True])
def test_stateless_work_on_invariants_runs_once_per_loop_before_the_body(dataflow,
                                                                         monkeypatch):
    """A stateless node computing on constant Enters alone (and the nodes after it) runs
    once, in the first iteration, where the dataflow runs it in every one; never when the
    body never runs. A stateful one, and one waiting for a step by a control edge, run in
    every iteration. The values are the dataflow's."""
    n = gp.placeholder(gp.int32, [])
    w = gp.placeholder(gp.float32, [3])

    def body(i, h, n_in, w_in):
        hoisted = gp.abs(R.FlTwice(x=w_in, name="twice"))
        every = R.FlTwiceStateful(x=w_in, name="stateful")
        step = gp.tanh(h, name="step")
        with gp.control_dependencies([step]):
            waits = R.FlTwice(x=w_in, name="waits")
        return [i + 1, step + hoisted + every + waits]

    _, h = v1_while(lambda i, h, n_in, w_in: gp.less(i, n_in), body,
                    [gp.constant(0), gp.constant(np.zeros(3, np.float32))], "hoist", [n, w])
    assert _loops([n, w], [h]) == {"hoist": True}
    weights = np.float32([0.5, -1, 2])
    want = np.zeros(3, np.float32)
    for _ in range(3):
        want = np.tanh(want) + np.abs(2 * weights) + 4 * weights
    for steps in (3, 0):
        COMPUTES.clear()
        got = _run(h, {n: steps, w: weights}, dataflow=dataflow, monkeypatch=monkeypatch)
        counts = {name: COMPUTES.count(name) for name in ("twice", "stateful", "waits")}
        once = min(steps, 1) if not dataflow else steps
        assert counts == {"twice": once, "stateful": steps, "waits": steps}
        np.testing.assert_allclose(got, want if steps else np.zeros(3), rtol=1e-6)


def test_an_error_in_hoisted_work_comes_when_the_body_first_runs(monkeypatch):
    """A hoisted node that fails fails when the body first runs, naming the node as the
    dataflow does, and not at all when the body never runs."""
    n = gp.placeholder(gp.int32, [])
    w = gp.placeholder(gp.float32, None)

    def body(i, h, n_in, w_in):
        return [i + 1, h + gp.reshape(w_in, [2], name="bad_invariant")]

    _, h = v1_while(lambda i, h, n_in, w_in: gp.less(i, n_in), body,
                    [gp.constant(0), gp.constant(np.zeros(2, np.float32))], "bad", [n, w])
    assert _loops([n, w], [h]) == {"bad": True}
    feed = {w: np.ones(3, np.float32)}
    np.testing.assert_array_equal(_run(h, {n: 0, **feed}), np.zeros(2))
    messages = []
    for dataflow in (False, True):
        with pytest.raises(InvalidArgumentError, match="Node: 'bad_invariant'") as caught:
            _run(h, {n: 2, **feed}, dataflow=dataflow, monkeypatch=monkeypatch)
        messages.append(caught.value.message)
    assert messages[0] == messages[1]
