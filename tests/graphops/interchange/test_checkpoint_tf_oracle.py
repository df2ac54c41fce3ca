"""Checkpoints both ways with TensorFlow: TF reads and restores what gp.train.Saver writes
(byte for byte the files TF's Saver writes), graphops restores what TF's Saver writes, and
both Savers build the same nodes. Skipped when TensorFlow is not installed."""


import ml_dtypes
import numpy as np
import pytest

import graphops as gp

tf = pytest.importorskip("tensorflow")
tf1 = tf.compat.v1

VALUES = {
    "conv1/w": np.linspace(-1, 1, 12, dtype=np.float32).reshape(2, 3, 2),
    "conv1/b": np.array([0.25, -3.0], np.float64),
    "half": np.array([[1.5, -65504.0]], np.float16),
    "bf16": np.array([3.0, -0.0078125], ml_dtypes.bfloat16),
    "i8": np.array([-128, 127], np.int8), "i32": np.array([[1, -2]], np.int32),
    "step": np.array(42, np.int64), "u8": np.array([7, 255], np.uint8),
    "mask": np.array([[True], [False]]), "c128": np.array([1 - 1j], np.complex128),
    "names": np.array([b"alpha", b"", b"\xffbytes"], dtype=object),
    "empty": np.zeros((3, 0), np.float32),
}


def _zeros(value):
    return np.full(value.shape, b"", object) if value.dtype == object else np.zeros_like(value)


def _tf_graph(values, sharded=False, **options):
    graph = tf.Graph()
    with graph.as_default():
        variables = {name: tf.Variable(value, name=name) for name, value in values.items()}
        saver = tf1.train.Saver(sharded=sharded, **options)
    return graph, variables, saver


def _gp_graph(values, sharded=False, **options):
    graph = gp.Graph()
    with graph.as_default():
        variables = {name: gp.Variable(value, name=name) for name, value in values.items()}
        saver = gp.train.Saver(sharded=sharded, **options)
    return graph, variables, saver


def _gp_save(path, values, sharded=False):
    graph, _, saver = _gp_graph(values, sharded)
    with graph.as_default(), gp.Session() as sess:
        sess.run(gp.global_variables_initializer())
        return saver.save(sess, path, global_step=1)


def _tf_save(path, values, sharded=False):
    graph, _, saver = _tf_graph(values, sharded)
    with graph.as_default(), tf1.Session() as sess:
        sess.run(tf1.global_variables_initializer())
        return saver.save(sess, path, global_step=1)


def _assert_same(actual, expected):
    actual = np.asarray(actual)
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    if expected.dtype == object:
        assert list(actual.reshape(-1)) == list(expected.reshape(-1))
    else:
        assert actual.tobytes() == expected.tobytes()


def test_tf_reads_graphops_checkpoint(tmp_path):
    path = _gp_save(str(tmp_path / "model"), VALUES)
    reader = tf.train.load_checkpoint(str(tmp_path))
    assert reader.get_variable_to_shape_map() == {k: list(v.shape) for k, v in VALUES.items()}
    dtypes = reader.get_variable_to_dtype_map()
    for name, value in VALUES.items():
        assert dtypes[name].as_numpy_dtype == value.dtype.type or value.dtype == object
        _assert_same(reader.get_tensor(name), value)
    assert tf.train.latest_checkpoint(str(tmp_path)) == path


@pytest.mark.parametrize("sharded", [False, True])
def test_tf_saver_restores_graphops_checkpoint(tmp_path, sharded):
    path = _gp_save(str(tmp_path / "model"), VALUES, sharded)
    graph, variables, saver = _tf_graph({k: _zeros(v) for k, v in VALUES.items()})
    with graph.as_default(), tf1.Session() as sess:
        saver.restore(sess, path)
        restored = sess.run(variables)
    for name, value in VALUES.items():
        _assert_same(restored[name], value)


@pytest.mark.parametrize("sharded", [False, True])
def test_graphops_restores_tf_checkpoint(tmp_path, sharded):
    path = _tf_save(str(tmp_path / "model"), VALUES, sharded)
    assert gp.train.latest_checkpoint(str(tmp_path)) == path
    graph, variables, saver = _gp_graph({k: _zeros(v) for k, v in VALUES.items()})
    with graph.as_default(), gp.Session() as sess:
        saver.restore(sess, path)
        restored = sess.run(variables)
    for name, value in VALUES.items():
        _assert_same(restored[name], value)


def test_files_are_byte_identical_to_tf(tmp_path):
    ours = _gp_save(str(tmp_path / "gp" / "model"), VALUES)
    theirs = _tf_save(str(tmp_path / "tf" / "model"), VALUES)
    for suffix in (".index", ".data-00000-of-00001"):
        with open(ours + suffix, "rb") as a, open(theirs + suffix, "rb") as b:
            assert a.read() == b.read(), suffix
    with open(tmp_path / "gp" / "checkpoint") as a, open(tmp_path / "tf" / "checkpoint") as b:
        assert a.read().replace("/gp/", "/tf/") == b.read()


@pytest.mark.parametrize("options", [{}, {"sharded": True}, {"reshape": True, "name": "ckpt"},
                                     {"max_to_keep": None, "filename": "a/b"}])
def test_saver_builds_the_nodes_tf_builds(options):
    values = {"conv1/w": VALUES["conv1/w"], "b": VALUES["conv1/b"]}
    tf_graph, _, tf_saver = _tf_graph(values, **options)
    gp_graph, _, gp_saver = _gp_graph(values, **options)
    prefix = options.get("name", "save") + "/"

    def saver_nodes(graph):
        return [(op.name, op.type, sorted(t.name for t in op.inputs),
                 sorted(c.name for c in op.control_inputs))
                for op in graph.get_operations() if op.name.startswith(prefix)]

    assert saver_nodes(gp_graph) == saver_nodes(tf_graph)
    for field in ("filename_tensor_name", "save_tensor_name", "restore_op_name", "sharded",
                  "max_to_keep", "keep_checkpoint_every_n_hours", "version"):
        assert getattr(gp_saver.saver_def, field) == getattr(tf_saver.saver_def, field)


def test_op_errors_match_tf(tmp_path):
    from tensorflow.python.ops import gen_io_ops

    prefix = str(tmp_path / "ckpt")
    gen_io_ops.save_v2(prefix, ["v"], [""], [tf.constant([1.0, 2.0])])
    cases = [(["nokey"], [tf.float32]), (["v"], [tf.float64]),
             (["v"], [tf.float32], str(tmp_path / "missing"))]
    for names, types, *path in cases:
        path = path[0] if path else prefix
        with pytest.raises(tf.errors.OpError) as expected:
            gen_io_ops.restore_v2(path, names, [""], types)
        with pytest.raises(gp.errors.OpError) as actual:
            gp.raw_ops.RestoreV2(prefix=path, tensor_names=names, shape_and_slices=[""],
                                 dtypes=[gp.as_dtype(t.name) for t in types])
        assert type(actual.value).__name__ == type(expected.value).__name__
        core = expected.value.message.split("}} ")[-1].split(" [Op:")[0]
        assert core in actual.value.message


def test_meta_graphs_both_ways(tmp_path):
    ours = _gp_save(str(tmp_path / "gp" / "model"), VALUES)
    theirs = _tf_save(str(tmp_path / "tf" / "model"), VALUES)
    with tf.Graph().as_default():
        saver = tf1.train.import_meta_graph(ours + ".meta")
        with tf1.Session() as sess:
            saver.restore(sess, ours)
            tf_values = sess.run({name: f"{name}/Read/ReadVariableOp:0" for name in VALUES})
    with gp.Graph().as_default():
        saver = gp.train.import_meta_graph(theirs + ".meta")
        with gp.Session() as sess:
            saver.restore(sess, theirs)
            gp_values = sess.run({name: f"{name}/Read/ReadVariableOp:0" for name in VALUES})
    for name, value in VALUES.items():
        _assert_same(tf_values[name], value)
        _assert_same(gp_values[name], value)
