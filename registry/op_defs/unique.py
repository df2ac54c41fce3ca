"""Unique (TF's array_ops.cc): the distinct values of a vector in order of first appearance,
and for each input element the index of its value among them."""

from graphops.registry.op_registry import register_op
from graphops.registry.tensor_shape import TensorShape


def _unique_shape(c):
    x = c.with_rank(c.input(0), 1)
    c.set_output(0, TensorShape([None]))
    c.set_output(1, x)


register_op("Unique") \
    .input("x: T") \
    .output("y: T") \
    .output("idx: out_idx") \
    .attr("T: type") \
    .attr("out_idx: {int32, int64} = DT_INT32") \
    .set_shape_fn(_unique_shape) \
    .doc("Finds unique elements in a 1-D tensor: y holds them in order of first "
         "occurrence, and x = y[idx].")
