"""gp.constant, gp.placeholder and gp.convert_to_tensor: nodes of the default graph made
from values converted by TF's rules (`values`); `constant_value`, what a tensor is known to
hold while building."""

import numpy as np

from graphops.building import graph as graph_lib
from graphops.building.op_builder import build_op
from graphops.building.tensor import Tensor
from graphops.building.values import constant_array, convert_value
from graphops.registry import dtypes
from graphops.registry.tensor_shape import as_shape


def convert_to_tensor(value, dtype=None, name=None, preferred_dtype=None):
    """`value` as a Tensor of the default graph (a Const node for non-tensors)."""
    dtype = None if dtype is None else dtypes.as_dtype(dtype)
    preferred = None if preferred_dtype is None else dtypes.as_dtype(preferred_dtype)
    value = convert_value(value, dtype, preferred)
    if isinstance(value, Tensor):
        return value
    return _const(value, name or "Const")


def _const(array, name):
    return build_op(graph_lib.get_default_graph(), "Const", name=name, value=array,
                    dtype=dtypes.as_dtype(array.dtype))


def constant(value, dtype=None, shape=None, name="Const"):
    """A Const node of the default graph holding `constant_array(value, dtype, shape)`."""
    return _const(constant_array(value, dtype, shape), name)


def placeholder(dtype, shape=None, name=None):
    """A Placeholder of the default graph: a value that must be fed when run."""
    return build_op(graph_lib.get_default_graph(), "Placeholder", name=name,
                    dtype=dtypes.as_dtype(dtype), shape=as_shape(shape))


def constant_value(tensor):
    """The value of `tensor` as a NumPy array when known while building (a Const, or the
    Shape of a tensor of fully known shape), else None."""
    op = tensor.op
    if op.type == "Const":
        return op.get_attr("value")
    if op.type == "Shape" and op.inputs[0].shape.is_fully_defined():
        return np.asarray(op.inputs[0].shape.as_list(), op.get_attr("out_type").np_dtype)
    return None
