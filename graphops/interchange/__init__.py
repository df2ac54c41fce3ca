"""Graphs as data: TF's GraphDef (export, validated import, function libraries) as dicts,
protobuf messages, binary/text/JSON files, OpDef text protos and pictures (Graphviz DOT).
Imports building, client and runtime.

Installs `Graph.as_graph_def` and `Graph.to_dot`. Its other modules load on first use, so
that `import graphops` does not pay for protobuf, json, subprocess and networkx.
"""

import importlib

from graphops.building.graph import Graph


def _as_graph_def(self, add_shapes=False):
    """The graph as a TF GraphDef dict (`gp.io.graph_def_to_proto` gives the message)."""
    return importlib.import_module("graphops.interchange.graph_def").as_graph_def(self, add_shapes)


def _to_dot(self):
    """Graphviz DOT text of the graph."""
    return importlib.import_module("graphops.interchange.pictures").to_dot(self)


Graph.as_graph_def = _as_graph_def
Graph.to_dot = _to_dot
