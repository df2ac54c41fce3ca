"""GraphDef dicts <-> TensorFlow's protobuf JSON (`json_format.MessageToJson` / `Parse`).

The text is exactly what protobuf's JSON mapping gives for the GraphDef message (see
messages.py for the dict form): camelCase names, defaults omitted, int64 as strings, floats
at their shortest float32 form, bytes base64. Reading accepts what `json_format.Parse`
accepts and turns every malformation into InvalidArgumentError. Nothing is evaluated or
unpickled.
"""

from google.protobuf import json_format

from graphops.interchange.messages import GraphDef, graph_def_from_proto, graph_def_to_proto
from graphops.registry.errors import InvalidArgumentError


def graph_def_to_json(graph_def, indent=2):
    """The GraphDef dict as the JSON text `json_format.MessageToJson` gives for it, keys
    sorted: protobuf lists map entries (a node's attrs) in its hash table's order, which a
    round trip may change, so equal GraphDefs would not always give equal text."""
    return json_format.MessageToJson(graph_def_to_proto(graph_def), indent=indent,
                                     sort_keys=True)


def graph_def_from_json(text):
    """Parses GraphDef JSON (TF's own, or ours) into a GraphDef dict."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    if not isinstance(text, str):
        raise InvalidArgumentError(f"GraphDef JSON must be a string, got {type(text).__name__}")
    message = GraphDef()
    try:
        json_format.Parse(text, message)
    except json_format.ParseError as e:
        raise InvalidArgumentError(f"Invalid GraphDef JSON: {e}") from None
    except RecursionError:
        raise InvalidArgumentError("Invalid GraphDef JSON: Failed to load JSON: nested too "
                                   "deeply.") from None
    return graph_def_from_proto(message)
