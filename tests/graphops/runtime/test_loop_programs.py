"""TF1 loops run as one compiled program (graphops/runtime/loop_programs.py): which loops
compile, and that a compiled loop gives what its steps give one by one and what a float64
NumPy reference gives (products round in another order, so within float32 rounding), for
every iteration count, TensorList reads and writes, views (Split, StridedSlice, Squeeze),
products with transposes, int32 counters that wrap, loop variables that swap places, and
errors in the kernels' own words."""

import contextlib

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import graphops as gp
from graphops.api import raw_ops as R
from graphops.registry import errors
from graphops.runtime import loop_programs
from tests.graphops.interchange.test_sequence_graphs import imported, load
from tests.graphops.runtime.test_frame_executor import v1_while


@pytest.fixture(autouse=True)
def _graph():
    with gp.Graph().as_default() as g:
        yield g


@contextlib.contextmanager
def answered():
    """The answers of every compiled run in the block: a list of (Program, its results or
    None)."""
    answers, run = [], loop_programs.Program.run

    def recorded(self, values, check_cancelled):
        results = run(self, values, check_cancelled)
        answers.append((self, results))
        return results

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(loop_programs.Program, "run", recorded)
        yield answers


@pytest.fixture
def programs():
    with answered() as answers:
        yield answers


def check_tf_fixture(name, programs):
    """A checked-in sequence graph TF wrote runs compiled, within float32 rounding of
    TF's stored outputs and of its loops run step by step."""
    graph_def, feeds, outputs, want, _, _ = load(name)
    graph = imported(graph_def)
    got = _run(outputs, feeds, graph=graph)
    stepwise = _run(outputs, feeds, compiled=False, graph=graph)
    assert programs and all(results is not None for _, results in programs)
    for g, s, w in zip(got, stepwise, want):
        scale = np.abs(w).max()
        np.testing.assert_allclose(g, w, atol=1e-5 * scale)
        np.testing.assert_allclose(g, s, atol=1e-6 * scale)


def _run(fetches, feeds=None, compiled=True, graph=None):
    """The fetched values, the loops compiled where they compile or run step by step."""
    with pytest.MonkeyPatch.context() as patch:
        if not compiled:
            patch.setattr(loop_programs.LoopCompiler, "for_plan",
                          classmethod(lambda cls, plan: None))
        with gp.Session(graph=graph or gp.get_default_graph()) as sess:
            return [sess.run(fetches, feeds) for _ in range(3)][-1]


def _cell_loop(n, xs, h0, w, u, transpose_u, length=None):
    """A Keras-like recurrent cell over list xs: per step i, p = x_i w + h u + w[0] (u transposed
    when `transpose_u`), split in two columns halves: h' = tanh(left), c' = h (the old h,
    so the two variables swap places), out_i = h' * sigmoid(p[:, w:]) written into a list;
    the counter an int32 that also climbs by 2^30 (wrapping)."""
    steps, width = xs.shape[0], h0.shape[1]
    x_list = R.TensorListFromTensor(tensor=xs, element_shape=[-1, 3])
    out_list = R.TensorListReserve(element_shape=[-1, width],
                                   num_elements=length if length is not None else steps,
                                   element_dtype=gp.float32)

    def cond(i, big, h, c, out, n_in, x_in, w_in, u_in):
        return gp.logical_and(gp.less(i, n_in), gp.greater_equal(i, 0))

    def body(i, big, h, c, out, n_in, x_in, w_in, u_in):
        x = R.TensorListGetItem(input_handle=x_in, index=i, element_shape=[-1, 3],
                                element_dtype=gp.float32)
        p = gp.nn.bias_add(gp.matmul(x, w_in) + gp.matmul(h, u_in, transpose_b=transpose_u),
                           w_in[0])
        left, _ = gp.split(p, 2, axis=1)
        gate = p[:, width:]
        h_new = gp.tanh(left)
        out = R.TensorListSetItem(input_handle=out, index=i, item=h_new * gp.sigmoid(gate))
        return [i + 1, big + 2 ** 30, h_new, h, out]

    i, big, h, c, out = v1_while(cond, body, [gp.constant(0), gp.constant(0), h0, h0,
                                              out_list], "cell", [n, x_list, w, u])
    stacked = R.TensorListStack(input_handle=out, element_shape=[-1, width],
                                element_dtype=gp.float32)
    return [i, big, h, c, stacked]


def _cell_reference(n, xs, h0, w, u, transpose_u):
    """The loop of `_cell_loop` in float64 NumPy."""
    width = h0.shape[1]
    h, c, i, big = h0.astype(np.float64), h0.astype(np.float64), 0, 0
    out = np.zeros((xs.shape[0],) + h0.shape)
    while i < n:
        p = xs[i] @ w + h @ (u.T if transpose_u else u) + w[0]
        h, c = np.tanh(p[:, :width]), h
        out[i] = h * (1 / (1 + np.exp(-p[:, width:])))
        i, big = i + 1, (big + 2 ** 30 + 2 ** 31) % 2 ** 32 - 2 ** 31
    return [i, big, h, c, out]


def _cell_inputs(rng, steps, batch, width, transpose_u):
    xs = rng.standard_normal((steps, batch, 3)).astype(np.float32)
    h0 = rng.standard_normal((batch, width)).astype(np.float32)
    w = (rng.standard_normal((3, 2 * width)) / 2).astype(np.float32)
    u_shape = (2 * width, width) if transpose_u else (width, 2 * width)
    u = (rng.standard_normal(u_shape) / width).astype(np.float32)
    return xs, h0, w, u


@settings(max_examples=12, deadline=None)
@given(steps=st.sampled_from([1, 2, 5, 300]), batch=st.integers(1, 9),
       width=st.integers(1, 20), transpose_u=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_a_cell_loop_runs_compiled_as_its_steps_and_numpy_give(steps, batch, width,
                                                             transpose_u, seed):
    """300 iterations run past ITERATIONS (the program stops to look for cancellation)."""
    check_cell(_cell_loop, steps, batch, width, transpose_u, seed)


def check_cell(build, steps, batch, width, transpose_u, seed):
    """The cell loop ``build(n, xs, h0, w, u, transpose_u)`` makes runs compiled (every
    program answering, once the loop runs a second body), as its steps one by one and
    float64 NumPy give."""
    rng = np.random.default_rng(seed)
    xs, h0, w, u = _cell_inputs(rng, steps, batch, width, transpose_u)
    with gp.Graph().as_default():
        n = gp.placeholder(gp.int32, [])
        fetches = build(n, xs, h0, w, u, transpose_u)
        with answered() as answers:
            got = _run(fetches, {n: steps})
        stepwise = _run(fetches, {n: steps}, compiled=False)
    assert steps == 1 or (answers and all(a is not None for _, a in answers))
    want = _cell_reference(steps, xs, h0, w, u, transpose_u)
    assert got[:2] == want[:2] == stepwise[:2]
    for g, s, r in zip(got[2:], stepwise[2:], want[2:]):
        assert g.dtype == np.float32 and g.shape == r.shape
        np.testing.assert_allclose(g, r, rtol=2e-5, atol=2e-6)
        np.testing.assert_allclose(g, s, rtol=2e-6, atol=2e-7)


def test_a_loop_that_never_runs_its_body_or_runs_it_once_compiles_nothing(programs):
    rng = np.random.default_rng(1)
    xs, h0, w, u = _cell_inputs(rng, 4, 2, 3, False)
    n = gp.placeholder(gp.int32, [])
    fetches = _cell_loop(n, xs, h0, w, u, False)[:4]    # no list stacked: none is set at 0
    for count in (0, 1):
        got = _run(fetches, {n: count})
        want = _cell_reference(count, xs, h0, w, u, False)
        assert got[:2] == want[:2]
        np.testing.assert_allclose(got[2:], want[2:4], rtol=2e-6)
    assert programs == []


def test_a_list_read_past_its_end_fails_as_the_kernel_says(programs):
    """The program stops at the read; the loop runs again step by step and its kernel
    raises, naming the node."""
    rng = np.random.default_rng(2)
    xs, h0, w, u = _cell_inputs(rng, 4, 2, 3, False)
    fetches = _cell_loop(gp.constant(6), xs, h0, w, u, False, length=6)
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"Trying to access element 4 in a list with 4 elements\."
                             r"[\s\S]*TensorListGetItem"):
        _run(fetches)
    assert programs and all(results is None for _, results in programs)


def test_a_list_written_past_its_end_fails_as_the_kernel_says(programs):
    rng = np.random.default_rng(3)
    xs, h0, w, u = _cell_inputs(rng, 6, 2, 3, False)
    fetches = _cell_loop(gp.constant(6), xs, h0, w, u, False, length=4)
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"Trying to modify element 4 in a list with 4 elements\."):
        _run(fetches)
    assert programs and all(results is None for _, results in programs)


def test_an_unset_element_reads_as_zeros_as_the_kernel_gives_it(programs):
    """The program cannot read an unset element; step by step, the kernel gives zeros of
    the list's element shape."""
    empty = R.TensorListReserve(element_shape=[2, 3], num_elements=5,
                                element_dtype=gp.float32)

    def body(i, acc, lst):
        item = R.TensorListGetItem(input_handle=lst, index=i, element_shape=[2, 3],
                                   element_dtype=gp.float32)
        return [i + 1, acc + item + 1.0]

    i, acc = v1_while(lambda i, acc, lst: gp.less(i, 5), body,
                      [gp.constant(0), gp.zeros([2, 3])], "unset", [empty])
    got = _run([i, acc])
    assert got[0] == 5
    np.testing.assert_array_equal(got[1], np.full((2, 3), 5, np.float32))
    assert programs and all(results is None for _, results in programs)


def test_a_loop_variable_that_changes_shape_runs_step_by_step(programs):
    """v[1:] * 2 shrinks v each iteration: its signature differs after one, so no
    program is built for it."""
    v0 = np.arange(8, dtype=np.float32)
    i, v = v1_while(lambda i, v: gp.less(i, 3), lambda i, v: [i + 1, v[1:] * 2.0],
                    [gp.constant(0), gp.placeholder_with_default(v0, [None])], "shrink")
    got = _run([i, v])
    np.testing.assert_array_equal(got[1], v0[3:] * 8)
    assert programs == []


def test_ops_without_a_declaration_keep_the_loop_step_by_step():
    """ConcatV2 declares nothing the builder compiles: the loop has no compiler."""
    captured = []
    for_plan = loop_programs.LoopCompiler.for_plan.__func__

    def capture(cls, plan):
        captured.append(for_plan(cls, plan))
        return captured[-1]

    i, v = v1_while(lambda i, v: gp.less(i, 3),
                    lambda i, v: [i + 1, gp.concat([v[:, :1], v[:, 1:] + 1.0], axis=1)],
                    [gp.constant(0), gp.zeros([2, 3])], "concat")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(loop_programs.LoopCompiler, "for_plan", classmethod(capture))
        got = _run([i, v])
    np.testing.assert_array_equal(got[1], [[0, 3, 3], [0, 3, 3]])
    assert captured == [None]


def test_the_lowered_keras_lstm_runs_as_one_program_with_tfs_numbers(programs):
    """The frozen Keras LSTM TF wrote, its loop lowered to TF1 control flow."""
    check_tf_fixture("lstm_lowered", programs)


def test_the_program_looks_for_cancellation_between_runs_of_iterations(monkeypatch):
    calls = []
    monkeypatch.setattr(loop_programs, "ITERATIONS", 7)
    run = loop_programs.Program.run
    monkeypatch.setattr(loop_programs.Program, "run", lambda self, values, check: run(
        self, values, lambda: calls.append(check())))
    i, total = v1_while(lambda i, t: gp.less(i, 100), lambda i, t: [i + 1, t + 0.5],
                        [gp.constant(0), gp.zeros([3])], "count")
    got = _run([i, total])
    assert got[0] == 100
    np.testing.assert_array_equal(got[1], np.full(3, 50, np.float32))
    # 14 stops in each of the three runs (the first records an iteration on a copy, then
    # its program runs all 100 as the others' do): one after each 7 iterations but the last
    assert len(calls) == 3 * 14


def test_a_scalar_operand_fed_anew_is_not_taken_from_the_recorded_run(programs):
    """The Split axes come from feeds (constant Enters): a program built for one pair of
    axes does not run for another, whose loop then runs step by step."""
    a, b = gp.placeholder(gp.int32, []), gp.placeholder(gp.int32, [])
    v = np.arange(16, dtype=np.float32).reshape(4, 4)

    def body(i, acc, v_in, a_in, b_in):      # v a loop variable: its splits not hoisted
        half, _ = gp.split(v_in, 2, axis=a_in)
        _, quarter = gp.split(half, 2, axis=b_in)
        return [i + 1, acc + quarter, v_in]

    i, acc, _ = v1_while(lambda i, acc, *_: gp.less(i, 3), body,
                         [gp.constant(0), gp.zeros([2, 2]), v], "axes", [a, b])
    with gp.Session() as sess:
        rows_first = [sess.run(acc, {a: 0, b: 1}) for _ in range(2)]
        columns_first = sess.run(acc, {a: 1, b: 0})
    for got in rows_first:
        np.testing.assert_array_equal(got, 3 * v[:2, 2:])
    np.testing.assert_array_equal(columns_first, 3 * v[2:, :2])
    assert [results is not None for _, results in programs] == [True, True, False]


def test_a_list_not_a_loop_variable_is_never_written_in_place(programs):
    """Each iteration reads element i of an invariant list and writes element i + 1 of a
    new list made from it: in place, the next iteration would read that write."""
    items = R.TensorListFromTensor(tensor=np.ones((5, 3), np.float32), element_shape=[3])

    def body(i, acc, lst):
        item = R.TensorListGetItem(input_handle=lst, index=i, element_shape=[3],
                                   element_dtype=gp.float32)
        written = R.TensorListSetItem(input_handle=lst, index=i + 1, item=item + 1.0)
        return [i + 1, acc + R.TensorListGetItem(input_handle=written, index=i + 1,
                                                 element_shape=[3], element_dtype=gp.float32)]

    i, acc = v1_while(lambda i, acc, lst: gp.less(i, 4), body,
                      [gp.constant(0), gp.zeros([3])], "invariant_list", [items])
    np.testing.assert_array_equal(_run(acc), np.full(3, 8, np.float32))
    assert programs == []
