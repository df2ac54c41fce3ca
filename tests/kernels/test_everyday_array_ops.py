"""The everyday array, source and nn ops: kernels run through gp.raw_ops both eagerly and in
a Session (inputs fed through placeholders of unknown shape, so only the kernels' checks
apply), against slow, obvious references and TF's messages."""

import itertools
import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import graphops as gp
from graphops.registry import dtypes, errors, get_op_def
from graphops.registry.memory import get_memory_budget, set_memory_budget
from tests.kernels.everyday_references import MODES, SETTINGS, call, f32, i32
from tests.op_runners import invalid, readonly, run_eager


# ----------------------------------------------------------------------------- array ops

RESHAPES = [   # (input shape, sizes, output shape or TF's message)
    ((2, 3), i32(-1, 2), (3, 2)),
    ((2, 3), i32(3, -1), (3, 2)),
    ((2, 0), i32(-1, 0), (2, 0)),
    ((0, 3), i32(-1, 3), (0, 3)),
    ((1,), np.zeros([0], np.int32), ()),
    ((1,), np.int32(1), (1,)),
    ((2, 3), i32(2, 2), "Input to reshape is a tensor with 6 values, but the requested shape "
     "has 4"),
    ((2, 3), i32(-1, -1), "Only one input size may be -1, not both 0 and 1"),
    ((2, 3), i32(-2, 3), "Size 0 must be non-negative, not -2"),
    ((2, 3), i32(-1, 4),
     "Input to reshape is a tensor with 6 values, but the requested shape requires a multiple "
     "of 4"),
    ((2, 3), i32(-1, 0), "Input to reshape is a tensor with 6 values, but the requested shape "
     "has 0"),
    ((2, 3), np.array([[2, 3]], np.int32), "sizes input must be 1-D, not [1,2]"),
    ((6,), np.array([-1, 2**62, 4], np.int64), "Input to reshape is a tensor with 6 values, but "
     "the requested shape requires a multiple of 18446744073709551616"),
    ((0, 3), np.array([2**62, 4, 0], np.int64),
     "Shape [4611686018427387904, 4, 0] cannot be represented"),
]


@pytest.mark.parametrize("in_shape, sizes, expected", RESHAPES)
def test_reshape(run, in_shape, sizes, expected):
    x = np.arange(math.prod(in_shape), dtype=np.float32).reshape(in_shape)
    if isinstance(expected, str):
        with invalid(expected):
            run("Reshape", tensor=x, shape=sizes)
    else:
        out = run("Reshape", tensor=x, shape=sizes)
        assert out.shape == expected and out.ravel().tolist() == x.ravel().tolist()


@pytest.mark.parametrize("perm", [p for p in itertools.permutations(range(3))] + [(2, -3, 1)])
def test_transpose(run, perm):
    x = f32(2, 3, 4)
    out = run("Transpose", x=x, perm=np.array(perm, np.int64))
    axes = [p % 3 for p in perm]
    assert out.shape == tuple(x.shape[a] for a in axes)
    for idx in itertools.product(*map(range, out.shape)):
        source = [0] * 3
        for i, a in enumerate(axes):
            source[a] = idx[i]
        assert out[idx] == x[tuple(source)]


def test_transpose_errors(run):
    x = f32(2, 3, 4)
    for perm, message in (([0, 1], "transpose expects a vector of size 3. But input(1) is a "
                                    "vector of size 2"),
                          ([0, 1, 3], "3 is out of range [0 .. 3)"),
                          ([0, 1, -4], "-1 is out of range [0 .. 3)"),
                          ([0, 0, 1], "2 is missing from {0,0,1}."),
                          ([2, 0, -1], "1 is missing from {2,0,2}."),
                          ([[0, 1, 2]], "perm must be rank 1, got shape [1,3]")):
        with invalid(message):
            run("Transpose", x=x, perm=np.array(perm, np.int32))
    assert run("Transpose", x=np.float32(5), perm=np.zeros([0], np.int32)).shape == ()


def test_fill(run):
    out = run("Fill", dims=i32(2, 3), value=np.float16(1.5))
    assert out.dtype == np.float16 and out.shape == (2, 3) and np.all(out == 1.5)
    sevens = run("Fill", dims=np.array([2], np.int64), value=np.array([7], np.int8))
    assert sevens.tolist() == [7, 7]
    assert run("Fill", dims=np.int32(2), value=np.array(True)).tolist() == [True, True]
    assert run("Fill", dims=i32(0, 4), value=np.float32(1)).shape == (0, 4)
    for dims, value, message in ((i32(2, -1), np.float32(1), "Dimension -1 must be >= 0"),
                                 (np.array([[2, 1]], np.int32), np.float32(1),
                                  "dims must represent a vector, got shape [1,2]"),
                                 (i32(2), np.ones(2, np.float32),
                                  "value must represent a scalar, got shape [2]")):
        with invalid(message):
            run("Fill", dims=dims, value=value)


@pytest.mark.parametrize("op, sizes, kwargs", [
    ("Fill", "dims", dict(value=np.float32(1))),
    ("Tile", "multiples", dict(input=f32(2, 2))),
])
def test_absurd_sizes_fail_before_allocating(run, op, sizes, kwargs):
    def attempt(values):
        return run(op, **{sizes: np.array(values, np.int64)}, **kwargs)
    with pytest.raises(errors.ResourceExhaustedError, match="OOM when allocating"):
        attempt([2**20, 2**20])
    with invalid("would have more than 2**63 - 1 elements"):
        attempt([2**40, 2**40])
    budget = get_memory_budget()
    try:
        set_memory_budget(1024)
        with pytest.raises(errors.ResourceExhaustedError):
            attempt([32, 32])
    finally:
        set_memory_budget(budget)
    assert attempt([4, 4]).size == 16 * (4 if op == "Tile" else 1)


def test_zeros_and_ones_like(run):
    for x in (f32(2, 3), np.array([[1, 2]], np.int8), np.array([True]), np.array(1 + 2j),
              np.ones(3, ml_dtypes.bfloat16)):
        zeros, ones = run("ZerosLike", x=x), run("OnesLike", x=x)
        assert zeros.dtype == ones.dtype == x.dtype and zeros.shape == ones.shape == x.shape
        assert not zeros.any() and np.all(ones == 1)
    assert run("ZerosLike", x=np.array([b"a", b"bc"], dtype=object)).tolist() == [b"", b""]


def test_shape_size_rank(run):
    x = f32(2, 0, 3)
    for out_type in (gp.int32, gp.int64):
        shape = run("Shape", input=x, out_type=out_type)
        size = run("Size", input=x, out_type=out_type)
        assert shape.dtype == size.dtype == out_type.np_dtype
        assert shape.tolist() == [2, 0, 3] and size.shape == () and size == 0
    rank = run("Rank", input=x)
    assert rank.dtype == np.int32 and rank.shape == () and rank == 3
    assert run("Shape", input=np.float32(1)).tolist() == []


def test_shape_and_size_overflow_int32():
    huge = np.broadcast_to(np.float32(0), (3, 3_000_000_000))     # no memory behind it
    with invalid("Shape output type is 32-bit  but dim 1 is 3000000000"):
        run_eager("Shape", input=huge)
    with invalid(
                "Number of elements was larger than representable by 32-bit output type"):
        run_eager("Size", input=huge)
    assert run_eager("Size", input=huge, out_type=gp.int64) == 9_000_000_000


def test_squeeze_and_expand_dims(run):
    x = f32(1, 2, 1, 3)
    assert run("Squeeze", input=x).shape == (2, 3)
    assert run("Squeeze", input=x, axis=[-2]).shape == (1, 2, 3)
    assert run("Squeeze", input=f32(2, 0, 1)).shape == (2, 0)
    with invalid("Can not squeeze dim[1], expected a dimension of 1, got 2"):
        run("Squeeze", input=x, axis=[1])
    with invalid("Tried to squeeze dim index 4 for tensor with 4 dimensions."):
        run("Squeeze", input=x, axis=[4])
    for axis, shape in ((0, (1, 2, 3)), (2, (2, 3, 1)), (-1, (2, 3, 1)), (-3, (1, 2, 3))):
        out = run("ExpandDims", input=f32(2, 3), axis=np.int64(axis))
        assert out.shape == shape and out.ravel().tolist() == list(range(6))
    with invalid("Tried to expand dim index -4 for tensor with 2 dimensions."):
        run("ExpandDims", input=f32(2, 3), axis=np.int32(-4))
    with invalid("'dim' must be a tensor with a single value"):
        run("ExpandDims", input=f32(2, 3), axis=i32(0, 1))


def test_identity_ops_forward_their_input(run):
    x = f32(2, 3)
    for op in ("Identity", "StopGradient"):
        np.testing.assert_array_equal(run(op, input=x), x)
    out = run("PlaceholderWithDefault", input=x, shape=[None, 3])
    np.testing.assert_array_equal(out, x)


@SETTINGS
@given(data=st.data(), mode=st.sampled_from(MODES))
def test_pack_and_concat_match_the_reference(data, mode):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=3))
    n = data.draw(st.integers(2, 3))
    rank = len(shape)
    axis = data.draw(st.integers(-rank, rank - 1))
    sizes = [data.draw(st.integers(0, 3)) for _ in range(n)]
    pieces = []
    for k, size in enumerate(sizes):
        piece_shape = list(shape)
        piece_shape[axis] = size
        pieces.append(np.full(piece_shape, k, np.int16) * 100 +
                      np.arange(math.prod(piece_shape), dtype=np.int16).reshape(piece_shape))
    out = call(mode, "ConcatV2", values=[readonly(p) for p in pieces], axis=np.int32(axis))
    a = axis % rank
    offsets = np.cumsum([0] + sizes)
    assert out.shape == tuple(sum(sizes) if i == a else d for i, d in enumerate(shape))
    for idx in itertools.product(*map(range, out.shape)):
        k = int(np.searchsorted(offsets, idx[a], side="right")) - 1
        source = list(idx)
        source[a] -= offsets[k]
        assert out[idx] == pieces[k][tuple(source)]
    same = [p for p in pieces if p.shape == pieces[0].shape]
    pack_axis = data.draw(st.integers(-rank - 1, rank))
    packed = call(mode, "Pack", values=[readonly(p) for p in same], axis=pack_axis)
    b = pack_axis % (rank + 1)
    for idx in itertools.product(*map(range, packed.shape)):
        assert packed[idx] == same[idx[b]][idx[:b] + idx[b + 1:]]


def test_pack_and_concat_errors(run):
    for kwargs, message in (
            (dict(values=[f32(2), f32(3)]),
             "Shapes of all inputs must match: values[0].shape = [2] != values[1].shape = [3]"),
            (dict(values=[f32(2), f32(2)], axis=2), "axis = 2 not in [-2, 2)"),
            (dict(values=[f32(2), f32(2)], axis=-3), "axis = -3 not in [-2, 2)")):
        with invalid(message):
            run("Pack", **kwargs)
    for values, axis, message in (
            ([f32(2, 3), f32(3, 4)], np.int32(1), "ConcatOp : Dimension 0 in both shapes must be "
             "equal: shape[0] = [2,3] vs. shape[1] = [3,4]"),
            ([f32(2, 3), f32(3)], np.int32(0), "ConcatOp : Ranks of all input tensors should "
             "match: shape[0] = [2,3] vs. shape[1] = [3]"),
            ([f32(2, 3), f32(2, 3)], np.int32(2),
             "ConcatOp : Expected concatenating dimensions in the range [-2, 2), but got 2"),
            ([np.float32(1), np.float32(2)], np.int32(0),
             "ConcatOp : Can't concatenate scalars (use tf.stack instead)"),
            ([np.float32(1), np.float32(2)], np.int32(5),
             "ConcatOp : Expected concatenating dimensions in the range [0, 0), but got 5"),
            ([f32(2), f32(3)], i32(0, 0),
             "axis tensor should be a scalar integer, but got shape [2]")):
        with invalid(message):
            run("ConcatV2", values=values, axis=axis)
    assert run("ConcatV2", values=[f32(2, 3), f32(2, 3)], axis=i32(0)).shape == (4, 3)


def test_tile(run):
    x = f32(2, 3)
    out = run("Tile", input=x, multiples=i32(2, 3))
    assert out.shape == (4, 9)
    for i, j in itertools.product(range(4), range(9)):
        assert out[i, j] == x[i % 2, j % 3]
    assert run("Tile", input=x, multiples=i32(0, 2)).shape == (0, 6)
    for multiples, message in ((i32(1), "Expected multiples argument to be a vector of length 2 "
                                        "but got length 1"),
                               (i32(1, -1), "Expected multiples[1] >= 0, but got -1"),
                               (np.array([[1, 1]], np.int32),
                                "Expected multiples to be 1-D, but got shape [1,2]")):
        with invalid(message):
            run("Tile", input=x, multiples=multiples)


def test_slice(run):
    x = f32(4, 5)
    np.testing.assert_array_equal(run("Slice", input=x, begin=i32(1, 2), size=i32(2, -1)),
                                  [[7, 8, 9], [12, 13, 14]])
    assert run("Slice", input=x, begin=i32(4, 5), size=i32(-1, -1)).shape == (0, 0)
    assert run("Slice", input=f32(2, 0), begin=i32(0, 0), size=i32(1, -1)).shape == (1, 0)
    for begin, size, message in (
            (i32(0, 1), i32(2, 5), "Expected size[1] in [0, 4], but got 5"),
            (i32(-1, 1), i32(1, 1), "Expected begin[0] in [0, 4], but got -1"),
            (i32(0, 1), i32(-2, 1), "Expected size[0] in [0, 4], but got -2"),
            (i32(0), i32(1, 1), "Expected begin and size arguments to be 1-D tensors of size 2, "
             "but got shapes [1] and [2] instead.")):
        with invalid(message):
            run("Slice", input=x, begin=begin, size=size)
    with invalid("Expected begin[1] == 0 (got 1) and size[1] == 0 "
                                             "(got 0) when input.dim_size(1) == 0"):
        run("Slice", input=f32(2, 0), begin=i32(0, 1), size=i32(1, 0))


# ----------------------------------------------------------------------------- sources

def test_placeholder_must_be_fed():
    with gp.Graph().as_default():
        x = gp.placeholder(gp.float32, [None, 3], name="x")
        n = gp.placeholder(gp.int32, None, name="n")
        s = gp.placeholder(gp.float64, [], name="s")
        with gp.Session() as sess:
            with invalid(
                        "You must feed a value for placeholder tensor 'x' with dtype float and "
                        "shape [?,3]"):
                sess.run(x)
            with pytest.raises(errors.InvalidArgumentError,
                               match="placeholder tensor 'n' with dtype int32\n"):
                sess.run(n)
            with invalid("tensor 's' with dtype double and shape []"):
                sess.run(s)
            np.testing.assert_array_equal(sess.run(x, {x: f32(2, 3)}), f32(2, 3))


def test_const_returns_a_read_only_copy_of_its_value():
    value = f32(2, 3)
    with gp.Graph().as_default():
        c = gp.raw_ops.Const(value=value, dtype=gp.float32)
        doubled = gp.raw_ops.Mul(x=c, y=c)
        with gp.Session() as sess:
            first, twice = sess.run([c, doubled])
            np.testing.assert_array_equal(first, value)
            np.testing.assert_array_equal(twice, value * value)
            np.testing.assert_array_equal(sess.run(c), value)


def test_const_kernel_checks_the_value_type():
    from graphops.registry.kernel_registry import OpKernelConstruction, find_kernel
    attrs = {"value": np.ones(3, np.float64), "dtype": dtypes.float32}
    kernel = find_kernel("Const", "CPU", attrs).kernel_class
    with invalid("Type mismatch between value (double) and dtype (float)"):
        kernel(OpKernelConstruction(get_op_def("Const"), "c", attrs, [], [dtypes.float32]))
    attrs["value"] = np.ones(3, np.float32)
    made = kernel(OpKernelConstruction(get_op_def("Const"), "c", attrs, [], [dtypes.float32]))
    attrs["value"][0] = 5                       # the graph's attr changes; the kernel's copy not
    assert made._value.tolist() == [1, 1, 1] and not made._value.flags.writeable


def test_no_op_runs_as_a_target():
    with gp.Graph().as_default():
        n = gp.raw_ops.NoOp()
        with gp.Session() as sess:
            assert sess.run(n) is None


# ----------------------------------------------------------------------------- nn ops

def test_relu(run):
    for x in (np.array([-2.5, 0.0, 3.0, np.nan], np.float32), np.array([-3, 0, 7], np.int8),
              np.array([0, 200], np.uint8), np.array([-1.5, 2.5], ml_dtypes.bfloat16)):
        out = run("Relu", features=x)
        expected = [v if (v != v or v > 0) else 0 for v in x.tolist()]
        assert out.dtype == x.dtype
        np.testing.assert_array_equal(out.astype(np.float64), np.array(expected, np.float64))


@pytest.mark.parametrize("rank", [2, 3, 4, 5])
@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
def test_bias_add(run, rank, data_format):
    shape = (2, 3, 4, 2, 3)[:rank]
    value = np.arange(math.prod(shape), dtype=np.float64).reshape(shape)
    channel = 1 if data_format == "NCHW" else rank - 1
    bias = 1000.0 * (1 + np.arange(shape[channel]))
    out = run("BiasAdd", value=value, bias=bias, data_format=data_format)
    for idx in itertools.product(*map(range, shape)):
        assert out[idx] == value[idx] + bias[idx[channel]]


def test_bias_add_errors(run):
    for value, bias, fmt, message in (
            (f32(2, 3), f32(4), "NHWC",
             "Must provide as many biases as the last dimension of the input tensor: [4] vs. "
             "[2,3]"),
            (f32(2, 3, 4), f32(4), "NCHW",
             "Must provide as many biases as the last dimension of the input tensor: [4] vs. "
             "[2,3,4]"),
            (f32(3), f32(3), "NHWC", "Input tensor must be at least 2D: [3]"),
            (f32(2, 3), f32(1, 3), "NHWC", "Biases must be 1D: [1,3]")):
        with invalid(message):
            run("BiasAdd", value=value, bias=bias, data_format=fmt)


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16, np.float32, np.float64])
def test_softmax_matches_the_reference(run, dtype):
    logits = np.random.default_rng(3).normal(0, 4, (3, 2, 5)).astype(dtype)
    logits[0, 0] = [1000, 0, -1000, 999, 1000] if dtype in (np.float32, np.float64) else 0
    out = run("Softmax", logits=logits)
    assert out.dtype == dtype and out.shape == logits.shape
    for idx in itertools.product(range(3), range(2)):
        row = [float(v) for v in logits[idx]]
        top = max(row)
        exps = [math.exp(v - top) for v in row]
        expected = np.array([e / math.fsum(exps) for e in exps]).astype(dtype).astype(np.float64)
        # rounded once to dtype, after exp(x - max) in float32 (float64) whose error grows
        # with |x - max|: a few float32 (float64) ulps of the row's largest output, 1.
        work_eps = np.finfo(np.float64 if dtype == np.float64 else np.float32).eps
        np.testing.assert_allclose(out[idx].astype(np.float64), expected,
                                   rtol=float(ml_dtypes.finfo(dtype).eps), atol=64 * work_eps)


def test_softmax_edges(run):
    assert run("Softmax", logits=np.zeros((2, 0), np.float32)).shape == (2, 0)
    np.testing.assert_array_equal(run("Softmax", logits=np.zeros((1, 1, 1, 1, 1, 2), np.float32)),
                                  np.full((1, 1, 1, 1, 1, 2), 0.5, np.float32))
    with invalid("logits must have >= 1 dimension, got []"):
        run("Softmax", logits=np.float32(1))


def test_large_float32_sigmoid_is_within_three_ulps(run):
    """Large float32 arrays take the compiled float32 pass: every result within 3 ulp of
    the float64 formula, over the whole range (overflow, subnormals, signed zeros, NaN)."""
    rng = np.random.default_rng(8)
    x = np.concatenate([rng.uniform(-120, 120, 1 << 16), rng.normal(0, 3, 1 << 16),
                        [0, -0.0, np.inf, -np.inf, np.nan, 88.7, -88.7, -103.9, -104.5, 1e-30,
                         3e38, -3e38]]).astype(np.float32)
    got = run("Sigmoid", x=x)
    wide = x.astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):     # the branch np.where drops
        want = np.where(wide >= 0, 1 / (1 + np.exp(-wide)), np.exp(wide) / (1 + np.exp(wide)))
    assert got.dtype == np.float32
    nan = np.isnan(x)
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_max_ulp(got[~nan], want[~nan].astype(np.float32), maxulp=3)
