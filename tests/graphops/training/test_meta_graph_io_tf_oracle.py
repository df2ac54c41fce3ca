"""MetaGraphs both ways with TensorFlow (skipped without it): a `.meta` TF's Saver writes
imports here with its collections as TF's own importer restores them, and one graphops
writes imports into TF; either side restores the checkpoint and trains on, and the numbers
agree with the other side continuing from the same checkpoint (SGD, within 1e-6)."""

import numpy as np
import pytest

import graphops as gp
from graphops.registry import op_registry

tf = pytest.importorskip("tensorflow")
tf1 = tf.compat.v1

X = np.array([[1.0, 2.0], [0.5, -1.0], [-1.5, 0.25], [2.0, 1.0]], np.float32)
Y = np.array([[1.0], [-2.0], [0.5], [3.0]], np.float32)
COLLECTIONS = ("variables", "trainable_variables", "local_variables", "model_variables",
               "global_step", "train_op", "summaries", "notes", "counts", "rates")



def _session(t):
    """A Session of `t`; TF's runs one op at a time, as graphops' do: TF1's in-place updates
    of reference variables otherwise race reads of the same weights now and then."""
    if t is gp:
        return gp.Session()
    return t.Session(config=t.ConfigProto(inter_op_parallelism_threads=1))

def _program(t, train=True, use_resource=None):
    """The same model in TF's tf.compat.v1 or in graphops (`t`); `train=False` leaves out
    the optimizer, `use_resource=False` makes reference variables."""
    x = t.constant(X, name="x")
    w = t.Variable(np.array([[0.3], [-0.2]], np.float32), name="w", use_resource=use_resource)
    b = t.Variable(np.array([0.1], np.float32), name="b", use_resource=use_resource)
    t.Variable(0, name="frozen", trainable=False, use_resource=use_resource,
               collections=[t.GraphKeys.GLOBAL_VARIABLES, t.GraphKeys.MODEL_VARIABLES])
    t.Variable(1.5, name="local", trainable=False, collections=[t.GraphKeys.LOCAL_VARIABLES],
               use_resource=use_resource)
    loss = t.reduce_mean(t.square(t.matmul(x, w) + b - Y), name="loss")
    step = t.train.get_or_create_global_step()
    if train:
        t.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
    t.summary.scalar("loss", loss)
    t.add_to_collection("notes", "a note")
    t.add_to_collection("counts", 3)
    t.add_to_collection("rates", 0.5)


def _save(t, path, steps=2, train=True, use_resource=None):
    with t.Graph().as_default():
        _program(t, train, use_resource)
        saver = t.train.Saver()
        with _session(t) as sess:
            sess.run([t.global_variables_initializer(), t.local_variables_initializer()])
            for _ in range(steps):
                sess.run(t.get_collection("train_op"))
            return saver.save(sess, path)


def _name(item):
    return item if isinstance(item, (bytes, int, float)) else item.name


def _continue(t, path, steps=3):
    """Imports `path`.meta into a new graph, restores it, runs its train_op `steps` times,
    then a new optimizer's step; returns (collections by name, values)."""
    with t.Graph().as_default() as graph:
        saver = t.train.import_meta_graph(path + ".meta")
        found = {k: [_name(v) for v in t.get_collection(k)] for k in COLLECTIONS}
        loss = graph.get_tensor_by_name("loss:0")
        more = t.train.GradientDescentOptimizer(0.05).minimize(loss, name="More")
        with _session(t) as sess:
            saver.restore(sess, path)
            for _ in range(steps):
                sess.run(t.get_collection("train_op"))
            sess.run(more)
            values = sess.run({v.op.name: v for v in t.global_variables()})
            values["loss"] = sess.run(loss)
    return found, values


def _compare(ours, theirs):
    assert ours[0] == theirs[0]
    assert sorted(ours[1]) == sorted(theirs[1])
    for key, value in theirs[1].items():
        np.testing.assert_allclose(ours[1][key], value, rtol=1e-6, atol=1e-6, err_msg=key)


@pytest.mark.parametrize("use_resource", [None, False])
@pytest.mark.parametrize("writer", ["tf", "gp"])
def test_meta_graph_imports_and_trains_on_both_sides(tmp_path, writer, use_resource):
    if use_resource is False and not op_registry.is_registered("ApplyGradientDescent"):
        pytest.skip("ref-variable training ops (ApplyGradientDescent) are not registered")
    path = _save(tf1 if writer == "tf" else gp, str(tmp_path / "model"),
                 use_resource=use_resource)
    theirs, ours = _continue(tf1, path), _continue(gp, path)
    assert ours[0]["trainable_variables"] == ["w:0", "b:0"]
    assert ours[0]["notes"] == [b"a note"] and ours[0]["counts"] == [3]
    assert ours[1]["global_step"] == 5
    _compare(ours, theirs)


def test_tf_ref_variable_meta_graph(tmp_path):
    tf1.disable_resource_variables()
    try:
        path = _save(tf1, str(tmp_path / "model"), steps=0, train=False)
        trained = _save(tf1, str(tmp_path / "trained"), steps=1)
    finally:
        tf1.enable_resource_variables()
    with gp.Graph().as_default() as graph:
        saver = gp.train.import_meta_graph(path + ".meta")
        assert [v.name for v in gp.trainable_variables()] == ["w:0", "b:0"]
        assert graph.get_operation_by_name("w").type == "VariableV2"
        with gp.Session() as sess:
            saver.restore(sess, path)
            ours = sess.run(gp.global_variables())
    with tf.Graph().as_default():
        saver = tf1.train.import_meta_graph(path + ".meta")
        with _session(tf1) as sess:
            saver.restore(sess, path)
            for mine, theirs in zip(ours, sess.run(tf1.global_variables())):
                np.testing.assert_array_equal(mine, theirs)
    if not op_registry.is_registered("ApplyGradientDescent"):
        with gp.Graph().as_default(), pytest.raises(gp.errors.NotFoundError,
                                                    match="'ApplyGradientDescent'"):
            gp.train.import_meta_graph(trained + ".meta")
        pytest.skip("ref-variable training ops (ApplyGradientDescent) are not registered")
    tf1.disable_resource_variables()
    try:
        theirs = _continue(tf1, trained)
    finally:
        tf1.enable_resource_variables()
    _compare(_continue(gp, trained), theirs)


def test_stripped_op_list_holds_tfs_op_defs():
    from tensorflow.core.framework import op_def_pb2
    from tensorflow.python.framework import op_def_registry

    with gp.Graph().as_default():
        _program(gp)
        meta = gp.train.Saver().export_meta_graph()
    ops = meta.meta_info_def.stripped_op_list.op
    assert [op.name for op in ops] == sorted(op.name for op in ops)
    assert {"MatMul", "ResourceApplyGradientDescent", "SaveV2", "VarHandleOp"} <= \
        {op.name for op in ops}
    for op in ops:
        ours = op_def_pb2.OpDef.FromString(op.SerializeToString())
        theirs = op_def_pb2.OpDef()
        theirs.CopyFrom(op_def_registry.get(op.name))
        for arg in list(theirs.input_arg) + list(theirs.output_arg):
            arg.ClearField("experimental_full_type")    # not in graphops' OpDef model
        assert ours == theirs, op.name


def test_clear_extraneous_savers_keeps_what_tf_keeps():
    def export(t):
        with t.Graph().as_default():
            t.Variable(np.ones((2, 1), np.float32), name="w")
            first, second = t.train.Saver(), t.train.Saver()
            t.add_to_collection(t.GraphKeys.SAVERS, first)
            t.add_to_collection(t.GraphKeys.SAVERS, second)
            meta = second.export_meta_graph(clear_extraneous_savers=True)
        return ({(n.name, n.op) for n in meta.graph_def.node},
                list(meta.collection_def["savers"].bytes_list.value))

    assert export(gp) == export(tf1)
