"""Functional While loops run as one compiled program (graphops/runtime/function_loops.py):
a recurrent cell over TensorLists built by `while_loop`, and the Keras GRU TF wrote as a
While, against their plans run one call per iteration, float64 NumPy and TF's stored
outputs; loops whose variables change shape, or whose body holds an op the compiler does
not know, run their plans; errors are the kernels'."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import graphops as gp
from graphops.api import raw_ops as R
from graphops.registry import errors
from graphops.runtime import loop_program_builder
from tests.graphops.runtime.test_loop_programs import (_run, check_cell, check_tf_fixture,
                                                       programs)   # noqa: F401 (a fixture)


@pytest.fixture(autouse=True)
def _graph():
    with gp.Graph().as_default() as g:
        yield g


def _while_cell(n, xs, h0, w, u, transpose_u):
    """`test_loop_programs._cell_loop` as one While (`while_loop`)."""
    steps, batch, width = xs.shape[0], xs.shape[1], h0.shape[1]
    x_list = R.TensorListFromTensor(tensor=xs, element_shape=[batch, 3])
    out_list = R.TensorListReserve(element_shape=[-1, width], num_elements=steps,
                                   element_dtype=gp.float32)
    w, u = gp.constant(w), gp.constant(u)

    def body(i, big, h, c, out):
        x = R.TensorListGetItem(input_handle=x_list, index=i, element_shape=[batch, 3],
                                element_dtype=gp.float32)
        p = gp.nn.bias_add(gp.matmul(x, w) + gp.matmul(h, u, transpose_b=transpose_u), w[0])
        left, _ = gp.split(p, 2, axis=1)
        h_new = gp.tanh(left)
        out = R.TensorListSetItem(input_handle=out, index=i,
                                  item=h_new * gp.sigmoid(p[:, width:]))
        return [i + 1, big + 2 ** 30, h_new, h, out]

    i, big, h, c, out = gp.while_loop(
        lambda i, *_: gp.logical_and(gp.less(i, n), gp.greater_equal(i, 0)), body,
        [gp.constant(0), gp.constant(0), gp.constant(h0), gp.constant(h0), out_list])
    return [i, big, h, c, R.TensorListStack(input_handle=out, element_shape=[-1, width],
                                            element_dtype=gp.float32)]


@settings(max_examples=10, deadline=None)
@given(steps=st.sampled_from([2, 5, 300]), batch=st.integers(1, 9), width=st.integers(1, 20),
       transpose_u=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_a_while_cell_runs_compiled_as_its_plans_and_numpy_give(steps, batch, width,
                                                                transpose_u, seed):
    check_cell(_while_cell, steps, batch, width, transpose_u, seed)


def test_the_keras_gru_while_runs_as_one_program_with_tfs_numbers(programs):
    check_tf_fixture("gru_functional", programs)


def test_a_while_variable_that_changes_shape_runs_its_plans(programs):
    v0 = np.arange(8, dtype=np.float32)
    _, v = gp.while_loop(lambda i, v: gp.less(i, 3), lambda i, v: [i + 1, v[1:] * 2.0],
                         [gp.constant(0), gp.constant(v0)],
                         shape_invariants=[gp.TensorShape([]), gp.TensorShape([None])])
    np.testing.assert_array_equal(_run(v), v0[3:] * 8)
    assert programs == []


def test_a_while_with_an_op_the_compiler_does_not_know_runs_its_plans(programs):
    _, v = gp.while_loop(lambda i, v: gp.less(i, 3),
                         lambda i, v: [i + 1, gp.concat([v[:, :1], v[:, 1:] + 1.0], axis=1)],
                         [gp.constant(0), gp.zeros([2, 3])])
    np.testing.assert_array_equal(_run(v), [[0, 3, 3], [0, 3, 3]])
    assert programs == []


def test_a_while_reading_past_a_lists_end_fails_as_the_kernel_says(programs):
    items = R.TensorListFromTensor(tensor=np.ones((4, 3), np.float32), element_shape=[3])

    def body(i, acc):
        return [i + 1, acc + R.TensorListGetItem(input_handle=items, index=i,
                                                 element_shape=[3], element_dtype=gp.float32)]

    _, acc = gp.while_loop(lambda i, acc: gp.less(i, 6), body,
                           [gp.constant(0), gp.zeros([3])])
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"Trying to access element 4 in a list with 4 elements\."):
        _run(acc)
    assert programs and all(results is None for _, results in programs)


def test_a_fused_chain_in_a_while_body_runs_in_the_program(programs, monkeypatch):
    """relu(bias_add(h w, b) * 0.5) with constants b and 0.5: the body's plan fuses the
    chain (a ChainStep), which the program runs as its elementwise stages."""
    chains, lower = [], loop_program_builder.Builder._chain
    monkeypatch.setattr(loop_program_builder.Builder, "_chain",
                        lambda self, step, chain: chains.append(chain) or lower(
                            self, step, chain))
    rng = np.random.default_rng(4)
    w = rng.standard_normal((5, 5)).astype(np.float32) / 2
    bias = rng.standard_normal(5).astype(np.float32)
    h0 = rng.standard_normal((3, 5)).astype(np.float32)

    def body(i, h):
        return [i + 1, gp.nn.relu(gp.nn.bias_add(gp.matmul(h, w), bias) * 0.5) + 0.1]

    _, h = gp.while_loop(lambda i, h: gp.less(i, 6), body, [gp.constant(0), gp.constant(h0)])
    got = _run(h)
    want = h0.astype(np.float64)
    for _ in range(6):
        want = np.maximum((want @ w + bias) * 0.5, 0) + np.float32(0.1)
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6)
    assert chains and programs and all(results is not None for _, results in programs)
