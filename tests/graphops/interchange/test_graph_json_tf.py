"""GraphDef interchange with TensorFlow itself: TF's JSON imports and runs in graphops,
graphops' JSON parses and runs in TF, tensors are laid out as `make_tensor_proto` does,
and import errors read as TF's."""

import copy
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

tf = pytest.importorskip("tensorflow")
json_format = pytest.importorskip("google.protobuf.json_format")

import graphops as gp  # noqa: E402
from graphops.interchange.graph_def import as_graph_def, import_graph_def  # noqa: E402
from graphops.interchange.graph_json import graph_def_from_json, graph_def_to_json  # noqa: E402
from graphops.registry import errors  # noqa: E402

tf1 = tf.compat.v1
RNG = np.random.default_rng(7)


def _tf_json(graph):
    return json_format.MessageToJson(graph.as_graph_def())


def _tf_parse(text):
    return json_format.Parse(text, tf1.GraphDef())


def _close(got, want):
    scale = max(1.0, float(np.max(np.abs(want))))
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-4 * scale)


def _tf_model():
    """A TF1 graph of ops graphops registers, with its feeds."""
    g = tf.Graph()
    with g.as_default():
        x = tf1.placeholder(tf.float32, [None, 6, 6, 3], name="x")
        w = tf.constant(RNG.standard_normal((3, 3, 3, 4)).astype(np.float32), name="w")
        b = tf.constant(RNG.standard_normal(4).astype(np.float32), name="b")
        scale = tf.constant(0.5, name="scale")
        with tf.name_scope("block"):
            y = tf.nn.conv2d(x, w, strides=[1, 2, 2, 1], padding="SAME")
            y = tf.nn.relu(tf.nn.bias_add(y, b))
        with tf1.control_dependencies([scale.op]):
            z = tf.identity(y, name="z")
        flat = tf.reshape(z, [-1, 3 * 3 * 4])
        dense = tf.matmul(flat, tf.constant(RNG.standard_normal((36, 5)).astype(np.float32)))
        both = tf.concat([dense, dense * scale], axis=1)
        probs = tf.nn.softmax(both, name="probs")
        tf.reduce_sum(probs, axis=[1], name="total")
        dw = tf1.nn.conv3d_backprop_filter_v2(
            tf1.placeholder(tf.float32, [2, 4, 4, 4, 2], name="v"), [2, 2, 2, 2, 3],
            tf1.placeholder(tf.float32, [2, 2, 2, 2, 3], name="dy"), strides=[1, 2, 2, 2, 1],
            padding="VALID", name="dw")
    feeds = {"x:0": RNG.standard_normal((2, 6, 6, 3)).astype(np.float32),
             "v:0": RNG.standard_normal((2, 4, 4, 4, 2)).astype(np.float32),
             "dy:0": RNG.standard_normal((2, 2, 2, 2, 3)).astype(np.float32)}
    return g, ["probs:0", "total:0", "dw:0", "z:0"], feeds, dw


def _tf_run(graph, fetches, feeds):
    with tf1.Session(graph=graph) as sess:
        return sess.run(fetches, feeds)


def _gp_run(graph, fetches, feeds):
    with gp.Session(graph=graph) as sess:
        return sess.run(fetches, feeds)


def test_tf_graph_imports_and_runs_in_graphops():
    g, fetches, feeds, dw = _tf_model()
    want = _tf_run(g, fetches, feeds)
    target = gp.Graph()
    with target.as_default():
        import_graph_def(_tf_json(g), name="")
    got = _gp_run(target, fetches, feeds)
    for a, b in zip(got, want):
        _close(a, b)
    assert target.get_tensor_by_name("dw:0").shape.as_list() == [2, 2, 2, 2, 3]
    assert target.get_tensor_by_name("z:0").op.control_inputs[0].name == "scale"
    assert target.get_tensor_by_name("probs:0").shape.as_list() == [None, 10]


def test_tf_json_reads_and_writes_back_identically():
    g, _, _, _ = _tf_model()
    with g.as_default():
        tf.constant(np.array([True, False]), name="flags")
        tf.constant(np.float16(1.5), name="h")
        tf.constant(np.array([1 + 2j], np.complex64), name="c")
        tf.constant("text", name="s")
    text = _tf_json(g)
    assert json.loads(graph_def_to_json(graph_def_from_json(text))) == json.loads(text)


def test_tf_broadcast_constants_are_expanded():
    g = tf.Graph()
    with g.as_default():
        tf.constant(1.5, shape=[2, 3], name="filled")
    text = _tf_json(g)
    assert json.loads(text)["node"][0]["attr"]["value"]["tensor"]["floatVal"] == [1.5]
    value = graph_def_from_json(text)["node"][0]["attr"]["value"]
    np.testing.assert_array_equal(value, np.full((2, 3), 1.5, np.float32))


def _gp_model():
    g = gp.Graph()
    with g.as_default():
        x = gp.placeholder(gp.float32, [None, 7, 7, 4], name="x")
        w = gp.constant(RNG.standard_normal((3, 3, 4, 2)).astype(np.float32), name="w")
        y = gp.nn.depthwise_conv2d_native(x, w, strides=[1, 1, 1, 1], padding="VALID")
        dw = gp.nn.depthwise_conv2d_native_backprop_filter(
            x, [3, 3, 4, 2], y, strides=[1, 1, 1, 1], padding="VALID", name="dw")
        r = gp.raw_ops.Relu(features=y, name="r")
        with gp.control_dependencies([dw]):
            gp.raw_ops.Mean(input=r * 2.0 - 1.0, axis=[1, 2], name="out")
    feeds = {"x:0": RNG.standard_normal((2, 7, 7, 4)).astype(np.float32)}
    return g, ["out:0", "dw:0"], feeds


def test_graphops_json_parses_and_runs_in_tf():
    g, fetches, feeds = _gp_model()
    want = _gp_run(g, fetches, feeds)
    ours = graph_def_to_json(as_graph_def(g))
    message = _tf_parse(ours)
    assert json.loads(json_format.MessageToJson(message)) == json.loads(ours)
    target = tf.Graph()
    with target.as_default():
        tf.import_graph_def(message, name="")
    got = _tf_run(target, fetches, feeds)
    for a, b in zip(got, want):
        _close(a, b)


def test_round_trip_through_tf_preserves_results():
    g, fetches, feeds = _gp_model()
    want = _gp_run(g, fetches, feeds)
    tf_graph = tf.Graph()
    with tf_graph.as_default():
        tf.import_graph_def(_tf_parse(graph_def_to_json(as_graph_def(g))), name="")
    back = gp.Graph()
    with back.as_default():
        import_graph_def(_tf_json(tf_graph), name="")
    for a, b in zip(_gp_run(back, fetches, feeds), want):
        np.testing.assert_array_equal(a, b)


_DTYPES = [np.float16, np.float32, np.float64, np.int8, np.int16, np.int32, np.int64,
           np.uint8, np.uint16, np.uint32, np.uint64, np.bool_, np.complex64, np.complex128]


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(_DTYPES).flatmap(lambda dt: hnp.arrays(
    dt, hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3))))
def test_tensor_layout_equals_make_tensor_proto(array):
    theirs = json.loads(json_format.MessageToJson(tf.make_tensor_proto(array)))
    gd = {"node": [{"name": "c", "op": "Const", "attr": {"value": array}}]}
    ours = json.loads(graph_def_to_json(gd))["node"][0]["attr"]["value"]["tensor"]
    assert ours == theirs


def test_bfloat16_and_string_tensors_equal_make_tensor_proto():
    for array in (np.array([1.5, -2.0], tf.bfloat16.as_numpy_dtype),
                  np.array(3.0, tf.bfloat16.as_numpy_dtype), np.array([b"ab", b"\xff"])):
        theirs = json.loads(json_format.MessageToJson(tf.make_tensor_proto(array)))
        if array.dtype.kind == "S":
            array = array.astype(object)
        gd = {"node": [{"name": "c", "op": "Const", "attr": {"value": array}}]}
        assert json.loads(graph_def_to_json(gd))["node"][0]["attr"]["value"]["tensor"] == theirs


def _conv_json():
    g = tf.Graph()
    with g.as_default():
        x = tf1.placeholder(tf.float32, [None, 5, 5, 3], name="x")
        w = tf1.placeholder(tf.float32, [2, 2, 3, 4], name="w")
        tf.nn.relu(tf.nn.conv2d(x, w, strides=[1, 1, 1, 1], padding="SAME"), name="r")
    return json.loads(_tf_json(g))


def _set(node, key, value):
    return lambda nodes: nodes[node].__setitem__(key, value)


def _set_attr(node, key, value):
    return lambda nodes: nodes[node]["attr"].__setitem__(key, value)


@pytest.mark.parametrize("change", [
    _set_attr("Conv2D", "strides", {"i": "1"}),
    lambda nodes: nodes["Conv2D"]["attr"].pop("strides"),
    _set_attr("Conv2D", "padding", {"s": "Rk9P"}),
    _set_attr("r", "T", {"type": "DT_STRING"}),
    _set_attr("r", "T", {"type": "DT_DOUBLE"}),
    _set("r", "input", ["nope"]),
    _set("r", "input", ["Conv2D:3"]),
    _set("r", "input", ["Conv2D", "^nope"]),
    _set("r", "input", ["^x", "Conv2D"]),
    _set("r", "input", ["Conv2D", "x"]),
    _set("r", "input", ["r"]),
    _set("Conv2D", "input", ["r", "w"]),
    _set("r", "name", "r!x"),
    _set_attr("w", "shape", {"shape": {"dim": [{"size": "2"}]}}),
    _set_attr("Conv2D", "strides", {"list": {"i": ["1", "1", "1"]}}),
])
def test_import_errors_read_as_tensorflows(change):
    gd = _conv_json()
    change({n["name"]: n for n in gd["node"]})
    text = json.dumps(gd)
    with tf.Graph().as_default(), pytest.raises(ValueError) as tf_error:
        tf.import_graph_def(_tf_parse(text), name="")
    with gp.Graph().as_default(), pytest.raises(errors.InvalidArgumentError) as gp_error:
        import_graph_def(text, name="")
    assert gp_error.value.message.startswith(str(tf_error.value))


def test_unknown_attrs_are_accepted_like_tf():
    gd = _conv_json()
    gd["node"][-1]["attr"]["foo"] = {"i": "1"}
    text = json.dumps(gd)
    with tf.Graph().as_default():
        tf.import_graph_def(_tf_parse(text), name="")
    with gp.Graph().as_default(), pytest.warns(UserWarning, match="attribute foo"):
        import_graph_def(text, name="")


def test_unregistered_tf_op_is_not_found():
    g = tf.Graph()
    with g.as_default():
        tf.raw_ops.AudioSpectrogram(input=tf1.placeholder(tf.float32, [16, 1], name="x"),
                                    window_size=4, stride=2, name="n")
    with gp.Graph().as_default(), pytest.raises(
            errors.NotFoundError, match="Op type not registered 'AudioSpectrogram'"):
        import_graph_def(_tf_json(g))


def test_tf_internal_attrs_are_kept():
    g = tf.Graph()
    with g.as_default():
        s = tf.constant(2.0, name="s")
        with tf1.control_dependencies([s.op]):
            tf.identity(s, name="i")
    gd = json.loads(_tf_json(g))
    assert "_has_manual_control_dependencies" in gd["node"][0]["attr"]
    target = gp.Graph()
    with target.as_default():
        (s2,) = import_graph_def(json.dumps(gd), return_elements=["s"], name="")
    assert s2.get_attr("_has_manual_control_dependencies") is True
    exported = json.loads(graph_def_to_json(as_graph_def(target)))
    assert exported["node"][0]["attr"] == copy.deepcopy(gd["node"][0]["attr"])
