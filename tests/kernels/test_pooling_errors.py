"""The pooling ops' errors: shape-function messages at build time, kernel messages (eager
and in a Session, classes and wording as TF's), the memory budget, and hostile attrs, which
must give typed errors only."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import graphops as gp
from graphops.registry import errors, memory
from tests.op_runners import make_runner, raises

R = gp.raw_ops


def _ph(shape, dtype=gp.float32):
    return gp.placeholder(dtype, shape)


BUILD_ERRORS = [
    ("MaxPool", {"input": [1, 4, 4, 2]}, {"ksize": [1, 2, 2, 1, 1], "strides": [1] * 4},
     "MaxPool requires the ksize attribute to contain 4 values, but got: 5"),
    ("MaxPool", {"input": [1, 4, 4, 2]}, {"ksize": [1, 2, 2, 1], "strides": [1] * 5},
     "MaxPool requires the stride attribute to contain 4 values, but got: 5"),
    ("AvgPool", {"value": [1, 4, 4, 2]}, {"ksize": [1, 2, 2, 1, 1], "strides": [1] * 4},
     "AvgPool requires the ksize attribute to contain 4 values, but got: 5"),
    ("MaxPool3D", {"input": [1, 4, 4, 4, 2]}, {"ksize": [1] * 6, "strides": [1] * 5},
     "Pool3D requires the ksize attribute to contain 5 values, but got: 6"),
    ("AvgPool3D", {"input": [1, 4, 4, 4, 2]}, {"ksize": [1] * 5, "strides": [1] * 6},
     "Pool3D ops require the stride attribute to contain 5 values, but got: 6"),
    ("MaxPool", {"input": [4, 4, 2]}, {"ksize": [1, 2, 2, 1], "strides": [1] * 4},
     "Shape must be rank 4 but is rank 3"),
    ("MaxPool", {"input": [1, 4, 4, 2]}, {"ksize": [1, 5, 2, 1], "strides": [1] * 4},
     "Negative dimension size caused by subtracting 5 from 4"),
    ("MaxPool", {"input": [1, 4, 4, 2]}, {"ksize": [1, 2, 2, 1], "strides": [1, 0, 1, 1]},
     "Stride must be > 0, but got 0"),
    ("MaxPool", {"input": [1, 4, 4, 2]},
     {"ksize": [1, 2, 2, 1], "strides": [1] * 4, "explicit_paddings": [0, 0, 1, 1, 1, 1, 0, 0]},
     "explicit_paddings attribute must be empty if the padding attribute is not EXPLICIT"),
    ("MaxPool", {"input": [1, 4, 4, 2]},
     {"ksize": [1, 2, 2, 1], "strides": [1] * 4, "padding": "EXPLICIT",
      "explicit_paddings": [1, 0, 1, 1, 1, 1, 0, 0]},
     "Nonzero explicit padding in the batch or depth dimensions is not supported"),
    ("MaxPoolWithArgmax", {"input": [1, 4, 4, 2]}, {"ksize": [1, 0, 2, 1], "strides": [1] * 4},
     "ksize must be a positive int32 value, got:0"),
    ("MaxPoolGradGrad", {"orig_input": [1, 4, 4, 2], "orig_output": [1, 4, 4, 2],
                         "grad": [1, 4, 4, 2]},
     {"ksize": [1, 2, 2, 1], "strides": [1, 2, 2, 1]},
     "Dimension 1 in both shapes must be equal, but are 4 and 2. Shapes are [1,4,4,2] and "
     "[1,2,2,2]."),
    ("AvgPoolGrad", {"orig_input_shape": np.int32([1, 4, 4])}, {"ksize": [1] * 4,
                                                                  "strides": [1] * 4},
     "Shape must be rank 4 but is rank 3"),
    ("MaxPoolV2", {"input": [1, 4, 4, 2]}, {"ksize": np.int32([1, 2, 2]),
                                            "strides": np.int32([1] * 4)},
     "Dimension must be 4 but is 3"),
]


@pytest.mark.parametrize("op,inputs,attrs,message", BUILD_ERRORS)
def test_shape_function_errors(op, inputs, attrs, message):
    with gp.Graph().as_default():
        args = {k: v if isinstance(v, np.ndarray) else _ph(v) for k, v in inputs.items()}
        if op == "AvgPoolGrad":
            args["grad"] = _ph(None)
        with raises(errors.InvalidArgumentError, message):
            getattr(R, op)(**args, **{"padding": "VALID", **attrs})


# ----------------------------------------------------------------------------- kernel errors

X = np.ones([1, 4, 4, 2], np.float32)
Y = np.ones([1, 2, 2, 2], np.float32)
X5, Y5 = np.ones([1, 4, 4, 4, 2], np.float32), np.ones([1, 2, 2, 2, 2], np.float32)
K, K5 = [1, 2, 2, 1], [1, 2, 2, 2, 1]
UNIMPLEMENTED, INVALID = errors.UnimplementedError, errors.InvalidArgumentError
KERNEL_ERRORS = [
    ("MaxPool", {"input": X}, {"ksize": [1, 2, 2, 1, 1], "strides": K}, INVALID,
     "Sliding window ksize field must specify 4 dimensions"),
    ("AvgPool", {"value": X}, {"ksize": K, "strides": [1] * 5}, INVALID,
     "Sliding window stride field must specify 4 dimensions"),
    ("MaxPool", {"input": X}, {"ksize": [2, 2, 2, 1], "strides": K}, UNIMPLEMENTED,
     "Pooling is not yet supported on the batch dimension."),
    ("MaxPool", {"input": X}, {"ksize": [1, 2, 2, 2], "strides": K}, UNIMPLEMENTED,
     "MaxPooling supports exactly one of pooling across depth or pooling across "
     "width/height."),
    ("MaxPool", {"input": X}, {"ksize": [1, 1, 1, 2], "strides": [1, 1, 1, 1]}, UNIMPLEMENTED,
     "Depthwise max pooling requires the depth window to equal the depth stride"),
    ("MaxPool", {"input": np.ones([1, 1, 2, 4], np.float32)},
     {"ksize": [1, 1, 1, 3], "strides": [1, 1, 1, 3]}, UNIMPLEMENTED,
     "Depthwise max pooling requires the depth window to evenly divide the input depth"),
    ("AvgPool", {"value": X}, {"ksize": [1, 1, 1, 2], "strides": [1, 1, 1, 2]}, UNIMPLEMENTED,
     "Non-spatial pooling is not yet supported. Volunteers? :)"),
    ("MaxPool", {"input": X}, {"ksize": [1, 0, 2, 1], "strides": K}, INVALID,
     "Sliding window ksize must be positive. The specified or inferred ksize is: 1,0,2,1"),
    ("AvgPool", {"value": X}, {"ksize": [1, -1, 2, 1], "strides": K}, INVALID,
     "ksize must be a positive int32 value, got:-1"),
    ("MaxPool", {"input": X}, {"ksize": K, "strides": [1, -1, 1, 1]}, INVALID,
     "Stride must be > 0, but got -1"),
    ("MaxPool", {"input": X}, {"ksize": [1, 10, 2, 1], "strides": [1] * 4}, INVALID,
     "Computed output size would be negative: -5 [input_size: 4, effective_filter_size: 10, "
     "stride: 1]"),
    ("MaxPool", {"input": X[0]}, {"ksize": K, "strides": K}, INVALID,
     "tensor_in_shape must have 2 spatial dimensions. 3 0"),
    ("MaxPool", {"input": X}, {"ksize": K, "strides": K, "data_format": "NCHW_VECT_C"},
     INVALID, "Default MaxPoolingOp only supports NHWC on device type CPU"),
    ("MaxPool", {"input": X}, {"ksize": K, "strides": [1] * 4, "padding": "EXPLICIT",
                               "explicit_paddings": [0, 0, 2, 0, 0, 0, 0, 0]}, INVALID,
     "Top padding 2 needs to be smaller than the window size 2"),
    ("MaxPool", {"input": X}, {"ksize": K, "strides": [1] * 4, "padding": "EXPLICIT",
                               "explicit_paddings": [0, 0, 1, 0]}, INVALID,
     "explicit_paddings attribute must contain 8 values, but got: 4"),
    ("MaxPoolV2", {"input": X, "ksize": np.int32([1, 2, 2]), "strides": np.int32(K)}, {},
     INVALID, "Sliding window ksize field must specify 4 dimensions"),
    ("MaxPoolV2", {"input": X, "ksize": np.int32([1, 0, 2, 1]), "strides": np.int32(K)}, {},
     INVALID, "Sliding window ksize must be positive."),
    ("MaxPoolV2", {"input": X, "ksize": np.int32([1, 2, 2, 1]), "strides": np.int32(K)},
     {"data_format": "NCHW_VECT_C"}, INVALID,
     "Default MaxPoolingOp only supports NHWC on device type CPU"),
    ("MaxPool3D", {"input": X5}, {"ksize": [1, 2, 2, 2, 2], "strides": [1] * 5}, UNIMPLEMENTED,
     "Pooling is not yet supported on the depth dimension."),
    ("AvgPool3D", {"input": X5}, {"ksize": [1, 0, 2, 2, 1], "strides": [1] * 5}, INVALID,
     "Sliding window ksize field must have non-negative dimensions"),
    ("MaxPool3D", {"input": X}, {"ksize": K5, "strides": K5}, INVALID,
     "tensor_in must be 5-dimensional"),
    ("MaxPoolGrad", {"orig_input": X, "orig_output": Y[0], "grad": Y}, {"ksize": K,
                                                                        "strides": K}, INVALID,
     "tensor_out must be 4-dimensional"),
    ("MaxPoolGrad", {"orig_input": X, "orig_output": X, "grad": Y}, {"ksize": K, "strides": K},
     INVALID, "Expected orig_output shape to be [1,2,2,2], but got [1,4,4,2]"),
    ("MaxPoolGrad", {"orig_input": X, "orig_output": Y, "grad": X}, {"ksize": K, "strides": K},
     INVALID, "Expected grad shape to be [1,2,2,2], but got [1,4,4,2]"),
    ("MaxPoolGrad", {"orig_input": X, "orig_output": Y, "grad": Y},
     {"ksize": [1, 1, 1, 2], "strides": [1, 1, 1, 2]}, UNIMPLEMENTED,
     "MaxPoolingGrad is not yet supported on the depth dimension."),
    ("MaxPoolGradGrad", {"orig_input": X, "orig_output": Y, "grad": X[0]},
     {"ksize": K, "strides": K}, INVALID, "out_grad_backprop must be 4-dimensional"),
    ("MaxPoolGradGrad", {"orig_input": X, "orig_output": Y, "grad": Y},
     {"ksize": K, "strides": K}, INVALID,
     "Expected grad shape to be [1,4,4,2], but got [1,2,2,2]"),
    ("MaxPoolGradGrad", {"orig_input": X, "orig_output": Y, "grad": X},
     {"ksize": [1, 1, 1, 2], "strides": [1, 1, 1, 2]}, UNIMPLEMENTED,
     "MaxPoolingGradGrad is not yet supported on the depth dimension."),
    ("MaxPool3DGradGrad", {"orig_input": X5, "orig_output": Y5, "grad": X5},
     {"ksize": [1, 2, 2, 2, 2], "strides": K5}, UNIMPLEMENTED,
     "MaxPooling3dGradGrad is not yet supported on the depth dimension."),
    ("MaxPool3DGrad", {"orig_input": X5, "orig_output": Y5, "grad": X5},
     {"ksize": K5, "strides": K5}, INVALID,
     "Expected grad shape to be [1,2,2,2,2], but got [1,4,4,4,2]"),
    ("AvgPoolGrad", {"orig_input_shape": np.int32([1, 4, 4]), "grad": Y},
     {"ksize": K, "strides": K}, INVALID, "out_backprop must be 1-dimensional and 4 elements"),
    ("AvgPoolGrad", {"orig_input_shape": np.int32([1, -4, 4, 2]), "grad": Y},
     {"ksize": K, "strides": K}, INVALID, "Expected a non-negative size, got -4"),
    ("AvgPoolGrad", {"orig_input_shape": np.int32([1, 4, 4, 2]), "grad": X},
     {"ksize": K, "strides": K}, INVALID,
     "index * stride must be less than or equal to input size"),
    ("AvgPoolGrad", {"orig_input_shape": np.int32([1, 4, 4, 2]), "grad": Y},
     {"ksize": [1, 1, 1, 2], "strides": [1, 1, 1, 2]}, UNIMPLEMENTED,
     "Non-spatial pooling is not yet supported. Volunteers? :)"),
    ("AvgPool3DGrad", {"orig_input_shape": np.int32([1, 4, 4, 4]), "grad": Y5},
     {"ksize": K5, "strides": K5}, INVALID, "tensor_in must be 1-dimensional and 5 elements"),
    ("AvgPool3DGrad", {"orig_input_shape": np.int32([1, 4, 4, 4, 3]), "grad": Y5},
     {"ksize": K5, "strides": K5}, INVALID,
     "Expected last dimension of tensor_in_shape and out_backprop to match, got 3 and 2"),
    ("MaxPoolWithArgmax", {"input": X[0]}, {"ksize": K, "strides": K}, INVALID,
     "tensor_in must be 4-dimensional (2)"),
    ("MaxPoolGradWithArgmax", {"input": X, "grad": Y, "argmax": np.zeros([1, 2, 2, 1],
                                                                        np.int64)},
     {"ksize": K, "strides": K}, INVALID,
     "Expected argmax shape to be [1,2,2,2], but got [1,2,2,1]"),
]


@pytest.mark.parametrize("op,inputs,attrs,error,message", KERNEL_ERRORS)
def test_kernel_errors(op, inputs, attrs, error, message):
    """Eagerly (no shape function runs), and in a Session where the shape function, which
    sees inputs of unknown shape, lets the node through to its kernel."""
    attrs = {"padding": "VALID", **attrs}
    with raises(error, f"\n{message} [Op:{op}]"):           # the whole message
        make_runner("eager")(op, **inputs, **attrs)
    if "must specify" not in message:       # else the shape function's message comes first
        with raises(error, message):
            make_runner("graph")(op, **inputs, **attrs)


def test_huge_outputs_are_refused_before_allocation(run):
    old = memory.get_memory_budget()
    memory.set_memory_budget(1 << 20)
    try:
        with raises(errors.ResourceExhaustedError, "OOM when allocating"):
            run("AvgPoolGrad", orig_input_shape=np.int32([1, 2**20, 2**10, 1]),
                grad=np.ones([1, 1, 1, 1], np.float32), ksize=[1, 1, 1, 1],
                strides=[1, 2**20, 2**10, 1], padding="VALID")
    finally:
        memory.set_memory_budget(old)


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_hostile_attrs_give_typed_errors(data):
    """Valid-looking calls with odd sizes, strides, windows and pads: a result or a typed
    error, never a NumPy exception."""
    odd = st.sampled_from([-(2**31), -1, 0, 1, 2, 3, 2**31, 2**62])
    op = data.draw(st.sampled_from(["MaxPool", "AvgPool", "MaxPool3D", "MaxPoolWithArgmax",
                                    "AvgPoolGrad", "MaxPoolGrad"]))
    rank = 5 if op == "MaxPool3D" else 4
    shape = [data.draw(st.integers(0, 3)) for _ in range(rank)]
    ksize = [1] + [data.draw(odd) for _ in range(rank - 2)] + [1]
    strides = [1] + [data.draw(odd) for _ in range(rank - 2)] + [1]
    padding = data.draw(st.sampled_from(["SAME", "VALID"]))
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    attrs = {"ksize": ksize, "strides": strides, "padding": padding}
    inputs = {"MaxPool": {"input": x}, "AvgPool": {"value": x}, "MaxPool3D": {"input": x},
              "MaxPoolWithArgmax": {"input": x},
              "AvgPoolGrad": {"orig_input_shape": np.int32(np.abs(shape) * 1000), "grad": x},
              "MaxPoolGrad": {"orig_input": x, "orig_output": x, "grad": x}}[op]
    try:
        getattr(R, op)(**inputs, **attrs)
    except errors.OpError:
        pass


@pytest.mark.parametrize("op, rank", [("AvgPool", 4), ("MaxPool", 4), ("MaxPool3D", 5)])
def test_window_attrs_must_fit_int32_as_tf_reads_them(op, rank):
    arg = "value" if op == "AvgPool" else "input"
    huge = [1, 2**31] + [1] * (rank - 2)
    for attr, other in (("ksize", "strides"), ("strides", "ksize")):
        attrs = {attr: huge, other: [1] * rank, "padding": "SAME"}
        message = f"Attr {attr} has value 2147483648 out of range for an int32"
        with raises(errors.InvalidArgumentError, message):
            make_runner("eager")(op, **{arg: np.ones((1,) * rank, np.float32)}, **attrs)
        with gp.Graph().as_default(), raises(errors.InvalidArgumentError, message):
            getattr(gp.raw_ops, op)(**{arg: gp.placeholder(gp.float32, [1] * rank)}, **attrs)
