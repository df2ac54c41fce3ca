"""MetaGraphDef messages and files (`<checkpoint prefix>.meta`, the graphs of a SavedModel): a
graph with its SaverDef, collections, signatures and the op list it uses, binary or text, as
TF's `export_meta_graph` writes them and `import_meta_graph` reads them.

The collections travel as TF's CollectionDefs (`meta_graph_collections.py`); this module
builds and reads the rest: the GraphDef (with `export_scope` stripped, devices cleared,
default attrs stripped), the MetaInfoDef (stripped op list, version fields), the SaverDef.
"""

import importlib.metadata
import os
import re

from google.protobuf import message, text_format

from graphops.building.graph import get_default_graph
from graphops.interchange import messages
from graphops.interchange.graph_io import graph_def_to_proto
from graphops.interchange.proto.meta_graph_pb2 import MetaGraphDef
from graphops.interchange.proto.op_def_pb2 import OpDef, OpList
from graphops.interchange.tensor_bundle import AtomicFile
from graphops.registry import op_registry
from graphops.registry.errors import InvalidArgumentError

UNBOUND_INPUTS = "unbound_inputs"          # TF's collection of inputs from outside the scope
UNBOUND_PREFIX = "$unbound_inputs_"


def graphops_version():
    """graphops' version, written where TF writes its own (`tensorflow_version`)."""
    try:
        return importlib.metadata.version("graphops")
    except importlib.metadata.PackageNotFoundError:
        return ""


# ------------------------------------------------------------------ names and scopes

def strip_name_scope(name, export_scope):
    """`name` ("a/b", "^a/b", "a/b:0", "loc:@a/b") without the leading `export_scope/`
    (TF's `ops.strip_name_scope`)."""
    if not export_scope:
        return name
    scope = export_scope if export_scope.endswith("/") else export_scope + "/"
    pattern = r"([\^]|loc:@|^)" + re.escape(scope)
    return re.sub(pattern, r"\1", name, count=1)


def prepend_name_scope(name, import_scope):
    """`name` under `import_scope/` (TF's `ops.prepend_name_scope`), keeping a "^" or
    "loc:@" mark in front."""
    if not import_scope:
        return name
    scope = import_scope.rstrip("/")
    for mark in ("^", "loc:@"):
        if name.startswith(mark):
            return f"{mark}{scope}/{name[len(mark):]}"
    return f"{scope}/{name}"


def in_scope(name, export_scope):
    """Whether the node or tensor `name` lies under `export_scope` (every name when None)."""
    return not export_scope or name.startswith(export_scope.rstrip("/") + "/")


# ------------------------------------------------------------------ export

def _scoped_graph_def(proto, export_scope):
    """The nodes under `export_scope`, names stripped of it; inputs from outside become
    TF's "$unbound_inputs_<name>" placeholders. Returns (GraphDef, unbound input names)."""
    if not export_scope:
        return proto, []
    unbound = []
    kept = [node for node in proto.node if in_scope(node.name, export_scope)]
    del proto.node[:]
    for node in kept:
        inputs = []
        for name in node.input:
            if in_scope(name.lstrip("^"), export_scope):
                inputs.append(strip_name_scope(name, export_scope))
            else:
                mark = "^" if name.startswith("^") else ""
                inputs.append(f"{mark}{UNBOUND_PREFIX}{name.lstrip('^')}")
                unbound.append(inputs[-1])
        del node.input[:]
        node.input.extend(inputs)
        node.name = strip_name_scope(node.name, export_scope)
        if "_class" in node.attr:
            groups = [strip_name_scope(g.decode(), export_scope).encode()
                      for g in node.attr["_class"].list.s]
            del node.attr["_class"].list.s[:]
            node.attr["_class"].list.s.extend(groups)
        proto.node.add().CopyFrom(node)
    return proto, sorted(set(unbound))


def bind_unbound_inputs(graph_def, input_map):
    """A copy of the GraphDef message whose `$unbound_inputs_` references (what an
    `export_scope` cut off) read stand-in nodes, a Placeholder per tensor and a NoOp per
    control input, and the input_map keyed by those, so the importer maps them to what
    `input_map` gives for the `$unbound_inputs_` names."""
    graph_def = type(graph_def).FromString(graph_def.SerializeToString())
    stand_ins, mapped = {}, {}
    for key, value in input_map.items():
        name = key.lstrip("^")
        if not name.startswith(UNBOUND_PREFIX):
            mapped[key] = value
            continue
        node = "unbound_inputs/" + name[len(UNBOUND_PREFIX):].replace(":", "_")
        if key.startswith("^"):
            graph_def.node.add(name=node, op="NoOp")
            stand_ins[key] = "^" + node
            mapped["^" + node] = value
        else:
            value = get_default_graph().as_graph_element(value, allow_operation=False)
            placeholder = graph_def.node.add(name=node, op="Placeholder")
            placeholder.attr["dtype"].type = value.dtype.enum
            stand_ins[name] = node
            stand_ins[name + ":0" if ":" not in name else name] = node
            mapped[node + ":0"] = value
    for node in graph_def.node:
        inputs = [stand_ins.get(i, i) for i in node.input]
        del node.input[:]
        node.input.extend(inputs)
    return graph_def, mapped


def _node_defs(proto):
    """Every NodeDef of the GraphDef message, those of its functions included."""
    yield from proto.node
    for function in proto.library.function:
        yield from function.node_def


def _strip_default_attrs(proto):
    """Removes each attr equal to its OpDef's default (TF's `strip_default_attrs=True`)."""
    for node in _node_defs(proto):
        if not op_registry.is_registered(node.op):
            continue
        for attr_def in op_registry.get_op_def(node.op).attr:
            if not attr_def.has_default or attr_def.name not in node.attr:
                continue
            if node.attr[attr_def.name] == messages.attr_to_proto(attr_def.default_value):
                del node.attr[attr_def.name]


def _op_def_proto(op_def):
    """The registered OpDef as an OpDef message, without its documentation (TF's stripped
    op lists carry none)."""
    proto = OpDef(name=op_def.name, is_commutative=op_def.is_commutative,
                  is_aggregate=op_def.is_aggregate, is_stateful=op_def.is_stateful)
    for args, protos in ((op_def.input_arg, proto.input_arg),
                         (op_def.output_arg, proto.output_arg)):
        for a in args:
            protos.add(name=a.name, type=a.type.enum if a.type else 0, type_attr=a.type_attr,
                       number_attr=a.number_attr, type_list_attr=a.type_list_attr,
                       is_ref=a.is_ref)
    for a in op_def.attr:
        attr = proto.attr.add(name=a.name, type=a.type, has_minimum=a.has_minimum,
                              minimum=a.minimum or 0)
        if a.has_default:
            messages.attr_to_proto(a.default_value, attr.default_value)
        if a.allowed_values is not None:
            messages.attr_to_proto(list(a.allowed_values), attr.allowed_values)
    if op_def.deprecation is not None:
        proto.deprecation.version = op_def.deprecation.version
        proto.deprecation.explanation = op_def.deprecation.explanation
    return proto


def stripped_op_list(graph_def):
    """The OpList of the registered ops the GraphDef message uses (its functions' too),
    sorted by name (TF's `stripped_op_list_for_graph`); function names are not ops."""
    functions = {f.signature.name for f in graph_def.library.function}
    used = sorted({node.op for node in _node_defs(graph_def)} - functions)
    return OpList(op=[_op_def_proto(op_registry.get_op_def(name)) for name in used
                      if op_registry.is_registered(name)])


SAVE_AND_RESTORE_OPS = ("SaveV2", "Save", "SaveSlice", "LegacySave", "LegacySaveSlice",
                        "RestoreV2", "Restore", "RestoreSlice", "LegacyRestore",
                        "LegacyRestoreSlice")


def _scope_of(name):
    return name.lstrip("^").rpartition("/")[0]


def extraneous_saver_nodes(proto, saver_def):
    """The names of the nodes of other Savers than `saver_def`'s: every node in a scope
    holding a save or restore op, but for the scopes of `saver_def`'s ops (TF's
    `_find_extraneous_saver_nodes`, which assumes one Saver per name scope)."""
    keep = set()
    if saver_def is not None:
        keep = {_scope_of(saver_def.save_tensor_name.partition(":")[0]) + "/",
                _scope_of(saver_def.restore_op_name) + "/"}
    saver_nodes = {n.name for n in proto.node if n.op in SAVE_AND_RESTORE_OPS}
    scopes = {_scope_of(name) for name in saver_nodes} - saver_nodes
    drop = {scope + "/" for scope in scopes} - keep
    return {n.name for n in proto.node if any(n.name.startswith(d) for d in drop)}


def build_meta_graph_def(graph, graph_def=None, meta_info_def=None, saver_def=None,
                         export_scope=None, clear_devices=False, strip_default_attrs=False,
                         clear_extraneous_savers=False):
    """The MetaGraphDef of `graph` (or of the GraphDef given) without its collections.
    Returns (MetaGraphDef, unbound input names of the export scope, names of the other
    Savers' nodes left out)."""
    meta = MetaGraphDef()
    proto = graph_def_to_proto(graph if graph_def is None else graph_def)
    proto = type(proto).FromString(proto.SerializeToString())    # a copy to edit
    excluded = extraneous_saver_nodes(proto, saver_def) if clear_extraneous_savers else set()
    if excluded:
        kept = [node for node in proto.node if node.name not in excluded]
        del proto.node[:]
        proto.node.extend(kept)
    proto, unbound = _scoped_graph_def(proto, export_scope)
    if clear_devices:
        for node in _node_defs(proto):
            node.device = ""
    if strip_default_attrs:
        _strip_default_attrs(proto)
    meta.graph_def.CopyFrom(proto)
    if meta_info_def is not None:
        meta.meta_info_def.MergeFromString(meta_info_def.SerializeToString())
    info = meta.meta_info_def
    if not info.HasField("stripped_op_list"):
        info.stripped_op_list.CopyFrom(stripped_op_list(proto))
    info.tensorflow_version = info.tensorflow_version or graphops_version()
    info.tensorflow_git_version = info.tensorflow_git_version or f"graphops-{graphops_version()}"
    info.stripped_default_attrs = bool(strip_default_attrs)
    if saver_def is not None:
        meta.saver_def.MergeFromString(saver_def.SerializeToString())
    return meta, unbound, excluded


# ------------------------------------------------------------------ files

def write_meta_graph(filename, meta, as_text=False):
    """Writes the MetaGraphDef `meta` to `filename` (atomically)."""
    data = text_format.MessageToString(meta).encode() if as_text else meta.SerializeToString()
    with AtomicFile(filename) as f:
        f.write(data)


def as_meta_graph_def(value):
    """A MetaGraphDef message of ours from ours or TensorFlow's (same schema)."""
    if isinstance(value, MetaGraphDef):
        return value
    if getattr(getattr(value, "DESCRIPTOR", None), "full_name", None) != \
            "tensorflow.MetaGraphDef":
        raise TypeError(f"expected a MetaGraphDef message or a file name, got "
                        f"{type(value).__name__}")
    return MetaGraphDef.FromString(value.SerializeToString())


def read_meta_graph(filename):
    """The MetaGraphDef in `filename`, binary or text; a missing file is an OSError and
    one that is neither an InvalidArgumentError naming it (TF's `read_meta_graph_file`)."""
    if not os.path.isfile(filename):
        raise OSError(f"File {filename} does not exist.")
    with open(filename, "rb") as f:
        data = f.read()
    meta = MetaGraphDef()
    try:
        meta.ParseFromString(data)
        return meta
    except (message.DecodeError, RecursionError, ValueError):
        pass
    try:
        text_format.Merge(data.decode(), meta, allow_unknown_field=True)
    except (UnicodeDecodeError, text_format.ParseError) as e:
        raise InvalidArgumentError(f"Cannot parse file {filename}: {e}") from None
    return meta
