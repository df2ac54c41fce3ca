"""Gradients of the reference-variable ops: TF registers none for the updates (marked not
differentiable, as TF's state_grad.py) and passes the gradient through RefIdentity; a
read of a reference variable (an Identity of it) passes its gradient on to the variable."""

from graphops.autodiff.gradients import NotDifferentiable, RegisterGradient

for _op in ("Assign", "AssignAdd", "AssignSub", "ScatterAdd", "ScatterSub", "ScatterMul",
            "ScatterDiv", "ScatterNdUpdate", "ScatterNdAdd", "ScatterNdSub"):
    NotDifferentiable(_op)


@RegisterGradient("RefIdentity")
def _ref_identity_grad(op, grad):
    return [grad]
