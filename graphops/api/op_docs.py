"""Docstrings for the generated op wrappers, built from the registry's OpDefs.

`op_docstring(op_def)` writes what TF's generated Python wrappers carry: the summary, the
description, an Args section (each input with its allowed types, each attr that is not
inferred from the inputs with its type, constraints and default), a Returns section, the
deprecation and the one-line OpDef signature.
"""

import keyword

from graphops.registry import dtypes
from graphops.registry.tensor_shape import TensorShape

_SCALAR_KIND = {"int": "int", "float": "float", "bool": "bool", "string": "string",
                "type": "gp.DType", "shape": "gp.TensorShape", "tensor": "np.ndarray",
                "func": "function name"}


def python_arg_name(name, op_def=None):
    """The keyword a wrapper takes for an arg or attr: TF's api_def rename when the op has one,
    and `lambda` -> `lambda_`."""
    if op_def is not None:
        name = op_def.python_name(name)
    return name + "_" if keyword.iskeyword(name) else name


def format_default(value):
    """An attr default as Python source (`True`, `"NHWC"`, `[1, 1]`, `gp.int32`)."""
    if isinstance(value, dtypes.DType):
        return f"gp.{value.name}"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, TensorShape):
        return "None" if value.rank is None else repr(value.dims)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(format_default(v) for v in value) + "]"
    return repr(value)


def _type_names(types):
    return ", ".join(f"`{t.name}`" for t in types)


def _tensor_text(arg, op_def, first_use):
    """"A `Tensor` ..." for one input or output, naming its type or where T comes from."""
    noun = "A mutable `Tensor`" if arg.is_ref else "A `Tensor`"
    if arg.number_attr:
        n_attr = op_def.attr_def(arg.number_attr)
        noun = f"A list of at least {n_attr.minimum if n_attr.has_minimum else 1} `Tensor` objects"
        if arg.type is not None:
            return f"{noun} with type `{arg.type.name}`."
        return f"{noun} with the same type{_type_clause(arg.type_attr, op_def, first_use, 'in: ')}"
    if arg.type_list_attr:
        attr = op_def.attr_def(arg.type_list_attr)
        allowed = f" with types from: {_type_names(attr.allowed_values)}" \
            if attr.allowed_values else ""
        return f"A list of `Tensor` objects{allowed}."
    if arg.type is not None:
        return f"{noun} of type `{arg.type.name}`."
    return noun + _type_clause(arg.type_attr, op_def, first_use, "Must be one of the following types: ")


def _type_clause(type_attr, op_def, first_use, lead):
    first = first_use.get(type_attr)
    if first is not None:
        return f". Must have the same type as `{python_arg_name(first, op_def)}`."
    attr = op_def.attr_def(type_attr)
    if attr is not None and attr.allowed_values:
        sep = " " if lead == "in: " else ". "
        return f"{sep}{lead}{_type_names(attr.allowed_values)}."
    return "."


def _output_text(arg, op_def, first_use):
    """Returns-section text: "Has the same type as `x`." for a type set by an input."""
    if arg.type_attr and not arg.number_attr:
        if arg.type_attr in first_use:
            return f"A `Tensor`. Has the same type as `{python_arg_name(first_use[arg.type_attr], op_def)}`."
        return f"A `Tensor` of type `{arg.type_attr}`."
    return _tensor_text(arg, op_def, first_use)


def _attr_text(attr):
    kind = _SCALAR_KIND[attr.base_type]
    if attr.is_list:
        text = f"list of `{kind}s`" if attr.base_type in ("int", "float", "bool", "string") \
            else f"list of `{kind}` objects"
        if attr.has_minimum:
            text += f" that has length `>= {attr.minimum}`"
    else:
        text = f"`{kind}`"
        if attr.has_minimum:
            text += f" that is `>= {attr.minimum}`"
    if attr.allowed_values is not None:
        shown = ", ".join(format_default(v) for v in attr.allowed_values)
        text += f" from: `{shown}`"
    article = "An" if text.startswith("`int") else "A"
    if attr.has_default:
        return f"An optional {text}. Defaults to `{format_default(attr.default_value)}`."
    return f"{article} {text}."


def _indent(text, prefix):
    return "\n".join(prefix + line if line.strip() else "" for line in text.splitlines())


def op_docstring(op_def, scope_api=False):
    """The wrapper docstring for an OpDef (`scope_api=True` for the gp.ops class)."""
    lines = [op_def.summary or f"The {op_def.name} op.", ""]
    if op_def.description:
        lines += [op_def.description, ""]
    if op_def.deprecation is not None:
        dep = op_def.deprecation
        lines += [f"Deprecated at GraphDef version {dep.version}: {dep.explanation}.", ""]
    lines.append("Args:")
    if scope_api:
        lines.append("  scope: A `gp.Scope` object.")
    first_use = {}
    for arg in op_def.input_arg:
        lines.append(f"  {python_arg_name(arg.name, op_def)}: {_tensor_text(arg, op_def, first_use)}")
        if arg.description:
            lines.append(_indent(arg.description, "    "))
        if arg.type_attr and arg.type_attr not in first_use:
            first_use[arg.type_attr] = arg.name
    inferred = op_def.inferred_attrs()
    for attr in op_def.attr:
        if attr.name in inferred:
            continue
        lines.append(f"  {python_arg_name(attr.name, op_def)}: {_attr_text(attr)}")
        if attr.description:
            lines.append(_indent(attr.description, "    "))
    if not scope_api:
        lines.append("  name: A name for the operation (optional).")
    lines += ["", "Returns:"]
    outputs = op_def.output_arg
    if not outputs:
        lines.append("  The created Operation." if not scope_api else
                     "  An object whose `.operation` is the created Operation.")
    elif len(outputs) == 1:
        lines.append("  " + _output_text(outputs[0], op_def, first_use))
    else:
        names = ", ".join(python_arg_name(a.name) for a in outputs)
        lines.append(f"  A tuple of `Tensor` objects ({names}).")
        for arg in outputs:
            lines.append(f"    {python_arg_name(arg.name, op_def)}: "
                         f"{_output_text(arg, op_def, first_use)}")
    lines += ["", "OpDef:", "  " + op_def.signature()]
    return "\n".join(lines)
