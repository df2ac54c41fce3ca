"""Graph-mode variables (TF1's resource variables): a handle op plus reads and assignments.

The value lives in the Session's ResourceMgr (kernels/ops/state.py), so each Session has
its own state and must run `initializer` (or `global_variables_initializer()`) first;
reading before that raises FailedPreconditionError naming the variable. Gradients w.r.t. a
Variable flow through its handle, so every read of it contributes. Variables register in
the graph's collections (`gp.GraphKeys`), which `global_variables()` and friends read.

TF 2.21's `compat.v1` builds these same nodes (VarHandleOp, ...) after
`disable_eager_execution()`. `use_resource=False` (or `variable_scope(use_resource=False)`)
builds TF1's reference variables instead (VariableV2: graphops.training.ref_variable).
"""

import numpy as np

from graphops.api import raw_ops
from graphops.building.constant_op import convert_to_tensor
from graphops.building.graph import get_default_graph
from graphops.building.graph_collections import GraphKeys
from graphops.building.tensor import Tensor
from graphops.client.session import get_default_session
from graphops.training import variable_def_io
from graphops.registry import dtypes
from graphops.registry.tensor_shape import as_shape, unknown_shape


class Variable:
    """A mutable tensor of fixed dtype living across `Session.run` calls (tf.Variable).

    `initial_value` may be anything convertible to a tensor, or a callable returning it.
    A Variable converts to a new read of its value wherever a tensor is expected (so a read
    made inside `control_dependencies` runs after them, as in TF) and supports the
    arithmetic operators; `sess.run(var)` returns a NumPy copy of its value.
    `use_resource=False` makes it a `RefVariable` (see `__new__`); `variable_def` wraps the
    existing nodes a VariableDef names (`from_proto`). `caching_device`, `expected_shape`,
    `synchronization` and `aggregation` are accepted and have no effect.
    """

    _should_act_as_resource_variable = True     # TF's mark: gradients take the handle

    # (wants_ref(args, kwargs), RefVariable), set by graphops.training.ref_variable
    _reference_kind = None

    def __new__(cls, *args, **kwargs):
        """TF1's choice of kind: a reference variable (`RefVariable`: VariableV2) for
        `use_resource=False` (or a `variable_scope(use_resource=False)`) or a VariableDef
        that is not a resource's; else a resource variable."""
        kind = Variable._reference_kind
        if cls is Variable and kind is not None and kind[0](args, kwargs):
            cls = kind[1]
        return super().__new__(cls)

    def __init__(self, initial_value=None, trainable=None, collections=None,
                 validate_shape=True, caching_device=None, name=None, variable_def=None,
                 dtype=None, expected_shape=None, import_scope=None, constraint=None,
                 use_resource=None, synchronization=None, aggregation=None, shape=None):
        self._validate_shape = validate_shape
        if variable_def is not None:
            if initial_value is not None:
                raise ValueError(f"The variable_def and initial_value args to `tf.Variable` "
                                 f"are mutually exclusive, but got both: variable_def="
                                 f"{variable_def},\ninitial_value={initial_value}")
            variable_def_io.init_from_proto(self, variable_def, import_scope)
            return
        if initial_value is None:
            raise ValueError("The `initial_value` arg to `tf.Variable` must be specified "
                             "except when you are not providing a `variable_def`. You "
                             "provided neither.")
        if collections is None:
            collections = [GraphKeys.GLOBAL_VARIABLES]
        if not isinstance(collections, (list, tuple, set)):
            raise ValueError(f"collections argument to Variable constructor must be a list, "
                             f"tuple, or set. Got {collections} of type {type(collections)}")
        if constraint is not None and not callable(constraint):
            raise ValueError(f"Argument `constraint` must be None or a callable. a callable. "
                             f"Got a {type(constraint)}:  {constraint}")
        trainable = True if trainable is None else bool(trainable)
        if trainable and GraphKeys.TRAINABLE_VARIABLES not in collections:
            collections = list(collections) + [GraphKeys.TRAINABLE_VARIABLES]
        self._trainable = trainable
        self._constraint = constraint
        graph = self._graph = get_default_graph()
        dtype = None if dtype is None else dtypes.as_dtype(dtype)
        with graph.as_default(), graph.control_dependencies(None), \
                graph.name_scope(name or "Variable") as scope:      # TF's init_scope
            with graph.name_scope("Initializer"):
                value = initial_value() if callable(initial_value) else initial_value
                self._initial_value = convert_to_tensor(value, dtype=dtype, name="initial_value")
            self._dtype = self._initial_value.dtype
            self._shape = self._checked_shape(shape, validate_shape)
            self._handle = raw_ops.VarHandleOp(dtype=self._dtype, shape=self._shape,
                                               shared_name=scope[:-1], name=scope)
            with graph.name_scope("IsInitialized"):
                self._is_initialized = raw_ops.VarIsInitializedOp(resource=self._handle)
            with graph.name_scope("Assign") as assign_scope:
                self._initializer = raw_ops.AssignVariableOp(
                    resource=self._handle, value=self._initial_value, name=assign_scope)
            with graph.name_scope("Read"):
                self._graph_element = self._read()
        graph.add_to_collections(collections, self)

    def _checked_shape(self, shape, validate_shape):
        initial = self._initial_value.shape
        if shape is None:
            return initial if validate_shape else unknown_shape()
        shape = as_shape(shape)
        if not initial.is_compatible_with(shape):
            raise ValueError(f"In this `tf.Variable` creation, the initial value's shape "
                             f"({initial}) is not compatible with the explicitly supplied "
                             f"`shape` argument ({shape}).")
        return shape

    # ---------------------------------------------------------------- properties

    handle = property(lambda self: self._handle, doc="The resource handle tensor.")
    dtype = property(lambda self: self._dtype)
    shape = property(lambda self: self._shape)
    graph = property(lambda self: self._graph)
    op = property(lambda self: self._handle.op)
    device = property(lambda self: self._handle.op.device)
    initializer = property(lambda self: self._initializer, doc="The op assigning initial_value.")
    initial_value = property(lambda self: self._initial_value)
    trainable = property(lambda self: self._trainable)
    constraint = property(lambda self: self._constraint)

    @property
    def name(self):
        """"Variable:0", TF's name of a variable (its handle tensor)."""
        return self._handle.name

    def get_shape(self):
        return self._shape

    # ---------------------------------------------------------------- reads

    def _read(self):
        with self._graph.as_default():
            return raw_ops.ReadVariableOp(resource=self._handle, dtype=self._dtype)

    def value(self):
        """A new read of the variable (it runs after any control dependencies in scope)."""
        return self._read()

    def read_value(self):
        """A new read of the variable under a "Read" name scope."""
        with self._graph.name_scope("Read"):
            return self._read()

    def initialized_value(self):
        """The initial value (TF1 code's `w.initialized_value()` seeding another Variable).
        Unlike TF1's reference variables it never reads the current value."""
        return self._initial_value

    def is_initialized(self, name=None):
        """A new bool tensor: has this Session assigned the variable yet?"""
        with self._graph.as_default():
            return raw_ops.VarIsInitializedOp(resource=self._handle, name=name)

    def _as_graph_element(self):
        """What fetching the Variable gives: its first read."""
        return self._graph_element

    def _as_input_tensor(self):
        """What the Variable converts to as an op's input: a new read (TF's conversion)."""
        return self._read()

    # ---------------------------------------------------------------- updates

    def _update(self, op_type, value, read_value, name, **attrs):
        with self._graph.as_default():
            value = convert_to_tensor(value, dtype=self._dtype)
            update = getattr(raw_ops, op_type)(resource=self._handle, value=value, name=name,
                                               **attrs)
            if not read_value:
                return update
            with self._graph.control_dependencies([update]):
                return self._read()

    def assign(self, value, use_locking=None, name=None, read_value=True):
        """Assigns `value`; returns the new value (a read after the assignment) or the op.
        As TF's: a value of another static shape is a ValueError, and a variable of a
        fully known shape made with validate_shape has its AssignVariableOp check the value's
        shape at run time."""
        with self._graph.as_default():
            value = convert_to_tensor(value, dtype=self._dtype)
        if not self._shape.is_compatible_with(value.shape):
            raise ValueError(f"Cannot assign value to variable ' {self.name}': Shape mismatch."
                             f"The variable shape {self._shape}, and the assigned value shape "
                             f"{value.shape} are incompatible.")
        return self._update("AssignVariableOp", value, read_value, name,
                            validate_shape=self._validate_shape
                            and self._shape.is_fully_defined())

    def assign_add(self, delta, use_locking=None, name=None, read_value=True):
        return self._update("AssignAddVariableOp", delta, read_value, name)

    def assign_sub(self, delta, use_locking=None, name=None, read_value=True):
        return self._update("AssignSubVariableOp", delta, read_value, name)

    def count_up_to(self, limit):
        """Increments the scalar variable until it reaches `limit` (then OutOfRangeError);
        the value before the increment (TF1's ResourceCountUpTo)."""
        return raw_ops.ResourceCountUpTo(resource=self.handle, limit=limit, T=self.dtype)

    def sparse_read(self, indices, name=None):
        """The rows `indices` of the variable (a ResourceGather, as TF's)."""
        from graphops.training.sparse_updates import sparse_read
        return sparse_read(self, indices, name)

    def scatter_add(self, sparse_delta, use_locking=False, name=None):
        """Adds an IndexedSlices to the variable's rows; returns the new value."""
        from graphops.training.sparse_updates import scatter
        return scatter(self, "add", sparse_delta, name)

    def scatter_sub(self, sparse_delta, use_locking=False, name=None):
        from graphops.training.sparse_updates import scatter
        return scatter(self, "sub", sparse_delta, name)

    def scatter_update(self, sparse_delta, use_locking=False, name=None):
        from graphops.training.sparse_updates import scatter
        return scatter(self, "update", sparse_delta, name)

    def load(self, value, session=None):
        """Assigns `value` (a NumPy value) by running the initializer with it fed."""
        session = session or get_default_session()
        if session is None:
            raise ValueError("Either session argument should be provided or default session "
                             "should be established")
        session.run(self._initializer, {self._initializer.inputs[1]: value})

    def eval(self, session=None):
        """The variable's value, computed by `session` or the default session."""
        return self._graph_element.eval(session=session)

    def to_proto(self, export_scope=None):
        """The VariableDef naming this variable's nodes (without `export_scope/`), or None
        when the variable lies outside `export_scope`."""
        return variable_def_io.to_proto(self, self._handle, self._graph_element, True,
                                        export_scope)

    @staticmethod
    def from_proto(variable_def, import_scope=None):
        """The Variable (resource or reference, as `variable_def` says) wrapping existing
        nodes of the default graph named by `variable_def` under `import_scope/`."""
        return Variable(variable_def=variable_def, import_scope=import_scope)

    def __repr__(self):
        return f"<gp.Variable '{self.name}' shape={self._shape} dtype={self._dtype.name}>"

    __hash__ = object.__hash__
    __array_ufunc__ = None     # NumPy defers `array * variable` to Variable.__rmul__


def _forward_to_value(name):
    """TF's operator overloads: the operator applied to a new read (NotImplemented while
    Tensor lacks it)."""
    def method(self, *args):
        if getattr(Tensor, name, None) is None:
            return NotImplemented
        return getattr(self.value(), name)(*args)
    method.__name__ = name
    return method


for _name in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__",
              "__truediv__", "__rtruediv__", "__floordiv__", "__rfloordiv__", "__mod__",
              "__rmod__", "__pow__", "__rpow__", "__matmul__", "__rmatmul__", "__neg__",
              "__abs__", "__invert__", "__lt__", "__le__", "__gt__", "__ge__", "__and__",
              "__rand__", "__or__", "__ror__", "__xor__", "__rxor__", "__getitem__"):
    setattr(Variable, _name, _forward_to_value(_name))


# ------------------------------------------------------------------- functions

def _ref_update(op_type, ref, value, name, **attrs):
    """The reference op `op_type` on a reference variable or tensor: its output reference."""
    attrs = {k: v for k, v in attrs.items() if v is not None}
    with get_default_graph().as_default():
        return getattr(raw_ops, op_type)(ref=ref, value=value, name=name, **attrs)


def assign(ref, value, validate_shape=None, use_locking=None, name=None):
    """tf.compat.v1.assign: an Assign on a reference (variable or tensor), returning the
    reference after it; else `ref.assign(value)`, the new value read after it."""
    if ref.dtype.is_ref:
        return _ref_update("Assign", ref, value, name, validate_shape=validate_shape,
                           use_locking=use_locking)
    return ref.assign(value, name=name)


def assign_add(ref, value, use_locking=None, name=None):
    """tf.compat.v1.assign_add: an AssignAdd on a reference, else `ref.assign_add(value)`."""
    if ref.dtype.is_ref:
        return _ref_update("AssignAdd", ref, value, name, use_locking=use_locking)
    return ref.assign_add(value, name=name)


def assign_sub(ref, value, use_locking=None, name=None):
    """tf.compat.v1.assign_sub: an AssignSub on a reference, else `ref.assign_sub(value)`."""
    if ref.dtype.is_ref:
        return _ref_update("AssignSub", ref, value, name, use_locking=use_locking)
    return ref.assign_sub(value, name=name)


def _collection(key, scope, graph):
    return (graph or get_default_graph()).get_collection(key, scope)


def global_variables(scope=None, graph=None):
    """The GLOBAL_VARIABLES collection of `graph` (the default graph), optionally those
    whose name matches the regular expression `scope` from its start."""
    return _collection(GraphKeys.GLOBAL_VARIABLES, scope, graph)


def all_variables():
    """Deprecated TF1 name of `global_variables()`."""
    return global_variables()


def trainable_variables(scope=None, graph=None):
    """The TRAINABLE_VARIABLES collection."""
    return _collection(GraphKeys.TRAINABLE_VARIABLES, scope, graph)


def local_variables(scope=None, graph=None):
    """The LOCAL_VARIABLES collection."""
    return _collection(GraphKeys.LOCAL_VARIABLES, scope, graph)


def model_variables(scope=None, graph=None):
    """The MODEL_VARIABLES collection."""
    return _collection(GraphKeys.MODEL_VARIABLES, scope, graph)


def variables_initializer(var_list, name="init"):
    """One op running the initializers of `var_list` (a NoOp when it is empty)."""
    graph = get_default_graph()
    with graph.as_default(), graph.control_dependencies([v.initializer for v in var_list]):
        return raw_ops.NoOp(name=name)


def global_variables_initializer():
    """The op that initialises every global Variable of the default graph."""
    return variables_initializer(global_variables(), name="init")


def local_variables_initializer():
    """The op that initialises every local Variable of the default graph."""
    return variables_initializer(local_variables(), name="init")


initialize_all_variables = global_variables_initializer
initialize_local_variables = local_variables_initializer


def is_variable_initialized(variable):
    """A bool tensor: whether `variable` is initialized (a new IsVariableInitialized of a
    reference variable or tensor, else a new VarIsInitializedOp)."""
    if variable.dtype.is_ref:
        with get_default_graph().as_default():
            return raw_ops.IsVariableInitialized(ref=variable)
    return variable.is_initialized()


def report_uninitialized_variables(var_list=None, name="report_uninitialized_variables"):
    """A 1-D string tensor: the names (without ":0") of the uninitialized variables of
    `var_list` (default: the global and local variables)."""
    if var_list is None:
        var_list = global_variables() + local_variables()
    graph = get_default_graph()
    with graph.as_default(), graph.name_scope(name):
        if not var_list:
            return raw_ops.Const(value=_names([]), dtype=dtypes.string)
        initialized = raw_ops.Pack(values=[v.is_initialized() for v in var_list])
        names = raw_ops.Const(value=_names([v.op.name for v in var_list]), dtype=dtypes.string)
        missing = raw_ops.Where(condition=raw_ops.LogicalNot(x=initialized))
        indices = raw_ops.Squeeze(input=missing, axis=[1])
        return raw_ops.GatherV2(params=names, indices=indices, axis=0)


def _names(names):
    """A 1-D string array of `names` as bytes (what TF's string tensors hold)."""
    return np.array([n.encode() for n in names], dtype=object).reshape(len(names))
