"""gp.train.export_meta_graph / import_meta_graph: a graph with its collections, SaverDef and
op list as TF's MetaGraphDef, and back, so a restored model trains on.

    gp.train.export_meta_graph("/tmp/model.meta")           # or Saver.save writes it
    saver = gp.train.import_meta_graph("/tmp/model.meta")   # into the default graph
    saver.restore(sess, "/tmp/model")
    gp.trainable_variables(), gp.get_collection("train_op")  # hold what they held

Variables travel as VariableDef messages (`Variable.to_proto` / `Variable.from_proto`) and
Savers as SaverDefs, through the collection proto functions registered here, as TF
registers them (on first use: protobuf loads then); other collections as TF writes them
(`interchange/meta_graph_collections`).
"""

import os

from graphops.building.graph import executing_eagerly, get_default_graph
from graphops.building.graph_collections import GraphKeys, register_proto_function
from graphops.training import variables
from graphops.training.saver import Saver

_EAGER = ("Exporting/importing meta graphs is not supported when eager execution is enabled. "
          "No graph exists when eager execution is enabled.")


def _variable_to_proto(variable, export_scope=None):
    return variable.to_proto(export_scope=export_scope)


def _variable_from_proto(variable_def, import_scope=None):
    return variables.Variable.from_proto(variable_def, import_scope=import_scope)


def _scoped_saver_def(saver_def, rename):
    from graphops.interchange.proto.saver_pb2 import SaverDef
    proto = SaverDef()
    proto.CopyFrom(saver_def)
    for field in ("filename_tensor_name", "save_tensor_name", "restore_op_name"):
        setattr(proto, field, rename(getattr(proto, field)))
    return proto


def _saver_to_proto(saver, export_scope=None):
    from graphops.interchange import meta_graph
    if not saver.saver_def.restore_op_name.startswith(export_scope or ""):
        return None
    return _scoped_saver_def(saver.saver_def,
                             lambda n: meta_graph.strip_name_scope(n, export_scope))


def _saver_from_proto(saver_def, import_scope=None):
    from graphops.interchange import meta_graph
    return Saver(saver_def=_scoped_saver_def(
        saver_def, lambda n: meta_graph.prepend_name_scope(n, import_scope)))


_registered = []
_VARIABLE_DEF_COLLECTIONS = (          # the collections TF registers VariableDef functions for
    GraphKeys.GLOBAL_VARIABLES, GraphKeys.TRAINABLE_VARIABLES, GraphKeys.LOCAL_VARIABLES,
    GraphKeys.MODEL_VARIABLES, GraphKeys.MOVING_AVERAGE_VARIABLES, GraphKeys.GLOBAL_STEP,
    GraphKeys.METRIC_VARIABLES)


def register_collection_protos():
    """Registers (once) the proto functions of the variable collections and of SAVERS, as
    TF's variables.py and saver.py do."""
    if _registered:
        return
    from graphops.interchange.proto.saver_pb2 import SaverDef
    from graphops.interchange.proto.variable_pb2 import VariableDef
    for key in _VARIABLE_DEF_COLLECTIONS:
        register_proto_function(key, proto_type=VariableDef, to_proto=_variable_to_proto,
                                from_proto=_variable_from_proto)
    register_proto_function(GraphKeys.SAVERS, proto_type=SaverDef, to_proto=_saver_to_proto,
                            from_proto=_saver_from_proto)
    _registered.append(True)


def export_meta_graph(filename=None, meta_info_def=None, graph_def=None, saver_def=None,
                      collection_list=None, as_text=False, graph=None, export_scope=None,
                      clear_devices=False, clear_extraneous_savers=False,
                      strip_default_attrs=False, save_debug_info=False, **kwargs):
    """The MetaGraphDef of `graph` (the default graph): its GraphDef (under `export_scope`,
    names stripped of it), MetaInfoDef, SaverDef and collections (`collection_list`, default
    all); also written to `filename` (text with `as_text`) when given.
    `clear_extraneous_savers` leaves out the nodes of other Savers than `saver_def`'s (and
    keeps only it in SAVERS); `save_debug_info` is accepted (graphops writes no debug
    info)."""
    if executing_eagerly():
        raise RuntimeError(_EAGER)
    from graphops.interchange.meta_graph_collections import export_scoped_meta_graph
    register_collection_protos()
    return export_scoped_meta_graph(
        graph or get_default_graph(), filename, meta_info_def=meta_info_def,
        graph_def=graph_def, saver_def=saver_def, collection_list=collection_list,
        as_text=as_text, export_scope=export_scope, clear_devices=clear_devices,
        strip_default_attrs=strip_default_attrs,
        clear_extraneous_savers=clear_extraneous_savers)


def _checked_input_map(meta, input_map):
    """TF's refusal of a scoped graph whose cut-off inputs the input_map does not supply."""
    col_def = meta.collection_def.get("unbound_inputs")
    if col_def is None:
        return input_map
    names = [v.decode().lstrip("^") for v in col_def.bytes_list.value]
    missing = [n for n in names if not input_map or n not in input_map]
    if missing:
        raise ValueError(f"Graph contains unbound inputs: {','.join(missing)}. Must provide "
                         "these inputs through input_map.")
    return input_map


def import_scoped_meta_graph(meta_graph_or_file, clear_devices=False, import_scope=None,
                             input_map=None, graph=None,
                             restore_collections_predicate=lambda key: True):
    """Imports the MetaGraphDef's graph and the collections `restore_collections_predicate`
    accepts into `graph` (the default graph); returns (MetaGraphDef, {name without the
    scope: global Variable})."""
    if executing_eagerly():
        raise RuntimeError(_EAGER)
    from graphops.interchange import meta_graph
    from graphops.interchange.graph_def import import_graph_def
    from graphops.interchange.meta_graph_collections import restore_collections
    register_collection_protos()
    if isinstance(meta_graph_or_file, (str, bytes, os.PathLike)):
        meta = meta_graph.read_meta_graph(os.fsdecode(meta_graph_or_file))
    else:
        meta = meta_graph.as_meta_graph_def(meta_graph_or_file)
    if input_map is not None and not isinstance(input_map, dict):
        raise TypeError(f"Argument `input_map` must be a dictionary. Obtained "
                        f"{type(input_map).__name__}")
    input_map = _checked_input_map(meta, input_map)
    graph = graph or get_default_graph()
    graph_def = meta.graph_def
    if input_map:
        graph_def, input_map = meta_graph.bind_unbound_inputs(graph_def, input_map)
    if clear_devices:
        graph_def = type(graph_def).FromString(graph_def.SerializeToString())
        for node in graph_def.node:
            node.device = ""
    with graph.as_default():
        scope = graph.unique_name(import_scope or "", mark_as_used=False)
        import_graph_def(graph_def, input_map=input_map, name=import_scope or scope)
        restore_collections(meta, graph, scope, restore_collections_predicate)
    imported = graph.get_collection(GraphKeys.GLOBAL_VARIABLES, scope=scope or None)
    return meta, {meta_graph.strip_name_scope(v.name, scope): v for v in imported}


def import_meta_graph(meta_graph_or_file, clear_devices=False, import_scope=None,
                      input_map=None, restore_collections_predicate=lambda key: True,
                      **kwargs):
    """Imports a MetaGraphDef (a `.meta` file, binary or text, or the message, ours or
    TF's) into the default graph, its collections included; returns a Saver of its
    SaverDef (a new Saver of every variable when it has none and the graph has variables;
    else None). Other keyword arguments TF's importer takes are accepted and ignored."""
    meta, imported = import_scoped_meta_graph(
        meta_graph_or_file, clear_devices, import_scope, input_map,
        restore_collections_predicate=restore_collections_predicate)
    if meta.HasField("saver_def"):
        from graphops.interchange import meta_graph
        scope = import_scope
        if imported:
            key, var = next(iter(imported.items()))
            scope = var.name[:-len(key)].rstrip("/")
        return Saver(saver_def=_scoped_saver_def(
            meta.saver_def, lambda n: meta_graph.prepend_name_scope(n, scope)))
    if variables.global_variables(scope=import_scope):
        return Saver()
    return None
