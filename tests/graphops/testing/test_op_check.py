"""gp.test.check_op: the extension authors' checker, run on our own ops and on broken ones."""

import numpy as np
import pytest

import graphops as gp
from graphops.registry import OpKernel, dtypes, register_kernel, register_op
from graphops.registry.kernel_registry import deregister_kernels
from graphops.registry.op_registry import deregister_op

R = np.random.default_rng(7)


def _r(*shape):
    return R.standard_normal(shape)


CASES = [
    ("Conv2D", {"input": _r(2, 5, 5, 3), "filter": _r(3, 3, 3, 4)},
     {"strides": [1, 2, 1, 1], "padding": "SAME", "dilations": [1, 1, 2, 1]}),
    ("Conv2D", {"input": _r(1, 3, 6, 6), "filter": _r(2, 2, 3, 2)},
     {"strides": [1, 1, 1, 1], "padding": "EXPLICIT", "data_format": "NCHW",
      "explicit_paddings": [0, 0, 0, 0, 1, 0, 0, 2]}),
    ("Conv2DBackpropFilter", {"input": _r(2, 5, 5, 3), "filter_sizes": np.int32([3, 3, 3, 2]),
                              "out_backprop": _r(2, 3, 3, 2)},
     {"strides": [1, 2, 2, 1], "padding": "SAME"}),
    ("Conv3DBackpropFilterV2", {"input": _r(1, 4, 4, 4, 2), "filter_sizes": np.int32([2, 2, 2, 2, 3]),
                                "out_backprop": _r(1, 3, 3, 3, 3)},
     {"strides": [1, 1, 1, 1, 1], "padding": "VALID"}),
    ("Conv3DBackpropInputV2", {"input_sizes": np.int32([1, 4, 4, 4, 2]), "filter": _r(2, 2, 2, 2, 3),
                               "out_backprop": _r(1, 2, 2, 2, 3)},
     {"strides": [1, 2, 2, 2, 1], "padding": "SAME"}),
    ("DepthwiseConv2dNativeBackpropFilter", {"input": _r(2, 6, 6, 3),
                                             "filter_sizes": np.int32([3, 3, 3, 2]),
                                             "out_backprop": _r(2, 3, 3, 6)},
     {"strides": [1, 2, 2, 1], "padding": "SAME"}),
    ("MatMul", {"a": _r(3, 4), "b": _r(2, 4)}, {"transpose_b": True}),
    ("ConcatV2", {"values": [_r(2, 3), _r(2, 1)], "axis": np.int32(1)}, {}),
    ("SparseSoftmaxCrossEntropyWithLogits", {"features": _r(3, 4), "labels": np.int32([0, 3, 1])},
     {}),
]


@pytest.mark.parametrize("op_type, inputs, attrs", CASES, ids=[c[0] for c in CASES])
def test_our_ops_pass_the_checker(op_type, inputs, attrs):
    values = gp.test.check_op(op_type, inputs, attrs)
    assert values and all(np.all(np.isfinite(v)) for v in values)


@pytest.fixture
def broken_op():
    names = []

    def make(name, shape_fn, wrong_grad=False):
        register_op(name).input("x: T").output("y: T").attr("T: {float, double}") \
            .set_shape_fn(shape_fn)

        @register_kernel(name, type_constraints={"T": [dtypes.float32, dtypes.float64]})
        class Twice(OpKernel):
            def compute(self, ctx):
                ctx.set_output(0, ctx.input(0) * 2)

        @gp.RegisterGradient(name)
        def _grad(op, grad):
            return [grad * (3.0 if wrong_grad else 2.0)]

        names.append(name)

    yield make
    for name in names:
        deregister_op(name)
        deregister_kernels(name)


def test_a_correct_custom_op_passes(broken_op):
    broken_op("CheckTwice", lambda c: c.set_output(0, c.input(0)))
    gp.test.check_op("CheckTwice", {"x": _r(2, 3)})


def test_a_lying_shape_function_is_caught(broken_op):
    broken_op("CheckBadShape", lambda c: c.set_output(0, [7]))
    with pytest.raises(AssertionError, match="shape function gave"):
        gp.test.check_op("CheckBadShape", {"x": _r(2, 3)})


def test_a_wrong_gradient_is_caught(broken_op):
    broken_op("CheckBadGrad", lambda c: c.set_output(0, c.input(0)), wrong_grad=True)
    with pytest.raises(AssertionError, match="gradient of .* is off"):
        gp.test.check_op("CheckBadGrad", {"x": _r(2, 3)})
