"""gp.ops: C++-style op classes for the Scope API, generated from the registry.

    node = gp.ops.Conv3DBackpropFilterV2(scope, x, sizes, dy, strides=[1] * 5, padding="SAME",
               attrs=gp.ops.Conv3DBackpropFilterV2.Attrs().data_format("NDHWC"))

Positional arguments after the scope are the inputs, then the required attrs, in OpDef order
(all may also be given by keyword). Optional attrs come as keywords or through the immutable
`<Op>.Attrs()` builder, which has one snake_case setter per optional attr, each returning a
new Attrs; the class has the same setters as static shortcuts (`Op.data_format("NCDHW")`).
The object has `.operation`, `.outputs`, `.output` (the first output) and one attribute per
named output; an op with exactly one output converts to it wherever a tensor is expected
(inputs, fetches, feed keys) through `_as_graph_element()`.
"""

import re

from graphops.building.values import constant_array, dtype_of
from graphops.building.op_builder import output_types
from graphops.api.op_docs import format_default, op_docstring, python_arg_name
from graphops.api.raw_ops import op_params
from graphops.building.scope import Scope
from graphops.registry.attr_values import normalize_attr_value
from graphops.registry.op_registry import get_op_def, is_registered, list_ops

_RESERVED = ("operation", "outputs", "output")
_cache = {}


def _snake(name):
    return python_arg_name(re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower())


class _AttrsBase:
    """Immutable set of optional attr values; setters return a new object."""

    __slots__ = ("_values",)
    _op_def = None

    def __init__(self):
        object.__setattr__(self, "_values", {})

    def _set(self, name, value):
        value = normalize_attr_value(self._op_def.attr_def(name), value, self._op_def.name)
        new = type(self)()
        object.__setattr__(new, "_values", {**self._values, name: value})
        return new

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__qualname__} is immutable: its setters return a "
                             "new Attrs")

    def to_dict(self):
        """The attrs set so far, by attr name (canonical values)."""
        return dict(self._values)

    def __repr__(self):
        inner = ", ".join(f"{_snake(k)}={v!r}" for k, v in self._values.items())
        return f"{type(self).__qualname__}({inner})"


class _OpBase:
    """One built node of the Scope API (see the module docstring)."""

    _op_def = None

    def __init__(self, scope, *args, attrs=None, **kwargs):
        op_def = self._op_def
        op_type = op_def.name
        inputs, required, optional = op_params(op_def)
        positional = [op_def.python_name(a.name) for a in list(inputs) + required]
        if len(args) > len(positional):
            raise TypeError(f"{op_type}() takes {len(positional) + 1} positional arguments but "
                            f"{len(args) + 1} were given")
        keywords = dict(zip(positional, args))
        for key, value in kwargs.items():
            name = key[:-1] if key.endswith("_") and python_arg_name(key[:-1]) == key else key
            if name in keywords:
                raise TypeError(f"{op_type}() got multiple values for argument '{key}'")
            keywords[name] = value
        if attrs is not None:
            if not isinstance(attrs, self.Attrs):
                raise TypeError(f"attrs must be a {op_type}.Attrs, not {type(attrs).__name__}")
            for name, value in attrs.to_dict().items():
                name = op_def.python_name(name)
                if name in keywords:
                    raise TypeError(f"{op_type}() got attr '{name}' both in attrs and as a "
                                    "keyword argument")
                keywords[name] = value
        self._finish(_check_scope(scope, op_type).build(op_type, keywords))

    def _finish(self, operation):
        self.operation = operation
        self.outputs = list(operation.outputs)
        self.output = self.outputs[0] if self.outputs else None
        _, structure = output_types(operation.op_def, operation.attrs)
        i = 0
        for arg, n in zip(operation.op_def.output_arg, structure):
            value = self.outputs[i] if n is None else self.outputs[i:i + n]
            i += 1 if n is None else n
            if arg.name not in _RESERVED:
                setattr(self, arg.name, value)

    def _as_graph_element(self):
        if len(self.outputs) == 1:
            return self.outputs[0]
        if not self.outputs:
            return self.operation
        raise TypeError(f"{self.operation.type} op '{self.operation.name}' has "
                        f"{len(self.outputs)} outputs; use .outputs[i] or a named output.")

    def __repr__(self):
        return f"<gp.ops.{self.operation.type} '{self.operation.name}'>"


def _check_scope(scope, op_type):
    if not isinstance(scope, Scope):
        raise TypeError(f"{op_type}() needs a gp.Scope as its first argument, not "
                        f"{type(scope).__name__}")
    return scope


def _setter(attr):
    def setter(self, value):
        return self._set(attr.name, value)
    setter.__name__ = _snake(attr.name)
    setter.__doc__ = (f"A copy of these Attrs with `{attr.name}` set (defaults to "
                      f"`{format_default(attr.default_value)}`). {attr.description}").rstrip()
    return setter


def _shortcut(attrs_cls, setter):
    def shortcut(value):
        return setter(attrs_cls(), value)
    shortcut.__name__, shortcut.__doc__ = setter.__name__, setter.__doc__
    return staticmethod(shortcut)


def _make_class(op_def):
    _, _, optional = op_params(op_def)
    setters = {_snake(a.name): _setter(a) for a in optional}
    attrs_cls = type("Attrs", (_AttrsBase,), {"__slots__": (), "_op_def": op_def, **setters})
    attrs_cls.__qualname__ = f"{op_def.name}.Attrs"
    namespace = {"_op_def": op_def, "Attrs": attrs_cls, "__module__": __name__,
                 "__doc__": _call_line(op_def) + "\n\n" + op_docstring(op_def, scope_api=True)}
    namespace.update({name: _shortcut(attrs_cls, fn) for name, fn in setters.items()
                      if name not in _RESERVED})
    return type(op_def.name, (_OpBase,), namespace)


def _call_line(op_def):
    inputs, required, optional = op_params(op_def)
    names = ["scope"] + [python_arg_name(a.name, op_def) for a in list(inputs) + required]
    names += [f"{python_arg_name(a.name, op_def)}=..." for a in optional] + ["attrs=None"]
    return f"{op_def.name}({', '.join(names)})"


class Const(_OpBase):
    """Const(scope, value, dtype=None, shape=None): a constant node (C++ ops::Const).

    The value follows gp.constant's rules: Python ints become int32, floats float32, NumPy
    arrays keep their dtype; a one-element value fills `shape`.
    """

    def __init__(self, scope, value, dtype=None, shape=None):
        array = constant_array(value, dtype, shape)
        self._finish(_check_scope(scope, "Const").build(
            "Const", {"value": array, "dtype": dtype_of(array)}))


def __getattr__(name):
    if name.startswith("_") or not is_registered(name):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r} (no op of that "
                             "name is registered)")
    op_def = get_op_def(name)
    cls = _cache.get(name)
    if cls is None or cls._op_def is not op_def:
        cls = _cache[name] = _make_class(op_def)
    return cls


def __dir__():
    return sorted({"Const"} | {n for n in list_ops() if not n.startswith("_")})
