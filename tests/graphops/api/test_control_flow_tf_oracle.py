"""gp.cond / gp.while_loop against TF 2.21's tf.compat.v1 graph mode (skips without TF): the
same programs give the same values, gradients and op types; TF's GraphDefs with
If/StatelessIf/While/StatelessWhile import and run here, and TF runs ours."""

import numpy as np
import pytest

import graphops as gp

tf = pytest.importorskip("tensorflow")
v1 = tf.compat.v1

XV = np.array([1.0, -2.0, 0.5], np.float32)


def _program(lib, less, graph):
    """One TF1 program in both libraries: a cond reading a variable, a while_loop with a
    maximum, nested control flow, and gradients."""
    with graph.as_default():
        x = lib.placeholder(lib.float32, [3], name="x")
        p = lib.placeholder(lib.bool, [], name="p")
        v = (v1.Variable if lib is v1 else gp.Variable)(2.0, name="v")
        y = lib.cond(p, lambda: x * x * v, lambda: x - 1.0)
        _, z = lib.while_loop(
            lambda i, a: less(i, 10),
            lambda i, a: (i + 1, lib.cond(less(a[0], 0.0), lambda: a * 0.5, lambda: a * a) + y),
            [lib.constant(0), x], maximum_iterations=3)
        grads = lib.gradients([y, z], [x, v])
        init = v.initializer
    return x, p, y, z, grads, init


def _run(graph, fetches, feeds, init):
    session = v1.Session if isinstance(graph, tf.Graph) else gp.Session
    with session(graph=graph) as sess:
        sess.run(init)
        return sess.run(fetches, feeds)


@pytest.mark.parametrize("taken", [True, False])
def test_same_values_and_gradients_as_tensorflow(taken):
    tg, gg = tf.Graph(), gp.Graph()
    t = _program(v1, lambda a, b: tf.less(a, b), tg)
    g = _program(gp, lambda a, b: gp.raw_ops.Less(x=a, y=b), gg)
    expected = _run(tg, [t[2], t[3], t[4]], {t[0]: XV, t[1]: taken}, t[5])
    got = _run(gg, [g[2], g[3], g[4]], {g[0]: XV, g[1]: taken}, g[5])
    for a, b in zip(got[:2] + got[2], expected[:2] + expected[2]):
        np.testing.assert_allclose(a, b, rtol=1e-5)


def test_same_forward_op_types_as_tensorflow():
    def build(lib, less):
        graph = tf.Graph() if lib is v1 else gp.Graph()
        with graph.as_default():
            x = lib.placeholder(lib.float32, None, name="x")
            p = lib.placeholder(lib.bool, None, name="p")
            v = (v1.Variable if lib is v1 else gp.Variable)(2.0, name="v")
            lib.cond(p, lambda: x * v, lambda: x)
            lib.cond(p, lambda: x * 2.0, lambda: x)
            lib.while_loop(lambda i, a: less(i, 3), lambda i, a: (i + 1, a + x), [0, x],
                           maximum_iterations=5, name="loop")
            lib.while_loop(lambda a: less(a, 3), lambda a: a * v, [1.0], back_prop=False)
            lib.case([(p, lambda: x), (less(x, 0.0)[0], lambda: x + 1.0)],
                     default=lambda: x * 2.0)
        return [(op.name, op.type) for op in graph.get_operations()]

    ours = build(gp, lambda a, b: gp.raw_ops.Less(x=a, y=b))
    theirs = build(v1, tf.less)
    assert ours == theirs


def _tf_graph_def(build):
    graph = tf.Graph()
    with graph.as_default():
        fetch = build()
    return graph.as_graph_def(), fetch


def test_tensorflow_graph_defs_with_if_and_while_import_and_run():
    def build():
        x = v1.placeholder(tf.float32, [3], name="x")
        v = v1.Variable(1.5, name="v")
        y = v1.cond(tf.reduce_sum(x) > 0, lambda: x * v, lambda: x - 1.0, name="branch")
        _, z = v1.while_loop(lambda i, a: i < 4, lambda i, a: (i + 1, a * 2.0 + y),
                             [tf.constant(0), x], name="loop")
        return z

    graph_def, fetch = _tf_graph_def(build)
    assert {"If", "StatelessWhile"} <= {n.op for n in graph_def.node}
    tg = tf.Graph()
    with tg.as_default():
        v1.import_graph_def(graph_def, name="")
    expected = []
    for xv in (XV, -XV):
        with v1.Session(graph=tg) as sess:
            sess.run("v/Assign")
            expected.append(sess.run(fetch.name, {"x:0": xv}))
    graph = gp.Graph()
    with graph.as_default():
        gp.import_graph_def(graph_def, name="")
    with gp.Session(graph=graph) as sess:
        sess.run("v/Assign")
        for xv, want in zip((XV, -XV), expected):
            np.testing.assert_allclose(sess.run(fetch.name, {"x:0": xv}), want, rtol=1e-6)


def test_tf_function_graph_def_imports_and_runs():
    @tf.function
    def f(x, n):
        y = tf.cond(n > 2, lambda: x * 2.0, lambda: x - 1.0)
        return tf.while_loop(lambda i, z: i < n, lambda i, z: (i + 1, z * 1.5 + y),
                             [tf.constant(0), x])[1]

    concrete = f.get_concrete_function(tf.TensorSpec([3], tf.float32, name="x"),
                                       tf.TensorSpec([], tf.int32, name="n"))
    graph_def = concrete.graph.as_graph_def()
    assert {"StatelessIf", "StatelessWhile"} <= {n.op for n in graph_def.node}
    graph = gp.Graph()
    with graph.as_default():
        gp.import_graph_def(graph_def, name="")
    output = concrete.outputs[0].name
    with gp.Session(graph=graph) as sess:
        for n in (0, 2, 5):
            np.testing.assert_allclose(sess.run(output, {"x:0": XV, "n:0": n}),
                                       f(XV, tf.constant(n)).numpy(), rtol=1e-6)


def test_tensorflow_runs_graphops_graph_defs():
    graph = gp.Graph()
    with graph.as_default():
        x = gp.placeholder(gp.float32, [3], name="x")
        p = gp.placeholder(gp.bool, [], name="p")
        v = gp.Variable(3.0, name="v")
        y = gp.cond(p, lambda: x * v.value(), lambda: x - 1.0)
        _, z = gp.while_loop(lambda i, a: gp.raw_ops.Less(x=i, y=10),
                             lambda i, a: (i + 1, a * 2.0 + y), [0, x], maximum_iterations=4)
        (gx,) = gp.gradients(z, [x])
    fetches = [y.name, z.name, gx.name]
    with gp.Session(graph=graph) as sess:
        sess.run(v.initializer)
        ours = sess.run(fetches, {x: XV, p: True})
    tg = tf.Graph()
    with tg.as_default():
        proto = graph.as_graph_def().SerializeToString()
        v1.import_graph_def(tf.compat.v1.GraphDef.FromString(proto), name="")
        with v1.Session(graph=tg) as sess:
            sess.run(v.initializer.name)
            theirs = sess.run(fetches, {"x:0": XV, "p:0": True})
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-6)
