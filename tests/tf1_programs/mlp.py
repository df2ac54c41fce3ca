import graphops as tf
# A two-layer perceptron: tf.get_variable under tf.variable_scope (a second tower reuses the
# weights for evaluation), relu, sparse softmax cross-entropy, Adam and a global step.
#
#     python tests/tf1_programs/mlp.py
import numpy as np

tf.disable_eager_execution()

FEATURES, HIDDEN, CLASSES = 10, 16, 4


def synthetic_data(n=128, seed=1):
    rng = np.random.RandomState(seed)
    images = rng.randn(n, FEATURES).astype(np.float32)
    projection = rng.randn(FEATURES, CLASSES)
    labels = np.argmax(np.tanh(images @ projection), axis=1).astype(np.int64)
    return images, labels


def dense(inputs, units, activation=None):
    weights = tf.get_variable(
        "weights", [inputs.shape[1], units],
        initializer=tf.truncated_normal_initializer(stddev=0.3, seed=7))
    biases = tf.get_variable("biases", [units], initializer=tf.constant_initializer(0.1))
    outputs = tf.matmul(inputs, weights) + biases
    return activation(outputs) if activation is not None else outputs


def network(inputs, reuse=None):
    with tf.variable_scope("mlp", reuse=reuse):
        with tf.variable_scope("hidden"):
            hidden = dense(inputs, HIDDEN, tf.nn.relu)
        with tf.variable_scope("logits"):
            return dense(hidden, CLASSES)


def main(steps=25, batch_size=32):
    images, labels = synthetic_data()
    x = tf.placeholder(tf.float32, [None, FEATURES], name="x")
    y = tf.placeholder(tf.int64, [None], name="y")

    logits = network(x)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    global_step = tf.Variable(0, name="global_step", trainable=False)
    train_op = tf.train.AdamOptimizer(learning_rate=0.01).minimize(loss, global_step=global_step)

    eval_logits = network(x, reuse=True)
    accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(eval_logits, 1), y), tf.float32))

    losses = []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(steps):
            start = (step * batch_size) % len(images)
            _, loss_value = sess.run([train_op, loss], feed_dict={
                x: images[start:start + batch_size], y: labels[start:start + batch_size]})
            losses.append(loss_value)
        results = {"losses": np.array(losses),
                   "global_step": sess.run(global_step),
                   "accuracy": accuracy.eval(feed_dict={x: images, y: labels}),
                   "variable_names": np.array(sorted(v.name for v in tf.global_variables())),
                   "trainable_names": np.array([v.name for v in tf.trainable_variables()])}
        for variable in tf.trainable_variables():
            results[variable.op.name.replace("/", ".")] = sess.run(variable)
    return results


if __name__ == "__main__":
    for key, value in main().items():
        print(key, value)
