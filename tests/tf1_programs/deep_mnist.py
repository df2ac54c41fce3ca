import graphops as tf
# TF1's "Deep MNIST for experts" on synthetic 16x16 digits: two conv + max-pool layers,
# a dense layer with dropout (keep_prob placeholder), Adam, an InteractiveSession with
# train_step.run(...) and accuracy.eval(...).
#
#     python tests/tf1_programs/deep_mnist.py
import numpy as np

tf.compat.v1.disable_v2_behavior()

SIZE, CLASSES = 16, 10


def synthetic_digits(n=64, seed=2):
    """Images of a noisy class-dependent blob, one-hot labels."""
    rng = np.random.RandomState(seed)
    labels = rng.randint(CLASSES, size=n)
    rows, cols = np.mgrid[0:SIZE, 0:SIZE]
    centers = rng.uniform(3, SIZE - 3, size=(CLASSES, 2))
    images = np.exp(-((rows - centers[labels, 0, None, None]) ** 2 +
                      (cols - centers[labels, 1, None, None]) ** 2) / 8.0)
    images = images + 0.1 * rng.randn(n, SIZE, SIZE)
    return (images.reshape(n, SIZE * SIZE).astype(np.float32),
            np.eye(CLASSES, dtype=np.float32)[labels])


def weight_variable(shape):
    initial = tf.truncated_normal(shape, stddev=0.1)
    return tf.Variable(initial)


def bias_variable(shape):
    initial = tf.constant(0.1, shape=shape)
    return tf.Variable(initial)


def conv2d(x, W):
    return tf.nn.conv2d(x, W, strides=[1, 1, 1, 1], padding='SAME')


def max_pool_2x2(x):
    return tf.nn.max_pool(x, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding='SAME')


def main(steps=12, batch_size=16):
    images, labels = synthetic_digits()
    tf.set_random_seed(1234)
    sess = tf.InteractiveSession()

    x = tf.placeholder(tf.float32, shape=[None, SIZE * SIZE])
    y_ = tf.placeholder(tf.float32, shape=[None, CLASSES])
    x_image = tf.reshape(x, [-1, SIZE, SIZE, 1])

    W_conv1 = weight_variable([5, 5, 1, 8])
    b_conv1 = bias_variable([8])
    h_conv1 = tf.nn.relu(conv2d(x_image, W_conv1) + b_conv1)
    h_pool1 = max_pool_2x2(h_conv1)

    W_conv2 = weight_variable([5, 5, 8, 16])
    b_conv2 = bias_variable([16])
    h_conv2 = tf.nn.relu(conv2d(h_pool1, W_conv2) + b_conv2)
    h_pool2 = max_pool_2x2(h_conv2)

    W_fc1 = weight_variable([4 * 4 * 16, 64])
    b_fc1 = bias_variable([64])
    h_pool2_flat = tf.reshape(h_pool2, [-1, 4 * 4 * 16])
    h_fc1 = tf.nn.relu(tf.matmul(h_pool2_flat, W_fc1) + b_fc1)

    keep_prob = tf.placeholder(tf.float32)
    h_fc1_drop = tf.nn.dropout(h_fc1, keep_prob)

    W_fc2 = weight_variable([64, CLASSES])
    b_fc2 = bias_variable([CLASSES])
    y_conv = tf.matmul(h_fc1_drop, W_fc2) + b_fc2

    cross_entropy = tf.reduce_mean(
        tf.nn.softmax_cross_entropy_with_logits(labels=y_, logits=y_conv))
    train_step = tf.train.AdamOptimizer(1e-3).minimize(cross_entropy)
    correct_prediction = tf.equal(tf.argmax(y_conv, 1), tf.argmax(y_, 1))
    accuracy = tf.reduce_mean(tf.cast(correct_prediction, tf.float32))

    sess.run(tf.global_variables_initializer())
    losses, train_accuracies = [], []
    for i in range(steps):
        start = (i * batch_size) % len(images)
        batch = images[start:start + batch_size], labels[start:start + batch_size]
        train_accuracies.append(accuracy.eval(feed_dict={x: batch[0], y_: batch[1], keep_prob: 1.0}))
        losses.append(cross_entropy.eval(feed_dict={x: batch[0], y_: batch[1], keep_prob: 1.0}))
        train_step.run(feed_dict={x: batch[0], y_: batch[1], keep_prob: 0.5})
    dropped = h_fc1_drop.eval(feed_dict={x: images[:4], keep_prob: 0.5})
    results = {"losses": np.array(losses), "train_accuracies": np.array(train_accuracies),
               "test_accuracy": accuracy.eval(feed_dict={x: images, y_: labels, keep_prob: 1.0}),
               "dropout_mask": dropped != 0,
               "W_conv1": W_conv1.eval(), "W_conv2": W_conv2.eval(), "W_fc2": W_fc2.eval(),
               "b_fc1": b_fc1.eval()}
    sess.close()
    return results


if __name__ == "__main__":
    for key, value in main().items():
        print(key, value)
