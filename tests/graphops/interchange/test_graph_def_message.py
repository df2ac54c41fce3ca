"""`Graph.as_graph_def()` gives a GraphDef message with TF's fields, equal to what TF 2.21's
tf.compat.v1 writes for the same graph (checked where TF is installed); `add_shapes`,
`from_version`, `graph_def_versions`, `Session.graph_def`; `gp.io.write_graph` /
`gp.train.write_graph` files that TF reads, and that we read back."""

import os
import pathlib

import numpy as np
import pytest
from google.protobuf import text_format

import graphops as gp
from graphops.interchange.messages import tensor_from_proto

RNG = np.random.default_rng(5)
W1 = RNG.standard_normal((4, 5)).astype(np.float32)
B1 = RNG.standard_normal(5).astype(np.float32)
W2 = RNG.standard_normal((5, 3)).astype(np.float32)
X = RNG.standard_normal((2, 4)).astype(np.float32)


def _tf():
    tf = pytest.importorskip("tensorflow")
    return tf


def _mlp(m):
    """A small MLP with constant weights, in graphops or TF (`m` is the module)."""
    g = m.Graph()
    with g.as_default():
        x = m.compat.v1.placeholder(m.float32, [None, 4], name="x")
        h = m.nn.relu(m.nn.bias_add(m.matmul(x, W1), B1), name="h")
        logits = m.matmul(h, W2, name="logits")
        probs = m.nn.softmax(logits, name="probs")
        m.reduce_mean(m.cast(m.argmax(probs, 1), m.float32), name="mean_class")
        with m.control_dependencies([probs]):
            m.no_op(name="done")
    return g


def test_as_graph_def_is_a_graph_def_message():
    g = _mlp(gp)
    gd = g.as_graph_def()
    assert isinstance(gd, gp.GraphDef)
    assert [n.name for n in gd.node][:4] == ["x", "MatMul/b", "MatMul", "BiasAdd/bias"]
    assert gd.node[2].op == "MatMul" and list(gd.node[2].input) == ["x", "MatMul/b"]
    assert list(gd.node[-1].input) == ["^probs"] and gd.node[-1].op == "NoOp"
    assert gd.node[0].attr["dtype"].type == gp.float32.enum
    assert [d.size for d in gd.node[0].attr["shape"].shape.dim] == [-1, 4]
    np.testing.assert_array_equal(tensor_from_proto(gd.node[1].attr["value"].tensor), W1)
    assert (gd.versions.producer, gd.versions.min_consumer) == (2474, 0)
    assert not gd.HasField("library")
    assert gp.GraphDef.FromString(gd.SerializeToString()) == gd
    g2 = gp.Graph()
    with g2.as_default():
        gp.import_graph_def(gd, name="")
        with gp.Session() as sess:
            got = sess.run("probs:0", {"x:0": X})
    h = np.maximum(X @ W1 + B1, 0) @ W2
    want = np.exp(h - h.max(1, keepdims=True))
    np.testing.assert_allclose(got, want / want.sum(1, keepdims=True), rtol=1e-5)


def test_add_shapes_marks_the_nodes_with_outputs():
    g = _mlp(gp)
    gd = g.as_graph_def(add_shapes=True)
    by_name = {n.name: n for n in gd.node}
    assert "_output_shapes" not in by_name["done"].attr
    assert [[d.size for d in s.dim] for s in by_name["h"].attr["_output_shapes"].list.shape] \
        == [[-1, 5]]
    assert not by_name["mean_class"].attr["_output_shapes"].list.shape[0].dim
    assert all("_output_shapes" not in n.attr for n in g.as_graph_def().node)


def test_from_version_is_ignored_as_in_tf2_and_versions_are_tfs():
    g = _mlp(gp)
    version = g.version
    with g.as_default():
        gp.constant(1.0, name="late")
    assert len(g.as_graph_def(from_version=version).node) == len(g.get_operations())
    assert g.graph_def_versions.producer == 2474 and g.graph_def_versions.min_consumer == 0
    with gp.Session(graph=g) as sess:
        assert sess.graph_def == g.as_graph_def()


def _unmarked(graph_def):
    """`graph_def` without the `_has_manual_control_dependencies` marks TF 2 puts on the
    ops named in `control_dependencies` (graphops' builder does not add them)."""
    for node in graph_def.node:
        if "_has_manual_control_dependencies" in node.attr:
            del node.attr["_has_manual_control_dependencies"]
    return graph_def


def test_the_message_equals_tfs_for_the_same_graph():
    tf = _tf()
    ours, theirs = _mlp(gp), _mlp(tf)
    for add_shapes in (False, True):
        mine = tf.compat.v1.GraphDef.FromString(
            ours.as_graph_def(add_shapes=add_shapes).SerializeToString())
        assert _unmarked(mine) == _unmarked(theirs.as_graph_def(add_shapes=add_shapes))
    version = theirs.version
    with theirs.as_default():
        tf.constant(1.0, name="late")
    assert len(theirs.as_graph_def(from_version=version).node) == len(theirs.get_operations())
    assert gp.Graph().graph_def_versions == \
        gp.GraphDef.FromString(theirs.as_graph_def().SerializeToString()).versions
    assert tf.Graph().graph_def_versions.SerializeToString() == \
        gp.Graph().graph_def_versions.SerializeToString()


# Attrs that graphops' variables write differently from TF's, by value or by presence:
# TF colocates a variable's initializer and handle with it and names the handle's debug_name.
_VARIABLE_ATTRS_NOT_COMPARED = {"_class", "debug_name"}


def _attr_value(attr):
    field = attr.WhichOneof("value")
    if field == "tensor":
        array = tensor_from_proto(attr.tensor)
        return (array.dtype.str, array.shape, array.tobytes())
    return attr.SerializeToString(deterministic=True)


def test_a_variable_mlp_writes_tfs_nodes():
    tf = _tf()
    graphs = []
    for m in (gp, tf):
        g = m.Graph()
        with g.as_default():
            x = m.compat.v1.placeholder(m.float32, [None, 4], name="x")
            w = m.compat.v1.get_variable("w", [4, 3],
                                         initializer=m.compat.v1.constant_initializer(0.5))
            m.nn.softmax(m.matmul(x, w), name="y")
        graphs.append(g.as_graph_def(add_shapes=True))
    ours = gp.GraphDef.FromString(graphs[0].SerializeToString())
    theirs = gp.GraphDef.FromString(graphs[1].SerializeToString())
    assert [(n.name, n.op, list(n.input)) for n in ours.node] == \
        [(n.name, n.op, list(n.input)) for n in theirs.node]
    for a, b in zip(ours.node, theirs.node):
        keys = set(b.attr) - _VARIABLE_ATTRS_NOT_COMPARED
        assert set(a.attr) - _VARIABLE_ATTRS_NOT_COMPARED == keys, a.name
        assert {k: _attr_value(a.attr[k]) for k in keys} == \
            {k: _attr_value(b.attr[k]) for k in keys}, a.name


# ----------------------------------------------------------------------------- write_graph

@pytest.mark.parametrize("as_text", [True, False])
def test_write_graph_writes_what_tf_writes_and_reads_back(tmp_path, as_text):
    g = _mlp(gp)
    logdir = tmp_path / "a" / "b"
    name = "g.pbtxt" if as_text else "g.pb"
    path = gp.train.write_graph(g, str(logdir), name, as_text=as_text)
    assert path == os.path.join(str(logdir), name) and gp.train.write_graph is gp.io.write_graph
    data = pathlib.Path(path).read_bytes()
    gd = g.as_graph_def()
    if as_text:
        assert data.decode() == text_format.MessageToString(gd)
        assert data.startswith(b'node {\n  name: "x"\n  op: "Placeholder"\n')
        assert data.endswith(b"versions {\n  producer: 2474\n}\n")
        back = text_format.Parse(data.decode(), gp.GraphDef())
    else:
        assert data == gd.SerializeToString(deterministic=True)
        back = gp.GraphDef.FromString(data)
    assert back == gd
    assert gp.io.graph_def_to_proto(gp.io.read_graph_def(path)) == gd
    again = gp.io.write_graph(back, str(tmp_path), name, as_text=as_text)
    assert pathlib.Path(again).read_bytes() == data


@pytest.mark.parametrize("as_text", [True, False])
def test_tf_reads_our_files_and_writes_the_same(tmp_path, as_text):
    tf = _tf()
    g = _mlp(gp)
    name = "g.pbtxt" if as_text else "g.pb"
    path = gp.io.write_graph(g, str(tmp_path / "ours"), name, as_text=as_text)
    with tf.io.gfile.GFile(path, "rb") as f:
        data = f.read()
    theirs = tf.compat.v1.GraphDef()
    if as_text:
        text_format.Parse(data.decode(), theirs)
    else:
        theirs.ParseFromString(data)
    assert _unmarked(theirs) == _unmarked(_mlp(tf).as_graph_def())
    tf_path = tf.io.write_graph(theirs, str(tmp_path / "theirs"), name, as_text=as_text)
    ours_again = gp.io.write_graph(theirs, str(tmp_path / "again"), name, as_text=as_text)
    assert gp.io.graph_def_to_proto(gp.io.read_graph_def(tf_path)) == g.as_graph_def()
    written = [pathlib.Path(p).read_bytes() for p in (tf_path, ours_again)]
    assert written[0] == written[1]
    target = tf.Graph()
    with target.as_default():
        tf.import_graph_def(theirs, name="")
        with tf.compat.v1.Session(graph=target) as sess:
            want = sess.run("probs:0", {"x:0": X})
    with gp.Session(graph=g) as sess:
        np.testing.assert_allclose(sess.run("probs:0", {"x:0": X}), want, rtol=1e-5, atol=1e-7)


def test_write_graph_writes_other_messages_as_they_are_and_refuses_the_rest(tmp_path):
    path = gp.io.write_graph(gp.NodeDef(name="n", op="NoOp"), str(tmp_path), "n.pbtxt")
    assert pathlib.Path(path).read_text() == 'name: "n"\nop: "NoOp"\n'     # as TF does
    with pytest.raises(TypeError, match="expected a GraphDef dict or message, got str"):
        gp.io.write_graph("node {}", str(tmp_path / "no"), "g.pb")
    assert not (tmp_path / "no").exists()
