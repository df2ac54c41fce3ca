"""Writes tests/data/tf_ref_variables/: what TensorFlow's TF1 reference variables
(`tf.compat.v1.disable_resource_variables()`) leave behind, which graphops must read:

- graph.pb: a GraphDef with VariableV2 "w" and "b", their Assign initializers and "read"
  Identities, y = x @ w + b, an AssignAdd "bump" of b and a ScatterUpdate "poke" of w;
- model.ckpt.*: a checkpoint of w and b saved by tf.compat.v1.train.Saver.

    cd tests/data/tf_ref_variables && python ../make_tf_ref_variables.py

`expected_values()` (NumPy only) gives the saved values; tests/graphops/training/
test_ref_variables_tf_files.py imports it.
"""

import numpy as np


def expected_values():
    """{variable name: value} of the checkpoint (w also the initial value in graph.pb)."""
    return {"w": np.arange(6, dtype=np.float32).reshape(3, 2) / 4,
            "b": np.array([0.5, -1.5], dtype=np.float32)}


def main():
    import tensorflow as tf

    tf1 = tf.compat.v1
    tf1.disable_eager_execution()
    tf1.disable_resource_variables()
    graph = tf.Graph()
    with graph.as_default():
        values = expected_values()
        w = tf1.Variable(values["w"], name="w")
        b = tf1.Variable(tf.zeros([2]), name="b")
        x = tf1.placeholder(tf.float32, [None, 3], name="x")
        tf.add(tf.matmul(x, w), b, name="y")
        tf1.assign_add(b, [1.0, 2.0], name="bump")
        tf1.scatter_update(w, [1], [[10.0, 20.0]], name="poke")
        tf.io.write_graph(graph.as_graph_def(), ".", "graph.pb", as_text=False)
        saver = tf1.train.Saver([w, b])
        with tf1.Session() as sess:
            sess.run(tf1.global_variables_initializer())
            sess.run(b.assign(values["b"]))
            saver.save(sess, "./model.ckpt", write_meta_graph=False)


if __name__ == "__main__":
    main()
