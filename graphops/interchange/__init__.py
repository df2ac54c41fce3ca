"""Graphs as data: TF's GraphDef (export, validated import, function libraries) as dicts,
protobuf messages, binary/text/JSON files, OpDef text protos and pictures (Graphviz DOT).
Imports building, client and runtime.

Installs `Graph.as_graph_def` and `Graph.to_dot` and registers the kernels of the
function-call and summary ops. Its other modules load on first use, so that `import graphops`
does not pay for protobuf, json, subprocess and networkx.
"""

import importlib

from graphops.building.graph import Graph
from graphops.interchange import function_call  # noqa: F401  (PartitionedCall's kernel)
from graphops.interchange import control_flow_kernels  # noqa: F401  (If's, While's)
from graphops.interchange import summary_kernels  # noqa: F401  (the summary ops' kernels)
from graphops.interchange import checkpoint_kernels  # noqa: F401  (SaveV2's, RestoreV2's)


def _as_graph_def(self, add_shapes=False):
    """The graph as a TF GraphDef dict (`gp.io.graph_def_to_proto` gives the message)."""
    return importlib.import_module("graphops.interchange.graph_def").as_graph_def(self, add_shapes)


def _to_dot(self):
    """Graphviz DOT text of the graph."""
    return importlib.import_module("graphops.interchange.pictures").to_dot(self)


Graph.as_graph_def = _as_graph_def
Graph.to_dot = _to_dot
