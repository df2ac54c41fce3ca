"""Gradient of ReverseSequence (TF's array_grad.py): the same reversal of the gradient."""

from graphops.api import raw_ops
from graphops.autodiff.gradients import RegisterGradient


@RegisterGradient("ReverseSequence")
def _reverse_sequence_grad(op, grad):
    return [raw_ops.ReverseSequence(input=grad, seq_lengths=op.inputs[1],
                                    seq_dim=op.get_attr("seq_dim"),
                                    batch_dim=op.get_attr("batch_dim")), None]
