"""The everyday math ops (binary with broadcasting, unary, MatMul, Cast, reductions): kernels
run through gp.raw_ops both eagerly and in a Session (inputs fed through placeholders of
unknown shape, so only the kernels' checks apply), against slow, obvious references and TF's
messages."""

import math
import operator

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import graphops as gp
from graphops.kernels.support.kernel_util import COMPILED_MIN_SIZE
from graphops.registry import dtypes, errors, get_op_def
from tests.kernels.everyday_references import (MODES, SETTINGS, call, f32, floats, i32,
                                               ref_broadcast, ref_reduce, wrap_int)
from tests.op_runners import invalid, raises, readonly, run_eager


# ----------------------------------------------------------------------------- binary ops

BINARY = {
    "AddV2": operator.add, "Sub": operator.sub, "Mul": operator.mul,
    "RealDiv": operator.truediv, "Maximum": lambda a, b: a if a >= b else b,
    "Minimum": lambda a, b: a if a <= b else b, "Less": operator.lt,
    "LessEqual": operator.le, "Greater": operator.gt, "GreaterEqual": operator.ge,
    "Equal": operator.eq, "NotEqual": operator.ne,
}
BINARY_DTYPES = [np.float32, np.float64, np.float16, np.int32, np.int64, np.uint8, np.int8]


@SETTINGS
@given(data=st.data(), op=st.sampled_from(sorted(BINARY)),
       dtype=st.sampled_from(BINARY_DTYPES), mode=st.sampled_from(MODES))
def test_binary_ops_broadcast_like_the_reference(data, op, dtype, mode):
    if op == "RealDiv" and not np.issubdtype(dtype, np.floating):
        dtype = np.float32
    shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3))
    elements = (floats(dtype) if np.issubdtype(dtype, np.floating)
                else hnp.from_dtype(np.dtype(dtype)))
    x = data.draw(hnp.arrays(dtype, shapes.input_shapes[0], elements=elements))
    y = data.draw(hnp.arrays(dtype, shapes.input_shapes[1], elements=elements))
    out = call(mode, op, x=readonly(x), y=readonly(y))
    out_dtype = np.bool_ if get_op_def(op).output_arg[0].type == dtypes.bool else dtype
    expected = ref_broadcast(BINARY[op], x, y, out_dtype)
    assert out.dtype == expected.dtype and out.shape == expected.shape
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16, np.complex64])
def test_binary_ops_on_half_and_complex_types(run, dtype):
    x = np.array([[1.5, -2.25], [3.0, 0.125]]).astype(dtype)
    y = np.array([0.5, 4.0]).astype(dtype)
    for op, fn in (("AddV2", np.add), ("Sub", np.subtract), ("Mul", np.multiply),
                   ("RealDiv", np.divide)):
        out = run(op, x=x, y=y)
        wide = np.complex128 if dtype == np.complex64 else np.float64
        assert out.dtype == dtype
        np.testing.assert_array_equal(out, fn(x.astype(wide), y.astype(wide)).astype(dtype))


def test_incompatible_shapes(run):
    with invalid("Incompatible shapes: [2,3] vs. [4]"):
        run("AddV2", x=f32(2, 3), y=f32(4))
    with invalid("Incompatible shapes: [2,3,1] vs. [4,1,5]"):
        run("Less", x=f32(2, 3, 1), y=f32(4, 1, 5))


def test_equal_without_incompatible_shape_error_gives_a_scalar(run):
    for op, verdict in (("Equal", False), ("NotEqual", True)):
        out = run(op, x=f32(2), y=f32(3), incompatible_shape_error=False)
        assert out.shape == () and out.dtype == np.bool_ and out == verdict
        same = run(op, x=f32(2, 3), y=f32(3), incompatible_shape_error=False)
        np.testing.assert_array_equal(same, BINARY[op](f32(2, 3), f32(3)))


def test_equal_on_strings_and_bools(run):
    words = np.array([b"a", b"b"], dtype=object)
    np.testing.assert_array_equal(run("Equal", x=words, y=np.array([b"a"], dtype=object)),
                                  [True, False])
    np.testing.assert_array_equal(run("NotEqual", x=np.array([True, False]), y=np.array(True)),
                                  [False, True])


def test_realdiv_has_no_integer_kernel():
    with pytest.raises(errors.NotFoundError, match="No registered 'RealDiv' OpKernel"):
        run_eager("RealDiv", x=i32(1), y=i32(2))


def test_broadcast_output_is_bounded_by_the_memory_budget():
    x = np.zeros((2**17, 1), np.float32)
    with pytest.raises(errors.ResourceExhaustedError):
        run_eager("AddV2", x=x, y=x.T)


# ----------------------------------------------------------------------------- unary ops

def _sigmoid(v):
    return 1 / (1 + math.exp(-v)) if v >= 0 else math.exp(v) / (1 + math.exp(v))


UNARY = {   # op: (reference on Python floats, low, high)
    "Neg": (operator.neg, -50, 50), "Square": (lambda v: v * v, -50, 50),
    "Sqrt": (math.sqrt, 0.01, 100), "Rsqrt": (lambda v: 1 / math.sqrt(v), 0.01, 100),
    "Exp": (math.exp, -10, 10), "Log": (math.log, 0.01, 100), "Tanh": (math.tanh, -10, 10),
    "Sigmoid": (_sigmoid, -20, 20),
}


@pytest.mark.parametrize("op", sorted(UNARY))
@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16, np.float32, np.float64])
def test_unary_ops_are_rounded_once(run, op, dtype):
    fn, low, high = UNARY[op]
    x = np.random.default_rng(7).uniform(low, high, 12).astype(dtype)
    out = run(op, x=x)
    expected = np.array([fn(float(v)) for v in x]).astype(dtype)   # the exact value, rounded
    assert out.dtype == dtype
    info = ml_dtypes.finfo(dtype)
    np.testing.assert_allclose(out.astype(np.float64), expected.astype(np.float64),
                               rtol=float(info.eps), atol=float(info.smallest_subnormal))


@pytest.mark.parametrize("op, cfn", [("Sqrt", lambda v: v ** 0.5), ("Exp", None), ("Log", None),
                                     ("Tanh", None), ("Rsqrt", lambda v: 1 / v ** 0.5),
                                     ("Sigmoid", lambda v: 1 / (1 + np.exp(-v))),
                                     ("Neg", operator.neg), ("Square", lambda v: v * v)])
def test_unary_ops_on_complex(run, op, cfn):
    import cmath
    fn = cfn or getattr(cmath, op.lower())
    x = np.array([1 + 2j, -0.5 + 0.25j, 3 - 1j], np.complex128)
    out = run(op, x=x)
    np.testing.assert_allclose(out, [fn(complex(v)) for v in x], rtol=1e-12)


def test_integer_unary_ops_wrap(run):
    x = np.array([-128, -3, 0, 16, 127], np.int8)
    np.testing.assert_array_equal(run("Neg", x=x), [wrap_int(-int(v), np.int8) for v in x])
    np.testing.assert_array_equal(run("Square", x=x), [wrap_int(int(v) ** 2, np.int8) for v in x])
    assert run("Square", x=np.array([300], np.uint16)).tolist() == [wrap_int(90000, np.uint16)]


def test_sigmoid_and_log_at_the_extremes_without_warnings(run):
    import warnings
    x = np.array([-100, -30, 0, 30, 100], np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = run("Sigmoid", x=x)
        logs = run("Log", x=np.array([0.0, -1.0], np.float32))
    np.testing.assert_allclose(out, [_sigmoid(float(v)) for v in x], rtol=1e-6, atol=1e-44)
    assert logs[0] == -np.inf and np.isnan(logs[1])


# ----------------------------------------------------------------------------- MatMul

@SETTINGS
@given(data=st.data(), m=st.integers(0, 4), k=st.integers(0, 4), n=st.integers(0, 4),
       transpose_a=st.booleans(), transpose_b=st.booleans(),
       dtype=st.sampled_from([np.float32, np.float64, np.float16, np.int32, np.int64]),
       mode=st.sampled_from(MODES))
def test_matmul_matches_the_triple_loop(data, m, k, n, transpose_a, transpose_b, dtype, mode):
    small = st.integers(-8, 8).map(dtype)
    a = data.draw(hnp.arrays(dtype, (k, m) if transpose_a else (m, k), elements=small))
    b = data.draw(hnp.arrays(dtype, (n, k) if transpose_b else (k, n), elements=small))
    out = call(mode, "MatMul", a=readonly(a), b=readonly(b), transpose_a=transpose_a,
               transpose_b=transpose_b)
    A, B = (a.T if transpose_a else a), (b.T if transpose_b else b)
    expected = [[sum(int(A[i, p]) * int(B[p, j]) for p in range(k)) for j in range(n)]
                for i in range(m)]
    assert out.dtype == dtype and out.shape == (m, n)
    np.testing.assert_array_equal(out, np.array(expected, dtype=np.int64).reshape(m, n))


def test_matmul_accumulates_half_types_in_float32(run):
    for dtype in (np.float16, ml_dtypes.bfloat16):
        out = run("MatMul", a=np.ones((1, 4096), dtype), b=np.ones((4096, 1), dtype))
        assert out.dtype == dtype and float(out[0, 0]) == 4096.0   # float16 sums stall at 2048


def test_matmul_errors(run):
    with invalid("Matrix size-incompatible: In[0]: [2,3], In[1]: [4,5]"):
        run("MatMul", a=f32(2, 3), b=f32(4, 5))
    with invalid("Matrix size-incompatible: In[0]: [2,3], In[1]: [4,5]"):
        run("MatMul", a=f32(2, 3), b=f32(4, 5), transpose_a=True)
    with invalid("In[0] is not a matrix. Instead it has shape [2,3,4]"):
        run("MatMul", a=f32(2, 3, 4), b=f32(4, 5))
    with invalid("In[1] is not a matrix. Instead it has shape [3]"):
        run("MatMul", a=f32(2, 3), b=f32(3))
    with pytest.raises(errors.ResourceExhaustedError):
        run("MatMul", a=np.zeros((2**17, 1), np.float32), b=np.zeros((1, 2**17), np.float32))


# ----------------------------------------------------------------------------- Cast

CASTS = [   # (x, DstT, Truncate, expected)
    (np.array([1.7, -1.7, 0.0], np.float32), gp.int32, False, [1, -1, 0]),
    (np.array([np.nan, 1e20], np.float32), gp.int32, False, [-2**31, -2**31]),
    (np.array([300.0, -1.0], np.float32), gp.uint8, False, [44, 255]),
    (np.array([0.5, 0.0, np.nan], np.float32), gp.bool, False, [True, False, True]),
    (np.array([True, False]), gp.float32, False, [1.0, 0.0]),
    (np.array([2, 0], np.int64), gp.bool, False, [True, False]),
    (np.array([1j, 0, 2 + 1j], np.complex64), gp.bool, False, [False, False, True]),
    (np.array([3.7 + 2j], np.complex64), gp.int32, False, [3]),
    (np.array([1.5 - 2j], np.complex128), gp.float32, False, [1.5]),
    (np.array([1.5], np.float32), gp.complex64, False, [1.5 + 0j]),
    (np.array([2**40 + 5], np.int64), gp.int32, False, [5]),
    (np.array([1 + 3 * 2**-12, 65519.0, 70000.0], np.float32), gp.float16, False,
     [1 + 2**-10, 65504.0, np.inf]),
    (np.array([1 + 3 * 2**-12, -(1 + 3 * 2**-12), 65519.0, 70000.0, np.nan], np.float32),
     gp.float16, True, [1.0, -1.0, 65504.0, np.inf, np.nan]),
    (np.array([1 + 3 * 2**-9, -(1 + 3 * 2**-9)], np.float32), gp.bfloat16, False,
     [1 + 2**-7, -(1 + 2**-7)]),
    (np.array([1 + 7 * 2**-12, -(1 + 7 * 2**-12)], np.float32), gp.float16, True,
     [1 + 2**-10, -(1 + 2**-10)]),
    (np.array([1 + 3 * 2**-9, -(1 + 3 * 2**-9)], np.float32), gp.bfloat16, True, [1.0, -1.0]),
    (np.array([1 + 7 * 2**-9], np.float32), gp.bfloat16, True, [1 + 2**-7]),
    (np.array([1 + 3 * 2**-25], np.float64), gp.float32, True, [1.0]),
    (np.array([1 + 3 * 2**-25], np.float64), gp.float32, False, [1 + 2**-23]),
    (np.array([2051], np.int32), gp.float16, True, [2052.0]),    # Truncate: floats only
]


@pytest.mark.parametrize("x, dst, truncate, expected", CASTS)
def test_cast(run, x, dst, truncate, expected):
    out = run("Cast", x=x, DstT=dst, Truncate=truncate)
    assert out.dtype == dst.np_dtype
    wide = np.complex128 if dst.is_complex else np.float64
    np.testing.assert_array_equal(out.astype(wide), np.array(expected, wide))


def test_cast_to_the_same_type_and_strings(run):
    x = f32(2, 2)
    np.testing.assert_array_equal(run("Cast", x=x, DstT=gp.float32), x)
    words = np.array([b"a"], dtype=object)
    assert run("Cast", x=words, DstT=gp.string).tolist() == [b"a"]
    with raises(errors.UnimplementedError, "Cast string to int32 is not supported"):
        run("Cast", x=words, DstT=gp.int32)
    with raises(errors.UnimplementedError, "Cast int64 to string is not supported"):
        run("Cast", x=np.array([1], np.int64), DstT=gp.string)


# ----------------------------------------------------------------------------- reductions

def _mean_of_ints(dtype):
    def mean(values):
        total = wrap_int(sum(int(v) for v in values),
                         np.uint64 if np.issubdtype(dtype, np.unsignedinteger) else np.int64)
        n = max(len(values), 1)
        return (abs(total) // n) * (1 if total >= 0 else -1)
    return mean


@SETTINGS
@given(data=st.data(), op=st.sampled_from(["Sum", "Mean"]), keep_dims=st.booleans(),
       dtype=st.sampled_from([np.float32, np.float64, np.float16, np.int32, np.int8, np.uint8,
                              np.int64]),
       axis_type=st.sampled_from([np.int32, np.int64]), mode=st.sampled_from(MODES))
def test_reductions_match_the_reference(data, op, keep_dims, dtype, axis_type, mode):
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=3))
    is_float = np.issubdtype(dtype, np.floating)
    x = data.draw(hnp.arrays(dtype, shape, elements=floats(dtype, -1000, 1000) if is_float
                             else hnp.from_dtype(np.dtype(dtype))))
    rank = len(shape)
    axes = data.draw(st.lists(st.integers(0, rank - 1), unique=True, max_size=rank)) if rank else []
    axes = [a - rank if data.draw(st.booleans()) else a for a in axes]
    out = call(mode, op, input=readonly(x), axis=np.array(axes, axis_type),
               keep_dims=keep_dims)
    if is_float:
        def combine(values):
            total = math.fsum(float(v) for v in values)
            return total if op == "Sum" else (total / len(values) if values else math.nan)
    elif op == "Sum":
        def combine(values):
            return wrap_int(sum(int(v) for v in values), dtype)
    else:
        combine = _mean_of_ints(dtype)
    expected, expected_shape = ref_reduce(x, axes, keep_dims, combine)
    assert out.dtype == dtype and list(out.shape) == expected_shape
    if is_float:
        scale = ref_reduce(np.abs(x.astype(np.float64)), axes, keep_dims,
                           lambda v: math.fsum(v) / (len(v) if op == "Mean" and v else 1))[0]
        expected, got = np.array(expected, np.float64), out.astype(np.float64).ravel()
        assert np.array_equal(np.isnan(got), np.isnan(expected))     # only empty means
        eps = float(ml_dtypes.finfo(dtype).eps)
        count = x.size // max(1, int(np.prod(expected_shape)))
        # float16 partial sums round to float16 as TF's CPU kernels do: one rounding each
        spread = eps * count if dtype == np.float16 and op != "Prod" else 1e-6
        tol = eps * np.abs(expected) + spread * np.array(scale)
        assert np.all(np.abs(got - expected)[~np.isnan(expected)] <= tol[~np.isnan(expected)])
    else:
        np.testing.assert_array_equal(out.ravel(), np.array(expected, dtype=object).astype(dtype))


@settings(max_examples=30, deadline=None)
@given(data=st.data(), op=st.sampled_from(["Sum", "Mean"]), keep_dims=st.booleans(),
       dtype=st.sampled_from([np.float32, np.float64]), mode=st.sampled_from(MODES))
def test_reductions_over_inner_axes_of_large_arrays(data, op, keep_dims, dtype, mode):
    """Over a run of inner axes before the last (a global average pool's spatial dims) of
    arrays large enough for the compiled sums: float64 sums, as the reference's."""
    rank = data.draw(st.integers(3, 5))
    first = data.draw(st.integers(1, rank - 2))
    last = data.draw(st.integers(first, rank - 2))
    shape = [data.draw(st.integers(1, 5)) for _ in range(rank)]
    shape[-1] = max(shape[-1], -(-COMPILED_MIN_SIZE // math.prod(shape[:-1])))
    x = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1))).uniform(
        -1000, 1000, shape).astype(dtype)
    axes = [a - rank if data.draw(st.booleans()) else a for a in range(first, last + 1)]
    out = call(mode, op, input=readonly(x), axis=np.array(axes, np.int32), keep_dims=keep_dims)
    want = x.astype(np.float64).sum(axis=tuple(axes), keepdims=keep_dims)
    scale = np.abs(x.astype(np.float64)).sum(axis=tuple(axes), keepdims=keep_dims)
    if op == "Mean":
        count = math.prod(shape[first:last + 1])
        want, scale = want / count, scale / count
    assert out.dtype == dtype and out.shape == want.shape
    eps = float(np.finfo(dtype).eps)
    assert np.all(np.abs(out.astype(np.float64) - want) <= eps * np.abs(want) + 1e-12 * scale)


def test_integer_mean_truncates_and_does_not_wrap_in_narrow_types(run):
    mean = lambda x: run("Mean", input=x, axis=np.int32(0)).item()  # noqa: E731
    assert mean(np.array([-1, -1, -3], np.int8)) == -1       # -5 / 3 truncates toward zero
    assert mean(np.array([100, 100, 100], np.int8)) == 100   # the sum 300 does not wrap
    assert mean(np.array([2**31 - 1] * 2, np.int32)) == 2**31 - 1
    assert mean(np.zeros([0], np.int32)) == 0
    assert np.isnan(mean(np.zeros([0], np.float32)))


def test_half_type_reductions_round_as_tf_does(run):
    """float16 partial sums round to float16, as TF's CPU kernels' (a sum past 65504 is
    inf); bfloat16 accumulates in float32."""
    axis = np.int32(0)
    assert run("Sum", input=np.ones([4096], np.float16), axis=axis).item() == 4096
    big = np.full([5000], 60000, np.float16)                 # the float16 sum overflows
    assert run("Mean", input=big, axis=axis).item() == np.inf
    out = run("Mean", input=np.ones([3000], ml_dtypes.bfloat16), axis=axis)
    assert out.dtype == ml_dtypes.bfloat16 and float(out) == 1.0


def test_reduction_errors(run):
    with invalid("Invalid reduction dimension (2 for input with 2 dimension(s)"):
        run("Sum", input=f32(2, 3), axis=i32(2))
    with invalid("Invalid reduction dimension (-3 for input with 2 dimension(s)"):
        run("Mean", input=f32(2, 3), axis=i32(-3))
    with invalid("Invalid reduction dimension (0 for input with 0 dimension(s)"):
        run("Sum", input=np.float32(3), axis=np.int32(0))
    with invalid(
                "Invalid reduction arguments: Axes contains duplicate dimension: 1"):
        run("Sum", input=f32(2, 3), axis=i32(1, -1))
