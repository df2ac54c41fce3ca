"""Graphs as data: TF's GraphDef (export, validated import, function libraries) as dicts,
protobuf messages, binary/text/JSON files, OpDef text protos and pictures (Graphviz DOT).
Imports building, client and runtime.

Installs `Graph.as_graph_def` (a GraphDef message, as TF's), `Graph.graph_def_versions`,
`Session.graph_def` and `Graph.to_dot`. graphops' own code reads graphs through the dict
form, `graph_def.as_graph_def(graph)` (messages.py describes it). The other modules load on
first use, so that `import graphops` does not pay for protobuf, json, subprocess and
networkx.
"""

import importlib

from graphops.building.graph import Graph
from graphops.client.session import Session


def _module(name):
    return importlib.import_module(f"graphops.interchange.{name}")


def _as_graph_def(self, from_version=None, add_shapes=False, use_pybind11_proto=False):
    """The graph as a GraphDef message (`gp.GraphDef`), nodes in creation order, attrs with
    their defaults. `add_shapes=True` gives each node with outputs an `_output_shapes` attr.
    `from_version` and `use_pybind11_proto` are accepted and ignored, as TF 2 ignores the
    first (every node is returned) and the second only picks its C++ path."""
    del from_version, use_pybind11_proto
    return _module("graph_io").graph_to_proto(self, add_shapes)


def _graph_def_versions(self):
    """The VersionDef of this graph's GraphDefs (TF's `Graph.graph_def_versions`)."""
    version_def = _module("messages").VersionDef()
    version_def.producer = _module("graph_def").GRAPH_DEF_VERSION
    return version_def


def _session_graph_def(self):
    """The session's graph as a GraphDef message (TF's `Session.graph_def`)."""
    return self.graph.as_graph_def()


def _to_dot(self):
    """Graphviz DOT text of the graph."""
    return _module("pictures").to_dot(self)


Graph.as_graph_def = _as_graph_def
Graph.graph_def_versions = property(_graph_def_versions)
Graph.to_dot = _to_dot
Session.graph_def = property(_session_graph_def)
