"""Ops that exist for gradient graphs (TF's array_ops.cc): BroadcastGradientArgs."""

from registry.op_registry import register_op
from registry.tensor_shape import TensorShape


def _reduction_indices_shape(c):
    c.with_rank(c.input(0), 1)
    c.with_rank(c.input(1), 1)
    c.set_output(0, TensorShape([None]))
    c.set_output(1, TensorShape([None]))


register_op("BroadcastGradientArgs") \
    .input("s0: T") \
    .input("s1: T") \
    .output("r0: T") \
    .output("r1: T") \
    .attr("T: {int32, int64} = DT_INT32") \
    .set_shape_fn(_reduction_indices_shape) \
    .doc("Return the reduction indices for computing gradients of s0 op s1 with broadcast.\n"
         "r0 (r1) lists the axes of the broadcast result along which s0 (s1) is 1 or absent; "
         "summing a gradient over them gives the gradient of that operand.")
