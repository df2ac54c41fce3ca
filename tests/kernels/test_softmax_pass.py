"""Softmax's and LogSoftmax's compiled pass over short rows (compiled/cross_entropy.py,
`activations.COMPILED_MAX_CLASSES`): a slow float64 reference on any shape, the same bits
eagerly and run after run, views that are not contiguous, NaN rows where NumPy's passes
give them, and NumPy's passes on long rows and in a child forked after numba loaded."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import graphops as gp
from graphops.kernels import compiled
from graphops.kernels.ops import activations
from graphops.kernels.ops.activations import COMPILED_MAX_CLASSES, numpy_softmax


def _reference(logits, log):
    """Row by row with Python floats: x - max, then exp(x - max) / sum or x - max - log(sum),
    from the logits' own x - max (what both NumPy's passes and the compiled pass round)."""
    rows = np.asarray(logits).reshape(-1, np.shape(logits)[-1])
    out = []
    for row in rows:
        shifted = [float(v) for v in row - row.max()]
        total = math.fsum(math.exp(v) for v in shifted)
        out.append([v - math.log(total) if log else math.exp(v) / total for v in shifted])
    return np.array(out).reshape(np.shape(logits))


def _runner(dtype, rank, op):
    graph = gp.Graph()
    with graph.as_default():
        logits = gp.placeholder(dtype, [None] * rank)
        out = getattr(gp.raw_ops, op)(logits=logits, name="softmax")
    sess = gp.Session(graph=graph)
    return sess, lambda x: sess.run(out, {logits: x})


@settings(max_examples=40, deadline=None)
@given(shape=st.lists(st.integers(1, 7), min_size=0, max_size=2),
       classes=st.integers(1, COMPILED_MAX_CLASSES + 8), scale=st.sampled_from([1, 30]),
       dtype=st.sampled_from([np.float32, np.float64]), log=st.booleans(),
       seed=st.integers(0, 2**16))
def test_matches_a_float64_reference_run_after_run(shape, classes, scale, dtype, log, seed):
    rng = np.random.default_rng(seed)
    logits = (rng.standard_normal(shape + [classes]) * scale).astype(dtype)
    sess, run = _runner(dtype, logits.ndim, "LogSoftmax" if log else "Softmax")
    with sess:
        first, again = run(logits), run(logits)
    eager = np.asarray(getattr(gp.raw_ops, "LogSoftmax" if log else "Softmax")(logits=logits))
    tolerance = 1e-6 if dtype == np.float32 else 1e-14
    assert first.dtype == dtype and first.shape == logits.shape
    np.testing.assert_allclose(first, _reference(logits, log), rtol=tolerance,
                               atol=tolerance)
    assert first.tobytes() == again.tobytes() == eager.tobytes()


def test_short_rows_round_the_float64_quotient_once():
    """softmax([0, 1]) = (1, e) / (1 + e): each exp rounded to float32 (e to 2.7182817,
    its nearest float32), divided in float64, rounded once."""
    got = gp.raw_ops.Softmax(logits=np.float32([[0, 1]]))
    exps = np.float32([1, math.exp(1)]).astype(np.float64)
    np.testing.assert_array_equal(np.asarray(got)[0], (exps / exps.sum()).astype(np.float32))


def test_views_and_non_finite_rows_give_numpys_nans():
    logits = np.float32([[1, np.nan, 2], [np.inf, 1, 2], [-np.inf] * 3, [1, 2, -np.inf],
                         [0.5, -0.5, 3]])
    view = np.ascontiguousarray(logits.T).T
    for op, log in (("Softmax", False), ("LogSoftmax", True)):
        sess, run = _runner(np.float32, 2, op)
        with sess, np.errstate(invalid="ignore"):
            got, from_view = run(logits), run(view)
            want = numpy_softmax(logits, log)
        assert got.tobytes() == from_view.tobytes()
        assert np.array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    assert np.isnan(got[:3]).all() and got[3, 2] == -np.inf


def _numpy_passes_called(monkeypatch):
    """The logits each call of `numpy_softmax` from `host_softmax` is given."""
    calls = []
    monkeypatch.setattr(activations, "numpy_softmax",
                        lambda x, log=False: calls.append(x.shape) or numpy_softmax(x, log))
    return calls


def test_only_long_rows_and_a_forked_child_take_numpys_passes(monkeypatch):
    rng = np.random.default_rng(5)
    short_rows = rng.standard_normal((3, COMPILED_MAX_CLASSES)).astype(np.float32)
    long_rows = rng.standard_normal((3, COMPILED_MAX_CLASSES + 1)).astype(np.float32)
    calls = _numpy_passes_called(monkeypatch)
    for log in (False, True):
        activations.host_softmax(short_rows, log)
        assert not calls
        got = activations.host_softmax(long_rows, log)
        assert got.tobytes() == numpy_softmax(long_rows, log).tobytes()
        assert calls.pop() == long_rows.shape
    monkeypatch.setattr(compiled, "usable", lambda: False)
    got = np.asarray(gp.raw_ops.Softmax(logits=short_rows))
    assert calls == [short_rows.shape]
    assert got.tobytes() == numpy_softmax(short_rows).tobytes()


def test_all_threads_give_one_threads_bits(monkeypatch):
    """Rows shared among the threads (chunks of rows) give the bits one thread gives."""
    logits = np.random.default_rng(8).standard_normal((4000, 7)).astype(np.float32)
    for log in (False, True):
        alone = activations.host_softmax(logits, log)
        with monkeypatch.context() as patch:
            patch.setattr(activations, "PARALLEL_MIN_SIZE_COMPUTE", 0)
            shared = activations.host_softmax(logits, log)
        assert shared.tobytes() == alone.tobytes()


@pytest.mark.parametrize("dtype", [np.float16, gp.bfloat16.as_numpy_dtype])
def test_half_types_round_the_float32_softmax_once(dtype):
    logits = np.float32([[0.25, -1, 3], [2, 2, 2]])
    got = np.asarray(gp.raw_ops.Softmax(logits=logits.astype(dtype)))
    want = numpy_softmax(logits.astype(dtype).astype(np.float32)).astype(dtype)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got.astype(np.float32), want.astype(np.float32))
