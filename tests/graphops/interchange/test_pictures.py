"""Graph pictures: DOT text from graphs and GraphDefs; SVG/PNG through Graphviz when present."""

import json
import re
import shutil

import numpy as np
import pytest

import graphops as gp
from graphops.interchange import pictures as vis
from graphops.interchange.graph_def import as_graph_def
from graphops.interchange.graph_json import graph_def_to_json
from graphops.registry import errors
from graphops.registry.tensor_shape import TensorShape

needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz `dot` not installed")


def _graph():
    g = gp.Graph()
    with g.as_default():
        x = gp.placeholder(gp.float32, [None, 3], name="x")
        with gp.name_scope("block"):
            with gp.device("/cpu:0"):
                y = x * 2.0             # "block/mul" and its constant "block/mul/y"
            with gp.name_scope("inner"):
                z = gp.raw_ops.Relu(features=y, name="relu")
        with gp.control_dependencies([z]):
            w = gp.raw_ops.Identity(input=x, name="w")
        xent = gp.raw_ops.SoftmaxCrossEntropyWithLogits(features=w, labels=z, name="xent")
        gp.raw_ops.Identity(input=xent[1], name="grad")
    return g


def _edges(dot):
    """{(source, target): attribute text} of every edge line."""
    return {(m.group(1), m.group(2)): m.group(3)
            for m in re.finditer(r'^\s*"([^"]+)" -> "([^"]+)" \[(.*)\];$', dot, re.M)}


def _node_attrs(dot, name):
    m = re.search(rf'^\s*"{re.escape(name)}" \[(.*)\];$', dot, re.M)
    return m.group(1) if m else None


def _cluster_members(dot, scope):
    """Node names declared directly or nested inside the cluster for `scope`."""
    start = dot.index(f'subgraph "cluster_{scope}" {{')
    depth, i = 0, start
    while True:
        ch = dot[i]
        depth += ch == "{"
        depth -= ch == "}"
        i += 1
        if depth == 0 and ch == "}":
            break
    return set(re.findall(r'^\s*"([^"]+)" \[label=', dot[start:i], re.M))


def test_nodes_edges_and_labels():
    dot = vis.to_dot(_graph())
    assert dot.startswith("digraph graphops {") and dot.rstrip().endswith("}")
    assert 'label="Placeholder\\nx"' in _node_attrs(dot, "x")
    assert 'label="Relu\\nblock/inner/relu"' in _node_attrs(dot, "block/inner/relu")
    edges = _edges(dot)
    assert edges[("x", "block/mul")] == 'label="float32 (?, 3)"'
    assert edges[("block/mul/y", "block/mul")] == 'label="float32 ()"'
    assert edges[("xent", "grad")] == 'label=":1 float32 (?, 3)"'
    assert "style=dashed" in edges[("block/inner/relu", "w")]
    assert "style=dashed" not in edges[("x", "w")]
    assert len(edges) == 8


def test_name_scopes_become_nested_clusters():
    dot = vis.to_dot(_graph())
    assert _cluster_members(dot, "block") == {"block/mul", "block/mul/y", "block/inner/relu"}
    assert _cluster_members(dot, "block/inner") == {"block/inner/relu"}
    assert _cluster_members(dot, "block/mul") == {"block/mul", "block/mul/y"}


def test_devices_get_colours_and_a_legend():
    dot = vis.to_dot(_graph())
    colour = re.search(r'fillcolor="(#[0-9a-f]{6})"', _node_attrs(dot, "block/mul")).group(1)
    assert f'fillcolor="{colour}"' in _node_attrs(dot, "block/mul/y")
    assert "fillcolor" not in _node_attrs(dot, "x")
    assert _cluster_members(dot, "legend") == {"_legend_0"}
    assert f'label="/device:CPU:0", fillcolor="{colour}"' in _node_attrs(dot, "_legend_0")


def test_graph_def_dict_and_json_draw_like_the_graph():
    g = _graph()
    dot = vis.to_dot(g)
    assert vis.to_dot(as_graph_def(g)) == dot
    assert vis.to_dot(graph_def_to_json(as_graph_def(g))) == dot


def test_graph_def_with_unregistered_ops_draws_from_raw_nodes():
    gd = {"node": [
        {"name": "a", "op": "MysteryOp", "attr": {"_output_shapes": [TensorShape([2]),
                                                                     TensorShape(None)]}},
        {"name": "s/b", "op": "OtherOp", "input": ["a:1", "a", "^a"], "device": "/gpu:0"}]}
    dot = vis.to_dot(gd)
    assert 'label="MysteryOp\\na"' in _node_attrs(dot, "a")
    edges = [line.strip() for line in dot.splitlines() if "->" in line]
    assert edges == ['"a" -> "s/b" [label=":1 <unknown>"];', '"a" -> "s/b" [label="(2,)"];',
                     '"a" -> "s/b" [style=dashed, color="#777777", arrowhead=odot];']
    assert _cluster_members(dot, "s") == {"s/b"}


def test_quotes_and_backslashes_are_escaped():
    assert vis._quote('a"b\\c\nd') == '"a\\"b\\\\c\\nd"'


def test_write_dot_file(tmp_path):
    path = tmp_path / "g.dot"
    text = vis.visualize(_graph(), path)
    assert path.read_text() == text


def test_bad_inputs_are_typed_errors(tmp_path):
    with pytest.raises(errors.InvalidArgumentError, match="Cannot tell the picture format"):
        vis.visualize(_graph(), tmp_path / "g.jpeg")
    with pytest.raises(TypeError, match="to_dot expects a gp.Graph"):
        vis.to_dot(42)
    with pytest.raises(errors.InvalidArgumentError, match="Failed to load JSON"):
        vis.to_dot("{not json")


def test_missing_dot_binary_is_a_failed_precondition(tmp_path, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(errors.FailedPreconditionError, match="Graphviz's `dot` binary"):
        vis.visualize(_graph(), tmp_path / "g.svg")
    assert not (tmp_path / "g.svg").exists()


@needs_dot
def test_render_svg_and_png(tmp_path):
    vis.visualize(_graph(), tmp_path / "g.svg")
    svg = (tmp_path / "g.svg").read_text()
    assert "<svg" in svg and "block/inner/relu" in svg and "stroke-dasharray" in svg
    vis.visualize(_graph(), tmp_path / "g.png")
    assert (tmp_path / "g.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@needs_dot
def test_dot_accepts_the_text_for_awkward_names():
    g = gp.Graph()
    with g.as_default():
        a = gp.constant(np.float32(1), name="a.b-c>d")
        gp.raw_ops.Identity(input=a, name="e/f.g")
    canon = vis.render(vis.to_dot(g), "svg").decode()
    assert "a.b&#45;c&gt;d" in canon


@needs_dot
def test_dot_failure_is_reported(tmp_path):
    with pytest.raises(errors.FailedPreconditionError, match="failed"):
        vis.render("digraph {", "svg")


def test_json_text_is_accepted_by_visualize(tmp_path):
    text = graph_def_to_json(as_graph_def(_graph()))
    assert json.loads(text)["node"]
    assert vis.visualize(text) == vis.to_dot(_graph())


def test_a_graph_def_message_is_drawn_like_its_graph():
    with gp.Graph().as_default() as graph:
        x = gp.placeholder(gp.float32, [2, 3], name="x")
        gp.nn.relu(x, name="y")
    dot = vis.to_dot(graph.as_graph_def())
    assert '"x"' in dot and '"y"' in dot and "Relu" in dot
