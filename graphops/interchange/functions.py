"""Library functions as GraphDefs and as sub-graphs.

A Graph keeps its library in `graph._functions` (name -> FunctionDef dict, see messages.py);
`import_graph_def` adds a GraphDef's library there and `as_graph_def` writes it back.
`body_graph_def(function)` is a FunctionDef's body as a GraphDef: one Placeholder per input
arg (named after it), the body's nodes with their function-body inputs ("node:out_arg:index")
rewritten to graph inputs ("node:flat_index"). `instantiate(function, library)` imports
that into a Graph of its own (validated as any GraphDef) with the tensors to feed and fetch;
the call ops' gradient imports it into the caller's graph instead.
"""

import re
from dataclasses import dataclass

from graphops.building.graph import Graph
from graphops.interchange.graph_def import import_graph_def
from graphops.registry import dtypes
from graphops.registry.errors import InvalidArgumentError, UnimplementedError
from graphops.registry.op_def import arg_types
from graphops.registry.op_registry import get_op_def
from graphops.registry.tensor_shape import TensorShape

_BODY_INPUT = re.compile(r"^(\^?)([^:^]+)(?::([^:]+)(?::(\d+))?)?$")


def _arg_dtype(arg, function_name):
    if "type" not in arg:
        raise UnimplementedError(
            f"Function '{function_name}': arg '{arg.get('name')}' has a type given by an attr "
            "(type_attr, number_attr or type_list_attr); graphops calls only functions with "
            "fixed arg types")
    try:
        return dtypes.as_dtype(arg["type"])
    except TypeError:
        raise InvalidArgumentError(f"Function '{function_name}': arg '{arg.get('name')}' has "
                                   f"an invalid type {arg['type']!r}") from None


@dataclass
class Body:
    """A function body as a GraphDef dict and the names of its tensors and nodes: `inputs`
    ("arg:0"), `outputs` ("node:i") and `control_outputs` (node names)."""

    graph_def: dict
    inputs: list
    outputs: list
    control_outputs: list
    input_types: list
    output_types: list


@dataclass
class Instance:
    """A function body as a Graph: feed `inputs`, fetch `outputs`, run `control_outputs`
    (Tensors and Operations of `graph`)."""

    body: Body
    graph: Graph
    inputs: list
    outputs: list
    control_outputs: list


def body_graph_def(function):
    """The FunctionDef dict `function` (as import_graph_def checked it) as a Body."""
    signature = function["signature"]
    name = signature["name"]
    in_args, out_args = signature.get("input_arg", []), signature.get("output_arg", [])
    input_types = [_arg_dtype(a, name) for a in in_args]
    output_types = [_arg_dtype(a, name) for a in out_args]
    nodes = [_arg_node(arg, dtype, function.get("arg_attr", {}).get(i, {}))
             for i, (arg, dtype) in enumerate(zip(in_args, input_types))]
    bodies = {n.get("name"): n for n in function.get("node_def", [])}
    args = {a.get("name") for a in in_args}
    for node in function.get("node_def", []):
        nodes.append({**node, "input": [_graph_input(text, node.get("name"), bodies, args, name)
                                        for text in node.get("input", [])]})
    outputs = []
    for arg in out_args:
        ret = function.get("ret", {}).get(arg.get("name"))
        if ret is None:
            raise InvalidArgumentError(f"Function '{name}': no return value for output arg "
                                       f"'{arg.get('name')}'")
        ret = _graph_input(ret, f"ret {arg['name']}", bodies, args, name)
        outputs.append(ret if ":" in ret else ret + ":0")
    return Body({"node": nodes}, [a["name"] + ":0" for a in in_args], outputs,
                list(function.get("control_ret", {}).values()), input_types, output_types)


def instantiate(function, library):
    """The FunctionDef dict `function` as an Instance (nested calls see `library`)."""
    body = body_graph_def(function)
    graph = Graph()
    graph._functions = library
    with graph.as_default():
        elements = import_graph_def(body.graph_def, name="", return_elements=body.inputs
                                    + body.outputs + body.control_outputs)
    n_in, n_out = len(body.inputs), len(body.outputs)
    outputs = elements[n_in:n_in + n_out]
    for tensor, dtype in zip(outputs, body.output_types):
        if tensor.dtype != dtype:
            raise InvalidArgumentError(
                f"Function '{function['signature'].get('name')}': an output arg is "
                f"{dtype.short_name} but its return value {tensor.name} is "
                f"{tensor.dtype.short_name}")
    return Instance(body, graph, elements[:n_in], outputs, elements[n_in + n_out:])


def _arg_node(arg, dtype, arg_attrs):
    """The Placeholder standing for an input arg (its shape from `_output_shapes`)."""
    shapes = arg_attrs.get("attr", {}).get("_output_shapes")
    shape = shapes[0] if isinstance(shapes, list) and len(shapes) == 1 else TensorShape(None)
    return {"name": arg["name"], "op": "Placeholder", "attr": {"dtype": dtype, "shape": shape}}


def _graph_input(text, where, bodies, args, function_name):
    """A function-body input ("x", "node:out_arg:i", "^node") as a graph input."""
    m = _BODY_INPUT.match(text) if isinstance(text, str) else None
    if m is None:
        raise InvalidArgumentError(f"Function '{function_name}': malformed input '{text}' of "
                                   f"{where}")
    control, source, out_arg, index = m.groups()
    if control:
        return text
    if out_arg is None:
        if source not in args and source not in bodies:
            raise InvalidArgumentError(f"Function '{function_name}': input '{text}' of "
                                       f"{where} names no arg or node")
        return source
    if out_arg.isdigit() and index is None:     # already a graph input "node:i"
        return text
    node = bodies.get(source)
    if node is None:
        raise InvalidArgumentError(f"Function '{function_name}': input '{text}' of {where} "
                                   "names no node of the body")
    return f"{source}:{_output_offset(node, out_arg, function_name) + int(index or 0)}"


def _output_offset(node, out_arg, function_name):
    """The flat index of the first tensor of output arg `out_arg` of a body node."""
    op_def = get_op_def(node.get("op", ""))
    attrs = {a.name: a.default_value for a in op_def.attr if a.has_default}
    attrs.update(node.get("attr", {}))
    offset = 0
    for arg in op_def.output_arg:
        if arg.name == out_arg:
            return offset
        try:
            _, (length,) = arg_types([arg], attrs)
        except (KeyError, TypeError):
            raise InvalidArgumentError(f"Function '{function_name}': node '{node['name']}' "
                                       f"lacks the attrs sizing its output '{arg.name}'") from None
        offset += 1 if length is None else length
    raise InvalidArgumentError(f"Function '{function_name}': node '{node['name']}' "
                               f"({op_def.name}) has no output named '{out_arg}'")
