"""Kernels run again and again by one Session: the checks each kernel keeps for the last
input shapes it saw (reductions, broadcasting, MatMul, Reshape, Squeeze, ExpandDims, the
random ops) still refuse what they refused, with TF's messages, once the shapes change; and
the CPU's direct paths (float sums and means, column sums over leading axes, Softmax and
the softmax cross-entropies) give the numbers of slow, obvious references, bit for bit
where the arithmetic is the same (the short rows' compiled pass: within a few ulps)."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import graphops as gp
from graphops.kernels.support.kernel_util import softmax
from graphops.registry import errors
from graphops.runtime.config import memory_budget
from tests.op_runners import Repeats, invalid, raises, readonly

R = gp.raw_ops
SETTINGS = settings(max_examples=30, deadline=None)


def column_reference(x, lead):
    """float64 sums of each column of `x` over its leading `lead` axes, added row by row
    with Python floats, from 0."""
    rows = x.reshape(int(np.prod(x.shape[:lead])), -1)
    totals = [0.0] * rows.shape[1]
    for row in rows.tolist():
        for c, value in enumerate(row):
            totals[c] += value
    return np.array(totals).reshape(x.shape[lead:])


# ----------------------------------------------------------------------------- reductions

@pytest.mark.parametrize("shape, lead", [((12, 8, 8, 8, 4), 4), ((256, 6), 1), ((4, 300), 1),
                                         ((5, 7, 9, 3), 2), ((1024, 2), 1)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sums_over_leading_axes_add_each_column_row_by_row(shape, lead, dtype):
    rng = np.random.default_rng(lead + len(shape))
    x = (rng.standard_normal(shape) * 10.0 ** rng.uniform(-6, 6, shape)).astype(dtype)
    want = column_reference(x, lead)
    axes = np.arange(lead, dtype=np.int32)
    total = Repeats(lambda v, a: R.Sum(input=v, axis=a), gp.as_dtype(dtype), gp.int32)
    mean = Repeats(lambda v, a: R.Mean(input=v, axis=a, keep_dims=True), gp.as_dtype(dtype),
                   gp.int32)
    count = x.size // want.size
    for _ in range(2):
        np.testing.assert_array_equal(total(x, axes), want.astype(dtype))
        np.testing.assert_array_equal(mean(x, axes).reshape(want.shape),
                                      (want / count).astype(dtype))
    grad = Repeats(lambda v: R.BiasAddGrad(out_backprop=v), gp.as_dtype(dtype))
    flat = x.reshape(-1, shape[-1])
    np.testing.assert_array_equal(grad(x), column_reference(flat, 1).astype(dtype))


@SETTINGS
@given(data=st.data(), dtype=st.sampled_from([np.float32, np.float64]), keep_dims=st.booleans())
def test_sums_over_the_spatial_dims_of_one_image_add_each_column_row_by_row(data, dtype,
                                                                            keep_dims):
    """Leading once size-1 dims are left out (a global average pool at batch 1): column
    sums row by row, up to the compiled column sums' sizes and past them."""
    lead = data.draw(st.lists(st.integers(1, 24), min_size=1, max_size=2))
    kept = data.draw(st.lists(st.integers(2, 40), min_size=1, max_size=2))
    dims = [(d, True) for d in lead] + [(d, False) for d in kept]
    for _ in range(data.draw(st.integers(1, 3))):     # size-1 dims anywhere, reduced or not
        dims.insert(data.draw(st.integers(0, len(dims))), (1, data.draw(st.booleans())))
    shape = tuple(d for d, _ in dims)
    axes = np.array([i for i, (_, reduced) in enumerate(dims) if reduced], np.int32)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    x = (rng.standard_normal(shape) * 10.0 ** rng.uniform(-6, 6, shape)).astype(dtype)
    want = column_reference(x.reshape(*lead, *kept), len(lead))
    want_shape = tuple(1 if reduced else d for d, reduced in dims) if keep_dims else tuple(
        d for d, reduced in dims if not reduced)
    total = Repeats(lambda v, a: R.Sum(input=v, axis=a, keep_dims=keep_dims),
                    gp.as_dtype(dtype), gp.int32)
    mean = Repeats(lambda v, a: R.Mean(input=v, axis=a, keep_dims=keep_dims),
                   gp.as_dtype(dtype), gp.int32)
    for _ in range(2):
        got_total, got_mean = total(x, axes), mean(x, axes)
        assert got_total.shape == got_mean.shape == want_shape
        np.testing.assert_array_equal(got_total.reshape(want.shape), want.astype(dtype))
        np.testing.assert_array_equal(got_mean.reshape(want.shape),
                                      (want / (x.size // want.size)).astype(dtype))


def test_a_large_sum_over_the_spatial_dims_of_one_image():
    """From COMPILED_MIN_SIZE values on the sum runs as parallel column sums: float64
    totals whatever their order, so the float32 results are the rounded exact sums."""
    x = np.random.default_rng(7).standard_normal((1, 64, 64, 16)).astype(np.float32)
    axes = np.array([1, 2], np.int32)
    want = np.add.reduce(x.astype(np.float64), axis=(1, 2), keepdims=True)
    mean = Repeats(lambda v, a: R.Mean(input=v, axis=a, keep_dims=True), gp.float32, gp.int32)
    np.testing.assert_allclose(mean(x, axes), (want / 4096).astype(np.float32), rtol=1e-6)


@SETTINGS
@given(data=st.data(), dtype=st.sampled_from([np.float32, np.float64, np.int32]),
       keep_dims=st.booleans())
def test_a_reduction_node_fed_new_shapes_and_axes(data, dtype, keep_dims):
    total = Repeats(lambda v, a: R.Sum(input=v, axis=a, keep_dims=keep_dims),
                    gp.as_dtype(dtype), gp.int32)
    mean = Repeats(lambda v, a: R.Mean(input=v, axis=a, keep_dims=keep_dims),
                   gp.as_dtype(dtype), gp.int32)
    for _ in range(3):
        shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=5))
        x = data.draw(hnp.arrays(dtype, shape, elements=st.integers(-1000, 1000)))
        axes = tuple(data.draw(st.lists(st.integers(0, len(shape) - 1), unique=True)))
        wide = np.int64 if dtype == np.int32 else np.float64
        want = np.add.reduce(x.astype(wide), axis=axes, keepdims=keep_dims)
        for _ in range(2):
            got = total(x, np.array(axes, np.int32))
            np.testing.assert_array_equal(got, want.astype(dtype))
            assert got.dtype == dtype
        count = int(np.prod([shape[a] for a in axes]))
        got = mean(x, np.array(axes, np.int32))
        if dtype == np.int32:
            np.testing.assert_array_equal(got, np.trunc(want / count).astype(dtype))
        else:
            np.testing.assert_array_equal(got, (want / count).astype(dtype))


@pytest.mark.parametrize("keep_dims", [False, True])
def test_a_reduction_node_fed_a_strided_input_of_the_shape_it_kept(keep_dims):
    """A reduction keeps what it worked out for an input shape (its contiguous form, its
    size-1 dims left out): inputs of that shape laid out otherwise, contiguous and strided
    in turn, still give the float64 sums and means."""
    total = Repeats(lambda v, a: R.Sum(input=v, axis=a, keep_dims=keep_dims), gp.float32,
                    gp.int32)
    mean = Repeats(lambda v, a: R.Mean(input=v, axis=a, keep_dims=keep_dims), gp.float32,
                   gp.int32)
    rng = np.random.default_rng(3)
    axes = np.int32([0, 1])
    contiguous = rng.standard_normal((6, 1, 5)).astype(np.float32)
    strided = rng.standard_normal((5, 1, 6)).astype(np.float32).transpose(2, 1, 0)
    assert not strided.flags.c_contiguous
    for x in (contiguous, strided, contiguous, strided):
        want = np.add.reduce(x.astype(np.float64), axis=(0, 1), keepdims=keep_dims)
        got_total, got_mean = total(x, axes), mean(x, axes)
        assert got_total.shape == got_mean.shape == want.shape
        np.testing.assert_allclose(got_total, want.astype(np.float32), rtol=1e-6)
        np.testing.assert_allclose(got_mean, (want / 6).astype(np.float32), rtol=1e-6)


def test_reduction_errors_after_good_runs():
    total = Repeats(lambda v, a: R.Sum(input=v, axis=a), gp.float32, gp.int32)
    x = np.ones([2, 3], np.float32)
    assert total(x, np.int32([1])).tolist() == [3, 3]
    with invalid("Invalid reduction dimension (2 for input with 2 dimension(s)"):
        total(x, np.int32([2]))
    with invalid("Invalid reduction dimension (1 for input with 1 dimension(s)"):
        total(np.ones([3], np.float32), np.int32([1]))
    with invalid("Invalid reduction arguments: Axes contains duplicate dimension: 1"):
        total(x, np.int32([1, -1]))
    assert total(x, np.int32([1])).tolist() == [3, 3]
    assert total(x, np.int32([[0]])).tolist() == [2, 2, 2]      # the same bytes, another shape


# ----------------------------------------------------------------------------- shapes

def test_reshape_squeeze_expand_dims_errors_after_good_runs():
    reshape = Repeats(lambda v, s: R.Reshape(tensor=v, shape=s), gp.float32, gp.int32)
    x = np.arange(6, dtype=np.float32)
    assert reshape(x, np.int32([2, 3])).shape == (2, 3)
    assert reshape(x, np.int32([3, -1])).shape == (3, 2)
    with invalid("Input to reshape is a tensor with 6 values, but the requested shape has 8"):
        reshape(x, np.int32([2, 4]))
    with invalid("Input to reshape is a tensor with 4 values, but the requested shape has 6"):
        reshape(x[:4], np.int32([2, 3]))
    with invalid("sizes input must be 1-D, not [1,2]"):
        reshape(x, np.int32([[2, 3]]))
    np.testing.assert_array_equal(reshape(x, np.int32([2, 3])), x.reshape(2, 3))

    squeeze = Repeats(lambda v: R.Squeeze(input=v, axis=[1]), gp.float32)
    assert squeeze(np.zeros([2, 1, 3], np.float32)).shape == (2, 3)
    with invalid("Can not squeeze dim[1], expected a dimension of 1, got 2"):
        squeeze(np.zeros([2, 2, 3], np.float32))
    with invalid("Tried to squeeze dim index 1 for tensor with 1 dimensions."):
        squeeze(np.zeros([2], np.float32))
    assert squeeze(np.zeros([4, 1], np.float32)).shape == (4,)

    expand = Repeats(lambda v, d: R.ExpandDims(input=v, axis=d), gp.float32, gp.int32)
    assert expand(np.zeros([2, 3], np.float32), np.int32(-1)).shape == (2, 3, 1)
    assert expand(np.zeros([2, 3], np.float32), np.int32([0])).shape == (1, 2, 3)
    with invalid("Tried to expand dim index 3 for tensor with 1 dimensions."):
        expand(np.zeros([2], np.float32), np.int32(3))
    with invalid("'dim' must be a tensor with a single value"):
        expand(np.zeros([2], np.float32), np.int32([0, 0]))
    assert expand(np.zeros([2], np.float32), np.int32(1)).shape == (2, 1)


# ----------------------------------------------------------------------------- broadcasting

def test_broadcasting_and_matmul_errors_after_good_runs():
    add = Repeats(lambda a, b: R.AddV2(x=a, y=b), gp.float32, gp.float32)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(add(x, np.float32([1, 2, 3])), x + [1, 2, 3])
    with invalid("Incompatible shapes: [2,3] vs. [4]"):
        add(x, np.zeros([4], np.float32))
    equal = Repeats(lambda a, b: R.Equal(x=a, y=b, incompatible_shape_error=False),
                    gp.float32, gp.float32)
    assert equal(x, np.float32([0, 1, 2])).tolist() == [[True] * 3, [False] * 3]
    assert equal(x, np.zeros([4], np.float32)).tolist() is False

    matmul = Repeats(lambda a, b: R.MatMul(a=a, b=b, transpose_b=True), gp.float32, gp.float32)
    np.testing.assert_array_equal(matmul(x, x), x @ x.T)
    with invalid("Matrix size-incompatible: In[0]: [2,3], In[1]: [2,2]"):
        matmul(x, np.zeros([2, 2], np.float32))
    with invalid("In[1] is not a matrix. Instead it has shape [3]"):
        matmul(x, np.zeros([3], np.float32))
    outer_a, outer_b = np.ones([300, 1], np.float32), np.ones([300, 1], np.float32)
    for node, feeds in ((matmul, (outer_a, outer_b)),
                        (add, (outer_a, outer_b.reshape(1, 300)))):
        assert node(*feeds).shape == (300, 300)
        with memory_budget(1000), raises(errors.ResourceExhaustedError,
                                         "OOM when allocating tensor with shape[300, 300] "
                                         "and type float32"):
            node(*feeds)


def test_random_uniform_checks_each_new_shape():
    uniform = Repeats(lambda s: R.RandomUniform(shape=s, dtype=gp.float32, seed=3, seed2=4),
                      gp.int32)
    first = uniform(np.int32([5, 3]))
    assert first.shape == (5, 3) and first.dtype == np.float32
    assert ((0 <= first) & (first < 1)).all()
    assert not np.array_equal(uniform(np.int32([5, 3])), first)      # the stream goes on
    with invalid("Dimension -1 must be >= 0"):
        uniform(np.int32([-1, 3]))
    assert uniform(np.int32([7])).shape == (7,)


# ----------------------------------------------------------------------------- softmax

def _old_cross_entropy(logits, labels):
    """The softmax cross-entropy as kernel_util's softmax computes it, then the labels."""
    log_probs = softmax(np, logits.astype(logits.dtype), log=True)
    return -(labels * log_probs).sum(axis=1), np.exp(log_probs) - labels


@SETTINGS
@given(data=st.data(), dtype=st.sampled_from([np.float32, np.float64]))
def test_softmax_and_cross_entropies_give_the_shared_formula(data, dtype):
    shape = data.draw(hnp.array_shapes(min_dims=2, max_dims=2, min_side=1, max_side=12))
    logits = data.draw(hnp.arrays(dtype, shape, elements=st.floats(-30, 30, width=32)))
    labels = data.draw(hnp.arrays(dtype, shape, elements=st.floats(0, 1, width=32)))
    tolerance = 2e-6 if dtype == np.float32 else 1e-14       # (the rows' compiled pass)
    for op in ("Softmax", "LogSoftmax"):
        got = np.asarray(getattr(R, op)(logits=readonly(logits)))
        np.testing.assert_allclose(got, softmax(np, logits, log=op == "LogSoftmax"),
                                   rtol=tolerance, atol=tolerance)
    loss, backprop = R.SoftmaxCrossEntropyWithLogits(features=readonly(logits),
                                                     labels=readonly(labels))
    want_loss, want_backprop = _old_cross_entropy(logits, labels)
    np.testing.assert_array_equal(np.asarray(loss), want_loss)
    np.testing.assert_array_equal(np.asarray(backprop), want_backprop)
    sparse = data.draw(hnp.arrays(np.int64, shape[:1], elements=st.integers(0, shape[1] - 1)))
    loss, backprop = R.SparseSoftmaxCrossEntropyWithLogits(features=readonly(logits),
                                                           labels=readonly(sparse))
    one_hot = np.eye(shape[1], dtype=dtype)[sparse]
    log_probs = softmax(np, logits, log=True)
    np.testing.assert_allclose(np.asarray(loss), -log_probs[np.arange(shape[0]), sparse],
                               rtol=tolerance, atol=tolerance)
    np.testing.assert_allclose(np.asarray(backprop), np.exp(log_probs) - one_hot,
                               rtol=tolerance, atol=tolerance)


def test_sparse_cross_entropy_of_transposed_logits_and_bad_labels():
    node = Repeats(lambda f, lab: R.SparseSoftmaxCrossEntropyWithLogits(
        features=gp.transpose(f), labels=lab), gp.float32, gp.int32)
    logits = np.arange(12, dtype=np.float32).reshape(4, 3) / 7
    labels = np.int32([2, 0, 1])
    loss, backprop = node(logits, labels)
    log_probs = softmax(np, logits.T.astype(np.float64), log=True)
    np.testing.assert_allclose(loss, -log_probs[np.arange(3), labels], rtol=1e-6)
    np.testing.assert_allclose(backprop, np.exp(log_probs) - np.eye(4)[labels], atol=1e-6)
    for bad, shown in ((np.int32([2, 4, 1]), 4), (np.int32([2, 0, -1]), -1)):
        with invalid(f"Received a label value of {shown} which is outside the valid range of "
                     f"[0, 4).  Label values: {' '.join(map(str, bad.tolist()))}"):
            node(logits, bad)
    np.testing.assert_array_equal(node(logits, labels)[0], loss)
    int64_labels = np.int64([-2**40])
    with invalid(f"Received a label value of {-2**40} which is outside the valid range of "
                 f"[0, 3).  Label values: {-2**40}"):
        R.SparseSoftmaxCrossEntropyWithLogits(features=np.zeros([1, 3], np.float32),
                                              labels=int64_labels)
