"""gp.raw_ops: one keyword-only function per registered op, generated on first use.

`gp.raw_ops.Conv2D(input=x, filter=w, strides=[1, 1, 1, 1], padding="SAME")` calls
`op_builder.apply_op("Conv2D", ...)`. Ops registered after import appear too; `dir()` lists
them all. Parameters follow TF's generated wrappers: inputs, then required attrs, then
optional attrs, then `name`; attrs inferred from inputs (`T`, `N`) are not parameters.
"""

import inspect

from graphops.building.op_builder import apply_op_keywords
from graphops.api.op_docs import op_docstring, python_arg_name
from graphops.registry.op_registry import get_op_def, is_registered, list_ops, registry_version
from graphops.registry.tensor_shape import TensorShape

_cache = {}     # op name -> (wrapper, registry version it was last checked at)


def op_params(op_def):
    """(input args, required attr defs, optional attr defs), inferred attrs left out."""
    inferred = op_def.inferred_attrs()
    attrs = [a for a in op_def.attr if a.name not in inferred]
    return (op_def.input_arg, [a for a in attrs if not a.has_default],
            [a for a in attrs if a.has_default])


def _default(value):
    """An attr default as TF's wrappers show it (an unknown shape: None)."""
    if isinstance(value, TensorShape) and value.rank is None:
        return None
    return value


def op_parameters(op_def, kind):
    """The wrapper parameters of an op, as TF's generated wrappers have them: inputs, then
    required attrs, then optional attrs with their defaults, then `name=None`; `kind` is
    KEYWORD_ONLY (raw_ops) or POSITIONAL_OR_KEYWORD (gen_ops, load_op_library)."""
    inputs, required, optional = op_params(op_def)
    params = [inspect.Parameter(python_arg_name(a.name, op_def), kind)
              for a in list(inputs) + required]
    params += [inspect.Parameter(python_arg_name(a.name, op_def), kind,
                                 default=_default(a.default_value)) for a in optional]
    params.append(inspect.Parameter("name", kind, default=None))
    return params


def _make_wrapper(op_def):
    op_type = op_def.name
    params = op_parameters(op_def, inspect.Parameter.KEYWORD_ONLY)
    keys = [p.name for p in params]

    def wrapper(*args, **kwargs):
        if args:
            raise TypeError(f"{op_type} only takes keyword args (possible keys: {keys}). "
                            "Please pass these args as kwargs instead.")
        return apply_op_keywords(op_type, kwargs.pop("name", None), kwargs)

    wrapper.__name__ = wrapper.__qualname__ = op_type
    wrapper.__module__ = __name__
    wrapper.__signature__ = inspect.Signature(params)
    wrapper.__doc__ = op_docstring(op_def)
    wrapper.op_def = op_def
    return wrapper


def __getattr__(name):
    cached = _cache.get(name)
    version = registry_version()
    if cached is not None and cached[1] == version:
        return cached[0]
    if name.startswith("_") or not is_registered(name):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r} (no op of that "
                             "name is registered)")
    op_def = get_op_def(name)
    wrapper = None if cached is None else cached[0]
    if wrapper is None or wrapper.op_def is not op_def:
        wrapper = _make_wrapper(op_def)
    _cache[name] = (wrapper, version)
    return wrapper


def __dir__():
    return sorted(set(globals()) | {n for n in list_ops() if not n.startswith("_")})
