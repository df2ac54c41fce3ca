"""SparseSoftmaxCrossEntropyWithLogits' compiled pass over the rows
(compiled/cross_entropy.py): the loss and backprop of a slow float64 reference on any shape,
the same bits run after run and eagerly, near NumPy's passes, views that are not contiguous,
and TF's label error on a later run, naming the node."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import graphops as gp
from graphops.kernels.ops import loss as loss_kernels


def _reference(logits, labels):
    """Row by row in float64: -log_softmax at the label, softmax less one there."""
    losses, backprops = [], []
    for row, label in zip(np.asarray(logits, np.float64), labels):
        top = max(row)
        log_total = np.log(sum(np.exp(v - top) for v in row))
        log_probs = np.array([v - top - log_total for v in row])
        losses.append(-log_probs[label])
        backprop = np.exp(log_probs)
        backprop[label] -= 1
        backprops.append(backprop)
    return np.array(losses), np.array(backprops).reshape(np.shape(logits))


def _runner(dtype, label_dtype, classes):
    graph = gp.Graph()
    with graph.as_default():
        logits = gp.placeholder(dtype, [None, classes])
        labels = gp.placeholder(label_dtype, [None])
        outputs = gp.raw_ops.SparseSoftmaxCrossEntropyWithLogits(
            features=logits, labels=labels, name="xent")
    sess = gp.Session(graph=graph)
    return sess, lambda x, y: sess.run(list(outputs), {logits: x, labels: y})


@settings(max_examples=40, deadline=None)
@given(batch=st.integers(1, 40), classes=st.integers(1, 60), scale=st.sampled_from([1, 30]),
       dtype=st.sampled_from([np.float32, np.float64]),
       label_dtype=st.sampled_from([np.int32, np.int64]), seed=st.integers(0, 2**16))
def test_matches_a_float64_reference_run_after_run(batch, classes, scale, dtype, label_dtype,
                                                   seed):
    rng = np.random.default_rng(seed)
    logits = (rng.standard_normal((batch, classes)) * scale).astype(dtype)
    labels = rng.integers(0, classes, batch).astype(label_dtype)
    sess, run = _runner(dtype, label_dtype, classes)
    with sess:
        first, again = run(logits, labels), run(logits, labels)
    want_loss, want_backprop = _reference(logits, labels)
    tolerance = 2e-6 if dtype == np.float32 else 1e-13
    for got, repeated, want in zip(first, again, (want_loss, want_backprop)):
        assert got.dtype == dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance)
        np.testing.assert_array_equal(repeated, got)


def test_eager_and_session_runs_give_the_same_bits_near_numpys_passes():
    """An eager op (compute) and a Session's runs (the prepared call) give the same bits,
    for a transposed view too, within a few ulps of NumPy's passes (what a child forked
    after numba loaded runs); non-finite logits give NaN rows as NumPy's passes do."""
    rng = np.random.default_rng(3)
    logits = rng.standard_normal((17, 9)).astype(np.float32)
    logits[4, 2], logits[9, :] = np.nan, -np.inf
    labels = rng.integers(0, 9, 17).astype(np.int64)
    view = np.ascontiguousarray(logits.T).T
    sess, run = _runner(np.float32, np.int64, 9)
    with sess, np.errstate(invalid="ignore"):
        prepared, again = run(logits, labels), run(view, labels)
    with np.errstate(invalid="ignore"):
        eager = gp.raw_ops.SparseSoftmaxCrossEntropyWithLogits(features=logits, labels=labels)
        numpy_passes = loss_kernels._numpy_pass(logits, labels)
    for got, repeated, computed, want in zip(prepared, again, eager, numpy_passes):
        assert got.tobytes() == repeated.tobytes() == np.asarray(computed).tobytes()
        assert np.array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    assert np.isnan(prepared[0][[4, 9]]).all() and np.isnan(prepared[1][[4, 9]]).all()


def test_a_long_row_of_float32_logits_keeps_its_accuracy():
    """30,000 classes (a vocabulary): the float64 sum of the exps keeps the loss within
    float32 rounding of the float64 reference."""
    rng = np.random.default_rng(11)
    logits = (rng.standard_normal((2, 30000)) * 4).astype(np.float32)
    labels = np.int32([7, 29999])
    sess, run = _runner(np.float32, np.int32, 30000)
    with sess:
        loss, backprop = run(logits, labels)
    want_loss, want_backprop = _reference(logits, labels)
    np.testing.assert_allclose(loss, want_loss, rtol=2e-7)
    np.testing.assert_allclose(backprop, want_backprop, rtol=1e-6, atol=1e-12)


@pytest.mark.parametrize("bad", [5, -1])
def test_a_label_out_of_range_on_a_later_run_is_tfs_error(bad):
    sess, run = _runner(np.float32, np.int32, 5)
    logits = np.zeros((3, 5), np.float32)
    with sess:
        run(logits, np.int32([0, 1, 2]))
        with pytest.raises(gp.errors.InvalidArgumentError) as err:
            run(logits, np.int32([0, bad, 2]))
    assert (f"Received a label value of {bad} which is outside the valid range of [0, 5).  "
            f"Label values: 0 {bad} 2") in str(err.value)
    assert err.value.op.name == "xent"
