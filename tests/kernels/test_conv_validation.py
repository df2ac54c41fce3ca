"""Every conv validation: exact error class and TF message, at build time and at run time.

Each shape check is run three ways: graph mode with every shape and sizes vector known
(the shape function reports it while building, as InvalidArgumentError), graph mode with
unknown shapes (the kernel reports it from Session.run) and eagerly (the kernel again).
"""

import contextlib
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import graphops as gp
from graphops.registry import errors, memory
from graphops.registry.conv_shapes import CONV_OPS
from graphops.registry.op_registry import get_op_def

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

IAE = errors.InvalidArgumentError
F32 = np.float32


def z(*shape):
    return np.zeros(shape, F32)


def i32(*values):
    return np.array(values, np.int32)


def op_inputs(op, arrays):
    return dict(zip((a.name for a in get_op_def(op).input_arg), arrays))


def default_attrs(op, attrs):
    rank = CONV_OPS[op].num_spatial + 2
    return {"strides": [1] * rank, "padding": "VALID", **attrs}


def build_message(op, arrays, attrs, known=True):
    """Builds the node (shapes known and sizes constant, or all unknown); the error message."""
    sizes = CONV_OPS[op].sizes_input
    with gp.Graph().as_default():
        tensors = [gp.constant(a) if known and i == sizes else
                   gp.placeholder(a.dtype, a.shape if known else None)
                   for i, a in enumerate(arrays)]
        with pytest.raises(IAE) as e:
            getattr(gp.raw_ops, op)(**op_inputs(op, tensors), **default_attrs(op, attrs))
    assert type(e.value) is IAE
    message, sep, _ = e.value.message.partition(" for '{{node ")
    assert sep, e.value.message
    return message


def _kernel_message(error, tail):
    found = re.search(r"\nInputs: \[.*?\]\n(.*)" + tail, error.message, re.S)
    assert found, error.message
    return found.group(1)


def session_error(op, arrays, attrs):
    """Builds with shapes unknown, runs: the kernel's error (class, message)."""
    with gp.Graph().as_default():
        holders = [gp.placeholder(a.dtype) for a in arrays]
        out = getattr(gp.raw_ops, op)(**op_inputs(op, holders), **default_attrs(op, attrs))
        with gp.Session() as sess, pytest.raises(errors.OpError) as e:
            sess.run(out, dict(zip(holders, arrays)))
    return type(e.value), _kernel_message(e.value, r"\n\t \[\[\{\{node ")


def eager_error(op, arrays, attrs):
    with pytest.raises(errors.OpError) as e:
        getattr(gp.raw_ops, op)(**op_inputs(op, arrays), **default_attrs(op, attrs))
    return type(e.value), _kernel_message(e.value, r" \[Op:")


# (op, inputs, attrs, kernel error class, kernel message, build message if it differs)
SHAPE_CASES = [
    ("Conv2D", [z(1, 5, 5), z(3, 3, 2, 4)], {}, IAE,
     "convolution input must be 4-dimensional: [1,5,5]", "Shape must be rank 4 but is rank 3"),
    ("Conv2D", [z(1, 5, 5, 2), z(3, 3, 2)], {}, IAE,
     "convolution filter must be 4-dimensional: [3,3,2]", "Shape must be rank 4 but is rank 3"),
    ("Conv2D", [z(1, 5, 5, 2), z(3, 3, 0, 4)], {}, IAE,
     "filter depth must be stricly positive, got 0", "Depth of filter must not be 0"),
    ("Conv2D", [z(1, 5, 5, 5), z(3, 3, 2, 4)], {}, IAE,
     "input depth must be evenly divisible by filter depth: 5 vs 2",
     "Depth of input (5) is not a multiple of input depth of filter (2)"),
    ("Conv2D", [z(1, 5, 5, 6), z(3, 3, 2, 4)], {}, IAE,
     "output depth must be evenly divisible by number of groups: 4 vs 3",
     "Depth of output (4) is not a multiple of the number of groups (3)"),
    ("Conv2D", [z(1, 5, 5, 2), z(0, 3, 2, 4)], {}, IAE,
     "filter must not have zero elements (i.e. all dimensions must be non-zero)", None),
    ("Conv2D", [z(1, 1, 5, 2), z(3, 3, 2, 4)], {}, IAE,
     "Computed output size would be negative: -1 [input_size: 1, effective_filter_size: 3, "
     "stride: 1]", "Negative dimension size caused by subtracting 3 from 1"),
    ("Conv3D", [z(1, 5, 5, 5), z(3, 3, 3, 2, 4)], {}, IAE, "input must be 5-dimensional",
     "Shape must be rank 5 but is rank 4"),
    ("Conv3D", [z(1, 5, 5, 5, 2), z(3, 3, 2, 4)], {}, IAE, "filter must be 5-dimensional",
     "Shape must be rank 5 but is rank 4"),
    ("Conv3D", [z(1, 5, 5, 5, 2), z(3, 3, 3, 0, 4)], {}, IAE, "filter_depth must be non-zero",
     "Depth of filter must not be 0"),
    ("Conv3D", [z(1, 5, 5, 5, 5), z(3, 3, 3, 2, 4)], {}, IAE,
     "Input depth must be evenly divisible by filter depth: 5 vs 2",
     "Depth of input (5) is not a multiple of input depth of filter (2)"),
    ("Conv3D", [z(1, 5, 5, 5, 2), z(3, 0, 3, 2, 4)], {}, IAE,
     "filter must not have zero elements (i.e. all dimensions must be non-zero)", None),
    ("DepthwiseConv2dNative", [z(1, 5, 5), z(3, 3, 2, 2)], {}, IAE,
     "input must be 4-dimensional[1,5,5]", "Shape must be rank 4 but is rank 3"),
    ("DepthwiseConv2dNative", [z(1, 5, 5, 2), z(3, 3, 2)], {}, IAE,
     "filter must be 4-dimensional: [3,3,2]", "Shape must be rank 4 but is rank 3"),
    ("DepthwiseConv2dNative", [z(1, 5, 5, 3), z(3, 3, 2, 2)], {}, IAE,
     "input and filter must have the same depth: 3 vs 2",
     "Dimensions must be equal, but are 3 and 2"),
    # Conv2DBackpropInput: the sizes vector, then ConvBackpropComputeDimensionsV2
    ("Conv2DBackpropInput", [i32(1, 5, 5, 2), z(3, 3, 2, 4), z(1, 3, 3)], {}, IAE,
     "input_sizes must be 4-dimensional, got: 3", "Shape must be rank 4 but is rank 3"),
    ("Conv2DBackpropInput", [np.ones((2, 2), np.int32), z(3, 3, 2, 4), z(1, 3, 3, 4)], {}, IAE,
     "Conv2DBackpropInput: input_sizes input must be 1-dim, not 2",
     "Shape must be rank 1 but is rank 2"),
    ("Conv2DBackpropInput", [i32(1, 5, 5), z(3, 3, 2, 4), z(1, 3, 3, 4)], {}, IAE,
     "Conv2DBackpropInput requires input_sizes to contain 4 values or 2 values, but got: 3",
     None),
    ("Conv2DBackpropInput", [i32(5, 5), z(3, 3, 2), z(1, 3, 3, 4)], {}, IAE,
     "Conv2DCustomBackpropInput: filter must be 4-dimensional",
     "Shape must be rank 4 but is rank 3"),
    ("Conv2DBackpropInput", [i32(-3, 5), z(3, 3, 2, 4), z(1, 3, 3, 4)], {}, IAE,
     "Conv2DBackpropInput: elements of input_sizes must be >= 0, not -3x5",
     "Invalid value in tensor used for shape: -3"),
    ("Conv2DBackpropInput", [i32(1, 5, -5, 2), z(3, 3, 2, 4), z(1, 3, 3, 4)], {}, IAE,
     "Dimension -5 must be >= 0", "Invalid value in tensor used for shape: -5"),
    ("Conv2DBackpropInput", [i32(1, 6, 5, 2), z(3, 3, 2, 4), z(1, 3, 3, 4)], {}, IAE,
     "Conv2DCustomBackpropInput: Size of out_backprop doesn't match computed: actual = 3, "
     "computed = 4 spatial_dim: 1 input: 6 filter: 3 output: 3 stride: 1 dilation: 1", None),
    ("Conv2DBackpropInput", [i32(2, 5, 5, 2), z(3, 3, 2, 4), z(1, 3, 3, 4)], {}, IAE,
     "Conv2DCustomBackpropInput: input and out_backprop must have the same batch size. "
     "Input batch: 2, outbackprop batch: 1, batch_dim: 0",
     "Dimensions must be equal, but are 2 and 1"),
    ("Conv2DBackpropInput", [i32(1, 5, 5, 2), z(3, 3, 2, 4), z(1, 3, 3, 5)], {}, IAE,
     "Conv2DCustomBackpropInput: filter and out_backprop must have the same out_depth",
     "Dimensions must be equal, but are 5 and 4"),
    ("Conv2DBackpropInputV2", [z(1, 5, 5, 3), z(3, 3, 2, 4), z(1, 3, 3, 4)], {}, IAE,
     "Conv2DCustomBackpropInput: input depth must be evenly divisible by filter depth", None),
    ("Conv2DBackpropInputV2", [z(1, 5, 5, 2), z(3, 3, 2, 4), z(1, 3, 3)], {}, IAE,
     "Conv2DCustomBackpropInput: out_backprop must be 4-dimensional", None),
    # Conv2DBackpropFilter
    ("Conv2DBackpropFilter", [z(1, 5, 5, 2), np.int32(4), z(1, 3, 3, 4)], {}, IAE,
     "Conv2DCustomBackpropFilter: filter_sizes input must be 1-dim, not 0",
     "Shape must be rank 1 but is rank 0"),
    ("Conv2DBackpropFilter", [z(1, 5, 5, 2), i32(3, 3, 2, 4, 1), z(1, 3, 3, 4)], {}, IAE,
     "Conv2DCustomBackpropFilter: filter must be 4-dimensional",
     "Shape must be rank 4 but is rank 5"),
    ("Conv2DBackpropFilter", [z(1, 5, 5, 2), i32(3, -3, 2, 4), z(1, 3, 3, 4)], {}, IAE,
     "Dimension -3 must be >= 0", "Invalid value in tensor used for shape: -3"),
    ("Conv2DBackpropFilter", [z(5, 5, 2), i32(3, 3, 2, 4), z(1, 3, 3, 4)], {}, IAE,
     "Conv2DCustomBackpropFilter: input must be 4-dimensional", None),
    ("Conv2DBackpropFilter", [z(1, 5, 5, 2), i32(3, 3, 0, 4), z(1, 3, 3, 4)], {}, IAE,
     "Conv2DCustomBackpropFilter: filter depth must be strictly greated than zero", None),
    ("Conv2DBackpropFilter", [z(1, 2, 5, 5), i32(3, 3, 2, 4), z(1, 3, 3, 3)],
     dict(data_format="NCHW"), IAE,
     "Conv2DCustomBackpropFilter: filter and out_backprop must have the same out_depth", None),
    ("Conv2DBackpropFilter", [z(1, 5, 5, 4), i32(3, 3, 2, 5), z(1, 3, 3, 5)], {}, IAE,
     "output depth must be evenly divisible by number of groups: 5 vs 2", None),
    ("Conv2DBackpropFilterV2", [z(1, 5, 5, 2), z(3, 3, 2, 4), z(1, 2, 3, 4)],
     dict(strides=[1, 2, 1, 1], dilations=[1, 2, 1, 1]), IAE,
     "Conv2DCustomBackpropFilter: Size of out_backprop doesn't match computed: actual = 2, "
     "computed = 1 spatial_dim: 1 input: 5 filter: 3 output: 2 stride: 2 dilation: 2", None),
    # Conv3D gradients
    ("Conv3DBackpropInputV2", [np.ones((5, 1), np.int32), z(3, 3, 3, 2, 4), z(1, 3, 3, 3, 4)],
     {}, IAE, "shape must be a vector of {int32,int64}, got shape [5,1]",
     "Shape must be rank 1 but is rank 2"),
    ("Conv3DBackpropInputV2", [i32(1, 5, 5, 5), z(3, 3, 3, 2, 4), z(1, 3, 3, 3, 4)], {}, IAE,
     "input tensor must have 5 dimensions", "Shape must be rank 5 but is rank 4"),
    ("Conv3DBackpropInputV2", [i32(1, 5, 5, -5, 2), z(3, 3, 3, 2, 4), z(1, 3, 3, 3, 4)], {},
     IAE, "Dimension -5 must be >= 0", "Invalid value in tensor used for shape: -5"),
    ("Conv3DBackpropInputV2", [i32(1, 5, 5, 5, 3), z(3, 3, 3, 2, 4), z(1, 3, 3, 3, 4)], {}, IAE,
     "input and filter_sizes must have the same number of channels. Got 3 for input and 2 "
     "for filter_sizes", None),
    ("Conv3DBackpropInputV2", [i32(1, 5, 5, 5, 2), z(3, 3, 3, 2), z(1, 3, 3, 3, 4)], {}, IAE,
     "filter_sizes tensor must have 5 dimensions", None),
    ("Conv3DBackpropInputV2", [i32(1, 2, 5, 5, 5), z(3, 3, 3, 2, 4), z(1, 5, 3, 3, 3)],
     dict(data_format="NCDHW"), IAE,
     "out_backprop and filter_sizes must have the same number of channels. Got 5 for "
     "out_backprop and 4 for filter_sizes", None),
    ("Conv3DBackpropInputV2", [i32(2, 5, 5, 5, 2), z(3, 3, 3, 2, 4), z(1, 3, 3, 3, 4)], {}, IAE,
     "Conv3DBackpropInputOp: input and out_backprop must have the same batch size. "
     "Input batch: 2, outbackprop batch: 1, batch_dim: 0", None),
    ("Conv3DBackpropFilterV2", [z(1, 5, 5, 5, 2), np.ones((1, 5), np.int32), z(1, 3, 3, 3, 4)],
     {}, IAE, "filter_sizes shape must be rank 1 but is rank 2",
     "Shape must be rank 1 but is rank 2"),
    ("Conv3DBackpropFilterV2", [z(1, 5, 5, 5, 2), i32(3, 3, 3, 2, 4), z(1, 3, 3, 4)], {}, IAE,
     "out_backprop tensor must have 5 dimensions", None),
    ("Conv3DBackpropFilterV2", [z(1, 5, 5, 5, 2), i32(3, 3, 3, 2, 4), z(1, 3, 3, 2, 4)], {},
     IAE, "Conv3DBackpropFilterOp: Size of out_backprop doesn't match computed: actual = 2, "
     "computed = 3 spatial_dim: 3 input: 5 filter: 3 output: 2 stride: 1 dilation: 1", None),
    ("Conv3DBackpropFilter", [z(1, 5, 5, 5, 2), z(3, 3, 3, 3, 4), z(1, 3, 3, 3, 4)], {}, IAE,
     "input and filter_sizes must have the same number of channels. Got 2 for input and 3 "
     "for filter_sizes", None),
    ("Conv3DBackpropInput", [z(1, 5, 5, 5, 2), z(3, 3, 3, 2, 4), z(1, 3, 3, 3, 3)], {}, IAE,
     "out_backprop and filter_sizes must have the same number of channels. Got 3 for "
     "out_backprop and 4 for filter_sizes", None),
    # depthwise gradients
    ("DepthwiseConv2dNativeBackpropInput", [np.ones((2, 2), np.int32), z(3, 3, 2, 2),
                                            z(1, 3, 3, 4)], {}, IAE,
     "Conv2DBackpropInput: input_sizes input must be 1-dim, not 2",
     "Shape must be rank 1 but is rank 2"),
    ("DepthwiseConv2dNativeBackpropInput", [i32(1, -5, 5, 2), z(3, 3, 2, 2), z(1, 3, 3, 4)], {},
     IAE, "Dimension 1 of input_sizes must be >= 0",
     "Invalid value in tensor used for shape: -5"),
    ("DepthwiseConv2dNativeBackpropInput", [i32(1, 5, 5), z(3, 3, 2, 2), z(1, 3, 3, 4)], {},
     IAE, "DepthwiseConv2DBackpropInput: input must be 4-dimensional",
     "Shape must be rank 4 but is rank 3"),
    ("DepthwiseConv2dNativeBackpropInput", [i32(1, 5, 5, 2), z(3, 3, 2, 2), z(2, 3, 3, 4)], {},
     IAE, "DepthwiseConv2DBackpropInput: input and out_backprop must have the same batch size",
     None),
    ("DepthwiseConv2dNativeBackpropInput", [i32(1, 5, 5, 3), z(3, 3, 2, 2), z(1, 3, 3, 4)], {},
     IAE, "DepthwiseConv2DBackpropInput: input and filter must have the same in_depth", None),
    ("DepthwiseConv2dNativeBackpropInput", [i32(1, 5, 5, 2), z(3, 3, 2, 2), z(1, 3, 3, 5)], {},
     IAE, "DepthwiseConv2DBackpropInput: depth_multiplier * in_depth not equal to out_depth",
     None),
    ("DepthwiseConv2dNativeBackpropInput", [i32(1, 5, 5, 2), z(3, 3, 2, 2), z(1, 2, 3, 4)], {},
     IAE, "DepthwiseConv2DBackpropInput: Number of rows of out_backprop doesn't match "
     "computed: actual = 2, computed = 3", None),
    ("DepthwiseConv2dNativeBackpropFilter", [z(1, 5, 5, 2), np.int32(3), z(1, 3, 3, 4)], {},
     IAE, "Conv2DBackpropFilter: filter_sizes input must be 1-dim, not 0",
     "Shape must be rank 1 but is rank 0"),
    ("DepthwiseConv2dNativeBackpropFilter", [z(1, 5, 5, 2), i32(3, 3, -2, 2), z(1, 3, 3, 4)],
     {}, IAE, "Dimension 2 of filter_sizes must be >= 0",
     "Invalid value in tensor used for shape: -2"),
    ("DepthwiseConv2dNativeBackpropFilter", [z(1, 5, 5, 2), i32(3, 3, 2, 2), z(1, 3, 4, 4)],
     dict(padding="SAME", strides=[1, 2, 2, 1]), IAE,
     "DepthwiseConv2DBackpropFilter: Number of cols of out_backprop doesn't match computed: "
     "actual = 4, computed = 3", None),
]


def _case_id(case):
    return f"{case[0]}:{case[-2][:40]}"


@pytest.mark.parametrize("case", SHAPE_CASES, ids=_case_id)
def test_shape_check_at_build_time(case):
    op, arrays, attrs, _, message, build = case
    assert build_message(op, arrays, attrs) == (build or message)


@pytest.mark.parametrize("case", SHAPE_CASES, ids=_case_id)
def test_shape_check_at_run_time(case):
    op, arrays, attrs, cls, message, _ = case
    assert session_error(op, arrays, attrs) == (cls, message)


@pytest.mark.parametrize("case", SHAPE_CASES, ids=_case_id)
def test_shape_check_eagerly(case):
    op, arrays, attrs, cls, message, _ = case
    assert eager_error(op, arrays, attrs) == (cls, message)


# (op, attrs, kernel error class, kernel message, build message if it differs)
ATTR_CASES = [
    ("Conv2D", dict(strides=[1, 1, 1]), IAE,
     "Sliding window strides field must specify 4 dimensions",
     "Conv2D on data format NHWC requires the stride attribute to contain 4 values, but got: 3"),
    ("Conv2D", dict(dilations=[1, 1]), IAE,
     "Sliding window dilations field must specify 4 dimensions",
     "Conv2D requires the dilation attribute to contain 4 values, but got: 2"),
    ("Conv2D", dict(strides=[2, 1, 1, 1]), errors.UnimplementedError,
     "Current implementation does not yet support strides in the batch and depth dimensions.",
     None),
    ("Conv2D", dict(strides=[1, 1, 0, 1]), IAE,
     "Row and column strides should be larger than 0.", "Stride must be > 0, but got 0"),
    ("Conv2D", dict(dilations=[1, 1, 1, 2]), errors.UnimplementedError,
     "Current implementation does not yet support dilations in the batch and depth "
     "dimensions.", None),
    ("Conv2D", dict(dilations=[1, 0, 1, 1]), IAE, "Dilated rates should be larger than 0.",
     "Dilation rate must be >= 1, but got 0"),
    ("Conv2D", dict(padding="EXPLICIT", explicit_paddings=[0, 0, 1, 1]), IAE,
     "explicit_paddings attribute must contain 8 values, but got: 4", None),
    ("Conv2D", dict(padding="EXPLICIT", explicit_paddings=[0, 0, 1, 1, -1, 1, 0, 0]), IAE,
     "All elements of explicit_paddings must be nonnegative", None),
    ("Conv2D", dict(padding="EXPLICIT", explicit_paddings=[0, 0, 1, 1, 1, 1, 1, 0]), IAE,
     "Nonzero explicit padding in the batch or depth dimensions is not supported", None),
    ("Conv2D", dict(padding="SAME", explicit_paddings=[0] * 8), IAE,
     "explicit_paddings attribute must be empty if the padding attribute is not EXPLICIT", None),
    ("Conv2DBackpropInput", dict(strides=[1, 1, 1, 2]), errors.UnimplementedError,
     "Current implementation does not yet support strides in the batch and depth dimensions.",
     None),
    ("Conv2DBackpropFilter", dict(strides=[1, 1, 1, 2]), IAE,
     "Current implementation does not yet support strides in the batch and depth dimensions.",
     None),
    ("Conv2DBackpropFilter", dict(dilations=[1, 1, 1, 1, 1]), IAE,
     "Sliding window dilations field must specify 4 dimensions", None),
    ("Conv3D", dict(strides=[1, 1, 1, 1, 1, 1]), IAE,
     "Sliding window strides field must specify 5 dimensions",
     "Conv3D requires the stride attribute to contain 5 values, but got: 6"),
    ("Conv3D", dict(strides=[1, 1, 1, 1, 2]), IAE,
     "Current implementation does not yet support strides in the batch and depth dimensions.",
     None),
    ("Conv3D", dict(strides=[1, 1, -1, 1, 1]), IAE, "Spatial strides should be larger than 0.",
     "Stride must be > 0, but got -1"),
    ("Conv3DBackpropFilterV2", dict(strides=[1, 1, -1, 1, 1]), IAE,
     "Stride must be > 0, but got -1", None),
    ("Conv3DBackpropInputV2", dict(dilations=[1, 1, 1, 1]), IAE,
     "Dilation rates field must specify 5 dimensions", None),
    ("Conv3DBackpropInput", dict(dilations=[1, 1, 1, 1, 3]), IAE,
     "Current implementation does not yet support dilation rates in the batch and depth "
     "dimensions.", None),
    ("DepthwiseConv2dNative", dict(strides=[1, 1, 1, 1, 1]), IAE,
     "Sliding window strides field must specify 4 dimensions",
     "DepthwiseConv2D requires the stride attribute to contain 4 values, but got: 5"),
    ("DepthwiseConv2dNativeBackpropFilter", dict(strides=[3, 1, 1, 1]), IAE,
     "Current implementation does not yet support strides in the batch and depth dimensions.",
     None),
    ("DepthwiseConv2dNativeBackpropFilter", dict(strides=[1, 0, 1, 1]), IAE,
     "Stride must be > 0, but got 0", None),
    ("DepthwiseConv2dNativeBackpropInput", dict(dilations=[1, 1, 1, 2]), IAE,
     "Current implementation does not yet support dilations in the batch and depth "
     "dimensions.", None),
]

_VALID_INPUTS = {
    "Conv2D": [z(1, 5, 5, 2), z(3, 3, 2, 4)],
    "Conv2DBackpropInput": [i32(1, 5, 5, 2), z(3, 3, 2, 4), z(1, 3, 3, 4)],
    "Conv2DBackpropFilter": [z(1, 5, 5, 2), i32(3, 3, 2, 4), z(1, 3, 3, 4)],
    "Conv2DBackpropInputV2": [z(1, 5, 5, 2), z(3, 3, 2, 4), z(1, 3, 3, 4)],
    "Conv2DBackpropFilterV2": [z(1, 5, 5, 2), z(3, 3, 2, 4), z(1, 3, 3, 4)],
    "Conv3DBackpropFilter": [z(1, 5, 5, 5, 2), z(3, 3, 3, 2, 4), z(1, 3, 3, 3, 4)],
    "Conv3D": [z(1, 5, 5, 5, 2), z(3, 3, 3, 2, 4)],
    "Conv3DBackpropFilterV2": [z(1, 5, 5, 5, 2), i32(3, 3, 3, 2, 4), z(1, 3, 3, 3, 4)],
    "Conv3DBackpropInputV2": [i32(1, 5, 5, 5, 2), z(3, 3, 3, 2, 4), z(1, 3, 3, 3, 4)],
    "Conv3DBackpropInput": [z(1, 5, 5, 5, 2), z(3, 3, 3, 2, 4), z(1, 3, 3, 3, 4)],
    "DepthwiseConv2dNative": [z(1, 5, 5, 2), z(3, 3, 2, 2)],
    "DepthwiseConv2dNativeBackpropFilter": [z(1, 5, 5, 2), i32(3, 3, 2, 2), z(1, 3, 3, 4)],
    "DepthwiseConv2dNativeBackpropInput": [i32(1, 5, 5, 2), z(3, 3, 2, 2), z(1, 3, 3, 4)],
}


@pytest.mark.parametrize("case", ATTR_CASES, ids=_case_id)
def test_attr_check_eagerly_with_kernel_class(case):
    op, attrs, cls, message, _ = case
    assert eager_error(op, _VALID_INPUTS[op], attrs) == (cls, message)


@pytest.mark.parametrize("case", ATTR_CASES, ids=_case_id)
@pytest.mark.parametrize("known", [True, False], ids=["known_shapes", "unknown_shapes"])
def test_attr_check_at_build_time_as_invalid_argument(case, known):
    op, attrs, _, message, build = case
    assert build_message(op, _VALID_INPUTS[op], attrs, known) == (build or message)


def test_attr_registry_constraints_are_type_errors_and_value_errors():
    x, w = z(1, 5, 5, 5, 2), z(3, 3, 3, 2, 4)
    with pytest.raises(ValueError, match="Attr 'strides' of 'Conv3D' Op passed list of "
                                         "length 4 less than minimum 5."):
        gp.raw_ops.Conv3D(input=x, filter=w, strides=[1, 1, 1, 1], padding="VALID")
    with pytest.raises(ValueError, match="EXPLICIT"):
        gp.raw_ops.Conv3D(input=x, filter=w, strides=[1] * 5, padding="EXPLICIT")
    with pytest.raises(TypeError):
        gp.raw_ops.Conv2DBackpropFilter(input=z(1, 5, 5, 2), filter_sizes=[3.5, 3, 2, 4],
                                        out_backprop=z(1, 3, 3, 4), strides=[1] * 4,
                                        padding="VALID")
    with pytest.raises(TypeError):
        gp.raw_ops.Conv2DBackpropFilter(input=np.zeros((1, 5, 5, 2), np.int32),
                                        filter_sizes=[3, 3, 2, 4],
                                        out_backprop=np.zeros((1, 3, 3, 4), np.int32),
                                        strides=[1] * 4, padding="VALID")


# ----------------------------------------------------------------------------- memory


@contextlib.contextmanager
def budget(num_bytes):
    old = memory.get_memory_budget()
    memory.set_memory_budget(num_bytes)
    try:
        yield
    finally:
        memory.set_memory_budget(old)


@pytest.fixture
def small_budget():
    with budget(1 << 20):
        yield


@pytest.mark.parametrize("op, arrays, attrs", [
    ("Conv2DBackpropInput", [i32(1, 2049, 257, 4), z(3, 3, 4, 1), z(1, 2047, 255, 1)], {}),
    ("Conv3DBackpropInputV2", [np.array([1, 1, 2**17, 3, 2], np.int64), z(1, 3, 1, 2, 1),
                               z(1, 1, 2**17 - 2, 3, 1)], {}),
    ("Conv2DBackpropFilter", [z(1, 1, 1, 1), i32(1000, 1000, 1, 1), z(1, 1, 1, 1)],
     dict(padding="SAME")),
    ("Conv2D", [z(1, 1, 1, 1), z(1, 1, 1, 1)],
     dict(padding="EXPLICIT", strides=[1, 10**9, 10**9, 1],
          explicit_paddings=[0, 0, 10**9, 10**9, 10**9, 10**9, 0, 0])),
    ("DepthwiseConv2dNativeBackpropFilter", [z(1, 1, 1, 1), i32(1000, 1000, 1, 1),
                                             z(1, 1, 1, 1)], dict(padding="SAME")),
])
def test_allocations_beyond_the_budget_are_refused(small_budget, op, arrays, attrs):
    cls, message = eager_error(op, arrays, attrs)
    assert cls is errors.ResourceExhaustedError and "OOM when allocating" in message


def test_element_count_overflow_is_invalid_argument():
    big = 2**40
    cls, message = eager_error(
        "Conv3DBackpropInputV2", [np.array([1, big, big, big, 1], np.int64), z(1, 1, 1, 1, 1),
                                  z(1, 1, 1, 1, 1)],
        dict(padding="SAME", strides=[1, big, big, big, 1]))
    assert (cls, message) == (IAE, f"Shape [1, {big}, {big}, {big}, 1] would have more than "
                                   "2**63 - 1 elements")
    huge = 2**31 - 1
    cls, message = eager_error("Conv2DBackpropFilter", [z(1, 1, 1, 1), i32(huge, huge, 1, 4),
                                                        z(1, 1, 1, 4)], dict(padding="SAME"))
    assert cls is IAE and message.endswith("would have more than 2**63 - 1 elements")


# ----------------------------------------------------------------------------- hostile input


_SIZES = st.lists(st.integers(-3, 2**40), min_size=0, max_size=6)
_WINDOW = st.lists(st.sampled_from([-1, 0, 1, 1, 1, 2, 3, 2**40]), min_size=3, max_size=6)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(op=st.sampled_from(sorted(CONV_OPS)), sizes=_SIZES, strides=_WINDOW, dilations=_WINDOW,
       ranks=st.lists(st.integers(0, 6), min_size=3, max_size=3), data=st.data())
def test_hostile_inputs_only_raise_typed_errors(op, sizes, strides, dilations,
                                                ranks, data):
    """Random ranks, shapes, sizes vectors and attrs: a result or a typed OpError, never a crash."""
    info = CONV_OPS[op]
    arrays = []
    for i, rank in enumerate(ranks[:len(get_op_def(op).input_arg)]):
        if i == info.sizes_input:
            if op == "Conv3DBackpropInputV2":
                arrays.append(np.array(sizes, np.int64))
            else:
                arrays.append(np.array([min(v, 2**31 - 1) for v in sizes], np.int32))
        else:
            shape = data.draw(st.lists(st.integers(0, 4), min_size=rank, max_size=rank))
            arrays.append(np.ones(shape, F32))
    attrs = dict(strides=strides, dilations=dilations,
                 padding=data.draw(st.sampled_from(["SAME", "VALID"])))
    try:
        with budget(1 << 20):
            getattr(gp.raw_ops, op)(**op_inputs(op, arrays), **attrs)
    except (errors.InvalidArgumentError, errors.UnimplementedError,
            errors.ResourceExhaustedError) as e:
        assert "Traceback" not in e.message


_EXTREME = st.sampled_from([-2, -1, 0, 1, 2, 7, 2**31 - 1, 2**40, 2**62])


@settings(max_examples=150, deadline=None)
@given(op=st.sampled_from(sorted(CONV_OPS)), data=st.data())
def test_one_extreme_value_in_a_valid_call_only_raises_typed_errors(op, data):
    """A valid call with one size, stride, dilation, padding or dim made extreme."""
    arrays = [a.copy() for a in _VALID_INPUTS[op]]
    attrs = default_attrs(op, {})
    rank = len(attrs["strides"])
    attrs["dilations"] = [1] * rank
    what = data.draw(st.sampled_from(["sizes", "strides", "dilations", "pads", "dim"]))
    value = data.draw(_EXTREME)
    sizes = CONV_OPS[op].sizes_input
    if what == "sizes" and sizes >= 0:
        vector = arrays[sizes].astype(np.int64)
        vector[data.draw(st.integers(0, len(vector) - 1))] = value
        dtype = np.int64 if op == "Conv3DBackpropInputV2" else np.int32
        arrays[sizes] = vector.clip(np.iinfo(dtype).min, np.iinfo(dtype).max).astype(dtype)
    elif what in ("strides", "dilations"):
        attrs[what][data.draw(st.integers(1, rank - 2))] = value
    elif what == "pads" and CONV_OPS[op].has_explicit:
        pads = [0] * 8
        pads[data.draw(st.integers(2, 5))] = value
        attrs.update(padding="EXPLICIT", explicit_paddings=pads)
    else:
        i = data.draw(st.sampled_from([i for i in range(len(arrays)) if i != sizes]))
        shape = list(arrays[i].shape)
        shape[data.draw(st.integers(0, len(shape) - 1))] = min(max(value, 0), 9)
        arrays[i] = np.ones(shape, F32)
    try:
        with budget(1 << 22):
            getattr(gp.raw_ops, op)(**op_inputs(op, arrays), **attrs)
    except (errors.InvalidArgumentError, errors.UnimplementedError,
            errors.ResourceExhaustedError):
        pass
