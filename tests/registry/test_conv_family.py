"""The conv op table (registry.conv_family): the OpDefs agree with it, and the kernels'
host-memory inputs and the gradient registrations are what it says."""

import pytest

import graphops  # noqa: F401  (registers the ops, kernels and gradients)
from graphops.autodiff.gradients import get_gradient_function
from graphops.registry import dtypes
from graphops.registry.conv_family import CONV_OPS, GENERIC_CONV, backprop_ops
from graphops.registry.conv_shapes import CONV_OPS as CONV_SHAPES_OPS
from graphops.registry.kernel_registry import registered_kernels
from graphops.registry.op_registry import get_op_def, list_ops

OPS = sorted(CONV_OPS)
INT_TYPES = {dtypes.int32, dtypes.int64}


def _op(op_type):
    """The little of an Operation that get_gradient_function reads."""
    return type("Op", (), {"type": op_type, "name": op_type})


def test_the_table_holds_exactly_the_registered_conv_ops():
    registered = {n for n in list_ops() if get_op_def(n).module == "graphops.registry.op_defs.conv"}
    assert registered == set(CONV_OPS) | {GENERIC_CONV}     # the generic N-d Conv too
    assert CONV_SHAPES_OPS is CONV_OPS


def test_families():
    forwards = {op for op, info in CONV_OPS.items() if info.kind == "forward"}
    assert {info.family for info in CONV_OPS.values()} == forwards
    for op, info in CONV_OPS.items():
        forward = CONV_OPS[info.family]
        assert (info.num_spatial, info.depthwise) == (forward.num_spatial, forward.depthwise), op
    assert {forward: backprop_ops(forward) for forward in forwards} == {
        "Conv2D": ("Conv2DBackpropInput", "Conv2DBackpropFilter"),
        "Conv3D": ("Conv3DBackpropInputV2", "Conv3DBackpropFilterV2"),
        "DepthwiseConv2dNative": ("DepthwiseConv2dNativeBackpropInput",
                                  "DepthwiseConv2dNativeBackpropFilter"),
    }
    assert CONV_OPS["Conv3DBackpropInput"].family == CONV_OPS["Conv3DBackpropFilter"].family \
        == "Conv3D"


@pytest.mark.parametrize("op", OPS)
def test_op_def_agrees_with_the_table(op):
    info, op_def = CONV_OPS[op], get_op_def(op)
    args = op_def.input_arg
    attrs = {a.name: a for a in op_def.attr}
    if info.kind == "forward":
        assert [a.name for a in args] == ["input", "filter"]
    else:
        assert [a.name for a in args][2] == "out_backprop"
        expected = info.sizes_name or info.kind     # the sizes vector, or a tensor of the shape
        assert args[info.result_input].name == expected
    if info.sizes_name:
        sizes = args[info.sizes_input]
        types = {sizes.type} if sizes.type else set(attrs[sizes.type_attr].allowed_values)
        assert types <= INT_TYPES
    else:
        assert info.sizes_input == -1
        assert all(a.type is None and a.type_attr == "T" for a in args)
    assert len(attrs["dilations"].default_value) == info.num_spatial + 2
    assert ("explicit_paddings" in attrs) == info.has_explicit
    assert ("data_format" in attrs) == info.has_data_format
    assert op.startswith("Depthwise") == info.depthwise


@pytest.mark.parametrize("op", OPS)
def test_kernels_keep_the_sizes_input_in_host_memory(op):
    sizes = CONV_OPS[op].sizes_name
    kdefs = registered_kernels(op)
    assert {k.device_type for k in kdefs} == {"CPU", "GPU"}
    for kdef in kdefs:
        assert kdef.host_memory == ((sizes,) if sizes else ()), kdef


@pytest.mark.parametrize("op", OPS)
def test_gradients_are_registered_as_the_table_says(op):
    if CONV_OPS[op].has_gradient:
        assert get_gradient_function(_op(op)) is not None
    else:
        with pytest.raises(LookupError):
            get_gradient_function(_op(op))
    assert CONV_OPS[op].has_gradient == (op not in {"Conv2DBackpropInputV2",
                                                    "Conv2DBackpropFilterV2"})
