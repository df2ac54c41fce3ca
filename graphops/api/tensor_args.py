"""What TF1's array and math wrappers share: the graph a call builds into (None when it
runs eagerly), values turned into tensors there (arrays eagerly), static shapes and
build-time constant values."""

import re

import numpy as np

from graphops.api import raw_ops
from graphops.api.nn_args import building_graph
from graphops.building.constant_op import convert_to_tensor
from graphops.building.tensor import Operation, Tensor, as_graph_element
from graphops.building.values import convert_value, dtype_of
from graphops.runtime.devices import to_host
from graphops.registry import dtypes
from graphops.registry.tensor_shape import TensorShape


def flatten(values):
    """The leaves of nested lists/tuples."""
    for value in values:
        if isinstance(value, (list, tuple)):
            yield from flatten(value)
        else:
            yield value


def graph_of(*values):
    """The graph a wrapper on `values` (nested lists too) builds into: that of a graph
    Tensor or Operation among them, else the entered graph; None: eager."""
    for value in flatten(values):
        element = as_graph_element(value)
        if isinstance(element, (Tensor, Operation)):
            return element.graph
    return building_graph()


def is_symbolic(value):
    """True for a graph Tensor or Operation (or what converts to one)."""
    return isinstance(as_graph_element(value), (Tensor, Operation))


def to_tensor(value, graph, dtype=None, name=None, preferred_dtype=None):
    """`value` as a Tensor of `graph` (a Const for plain values), or as an array when
    `graph` is None (eager)."""
    dtype = None if dtype is None else dtypes.as_dtype(dtype)
    if graph is None:
        return convert_value(value, dtype, preferred_dtype, arrays_are_tensors=True)
    with graph.as_default():
        return convert_to_tensor(value, dtype=dtype, name=name, preferred_dtype=preferred_dtype)


def static_shape(value):
    """The static TensorShape of a Tensor or an array."""
    return value.shape if isinstance(value, Tensor) else TensorShape(list(np.shape(value)))


def constant_value(value):
    """A plain value, an array or a Const Tensor's value as a NumPy array; None when only
    known at run time."""
    element = as_graph_element(value)
    if isinstance(element, Tensor):
        return element.op.get_attr("value") if element.op.type == "Const" else None
    if isinstance(element, Operation):
        return None
    if any(is_symbolic(v) for v in flatten([value])):
        return None
    return np.asarray(to_host(value))


def cast_if_needed(x, dtype, name=None):
    """`x` (converted by TF's rules) as `dtype`: itself when it has that dtype, else a
    Cast."""
    dtype = dtypes.as_dtype(dtype)
    x = convert_value(x)
    if dtype_of(x) is dtype:
        return x
    return raw_ops.Cast(x=x, DstT=dtype, name=name)


def snake_case(op_type):
    """An op type's snake_case name ("LogicalAnd" -> "logical_and")."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", op_type).lower()


def unary_wrapper(op_type, doc):
    """TF's plain wrapper of a one-input op: `snake_name(x, name=None)`."""
    def wrapper(x, name=None):
        return getattr(raw_ops, op_type)(x=x, name=name)
    wrapper.__doc__ = doc
    wrapper.__name__ = wrapper.__qualname__ = snake_case(op_type)
    return wrapper


def binary_wrapper(op_type, doc):
    """TF's plain wrapper of a two-input op: `snake_name(x, y, name=None)`."""
    def wrapper(x, y, name=None):
        return getattr(raw_ops, op_type)(x=x, y=y, name=name)
    wrapper.__doc__ = doc
    wrapper.__name__ = wrapper.__qualname__ = snake_case(op_type)
    return wrapper


def autopack(value):
    """TF's auto-packing of a (nested) list holding graph tensors: one Pack per level, the
    Python numbers converted to the first tensor's dtype; other values as they are."""
    if not isinstance(value, (list, tuple)) or not any(map(is_symbolic, flatten(value))):
        return value
    dtype = next(as_graph_element(v).dtype for v in flatten(value) if is_symbolic(v))
    items = [autopack(v) if isinstance(v, (list, tuple)) else
             v if is_symbolic(v) else np.asarray(v, dtype.np_dtype) for v in value]
    return raw_ops.Pack(values=items, name="packed")
