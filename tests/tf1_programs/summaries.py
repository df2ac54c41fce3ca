import graphops as tf
# Name scopes with summaries, as in TF1's mnist_with_summaries.py: scalar and histogram
# summaries under name scopes, merge_all, a FileWriter given sess.graph, add_summary every
# step; then the event file is read back with tf.train.summary_iterator.
#
#     python tests/tf1_programs/summaries.py
import glob
import os
import tempfile

import numpy as np

tf.disable_eager_execution()


def variable_summaries(var):
    with tf.name_scope("summaries"):
        mean = tf.reduce_mean(var)
        tf.summary.scalar("mean", mean)
        with tf.name_scope("stddev"):
            stddev = tf.sqrt(tf.reduce_mean(tf.square(var - mean)))
        tf.summary.scalar("stddev", stddev)
        tf.summary.histogram("histogram", var)


def nn_layer(input_tensor, input_dim, output_dim, layer_name, act=tf.nn.relu):
    with tf.name_scope(layer_name):
        with tf.name_scope("weights"):
            weights = tf.Variable(tf.truncated_normal([input_dim, output_dim], stddev=0.3))
            variable_summaries(weights)
        with tf.name_scope("biases"):
            biases = tf.Variable(tf.constant(0.1, shape=[output_dim]))
            variable_summaries(biases)
        with tf.name_scope("Wx_plus_b"):
            preactivate = tf.matmul(input_tensor, weights) + biases
            tf.summary.histogram("pre_activations", preactivate)
        activations = act(preactivate, name="activation")
        tf.summary.histogram("activations", activations)
        return activations


def read_events(logdir):
    """Scalars by tag, histogram sample counts by tag, and whether a graph was written."""
    scalars, histogram_counts, graph_bytes = {}, {}, 0
    for path in sorted(glob.glob(os.path.join(logdir, "events.out.tfevents.*"))):
        for event in tf.train.summary_iterator(path):
            if event.graph_def:
                graph_bytes = len(event.graph_def)
            for value in event.summary.value:
                if value.HasField("simple_value"):
                    scalars.setdefault(value.tag, []).append((event.step, value.simple_value))
                elif value.HasField("histo"):
                    histogram_counts.setdefault(value.tag, []).append(value.histo.num)
    return scalars, histogram_counts, graph_bytes


def main(logdir=None, steps=5):
    logdir = logdir or tempfile.mkdtemp(prefix="summaries")
    tf.set_random_seed(99)
    rng = np.random.RandomState(9)
    data = rng.randn(16, 6).astype(np.float32)
    labels = rng.randint(3, size=16)

    with tf.name_scope("input"):
        x = tf.placeholder(tf.float32, [None, 6], name="x-input")
        y_ = tf.placeholder(tf.int64, [None], name="y-input")
    hidden = nn_layer(x, 6, 8, "layer1")
    logits = nn_layer(hidden, 8, 3, "layer2", act=tf.identity)
    with tf.name_scope("cross_entropy"):
        cross_entropy = tf.losses.sparse_softmax_cross_entropy(labels=y_, logits=logits)
    tf.summary.scalar("cross_entropy", cross_entropy)
    with tf.name_scope("train"):
        train_step = tf.train.GradientDescentOptimizer(0.3).minimize(cross_entropy)
    merged = tf.summary.merge_all()

    losses = []
    with tf.Session() as sess:
        writer = tf.summary.FileWriter(logdir, sess.graph)
        sess.run(tf.global_variables_initializer())
        for step in range(steps):
            summary, loss = sess.run([merged, cross_entropy], feed_dict={x: data, y_: labels})
            writer.add_summary(summary, step)
            sess.run(train_step, feed_dict={x: data, y_: labels})
            losses.append(loss)
        writer.close()

    scalars, histogram_counts, graph_bytes = read_events(logdir)
    results = {"losses": np.array(losses), "graph_written": graph_bytes > 0,
               "scalar_tags": np.array(sorted(scalars)),
               "histogram_tags": np.array(sorted(histogram_counts))}
    for tag, points in scalars.items():
        results["scalar." + tag.replace("/", ".")] = np.array(points)
    for tag, counts in histogram_counts.items():
        results["histogram_count." + tag.replace("/", ".")] = np.array(counts)
    return results


if __name__ == "__main__":
    for key, value in main().items():
        print(key, value)
