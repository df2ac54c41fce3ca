"""GraphDef files: binary protobuf (`.pb`), protobuf text (`.pbtxt`) or JSON (`.json`).

`read_graph_def(path)` gives the GraphDef dict (graphops' internal form),
`write_graph(graph_or_graph_def, logdir, name, as_text=True)` writes one as TF's
`tf.io.write_graph` does, `graph_def_to_proto` gives the protobuf message and
`graph_to_proto` the message `Graph.as_graph_def()` returns. Reading is bounded:
the file must fit the memory budget and protobuf's 2 GiB message limit, and anything
malformed (truncated bytes, wrong wire types, bad text) is an InvalidArgumentError.
"""

import os

import numpy as np
from google.protobuf import descriptor, message, text_format, unknown_fields

from graphops.building.graph import Graph
from graphops.interchange import graph_json, messages
from graphops.interchange.graph_def import as_graph_def
from graphops.interchange.messages import GraphDef, graph_def_from_proto
from graphops.interchange.tensor_bundle import AtomicFile
from graphops.registry import memory
from graphops.registry.errors import InvalidArgumentError

_MAX_MESSAGE_BYTES = 2**31 - 1      # protobuf refuses larger messages
_TEXT_SUFFIXES = (".pbtxt", ".pbtext", ".txt", ".prototxt")


def graph_def_to_proto(graph_or_graph_def):
    """The GraphDef message of a Graph, a GraphDef dict or a GraphDef message (ours as is,
    TensorFlow's converted)."""
    if isinstance(graph_or_graph_def, Graph):
        return graph_to_proto(graph_or_graph_def)
    return messages.graph_def_to_proto(graph_or_graph_def)


def graph_to_proto(graph, add_shapes=False):
    """The GraphDef message of a Graph as TF's `Graph.as_graph_def` gives it: with
    `add_shapes`, `_output_shapes` on the nodes that have outputs (none on the others)."""
    proto = messages.graph_def_to_proto(as_graph_def(graph, add_shapes))
    if add_shapes:
        for node in proto.node:
            if not node.attr["_output_shapes"].list.shape:
                del node.attr["_output_shapes"]
    return proto


def graph_def_from_bytes(data):
    """A binary GraphDef as a GraphDef dict."""
    if len(data) > _MAX_MESSAGE_BYTES:
        raise InvalidArgumentError(f"A GraphDef of {len(data)} bytes exceeds protobuf's limit "
                                   f"of {_MAX_MESSAGE_BYTES} bytes")
    try:
        proto = GraphDef.FromString(bytes(data))
    except (message.DecodeError, RecursionError, ValueError) as e:
        raise InvalidArgumentError(f"Invalid binary GraphDef: {e or 'could not parse'}") from None
    _check_wire_types(proto, "GraphDef")
    return graph_def_from_proto(proto)


def _check_wire_types(proto, path):
    """Protobuf keeps a known field sent with the wrong wire type as an unknown field;
    that is a malformed GraphDef. (Unknown field numbers are ignored, as TF does.)"""
    known = proto.DESCRIPTOR.fields_by_number
    for field in unknown_fields.UnknownFieldSet(proto):
        if field.field_number in known:
            name = known[field.field_number].name
            raise InvalidArgumentError(f"Invalid binary GraphDef: {path}.{name} has wire type "
                                       f"{field.wire_type}, which does not fit its type")
    for field, value in proto.ListFields():
        if field.type != descriptor.FieldDescriptor.TYPE_MESSAGE:
            continue
        if field.message_type.GetOptions().map_entry:
            value_field = field.message_type.fields_by_name["value"]
            if value_field.type == descriptor.FieldDescriptor.TYPE_MESSAGE:
                for key, item in value.items():
                    _check_wire_types(item, f"{path}.{field.name}[{key}]")
        elif field.is_repeated:
            for i, item in enumerate(value):
                _check_wire_types(item, f"{path}.{field.name}[{i}]")
        else:
            _check_wire_types(value, f"{path}.{field.name}")


def graph_def_from_text(text):
    """A GraphDef in protobuf text format as a GraphDef dict."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    proto = GraphDef()
    try:
        text_format.Parse(text, proto)
    except (text_format.ParseError, message.DecodeError, RecursionError, ValueError) as e:
        raise InvalidArgumentError(f"Invalid GraphDef text: {e}") from None
    return graph_def_from_proto(proto)


def read_graph_def(path):
    """Reads a GraphDef file as a GraphDef dict: JSON for `.json`, protobuf text for
    `.pbtxt` (also `.pbtext`, `.prototxt`, `.txt`), binary protobuf otherwise."""
    path = os.fspath(path)
    size = os.path.getsize(path)
    memory.check_allocation([size], np.uint8, f"GraphDef file {path}")
    if size > _MAX_MESSAGE_BYTES:
        raise InvalidArgumentError(f"GraphDef file {path} has {size} bytes, more than "
                                   f"protobuf's limit of {_MAX_MESSAGE_BYTES} bytes")
    with open(path, "rb") as f:
        data = f.read(_MAX_MESSAGE_BYTES + 1)
    lower = path.lower()
    if lower.endswith(".json"):
        return graph_json.graph_def_from_json(data)
    if lower.endswith(_TEXT_SUFFIXES):
        return graph_def_from_text(data)
    return graph_def_from_bytes(data)


def write_graph(graph_or_graph_def, logdir, name, as_text=True):
    """Writes a Graph or GraphDef (message or dict) to `logdir/name`, as protobuf text or
    binary, creating `logdir` if needed; returns the path (TF's `tf.io.write_graph`, which
    writes any other message it is given as it is, too)."""
    if isinstance(graph_or_graph_def, (Graph, dict)) or \
            not hasattr(graph_or_graph_def, "SerializeToString"):
        proto = graph_def_to_proto(graph_or_graph_def)
    else:
        proto = graph_or_graph_def
    os.makedirs(logdir, exist_ok=True)
    path = os.path.join(logdir, name)
    data = (text_format.MessageToString(proto).encode("utf-8") if as_text
            else proto.SerializeToString(deterministic=True))
    with AtomicFile(path) as f:     # a reader never sees half a file
        f.write(data)
    return path
