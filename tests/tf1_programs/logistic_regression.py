import graphops as tf
# Softmax regression as in TF1's mnist_softmax.py, on synthetic clustered data.
#
#     python tests/tf1_programs/logistic_regression.py
import numpy as np

tf.disable_eager_execution()

FEATURES, CLASSES = 8, 3


def synthetic_data(n=96, seed=0):
    rng = np.random.RandomState(seed)
    centers = 2.0 * rng.randn(CLASSES, FEATURES)
    labels = rng.randint(CLASSES, size=n)
    images = (centers[labels] + rng.randn(n, FEATURES)).astype(np.float32)
    return images, np.eye(CLASSES, dtype=np.float32)[labels]


def main(_=None, steps=30, batch_size=32):
    images, labels = synthetic_data()

    x = tf.placeholder(tf.float32, [None, FEATURES])
    W = tf.Variable(tf.zeros([FEATURES, CLASSES]))
    b = tf.Variable(tf.zeros([CLASSES]))
    y = tf.nn.softmax(tf.matmul(x, W) + b)
    y_ = tf.placeholder(tf.float32, [None, CLASSES])

    cross_entropy = tf.reduce_mean(-tf.reduce_sum(y_ * tf.log(y), reduction_indices=[1]))
    train_step = tf.train.GradientDescentOptimizer(0.5).minimize(cross_entropy)

    correct_prediction = tf.equal(tf.argmax(y, 1), tf.argmax(y_, 1))
    accuracy = tf.reduce_mean(tf.cast(correct_prediction, tf.float32))

    losses = []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(steps):
            start = (step * batch_size) % len(images)
            feed = {x: images[start:start + batch_size], y_: labels[start:start + batch_size]}
            _, loss = sess.run([train_step, cross_entropy], feed_dict=feed)
            losses.append(loss)
        final_accuracy = sess.run(accuracy, feed_dict={x: images, y_: labels})
        W_value, b_value = sess.run([W, b])
    return {"losses": np.array(losses), "accuracy": final_accuracy, "W": W_value, "b": b_value}


def print_results(argv):
    for key, value in main(argv).items():
        print(key, value)


if __name__ == "__main__":
    tf.app.run(main=print_results)
