"""An OpDef in TF's text-proto form, as `python -m graphops ops NAME` prints it."""

from google.protobuf import text_format

from graphops.interchange.messages import attr_to_proto
from graphops.interchange.proto.op_def_pb2 import OpList


def op_def_text(op_def):
    """The OpDef as an OpList text proto (`op { name: "Conv2D" input_arg { ... } ... }`)."""
    op_list = OpList()
    proto = op_list.op.add(name=op_def.name, summary=op_def.summary,
                           description=op_def.description,
                           is_commutative=op_def.is_commutative,
                           is_stateful=op_def.is_stateful)
    for args, protos in ((op_def.input_arg, proto.input_arg),
                         (op_def.output_arg, proto.output_arg)):
        for a in args:
            protos.add(name=a.name, description=a.description,
                       type=a.type.enum if a.type else 0, type_attr=a.type_attr,
                       number_attr=a.number_attr, type_list_attr=a.type_list_attr,
                       is_ref=a.is_ref)
    for a in op_def.attr:
        attr = proto.attr.add(name=a.name, type=a.type, description=a.description,
                              has_minimum=a.has_minimum, minimum=a.minimum or 0)
        if a.has_default:
            attr_to_proto(a.default_value, attr.default_value)
        if a.allowed_values is not None:
            attr_to_proto(list(a.allowed_values), attr.allowed_values)
    if op_def.deprecation is not None:
        proto.deprecation.version = op_def.deprecation.version
        proto.deprecation.explanation = op_def.deprecation.explanation
    return text_format.MessageToString(op_list)
