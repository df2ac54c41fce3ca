"""Gradients of the function-call ops: the gradient of the function body.

TF builds a gradient function and calls it; here the body is imported into the caller's
graph (its input args mapped to the call's inputs) and differentiated there, which gives the
same values with the body's own gradient ops.
"""

import threading

from graphops.api import raw_ops
from graphops.autodiff.gradients import RegisterGradient, gradients
from graphops.registry.errors import InvalidArgumentError, NotFoundError

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
