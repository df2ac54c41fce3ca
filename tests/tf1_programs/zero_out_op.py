import graphops as tf
# The op library of the ZeroOut program: what TF's guide builds into zero_out.so in C++
# (REGISTER_OP, an OpKernel, REGISTER_KERNEL_BUILDER), here in Python. zero_out.py loads it
# with tf.load_op_library.
import numpy as np

tf.register_op("ZeroOut") \
    .input("to_zero: T") \
    .output("zeroed: T") \
    .attr("T: {int32, float}") \
    .attr("preserve_index: int >= 0 = 0") \
    .set_shape_fn(lambda c: c.set_output(0, c.input(0)))


@tf.register_kernel("ZeroOut", device="CPU", type_constraints={"T": [tf.int32, tf.float32]})
class ZeroOutOp(tf.OpKernel):
    """Keeps the element at preserve_index of the flattened input and zeroes the rest."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.preserve_index = ctx.get_attr("preserve_index")

    def compute(self, ctx):
        to_zero = np.asarray(ctx.input(0))
        if self.preserve_index >= to_zero.size:
            raise tf.errors.InvalidArgumentError(
                f"preserve_index out of range: {self.preserve_index} >= {to_zero.size}")
        zeroed = np.zeros_like(to_zero)
        zeroed.flat[self.preserve_index] = to_zero.flat[self.preserve_index]
        ctx.set_output(0, zeroed)
