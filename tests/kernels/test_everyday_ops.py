"""The everyday ops (array, math, nn): OpDefs, shape inference, kernels and TF's messages.

Kernels run through gp.raw_ops both eagerly and in a Session (inputs fed through placeholders
of unknown shape, so only the kernels' checks apply) and are compared with slow, obvious
references written with Python scalars and explicit loops.
"""

import itertools
import math
import operator

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import graphops as gp
from graphops.registry import dtypes, errors, get_op_def
from graphops.registry.memory import get_memory_budget, set_memory_budget
from tests.op_runners import (P, build, invalid, map_inputs, raises, readonly, run_eager,
                              run_graph)

EVERYDAY_OPS = [
    "Placeholder", "PlaceholderWithDefault", "Const", "Identity", "StopGradient", "NoOp",
    "ZerosLike", "OnesLike", "Fill", "Shape", "Size", "Rank", "Reshape", "Transpose", "Squeeze",
    "ExpandDims", "Pack", "ConcatV2", "Tile", "Slice", "AddV2", "Sub", "Mul", "RealDiv",
    "Maximum", "Minimum", "Less", "LessEqual", "Greater", "GreaterEqual", "Equal", "NotEqual",
    "Neg", "Square", "Sqrt", "Rsqrt", "Exp", "Log", "Tanh", "Sigmoid", "Cast", "MatMul", "Sum",
    "Mean", "Relu", "BiasAdd", "Softmax", "InvertPermutation", "Range", "FloorMod", "Pad",
    "ConcatOffset"]
SETTINGS = settings(max_examples=40, deadline=None)


def f32(*shape):
    return np.arange(math.prod(shape), dtype=np.float32).reshape(shape)


def i32(*values):
    return np.array(values, np.int32)


# ----------------------------------------------------------------------------- OpDefs

def test_every_everyday_op_has_a_shape_fn_and_a_cpu_kernel():
    from graphops.registry.kernel_registry import registered_kernels
    for op in EVERYDAY_OPS:
        assert get_op_def(op).shape_fn is not None, op
        assert any(k.device_type == "CPU" for k in registered_kernels(op)), op


def test_attr_defaults():
    attr = lambda op, name: get_op_def(op).attr_def(name).default_value  # noqa: E731
    assert attr("Placeholder", "shape").rank is None
    assert attr("Reshape", "Tshape") == dtypes.int32
    assert attr("Shape", "out_type") == dtypes.int32
    assert attr("Sum", "keep_dims") is False
    assert attr("BiasAdd", "data_format") == "NHWC"
    assert attr("Cast", "Truncate") is False
    assert attr("Equal", "incompatible_shape_error") is True
    assert attr("Squeeze", "squeeze_dims") == []
    assert (attr("MatMul", "transpose_a"), attr("MatMul", "grad_b")) == (False, False)


# ----------------------------------------------------------------------------- shape inference

def build_shape(op, **kwargs):
    """The static shape of `op` built on P specs (placeholders) and arrays (constants)."""
    return build(op, **kwargs).shape


SHAPE_CASES = [   # (op, kwargs, expected dims or None for unknown rank) -- TF 2.21's results
    ("AddV2", dict(x=P([None, 3]), y=P([4, 1])), [4, 3]),
    ("AddV2", dict(x=P([None, 3]), y=P([None])), [None, 3]),
    ("AddV2", dict(x=P([None, 1]), y=P([1])), [None, 1]),
    ("AddV2", dict(x=P([2, 1, 3]), y=P([5, 1])), [2, 5, 3]),
    ("AddV2", dict(x=P(None), y=P([2])), None),
    ("Equal", dict(x=P([2]), y=P([3]), incompatible_shape_error=False), []),
    ("Equal", dict(x=P([2, None]), y=P([3, 1]), incompatible_shape_error=False), []),
    ("Equal", dict(x=P([2, None]), y=P([2, 1]), incompatible_shape_error=False), [2, None]),
    ("Equal", dict(x=P([None, 3]), y=P([2, 1]), incompatible_shape_error=False), None),
    ("MatMul", dict(a=P([None, 3]), b=P([None, 5])), [None, 5]),
    ("MatMul", dict(a=P([3, 2]), b=P([4, 3]), transpose_a=True, transpose_b=True), [2, 4]),
    ("MatMul", dict(a=P(None), b=P([3, 5])), [None, 5]),
    ("Reshape", dict(tensor=P([2, 3]), shape=i32(-1, 2)), [3, 2]),
    ("Reshape", dict(tensor=P([2, 3]), shape=i32(-1, -1)), [None, None]),
    ("Reshape", dict(tensor=P([None, 3]), shape=i32(-1, 6)), [None, 6]),
    ("Reshape", dict(tensor=P([None, 3]), shape=i32(5, 6)), [5, 6]),
    ("Reshape", dict(tensor=P([None, 3]), shape=i32(4, -1)), [4, None]),
    ("Reshape", dict(tensor=P([0, 3]), shape=i32(-1, 0)), [None, 0]),
    ("Reshape", dict(tensor=P([2, 3]), shape=P([2], np.int32)), [None, None]),
    ("Reshape", dict(tensor=P([2, 3]), shape=P([None], np.int32)), None),
    ("Shape", dict(input=P([None, 3])), [2]),
    ("Shape", dict(input=P(None), out_type=gp.int64), [None]),
    ("Size", dict(input=P([None, 3])), []),
    ("Rank", dict(input=P(None)), []),
    ("Transpose", dict(x=P([2, 3, 4]), perm=i32(2, 0, 1)), [4, 2, 3]),
    ("Transpose", dict(x=P([2, 3, 4]), perm=i32(2, 0, -1)), [4, 2, 4]),
    ("Transpose", dict(x=P([2, 3]), perm=P([2], np.int32)), [None, None]),
    ("Transpose", dict(x=P(None), perm=i32(1, 0, 2)), [None, None, None]),
    ("Transpose", dict(x=P(None), perm=i32(0)), None),
    ("Sum", dict(input=P([2, 3]), axis=i32(1), keep_dims=True), [2, 1]),
    ("Sum", dict(input=P([2, None]), axis=i32(-1)), [2]),
    ("Sum", dict(input=P([2, 3]), axis=i32(1, -1)), [2]),
    ("Sum", dict(input=P([2, 3]), axis=np.int32(0)), [3]),
    ("Sum", dict(input=P([2, 3]), axis=np.zeros([0], np.int32)), [2, 3]),
    ("Mean", dict(input=P([2, 3]), axis=P([1], np.int32)), None),
    ("Mean", dict(input=P([2, 3]), axis=P([1], np.int32), keep_dims=True),
     [None, None]),
    ("Mean", dict(input=P(None), axis=i32(0), keep_dims=True), None),
    ("Fill", dict(dims=i32(2, 3), value=np.float32(1)), [2, 3]),
    ("Fill", dict(dims=P([3], np.int32), value=np.float32(1)), [None, None, None]),
    ("Pack", dict(values=[P([2, None]), P([None, 3])], axis=1), [2, 2, 3]),
    ("Pack", dict(values=[P(None), P(None)], axis=5), None),
    ("ConcatV2", dict(values=[P([2, 3]), P([None, 4])], axis=np.int32(1)), [2, 7]),
    ("ConcatV2", dict(values=[P([2, 3]), P([None, 4])], axis=np.int32(-1)), [2, 7]),
    ("ConcatV2", dict(values=[P([2, 3]), P([2, None])], axis=P([], np.int32)), [None, None]),
    ("ConcatV2", dict(values=[P(None), P([2, 3])], axis=np.int32(0)), [None, 3]),
    ("BiasAdd", dict(value=P([None, 3]), bias=P([None])), [None, 3]),
    ("BiasAdd", dict(value=P([2, None, 4, 5]), bias=P([3]), data_format="NCHW"), [2, 3, 4, 5]),
    ("BiasAdd", dict(value=P(None), bias=P([3])), None),
    ("Softmax", dict(logits=P([None, 3])), [None, 3]),
    ("Relu", dict(features=P([None, 3])), [None, 3]),
    ("Placeholder", dict(dtype=gp.float32, shape=[None, 3]), [None, 3]),
    ("Placeholder", dict(dtype=gp.float32), None),
    ("PlaceholderWithDefault", dict(input=P([2, 3]), shape=[None, 3]),
     [None, 3]),
    ("Const", dict(value=np.zeros([2, 3], np.float32), dtype=gp.float32), [2, 3]),
    ("Cast", dict(x=P([None, 2]), DstT=gp.int32), [None, 2]),
    ("ZerosLike", dict(x=P([None, 2])), [None, 2]),
    ("Squeeze", dict(input=P([2, 1, None])), None),
    ("Squeeze", dict(input=P([1, 2, 1, 3])), [2, 3]),
    ("Squeeze", dict(input=P([2, 1, None]), axis=[1, -1]), [2]),
    ("ExpandDims", dict(input=P([2, 3]), axis=np.int32(-1)), [2, 3, 1]),
    ("ExpandDims", dict(input=P([2, 3]), axis=P([], np.int32)), None),
    ("Tile", dict(input=P([2, None]), multiples=i32(2, 3)), [4, None]),
    ("Tile", dict(input=P([2, 3]), multiples=i32(2, -1)), [4, None]),
    ("Slice", dict(input=P([4, 5]), begin=i32(1, 1), size=i32(2, -1)), [2, 4]),
    ("Slice", dict(input=P([4, 5]), begin=P([2], np.int32), size=i32(2, -1)), [2, None]),
    ("Slice", dict(input=P([4, 5]), begin=i32(1, 1), size=P([2], np.int32)), [None, None]),
]


@pytest.mark.parametrize("op, kwargs, expected", SHAPE_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(SHAPE_CASES)])
def test_shape_inference(op, kwargs, expected):
    shape = build_shape(op, **kwargs)
    assert shape.dims == expected


STATIC_VS_RUNTIME = [   # all inputs constants: the static shape must be the runtime one
    ("AddV2", dict(x=f32(2, 1, 3), y=f32(4, 1))),
    ("Equal", dict(x=f32(2), y=f32(3), incompatible_shape_error=False)),
    ("MatMul", dict(a=f32(3, 2), b=f32(4, 3), transpose_a=True, transpose_b=True)),
    ("Reshape", dict(tensor=f32(2, 0), shape=i32(0, 5, 7))),
    ("Reshape", dict(tensor=f32(4, 3), shape=i32(2, -1, 3))),
    ("Transpose", dict(x=f32(2, 3, 4), perm=i32(1, -1, 0))),
    ("Sum", dict(input=f32(2, 3, 4), axis=i32(-1, 0), keep_dims=True)),
    ("Mean", dict(input=f32(2, 3, 4), axis=i32(1))),
    ("Fill", dict(dims=i32(3, 0, 2), value=np.int8(1))),
    ("Pack", dict(values=[f32(2, 3), f32(2, 3)], axis=-2)),
    ("ConcatV2", dict(values=[f32(2, 3), f32(2, 1), f32(2, 0)], axis=np.int64(-1))),
    ("Tile", dict(input=f32(2, 3), multiples=i32(3, 0))),
    ("Slice", dict(input=f32(4, 5), begin=i32(1, 2), size=i32(-1, 2))),
    ("Squeeze", dict(input=f32(1, 2, 1))),
    ("ExpandDims", dict(input=f32(2, 3), axis=np.int32(1))),
    ("BiasAdd", dict(value=f32(2, 3, 4), bias=f32(3), data_format="NCHW")),
    ("Shape", dict(input=f32(2, 3))),
    ("Softmax", dict(logits=f32(2, 3))),
]


@pytest.mark.parametrize("op, kwargs", STATIC_VS_RUNTIME,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(STATIC_VS_RUNTIME)])
def test_static_shape_is_the_runtime_shape(op, kwargs):
    with gp.Graph().as_default():
        out = getattr(gp.raw_ops, op)(**map_inputs(op, kwargs, gp.constant))
        with gp.Session() as sess:
            value = np.asarray(sess.run(out))
    assert out.shape.is_fully_defined() and tuple(out.shape.dims) == value.shape


SHAPE_ERRORS = [   # build-time errors, TF 2.21's messages
    ("AddV2", dict(x=P([2, 3]), y=P([4])), "Dimensions must be equal, but are 3 and 4"),
    ("Less", dict(x=P([2, 3]), y=P([3, 2])), "Dimensions must be equal, but are 2 and 3"),
    ("MatMul", dict(a=P([2, 3]), b=P([4, 5])), "Dimensions must be equal, but are 3 and 4"),
    ("MatMul", dict(a=P([2, 3, 4]), b=P([4, 5])), "Shape must be rank 2 but is rank 3"),
    ("Reshape", dict(tensor=P([2, 3]), shape=i32(2, 2)),
     "Cannot reshape a tensor with 6 elements to shape [2,2] (4 elements)"),
    ("Reshape", dict(tensor=P([2, 3]), shape=i32(-1, 4)),
     "Dimension size must be evenly divisible by 4 but is 6"),
    ("Reshape", dict(tensor=P([2, 3]), shape=i32(-1, 0)),
     "Cannot reshape a tensor with 6 elements to shape [?,0] (0 elements)"),
    ("Reshape", dict(tensor=P([2, 3]), shape=i32(-2, 3)),
     "Invalid value in tensor used for shape: -2"),
    ("Reshape", dict(tensor=P([2, 3]), shape=np.array([[2, 3]], np.int32)),
     "Shape must be rank 1 but is rank 2"),
    ("Transpose", dict(x=P([2, 3, 4]), perm=i32(2, 0, 3)),
     "perm dim 3 is out of range of input rank 3"),
    ("Transpose", dict(x=P([2, 3]), perm=i32(0, 1, 2)), "Dimension must be 2 but is 3"),
    ("Sum", dict(input=P([2, 3]), axis=i32(2)),
     "Invalid reduction dimension 2 for input with 2 dimensions."),
    ("Mean", dict(input=P([2, 3]), axis=i32(-3)),
     "Invalid reduction dimension -3 for input with 2 dimensions."),
    ("Sum", dict(input=P([2, 3]), axis=np.array([[0]], np.int32)),
     "Shape must be at most rank 1 but is rank 2"),
    ("Fill", dict(dims=i32(2, -3), value=np.float32(1)), "Fill dimensions must be >= 0"),
    ("Fill", dict(dims=i32(2, 3), value=np.ones(1, np.float32)),
     "Shape must be rank 0 but is rank 1"),
    ("Fill", dict(dims=np.array([[2, 3]], np.int32), value=np.float32(1)),
     "Shape must be rank 1 but is rank 2"),
    ("Pack", dict(values=[P([2]), P([3])]),
     "Dimension 0 in both shapes must be equal, but are 2 and 3. Shapes are [2] and [3].\n"
     "\tFrom merging shape 0 with other shapes."),
    ("Pack", dict(values=[P([2]), P([2])], axis=2), "Invalid axis: 2; must be in [-2,2)"),
    ("ConcatV2", dict(values=[P([2, 3]), P([3, 4])], axis=np.int32(1)),
     "Dimension 0 in both shapes must be equal, but are 2 and 3. Shapes are [2] and [3]."),
    ("ConcatV2", dict(values=[P([2, 3]), P([3])], axis=np.int32(0)),
     "Shape must be rank 2 but is rank 1"),
    ("ConcatV2", dict(values=[P([2, 3]), P([2, 3])], axis=np.int32(-3)),
     "Shape must be at least rank 3 but is rank 2"),
    ("ConcatV2", dict(values=[P([]), P([])], axis=np.int32(0)),
     "Can't concatenate scalars (use tf.stack instead)"),
    ("ConcatV2", dict(values=[P([2]), P([2])], axis=i32(0)), "Shape must be rank 0 but is rank 1"),
    ("BiasAdd", dict(value=P([2, 3]), bias=P([4])), "Dimensions must be equal, but are 3 and 4"),
    ("BiasAdd", dict(value=P([3]), bias=P([3])), "Shape must be at least rank 2 but is rank 1"),
    ("BiasAdd", dict(value=P([2, 3]), bias=P([3]), data_format="NCHW"),
     "Shape must be at least rank 3 but is rank 2"),
    ("BiasAdd", dict(value=P([2, 3]), bias=P([1, 3])), "Shape must be rank 1 but is rank 2"),
    ("Softmax", dict(logits=P([])), "Shape must be at least rank 1 but is rank 0"),
    ("PlaceholderWithDefault", dict(input=P([2, 3]), shape=[None, 4]),
     "Dimension 1 in both shapes must be equal, but are 3 and 4. Shapes are [2,3] and [?,4]."),
    ("PlaceholderWithDefault", dict(input=P([2, 3]), shape=[None]),
     "Shapes must be equal rank, but are 2 and 1"),
    ("Squeeze", dict(input=P([2, 1]), axis=[0]),
     "Can not squeeze dim[0], expected a dimension of 1, got 2"),
    ("Squeeze", dict(input=P([2, 1]), axis=[2]), "squeeze_dims[0] not in [-2,2)."),
    ("ExpandDims", dict(input=P([2, 3]), axis=np.int32(3)), "dim 3 not in the interval [-3, 2]."),
    ("ExpandDims", dict(input=P([2, 3]), axis=i32(0, 1)),
     "'dim' input must be a tensor with a single value"),
    ("Tile", dict(input=P([2, 3]), multiples=i32(2)), "Shape must be rank 2 but is rank 1"),
    ("Slice", dict(input=P([4, 5]), begin=i32(1), size=i32(2, 5)),
     "Dimension 0 in both shapes must be equal, but are 1 and 2. Shapes are [1] and [2]."),
    ("Slice", dict(input=P([4, 5]), begin=i32(1, 1), size=i32(2, -2)),
     "Invalid value in tensor used for shape: -2"),
]


@pytest.mark.parametrize("op, kwargs, message", SHAPE_ERRORS,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(SHAPE_ERRORS)])
def test_shape_inference_errors(op, kwargs, message):
    with invalid(message):
        build_shape(op, **kwargs)


# ----------------------------------------------------------------------------- references

MODES = ["eager", "graph"]


def call(mode, op, **kwargs):
    return (run_eager if mode == "eager" else run_graph)(op, **kwargs)


def wrap_int(value, dtype):
    """Python int -> the value a `dtype` integer holds after two's-complement wrapping."""
    bits = np.dtype(dtype).itemsize * 8
    value %= 1 << bits
    if np.issubdtype(dtype, np.signedinteger) and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


def ref_broadcast(fn, x, y, out_dtype):
    """Element by element with explicit index arithmetic: TF's broadcasting rules."""
    rank = max(x.ndim, y.ndim)
    xs, ys = (1,) * (rank - x.ndim) + x.shape, (1,) * (rank - y.ndim) + y.shape
    out_shape = tuple(b if a == 1 else a for a, b in zip(xs, ys))
    xr, yr = x.reshape(xs), y.reshape(ys)
    out = np.empty(out_shape, out_dtype)
    with np.errstate(all="ignore"):
        for idx in itertools.product(*map(range, out_shape)):
            xi = tuple(0 if d == 1 else i for i, d in zip(idx, xs))
            yi = tuple(0 if d == 1 else i for i, d in zip(idx, ys))
            out[idx] = fn(xr[xi], yr[yi])
    return out


def ref_reduce(x, axes, keep_dims, combine):
    """`combine(list of elements)` over the reduced axes, one output element at a time."""
    axes = sorted({a % x.ndim for a in axes}) if x.ndim else []
    kept = [i for i in range(x.ndim) if i not in axes]
    out = {}
    for idx in itertools.product(*map(range, [x.shape[i] for i in kept])):
        where = dict(zip(kept, idx))
        cells = itertools.product(*[range(x.shape[i]) if i in axes else [where[i]]
                                    for i in range(x.ndim)])
        out[idx] = combine([x[c] for c in cells])
    shape = [1 if i in axes else d for i, d in enumerate(x.shape)] if keep_dims else \
        [x.shape[i] for i in kept]
    return [out[k] for k in sorted(out)], shape


def floats(dtype, low=-100.0, high=100.0):
    return hnp.from_dtype(np.dtype(dtype), min_value=low, max_value=high, allow_nan=False,
                          allow_subnormal=False)


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
        tol = float(ml_dtypes.finfo(dtype).eps) * np.abs(expected) + 1e-6 * np.array(scale)
        assert np.all(np.abs(got - expected)[~np.isnan(expected)] <= tol[~np.isnan(expected)])
    else:
        np.testing.assert_array_equal(out.ravel(), np.array(expected, dtype=object).astype(dtype))


def test_integer_mean_truncates_and_does_not_wrap_in_narrow_types(run):
    mean = lambda x: run("Mean", input=x, axis=np.int32(0)).item()  # noqa: E731
    assert mean(np.array([-1, -1, -3], np.int8)) == -1       # -5 / 3 truncates toward zero
    assert mean(np.array([100, 100, 100], np.int8)) == 100   # the sum 300 does not wrap
    assert mean(np.array([2**31 - 1] * 2, np.int32)) == 2**31 - 1
    assert mean(np.zeros([0], np.int32)) == 0
    assert np.isnan(mean(np.zeros([0], np.float32)))


def test_half_type_reductions_accumulate_in_float32(run):
    axis = np.int32(0)
    assert run("Sum", input=np.ones([4096], np.float16), axis=axis).item() == 4096
    big = np.full([5000], 60000, np.float16)                 # the float16 sum overflows
    assert run("Mean", input=big, axis=axis).item() == 60000
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


def test_large_float32_sigmoid_is_rounded_once(run):
    """Large float32 arrays take a compiled float64 pass: every result equal to the float64
    formula rounded once, over the whole range (overflow, subnormals, signed zeros, NaN)."""
    rng = np.random.default_rng(8)
    x = np.concatenate([rng.uniform(-120, 120, 1 << 16), rng.normal(0, 3, 1 << 16),
                        [0, -0.0, np.inf, -np.inf, np.nan, 88.7, -88.7, -103.9, -104.5, 1e-30,
                         3e38, -3e38]]).astype(np.float32)
    got = run("Sigmoid", x=x)
    wide = x.astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):     # the branch np.where drops
        want = np.where(wide >= 0, 1 / (1 + np.exp(-wide)), np.exp(wide) / (1 + np.exp(wide)))
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, want.astype(np.float32))
