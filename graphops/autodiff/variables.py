"""Graph-mode variables (TF1's resource variables): a handle op plus reads and assignments.

The value lives in the Session's ResourceMgr (kernels/state_kernels.py), so each Session has
its own state and must run `initializer` (or `global_variables_initializer()`) first;
reading before that raises FailedPreconditionError naming the variable. Gradients w.r.t. a
Variable flow through its handle, so every read of it contributes.
"""

import re
import threading
import weakref

from graphops.api import raw_ops
from graphops.building.constant_op import convert_to_tensor
from graphops.building.graph import get_default_graph
from graphops.client.session import get_default_session
from registry import dtypes

_lock = threading.Lock()
_collections = weakref.WeakKeyDictionary()   # graph -> list of its Variables


class Variable:
    """A mutable tensor of fixed dtype living across `Session.run` calls.

    `initial_value` may be anything convertible to a tensor, or a callable returning it.
    A Variable converts to a tensor (a read of its value) wherever one is expected and
    supports the arithmetic operators; `sess.run(var)` returns a NumPy copy of its value.
    """

    def __init__(self, initial_value, name=None, trainable=True, dtype=None):
        if initial_value is None:
            raise ValueError("initial_value must be specified.")
        graph = self._graph = get_default_graph()
        dtype = None if dtype is None else dtypes.as_dtype(dtype)
        with graph.as_default(), graph.control_dependencies(None), \
                graph.name_scope(name or "Variable") as scope:      # TF's init_scope
            with graph.name_scope("Initializer"):
                value = initial_value() if callable(initial_value) else initial_value
                self._initial_value = convert_to_tensor(value, dtype=dtype, name="initial_value")
            self._dtype = self._initial_value.dtype
            self._shape = self._initial_value.shape
            self._handle = raw_ops.VarHandleOp(dtype=self._dtype, shape=self._shape,
                                               shared_name=scope[:-1], name=scope)
            with graph.name_scope("IsInitialized"):
                self._is_initialized = raw_ops.VarIsInitializedOp(resource=self._handle)
            with graph.name_scope("Assign") as assign_scope:
                self._initializer = raw_ops.AssignVariableOp(
                    resource=self._handle, value=self._initial_value, name=assign_scope)
            with graph.name_scope("Read"):
                self._graph_element = self._read()
        self._trainable = bool(trainable)
        with _lock:
            _collections.setdefault(graph, []).append(self)

    # ---------------------------------------------------------------- properties

    handle = property(lambda self: self._handle, doc="The resource handle tensor.")
    dtype = property(lambda self: self._dtype)
    shape = property(lambda self: self._shape)
    graph = property(lambda self: self._graph)
    op = property(lambda self: self._handle.op)
    initializer = property(lambda self: self._initializer, doc="The op assigning initial_value.")
    initial_value = property(lambda self: self._initial_value)
    trainable = property(lambda self: self._trainable)

    @property
    def name(self):
        """"Variable:0", TF's name of a variable (its handle tensor)."""
        return self._handle.name

    def get_shape(self):
        return self._shape

    # ---------------------------------------------------------------- reads

    def _read(self):
        with self._graph.as_default():
            value = raw_ops.ReadVariableOp(resource=self._handle, dtype=self._dtype)
        value.set_shape(self._shape)
        return value

    def value(self):
        """A new read of the variable (it runs after any control dependencies in scope)."""
        return self._read()

    def read_value(self):
        """A new read of the variable under a "Read" name scope."""
        with self._graph.name_scope("Read"):
            return self._read()

    def is_initialized(self):
        """A bool tensor: has this Session assigned the variable yet?"""
        return self._is_initialized

    def _as_graph_element(self):
        """What fetching or converting the Variable gives: its first read."""
        return self._graph_element

    # ---------------------------------------------------------------- updates

    def _update(self, op_type, value, read_value, name):
        with self._graph.as_default():
            value = convert_to_tensor(value, dtype=self._dtype)
            update = getattr(raw_ops, op_type)(resource=self._handle, value=value, name=name)
            if not read_value:
                return update
            with self._graph.control_dependencies([update]):
                return self._read()

    def assign(self, value, use_locking=None, name=None, read_value=True):
        """Assigns `value`; returns the new value (a read after the assignment) or the op."""
        return self._update("AssignVariableOp", value, read_value, name)

    def assign_add(self, delta, use_locking=None, name=None, read_value=True):
        return self._update("AssignAddVariableOp", delta, read_value, name)

    def assign_sub(self, delta, use_locking=None, name=None, read_value=True):
        return self._update("AssignSubVariableOp", delta, read_value, name)

    def eval(self, session=None):
        session = session or get_default_session()
        return session.run(self._graph_element)

    def __repr__(self):
        return f"<gp.Variable '{self.name}' shape={self._shape} dtype={self._dtype.name}>"

    __hash__ = object.__hash__


def _forward_to_value(name):
    def method(self, *args):
        return getattr(self.value(), name)(*args)
    method.__name__ = name
    return method


for _name in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__",
              "__truediv__", "__rtruediv__", "__matmul__", "__rmatmul__", "__neg__"):
    setattr(Variable, _name, _forward_to_value(_name))


def global_variables(scope=None, graph=None):
    """The Variables of `graph` (the default graph), optionally those whose name matches
    the regular expression `scope` from its start."""
    graph = graph or get_default_graph()
    with _lock:
        found = list(_collections.get(graph, ()))
    return [v for v in found if scope is None or re.match(scope, v.name)]


def trainable_variables(scope=None, graph=None):
    """The Variables created with `trainable=True`."""
    return [v for v in global_variables(scope, graph) if v.trainable]


def variables_initializer(var_list, name="init"):
    """One op running the initializers of `var_list` (a NoOp when it is empty)."""
    graph = get_default_graph()
    with graph.as_default(), graph.control_dependencies([v.initializer for v in var_list]):
        return raw_ops.NoOp(name=name)


def global_variables_initializer():
    """The op that initialises every Variable of the default graph."""
    return variables_initializer(global_variables(), name="init")
