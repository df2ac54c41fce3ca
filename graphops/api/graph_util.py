"""gp.graph_util: TF1's tf.graph_util, surgery on GraphDef messages.

    frozen = gp.graph_util.convert_variables_to_constants(sess, g.as_graph_def(), ["probs"])
    sub = gp.graph_util.extract_sub_graph(graph_def, ["loss"])
    lean = gp.graph_util.remove_training_nodes(graph_def, protected_nodes=["out"])

Each takes and returns GraphDef messages (`gp.GraphDef`; TensorFlow's are read as ours) and
follows TF's v1 functions node for node, quirks included, so that a frozen or pruned graph
equals the one TF makes of the same GraphDef. Loads protobuf on first use.
"""

import importlib
import itertools

import numpy as np

from graphops.building.tensor import Operation
from graphops.registry import dtypes
from graphops.registry.errors import InvalidArgumentError

__all__ = ["convert_variables_to_constants", "extract_sub_graph", "import_graph_def",
           "must_run_on_cpu", "remove_training_nodes", "tensor_shape_from_node_def_name"]

_VARIABLE_OPS = frozenset({"Assign", "AssignAdd", "AssignSub", "Queue", "ScatterAdd",
                           "ScatterSub", "ScatterUpdate", "TruncatedNormal", "Variable",
                           "VariableV2"})
_FROZEN_VARIABLES = ("Variable", "VariableV2", "VarHandleOp")
_CONST_SOURCES = ("VariableV2", "VarHandleOp")     # (TF freezes "Variable" nodes to nothing)
_PASS_THROUGH = ("Enter", "Exit", "Identity", "NextIteration", "Switch", "_SwitchN")
# caller op: (its first input passed to the functions, the attr of their types, the attrs
# naming the functions)
_FUNCTION_CALLERS = {"If": (1, "Tin", ("then_branch", "else_branch")),
                     "StatelessIf": (1, "Tin", ("then_branch", "else_branch")),
                     "Case": (1, "Tin", ("branches",)),
                     "While": (0, "T", ("body", "cond")),
                     "StatelessWhile": (0, "T", ("body", "cond")),
                     "PartitionedCall": (0, "Tin", ("f",)),
                     "StatefulPartitionedCall": (0, "Tin", ("f",))}


def __getattr__(name):
    """`import_graph_def`, TF's alias of `gp.import_graph_def`, loaded on first use."""
    if name != "import_graph_def":
        raise AttributeError(f"module 'graphops.graph_util' has no attribute {name!r}")
    value = globals()[name] = importlib.import_module(
        "graphops.interchange.graph_def").import_graph_def
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))


def _messages():
    from graphops.interchange import messages
    return messages


def _full_name(message):
    return getattr(getattr(message, "DESCRIPTOR", None), "full_name", None)


def _graph_def(graph_def, what="graph_def"):
    """Our GraphDef message for `graph_def` (TensorFlow's converted); TF's TypeError for
    anything else, a GraphDef dict included."""
    messages = _messages()
    if isinstance(graph_def, messages.GraphDef):
        return graph_def
    if _full_name(graph_def) == "tensorflow.GraphDef":
        return messages.graph_def_to_proto(graph_def)
    raise TypeError(f"{what} must be a graph_pb2.GraphDef proto, but got type "
                    f"{type(graph_def)}.")


def _node_name(text):
    """The node an input string names: "^a" -> "a", "a:1" -> "a"."""
    return text[1:] if text.startswith("^") else text.split(":")[0]


def _colocated(node):
    """The node names of a NodeDef's `_class: ["loc:@name"]` attr."""
    if "_class" not in node.attr:
        return []
    names = []
    for item in node.attr["_class"].list.s:
        text = item.decode("utf-8", errors="replace")
        names.append(text[5:] if text.startswith("loc:@") else text)
    return names


# ----------------------------------------------------------------------------- small helpers

def must_run_on_cpu(node, pin_variables_on_cpu=False):
    """Whether `node` (an Operation or a NodeDef) must run on the CPU: int32 and string
    constants, int32 DynamicStitch and Cast from int32; with `pin_variables_on_cpu`, the
    variable ops too (TF's rule, kept for TF1 device functions)."""
    if isinstance(node, Operation):
        op_type = node.type

        def attr_type(name):
            value = node.attrs.get(name)
            return value.enum if isinstance(value, dtypes.DType) else 0
    elif _full_name(node) == "tensorflow.NodeDef":
        op_type = node.op

        def attr_type(name):
            return node.attr[name].type if name in node.attr else 0
    else:
        raise AssertionError(f"must_run_on_cpu expects an Operation or a NodeDef, got "
                             f"{type(node)}")
    if pin_variables_on_cpu and op_type in _VARIABLE_OPS:
        return True
    if op_type == "Const":
        return attr_type("dtype") in (dtypes.string.enum, dtypes.int32.enum)
    if op_type in ("DynamicStitch", "ParallelDynamicStitch"):
        return attr_type("T") == dtypes.int32.enum
    if op_type == "Cast":
        return attr_type("SrcT") == dtypes.int32.enum
    return False


def tensor_shape_from_node_def_name(graph, input_name):
    """The static shape of the tensor a NodeDef input string names in `graph` ("a" is "a:0")."""
    name = input_name if ":" in input_name else input_name + ":0"
    return graph.get_tensor_by_name(name).shape


# ----------------------------------------------------------------------------- sub-graphs

def extract_sub_graph(graph_def, dest_nodes):
    """The GraphDef of the nodes `dest_nodes` need: their data, control and colocation
    inputs, transitively, in the original order, with the library and versions kept."""
    graph_def = _graph_def(graph_def)
    if isinstance(dest_nodes, str):
        raise TypeError("dest_nodes must be an iterable of strings, but got type "
                        f"{type(dest_nodes)}.")
    by_name, order, sources = {}, {}, {}
    for seq, node in enumerate(graph_def.node):
        name = _node_name(node.name)
        by_name[name], order[name] = node, seq
        sources[name] = [_node_name(i) for i in node.input] + _colocated(node)
    dest_nodes = list(dest_nodes)
    for name in dest_nodes:
        if name not in by_name:
            raise AssertionError(f"{name} is not in graph")
    keep, queue = set(), list(dest_nodes)
    while queue:
        name = queue.pop(0)
        if name in keep:
            continue
        if name not in by_name:
            raise InvalidArgumentError(f"{name} is not in graph (an input or colocation of "
                                       "a node kept)")
        keep.add(name)
        queue.extend(sources[name])
    out = type(graph_def)()
    out.node.extend(by_name[name] for name in sorted(keep, key=order.__getitem__))
    out.library.CopyFrom(graph_def.library)
    out.versions.CopyFrom(graph_def.versions)
    return out


def _uncontrolled(text):
    return text[1:] if text.startswith("^") else text


def remove_training_nodes(input_graph, protected_nodes=None):
    """`input_graph`'s nodes without CheckNumerics (inputs from them dropped) and with
    Identity and StopGradient nodes spliced out, except the `protected_nodes`, those with
    or used as control inputs and those a node colocates with. As TF, the result holds
    the nodes only (no library, no versions)."""
    graph_def = _graph_def(input_graph, "input_graph")
    protected = set(protected_nodes or ())
    removed = {node.name for node in graph_def.node
               if node.op == "CheckNumerics" and node.name not in protected}
    kept = []
    for node in graph_def.node:
        if node.name not in removed:
            kept.append((node, [i for i in node.input if _uncontrolled(i) not in removed]))
    control_sources, controlled, colocated = set(), set(), set()
    for node, inputs in kept:
        for text in inputs:
            if "^" in text:
                control_sources.add(text.replace("^", ""))
                controlled.add(node.name)
        colocated.update(_colocated(node))
    splice = {node.name: inputs[0] for node, inputs in kept
              if node.op in ("Identity", "StopGradient") and inputs
              and node.name not in protected and node.name not in colocated
              and node.name not in controlled and node.name not in control_sources}
    out = type(graph_def)()
    for node, inputs in kept:
        if node.name in splice:
            continue
        copy = out.node.add()
        copy.CopyFrom(node)
        del copy.input[:]
        copy.input.extend(_spliced(text, splice) for text in inputs)
    return out


def _spliced(text, splice):
    """The input string `text` after following spliced-out nodes to their first input."""
    seen = set()
    while _uncontrolled(text) in splice:
        if text in seen:
            raise InvalidArgumentError(f"Identity nodes in a cycle: {sorted(seen)}")
        seen.add(text)
        text = splice[_uncontrolled(text)]
    return text


# ----------------------------------------------------------------------------- freezing

def convert_variables_to_constants(sess, input_graph_def, output_node_names,
                                   variable_names_whitelist=None,
                                   variable_names_blacklist=None):
    """The sub-graph that `output_node_names` need, with its variables (VariableV2,
    VarHandleOp) replaced by Const nodes holding their values in `sess`: a resource
    variable's reads become Identity nodes (its gathers GatherV2 / GatherNd), the dtype
    attrs of the Identity, Switch, Enter, ... nodes after a variable follow, and so do the
    functions of the If, While, Case and call nodes it reaches (renamed, as TF renames
    them). Only the variables named in the whitelist (all by default) and not in the
    blacklist are frozen.
    """
    graph_def = extract_sub_graph(input_graph_def, output_node_names)
    found = [node for node in graph_def.node if node.op in _FROZEN_VARIABLES
             and (variable_names_whitelist is None or node.name in variable_names_whitelist)
             and (variable_names_blacklist is None
                  or node.name not in variable_names_blacklist)]
    freezer = _Freezer(graph_def)
    if found:
        names = [node.name + ("/Read/ReadVariableOp" if node.op == "VarHandleOp" else "")
                 + ":0" for node in found]
        for node, value in zip(found, sess.run(names)):
            freezer.freeze(node.name, value, node.attr["dtype"].type)
    return freezer.out


class _Freezer:
    """A copy of a GraphDef in which variables become constants, each change following
    the data edges out of the variable as TF's converter does: into function bodies
    through If, Case, While and (Stateful)PartitionedCall nodes (the functions changed are
    renamed `<name>_frozen_<n>`). A node is known by (function name or None, node name)."""

    def __init__(self, graph_def):
        self.out = type(graph_def)()
        self.out.CopyFrom(graph_def)
        self.original, self.nodes, self.consumers = {}, {}, {}
        self.functions = {f.signature.name: f for f in graph_def.library.function}
        self.out_functions = {f.signature.name: f for f in self.out.library.function}
        self.renamed, self.callers, self.frozen_names = {}, [], None
        self._add_nodes(None, graph_def.node, self.out.node)
        for name, function in self.functions.items():
            self._add_nodes(name, function.node_def, self.out_functions[name].node_def)

    def _add_nodes(self, scope, nodes, copies):
        for node, copy in zip(nodes, copies):
            self.original[scope, node.name] = node
            self.nodes[scope, node.name] = copy
        for node in nodes:
            for index, text in enumerate(node.input):
                if not text.startswith("^"):
                    source = self._source(scope, text)
                    self.consumers.setdefault(source, []).append(((scope, node.name), index))

    def _source(self, scope, text):
        """What an input string names (TF's resolve_input): a node (scope, name), or in a
        function body ("arg", function, index) for one of its arguments."""
        parts = text.split(":")
        index = int(parts[-1]) if len(parts) > 1 and parts[-1].isnumeric() else 0
        if scope is None or index != 0 or (scope, parts[0]) in self.original:
            return scope, parts[0]
        args = [arg.name for arg in self.functions[scope].signature.input_arg]
        if parts[0] not in args:
            raise InvalidArgumentError(f"Function {scope}: unknown input {text}")
        return "arg", scope, args.index(parts[0])

    def freeze(self, name, value, dtype):
        """Makes the variable `name` a Const of `value` and rewrites what reads it."""
        value = np.asarray(value, dtypes.as_dtype(dtype).np_dtype)
        stack, seen = [((None, name), None)], set()
        while stack:
            key, index = stack.pop()
            if (key, index) in seen:
                continue
            seen.add((key, index))
            if key[0] == "arg":
                stack.extend(reversed(self._argument(key[1], key[2], value, dtype)))
            elif self._rewrite(key, index, value, dtype):
                stack.extend(reversed(self.consumers.get(key, [])))
            elif self.original[key].op in _FUNCTION_CALLERS:
                stack.extend(reversed(self._call(key, index, value, dtype)))
        for key in self.callers:
            _rename_functions(self.nodes[key], self.renamed)

    def _rewrite(self, key, index, value, dtype):
        """Rewrites node `key` reached through its input `index` (None: the variable
        itself); whether the change goes on to its consumers."""
        original, node = self.original[key], self._node(key)
        op = original.op
        if op in _CONST_SOURCES:
            node.Clear()
            node.name, node.op = original.name, "Const"
            node.attr["dtype"].type = dtype
            _messages().tensor_to_proto(value, node.attr["value"].tensor)
            return True
        if op in _PASS_THROUGH:
            _set_type(node, "T", index, dtype)
            if "_output_shapes" in node.attr:
                del node.attr["_output_shapes"]
            return True
        if op == "ReadVariableOp":
            _rebuild(node, original, "Identity", original.input[:1], {"T": "dtype"})
            if key[0] is not None:      # in a function body, "read:value" is "read:output"
                for dest, i in self.consumers.get(key, []):
                    parts = self._node(dest).input[i].split(":")
                    if len(parts) > 1 and parts[1] == "value":
                        self._node(dest).input[i] = ":".join([parts[0], "output", *parts[2:]])
        elif op == "ResourceGather" and key[0] is None:
            self._gather(node, original)
        elif op == "ResourceGatherNd":
            _rebuild(node, original, "GatherNd", original.input[:2],
                     {"Tparams": "dtype", "Tindices": "Tindices"})
        return False

    def _node(self, key):
        """The node's copy to change (its function renamed first, as TF does)."""
        if key[0] is not None:
            self._function(key[0])
        return self.nodes[key]

    def _call(self, key, index, value, dtype):
        """A function caller reached through input `index`: the matching argument of each
        function it calls is converted, and its type attr follows."""
        original = self.original[key]
        first, type_attr, function_attrs = _FUNCTION_CALLERS[original.op]
        node = self._node(key)
        self.callers.append(key)
        if index < first:
            return []
        _set_type(node, type_attr, index - first, dtype)
        if original.op in ("While", "StatelessWhile"):
            shapes = node.attr["output_shapes"].list.shape
            if len(shapes):
                shapes[index].Clear()
                for size in value.shape:
                    shapes[index].dim.add(size=size)
            body = self._function(original.attr["body"].func.name)
            body.signature.output_arg[index].type = dtype
        return [(("arg", name, index - first), None)
                for name in _called(original, function_attrs)]

    def _argument(self, name, index, value, dtype):
        """Argument `index` of function `name` becomes of `dtype`; its readers follow."""
        function = self._function(name)
        function.signature.input_arg[index].type = dtype
        if "_input_shapes" in function.attr:
            shape = function.attr["_input_shapes"].list.shape[index]
            del shape.dim[:]
            shape.unknown_rank = True
        arg_attrs = function.arg_attr[index].attr       # (an entry now, as TF makes it)
        if "_output_shapes" in arg_attrs:
            shape = arg_attrs["_output_shapes"].list.shape[0]
            del shape.dim[:]
            shape.unknown_rank = True
        return self.consumers.get(("arg", name, index), [])

    def _function(self, name):
        """The copy of function `name`, renamed `<base>_frozen_<n>` on first change."""
        if name not in self.renamed:
            if self.frozen_names is None:
                self.frozen_names = _frozen_names(self.functions)
            self.renamed[name] = self.frozen_names[name]
            self.out_functions[name].signature.name = self.renamed[name]
        return self.out_functions[name]

    def _gather(self, node, original):
        """ResourceGather -> GatherV2 on the constant, with a Const axis `<name>/axis`."""
        batch_dims = original.attr["batch_dims"].i if "batch_dims" in original.attr else 0
        if batch_dims != 0:
            raise ValueError("batch_dims must be 0 for freeze_graph, but got "
                             f"node({original.name}).attr('batch_dims') = {batch_dims}.")
        axis_name = original.name + "/axis"
        axis = self.nodes.get((None, axis_name))
        if axis is None:
            axis = self.nodes[None, axis_name] = self.out.node.add()
        index_type = original.attr["Tindices"]
        axis.name, axis.op = axis_name, "Const"
        axis.attr["dtype"].CopyFrom(index_type)
        _messages().tensor_to_proto(np.array(0, dtypes.as_dtype(index_type.type).np_dtype),
                                    axis.attr["value"].tensor)
        _rebuild(node, original, "GatherV2", [*original.input[:2], axis_name],
                 {"Tparams": "dtype", "Tindices": "Tindices", "Taxis": "Tindices"})


_FROZEN_UIDS = itertools.count(1)


def _frozen_names(functions):
    """{name: "<base>_frozen_<n>"} for a library's functions, numbered in TF's order
    (by the number ending the name, then the name), with a process-wide counter."""
    parsed = []
    for name in functions:
        base, _, number = name.rpartition("_")
        parsed.append((int(number), base, name) if base and number.isnumeric()
                      else (-1, name, name))
    return {name: f"{base}_frozen_{next(_FROZEN_UIDS)}" for _, base, name in sorted(parsed)}


def _called(node, function_attrs):
    """The names of the functions a caller node's attrs name."""
    names = []
    for attr in function_attrs:
        value = node.attr[attr] if attr in node.attr else None
        if value is not None and value.HasField("func"):
            names.append(value.func.name)
        elif value is not None and value.HasField("list"):
            names.extend(f.name for f in value.list.func)
    return names


def _rename_functions(node, renamed):
    """Points a caller's function attrs at the renamed (frozen) functions."""
    for value in node.attr.values():
        if value.HasField("func") and value.func.name in renamed:
            value.func.name = renamed[value.func.name]
        for func in value.list.func:
            if func.name in renamed:
                func.name = renamed[func.name]


def _rebuild(node, original, op, inputs, attrs):
    """`node` cleared and made an `op` node with `inputs`, its attrs copied from the
    original's ({new name: original name}), `_class` kept."""
    node.Clear()
    node.name, node.op = original.name, op
    node.input.extend(inputs)
    for key, source in attrs.items():
        node.attr[key].CopyFrom(original.attr[source])
    if "_class" in original.attr:
        node.attr["_class"].CopyFrom(original.attr["_class"])


def _set_type(node, attr, index, dtype):
    """Sets entry `index` of the type (or type list) attr `attr` of `node` to `dtype`."""
    value = node.attr[attr] if attr in node.attr else None
    count = 0
    if value is not None and value.HasField("list"):
        count = len(value.list.type)
        if index < count:
            value.list.type[index] = dtype
            return
    elif value is not None and value.HasField("type"):
        count = 1
        if index == 0:
            value.type = dtype
            return
    raise ValueError(f"`index` {index:d} is out of range for node({node.name}).attr({attr}), "
                     f"which has {count:d} elements.")
