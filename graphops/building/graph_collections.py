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
