"""apply_op: TF's `_apply_op_helper`, turning keyword arguments into a node or an eager run.

Steps, in TF's order and with TF's messages: inputs in OpDef order (`input_` accepted for
`input`), list inputs (`N * T`, `list(type)`), type-attr inference with allowed-values checks,
Python values converted (preferring a type attr's default), remaining attrs normalised,
unexpected keywords refused. In graph mode the shape function then runs (its errors re-raised
with TF's `for '{{node ...}} = ...' with input shapes: ...` suffix) and the node is added;
outside any graph context, with no graph tensor among the inputs, the op runs at once through
`graphops.runtime.eager.execute` and arrays come back in the same structure.
"""

import collections
import re
import sys
import warnings

import numpy as np

from graphops.runtime import eager
from graphops.building import graph as graph_lib
from graphops.building.values import convert_value, dtype_of, is_device_array
from graphops.building.tensor import Operation, Tensor, as_graph_element, set_handle_shapes
from graphops.registry import dtypes
from graphops.registry.attr_values import attr_value_string, normalize_attr_value
from graphops.registry.errors import InvalidArgumentError
from graphops.registry.op_def import arg_types
from graphops.registry.op_registry import get_op_def
from graphops.registry.shape_inference import infer_shapes
from graphops.registry.tensor_shape import shape_str

_OUTPUT_TUPLES = {}
_SIGNATURES = {}     # id(OpDef) -> its _Signature
_MISSING = object()
_PLAIN_VALUES = frozenset([np.ndarray, int, float, bool, str, bytes, type(None)])  # no graph here


class _Signature:
    """What building needs of an OpDef besides the OpDef, derived once per OpDef."""

    __slots__ = ("op_def", "inputs", "attrs", "type_defaults", "plain_outputs", "output_tuple",
                 "output_kinds", "shared_type_inputs", "ref_arg")

    def __init__(self, op_def):
        self.op_def = op_def
        # (ArgDef / AttrDef, the keyword that passes it)
        self.inputs = [(a, op_def.python_name(a.name)) for a in op_def.input_arg]
        self.attrs = [(a, op_def.python_name(a.name)) for a in op_def.attr]
        self.type_defaults = {a.name: a.default_value for a in op_def.attr
                              if a.type == "type" and a.has_default}
        self.plain_outputs = not any(a.number_attr or a.type_list_attr
                                     for a in op_def.output_arg)
        self.output_tuple = None
        if self.plain_outputs and len(op_def.output_arg) > 1:
            self.output_tuple = _output_tuple(op_def)
        # per output of a plain op: its fixed DType, or the name of its type attr; and
        # whether it is a reference (`Ref(T)`: a `float32_ref` tensor)
        self.output_kinds = [(a.type or a.type_attr, a.is_ref) for a in op_def.output_arg]
        # the inputs whose type attr (T) several values share: eager calls look among them
        # for an array to take T from (see `_seed_eager_type_attrs`)
        uses = collections.Counter(a.type_attr for a in op_def.input_arg if a.type_attr
                                   for _ in range(2 if a.number_attr else 1))
        self.shared_type_inputs = [(a, k) for a, k in self.inputs
                                   if a.type_attr and uses[a.type_attr] > 1]
        # the first `Ref(T)` arg (outputs first, as TF's generated wrappers check): no eager
        self.ref_arg = next((a.name for a in (*op_def.output_arg, *op_def.input_arg)
                             if a.is_ref), None)

    def output_types(self, attrs):
        """The flat output DTypes of a node with these attrs (as `output_types`)."""
        if not self.plain_outputs:
            return output_types(self.op_def, attrs)[0]
        types = [attrs[k] if type(k) is str else k for k, _ in self.output_kinds]
        return [t._as_ref if ref else t for t, (_, ref) in zip(types, self.output_kinds)]

    def result(self, flat, op=None, attrs=None):
        """The output structure (see `restructure`) of the flat outputs of one node; `attrs`
        are the node's attrs (by default those of `op`)."""
        if not self.plain_outputs:
            _, structure = output_types(self.op_def, op.attrs if attrs is None else attrs)
            return restructure(self.op_def, flat, structure, op)
        if len(flat) == 1:
            return flat[0]
        return self.output_tuple(*flat) if flat else op


def _dtype_of(value):
    """The DType of a Tensor or array as an input sees it: a reference tensor (a TF1
    variable's `float32_ref`) reads as its base type."""
    return dtype_of(value).base_dtype


def _signature(op_def):
    sig = _SIGNATURES.get(id(op_def))     # sig.op_def keeps the id from being reused
    if sig is None:
        sig = _SIGNATURES[id(op_def)] = _Signature(op_def)
    return sig


def _pop(keywords, name):
    """(key used, value) for `name` or `name_`, or (None, None)."""
    value = keywords.pop(name, _MISSING)
    if value is not _MISSING:
        return name, value
    key = name + "_"
    if key in keywords:
        return key, keywords.pop(key)
    return None, None


def _check_allowed(dtype, attr_def, param_name):
    if attr_def.allowed_values is not None and dtype not in attr_def.allowed_values:
        raise TypeError(f"Value passed to parameter '{param_name}' has DataType {dtype.name} not "
                        f"in list of allowed values: "
                        f"{', '.join(t.name for t in attr_def.allowed_values)}")


class _Inputs:
    """How input values become node inputs: graph Tensors (Consts made via `make_const`) or,
    with `make_const=None`, eager arrays (which then count as tensors, as TF2's do)."""

    __slots__ = ("make_const", "eager")

    def __init__(self, make_const=None):
        self.make_const = make_const
        self.eager = make_const is None

    def convert(self, value, dtype=None, preferred_dtype=None):
        if (type(value) is Tensor and value.dtype.is_ref
                and dtype in (None, value.dtype.base_dtype)):
            return value              # a TF1 variable's reference serves as a plain tensor
        return convert_value(value, dtype, preferred_dtype, arrays_are_tensors=self.eager)

    def ready_dtype(self, value):
        """The dtype of a value that is used as it is (a graph Tensor; in eager mode also a
        NumPy array of a tensor dtype), else None."""
        if type(value) is Tensor:
            return value.dtype.base_dtype
        if self.eager and type(value) is np.ndarray:
            try:
                return dtypes.as_dtype(value.dtype)
            except TypeError:
                return None
        return None

    def fixed_dtype(self, value):
        """The dtype of a value that already is a tensor here (TF's isinstance(t, Tensor))."""
        value = as_graph_element(value)
        eager_array = isinstance(value, (np.ndarray, np.generic)) or is_device_array(value)
        if isinstance(value, Tensor) or (self.eager and eager_array):
            return _dtype_of(value)
        return None

    def finish(self, value, name):
        if self.eager or isinstance(value, Tensor):
            return value
        return self.make_const(value, name)


def _convert_list(op_def, arg, input_name, values, attrs, defaults, inputs):
    op_type = op_def.name
    if not isinstance(values, (list, tuple)):
        raise TypeError(f"Expected list for '{input_name}' argument to '{op_type}' Op, not "
                        f"{values}.")
    dtype = default_dtype = None
    if arg.type is not None:
        dtype = arg.type
    elif arg.number_attr:
        dtype = attrs.get(arg.type_attr)
        if dtype is None:
            dtype = next((d for d in map(inputs.fixed_dtype, values) if d is not None), None)
        if dtype is None:
            default_dtype = defaults.get(arg.type_attr)
    try:
        converted = [inputs.convert(v, dtype, default_dtype) for v in values]
        if arg.number_attr and len({_dtype_of(v) for v in converted}) > 1:
            raise TypeError("types differ")
    except (TypeError, ValueError):
        observed = []
        for value in values:
            try:
                observed.append(_dtype_of(inputs.convert(value)).name)
            except (TypeError, ValueError):
                observed.append("<NOT CONVERTIBLE TO TENSOR>")
        prefix = (f"Tensors in list passed to '{input_name}' of '{op_type}' Op have types "
                  f"[{', '.join(observed)}]")
        if not arg.number_attr:
            raise TypeError(f"{prefix} that are invalid. Tensors: {values}") from None
        if arg.type is not None:
            raise TypeError(f"{prefix} that do not match expected type {dtype.name}.") from None
        if arg.type_attr in attrs:
            raise TypeError(f"{prefix} that do not match type {dtype.name} inferred from "
                            "earlier arguments.") from None
        raise TypeError(f"{prefix} that don't all match.") from None
    return [inputs.finish(v, f"{arg.name}_{i}") for i, v in enumerate(converted)]


def _convert_single(op_def, arg, input_name, value, attrs, inferred_from, defaults, inputs):
    """(node input, its DType) for the value passed to a single-tensor input."""
    op_type = op_def.name
    dtype = arg.type if arg.type is not None else attrs.get(arg.type_attr)
    ready = inputs.ready_dtype(value)
    if ready is not None and (dtype is None or ready is dtype):
        return value, ready           # what the conversion below gives back
    default_dtype = allowed = None
    if dtype is None and arg.type_attr in defaults:
        default_dtype = defaults[arg.type_attr]
        allowed = op_def.attr_def(arg.type_attr).allowed_values
    try:
        if dtype is None and allowed:
            try:
                inferred = inputs.convert(value)
            except TypeError:
                inferred = None
            if inferred is not None and _dtype_of(inferred) in allowed:
                converted = inferred
            else:
                converted = inputs.convert(value, None, default_dtype)
        else:
            converted = inputs.convert(value, dtype, default_dtype)
    except TypeError as err:
        if dtype is None:
            raise
        raise TypeError(f"Expected {dtype.name} passed to parameter '{arg.name}' of op "
                        f"'{op_type}', got {value!r} of type '{type(value).__name__}' instead. "
                        f"Error: {err}") from None
    except ValueError:
        try:
            observed = _dtype_of(inputs.convert(value)).name
        except ValueError as err:
            raise InvalidArgumentError(f"Tried to convert '{input_name}' to a tensor and "
                                       f"failed. Error: {err}") from None
        prefix = f"Input '{input_name}' of '{op_type}' Op has type {observed} that does not match"
        if arg.type is not None:
            raise TypeError(f"{prefix} expected type of {arg.type.name}.") from None
        key = arg.type_attr
        if key in defaults and key not in attrs:
            attrs[key] = defaults[key]
            inferred_from.setdefault(key, "Default in OpDef")
        raise TypeError(f"{prefix} type {attrs[key].name} of argument "
                        f"'{inferred_from[key]}'.") from None
    converted = inputs.finish(converted, arg.name)
    return converted, _dtype_of(converted)


def _convert_ref(op_def, input_name, value):
    """(node input, its base DType) for a `Ref(T)` input: a reference tensor, or a TF1
    variable's own (its `_ref()`); anything else is TF's TypeError."""
    to_ref = getattr(value, "_ref", None)
    if to_ref is not None and not isinstance(value, type):
        value = to_ref()
    value = as_graph_element(value)
    if not (isinstance(value, Tensor) and value.dtype.is_ref):
        raise TypeError(f"'{op_def.name}' Op requires that input '{input_name}' be a mutable "
                        "tensor (e.g.: a tf.Variable)")
    return value, value.dtype.base_dtype


def _infer_type_attr(op_def, arg, input_name, dtype, attrs, inferred_from):
    """Sets, or checks against an earlier input, the type attr (T) of a single input."""
    key = arg.type_attr
    if key not in attrs:
        _check_allowed(dtype, op_def.attr_def(key), input_name)
        attrs[key] = dtype
        inferred_from[key] = input_name
    elif attrs[key] is not dtype:
        raise TypeError(f"Input '{input_name}' of '{op_def.name}' Op has type {dtype.name} "
                        f"that does not match type {attrs[key].name} of argument "
                        f"'{inferred_from[key]}'.")


def _infer_list_attrs(op_def, arg, input_name, values, attrs, inferred_from, defaults):
    """Sets or checks the attrs a list input determines (N and T, or a type list)."""
    op_type = op_def.name
    types = [_dtype_of(v) for v in values]
    if arg.number_attr:
        n = len(values)
        if arg.number_attr in attrs:
            if n != attrs[arg.number_attr]:
                raise InvalidArgumentError(
                    f"List argument '{input_name}' to '{op_type}' Op with length {n} must match "
                    f"length {attrs[arg.number_attr]} of argument "
                    f"'{inferred_from[arg.number_attr]}'.")
        else:
            attrs[arg.number_attr] = n
            inferred_from[arg.number_attr] = input_name
            n_attr = op_def.attr_def(arg.number_attr)
            if n_attr.has_minimum and n < n_attr.minimum:
                raise InvalidArgumentError(
                    f"List argument '{input_name}' to '{op_type}' Op with length {n} shorter "
                    f"than minimum length {n_attr.minimum}.")
        if any(t != types[0] for t in types):
            raise TypeError(f"All tensors passed to '{input_name}' of '{op_type}' Op must have "
                            f"the same type. Got {types} instead.")
        if arg.type is None and arg.type_attr not in attrs:
            if types:
                attrs[arg.type_attr] = types[0]
                inferred_from[arg.type_attr] = input_name
                _check_allowed(types[0], op_def.attr_def(arg.type_attr), input_name)
            elif arg.type_attr not in defaults:
                raise TypeError(f"Don't know how to infer type variable from empty input list "
                                f"passed to input '{input_name}' of '{op_type}' Op.")
    elif arg.type_list_attr:
        if arg.type_list_attr in attrs:
            expected = attrs[arg.type_list_attr]
            if expected != types:
                raise TypeError(
                    f"Input '{input_name}' of '{op_type}' Op has type list of "
                    f"{', '.join(t.name for t in types)} that does not match type list "
                    f"{', '.join(t.name for t in expected)} of argument "
                    f"'{inferred_from[arg.type_list_attr]}'.")
        else:
            for t in types:
                _check_allowed(t, op_def.attr_def(arg.type_list_attr), input_name)
            attrs[arg.type_list_attr] = types
            inferred_from[arg.type_list_attr] = input_name


def _seed_eager_type_attrs(op_def, sig, keywords, inputs, attrs, inferred_from):
    """TF's eager rule (the fast path's MaybeGetDTypeForAttr): a type attr that several
    inputs share takes the dtype of the first of them that already is a tensor (here: an
    array, an eager result), wherever it stands; Python values are then converted to it.
    (Graph mode infers in argument order, as `_apply_op_helper`.)"""
    for arg, keyword in sig.shared_type_inputs:
        key = arg.type_attr
        if key in attrs:
            continue
        value = keywords.get(keyword, keywords.get(keyword + "_"))
        values = value if arg.number_attr and isinstance(value, (list, tuple)) else (value,)
        for item in values:
            dtype = inputs.fixed_dtype(item)
            if dtype is not None:
                _infer_type_attr(op_def, arg, keyword, dtype, attrs, inferred_from)
                break


def extract_inputs_and_attrs(op_def, keywords, inputs):
    """TF's input pass + remaining attrs: (flat input values, canonical attrs). Consumes
    `keywords`; anything left over is refused."""
    op_type = op_def.name
    sig = _signature(op_def)
    defaults = sig.type_defaults
    attrs, inferred_from, flat = {}, {}, []
    if inputs.eager and sig.shared_type_inputs:
        _seed_eager_type_attrs(op_def, sig, keywords, inputs, attrs, inferred_from)
    for arg, keyword in sig.inputs:
        input_name, values = _pop(keywords, keyword)
        if input_name is None:
            raise TypeError(f"No argument for input {keyword} found in {op_def.signature()}")
        if arg.number_attr or arg.type_list_attr:
            values = _convert_list(op_def, arg, input_name, values, attrs, defaults, inputs)
            _infer_list_attrs(op_def, arg, input_name, values, attrs, inferred_from, defaults)
            flat.extend(values)
        else:
            value, dtype = (_convert_ref(op_def, input_name, values) if arg.is_ref else
                            _convert_single(op_def, arg, input_name, values, attrs,
                                            inferred_from, defaults, inputs))
            if arg.type_attr:
                _infer_type_attr(op_def, arg, input_name, dtype, attrs, inferred_from)
            flat.append(value)
    for attr, keyword in sig.attrs:
        if attr.name in attrs:
            if attr.name in keywords:
                raise TypeError(f"Should not specify value for inferred attr '{attr.name}' for "
                                f"{op_type}.")
            continue
        key, value = _pop(keywords, keyword)
        if key is None:
            if attr.name in defaults:
                attrs[attr.name] = defaults[attr.name]
                continue
            if not attr.has_default:
                raise TypeError(f"No argument found for attr {attr.name} for {op_type}")
        attrs[attr.name] = normalize_attr_value(attr, value, op_type)
    if keywords:
        raise TypeError(f"{op_type} got unexpected keyword arguments: "
                        f"{', '.join(sorted(keywords))}.")
    return flat, attrs


def _with_refs(args, flat, structure):
    """`flat` with the DTypes of `Ref(T)` args made reference types (`float32_ref`)."""
    if not any(a.is_ref for a in args):
        return flat
    marked, i = [], 0
    for arg, n in zip(args, structure):
        count = 1 if n is None else n
        marked.extend(t._as_ref if arg.is_ref else t for t in flat[i:i + count])
        i += count
    return marked


def output_types(op_def, attrs):
    """(flat output dtypes, structure): None per single output, a length per list output;
    a `Ref(T)` output has a reference dtype."""
    flat, structure = arg_types(op_def.output_arg, attrs)
    return _with_refs(op_def.output_arg, flat, structure), structure


def input_types(op_def, attrs):
    """The flat input dtypes a node with these attrs expects (reference types for `Ref(T)`
    inputs)."""
    flat, structure = arg_types(op_def.input_arg, attrs)
    return _with_refs(op_def.input_arg, flat, structure)


def restructure(op_def, flat, structure, op=None):
    """TF's output structure: one output -> itself, several -> a namedtuple of the output
    names, none (or an empty list of a stateful op) -> the Operation."""
    result, i = [], 0
    for n in structure:
        result.append(flat[i] if n is None else list(flat[i:i + n]))
        i += 1 if n is None else n
    if not result or (len(result) == 1 and isinstance(result[0], list) and not result[0]
                      and op_def.is_stateful):
        return op
    if len(result) == 1:
        return result[0]
    return _output_tuple(op_def)(*result)


def _output_tuple(op_def):
    """The namedtuple class of an op's outputs (one per op name and output names)."""
    names = tuple(a.name for a in op_def.output_arg)
    cls = _OUTPUT_TUPLES.get((op_def.name, names))
    if cls is None:
        cls = _OUTPUT_TUPLES[(op_def.name, names)] = collections.namedtuple(op_def.name, names)
    return cls


def warn_deprecated(op_def):
    """TF's deprecation notice, as a DeprecationWarning pointing at the user's call."""
    dep = op_def.deprecation
    if dep is None:
        return
    level, frame = 2, sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(graph_lib.LIBRARY_DIRS):
        level, frame = level + 1, frame.f_back
    warnings.warn(f"Op {op_def.name} is deprecated. It will cease to work in GraphDef version "
                  f"{dep.version}. {dep.explanation}.", DeprecationWarning, stacklevel=level)


def _constant_value(tensor):
    op = tensor.op
    return op.get_attr("value") if op.type == "Const" else None


def summarize_node(name, op_type, attrs, input_names):
    """TF's SummarizeNodeDef: `{{node n}} = Op[a=1, b="x"](in, in:1, ^ctrl)`."""
    attr_text = ", ".join(f"{k}={attr_value_string(attrs[k])}" for k in sorted(attrs))
    return f"{{{{node {name}}}}} = {op_type}[{attr_text}]({', '.join(input_names)})"


def shape_fn_error(exc, node_summary, input_shapes):
    """The InvalidArgumentError for a failed shape function, with TF's suffix naming the node
    and its input shapes."""
    shapes = ", ".join(shape_str(s, unknown_rank="?") for s in input_shapes)
    return InvalidArgumentError(f"{getattr(exc, 'message', str(exc))} for '{node_summary}' "
                                f"with input shapes: {shapes}.")


def create_node(graph, op_def, name, keywords, make_const, control_inputs=None, device=None):
    """Adds one node named `name` (final) to `graph`; returns the Operation.

    `control_inputs=None` / `device=None` take the graph's TF1 stacks; `make_const(array,
    input_name)` turns converted Python values into Const tensors.
    """
    inputs, attrs = extract_inputs_and_attrs(op_def, keywords, _Inputs(make_const))
    if control_inputs is None:
        control_inputs = graph._control_dependencies_for_inputs(inputs)
    types = _signature(op_def).output_types(attrs)
    shapes = [t.shape for t in inputs]
    values = [_constant_value(t) for t in inputs]
    try:
        out_shapes, handle_shapes = infer_shapes(op_def, name, shapes, values, attrs,
                                                 len(types), [t._handle_shape for t in inputs])
    except ValueError as e:
        names = [t.op.name if t.value_index == 0 else t.name for t in inputs]
        names += ["^" + op.name for op in control_inputs]
        raise shape_fn_error(e, summarize_node(name, op_def.name, attrs, names), shapes) from None
    op = graph._create_op(op_def, name, inputs, attrs, types, out_shapes, control_inputs, device)
    set_handle_shapes(op, handle_shapes)
    return op


def build_op(graph, op_type, name=None, **keywords):
    """`_apply_op_helper` in graph mode: the node goes into `graph` under its name scopes.

    The node takes the name `with graph.name_scope(name or op_type) as scope` would give;
    Consts made from Python inputs are built inside that scope ("add/y")."""
    return _build(graph, op_type, name, keywords)


def _build(graph, op_type, name, keywords):
    op_def = get_op_def(op_type)
    if op_def.deprecation is not None:
        warn_deprecated(op_def)
    stack, scope = graph._scope_for(graph._checked_scope_name(name or op_type))

    def make_const(array, input_name):
        return build_op(graph, "Const", name=input_name, value=array, dtype=_dtype_of(array))

    with graph._set("name_stack", stack):     # inputs made while converting go in the scope
        op = create_node(graph, op_def, scope[:-1], keywords, make_const)
    return _signature(op_def).result(op.outputs, op)


def _graph_of_inputs(op_type, keywords):
    """The graph of the graph elements among the keyword values (all must agree), or None."""
    found = None
    for value in keywords.values():
        for item in value if isinstance(value, (list, tuple)) else (value,):
            if type(item) is not Tensor:
                if type(item) in _PLAIN_VALUES:
                    continue
                item = as_graph_element(item)
                if not isinstance(item, (Tensor, Operation)):
                    item = getattr(item, "values", None)      # an IndexedSlices' graph
                    if not isinstance(item, Tensor):
                        continue
            if found is None:
                found = item
            elif item.graph is not found.graph:
                raise InvalidArgumentError(f"{item} must be from the same graph as {found} "
                                           f"(building op '{op_type}').")
    return None if found is None else found.graph


def _run_eagerly(op_type, name, keywords):
    op_def = get_op_def(op_type)
    ref_arg = _signature(op_def).ref_arg
    if ref_arg is not None:
        snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", op_type).lower()
        raise RuntimeError(f"{snake} op does not support eager execution. Arg '{ref_arg}' is "
                           "a ref.")
    if op_def.deprecation is not None:
        warn_deprecated(op_def)
    inputs, attrs = extract_inputs_and_attrs(op_def, keywords, _Inputs())
    outputs = eager.execute(op_def, inputs, attrs, name or op_type)
    return _signature(op_def).result(outputs, attrs=attrs)


def apply_op(op_type, name=None, **keywords):
    """Builds a node of `op_type` (or runs it eagerly); returns its output structure.

    Graph mode when a graph was entered with `as_default()` on this thread or any input is a
    graph Tensor/Operation; otherwise the op runs eagerly on arrays.
    """
    return apply_op_keywords(op_type, name, keywords)


def apply_op_keywords(op_type, name, keywords):
    """`apply_op` with the keyword arguments as a dict, which it consumes."""
    graph = graph_lib.entered_graph()
    if not getattr(graph, "captures_outer", False):   # a function body captures outer inputs
        graph = _graph_of_inputs(op_type, keywords) or graph
    if graph is None:
        return _run_eagerly(op_type, name, keywords)
    return _build(graph, op_type, name, keywords)
