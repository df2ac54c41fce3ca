"""TF1 reference variables against TensorFlow's tf.compat.v1 (use_resource=False): the
nodes built, VariableDef protos, the values of update programs and gradients, and
checkpoints written here restored by TF (skips without TensorFlow)."""

import numpy as np
import pytest

import graphops as gp

tf = pytest.importorskip("tensorflow")
tf1 = tf.compat.v1


def _program(t, v1):
    """The same TF1 program for `t` = tf or gp (`v1`: its compat.v1 namespace)."""
    w = v1.Variable(np.arange(6, dtype=np.float32).reshape(3, 2), name="w", use_resource=False)
    with v1.variable_scope("scope", use_resource=False):
        b = v1.get_variable("b", shape=[2], initializer=v1.constant_initializer(0.5))
    x = v1.placeholder(t.float32, [None, 3], name="x")
    y = t.matmul(x, w) + b
    loss = t.reduce_sum(y * y)
    grads = v1.gradients(loss, [w, b])
    updates = [v1.assign_add(b, [1.0, -1.0]),
               v1.scatter_update(w, [2, 0], [[7.0, 8.0], [9.0, 10.0]]),
               v1.scatter_nd_sub(w, [[1, 1]], [0.25]),
               v1.assign(w, w.initial_value * 2.0)]
    return w, b, x, y, grads, updates


def _nodes(graph):
    return [(op.name, op.type, [i.name for i in op.inputs])
            for op in graph.get_operations() if not op.name.startswith("gradients")]


def _run(t, v1, graph):
    with graph.as_default():
        w, b, x, y, grads, updates = _program(t, v1)
        feed = {x: np.array([[1.0, 2.0, 3.0], [0.0, -1.0, 4.0]], np.float32)}
        with v1.Session(graph=graph) as sess:
            sess.run(v1.global_variables_initializer())
            results = [sess.run(y, feed)] + sess.run(grads, feed)
            results += [sess.run(u) for u in updates] + [sess.run(w), sess.run(b)]
        protos = [v.to_proto().SerializeToString(deterministic=True) for v in (w, b)]
        return results, protos, w.dtype.name, [v.name for v in v1.global_variables()]


def test_program_matches_tf():
    tf_graph, gp_graph = tf.Graph(), gp.Graph()
    theirs = _run(tf, tf1, tf_graph)
    ours = _run(gp, gp.compat.v1, gp_graph)
    for mine, expected in zip(ours[0], theirs[0]):
        np.testing.assert_allclose(mine, expected, rtol=1e-6)
    assert ours[1] == theirs[1]            # VariableDefs, byte for byte
    assert ours[2] == theirs[2] == "float32_ref"
    assert ours[3] == theirs[3]


def test_nodes_match_tf():
    tf_graph, gp_graph = tf.Graph(), gp.Graph()
    with tf_graph.as_default():
        _program(tf, tf1)
    with gp_graph.as_default():
        _program(gp, gp)
    names = {n for n, _, _ in _nodes(tf_graph)}
    ours = [node for node in _nodes(gp_graph) if node[0] in names]
    variable_nodes = [node for node in _nodes(tf_graph)
                      if node[0].startswith(("w", "scope/b"))]
    assert [node for node in ours if node[0].startswith(("w", "scope/b"))] == variable_nodes


def _saved_here(tmp_path, make_variables):
    """The checkpoint prefix of a graph holding `make_variables()`'s, saved initialised."""
    with gp.Graph().as_default():
        make_variables()
        saver = gp.train.Saver()
        with gp.Session() as sess:
            sess.run(gp.global_variables_initializer())
            return saver.save(sess, str(tmp_path / "model"))


def _ref_variables():
    gp.Variable(np.array([[1.5, -2.0]], np.float32), name="w", use_resource=False)
    gp.Variable(np.int64(7), name="c", use_resource=False)


def _mixed_variables():
    gp.Variable([1.0, 2.0], name="w", use_resource=False)
    gp.Variable(3.0, name="r")


def test_checkpoint_written_here_restores_in_tf(tmp_path):
    path = _saved_here(tmp_path, _ref_variables)
    tg = tf.Graph()
    with tg.as_default():
        tw = tf1.Variable(np.zeros((1, 2), np.float32), name="w", use_resource=False)
        tc = tf1.Variable(np.int64(0), name="c", use_resource=False)
        with tf1.Session(graph=tg) as sess:
            tf1.train.Saver().restore(sess, path)
            got_w, got_c = sess.run([tw, tc])
    np.testing.assert_array_equal(got_w, [[1.5, -2.0]])
    assert got_c == 7
    assert sorted(tf.train.list_variables(path)) == [("c", []), ("w", [1, 2])]


def test_meta_graph_written_here_imports_in_tf(tmp_path):
    path = _saved_here(tmp_path, _mixed_variables)
    tg = tf.Graph()
    with tg.as_default():
        restorer = tf1.train.import_meta_graph(path + ".meta")
        variables = tf1.global_variables()
        assert [(v.name, v.dtype.name) for v in variables] == [("w:0", "float32_ref"),
                                                                ("r:0", "float32")]
        with tf1.Session(graph=tg) as sess:
            restorer.restore(sess, path)
            w, r = sess.run(variables)
    np.testing.assert_array_equal(w, [1.0, 2.0])
    assert r == 3.0
