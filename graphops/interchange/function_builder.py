"""Python callables as library functions: FuncGraph (TF 2's) and its FunctionDef.

A FuncGraph is a Graph of its own in which a function body is traced. While it is the
default graph, every op built there goes into it, and an input from an enclosing graph
(an outer tensor, a variable's handle) is *captured*: a Placeholder stands for it inside,
and the op calling the function passes the outer tensor as an extra argument. Nested
FuncGraphs capture through each level. `control_dependencies` on outer ops inside a body
become control captures, which the calling op takes as control inputs.

`function_def(func_graph, name)` turns a traced body into a FunctionDef dict (the form
messages.py reads and writes): args are `func_graph.inputs` (declared args, then captures),
results `func_graph.outputs`; every stateful op is a control output, so side effects of
a body run whenever the body runs. `add_function` adds it to the graph's library.
"""

import itertools
import re

from graphops.building.graph import Graph
from graphops.building.op_builder import create_node
from graphops.building.tensor import Operation, Tensor
from graphops.registry.errors import InvalidArgumentError
from graphops.registry.op_def import arg_types
from graphops.registry.op_registry import get_op_def

_uid = itertools.count(1)
_ARG_NAME = re.compile(r"[^a-z0-9_]")


def unique_function_name(scope, what):
    """A new library function name such as "cond_true_7" (TF's unique_fn_name)."""
    return f"{scope}{what}_{next(_uid)}".replace("/", "_")


class FuncGraph(Graph):
    """The graph a function body is traced into, capturing tensors of enclosing graphs."""

    captures_outer = True    # op building prefers this graph over its inputs' graphs

    def __init__(self, name, outer_graph):
        super().__init__()
        self.name = name
        self.outer_graph = outer_graph
        self.seed = outer_graph.seed
        self._functions = outer_graph._functions      # one library for the whole nest
        self._collections = outer_graph._collections  # (TF's FuncGraph shares them too)
        self.inputs = []             # declared args, then captures (Placeholders)
        self.outputs = []
        self.captures = {}           # outer Tensor -> its Placeholder here
        self.control_captures = []   # outer Operations the calling op must run after

    def add_arg(self, dtype, shape, name):
        """A Placeholder for a declared argument (before any capture is made)."""
        placeholder = self._placeholder(dtype, shape, name)
        self.inputs.append(placeholder)
        return placeholder

    def capture(self, tensor):
        """The tensor standing for `tensor` inside this graph (a Placeholder for an outer
        one, captured once)."""
        if tensor.graph is self:
            return tensor
        inner = self.captures.get(tensor)
        if inner is not None:
            return inner
        outer = self.outer_graph
        if tensor.graph is not outer:
            if not isinstance(outer, FuncGraph):
                raise InvalidArgumentError(f"{tensor} is not an element of this graph.")
            outer.capture(tensor)       # each enclosing body captures it in turn
        inner = self._placeholder(tensor.dtype, tensor.shape, tensor.op.name)
        self.captures[tensor] = inner
        self.inputs.append(inner)
        return inner

    def _placeholder(self, dtype, shape, name):
        with self._set("name_stack", ""):
            op = create_node(self, get_op_def("Placeholder"), self.unique_name(_arg_name(name)),
                             {"dtype": dtype, "shape": shape}, None, control_inputs=[])
        return op.outputs[0]

    def external_captures(self):
        """The outer tensors captured, in argument order."""
        return list(self.captures)

    def control_dependencies(self, control_inputs):
        if control_inputs is not None:
            inner = []
            for c in control_inputs:
                c = c.op if isinstance(c, Tensor) else c
                if isinstance(c, Operation) and c.graph is not self:
                    if c not in self.control_captures:
                        self.control_captures.append(c)
                else:
                    inner.append(c)
            control_inputs = inner
        return super().control_dependencies(control_inputs)

    def _create_op(self, op_def, name, inputs, attrs, output_types, output_shapes,
                   control_inputs, device=None):
        inputs = [t if t.graph is self else self.capture(t) for t in inputs]
        return super()._create_op(op_def, name, inputs, attrs, output_types, output_shapes,
                                  control_inputs, device)


def _arg_name(name):
    """A valid FunctionDef arg name ([a-z][a-z0-9_]*) made from an op name."""
    name = _ARG_NAME.sub("_", name.lower())
    return name if name[:1].isalpha() else "arg_" + name


def is_stateful(func_graph):
    """True when a stateful op is in the body (its arguments, Placeholders, are not)."""
    return any(op.op_def.is_stateful for op in func_graph.get_operations())


def function_def(func_graph, name=None):
    """The traced body as a FunctionDef dict named `name` (default `func_graph.name`)."""
    args = {t.op: t.op.name for t in func_graph.inputs}
    nodes, control = [], []
    for op in func_graph.get_operations():
        if op in args:
            continue
        node = op.node_def
        node["input"] = [_body_ref(t, args) for t in op.inputs]
        node["input"] += ["^" + c.name for c in op.control_inputs]
        for attr_def in op.op_def.attr:
            if attr_def.type == "func" and isinstance(node["attr"].get(attr_def.name), str):
                node["attr"][attr_def.name] = {"name": node["attr"][attr_def.name], "attr": {}}
        nodes.append(node)
        if op.op_def.is_stateful:
            control.append(op.name)
    out_names = [f"output_{i}" for i in range(len(func_graph.outputs))]
    signature = {
        "name": name or func_graph.name,
        "input_arg": [{"name": args[t.op], "type": t.dtype.tf_name} for t in func_graph.inputs],
        "output_arg": [{"name": n, "type": t.dtype.tf_name}
                       for n, t in zip(out_names, func_graph.outputs)]}
    if control:     # (every stateful op of the body is one)
        signature["control_output"] = control
        signature["is_stateful"] = True
    return {"signature": signature, "attr": {},
            "arg_attr": {i: {"attr": {"_output_shapes": [t.shape]}}
                         for i, t in enumerate(func_graph.inputs)},
            "resource_arg_unique_id": {},
            "node_def": nodes,
            "ret": {n: _body_ref(t, args) for n, t in zip(out_names, func_graph.outputs)},
            "control_ret": {c: c for c in control}}


def _body_ref(tensor, args):
    """A tensor as a function body names it: "arg" or "node:output_arg:index"."""
    op = tensor.op
    if op in args:
        return args[op]
    index = tensor.value_index
    for arg in op.op_def.output_arg:
        _, (length,) = arg_types([arg], op.attrs)
        length = 1 if length is None else length
        if index < length:
            return f"{op.name}:{arg.name}:{index}"
        index -= length
    raise InvalidArgumentError(f"{tensor} is not an output of {op.name}")


def add_function(graph, function):
    """Adds the FunctionDef dict to `graph`'s library (shared by its FuncGraphs)."""
    graph._functions[function["signature"]["name"]] = function
    return function["signature"]["name"]
