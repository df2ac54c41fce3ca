"""Gradients through variable reads: a read passes its gradient on to the handle, so
`gradients(loss, [var])` sums the contributions of every read of the variable."""

from graphops.autodiff.gradients import NotDifferentiable, RegisterGradient

NotDifferentiable("VarIsInitializedOp")
NotDifferentiable("VarHandleOp")


@RegisterGradient("ReadVariableOp")
def _read_variable_grad(op, grad):
    return [grad]
