"""A graph's collections as a MetaGraphDef's CollectionDefs and back (TF's
`add_collection_def` and the collection half of `import_scoped_meta_graph`).

A collection whose name has registered proto functions (`register_proto_function`: the
variable collections, savers) travels as a bytes_list of serialized messages; any other
as TF writes it, by the kind of its first item: strings and bytes a bytes_list, ints an
int64_list, floats a float_list, `google.protobuf.Any` messages an any_list, graph
elements (Tensors, Operations) a node_list of their names.
"""

import logging
import numbers
import os

from google.protobuf import any_pb2

from graphops.building.graph_collections import (GraphKeys, get_collection_proto_type,
                                                 get_from_proto_function,
                                                 get_to_proto_function)
from graphops.interchange.meta_graph import (UNBOUND_INPUTS, MetaGraphDef,
                                             build_meta_graph_def, in_scope,
                                             prepend_name_scope, strip_name_scope,
                                             write_meta_graph)
from graphops.registry.errors import InvalidArgumentError

_log = logging.getLogger("graphops")

VARIABLE_COLLECTIONS = (GraphKeys.GLOBAL_VARIABLES, GraphKeys.LOCAL_VARIABLES,
                        GraphKeys.METRIC_VARIABLES, GraphKeys.MODEL_VARIABLES,
                        GraphKeys.TRAINABLE_VARIABLES, GraphKeys.MOVING_AVERAGE_VARIABLES,
                        GraphKeys.CONCATENATED_VARIABLES,
                        GraphKeys.TRAINABLE_RESOURCE_VARIABLES)

# TF's collections of serialized objects graphops has no class for (TF1 queue runners and
# control-flow contexts); an import leaves them out rather than holding raw bytes
_WITHOUT_OBJECTS = (GraphKeys.QUEUE_RUNNERS, GraphKeys.COND_CONTEXT, GraphKeys.WHILE_CONTEXT)


def _kind_name(item):
    """The CollectionDef field TF picks for a collection whose first item is `item`."""
    if isinstance(item, (str, bytes)):
        return "bytes_list"
    if isinstance(item, numbers.Integral):
        return "int64_list"
    if isinstance(item, numbers.Real):
        return "float_list"
    if getattr(getattr(item, "DESCRIPTOR", None), "full_name", None) == "google.protobuf.Any":
        return "any_list"
    return "node_list"


def _included(item, export_scope, exclude_nodes):
    name = getattr(item, "name", None)
    if not isinstance(name, str):
        return True
    return in_scope(name, export_scope) and name.partition(":")[0] not in exclude_nodes


def add_collection_def(meta, key, graph, export_scope=None, exclude_nodes=(),
                       override_contents=None):
    """Adds the collection `key` of `graph` (or `override_contents`) to the MetaGraphDef
    `meta`, less the items of `exclude_nodes` (nothing when it is empty, or its key is not a
    string); a collection that cannot be serialized is left out with a warning, as TF
    does."""
    if not isinstance(key, (str, bytes)):
        _log.warning("Only collections with string type keys will be serialized. This key "
                     "has %s", type(key))
        return
    key = key.decode() if isinstance(key, bytes) else key
    items = graph.get_collection(key) if override_contents is None else override_contents
    items = [x for x in items if _included(x, export_scope, exclude_nodes)]
    if not items:
        return
    try:
        _fill_collection_def(meta.collection_def[key], key, items, export_scope)
    except Exception as e:      # noqa: BLE001  (TF logs any failure and drops the key)
        _log.warning("Issue encountered when serializing: %s.\n%s", key, e)
        del meta.collection_def[key]


def _fill_collection_def(col_def, key, items, export_scope):
    to_proto = get_to_proto_function(key)
    if to_proto:
        proto_type = get_collection_proto_type(key)
        for item in items:
            proto = to_proto(item, export_scope=export_scope)
            if proto:
                if proto_type is not None and \
                        proto.DESCRIPTOR.full_name != proto_type.DESCRIPTOR.full_name:
                    raise TypeError(f"{key}: to_proto gave a {proto.DESCRIPTOR.full_name}, "
                                    f"not a {proto_type.DESCRIPTOR.full_name}")
                col_def.bytes_list.value.append(proto.SerializeToString())
        return
    kind = _kind_name(items[0])
    if kind == "node_list":
        col_def.node_list.value.extend(strip_name_scope(x.name, export_scope) for x in items)
    elif kind == "bytes_list":
        col_def.bytes_list.value.extend(x.encode() if isinstance(x, str) else bytes(x)
                                        for x in items)
    elif kind == "any_list":
        for x in items:
            col_def.any_list.value.add(type_url=x.type_url, value=x.value)
    else:
        getattr(col_def, kind).value.extend(items)


def add_collection_defs(meta, graph, collection_list=None, export_scope=None,
                        unbound_inputs=(), exclude_nodes=(), saver_def=None):
    """Adds `collection_list` (default: every collection of `graph`) to `meta`, and
    TF's "unbound_inputs" collection when the export scope cut inputs off. With
    `saver_def`, the SAVERS collection holds that Saver only (`clear_extraneous_savers`)."""
    keys = graph.get_all_collection_keys() if collection_list is None else collection_list
    for key in keys:
        override = None
        if saver_def is not None and key == GraphKeys.SAVERS:
            override = [get_from_proto_function(key)(saver_def)]
        add_collection_def(meta, key, graph, export_scope, exclude_nodes, override)
    if unbound_inputs:
        meta.collection_def[UNBOUND_INPUTS].bytes_list.value.extend(
            name.encode() for name in unbound_inputs)


def _sorted_collections(meta):
    """TRAINABLE_VARIABLES first (so a variable is made from it), then by name."""
    first = [GraphKeys.TRAINABLE_VARIABLES] if \
        GraphKeys.TRAINABLE_VARIABLES in meta.collection_def else []
    rest = sorted(k for k in meta.collection_def if k != GraphKeys.TRAINABLE_VARIABLES)
    return [(k, meta.collection_def[k]) for k in first + rest]


def restore_collections(meta, graph, import_scope=None, predicate=lambda key: True):
    """Adds the MetaGraphDef's collections (those whose key `predicate` accepts) to
    `graph`, whose nodes it was imported into under `import_scope`; a variable listed in
    several collections becomes one object."""
    made = {}
    for key, col_def in _sorted_collections(meta):
        if key == UNBOUND_INPUTS or not predicate(key):
            continue
        kind = col_def.WhichOneof("kind")
        if kind is None:
            _log.error("Cannot identify data type for collection %s. Skipping.", key)
            continue
        from_proto = get_from_proto_function(
            GraphKeys.GLOBAL_VARIABLES if key == GraphKeys.METRIC_VARIABLES else key)
        if key in _WITHOUT_OBJECTS and not from_proto:
            _log.info("Collection %s is skipped: graphops has no objects to make of it.", key)
            continue
        if from_proto and kind == "bytes_list":
            _restore_protos(graph, key, col_def, from_proto, import_scope, made)
        else:
            _restore_plain(graph, key, kind, getattr(col_def, kind), import_scope)


def _restore_protos(graph, key, col_def, from_proto, import_scope, made):
    proto_type = get_collection_proto_type(
        GraphKeys.GLOBAL_VARIABLES if key == GraphKeys.METRIC_VARIABLES else key)
    shared = key in VARIABLE_COLLECTIONS
    for value in col_def.bytes_list.value:
        item = made.get(value) if shared else None
        if item is None:
            proto = proto_type()
            try:
                proto.ParseFromString(value)
            except Exception:      # noqa: BLE001  (protobuf's DecodeError and others)
                raise InvalidArgumentError(f"Collection '{key}' holds a value that is not a "
                                           f"serialized {proto.DESCRIPTOR.full_name}") from None
            try:
                item = from_proto(proto, import_scope=import_scope)
            except (KeyError, ValueError, TypeError) as e:
                raise _missing(key, proto, e) from None
            if shared:
                made[value] = item
        graph.add_to_collection(key, item)


def _missing(key, what, error):
    """The error for a collection item naming what the imported graph lacks."""
    what = str(what).strip().replace("\n", ", ")
    reason = error.args[0] if error.args else error
    return InvalidArgumentError(f"Collection '{key}' holds {what}, which the imported graph "
                                f"cannot give: {reason}")


def _restore_plain(graph, key, kind, field, import_scope):
    for value in field.value:
        if kind == "node_list":
            try:
                value = graph.as_graph_element(prepend_name_scope(value, import_scope))
            except (KeyError, ValueError) as e:
                raise _missing(key, value, e) from None
        elif kind == "int64_list":
            value = int(value)
        elif kind == "any_list":
            value = any_pb2.Any(type_url=value.type_url, value=value.value)
        graph.add_to_collection(key, value)


def export_scoped_meta_graph(graph, filename=None, meta_info_def=None, graph_def=None,
                             saver_def=None, collection_list=None, as_text=False,
                             export_scope=None, clear_devices=False, strip_default_attrs=False,
                             clear_extraneous_savers=False):
    """The MetaGraphDef of `graph` with its collections (`collection_list`, default all),
    also written to `filename` (its folder made) when given; `clear_extraneous_savers`
    leaves out the nodes of Savers other than `saver_def`'s and keeps only it in SAVERS."""
    if isinstance(meta_info_def, dict):
        meta_info_def = MetaGraphDef.MetaInfoDef(**meta_info_def)
    meta, unbound, excluded = build_meta_graph_def(
        graph, graph_def=graph_def, meta_info_def=meta_info_def, saver_def=saver_def,
        export_scope=export_scope, clear_devices=clear_devices,
        strip_default_attrs=strip_default_attrs,
        clear_extraneous_savers=clear_extraneous_savers)
    add_collection_defs(meta, graph, collection_list, export_scope, unbound, excluded,
                        saver_def if clear_extraneous_savers else None)
    if filename:
        folder = os.path.dirname(filename)
        if folder:
            os.makedirs(folder, exist_ok=True)
        write_meta_graph(filename, meta, as_text)
    return meta
