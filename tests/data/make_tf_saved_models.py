"""Writes two SavedModels with TensorFlow, which graphops must load and run exactly:

- tests/data/tf_saved_model_v1/: TF1's `simple_save` in graph mode (resource variables):
  y = relu(x @ w + b), an asset file (assets/vocab.txt, its path in ASSET_FILEPATHS) and a
  legacy_init_op setting the variable `counter` to 42;
- tests/data/tf_saved_model_keras/: a small Keras model (Conv2D, Flatten, Dense) exported
  with `model.export`, a TF 2 SavedModel (functions, object-graph checkpoint keys).

    cd tests/data && python make_tf_saved_models.py

It also writes tf_saved_models.npz: the inputs fed and TensorFlow's outputs.
"""

import os
import shutil
import tempfile

import numpy as np

V1_DIR, KERAS_DIR = "tf_saved_model_v1", "tf_saved_model_keras"


def inputs():
    """The inputs fed to both models (NumPy only)."""
    rng = np.random.RandomState(7)
    return {"x_v1": rng.uniform(-1, 1, (4, 3)).astype(np.float32),
            "x_keras": rng.uniform(-1, 1, (2, 6, 6, 1)).astype(np.float32)}


def _write_v1(tf, x):
    graph = tf.Graph()
    with graph.as_default():
        rng = np.random.RandomState(0)
        inp = tf.compat.v1.placeholder(tf.float32, [None, 3], name="x")
        w = tf.compat.v1.Variable(rng.randn(3, 2).astype(np.float32), name="w")
        b = tf.compat.v1.Variable(rng.randn(2).astype(np.float32), name="b")
        counter = tf.compat.v1.Variable(0, name="counter")
        y = tf.nn.relu(tf.matmul(inp, w) + b, name="y")
        with tempfile.TemporaryDirectory() as tmp:
            vocab = os.path.join(tmp, "vocab.txt")
            with open(vocab, "w") as f:
                f.write("graphops\nsaved\nmodel\n")
            asset = tf.constant(vocab, name="asset_path")
            tf.compat.v1.add_to_collection(tf.compat.v1.GraphKeys.ASSET_FILEPATHS, asset)
            init = tf.group(counter.assign(42), name="legacy_init_op")
            with tf.compat.v1.Session() as sess:
                sess.run(tf.compat.v1.global_variables_initializer())
                tf.compat.v1.saved_model.simple_save(sess, V1_DIR, {"x": inp}, {"y": y},
                                                     legacy_init_op=init)
                return sess.run(y, {inp: x})


def _write_keras(tf, x):
    tf.keras.utils.set_random_seed(3)
    inp = tf.keras.Input((6, 6, 1))
    h = tf.keras.layers.Conv2D(2, 3, activation="relu")(inp)
    out = tf.keras.layers.Dense(3)(tf.keras.layers.Flatten()(h))
    model = tf.keras.Model(inp, out)
    model.export(KERAS_DIR)
    return model(x).numpy()


def main():
    import tensorflow as tf

    for folder in (V1_DIR, KERAS_DIR):
        shutil.rmtree(folder, ignore_errors=True)
    feeds = inputs()
    y_keras = _write_keras(tf, feeds["x_keras"])
    tf.compat.v1.disable_eager_execution()
    y_v1 = _write_v1(tf, feeds["x_v1"])
    np.savez("tf_saved_models.npz", y_v1=y_v1, y_keras=y_keras, **feeds)


if __name__ == "__main__":
    main()
