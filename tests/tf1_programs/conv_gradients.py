import graphops as tf
# Explicit tf.gradients through strided convolutions (conv2d SAME stride 2, conv2d VALID
# strides 2x3, conv3d SAME stride 2): the gradients of a weighted sum with respect to the
# input and the filter, with and without grad_ys, and the same gradients from the backprop
# ops called by hand.
#
#     python tests/tf1_programs/conv_gradients.py
import numpy as np

tf.disable_eager_execution()

CASES = {"conv2d_same": ([2, 9, 9, 3], [3, 3, 3, 4], [1, 2, 2, 1], "SAME"),
         "conv2d_valid": ([2, 10, 11, 2], [4, 3, 2, 5], [1, 2, 3, 1], "VALID"),
         "conv3d_same": ([1, 7, 6, 5, 2], [3, 2, 3, 2, 3], [1, 2, 2, 2, 1], "SAME")}


def main():
    rng = np.random.RandomState(5)
    inputs, feed_dict, fetches = {}, {}, {}
    for name, (input_shape, filter_shape, strides, padding) in CASES.items():
        with tf.name_scope(name):
            conv = tf.nn.conv2d if len(input_shape) == 4 else tf.nn.conv3d
            x = tf.placeholder(tf.float32, input_shape, name="x")
            w = tf.Variable(rng.randn(*filter_shape).astype(np.float32), name="w")
            y = conv(x, w, strides=strides, padding=padding)
            weights = tf.constant(rng.randn(*y.shape.as_list()).astype(np.float32))
            dx, dw = tf.gradients(tf.reduce_sum(y * weights), [x, w])
            dx_grad_ys, = tf.gradients(y, x, grad_ys=weights * 2.0)
            fetches[name] = {"y": y, "dx": dx, "dw": dw, "dx_grad_ys": dx_grad_ys}
            inputs[name] = rng.randn(*input_shape).astype(np.float32)
            feed_dict[x] = inputs[name]
            if name == "conv2d_same":
                ones = tf.ones_like(y)
                fetches["manual"] = {
                    "dw": tf.nn.conv2d_backprop_filter(x, tf.shape(w), ones, strides, padding),
                    "dx": tf.nn.conv2d_backprop_input(tf.shape(x), w, ones, strides, padding)}

    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        values = sess.run(fetches, feed_dict=feed_dict)
    results = {name + ".x": value for name, value in inputs.items()}
    for name, arrays in values.items():
        results.update({f"{name}.{key}": value for key, value in arrays.items()})
    return results


if __name__ == "__main__":
    for key, value in main().items():
        print(key, value.shape)
