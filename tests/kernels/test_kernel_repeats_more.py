"""More kernels run again and again by one Session (StridedSlice and its gradient, Split,
SplitV, BroadcastGradientArgs, SelectV2, BatchMatMulV2, ConcatV2, Pack, Slice, Transpose,
Fill): the checks each keeps for the last input shapes and index values it saw still refuse
what they refused, with TF's messages, once those change; the values are those of slow,
obvious references. Sigmoid's NumPy path gives the five-pass formula's bits."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import graphops as gp
from graphops.kernels.numerics.unary_formulas import sigmoid
from graphops.kernels import compiled
from graphops.registry import errors
from graphops.runtime.config import memory_budget
from tests.op_runners import Repeats, invalid, raises

R = gp.raw_ops
SETTINGS = settings(max_examples=25, deadline=None)


def oom(shape, dtype="float32"):
    return raises(errors.ResourceExhaustedError,
                  f"OOM when allocating tensor with shape[{', '.join(map(str, shape))}] and "
                  f"type {dtype}")


I32 = np.int32

# ----------------------------------------------------------------------------- StridedSlice


def strided_node():
    return Repeats(lambda x, b, e, s: R.StridedSlice(input=x, begin=b, end=e, strides=s),
                   gp.float32, gp.int32, gp.int32, gp.int32)


@SETTINGS
@given(data=st.data())
def test_strided_slice_node_fed_new_shapes_and_bounds(data):
    node = strided_node()
    for _ in range(3):
        shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=6))
        x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
        bounds = st.integers(-8, 8)
        begin = [data.draw(bounds) for _ in shape]
        end = [data.draw(bounds) for _ in shape]
        strides = [data.draw(st.integers(1, 3) | st.integers(-3, -1)) for _ in shape]
        want = x[tuple(slice(b, e, s) for b, e, s in zip(begin, end, strides))]
        for _ in range(2):
            got = node(x, I32(begin), I32(end), I32(strides))
            assert got.shape == want.shape
            np.testing.assert_array_equal(got, want)


def test_strided_slice_errors_after_good_runs():
    shrink = Repeats(lambda x, b: R.StridedSlice(input=x, begin=b, end=b + 1, strides=[1],
                                                 shrink_axis_mask=1), gp.float32, gp.int32)
    x = np.arange(5, dtype=np.float32)
    assert shrink(x, I32([4])) == 4
    with invalid("slice index 4 of dimension 0 out of bounds."):
        shrink(x[:3], I32([4]))
    with invalid("slice index 5 of dimension 0 out of bounds."):
        shrink(x, I32([5]))
    assert shrink(x, I32([-1])) == 4
    node = strided_node()
    m = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(node(m, I32([0, 1]), I32([3, 3]), I32([1, 1])), m[:, 1:3])
    with invalid("strides[1] must be non-zero"):
        node(m, I32([0, 1]), I32([3, 3]), I32([1, 0]))
    with invalid("Expected begin, end, and strides to be 1D equal size tensors, but got "
                 "shapes [1,2], [2], and [2] instead."):
        node(m, I32([[0, 1]]), I32([3, 3]), I32([1, 1]))
    with invalid("Index out of range using input dim 1; input has only 1 dims"):
        node(m[0], I32([0, 1]), I32([3, 3]), I32([1, 1]))
    np.testing.assert_array_equal(node(m, I32([0, 1]), I32([3, 3]), I32([1, 1])), m[:, 1:3])


def test_strided_slice_grad_follows_new_shapes_and_refuses_after_good_runs():
    node = Repeats(lambda sh, b, dy: R.StridedSliceGrad(shape=sh, begin=b, end=b + 2,
                                                        strides=[1, 1], dy=dy),
                   gp.int32, gp.int32, gp.float32)
    dy = np.arange(1, 5, dtype=np.float32).reshape(2, 2)
    for shape, begin in (((3, 4), (1, 1)), ((3, 4), (0, 2)), ((2, 2), (0, 0)), ((3, 4), (1, 1))):
        want = np.zeros(shape, np.float32)
        want[begin[0]:begin[0] + 2, begin[1]:begin[1] + 2] = dy
        np.testing.assert_array_equal(node(I32(shape), I32(begin), dy), want)
    with invalid("shape of dy was [2,2] instead of [1,2]"):
        node(I32([3, 4]), I32([2, 1]), dy)
    with invalid("shape of dy was [1,4] instead of [2,2]"):
        node(I32([3, 4]), I32([1, 1]), dy.reshape(1, 4))
    with invalid("shape must be 1-D, got shape.shape = [1,2]"):
        node(I32([[3, 4]]), I32([1, 1]), dy)
    with memory_budget(40), oom([3, 4]):
        node(I32([3, 4]), I32([1, 1]), dy)
    assert node(I32([3, 4]), I32([1, 1]), dy).sum() == 10


# ----------------------------------------------------------------------------- splitting

def pieces_reference(x, axis, sizes):
    """The pieces of `x` along `axis`, cut one after another with np.take."""
    out, start = [], 0
    for size in sizes:
        out.append(np.take(x, np.arange(start, start + size), axis=axis))
        start += size
    return out


@SETTINGS
@given(data=st.data(), num_split=st.integers(1, 3))
def test_split_nodes_fed_new_shapes_and_axes(data, num_split):
    split = Repeats(lambda d, x: R.Split(axis=d, value=x, num_split=num_split),
                    gp.int32, gp.float32)
    split_v = Repeats(lambda x, s, d: R.SplitV(value=x, size_splits=s, axis=d,
                                               num_split=num_split),
                      gp.float32, gp.int32, gp.int32)
    for _ in range(3):
        shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4))
        axis = data.draw(st.integers(-len(shape), len(shape) - 1))
        x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape) + 0.5
        whole = shape[axis]
        if whole % num_split == 0:
            want = pieces_reference(x, axis % len(shape), [whole // num_split] * num_split)
            for got, piece in zip(split(I32(axis), x), want):
                np.testing.assert_array_equal(got, piece)
                assert got.shape == piece.shape
        else:
            with invalid("Number of ways to split should evenly divide the split dimension, "
                         f"but got split_dim {axis % len(shape)} (size = {whole}) and "
                         f"num_split {num_split}"):
                split(I32(axis), x)
        cuts = sorted(data.draw(st.lists(st.integers(0, whole), min_size=num_split - 1,
                                         max_size=num_split - 1)))
        sizes = np.diff([0] + cuts + [whole]).tolist()
        given_sizes = list(sizes)
        if num_split > 1 and data.draw(st.booleans()):
            given_sizes[data.draw(st.integers(0, num_split - 1))] = -1
        got = split_v(x, I32(given_sizes), I32(axis))
        for got_piece, piece in zip(got, pieces_reference(x, axis % len(shape), sizes)):
            np.testing.assert_array_equal(got_piece, piece)
            assert got_piece.shape == piece.shape


def test_split_errors_after_good_runs():
    split = Repeats(lambda d, x: R.Split(axis=d, value=x, num_split=2), gp.int32, gp.float32)
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert [p.shape for p in split(I32(1), x)] == [(3, 2), (3, 2)]
    with invalid("Number of ways to split should evenly divide the split dimension, but got "
                 "split_dim 0 (size = 3) and num_split 2"):
        split(I32(0), x)
    with invalid("-input rank(-2) <= split_dim < input rank (2), but got 2"):
        split(I32(2), x)
    with invalid("split_dim must be a scalar but has rank 1"):
        split(I32([1]), x)
    with invalid("Number of ways to split should evenly divide the split dimension, but got "
                 "split_dim 1 (size = 3) and num_split 2"):
        split(I32(1), x[:, :3])
    assert [p.shape for p in split(I32(1), x)] == [(3, 2), (3, 2)]

    split_v = Repeats(lambda x, s, d: R.SplitV(value=x, size_splits=s, axis=d, num_split=2),
                      gp.float32, gp.int32, gp.int32)
    assert [p.shape for p in split_v(x, I32([1, -1]), I32(1))] == [(3, 1), (3, 3)]
    with invalid("Determined shape must either match input shape along split_dim exactly if "
                 "fully specified, or be less than the size of the input along split_dim if "
                 "not fully specified.  Got: 5"):
        split_v(x, I32([1, 4]), I32(1))
    with invalid("There can only be one -1 in the input."):
        split_v(x, I32([-1, -1]), I32(1))
    with invalid("Split size at index 1 must be >= 0. Got: -2"):
        split_v(x, I32([6, -2]), I32(1))
    with invalid("split_dim_tensor must have exactly one element."):
        split_v(x, I32([1, -1]), I32([1, 0]))
    with invalid("size of the split_tensor must be 1-D and have the same elements as outputs "
                 "got 1 -D and 3 elements"):
        split_v(x, I32([1, 1, 2]), I32(1))
    with invalid("Determined shape must either match input shape along split_dim exactly if "
                 "fully specified, or be less than the size of the input along split_dim if "
                 "not fully specified.  Got: 1"):
        split_v(x[:, :0], I32([1, -1]), I32(1))
    assert [p.shape for p in split_v(x, I32([1, -1]), I32(1))] == [(3, 1), (3, 3)]
    one = Repeats(lambda x, s, d: R.SplitV(value=x, size_splits=s, axis=d, num_split=1),
                  gp.float32, gp.int32, gp.int32)
    np.testing.assert_array_equal(one(x, I32([4]), I32(1))[0], x)
    with invalid("If there is only one output, it must have the same size as the input. "
                 "Input size: 4 output size: 3"):
        one(x, I32([3]), I32(1))


# ----------------------------------------------------------------------------- gradient args

def gradient_args_reference(s0, s1):
    """The axes of the broadcast shape where s0 (s1) has a 1 or no dim, by padding both."""
    rank = max(len(s0), len(s1))
    a, b = [1] * (rank - len(s0)) + s0, [1] * (rank - len(s1)) + s1
    return [i for i in range(rank) if a[i] == 1], [i for i in range(rank) if b[i] == 1]


dims = st.lists(st.sampled_from([1, 1, 2, 3]), max_size=4)


@SETTINGS
@given(pairs=st.lists(st.tuples(dims, dims), min_size=1, max_size=4),
       dtype=st.sampled_from([np.int32, np.int64]))
def test_broadcast_gradient_args_node_fed_new_shapes(pairs, dtype):
    node = Repeats(lambda a, b: R.BroadcastGradientArgs(s0=a, s1=b), gp.as_dtype(dtype),
                   gp.as_dtype(dtype))
    for s0, s1 in pairs + pairs[:1]:
        pad = max(len(s0), len(s1))
        full0, full1 = [1] * (pad - len(s0)) + s0, [1] * (pad - len(s1)) + s1
        if any(a != b and 1 not in (a, b) for a, b in zip(full0, full1)):
            with invalid(f"Incompatible shapes: [{','.join(map(str, s0))}] vs. "
                         f"[{','.join(map(str, s1))}]"):
                node(np.array(s0, dtype), np.array(s1, dtype))
            continue
        for _ in range(2):
            r0, r1 = node(np.array(s0, dtype), np.array(s1, dtype))
            want0, want1 = gradient_args_reference(s0, s1)
            assert r0.tolist() == want0 and r1.tolist() == want1
            assert r0.dtype == dtype and r1.dtype == dtype
            r0[...] = 7                 # a fetched value is the caller's own


def test_broadcast_gradient_args_errors_after_good_runs():
    node = Repeats(lambda a, b: R.BroadcastGradientArgs(s0=a, s1=b), gp.int32, gp.int32)
    assert [r.tolist() for r in node(I32([2, 3]), I32([3]))] == [[], [0]]
    with invalid("Incompatible shapes: [2,3] vs. [4]"):
        node(I32([2, 3]), I32([4]))
    with invalid("In[1] must be a vector.[1,1]"):
        node(I32([2, 3]), I32([[3]]))
    assert [r.tolist() for r in node(I32([2, 3]), I32([3]))] == [[], [0]]


# ----------------------------------------------------------------------------- Sigmoid

def five_pass_sigmoid(x):
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


def rounded_sigmoid(x):
    """float32 x's sigmoid, float64's rounded once."""
    return five_pass_sigmoid(x.astype(np.float64)).astype(np.float32)


def compiled_sigmoid(x):
    """float32 x's sigmoid from the compiled pass over a contiguous copy of its values."""
    flat = np.array(x, np.float32).reshape(-1)
    out = np.empty_like(flat)
    compiled.loops("elementwise", single=True).sigmoid(flat, out)
    return out.reshape(np.shape(x))


def assert_within_three_ulps(got, x):
    """float32 sigmoid values ``got`` of ``x`` are within 3 ulp of the exact values (NaN
    where x is NaN), as TF's Eigen approximation is."""
    nan = np.isnan(x)
    np.testing.assert_array_equal(np.isnan(got), nan)
    with np.errstate(all="ignore"):
        np.testing.assert_array_max_ulp(np.asarray(got)[~nan], rounded_sigmoid(x)[~nan], 3)


def assert_same_bits(got, want):
    """The same float32 values bit for bit, a NaN's sign aside."""
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.where(np.isnan(got), 0, got).view(np.uint32),
                                  np.where(np.isnan(want), 0, want).view(np.uint32))


def sigmoid_inputs(dtype):
    rng = np.random.default_rng(5)
    patterns = rng.integers(0, 2**63, 50000, dtype=np.uint64).view(dtype)
    values = (rng.standard_normal(20000) * 10.0 ** rng.uniform(-9, 3, 20000)).astype(dtype)
    special = np.array([0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 88.7, -88.7, 710, -710,
                        np.finfo(dtype).tiny, -np.finfo(dtype).smallest_subnormal], dtype)
    return np.concatenate([patterns, values, special])


@pytest.mark.parametrize("dtype, bits", [(np.float32, np.uint32), (np.float64, np.uint64)])
def test_sigmoid_numpy_path_gives_the_five_pass_bits(dtype, bits, monkeypatch):
    """The NumPy path: float64 always, float32 where compiled loops cannot run (a child
    forked after numba loaded)."""
    monkeypatch.setattr(compiled, "usable", lambda: False)
    x = sigmoid_inputs(dtype)
    with np.errstate(all="ignore"):
        for start in range(0, x.size, 4000):
            chunk = x[start:start + 4000]
            np.testing.assert_array_equal(sigmoid(np, chunk).view(bits),
                                          five_pass_sigmoid(chunk).view(bits))


@pytest.mark.parametrize("size", [1, 7, 4000, 1 << 17])
def test_float32_sigmoid_gives_one_value_at_every_size_and_layout(size):
    """The compiled float32 pass at any size and layout (strided, transposed, 0-d, a
    scalar): the values a contiguous run of the same inputs gets, within 3 ulp."""
    x = sigmoid_inputs(np.float32)[:size * 2]
    with np.errstate(all="ignore"):
        for chunk in (x[:size], x[::2], x.reshape(2, -1).T[:, 0], x.reshape(2, -1).T,
                      np.array(x[0]), x[0]):
            got = sigmoid(np, chunk)
            assert got.shape == np.shape(chunk) and got.flags.c_contiguous
            assert_same_bits(got, compiled_sigmoid(chunk))
            assert_within_three_ulps(got, np.asarray(chunk))


def test_sigmoid_of_a_scalar_is_a_scalar():
    node = Repeats(lambda v: R.Sigmoid(x=v), gp.float32)
    for value in (np.float32(0.5), np.array(-2.0, np.float32)):
        got = node(value)
        assert got.shape == () and got.dtype == np.float32
        np.testing.assert_array_equal(got, compiled_sigmoid(value))


@SETTINGS
@given(x=hnp.arrays(np.float32, hnp.array_shapes(min_dims=0, max_dims=3, max_side=20),
                    elements=st.floats(width=32)))
def test_sigmoid_node_is_within_three_ulps(x):
    node = Repeats(lambda v: R.Sigmoid(x=v), gp.float32)
    got = node(x)
    assert got.dtype == np.float32 and got.shape == x.shape
    assert_same_bits(got, compiled_sigmoid(x))
    assert_within_three_ulps(got, x)


def test_float32_sigmoid_over_its_whole_range():
    """Every float32 magnitude from 2**-149 to 2**7 (subnormal results below -87.3, 1
    above 16.6), both signs, and the special values."""
    exponents = np.arange(-149, 8, dtype=np.float64)
    mantissas = np.random.default_rng(9).uniform(1, 2, (exponents.size, 64))
    magnitudes = (mantissas * 2.0 ** exponents[:, None]).astype(np.float32).reshape(-1)
    x = np.concatenate([magnitudes, -magnitudes, np.float32(
        [0, -0.0, np.inf, -np.inf, np.nan, -103.97, -104.0, -110, 16.635532, 88.72])])
    got = sigmoid(np, x)
    assert_within_three_ulps(got, x)
    assert got[-10] == 0.5 and got[-9] == 0.5 and got[-8] == 1 and got[-7] == 0
    assert np.all(np.diff(got[:magnitudes.size][np.argsort(magnitudes)]) >= 0)  # monotone


# ----------------------------------------------------------------------------- SelectV2, matmul

def test_select_v2_and_batch_matmul_errors_after_good_runs():
    select = Repeats(lambda c, t, e: R.SelectV2(condition=c, t=t, e=e), gp.bool, gp.float32,
                     gp.float32)
    t = np.arange(6, dtype=np.float32).reshape(2, 3)
    cond = np.array([True, False, True])
    np.testing.assert_array_equal(select(cond, t, -t), [[0, -1, 2], [3, -4, 5]])
    with invalid("condition [2], then [2,3], and else [2,3] must be broadcastable"):
        select(cond[:2], t, -t)
    np.testing.assert_array_equal(select(cond[:2, None], t, np.float32(9)), [[0, 1, 2], [9] * 3])
    rng = np.random.default_rng(2)
    for size in (10, 40000):        # NumPy's where, then the compiled blend
        mask, big = rng.random(size) < 0.5, rng.standard_normal(size).astype(np.float32)
        np.testing.assert_array_equal(select(mask, big, -big), np.where(mask, big, -big))
    column, row = np.ones([300, 1], np.float32), np.ones([1, 300], np.float32)
    assert select(np.array(True), column, row).shape == (300, 300)
    with memory_budget(1000), oom([300, 300]):
        select(np.array(True), column, row)

    matmul = Repeats(lambda a, b: R.BatchMatMulV2(x=a, y=b, adj_y=True), gp.float32, gp.float32)
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    np.testing.assert_array_equal(matmul(a, a[:1]), np.einsum("bij,kj->bik", a, a[0]))
    with invalid("Matrix size-incompatible: In[0]: [2,3,4], In[1]: [1,3,3]"):
        matmul(a, a[:1, :, :3])
    with invalid("In[0] and In[1] must have compatible batch dimensions: [2,3,4] vs. "
                 "[3,3,4]"):
        matmul(a, np.zeros([3, 3, 4], np.float32))
    with invalid("In[1] ndims must be >= 2: 1"):
        matmul(a, np.zeros([4], np.float32))
    np.testing.assert_array_equal(matmul(a[1], a[0]), a[1] @ a[0].T)
    assert matmul(column, column).shape == (300, 300)
    with memory_budget(1000), oom([300, 300]):
        matmul(column, column)


# ----------------------------------------------------------------------------- joining, slicing

def test_concat_pack_errors_after_good_runs():
    concat = Repeats(lambda a, b, d: R.ConcatV2(values=[a, b], axis=d), gp.float32,
                     gp.float32, gp.int32)
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(concat(a, a, I32(1)), np.hstack([a, a]))
    np.testing.assert_array_equal(concat(a, a[:1], I32(0)), np.vstack([a, a[:1]]))
    with invalid("ConcatOp : Dimension 0 in both shapes must be equal: shape[0] = [2,3] vs. "
                 "shape[1] = [1,3]"):
        concat(a, a[:1], I32(1))
    with invalid("ConcatOp : Ranks of all input tensors should match: shape[0] = [2,3] vs. "
                 "shape[1] = [3]"):
        concat(a, a[0], I32(0))
    with invalid("ConcatOp : Expected concatenating dimensions in the range [-2, 2), but got 2"):
        concat(a, a, I32(2))
    with invalid("axis tensor should be a scalar integer, but got shape [2]"):
        concat(a, a, I32([0, 1]))
    np.testing.assert_array_equal(concat(a, a, I32(-1)), np.hstack([a, a]))

    pack = Repeats(lambda a, b: R.Pack(values=[a, b], axis=-1), gp.float32, gp.float32)
    np.testing.assert_array_equal(pack(a, -a), np.stack([a, -a], -1))
    np.testing.assert_array_equal(pack(a[0], a[1]), [[0, 3], [1, 4], [2, 5]])
    np.testing.assert_array_equal(pack(np.float32(1), np.float32(2)), [1, 2])
    with invalid("Shapes of all inputs must match: values[0].shape = [2,3] != "
                 "values[1].shape = [3]"):
        pack(a, a[0])
    np.testing.assert_array_equal(pack(a, -a), np.stack([a, -a], -1))


@SETTINGS
@given(data=st.data())
def test_slice_transpose_fill_nodes_fed_new_shapes(data):
    slicer = Repeats(lambda x, b, s: R.Slice(input=x, begin=b, size=s), gp.float32, gp.int32,
                     gp.int32)
    transpose = Repeats(lambda x, p: R.Transpose(x=x, perm=p), gp.float32, gp.int32)
    fill = Repeats(lambda d, v: R.Fill(dims=d, value=v), gp.int32, gp.float32)
    for _ in range(3):
        shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5))
        x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
        begin = [data.draw(st.integers(0, d)) for d in shape]
        size = [data.draw(st.integers(-1, d - b)) for b, d in zip(begin, shape)]
        index = tuple(slice(b, None if s == -1 else b + s) for b, s in zip(begin, size))
        np.testing.assert_array_equal(slicer(x, I32(begin), I32(size)), x[index])
        perm = data.draw(st.permutations(range(len(shape))))
        np.testing.assert_array_equal(transpose(x, I32(perm)), np.transpose(x, perm))
        value = np.float32(data.draw(st.floats(-5, 5, width=32)))
        got = fill(I32(shape), value)
        assert got.shape == shape and (got == value).all() and got.dtype == np.float32


def test_slice_transpose_fill_errors_after_good_runs():
    slicer = Repeats(lambda x, b, s: R.Slice(input=x, begin=b, size=s), gp.float32, gp.int32,
                     gp.int32)
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(slicer(x, I32([1, 1]), I32([2, -1])), x[1:, 1:])
    with invalid("Expected size[0] in [0, 1], but got 2"):
        slicer(x[:2], I32([1, 1]), I32([2, -1]))
    with invalid("Expected begin[1] in [0, 4], but got 5"):
        slicer(x, I32([1, 5]), I32([2, -1]))
    with invalid("Expected begin and size arguments to be 1-D tensors of size 1, but got "
                 "shapes [2] and [2] instead."):
        slicer(x[0], I32([1, 1]), I32([2, -1]))
    with invalid("Expected begin[0] == 0 (got 1) and size[0] == 0 (got 2) when "
                 "input.dim_size(0) == 0"):
        slicer(x[:0], I32([1, 1]), I32([2, -1]))
    np.testing.assert_array_equal(slicer(x, I32([1, 1]), I32([2, -1])), x[1:, 1:])

    transpose = Repeats(lambda x, p: R.Transpose(x=x, perm=p), gp.float32, gp.int32)
    np.testing.assert_array_equal(transpose(x, I32([1, 0])), x.T)
    with invalid("transpose expects a vector of size 3. But input(1) is a vector of size 2"):
        transpose(x[None], I32([1, 0]))
    with invalid("0 is missing from {1,1}."):
        transpose(x, I32([1, 1]))
    with invalid("2 is out of range [0 .. 2)"):
        transpose(x, I32([2, 0]))
    with invalid("perm must be rank 1, got shape [1,2]"):
        transpose(x, I32([[1, 0]]))
    np.testing.assert_array_equal(transpose(x[0], I32([0])), x[0])

    fill = Repeats(lambda d, v: R.Fill(dims=d, value=v), gp.int32, gp.float32)
    np.testing.assert_array_equal(fill(I32([2, 2]), np.float32(3)), np.full([2, 2], 3))
    with invalid("value must represent a scalar, got shape [2]"):
        fill(I32([2, 2]), np.float32([3, 3]))
    with invalid("Dimension -2 must be >= 0"):
        fill(I32([-2, 2]), np.float32(3))
    with invalid("dims must represent a vector, got shape [1,2]"):
        fill(I32([[2, 2]]), np.float32(3))
    assert fill(I32([300, 300]), np.float32(3)).shape == (300, 300)
    with memory_budget(1000), oom([300, 300]):
        fill(I32([300, 300]), np.float32(3))
    np.testing.assert_array_equal(fill(I32([2, 2]), np.float32([3])), np.full([2, 2], 3))
