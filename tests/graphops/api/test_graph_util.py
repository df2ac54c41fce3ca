"""gp.graph_util (TF1's tf.graph_util) on GraphDef messages: extract_sub_graph and
remove_training_nodes give the nodes written out below and equal what TF 2.21's
tf.compat.v1.graph_util gives for the same GraphDefs, quirks included (compared with TF where
it is installed, and with TF's results kept in tests/data/graph_util_tf.npz everywhere);
must_run_on_cpu, tensor_shape_from_node_def_name and the error cases with TF's wording.
Freezing is in test_graph_util_freeze.py."""

import numpy as np
import pytest
from google.protobuf import text_format

import graphops as gp
from tests.paths import ROOT

DATA = ROOT / "tests" / "data"


def _graph_def(text):
    graph_def = gp.GraphDef()
    text_format.Parse(text, graph_def)
    return graph_def


def tf_result(key):
    """TF's result for case `key`, from tests/data/graph_util_tf.npz (written by
    tests/data/make_graph_util_tf.py), so that CI without TF compares with it too."""
    with np.load(DATA / "graph_util_tf.npz", allow_pickle=False) as data:
        return gp.GraphDef.FromString(data[key].tobytes())


def _nodes(graph_def):
    return [(n.name, n.op, list(n.input)) for n in graph_def.node]


def _tf():
    tf = pytest.importorskip("tensorflow")
    return tf.compat.v1


def tf_or_none():
    """tf.compat.v1 where TF is installed, else None (the test then checks the rest)."""
    try:
        return _tf()
    except pytest.skip.Exception:
        return None


def _as_tf(v1, graph_def):
    return v1.GraphDef.FromString(graph_def.SerializeToString())


def _same_as_tf(v1, ours, theirs):
    """Our message equals TF's, field for field (attr maps compare as maps)."""
    assert _as_tf(v1, ours) == theirs
    assert type(ours) is gp.GraphDef


_F = 'attr { key: "T" value { type: DT_FLOAT } }'
_PLACEHOLDER = 'op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } }'

SUB_GRAPH = _graph_def(f"""
node {{ name: "a" {_PLACEHOLDER} }}
node {{ name: "b" {_PLACEHOLDER} }}
node {{ name: "c" op: "Relu" input: "a" {_F} }}
node {{ name: "d" op: "Neg" input: "b" input: "^a" {_F} }}
node {{ name: "e" op: "Relu" input: "c:0" {_F}
        attr {{ key: "_class" value {{ list {{ s: "loc:@b" }} }} }} }}
node {{ name: "f" op: "Exp" input: "a" {_F} }}
node {{ name: "g" op: "AddV2" input: "d" input: "c" {_F} }}
library {{ function {{ signature {{ name: "unused_fn" }} }} }}
versions {{ producer: 27 min_consumer: 12 }}
""")


@pytest.mark.parametrize("dest, kept", [
    (["e"], ["a", "b", "c", "e"]),                 # b: e colocates with it
    (["g"], ["a", "b", "c", "d", "g"]),            # a: d's control input
    (("f", "c"), ["a", "c", "f"]),
    (["b"], ["b"]),
])
def test_extract_sub_graph_keeps_what_the_destinations_need(dest, kept):
    out = gp.graph_util.extract_sub_graph(SUB_GRAPH, dest)
    assert [n.name for n in out.node] == kept
    assert out.node[-1] == {n.name: n for n in SUB_GRAPH.node}[kept[-1]]
    assert out.library == SUB_GRAPH.library and out.versions.producer == 27
    assert out.versions.min_consumer == 12 and out.HasField("library")
    assert out.node[0] is not SUB_GRAPH.node[0]       # copies: the input stays as it was
    assert len(SUB_GRAPH.node) == 7


EXTRACTIONS = [["e"], ["g"], ["f", "c"], ["b"]]
PROTECTIONS = [None, ["prot"], ["prot", "check"]]


def _equals_tensorflows(function, graph_def, arg, recorded):
    """graph_util.<function>(graph_def, arg) here equals TF's recorded result and, where TF
    is installed, TF's own."""
    ours = getattr(gp.graph_util, function)(graph_def, arg)
    assert ours == tf_result(recorded)
    v1 = tf_or_none()
    if v1 is None:
        return
    theirs = getattr(v1.graph_util, function)(_as_tf(v1, graph_def), arg)
    _same_as_tf(v1, ours, theirs)


@pytest.mark.parametrize("case", range(len(EXTRACTIONS)))
def test_extract_sub_graph_equals_tensorflows(case):
    _equals_tensorflows("extract_sub_graph", SUB_GRAPH, EXTRACTIONS[case], f"extract_{case}")


def _error(call):
    with pytest.raises(Exception) as info:
        call()
    return type(info.value), str(info.value)


@pytest.mark.parametrize("call", [
    lambda gu, gd: gu.extract_sub_graph(gd, ["nope"]),
    lambda gu, gd: gu.extract_sub_graph(gd, "e"),
    lambda gu, gd: gu.extract_sub_graph({"node": []}, ["e"]),
    lambda gu, gd: gu.extract_sub_graph(None, ["e"]),
    lambda gu, gd: gu.remove_training_nodes([], None),
])
def test_errors_are_tensorflows(call):
    got = _error(lambda: call(gp.graph_util, SUB_GRAPH))
    assert got in [(AssertionError, "nope is not in graph"),
                   (TypeError, "dest_nodes must be an iterable of strings, but got type "
                               "<class 'str'>."),
                   (TypeError, "graph_def must be a graph_pb2.GraphDef proto, but got type "
                               "<class 'dict'>."),
                   (TypeError, "graph_def must be a graph_pb2.GraphDef proto, but got type "
                               "<class 'NoneType'>."),
                   (TypeError, "input_graph must be a graph_pb2.GraphDef proto, but got type "
                               "<class 'list'>.")]
    if got[1].startswith("input_graph"):
        return                  # TF fails later there, on `.node` (an AttributeError)
    v1 = tf_or_none()
    if v1 is None:
        return
    gd = _as_tf(v1, SUB_GRAPH)
    with pytest.raises(got[0]) as info:
        call(v1.graph_util, gd)
    assert str(info.value) == got[1]


def test_a_dangling_input_is_a_typed_error():
    broken = _graph_def(f'node {{ name: "x" op: "Relu" input: "ghost" {_F} }}')
    with pytest.raises(gp.errors.InvalidArgumentError, match="ghost is not in graph"):
        gp.graph_util.extract_sub_graph(broken, ["x"])


TRAINING = _graph_def(f"""
node {{ name: "a" {_PLACEHOLDER} }}
node {{ name: "check" op: "CheckNumerics" input: "a" {_F}
        attr {{ key: "message" value {{ s: "bad" }} }} }}
node {{ name: "add" op: "AddV2" input: "a" input: "check" {_F} }}
node {{ name: "i1" op: "Identity" input: "add" {_F} }}
node {{ name: "i2" op: "Identity" input: "i1" {_F} }}
node {{ name: "sg" op: "StopGradient" input: "i2" {_F} }}
node {{ name: "mul" op: "Mul" input: "sg" input: "i1:0" {_F} }}
node {{ name: "ctl_src" op: "Identity" input: "a" {_F} }}
node {{ name: "guarded" op: "Identity" input: "mul" input: "^ctl_src" {_F} }}
node {{ name: "coloc" op: "Identity" input: "a" {_F} }}
node {{ name: "relu" op: "Relu" input: "coloc" {_F}
        attr {{ key: "_class" value {{ list {{ s: "loc:@coloc" }} }} }} }}
node {{ name: "prot" op: "Identity" input: "guarded" {_F} }}
node {{ name: "out" op: "Identity" input: "prot" {_F} }}
node {{ name: "after" op: "NoOp" input: "^check" input: "^out" }}
versions {{ producer: 27 }}
""")

# TF's pruning, quirks included: an input from a CheckNumerics node is dropped (not
# rewired), "i1:0" is not followed (only plain names are), control edges (either way) and
# colocation keep an Identity, and the result carries no versions or library.
PRUNED = [("a", "Placeholder", []), ("add", "AddV2", ["a"]), ("mul", "Mul", ["add", "i1:0"]),
          ("ctl_src", "Identity", ["a"]), ("guarded", "Identity", ["mul", "^ctl_src"]),
          ("coloc", "Identity", ["a"]), ("relu", "Relu", ["coloc"]),
          ("prot", "Identity", ["guarded"]), ("out", "Identity", ["prot"]),
          ("after", "NoOp", ["^out"])]


@pytest.mark.parametrize("protected", [["prot"], ("prot", "check")])
def test_remove_training_nodes(protected):
    out = gp.graph_util.remove_training_nodes(TRAINING, protected_nodes=protected)
    expected = list(PRUNED)
    if "check" in protected:     # kept: the nodes reading it keep their input
        expected[1] = ("add", "AddV2", ["a", "check"])
        expected.insert(1, ("check", "CheckNumerics", ["a"]))
        expected[-1] = ("after", "NoOp", ["^check", "^out"])
    assert _nodes(out) == expected
    assert not out.HasField("versions") and not out.HasField("library")
    assert out.node[-2].attr["T"].type == gp.float32.enum


def test_remove_training_nodes_without_protection_splices_the_output_identity():
    out = gp.graph_util.remove_training_nodes(TRAINING)
    assert ("prot", "Identity", ["guarded"]) not in _nodes(out)
    assert ("after", "NoOp", ["^out"]) in _nodes(out)     # used as a control input: kept
    assert ("out", "Identity", ["guarded"]) in _nodes(out)


@pytest.mark.parametrize("case", range(len(PROTECTIONS)))
def test_remove_training_nodes_equals_tensorflows(case):
    _equals_tensorflows("remove_training_nodes", TRAINING, PROTECTIONS[case], f"prune_{case}")


def test_an_identity_cycle_is_a_typed_error():
    cycle = _graph_def(f"""
    node {{ name: "p" op: "Identity" input: "q" {_F} }}
    node {{ name: "q" op: "Identity" input: "p" {_F} }}
    node {{ name: "r" op: "Relu" input: "p" {_F} }}""")
    with pytest.raises(gp.errors.InvalidArgumentError, match="Identity nodes in a cycle"):
        gp.graph_util.remove_training_nodes(cycle)


def _node_def(op, **types):
    node = gp.NodeDef(name="n", op=op)
    for key, dtype in types.items():
        node.attr[key].type = dtype.enum
    return node


@pytest.mark.parametrize("node, pin, expected", [
    (_node_def("Const", dtype=gp.int32), False, True),
    (_node_def("Const", dtype=gp.string), False, True),
    (_node_def("Const", dtype=gp.float32), False, False),
    (_node_def("DynamicStitch", T=gp.int32), False, True),
    (_node_def("ParallelDynamicStitch", T=gp.float32), False, False),
    (_node_def("Cast", SrcT=gp.int32, DstT=gp.float32), False, True),
    (_node_def("Cast", SrcT=gp.float32, DstT=gp.int32), False, False),
    (_node_def("VariableV2", dtype=gp.float32), False, False),
    (_node_def("VariableV2", dtype=gp.float32), True, True),
    (_node_def("Assign", T=gp.float32), True, True),
    (_node_def("VarHandleOp", dtype=gp.float32), True, False),
])
def test_must_run_on_cpu(node, pin, expected):
    assert gp.graph_util.must_run_on_cpu(node, pin_variables_on_cpu=pin) is expected
    v1 = tf_or_none()
    if v1 is None:
        return
    theirs = v1.NodeDef.FromString(node.SerializeToString())
    assert v1.graph_util.must_run_on_cpu(theirs, pin_variables_on_cpu=pin) is expected


def test_must_run_on_cpu_reads_operations_and_refuses_other_things():
    g = gp.Graph()
    with g.as_default():
        i = gp.constant(3, name="i")
        f = gp.cast(i, gp.float32)
        x = gp.constant(1.5)
    assert [gp.graph_util.must_run_on_cpu(t.op) for t in (i, f, x)] == [True, True, False]
    with pytest.raises(AssertionError):
        gp.graph_util.must_run_on_cpu("Const")


def test_tensor_shape_from_node_def_name():
    g = gp.Graph()
    with g.as_default():
        x = gp.placeholder(gp.float32, [None, 3], name="x")
        gp.split(gp.concat([x, x], 0), 2, axis=0, name="parts")
    shape = gp.graph_util.tensor_shape_from_node_def_name
    assert shape(g, "x").as_list() == [None, 3]
    assert shape(g, "parts:1").as_list() == [None, 3]
    with pytest.raises(KeyError, match="parts:2"):
        shape(g, "parts:2")


def test_names_as_tensorflow_exposes_them():
    assert gp.compat.v1.graph_util is gp.graph_util
    assert gp.graph_util.import_graph_def is gp.import_graph_def
    assert gp.compat.v1.GraphDef is gp.GraphDef
    assert {"convert_variables_to_constants", "extract_sub_graph", "remove_training_nodes",
            "must_run_on_cpu", "tensor_shape_from_node_def_name",
            "import_graph_def"} <= set(dir(gp.graph_util))
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        gp.graph_util.nope
    gd = gp.GraphDef()
    gd.node.add(name="x", op="NoOp")
    assert gp.GraphDef.FromString(gd.SerializeToString()).node[0].name == "x"
    assert gp.AttrValue(i=3).i == 3


def test_signatures_are_tensorflows():
    import inspect

    v1 = _tf()
    for name in ("convert_variables_to_constants", "extract_sub_graph",
                 "remove_training_nodes", "must_run_on_cpu", "tensor_shape_from_node_def_name"):
        theirs = inspect.signature(inspect.unwrap(getattr(v1.graph_util, name)))
        assert inspect.signature(getattr(gp.graph_util, name)) == theirs, name
    for ours, theirs in ((gp.train.write_graph, v1.train.write_graph),
                         (gp.io.write_graph, v1.io.write_graph)):
        assert inspect.signature(ours) == inspect.signature(inspect.unwrap(theirs))
    assert list(inspect.signature(gp.Graph.as_graph_def).parameters) == \
        list(inspect.signature(v1.Graph.as_graph_def).parameters)
