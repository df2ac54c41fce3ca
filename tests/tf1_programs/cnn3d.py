import graphops as tf
# A small 3-D CNN on synthetic volumes: conv3d + relu + max_pool3d, a second conv3d,
# global average pooling with reduce_mean, softmax cross-entropy and Momentum.
#
#     python tests/tf1_programs/cnn3d.py
import numpy as np

tf.disable_eager_execution()

DEPTH, CLASSES = 8, 3


def synthetic_volumes(n=12, seed=3):
    """Volumes whose bright octant gives the class, with noise."""
    rng = np.random.RandomState(seed)
    labels = rng.randint(CLASSES, size=n)
    volumes = 0.3 * rng.randn(n, DEPTH, DEPTH, DEPTH, 1)
    half = DEPTH // 2
    for volume, label in zip(volumes, labels):
        volume[label:label + half, :half, half:] += 1.0
    return volumes.astype(np.float32), np.eye(CLASSES, dtype=np.float32)[labels]


def main(steps=10):
    volumes, labels = synthetic_volumes()
    tf.set_random_seed(42)

    x = tf.placeholder(tf.float32, [None, DEPTH, DEPTH, DEPTH, 1], name="volumes")
    y = tf.placeholder(tf.float32, [None, CLASSES], name="labels")

    with tf.name_scope("conv1"):
        w1 = tf.Variable(tf.truncated_normal([3, 3, 3, 1, 4], stddev=0.2), name="w")
        b1 = tf.Variable(tf.zeros([4]), name="b")
        h1 = tf.nn.relu(tf.nn.conv3d(x, w1, strides=[1, 1, 1, 1, 1], padding="SAME") + b1)
        p1 = tf.nn.max_pool3d(h1, ksize=[1, 2, 2, 2, 1], strides=[1, 2, 2, 2, 1],
                              padding="VALID")
    with tf.name_scope("conv2"):
        w2 = tf.Variable(tf.truncated_normal([3, 3, 3, 4, 6], stddev=0.2), name="w")
        b2 = tf.Variable(tf.constant(0.05, shape=[6]), name="b")
        h2 = tf.nn.relu(tf.nn.conv3d(p1, w2, strides=[1, 2, 2, 2, 1], padding="SAME") + b2)
        pooled = tf.reduce_mean(h2, axis=[1, 2, 3])
    with tf.name_scope("logits"):
        w3 = tf.Variable(tf.random_normal([6, CLASSES], stddev=0.5), name="w")
        logits = tf.matmul(pooled, w3)

    loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=y, logits=logits))
    train_op = tf.train.MomentumOptimizer(learning_rate=0.1, momentum=0.9).minimize(loss)

    losses = []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(steps):
            _, loss_value = sess.run([train_op, loss], feed_dict={x: volumes, y: labels})
            losses.append(loss_value)
        w1_value, b1_value, w2_value, w3_value = sess.run([w1, b1, w2, w3])
        final_logits = sess.run(logits, feed_dict={x: volumes})
    return {"losses": np.array(losses), "conv1.w": w1_value, "conv1.b": b1_value,
            "conv2.w": w2_value, "logits.w": w3_value, "final_logits": final_logits}


if __name__ == "__main__":
    for key, value in main().items():
        print(key, value)
