"""Tensor and Operation: the edges and nodes of a Graph.

Both are created only by `Graph._create_op`. A Tensor is `(op, value_index)`, named
"op_name:i". `Tensor.eval` and `Operation.run` (the default session) come from
`graphops.client.default_session`, Tensor's operators from `graphops.api`. Anything with a `_as_graph_element()` method (TF's protocol; the Scope API's op
objects have one) is accepted wherever a Tensor or Operation is expected.
"""

from operator import attrgetter
from types import MappingProxyType

from graphops.registry.errors import InvalidArgumentError
from graphops.registry.tensor_shape import TensorShape, as_shape


def as_graph_element(obj):
    """`obj` itself, or what its `_as_graph_element()` returns (TF's conversion protocol)."""
    convert = getattr(obj, "_as_graph_element", None)
    return convert() if callable(convert) and not isinstance(obj, type) else obj


class Tensor:
    """A symbolic output of an Operation (its + - * / @ and unary - come from `graphops.api`)."""

    __slots__ = ("_op", "_value_index", "_dtype", "_shape", "_inferred_shape",
                 "_handle_shape", "_consumers", "__weakref__")
    __array_ufunc__ = None     # NumPy defers `array + tensor` to Tensor.__radd__

    def __init__(self, op, value_index, dtype, shape):
        self._op = op
        self._value_index = value_index
        self._dtype = dtype
        self._shape = shape if type(shape) is TensorShape else as_shape(shape)
        self._inferred_shape = self._shape   # before any set_shape, a claim no kernel keeps:
        #                                      what a plan may fold shapes from
        self._handle_shape = None            # a resource's: the shape its value has
        self._consumers = []

    op = property(attrgetter("_op"))
    value_index = property(attrgetter("_value_index"))
    dtype = property(attrgetter("_dtype"))
    shape = property(attrgetter("_shape"))
    graph = property(attrgetter("_op._graph"))
    device = property(attrgetter("_op._device"))

    @property
    def name(self):
        return f"{self._op.name}:{self._value_index}"

    def get_shape(self):
        return self._shape

    def set_shape(self, shape):
        """Refines the static shape with a compatible one (as TF1's Tensor.set_shape)."""
        try:
            self._shape = self._shape.merge_with(shape)
        except ValueError:
            raise InvalidArgumentError(f"Tensor's shape {self._shape} is not compatible with "
                                       f"supplied shape {as_shape(shape)}.") from None

    def consumers(self):
        """The Operations that take this tensor as a data input, in creation order."""
        return list(self._consumers)

    def __repr__(self):
        return f"<gp.Tensor '{self.name}' shape={self._shape} dtype={self._dtype.name}>"

    def __str__(self):
        return f'Tensor("{self.name}", shape={self._shape}, dtype={self._dtype.name})'

    def __bool__(self):
        raise TypeError("Using a `gp.Tensor` as a Python `bool` is not allowed. Use `if t is "
                        "not None:` instead of `if t:` to test if a tensor is defined.")

    __hash__ = object.__hash__


def set_handle_shapes(op, handle_shapes):
    """Gives ``op``'s outputs the handle shapes its shape function declared (None: none)."""
    for t, shape in zip(op._outputs, handle_shapes):
        t._handle_shape = shape


class Operation:
    """A node: an op type, canonical attrs, data inputs, control inputs and outputs."""

    __slots__ = ("_graph", "_name", "_op_def", "_attrs", "_inputs", "_control_inputs",
                 "_outputs", "_device", "_traceback", "_id", "__weakref__")

    def __init__(self, graph, name, op_def, attrs, inputs, control_inputs, output_types,
                 output_shapes, traceback, op_id):
        self._graph = graph
        self._name = name
        self._op_def = op_def
        self._attrs = dict(attrs)
        self._inputs = tuple(inputs)
        self._control_inputs = tuple(control_inputs)
        self._outputs = tuple([Tensor(self, i, dtype, output_shapes[i])
                               for i, dtype in enumerate(output_types)])
        self._device = ""
        self._traceback = traceback
        self._id = op_id

    name = property(attrgetter("_name"))
    type = property(attrgetter("_op_def.name"))
    op_def = property(attrgetter("_op_def"))
    attrs = property(lambda self: MappingProxyType(self._attrs))
    inputs = property(attrgetter("_inputs"))
    control_inputs = property(attrgetter("_control_inputs"))
    outputs = property(attrgetter("_outputs"))
    device = property(attrgetter("_device"))
    graph = property(attrgetter("_graph"))

    @property
    def traceback(self):
        """The creation site, as "file:line" strings, innermost user frame last."""
        return [_site_text(code, offset) for code, offset in self._traceback]

    def values(self):
        return self._outputs

    def _update_input(self, index, tensor):
        """Replaces data input `index` by `tensor` of the same dtype (TF's `_update_input`):
        how a TF1 loop's Merge gets its NextIteration input, which exists only after the
        Merge does."""
        old = self._inputs[index]
        if tensor.graph is not self._graph:
            raise InvalidArgumentError(f"{tensor} is not an element of this graph.")
        if tensor.dtype is not old.dtype:
            raise TypeError(f"Input {index} of '{self._name}' is {old.dtype.name}; "
                            f"{tensor.name} is {tensor.dtype.name}")
        with self._graph._lock:
            old._consumers.remove(self)
            tensor._consumers.append(self)
            self._inputs = self._inputs[:index] + (tensor,) + self._inputs[index + 1:]

    def get_attr(self, name):
        try:
            return self._attrs[name]
        except KeyError:
            raise InvalidArgumentError(
                f"Operation '{self._name}' has no attr named '{name}'.") from None

    @property
    def node_def(self):
        """The NodeDef as a dict: name, op, input (with "^ctrl" entries), device, attr."""
        inputs = [t.op.name if t.value_index == 0 else t.name for t in self._inputs]
        inputs += ["^" + op.name for op in self._control_inputs]
        return {"name": self._name, "op": self.type, "input": inputs, "device": self._device,
                "attr": dict(self._attrs)}

    def __repr__(self):
        return f"<gp.Operation '{self._name}' type={self.type}>"


def _site_text(code, offset):
    """"file:line" of the instruction at bytecode `offset` in `code` (as `frame.f_lineno`)."""
    line = next((n for start, end, n in code.co_lines() if start <= offset < end), None)
    return f"{code.co_filename}:{line}"
