"""A TF1 training program's MetaGraph and checkpoint written by TensorFlow (reference
variables, an embedding trained by SparseApplyMomentum; tests/data/tf_ref_meta_graph, made
by tests/data/make_tf_ref_meta_graph.py) imports here with its collections, restores, and
trains on to TF's numbers, without TensorFlow installed."""

import numpy as np

import graphops as gp
from graphops.registry import dtypes
from tests.data.make_tf_ref_meta_graph import BATCHES, train
from tests.paths import DATA

PREFIX = str(DATA / "tf_ref_meta_graph" / "model.ckpt")


def test_tf_written_reference_variable_program_trains_on_with_tfs_numbers():
    expected = np.load(DATA / "tf_ref_meta_graph" / "expected.npz")
    with gp.Graph().as_default() as graph:
        saver = gp.train.import_meta_graph(PREFIX + ".meta")
        table, dense = gp.trainable_variables()
        assert (table.op.name, dense.op.name) == ("table", "dense")
        assert table.op.type == "VariableV2" and table.dtype is dtypes.float32_ref
        op_types = {op.type for op in graph.get_operations()}
        assert {"SparseApplyMomentum", "ApplyMomentum"} <= op_types
        with gp.Session() as sess:
            saver.restore(sess, PREFIX)
            got_table, got_dense, step = train(gp, sess, BATCHES[2:])
    np.testing.assert_allclose(got_table, expected["table"], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got_dense, expected["dense"], rtol=1e-6, atol=1e-6)
    assert step == expected["step"] == 4
