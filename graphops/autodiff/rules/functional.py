"""Gradients of the functional ops: a call's is the gradient of the function body; If's and
While's are in the second part of this module.

TF builds a gradient function and calls it; here the body is imported into the caller's
graph (its input args mapped to the call's inputs) and differentiated there, which gives the
same values with the body's own gradient ops.
"""

import threading

from graphops.api import raw_ops
from graphops.api.control_flow import build_if, build_while, trace
from graphops.autodiff.gradients import gradients, RegisterGradient
from graphops.autodiff.rules.util import const
from graphops.building.constant_op import convert_to_tensor
from graphops.building.graph import get_default_graph
from graphops.framework_kernels.functional import library_function
from graphops.interchange.function_builder import unique_function_name
from graphops.registry import dtypes
from graphops.registry.errors import InvalidArgumentError, NotFoundError, UnimplementedError
from graphops.registry.tensor_shape import TensorShape


_differentiating = threading.local()     # names of the functions being differentiated


@RegisterGradient("PartitionedCall")
@RegisterGradient("StatefulPartitionedCall")
def _call_grad(op, *grads):
    from graphops.interchange.functions import body_graph_def   # (loads GraphDef import)
    from graphops.interchange.graph_def import import_graph_def

    name = op.get_attr("f")
    function = op.graph._functions.get(name)
    if function is None:
        raise NotFoundError(f"Function {name} is not defined in the graph's function library.")
    active = getattr(_differentiating, "names", ())
    if name in active:
        raise InvalidArgumentError(f"Function {name} calls itself; recursive functions have "
                                   "no gradient here.")
    body = body_graph_def(function)
    args = [raw_ops.Identity(input=t) for t in op.inputs]   # one per input, even if repeated
    outputs = import_graph_def(body.graph_def, input_map=dict(zip(body.inputs, args)),
                               return_elements=body.outputs, name="body")
    pairs = [(y, g) for y, g in zip(outputs, grads) if g is not None]
    if not pairs:
        return [None] * len(op.inputs)
    ys, grad_ys = zip(*pairs)
    _differentiating.names = active + (name,)
    try:
        return gradients(list(ys), args, grad_ys=list(grad_ys))
    finally:
        _differentiating.names = active


# -----------------------------------------------------------------------------
# If, While
#
# Gradients of If / StatelessIf and While / StatelessWhile, by recomputation.
#
# Unlike TF, which rewrites the forward op to also output its intermediates, these rules
# leave the forward op alone and recompute what the gradient needs from the op's inputs:
#
# - If: an If over two gradient branches. Each imports its forward branch body (the ops
#   its outputs depend on through data edges, so the branch's side effects do not run
#   again) and differentiates it there; an input a branch does not reach gets zeros.
# - While: a first While re-runs the loop from the op's inputs, pushing every iteration's
#   values of the loop variables the gradient depends on onto TensorLists (TensorLists
#   too: a list of lists; not a counter that only counts); a second While walks the lists
#   backwards, each iteration importing the body at that iteration's values and applying
#   its gradient. Loop variables the body passes on unchanged (captures, variable handles)
#   are read from the op's inputs instead of stacked; their gradients accumulate.
#
# Stateful ops on a recomputed path (random ops) draw new values, so gradients through
# them differ from TF's; variable reads see the variables' values at gradient time.
def _function(op, attr):
    return library_function(op.graph._functions, op.get_attr(attr))


def _import_outputs(function, inputs):
    """The outputs of library function `function` applied to `inputs` (tensors of the
    default graph), its body imported there: only the nodes the outputs depend on through
    data edges, without control edges (side effects are not repeated)."""
    from graphops.interchange.functions import body_graph_def   # (loads GraphDef import)
    from graphops.interchange.graph_def import import_graph_def

    graph = get_default_graph()
    inputs = [t if t.graph is graph else graph.capture(t) for t in inputs]
    body = body_graph_def(function)
    needed = _sources(body, body.outputs)
    pruned = [{**n, "input": [i for i in n.get("input", []) if not i.startswith("^")]}
              for n in body.graph_def["node"] if n["name"] in needed]
    input_map = {name: t for name, t in zip(body.inputs, inputs) if name[:-2] in needed}
    return import_graph_def({"node": pruned}, input_map=input_map,
                            return_elements=body.outputs, name="body")


def _sources(body, outputs):
    """The names of the nodes of function body `body` (a `body_graph_def`) that `outputs`
    (its output tensor names) depend on through data edges, theirs included."""
    nodes = {n["name"]: n for n in body.graph_def["node"]}
    needed, stack = set(), [t.split(":")[0] for t in outputs]
    while stack:
        name = stack.pop()
        if name not in needed:
            needed.add(name)
            stack.extend(i.split(":")[0] for i in nodes[name].get("input", [])
                         if not i.startswith("^"))
    return needed


def _reaching(function, outputs):
    """The indices of the args of library function `function` that its outputs
    `outputs` (indices) depend on."""
    from graphops.interchange.functions import body_graph_def   # (loads GraphDef import)

    body = body_graph_def(function)
    needed = _sources(body, [body.outputs[k] for k in outputs])
    return {k for k, name in enumerate(body.inputs) if name.split(":")[0] in needed}


def _differentiable(tensor):
    """Floats, complex numbers and TensorLists (whose gradients are lists)."""
    return tensor.dtype.is_floating or tensor.dtype.is_complex or \
        tensor.dtype is dtypes.variant


def _zeros_for(tensor, like):
    """Zeros standing for the gradient of `tensor` (shaped as the value of a variable
    handle, with `like`'s dtype)."""
    if tensor.dtype is dtypes.resource:
        tensor = raw_ops.ReadVariableOp(resource=tensor, dtype=like.dtype)
    return raw_ops.ZerosLike(x=tensor)


# ------------------------------------------------------------------------------ If

@RegisterGradient("If")
@RegisterGradient("StatelessIf")
def _if_grad(op, *grads):
    inputs = list(op.inputs[1:])
    scope = op.graph.get_name_scope() + "/"
    branches = []
    for attr in ("then_branch", "else_branch"):
        function = _function(op, attr)

        def grad_branch(*args, function=function):
            outputs = _import_outputs(function, args)
            pairs = [(y, g) for y, g in zip(outputs, grads)
                     if g is not None and _differentiable(y)]
            if not pairs:
                return [None] * len(args)
            ys, grad_ys = zip(*pairs)
            return gradients(list(ys), list(args), grad_ys=list(grad_ys))

        args = [(t.dtype, t.shape, t.op.name) for t in inputs]
        branches.append(trace(unique_function_name(scope, attr), grad_branch, args))
    (then_graph, then_grads), (else_graph, else_grads) = branches
    kept = [i for i in range(len(inputs))
            if then_grads[i] is not None or else_grads[i] is not None]
    for func_graph, own, other in ((then_graph, then_grads, else_grads),
                                   (else_graph, else_grads, then_grads)):
        with func_graph.as_default():
            func_graph.outputs = [
                own[i] if own[i] is not None else _zeros_for(func_graph.inputs[i], other[i])
                for i in kept]
    if not kept:
        return [None] * len(op.inputs)
    results = build_if(op.inputs[0], then_graph, else_graph, inputs, None)
    input_grads = [None] * len(op.inputs)
    for i, value in zip(kept, results):
        input_grads[1 + i] = value
    return input_grads


# ------------------------------------------------------------------------------ While

def _passed_through(body):
    """Per loop var: does the body return its argument unchanged (maybe via Identity)?"""
    args = [a["name"] for a in body["signature"].get("input_arg", [])]
    outs = [a["name"] for a in body["signature"].get("output_arg", [])]
    nodes = {n["name"]: n for n in body.get("node_def", [])}

    def source(ref):
        node = nodes.get(ref.split(":")[0])
        while node is not None and node.get("op") == "Identity":
            ref = node["input"][0]
            node = nodes.get(ref.split(":")[0])
        return ref

    return [source(body["ret"].get(o, "")) == a for a, o in zip(args, outs)]


# call ops: (function attrs, the input its function's arg 0 receives)
_CALLS = {"If": (("then_branch", "else_branch"), 1),
          "StatelessIf": (("then_branch", "else_branch"), 1),
          "While": (("cond", "body"), 0), "StatelessWhile": (("cond", "body"), 0),
          "PartitionedCall": (("f",), 0), "StatefulPartitionedCall": (("f",), 0)}


def _read_dtype(library, function, index):
    """The dtype `function` reads its variable-handle arg `index` as (through Identity ops
    and the functions it calls), or None."""
    nodes = function.get("node_def", [])
    carriers = {function["signature"]["input_arg"][index]["name"]}
    grown = True
    while grown:
        grown = False
        for node in nodes:
            if node.get("op") == "Identity" and node["name"] not in carriers \
                    and node["input"][0].split(":")[0] in carriers:
                carriers.add(node["name"])
                grown = True
    for node in nodes:
        data = [i for i in node.get("input", []) if not i.startswith("^")]
        for k, ref in enumerate(data):
            if ref.split(":")[0] not in carriers:
                continue
            if node.get("op") == "ReadVariableOp":
                return node["attr"]["dtype"]
            attrs, first = _CALLS.get(node.get("op"), ((), 0))
            for attr in attrs if k >= first else ():
                callee = node["attr"].get(attr)
                callee = library.get(callee["name"] if isinstance(callee, dict) else callee)
                dtype = callee and _read_dtype(library, callee, k - first)
                if dtype is not None:
                    return dtype
    return None


@RegisterGradient("While")
@RegisterGradient("StatelessWhile")
def _while_grad(op, *grads):
    cond, body = _function(op, "cond"), _function(op, "body")
    inputs = list(op.inputs)
    through = _passed_through(body)
    stacked = [i for i, passed in enumerate(through) if not passed]
    for i in stacked:
        if inputs[i].dtype is dtypes.resource:
            raise UnimplementedError(
                f"Gradient of {op.name}: loop variable {i} is a resource the body changes; "
                "only resources passed on unchanged are supported.")
    scope = op.graph.get_name_scope() + "/"

    # the gradient state: one per differentiable loop var (floats; handles the body reads)
    carried, initial = [], []
    for i, t in enumerate(inputs):
        if t.dtype is dtypes.resource:
            dtype = _read_dtype(op.graph._functions, body, i)
            if dtype is not None:
                carried.append(i)
                read = raw_ops.ReadVariableOp(resource=t, dtype=dtype)
                initial.append(raw_ops.ZerosLike(x=read))
        elif t.dtype is dtypes.variant and _trainable_list(t):
            carried.append(i)    # a TensorList: TF's zeros are those of the loop's result
            initial.append(grads[i] if grads[i] is not None
                           else raw_ops.ZerosLike(x=op.outputs[i]))
        elif _differentiable(t):
            carried.append(i)
            initial.append(grads[i] if grads[i] is not None else raw_ops.ZerosLike(x=t))
    if not carried:
        return [None] * len(inputs)
    # stacked: the changing loop vars the gradient state depends on (not a counter, say)
    reaching = _reaching(body, carried)
    kept = [i for i in stacked if i in carried or i in reaching]
    stacks, count = _recompute(op, cond, body, inputs, stacked, kept, scope)

    def values_at(step):
        values = list(inputs)         # (a var not kept: its first value, never read)
        for i, stack in zip(kept, stacks):
            values[i] = raw_ops.TensorListGetItem(input_handle=stack, index=step,
                                                  element_shape=const(-1),
                                                  element_dtype=inputs[i].dtype)
            values[i].set_shape(op.outputs[i].shape)
        for i, passed in enumerate(through):
            if passed:
                values[i] = raw_ops.Identity(input=inputs[i])   # one x per position
        return values

    def grad_cond(k, *_):
        return raw_ops.Greater(x=k, y=0)

    def grad_body(k, *acc):
        step = raw_ops.Sub(x=k, y=1)
        values = values_at(step)
        outputs = _import_outputs(body, values)
        pairs = [(outputs[i], g) for i, g in zip(carried, acc)
                 if values[i].dtype is not dtypes.resource]
        xs = [values[i] for i in carried]
        ys, grad_ys = zip(*pairs) if pairs else ((), ())
        found = gradients(list(ys), xs, grad_ys=list(grad_ys)) if pairs else [None] * len(xs)
        new = []
        for i, g, d in zip(carried, acc, found):
            if values[i].dtype is dtypes.resource:
                new.append(g if d is None else raw_ops.AddV2(x=g, y=d))
            else:
                new.append(d if d is not None else raw_ops.ZerosLike(x=values[i]))
        return [step] + new

    args = [(dtypes.int32, TensorShape([]), "iteration")]
    args += [(t.dtype, _state_shape(op.outputs[i]), f"grad_{i}")
             for i, t in zip(carried, initial)]
    cond_graph, pred = trace(unique_function_name(scope, "grad_cond"), grad_cond, args)
    cond_graph.outputs = [pred]
    body_graph, result = trace(unique_function_name(scope, "grad_body"), grad_body, args)
    body_graph.outputs = result
    outputs = build_while(cond_graph, body_graph, [count] + initial,
                          [a[1] for a in args], "while_grad")
    input_grads = [None] * len(inputs)
    for i, value in zip(carried, outputs[1:]):
        input_grads[i] = value
    return input_grads


def _trainable_list(handle):
    """Whether the TensorList `handle` may hold float elements (TF reads the element
    dtype from handle data; here from the list op that made it, through Identity and
    While ops, and a list of unknown origin counts as trainable)."""
    seen = set()
    while handle.op not in seen:
        seen.add(handle.op)
        op = handle.op
        if "element_dtype" in op.attrs:
            dtype = op.get_attr("element_dtype")
            return dtype.is_floating or dtype.is_complex
        if op.type in ("Identity", "While", "StatelessWhile") and op.inputs:
            handle = op.inputs[handle.value_index if op.type != "Identity" else 0]
            continue
        return True
    return True


def _state_shape(output):
    return TensorShape(None) if output.dtype is dtypes.resource else output.shape


def _recompute(op, cond, body, inputs, stacked, kept, scope):
    """A While re-running `op`'s loop from its inputs (the loop vars `stacked` changing)
    that also stacks the values of loop vars `kept` (row k: after k iterations). Returns
    (stacks, iterations run)."""
    def full(values):
        merged = list(inputs)
        for i, value in zip(stacked, values):
            merged[i] = value
        return merged

    def recompute_cond(n, *state):
        return _import_outputs(cond, full(state[:len(stacked)]))[0]

    def recompute_body(n, *state):
        values, stacks = state[:len(stacked)], state[len(stacked):]
        outputs = _import_outputs(body, full(values))
        new_values = [outputs[i] for i in stacked]
        new_stacks = [raw_ops.TensorListPushBack(input_handle=s, tensor=outputs[i])
                      for s, i in zip(stacks, kept)]
        return [raw_ops.AddV2(x=n, y=1)] + new_values + new_stacks

    first = [inputs[i] for i in stacked]
    stacks0 = [raw_ops.TensorListPushBack(
        input_handle=raw_ops.EmptyTensorList(element_shape=const(-1),
                                             max_num_elements=const(-1),
                                             element_dtype=inputs[i].dtype), tensor=inputs[i])
               for i in kept]
    shapes = [op.outputs[i].shape for i in stacked]
    args = [(dtypes.int32, TensorShape([]), "iterations")]
    args += [(t.dtype, s, f"value_{i}") for i, t, s in zip(stacked, first, shapes)]
    args += [(dtypes.variant, TensorShape([]), f"stack_{i}") for i in kept]
    cond_graph, pred = trace(unique_function_name(scope, "recompute_cond"), recompute_cond,
                             args)
    cond_graph.outputs = [pred]
    body_graph, result = trace(unique_function_name(scope, "recompute_body"), recompute_body,
                               args)
    body_graph.outputs = result
    zero = convert_to_tensor(0, dtype=dtypes.int32, name="iterations")
    outputs = build_while(cond_graph, body_graph, [zero] + first + stacks0,
                          [a[1] for a in args], "while_recompute")
    return outputs[1 + len(stacked):], outputs[0]
