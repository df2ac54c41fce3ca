"""What the fast paths of building and running must keep: lazy imports, creation sites,
per-OpDef caches that follow re-registration, the bound on broadcast outputs."""

import subprocess
import sys

import numpy as np
import pytest

import graphops as gp
from graphops.registry import errors, register_op
from graphops.registry.memory import get_memory_budget, set_memory_budget
from graphops.registry.op_registry import deregister_op
from tests.paths import LIBRARY_DIRS

ROOT = __file__.rsplit("/tests/", 1)[0]


def test_import_leaves_heavy_modules_unloaded():
    code = ("import sys, graphops as gp; "
            "print(sorted(m for m in ('networkx', 'subprocess', 'graphops.interchange.graph_def', "
            "'graphops.interchange.graph_json', 'graphops.interchange.pictures') "
            "if m in sys.modules)); "
            "print(gp.import_graph_def.__module__, gp.graph_def_to_json.__module__, "
            "gp.graph_def_from_json.__module__, gp.visualize.__module__); "
            "print('visualize' in dir(gp), 'import_graph_def' in vars(gp))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert out == ["[]", "graphops.interchange.graph_def graphops.interchange.graph_json "
                   "graphops.interchange.graph_json graphops.interchange.pictures", "True True"]
    with pytest.raises(AttributeError, match="has no attribute 'no_such_thing'"):
        gp.no_such_thing


def _identity(x):
    return gp.raw_ops.Identity(input=x)


def test_creation_sites_follow_the_calling_lines():
    g = gp.Graph()
    first = _identity.__code__.co_firstlineno + 1
    here = test_creation_sites_follow_the_calling_lines.__code__.co_firstlineno
    with g.as_default():
        x = gp.placeholder(gp.float32, [])
        looped = [_identity(x) for _ in range(3)]
        a = _identity(x); b = gp.raw_ops.Identity(input=x)  # noqa: E702  (same line, other call)
        c = gp.raw_ops.Identity(input=x)
    sites = [t.op.traceback for t in looped + [a, b, c]]
    assert sites[0] == sites[1] == sites[2]
    assert sites[0][-1] == f"{__file__}:{first}"
    assert sites[0][-2] == f"{__file__}:{here + 6}"
    assert sites[3][-2:] == [f"{__file__}:{here + 7}", f"{__file__}:{first}"]
    assert sites[4][-1] == f"{__file__}:{here + 7}"
    assert sites[5][-1] == f"{__file__}:{here + 8}"
    assert not any(s.startswith(LIBRARY_DIRS) for t in sites for s in t)


@pytest.fixture
def replaced_op():
    names = []

    def declare(name, outputs):
        builder = register_op(name).input("x: T").attr("T: type")
        for out in outputs:
            builder.output(f"{out}: T")
        builder.set_shape_fn(lambda c: [c.set_output(i, c.input(0)) for i in range(len(outputs))])
        names.append(name)
    yield declare
    for name in set(names):
        deregister_op(name)


def test_output_structure_follows_a_redefined_op(replaced_op):
    g = gp.Graph()
    with g.as_default():
        x = gp.placeholder(gp.float32, [2])
        replaced_op("GpOverheadRedefined", ["y"])
        single = gp.raw_ops.GpOverheadRedefined(x=x)
        deregister_op("GpOverheadRedefined")
        replaced_op("GpOverheadRedefined", ["low", "high"])
        pair = gp.raw_ops.GpOverheadRedefined(x=x)
    assert isinstance(single, gp.Tensor)
    assert type(pair).__name__ == "GpOverheadRedefined" and pair._fields == ("low", "high")
    assert [t.shape.as_list() for t in pair] == [[2], [2]]
    assert [a.name for a in gp.raw_ops.GpOverheadRedefined.op_def.output_arg] == ["low", "high"]


def test_operation_attrs_stay_read_only():
    g = gp.Graph()
    with g.as_default():
        y = gp.raw_ops.Identity(input=gp.constant([1.0, 2.0]))
    with pytest.raises(TypeError):
        y.op.attrs["T"] = gp.int32
    assert y.op.get_attr("T") is gp.float32 and dict(y.op.attrs) == {"T": gp.float32}


@pytest.mark.parametrize("mode", ["eager", "graph"])
def test_broadcast_outputs_are_bounded_before_allocating(mode):
    def add(x, y):
        if mode == "eager":
            return gp.raw_ops.AddV2(x=x, y=y)
        g = gp.Graph()
        with g.as_default():
            z = gp.raw_ops.AddV2(x=gp.constant(x), y=gp.constant(y))
        with gp.Session(graph=g) as sess:
            return sess.run(z)

    column = np.arange(64, dtype=np.float32).reshape(64, 1)
    budget = get_memory_budget()
    try:
        set_memory_budget(1024)
        with pytest.raises(errors.ResourceExhaustedError, match="OOM when allocating"):
            add(column, column.T)             # 64 x 64 floats: more than both inputs
        square = np.ones((64, 64), np.float32)
        # No bigger than an input: the input already exists, nothing new to bound.
        np.testing.assert_array_equal(add(square, np.float32(2)), square + 2)
        np.testing.assert_array_equal(add(np.ones((1, 1, 1), np.float32), column),
                                      column.reshape(1, 64, 1) + 1)
    finally:
        set_memory_budget(budget)
    small = add(np.array([[1], [2]], np.float32), np.array([[10, 20, 30]], np.float32))
    np.testing.assert_array_equal(small, [[11, 21, 31], [12, 22, 32]])
    with pytest.raises(errors.InvalidArgumentError, match=r"Incompatible shapes: \[2\] vs. \[3\]"):
        gp.raw_ops.AddV2(x=np.ones(2, np.float32), y=np.ones(3, np.float32))


def _plan_steps(session, fetches, feeds=()):
    plan = session._plan(list(feeds), list(fetches), [])
    return [getattr(step, "op", None) for step in plan.steps]


def test_identities_share_their_inputs_slot_and_no_ops_take_no_step():
    """A forwarding kernel (Identity) and one that only orders (NoOp) get no step; the
    values, fetches of the Identity, feeds of it and its ordering stay TF's."""
    with gp.Graph().as_default():
        x = gp.placeholder(gp.float32, [2], name="x")
        v = gp.Variable([1.0, 2.0], name="v")
        doubled = gp.multiply(x, 2.0, name="doubled")
        with gp.control_dependencies([doubled]):
            passed = gp.identity(doubled, name="passed")
            order = gp.no_op(name="order")
        with gp.control_dependencies([order]):
            bump = v.assign_add(passed)
        with gp.Session() as sess:
            sess.run(v.initializer)
            steps = _plan_steps(sess, [bump, passed], [x])
            assert {op.type for op in steps if op is not None} >= {"Mul"}
            assert not {op.type for op in steps if op is not None} & {"Identity", "NoOp"}
            got_bump, got_passed = sess.run([bump, passed], {x: [1.0, 3.0]})
            np.testing.assert_array_equal(got_passed, [2.0, 6.0])
            np.testing.assert_array_equal(got_bump, [3.0, 8.0])
            fed = sess.run(passed, {x: [1.0, 1.0], passed: [5.0, 5.0]})     # a fed Identity
            np.testing.assert_array_equal(fed, [5.0, 5.0])


def test_an_identity_n_forwards_each_input_in_its_slot():
    """IdentityN (the marker a custom gradient leaves around a swish) gets no step: each
    output is its input, fetched or read on; a fed output keeps its fed value."""
    with gp.Graph().as_default():
        x = gp.placeholder(gp.float32, [2], name="x")
        doubled, tripled = gp.multiply(x, 2.0), gp.multiply(x, 3.0)
        first, second = gp.raw_ops.IdentityN(input=[doubled, tripled])
        total = gp.add(first, gp.square(second))
        with gp.Session() as sess:
            assert "IdentityN" not in {op.type for op in _plan_steps(sess, [total, second], [x])
                                       if op is not None}
            got_total, got_second = sess.run([total, second], {x: [1.0, 2.0]})
            np.testing.assert_array_equal(got_total, [11.0, 40.0])
            np.testing.assert_array_equal(got_second, [3.0, 6.0])
            fed = sess.run(total, {x: [1.0, 2.0], second: [1.0, 1.0]})
            np.testing.assert_array_equal(fed, [3.0, 5.0])
