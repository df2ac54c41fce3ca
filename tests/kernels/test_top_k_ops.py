"""TopKV2 and InTopKV2: values against a plain NumPy reference (eagerly and in a Session),
shapes while building, TF's errors, TopKV2's gradient (a scatter back to the chosen
positions) and InTopKV2's absence of one."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import graphops as gp
from op_runners import P, build, invalid

R = gp.raw_ops


def _top_k_reference(x, k):
    """Per row: indices sorted by value descending, equal values by index ascending."""
    rows = x.reshape(-1, x.shape[-1])
    order = np.array([sorted(range(len(r)), key=lambda i: (-float(r[i]), i))[:k] for r in rows],
                     dtype=np.int64).reshape(*x.shape[:-1], k)
    return np.take_along_axis(x, order, -1), order


@settings(max_examples=25, deadline=None, derandomize=True)
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=3), data=st.data(),
       dtype=st.sampled_from([np.float32, np.float64, np.int32, np.uint8, np.float16]))
def test_top_k_matches_reference(shape, data, dtype):
    k = data.draw(st.integers(0, shape[-1]))
    x = np.random.default_rng(sum(shape)).integers(0, 4, shape).astype(dtype)   # many ties
    values, indices = R.TopKV2(input=x, k=k)
    want_values, want_indices = _top_k_reference(x, k)
    np.testing.assert_array_equal(indices, want_indices)
    np.testing.assert_array_equal(values, want_values)
    assert values.dtype == dtype and indices.dtype == np.int32


def test_top_k_in_a_graph_with_index_type_and_nan(run):
    x = np.float32([[1, np.nan, 2], [5, 5, 4]])
    values, indices = run("TopKV2", input=x, k=np.int64(2), index_type=gp.int64)
    np.testing.assert_array_equal(indices, [[1, 2], [0, 1]])
    assert indices.dtype == np.int64
    np.testing.assert_array_equal(values, [[np.nan, 2], [5, 5]])


@pytest.mark.parametrize("shape, k, message", [
    ((2, 3), 5, "input must have at least k columns. Had 3, needed 5"),
    ((2, 3), -1, "Need k >= 0, got -1"),
    ((), 1, "input must be >= 1-D, got shape []"),
    ((2, 3), [1], "k must be scalar, got shape [1]")])
def test_top_k_kernel_errors(run, shape, k, message):
    with invalid(message):
        run("TopKV2", input=np.zeros(shape, np.float32), k=np.int32(k))


def test_top_k_shapes_and_build_errors():
    assert build("TopKV2", input=P([None, 4]), k=np.int32(3)).values.shape.as_list() == [None, 3]
    assert build("TopKV2", input=P([2, None]), k=P([], np.int32)).indices.shape.as_list() == \
        [2, None]
    with invalid("input must have last dimension >= k = 5 but is 3"):
        build("TopKV2", input=P([2, 3]), k=np.int32(5))
    with invalid("Shape must be at least rank 1 but is rank 0"):
        build("TopKV2", input=P([]), k=np.int32(1))
    with invalid("Dimension size, given by scalar input 1, must be non-negative but is -1"):
        build("TopKV2", input=P([2, 3]), k=np.int32(-1))


@pytest.mark.parametrize("static", [True, False])
def test_top_k_gradient_scatters_to_the_chosen_entries(static):
    x = np.random.default_rng(1).permutation(24).reshape(2, 3, 4).astype(np.float64)
    with gp.Graph().as_default():
        holder = gp.placeholder(gp.float64, x.shape if static else None)
        values = R.TopKV2(input=holder, k=2).values
        weights = np.arange(1.0, 13.0).reshape(2, 3, 2)
        grad = gp.gradients(values * weights, holder)[0]
        with gp.Session() as sess:
            got = sess.run(grad, {holder: x})
            if static:
                error = gp.test.compute_gradient_error(holder, x.shape, values, [2, 3, 2],
                                                       x_init_value=x)
                assert error < 1e-6
    want = np.zeros_like(x)
    _, indices = _top_k_reference(x, 2)
    np.put_along_axis(want, indices, weights, -1)
    np.testing.assert_array_equal(got, want)


def test_in_top_k_matches_reference(run):
    predictions = np.float32([[0.1, 0.5, 0.5, 0.2], [1, np.nan, 0, 2], [3, 2, 1, 0],
                              [np.inf, 1, 2, 3]])
    targets = np.int32([2, 1, 7, 0])
    for k, want in [(1, [True, False, False, False]), (2, [True, False, False, False]),
                    (4, [True, False, False, False]), (0, [False] * 4)]:
        np.testing.assert_array_equal(
            run("InTopKV2", predictions=predictions, targets=targets, k=np.int32(k)), want)
    np.testing.assert_array_equal(
        run("InTopKV2", predictions=predictions[:3], targets=np.int64([3, 3, 0]),
            k=np.int64(2)), [False, True, True])   # two values above 0.2


@pytest.mark.parametrize("predictions, targets, k, message", [
    ((2, 3), (1,), 1, "First dimension of predictions 2 must match length of targets 1"),
    ((3,), (1,), 1, "predictions must be 2-dimensional"),
    ((2, 3), (2, 1), 1, "targets must be 1-dimensional"),
    ((2, 3), (2,), [1], "k must be 0-D, got shape [1]")])
def test_in_top_k_kernel_errors(run, predictions, targets, k, message):
    with invalid(message):
        run("InTopKV2", predictions=np.zeros(predictions, np.float32),
            targets=np.zeros(targets, np.int32), k=np.int32(k))


def test_in_top_k_shapes_and_no_gradient():
    assert build("InTopKV2", predictions=P([None, 5]), targets=P([3], np.int32),
                 k=np.int32(1)).shape.as_list() == [3]
    with invalid("Dimensions must be equal, but are 2 and 1"):
        build("InTopKV2", predictions=P([2, 3]), targets=P([1], np.int32), k=np.int32(1))
    with gp.Graph().as_default():
        x = gp.placeholder(gp.float32, [2, 3])
        hit = R.InTopKV2(predictions=x, targets=np.int32([0, 1]), k=np.int32(1))
        assert gp.gradients(gp.cast(hit, gp.float32), x)[0] is None
