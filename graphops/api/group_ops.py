"""TF1's grouping wrappers (TF's control_flow_ops.py): no_op, group (a NoOp that runs
after its inputs, one per device when they span several) and tuple (each tensor passed
through an Identity gated on all of them). Eagerly there is nothing to order: group and
no_op return None, tuple its tensors."""

from graphops.api import raw_ops
from graphops.api.nn_args import op_scope
from graphops.api.tensor_args import flatten, graph_of, to_tensor
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
    been computed."""
    graph = graph_of(tensors, control_inputs or [])
    if graph is None:
        return list(tensors)
    with graph.as_default(), op_scope(name, "tuple", tensors):
        values = [t if t is None or isinstance(as_graph_element(t), (Tensor, Operation))
                  else to_tensor(t, graph) for t in tensors]
        values = [None if t is None else as_graph_element(t) for t in values]
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
            raise ValueError(f"'tensors' must have at least one Tensor. Received: {tensors}.")
        gate = group(*gating)
        result = []
        for t in values:
            if isinstance(t, Tensor):
                with op_scope(None, "control_dependency") as scope, \
                        graph.control_dependencies([gate]):
                    result.append(raw_ops.Identity(input=t, name=scope))
            elif isinstance(t, Operation):
                with graph.control_dependencies([gate]):
                    result.append(group(t))
            else:
                result.append(None)
        return result
