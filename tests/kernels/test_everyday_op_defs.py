"""The everyday ops (array, math, nn): their OpDefs, and shape inference with TF's results
and messages, the static shape matching the one the kernels produce."""

import numpy as np
import pytest

import graphops as gp
from graphops.registry import dtypes, get_op_def
from tests.kernels.everyday_references import f32, i32
from tests.op_runners import P, build, invalid, map_inputs

EVERYDAY_OPS = [
    "Placeholder", "PlaceholderWithDefault", "Const", "Identity", "StopGradient", "NoOp",
    "ZerosLike", "OnesLike", "Fill", "Shape", "Size", "Rank", "Reshape", "Transpose", "Squeeze",
    "ExpandDims", "Pack", "ConcatV2", "Tile", "Slice", "AddV2", "Sub", "Mul", "RealDiv",
    "Maximum", "Minimum", "Less", "LessEqual", "Greater", "GreaterEqual", "Equal", "NotEqual",
    "Neg", "Square", "Sqrt", "Rsqrt", "Exp", "Log", "Tanh", "Sigmoid", "Cast", "MatMul", "Sum",
    "Mean", "Relu", "BiasAdd", "Softmax", "InvertPermutation", "Range", "FloorMod", "Pad",
    "ConcatOffset"]


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
