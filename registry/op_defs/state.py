"""Resource-variable ops (TF's resource_variable_ops.cc): handles, reads and assignments."""

from graphops.registry.op_registry import register_op
from graphops.registry.shape_inference import scalar_shape
from graphops.registry.tensor_shape import unknown_shape


def _handle_scalar(c):
    c.with_rank(c.input(0), 0)


def _handle_shape(c):
    """A scalar handle declaring the variable's ``shape`` (TF's handle data)."""
    c.set_output(0, [])
    c.set_output_handle_shape(0, c.get_attr("shape"))


def _assign_shape(c):
    """TF's CreateAssignShapeFn: the value's shape merges with the one the handle declares."""
    _handle_scalar(c)
    c.merge(c.input_handle_shape(0), c.input(1))


def _read_shape(c):
    """The shape the handle declares (unknown where it declares none)."""
    _handle_scalar(c)
    c.set_output(0, c.input_handle_shape(0))


register_op("VarHandleOp") \
    .output("resource: resource") \
    .attr("container: string = ''") \
    .attr("shared_name: string = ''") \
    .attr("debug_name: string = ''") \
    .attr("dtype: type") \
    .attr("shape: shape") \
    .attr("allowed_devices: list(string) = []") \
    .set_is_stateful() \
    .set_shape_fn(_handle_shape) \
    .doc("Creates a handle to a Variable resource named by `shared_name` (else the node name).")

register_op("ReadVariableOp") \
    .input("resource: resource") \
    .output("value: dtype") \
    .attr("dtype: type") \
    .set_is_stateful() \
    .set_shape_fn(_read_shape) \
    .doc("Reads the value of a variable; the result is a copy, never the stored buffer.")

register_op("AssignVariableOp") \
    .input("resource: resource") \
    .input("value: dtype") \
    .attr("dtype: type") \
    .attr("validate_shape: bool = false") \
    .set_is_stateful() \
    .set_shape_fn(_assign_shape) \
    .doc("Assigns a new value to a variable (creating its storage on first use).")

register_op("DisableCopyOnRead") \
    .input("resource: resource") \
    .set_is_stateful() \
    .set_shape_fn(_handle_scalar) \
    .doc("Turns off copy-on-read for a variable (TF's save functions run it before reading); "
         "reads here never copy, so it only checks that the variable exists.")

register_op("AssignAddVariableOp") \
    .input("resource: resource") \
    .input("value: dtype") \
    .attr("dtype: type") \
    .set_is_stateful() \
    .set_shape_fn(_assign_shape) \
    .doc("Adds a value to the current value of a variable.")

register_op("AssignSubVariableOp") \
    .input("resource: resource") \
    .input("value: dtype") \
    .attr("dtype: type") \
    .set_is_stateful() \
    .set_shape_fn(_assign_shape) \
    .doc("Subtracts a value from the current value of a variable.")

register_op("VarIsInitializedOp") \
    .input("resource: resource") \
    .output("is_initialized: bool") \
    .set_is_stateful() \
    .set_shape_fn(scalar_shape) \
    .doc("Checks whether a resource handle-based variable has been initialized.")


def _variable_shape(c):
    """A vector: the handle carries no static shape here, so its length is unknown."""
    _handle_scalar(c)
    c.set_output(0, unknown_shape(1))


register_op("VariableShape") \
    .input("input: resource") \
    .output("output: out_type") \
    .attr("out_type: {int32, int64} = DT_INT32") \
    .set_is_stateful() \
    .set_shape_fn(_variable_shape) \
    .doc("Returns the shape of the variable pointed to by `resource`.")
