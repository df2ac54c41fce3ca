"""Gradients through variable reads: a read passes its gradient on to the handle, so
`gradients(loss, [var])` sums the contributions of every read of the variable."""

from graphops.autodiff.gradients import (NotDifferentiable, RegisterGradient,
                                         accepts_indexed_slices)

NotDifferentiable("VarIsInitializedOp")
NotDifferentiable("VarHandleOp")
NotDifferentiable("VariableShape")


@RegisterGradient("ReadVariableOp")
@accepts_indexed_slices
def _read_variable_grad(op, grad):
    return [grad]
