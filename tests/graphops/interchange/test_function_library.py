"""Function libraries: GraphDefs with `library.function`, PartitionedCall and
StatefulPartitionedCall running the function bodies, their gradients, and TF's own
tf.function / Keras graphs (those skip without TensorFlow)."""


import numpy as np
import pytest

import graphops as gp
from graphops.interchange.graph_io import graph_def_from_bytes
from graphops.registry import errors

RNG = np.random.default_rng(3)


def _arg(name, dtype="DT_FLOAT"):
    return {"name": name, "type": dtype}


def _scale_add():
    """scale_add(x, y) = (x * 2 + y, x): body inputs in the "node:out_arg:index" form."""
    return {"signature": {"name": "scale_add", "input_arg": [_arg("x"), _arg("y")],
                          "output_arg": [_arg("z"), _arg("same")]},
            "node_def": [
                {"name": "two", "op": "Const",
                 "attr": {"dtype": gp.float32, "value": np.array(2.0, np.float32)}},
                {"name": "twice", "op": "Mul", "input": ["x", "two:output:0"],
                 "attr": {"T": gp.float32}},
                {"name": "sum", "op": "AddV2", "input": ["twice:z:0", "y"],
                 "attr": {"T": gp.float32}}],
            "ret": {"z": "sum:z:0", "same": "x"}}


def _outer():
    """outer(x) = scale_add(x, x)[0] + 1, calling scale_add through a PartitionedCall."""
    return {"signature": {"name": "outer", "input_arg": [_arg("x")],
                          "output_arg": [_arg("out")]},
            "node_def": [
                {"name": "call", "op": "PartitionedCall", "input": ["x", "x"],
                 "attr": {"Tin": [gp.float32] * 2, "Tout": [gp.float32] * 2,
                          "f": {"name": "scale_add", "attr": {}}}},
                {"name": "one", "op": "Const",
                 "attr": {"dtype": gp.float32, "value": np.array(1.0, np.float32)}},
                {"name": "plus", "op": "AddV2", "input": ["call:output:0", "one:output:0"],
                 "attr": {"T": gp.float32}}],
            "ret": {"out": "plus:z:0"}}


def _caller_graph_def(functions=None, f="outer", op="StatefulPartitionedCall", tin=1):
    return {"node": [
        {"name": "x", "op": "Placeholder", "attr": {"dtype": gp.float32}},
        {"name": "call", "op": op, "input": ["x"] * tin,
         "attr": {"Tin": [gp.float32] * tin, "Tout": [gp.float32], "f": {"name": f, "attr": {}}}},
        {"name": "out", "op": "Identity", "input": ["call"], "attr": {"T": gp.float32}}],
        "versions": {"producer": 1500, "min_consumer": 12},
        "library": {"function": functions if functions is not None
                    else [_scale_add(), _outer()]}}


def _run(graph_def, x, fetch="out:0"):
    g = gp.Graph()
    with g.as_default():
        gp.import_graph_def(graph_def, name="")
    with gp.Session(graph=g) as sess:
        return sess.run(fetch, {"x:0": x})


def test_nested_calls_run_the_function_bodies():
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    np.testing.assert_allclose(_run(_caller_graph_def(), x), 3 * x + 1, rtol=1e-6)


def test_both_outputs_and_argument_passthrough():
    gd = _caller_graph_def(f="scale_add", op="PartitionedCall", tin=2)
    gd["node"][1]["attr"]["Tout"] = [gp.float32] * 2
    gd["node"].append({"name": "second", "op": "Identity", "input": ["call:1"],
                       "attr": {"T": gp.float32}})
    x = np.arange(4, dtype=np.float32)
    z, same = _run(gd, x, ["out:0", "second:0"])
    np.testing.assert_array_equal(z, 3 * x)
    np.testing.assert_array_equal(same, x)


def test_calls_run_on_the_gpu(gpu):
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    gd = _caller_graph_def()
    gd["node"][1]["device"] = "/device:GPU:0"
    g = gp.Graph()
    with g.as_default():
        gp.import_graph_def(gd, name="")
    with gp.Session(graph=g, allow_soft_placement=False) as sess:    # a GPU kernel or fail
        np.testing.assert_allclose(sess.run("out:0", {"x:0": x}), 3 * x + 1, rtol=1e-6)


def test_library_round_trips_through_bytes_and_graphs():
    gd = _caller_graph_def()
    g = gp.Graph()
    with g.as_default():
        gp.import_graph_def(gd, name="")
    exported = g.as_graph_def()
    assert [f.signature.name for f in exported.library.function] == ["scale_add", "outer"]
    data = exported.SerializeToString()
    back = graph_def_from_bytes(data)
    assert gp.io.graph_def_to_proto(back) == gp.io.graph_def_to_proto(exported)
    x = np.ones(3, np.float32)
    np.testing.assert_array_equal(_run(back, x), _run(gd, x))


def _doubling(depth):
    """f0 = identity; f_i(x) = f_{i-1}(x) + f_{i-1}(x): 2^depth call paths, depth+1 bodies."""
    functions = [{"signature": {"name": "f0", "input_arg": [_arg("x")],
                                "output_arg": [_arg("out")]},
                  "node_def": [{"name": "id", "op": "Identity", "input": ["x"],
                                "attr": {"T": gp.float32}}],
                  "ret": {"out": "id:output:0"}}]
    for i in range(1, depth + 1):
        call = [{"name": n, "op": "PartitionedCall", "input": ["x"],
                 "attr": {"Tin": [gp.float32], "Tout": [gp.float32],
                          "f": {"name": f"f{i - 1}", "attr": {}}}} for n in "ab"]
        functions.append({
            "signature": {"name": f"f{i}", "input_arg": [_arg("x")], "output_arg": [_arg("out")]},
            "node_def": call + [{"name": "s", "op": "AddV2", "input": ["a:output:0", "b:output:0"],
                                 "attr": {"T": gp.float32}}],
            "ret": {"out": "s:z:0"}})
    return _caller_graph_def(functions, f=f"f{depth}", op="PartitionedCall")


def test_each_function_is_planned_once_however_many_paths_call_it():
    """As TF's function library runtime, instantiations are shared: a hostile library with
    2^40 call paths is planned in 41 steps (running it would take 2^40 adds)."""
    g = gp.Graph()
    with g.as_default():
        gp.import_graph_def(_doubling(40), name="")
    with gp.Session(graph=g) as sess:
        runner = sess.make_callable("out:0", ["x:0"])      # plans every call node
        assert runner is not None
    assert _run(_doubling(5), np.float32(1.5)) == 48.0


def test_same_function_may_be_imported_twice_but_not_redefined():
    g = gp.Graph()
    with g.as_default():
        gp.import_graph_def(_caller_graph_def())
        gp.import_graph_def(_caller_graph_def())
        changed = _scale_add()
        changed["ret"]["same"] = "y"
        with pytest.raises(errors.InvalidArgumentError,
                           match="Cannot add function 'scale_add' because a different function "
                                 "with the same name already exists."):
            gp.import_graph_def(_caller_graph_def([changed, _outer()]))
    assert len(g._functions) == 2


def _looping():
    loop = _outer()
    loop["signature"]["name"] = "loop"
    call = loop["node_def"][0]
    call.update(input=["x"], attr={**call["attr"], "Tin": [gp.float32], "Tout": [gp.float32],
                                   "f": {"name": "loop", "attr": {}}})
    return loop


@pytest.mark.parametrize("graph_def, error, message", [
    (_caller_graph_def(f="missing"), errors.NotFoundError,
     "Function missing is not defined in the graph's function library."),
    (_caller_graph_def([_looping()], f="loop"), errors.InvalidArgumentError,
     "Function loop calls itself (through loop -> loop); recursive functions are not "
     "supported."),
    (_caller_graph_def(f="scale_add", tin=1), errors.InvalidArgumentError,
     "Tin [float] does not match function scale_add's arg types [float, float]"),
])
def test_bad_calls_fail_when_planned(graph_def, error, message):
    with pytest.raises(error) as info:
        _run(graph_def, np.ones(2, np.float32))
    assert message in info.value.message


@pytest.mark.parametrize("change, message", [
    (lambda f: f["node_def"][1].update(input=["x", "nowhere:output:0"]),
     "Function 'scale_add': input 'nowhere:output:0' of twice names no node of the body"),
    (lambda f: f["node_def"][1].update(input=["x", "two:nope:0"]),
     "Function 'scale_add': node 'two' (Const) has no output named 'nope'"),
    (lambda f: f["ret"].pop("z"), "Function 'scale_add': no return value for output arg 'z'"),
    (lambda f: f["signature"]["input_arg"][0].update(type="DT_NOPE"),
     "Invalid enum value DT_NOPE for enum type tensorflow.DataType"),
    (lambda f: f["signature"]["input_arg"][0].update(type=99),
     "Function 'scale_add': arg 'x' has an invalid type 99"),
])
def test_malformed_function_bodies_are_invalid_argument(change, message):
    function = _scale_add()
    change(function)
    gd = _caller_graph_def([function], f="scale_add", op="PartitionedCall", tin=2)
    gd["node"][1]["attr"]["Tout"] = [gp.float32] * 2
    with pytest.raises(errors.InvalidArgumentError) as info:
        _run(gd, np.ones(2, np.float32))
    assert message in info.value.message


def test_calls_need_a_graph_library():
    with pytest.raises(errors.NotFoundError, match="Function f is not defined"):
        gp.raw_ops.PartitionedCall(args=[np.ones(2, np.float32)], Tout=[gp.float32],
                                   f="f")


def test_call_output_shapes_are_unknown_as_in_tf():
    g = gp.Graph()
    with g.as_default():
        gp.import_graph_def(_caller_graph_def(), name="")
    assert g.get_tensor_by_name("call:0").shape.rank is None


def test_gradient_differentiates_the_function_body():
    g = gp.Graph()
    with g.as_default():
        x = gp.placeholder(gp.float64, [3], name="x")
        gd = _caller_graph_def()
        for function in gd["library"]["function"]:
            for node in function["node_def"]:
                node["attr"] = {k: gp.float64 if v is gp.float32 else
                                [gp.float64] * len(v) if isinstance(v, list) else
                                v.astype(np.float64) if isinstance(v, np.ndarray) else v
                                for k, v in node["attr"].items()}
            for arg in function["signature"]["input_arg"] + function["signature"]["output_arg"]:
                arg["type"] = "DT_DOUBLE"
        gd["node"][0]["attr"]["dtype"] = gp.float64
        gd["node"][1]["attr"].update(Tin=[gp.float64], Tout=[gp.float64])
        gd["node"][2]["attr"]["T"] = gp.float64
        (out,) = gp.import_graph_def(gd, input_map={"x": x}, return_elements=["out:0"])
        loss = gp.reduce_sum(out * out)
        (dx,) = gp.gradients(loss, [x])
    value = np.array([0.5, -1.0, 2.0])
    with gp.Session(graph=g) as sess:
        got = sess.run(dx, {x: value})
    np.testing.assert_allclose(got, 2 * (3 * value + 1) * 3)
    assert "Mul" in {op.type for op in g.get_operations() if op.name.startswith("gradients")}


# ----------------------------------------------------------------------------- TensorFlow


def _tf():
    return pytest.importorskip("tensorflow")


def test_tf_function_calling_tf_functions_runs_un_frozen():
    tf = _tf()
    w = RNG.standard_normal((3, 4)).astype(np.float32)

    @tf.function(autograph=False)
    def dense(x, w):
        return tf.nn.relu(tf.matmul(x, w))

    @tf.function(autograph=False)
    def block(x):
        return dense(x, tf.constant(w)) * 2.0, tf.reduce_sum(x, axis=1)

    @tf.function(autograph=False)
    def model(x):
        y, s = block(x)
        return tf.nn.softmax(y + dense(x, tf.constant(w))), s

    concrete = model.get_concrete_function(tf.TensorSpec([None, 3], tf.float32, name="x"))
    graph_def = concrete.graph.as_graph_def()
    assert {n.op for n in graph_def.node} & {"PartitionedCall", "StatefulPartitionedCall"}
    assert len(graph_def.library.function) >= 2
    x = RNG.standard_normal((5, 3)).astype(np.float32)
    want = [t.numpy() for t in concrete(tf.constant(x))]
    g = gp.Graph()
    with g.as_default():
        gp.import_graph_def(graph_def, name="")     # TF's own message class
    with gp.Session(graph=g) as sess:
        got = sess.run([t.name for t in concrete.outputs], {"x:0": x})
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_keras_model_graph_before_freezing_runs_with_its_variables():
    tf = _tf()
    keras = pytest.importorskip("keras")
    keras.utils.set_random_seed(4)
    model = keras.Sequential([keras.Input((6, 6, 2)),
                              keras.layers.Conv2D(3, 3, activation="relu"),
                              keras.layers.GlobalAveragePooling2D(),
                              keras.layers.Dense(4, activation="softmax")])
    call_model = tf.function(model, autograph=False)
    outer = tf.function(lambda x: call_model(x) * 1.0, autograph=False)
    concrete = outer.get_concrete_function(tf.TensorSpec([None, 6, 6, 2], tf.float32, name="x"))
    graph_def = concrete.graph.as_graph_def()
    assert "StatefulPartitionedCall" in {n.op for n in graph_def.node}
    x = RNG.standard_normal((3, 6, 6, 2)).astype(np.float32)
    want = concrete(tf.constant(x)).numpy()
    captures = list(zip(concrete.captured_inputs, concrete.graph.internal_captures))
    assert len(captures) == len(model.variables) == 4
    g = gp.Graph()
    with g.as_default():
        input_map, inits = {}, []
        for i, (handle, placeholder) in enumerate(captures):     # the variables, made here
            value = next(v for v in model.variables if v.handle is handle).numpy()
            var = gp.raw_ops.VarHandleOp(dtype=gp.float32, shape=value.shape,
                                         shared_name=f"v{i}")
            inits.append(gp.raw_ops.AssignVariableOp(resource=var, value=value))
            input_map[placeholder.name] = var
        gp.import_graph_def(graph_def, input_map=input_map, name="")
    with gp.Session(graph=g) as sess:
        sess.run(inits)
        got = sess.run(concrete.outputs[0].name, {"x:0": x})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_gradients_through_tf_function_calls_equal_tfs():
    tf = _tf()
    w = RNG.standard_normal((3, 4)).astype(np.float32)
    bias = tf.Variable(RNG.standard_normal(4).astype(np.float32))

    @tf.function(autograph=False)
    def dense(x, w):
        return tf.nn.relu(tf.matmul(x, w)) + bias

    @tf.function(autograph=False)
    def model(x):
        return tf.nn.softmax(dense(x, tf.constant(w)) * 2.0)

    concrete = model.get_concrete_function(tf.TensorSpec([None, 3], tf.float32, name="x"))
    x = tf.constant(RNG.standard_normal((5, 3)).astype(np.float32))
    with tf.GradientTape() as tape:
        tape.watch(x)
        loss = tf.reduce_sum(concrete(x) ** 2)
    want = [t.numpy() for t in tape.gradient(loss, [x, bias])]
    ((handle, captured),) = zip(concrete.captured_inputs, concrete.graph.internal_captures)
    assert handle is bias.handle
    g = gp.Graph()
    with g.as_default():
        var = gp.raw_ops.VarHandleOp(dtype=gp.float32, shape=[4], shared_name="bias")
        init = gp.raw_ops.AssignVariableOp(resource=var, value=bias.numpy())
        xs = gp.placeholder(gp.float32, [None, 3])
        (out,) = gp.import_graph_def(concrete.graph.as_graph_def(),
                                     input_map={captured.name: var, "x:0": xs},
                                     return_elements=[concrete.outputs[0].name])
        grads = gp.gradients(gp.reduce_sum(out * out), [xs, var])
    with gp.Session(graph=g) as sess:
        sess.run(init)
        got = sess.run(grads, {xs: x.numpy()})
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_recursive_functions_have_no_gradient():
    g = gp.Graph()
    with g.as_default():
        (out,) = gp.import_graph_def(_caller_graph_def([_looping()], f="loop"),
                                     return_elements=["out:0"])
        with pytest.raises(errors.InvalidArgumentError, match="Function loop calls itself"):
            gp.gradients(out, [g.get_tensor_by_name("import/x:0")])
