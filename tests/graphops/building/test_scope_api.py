"""The C++-style Scope API: naming, with_* scopes, generated op classes, Attrs, ClientSession."""

import numpy as np
import pytest

import graphops as gp
from graphops.registry import register_op
from graphops.registry.errors import InvalidArgumentError
from graphops.registry.op_registry import deregister_op


@pytest.fixture(scope="module", autouse=True)
def pair_op():
    register_op("GpScopeTestPair").input("x: float").output("low: float").output("high: float") \
        .attr("scale: float = 1.0")
    yield
    deregister_op("GpScopeTestPair")


@pytest.fixture
def root():
    return gp.Scope.new_root_scope()


def _names(scope):
    return [op.name for op in scope.graph.get_operations()]


# ----------------------------------------------------------------------------- naming


def test_naming_follows_the_scope_header_example(root):
    linear = root.new_sub_scope("linear")
    w = gp.ops.Placeholder(linear.with_op_name("W"), gp.float32, shape=[2, 2])
    b = gp.ops.Placeholder(linear.with_op_name("b_", 3), gp.float32, shape=[2])
    x = gp.ops.Const(linear, [[1.0, 2.0], [3.0, 4.0]])
    m = gp.ops.MatMul(linear, x, w)
    r = gp.ops.BiasAdd(linear, m, b)
    assert _names(root) == ["linear/W", "linear/b_3", "linear/Const", "linear/MatMul",
                            "linear/BiasAdd"]
    wv, bv = np.array([[1.0, 0.0], [2.0, 1.0]], np.float32), np.array([0.5, -1.0], np.float32)
    xv = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    out, = gp.ClientSession(root).run([r.output], feed_dict={w: wv, b: bv})
    np.testing.assert_allclose(out, xv @ wv + bv)


def test_names_are_uniquified_per_scope(root):
    linear = root.new_sub_scope("linear")
    assert gp.ops.NoOp(linear).operation.name == "linear/NoOp"
    assert gp.ops.NoOp(linear).operation.name == "linear/NoOp_1"
    assert gp.ops.NoOp(linear.with_op_name("NoOp_1")).operation.name == "linear/NoOp_1_1"
    assert gp.ops.NoOp(linear.new_sub_scope("")).operation.name == "linear/NoOp_2"
    assert root.new_sub_scope("linear").name == "linear_1"
    assert gp.ops.NoOp(root.with_op_name("linear")).operation.name == "linear_2"
    assert gp.ops.NoOp(root.new_sub_scope("")).operation.name == "NoOp"
    inner = linear.new_sub_scope("inner")
    assert inner.name == "linear/inner"
    assert gp.ops.NoOp(inner).operation.name == "linear/inner/NoOp"
    assert root.get_unique_name_for_op("X") == "X" and root.get_unique_name_for_op("X") == "X_1"


def test_scope_names_skip_nodes_already_in_the_graph(root):
    with root.graph.as_default():
        gp.raw_ops.NoOp(name="NoOp")
    assert gp.ops.NoOp(root).operation.name == "NoOp_1"


def test_python_values_become_consts_in_the_scope(root):
    s = root.new_sub_scope("s")
    y = gp.ops.AddV2(s.with_op_name("sum"), 1.0, 2.0)
    assert _names(root) == ["s/Const", "s/Const_1", "s/sum"]
    assert [t.dtype for t in y.operation.inputs] == [gp.float32, gp.float32]
    assert gp.ClientSession(root).run(y)[0] == 3.0


# ----------------------------------------------------------------------------- with_* scopes


def test_scopes_are_immutable(root):
    pinned = root.with_device("/gpu:0")
    assert (root.device, pinned.device) == ("", "/device:GPU:0")
    named = root.with_op_name("a")
    assert gp.ops.NoOp(named).operation.name == "a" and gp.ops.NoOp(root).operation.name == "NoOp"
    with pytest.raises(AttributeError):
        root.device = "/cpu:0"


def test_with_device_pins_ops(root):
    cpu = root.with_device("/cpu:0")
    y = gp.ops.AddV2(cpu, gp.ops.Const(cpu, 2.0), 1.0)
    assert {op.device for op in root.graph.get_operations()} == {"/device:CPU:0"}
    assert gp.ClientSession(root).run(y) == [3.0]
    with pytest.raises(ValueError, match="Unknown attribute 'foo'"):
        root.with_device("/foo:0")


def test_control_dependencies_accumulate_and_clear(root):
    a, b = gp.ops.NoOp(root.with_op_name("a")), gp.ops.Const(root.with_op_name("b"), 1.0)
    deps = root.with_control_dependencies(a).with_control_dependencies([b.output, a])
    assert [op.name for op in deps.control_dependencies] == ["a", "b"]
    y = gp.ops.Identity(deps, 3.0)
    assert [op.name for op in y.operation.control_inputs] == ["a", "b"]
    assert [op.name for op in y.operation.inputs[0].op.control_inputs] == ["a", "b"]
    assert gp.ops.NoOp(deps.with_no_control_dependencies()).operation.control_inputs == ()
    with pytest.raises(TypeError, match="Control dependency must be an Operation"):
        root.with_control_dependencies([3])


# ----------------------------------------------------------------------------- op classes


def _conv3d_backprop_filter(x, dy, ksize):
    """dw[k, c, o] = sum over batch and output positions of x[pos + k, c] * dy[pos, o]."""
    n, d, h, w, c = x.shape
    _, od, oh, ow, o = dy.shape
    dw = np.zeros(tuple(ksize) + (c, o))
    for i in range(ksize[0]):
        for j in range(ksize[1]):
            for k in range(ksize[2]):
                patch = x[:, i:i + od, j:j + oh, k:k + ow, :].astype(np.float64)
                dw[i, j, k] = np.einsum("ndhwc,ndhwo->co", patch, dy)
    return dw


def test_conv3d_backprop_filter_v2_with_attrs_builder(root):
    rng = np.random.default_rng(0)
    xv = rng.standard_normal((2, 4, 5, 3, 2)).astype(np.float32)
    dyv = rng.standard_normal((2, 3, 3, 2, 4)).astype(np.float32)
    expected = _conv3d_backprop_filter(xv, dyv, (2, 3, 2))
    op = gp.ops.Conv3DBackpropFilterV2
    x = gp.ops.Placeholder(root.with_op_name("x"), gp.float32, shape=[None, 4, 5, 3, 2])
    last = op(root, x, [2, 3, 2, 2, 4], dyv, strides=[1] * 5, padding="VALID",
              attrs=op.Attrs().data_format("NDHWC"))
    first = op(root, np.moveaxis(xv, -1, 1), [2, 3, 2, 2, 4], np.moveaxis(dyv, -1, 1),
               strides=[1] * 5, padding="VALID", data_format="NCDHW")
    assert last.output.shape.as_list() == [2, 3, 2, 2, 4] == first.output.shape.as_list()
    assert last.operation.get_attr("data_format") == "NDHWC"
    assert first.operation.get_attr("data_format") == "NCDHW"
    got_last, got_first = gp.ClientSession(root).run([last, first], feed_dict={x: xv})
    np.testing.assert_allclose(got_last, expected, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got_first, expected, rtol=1e-4, atol=1e-4)


def test_attrs_builder_is_immutable_and_validates(root):
    attrs_cls = gp.ops.Conv3DBackpropFilterV2.Attrs
    empty = attrs_cls()
    ncdhw = empty.data_format("NCDHW")
    both = ncdhw.dilations([1, 1, 2, 2, 1])
    assert empty.to_dict() == {} and ncdhw.to_dict() == {"data_format": "NCDHW"}
    assert both.to_dict() == {"data_format": "NCDHW", "dilations": [1, 1, 2, 2, 1]}
    assert repr(both) == ("Conv3DBackpropFilterV2.Attrs(data_format='NCDHW', "
                          "dilations=[1, 1, 2, 2, 1])")
    assert gp.ops.Conv3DBackpropFilterV2.data_format("NCDHW").to_dict() == ncdhw.to_dict()
    with pytest.raises(AttributeError, match="immutable"):
        ncdhw.foo = 1
    with pytest.raises(InvalidArgumentError) as e:
        empty.data_format("NCHW")
    assert str(e.value) == ("Attr 'data_format' of 'Conv3DBackpropFilterV2' Op passed string "
                            "'NCHW' not in: \"NDHWC\", \"NCDHW\".")
    assert not hasattr(attrs_cls, "strides") and not hasattr(attrs_cls, "t")


def test_op_class_argument_errors(root):
    x = gp.ops.Const(root, np.zeros((1, 2, 2, 2, 1), np.float32))
    op = gp.ops.Conv3DBackpropFilterV2
    args = (root, x, [1, 1, 1, 1, 1], x)
    with pytest.raises(TypeError, match=r"^attrs must be a Conv3DBackpropFilterV2\.Attrs, not "
                                        r"Attrs$"):
        op(*args, strides=[1] * 5, padding="SAME", attrs=gp.ops.Conv2D.Attrs())
    with pytest.raises(TypeError, match="got attr 'data_format' both in attrs and as a keyword"):
        op(*args, strides=[1] * 5, padding="SAME", data_format="NDHWC",
           attrs=op.data_format("NDHWC"))
    with pytest.raises(TypeError, match=r"takes 6 positional arguments but 7 were given"):
        op(*args, [1] * 5, "SAME", "NDHWC")
    with pytest.raises(TypeError, match="got multiple values for argument 'padding'"):
        op(*args, [1] * 5, "SAME", padding="VALID")
    with pytest.raises(TypeError, match="needs a gp.Scope as its first argument"):
        op(x, x)
    with pytest.raises(TypeError, match="^No argument found for attr padding for "
                                        "Conv3DBackpropFilterV2$"):
        op(*args, strides=[1] * 5)
    with pytest.raises(InvalidArgumentError, match="Attr 'padding' of 'Conv3DBackpropFilterV2' "
                                                   "Op passed string 'FOO'"):
        op(*args, strides=[1] * 5, padding="FOO")
    other = gp.Scope.new_root_scope()
    with pytest.raises(InvalidArgumentError, match="is not an element of this graph"):
        gp.ops.Identity(other, x)


def test_named_outputs_and_tensor_conversion(root):
    pair = gp.ops.GpScopeTestPair(root, 1.0, scale=2.0)
    assert pair.outputs == [pair.low, pair.high] and pair.output is pair.low
    assert pair.operation.get_attr("scale") == 2.0
    with pytest.raises(TypeError, match="GpScopeTestPair op 'GpScopeTestPair' has 2 outputs"):
        gp.ops.Identity(root, pair)
    c = gp.ops.Const(root, [1, 2])
    ident = gp.ops.Identity(root, c)                     # a one-output op object is an input
    assert ident.operation.inputs == (c.output,)
    assert root.graph.as_graph_element(c) is c.output
    noop = gp.ops.NoOp(root)
    assert noop.output is None and root.graph.as_graph_element(noop) is noop.operation
    with gp.Session(graph=root.graph) as sess:             # and a fetch / feed key of Session
        assert sess.run([ident, noop], feed_dict={c: [5, 6]})[0].tolist() == [5, 6]


def test_ops_registered_later_appear(root):
    assert "Const" in dir(gp.ops) and "Conv2D" in dir(gp.ops)
    register_op("GpScopeTestLate").input("x: T").output("y: T").attr("T: type")
    try:
        late = gp.ops.GpScopeTestLate(root, 1)
        assert late.output.dtype is gp.int32 and "GpScopeTestLate" in dir(gp.ops)
        assert "scope" in gp.ops.GpScopeTestLate.__doc__
    finally:
        deregister_op("GpScopeTestLate")
    assert not hasattr(gp.ops, "GpScopeTestLate")
