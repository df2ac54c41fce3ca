import graphops as tf
# TF's custom-op guide: the ZeroOut op (registered in zero_out_op.py, TF's zero_out.so),
# loaded with tf.load_op_library and called through its positional snake_case wrapper, and
# its Python gradient registered with @tf.RegisterGradient (TF's zero_out_grad.py).
#
#     python tests/tf1_programs/zero_out.py
import os

import numpy as np

tf.disable_eager_execution()

zero_out_module = tf.load_op_library(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "zero_out_op.py"))


@tf.RegisterGradient("ZeroOut")
def _zero_out_grad(op, grad):
    """The gradient of ZeroOut: the first upstream value, at index 0 of the input."""
    to_zero = op.inputs[0]
    shape = tf.shape(to_zero)
    index = tf.zeros_like(shape)
    first_grad = tf.reshape(grad, [-1])[0]
    to_zero_grad = tf.sparse_to_dense([index], shape, first_grad, 0)
    return [to_zero_grad]


def main():
    rng = np.random.RandomState(10)
    floats = rng.randn(3, 4).astype(np.float32)
    upstream = rng.randn(3, 4).astype(np.float32)

    x = tf.placeholder(tf.float32, [3, 4])
    zeroed = zero_out_module.zero_out(x)
    preserved = zero_out_module.zero_out(x, preserve_index=2)
    gradient, = tf.gradients(tf.reduce_sum(zeroed * upstream), [x])
    out_of_range = zero_out_module.zero_out(x, preserve_index=12)

    with tf.Session():
        ints = zero_out_module.zero_out([[1, 2], [3, 4]]).eval()
        results = {"default.input": np.array([[1, 2], [3, 4]], np.int32), "default.zeroed": ints,
                   "preserve_2.input": floats,
                   "preserve_2.zeroed": preserved.eval(feed_dict={x: floats}),
                   "upstream": upstream, "gradient": gradient.eval(feed_dict={x: floats}),
                   "static_shape": np.array(zeroed.shape.as_list())}
        try:
            out_of_range.eval(feed_dict={x: floats})
            results["out_of_range_error"] = ""
        except tf.errors.InvalidArgumentError as error:
            results["out_of_range_error"] = error.message
    return results


if __name__ == "__main__":
    for key, value in main().items():
        print(key, value)
