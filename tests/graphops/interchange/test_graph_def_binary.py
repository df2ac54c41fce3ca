"""Binary and text GraphDefs: graphops' own protobuf schema, gp.io files, hostile bytes, the
checked-in frozen CNN (run without TensorFlow), and interchange with TensorFlow's own
protobuf classes and descriptors (those tests skip without TensorFlow)."""

import os
import pathlib
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import graphops as gp
from graphops.interchange.graph_io import graph_def_from_bytes, graph_def_from_text
from graphops.interchange.messages import GraphDef
from graphops.registry import errors
from tests.paths import ROOT


DATA = ROOT / "tests" / "data"
PROTO = ROOT / "graphops" / "interchange" / "proto"
RNG = np.random.default_rng(9)


def _model():
    """A graph with every kind of attr value, a control edge and a device pin."""
    g = gp.Graph()
    with g.as_default():
        x = gp.placeholder(gp.float32, [None, 4, 4, 2], name="x")
        w = gp.constant(RNG.standard_normal((3, 3, 2, 3)).astype(np.float32), name="w")
        y = gp.raw_ops.Conv2D(input=x, filter=w, strides=[1, 1, 1, 1], padding="SAME",
                              name="conv")
        with gp.device("/cpu:0"), gp.control_dependencies([w]):
            r = gp.raw_ops.Relu(features=y, name="relu")
        m = gp.raw_ops.Mean(input=r, axis=[1, 2], name="mean")
        gp.raw_ops.Softmax(logits=m * np.float32(0.5), name="probs")
        gp.constant(np.array([b"a", b"\xff"], object), name="strings")
        gp.constant(np.float16(1.5), name="half")
    return g


def _run(graph, fetch, feeds):
    with gp.Session(graph=graph) as sess:
        return sess.run(fetch, feeds)


def _imported(graph_def):
    g = gp.Graph()
    with g.as_default():
        gp.import_graph_def(graph_def, name="")
    return g


def _same(a, b):
    """GraphDef dicts equal, arrays by value."""
    assert gp.io.graph_def_to_proto(a) == gp.io.graph_def_to_proto(b)


FEED = {"x:0": RNG.standard_normal((2, 4, 4, 2)).astype(np.float32)}


# ----------------------------------------------------------------------------- round trips


def test_binary_round_trip_is_lossless_and_runs_the_same():
    g = _model()
    gd = g.as_graph_def()
    data = gp.io.graph_def_to_proto(g).SerializeToString()
    back = graph_def_from_bytes(data)
    _same(back, gd)
    np.testing.assert_array_equal(_run(_imported(back), "probs:0", FEED),
                                  _run(g, "probs:0", FEED))
    assert back["node"][0] == {"name": "x", "op": "Placeholder", "input": [], "device": "",
                               "attr": {"dtype": gp.float32,
                                        "shape": gp.TensorShape([None, 4, 4, 2])}}


_DTYPES = [np.float16, np.float32, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8,
           np.uint16, np.uint32, np.uint64, np.bool_, np.complex64, np.complex128]


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(_DTYPES).flatmap(lambda dt: hnp.arrays(
    dt, hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3))))
def test_tensors_survive_bytes_and_text(array):
    gd = {"node": [{"name": "c", "op": "Const", "attr": {"value": array,
                                                         "dtype": gp.as_dtype(array.dtype)}}]}
    proto = gp.io.graph_def_to_proto(gd)
    for back in (graph_def_from_bytes(proto.SerializeToString()),
                 graph_def_from_text(str(proto))):
        value = back["node"][0]["attr"]["value"]
        assert value.dtype == array.dtype and value.shape == array.shape
        np.testing.assert_array_equal(value, array)


@pytest.mark.parametrize("name, as_text", [("g.pb", False), ("g.pbtxt", True),
                                           ("g.prototxt", True)])
def test_write_graph_and_read_graph_def(tmp_path, name, as_text):
    g = _model()
    path = gp.io.write_graph(g, str(tmp_path / "logs"), name, as_text=as_text)
    assert path == os.path.join(str(tmp_path / "logs"), name)
    raw = pathlib.Path(path).read_bytes()
    assert raw.startswith(b'node {\n  name: "x"') == as_text
    assert sorted(p.name for p in pathlib.Path(path).parent.iterdir()) == [pathlib.Path(name).name]
    back = gp.io.read_graph_def(path)
    _same(back, g.as_graph_def())
    np.testing.assert_array_equal(_run(_imported(back), "probs:0", FEED),
                                  _run(g, "probs:0", FEED))


def test_json_files_and_messages_are_accepted_too(tmp_path):
    g = _model()
    path = tmp_path / "g.json"
    path.write_text(gp.graph_def_to_json(g.as_graph_def()))
    _same(gp.io.read_graph_def(path), g.as_graph_def())
    message = gp.io.graph_def_to_proto(g.as_graph_def())
    assert isinstance(message, GraphDef) and gp.io.graph_def_to_proto(message) is message
    np.testing.assert_array_equal(_run(_imported(message), "probs:0", FEED),
                                  _run(g, "probs:0", FEED))
    written = gp.io.write_graph(message, str(tmp_path), "m.pb", as_text=False)
    assert pathlib.Path(written).read_bytes() == message.SerializeToString(deterministic=True)


# ----------------------------------------------------------------------------- hostile input

_VALID = (DATA / "small_cnn_frozen.pb").read_bytes()


def _read_hostile(data):
    """Parsing and importing hostile bytes may only fail with typed errors: malformed input is
    InvalidArgumentError; a well-formed tensor too big for the memory budget is
    ResourceExhaustedError (before allocating); an import of a well-formed but meaningless
    GraphDef is an OpError."""
    with gp.config.memory_budget(2**24):
        try:
            graph_def = graph_def_from_bytes(data)
        except (errors.InvalidArgumentError, errors.ResourceExhaustedError):
            return
        with gp.Graph().as_default():
            try:
                gp.import_graph_def(graph_def)
            except errors.OpError:
                pass


def test_truncated_or_overlong_bytes_are_invalid_argument():
    for data in (_VALID[:-1],                              # the last field cut short
                 _VALID + b"\xff" * 10 + b"\x01"):          # then an 11-byte varint tag
        with pytest.raises(errors.InvalidArgumentError, match="Invalid binary GraphDef"):
            graph_def_from_bytes(data)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, len(_VALID) - 1))
def test_truncated_bytes_give_typed_errors(cut):
    """A cut may fall where the prefix is itself a valid GraphDef; never an untyped error."""
    _read_hostile(_VALID[:cut])


@pytest.mark.filterwarnings("ignore::UserWarning")   # mutated attr names: TF warns, so do we
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, len(_VALID) - 1), st.integers(0, 255)),
                min_size=1, max_size=8))
def test_mutated_bytes_give_typed_errors_only(changes):
    data = bytearray(_VALID)
    for at, value in changes:
        data[at] = value
    _read_hostile(bytes(data))


def _varint(n):
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def _field(number, payload):
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


@pytest.mark.parametrize("data, error, message", [
    (b"\x0a\x05abc", errors.InvalidArgumentError, "Invalid binary GraphDef"),
    (_field(1, b"\x08\x01"), errors.InvalidArgumentError,
     "GraphDef.node[0].name has wire type 0, which does not fit its type"),
    (_field(1, _field(1, b"\xff\xfe")), errors.InvalidArgumentError, "Invalid binary GraphDef"),
    (_field(1, _field(5, _field(1, b"k") + _field(2, b"\x30\x63"))), errors.InvalidArgumentError,
     "Invalid GraphDef at GraphDef.node[0].attr[k].type: invalid enum value 99"),
    (_field(1, _field(5, _field(1, b"v") + _field(2, _field(8, b"\x08\x01" + _field(
        2, _field(2, b"\x08" + _varint(2**40))) + b"\x2d\x00\x00\x80\x3f")))),
     errors.ResourceExhaustedError, "OOM when allocating"),
    (_field(1, _field(5, _field(1, b"v") + _field(2, _field(8, b"\x08\x01" + _field(
        2, _field(2, b"\x08\x04")) + _field(4, b"\x00" * 15))))), errors.InvalidArgumentError,
     "tensor_content holds 15 bytes, expected 16 for a float tensor of shape [4]"),
    (_field(1, _field(5, _field(1, b"v") + _field(2, _field(8, b"\x08\x01" + _field(
        2, _field(2, b"\x08" + _varint(2**63 - 1)) * 2))))), errors.InvalidArgumentError, ""),
    (b"\x0a" + _varint(2**31), errors.InvalidArgumentError, "Invalid binary GraphDef"),
])
def test_malformed_fields_are_typed_errors(data, error, message):
    with pytest.raises(error) as info:
        graph_def_from_bytes(data)
    assert type(info.value) is error and message in info.value.message


def test_unknown_field_numbers_are_ignored_as_tf_does():
    node = _field(1, b"r") + _field(2, b"NoOp") + b"\xa0\x06\x01"     # + field 100 = 1
    assert graph_def_from_bytes(_field(1, node))["node"] == [
        {"name": "r", "op": "NoOp", "input": [], "device": "", "attr": {}}]


def test_deep_nesting_is_refused():
    nested = b""
    for _ in range(300):    # AttrValue.func -> NameAttrList.attr -> AttrValue ...
        nested = _field(10, _field(2, _field(1, b"a") + _field(2, nested)))
    data = _field(1, _field(5, _field(1, b"k") + _field(2, nested)))
    with pytest.raises(errors.InvalidArgumentError, match="Invalid binary GraphDef"):
        graph_def_from_bytes(data)


@pytest.mark.parametrize("text, message", [
    ("node { name: 'a' ", "Invalid GraphDef text"),
    ("node { nam: 'a' }", 'Message type "tensorflow.NodeDef" has no field named "nam"'),
    ("node { attr { key: 'k' value { i: 'x' } } }", "Couldn't parse integer"),
    ("versions { producer: 99999999999 }", "Value out of range: 99999999999"),
    ("node { attr { key: 'k' value { type: DT_NOPE } } }", "DT_NOPE"),
])
def test_malformed_text_is_invalid_argument(text, message):
    with pytest.raises(errors.InvalidArgumentError) as info:
        graph_def_from_text(text)
    assert message in info.value.message


def test_files_beyond_the_memory_budget_are_refused_unread(tmp_path):
    path = tmp_path / "big.pb"
    path.write_bytes(_VALID)
    with gp.config.memory_budget(len(_VALID) - 1), \
            pytest.raises(errors.ResourceExhaustedError, match="OOM when allocating"):
        gp.io.read_graph_def(path)


# ----------------------------------------------------------------------------- frozen CNN


def test_frozen_keras_cnn_runs_without_tensorflow():
    """TF wrote it (tests/data/make_small_cnn_frozen.py); TF computed the reference."""
    reference = np.load(DATA / "small_cnn_frozen.npz")
    graph_def = gp.io.read_graph_def(DATA / "small_cnn_frozen.pb")
    g = _imported(graph_def)
    ops = {op.type for op in g.get_operations()}
    assert {"SpaceToBatchND", "BatchToSpaceND", "Relu6", "MaxPool", "AvgPool",
            "DepthwiseConv2dNative", "Conv2DBackpropInput", "ResizeBilinear",
            "StridedSlice"} <= ops
    got = _run(g, str(reference["output_name"]), {str(reference["input_name"]):
                                                   reference["images"]})
    np.testing.assert_allclose(got, reference["probs"], rtol=0, atol=1e-5)


def test_tf_written_training_step_runs_without_tensorflow():
    """The loss and the gradients TF's gradient functions wrote (MaxPoolGrad, AvgPoolGrad,
    Relu6Grad, ResizeBilinearGrad, BiasAddGrad, the conv backprops, ...) match TF's values."""
    reference = np.load(DATA / "small_cnn_frozen.npz")
    g = _imported(gp.io.read_graph_def(DATA / "small_cnn_train_step.pb"))
    ops = {op.type for op in g.get_operations()}
    assert {"MaxPoolGrad", "AvgPoolGrad", "Relu6Grad", "ReluGrad", "ResizeBilinearGrad",
            "BiasAddGrad", "Conv2DBackpropFilter", "DepthwiseConv2dNativeBackpropFilter",
            "GatherV2", "ShapeN", "BroadcastTo", "Prod"} <= ops
    outputs = [str(name) for name in reference["step_outputs"]]
    got = _run(g, outputs, {str(reference["step_input"]): reference["images"],
                            str(reference["step_labels"]): reference["labels"]})
    for i, value in enumerate(got):
        want = reference[f"step_value_{i}"]
        np.testing.assert_allclose(value, want, rtol=0,
                                   atol=1e-4 * max(1.0, float(np.abs(want).max())))


# ----------------------------------------------------------------------------- the schema


def test_generated_code_matches_the_protobuf_lower_bound():
    bound = re.search(r'"protobuf>=([\d.]+)"', (ROOT / "pyproject.toml").read_text()).group(1)
    for module in PROTO.glob("*_pb2.py"):
        text = module.read_text()
        assert f"# Protobuf Python Version: {bound}\n" in text, module.name
        assert "_descriptor_pool.Default()" not in text, module.name   # our own pool


def test_generated_modules_are_what_regenerate_writes(tmp_path):
    pytest.importorskip("grpc_tools")
    copy = tmp_path / "graphops" / "interchange" / "proto"
    shutil.copytree(PROTO, copy, ignore=shutil.ignore_patterns("*_pb2.py", "__pycache__"))
    subprocess.run(["sh", str(copy / "regenerate.sh")], check=True,
                   env={**os.environ, "PYTHON": sys.executable})
    for module in PROTO.glob("*_pb2.py"):
        assert (copy / module.name).read_text() == module.read_text(), module.name


def _tf():
    return pytest.importorskip("tensorflow")


def _messages(descriptor, seen):
    if descriptor.full_name not in seen:
        seen[descriptor.full_name] = descriptor
        for field in descriptor.fields:
            if field.message_type is not None:
                _messages(field.message_type, seen)
        for nested in descriptor.nested_types:
            _messages(nested, seen)
    return seen


def test_schema_fields_match_tensorflows_descriptors():
    _tf()
    from tensorflow.core.framework import graph_pb2, op_def_pb2

    from graphops.interchange.proto.op_def_pb2 import OpList

    ours = _messages(OpList.DESCRIPTOR, _messages(GraphDef.DESCRIPTOR, {}))
    theirs = _messages(op_def_pb2.OpList.DESCRIPTOR, _messages(graph_pb2.GraphDef.DESCRIPTOR, {}))
    assert set(ours) == set(theirs)
    for name, message in ours.items():
        tf_fields = theirs[name].fields_by_name
        assert set(message.fields_by_name) == set(tf_fields), name
        for field in message.fields:
            other = tf_fields[field.name]
            assert (field.number, field.type, field.is_repeated, field.has_presence,
                    field.is_packed) == (other.number, other.type, other.is_repeated,
                                         other.has_presence, other.is_packed), \
                f"{name}.{field.name}"
            for kind in ("message_type", "enum_type"):
                mine, tfs = getattr(field, kind), getattr(other, kind)
                assert (mine and mine.full_name) == (tfs and tfs.full_name), f"{name}.{field.name}"
                if kind == "enum_type" and mine:
                    assert [(v.name, v.number) for v in mine.values] == \
                        [(v.name, v.number) for v in tfs.values]
        assert [(o.name, [f.name for f in o.fields]) for o in message.oneofs
                if not o.name.startswith("_")] == \
            [(o.name, [f.name for f in o.fields]) for o in theirs[name].oneofs
             if not o.name.startswith("_")], name


# ----------------------------------------------------------------------------- TensorFlow


def _tf_model(tf):
    tf1 = tf.compat.v1
    g = tf.Graph()
    with g.as_default():
        x = tf1.placeholder(tf.float32, [None, 4, 4, 2], name="x")
        w = tf.constant(RNG.standard_normal((3, 3, 2, 3)).astype(np.float32))
        y = tf.nn.relu(tf.nn.conv2d(x, w, strides=1, padding="SAME"))
        tf.nn.softmax(tf.reduce_mean(y, axis=[1, 2]) * 0.5, name="probs")
        tf.constant(np.float16(1.5), name="half")
        tf.constant([b"a", b"\xff"], name="strings")
    return g


@pytest.mark.parametrize("as_text", [False, True])
def test_tf_written_files_read_and_run_here(tmp_path, as_text):
    tf = _tf()
    g = _tf_model(tf)
    name = "tf.pbtxt" if as_text else "tf.pb"
    path = tf.io.write_graph(g, str(tmp_path), name, as_text=as_text)
    with tf.compat.v1.Session(graph=g) as sess:
        want = sess.run("probs:0", FEED)
    ours = _imported(gp.io.read_graph_def(path))
    np.testing.assert_allclose(_run(ours, "probs:0", FEED), want, rtol=1e-5, atol=1e-6)
    assert ours.as_graph_def().node[0].name == "x"


@pytest.mark.parametrize("as_text", [False, True])
def test_our_files_parse_and_run_in_tf(tmp_path, as_text):
    tf = _tf()
    g = _model()
    want = _run(g, "probs:0", FEED)
    path = gp.io.write_graph(g, str(tmp_path), "ours.pb", as_text=as_text)
    data = pathlib.Path(path).read_bytes()
    graph_def = tf.compat.v1.GraphDef()
    if as_text:
        from google.protobuf import text_format
        text_format.Parse(data.decode(), graph_def)
    else:
        graph_def = tf.compat.v1.GraphDef.FromString(data)
    assert graph_def.SerializeToString(deterministic=True) == \
        gp.io.graph_def_to_proto(g).SerializeToString(deterministic=True)
    target = tf.Graph()
    with target.as_default():
        tf.import_graph_def(graph_def, name="")
    with tf.compat.v1.Session(graph=target) as sess:
        got = sess.run("probs:0", FEED)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_tf_message_text_equals_ours():
    tf = _tf()
    from google.protobuf import text_format

    g = _tf_model(tf)
    theirs = g.as_graph_def()
    ours = gp.io.graph_def_to_proto(theirs)
    assert text_format.MessageToString(ours) == text_format.MessageToString(theirs)
    assert gp.io.graph_def_to_proto(graph_def_from_bytes(theirs.SerializeToString())) == ours
