"""gp.io: GraphDef files, as TF's `tf.io.write_graph` and friends.

    gp.io.read_graph_def(path)                   # .pb, .pbtxt or .json -> GraphDef dict
    gp.io.write_graph(graph_or_graph_def, logdir, name, as_text=True) -> path
    gp.io.graph_def_to_proto(graph_or_graph_def) -> protobuf GraphDef message

Loads protobuf on first use, so that `import graphops` does not pay for it.
"""

import importlib

__all__ = ["read_graph_def", "write_graph", "graph_def_to_proto"]


def __getattr__(name):
    if name not in __all__:
        raise AttributeError(f"module 'graphops.io' has no attribute {name!r}")
    value = globals()[name] = getattr(importlib.import_module("graphops.interchange.graph_io"),
                                      name)
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
