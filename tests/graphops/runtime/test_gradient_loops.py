"""A trained recurrence's three While loops (the forward loop, the gradient's recompute
loop pushing each iteration's state onto a TensorList, the backward loop) run as compiled
programs (graphops/runtime/loop_programs.py): variable reads hoisted out of loops that
write no state, pushes into a list's room (grown where short), shape arithmetic folded
and bias gradients summed over rows in the Sum kernel's order. Against float64 NumPy
back-propagation through time and the loops' plans run one call per iteration; reads kept
per iteration where a loop writes a variable; a push past a list's bound fails as the
kernel says."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import graphops as gp
from graphops.api import raw_ops as R
from graphops.kernels.ops import state
from graphops.registry import errors
from graphops.runtime import loop_programs
from tests.graphops.runtime.test_loop_programs import (_run, answered,
                                                       programs)   # noqa: F401 (a fixture)


@pytest.fixture(autouse=True)
def _graph():
    with gp.Graph().as_default() as g:
        yield g


def _recurrence(h0, w0, b0, target):
    """h <- tanh(h W + b) n times (W, b variables), a squared loss and its gradients."""
    x = gp.placeholder(gp.float32, [None, h0.shape[1]])
    n = gp.placeholder(gp.int32, [])
    w, b = gp.Variable(w0), gp.Variable(b0)
    _, h = gp.while_loop(lambda i, h: gp.less(i, n),
                         lambda i, h: (i + 1, gp.tanh(gp.matmul(h, w) + b)),
                         [gp.constant(0), x])
    loss = gp.reduce_sum(gp.square(h - target))
    return x, n, [h, loss] + gp.gradients(loss, [w, b])


def _trained(fetches, feeds, init, compiled=True):
    """The fetched values (the third of three runs), the loops compiled or not."""
    with pytest.MonkeyPatch.context() as patch:
        if not compiled:
            patch.setattr(loop_programs.LoopCompiler, "for_plan",
                          classmethod(lambda cls, plan: None))
        with gp.Session() as sess:
            sess.run(init)
            return [sess.run(fetches, feeds) for _ in range(3)][-1]


def _reference(n, h0, w, b, target):
    """h, the loss and its gradients by float64 back-propagation through time."""
    hs = [h0.astype(np.float64)]
    for _ in range(n):
        hs.append(np.tanh(hs[-1] @ w + b))
    dh = 2 * (hs[-1] - target)
    dw, db = np.zeros(w.shape), np.zeros(b.shape)
    for k in range(n, 0, -1):
        dz = dh * (1 - hs[k] ** 2)
        dw += hs[k - 1].T @ dz
        db += dz.sum(axis=0)
        dh = dz @ w.T
    return [hs[-1], ((hs[-1] - target) ** 2).sum(), dw, db]


@settings(max_examples=8, deadline=None)
@given(n=st.sampled_from([2, 5, 40]), batch=st.integers(2, 6), width=st.integers(2, 9),
       seed=st.integers(0, 2 ** 16))
def test_a_trained_recurrence_runs_its_three_loops_compiled(n, batch, width, seed):
    """40 iterations push past the lists' first room (16): the program grows its room."""
    rng = np.random.default_rng(seed)
    h0 = rng.standard_normal((batch, width)).astype(np.float32)
    w0 = (rng.standard_normal((width, width)) / width).astype(np.float32)
    b0 = rng.standard_normal(width).astype(np.float32) / 4
    target = rng.standard_normal((batch, width)).astype(np.float32)
    with gp.Graph().as_default():
        x, iterations, fetches = _recurrence(h0, w0, b0, target)
        init = gp.global_variables_initializer()
        with answered() as answers:
            got = _trained(fetches, {x: h0, iterations: n}, init)
        stepwise = _trained(fetches, {x: h0, iterations: n}, init, compiled=False)
    assert len({id(program.compiler) for program, _ in answers}) == 3
    assert all(results is not None for _, results in answers)
    assert all(program.room == (64 if n > 16 else 16) for program, _ in answers
               if program.compiler.pushes)
    want = _reference(n, h0, w0, b0, target)
    for g, s, r in zip(got, stepwise, want):
        assert np.shape(g) == np.shape(r)
        scale = np.abs(r).max()
        np.testing.assert_allclose(g, r, rtol=1e-4, atol=1e-5 * scale)
        np.testing.assert_allclose(g, s, rtol=2e-6, atol=2e-6 * scale)


def _counting_reads(monkeypatch):
    """The node names of the ReadVariableOp runs from now on, by compute or by the call
    prepare made."""
    kernel = state.ReadVariableOpKernel
    reads, compute, prepare = [], kernel.compute, kernel.prepare

    def counted_prepare(self, ctx):
        call = prepare(self, ctx)
        return call and (lambda inputs: reads.append(self.node_name) or call(inputs))
    monkeypatch.setattr(kernel, "compute",
                        lambda self, ctx: reads.append(self.node_name) or compute(self, ctx))
    monkeypatch.setattr(kernel, "prepare", counted_prepare)
    return reads


@pytest.mark.parametrize("compiled", [True, False])
def test_a_loop_writing_no_state_reads_each_variable_once(monkeypatch, compiled):
    v = gp.Variable(np.float32(0.5))
    _, total = gp.while_loop(lambda i, t: gp.less(i, 7),
                             lambda i, t: (i + 1, t * v.read_value() + 1.0),
                             [gp.constant(0), gp.constant(np.float32(1))])
    with gp.Session() as sess:
        sess.run(v.initializer)
        reads = _counting_reads(monkeypatch)
        with pytest.MonkeyPatch.context() as patch:
            if not compiled:
                patch.setattr(loop_programs.LoopCompiler, "for_plan",
                              classmethod(lambda cls, plan: None))
            assert sess.run(total) == pytest.approx(sum(0.5 ** k for k in range(8)))
            assert len(reads) == 1
            sess.run(v.assign(2.0))
            reads.clear()
            assert sess.run(total) == 2 ** 8 - 1        # the read sees the new value
            assert len(reads) == 1


def test_a_loop_assigning_a_variable_reads_it_every_iteration(monkeypatch):
    """The body adds 1 to v, then reads it: 1 + 2 + 3 + 4, and v ends at 4."""
    v = gp.Variable(np.float32(0))

    def body(i, total):
        with gp.control_dependencies([v.assign_add(1.0)]):
            return i + 1, total + v.read_value()

    _, total = gp.while_loop(lambda i, t: gp.less(i, 4), body,
                             [gp.constant(0), gp.constant(np.float32(0))])
    with gp.Session() as sess:
        sess.run(v.initializer)
        reads = _counting_reads(monkeypatch)
        assert sess.run(total) == 10
        assert sess.run(v) == 4
    assert reads.count("Read/ReadVariableOp") == 4         # (v.read_value() in the body)


def test_a_condition_assigning_a_variable_keeps_the_bodys_reads(monkeypatch):
    """The condition counts its runs in v; the body reads v: 1 + 2 + 3."""
    v = gp.Variable(np.float32(0))

    def cond(i, total):
        with gp.control_dependencies([v.assign_add(1.0)]):
            return gp.less(i, 3)

    _, total = gp.while_loop(cond, lambda i, t: (i + 1, t + v.read_value()),
                             [gp.constant(0), gp.constant(np.float32(0))])
    with gp.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(total) == 6


def test_the_gradient_stacks_only_the_values_it_reads():
    """The recompute loop pushes h, not the loop's counters."""
    rng = np.random.default_rng(0)
    _recurrence(*(rng.standard_normal(s).astype(np.float32)
                  for s in ((2, 3), (3, 3), (3,), (2, 3))))
    graph = gp.get_default_graph()
    pushed = [node["attr"]["element_dtype"] for function in graph._functions.values()
              for node in function.get("node_def", []) if node["op"] == "TensorListPushBack"]
    assert pushed == [gp.float32]


def test_a_push_past_a_lists_bound_fails_as_the_kernel_says(programs):
    empty = R.EmptyTensorList(element_shape=[2], max_num_elements=20,
                              element_dtype=gp.float32)
    _, items = gp.while_loop(
        lambda i, items: gp.less(i, 25),
        lambda i, items: (i + 1, R.TensorListPushBack(input_handle=items,
                                                      tensor=gp.fill([2], 1.0))),
        [gp.constant(0), empty])
    with pytest.raises(errors.InvalidArgumentError,
                       match="Tried to push item into a full list list size: 20 "
                             "max_num_elements: 20"):
        _run(items)
    assert programs and all(results is None for _, results in programs)


def test_a_sum_over_rows_in_a_loop_gives_the_kernels_bits(programs):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((37, 5)).astype(np.float32) * 100
    _, total = gp.while_loop(
        lambda i, t: gp.less(i, 9),
        lambda i, t: (i + 1, t + gp.reduce_sum(x * t, axis=0) / 64.0),
        [gp.constant(0), gp.ones([5])])
    compiled = _run(total)
    assert programs and all(results is not None for _, results in programs)
    np.testing.assert_array_equal(compiled, _run(total, compiled=False))
