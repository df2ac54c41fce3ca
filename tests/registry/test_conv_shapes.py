"""Conv arithmetic (registry.conv_shapes) and the conv ops' shape functions."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import graphops.registry  # noqa: F401  (registers the ops)
from graphops.registry import errors
from graphops.registry.conv_shapes import (check_valid_padding, conv_params, windowed_output_dim,
                                           windowed_output_size)
from graphops.registry.op_registry import get_op_def
from graphops.registry.shape_inference import run_shape_fn
from graphops.registry.tensor_shape import TensorShape
from tests.reference_conv import output_size as ref_output_size

IAE = errors.InvalidArgumentError


def _brute_force_valid(in_size, k, d, s, before, after):
    """Number of window starts o*s (o >= 0) whose dilated window fits the padded input."""
    eff = (k - 1) * d + 1
    return sum(1 for o in range(in_size + before + after + 1)
               if o * s + eff <= in_size + before + after)


# ----------------------------------------------------------------------------- arithmetic


@pytest.mark.parametrize("args, expected", [
    ((5, 3, 1, 1, "VALID"), (3, 0, 0)),
    ((5, 3, 1, 2, "SAME"), (3, 1, 1)),
    ((4, 3, 1, 2, "SAME"), (2, 0, 1)),       # odd total padding: the extra one goes after
    ((6, 3, 2, 1, "SAME"), (6, 2, 2)),       # eff = 5
    ((2, 3, 1, 2, "VALID"), (0, 0, 0)),      # C++ truncation: (2-3+2)/2 == 0, no error
    ((1, 3, 1, 4, "VALID"), (0, 0, 0)),
    ((5, 3, 1, 1, "EXPLICIT", 1, 2), (6, 1, 2)),
    ((0, 1, 1, 1, "SAME"), (0, 0, 0)),
])
def test_windowed_output_size_table(args, expected):
    assert windowed_output_size(*args) == expected


@pytest.mark.parametrize("args, message", [
    ((5, 3, 1, 0, "VALID"), "Stride must be > 0, but got 0"),
    ((5, 3, 1, -2, "SAME"), "Stride must be > 0, but got -2"),
    ((5, 3, 0, 1, "VALID"), "Dilation rate must be >= 1, but got 0"),
    ((1, 3, 1, 1, "VALID"),
     "Computed output size would be negative: -1 [input_size: 1, effective_filter_size: 3, "
     "stride: 1]"),
    ((1, 4, 2, 1, "VALID"),
     "Computed output size would be negative: -5 [input_size: 1, effective_filter_size: 7, "
     "stride: 1]"),
    ((3, 3, 1, 1, "FULL"), "FULL is not an allowed padding type"),
])
def test_windowed_output_size_errors(args, message):
    with pytest.raises(IAE) as e:
        windowed_output_size(*args)
    assert e.value.message == message


@settings(max_examples=300, deadline=None)
@given(in_size=st.integers(0, 30), k=st.integers(1, 7), d=st.integers(1, 4),
       s=st.integers(1, 6), before=st.integers(0, 5), after=st.integers(0, 5),
       padding=st.sampled_from(["VALID", "SAME", "EXPLICIT"]))
def test_windowed_output_size_matches_window_count(in_size, k, d, s, before, after, padding):
    eff = (k - 1) * d + 1
    try:
        out, pb, pa = windowed_output_size(in_size, k, d, s, padding, before, after)
    except IAE:
        assert padding != "SAME"
        span = in_size + (before + after if padding == "EXPLICIT" else 0) - eff
        assert span + s <= -s   # C++ truncation only goes negative this far down
        return
    if padding == "SAME":
        assert out == -(-in_size // s)
        assert pa - pb in (0, 1) and min(pb, pa) >= 0
        if out:
            assert (out - 1) * s + eff <= in_size + pb + pa
            assert max(0, (out - 1) * s + eff - in_size) == pb + pa
    else:
        if padding == "VALID":
            before = after = 0
        assert (pb, pa) == (before, after)
        assert out == _brute_force_valid(in_size, k, d, s, before, after)
        assert out == ref_output_size(in_size, k, s, d, before, after)


def test_windowed_output_dim_is_symbolic():
    assert windowed_output_dim(None, 3, 1, 1, "VALID") is None
    assert windowed_output_dim(7, None, 1, 1, "VALID") is None
    assert windowed_output_dim(None, 3, 1, 2, "SAME") is None
    assert windowed_output_dim(7, None, 1, 2, "SAME") == 4
    assert windowed_output_dim(7, 3, 2, 2, "EXPLICIT", 1, 0) == 2
    assert windowed_output_dim(3, 3, 1, 1, "VALID") == 1


@pytest.mark.parametrize("args, message", [
    ((2, 3, 1, 2, "VALID"), "Negative dimension size caused by subtracting 3 from 2"),
    ((2, 3, 2, 1, "EXPLICIT", 1, 1), "Negative dimension size caused by subtracting 5 from 4"),
    ((2, 0, 2, 1, "VALID"), "Negative dimension size caused by subtracting 1 from 0"),
    ((2, 3, 1, 0, "SAME"), "Stride must be > 0, but got 0"),
    ((None, 3, 0, 1, "VALID"), "Dilation rate must be >= 1, but got 0"),
])
def test_windowed_output_dim_errors(args, message):
    with pytest.raises(IAE) as e:
        windowed_output_dim(*args)
    assert e.value.message == message


@pytest.mark.parametrize("padding, explicit, fmt, message", [
    ("EXPLICIT", [0] * 6, "NHWC", "explicit_paddings attribute must contain 8 values, but got: 6"),
    ("EXPLICIT", [0, 0, -1, 0, 0, 0, 0, 0], "NHWC",
     "All elements of explicit_paddings must be nonnegative"),
    ("EXPLICIT", [0, 0, 1, 1, 1, 1, 0, 1], "NHWC",
     "Nonzero explicit padding in the batch or depth dimensions is not supported"),
    ("EXPLICIT", [0, 0, 1, 0, 1, 1, 1, 1], "NCHW",
     "Nonzero explicit padding in the batch or depth dimensions is not supported"),
    ("EXPLICIT", [1, 0, 0, 0, 1, 1, 1, 1], "NCHW",
     "Nonzero explicit padding in the batch or depth dimensions is not supported"),
    ("SAME", [0] * 8, "NHWC",
     "explicit_paddings attribute must be empty if the padding attribute is not EXPLICIT"),
])
def test_check_valid_padding_errors(padding, explicit, fmt, message):
    with pytest.raises(IAE) as e:
        check_valid_padding(padding, explicit, 4, fmt)
    assert e.value.message == message


def test_check_valid_padding_accepts_spatial_padding():
    check_valid_padding("EXPLICIT", [0, 0, 1, 2, 3, 4, 0, 0], 4, "NHWC")
    check_valid_padding("EXPLICIT", [0, 0, 0, 0, 1, 2, 3, 4], 4, "NCHW")
    check_valid_padding("VALID", [], 5, "NDHWC")


# ----------------------------------------------------------------------------- attr rules


def _attrs(op, **overrides):
    op_def = get_op_def(op)
    attrs = {a.name: a.default_value for a in op_def.attr if a.has_default}
    attrs.update(overrides)
    return attrs


@pytest.mark.parametrize("op, attrs, cls, message", [
    ("Conv2D", dict(strides=[1, 1, 1]), IAE,
     "Sliding window strides field must specify 4 dimensions"),
    ("Conv2D", dict(dilations=[1, 1, 1, 1, 1]), IAE,
     "Sliding window dilations field must specify 4 dimensions"),
    ("Conv2D", dict(strides=[2, 1, 1, 1]), errors.UnimplementedError,
     "Current implementation does not yet support strides in the batch and depth dimensions."),
    ("Conv2D", dict(strides=[1, 2, 1, 1], data_format="NCHW"), errors.UnimplementedError,
     "Current implementation does not yet support strides in the batch and depth dimensions."),
    ("Conv2D", dict(strides=[1, 0, 1, 1]), IAE, "Row and column strides should be larger than 0."),
    ("Conv2D", dict(dilations=[1, 1, 1, 2]), errors.UnimplementedError,
     "Current implementation does not yet support dilations in the batch and depth dimensions."),
    ("Conv2D", dict(dilations=[1, 1, -1, 1]), IAE, "Dilated rates should be larger than 0."),
    ("Conv2DBackpropInput", dict(strides=[1, 1, 1, 2]), errors.UnimplementedError,
     "Current implementation does not yet support strides in the batch and depth dimensions."),
    ("Conv2DBackpropFilter", dict(strides=[1, 1, 1, 2]), IAE,
     "Current implementation does not yet support strides in the batch and depth dimensions."),
    ("Conv2DBackpropFilter", dict(dilations=[3, 1, 1, 1]), IAE,
     "Current implementation does not yet support dilations in the batch and depth dimensions."),
    ("Conv3D", dict(strides=[1, 1, 1, 1, 1, 1]), IAE,
     "Sliding window strides field must specify 5 dimensions"),
    ("Conv3D", dict(strides=[1] * 5, dilations=[1] * 4), IAE,
     "Dilation rates field must specify 5 dimensions"),
    ("Conv3DBackpropInputV2", dict(strides=[1, 1, 1, 1, 2]), IAE,
     "Current implementation does not yet support strides in the batch and depth dimensions."),
    ("Conv3DBackpropFilter", dict(strides=[1] * 5, dilations=[1, 1, 1, 1, 2]), IAE,
     "Current implementation does not yet support dilation rates in the batch and depth "
     "dimensions."),
    ("Conv3D", dict(strides=[1, 1, 0, 1, 1]), IAE, "Spatial strides should be larger than 0."),
    ("Conv3D", dict(strides=[1] * 5, dilations=[1, 1, 1, 0, 1]), IAE,
     "Dilated rates should be larger than 0."),
    ("DepthwiseConv2dNative", dict(strides=[1, 1, 1, 1, 1]), IAE,
     "Sliding window strides field must specify 4 dimensions"),
    ("DepthwiseConv2dNativeBackpropFilter", dict(strides=[1, 1, 1, 2]), IAE,
     "Current implementation does not yet support strides in the batch and depth dimensions."),
    ("DepthwiseConv2dNativeBackpropInput", dict(dilations=[1, 0, 1, 1]), IAE,
     "Dilated rates should be larger than 0."),
    ("Conv2D", dict(padding="EXPLICIT", explicit_paddings=[0, 0, 1, 1]), IAE,
     "explicit_paddings attribute must contain 8 values, but got: 4"),
    ("DepthwiseConv2dNative", dict(padding="VALID", explicit_paddings=[0] * 8), IAE,
     "explicit_paddings attribute must be empty if the padding attribute is not EXPLICIT"),
])
def test_conv_params_errors(op, attrs, cls, message):
    attrs = _attrs(op, **{"strides": [1] * (5 if "3D" in op else 4), "padding": "VALID", **attrs})
    with pytest.raises(cls) as e:
        conv_params(op, attrs.__getitem__)
    assert type(e.value) is cls and e.value.message == message


def test_conv_params_reduce_to_spatial_dims():
    p = conv_params("Conv2D", _attrs("Conv2D", strides=[1, 1, 2, 3], dilations=[1, 1, 4, 5],
                                     padding="EXPLICIT", data_format="NCHW",
                                     explicit_paddings=[0, 0, 0, 0, 1, 2, 3, 4]).__getitem__)
    assert (p.strides, p.dilations, p.explicit_pads, p.channels_last) == \
        ((2, 3), (4, 5), ((1, 2), (3, 4)), False)
    p = conv_params("Conv3DBackpropInput",
                    _attrs("Conv3DBackpropInput", strides=[1, 2, 3, 4, 1], padding="SAME").get)
    assert (p.data_format, p.strides, p.dilations) == ("NDHWC", (2, 3, 4), (1, 1, 1))
    # TF's CPU kernels refuse these; graphops computes them.
    conv_params("DepthwiseConv2dNative", _attrs("DepthwiseConv2dNative", strides=[1, 1, 2, 1],
                                                dilations=[1, 2, 3, 1], padding="SAME").get)


# ----------------------------------------------------------------------------- shape fns


def infer(op, shapes, values=None, **attrs):
    """Runs ``op``'s shape function; returns its output shape as a list (or None)."""
    rank = 5 if "3D" in op else 4
    attrs = _attrs(op, **{"strides": [1] * rank, "padding": "VALID", **attrs})
    values = values or [None] * len(shapes)
    values = [None if v is None else np.asarray(v, np.int32) for v in values]
    out, = run_shape_fn(get_op_def(op), "node", [TensorShape(s) for s in shapes], values,
                        attrs, 1)
    return out.dims


def infer_error(op, shapes, values=None, **attrs):
    with pytest.raises(IAE) as e:
        infer(op, shapes, values, **attrs)
    return e.value.message


@pytest.mark.parametrize("op, shapes, attrs, expected", [
    ("Conv2D", [[2, 7, 9, 3], [3, 3, 3, 8]], {}, [2, 5, 7, 8]),
    ("Conv2D", [[2, 7, 9, 3], [3, 3, 3, 8]], dict(padding="SAME", strides=[1, 2, 3, 1]),
     [2, 4, 3, 8]),
    ("Conv2D", [[2, 3, 7, 9], [3, 3, 3, 8]], dict(data_format="NCHW", dilations=[1, 1, 2, 3]),
     [2, 8, 3, 3]),
    ("Conv2D", [[2, 7, 9, 6], [3, 3, 2, 9]], {}, [2, 5, 7, 9]),           # 3 groups
    ("Conv2D", [[None, 7, None, 3], [3, 3, 3, 8]], {}, [None, 5, None, 8]),
    ("Conv2D", [None, [3, 3, 3, 8]], {}, [None, None, None, 8]),
    ("Conv2D", [[2, 7, 9, 3], None], {}, [2, None, None, None]),
    ("Conv2D", [[1, 5, 5, 1], [3, 3, 1, 1]],
     dict(padding="EXPLICIT", explicit_paddings=[0, 0, 1, 2, 0, 3, 0, 0]), [1, 6, 6, 1]),
    ("Conv3D", [[1, 6, 7, 8, 2], [2, 3, 4, 2, 5]], {}, [1, 5, 5, 5, 5]),
    ("Conv3D", [[1, 2, 6, 7, 8], [1, 1, 1, 2, 5]],
     dict(data_format="NCDHW", strides=[1, 1, 2, 3, 4], padding="SAME"), [1, 5, 3, 3, 2]),
    # H and W dilations stay in place (TF's Conv3DShape swaps them).
    ("Conv3D", [[1, 9, 9, 9, 1], [3, 3, 3, 1, 1]], dict(dilations=[1, 1, 2, 3, 1]),
     [1, 7, 5, 3, 1]),
    ("DepthwiseConv2dNative", [[2, 7, 9, 3], [3, 3, 3, 4]], {}, [2, 5, 7, 12]),
    ("DepthwiseConv2dNative", [[2, 3, 7, 9], [3, 3, 3, 4]],
     dict(data_format="NCHW", dilations=[1, 1, 2, 2], padding="SAME"), [2, 12, 7, 9]),
    ("DepthwiseConv2dNative", [[2, 7, 9, None], [3, 3, 3, 1]], {}, [2, 5, 7, 3]),
    ("DepthwiseConv2dNative", [[2, 7, 9, 3], [3, 3, None, None]], {}, [2, 5, 7, None]),
])
def test_forward_shape_fns(op, shapes, attrs, expected):
    assert infer(op, shapes, **attrs) == expected


@pytest.mark.parametrize("op, shapes, attrs, message", [
    ("Conv2D", [[1, 5, 5], [3, 3, 3, 8]], {}, "Shape must be rank 4 but is rank 3"),
    ("Conv2D", [[1, 5, 5, 3], [3, 3, 3, 8]], dict(dilations=[1, 1, 1]),
     "Conv2D requires the dilation attribute to contain 4 values, but got: 3"),
    ("Conv2D", [[1, 5, 5, 3], [3, 3, 3, 8]], dict(strides=[1, 1], data_format="NCHW"),
     "Conv2D on data format NCHW requires the stride attribute to contain 4 values, but got: 2"),
    ("Conv2D", [[1, 5, 5, 3], [3, 3, 0, 8]], {}, "Depth of filter must not be 0"),
    ("Conv2D", [[1, 5, 5, 5], [3, 3, 2, 8]], {},
     "Depth of input (5) is not a multiple of input depth of filter (2)"),
    ("Conv2D", [[1, 5, 5, 6], [3, 3, 2, 8]], {},
     "Depth of output (8) is not a multiple of the number of groups (3)"),
    ("Conv2D", [[1, 5, 5, 3], [3, 3, 3, 8]], dict(strides=[1, 0, 1, 1]),
     "Stride must be > 0, but got 0"),
    ("Conv2D", [[1, 2, 5, 3], [3, 3, 3, 8]], {},
     "Negative dimension size caused by subtracting 3 from 2"),
    ("Conv2D", [[1, 5, 5, 3], [3, 3, 3, 8]],
     dict(padding="EXPLICIT", explicit_paddings=[0, 0, 1, 1, 1, 1, 1, 0]),
     "Nonzero explicit padding in the batch or depth dimensions is not supported"),
    # kernel checks, run at build time
    ("Conv2D", [[1, 5, 5, 3], [3, 3, 3, 8]], dict(strides=[1, 1, 1, 2]),
     "Current implementation does not yet support strides in the batch and depth dimensions."),
    ("Conv2D", [[1, 5, 5, 3], [3, 0, 3, 8]], {},
     "filter must not have zero elements (i.e. all dimensions must be non-zero)"),
    ("Conv3D", [[1, 5, 5, 5, 3], [3, 3, 3, 3, 8]], dict(strides=[1, 1, 1, 1]),
     "Conv3D requires the stride attribute to contain 5 values, but got: 4"),
    ("Conv3D", [[1, 5, 5, 5, 3], [3, 3, 3, 3, 8]], dict(dilations=[1, 1, 1, 1, 1, 1]),
     "Conv3D requires the dilation attribute to contain 5 values, but got: 6"),
    ("Conv3D", [[1, 5, 5, 5, 4], [3, 3, 3, 3, 8]], {},
     "Depth of input (4) is not a multiple of input depth of filter (3)"),
    ("Conv3D", [[1, 5, 5, 5, 3], [3, 3, 3, 3, 8]], dict(dilations=[2, 1, 1, 1, 1]),
     "Current implementation does not yet support dilation rates in the batch and depth "
     "dimensions."),
    ("Conv3D", [[1, 5, 5, 5, 3], [0, 3, 3, 3, 8]], {},
     "filter must not have zero elements (i.e. all dimensions must be non-zero)"),
    ("DepthwiseConv2dNative", [[1, 5, 5, 3], [3, 3, 2, 2]], {},
     "Dimensions must be equal, but are 3 and 2"),
    ("DepthwiseConv2dNative", [[1, 5, 5, 3], [3, 3, 3, 2]], dict(strides=[1, 1, 1]),
     "DepthwiseConv2D requires the stride attribute to contain 4 values, but got: 3"),
    ("DepthwiseConv2dNative", [[1, 5, 5, 3], [3, 3, 3, 2]], dict(dilations=[1, 1]),
     "DepthwiseConv2D requires the dilations attribute to contain 4 values, but got: 2"),
    ("DepthwiseConv2dNative", [[1, 5, 5, 3], [3, 3, 3, 2]], dict(strides=[1, 1, 1, 3]),
     "Current implementation does not yet support strides in the batch and depth dimensions."),
])
def test_forward_shape_fn_errors(op, shapes, attrs, message):
    assert infer_error(op, shapes, **attrs) == message


def test_conv2d_backprop_input_shape_fn():
    op = "Conv2DBackpropInput"
    shapes = [[4], [3, 3, 2, 5], [2, 3, 3, 5]]
    assert infer(op, shapes, [[2, 5, 5, 2], None, None]) == [2, 5, 5, 2]
    assert infer(op, [[2], [3, 3, 2, 5], [2, 3, 3, 5]], [[5, 5], None, None]) == [2, 5, 5, 2]
    assert infer(op, [[2], [3, 3, 2, 5], [2, 5, 3, 3]], [[5, 5], None, None],
                 data_format="NCHW") == [2, 2, 5, 5]
    assert infer(op, shapes) == [2, None, None, None]
    assert infer(op, [None, [3, 3, 2, 5], [None, 3, 3, 5]]) == [None, None, None, None]
    assert infer(op, [[4], [3, 3, 2, 5], [None, 3, 3, 5]], [[2, -1, 5, 2], None, None]) == \
        [2, None, 5, 2]
    assert infer_error(op, [[3], [3, 3, 2, 5], [2, 3, 3, 5]], [[2, 5, 5], None, None]) == \
        "Conv2DBackpropInput requires input_sizes to contain 4 values or 2 values, but got: 3"
    assert infer_error(op, shapes, [[3, 5, 5, 2], None, None]) == \
        "Dimensions must be equal, but are 3 and 2"
    assert infer_error(op, [[4], [3, 3, 2, 4], [2, 3, 3, 5]]) == \
        "Dimensions must be equal, but are 5 and 4"
    assert infer_error(op, [[2, 2], [3, 3, 2, 5], [2, 3, 3, 5]]) == \
        "Shape must be rank 1 but is rank 2"
    assert infer_error(op, shapes, [[2, -2, 5, 2], None, None]) == \
        "Invalid value in tensor used for shape: -2"
    # the kernel's consistency check, at build time
    assert infer_error(op, shapes, [[2, 6, 5, 2], None, None]) == (
        "Conv2DCustomBackpropInput: Size of out_backprop doesn't match computed: actual = 3, "
        "computed = 4 spatial_dim: 1 input: 6 filter: 3 output: 3 stride: 1 dilation: 1")


@pytest.mark.parametrize("op, shapes, values, rank, expected", [
    ("Conv2DBackpropFilter", [[2, 5, 5, 2], [4], [2, 3, 3, 5]], [None, [3, 3, 2, 5], None], 4,
     [3, 3, 2, 5]),
    ("Conv2DBackpropFilter", [[2, 5, 5, 2], [4], [2, 3, 3, 5]], None, 4, [None] * 4),
    ("Conv2DBackpropFilter", [[2, 5, 5, 2], None, [2, 3, 3, 5]], None, 4, [None] * 4),
    ("Conv3DBackpropFilterV2", [[1, 5, 5, 5, 2], [5], [1, 3, 3, 3, 4]],
     [None, [3, 3, 3, 2, 4], None], 5, [3, 3, 3, 2, 4]),
    ("Conv3DBackpropInputV2", [[5], [3, 3, 3, 2, 4], [1, 3, 3, 3, 4]],
     [[1, 5, 5, 5, 2], None, None], 5, [1, 5, 5, 5, 2]),
    ("DepthwiseConv2dNativeBackpropInput", [[4], [3, 3, 2, 3], [1, 3, 3, 6]],
     [[1, 5, 5, 2], None, None], 4, [1, 5, 5, 2]),
    ("DepthwiseConv2dNativeBackpropFilter", [[1, 5, 5, 2], [4], [1, 3, 3, 6]],
     [None, [3, 3, 2, 3], None], 4, [3, 3, 2, 3]),
    ("Conv2DBackpropInputV2", [[2, 5, 5, 2], [3, 3, 2, 5], [2, 3, 3, 5]], None, 4, [2, 5, 5, 2]),
    ("Conv2DBackpropFilterV2", [[2, 5, 5, 2], [3, 3, 2, 5], None], None, 4, [3, 3, 2, 5]),
    ("Conv3DBackpropInput", [None, [3, 3, 3, 2, 4], [1, 3, 3, 3, 4]], None, 5, [None] * 5),
    ("Conv3DBackpropFilter", [[1, 5, 5, 5, 2], [3, 3, 3, 2, 4], [1, 3, 3, 3, 4]], None, 5,
     [3, 3, 3, 2, 4]),
])
def test_backprop_shape_fns(op, shapes, values, rank, expected):
    assert infer(op, shapes, values) == expected


@pytest.mark.parametrize("op, shapes, values, attrs, message", [
    ("Conv2DBackpropFilter", [[2, 5, 5, 2], [3], [2, 3, 3, 5]], None, {},
     "Shape must be rank 4 but is rank 3"),
    ("Conv3DBackpropInputV2", [[4], [3, 3, 3, 2, 4], [1, 3, 3, 3, 4]], None, {},
     "Shape must be rank 5 but is rank 4"),
    ("Conv3DBackpropInput", [[1, 5, 5, 2], [3, 3, 3, 2, 4], [1, 3, 3, 3, 4]], None, {},
     "Shape must be rank 5 but is rank 4"),
    ("Conv2DBackpropFilterV2", [[2, 5, 5, 2], [3, 3, 5], [2, 3, 3, 5]], None, {},
     "Shape must be rank 4 but is rank 3"),
    # the kernels' checks on what is known while building
    ("Conv3DBackpropFilterV2", [[1, 5, 5, 5, 3], [5], [1, 3, 3, 3, 4]],
     [None, [3, 3, 3, 2, 4], None], {},
     "input and filter_sizes must have the same number of channels. Got 3 for input and 2 "
     "for filter_sizes"),
    ("Conv3DBackpropInputV2", [[5], [3, 3, 3, 2, 4], [1, 3, 3, 3, 5]],
     [[1, 5, 5, 5, 2], None, None], {},
     "out_backprop and filter_sizes must have the same number of channels. Got 5 for "
     "out_backprop and 4 for filter_sizes"),
    ("Conv3DBackpropFilterV2", [[1, 5, 5, 5], [5], [1, 3, 3, 3, 4]], None, {},
     "input tensor must have 5 dimensions"),
    ("Conv3DBackpropFilterV2", [[None, 5, 5, 5, 2], [5], [None, 3, 3, 3, 4]],
     [None, [3, 3, 3, 2, 4], None], dict(strides=[1, 2, 1, 1, 1]),
     "Conv3DBackpropFilterOp: Size of out_backprop doesn't match computed: actual = 3, "
     "computed = 2 spatial_dim: 1 input: 5 filter: 3 output: 3 stride: 2 dilation: 1"),
    ("Conv2DBackpropFilter", [[2, 5, 5, 2], [4], [3, 3, 3, 5]], [None, [3, 3, 2, 5], None], {},
     "Conv2DCustomBackpropFilter: input and out_backprop must have the same batch size. "
     "Input batch: 2, outbackprop batch: 3, batch_dim: 0"),
    ("Conv2DBackpropFilter", [[2, 5, 5, 3], [4], [2, 3, 3, 5]], [None, [3, 3, 2, 5], None], {},
     "Conv2DCustomBackpropFilter: input depth must be evenly divisible by filter depth"),
    ("Conv2DBackpropFilter", [[2, 5, 5, 2], [4], [2, 3, 3, 5]], [None, [3, 3, 0, 5], None], {},
     "Conv2DCustomBackpropFilter: filter depth must be strictly greated than zero"),
    ("Conv2DBackpropFilter", [[2, 5, 5, 2], [4], [2, 3, 3, 5]], [None, [3, 3, 2, 4], None], {},
     "Conv2DCustomBackpropFilter: filter and out_backprop must have the same out_depth"),
    ("Conv2DBackpropFilter", [[2, 5, 5, 4], [4], [2, 3, 3, 5]], [None, [3, 3, 2, 5], None], {},
     "output depth must be evenly divisible by number of groups: 5 vs 2"),
    ("Conv2DBackpropFilter", [[2, 5, 5, 2], [4], [2, 3, 3, 5]], [None, [3, 3, 2, 5], None],
     dict(strides=[2, 1, 1, 1]),
     "Current implementation does not yet support strides in the batch and depth dimensions."),
    ("Conv2DBackpropInputV2", [[2, 5, 5, 2], [3, 3, 2, 5], [2, 3, 3, 5]], None,
     dict(strides=[1, 1, 1, 2]),   # UnimplementedError in the kernel, InvalidArgument here
     "Current implementation does not yet support strides in the batch and depth dimensions."),
    ("DepthwiseConv2dNativeBackpropFilter", [[1, 5, 5, 2], [4], [1, 3, 3, 6]],
     [None, [3, 3, 2, 2], None], {},
     "DepthwiseConv2DBackpropFilter: depth_multiplier * in_depth not equal to out_depth"),
    ("DepthwiseConv2dNativeBackpropInput", [[4], [3, 3, 2, 3], [1, 3, 3, 6]],
     [[1, 5, 5, 3], None, None], {},
     "DepthwiseConv2DBackpropInput: input and filter must have the same in_depth"),
    ("DepthwiseConv2dNativeBackpropInput", [[4], [3, 3, 2, 3], [2, 3, 3, 6]],
     [[1, 5, 5, 2], None, None], {},
     "DepthwiseConv2DBackpropInput: input and out_backprop must have the same batch size"),
    ("DepthwiseConv2dNativeBackpropInput", [[4], [3, 3, 2, 3], [1, 3, 4, 6]],
     [[1, 5, 5, 2], None, None], {},
     "DepthwiseConv2DBackpropInput: Number of cols of out_backprop doesn't match computed: "
     "actual = 4, computed = 3"),
    ("DepthwiseConv2dNativeBackpropInput", [[4], [3, 3, 2, 3], [1, 6, 2, 3]],
     [[1, 2, 5, 5], None, None], dict(data_format="NCHW"),
     "DepthwiseConv2DBackpropInput: Number of rows of out_backprop doesn't match computed: "
     "actual = 2, computed = 3"),
    ("DepthwiseConv2dNativeBackpropInput", [[4], [3, 3, 2, 3], [1, 3, 3, 6]],
     [[1, 5, 5, 2], None, None], dict(strides=[1, 0, 1, 1]), "Stride must be > 0, but got 0"),
])
def test_backprop_shape_fn_errors(op, shapes, values, attrs, message):
    assert infer_error(op, shapes, values, **attrs) == message


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_static_shapes_equal_reference_output_shapes(data):
    """Conv2D/DepthwiseConv2dNative shape fns agree with the slow reference's output size."""
    op = data.draw(st.sampled_from(["Conv2D", "DepthwiseConv2dNative"]))
    fmt = data.draw(st.sampled_from(["NHWC", "NCHW"]))
    padding = data.draw(st.sampled_from(["VALID", "SAME", "EXPLICIT"]))
    hw = [data.draw(st.integers(1, 12)) for _ in range(2)]
    k = [data.draw(st.integers(1, 4)) for _ in range(2)]
    s = [data.draw(st.integers(1, 3)) for _ in range(2)]
    d = [data.draw(st.integers(1, 3)) for _ in range(2)]
    pads = [(data.draw(st.integers(0, 3)), data.draw(st.integers(0, 3))) for _ in range(2)]
    spatial = [1, 2] if fmt == "NHWC" else [2, 3]
    x = [2, *hw, 3] if fmt == "NHWC" else [2, 3, *hw]
    strides, dilations, explicit = [1] * 4, [1] * 4, [0] * 8
    for i, dim in enumerate(spatial):
        strides[dim], dilations[dim] = s[i], d[i]
        explicit[2 * dim], explicit[2 * dim + 1] = pads[i]
    attrs = dict(strides=strides, dilations=dilations, padding=padding, data_format=fmt,
                 explicit_paddings=explicit if padding == "EXPLICIT" else [])
    try:
        shape = infer(op, [x, [*k, 3, 2]], **attrs)
    except IAE as e:
        assert e.message.startswith("Negative dimension size")
        return
    out = [shape[dim] for dim in spatial]
    for i in range(2):
        if padding == "SAME":
            assert out[i] == -(-hw[i] // s[i])
        else:
            b, a = pads[i] if padding == "EXPLICIT" else (0, 0)
            assert out[i] == ref_output_size(hw[i], k[i], s[i], d[i], b, a)
    assert shape[0] == 2 and shape[3 if fmt == "NHWC" else 1] == (6 if "Depthwise" in op else 2)
