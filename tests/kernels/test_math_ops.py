"""The math family's cwise ops, reductions and Cumprod: values against slow, obvious references
(Python's `math` per element, explicit loops), integer and special-value semantics, TF's
error messages, the gradients (numeric checks and the op types TF's rules build), the GPU
kernels against the CPU ones, and the gp.* wrappers."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import graphops as gp
from graphops.kernels.numerics import erf as erf_module
from graphops.registry import dtypes
from graphops.registry.kernel_registry import registered_kernels
from tests.gpu_compare import compare, gpu_types, run_error, values
from tests.op_runners import gradient_error_and_types, invalid

R = gp.raw_ops
SETTINGS = settings(max_examples=15, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])
HALF = (np.float16, dtypes.bfloat16.np_dtype)


def elementwise(fn, x, dtype=np.float64):
    """`fn` applied to every element of `x` by a Python loop (the slow reference)."""
    flat = [fn(v) for v in np.asarray(x, np.float64).reshape(-1)]
    return np.array(flat, dtype).reshape(np.shape(x))


def close(got, want, dtype):
    tol = {np.float16: 1e-3, dtypes.bfloat16.np_dtype: 8e-3, np.float32: 1e-6}.get(dtype, 1e-14)
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=tol, atol=tol)


# ----------------------------------------------------------------------------- unary values

def _round_half_even(v):
    return float(round(v))      # Python rounds halves to even


UNARY = {   # op: (reference per element, low, high)
    "Abs": (abs, -5, 5), "Sign": (lambda v: float(np.sign(v)), -5, 5),
    "Reciprocal": (lambda v: 1 / v, 0.1, 5), "Inv": (lambda v: 1 / v, -5, -0.1),
    "Floor": (math.floor, -5, 5), "Ceil": (math.ceil, -5, 5),
    "Round": (_round_half_even, -5, 5), "Sin": (math.sin, -5, 5), "Cos": (math.cos, -5, 5),
    "Log1p": (math.log1p, -0.9, 5), "Expm1": (math.expm1, -5, 5), "Erf": (math.erf, -6, 6),
    "Erfc": (math.erfc, -6, 6),
}


@pytest.mark.parametrize("op", sorted(UNARY))
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16, dtypes.bfloat16.np_dtype])
def test_unary_ops_match_a_per_element_reference(run, op, dtype):
    fn, low, high = UNARY[op]
    x = np.random.default_rng(1).uniform(low, high, (3, 5)).astype(dtype)
    if op == "Round":
        x[0, :4] = [0.5, 1.5, 2.5, -2.5]
    got = run(op, x=x)
    assert got.dtype == x.dtype and got.shape == x.shape
    close(got, elementwise(fn, x.astype(np.float64)), dtype)


def test_erf_and_erfc_are_accurate_far_out_and_at_special_values(run):
    x = np.concatenate([np.linspace(-7, 7, 4001), [0.0, -0.0, 1.0, 1e-300, np.inf, -np.inf]])
    np.testing.assert_allclose(run("Erf", x=x), elementwise(math.erf, x), rtol=4e-15, atol=0)
    x = np.concatenate([x, np.linspace(7, 26, 500)])           # erfc(26) is about 1e-296
    np.testing.assert_allclose(run("Erfc", x=x), elementwise(math.erfc, x), rtol=1e-13, atol=0)
    assert np.isnan(run("Erf", x=np.array([np.nan]))[0])
    assert np.isnan(run("Erfc", x=np.array([np.nan]))[0])


def test_erf_and_erfc_off_the_compiled_path_match_the_c_library(monkeypatch):
    """The series and continued fraction (what CuPy arrays take) on NumPy arrays."""
    monkeypatch.setattr(erf_module, "compiled_cpu", lambda *args, **kwargs: False)
    x = np.concatenate([np.linspace(-7, 7, 4001), [0.0, -0.0, 1.0, 1e-300, np.inf, -np.inf]])
    np.testing.assert_allclose(erf_module.erf(np, x), elementwise(math.erf, x), rtol=4e-15,
                               atol=0)
    x = np.concatenate([x, np.linspace(7, 26, 500)])
    np.testing.assert_allclose(erf_module.erfc(np, x), elementwise(math.erfc, x), rtol=1e-13,
                               atol=0)


def test_integer_and_special_value_semantics(run):
    i8, i32 = np.int8, np.int32
    np.testing.assert_array_equal(run("Abs", x=np.array([-128, -3, 5], i8)), [-128, 3, 5])
    np.testing.assert_array_equal(run("Sign", x=np.array([-7, 0, 9], i32)), [-1, 0, 1])
    sign = run("Sign", x=np.array([np.nan, -0.0, 0.0, -2, 3], np.float32))
    assert np.isnan(sign[0]) and list(sign[1:]) == [0, 0, -1, 1]
    np.testing.assert_allclose(run("Sign", x=np.array([3 + 4j, 0], np.complex64)),
                               [0.6 + 0.8j, 0])
    np.testing.assert_array_equal(run("Round", x=np.array([3, -4, 7], i32)), [3, -4, 7])
    np.testing.assert_array_equal(run("Round", x=np.array([0.5, 1.5, 2.5, -0.5, -1.5],
                                                          np.float32)), [0, 2, 2, -0, -2])
    np.testing.assert_array_equal(run("Reciprocal", x=np.array([1, -1, 2, -5], i32)),
                                  [1, -1, 0, 0])
    with invalid("Integer division by zero"):
        run("Reciprocal", x=np.array([3, 0], i32))


# ----------------------------------------------------------------------------- unary gradients

UNARY_GRADIENT = {   # op: (z(y, dy), y range)
    "SigmoidGrad": (lambda y, dy: dy * y * (1 - y), (0.05, 0.95)),
    "TanhGrad": (lambda y, dy: dy * (1 - y * y), (-0.9, 0.9)),
    "SqrtGrad": (lambda y, dy: dy * 0.5 / y, (0.2, 3)),
    "RsqrtGrad": (lambda y, dy: -0.5 * dy * y ** 3, (0.2, 3)),
    "ReciprocalGrad": (lambda y, dy: -dy * y * y, (-3, 3)),
    "InvGrad": (lambda y, dy: -dy * y * y, (-3, 3)),
}


@pytest.mark.parametrize("op", sorted(UNARY_GRADIENT))
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
def test_unary_gradient_ops(run, op, dtype):
    fn, (low, high) = UNARY_GRADIENT[op]
    rng = np.random.default_rng(2)
    y, dy = rng.uniform(low, high, (2, 3)), rng.standard_normal((2, 3))
    got = run(op, y=y.astype(dtype), dy=dy.astype(dtype))
    want = elementwise(lambda v: v, fn(y.astype(dtype).astype(np.float64),
                                       dy.astype(dtype).astype(np.float64)))
    close(got, want, dtype)


def test_unary_gradient_ops_conjugate_complex_outputs_as_tf_does(run):
    y, dy = np.array([1 + 1j], np.complex64), np.array([2 + 1j], np.complex64)
    conj = np.conj(y)
    np.testing.assert_allclose(run("SqrtGrad", y=y, dy=dy), dy * 0.5 / conj, rtol=1e-6)
    np.testing.assert_allclose(run("RsqrtGrad", y=y, dy=dy), -0.5 * dy * conj ** 3, rtol=1e-6)
    np.testing.assert_allclose(run("ReciprocalGrad", y=y, dy=dy), -dy * conj ** 2, rtol=1e-6)
    np.testing.assert_allclose(run("TanhGrad", y=y, dy=dy), dy * (1 - y * y), rtol=1e-6)
    np.testing.assert_allclose(run("SigmoidGrad", y=y, dy=dy), dy * y * (1 - y), rtol=1e-6)


def test_unary_gradient_ops_take_same_sized_inputs_of_any_shape(run):
    got = run("TanhGrad", y=np.full((2, 3), 0.5), dy=np.ones(6))
    np.testing.assert_allclose(got, np.full((2, 3), 0.75))
    with invalid("The two arguments to a cwise op must have same number of elements, "
                 "got 2 and 1"):
        run("SigmoidGrad", y=np.ones(2, np.float32), dy=np.ones(1, np.float32))


# ----------------------------------------------------------------------------- binary ops

def test_pow_integer_semantics(run):
    x, y = np.array([3, 2, 0, -2, 1], np.int8), np.array([5, 7, 0, 3, 9], np.int8)
    want = [int(np.int8(np.uint8((int(a) ** int(b)) % 256))) for a, b in zip(x, y)]
    np.testing.assert_array_equal(run("Pow", x=x, y=y), want)         # 3^5 = 243 wraps
    with invalid("Integers to negative integer powers are not allowed"):
        run("Pow", x=np.array([2, 3], np.int32), y=np.array([-1, 2], np.int32))


@given(data=st.data())
@SETTINGS
def test_pow_squared_difference_div_no_nan_match_loops(run, data):
    dtype = data.draw(st.sampled_from([np.float32, np.float64]))
    rng = np.random.default_rng(data.draw(st.integers(0, 99)))
    x = rng.uniform(0.1, 3, (2, 1, 3)).astype(dtype)
    y = rng.uniform(-2, 2, (4, 1)).astype(dtype)
    y[0, 0] = 0
    out = {op: run(op, x=x, y=y) for op in ("Pow", "SquaredDifference", "DivNoNan")}
    for i, j, k, m in itertools.product(range(2), range(4), range(3), [0]):
        a, b = float(x[i, m, k]), float(y[j, m])
        close(out["Pow"][i, j, k], a ** b, dtype)
        close(out["SquaredDifference"][i, j, k], (a - b) ** 2, dtype)
        close(out["DivNoNan"][i, j, k], 0.0 if b == 0 else a / b, dtype)


def test_squared_difference_of_complex_is_the_squared_modulus(run):
    got = run("SquaredDifference", x=np.array([1 + 2j], np.complex64), y=np.zeros(1, np.complex64))
    np.testing.assert_allclose(got, [5 + 0j])


def test_binary_ops_report_incompatible_shapes(run):
    with invalid("Incompatible shapes: [2,3] vs. [4]"):
        run("Pow", x=np.ones((2, 3), np.float32), y=np.ones(4, np.float32))


def test_add_n_and_l2_loss(run):
    rng = np.random.default_rng(3)
    xs = [rng.standard_normal((2, 3)) for _ in range(3)]
    total = np.zeros((2, 3))
    for i, j in itertools.product(range(2), range(3)):
        total[i, j] = xs[0][i, j] + xs[1][i, j] + xs[2][i, j]
    np.testing.assert_allclose(run("AddN", inputs=xs), total, rtol=1e-15)
    big = np.array([2**31 - 1], np.int32)
    np.testing.assert_array_equal(run("AddN", inputs=[big, np.ones(1, np.int32)]), [-2**31])
    t = xs[0].astype(np.float32)
    assert run("L2Loss", t=t) == pytest.approx(sum(v * v for v in t.reshape(-1)) / 2, rel=1e-6)
    assert run("L2Loss", t=np.zeros(0, np.float16)) == 0
    with invalid("Inputs to operation AddN of type AddN must have the same size and shape.  "
                 "Input 0: [2,3] != input 1: [6]"):
        run("AddN", inputs=[np.ones((2, 3)), np.ones(6)])


def test_add_n_shape_function_merges_its_inputs():
    with gp.Graph().as_default():
        a, b = gp.placeholder(gp.float32, [2, None]), gp.placeholder(gp.float32, [None, 3])
        assert R.AddN(inputs=[a, b]).shape.as_list() == [2, 3]
        with pytest.raises(ValueError, match="From merging shape 0 with other shapes"):
            R.AddN(inputs=[a, gp.placeholder(gp.float32, [3])])


# ----------------------------------------------------------------------------- reductions

def reference_reduction(op, x, axes, keep_dims):
    """Explicit loop over the output cells, each combining its group with Python's fold."""
    rank = x.ndim
    axes = sorted({a % rank for a in axes})
    out_shape = [1 if i in axes else d for i, d in enumerate(x.shape)]
    out = np.empty(out_shape, x.dtype)
    for index in itertools.product(*[range(d) for d in out_shape]):
        ranges = [range(x.shape[i]) if i in axes else [index[i]] for i in range(rank)]
        group = [x[cell] for cell in itertools.product(*ranges)]
        if op == "Max":
            value = max(group, default=-np.inf)
            value = np.nan if any(np.isnan(v) for v in group) else value
        elif op == "Min":
            value = min(group, default=np.inf)
            value = np.nan if any(np.isnan(v) for v in group) else value
        elif op == "Prod":
            value = 1.0
            for v in group:
                value *= v
        elif op == "Any":
            value = any(group)
        else:
            value = all(group)
        out[index] = value
    return out if keep_dims else out.reshape([d for i, d in enumerate(x.shape)
                                              if i not in axes])


@given(data=st.data())
@SETTINGS
def test_reductions_match_loops(run, data):
    op = data.draw(st.sampled_from(["Max", "Min", "Prod", "Any", "All"]))
    shape = data.draw(st.lists(st.integers(0 if op in ("Prod", "Any", "All") else 1, 3),
                               min_size=0, max_size=3))
    rank = len(shape)
    axes = data.draw(st.lists(st.integers(-rank, rank - 1), unique_by=lambda a: a % rank,
                              max_size=rank)) if rank else []
    keep_dims = data.draw(st.booleans())
    rng = np.random.default_rng(data.draw(st.integers(0, 99)))
    x = rng.random(shape) < 0.5 if op in ("Any", "All") else rng.uniform(-2, 2, shape)
    if op in ("Max", "Min") and x.size and data.draw(st.booleans()):
        x.reshape(-1)[0] = np.nan
    index_type = data.draw(st.sampled_from([np.int32, np.int64]))
    got = run(op, input=x, axis=np.array(axes, index_type), keep_dims=keep_dims)
    np.testing.assert_allclose(got, reference_reduction(op, x, axes, keep_dims), rtol=1e-13)


@pytest.mark.parametrize("dtype", [np.float16, dtypes.bfloat16.np_dtype, np.float32, np.int8,
                                   np.uint8, np.int64])
def test_empty_extrema_are_the_types_extremes(run, dtype):
    x = np.zeros((0, 2), dtype)
    lowest, highest = ((-np.inf, np.inf) if np.dtype(dtype).kind == "f" or dtype in HALF else
                       (np.iinfo(dtype).min, np.iinfo(dtype).max))
    np.testing.assert_array_equal(run("Max", input=x, axis=np.int32(0)), [lowest] * 2)
    np.testing.assert_array_equal(run("Min", input=x, axis=np.int32([0]), keep_dims=True),
                                  [[highest] * 2])
    assert run("Prod", input=x, axis=np.int32([0, 1])) == 1


def test_integer_products_wrap(run):
    x = np.array([2**16, 2**16, 3], np.int32)
    assert run("Prod", input=x, axis=np.int32(0)) == 0


def test_reduction_axis_errors(run):
    x = np.zeros((2, 3), np.float32)
    with invalid("Invalid reduction dimension (2 for input with 2 dimension(s)"):
        run("Max", input=x, axis=np.int32(2))
    with invalid("Invalid reduction arguments: Axes contains duplicate dimension: 0"):
        run("Any", input=x > 0, axis=np.int32([0, -2]))
    with gp.Graph().as_default(), pytest.raises(
            ValueError, match=r"Invalid reduction dimension 3 for input with 2 dimensions\."):
        R.Prod(input=gp.placeholder(gp.float32, [2, 3]), axis=np.int32([3]))


def test_arg_min_and_arg_max_skip_nans_and_take_the_first_tie(run):
    x = np.array([[3, np.nan, 1, 5, 1], [np.nan, np.nan, np.nan, np.nan, np.nan]], np.float32)
    np.testing.assert_array_equal(run("ArgMin", input=x, dimension=np.int32(1)), [2, 0])
    np.testing.assert_array_equal(run("ArgMax", input=x, dimension=np.int32(-1)), [3, 0])
    got = run("ArgMin", input=np.array([[2, 0, 0]], np.int64), dimension=np.int64(1),
              output_type=gp.int32)
    assert got.dtype == np.int32 and list(got) == [1]
    with invalid("Reduction axis 1 is empty in shape [2,0]"):
        run("ArgMin", input=np.zeros((2, 0), np.float32), dimension=np.int32(1))
    with invalid("Expected dimension in the range [-2, 2), but got 2"):
        run("ArgMin", input=np.zeros((2, 3), np.float32), dimension=np.int32(2))
    with gp.Graph().as_default(), pytest.raises(
            ValueError, match=r"Dimension \(3\) must be in the range \[-2, 2\), where 2 is the "
                              r"number of dimensions in the input\."):
        R.ArgMin(input=gp.placeholder(gp.float32, [2, 3]), dimension=np.int32(3))


# ----------------------------------------------------------------------------- Cumprod

def reference_cumprod(x, axis, exclusive, reverse):
    moved = np.moveaxis(x.astype(np.float64), axis, -1)
    out = np.empty_like(moved)
    n = moved.shape[-1]
    for index in np.ndindex(moved.shape[:-1]):
        order = range(n - 1, -1, -1) if reverse else range(n)
        product = 1.0
        for k in order:
            if exclusive:
                out[index + (k,)] = product
                product *= moved[index + (k,)]
            else:
                product *= moved[index + (k,)]
                out[index + (k,)] = product
    return np.moveaxis(out, -1, axis)


@given(data=st.data())
@SETTINGS
def test_cumprod_matches_loops(run, data):
    shape = data.draw(st.lists(st.integers(0, 4), min_size=1, max_size=3))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    exclusive, reverse = data.draw(st.booleans()), data.draw(st.booleans())
    dtype = data.draw(st.sampled_from([np.float64, np.float32, np.int32, np.float16]))
    x = np.random.default_rng(data.draw(st.integers(0, 99))).integers(-3, 4, shape).astype(dtype)
    got = run("Cumprod", x=x, axis=np.int32(axis), exclusive=exclusive, reverse=reverse)
    assert got.dtype == dtype
    close(got, reference_cumprod(x, axis, exclusive, reverse), dtype)


def test_cumprod_errors(run):
    with invalid("ScanOp: axis must be a scalar, not [1]"):
        run("Cumprod", x=np.ones(3, np.float32), axis=np.int32([0]))
    with invalid("ScanOp: Expected scan axis in the range [-1, 1), but got 1"):
        run("Cumprod", x=np.ones(3, np.float32), axis=np.int32(1))
    with invalid("ScanOp: Expected scan axis in the range [-2, 2), but got -1"):  # TF 2.21's
        run("Cumprod", x=np.ones((2, 2)), axis=np.int32(-3))                      # wrapped axis
    with invalid("ScanOp: Expected scan axis in the range [0, 0), but got 0"):
        run("Cumprod", x=np.float32(2), axis=np.int32(0))


# ----------------------------------------------------------------------------- gradients

def _rand(rng, *shape):
    return rng.uniform(0.3, 1.0, shape) * rng.choice([-1.0, 1.0], shape)


def _pos(rng, *shape):
    return rng.uniform(0.5, 2.0, shape)


GRADIENT_CASES = {   # name: (build(*placeholders), inputs(rng), op types the gradient builds)
    "Abs": (lambda x: R.Abs(x=x), lambda r: [_rand(r, 2, 3)], {"Sign"}),
    "Sin": (lambda x: R.Sin(x=x), lambda r: [_rand(r, 3)], {"Cos"}),
    "Cos": (lambda x: R.Cos(x=x), lambda r: [_rand(r, 3)], {"Sin", "Neg"}),
    "Log1p": (lambda x: R.Log1p(x=x), lambda r: [_pos(r, 3)], {"Reciprocal", "AddV2"}),
    "Expm1": (lambda x: R.Expm1(x=x), lambda r: [_rand(r, 3)], {"Exp"}),
    "Erf": (lambda x: R.Erf(x=x), lambda r: [_rand(r, 3)], {"Exp", "Square", "Neg"}),
    "Erfc": (lambda x: R.Erfc(x=x), lambda r: [_rand(r, 3)], {"Exp", "Square", "Neg"}),
    "Reciprocal": (lambda x: R.Reciprocal(x=x), lambda r: [_pos(r, 3)], {"ReciprocalGrad"}),
    "Inv": (lambda x: R.Inv(x=x), lambda r: [_pos(r, 3)], {"ReciprocalGrad"}),
    "Sigmoid": (lambda x: R.Sigmoid(x=x), lambda r: [_rand(r, 3)], {"SigmoidGrad"}),
    "Tanh": (lambda x: R.Tanh(x=x), lambda r: [_rand(r, 3)], {"TanhGrad"}),
    "Sqrt": (lambda x: R.Sqrt(x=x), lambda r: [_pos(r, 3)], {"SqrtGrad"}),
    "Rsqrt": (lambda x: R.Rsqrt(x=x), lambda r: [_pos(r, 3)], {"RsqrtGrad"}),
    "SigmoidGrad": (lambda y, dy: R.SigmoidGrad(y=y, dy=dy),
                    lambda r: [r.uniform(0.1, 0.9, 3), _rand(r, 3)], {"SigmoidGrad", "Sub"}),
    "TanhGrad": (lambda y, dy: R.TanhGrad(y=y, dy=dy), lambda r: [_rand(r, 3), _rand(r, 3)],
                 {"TanhGrad"}),
    "SqrtGrad": (lambda y, dy: R.SqrtGrad(y=y, dy=dy), lambda r: [_pos(r, 3), _rand(r, 3)],
                 {"RealDiv", "Neg"}),
    "RsqrtGrad": (lambda y, dy: R.RsqrtGrad(y=y, dy=dy), lambda r: [_pos(r, 3), _rand(r, 3)],
                  {"RsqrtGrad", "Square"}),
    "ReciprocalGrad": (lambda y, dy: R.ReciprocalGrad(y=y, dy=dy),
                       lambda r: [_pos(r, 3), _rand(r, 3)], {"ReciprocalGrad"}),
    "Pow": (lambda x, y: R.Pow(x=x, y=y), lambda r: [_pos(r, 2, 3), _rand(r, 3)],
            {"Pow", "Log", "Select", "Greater"}),
    "SquaredDifference": (lambda x, y: R.SquaredDifference(x=x, y=y),
                          lambda r: [_rand(r, 2, 3), _rand(r, 3)], {"Sub", "Neg"}),
    "DivNoNan": (lambda x, y: R.DivNoNan(x=x, y=y), lambda r: [_rand(r, 2, 3), _pos(r, 3)],
                 {"DivNoNan"}),
    "AddN": (lambda a, b: R.AddN(inputs=[a, R.Mul(x=a, y=b), b]),
             lambda r: [_rand(r, 2, 3), _rand(r, 2, 3)], set()),
    "L2Loss": (lambda x: R.L2Loss(t=x), lambda r: [_rand(r, 2, 3)], {"Mul"}),
    "Max": (lambda x: R.Max(input=x, axis=np.int32([0, 2])), lambda r: [_rand(r, 2, 3, 2)],
            {"Equal", "Cast", "RealDiv"}),
    "Min keep_dims": (lambda x: R.Min(input=x, axis=np.int32(-1), keep_dims=True),
                      lambda r: [_rand(r, 2, 3)], {"Equal", "Cast", "RealDiv"}),
    "Prod": (lambda x: R.Prod(input=x, axis=np.int32([2, 0])), lambda r: [_rand(r, 2, 3, 2)],
             {"Cumprod", "Transpose", "BroadcastTo"}),
    "Prod keep_dims": (lambda x: R.Prod(input=x, axis=np.int32(1), keep_dims=True),
                       lambda r: [_rand(r, 2, 3)], {"Cumprod"}),
    "Cumprod": (lambda x: R.Cumprod(x=x, axis=np.int32(1), exclusive=True),
                lambda r: [_rand(r, 2, 3)], {"Cumprod", "Cumsum", "DivNoNan"}),
    "Cumprod reverse": (lambda x: R.Cumprod(x=x, axis=np.int32(0), reverse=True),
                        lambda r: [_rand(r, 3, 2)], {"Cumsum"}),
}


@pytest.mark.parametrize("name", sorted(GRADIENT_CASES))
@pytest.mark.parametrize("static", [True, False], ids=["static", "unknown shapes"])
def test_gradients_match_numeric_jacobians_and_build_tfs_ops(name, static):
    build, make, op_types = GRADIENT_CASES[name]
    for op_type in op_types:
        if not registered_kernels(op_type):     # Select, Cumsum, BroadcastTo: another family
            pytest.skip(f"{op_type} has no kernel yet")
    error, types = gradient_error_and_types(build, make(np.random.default_rng(5)), static)
    assert error < 1e-5      # central differences, delta 1e-3
    assert op_types <= types


def test_gradients_of_tied_extrema_are_split_evenly():
    with gp.Graph().as_default():
        x = gp.placeholder(gp.float64, [2, 3])
        (grad,) = gp.gradients(R.Max(input=x, axis=np.int32(1)), [x])
        with gp.Session() as sess:
            got = sess.run(grad, {x: np.array([[1, 3, 3], [2, 0, 1]], np.float64)})
    np.testing.assert_allclose(got, [[0, 0.5, 0.5], [1, 0, 0]])


def test_prod_gradient_handles_zeros():
    with gp.Graph().as_default():
        x = gp.placeholder(gp.float64, [4])
        (grad,) = gp.gradients(R.Prod(input=x, axis=np.int32(0)), [x])
        with gp.Session() as sess:
            got = sess.run(grad, {x: np.array([2.0, 0.0, 3.0, 5.0])})
    np.testing.assert_allclose(got, [0, 30, 0, 0])


def test_step_functions_and_predicates_have_no_gradient():
    with gp.Graph().as_default():
        x = gp.placeholder(gp.float64, [3])
        for op in ("Floor", "Ceil", "Round"):
            assert gp.gradients(getattr(R, op)(x=x), [x]) == [None]
        assert gp.gradients(R.Sign(x=x), [x])[0].op.type == "ZerosLike"
        assert gp.gradients(R.Cast(x=R.ArgMin(input=x, dimension=np.int32(0)), DstT=gp.float64),
                            [x]) == [None]
        flags = R.Greater(x=x, y=np.float64(0))
        assert gp.gradients(R.Cast(x=R.Any(input=flags, axis=np.int32(0)), DstT=gp.float64),
                            [x]) == [None]


# ----------------------------------------------------------------------------- GPU

GPU_CASES = {   # op: (make(rng, dtype) -> inputs, attrs), for each GPU type of the op
    "SigmoidGrad": (lambda r, t: {"y": values(r, t, (3, 4)), "dy": values(r, t, (3, 4))}, {}),
    "TanhGrad": (lambda r, t: {"y": values(r, t, (3, 4)), "dy": values(r, t, (12,))}, {}),
    "SqrtGrad": (lambda r, t: {"y": values(r, t, (3,), positive=True),
                               "dy": values(r, t, (3,))}, {}),
    "RsqrtGrad": (lambda r, t: {"y": values(r, t, (3,)), "dy": values(r, t, (3,))}, {}),
    "ReciprocalGrad": (lambda r, t: {"y": values(r, t, (3,)), "dy": values(r, t, (3,))}, {}),
    "InvGrad": (lambda r, t: {"y": values(r, t, (3,)), "dy": values(r, t, (3,))}, {}),
    "Pow": (lambda r, t: {"x": values(r, t, (2, 3), positive=True),
                          "y": values(r, t, (3,), positive=True)}, {}),
    "SquaredDifference": (lambda r, t: {"x": values(r, t, (2, 3)), "y": values(r, t, (3,))}, {}),
    "DivNoNan": (lambda r, t: {"x": values(r, t, (2, 3)), "y": values(r, t, (3,), few=True)}, {}),
    "Conj": (lambda r, t: {"input": values(r, t, (2, 3))}, {}),
    "AddN": (lambda r, t: {"inputs": [values(r, t, (2, 3)) for _ in range(3)]}, {}),
    "L2Loss": (lambda r, t: {"t": values(r, t, (2, 3))}, {}),
}


@pytest.mark.parametrize("op", sorted(GPU_CASES))
def test_gpu_matches_cpu(gpu, op):
    make, attrs = GPU_CASES[op]
    for dtype in gpu_types(op):
        compare(op, make(np.random.default_rng(0), dtype), **attrs)


def test_gpu_errors_read_as_on_the_cpu(gpu):
    inputs = {"x": np.array([2], np.int32), "y": np.array([-1], np.int32)}
    assert run_error("Pow", inputs, {}, "/GPU:0") == run_error("Pow", inputs, {}, "/CPU:0")


# ----------------------------------------------------------------------------- wrappers

def test_tf1_math_wrappers():
    x = np.array([[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]])
    np.testing.assert_array_equal(gp.reduce_max(x, axis=1), [3, 5])
    np.testing.assert_array_equal(gp.reduce_min(x, keepdims=True), [[-6]])
    assert gp.math.reduce_prod(x) == np.prod(x)
    assert gp.reduce_any(x > 5) == False and gp.reduce_all(x > -7) == True  # noqa: E712
    np.testing.assert_array_equal(gp.argmin(x, axis=1), [1, 2])
    np.testing.assert_array_equal(gp.abs(x), np.abs(x))
    np.testing.assert_array_equal(gp.sign(x), np.sign(x))
    np.testing.assert_array_equal(gp.pow(x, 2.0), x ** 2)
    np.testing.assert_array_equal(gp.add_n([x, x, x]), 3 * x)
    with gp.Graph().as_default():
        a = gp.placeholder(gp.float32, [None, 2, 3])
        b = gp.placeholder(gp.float32, [3, 4])
        assert gp.matmul(a, b).op.type == "BatchMatMulV2"
        assert gp.matmul(b, b, transpose_a=True).op.type == "MatMul"
        assert gp.einsum("bij,jk", a, b).op.get_attr("equation") == "bij,jk->bik"
        assert gp.reduce_max(a, axis=[1, 2]).shape.as_list() == [None]


def test_prod_gradient_of_unknown_rank_and_axes():
    rng = np.random.default_rng(6)
    value = _rand(rng, 2, 3, 2)
    for axes in (np.int32([2, 0]), np.int64(-2), np.int32([])):
        g = gp.Graph()
        with g.as_default():
            x, a = gp.placeholder(gp.float64, None), gp.placeholder(axes.dtype, None)
            y = R.Prod(input=x, axis=a)
            with gp.Session(graph=g) as sess:
                feed = {a: axes}
                y_shape = np.shape(sess.run(y, {x: value, **feed}))
                error = gp.test.compute_gradient_error(x, value.shape, y, y_shape,
                                                       x_init_value=value,
                                                       extra_feed_dict=feed)
        assert error < 1e-6
        assert "Where" in {op.type for op in g.get_operations()}
