"""A TF1 user's model moving between TensorFlow and graphops with TF's own calls (skipped
without TF): an embedding model with reference variables trained by a sparse-gradient
optimizer is saved by one side (checkpoint + MetaGraph, or a SavedModel), reloaded by the
other with `import_meta_graph` / `saved_model.loader.load`, trained on from its own
`train_op`, and ends with the numbers of the first side continuing (within 1e-6); a graph
frozen here runs in TF with the same outputs."""

import numpy as np
import pytest

import graphops as gp
from tests.data.make_tf_ref_meta_graph import BATCHES, OPTIMIZERS, program, train

tf = pytest.importorskip("tensorflow")
tf1 = tf.compat.v1


def _session(t):
    """A Session of `t`; TF's runs one op at a time, as graphops' do: TF1's in-place updates
    of reference variables otherwise race reads of the same weights now and then."""
    if t is gp:
        return gp.Session()
    return t.Session(config=t.ConfigProto(inter_op_parallelism_threads=1))

def _first_half(t, path, optimizer):
    """Trains two batches and saves; returns the values after training all four."""
    with t.Graph().as_default():
        program(t, optimizer)
        saver = t.train.Saver()
        with _session(t) as sess:
            sess.run(t.global_variables_initializer())
            train(t, sess, BATCHES[:2])
            saver.save(sess, path)
            return train(t, sess, BATCHES[2:])


def _second_half(t, path):
    with t.Graph().as_default():
        saver = t.train.import_meta_graph(path + ".meta")
        assert {v.op.name for v in t.trainable_variables()} == {"table", "dense"}
        with _session(t) as sess:
            saver.restore(sess, path)
            return train(t, sess, BATCHES[2:])


@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
@pytest.mark.parametrize("writer,reader", [(tf1, gp), (gp, tf1)], ids=["tf_to_gp", "gp_to_tf"])
def test_training_continues_after_the_move_with_the_writers_numbers(
        tmp_path, optimizer, writer, reader):
    path = str(tmp_path / "model.ckpt")
    expected = _first_half(writer, path, optimizer)
    got = _second_half(reader, path)
    for want, have in zip(expected, got):
        np.testing.assert_allclose(have, want, rtol=1e-6, atol=1e-6)
    assert got[2] == 4


def test_a_graph_frozen_here_runs_in_tf_with_the_same_outputs():
    ids, _ = BATCHES[1]
    with gp.Graph().as_default():
        program(gp, "momentum")
        with gp.Session() as sess:
            sess.run(gp.global_variables_initializer())
            train(gp, sess, BATCHES[:1])
            frozen = gp.graph_util.convert_variables_to_constants(
                sess, sess.graph.as_graph_def(), ["logits"])
            want = sess.run("logits:0", {"ids:0": ids})
    assert not {n.op for n in frozen.node} & {"VariableV2", "Assign", "VarHandleOp"}
    graph_def = tf1.GraphDef.FromString(frozen.SerializeToString())
    with tf.Graph().as_default():
        tf1.import_graph_def(graph_def, name="")
        with _session(tf1) as sess:
            got = sess.run("logits:0", {"ids:0": ids})
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_a_tf_training_saved_model_loads_here_and_trains_on(tmp_path):
    export_dir = str(tmp_path / "saved")
    with tf.Graph().as_default():
        program(tf1, "momentum")
        with _session(tf1) as sess:
            sess.run(tf1.global_variables_initializer())
            train(tf1, sess, BATCHES[:2])
            builder = tf1.saved_model.Builder(export_dir)
            builder.add_meta_graph_and_variables(sess, [tf1.saved_model.tag_constants.TRAINING])
            builder.save()
            expected = train(tf1, sess, BATCHES[2:])
    with gp.Graph().as_default():
        with gp.Session() as sess:
            gp.saved_model.loader.load(sess, [gp.saved_model.tag_constants.TRAINING], export_dir)
            got = train(gp, sess, BATCHES[2:])
    for want, have in zip(expected, got):
        np.testing.assert_allclose(have, want, rtol=1e-6, atol=1e-6)
