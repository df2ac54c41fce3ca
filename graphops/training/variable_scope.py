"""TF1's variable sharing: `gp.variable_scope`, `gp.get_variable`, `gp.get_variable_scope`,
`gp.AUTO_REUSE`, `gp.get_local_variable`.

Each graph keeps (in collections with tuple keys, which `get_all_collection_keys` hides, as
TF's) a variable store (full name -> Variable) and the current VariableScope with the
open-scope counts that make default names unique. A variable's name depends only on the
variable scopes ("scope/w"); a variable scope also opens a name scope, so ops built in it
are named "scope/op" (or "scope_1/op" when re-entered, as in TF).
"""

import contextlib
import enum
import functools
import inspect

from graphops.api import init_ops
from graphops.api.tensor_args import graph_of
from graphops.training.variables import Variable
from graphops.building.graph import get_default_graph
from graphops.building.graph_collections import GraphKeys
from graphops.building.values import convert_value, dtype_of
from graphops.registry import dtypes
from graphops.registry.tensor_shape import as_shape

_STORE_KEY = ("__variable_store",)
_SCOPE_KEY = ("__varscope",)


class _ReuseMode(enum.Enum):
    AUTO_REUSE = 1


AUTO_REUSE = _ReuseMode.AUTO_REUSE


class VariableScope:
    """What `get_variable` takes its defaults from: name, reuse, initializer, regularizer,
    dtype, constraint, custom getter."""

    def __init__(self, reuse, name="", initializer=None, regularizer=None,
                 caching_device=None, partitioner=None, custom_getter=None, name_scope="",
                 dtype=dtypes.float32, use_resource=None, constraint=None):
        self._reuse = reuse
        self._name = name
        self._initializer = initializer
        self._regularizer = regularizer
        self._caching_device = caching_device
        self._partitioner = partitioner
        self._custom_getter = custom_getter
        self._name_scope = name_scope
        self._dtype = dtypes.as_dtype(dtype)
        self._use_resource = use_resource
        self._constraint = constraint

    name = property(lambda self: self._name)
    original_name_scope = property(lambda self: self._name_scope)
    reuse = property(lambda self: self._reuse)
    initializer = property(lambda self: self._initializer)
    regularizer = property(lambda self: self._regularizer)
    caching_device = property(lambda self: self._caching_device)
    partitioner = property(lambda self: self._partitioner)
    custom_getter = property(lambda self: self._custom_getter)
    dtype = property(lambda self: self._dtype)
    use_resource = property(lambda self: self._use_resource)
    constraint = property(lambda self: self._constraint)

    def reuse_variables(self):
        """From now on, `get_variable` in this scope returns existing variables."""
        self._reuse = True

    def set_initializer(self, initializer):
        self._initializer = initializer

    def set_regularizer(self, regularizer):
        self._regularizer = regularizer

    def set_dtype(self, dtype):
        self._dtype = dtypes.as_dtype(dtype)

    def set_custom_getter(self, custom_getter):
        self._custom_getter = custom_getter

    def set_caching_device(self, caching_device):
        self._caching_device = caching_device

    def set_partitioner(self, partitioner):
        self._partitioner = partitioner

    def set_use_resource(self, use_resource):
        self._use_resource = use_resource

    def global_variables(self):
        return get_default_graph().get_collection(GraphKeys.GLOBAL_VARIABLES, self._prefix())

    def trainable_variables(self):
        return get_default_graph().get_collection(GraphKeys.TRAINABLE_VARIABLES, self._prefix())

    def local_variables(self):
        return get_default_graph().get_collection(GraphKeys.LOCAL_VARIABLES, self._prefix())

    def _prefix(self):
        return self._name + "/" if self._name else None

    def get_variable(self, var_store, name, shape=None, dtype=None, initializer=None,
                     regularizer=None, reuse=None, trainable=None, collections=None,
                     caching_device=None, partitioner=None, validate_shape=True,
                     use_resource=None, custom_getter=None, constraint=None,
                     synchronization=None, aggregation=None):
        """The variable "<scope>/<name>", created or reused by this scope's rules."""
        if partitioner is not None or self._partitioner is not None:
            raise NotImplementedError("Partitioned variables are not supported by graphops.")
        regularizer = regularizer if regularizer is not None else self._regularizer
        caching_device = caching_device if caching_device is not None else self._caching_device
        custom_getter = custom_getter if custom_getter is not None else self._custom_getter
        reuse = self._reuse if reuse is None else reuse
        if dtype is not None and initializer is not None and not callable(initializer):
            init_dtype = dtype_of(convert_value(initializer))
            if init_dtype != dtypes.as_dtype(dtype):
                raise ValueError(f"Initializer type '{init_dtype!r}' and explicit dtype "
                                 f"'{dtypes.as_dtype(dtype)!r}' don't match.")
        initializer = initializer if initializer is not None else self._initializer
        constraint = constraint if constraint is not None else self._constraint
        dtype = self._dtype if dtype is None else dtypes.as_dtype(dtype)
        use_resource = self._use_resource if use_resource is None else use_resource
        full_name = f"{self._name}/{name}" if self._name else name
        kwargs = dict(shape=shape, dtype=dtype, initializer=initializer,
                      regularizer=regularizer, reuse=reuse, trainable=trainable,
                      collections=collections, caching_device=caching_device,
                      validate_shape=validate_shape, use_resource=use_resource,
                      constraint=constraint)
        graph = get_default_graph()
        with graph.name_scope(None):      # variable names depend on variable scopes only
            if custom_getter is None:
                return var_store.get_variable(full_name, **kwargs)
            if not callable(custom_getter):
                raise ValueError(f"Passed a custom_getter which is not callable: "
                                 f"{custom_getter}")
            return custom_getter(var_store.get_variable, full_name, **kwargs)


class _VariableStore:
    """Full variable name -> Variable made by `get_variable` in one graph."""

    def __init__(self):
        self.variables = {}

    def get_variable(self, name, shape=None, dtype=dtypes.float32, initializer=None,
                     regularizer=None, reuse=None, trainable=None, collections=None,
                     caching_device=None, validate_shape=True, use_resource=None,
                     constraint=None, **unused):
        """The variable `name`: existing (unless reuse is False) or new (unless reuse is
        True). `unused` takes the arguments custom getters pass on that mean nothing here."""
        from_value = initializer is not None and not callable(initializer)
        if shape is not None and from_value:
            raise ValueError("If initializer is a constant, do not specify shape.")
        dtype = dtypes.as_dtype(dtype)
        shape = None if shape is None else as_shape(shape)
        if name in self.variables:
            return self._existing(name, shape, dtype, reuse)
        if reuse is True:
            raise ValueError(f"Variable {name} does not exist, or was not created with "
                             "tf.get_variable(). Did you mean to set reuse=tf.AUTO_REUSE "
                             "in VarScope?")
        if initializer is None:
            if shape is None:
                raise ValueError(f"Variable {name} did not get an initializer, so its "
                                 "`shape` argument must be specified.")
            initializer = _default_initializer(name, dtype)
        variable_dtype = None
        if from_value:
            initial_value = initializer
        else:
            if inspect.isclass(initializer):
                initializer = initializer()
            if shape is not None and shape.is_fully_defined():
                initial_value = functools.partial(initializer, shape.as_list(), dtype=dtype)
                if _takes_partition_info(initializer):
                    initial_value = functools.partial(initial_value, partition_info=None)
                variable_dtype = dtype
            elif _needs_no_arguments(initializer):
                initial_value = initializer
            else:
                raise ValueError("The initializer passed is not valid. It should be a "
                                 "callable with no arguments and the shape should not be "
                                 "provided or an instance of `tf.keras.initializers.*' and "
                                 "`shape` should be fully defined.")
        variable = Variable(initial_value, name=name, trainable=trainable,
                            collections=collections, caching_device=caching_device,
                            dtype=variable_dtype, validate_shape=validate_shape,
                            constraint=constraint, shape=shape, use_resource=use_resource)
        self.variables[name] = variable
        if regularizer is not None:
            graph = variable.graph
            with graph.as_default(), graph.name_scope(name + "/Regularizer/"):
                loss = regularizer(variable)
            if loss is not None:
                graph.add_to_collection(GraphKeys.REGULARIZATION_LOSSES, loss)
        return variable

    def _existing(self, name, shape, dtype, reuse):
        if reuse is False:
            raise ValueError(f"Variable {name} already exists, disallowed. Did you mean to set "
                             "reuse=True or reuse=tf.AUTO_REUSE in VarScope?")
        found = self.variables[name]
        if shape is not None and not shape.is_compatible_with(found.get_shape()):
            raise ValueError(f"Trying to share variable {name}, but specified shape {shape} "
                             f"and found shape {found.get_shape()}.")
        if not dtype.is_compatible_with(found.dtype):
            raise ValueError(f"Trying to share variable {name}, but specified dtype "
                             f"{dtype.name} and found dtype {found.dtype.name}.")
        return found


def _default_initializer(name, dtype):
    """glorot_uniform for floats, zeros for integers, bools and strings (TF's defaults)."""
    if dtype.is_floating:
        return init_ops.GlorotUniform()
    if dtype.is_integer or dtype is dtypes.bool_ or dtype is dtypes.string:
        return init_ops.Zeros()
    raise ValueError(f"An initializer for variable {name} of {dtype!r} is required")


def _parameters(function):
    try:
        return inspect.signature(function).parameters
    except (TypeError, ValueError):
        return {}


def _takes_partition_info(initializer):
    return "partition_info" in _parameters(initializer)


def _needs_no_arguments(function):
    return all(p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
               for p in _parameters(function).values())


class _ScopeStore:
    """One graph's current VariableScope and how often each scope name was opened."""

    def __init__(self):
        self.current_scope = VariableScope(False)
        self.counts = {}

    def open(self, name):
        self.counts[name] = self.counts.get(name, 0) + 1

    def close_subscopes(self, name):
        for key in self.counts:
            if key.startswith(name + "/"):
                self.counts[key] = 0


def _graph_store(key, make):
    collection = get_default_graph().get_collection_ref(key)
    if not collection:
        collection.append(make())
    return collection[0]


def _variable_store():
    return _graph_store(_STORE_KEY, _VariableStore)


def _scope_store():
    return _graph_store(_SCOPE_KEY, _ScopeStore)


def get_variable_scope():
    """The current VariableScope of the default graph."""
    return _scope_store().current_scope


def get_variable(name, shape=None, dtype=None, initializer=None, regularizer=None,
                 trainable=None, collections=None, caching_device=None, partitioner=None,
                 validate_shape=True, use_resource=None, custom_getter=None, constraint=None,
                 synchronization=None, aggregation=None):
    """An existing variable named "<current variable scope>/<name>" (when the scope reuses)
    or a new one, with the scope's initializer, regularizer and dtype as defaults."""
    return get_variable_scope().get_variable(
        _variable_store(), name, shape=shape, dtype=dtype, initializer=initializer,
        regularizer=regularizer, trainable=trainable, collections=collections,
        caching_device=caching_device, partitioner=partitioner, validate_shape=validate_shape,
        use_resource=use_resource, custom_getter=custom_getter, constraint=constraint,
        synchronization=synchronization, aggregation=aggregation)


def get_local_variable(name, shape=None, dtype=None, initializer=None, regularizer=None,
                       trainable=False, collections=None, caching_device=None,
                       partitioner=None, validate_shape=True, use_resource=None,
                       custom_getter=None, constraint=None, synchronization=None,
                       aggregation=None):
    """`get_variable` into the LOCAL_VARIABLES collection (not trainable by default)."""
    collections = list(collections or []) + [GraphKeys.LOCAL_VARIABLES]
    return get_variable(name, shape, dtype, initializer, regularizer, trainable, collections,
                        caching_device, partitioner, validate_shape, use_resource,
                        custom_getter, constraint, synchronization, aggregation)


def _unique_scope_name(prefix):
    """`prefix`, or `prefix_N` when that variable scope was opened already here."""
    store = _scope_store()
    current = store.current_scope.name
    base = f"{current}/{prefix}" if current else prefix
    if not store.counts.get(base):
        return prefix
    index = 1
    while store.counts.get(f"{base}_{index}"):
        index += 1
    return f"{prefix}_{index}"


def _nested_getter(outer, inner):
    """TF's custom-getter composition: the inner scope's getter wraps the outer one's."""
    if outer is None:
        return inner
    return lambda getter, *args, **kwargs: inner(functools.partial(outer, getter),
                                                 *args, **kwargs)


@contextlib.contextmanager
def variable_scope(name_or_scope, default_name=None, values=None, initializer=None,
                   regularizer=None, caching_device=None, partitioner=None,
                   custom_getter=None, reuse=None, dtype=None, use_resource=None,
                   constraint=None, auxiliary_name_scope=True):
    """Opens a variable scope (and a name scope) for `get_variable`; yields the scope.

    `reuse`: None inherits the enclosing scope's, True requires existing variables,
    `gp.AUTO_REUSE` creates or reuses; reuse is inherited and cannot be turned off inside.
    """
    if default_name is None and name_or_scope is None:
        raise TypeError("If default_name is None then name_or_scope is required")
    if not (reuse is True or reuse is False or reuse is None or reuse is AUTO_REUSE):
        raise ValueError("The reuse parameter must be True or False or None.")
    if reuse is False:          # False behaves like None: inherit (TF's note)
        reuse = None
    if name_or_scope is not None and not isinstance(name_or_scope, (VariableScope, str)):
        raise TypeError("VariableScope: name_or_scope must be a string or VariableScope.")
    if name_or_scope is None and reuse:
        raise ValueError("reuse=True cannot be used without a name_or_scope")
    graph = graph_of(values) or get_default_graph()
    with graph.as_default():
        if isinstance(name_or_scope, VariableScope):
            scope_name = name_or_scope.name.split("/")[-1]
        else:
            scope_name = name_or_scope if name_or_scope is not None else default_name
        if not auxiliary_name_scope:
            current = graph.get_name_scope()
            name_scope = graph.name_scope(current + "/" if current else "")
        else:
            name_scope = graph.name_scope(scope_name or None)
        with name_scope as opened:
            if name_or_scope is None:
                name_or_scope = _unique_scope_name(default_name)
            with _pure_variable_scope(name_or_scope, opened, initializer, regularizer,
                                      caching_device, partitioner, custom_getter, reuse,
                                      dtype, use_resource, constraint) as scope:
                yield scope


@contextlib.contextmanager
def _pure_variable_scope(name_or_scope, name_scope, initializer, regularizer, caching_device,
                         partitioner, custom_getter, reuse, dtype, use_resource, constraint):
    """Makes the new VariableScope current (no name scope of its own)."""
    store = _scope_store()
    old = store.current_scope
    if isinstance(name_or_scope, VariableScope):
        new_name = name_or_scope.name
        store.open(new_name)
        saved_counts = dict(store.counts)
        template = name_or_scope
        scope = VariableScope(reuse if reuse else template.reuse, new_name,
                              template.initializer, template.regularizer,
                              template.caching_device, template.partitioner,
                              template.custom_getter, template.original_name_scope,
                              template.dtype, template.use_resource, template.constraint)
    else:
        new_name = f"{old.name}/{name_or_scope}" if old.name else name_or_scope
        store.open(new_name)
        saved_counts = None
        scope = VariableScope(reuse or old.reuse, new_name, old.initializer, old.regularizer,
                              old.caching_device, old.partitioner, old.custom_getter,
                              name_scope, old.dtype, old.use_resource, old.constraint)
    for value, setter in ((initializer, scope.set_initializer),
                          (regularizer, scope.set_regularizer),
                          (caching_device, scope.set_caching_device),
                          (partitioner, scope.set_partitioner),
                          (dtype, scope.set_dtype),
                          (use_resource, scope.set_use_resource)):
        if value is not None:
            setter(value)
    if constraint is not None:
        scope._constraint = constraint
    if custom_getter is not None:
        scope.set_custom_getter(_nested_getter(scope.custom_getter, custom_getter))
    store.current_scope = scope
    try:
        yield scope
    finally:
        store.current_scope = old
        if saved_counts is None:
            store.close_subscopes(new_name)
        else:
            store.counts = saved_counts
