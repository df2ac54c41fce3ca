"""MetaGraphDef files (`<checkpoint prefix>.meta`): a graph with the SaverDef of its Saver,
binary or text, as TF's Saver writes them and `import_meta_graph` reads them."""

import os

from google.protobuf import message, text_format

from graphops.interchange.graph_io import graph_def_to_proto
from graphops.interchange.proto.meta_graph_pb2 import MetaGraphDef
from graphops.interchange.tensor_bundle import AtomicFile
from graphops.registry.errors import InvalidArgumentError


def meta_graph_def(graph, saver_def=None, clear_devices=False):
    """The MetaGraphDef message of `graph` and (if given) its Saver's SaverDef."""
    meta = MetaGraphDef()
    meta.graph_def.CopyFrom(graph_def_to_proto(graph))
    if clear_devices:
        for node in meta.graph_def.node:
            node.device = ""
    if saver_def is not None:
        meta.saver_def.CopyFrom(saver_def)
    return meta


def write_meta_graph(filename, meta, as_text=False):
    """Writes the MetaGraphDef `meta` to `filename` (atomically)."""
    data = text_format.MessageToString(meta).encode() if as_text else meta.SerializeToString()
    with AtomicFile(filename) as f:
        f.write(data)


def read_meta_graph(filename):
    """The MetaGraphDef in `filename`, binary or text (fields graphops does not know are
    ignored)."""
    if not os.path.isfile(filename):
        raise OSError(f"File {filename} does not exist.")
    with open(filename, "rb") as f:
        data = f.read()
    meta = MetaGraphDef()
    try:
        meta.ParseFromString(data)
        return meta
    except message.DecodeError:
        pass
    try:
        text_format.Merge(data.decode(), meta, allow_unknown_field=True)
    except (UnicodeDecodeError, text_format.ParseError) as e:
        raise InvalidArgumentError(f"Cannot parse file {filename}: {e}") from None
    return meta
