import graphops as tf
# Hand-written batch normalisation as TF1 code did it before tf.layers, two ways:
# layer "bn1" updates its moving averages inside tf.cond's training branch under
# control dependencies; layer "bn2" adds its assigns to the UPDATE_OPS collection and the
# train op runs them through tf.control_dependencies. Inference reads the moving averages.
#
#     python tests/tf1_programs/batch_norm.py
import numpy as np

tf.disable_eager_execution()

DECAY, EPSILON = 0.8, 1e-3


def bn_variables(size):
    beta = tf.get_variable("beta", [size], initializer=tf.zeros_initializer())
    gamma = tf.get_variable("gamma", [size], initializer=tf.ones_initializer())
    moving_mean = tf.get_variable("moving_mean", [size], initializer=tf.zeros_initializer(),
                                  trainable=False)
    moving_variance = tf.get_variable("moving_variance", [size],
                                      initializer=tf.ones_initializer(), trainable=False)
    return beta, gamma, moving_mean, moving_variance


def moving_average_updates(moving_mean, moving_variance, mean, variance):
    return (tf.assign(moving_mean, moving_mean * DECAY + mean * (1 - DECAY)),
            tf.assign(moving_variance, moving_variance * DECAY + variance * (1 - DECAY)))


def batch_norm_in_cond(x, is_training):
    with tf.variable_scope("bn1"):
        beta, gamma, moving_mean, moving_variance = bn_variables(x.shape[-1])
        mean, variance = tf.nn.moments(x, [0], name="moments")

        def update_and_use_batch_statistics():
            updates = moving_average_updates(moving_mean, moving_variance, mean, variance)
            with tf.control_dependencies(updates):
                return tf.identity(mean), tf.identity(variance)

        def use_moving_averages():
            return tf.identity(moving_mean), tf.identity(moving_variance)

        mean, variance = tf.cond(is_training, update_and_use_batch_statistics,
                                 use_moving_averages)
        return tf.nn.batch_normalization(x, mean, variance, beta, gamma, EPSILON)


def batch_norm_with_update_ops(x, is_training):
    with tf.variable_scope("bn2"):
        beta, gamma, moving_mean, moving_variance = bn_variables(x.shape[-1])
        mean, variance = tf.nn.moments(x, [0])
        for update in moving_average_updates(moving_mean, moving_variance, mean, variance):
            tf.add_to_collection(tf.GraphKeys.UPDATE_OPS, update)
        mean, variance = tf.cond(is_training, lambda: (mean, variance),
                                 lambda: (moving_mean, moving_variance))
        return tf.nn.batch_normalization(x, mean, variance, beta, gamma, EPSILON)


def main(steps=6):
    rng = np.random.RandomState(8)
    data = (3.0 + 2.0 * rng.randn(32, 6)).astype(np.float32)
    targets = rng.randn(32, 1).astype(np.float32)

    x = tf.placeholder(tf.float32, [None, 6], name="x")
    y = tf.placeholder(tf.float32, [None, 1], name="y")
    is_training = tf.placeholder(tf.bool, [], name="is_training")

    w1 = tf.Variable((0.4 * rng.randn(6, 5)).astype(np.float32), name="w1")
    h = tf.nn.relu(batch_norm_in_cond(tf.matmul(x, w1), is_training))
    w2 = tf.Variable((0.4 * rng.randn(5, 1)).astype(np.float32), name="w2")
    prediction = batch_norm_with_update_ops(tf.matmul(h, w2), is_training)
    loss = tf.reduce_mean(tf.square(prediction - y))

    update_ops = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    with tf.control_dependencies(update_ops):
        train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)

    moving = [v for v in tf.global_variables() if "moving" in v.name]
    losses, moving_history = [], []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(steps):
            batch = slice(8 * (step % 4), 8 * (step % 4) + 8)
            _, loss_value = sess.run([train_op, loss], feed_dict={
                x: data[batch], y: targets[batch], is_training: True})
            losses.append(loss_value)
            moving_history.append(np.concatenate(sess.run(moving)))
        before = sess.run(moving)
        inference = sess.run(prediction, feed_dict={x: data, is_training: False})
        unchanged = all(np.array_equal(a, b) for a, b in zip(before, sess.run(moving)))
        results = {"losses": np.array(losses), "moving_history": np.array(moving_history),
                   "inference": inference, "inference_leaves_averages": unchanged,
                   "update_ops": len(update_ops),
                   "moving_names": np.array([v.op.name for v in moving])}
        for variable in tf.trainable_variables():
            results[variable.op.name.replace("/", ".")] = sess.run(variable)
    return results


if __name__ == "__main__":
    for key, value in main().items():
        print(key, value)
