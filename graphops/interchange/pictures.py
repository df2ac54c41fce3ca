"""Graph pictures: Graphviz DOT text, and SVG/PNG/PDF through the `dot` binary when installed.

Nodes show the op type and the node name and are filled with one colour per device (a legend
lists them); edges carry the dtype and static shape of the tensor they move, output `:i`
when not the first; control edges are dashed; name scopes become nested clusters.
A GraphDef dict (or JSON text) is drawn through a scratch import when all its ops are
registered, so it gets dtypes and shapes too; otherwise from its raw nodes, with the shapes
of `_output_shapes` where present.
"""

import os
import re
import shutil
import subprocess
import warnings

from graphops.building.graph import Graph
from graphops.interchange import graph_json
from graphops.interchange.graph_def import import_graph_def
from graphops.registry.errors import FailedPreconditionError, InvalidArgumentError, OpError

_PALETTE = ("#cfe2f3", "#d9ead3", "#fce5cd", "#ead1dc", "#fff2cc", "#d0e0e3", "#f4cccc",
            "#d9d2e9")
_RENDERED = ("svg", "png", "pdf")
_DOT_TIMEOUT_S = 120
_INPUT = re.compile(r"^(\^?)([^:^]+)(?::(\d+))?$")


def _quote(text):
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _nodes_of_graph(graph):
    """[(name, op type, device, [(source, index, label)], [control source])]."""
    nodes = []
    for op in graph.get_operations():
        data = [(t.op.name, t.value_index, _edge_label(t.value_index, t.dtype.name, t.shape))
                for t in op.inputs]
        nodes.append((op.name, op.type, op.device, data, [c.name for c in op.control_inputs]))
    return nodes


def _edge_label(index, dtype_name, shape):
    text = f"{dtype_name} {shape}" if dtype_name else ("" if shape is None else str(shape))
    return f":{index} {text}" if index else text


def _nodes_of_graph_def(graph_def):
    """Drawn through a scratch import (dtypes and shapes), else from the raw nodes."""
    scratch = Graph()
    try:
        with scratch.as_default(), warnings.catch_warnings():
            warnings.simplefilter("ignore")        # deprecations, unknown attrs
            import_graph_def(graph_def, name="")
        return _nodes_of_graph(scratch)
    except (OpError, TypeError):
        pass
    nodes, shapes = [], {}
    for node in graph_def.get("node", []):
        declared = node.get("attr", {}).get("_output_shapes")
        if isinstance(declared, list):
            shapes[node.get("name")] = declared
    for node in graph_def.get("node", []):
        data, control = [], []
        for text in node.get("input", []):
            m = _INPUT.match(text)
            if m is None:
                continue
            if m.group(1):
                control.append(m.group(2))
            else:
                index = int(m.group(3) or 0)
                known = shapes.get(m.group(2), [])
                shape = known[index] if index < len(known) else None
                data.append((m.group(2), index, _edge_label(index, "", shape)))
        nodes.append((node.get("name", ""), node.get("op", ""), node.get("device", ""), data,
                      control))
    return nodes


def _clusters(names):
    """Scope tree: ([node names directly inside], {child scope: subtree}). A node whose name
    is also a scope (helpers built under it, "mul" and "mul/y") goes inside that scope."""
    scopes = {name.rsplit("/", 1)[0] for name in names if "/" in name}
    tree = ([], {})
    for name in names:
        where = tree
        parts = name.split("/")
        for part in parts if name in scopes else parts[:-1]:
            where = where[1].setdefault(part, ([], {}))
        where[0].append(name)
    return tree


def to_dot(graph_or_graph_def, rankdir="TB"):
    """Graphviz DOT text for a Graph, a GraphDef (message or dict) or GraphDef JSON text."""
    source = graph_or_graph_def
    if isinstance(source, (str, bytes)):
        source = graph_json.graph_def_from_json(source)
    elif hasattr(source, "SerializeToString"):      # a message: protobuf is loaded already
        from graphops.interchange.messages import graph_def_from_proto
        source = graph_def_from_proto(source)
    if isinstance(source, Graph):
        nodes = _nodes_of_graph(source)
    elif isinstance(source, dict):
        nodes = _nodes_of_graph_def(source)
    else:
        raise TypeError(f"to_dot expects a gp.Graph, a GraphDef or JSON text, got "
                        f"{type(source).__name__}")
    devices = sorted({d for _, _, d, _, _ in nodes if d})
    colour = {d: _PALETTE[i % len(_PALETTE)] for i, d in enumerate(devices)}
    lines = ["digraph graphops {", f"  graph [rankdir={rankdir}, compound=true, "
             'fontname="Helvetica", fontsize=11];',
             '  node [shape=box, style="rounded,filled", fillcolor="#ffffff", '
             'fontname="Helvetica", fontsize=10];',
             '  edge [fontname="Helvetica", fontsize=9];']
    by_name = {name: (op_type, device) for name, op_type, device, _, _ in nodes}

    def emit(tree, prefix, indent):
        direct, children = tree
        for name in direct:
            op_type, device = by_name[name]
            label = op_type if name == op_type else f"{op_type}\n{name}"
            attrs = [f"label={_quote(label)}",
                     f"tooltip={_quote(name + (' on ' + device if device else ''))}"]
            if device:
                attrs.append(f"fillcolor={_quote(colour[device])}")
            lines.append(f"{indent}{_quote(name)} [{', '.join(attrs)}];")
        for scope, child in children.items():
            full = prefix + scope
            lines.append(f"{indent}subgraph {_quote('cluster_' + full)} {{")
            lines.append(f'{indent}  label={_quote(scope)}; style="rounded,dashed"; '
                         'color="#999999";')
            emit(child, full + "/", indent + "  ")
            lines.append(f"{indent}}}")

    emit(_clusters(by_name), "", "  ")
    for name, _, _, data, control in nodes:
        for source, _, label in data:
            lines.append(f"  {_quote(source)} -> {_quote(name)} [label={_quote(label)}];")
        for source in control:
            lines.append(f"  {_quote(source)} -> {_quote(name)} [style=dashed, "
                         'color="#777777", arrowhead=odot];')
    if devices:
        lines.append('  subgraph "cluster_legend" {')
        lines.append('    label="devices"; style="rounded"; color="#999999";')
        for i, device in enumerate(devices):
            lines.append(f"    {_quote(f'_legend_{i}')} [label={_quote(device)}, "
                         f"fillcolor={_quote(colour[device])}, shape=note];")
        lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def render(dot_text, fmt):
    """DOT text rendered by Graphviz's `dot` to bytes of `fmt` ("svg", "png", "pdf")."""
    binary = shutil.which("dot")
    if binary is None:
        raise FailedPreconditionError(
            f"Rendering {fmt} needs Graphviz's `dot` binary, which is not on PATH; install "
            "Graphviz or write a .dot file instead.")
    try:
        done = subprocess.run([binary, f"-T{fmt}"], input=dot_text.encode("utf-8"),
                              capture_output=True, timeout=_DOT_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        raise FailedPreconditionError(f"`dot -T{fmt}` did not finish within "
                                      f"{_DOT_TIMEOUT_S} s") from None
    if done.returncode != 0:
        raise FailedPreconditionError(f"`dot -T{fmt}` failed: "
                                      f"{done.stderr.decode('utf-8', 'replace').strip()}")
    return done.stdout


def visualize(graph_or_graph_def, path=None, rankdir="TB"):
    """The DOT text of the graph; with `path`, also written there: DOT for .dot/.gv, and
    SVG/PNG/PDF (rendered by Graphviz's `dot`) for .svg/.png/.pdf."""
    dot_text = to_dot(graph_or_graph_def, rankdir=rankdir)
    if path is not None:
        ext = os.path.splitext(os.fspath(path))[1].lower().lstrip(".")
        if ext in ("dot", "gv"):
            with open(path, "w", encoding="utf-8") as f:
                f.write(dot_text)
        elif ext in _RENDERED:
            data = render(dot_text, ext)
            with open(path, "wb") as f:
                f.write(data)
        else:
            raise InvalidArgumentError(f"Cannot tell the picture format from {path!r}: use a "
                                       ".dot, .gv, .svg, .png or .pdf extension.")
    return dot_text
