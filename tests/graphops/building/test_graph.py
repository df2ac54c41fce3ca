"""Graph / Operation / Tensor: naming, scopes, control deps, devices, lookup, threads."""

import threading

import numpy as np
import pytest

import graphops as gp
from graphops.registry.errors import FailedPreconditionError, InvalidArgumentError
from tests.paths import LIBRARY_DIRS


@pytest.fixture
def g():
    graph = gp.Graph()
    with graph.as_default():
        yield graph


def _x(name="x", shape=(2, 3)):
    return gp.placeholder(gp.float32, shape, name=name)


# ----------------------------------------------------------------------------- naming


def test_unique_names_follow_tf(g):
    names = [gp.raw_ops.NoOp(name="Conv2D").name for _ in range(3)]
    assert names == ["Conv2D", "Conv2D_1", "Conv2D_2"]
    assert gp.raw_ops.NoOp(name="Conv2D_1").name == "Conv2D_1_1"
    assert gp.raw_ops.NoOp(name="conv2d").name == "conv2d_3"     # case-insensitive counts
    assert g.unique_name("foo", mark_as_used=False) == "foo"
    assert g.unique_name("foo") == "foo"
    assert g.unique_name("FOO") == "FOO_1"


def test_default_names_are_the_op_type(g):
    assert gp.raw_ops.NoOp().name == "NoOp"
    assert gp.raw_ops.NoOp().name == "NoOp_1"
    assert gp.constant(1.0).op.name == "Const"
    assert _x(name=None).op.name == "Placeholder"


def test_name_scopes_nest_uniquify_reenter_and_reset(g):
    with g.name_scope("outer") as outer:
        assert outer == "outer/"
        assert gp.constant(1.0, name="c").op.name == "outer/c"
        with g.name_scope("inner"):
            assert gp.constant(1.0, name="c").op.name == "outer/inner/c"
        with g.name_scope("inner") as inner_1:
            assert inner_1 == "outer/inner_1/"
            with g.name_scope(outer):
                assert gp.constant(1.0, name="d").op.name == "outer/d"
                with g.name_scope(None):
                    assert gp.constant(1.0, name="e").op.name == "e"
                with g.name_scope(""):
                    assert g.get_name_scope() == ""
    with gp.name_scope("outer") as second:
        assert second == "outer_1/"
    assert g.get_name_scope() == ""


def test_module_name_scope_follows_the_graph_of_its_values(g):
    other = gp.Graph()
    with other.as_default():
        y = _x("y")
    with gp.name_scope(None, "layer", [y]) as scope:
        assert scope == "layer/" and gp.get_default_graph() is other
        assert gp.constant(1.0, name="c").op.name == "layer/c"
    assert gp.get_default_graph() is g and g.get_operations() == []


def test_name_scope_validation_messages(g):
    with pytest.raises(InvalidArgumentError) as e:
        g.name_scope("-bad")
    assert str(e.value) == ("'-bad' is not a valid root scope name. A root scope name has to "
                            "match the following pattern: ^[A-Za-z0-9.][A-Za-z0-9_.\\\\/>-]*$")
    with g.name_scope("ok"):
        with g.name_scope("-fine-when-nested") as scope:
            assert scope == "ok/-fine-when-nested/"
        with pytest.raises(ValueError, match=r"^'a b' is not a valid scope name\. A scope name "
                                             r"has to match the following pattern: "):
            g.name_scope("a b")


def test_op_name_with_trailing_slash_is_taken_verbatim(g):
    with g.name_scope("block") as scope:
        pass
    assert gp.raw_ops.NoOp(name=scope).name == "block"
    with pytest.raises(InvalidArgumentError, match="^Duplicate node name in graph: 'block'$"):
        gp.raw_ops.NoOp(name=scope)


# ----------------------------------------------------------------------------- ops and tensors


def test_ops_in_creation_order_with_version_and_ids(g):
    assert g.version == 0
    ops = [gp.raw_ops.NoOp() for _ in range(4)]
    assert g.get_operations() == ops
    assert [op._id for op in ops] == [0, 1, 2, 3]
    assert g.version == 4


def test_tensor_and_operation_properties(g):
    x = _x()
    y = gp.raw_ops.Identity(input=x, name="y")
    z = gp.raw_ops.Identity(input=x, name="z")
    assert (y.name, y.value_index, y.dtype, y.graph) == ("y:0", 0, gp.float32, g)
    assert y.shape == gp.TensorShape([2, 3]) and y.get_shape().as_list() == [2, 3]
    assert y.op.type == "Identity" and y.op.inputs == (x,) and y.op.outputs == (y,)
    assert y.op.get_attr("T") is gp.float32
    assert x.consumers() == [y.op, z.op]
    assert repr(y) == "<gp.Tensor 'y:0' shape=(2, 3) dtype=float32>"
    assert str(y) == 'Tensor("y:0", shape=(2, 3), dtype=float32)'
    with pytest.raises(InvalidArgumentError, match="^Operation 'y' has no attr named 'U'.$"):
        y.op.get_attr("U")
    with pytest.raises(TypeError, match="as a Python `bool` is not allowed"):
        bool(y)


def test_set_shape_refines_or_refuses(g):
    x = _x(shape=[None, 3])
    x.set_shape([4, None])
    assert x.shape.as_list() == [4, 3]
    with pytest.raises(InvalidArgumentError, match=r"shape \(4, 3\) is not compatible with "
                                                   r"supplied shape \(5, 3\)"):
        x.set_shape([5, 3])


def test_node_def_lists_inputs_control_inputs_device_and_attrs(g):
    a = gp.raw_ops.NoOp(name="a")
    x = _x()
    with g.control_dependencies([a]), g.device("/gpu:0"):
        y = gp.raw_ops.Identity(input=x, name="y")
    assert y.op.node_def == {"name": "y", "op": "Identity", "input": ["x", "^a"],
                             "device": "/device:GPU:0", "attr": {"T": gp.float32}}


def test_traceback_points_at_the_calling_line(g):
    line = test_traceback_points_at_the_calling_line.__code__.co_firstlineno + 2
    op = gp.raw_ops.NoOp()
    assert op.traceback[-1] == f"{__file__}:{line}"
    assert not any(site.startswith(LIBRARY_DIRS) for site in op.traceback)


def test_operators_build_tf1_named_nodes_and_compute(g):
    x = gp.placeholder(gp.float32, [2, 2], name="x")
    y = -((2.0 * x + 1.0) - x / 4.0) @ x
    types = [op.type for op in g.get_operations()]
    assert types == ["Placeholder", "Const", "Mul", "Const", "AddV2", "Const", "RealDiv", "Sub",
                     "Neg", "MatMul"]
    names = [op.name for op in g.get_operations()]
    assert names == ["x", "mul/x", "mul", "add/y", "add", "truediv/y", "truediv", "sub",
                     "Neg", "MatMul"]
    value = np.array([[1.0, 2.0], [3.0, -1.0]], np.float32)
    expected = -((2 * value + 1) - value / 4) @ value
    with gp.Session(graph=g) as sess:
        np.testing.assert_allclose(sess.run(y, {x: value}), expected, rtol=1e-6)


def test_operator_with_numpy_array_casts_it_to_the_tensor_dtype(g):
    x = _x(shape=[3])
    y = np.arange(3.0) + x                                  # NumPy defers to Tensor.__radd__
    assert isinstance(y, gp.Tensor) and y.dtype is gp.float32
    assert y.op.inputs[0].op.get_attr("value").dtype == np.float32
    z = np.float64(2.0) * x
    assert isinstance(z, gp.Tensor) and z.op.inputs[0].op.get_attr("value") == 2.0


def test_operator_with_mismatched_tensor_is_a_type_error(g):
    with pytest.raises(TypeError, match="^Input 'y' of 'AddV2' Op has type int32 that does not "
                                        "match type float32 of argument 'x'.$"):
        _x() + gp.constant([1, 2, 3])


# ----------------------------------------------------------------------------- lookup


def test_lookup_by_name(g):
    x = _x()
    assert g.get_operation_by_name("x") is x.op
    assert g.get_tensor_by_name("x:0") is x
    assert g.as_graph_element("x") is x.op
    assert g.as_graph_element(x) is x


@pytest.mark.parametrize("call, error, message", [
    (lambda g: g.get_tensor_by_name("x:1"), KeyError,
     "The name 'x:1' refers to a Tensor which does not exist. The operation, 'x', exists but "
     "only has 1 outputs."),
    (lambda g: g.get_tensor_by_name("y:0"), KeyError,
     "The name 'y:0' refers to a Tensor which does not exist. The operation, 'y', does not "
     "exist in the graph."),
    (lambda g: g.get_tensor_by_name("x"), ValueError,
     "The name 'x' refers to an Operation, not a Tensor. Tensor names must be of the form "
     "\"<op_name>:<output_index>\"."),
    (lambda g: g.get_tensor_by_name("y"), ValueError,
     "The name 'y' looks like an (invalid) Operation name, not a Tensor. Tensor names must be "
     "of the form \"<op_name>:<output_index>\"."),
    (lambda g: g.get_tensor_by_name("x:a"), ValueError,
     "The name 'x:a' looks a like a Tensor name, but is not a valid one. Tensor names must be "
     "of the form \"<op_name>:<output_index>\"."),
    (lambda g: g.get_operation_by_name("x:0"), ValueError,
     "Name 'x:0' appears to refer to a Tensor, not a Operation."),
    (lambda g: g.get_operation_by_name("nope"), KeyError,
     "The name 'nope' refers to an Operation not in the graph."),
    (lambda g: g.get_operation_by_name(3), TypeError,
     "Operation names are strings (or similar), not int."),
    (lambda g: g.as_graph_element(3.5), TypeError,
     "Can not convert a float into a Tensor or Operation."),
    (lambda g: g.as_graph_element("x", False, False), ValueError,
     "allow_tensor and allow_operation can't both be False."),
])
def test_as_graph_element_errors(g, call, error, message):
    _x()
    with pytest.raises(error) as e:
        call(g)
    assert e.value.args[0] == message


def test_elements_of_another_graph_are_refused(g):
    other = gp.Graph()
    with other.as_default():
        y = _x("y")
    with pytest.raises(ValueError, match=r"^Tensor Tensor\(\"y:0\".* is not an element of this "
                                         r"graph\.$"):
        g.as_graph_element(y)
    with pytest.raises(ValueError, match="must be from the same graph as"):
        gp.raw_ops.AddV2(x=_x(), y=y)


def test_finalize_refuses_new_ops_but_allows_lookup(g):
    x = _x()
    g.finalize()
    assert g.finalized
    with pytest.raises(RuntimeError, match="^Graph is finalized and cannot be modified.$"):
        gp.raw_ops.Identity(input=x)
    assert g.get_tensor_by_name("x:0") is x


# ----------------------------------------------------------------------------- control deps


def test_control_dependencies_nest_and_clear(g):
    a, b, c = (gp.raw_ops.NoOp(name=n) for n in "abc")
    with g.control_dependencies([a]):
        assert gp.raw_ops.NoOp().control_inputs == (a,)
        with g.control_dependencies([b, a]):
            assert gp.raw_ops.NoOp().control_inputs == (a, b)
            with g.control_dependencies(None):
                assert gp.raw_ops.NoOp().control_inputs == ()
                with g.control_dependencies([c]):
                    assert gp.raw_ops.NoOp().control_inputs == (c,)
    assert gp.raw_ops.NoOp().control_inputs == ()


def test_control_dependencies_take_tensors_and_skip_dominated_or_data_inputs(g):
    x = _x()
    a = gp.raw_ops.NoOp(name="a")
    with gp.control_dependencies([x, a]):
        y = gp.raw_ops.Identity(input=x)       # x is a data input: only `a` is added
        z = gp.raw_ops.Identity(input=y)       # y was built inside the block: dominated
    assert y.op.control_inputs == (a,)
    assert z.op.control_inputs == ()
    with pytest.raises(TypeError, match="Can not convert a int into a Tensor or Operation"):
        g.control_dependencies([1])


def test_helper_consts_get_the_control_dependencies_too(g):
    a = gp.raw_ops.NoOp(name="a")
    with g.control_dependencies([a]):
        y = gp.raw_ops.AddV2(x=1.0, y=2.0)
    assert [t.op.control_inputs for t in y.op.inputs] == [(a,), (a,)]
    assert y.op.control_inputs == ()


# ----------------------------------------------------------------------------- devices


@pytest.mark.parametrize("spec, expected", [
    ("/device:GPU:0", "/device:GPU:0"),
    ("/gpu:0", "/device:GPU:0"),
    ("/cpu:0", "/device:CPU:0"),
    ("/job:localhost/replica:0/task:0/device:CPU:0",
     "/job:localhost/replica:0/task:0/device:CPU:0"),
    ("/device:GPU:*", "/device:GPU:*"),
])
def test_device_strings_are_normalised(g, spec, expected):
    with g.device(spec):
        assert gp.raw_ops.NoOp().device == expected


def test_device_scopes_merge_field_wise_and_none_clears(g):
    with g.device("/job:worker/task:1"):
        with gp.device("/gpu:1"):
            assert gp.raw_ops.NoOp().device == "/job:worker/task:1/device:GPU:1"
            with g.device("/cpu:0"):
                assert gp.raw_ops.NoOp().device == "/job:worker/task:1/device:CPU:0"
            with g.device(""):
                assert gp.raw_ops.NoOp().device == "/job:worker/task:1/device:GPU:1"
            with g.device(None):
                assert gp.raw_ops.NoOp().device == ""
    assert gp.raw_ops.NoOp().device == ""


def test_device_function_sees_the_op(g):
    with g.device(lambda op: "/gpu:0" if op.type == "MatMul" else "/cpu:0"):
        x = gp.constant([[1.0]])
        y = x @ x
    assert (x.op.device, y.op.device) == ("/device:CPU:0", "/device:GPU:0")


def test_bad_device_spec_is_refused_at_once(g):
    with pytest.raises(ValueError, match="Unknown attribute 'foo'"):
        g.device("/foo:1")


# ----------------------------------------------------------------------------- default graph


def test_default_graph_stack_and_reset():
    outer = gp.get_default_graph()
    g1, g2 = gp.Graph(), gp.Graph()
    with g1.as_default() as entered:
        assert entered is g1 and gp.get_default_graph() is g1
        with g2.as_default():
            assert gp.get_default_graph() is g2
            with pytest.raises(FailedPreconditionError, match="Do not use reset_default_graph"):
                gp.reset_default_graph()
        assert gp.get_default_graph() is g1
    assert gp.get_default_graph() is outer
    gp.reset_default_graph()
    fresh = gp.get_default_graph()
    assert fresh is not outer and fresh.get_operations() == []


def test_constant_and_placeholder_build_in_the_default_graph_outside_any_context():
    gp.reset_default_graph()
    c = gp.constant([1, 2])
    assert c.graph is gp.get_default_graph() and c.dtype is gp.int32
    p = gp.placeholder(np.float64, name="p")
    assert p.graph is gp.get_default_graph() and p.shape.rank is None


def test_other_threads_see_the_global_default_graph(g):
    seen = []
    thread = threading.Thread(target=lambda: seen.append(gp.get_default_graph()))
    thread.start()
    thread.join()
    assert seen[0] is not g


# ----------------------------------------------------------------------------- threads


def test_concurrent_building_gives_unique_names_and_private_scopes(g):
    n_threads, per_thread = 8, 40
    built, failures = {}, []

    def work(k):
        try:
            with g.as_default(), g.name_scope(f"t{k}") as scope, g.device(f"/cpu:{k}"):
                ops = [gp.raw_ops.NoOp(name="op") for _ in range(per_thread)]
                assert scope == f"t{k}/" and g.get_name_scope() == f"t{k}"
                built[k] = ops
        except Exception as e:     # pragma: no cover - reported below
            failures.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures
    names = [op.name for op in g.get_operations()]
    assert len(names) == len(set(names)) == n_threads * per_thread == g.version
    for k, ops in built.items():
        expected = [f"t{k}/op"] + [f"t{k}/op_{i}" for i in range(1, per_thread)]
        assert [op.name for op in ops] == expected
        assert {op.device for op in ops} == {f"/device:CPU:{k}"}
    assert g.get_name_scope() == ""


def test_concurrent_unique_names_in_one_scope(g):
    names, lock = [], threading.Lock()

    def work():
        mine = [gp.raw_ops.NoOp(name="same").name for _ in range(50)]
        with lock:
            names.extend(mine)

    def run():
        with g.as_default():
            work()

    threads = [threading.Thread(target=run) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(names) == sorted(["same"] + [f"same_{i}" for i in range(1, 300)])


def test_true_division_of_integer_tensors_is_float_like_tf():
    g = gp.Graph()
    with g.as_default():
        a = gp.constant([7, 8], dtype=gp.int32)
        b = gp.constant([2, 3], dtype=gp.int16)
        q = a / 2
        r = b / b
        f = gp.constant([1.0]) / 4.0
    assert (q.dtype, r.dtype, f.dtype) == (gp.float64, gp.float32, gp.float32)
    with gp.Session(graph=g) as sess:
        np.testing.assert_allclose(sess.run(q), [3.5, 4.0])
        np.testing.assert_allclose(sess.run(r), [1.0, 1.0])


def test_string_constants_keep_trailing_nul_bytes_and_encode_str():
    g = gp.Graph()
    with g.as_default():
        scalar = gp.constant(b"\xff\x00")
        vector = gp.constant([b"a\x00", "b\u00e9"])
        typed = gp.constant("x\x00", dtype=gp.string)
    with gp.Session(graph=g) as sess:
        got = sess.run([scalar, vector, typed])
    assert got[0] == b"\xff\x00"
    assert list(got[1]) == [b"a\x00", "b\u00e9".encode()]
    assert got[2] == b"x\x00"
