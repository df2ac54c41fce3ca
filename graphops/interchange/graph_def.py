"""GraphDef export and import: `as_graph_def(graph)` and `import_graph_def(graph_def, ...)`.

A GraphDef is a plain dict (see messages.py for its layout and the protobuf form). Import is
TF's GraphConstructor in two passes: every node is first checked against the registry (op
known, attrs of the right kinds and within their constraints, defaults filled, input count
and dtypes, output indices) and shape-inferred in topological order; only when the whole
GraphDef is valid are the Operations created, so a failed import leaves the graph untouched.
A GraphDef's function library joins the graph's (functions.py). Errors carry TF's wording.
Nothing is evaluated or unpickled.
"""

import re
import warnings
from dataclasses import dataclass

import numpy as np

from graphops.building.graph import VALID_NODE_NAME, get_default_graph
from graphops.building.op_builder import (input_types, output_types, shape_fn_error,
                                          summarize_node, warn_deprecated)
from graphops.building.tensor import Operation, Tensor, as_graph_element, set_handle_shapes
from graphops.interchange import graph_json, messages
from graphops.runtime.devices import canonical_device
from graphops.registry import dtypes
from graphops.registry.attr_values import validate_attr_value
from graphops.registry.errors import InvalidArgumentError, UnimplementedError
from graphops.registry.kernel_registry import control_flow_role
from graphops.registry.op_registry import get_op_def
from graphops.registry.shape_inference import infer_shapes, merge_shapes
from graphops.registry.tensor_shape import TensorShape, unknown_shape

GRAPH_DEF_VERSION = 2474          # producer written on export (TF 2.21's TF_GRAPH_DEF_VERSION)
GRAPH_DEF_VERSION_MIN_PRODUCER = 0
_INPUT = re.compile(r"^(\^?)([^:^]+)(?::(\d+))?$")


def as_graph_def(graph, add_shapes=False):
    """The graph as a GraphDef dict, nodes in creation order, attrs with defaults filled.

    `add_shapes=True` adds each node's inferred output shapes as `_output_shapes`, as TF does.
    The graph's function library, when it has one, is the GraphDef's `library`.
    """
    nodes = []
    for op in graph.get_operations():
        node = op.node_def
        for attr_def in op.op_def.attr:
            value = node["attr"].get(attr_def.name)
            if attr_def.type == "func" and isinstance(value, str):
                node["attr"][attr_def.name] = {"name": value, "attr": {}}
        if add_shapes:
            node["attr"]["_output_shapes"] = [t.shape for t in op.outputs]
        nodes.append(node)
    graph_def = {"node": nodes, "versions": {"producer": GRAPH_DEF_VERSION, "min_consumer": 0}}
    if graph._functions:
        graph_def["library"] = {"function": list(graph._functions.values())}
    return graph_def


# ----------------------------------------------------------------------------- validation

def _attr_kind(value):
    """The AttrValue type of a canonical value: 'int', 'list(float)', 'list' (empty), ..."""
    if isinstance(value, (list, tuple)):
        kinds = {_attr_kind(v) for v in value}
        if not kinds:
            return "list"
        return f"list({kinds.pop()})" if len(kinds) == 1 else "list(<mixed>)"
    for kind, types in (("bool", (bool, np.bool_)), ("int", (int, np.integer)),
                        ("float", (float, np.floating)), ("string", (str, bytes)),
                        ("type", dtypes.DType), ("shape", TensorShape),
                        ("tensor", np.ndarray), ("func", dict)):
        if isinstance(value, types):
            return kind
    return type(value).__name__


def _canonical(attr_def, value):
    """Plain Python ints/floats, a func's name; UnimplementedError for func attrs with bound
    attrs other than internal (`_`-prefixed) ones, such as tf.data's `_tf_data_function`."""
    if attr_def.is_list:
        return [_canonical_item(attr_def.base_type, v) for v in value]
    return _canonical_item(attr_def.base_type, value)


def _canonical_item(base_type, value):
    if base_type == "int":
        return int(value)
    if base_type == "float":
        return float(value)
    if base_type == "bool":
        return bool(value)
    if base_type == "func":
        if any(not key.startswith("_") for key in value.get("attr") or ()):
            raise UnimplementedError(f"function attrs with bound attrs ({value['name']}) are "
                                     "not supported")
        return value["name"]
    return value


def _node_suffix(name, op_def):
    return f"\n\t; NodeDef: {{{{node {name}}}}}; {op_def.signature()}"


def _check_attrs(node, op_def, name):
    """The node's attrs, checked against the OpDef and with defaults filled (TF's
    ValidateNodeDef + AddDefaultsToNodeDef). Attrs the OpDef lacks are kept unchecked, as
    TF does: `_`-prefixed internal ones silently, others with a warning (a newer producer)."""
    given = node["attr"]
    for key in given:
        if not key.startswith("_") and op_def.attr_def(key) is None:
            warnings.warn(f"NodeDef mentions attribute {key} which is not in the op "
                          f"definition: {op_def.signature()} This may be expected if your "
                          "graph generating binary is newer than this binary. Unknown "
                          f"attributes will be ignored. NodeDef: {{{{node {name}}}}}",
                          UserWarning, stacklevel=4)
    attrs = {k: v for k, v in given.items() if op_def.attr_def(k) is None}
    for attr_def in op_def.attr:
        if attr_def.name not in given:
            if not attr_def.has_default:
                raise InvalidArgumentError(
                    f"NodeDef missing attr '{attr_def.name}' from {op_def.signature()}; "
                    f"NodeDef: {{{{node {name}}}}}")
            attrs[attr_def.name] = attr_def.default_value
            continue
        value = given[attr_def.name]
        where = f"\n\t for attr '{attr_def.name}'{_node_suffix(name, op_def)}"
        if value is None:
            raise InvalidArgumentError(
                f"AttrValue missing value with expected type '{attr_def.type}'{where}")
        kind = _attr_kind(value)
        if kind != attr_def.type and not (kind == "list" and attr_def.is_list):
            raise InvalidArgumentError(
                f"AttrValue had value with type '{kind}' when '{attr_def.type}' expected{where}")
        value = _canonical(attr_def, value)
        try:
            validate_attr_value(attr_def, value)
        except InvalidArgumentError as e:
            raise InvalidArgumentError(e.message + _node_suffix(name, op_def)) from None
        attrs[attr_def.name] = value
    return attrs


def _check_node_dict(node, index):
    if not isinstance(node, dict):
        raise InvalidArgumentError(f"GraphDef node {index} is not a dict: {node!r}")
    for key, kind in (("name", str), ("op", str), ("input", list), ("device", str),
                      ("attr", dict)):
        if key in node and not isinstance(node[key], kind):
            raise InvalidArgumentError(f"GraphDef node {index} has a {key!r} of type "
                                       f"{type(node[key]).__name__}, expected {kind.__name__}")
    if not all(isinstance(i, str) for i in node.get("input", ())):
        raise InvalidArgumentError(f"GraphDef node {index} has a non-string input")
    return {"name": node.get("name", ""), "op": node.get("op", ""),
            "input": list(node.get("input", ())), "device": node.get("device", ""),
            "attr": dict(node.get("attr", {}))}


def _parse_inputs(node):
    """([(source, index)], [control source]) with TF's ordering rule."""
    data, control = [], []
    for text in node["input"]:
        m = _INPUT.match(text)
        if m is None:
            raise InvalidArgumentError(f"Node '{node['name']}': Unknown input node '{text}'")
        if m.group(1):
            control.append(m.group(2))
        elif control:
            raise InvalidArgumentError(f"Node '{node['name']}': Control dependencies must come "
                                       "after regular dependencies")
        else:
            data.append((m.group(2), int(m.group(3) or 0)))
    return data, control


def _check_versions(graph_def):
    versions = graph_def.get("versions", {})
    if not isinstance(versions, dict) or not all(
            isinstance(versions.get(k, 0), int) for k in ("producer", "min_consumer")):
        raise InvalidArgumentError(f"GraphDef versions must be a dict of ints, got {versions!r}")
    producer = versions.get("producer", 0)
    if producer < GRAPH_DEF_VERSION_MIN_PRODUCER:
        raise InvalidArgumentError(f"GraphDef producer version {producer} below min producer "
                                   f"{GRAPH_DEF_VERSION_MIN_PRODUCER} supported by graphops.")
    min_consumer = versions.get("min_consumer", 0)
    if min_consumer > GRAPH_DEF_VERSION:
        raise InvalidArgumentError(f"GraphDef min consumer version {min_consumer} above current "
                                   f"version {GRAPH_DEF_VERSION} for graphops. Upgrade graphops "
                                   "to consume this graph.")
    if GRAPH_DEF_VERSION in versions.get("bad_consumers", ()):
        raise InvalidArgumentError(f"GraphDef disallows consumer version {GRAPH_DEF_VERSION}.")


def _check_library(library, functions):
    """{name: FunctionDef dict} of a GraphDef's library, checked against the graph's
    `functions`: TF adds a name again only with the same definition."""
    if not isinstance(library, dict) or not isinstance(library.get("function", []), list):
        raise InvalidArgumentError("GraphDef library must hold a list of FunctionDefs")
    added = {}
    for i, function in enumerate(library.get("function", [])):
        proto = messages.function_to_proto(function, f"library.function[{i}]")
        name = proto.signature.name
        if not name:
            raise InvalidArgumentError(f"FunctionDef library.function[{i}] has no name")
        known = added.get(name, functions.get(name))
        if known is not None and messages.function_to_proto(known, name) != proto:
            raise InvalidArgumentError(f"Cannot add function '{name}' because a different "
                                       "function with the same name already exists.")
        added[name] = function
    return added


def _loop_roles(nodes):
    """(NextIteration node names, Merge node names): the roles their kernels declare. An
    edge from the first into the second is a TF1 loop's back edge (the Merge exists
    before its NextIteration), the one kind of cycle a GraphDef may hold."""
    roles = {op: control_flow_role(op) for op in {node["op"] for node in nodes.values()}}
    return tuple({name for name, node in nodes.items() if roles[node["op"]] == role}
                 for role in ("next_iteration", "merge"))


def _topological_order(nodes, parsed):
    """Node names in an order where every node follows its inputs, loops' back edges
    aside; TF's errors otherwise."""
    import networkx as nx   # lazily: `import graphops` stays fast

    next_iterations, merges = _loop_roles(nodes)
    dag = nx.DiGraph()
    dag.add_nodes_from(nodes)
    for name, (data, control) in parsed.items():
        for source, _ in data:
            if source not in nodes:
                raise InvalidArgumentError(f"Node '{name}': Unknown input node '{source}'")
            if source not in next_iterations or name not in merges:
                dag.add_edge(source, name)
        for source in control:
            if source not in nodes:
                raise InvalidArgumentError(f"Node '{name}': Unknown input node '^{source}'")
            dag.add_edge(source, name)
    try:
        return list(nx.lexicographical_topological_sort(dag, key=list(nodes).index))
    except nx.NetworkXUnfeasible:
        stuck = {n for c in nx.strongly_connected_components(dag)
                 if len(c) > 1 or dag.has_edge(next(iter(c)), next(iter(c))) for n in c}
        stuck |= {d for n in list(stuck) for d in nx.descendants(dag, n)}
        cycle = " -> ".join([u for u, _ in nx.find_cycle(dag)] + [nx.find_cycle(dag)[0][0]])
        raise InvalidArgumentError(f"{len(stuck)} nodes in a cycle: {cycle}") from None


# ----------------------------------------------------------------------------- import

@dataclass
class _Plan:
    """One validated node: what `Graph._create_op` needs."""

    op_def: object
    name: str
    attrs: dict
    inputs: list          # (imported node name, index) or a Tensor from input_map
    control: list         # imported node names or Operations from input_map
    types: list
    shapes: list
    device: str
    handle_shapes: list   # what the outputs' resources hold (None: not a resource's)


def _source(ref, plans, expected):
    """(dtype, shape, constant value or None, display name, handle shape or None) of an
    input reference; a source not planned yet (a loop's back edge) is taken to be what the
    input expects, of unknown shape (`_check_back_edges` checks it later)."""
    if isinstance(ref, Tensor):
        value = ref.op.attrs["value"] if ref.op.type == "Const" else None
        return ref.dtype, ref.shape, value, ref.name, ref._handle_shape
    if ref[0] not in plans:
        return expected, unknown_shape(), None, f"{ref[0]}:{ref[1]}", None
    plan = plans[ref[0]]
    value = plan.attrs.get("value") if plan.op_def.name == "Const" else None
    return (plan.types[ref[1]], plan.shapes[ref[1]], value, f"{plan.name}:{ref[1]}",
            plan.handle_shapes[ref[1]])


def _plan_node(node, name, data, control, plans, input_map, names):
    """Validates one node (in topological order) and infers its output dtypes and shapes."""
    op_def = get_op_def(node["op"])
    attrs = _check_attrs(node, op_def, name)
    types, _ = output_types(op_def, attrs)
    expected = input_types(op_def, attrs)
    if len(expected) != len(data):
        raise InvalidArgumentError(
            f"NodeDef expected inputs '{', '.join(t.short_name for t in expected)}' do not "
            f"match {len(data)} inputs specified; {op_def.signature()}; NodeDef: "
            f"{{{{node {name}}}}}")
    inputs, shapes, values, shown, handles = [], [], [], [], []
    for i, (source, index) in enumerate(data):
        ref = input_map.get(f"{source}:{index}")
        if ref is None and source not in plans:
            ref = (source, index)
        elif ref is None:
            n_out = len(plans[source].types)
            if index >= n_out:
                raise InvalidArgumentError(
                    f"Node '{name}': Connecting to invalid output {index} of source node "
                    f"{source} which has {n_out} outputs.")
            ref = (source, index)
        dtype, shape, value, label, handle = _source(ref, plans, expected[i])
        if dtype is not expected[i] and (expected[i].is_ref
                                         or dtype.base_dtype is not expected[i]):
            raise InvalidArgumentError(
                f"Input {i} of node {name} was passed {dtype.short_name} from {label} "
                f"incompatible with expected {expected[i].short_name}.")
        inputs.append(ref)
        shapes.append(shape)
        values.append(value)
        handles.append(handle)
        shown.append(label[:-2] if label.endswith(":0") else label)
    control_refs = [input_map.get("^" + s, s) for s in control]
    shown += ["^" + (c.name if isinstance(c, Operation) else names[c]) for c in control_refs]
    try:
        out_shapes, handle_shapes = infer_shapes(op_def, name, shapes, values, attrs,
                                                 len(types), handles)
    except ValueError as e:
        raise shape_fn_error(e, summarize_node(name, op_def.name, attrs, shown), shapes) from None
    _check_output_shapes(attrs.pop("_output_shapes", None), out_shapes, name)
    warn_deprecated(op_def)
    try:
        device = canonical_device(node["device"])
    except (TypeError, ValueError):
        raise InvalidArgumentError(f"Malformed device specification '{node['device']}' in "
                                   f"node: {{{{node {name}}}}}") from None
    return _Plan(op_def, name, attrs, inputs, control_refs, types, out_shapes, device,
                 handle_shapes)


def _check_output_shapes(declared, inferred, name):
    """TF's check of a node's `_output_shapes` against the inferred shapes (then dropped)."""
    if declared is None:
        return
    if not isinstance(declared, list) or not all(isinstance(s, TensorShape) for s in declared):
        raise InvalidArgumentError(f"Node '{name}': _output_shapes must be a list of shapes")
    if len(declared) != len(inferred):
        raise InvalidArgumentError(
            f"Node '{name}' has {len(inferred)} outputs but the _output_shapes attribute "
            f"specifies shapes for {len(declared)} outputs. Output shapes may be inaccurate.")
    for i, (d, s) in enumerate(zip(declared, inferred)):
        try:
            merge_shapes(s, d)
        except InvalidArgumentError as e:
            raise InvalidArgumentError(
                f"Node '{name}' has an _output_shapes attribute inconsistent with the GraphDef "
                f"for output #{i}: {e.message}") from None


def _resolve_input_map(graph, input_map):
    resolved = {}
    for key, value in (input_map or {}).items():
        if not isinstance(key, str):
            raise TypeError(f"input_map keys must be tensor names (strings), got {key!r}")
        try:
            element = graph.as_graph_element(as_graph_element(value))
        except (KeyError, ValueError) as e:
            raise InvalidArgumentError(f"input_map value for {key!r}: "
                                       f"{e.args[0] if e.args else e}") from None
        if key.startswith("^"):
            resolved[key] = element.op if isinstance(element, Tensor) else element
        else:
            if not isinstance(element, Tensor):
                raise TypeError(f"input_map value for {key!r} must be a Tensor, got {element}")
            resolved[key if ":" in key else key + ":0"] = element
    return resolved


def _check_input_map_keys(input_map, plans):
    missing = []
    for key in input_map:
        source, _, index = key.lstrip("^").partition(":")
        plan = plans.get(source)
        if plan is None or (index and not (index.isdigit() and int(index) < len(plan.types))):
            missing.append(key)
    if missing:
        raise InvalidArgumentError("Attempted to map inputs that were not found in graph_def: "
                                   f"[{', '.join(missing)}]")


def _check_return_names(return_elements, plans):
    for text in return_elements or ():
        source, colon, index = text.partition(":")
        if source not in plans:
            kind = "tensor" if colon else "node"
            raise InvalidArgumentError(f"Requested return {kind} '{text}' not found in graph def")
        n_out = len(plans[source].types)
        if colon and not (index.isdigit() and int(index) < n_out):
            raise InvalidArgumentError(f"Invalid return output {index} of node '{source}', "
                                       f"which has {n_out} output(s)")


def _return_elements(names, created, input_map):
    results = []
    for text in names:
        source, colon, index = text.partition(":")
        if not colon:
            results.append(created[source])
            continue
        mapped = input_map.get(f"{source}:{int(index)}")
        results.append(mapped if mapped is not None else created[source].outputs[int(index)])
    return results


def import_graph_def(graph_def, input_map=None, return_elements=None, name=None):
    """Imports a GraphDef (dict, protobuf message or JSON text) into the default graph.

    Node names get the prefix `name` ("import" by default, made unique; "" for none, then
    clashing names get `_N` suffixes). `input_map` maps "node:i" (or "^node") names of the
    GraphDef to existing Tensors (Operations); `return_elements` names tensors ("r:0") and
    operations ("r") to return, in order. The GraphDef's function library joins the
    graph's. Returns that list, or None.
    """
    if isinstance(graph_def, (str, bytes)):
        graph_def = graph_json.graph_def_from_json(graph_def)
    elif hasattr(graph_def, "SerializeToString"):       # a GraphDef message, ours or TF's
        graph_def = messages.graph_def_from_proto(graph_def)
    if not isinstance(graph_def, dict):
        raise TypeError(f"graph_def must be a GraphDef dict, message or JSON text, got "
                        f"{type(graph_def).__name__}")
    graph = get_default_graph()
    _check_versions(graph_def)
    if not isinstance(graph_def.get("node", []), list):
        raise InvalidArgumentError("GraphDef 'node' must be a list of NodeDef dicts")
    nodes = {}
    for i, raw in enumerate(graph_def.get("node", [])):
        node = _check_node_dict(raw, i)
        if not VALID_NODE_NAME.match(node["name"]):
            raise InvalidArgumentError(
                f"Node '{node['name']}': Node name contains invalid characters")
        if node["name"] in nodes:
            raise InvalidArgumentError(f"Node '{node['name']}' is not unique")
        nodes[node["name"]] = node
    parsed = {n: _parse_inputs(node) for n, node in nodes.items()}
    order = _topological_order(nodes, parsed)
    with graph._lock:
        graph._check_not_finalized()
        functions = _check_library(graph_def.get("library", {}), graph._functions)
        input_map = _resolve_input_map(graph, input_map)
        with graph.name_scope(name if name == "" else (name or "import")):
            names = {n: graph.unique_name(n) for n in order}
        plans = {}
        for n in order:
            data, control = parsed[n]
            plans[n] = _plan_node(nodes[n], names[n], data, control, plans, input_map, names)
        _check_input_map_keys(input_map, plans)
        _check_return_names(return_elements, plans)
        back_edges = _check_back_edges(plans)
        graph._functions.update(functions)
        created = {}
        for n in order:
            created[n] = _create(graph, plans[n], created, names)
        for n, i, (source, index) in back_edges:
            created[n]._update_input(i, created[source].outputs[index])
    if return_elements is None:
        return None
    return _return_elements(return_elements, created, input_map)


def _check_back_edges(plans):
    """[(node, input index, source ref)] of the inputs planned before their sources (a
    loop's NextIteration into its Merge), each checked to carry the dtype expected."""
    position = {n: k for k, n in enumerate(plans)}
    found = []
    for n, plan in plans.items():
        for i, ref in enumerate(plan.inputs):
            if isinstance(ref, Tensor) or position[ref[0]] < position[n]:
                continue
            expected = input_types(plan.op_def, plan.attrs)[i]
            dtype = plans[ref[0]].types[ref[1]]
            if dtype is not expected and dtype.base_dtype is not expected:
                raise InvalidArgumentError(
                    f"Input {i} of node {plan.name} was passed {dtype.short_name} from "
                    f"{ref[0]}:{ref[1]} incompatible with expected {expected.short_name}.")
            found.append((n, i, ref))
    return found


def _create(graph, plan, created, names):
    """Adds one planned node; an input whose source comes later (a back edge) starts as
    one of the node's other inputs and is set once its source exists."""
    inputs = [ref if isinstance(ref, Tensor) else
              created[ref[0]].outputs[ref[1]] if ref[0] in created else None
              for ref in plan.inputs]
    if None in inputs:
        stand_in = next((t for t in inputs if t is not None), None)
        if stand_in is None:
            raise InvalidArgumentError(f"Node '{plan.name}': every input comes from a later "
                                       "NextIteration node; a loop's Merge needs its Enter.")
        inputs = [stand_in if t is None else t for t in inputs]
    control = [ref if isinstance(ref, Operation) else created[ref] for ref in plan.control]
    attrs = _prefix_colocation(plan.attrs, names)
    op = graph._create_op(plan.op_def, plan.name, inputs, attrs, plan.types, plan.shapes,
                          control, plan.device)
    set_handle_shapes(op, plan.handle_shapes)
    return op


def _prefix_colocation(attrs, names):
    """`_class: ["loc:@x"]` follows the renamed node, as TF's importer does."""
    groups = attrs.get("_class")
    if not isinstance(groups, list):
        return attrs
    renamed = [f"loc:@{names.get(g[5:], g[5:])}" if isinstance(g, str) and g.startswith("loc:@")
               else g for g in groups]
    return {**attrs, "_class": renamed}
