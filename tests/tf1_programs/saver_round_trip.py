import graphops as tf
# A Saver round trip: train a small regression with Adam, save with a global step, then in
# a new graph and session restore the latest checkpoint (Adam's slots included) and go on
# training; the losses continue as if nothing had happened.
#
#     python tests/tf1_programs/saver_round_trip.py
import os
import tempfile

import numpy as np

tf.disable_eager_execution()


def synthetic_data(n=40, seed=6):
    rng = np.random.RandomState(seed)
    x = rng.randn(n, 5).astype(np.float32)
    y = (np.sin(x @ rng.randn(5, 2)) + 0.05 * rng.randn(n, 2)).astype(np.float32)
    return x, y


def build_model():
    x = tf.placeholder(tf.float32, [None, 5], name="x")
    y = tf.placeholder(tf.float32, [None, 2], name="y")
    with tf.variable_scope("model"):
        w1 = tf.get_variable("w1", [5, 8], initializer=tf.random_normal_initializer(seed=3))
        b1 = tf.get_variable("b1", [8], initializer=tf.zeros_initializer())
        w2 = tf.get_variable("w2", [8, 2], initializer=tf.random_normal_initializer(seed=4))
    prediction = tf.matmul(tf.tanh(tf.matmul(x, w1) + b1), w2)
    loss = tf.reduce_mean(tf.square(prediction - y))
    global_step = tf.train.get_or_create_global_step()
    train_op = tf.train.AdamOptimizer(0.05).minimize(loss, global_step=global_step)
    return x, y, loss, train_op, global_step


def train(sess, model, data, steps):
    x, y, loss, train_op, _ = model
    return [sess.run([train_op, loss], feed_dict={x: data[0], y: data[1]})[1]
            for _ in range(steps)]


def main(checkpoint_dir=None, steps=6):
    checkpoint_dir = checkpoint_dir or tempfile.mkdtemp(prefix="saver_round_trip")
    data = synthetic_data()

    with tf.Graph().as_default():
        model = build_model()
        saver = tf.train.Saver(max_to_keep=2)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            first = train(sess, model, data, steps)
            saver.save(sess, os.path.join(checkpoint_dir, "model.ckpt"), global_step=model[4])
            first += train(sess, model, data, steps)
            saved_path = saver.save(sess, os.path.join(checkpoint_dir, "model.ckpt"),
                                    global_step=model[4])
            saved_values = sess.run(tf.global_variables())
            uninterrupted = train(sess, model, data, steps)

    with tf.Graph().as_default():
        model = build_model()
        saver = tf.train.Saver()
        with tf.Session() as sess:
            latest = tf.train.latest_checkpoint(checkpoint_dir)
            saver.restore(sess, latest)
            restored_values = sess.run(tf.global_variables())
            restored_step = sess.run(model[4])
            resumed = train(sess, model, data, steps)
            names = [v.op.name for v in tf.global_variables()]
            final_values = sess.run(tf.global_variables())

    results = {"losses_before_save": np.array(first), "losses_uninterrupted": np.array(uninterrupted),
               "losses_after_restore": np.array(resumed), "restored_step": restored_step,
               "latest_is_last_save": latest == saved_path,
               "checkpoint_basename": os.path.basename(latest),
               "variable_names": np.array(names)}
    for name, saved, restored, final in zip(names, saved_values, restored_values, final_values):
        results["saved." + name.replace("/", ".")] = saved
        results["restored_equal." + name.replace("/", ".")] = np.array_equal(saved, restored)
        results["final." + name.replace("/", ".")] = final
    return results


if __name__ == "__main__":
    for key, value in main().items():
        print(key, value)
