"""TF1's graph collections on the default graph: `gp.GraphKeys` (TF's key strings) and
`gp.add_to_collection(s)`, `gp.get_collection`, `gp.get_collection_ref`."""

from graphops.building.graph import get_default_graph


class GraphKeys:
    """The standard collection names (the strings TF uses, so GraphDefs and code agree)."""

    GLOBAL_VARIABLES = "variables"
    VARIABLES = GLOBAL_VARIABLES
    LOCAL_VARIABLES = "local_variables"
    METRIC_VARIABLES = "metric_variables"
    MODEL_VARIABLES = "model_variables"
    TRAINABLE_VARIABLES = "trainable_variables"
    SUMMARIES = "summaries"
    QUEUE_RUNNERS = "queue_runners"
    TABLE_INITIALIZERS = "table_initializer"
    ASSET_FILEPATHS = "asset_filepaths"
    MOVING_AVERAGE_VARIABLES = "moving_average_variables"
    REGULARIZATION_LOSSES = "regularization_losses"
    CONCATENATED_VARIABLES = "concatenated_variables"
    SAVERS = "savers"
    WEIGHTS = "weights"
    BIASES = "biases"
    ACTIVATIONS = "activations"
    UPDATE_OPS = "update_ops"
    LOSSES = "losses"
    SAVEABLE_OBJECTS = "saveable_objects"
    RESOURCES = "resources"
    LOCAL_RESOURCES = "local_resources"
    TRAINABLE_RESOURCE_VARIABLES = "trainable_resource_variables"
    INIT_OP = "init_op"
    LOCAL_INIT_OP = "local_init_op"
    READY_OP = "ready_op"
    READY_FOR_LOCAL_INIT_OP = "ready_for_local_init_op"
    SUMMARY_OP = "summary_op"
    GLOBAL_STEP = "global_step"
    EVAL_STEP = "eval_step"
    TRAIN_OP = "train_op"
    COND_CONTEXT = "cond_context"
    WHILE_CONTEXT = "while_context"


def add_to_collection(name, value):
    """`Graph.add_to_collection` on the default graph."""
    get_default_graph().add_to_collection(name, value)


def add_to_collections(names, value):
    """`Graph.add_to_collections` on the default graph."""
    get_default_graph().add_to_collections(names, value)


def get_collection(key, scope=None):
    """`Graph.get_collection` on the default graph."""
    return get_default_graph().get_collection(key, scope)


def get_collection_ref(key):
    """`Graph.get_collection_ref` on the default graph."""
    return get_default_graph().get_collection_ref(key)


# ------------------------------------------------------------------ proto functions

_PROTO_FUNCTIONS = {}     # collection name -> (proto type, to_proto, from_proto)


def register_proto_function(collection_name, proto_type=None, to_proto=None,
                            from_proto=None):
    """Registers how the items of `collection_name` travel in a MetaGraphDef (TF's
    `ops.register_proto_function`): `to_proto(item, export_scope=None)` -> a `proto_type`
    message, serialized into the collection's bytes_list; `from_proto(message,
    import_scope=None)` -> the item again."""
    if to_proto and not callable(to_proto):
        raise TypeError("to_proto must be callable.")
    if from_proto and not callable(from_proto):
        raise TypeError("from_proto must be callable.")
    _PROTO_FUNCTIONS[collection_name] = (proto_type, to_proto, from_proto)


def get_collection_proto_type(collection_name):
    """The message class registered for `collection_name`, or None."""
    return _PROTO_FUNCTIONS.get(collection_name, (None, None, None))[0]


def get_to_proto_function(collection_name):
    """The registered to_proto function of `collection_name`, or None."""
    return _PROTO_FUNCTIONS.get(collection_name, (None, None, None))[1]


def get_from_proto_function(collection_name):
    """The registered from_proto function of `collection_name`, or None."""
    return _PROTO_FUNCTIONS.get(collection_name, (None, None, None))[2]
