"""TF1's grouping wrappers (TF's control_flow_ops.py): no_op, group (a NoOp that runs
after its inputs, one per device when they span several) and tuple (each tensor passed
through an Identity gated on all of them). Eagerly there is nothing to order: group and
no_op return None, tuple its tensors."""

from graphops.api import raw_ops
from graphops.api.nn_args import op_scope
from graphops.api.tensor_args import flatten, graph_of, to_tensor
from graphops.building.indexed_slices import IndexedSlices
from graphops.building.tensor import Operation, Tensor, as_graph_element


def no_op(name=None):
    """An op that does nothing (a NoOp node; None eagerly)."""
    return raw_ops.NoOp(name=name)


def _grouped(graph, device, deps, name=None):
    with graph.control_dependencies(deps):
        if device:
            with graph.device(device):
                return raw_ops.NoOp(name=name)
        return raw_ops.NoOp(name=name)


def group(*inputs, name=None):
    """An op that runs after all of `inputs` (nested tensors or ops) have run."""
    graph = graph_of(inputs)
    if graph is None:
        return None
    elements = [as_graph_element(x) for x in flatten(inputs)]
    for element in elements:
        if not isinstance(element, (Tensor, Operation)):
            raise TypeError("'inputs' should be zero or more (nested) Tensors. Received "
                            f"'{element}' with type '{type(element)}'.")
    with graph.as_default(), op_scope(name, "group_deps", elements) as scope:
        if not elements:
            return raw_ops.NoOp(name=scope)
        by_device = {}
        for element in elements:
            op = element.op if isinstance(element, Tensor) else element
            by_device.setdefault(op.device or "", []).append(element)
        if len(by_device) == 1:
            (device, deps), = by_device.items()
            return _grouped(graph, device, deps, scope)
        per_device = [_grouped(graph, device, by_device[device]) for device in sorted(by_device)]
        with graph.control_dependencies(per_device):
            return raw_ops.NoOp(name=scope)


def tuple(tensors, name=None, control_inputs=None):  # noqa: A001
    """`tensors` again, each available only once all of them (and `control_inputs`) have
    been computed; an IndexedSlices comes back with its values gated (TF's rule)."""
    graph = graph_of([t.values if isinstance(t, IndexedSlices) else t for t in tensors],
                     control_inputs or [])
    if graph is None:
        return list(tensors)
    with graph.as_default(), op_scope(name, "tuple", tensors):
        values = [_graph_value(t, graph) for t in tensors]
        gate = group(*_gating_ops(graph, values, control_inputs))
        return [_gated(t, gate, graph) for t in values]


def _graph_value(t, graph):
    """A tensor, operation or IndexedSlices as it is; anything else converted to a tensor."""
    if t is None or isinstance(t, IndexedSlices):
        return t
    if not isinstance(as_graph_element(t), (Tensor, Operation)):
        t = to_tensor(t, graph)
    return as_graph_element(t)


def _gating_ops(graph, values, control_inputs):
    """The ops the gate waits for, in creation order."""
    gating = [t if isinstance(t, Operation) else t.op for t in values if t is not None]
    for control in control_inputs or []:
        control = as_graph_element(control)
        if isinstance(control, Tensor):
            control = control.op
        elif not isinstance(control, Operation):
            raise TypeError("'control_inputs' must only contain Operation or Tensor. "
                            f"Received: {type(control)}")
        gating.append(control)
    order = {op: i for i, op in enumerate(graph.get_operations())}
    gating = sorted(set(gating), key=order.__getitem__)
    if not gating:
        raise ValueError(f"'tensors' must have at least one Tensor. Received: {values}.")
    return gating


def _gated(t, gate, graph):
    """`t` passed on after `gate`: an Identity "control_dependency" (of an IndexedSlices'
    values), a grouped op for an operation."""
    if t is None:
        return None
    if isinstance(t, Operation):
        with graph.control_dependencies([gate]):
            return group(t)
    with op_scope(None, "control_dependency") as scope, graph.control_dependencies([gate]):
        if isinstance(t, IndexedSlices):
            return IndexedSlices(raw_ops.Identity(input=t.values, name=scope), t.indices,
                                 t.dense_shape)
        return raw_ops.Identity(input=t, name=scope)
