"""DynamicStitch, ParallelDynamicStitch and DynamicPartition: values against loop references,
TF's checks and messages, shape functions, gradients (the ops TF's gradients build), the GPU
kernels, and TensorFlow as an oracle when installed."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import graphops as gp
from graphops.autodiff.gradients import get_gradient_function
from tests.gpu_compare import compare
from tests.op_runners import invalid

R = gp.raw_ops
SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


def stitch_reference(indices, data):
    """Row by row, in order: later writes win; rows nobody writes stay zero."""
    extra = data[0].shape[indices[0].ndim:]
    size = 1 + max([int(i.max()) for i in indices if i.size] + [-1])
    out = np.zeros((size,) + extra, data[0].dtype)
    for ind, values in zip(indices, data):
        rows = values.reshape((ind.size,) + extra)
        for i, target in enumerate(ind.reshape(-1)):
            out[target] = rows[i]
    return out


def partition_reference(data, partitions, num_partitions):
    rest = data.shape[partitions.ndim:]
    flat = partitions.reshape(-1)
    rows = data.reshape((flat.size,) + rest)
    return [np.array([rows[i] for i in range(flat.size) if flat[i] == k],
                     data.dtype).reshape((int(np.sum(flat == k)),) + rest)
            for k in range(num_partitions)]


@st.composite
def stitch_cases(draw):
    extra = tuple(draw(st.lists(st.integers(0, 3), max_size=2)))
    n = draw(st.integers(1, 3))
    indices, data = [], []
    for _ in range(n):
        shape = tuple(draw(st.lists(st.integers(0, 3), max_size=2)))
        ind = np.array(draw(st.lists(st.integers(0, 6), min_size=int(np.prod(shape)),
                                     max_size=int(np.prod(shape)))), np.int32).reshape(shape)
        indices.append(ind)
        data.append(np.arange(ind.size * int(np.prod(extra)), dtype=np.float32)
                    .reshape(shape + extra) + 100 * len(data))
    return indices, data


@SETTINGS
@given(stitch_cases())
def test_dynamic_stitch_matches_reference(case):
    indices, data = case
    want = stitch_reference(indices, data)
    for op in ("DynamicStitch", "ParallelDynamicStitch"):
        got = getattr(R, op)(indices=indices, data=data)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


@SETTINGS
@given(st.lists(st.integers(0, 3), min_size=0, max_size=3), st.integers(1, 4), st.data())
def test_dynamic_partition_matches_reference(prefix, num_partitions, data):
    rest = tuple(data.draw(st.lists(st.integers(0, 2), max_size=2)))
    partitions = np.array(data.draw(st.lists(
        st.integers(0, num_partitions - 1), min_size=int(np.prod(prefix)),
        max_size=int(np.prod(prefix)))), np.int32).reshape(prefix)
    x = np.arange(int(np.prod(prefix)) * int(np.prod(rest)), dtype=np.int64).reshape(
        tuple(prefix) + rest)
    got = R.DynamicPartition(data=x, partitions=partitions, num_partitions=num_partitions)
    for g, w in zip(got, partition_reference(x, partitions, num_partitions)):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)


def test_strings_and_bools(run):
    got = run("DynamicStitch", indices=[np.array([2, 0], np.int32)],
              data=[np.array([b"a", b"b"], object)])
    assert got.tolist() == [b"b", b"", b"a"]
    parts = run("DynamicPartition", data=np.array([True, False, True]),
                partitions=np.array([1, 0, 1], np.int32), num_partitions=2)
    assert [p.tolist() for p in parts] == [[False], [True, True]]


def test_dynamic_stitch_errors(run):
    for op in ("DynamicStitch", "ParallelDynamicStitch"):
        with invalid("indices[1] is out of range"):
            run(op, indices=[np.array([0, 1], np.int32), np.array([5, -2], np.int32)],
                data=[np.ones(2, np.float32), np.ones(2, np.float32)])
        with invalid("data[0].shape = [3] does not start with indices[0].shape = [2]"):
            run(op, indices=[np.array([0, 1], np.int32)], data=[np.ones(3, np.float32)])
        with invalid("Need data[0].shape[1:] = data[1].shape[1:], got data[0].shape = [2,3], "
                     "data[1].shape = [1,4], indices[0].shape = [2], indices[1].shape = [1]"):
            run(op, indices=[np.array([0, 1], np.int32), np.array([1], np.int32)],
                data=[np.ones((2, 3), np.float32), np.ones((1, 4), np.float32)])
    with pytest.raises(gp.errors.ResourceExhaustedError, match="OOM when allocating"):
        run("DynamicStitch", indices=[np.array([2**31 - 2], np.int32)],
            data=[np.ones((1, 1000), np.float32)])


def test_dynamic_partition_errors(run):
    with invalid("partitions[3] = 3 is not in [0, 3)"):
        run("DynamicPartition", data=np.arange(5.0), partitions=np.array([0, 1, 0, 3, 1],
                                                                         np.int32),
            num_partitions=3)
    with invalid("partitions[1,1] = -1 is not in [0, 3)"):
        run("DynamicPartition", data=np.ones((2, 3)),
            partitions=np.array([[0, 1, 0], [1, -1, 1]], np.int32), num_partitions=3)
    with invalid("partitions = 7 is not in [0, 3)"):
        run("DynamicPartition", data=np.ones(()), partitions=np.array(7, np.int32),
            num_partitions=3)
    with invalid("data.shape must start with partitions.shape, got data.shape = [5], "
                 "partitions.shape = [3]"):
        run("DynamicPartition", data=np.arange(5.0), partitions=np.array([0, 1, 0], np.int32),
            num_partitions=3)


def test_shape_functions():
    with gp.Graph().as_default():
        zeros = lambda *s: gp.constant(np.zeros(s, np.float32))  # noqa: E731
        unknown = gp.placeholder(gp.float32)
        x = gp.placeholder(gp.float32, [None, 3])
        i = gp.placeholder(gp.int32, [None])
        ci = lambda *v: gp.constant(np.array(v, np.int32))  # noqa: E731
        assert R.DynamicStitch(indices=[ci(0, 4), ci(2)], data=[zeros(2, 3), zeros(1, 3)]) \
            .shape.as_list() == [5, 3]
        assert R.DynamicStitch(indices=[i, ci(2)], data=[x, zeros(1, 3)]).shape.as_list() \
            == [None, 3]
        assert R.DynamicStitch(indices=[gp.constant(np.array([[0, 4]], np.int32)), ci(2)],
                               data=[unknown, zeros(1, 3)]).shape.as_list() == [5, 3]
        parts = R.DynamicPartition(data=gp.placeholder(gp.float32, [2, 3, 4]),
                                   partitions=gp.placeholder(gp.int32, [2, 3]), num_partitions=2)
        assert [p.shape.as_list() for p in parts] == [[None, 4], [None, 4]]
        assert R.DynamicPartition(data=x, partitions=gp.placeholder(gp.int32),
                                  num_partitions=1)[0].shape.rank is None
        with invalid("Dimensions must be equal, but are 3 and 2"):
            R.DynamicStitch(indices=[ci(0, 4)], data=[zeros(3, 3)])
        with invalid("Dimension 0 in both shapes must be equal, but are 3 and 4. "
                     "Shapes are [3] and [4]."):
            R.DynamicStitch(indices=[ci(0, 4), ci(1)], data=[zeros(2, 3), zeros(1, 4)])
        with invalid("Dimensions must be equal, but are 3 and 2"):
            R.DynamicPartition(data=zeros(3, 3), partitions=ci(1, 2), num_partitions=2)


def test_gradients_build_tensorflows_ops_and_are_correct():
    assert get_gradient_function(type("Op", (), {"type": "ParallelDynamicStitch"})) is \
        get_gradient_function(type("Op", (), {"type": "DynamicStitch"}))
    rng = np.random.default_rng(0)
    with gp.Graph().as_default():
        a, b = gp.constant(rng.standard_normal((2, 3))), gp.constant(rng.standard_normal((3, 3)))
        # As TF's, the gradient gathers every row an input gave, also rows that a later
        # input overwrote; so the indices here are disjoint (and leave row 3 empty).
        y = R.DynamicStitch(indices=[gp.constant(np.array([0, 4], np.int32)),
                                     gp.constant(np.array([2, 1, 5], np.int32))], data=[a, b])
        ga, gb = gp.gradients(y, [a, b])
        assert (ga.op.type, gb.op.type) == ("GatherV2", "GatherV2")
        assert gp.test.compute_gradient_error(a, [2, 3], y, [6, 3]) < 1e-8
        assert gp.test.compute_gradient_error(b, [3, 3], y, [6, 3]) < 1e-8

        x = gp.constant(rng.standard_normal((4, 2)))
        parts = R.DynamicPartition(data=x, partitions=gp.constant(np.array([1, 0, 1, 2],
                                                                           np.int32)),
                                   num_partitions=3)
        loss = R.AddN(inputs=[R.Sum(input=R.Square(x=parts[0]), axis=[0, 1]),
                              R.Sum(input=parts[2], axis=[0, 1])])
        (gx,) = gp.gradients(loss, [x])
        types = {op.type for op in gx.graph.get_operations()}
        assert {"ParallelDynamicStitch", "DynamicPartition", "Prod", "Range"} <= types
        assert gp.test.compute_gradient_error(x, [4, 2], loss, []) < 1e-8


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_])
def test_gpu_kernels_match_the_cpu(gpu, dtype):
    data = [np.arange(6).reshape(3, 2).astype(dtype), np.ones((2, 2), dtype)]
    indices = [np.array([4, 0, 4], np.int32), np.array([1, 4], np.int32)]
    for op in ("DynamicStitch", "ParallelDynamicStitch"):
        compare(op, {"indices": indices, "data": data})
    compare("DynamicPartition", {"data": data[0], "partitions": np.array([2, 0, 2], np.int32)},
            num_partitions=3)


def test_values_match_tensorflow():
    tf = pytest.importorskip("tensorflow")
    rng = np.random.default_rng(1)
    indices = [rng.integers(0, 9, (3, 2)).astype(np.int32), rng.integers(0, 9, 4).astype(np.int32)]
    data = [rng.standard_normal((3, 2, 5)).astype(np.float32),
            rng.standard_normal((4, 5)).astype(np.float32)]
    np.testing.assert_array_equal(R.DynamicStitch(indices=indices, data=data),
                                  tf.raw_ops.DynamicStitch(indices=indices, data=data).numpy())
    partitions = rng.integers(0, 3, (3, 2)).astype(np.int32)
    for g, w in zip(R.DynamicPartition(data=data[0], partitions=partitions, num_partitions=3),
                    tf.raw_ops.DynamicPartition(data=data[0], partitions=partitions,
                                                num_partitions=3)):
        np.testing.assert_array_equal(g, w.numpy())
