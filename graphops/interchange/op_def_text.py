"""An OpDef in TF's text-proto form, as `python -m graphops ops NAME` prints it."""

from graphops.interchange.graph_json import attr_to_proto
from registry import dtypes


def op_def_text(op_def):
    """The OpDef in TF's text-proto form (`op { name: "Conv2D" input_arg { ... } ... }`)."""
    def arg(a):
        fields = [("name", a.name)]
        if a.description:
            fields.append(("description", a.description))
        fields += [(k, getattr(a, k)) for k in ("type", "type_attr", "number_attr",
                                                "type_list_attr", "is_ref") if getattr(a, k)]
        return fields

    def attr(a):
        fields = [("name", a.name), ("type", a.type)]
        if a.has_default:
            fields.append(("default_value", attr_to_proto(a.default_value)))
        if a.description:
            fields.append(("description", a.description))
        if a.has_minimum:
            fields += [("has_minimum", True), ("minimum", a.minimum)]
        if a.allowed_values is not None:
            fields.append(("allowed_values", attr_to_proto(list(a.allowed_values))))
        return fields

    fields = [("name", op_def.name)]
    fields += [("input_arg", arg(a)) for a in op_def.input_arg]
    fields += [("output_arg", arg(a)) for a in op_def.output_arg]
    fields += [("attr", attr(a)) for a in op_def.attr]
    if op_def.deprecation is not None:
        fields.append(("deprecation", [("version", op_def.deprecation.version),
                                       ("explanation", op_def.deprecation.explanation)]))
    for key in ("summary", "description", "is_commutative", "is_stateful"):
        if getattr(op_def, key):
            fields.append((key, getattr(op_def, key)))
    return "\n".join(_text_lines([("op", fields)], "")) + "\n"


def _text_lines(fields, indent):
    """Text-proto lines for [(name, value)]; dict/list-of-pairs values are sub-messages."""
    for name, value in fields:
        if isinstance(value, dict):
            value = [(k, v) for k, vs in value.items()
                     for v in (vs if isinstance(vs, list) else [vs])]
        if isinstance(value, list):
            yield f"{indent}{name} {{"
            yield from _text_lines(value, indent + "  ")
            yield f"{indent}}}"
        else:
            yield f"{indent}{name}: {_text_scalar(value)}"


def _text_scalar(value):
    if isinstance(value, dtypes.DType):
        return value.tf_name
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    return repr(value)
