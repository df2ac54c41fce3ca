"""Positional snake_case op wrappers, as TF's generated `gen_*_ops` modules and
`tf.load_op_library` give them: `zero_out(to_zero, preserve_index=0, name=None)`.

The parameters are raw_ops' (`raw_ops.op_parameters`: inputs, required attrs, optional
attrs with defaults, `name`), positional or keyword. Names follow TF's op generator:
`Conv3DBackpropFilterV2` -> `conv3d_backprop_filter_v2` (an underscore before an upper-case
letter that follows a lower-case one or precedes one, `>` -> `_`); a name that would shadow
a Python builtin or keyword gets a leading underscore, as in TF (`Abs` -> `_abs`).

`load_op_library(path_or_module)` imports a Python file or module that registers ops (and
their kernels and gradients) and returns a module holding the wrappers of exactly those
ops; `gp.gen_ops` (graphops/api/gen_ops.py) holds them for every registered op.
"""

import hashlib
import importlib
import importlib.util
import inspect
import keyword
import os
import sys
import threading
import types

from graphops.api import raw_ops
from graphops.api.op_docs import op_docstring
from graphops.building.op_builder import apply_op_keywords
from graphops.registry.errors import NotFoundError
from graphops.registry.op_registry import get_op_def, list_ops, registry_version

# TF's python_op_gen IsOpWithUnderscorePrefix: Python builtins and a few names TF's own
# Python code defines; a generated wrapper of that name is `_name`
_UNDERSCORE_NAMES = frozenset("""
    abs all any apply bin bool buffer bytearray bytes callable chr classmethod cmp coerce
    compile complex copyright credits delattr dict dir divmod enumerate eval execfile exit
    file filter float format frozenset getattr globals hasattr hash help hex id input int
    intern isinstance issubclass iter len license list locals long map max memoryview min
    next object oct open ord pow print property quit range raw_input reduce reload repr
    reversed set setattr slice sorted staticmethod str sum super tuple type unichr unicode
    vars xrange zip fused_batch_norm histogram_fixed_width stack
    batch_norm_with_global_normalization clip_by_value""".split())

_lock = threading.Lock()
_wrappers = {}        # op name -> positional wrapper (rebuilt when its OpDef changes)
_names = {}           # registry version -> {snake_case name: op name}
_libraries = {}       # absolute path -> the module load_op_library returned


def snake_case_name(op_name):
    """The Python function name TF's op generator gives `op_name`."""
    chars, last = [], len(op_name) - 1
    for i, c in enumerate(op_name):
        if c == ">":
            chars.append("_")
            continue
        if c.isupper() and i > 0 and op_name[i - 1] != ">" and (
                op_name[i - 1].islower() or (i < last and op_name[i + 1].islower())):
            chars.append("_")
        chars.append(c.lower())
    name = "".join(chars)
    return "_" + name if name in _UNDERSCORE_NAMES or keyword.iskeyword(name) else name


def snake_case_names():
    """{snake_case name: op name} for every registered op."""
    version = registry_version()
    names = _names.get(version)
    if names is None:
        names = {snake_case_name(op): op for op in list_ops()}
        with _lock:
            _names.clear()
            _names[version] = names
    return names


def positional_wrapper(op_name):
    """The positional wrapper of a registered op (NotFoundError for an unknown one)."""
    op_def = get_op_def(op_name)
    wrapper = _wrappers.get(op_name)
    if wrapper is None or wrapper.op_def is not op_def:
        wrapper = _wrappers[op_name] = _make_wrapper(op_def)
    return wrapper


def _make_wrapper(op_def):
    op_type = op_def.name
    signature = inspect.Signature(
        raw_ops.op_parameters(op_def, inspect.Parameter.POSITIONAL_OR_KEYWORD))

    def wrapper(*args, **kwargs):
        arguments = signature.bind(*args, **kwargs).arguments
        name = arguments.pop("name", None)
        return apply_op_keywords(op_type, name, dict(arguments))

    wrapper.__name__ = wrapper.__qualname__ = snake_case_name(op_type)
    wrapper.__module__ = "graphops.gen_ops"
    wrapper.__signature__ = signature
    wrapper.__doc__ = op_docstring(op_def)
    wrapper.op_def = op_def
    return wrapper


def _import_file(path):
    """Runs the Python file at `path` as a new module (once per file)."""
    stem = os.path.splitext(os.path.basename(path))[0]
    name = stem if stem.isidentifier() and stem not in sys.modules else \
        f"_op_library_{hashlib.sha1(path.encode()).hexdigest()[:10]}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None:
        raise NotFoundError(f"{path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def load_op_library(library):
    """tf.load_op_library for Python: imports `library` (a file path, a module name or a
    module) that registers ops, and returns a module whose attributes are the positional
    snake_case wrappers (and raw_ops' CamelCase ones) of the ops it registered.

    A file is imported once: loading it again returns the same module.
    """
    if isinstance(library, types.ModuleType):
        return _library_module(library, ())
    if not isinstance(library, (str, os.PathLike)):
        raise TypeError(f"load_op_library expects a file path or a module name, got "
                        f"{type(library).__name__}")
    library = os.fspath(library)
    is_path = library.endswith(".py") or os.sep in library or os.path.exists(library)
    if not is_path:
        return _library_module(*_imported(lambda: importlib.import_module(library)))
    path = os.path.abspath(library)
    if not os.path.isfile(path):
        raise NotFoundError(f"{library}: No such file or directory")
    with _lock:
        loaded = _libraries.get(path)
        if loaded is None:
            loaded = _libraries[path] = _library_module(*_imported(lambda: _import_file(path)))
    return loaded


def _imported(do_import):
    """(module, ops new in the registry) for an import."""
    before = set(list_ops())
    module = do_import()
    return module, set(list_ops()) - before


def _library_module(module, new_ops):
    """The wrappers module of the ops `module` (or its submodules) registered, plus
    `new_ops` (registered while it was imported, by whichever helper)."""
    prefix = module.__name__ + "."
    ops = sorted(set(new_ops) | {
        op for op in list_ops()
        if get_op_def(op).module == module.__name__ or get_op_def(op).module.startswith(prefix)})
    library = types.ModuleType(module.__name__, f"Op wrappers of {module.__name__}: "
                                                f"{', '.join(ops) or 'no ops'}.")
    library.OP_LIST = ops
    for op in ops:
        wrapper = positional_wrapper(op)
        setattr(library, wrapper.__name__, wrapper)
        setattr(library, op, getattr(raw_ops, op))
    return library
