"""Ops that exist for gradient graphs (TF's array_ops.cc): index arithmetic on shapes and
permutations: BroadcastGradientArgs, InvertPermutation, ConcatOffset."""

from graphops.registry.op_registry import register_op
from graphops.registry.tensor_shape import TensorShape


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


def _invert_permutation_shape(c):
    c.set_output(0, c.with_rank(c.input(0), 1))


register_op("InvertPermutation") \
    .input("x: T") \
    .output("y: T") \
    .attr("T: {int32, int64} = DT_INT32") \
    .set_shape_fn(_invert_permutation_shape) \
    .doc("Computes the inverse permutation of a tensor: y[x[i]] = i.")


def _concat_offset_shape(c):
    for i in range(1, c.num_inputs):
        c.set_output(i - 1, c.input(i))


register_op("ConcatOffset") \
    .input("concat_dim: int32") \
    .input("shape: N * shape_type") \
    .output("offset: N * shape_type") \
    .attr("N: int >= 2") \
    .attr("shape_type: {int32, int64} = DT_INT32") \
    .set_shape_fn(_concat_offset_shape) \
    .doc("Computes offsets of concat inputs within its output: offset[i] is 0 but along "
         "concat_dim, where it is the sum of the earlier shapes' sizes there.")
