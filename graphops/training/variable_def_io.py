"""Variables <-> VariableDef protos (TF's `to_proto` / `_init_from_proto`): a MetaGraph's
variable collections name each variable's nodes, and importing one wraps those nodes in a
Variable again (a resource variable: VarHandleOp and its ReadVariableOp snapshot; a
reference variable: VariableV2 and its Identity snapshot)."""

from graphops.building.graph import get_default_graph
from graphops.registry.tensor_shape import as_shape


def to_proto(variable, tensor, snapshot, is_resource, export_scope=None):
    """The VariableDef of `variable` (`tensor`: its handle or reference tensor, `snapshot`:
    its cached read), names stripped of `export_scope/`; None when it lies outside."""
    from graphops.interchange.meta_graph import strip_name_scope      # loaded on first use
    from graphops.interchange.proto.variable_pb2 import VariableDef
    if export_scope is not None and not tensor.name.startswith(export_scope):
        return None
    proto = VariableDef(variable_name=strip_name_scope(tensor.name, export_scope),
                        initializer_name=strip_name_scope(variable.initializer.name,
                                                          export_scope),
                        snapshot_name=strip_name_scope(snapshot.name, export_scope),
                        is_resource=is_resource, trainable=variable.trainable)
    if variable.initial_value is not None:
        proto.initial_value_name = strip_name_scope(variable.initial_value.name, export_scope)
    return proto


def init_from_proto(variable, variable_def, import_scope=None):
    """Points `variable` (a new, uninitialised Variable or RefVariable) at the nodes of the
    default graph that `variable_def` names under `import_scope/`."""
    from graphops.interchange.meta_graph import prepend_name_scope    # loaded on first use
    graph = get_default_graph()

    def element(name):
        return graph.as_graph_element(prepend_name_scope(name, import_scope))

    variable._graph = graph
    variable._initializer = element(variable_def.initializer_name)
    variable._initial_value = (element(variable_def.initial_value_name)
                               if variable_def.initial_value_name else None)
    variable._trainable = variable_def.trainable
    variable._constraint = None
    tensor = element(variable_def.variable_name)
    variable._dtype = tensor.op.get_attr("dtype")
    variable._shape = as_shape(tensor.op.get_attr("shape"))
    if not variable_def.is_resource:
        variable._variable = tensor
        variable._snapshot = element(variable_def.snapshot_name)
        return
    variable._handle = tensor
    if variable_def.snapshot_name:
        snapshot = element(variable_def.snapshot_name)
        while snapshot.op.type != "ReadVariableOp" and snapshot.op.inputs:
            snapshot = snapshot.op.inputs[0]
    else:
        snapshot = graph.get_tensor_by_name(tensor.op.name + "/Read/ReadVariableOp:0")
    variable._graph_element = snapshot
