"""The array plumbing ops (gathers, scatters, splits, selects, OneHot, Where, reverses,
BroadcastTo, Cumsum, IdentityN, ShapeN): kernels against slow, obvious references written
with explicit loops, eagerly and in a Session; gradients; CPU vs GPU. Their messages and
shape functions are in test_indexing_validation.py, StridedSlice in test_strided_slice.py.
"""

import itertools

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import graphops as gp
from graphops.registry import get_op_def
from graphops.registry.kernel_registry import registered_kernels
from tests.gpu_compare import compare, values

OPS = ["IdentityN", "ShapeN", "Gather", "GatherV2", "GatherNd", "ScatterNd",
       "UnsortedSegmentSum", "Split", "SplitV", "Unpack", "Select", "SelectV2", "Where",
       "OneHot", "Reverse", "ReverseV2", "BroadcastTo", "Cumsum"]
SETTINGS = settings(max_examples=15, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


def i32(*v):
    return np.array(v, np.int32)


def f32(*shape):
    return np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)


def cells(shape):
    return itertools.product(*map(range, shape))


def test_every_op_has_a_shape_fn_and_cpu_and_gpu_kernels():
    for op in OPS:
        assert get_op_def(op).shape_fn is not None, op
        devices = {k.device_type for k in registered_kernels(op)}
        assert devices == {"CPU", "GPU"}, op


# ----------------------------------------------------------------------------- gathers


def ref_gather(params, indices, axis, batch_dims):
    """out[outer, batch.., idx.., inner] one element at a time."""
    out_shape = params.shape[:axis] + indices.shape[batch_dims:] + params.shape[axis + 1:]
    out = np.empty(out_shape, params.dtype)
    n_idx = indices.ndim - batch_dims
    for cell in cells(out_shape):
        outer, rest = cell[:axis], cell[axis:]
        idx_cell, inner = rest[:n_idx], rest[n_idx:]
        index = indices[outer[:batch_dims] + idx_cell]
        out[cell] = params[outer + (index,) + inner]
    return out


@st.composite
def gather_case(draw):
    rank = draw(st.integers(1, 3))
    shape = [draw(st.integers(1, 3)) for _ in range(rank)]
    batch_dims = draw(st.integers(0, rank - 1))
    axis = draw(st.integers(batch_dims, rank - 1))
    idx_shape = shape[:batch_dims] + [draw(st.integers(0, 2))
                                      for _ in range(draw(st.integers(0, 2)))]
    rng = np.random.default_rng(draw(st.integers(0, 999)))
    indices = rng.integers(0, shape[axis], idx_shape)
    negative_axis = draw(st.booleans())
    return (f32(*shape), indices.astype(draw(st.sampled_from([np.int16, np.int32, np.int64]))),
            axis - rank if negative_axis else axis, batch_dims)


@SETTINGS
@given(case=gather_case())
def test_gather_v2_matches_reference(run, case):
    params, indices, axis, batch_dims = case
    got = run("GatherV2", params=params, indices=indices, axis=np.int64(axis),
              batch_dims=batch_dims)
    np.testing.assert_array_equal(got, ref_gather(params, indices, axis % params.ndim,
                                                  batch_dims))


def test_gather_v2_negative_batch_dims_and_types(run):
    params = np.arange(24).reshape(2, 3, 4).astype(np.int8)
    indices = np.array([[3, 0], [1, 1]], np.int32)
    got = run("GatherV2", params=params, indices=indices, axis=np.int32(2), batch_dims=-1)
    np.testing.assert_array_equal(got, ref_gather(params, indices, 2, 1))
    words = np.array([b"a", b"b", b"c"], object)
    assert run("GatherV2", params=words, indices=i32(2, 0), axis=np.int32(0)).tolist() == \
        [b"c", b"a"]


def test_gather_is_gather_v2_on_axis_0(run):
    params = f32(4, 2)
    indices = np.array([[3, 0], [1, 1]], np.int64)
    np.testing.assert_array_equal(run("Gather", params=params, indices=indices),
                                  ref_gather(params, indices, 0, 0))


def ref_gather_nd(params, indices):
    depth = indices.shape[-1]
    out = np.empty(indices.shape[:-1] + params.shape[depth:], params.dtype)
    for cell in cells(indices.shape[:-1]):
        out[cell] = params[tuple(int(v) for v in indices[cell])]
    return out


@SETTINGS
@given(data=st.data())
def test_gather_nd_matches_reference(run, data):
    shape = data.draw(st.lists(st.integers(1, 3), min_size=1, max_size=3))
    depth = data.draw(st.integers(0, len(shape)))
    outer = data.draw(st.lists(st.integers(0, 2), max_size=2))
    rng = np.random.default_rng(data.draw(st.integers(0, 999)))
    indices = np.stack([rng.integers(0, d, outer) for d in shape[:depth]], -1) if depth \
        else np.zeros(outer + [0], np.int64)
    params = f32(*shape)
    np.testing.assert_array_equal(run("GatherNd", params=params, indices=indices),
                                  ref_gather_nd(params, indices))


def test_gather_nd_ignore_policy_gives_zeros_for_bad_indices(run):
    got = run("GatherNd", params=f32(3, 2), indices=np.array([[1], [5], [-1]]),
              bad_indices_policy="IGNORE")
    np.testing.assert_array_equal(got, [[2, 3], [0, 0], [0, 0]])


# ----------------------------------------------------------------------------- scatters

def ref_scatter_nd(indices, updates, shape):
    out = np.zeros(shape, np.float64)
    for cell in cells(indices.shape[:-1]):
        out[tuple(int(v) for v in indices[cell])] += updates[cell]
    return out


@SETTINGS
@given(data=st.data())
def test_scatter_nd_sums_duplicates_like_the_reference(run, data):
    shape = data.draw(st.lists(st.integers(1, 3), min_size=1, max_size=3))
    depth = data.draw(st.integers(1, len(shape)))
    outer = data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=2))
    rng = np.random.default_rng(data.draw(st.integers(0, 999)))
    indices = np.stack([rng.integers(0, d, outer) for d in shape[:depth]], -1).astype(np.int32)
    dtype = data.draw(st.sampled_from([np.float32, np.float64, np.int32, np.float16]))
    updates = rng.integers(-5, 5, outer + shape[depth:]).astype(dtype)
    got = run("ScatterNd", indices=indices, updates=updates, shape=np.array(shape, np.int32))
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, ref_scatter_nd(indices, updates, shape).astype(dtype))


def test_scatter_nd_concatenates_strings_in_order_and_ors_bools(run):
    words = np.array([b"a", b"b", b"c", b"d"], object)
    got = run("ScatterNd", indices=np.array([[1], [1], [0], [1]]), updates=words,
              shape=np.array([3]))
    assert got.tolist() == [b"c", b"abd", b""]
    got = run("ScatterNd", indices=np.array([[1], [1]]), updates=np.array([True, True]),
              shape=np.array([3]))
    assert got.tolist() == [False, True, False]


def test_unsorted_segment_sum_drops_negative_ids(run):
    data = np.arange(12, dtype=np.float64).reshape(4, 3)
    ids = i32(2, -1, 0, 2)
    want = np.zeros((4, 3))
    for row, segment in enumerate(ids):
        if segment >= 0:
            want[segment] += data[row]
    np.testing.assert_array_equal(
        run("UnsortedSegmentSum", data=data, segment_ids=ids, num_segments=np.int64(4)), want)
    got = run("UnsortedSegmentSum", data=np.ones((2, 2), ml_dtypes.bfloat16),
              segment_ids=np.array([[0, 0], [1, 0]], np.int16), num_segments=np.int32(2))
    assert got.dtype == ml_dtypes.bfloat16 and got.tolist() == [3, 1]


# ----------------------------------------------------------------------------- splitting

def test_split_splitv_unpack(run):
    x = f32(2, 6)
    parts = run("Split", axis=np.int32(-1), value=x, num_split=3)
    assert [p.tolist() for p in parts] == [[[0, 1], [6, 7]], [[2, 3], [8, 9]],
                                           [[4, 5], [10, 11]]]
    parts = run("SplitV", value=x, size_splits=np.array([1, -1, 0], np.int8),
                axis=np.int32(1), num_split=3)
    assert [p.shape for p in parts] == [(2, 1), (2, 5), (2, 0)]
    assert parts[1].tolist() == [[1, 2, 3, 4, 5], [7, 8, 9, 10, 11]]
    rows = run("Unpack", value=x, num=6, axis=-1)
    assert [r.tolist() for r in rows] == [[c, c + 6] for c in range(6)]
    assert run("Unpack", value=np.zeros((0, 2)), num=0) == []


# ----------------------------------------------------------------------------- selecting

def test_select_scalar_vector_and_same_shape_conditions(run):
    t, e = f32(3, 2), -f32(3, 2)
    assert run("Select", condition=np.array(False), x=t, y=e).tolist() == e.tolist()
    rows = np.array([True, False, True])
    want = [t[i].tolist() if rows[i] else e[i].tolist() for i in range(3)]
    assert run("Select", condition=rows, x=t, y=e).tolist() == want
    mask = np.array([[True, False], [False, False], [True, True]])
    want = [[t[i, j] if mask[i, j] else e[i, j] for j in range(2)] for i in range(3)]
    assert run("Select", condition=mask, x=t, y=e).tolist() == want
    vector = np.array([True, False])
    assert run("Select", condition=vector, x=i32(1, 2), y=i32(3, 4)).tolist() == [1, 4]


def test_select_v2_broadcasts_all_three(run):
    cond = np.array([[True], [False]])
    t, e = f32(3), np.float32(-1)
    want = [[t[j] if cond[i, 0] else -1 for j in range(3)] for i in range(2)]
    assert run("SelectV2", condition=cond, t=t, e=e).tolist() == want


@pytest.mark.parametrize("dtype", [np.bool_, np.float32, np.int8, np.complex64,
                                   ml_dtypes.bfloat16])
def test_where_lists_true_coordinates_in_row_major_order(run, dtype):
    x = (np.arange(24).reshape(2, 3, 4) % 5 == 1).astype(dtype)
    want = [list(c) for c in cells(x.shape) if x[c]]
    got = run("Where", condition=x)
    assert got.dtype == np.int64 and got.tolist() == want
    assert run("Where", condition=np.zeros((0, 3), dtype)).shape == (0, 2)


@pytest.mark.parametrize("index_type", [np.uint8, np.int8, np.int32, np.int64])
@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_one_hot(run, index_type, axis):
    indices = np.array([[0, 3], [2, 9]], index_type)
    depth = 4
    got = run("OneHot", indices=indices, depth=np.int32(depth), on_value=np.float64(5),
              off_value=np.float64(-1), axis=axis)
    where = 2 if axis == -1 else axis
    for cell in cells(got.shape):
        position = cell[:where] + cell[where + 1:]
        assert got[cell] == (5 if indices[position] == cell[where] else -1)


# ----------------------------------------------------------------------------- reversing

@pytest.mark.parametrize("dtype", [np.float32, np.uint16, np.bool_, object])
def test_reverse_and_reverse_v2(run, dtype):
    x = (np.arange(24).reshape(2, 3, 4) % 3).astype(dtype)
    want = np.empty_like(x)
    for i, j, k in cells(x.shape):
        want[i, j, k] = x[1 - i, j, 3 - k]
    got = run("Reverse", tensor=x, dims=np.array([True, False, True]))
    assert got.tolist() == want.tolist()
    got = run("ReverseV2", tensor=x, axis=np.array([-1, 0], np.int64))
    assert got.tolist() == want.tolist()


# ----------------------------------------------------------------------------- broadcasting

def test_broadcast_to(run):
    x = f32(3, 1)
    got = run("BroadcastTo", input=x, shape=np.array([2, 3, 4], np.int64))
    for i, j, k in cells((2, 3, 4)):
        assert got[i, j, k] == x[j, 0]
    assert run("BroadcastTo", input=f32(3), shape=i32(0, 3)).shape == (0, 3)


def ref_cumsum(x, axis, exclusive, reverse):
    out = np.zeros(x.shape, np.complex128)
    n = x.shape[axis]
    for cell in cells(x.shape):
        i = cell[axis]
        span = range(i + 1, n) if reverse else range(i)
        if not exclusive:
            span = list(span) + [i]
        for j in span:
            out[cell] += x[cell[:axis] + (j,) + cell[axis + 1:]]
    return out


@pytest.mark.parametrize("exclusive, reverse", list(itertools.product([False, True], repeat=2)))
@pytest.mark.parametrize("dtype", [np.float16, np.float64, np.int32, np.complex64])
def test_cumsum(run, exclusive, reverse, dtype):
    x = (np.arange(12).reshape(3, 4) - 5).astype(dtype)
    got = run("Cumsum", x=x, axis=np.int64(-1), exclusive=exclusive, reverse=reverse)
    assert got.dtype == dtype
    want = ref_cumsum(x, 1, exclusive, reverse)
    np.testing.assert_array_equal(got, want if x.dtype.kind == "c" else want.real.astype(dtype))


def test_cumsum_integers_wrap():
    got = gp.raw_ops.Cumsum(x=np.array([100, 100], np.int8), axis=np.int32(0))
    assert got.tolist() == [100, -56]


def test_identity_n_and_shape_n(run):
    a, b = f32(2, 3), np.array([b"x"], object)
    out = run("IdentityN", input=[a, b])
    assert out[0].tolist() == a.tolist() and out[1].tolist() == [b"x"]
    shapes = run("ShapeN", input=[f32(2, 3), f32(0, 1)], out_type=gp.int64)
    assert [s.tolist() for s in shapes] == [[2, 3], [0, 1]] and shapes[0].dtype == np.int64


# ----------------------------------------------------------------------------- gradients

def grad_graph(shape, make):
    """(max gradient error of y = make(x) at a float64 x, the op types of the graph)."""
    g = gp.Graph()
    with g.as_default():
        x = gp.placeholder(gp.float64, shape)
        y = make(x)
        err = gp.test.compute_gradient_error(x, shape, y, y.shape.as_list())
    return err, {op.type for op in g.get_operations()}


R = gp.raw_ops
GRADIENTS = [   # (name, input shape, y(x), op types TF's gradient builds)
    ("GatherV2-axis0", [5, 3], lambda x: R.GatherV2(params=x, indices=i32(1, 1, 4),
                                                    axis=np.int32(0)),
     {"UnsortedSegmentSum", "Reshape", "StridedSlice", "ConcatV2", "Size"}),
    ("GatherV2-axis1", [3, 5], lambda x: R.GatherV2(
        params=x, indices=np.array([[1, 1], [4, 0]], np.int32), axis=np.int32(1)),
     {"UnsortedSegmentSum", "Transpose", "Range", "GatherV2"}),
    ("GatherV2-batch", [3, 5, 2], lambda x: R.GatherV2(
        params=x, indices=np.array([[1, 1], [4, 0], [2, 2]], np.int32), axis=np.int32(-2),
        batch_dims=1), {"UnsortedSegmentSum", "Transpose", "Prod", "Tile"}),
    ("Gather", [5, 3], lambda x: R.Gather(params=x, indices=i32(1, 1, 4)),
     {"UnsortedSegmentSum"}),
    ("GatherNd", [3, 4], lambda x: R.GatherNd(params=x, indices=np.array([[1, 2], [1, 2]])),
     {"ScatterNd"}),
    ("GatherNd-rows", [3, 4], lambda x: R.GatherNd(params=x, indices=np.array([[1], [1]])),
     {"UnsortedSegmentSum", "Squeeze"}),
    ("ScatterNd", [3, 2], lambda x: R.ScatterNd(
        indices=np.array([[1], [1], [3]], np.int32), updates=x, shape=i32(4, 2)), {"GatherNd"}),
    ("UnsortedSegmentSum", [4, 2], lambda x: R.UnsortedSegmentSum(
        data=x, segment_ids=i32(0, -1, 2, 0), num_segments=np.int32(3)),
     {"GatherV2", "Maximum", "GreaterEqual", "SelectV2"}),
    ("Split", [3, 4], lambda x: R.Split(axis=np.int32(1), value=x, num_split=2)[1],
     {"ConcatV2"}),
    ("SplitV", [3, 4], lambda x: R.SplitV(value=x, size_splits=i32(1, -1), axis=np.int32(1),
                                          num_split=2)[1], {"ConcatV2"}),
    ("Unpack", [3, 4], lambda x: R.Unpack(value=x, num=4, axis=1)[2], {"Pack"}),
    ("IdentityN", [3], lambda x: R.IdentityN(input=[x, x])[1], {"IdentityN"}),
    ("Select", [3, 2], lambda x: R.Select(condition=np.array([True, False, True]), x=x,
                                          y=R.Neg(x=x)), {"Select", "ZerosLike"}),
    ("SelectV2", [3, 1], lambda x: R.SelectV2(condition=np.array([True, False]), t=x,
                                              e=np.float64(2)), {"SelectV2", "Sum"}),
    ("Reverse", [3, 4], lambda x: R.Reverse(tensor=x, dims=np.array([True, False])),
     {"Reverse"}),
    ("ReverseV2", [3, 4], lambda x: R.ReverseV2(tensor=x, axis=i32(-1)), {"ReverseV2"}),
    ("BroadcastTo", [3, 1], lambda x: R.BroadcastTo(input=x, shape=i32(2, 3, 4)),
     {"BroadcastGradientArgs", "Sum", "Reshape"}),
    ("Cumsum", [3, 4], lambda x: R.Cumsum(x=x, axis=np.int32(1), exclusive=True),
     {"Cumsum"}),
]


@pytest.mark.parametrize("name, shape, make, ops", GRADIENTS, ids=[c[0] for c in GRADIENTS])
def test_gradients(name, shape, make, ops):
    err, types = grad_graph(shape, make)
    assert err < 1e-10
    assert ops <= types


def test_gradients_with_unknown_shapes():
    g = gp.Graph()
    with g.as_default():
        x = gp.placeholder(gp.float64, None)
        y = R.GatherV2(params=x, indices=i32(2, 0), axis=np.int32(1), batch_dims=0)
        dx, = gp.gradients(R.Sum(input=y, axis=i32(0, 1)), [x])
        with gp.Session() as sess:
            got = sess.run(dx, {x: np.ones((2, 3))})
    assert got.tolist() == [[1, 0, 1], [1, 0, 1]]


def test_cumsum_gradient_runs_the_other_way():
    g = gp.Graph()
    with g.as_default():
        x = gp.placeholder(gp.float64, [3])
        y = R.Cumsum(x=x, axis=np.int32(0), reverse=True)
        dx, = gp.gradients(y, [x])
    cumsums = [op for op in g.get_operations() if op.type == "Cumsum"]
    assert [op.get_attr("reverse") for op in cumsums] == [True, False]
    with gp.Session(graph=g) as sess:
        assert sess.run(dx, {x: np.ones(3)}).tolist() == [1, 2, 3]


# ----------------------------------------------------------------------------- GPU

def gpu_cases(rng, t):
    """(op, inputs, attrs) of every op on random values of type `t`."""
    v = lambda *shape: values(rng, t, shape)  # noqa: E731
    return [
        ("IdentityN", {"input": [v(2, 3), v(3)]}, {}),
        ("ShapeN", {"input": [v(2, 3), v(1)]}, {}),
        ("Gather", {"params": v(4, 3), "indices": i32(3, 0, 3)}, {}),
        ("GatherV2", {"params": v(2, 4, 3), "indices": np.array([[3, 0], [1, 1]]),
                      "axis": np.int32(1)}, {"batch_dims": 1}),
        ("GatherNd", {"params": v(4, 3), "indices": np.array([[3, 0], [1, 2]])}, {}),
        ("Split", {"axis": np.int32(1), "value": v(2, 4)}, {"num_split": 2}),
        ("SplitV", {"value": v(2, 4), "size_splits": i32(3, -1), "axis": np.int32(1)},
         {"num_split": 2}),
        ("Unpack", {"value": v(2, 4)}, {"num": 4, "axis": 1}),
        ("Select", {"condition": np.array([True, False]), "x": v(2, 3), "y": v(2, 3)}, {}),
        ("SelectV2", {"condition": np.array([[True], [False]]), "t": v(3), "e": v(2, 1)}, {}),
        ("Where", {"condition": v(3, 4)}, {}),
        ("Reverse", {"tensor": v(2, 3), "dims": np.array([False, True])}, {}),
        ("ReverseV2", {"tensor": v(2, 3), "axis": i32(0, 1)}, {}),
        ("BroadcastTo", {"input": v(3, 1), "shape": i32(2, 3, 4)}, {}),
        ("OneHot", {"indices": np.array([0, 2, 7]), "depth": np.int32(4),
                    "on_value": v(), "off_value": v()}, {"axis": 0}),
    ]


@pytest.mark.parametrize("dtype", [gp.float32, gp.float16, gp.int32, gp.bool, gp.complex64])
def test_gpu_matches_cpu(gpu, dtype):
    rng = np.random.default_rng(7)
    for op, inputs, attrs in gpu_cases(rng, dtype):
        if op == "Where" and dtype == gp.bool:
            inputs = {"condition": rng.random((3, 4)) < 0.5}
        compare(op, inputs, **attrs)


@pytest.mark.parametrize("dtype", [gp.float32, gp.float16, gp.int64, gp.complex128])
def test_gpu_sums_match_cpu(gpu, dtype):
    rng = np.random.default_rng(3)
    compare("ScatterNd", {"indices": np.array([[1], [1], [3], [1]], np.int32),
                          "updates": values(rng, dtype, (4, 2)), "shape": i32(5, 2)})
    compare("UnsortedSegmentSum", {"data": values(rng, dtype, (5, 2)),
                                   "segment_ids": i32(0, 2, -1, 2, 2),
                                   "num_segments": np.int32(4)})
    compare("Cumsum", {"x": values(rng, dtype, (3, 4)), "axis": np.int32(1)},
            exclusive=True, reverse=True)
