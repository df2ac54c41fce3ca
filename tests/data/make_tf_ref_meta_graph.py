"""Writes tests/data/tf_ref_meta_graph/: a TF1 training program's checkpoint and MetaGraph as
TensorFlow leaves them, which graphops must import, restore and train on with TF's numbers:
an embedding table and a dense layer as reference variables (VariableV2), a Momentum
optimizer whose train_op applies the table's IndexedSlices gradient with
SparseApplyMomentum, saved after the first two of four batches.

    cd tests/data/tf_ref_meta_graph && python ../make_tf_ref_meta_graph.py

It also writes expected.npz: TF's table, dense layer and global step after all four batches.
`program`, `train` and `BATCHES` (NumPy and the `t` module given) serve the tests too.
"""

import numpy as np

RNG = np.random.RandomState(5)
TABLE = RNG.randn(8, 3).astype(np.float32)
DENSE = RNG.randn(3, 1).astype(np.float32)
# rows 6 and 7 appear only in the first batch: momentum keeps them moving only in a dense
# (wrong) update; duplicate ids take the deduplicated sparse path
BATCHES = [(np.array([6, 7, 1, 1], np.int32), RNG.randn(4, 1).astype(np.float32)),
           (np.array([0, 2, 2, 3], np.int32), RNG.randn(4, 1).astype(np.float32)),
           (np.array([4, 5, 0, 3], np.int32), RNG.randn(4, 1).astype(np.float32)),
           (np.array([1, 2, 4, 4], np.int32), RNG.randn(4, 1).astype(np.float32))]
OPTIMIZERS = {"momentum": lambda t: t.train.MomentumOptimizer(0.1, 0.9),
              "rmsprop": lambda t: t.train.RMSPropOptimizer(0.05, momentum=0.5),
              "adam": lambda t: t.train.AdamOptimizer(0.05)}


def program(t, optimizer="momentum"):
    """The model in tf.compat.v1 or graphops (`t`), with reference variables."""
    ids = t.placeholder(t.int32, [None], name="ids")
    labels = t.placeholder(t.float32, [None, 1], name="labels")
    table = t.Variable(TABLE, name="table", use_resource=False)
    dense = t.Variable(DENSE, name="dense", use_resource=False)
    logits = t.matmul(t.nn.embedding_lookup(table, ids), dense, name="logits")
    loss = t.reduce_mean(t.square(logits - labels), name="loss")
    OPTIMIZERS[optimizer](t).minimize(loss, global_step=t.train.get_or_create_global_step())


def train(t, sess, batches):
    """Runs the graph's train_op on `batches`; returns [table, dense, global step]."""
    train_op = t.get_collection("train_op")[0]
    for ids, labels in batches:
        sess.run(train_op, {"ids:0": ids, "labels:0": labels})
    return sess.run(["table:0", "dense:0", t.train.get_global_step()])


def main():
    import tensorflow as tf

    tf1 = tf.compat.v1
    tf1.disable_eager_execution()
    with tf.Graph().as_default():
        program(tf1)
        saver = tf1.train.Saver()
        with tf1.Session() as sess:
            sess.run(tf1.global_variables_initializer())
            train(tf1, sess, BATCHES[:2])
            saver.save(sess, "./model.ckpt")
            table, dense, step = train(tf1, sess, BATCHES[2:])
    np.savez("expected.npz", table=table, dense=dense, step=step)


if __name__ == "__main__":
    main()
