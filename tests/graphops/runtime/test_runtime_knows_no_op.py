"""The runtime knows no op by name (graphops/runtime/): what folds, what fuses and what a
feed satisfies is declared by each op's kernel (``OpKernel``'s class attributes). The
source names no registered op outside its docstrings, and a new op whose kernel declares
the attributes folds and fuses as the built-in ones do."""

import ast

import numpy as np
import pytest

import graphops as gp
from graphops.registry import (OpKernel, TensorShape, errors, list_ops, register_kernel,
                               register_op)
from graphops.registry.kernel_registry import deregister_kernels
from graphops.registry.op_defs.math import broadcast_shapes
from graphops.registry.op_registry import deregister_op
from graphops.runtime import fusion
from tests.op_runners import plan_kernel_steps
from tests.paths import ROOT

COMPUTES = []     # node names, one per compute of a test kernel


class MulKernel(OpKernel):
    chain_stage = "mul"

    def compute(self, ctx):
        ctx.set_output(0, np.multiply(ctx.input(0), ctx.input(1)))


class ReluKernel(OpKernel):
    chain_activation = "Relu"

    def compute(self, ctx):
        x = ctx.input(0)
        ctx.set_output(0, np.maximum(x.dtype.type(0), x))


class SourceKernel(OpKernel):
    """Its ``value`` attr, counting computes."""

    invariant = True

    def __init__(self, ctx):
        super().__init__(ctx)
        self.value = np.float32(ctx.get_attr("value"))

    def compute(self, ctx):
        COMPUTES.append(ctx.node_name)
        ctx.set_output(0, self.value)


class DefaultKernel(OpKernel):
    """Forwards its input, counting computes."""

    foldable = False

    def compute(self, ctx):
        COMPUTES.append(ctx.node_name)
        ctx.set_output(0, ctx.input(0))


class FeedKernel(OpKernel):
    feed_satisfies_control = True

    def compute(self, ctx):
        raise errors.InvalidArgumentError(f"feed {ctx.node_name}")


def _binary_shape(c):
    c.set_output(0, broadcast_shapes(c.input(0), c.input(1)))


def _same_shape(c):
    c.set_output(0, c.input(0))


def _scalar(c):
    c.set_output(0, TensorShape([]))


OPS = {   # name: (its builder's steps, its kernel)
    "RtMul": (lambda b: b.input("x: float").input("y: float").output("z: float")
              .set_shape_fn(_binary_shape), MulKernel),
    "RtRelu": (lambda b: b.input("x: float").output("y: float").set_shape_fn(_same_shape),
               ReluKernel),
    "RtSource": (lambda b: b.output("y: float").attr("value: float")
                 .set_shape_fn(_scalar), SourceKernel),
    "RtDefault": (lambda b: b.input("x: float").output("y: float").set_shape_fn(_same_shape),
                  DefaultKernel),
    "RtFeed": (lambda b: b.output("y: float").set_shape_fn(_scalar), FeedKernel),
}


@pytest.fixture(autouse=True, scope="module")
def registered():
    for name, (build, kernel) in OPS.items():
        build(register_op(name))
        register_kernel(name, "CPU")(kernel)
    yield
    for name in OPS:
        deregister_kernels(name)
        deregister_op(name)


@pytest.fixture(autouse=True)
def graph():
    COMPUTES.clear()
    g = gp.Graph()
    with g.as_default():
        yield g


def _strings(path):
    """(line, value) of the str constants in a module that are not docstrings."""
    tree = ast.parse(path.read_text(), str(path))
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                       ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr)
                  and isinstance(node.body[0].value, ast.Constant)}
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and id(node) not in docstrings]


def test_no_runtime_module_names_a_registered_op():
    names = set(list_ops())
    assert {"Const", "Mul", "Relu", "Conv2D", "Placeholder"} <= names
    paths = sorted((ROOT / "graphops" / "runtime").glob("*.py"))
    assert len(paths) > 5
    found = [f"{path.relative_to(ROOT)}:{line} {value!r}" for path in paths
             for line, value in _strings(path) if value in names]
    assert not found, "the runtime names ops:\n" + "\n".join(found)


def test_a_new_op_declaring_a_chain_stage_fuses(monkeypatch):
    """RtMul (chain_stage "mul") and RtRelu (chain_activation "Relu") chain with AddV2 as
    Mul and Relu do; without the declaration RtMul runs as its own step."""
    x = gp.placeholder(gp.float32, [None, 4])
    scale = np.float32([1, -2, 0.5, 3])
    out = gp.raw_ops.RtRelu(x=gp.raw_ops.RtMul(x=x, y=gp.constant(scale)) + 1.0)
    steps = plan_kernel_steps([out], [x])
    assert [(step.op.type, type(step.kernel)) for step in steps] == [("RtRelu", fusion.Chain)]
    assert steps[0].kernel.stages[0][0] == "mul" and steps[0].kernel.activation == "Relu"
    values = np.linspace(-4, 4, 4 << 12, dtype=np.float32).reshape(-1, 4)
    with gp.Session() as sess:
        got = sess.run(out, {x: values})
    np.testing.assert_array_equal(got, np.maximum(values * scale + np.float32(1), 0))
    monkeypatch.setattr(MulKernel, "chain_stage", None)
    assert [step.op.type for step in plan_kernel_steps([out], [x])] == ["RtMul", "RtRelu"]


def test_an_activation_channel_chain_cannot_apply_is_not_fused(monkeypatch):
    """A chain_activation outside kernel_util.CHAIN_ACTIVATIONS ends no chain: the nodes run
    their own kernels and give the kernel's values (here Relu's kernel under another name
    would otherwise be applied as Relu6)."""
    x = gp.placeholder(gp.float32, [None, 4])
    out = gp.raw_ops.RtRelu(x=gp.raw_ops.RtMul(x=x, y=gp.constant(np.float32([1, 2, 3, 4]))))
    monkeypatch.setattr(ReluKernel, "chain_activation", "Tanh")
    assert [step.op.type for step in plan_kernel_steps([out], [x])] == ["RtMul", "RtRelu"]
    add = gp.raw_ops.AddV2(x=x, y=x)
    assert [step.op.type for step in plan_kernel_steps([gp.raw_ops.RtRelu(x=add)], [x])] == [
        "AddV2", "RtRelu"]
    values = np.linspace(-8, 8, 4 << 12, dtype=np.float32).reshape(-1, 4)
    with gp.Session() as sess:
        got = sess.run(out, {x: values})
    np.testing.assert_array_equal(got, np.maximum(values * np.float32([1, 2, 3, 4]), 0))


def test_a_new_op_declaring_a_mul_stage_folds_into_a_conv_s_filter(monkeypatch):
    rng = np.random.default_rng(0)
    x = gp.placeholder(gp.float32, [2, 5, 5, 3])
    w = gp.constant(rng.normal(size=(3, 3, 3, 4)).astype(np.float32))
    y = gp.nn.conv2d(x, w, [1, 1, 1, 1], "SAME")
    scale = rng.normal(size=4).astype(np.float32)
    scaled = gp.raw_ops.RtMul(x=y, y=gp.constant(scale))
    assert [step.op.type for step in plan_kernel_steps([scaled], [x])] == ["Conv2D"]
    feed = {x: rng.normal(size=(2, 5, 5, 3)).astype(np.float32)}
    with gp.Session() as sess:
        folded = sess.run(scaled, feed)
        plain = sess.run(y, feed)
    np.testing.assert_allclose(folded, plain * scale, rtol=1e-5, atol=1e-5)
    monkeypatch.setattr(MulKernel, "chain_stage", None)
    assert [step.op.type for step in plan_kernel_steps([scaled], [x])] == ["Conv2D", "RtMul"]


def test_a_new_op_declaring_invariant_or_not_foldable_folds_or_not(monkeypatch):
    source = gp.raw_ops.RtSource(value=2.5, name="source")
    passed = gp.raw_ops.RtDefault(x=gp.constant(1.5), name="passed")
    assert [s.op.name for s in plan_kernel_steps([source, passed])] == ["passed"]
    with gp.Session() as sess:
        for _ in range(2):
            assert sess.run([source, passed]) == [2.5, 1.5]
    # the source once per plan (one above, one in the Session), the other node every run
    assert COMPUTES == ["source", "source", "passed", "passed"]
    monkeypatch.setattr(SourceKernel, "invariant", False)
    assert [s.op.name for s in plan_kernel_steps([source])] == ["source"]


def test_a_new_op_declaring_that_a_feed_satisfies_control_edges(monkeypatch):
    fed = gp.raw_ops.RtFeed(name="fed")
    with gp.control_dependencies([fed.op]):
        out = gp.identity(gp.constant(3.0))
    with gp.Session() as sess:
        assert sess.run(out, {fed: 1.0}) == 3.0
    monkeypatch.setattr(FeedKernel, "feed_satisfies_control", False)
    with gp.Session() as sess, pytest.raises(errors.InvalidArgumentError, match="feed fed"):
        sess.run(out, {fed: 1.0})
