"""GraphDef export/import and the protobuf JSON mapping, without TensorFlow.

Expected JSON is written out by hand from the proto3 JSON rules (camelCase, int64 as
strings, defaults omitted, little-endian base64 tensor_content); TF's own output is checked
in test_graph_json_tf.py.
"""

import base64
import builtins
import copy
import json
import pickle
import struct
import warnings

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import graphops as gp
from graphops.interchange.graph_def import GRAPH_DEF_VERSION, as_graph_def, import_graph_def
from graphops.interchange.graph_json import graph_def_from_json, graph_def_to_json
from graphops.interchange.messages import tensor_from_proto, tensor_to_proto
from graphops.registry import errors
from graphops.registry.tensor_shape import TensorShape


def _small_graph():
    g = gp.Graph()
    with g.as_default():
        x = gp.placeholder(gp.float32, [None, 3], name="x")
        c = gp.constant(np.array([[1.0, -2.0, 3.0]], np.float32), name="c")
        with gp.device("/cpu:0"):
            y = gp.raw_ops.AddV2(x=x, y=c, name="y")
        with gp.control_dependencies([c]):
            r = gp.raw_ops.Relu(features=y, name="r")
        loss = gp.raw_ops.SoftmaxCrossEntropyWithLogits(features=r, labels=y, name="xent")
        out = gp.raw_ops.Sum(input=loss[1], axis=[1], name="out")
    return g, x, out


def _run(graph, fetch, feeds):
    with gp.Session(graph=graph) as sess:
        return sess.run(fetch, feeds)


def _node(gd, name):
    return next(n for n in gd["node"] if n["name"] == name)


def _assert_graph_defs_equal(a, b):
    assert a["versions"] == b["versions"]
    assert [n["name"] for n in a["node"]] == [n["name"] for n in b["node"]]
    for na, nb in zip(a["node"], b["node"]):
        assert {k: v for k, v in na.items() if k != "attr"} == \
            {k: v for k, v in nb.items() if k != "attr"}
        assert na["attr"].keys() == nb["attr"].keys()
        for key, va in na["attr"].items():
            vb = nb["attr"][key]
            if isinstance(va, np.ndarray):
                assert va.dtype == vb.dtype and va.shape == vb.shape
                np.testing.assert_array_equal(va, vb)
            else:
                assert va == vb and type(va) is type(vb), key


# ----------------------------------------------------------------------------- export


def test_as_graph_def_structure():
    g, _, _ = _small_graph()
    gd = as_graph_def(g)
    assert gd["versions"] == {"producer": GRAPH_DEF_VERSION, "min_consumer": 0}
    assert [n["name"] for n in gd["node"]] == [
        "x", "c", "y", "r", "xent", "out/reduction_indices", "out"]
    assert _node(gd, "y") == {"name": "y", "op": "AddV2", "input": ["x", "c"],
                              "device": "/device:CPU:0", "attr": {"T": gp.float32}}
    assert _node(gd, "r")["input"] == ["y", "^c"]
    assert _node(gd, "out")["input"] == ["xent:1", "out/reduction_indices"]
    assert _node(gd, "out")["attr"] == {"T": gp.float32, "Tidx": gp.int32, "keep_dims": False}
    assert _node(gd, "x")["attr"] == {"dtype": gp.float32, "shape": TensorShape([None, 3])}


def test_control_inputs_exported_with_caret():
    g = gp.Graph()
    with g.as_default():
        a = gp.constant(1.0, name="a")
        b = gp.constant(2.0, name="b")
        with gp.control_dependencies([a]):
            gp.raw_ops.Identity(input=b, name="c")
    assert _node(as_graph_def(g), "c")["input"] == ["b", "^a"]


def test_add_shapes_records_output_shapes():
    g, _, _ = _small_graph()
    gd = as_graph_def(g, add_shapes=True)
    assert _node(gd, "xent")["attr"]["_output_shapes"] == [TensorShape([None]),
                                                            TensorShape([None, 3])]
    assert "_output_shapes" not in as_graph_def(g)["node"][0]["attr"]


def test_json_text_follows_the_proto3_mapping():
    g = gp.Graph()
    with g.as_default():
        gp.placeholder(gp.float32, [None, 0, 2], name="x")
        gp.constant(np.float32(2.5), name="s")
        gp.constant(np.array([1, 2], np.int32), name="v")
        gp.raw_ops.Sum(input=gp.constant(np.ones((2, 2), np.float64), name="m"),
                       axis=gp.constant(np.array(1, np.int64), name="axis"),
                       keep_dims=False, name="sum")
    got = json.loads(graph_def_to_json(as_graph_def(g)))
    content = base64.b64encode(struct.pack("<2i", 1, 2)).decode()
    ones = base64.b64encode(struct.pack("<4d", 1, 1, 1, 1)).decode()
    assert got == {"node": [
        {"name": "x", "op": "Placeholder", "attr": {
            "dtype": {"type": "DT_FLOAT"},
            "shape": {"shape": {"dim": [{"size": "-1"}, {}, {"size": "2"}]}}}},
        {"name": "s", "op": "Const", "attr": {
            "value": {"tensor": {"dtype": "DT_FLOAT", "tensorShape": {}, "floatVal": [2.5]}},
            "dtype": {"type": "DT_FLOAT"}}},
        {"name": "v", "op": "Const", "attr": {
            "value": {"tensor": {"dtype": "DT_INT32", "tensorShape": {"dim": [{"size": "2"}]},
                                 "tensorContent": content}},
            "dtype": {"type": "DT_INT32"}}},
        {"name": "m", "op": "Const", "attr": {
            "value": {"tensor": {"dtype": "DT_DOUBLE", "tensorShape": {
                "dim": [{"size": "2"}, {"size": "2"}]}, "tensorContent": ones}},
            "dtype": {"type": "DT_DOUBLE"}}},
        {"name": "axis", "op": "Const", "attr": {
            "value": {"tensor": {"dtype": "DT_INT64", "tensorShape": {}, "int64Val": ["1"]}},
            "dtype": {"type": "DT_INT64"}}},
        {"name": "sum", "op": "Sum", "input": ["m", "axis"], "attr": {
            "keep_dims": {"b": False}, "T": {"type": "DT_DOUBLE"},
            "Tidx": {"type": "DT_INT64"}}}],
        "versions": {"producer": GRAPH_DEF_VERSION}}


def test_json_attr_value_forms():
    node = {"name": "n", "op": "X", "input": [], "device": "", "attr": {
        "i": 3, "f": 0.1, "s": "SAME", "raw": b"\xff\x00", "b": True, "l": [1, 2],
        "e": [], "fl": [0.5], "t": [gp.int32, gp.float16], "u": TensorShape(None),
        "sh": [TensorShape([1]), TensorShape([])], "fn": {"name": "f", "attr": {"k": 1}},
        "inf": float("inf"), "nan": float("nan"), "none": None}}
    got = json.loads(graph_def_to_json({"node": [node]}))["node"][0]["attr"]
    assert got == {
        "i": {"i": "3"}, "f": {"f": 0.1}, "s": {"s": "U0FNRQ=="}, "raw": {"s": "/wA="},
        "b": {"b": True}, "l": {"list": {"i": ["1", "2"]}}, "e": {"list": {}},
        "fl": {"list": {"f": [0.5]}}, "t": {"list": {"type": ["DT_INT32", "DT_HALF"]}},
        "u": {"shape": {"unknownRank": True}},
        "sh": {"list": {"shape": [{"dim": [{"size": "1"}]}, {}]}},
        "fn": {"func": {"name": "f", "attr": {"k": {"i": "1"}}}},
        "inf": {"f": "Infinity"}, "nan": {"f": "NaN"}, "none": {}}
    back = graph_def_from_json(graph_def_to_json({"node": [node]}))["node"][0]["attr"]
    assert np.isnan(back.pop("nan")) and np.isnan(node["attr"].pop("nan"))
    assert back == node["attr"]


def test_float_attrs_print_at_their_shortest_float32_form():
    gd = {"node": [{"name": "n", "op": "X", "attr": {"a": 0.1, "b": 1e-8, "c": 1.0,
                                                      "d": 16777217.0, "e": 1e39}}]}
    got = json.loads(graph_def_to_json(gd))["node"][0]["attr"]
    assert got == {"a": {"f": 0.1}, "b": {"f": 1e-08}, "c": {"f": 1.0},
                   "d": {"f": 16777216.0}, "e": {"f": "Infinity"}}


# ----------------------------------------------------------------------------- tensors

_DTYPES = [np.float16, ml_dtypes.bfloat16, np.float32, np.float64, np.int8, np.int16,
           np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64, np.bool_,
           np.complex64, np.complex128]


@st.composite
def _arrays(draw):
    """Arrays of any supported dtype from raw bit patterns (NaNs, infinities, -0.0 too)."""
    dtype = np.dtype(draw(st.sampled_from(_DTYPES)))
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3))
    count = int(np.prod(shape))
    if dtype == np.bool_:
        return np.array(draw(st.lists(st.booleans(), min_size=count, max_size=count)),
                        bool).reshape(shape)
    raw = draw(st.binary(min_size=count * dtype.itemsize, max_size=count * dtype.itemsize))
    return np.frombuffer(raw, dtype).reshape(shape)


@settings(max_examples=80, deadline=None)
@given(_arrays())
def test_tensor_json_round_trip_is_exact(array):
    gd = {"node": [{"name": "c", "op": "Const", "attr": {"value": array}}]}
    back = graph_def_from_json(graph_def_to_json(gd))["node"][0]["attr"]["value"]
    assert back.dtype == array.dtype and back.shape == array.shape
    if (array.size > 1 and array.dtype.kind == "f") or array.dtype.kind not in "fc":
        assert back.tobytes() == array.tobytes()     # tensor_content, or exact typed values
    else:   # typed JSON floats: NaN payloads and signs are not representable, all else is
        np.testing.assert_array_equal(back, array)
        parts = array.reshape(-1).view(array.real.dtype)   # complex: (re, im) pairs
        same_signs = np.signbit(back.reshape(-1).view(back.real.dtype)) == np.signbit(parts)
        assert np.all(same_signs | np.isnan(parts))


def test_tensor_layout_matches_make_tensor_proto_rules():
    def proto(array):
        return json.loads(graph_def_to_json({"node": [{"name": "c", "op": "Const",
                                                       "attr": {"v": array}}]})
                          )["node"][0]["attr"]["v"]["tensor"]

    assert proto(np.array([1.5], np.float16))["halfVal"] == [0x3E00]
    assert proto(np.array(1.5, ml_dtypes.bfloat16))["halfVal"] == [0x3FC0]
    assert proto(np.array([True, False]))["boolVal"] == [True, False]
    assert proto(np.array([1, 2], np.uint16))["intVal"] == [1, 2]
    assert proto(np.array([1 + 2j], np.complex64))["scomplexVal"] == [1.0, 2.0]
    assert proto(np.array(7, np.uint64))["uint64Val"] == ["7"]
    assert proto(np.array(7, np.uint32))["uint32Val"] == [7]
    assert proto(np.array([b"a", b"bc"], object))["stringVal"] == ["YQ==", "YmM="]
    assert proto(np.zeros((0, 3), np.float32)) == {
        "dtype": "DT_FLOAT", "tensorShape": {"dim": [{}, {"size": "3"}]}}
    assert proto(np.array([np.nan], np.float32))["floatVal"] == ["NaN"]
    assert proto(np.array([1, 2], ">i4"))["tensorContent"] == \
        base64.b64encode(struct.pack("<2i", 1, 2)).decode()


def _tensor_json(**fields):
    body = {"dtype": "DT_FLOAT", "tensorShape": {"dim": [{"size": "4"}]}, **fields}
    return json.dumps({"node": [{"name": "c", "op": "Const",
                                 "attr": {"value": {"tensor": body}}}]})


def test_short_value_lists_repeat_the_last_value_and_empty_means_zeros():
    read = graph_def_from_json(_tensor_json(floatVal=[1, 2]))["node"][0]["attr"]["value"]
    np.testing.assert_array_equal(read, np.array([1, 2, 2, 2], np.float32))
    read = graph_def_from_json(_tensor_json())["node"][0]["attr"]["value"]
    np.testing.assert_array_equal(read, np.zeros(4, np.float32))


@pytest.mark.parametrize("fields, message", [
    ({"floatVal": [1, 2, 3, 4, 5]}, "5 values given for a tensor of shape [4] (4 elements)"),
    ({"tensorContent": base64.b64encode(b"\0" * 12).decode()},
     "tensor_content holds 12 bytes, expected 16 for a float tensor of shape [4]"),
    ({"intVal": [1]}, "int_val given for a float tensor"),
    ({"dtype": "DT_INT8", "intVal": [300]}, "a value is out of range for int8"),
    ({"tensorShape": {"dim": [{"size": "-1"}]}}, "tensor shape [?] is not fully defined"),
    ({"tensorShape": {"dim": [{"size": "-2"}]}}, "shape [-2] has a dimension below -1"),
    ({"dtype": "DT_RESOURCE"}, "unsupported tensor dtype DT_RESOURCE"),
])
def test_bad_tensor_protos_are_typed_errors(fields, message):
    with pytest.raises(errors.InvalidArgumentError) as info:
        graph_def_from_json(_tensor_json(**fields))
    assert info.value.message.startswith(
        "Invalid GraphDef at GraphDef.node[0].attr[value].tensor")
    assert info.value.message.endswith(f": {message}")


def test_huge_tensor_shape_is_refused_before_allocating():
    text = _tensor_json(tensorShape={"dim": [{"size": str(2**40)}]}, floatVal=[1.0])
    with pytest.raises(errors.ResourceExhaustedError, match="OOM when allocating"):
        graph_def_from_json(text)


def test_tensor_proto_helpers_round_trip_strings():
    array = np.array([[b"x", b"\xff"]], object)
    back = tensor_from_proto(tensor_to_proto(array))
    assert back.dtype == object and back.tolist() == [[b"x", b"\xff"]]


# ----------------------------------------------------------------------------- malformed JSON


@pytest.mark.parametrize("text, message", [
    ("{", "Failed to load JSON"),
    ('{"node": [], "node": []}', "Failed to load JSON: duplicate key node."),
    ('{"nodes": []}', 'Message type "tensorflow.GraphDef" has no field named "nodes"'),
    ('{"node": {}}', "repeated field node must be in [] which is {}"),
    ('{"node": [{"name": 3}]}', "Failed to parse name field: expected string"),
    ('{"node": [{"name": "a", "attr": {"k": {"i": "x"}}}]}', "Failed to parse i field"),
    ('{"node": [{"name": "a", "attr": {"k": {"i": "9223372036854775808"}}}]}',
     "Value out of range: 9223372036854775808"),
    ('{"node": [{"name": "a", "attr": {"k": {"type": "DT_NOPE"}}}]}',
     "Invalid enum value DT_NOPE for enum type tensorflow.DataType at "
     "GraphDef.node[0].attr[k].type"),
    ('{"node": [{"name": "a", "attr": {"k": {"i": "1", "b": true}}}]}',
     'Message type "tensorflow.AttrValue" should not have multiple "value" oneof fields'),
    ('{"node": [{"name": "a", "attr": {"k": {"f": "fast"}}}]}', "Couldn't parse float: fast"),
    ('{"node": [{"name": "a", "attr": {"k": {"b": 1}}}]}', "Expected true or false"),
    ('{"node": [{"name": "a", "attr": {"k": {"placeholder": "T"}}}]}',
     "function placeholders cannot appear in a GraphDef"),
    ("[" * 100000 + "]" * 100000, "Failed to load JSON"),
])
def test_malformed_json_is_invalid_argument(text, message):
    with pytest.raises(errors.InvalidArgumentError) as info:
        graph_def_from_json(text)
    assert message in info.value.message


def test_json_accepts_what_json_format_parse_accepts():
    text = json.dumps({"node": [{"name": "c", "op": "Const", "attr": {
        "dtype": {"type": 1},
        "value": {"tensor": {"dtype": "DT_FLOAT", "tensor_shape": {"dim": [{"size": 2}]},
                             "float_val": [1, "Infinity"]}}}}],
        "versions": {"producer": "12", "minConsumer": None}})
    gd = graph_def_from_json(text)
    assert gd["versions"] == {"producer": 12, "min_consumer": 0}
    assert gd["node"][0]["attr"]["dtype"] is gp.float32
    np.testing.assert_array_equal(gd["node"][0]["attr"]["value"], [1, np.inf])


# ----------------------------------------------------------------------------- round trips


def test_import_round_trip_preserves_results_and_graph_def():
    g, x, out = _small_graph()
    feed = np.array([[0.5, 1.0, -4.0], [2.0, -1.0, 0.0]], np.float32)
    want = _run(g, out, {x: feed})
    gd = as_graph_def(g)
    for text in (gd, graph_def_to_json(gd)):
        g2 = gp.Graph()
        with g2.as_default():
            out2, x2 = import_graph_def(text, return_elements=["out:0", "x:0"], name="")
        np.testing.assert_array_equal(_run(g2, out2, {x2: feed}), want)
        _assert_graph_defs_equal(as_graph_def(g2), gd)
        assert out2.shape == out.shape and x2.shape == TensorShape([None, 3])


def test_graph_def_json_round_trip_is_lossless():
    g, _, _ = _small_graph()
    gd = as_graph_def(g, add_shapes=True)
    back = graph_def_from_json(graph_def_to_json(gd))
    _assert_graph_defs_equal(back, gd)
    assert graph_def_to_json(back) == graph_def_to_json(gd)


def test_graph_def_json_text_does_not_depend_on_attr_order():
    """Equal GraphDefs give equal text, whatever order their attr maps were filled in."""
    attrs = {"T": gp.float32, "data_format": b"NHWC", "strides": [1, 2, 2, 1],
             "padding": b"SAME", "dilations": [1, 1, 1, 1], "use_cudnn_on_gpu": True}
    node = {"name": "conv", "op": "Conv2D", "input": ["x", "w"]}
    texts = {graph_def_to_json({"node": [dict(node, attr=dict(order))]})
             for order in (attrs.items(), reversed(attrs.items()),
                           sorted(attrs.items(), key=lambda kv: kv[0][::-1]))}
    assert len(texts) == 1


def test_import_prefixes_and_uniquifies_names():
    g, _, _ = _small_graph()
    gd = as_graph_def(g)
    target = gp.Graph()
    with target.as_default():
        first = import_graph_def(gd, return_elements=["r"])
        second = import_graph_def(gd, return_elements=["r"])
        named = import_graph_def(gd, return_elements=["r:0"], name="net")
        with gp.name_scope("outer"):
            scoped = import_graph_def(gd, return_elements=["r"])
        bare = import_graph_def(gd, return_elements=["r", "x:0"], name="")
        again = import_graph_def(gd, return_elements=["r"], name="")
    assert first[0].name == "import/r" and second[0].name == "import_1/r"
    assert named[0].name == "net/r:0" and scoped[0].name == "outer/import/r"
    assert bare[0].name == "r" and again[0].name == "r_1"
    assert [t.name for t in again[0].inputs] == ["y_1:0"]
    assert [c.name for c in again[0].control_inputs] == ["c_1"]
    assert first[0].device == "" and target.get_operation_by_name("import/y").device == \
        "/device:CPU:0"


def test_input_map_and_return_elements():
    g, x, out = _small_graph()
    gd = as_graph_def(g)
    target = gp.Graph()
    with target.as_default():
        z = gp.placeholder(gp.float32, [2, 3], name="z")
        trigger = gp.raw_ops.NoOp(name="trigger")
        out2, y2, r2, mapped = import_graph_def(
            gd, input_map={"x": z, "^c": trigger}, return_elements=["out:0", "y", "r", "x:0"])
    assert y2.inputs[0] is z and mapped is z
    assert r2.control_inputs == (trigger,)
    assert out2.shape == TensorShape([2])
    feed = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(_run(target, out2, {z: feed}), _run(g, out, {x: feed}))


@pytest.mark.parametrize("kwargs, error, message", [
    ({"input_map": {"nope:0": "z:0"}}, errors.InvalidArgumentError,
     "Attempted to map inputs that were not found in graph_def: [nope:0]"),
    ({"input_map": {"x:5": "z:0"}}, errors.InvalidArgumentError,
     "Attempted to map inputs that were not found in graph_def: [x:5]"),
    ({"input_map": {"x:y": "z:0", "^nope": "z:0"}}, errors.InvalidArgumentError,
     "Attempted to map inputs that were not found in graph_def: [x:y, ^nope]"),
    ({"input_map": {"x:0": "i:0"}}, errors.InvalidArgumentError,
     "Input 0 of node import/y was passed int32 from i:0 incompatible with expected float."),
    ({"input_map": {"x:0": "v:0"}}, errors.InvalidArgumentError,
     "Dimensions must be equal, but are 4 and 3 for '{{node import/y} = AddV2"),
    ({"input_map": {"x:0": "gone:0"}}, errors.InvalidArgumentError,
     "input_map value for 'x:0': The name 'gone:0' refers to a Tensor which does not exist."),
    ({"input_map": {"x:0": "v"}}, TypeError,
     "input_map value for 'x:0' must be a Tensor, got <gp.Operation 'v' type=Placeholder>"),
    ({"return_elements": ["nope:0"]}, errors.InvalidArgumentError,
     "Requested return tensor 'nope:0' not found in graph def"),
    ({"return_elements": ["nope"]}, errors.InvalidArgumentError,
     "Requested return node 'nope' not found in graph def"),
    ({"return_elements": ["r:1"]}, errors.InvalidArgumentError,
     "Invalid return output 1 of node 'r', which has 1 output(s)"),
])
def test_input_map_and_return_errors(kwargs, error, message):
    g, _, _ = _small_graph()
    target = gp.Graph()
    with target.as_default():
        gp.placeholder(gp.int32, [None, 3], name="i")
        gp.placeholder(gp.float32, [None, 4], name="v")
        gp.placeholder(gp.float32, [None, 3], name="z")
        before = len(target.get_operations())
        with pytest.raises(error) as info:
            import_graph_def(as_graph_def(g), **kwargs)
    text = getattr(info.value, "message", str(info.value))
    assert text.startswith(message.replace("{{node import/y}", "{{node import/y}}"))
    assert len(target.get_operations()) == before


def test_colocation_attr_follows_the_prefix():
    gd = {"node": [{"name": "a", "op": "NoOp"},
                   {"name": "b", "op": "NoOp", "attr": {"_class": ["loc:@a"], "_keep": 1}}]}
    g = gp.Graph()
    with g.as_default():
        (b,) = import_graph_def(gd, return_elements=["b"], name="p")
    assert b.get_attr("_class") == ["loc:@p/a"] and b.get_attr("_keep") == 1


# ----------------------------------------------------------------------------- validation

_RELU_SIG = ("Op<name=Relu; signature=features:T -> activations:T; attr=T:type,allowed=["
             "DT_FLOAT, DT_DOUBLE, DT_INT32, DT_UINT8, DT_INT16, DT_INT8, DT_INT64, "
             "DT_BFLOAT16, DT_UINT16, DT_HALF, DT_UINT32, DT_UINT64, DT_QINT8]>")


def _conv_graph_def():
    g = gp.Graph()
    with g.as_default():
        x = gp.placeholder(gp.float32, [None, 5, 5, 3], name="x")
        w = gp.placeholder(gp.float32, [2, 2, 3, 4], name="w")
        y = gp.raw_ops.Conv2D(input=x, filter=w, strides=[1, 1, 1, 1], padding="SAME",
                              name="Conv2D")
        gp.raw_ops.Relu(features=y, name="r")
    return as_graph_def(g)


def _mutated(change):
    gd = copy.deepcopy(_conv_graph_def())
    change({n["name"]: n for n in gd["node"]}, gd)
    return gd


_CONV_SIG = gp.raw_ops.Conv2D.op_def.signature()


@pytest.mark.parametrize("change, error, message", [
    (lambda n, gd: n["r"].update(op="Frob"), errors.NotFoundError,
     "Op type not registered 'Frob' in binary running on graphops."),
    (lambda n, gd: n["Conv2D"]["attr"].update(strides=1), errors.InvalidArgumentError,
     "AttrValue had value with type 'int' when 'list(int)' expected\n\t for attr 'strides'\n\t;"
     " NodeDef: {{node Conv2D}}; " + _CONV_SIG),
    (lambda n, gd: n["Conv2D"]["attr"].update(strides=None), errors.InvalidArgumentError,
     "AttrValue missing value with expected type 'list(int)'\n\t for attr 'strides'"),
    (lambda n, gd: n["Conv2D"]["attr"].pop("strides"), errors.InvalidArgumentError,
     f"NodeDef missing attr 'strides' from {_CONV_SIG}; NodeDef: {{{{node Conv2D}}}}"),
    (lambda n, gd: n["Conv2D"]["attr"].update(padding="FOO"), errors.InvalidArgumentError,
     "Value for attr 'padding' of \"FOO\" is not in the list of allowed values: \"SAME\", "
     "\"VALID\", \"EXPLICIT\"\n\t; NodeDef: {{node Conv2D}}; " + _CONV_SIG),
    (lambda n, gd: n["r"]["attr"].update(T=gp.string), errors.InvalidArgumentError,
     "Value for attr 'T' of string is not in the list of allowed values: float, double, "
     "int32, uint8, int16, int8, int64, bfloat16, uint16, half, uint32, uint64, qint8\n\t; "
     "NodeDef: {{node r}}; " + _RELU_SIG),
    (lambda n, gd: n["r"]["attr"].update(T=gp.float64), errors.InvalidArgumentError,
     "Input 0 of node r was passed float from Conv2D:0 incompatible with expected double."),
    (lambda n, gd: n["r"].update(input=["nope"]), errors.InvalidArgumentError,
     "Node 'r': Unknown input node 'nope'"),
    (lambda n, gd: n["r"].update(input=["Conv2D", "^nope"]), errors.InvalidArgumentError,
     "Node 'r': Unknown input node '^nope'"),
    (lambda n, gd: n["r"].update(input=["Conv2D:3"]), errors.InvalidArgumentError,
     "Node 'r': Connecting to invalid output 3 of source node Conv2D which has 1 outputs."),
    (lambda n, gd: n["r"].update(input=["^x", "Conv2D"]), errors.InvalidArgumentError,
     "Node 'r': Control dependencies must come after regular dependencies"),
    (lambda n, gd: gd["node"].append(copy.deepcopy(n["r"])), errors.InvalidArgumentError,
     "Node 'r' is not unique"),
    (lambda n, gd: n["Conv2D"].update(input=["r", "w"]), errors.InvalidArgumentError,
     "2 nodes in a cycle"),
    (lambda n, gd: n["r"].update(input=["r"]), errors.InvalidArgumentError,
     "1 nodes in a cycle: r -> r"),
    (lambda n, gd: n["r"].update(input=["Conv2D", "x"]), errors.InvalidArgumentError,
     f"NodeDef expected inputs 'float' do not match 2 inputs specified; {_RELU_SIG}; "
     "NodeDef: {{node r}}"),
    (lambda n, gd: n["r"].update(name="r!x"), errors.InvalidArgumentError,
     "Node 'r!x': Node name contains invalid characters"),
    (lambda n, gd: n["w"]["attr"].update(shape=TensorShape([2])), errors.InvalidArgumentError,
     "Shape must be rank 4 but is rank 1 for '{{node Conv2D}} = Conv2D[T=DT_FLOAT, "
     "data_format=\"NHWC\", dilations=[1, 1, 1, 1], explicit_paddings=[], padding=\"SAME\", "
     "strides=[1, 1, 1, 1], use_cudnn_on_gpu=true](x, w)' with input shapes: [?,5,5,3], [2]."),
    (lambda n, gd: n["r"]["attr"].update(_output_shapes=[TensorShape([7])]),
     errors.InvalidArgumentError, "Node 'r' has an _output_shapes attribute inconsistent with "
     "the GraphDef for output #0: Shapes must be equal rank, but are 4 and 1"),
    (lambda n, gd: n["r"].update(device="/gpu:0:1"), errors.InvalidArgumentError,
     "Malformed device specification '/gpu:0:1' in node: {{node r}}"),
    (lambda n, gd: n["r"].update(input="Conv2D"), errors.InvalidArgumentError,
     "GraphDef node 3 has a 'input' of type str, expected list"),
    (lambda n, gd: gd.update(versions={"producer": 1, "min_consumer": 10**6}),
     errors.InvalidArgumentError, "GraphDef min consumer version 1000000 above current version"),
    (lambda n, gd: gd.update(node={}), errors.InvalidArgumentError,
     "GraphDef 'node' must be a list of NodeDef dicts"),
    (lambda n, gd: gd.update(versions={"producer": "7"}), errors.InvalidArgumentError,
     "GraphDef versions must be a dict of ints"),
    (lambda n, gd: gd.update(library={"function": [{"signature": {"input_arg": []}}]}),
     errors.InvalidArgumentError, "FunctionDef library.function[0] has no name"),
])
def test_invalid_graph_defs_give_typed_errors(change, error, message):
    gd = _mutated(change)
    g = gp.Graph()
    with g.as_default():
        gp.placeholder(gp.float32, name="keep")
        with pytest.raises(error) as info:
            import_graph_def(gd, name="")
    assert type(info.value) is error
    assert info.value.message.startswith(message)
    assert [op.name for op in g.get_operations()] == ["keep"]   # nothing half-imported


def test_missing_attrs_with_defaults_are_filled():
    gd = _mutated(lambda n, gd: [n["Conv2D"]["attr"].pop(k) for k in
                                 ("data_format", "dilations", "use_cudnn_on_gpu")])
    g = gp.Graph()
    with g.as_default():
        (conv,) = import_graph_def(gd, return_elements=["Conv2D"], name="")
    assert conv.get_attr("data_format") == "NHWC"
    assert conv.get_attr("dilations") == [1, 1, 1, 1]
    assert conv.get_attr("use_cudnn_on_gpu") is True
    assert conv.outputs[0].shape == TensorShape([None, 5, 5, 4])


def test_unknown_attrs_are_kept_with_a_warning_as_tf_does():
    gd = _mutated(lambda n, gd: n["r"]["attr"].update(foo=1))
    g = gp.Graph()
    with g.as_default(), pytest.warns(UserWarning) as record:
        (r,) = import_graph_def(gd, return_elements=["r"], name="")
    assert str(record[0].message) == (
        f"NodeDef mentions attribute foo which is not in the op definition: {_RELU_SIG} This "
        "may be expected if your graph generating binary is newer than this binary. Unknown "
        "attributes will be ignored. NodeDef: {{node r}}")
    assert r.get_attr("foo") == 1 and _node(as_graph_def(g), "r")["attr"]["foo"] == 1


def test_consistent_output_shapes_are_checked_then_dropped():
    gd = _mutated(lambda n, gd: n["r"]["attr"].update(
        _output_shapes=[TensorShape([None, 5, 5, 4])], _note="kept"))
    g = gp.Graph()
    with g.as_default():
        (r,) = import_graph_def(gd, return_elements=["r"], name="")
    assert "_output_shapes" not in r.attrs and r.get_attr("_note") == "kept"


def test_deprecated_ops_import_with_a_warning():
    gd = {"node": [
        {"name": "x", "op": "Placeholder", "attr": {"dtype": gp.float32}},
        {"name": "d", "op": "Conv3DBackpropFilter", "input": ["x", "x", "x"],
         "attr": {"T": gp.float32, "strides": [1] * 5, "padding": "SAME"}}]}
    g = gp.Graph()
    with g.as_default(), pytest.warns(DeprecationWarning, match="Op Conv3DBackpropFilter is "
                                      "deprecated. It will cease to work in GraphDef version"):
        import_graph_def(gd)


def test_import_never_evaluates_or_unpickles(monkeypatch):
    def forbidden(*args, **kwargs):
        raise AssertionError("must not be called")

    monkeypatch.setattr(builtins, "eval", forbidden)
    monkeypatch.setattr(builtins, "exec", forbidden)
    monkeypatch.setattr(pickle, "loads", forbidden)
    monkeypatch.setattr(np, "load", forbidden)
    payload = "__import__('os').system('echo pwned')"
    gd = {"node": [{"name": "s", "op": "Const", "attr": {
        "dtype": gp.string, "value": np.array([payload.encode()], object)}},
        {"name": "x", "op": "Placeholder", "attr": {"dtype": gp.float32, "_note": payload}}]}
    g = gp.Graph()
    with g.as_default(), warnings.catch_warnings():
        s, x = import_graph_def(graph_def_to_json(gd), return_elements=["s", "x"])
    assert s.get_attr("value").tolist() == [payload.encode()]
    assert x.get_attr("_note") == payload


def test_finalized_graph_refuses_import():
    g = gp.Graph()
    g.finalize()
    with g.as_default(), pytest.raises(RuntimeError, match="Graph is finalized"):
        import_graph_def(_conv_graph_def())
