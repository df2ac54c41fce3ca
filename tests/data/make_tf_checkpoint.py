"""Writes tests/data/tf_checkpoint/: a checkpoint saved by TensorFlow's tf.compat.v1 Saver
(resource variables, graph mode), which graphops must read and restore exactly.

    cd tests/data/tf_checkpoint && python ../make_tf_checkpoint.py

`expected_values()` (NumPy only) gives the saved values; tests/test_checkpoint.py imports it.
"""

import numpy as np


def expected_values():
    """{variable name: value} of every dtype the checkpoint covers."""
    import ml_dtypes

    return {
        "conv1/w": np.linspace(-1, 1, 24, dtype=np.float32).reshape(2, 3, 4),
        "conv1/b": np.array([0.5, -0.25, 1e-8], dtype=np.float64),
        "half": np.array([1.5, -2.0, 65504.0], dtype=np.float16),
        "bf16": np.array([[1.0, -3.5], [0.0078125, 256.0]], dtype=ml_dtypes.bfloat16),
        "i8": np.array([-128, 0, 127], dtype=np.int8),
        "i16": np.array([-32768, 7], dtype=np.int16),
        "i32": np.arange(-3, 3, dtype=np.int32).reshape(3, 2),
        "global_step": np.array(7, dtype=np.int64),
        "u8": np.array([0, 255], dtype=np.uint8),
        "u16": np.array([65535], dtype=np.uint16),
        "flags": np.array([True, False, True]),
        "c64": np.array([1 + 2j, -3.5j], dtype=np.complex64),
        "words": np.array([b"", b"graphops", b"x" * 200], dtype=object),
        "empty": np.zeros((0, 3), dtype=np.float32),
    }


def main():
    import tensorflow as tf

    tf.compat.v1.disable_eager_execution()
    graph = tf.Graph()
    with graph.as_default():
        variables = [tf.Variable(value, name=name)
                     for name, value in expected_values().items()]
        saver = tf.compat.v1.train.Saver(variables)
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            saver.save(sess, "./model.ckpt", global_step=7, write_meta_graph=False)


if __name__ == "__main__":
    main()
