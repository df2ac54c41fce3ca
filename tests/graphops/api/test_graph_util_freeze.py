"""gp.graph_util.convert_variables_to_constants: a trained graph frozen here runs here and in
TF 2.21 with the graph's outputs, and our freezing of a GraphDef equals TF's freezing of the
same GraphDef field for field: TF-built graphs with resource and ref variables, gathers,
v1 control flow, If / While functions and shapes attached (frozen here through TF's own
Session; kept with TF's results in tests/data/graph_util_tf.npz for CI without TF), and
GraphDefs written out below, frozen with a stand-in session (TF's function only calls
`run`). Frozen functions get a process-wide number in their names, compared as N."""

import re

import numpy as np
import pytest
from google.protobuf import text_format

import graphops as gp
from graphops.registry.op_registry import list_ops
from tests.graphops.api.test_graph_util import DATA, tf_or_none, tf_result

X = np.random.default_rng(3).standard_normal((5, 4)).astype(np.float32)
LABELS = np.eye(3, dtype=np.float32)[[0, 2, 1, 1, 0]]
W0 = (np.arange(12, dtype=np.float32).reshape(4, 3) - 6) / 10

# the frozen MLP, as TF 2.21 freezes the same graph (checked below where TF is installed)
FROZEN_MLP = [("x", "Placeholder", []), ("w", "Const", []), ("b", "Const", []),
              ("MatMul/ReadVariableOp", "Identity", ["w"]),
              ("MatMul", "MatMul", ["x", "MatMul/ReadVariableOp"]),
              ("add/ReadVariableOp", "Identity", ["b"]),
              ("add", "AddV2", ["MatMul", "add/ReadVariableOp"]),
              ("h", "Relu", ["add"]), ("Softmax", "Softmax", ["h"]),
              ("y", "Identity", ["Softmax"])]


def _tf():
    tf = pytest.importorskip("tensorflow")
    return tf


def _nodes(graph_def):
    return [(n.name, n.op, list(n.input)) for n in graph_def.node]


def _mlp(m, use_resource=True):
    """The same MLP in graphops or TF (`m` is the module); returns (graph, y, loss)."""
    v1 = m.compat.v1
    g = m.Graph()
    with g.as_default():
        x = v1.placeholder(m.float32, [None, 4], name="x")
        w = v1.get_variable("w", [4, 3], initializer=v1.constant_initializer(W0),
                            use_resource=use_resource)
        b = v1.get_variable("b", [3], initializer=v1.zeros_initializer(),
                            use_resource=use_resource)
        h = m.nn.relu(m.matmul(x, w) + b, name="h")
        y = m.identity(m.nn.softmax(h), name="y")
        loss = m.reduce_mean(m.square(y - LABELS))
    return g, y, loss


def _trained_mlp():
    """Our MLP after three SGD steps: (graph, session, outputs for X)."""
    g, y, loss = _mlp(gp)
    with g.as_default():
        step = gp.train.GradientDescentOptimizer(0.5).minimize(loss)
        sess = gp.Session(graph=g)
        sess.run(gp.global_variables_initializer())
        for _ in range(3):
            sess.run(step, {"x:0": X})
    return g, sess, sess.run(y, {"x:0": X})


def _run_here(graph_def, fetch, feeds):
    g = gp.Graph()
    with g.as_default():
        gp.import_graph_def(graph_def, name="")
        with gp.Session() as sess:
            return sess.run(fetch, feeds)


def test_a_trained_graph_frozen_here_runs_here_with_its_outputs():
    g, sess, want = _trained_mlp()
    frozen = gp.graph_util.convert_variables_to_constants(sess, g.as_graph_def(), ["y"])
    assert isinstance(frozen, gp.GraphDef) and _nodes(frozen) == FROZEN_MLP
    w = frozen.node[1]
    assert set(w.attr) == {"dtype", "value"} and w.device == ""
    trained = sess.run("w/Read/ReadVariableOp:0")
    assert not np.array_equal(trained, W0)
    from graphops.interchange.messages import tensor_from_proto
    np.testing.assert_array_equal(tensor_from_proto(w.attr["value"].tensor), trained)
    np.testing.assert_allclose(_run_here(frozen, "y:0", {"x:0": X}), want, rtol=0, atol=1e-6)
    sess.close()


def test_a_trained_graph_frozen_here_runs_in_tf_and_equals_tfs_freezing():
    tf = _tf()
    v1 = tf.compat.v1
    g, sess, want = _trained_mlp()
    frozen = gp.graph_util.convert_variables_to_constants(
        sess, g.as_graph_def(add_shapes=True), ["y"])
    assert "_output_shapes" in frozen.node[0].attr       # TF's importer checks them
    values = sess.run(["w/Read/ReadVariableOp:0", "b/Read/ReadVariableOp:0"])
    theirs_in = v1.GraphDef.FromString(frozen.SerializeToString())
    target = tf.Graph()
    with target.as_default():
        tf.import_graph_def(theirs_in, name="")
        with v1.Session(graph=target) as tf_sess:
            got = tf_sess.run("y:0", {"x:0": X})
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)
    tg, _, _ = _mlp(tf)
    with tg.as_default(), v1.Session(graph=tg) as tf_sess:
        for var, value in zip(v1.global_variables(), values):
            var.load(value, tf_sess)
        theirs = v1.graph_util.convert_variables_to_constants(
            tf_sess, tg.as_graph_def(add_shapes=True), ["y"])
    assert _nodes(theirs) == FROZEN_MLP
    assert v1.GraphDef.FromString(frozen.SerializeToString()) == theirs


class _Values:
    """A stand-in session: `run` of a list of tensor names gives the values held."""

    def __init__(self, values):
        self.values = values
        self.fetched = []

    def run(self, names):
        self.fetched.append(list(names))
        return [self.values[name] for name in names]


def _graph_def(text):
    graph_def = gp.GraphDef()
    text_format.Parse(text, graph_def)
    return graph_def


_F = 'attr { key: "T" value { type: DT_FLOAT } }'
_R = 'attr { key: "T" value { type: DT_RESOURCE } }'
_SHAPES = 'attr { key: "_output_shapes" value { list { shape { dim { size: 2 } } } } }'
_VAR = ('attr { key: "dtype" value { type: DT_FLOAT } } '
        'attr { key: "shape" value { shape { dim { size: 2 } } } }')

HAND_MADE = _graph_def(f"""
node {{ name: "ref" op: "VariableV2" {_VAR} device: "/cpu:0" input: "^ctl" }}
node {{ name: "ctl" op: "NoOp" }}
node {{ name: "ref/read" op: "Identity" input: "ref" {_F} {_SHAPES}
        attr {{ key: "_class" value {{ list {{ s: "loc:@ref" }} }} }} }}
node {{ name: "res" op: "VarHandleOp" {_VAR} }}
node {{ name: "pred" op: "Placeholder" attr {{ key: "dtype" value {{ type: DT_BOOL }} }} }}
node {{ name: "sw" op: "Switch" input: "res" input: "pred" {_R} {_SHAPES} }}
node {{ name: "read_t" op: "ReadVariableOp" input: "sw:1" input: "^ctl"
        attr {{ key: "dtype" value {{ type: DT_FLOAT }} }} }}
node {{ name: "enter" op: "Enter" input: "res" {_R}
        attr {{ key: "frame_name" value {{ s: "loop" }} }} }}
node {{ name: "read_e" op: "ReadVariableOp" input: "enter"
        attr {{ key: "dtype" value {{ type: DT_FLOAT }} }} }}
node {{ name: "idx" op: "Placeholder" attr {{ key: "dtype" value {{ type: DT_INT64 }} }} }}
node {{ name: "gather" op: "ResourceGather" input: "res" input: "idx"
        attr {{ key: "dtype" value {{ type: DT_FLOAT }} }}
        attr {{ key: "Tindices" value {{ type: DT_INT64 }} }}
        attr {{ key: "batch_dims" value {{ i: 0 }} }}
        attr {{ key: "validate_indices" value {{ b: true }} }} }}
node {{ name: "gather_nd" op: "ResourceGatherNd" input: "res" input: "idx"
        attr {{ key: "dtype" value {{ type: DT_FLOAT }} }}
        attr {{ key: "Tindices" value {{ type: DT_INT64 }} }} }}
node {{ name: "merge" op: "Merge" input: "ref/read" input: "read_t"
        attr {{ key: "N" value {{ i: 2 }} }} {_F} }}
node {{ name: "out" op: "AddN" input: "merge" input: "read_e" input: "gather"
        input: "gather_nd" attr {{ key: "N" value {{ i: 4 }} }} {_F} }}
versions {{ producer: 27 }}
""")
HAND_VALUES = {"ref:0": np.array([1.5, -2], np.float32),
               "res/Read/ReadVariableOp:0": np.array([0.25, 4], np.float32)}
HAND_FROZEN = [("ref", "Const", []), ("ctl", "NoOp", []), ("ref/read", "Identity", ["ref"]),
               ("res", "Const", []), ("pred", "Placeholder", []),
               ("sw", "Switch", ["res", "pred"]), ("read_t", "Identity", ["sw:1"]),
               ("enter", "Enter", ["res"]), ("read_e", "Identity", ["enter"]),
               ("idx", "Placeholder", []), ("gather", "GatherV2", ["res", "idx", "gather/axis"]),
               ("gather_nd", "GatherNd", ["res", "idx"]), ("merge", "Merge",
                                                          ["ref/read", "read_t"]),
               ("out", "AddN", ["merge", "read_e", "gather", "gather_nd"]),
               ("gather/axis", "Const", [])]


# (whitelist, blacklist, the variables frozen)
HAND_CASES = [(None, None, {"ref", "res"}), (["res"], None, {"res"}),
              (None, {"res"}, {"ref"}), (["ref", "res"], ["ref"], {"res"}), ([], None, set())]


@pytest.mark.parametrize("case", range(len(HAND_CASES)))
def test_hand_made_graph_def_freezes_as_tf_would(case):
    allow, deny, frozen = HAND_CASES[case]
    sess = _Values(HAND_VALUES)
    out = gp.graph_util.convert_variables_to_constants(sess, HAND_MADE, ["out"], allow, deny)
    fetched = {"ref": "ref:0", "res": "res/Read/ReadVariableOp:0"}
    assert sess.fetched == ([[fetched[n] for n in ("ref", "res") if n in frozen]]
                            if frozen else [])
    nodes = {n.name: n for n in out.node}
    if frozen == {"ref", "res"}:
        assert _nodes(out) == HAND_FROZEN
        assert nodes["sw"].attr["T"].type == gp.float32.enum          # resource -> float
        assert nodes["enter"].attr["T"].type == gp.float32.enum
        assert "_output_shapes" not in nodes["sw"].attr
        assert "_output_shapes" not in nodes["ref/read"].attr
        assert "_class" in nodes["ref/read"].attr and nodes["ref"].device == ""
        assert nodes["gather"].attr["Taxis"].type == gp.int64.enum
        assert nodes["gather/axis"].attr["value"].tensor.int64_val == [0]
        assert nodes["merge"].attr["T"].type == gp.float32.enum
    assert {n for n in ("ref", "res") if nodes[n].op == "Const"} == frozen
    assert (nodes["read_t"].op == "Identity") == ("res" in frozen)
    assert out == tf_result(f"hand_{case}")
    v1 = tf_or_none()
    if v1 is None:
        return
    theirs = v1.graph_util.convert_variables_to_constants(
        _Values(HAND_VALUES), v1.GraphDef.FromString(HAND_MADE.SerializeToString()), ["out"],
        allow, deny)
    assert v1.GraphDef.FromString(out.SerializeToString()) == theirs


@pytest.mark.parametrize("text, error", [
    (f'node {{ name: "v" op: "VariableV2" {_VAR} }} node {{ name: "i" op: "Identity" '
     'input: "v" }', "`index` 0 is out of range for node(i).attr(T), which has 0 elements."),
    (f'node {{ name: "v" op: "VarHandleOp" {_VAR} }} node {{ name: "i" op: "ResourceGather" '
     'input: "v" input: "v" attr { key: "batch_dims" value { i: 1 } } '
     'attr { key: "Tindices" value { type: DT_INT32 } } }',
     "batch_dims must be 0 for freeze_graph, but got node(i).attr('batch_dims') = 1."),
])
def test_value_errors_are_tfs(text, error):
    values = _Values({"v:0": np.zeros(2, np.float32),
                      "v/Read/ReadVariableOp:0": np.zeros(2, np.float32)})
    with pytest.raises(ValueError) as info:
        gp.graph_util.convert_variables_to_constants(values, _graph_def(text), ["i"])
    assert str(info.value) == error
    v1 = tf_or_none()
    if v1 is None:
        return
    with pytest.raises(ValueError) as info:
        v1.graph_util.convert_variables_to_constants(
            values, v1.GraphDef.FromString(_graph_def(text).SerializeToString()), ["i"])
    assert str(info.value) == error


def test_bad_arguments_are_tfs_errors():
    g, sess, _ = _trained_mlp()
    freeze = gp.graph_util.convert_variables_to_constants
    with pytest.raises(TypeError, match="graph_def must be a graph_pb2.GraphDef proto, but "
                                        "got type <class 'dict'>."):
        freeze(sess, {"node": []}, ["y"])
    with pytest.raises(TypeError, match="dest_nodes must be an iterable of strings"):
        freeze(sess, g.as_graph_def(), "y")
    with pytest.raises(AssertionError, match="^nope is not in graph$"):
        freeze(sess, g.as_graph_def(), ["nope"])
    sess.close()


def test_an_uninitialized_variable_fails_as_in_tf():
    g, _, _ = _mlp(gp)
    with g.as_default(), gp.Session(graph=g) as sess:
        with pytest.raises(gp.errors.FailedPreconditionError):
            gp.graph_util.convert_variables_to_constants(sess, g.as_graph_def(), ["y"])


def _tf_graphs(tf, kind):
    """A TF graph of `kind` and its output node names; its variables initialized in the
    returned session."""
    v1 = tf.compat.v1
    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float32, [None, 4], name="x")
        w = v1.get_variable("w", [4, 3], initializer=v1.constant_initializer(W0),
                            use_resource=kind != "ref")
        if kind == "gather":
            out = [tf.identity(tf.gather(w, [2, 0]), name="rows")]
        else:
            out = [tf.nn.relu(tf.matmul(x, w), name="h")]
        p = v1.placeholder_with_default(True, [], name="p")
        if kind in ("ref", "cond_v1", "cond_v2"):
            out.append(v1.cond(p, lambda: tf.identity(w) * 2.0, lambda: w + 1.0, name="c"))
        if kind == "while_v2":
            out += v1.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a + w[i]),
                                 [0, tf.zeros([3])], name="loop")
        init = [v.initializer for v in v1.global_variables()]
    sess = v1.Session(graph=g)
    sess.run(init)
    return g, sess, [t.op.name for t in out]


TF_KINDS = ["resource", "ref", "gather", "cond_v1", "cond_v2", "while_v2"]


def _numbered(graph_def):
    """`graph_def` with its frozen functions' numbers (a process-wide count, in TF too)
    replaced by N."""
    text = re.sub(r"_frozen_\d+", "_frozen_N", text_format.MessageToString(graph_def))
    return text_format.Parse(text, type(graph_def)())


@pytest.mark.parametrize("kind", TF_KINDS)
def test_tf_built_graph_defs_kept_in_data_freeze_as_in_tf(kind):
    """TF's GraphDef (shapes attached), its variables' values and TF's freezing, as
    tests/data/make_graph_util_tf.py kept them: the same freezing here, without TF."""
    with np.load(DATA / "graph_util_tf.npz", allow_pickle=False) as data:
        graph_def = gp.GraphDef.FromString(data[f"{kind}_input"].tobytes())
        names = [str(n) for n in data[f"{kind}_names"]]
        values = _Values({n: data[f"{kind}_value_{i}"] for i, n in enumerate(names)})
        outputs = [str(n) for n in data[f"{kind}_outputs"]]
    ours = gp.graph_util.convert_variables_to_constants(values, graph_def, outputs)
    assert values.fetched == [names]
    assert _numbered(ours) == _numbered(tf_result(f"{kind}_frozen"))


@pytest.mark.parametrize("kind", TF_KINDS)
@pytest.mark.parametrize("add_shapes", [False, True])
def test_tf_built_graphs_freeze_here_as_in_tf(kind, add_shapes, monkeypatch):
    tf = _tf()
    from tensorflow.python.ops import control_flow_util
    monkeypatch.setattr(control_flow_util, "ENABLE_CONTROL_FLOW_V2", kind.endswith("v2"))
    g, sess, outputs = _tf_graphs(tf, kind)
    with sess:
        graph_def = g.as_graph_def(add_shapes=add_shapes)
        theirs = tf.compat.v1.graph_util.convert_variables_to_constants(sess, graph_def,
                                                                        outputs)
        ours = gp.graph_util.convert_variables_to_constants(sess, graph_def, outputs)
    assert _numbered(tf.compat.v1.GraphDef.FromString(ours.SerializeToString())) == \
        _numbered(theirs)
    assert "Const" in {n.op for n in ours.node if n.name == "w"}
    if kind in ("resource", "gather"):
        feeds = {"x:0": X} if kind == "resource" else {}
        target = tf.Graph()
        with target.as_default():
            tf.import_graph_def(theirs, name="")
            with tf.compat.v1.Session(graph=target) as tf_sess:
                want = tf_sess.run([o + ":0" for o in outputs], feeds)
        got = _run_here(ours, [o + ":0" for o in outputs], feeds)
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-6)


@pytest.mark.skipif("VariableV2" not in list_ops(), reason="VariableV2 is not registered yet")
def test_ref_variables_built_here_freeze_to_constants():
    g, y, _ = _mlp(gp, use_resource=False)
    with g.as_default(), gp.Session(graph=g) as sess:
        assert g.get_operation_by_name("w").type == "VariableV2"
        sess.run(gp.global_variables_initializer())
        want = sess.run(y, {"x:0": X})
        frozen = gp.graph_util.convert_variables_to_constants(
            sess, g.as_graph_def(add_shapes=True), ["y"])
    nodes = {n.name: n for n in frozen.node}
    assert nodes["w"].op == nodes["b"].op == "Const"
    assert nodes["w/read"].op == "Identity" and "_output_shapes" not in nodes["w/read"].attr
    assert "VariableV2" not in {n.op for n in frozen.node}
    np.testing.assert_allclose(_run_here(frozen, "y:0", {"x:0": X}), want, rtol=0, atol=1e-6)


def test_a_cond_and_a_loop_reading_a_variable_freeze_into_their_functions():
    g = gp.Graph()
    with g.as_default():
        x = gp.placeholder(gp.float32, [3], name="x")
        p = gp.placeholder_with_default(True, [], name="p")
        w = gp.compat.v1.get_variable("w", [3], initializer=gp.constant_initializer(W0[0]))
        c = gp.cond(p, lambda: x * w, lambda: x + w)
        _, total = gp.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a + w[i]),
                                 [0, gp.zeros([3])])
        gp.identity(c + total, name="y")
        with gp.Session() as sess:
            sess.run(gp.global_variables_initializer())
            feeds = [{"x:0": X[0, :3]}, {"x:0": X[1, :3], "p:0": False}]
            want = [sess.run("y:0", f) for f in feeds]
            frozen = gp.graph_util.convert_variables_to_constants(sess, g.as_graph_def(), ["y"])
    ops = {n.op for n in frozen.node} | {n.op for f in frozen.library.function
                                        for n in f.node_def}
    assert "VarHandleOp" not in ops and "ReadVariableOp" not in ops
    assert all("_frozen_" in f.signature.name for f in frozen.library.function)
    for f, expected in zip(feeds, want):
        np.testing.assert_allclose(_run_here(frozen, "y:0", f), expected, rtol=0, atol=1e-6)
    v1 = tf_or_none()
    if v1 is None:
        return
    target = v1.Graph()
    with target.as_default():
        v1.import_graph_def(v1.GraphDef.FromString(frozen.SerializeToString()), name="")
        with v1.Session(graph=target) as tf_sess:
            for f, expected in zip(feeds, want):
                np.testing.assert_allclose(tf_sess.run("y:0", f), expected, rtol=0, atol=1e-6)
