import graphops as tf
# tf.while_loop: a recurrence h <- tanh(h W + b) run a fed number of times, trained through
# the loop with tf.gradients + apply_gradients; and a loop summing a series with a counter.
#
#     python tests/tf1_programs/while_loop.py
import numpy as np

tf.disable_eager_execution()


def main(steps=8):
    rng = np.random.RandomState(7)
    h0 = rng.randn(3, 4).astype(np.float32)
    target = (0.5 * rng.randn(3, 4)).astype(np.float32)

    x = tf.placeholder(tf.float32, [None, 4], name="h0")
    n = tf.placeholder(tf.int32, [], name="iterations")
    W = tf.Variable((0.5 * rng.randn(4, 4)).astype(np.float32), name="W")
    b = tf.Variable(np.zeros(4, np.float32), name="b")

    def cond(i, h):
        return tf.less(i, n)

    def body(i, h):
        return i + 1, tf.tanh(tf.matmul(h, W) + b)

    _, h = tf.while_loop(cond, body, [tf.constant(0), x])
    loss = tf.reduce_mean(tf.square(h - target))
    grads = tf.gradients(loss, [W, b])
    train_op = tf.train.GradientDescentOptimizer(0.5).apply_gradients(zip(grads, [W, b]))

    i0, total0 = tf.constant(1), tf.constant(0.0)
    _, series = tf.while_loop(lambda i, total: i <= 10,
                              lambda i, total: (i + 1, total + 1.0 / tf.cast(i * i, tf.float32)),
                              (i0, total0))

    losses = []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first_grads = sess.run(grads, feed_dict={x: h0, n: 5})
        for step in range(steps):
            _, loss_value = sess.run([train_op, loss], feed_dict={x: h0, n: 3 + step % 3})
            losses.append(loss_value)
        no_iterations = sess.run(h, feed_dict={x: h0, n: 0})
        results = {"losses": np.array(losses), "grad_W": first_grads[0], "grad_b": first_grads[1],
                   "W": sess.run(W), "b": sess.run(b), "h_n0": no_iterations,
                   "series": sess.run(series)}
    return results


if __name__ == "__main__":
    for key, value in main().items():
        print(key, value)
