"""The registry core: dtypes, TensorShape, the spec grammar, op and kernel registries."""

import numpy as np
import pytest
import ml_dtypes

from graphops.registry import dtypes, errors, memory
from graphops.registry.attr_values import normalize_attr_value, validate_attr_value
from graphops.registry.kernel_registry import (OpKernel, deregister_kernels, find_kernel,
                                               kernels_registered_for_op, register_kernel,
                                               supported_device_types)
from graphops.registry.op_def import parse_attr_spec
from graphops.registry.op_registry import deregister_op, get_op_def, list_ops, register_op
from graphops.registry.shape_inference import run_shape_fn
from graphops.registry.tensor_shape import TensorShape, unknown_shape


@pytest.fixture
def op_name(request):
    """A fresh op name, deregistered (op and kernels) after the test."""
    name = "T" + request.node.name.title().replace("_", "").replace("[", "").replace("]", "")[:40]
    yield name
    deregister_op(name)
    deregister_kernels(name)


# ----------------------------------------------------------------------------- dtypes

@pytest.mark.parametrize("value, expected", [
    ("float", dtypes.float32), ("float32", dtypes.float32), ("DT_FLOAT", dtypes.float32),
    ("half", dtypes.float16), ("DT_HALF", dtypes.float16), ("double", dtypes.float64),
    (np.float32, dtypes.float32), (np.dtype("int64"), dtypes.int64),
    (ml_dtypes.bfloat16, dtypes.bfloat16), (np.dtype(ml_dtypes.bfloat16), dtypes.bfloat16),
    (float, dtypes.float64), (int, dtypes.int64), (bool, dtypes.bool_), (np.bool_, dtypes.bool_),
    (1, dtypes.float32), (19, dtypes.float16), (dtypes.int8, dtypes.int8), (str, dtypes.string),
])
def test_as_dtype(value, expected):
    assert dtypes.as_dtype(value) is expected


def test_dtype_names_and_enums_match_tensorflow():
    assert (dtypes.float32.name, dtypes.float32.short_name, dtypes.float32.tf_name) == \
        ("float32", "float", "DT_FLOAT")
    assert (dtypes.half.name, dtypes.half.short_name, dtypes.half.enum) == ("float16", "half", 19)
    assert dtypes.bfloat16.enum == 14 and dtypes.bfloat16.as_numpy_dtype is ml_dtypes.bfloat16
    assert dtypes.double is dtypes.float64 and dtypes.int64.enum == 9 and dtypes.bool_.enum == 10
    assert dtypes.float16.is_floating and dtypes.int32.is_integer and not dtypes.int32.is_floating
    assert dtypes.uint8.max == 255 and dtypes.int8.min == -128


@pytest.mark.parametrize("bad", ["floaty", [1], None, 999, np.dtype("datetime64[s]")])
def test_as_dtype_rejects(bad):
    with pytest.raises(TypeError, match="Cannot convert value"):
        dtypes.as_dtype(bad)


# ----------------------------------------------------------------------------- TensorShape

def test_tensor_shape_basics():
    s = TensorShape([None, 3])
    assert s.rank == 2 and s.as_list() == [None, 3] and not s.is_fully_defined()
    assert str(s) == "(?, 3)" and s.debug_string() == "[?,3]"
    assert s.merge_with([2, None]) == TensorShape([2, 3])
    assert s.is_compatible_with([5, 3]) and not s.is_compatible_with([5, 4])
    assert not s.is_compatible_with([1, 2, 3])
    assert TensorShape(None).rank is None and TensorShape(None).is_compatible_with([1, 2])
    assert TensorShape([2, 3]).num_elements() == 6 and s.num_elements() is None
    assert unknown_shape(2) == TensorShape([None, None]) and TensorShape([]).rank == 0
    with pytest.raises(ValueError):
        TensorShape(None).as_list()
    with pytest.raises(ValueError, match="not compatible"):
        TensorShape([1, 2]).merge_with([1, 3])
    with pytest.raises(TypeError):
        TensorShape(["a"])
    with pytest.raises(ValueError):
        TensorShape([-3])


# ----------------------------------------------------------------------------- spec grammar

def test_parse_attr_spec_forms():
    a = parse_attr_spec("T: {half, bfloat16, float, double, int32}", "Op")
    assert a.type == "type" and a.allowed_values == [dtypes.float16, dtypes.bfloat16,
                                                     dtypes.float32, dtypes.float64, dtypes.int32]
    a = parse_attr_spec("strides: list(int) >= 5", "Op")
    assert (a.type, a.has_minimum, a.minimum, a.has_default) == ("list(int)", True, 5, False)
    a = parse_attr_spec("data_format: { 'NHWC', 'NCHW' } = 'NHWC' ", "Op")
    assert (a.type, a.allowed_values, a.default_value) == ("string", ["NHWC", "NCHW"], "NHWC")
    a = parse_attr_spec("dilations: list(int) = [1, 1, 1, 1]", "Op")
    assert a.default_value == [1, 1, 1, 1]
    assert parse_attr_spec("use_cudnn_on_gpu: bool = true", "Op").default_value is True
    assert parse_attr_spec("Tshape: {int32, int64} = DT_INT32", "Op").default_value is dtypes.int32
    assert parse_attr_spec("explicit_paddings: list(int) = []", "Op").default_value == []
    assert parse_attr_spec("alpha: float = 0.2", "Op").default_value == 0.2
    assert parse_attr_spec("n: int >= -1 = 0", "Op").minimum == -1
    assert parse_attr_spec("s: shape = { unknown_rank: true }", "Op").default_value.rank is None
    a = parse_attr_spec("T: {numbertype, bool}", "Op")
    assert dtypes.bool_ in a.allowed_values and dtypes.complex64 in a.allowed_values
    assert parse_attr_spec("T: realnumbertype", "Op").allowed_values[0] is dtypes.float32


@pytest.mark.parametrize("spec, message", [
    ("x int", "Trouble parsing '<name>:' at 'x int'"),
    ("x: lst(int)", "Trouble parsing type string at 'lst(int)'"),
    ("x: {int33}", "Unrecognized type string 'int33'"),
    ("x: {'A', B}", "Trouble parsing allowed string at 'B'"),
    ("x: list(int", "Expected ) to close 'list(', not: ''"),
    ("x: int >= a", "Could not parse integer lower limit after '>=', found 'a' instead"),
    ("x: int = 'a'", "Could not parse default value ''a''"),
    ("x: list(int) = 1", "Could not parse default value '1'"),
    ("x: int extra", "Extra 'extra' unparsed at the end"),
])
def test_malformed_attr_spec_fails_at_registration(op_name, spec, message):
    with pytest.raises(errors.InvalidArgumentError) as e:
        register_op(op_name).attr(spec)
    assert str(e.value) == f'{message} from Attr("{spec}") for Op {op_name}'


@pytest.mark.parametrize("spec, message", [
    ("X: T", "Trouble parsing 'name:' at 'X: T'"),
    ("x: Ref(T", "Did not find closing ')' for 'Ref(', instead found: ''"),
    ("x: T T", "Extra 'T' unparsed at the end"),
    ("x: 3", "Trouble parsing either a type or an attr name at '3'"),
])
def test_malformed_input_spec(op_name, spec, message):
    with pytest.raises(errors.InvalidArgumentError) as e:
        register_op(op_name).input(spec)
    assert str(e.value) == f'{message} from Input("{spec}") for Op {op_name}'


def test_opdef_cross_references_checked_on_lookup(op_name):
    register_op(op_name).input("x: U").attr("n: int").input("y: n * float").output("z: n")
    with pytest.raises(errors.InvalidArgumentError) as e:
        get_op_def(op_name)
    assert str(e.value).splitlines() == [
        f"Reference to unknown attr 'U' from Input(\"x: U\") for Op {op_name}",
        f"Reference to attr 'n' with type int that isn't type or list(type) "
        f"from Output(\"z: n\") for Op {op_name}"]


def test_opdef_model_and_signature(op_name):
    (register_op(op_name).input("values: N * T").input("axis: Tidx").output("output: T")
     .attr("N: int >= 2").attr("T: type").attr("Tidx: {int32, int64} = DT_INT32")
     .doc("Concatenates.\n\nMore words."))
    op = get_op_def(op_name)
    assert [a.name for a in op.input_arg] == ["values", "axis"]
    assert op.input_arg[0].number_attr == "N" and op.input_arg[0].type_attr == "T"
    assert op.inferred_attrs() == {"N", "T", "Tidx"}
    assert (op.summary, op.description) == ("Concatenates.", "More words.")
    assert op.signature() == (
        f"Op<name={op_name}; signature=values:N*T, axis:Tidx -> output:T; attr=N:int,min=2; "
        "attr=T:type; attr=Tidx:type,default=DT_INT32,allowed=[DT_INT32, DT_INT64]>")


def test_number_attr_gets_implicit_minimum(op_name):
    register_op(op_name).input("x: N * float").attr("N: int")
    assert get_op_def(op_name).attr_def("N").minimum == 1


@pytest.mark.parametrize("builder, message", [
    (lambda b: b.attr("x: int").attr("x: float"), "Duplicate name: x"),
    (lambda b: b.attr("float: int"), "Attr can't have name float that matches a data type"),
    (lambda b: b.attr("p: {'A', 'B'} = 'C'"),
     "Value for attr 'p' of \"C\" is not in the list of allowed values: \"A\", \"B\""),
    (lambda b: b.attr("s: list(int) >= 2 = [1]"),
     "Length for attr 's' of 1 must be at least minimum 2"),
])
def test_invalid_opdefs(op_name, builder, message):
    builder(register_op(op_name))
    with pytest.raises(errors.InvalidArgumentError, match=message.replace("(", r"\(")):
        get_op_def(op_name)


def test_bad_op_name_and_duplicate_registration(op_name):
    register_op("lowercase_op")
    try:
        with pytest.raises(errors.InvalidArgumentError, match=r"Invalid name: lowercase_op \(Did you use CamelCase\?\)"):
            get_op_def("lowercase_op")
    finally:
        deregister_op("lowercase_op")
    register_op(op_name)
    with pytest.raises(errors.AlreadyExistsError, match=f"Op with name {op_name} already registered"):
        register_op(op_name)
    assert op_name in list_ops()


def test_builder_call_twice_errors(op_name):
    b = register_op(op_name).doc("x").deprecated(3, "gone").set_shape_fn(lambda c: None)
    for call, msg in ((lambda: b.doc("y"), "Extra call to Doc()"),
                      (lambda: b.deprecated(4, "x"), "Deprecated called twice"),
                      (lambda: b.set_shape_fn(lambda c: None), "SetShapeFn called twice")):
        with pytest.raises(errors.InvalidArgumentError, match=msg):
            call()
    assert get_op_def(op_name).deprecation.version == 3


def test_unknown_op_lookup():
    with pytest.raises(errors.NotFoundError, match="Op type not registered 'NoSuchOp'"):
        get_op_def("NoSuchOp")


# ----------------------------------------------------------------------------- attr values

def _attr(spec):
    return parse_attr_spec(spec, "Op")


def test_normalize_attr_values():
    assert normalize_attr_value(_attr("s: list(int)"), (1, np.int64(2), 3.0), "Op") == [1, 2, 3]
    assert normalize_attr_value(_attr("t: type"), np.float32, "Op") is dtypes.float32
    assert normalize_attr_value(_attr("d: string = 'x'"), None, "Op") == "x"
    assert normalize_attr_value(_attr("d: string"), b"abc", "Op") == "abc"
    assert normalize_attr_value(_attr("f: float"), 2, "Op") == 2.0
    assert normalize_attr_value(_attr("sh: shape"), [None, 2], "Op") == TensorShape([None, 2])


@pytest.mark.parametrize("spec, value, error, message", [
    ("s: list(int)", 3, TypeError, "Expected list for attr s, obtained int instead."),
    ("i: int", "3", TypeError, "Expected int for argument 'i' not '3'."),
    ("i: int", 2.5, TypeError, "Expected int for argument 'i' not 2.5."),
    ("b: bool", 1, TypeError, "Expected bool for argument 'b' not 1."),
    ("t: type", "flt", TypeError, "Expected DataType for argument 't' not 'flt'."),
    ("f: float", "x", TypeError, "Expected float for argument 'f' not 'x'."),
    ("s: list(int) >= 5", [1, 1], errors.InvalidArgumentError,
     "Attr 's' of 'Op' Op passed list of length 2 less than minimum 5."),
    ("n: int >= 0", -1, errors.InvalidArgumentError, "Attr 'n' of 'Op' Op passed -1 less than minimum 0."),
    ("p: {'SAME', 'VALID'}", "FULL", errors.InvalidArgumentError,
     "Attr 'p' of 'Op' Op passed string 'FULL' not in: \"SAME\", \"VALID\"."),
    ("T: {half, float}", dtypes.int32, TypeError,
     "Value passed to parameter 'T' has DataType int32 not in list of allowed values: float16, float32"),
])
def test_normalize_attr_value_errors(spec, value, error, message):
    with pytest.raises(error) as e:
        normalize_attr_value(_attr(spec), value, "Op")
    assert str(e.value) == message
    if error is errors.InvalidArgumentError:
        assert isinstance(e.value, ValueError)


def test_validate_attr_value_cpp_messages():
    with pytest.raises(errors.InvalidArgumentError) as e:
        validate_attr_value(_attr("T: {half, float}"), dtypes.int32)
    assert str(e.value) == "Value for attr 'T' of int32 is not in the list of allowed values: half, float"
    with pytest.raises(errors.InvalidArgumentError, match="Length for attr 's' of 4 must be at least minimum 5"):
        validate_attr_value(_attr("s: list(int) >= 5"), [1, 1, 1, 1])


# ----------------------------------------------------------------------------- shape fns

def test_run_shape_fn(op_name):
    def shape_fn(c):
        c.set_output(0, c.with_rank(c.input(0), 2))
        c.set_output(1, [c.get_attr("n")])
    register_op(op_name).input("x: float").output("y: float").output("z: int32").attr(
        "n: int").set_shape_fn(shape_fn)
    op = get_op_def(op_name)
    y, z = run_shape_fn(op, "node", [TensorShape(None)], None, {"n": 4}, 2)
    assert y == TensorShape([None, None]) and z == TensorShape([4])
    with pytest.raises(errors.InvalidArgumentError, match="Shape must be rank 2 but is rank 1"):
        run_shape_fn(op, "node", [TensorShape([3])], None, {"n": 4}, 2)


def test_ops_without_shape_fn_have_unknown_outputs(op_name):
    register_op(op_name).input("x: float").output("y: float")
    assert run_shape_fn(get_op_def(op_name), "n", [TensorShape([1])], None, {}, 1)[0].rank is None


# ----------------------------------------------------------------------------- kernels

def _declare(op_name):
    register_op(op_name).input("x: T").output("y: T").attr("T: {int32, float, double}")


def test_kernel_selection_by_constraints_and_priority(op_name):
    _declare(op_name)

    @register_kernel(op_name, device="CPU", type_constraints={"T": [dtypes.float32]})
    class A(OpKernel):
        pass

    @register_kernel(op_name, device="CPU", type_constraints={"T": [dtypes.float32, dtypes.float64]},
                     priority=1)
    class B(OpKernel):
        pass

    @register_kernel(op_name, device="CPU", type_constraints={"T": [dtypes.int32]}, label="fast")
    class C(OpKernel):
        pass

    assert find_kernel(op_name, "CPU", {"T": dtypes.float32}).kernel_class is B
    assert find_kernel(op_name, "CPU", {"T": dtypes.int32}, label="fast").kernel_class is C
    assert supported_device_types(op_name, {"T": dtypes.float64}) == ["CPU"]
    assert supported_device_types(op_name, {"T": dtypes.int32}) == []
    with pytest.raises(errors.NotFoundError) as e:
        find_kernel(op_name, "CPU", {"T": dtypes.int32}, node_name="n1")
    assert str(e.value) == (
        f"No registered '{op_name}' OpKernel for 'CPU' devices compatible with node {{{{node n1}}}}\n"
        "\t (OpKernel was found, but attributes didn't match) Requested Attributes: T=DT_INT32\n"
        "\t.  Registered:  device='CPU'; T in [DT_FLOAT]\n"
        "  device='CPU'; T in [DT_FLOAT, DT_DOUBLE]; priority=1\n"
        "  device='CPU'; label='fast'; T in [DT_INT32]")
    with pytest.raises(errors.NotFoundError, match="for 'GPU' devices"):
        find_kernel(op_name, "GPU", {"T": dtypes.float32})


def test_duplicate_kernel_registration_fails(op_name):
    _declare(op_name)

    @register_kernel(op_name, type_constraints={"T": [dtypes.float32, dtypes.int32]})
    class A(OpKernel):
        pass

    with pytest.raises(errors.AlreadyExistsError, match="Multiple OpKernel registrations match"):
        @register_kernel(op_name, type_constraints={"T": [dtypes.int32]})
        class B(OpKernel):
            pass

    @register_kernel(op_name, type_constraints={"T": [dtypes.float64]})
    class C(OpKernel):   # disjoint constraints: fine
        pass

    assert "T in [DT_DOUBLE]" in kernels_registered_for_op(op_name)
    assert kernels_registered_for_op("NothingHere") == "  <no registered kernels>\n"


def test_attr_constraints_select_kernels(op_name):
    register_op(op_name).input("x: float").output("y: float").attr("fmt: {'A', 'B'} = 'A'")

    @register_kernel(op_name, device="GPU", attr_constraints={"fmt": ["B"]})
    class G(OpKernel):
        pass

    @register_kernel(op_name, device="CPU")
    class Cpu(OpKernel):
        pass

    assert supported_device_types(op_name, {"fmt": "B"}) == ["GPU", "CPU"]
    assert supported_device_types(op_name, {"fmt": "A"}) == ["CPU"]


def test_register_kernel_requires_opkernel_subclass(op_name):
    with pytest.raises(TypeError, match="OpKernel subclass"):
        register_kernel(op_name)(object)


# ----------------------------------------------------------------------------- memory

def test_memory_checks():
    assert memory.checked_num_elements([2, 3]) == 6
    with pytest.raises(errors.InvalidArgumentError, match="Dimension -1 must be >= 0"):
        memory.checked_num_elements([2, -1])
    with pytest.raises(errors.InvalidArgumentError, match="more than 2\\*\\*63 - 1 elements"):
        memory.checked_num_elements([2**40, 2**40])
    with pytest.raises(errors.ResourceExhaustedError, match="OOM when allocating tensor with shape"):
        memory.check_allocation([2**20, 2**20], np.float32)
    old = memory.get_memory_budget()
    memory.set_memory_budget(1000)
    try:
        with pytest.raises(errors.ResourceExhaustedError):
            memory.check_allocation([300], dtypes.float32)
        assert memory.check_allocation([250], dtypes.float32) == 250
    finally:
        memory.set_memory_budget(old)


def test_host_memory_outputs_stay_numpy():
    """A device kernel's host-memory output (a Shape-like result) is never moved; its other
    outputs must be device arrays: a NumPy one is a kernel bug, reported as such."""
    from graphops.testing.simulated_gpu import SimArray, xp
    from graphops.registry.kernel_registry import OpKernelConstruction, OpKernelContext

    op = get_op_def("Identity")
    construction = OpKernelConstruction(op, "n", {"T": dtypes.int32}, [dtypes.int32, dtypes.int32],
                                        [dtypes.int32, dtypes.int32], device_type="GPU",
                                        xp=xp, host_outputs={1})
    ctx = OpKernelContext(construction, [])
    ctx.set_output(0, xp.asarray(np.array([1, 2], np.int32)))
    ctx.set_output(1, np.array([3], np.int32))
    assert type(ctx.outputs[0]) is SimArray and type(ctx.outputs[1]) is np.ndarray
    ctx.set_output(0, np.int32(7))          # a scalar becomes a device array
    assert type(ctx.outputs[0]) is SimArray and int(ctx.outputs[0]) == 7
    with pytest.raises(errors.InternalError, match="produced output 0 of dtype float64"):
        ctx.set_output(0, xp.zeros(2))
    with pytest.raises(errors.InternalError,
                       match="Kernel for Identity on GPU produced output 0 as a NumPy"):
        ctx.set_output(0, np.array([1, 2], np.int32))


def test_gpu_registrations_drop_types_cupy_cannot_hold():
    """On "GPU" a kernel's type attrs are limited to dtypes.GPU_TYPES; a kernel no GPU type
    could match is not registered there at all."""
    from graphops.registry.kernel_registry import deregister_kernels, registered_kernels

    register_op("GpuTypesTest").input("x: T").output("y: T").attr("T: type")

    class Kernel(OpKernel):
        pass

    try:
        register_kernel("GpuTypesTest", ("CPU", "GPU"))(Kernel)
        by_device = {k.device_type: k for k in registered_kernels("GpuTypesTest")}
        assert by_device["CPU"].type_constraints == {}
        assert set(by_device["GPU"].type_constraints["T"]) == set(dtypes.GPU_TYPES)
        assert dtypes.bfloat16 not in dtypes.GPU_TYPES and dtypes.string not in dtypes.GPU_TYPES
        deregister_kernels("GpuTypesTest")
        register_kernel("GpuTypesTest", ("CPU", "GPU"), {"T": [dtypes.bfloat16]})(Kernel)
        assert [k.device_type for k in registered_kernels("GpuTypesTest")] == ["CPU"]
    finally:
        deregister_kernels("GpuTypesTest")
        deregister_op("GpuTypesTest")


def test_aggregate_flag():
    assert get_op_def("AddV2").is_aggregate and get_op_def("AddV2").is_commutative
    assert not get_op_def("Sub").is_aggregate


def test_op_def_records_registering_module(op_name):
    register_op(op_name)
    assert get_op_def(op_name).module == __name__
    assert get_op_def("Conv2D").module == "graphops.registry.op_defs.conv"


def test_inference_context_merge_messages(op_name):
    register_op(op_name).input("x: float").output("y: float")
    from graphops.registry.shape_inference import InferenceContext
    c = InferenceContext(get_op_def(op_name), "n", [TensorShape([2])], None, {}, 1)
    assert c.merge([None, 3], [2, None]) == TensorShape([2, 3])
    assert c.merge_dim(None, 4) == 4
    with pytest.raises(errors.InvalidArgumentError) as e:
        c.merge([2, 3], [2, 4])
    assert str(e.value) == ("Dimension 1 in both shapes must be equal, but are 3 and 4. "
                            "Shapes are [2,3] and [2,4].")
    with pytest.raises(errors.InvalidArgumentError, match="Shapes must be equal rank, but are 1 and 2"):
        c.merge([2], [2, 4])
    with pytest.raises(errors.InvalidArgumentError, match="^Dimensions must be equal, but are 2 and 3$"):
        c.merge_dim(2, 3)


def test_error_classes_by_code():
    assert errors.exception_type_from_error_code(3) is errors.InvalidArgumentError
    assert issubclass(errors.InvalidArgumentError, ValueError)
    assert errors.NotFoundError("x").error_code == errors.NOT_FOUND


def test_the_extension_api_is_exported_from_the_top_package_too():
    import graphops as gp
    from graphops import registry
    from graphops.autodiff.gradients import RegisterGradient
    assert (gp.register_op, gp.register_kernel, gp.OpKernel) == \
        (registry.register_op, registry.register_kernel, registry.OpKernel)
    assert gp.RegisterGradient is RegisterGradient
    assert {"register_op", "register_kernel", "OpKernel", "RegisterGradient"} <= set(gp.__all__)
