"""BroadcastArgs (TF's array_ops.cc): the shape two shape vectors broadcast to, computed at
run time (what tf.broadcast_dynamic_shape builds)."""

from graphops.registry.op_registry import register_op
from graphops.registry.tensor_shape import TensorShape


def _broadcast_args_shape(c):
    x, y = c.with_rank(c.input(0), 1), c.with_rank(c.input(1), 1)
    known = x[0] is not None and y[0] is not None
    c.set_output(0, TensorShape([max(x[0], y[0]) if known else None]))


register_op("BroadcastArgs") \
    .input("s0: T") \
    .input("s1: T") \
    .output("r0: T") \
    .attr("T: {int32, int64} = DT_INT32") \
    .set_shape_fn(_broadcast_args_shape) \
    .doc("Return the shape of s0 op s1 with broadcast.")
