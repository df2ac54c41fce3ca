"""Session.run with TF1 semantics: fetch/feed structures and errors, pruning, plan cache,
buffer freeing, threads, error wrapping, make_callable, closing."""

import collections
import threading
import time
import weakref

import numpy as np
import pytest

import graphops as gp
from graphops.runtime import executor
from graphops.client.session import Session, get_default_session
from graphops.registry import OpKernel, dtypes, errors, register_kernel, register_op

RUNS = []       # node names, one per compute of SessTestCount / SessTestTwo
LIVE = []       # weakrefs to every array SessTestTrack produced
OBSERVED = []   # live tracked arrays seen at each SessTestTrack compute

register_op("SessTestCount").input("x: T").output("y: T").attr("T: type")
register_op("SessTestTwo").input("x: float").output("a: float").output("b: float")
register_op("SessTestTrack").input("x: float").output("y: float")
register_op("SessTestFail").input("x: float").output("y: float").attr("mode: string")


@register_kernel("SessTestCount", "CPU")
class CountKernel(OpKernel):
    def compute(self, ctx):
        RUNS.append(ctx.node_name)
        ctx.set_output(0, ctx.input(0))


@register_kernel("SessTestTwo", "CPU")
class TwoKernel(OpKernel):
    def compute(self, ctx):
        RUNS.append(ctx.node_name)
        ctx.set_output(0, ctx.input(0) + np.float32(1))
        ctx.set_output(1, ctx.input(0) + np.float32(2))


@register_kernel("SessTestTrack", "CPU")
class TrackKernel(OpKernel):
    def compute(self, ctx):
        OBSERVED.append(sum(ref() is not None for ref in LIVE))
        y = ctx.input(0) + np.float32(1)
        LIVE.append(weakref.ref(y))
        ctx.set_output(0, y)


@register_kernel("SessTestFail", "CPU")
class FailKernel(OpKernel):
    def __init__(self, ctx):
        super().__init__(ctx)
        self.mode = ctx.get_attr("mode")
        if self.mode == "ctor":
            raise errors.InvalidArgumentError("mode 'ctor' is not supported")

    def compute(self, ctx):
        RUNS.append(ctx.node_name)
        if self.mode == "op_error":
            raise errors.UnimplementedError(f"cannot handle {ctx.input(0).shape[0]} values")
        if self.mode == "numpy":
            np.ones(2) @ np.ones(3)
        ctx.set_output(0, ctx.input(0))


def count(x, name=None):
    return gp.raw_ops.SessTestCount(x=x, name=name)


@pytest.fixture(autouse=True)
def fresh():
    RUNS.clear()
    g = gp.Graph()
    with g.as_default():
        yield g


# ------------------------------------------------------------------------------ fetches

def test_fetch_structures(fresh):
    c = gp.constant(3.0, name="c")
    v = gp.constant([1, 2], dtype=gp.int32, name="v")
    Pair = collections.namedtuple("Pair", "a b")
    with Session() as sess:
        assert sess.run(c) == np.float32(3.0) and type(sess.run(c)) is np.float32
        assert isinstance(sess.run(v), np.ndarray) and sess.run(v).tolist() == [1, 2]
        out = sess.run({"k": [c, (v, c.op)], "p": Pair(c, "v:0"), "o": "c"})
        assert out["k"][0] == 3.0 and isinstance(out["k"][1], tuple) and out["k"][1][1] is None
        assert out["k"][1][0].tolist() == [1, 2]
        assert type(out["p"]) is Pair and out["p"].a == 3.0 and out["p"].b.tolist() == [1, 2]
        assert out["o"] is None
        ordered = sess.run(collections.OrderedDict([("z", c), ("a", v)]))
        assert type(ordered) is collections.OrderedDict and list(ordered) == ["z", "a"]
        dd = sess.run(collections.defaultdict(list, {"c": c}))
        assert type(dd) is collections.defaultdict and dd.default_factory is list
        assert sess.run([]) == [] and sess.run(()) == ()


def test_duplicate_fetches_run_once(fresh):
    y = count(gp.constant(2.0), name="y")
    with Session() as sess:
        assert sess.run([y, y, "y:0", y.op]) == [2.0, 2.0, 2.0, None]
    assert RUNS == ["y"]


@pytest.mark.parametrize("fetch, cls, message", [
    (None, TypeError, "Fetch argument None has invalid type <class 'NoneType'>"),
    ([None], TypeError, "Fetch argument None has invalid type <class 'NoneType'>"),
    (3, TypeError, "Fetch argument 3 has invalid type <class 'int'>, must be a string or "
                   "Tensor. (Can not convert a int into a Tensor or Operation.)"),
    ("nope:0", ValueError, "Fetch argument 'nope:0' cannot be interpreted as a Tensor. (The "
                           "name 'nope:0' refers to a Tensor which does not exist. The "
                           "operation, 'nope', does not exist in the graph.)"),
    ("c:3", ValueError, "exists but only has 1 outputs."),
])
def test_bad_fetches(fresh, fetch, cls, message):
    gp.constant(1.0, name="c")
    with Session() as sess, pytest.raises(cls) as info:
        sess.run(fetch)
    assert str(info.value).startswith(message) or message in str(info.value)


def test_a_fetch_list_met_again_reuses_its_handler(fresh, monkeypatch):
    """A tensor, a name, or a list or tuple of them is flattened once per Session (the same
    elements again: the same FetchHandler); a changed list, another structure, or a name
    that did not resolve yet is handled anew, and every run gives its own structure."""
    from graphops.client import session as session_module
    made = []
    original = session_module.FetchHandler.__init__
    monkeypatch.setattr(session_module.FetchHandler, "__init__",
                        lambda self, graph, fetches: made.append(
                            list(fetches) if isinstance(fetches, list) else fetches) or
                        original(self, graph, fetches))
    c = gp.constant(3.0, name="c")
    fetches = [c, "c:0"]
    with Session() as sess:
        first = sess.run(fetches)
        fetches.append(c.op)
        assert sess.run(fetches) == [3.0, 3.0, None] == sess.run(fetches)
        assert sess.run(tuple(fetches[:2])) == (3.0, 3.0)
        assert sess.run([c, "c:0"]) == first == [3.0, 3.0]
        assert sess.run({"c": c}) == {"c": 3.0} == sess.run({"c": c})
        with pytest.raises(ValueError, match="'later:0' refers to a Tensor which does not"):
            sess.run("later:0")
        gp.constant(4.0, name="later")
        assert sess.run("later:0") == 4.0 and sess.run("later:0") == 4.0
    assert [len(f) if isinstance(f, (list, tuple, dict)) else f for f in made] == [
        2, 3, 2, 1, 1, "later:0", "later:0"]


def test_fetch_from_another_graph(fresh):
    other = gp.Graph()
    with other.as_default():
        foreign = gp.constant(1.0)
    gp.constant(2.0)
    with Session() as sess, pytest.raises(ValueError, match="is not an element of this graph"):
        sess.run(foreign)


# -------------------------------------------------------------------------------- feeds

def test_feeds_by_tensor_and_name_are_converted(fresh):
    x = gp.placeholder(gp.float32, shape=(None, 3), name="x")
    y = count(x, name="y")
    with Session() as sess:
        out = sess.run(y, feed_dict={x: [[1, 2, 3]]})
        assert out.dtype == np.float32 and out.tolist() == [[1.0, 2.0, 3.0]]
        out = sess.run(y, feed_dict={"x:0": np.zeros((2, 3), np.float64)})
        assert out.dtype == np.float32 and out.shape == (2, 3)


@pytest.mark.parametrize("key, value, cls, message", [
    ("x:0", [1.0, 2.0], ValueError,
     "Cannot feed value of shape (2,) for Tensor 'x:0', which has shape '(?, 3)'"),
    ("x", [[1.0, 2.0, 3.0]], TypeError,
     "Cannot interpret feed_dict key as Tensor: The name 'x' refers to an Operation, not a "
     "Tensor. Tensor names must be of the form \"<op_name>:<output_index>\"."),
    ("x:0", "abc", errors.InvalidArgumentError,
     "Cannot convert the feed value for Tensor 'x:0' to float32"),
    ("i:0", 2**40, TypeError,
     "Type of feed value 1099511627776 with type <class 'int'> is not compatible with Tensor "
     "type <class 'numpy.int32'>. Try explicitly setting the type of the feed tensor to a "
     "larger type (e.g. int64)."),
    ("b:0", 5, TypeError, "Type of feed value 5 with type <class 'int'> is not compatible"),
    ("i:0", [2**40], TypeError, "Feed value for Tensor 'i:0' is not compatible with Tensor type"),
])
def test_bad_feeds(fresh, key, value, cls, message):
    gp.placeholder(gp.float32, shape=(None, 3), name="x")
    i = gp.placeholder(gp.int32, name="i")
    gp.placeholder(gp.bool, shape=(), name="b")
    with Session() as sess, pytest.raises(cls) as info:
        sess.run(i, feed_dict={key: value, i: 1})
    assert str(info.value).startswith(message)


def test_tensor_as_feed_value_is_rejected(fresh):
    x = gp.placeholder(gp.float32, name="x")
    c = gp.constant(1.0, name="c")
    with Session() as sess, pytest.raises(TypeError) as info:
        sess.run(x, feed_dict={x: c})
    assert str(info.value).startswith("The value of a feed cannot be a tf.Tensor object. "
                                      "Acceptable feed values include Python scalars")


def test_feed_key_from_another_graph(fresh):
    other = gp.Graph()
    with other.as_default():
        foreign = gp.placeholder(gp.float32)
    c = gp.constant(1.0)
    with Session() as sess, pytest.raises(TypeError, match="^Cannot interpret feed_dict key as "
                                          "Tensor: Tensor .* is not an element of this graph."):
        sess.run(c, feed_dict={foreign: 1.0})


def test_in_range_python_ints_and_floats_are_fine(fresh):
    i = gp.placeholder(gp.int32, name="i")
    f = gp.placeholder(gp.float32, name="f")
    with Session() as sess:
        assert sess.run([i, f], {i: 2**31 - 1, f: 2**60}) == [2**31 - 1, np.float32(2.0**60)]
        assert sess.run(i, {i: 1.7}) == 1          # as np.asarray(1.7, int32)


# ------------------------------------------------------------------------------ pruning

def test_unneeded_unfed_placeholder_is_fine(fresh):
    gp.placeholder(gp.float32, name="unused")
    c = gp.constant(5.0)
    with Session() as sess:
        assert sess.run(c) == 5.0


def test_needed_unfed_placeholder_is_tf_error(fresh):
    x = gp.placeholder(gp.float32, shape=(None, 3), name="x")
    y = count(x, name="y")
    with Session() as sess, pytest.raises(errors.InvalidArgumentError) as info:
        sess.run(y)
    assert "You must feed a value for placeholder tensor 'x' with dtype float and shape [?,3]" \
        in info.value.message
    assert info.value.message.endswith("\n\t [[{{node x}}]]")
    assert info.value.op is x.op


def test_feeding_an_intermediate_stops_pruning(fresh):
    x = gp.placeholder(gp.float32, name="x")
    a = count(x, name="a")
    b = count(a, name="b")
    with Session() as sess:
        assert sess.run(b, {a: 7.0}) == 7.0
        assert RUNS == ["b"]
        RUNS.clear()
        assert sess.run(a, {a: 4.0}) == 4.0           # fetching a fed tensor: the fed value
        assert RUNS == []


def test_feeding_one_output_of_a_running_op(fresh):
    x = gp.constant(1.0)
    a, b = gp.raw_ops.SessTestTwo(x=x, name="two")
    with Session() as sess:
        assert sess.run([a, b], {a: 10.0}) == [10.0, 3.0]
        assert RUNS == ["two"]


def test_control_edge_from_a_fed_placeholder_is_satisfied_by_the_feed(fresh):
    """TF rewires a fed Placeholder's control edges to the feed (subgraph.cc FeedInputs)."""
    x = gp.placeholder(gp.float32, name="x")
    with gp.control_dependencies([x]):
        main = count(gp.constant(2.0), name="main")
    grouped = gp.group(x * 2.0)
    with Session() as sess:
        assert sess.run(main, {x: 1.0}) == 2.0
        assert sess.run(grouped, {x: 1.0}) is None
        with pytest.raises(errors.InvalidArgumentError, match="You must feed a value"):
            sess.run(main)


def test_control_inputs_are_run(fresh):
    side = count(gp.constant(1.0), name="side")
    x = gp.placeholder(gp.float32, [])        # (a constant input would fold: computed once)
    with gp.control_dependencies([side]):
        main = count(x, name="main")
    with Session() as sess:
        assert sess.run(main, {x: 2.0}) == 2.0
    assert RUNS == ["side", "main"]


def test_op_targets_run_without_values(fresh):
    y = count(gp.constant(2.0), name="y")
    with Session() as sess:
        assert sess.run(y.op) is None and sess.run("y") is None
    assert RUNS == ["y", "y"]


# --------------------------------------------------------------------------- plan cache

@pytest.fixture
def plan_builds(monkeypatch):
    calls = []
    real = executor.build_plan

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)
    monkeypatch.setattr(executor, "build_plan", counting)
    return calls


def test_plans_are_cached_order_insensitively(fresh, plan_builds):
    x = gp.placeholder(gp.float32, name="x")
    z = gp.placeholder(gp.float32, name="z")
    a, b = count(x, name="a"), count(z, name="b")
    with Session() as sess:
        for _ in range(3):
            assert sess.run([a, b], {x: 1.0, z: 2.0}) == [1.0, 2.0]
        assert len(plan_builds) == 1
        assert sess.run([b, a], {z: 5.0, x: 6.0}) == [5.0, 6.0]
        assert sess.run({"b": b, "a": a}, {x: 3.0, z: 4.0}) == {"a": 3.0, "b": 4.0}
        assert len(plan_builds) == 1
        sess.run(a, {x: 1.0})
        assert len(plan_builds) == 2


def test_graph_growth_between_runs(fresh, plan_builds):
    x = gp.placeholder(gp.float32, name="x")
    a = count(x, name="a")
    with Session() as sess:
        assert sess.run(a, {x: 1.0}) == 1.0
        b = count(a, name="b")
        assert sess.run([a, b], {x: 2.0}) == [2.0, 2.0]
        assert sess.run(a, {x: 3.0}) == 3.0
    assert len(plan_builds) == 3


def test_cycles_are_reported(fresh):
    a = count(gp.constant(1.0), name="a")
    b = count(a, name="b")
    a.op._control_inputs = (b.op,)       # only reachable by editing a node after the fact
    with pytest.raises(errors.InvalidArgumentError,
                       match="Graph has a cycle: (a -> b -> a|b -> a -> b)"):
        executor.build_plan([], [b], [])


# ----------------------------------------------------------------------- buffer freeing

def test_intermediate_buffers_are_freed_after_last_use(fresh):
    LIVE.clear()
    OBSERVED.clear()
    y = gp.placeholder(gp.float32, shape=(1000,), name="x")
    for _ in range(6):
        y = gp.raw_ops.SessTestTrack(x=y)
    with Session() as sess:
        out = sess.run(y, {"x:0": np.zeros(1000, np.float32)})
    np.testing.assert_array_equal(out, np.full(1000, 6.0, np.float32))
    # Each step sees only its own input alive: everything older has been freed.
    assert OBSERVED == [0, 1, 1, 1, 1, 1]
    assert sum(ref() is not None for ref in LIVE) == 1     # the fetched result


def test_plan_frees_each_slot_at_its_last_reader(fresh):
    x = gp.placeholder(gp.float32, name="x")
    a = count(x, name="a")
    b, c = count(a, name="b"), count(a, name="c")
    d = gp.raw_ops.AddV2(x=b, y=c, name="d")
    plan = executor.build_plan([x], [d], [])
    steps = {step.op.name: step for step in plan.steps}
    freed = {name: set(step.frees) for name, step in steps.items()}
    assert freed["a"] == set(steps["a"].ins)                   # x
    assert freed["b"] == set() and freed["c"] == {steps["a"].outs[0][1]}
    assert freed["d"] == {steps["b"].outs[0][1], steps["c"].outs[0][1]}


# ------------------------------------------------------------------------------ threads

def test_concurrent_runs_on_one_session(fresh):
    x = gp.placeholder(gp.float32, shape=(None,), name="x")
    doubled = gp.raw_ops.AddV2(x=x, y=x)
    shifted = gp.raw_ops.AddV2(x=doubled, y=gp.constant(1.0))
    failures = []
    with Session() as sess:
        def worker(seed):
            rng = np.random.default_rng(seed)
            try:
                for i in range(60):
                    v = rng.standard_normal(int(rng.integers(1, 50))).astype(np.float32)
                    if i % 3 == 0:
                        got = sess.run(doubled, {x: v})
                        np.testing.assert_array_equal(got, v + v)
                    elif i % 3 == 1:
                        got_d, got_s = sess.run([doubled, shifted], {x: v})
                        np.testing.assert_array_equal(got_s, (v + v) + np.float32(1))
                    else:
                        with pytest.raises(errors.InvalidArgumentError):
                            sess.run(shifted)                # unfed: fails, session stays usable
            except Exception as e:          # pragma: no cover - reported below
                failures.append(e)
        threads = [threading.Thread(target=worker, args=(s,)) for s in range(8)]
        start = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert time.perf_counter() - start < 60
    assert failures == []


# ---------------------------------------------------------------------- error wrapping

def test_kernel_op_error_keeps_class_and_gets_node_info(fresh):
    x = gp.placeholder(gp.float32, name="x")
    y = gp.raw_ops.SessTestFail(x=x, mode="op_error", name="bad")   # this line is the site
    with Session() as sess:
        with pytest.raises(errors.UnimplementedError) as info:
            sess.run(y, {x: np.ones(4, np.float32)})
        err = info.value
        assert err.op is y.op and err.node_def == y.op.node_def
        assert err.message.endswith("cannot handle 4 values\n\t [[{{node bad}}]]")
        assert "Node: 'bad' (op: SessTestFail, device: /job:localhost/replica:0/task:0/" \
               "device:CPU:0)" in err.message
        assert "Inputs: [float32[4]]" in err.message
        assert y.op.traceback[-1] in err.message and "test_session.py" in err.message
        assert err.__cause__ is None
        assert sess.run(x, {x: 1.0}) == 1.0                        # still usable


def test_non_op_error_becomes_internal_error(fresh):
    x = gp.placeholder(gp.float32, name="x")
    y = gp.raw_ops.SessTestFail(x=x, mode="numpy", name="np_bad")
    with Session() as sess, pytest.raises(errors.InternalError) as info:
        sess.run(y, {x: [1.0]})
    assert "ValueError: matmul: Input operand 1 has a mismatch" in info.value.message
    assert "op: SessTestFail" in info.value.message and "device:CPU:0" in info.value.message
    assert info.value.message.endswith("[[{{node np_bad}}]]")
    assert isinstance(info.value.__cause__, ValueError)


def test_constructor_errors_surface_at_plan_time(fresh):
    x = gp.placeholder(gp.float32, name="x")
    first = count(x, name="first")
    y = gp.raw_ops.SessTestFail(x=first, mode="ctor", name="ctor_bad")
    with Session() as sess:
        with pytest.raises(errors.InvalidArgumentError) as info:
            sess.run(y, {x: 1.0})
        assert RUNS == []                        # nothing ran
        assert "mode 'ctor' is not supported" in info.value.message
        assert info.value.message.endswith("[[{{node ctor_bad}}]]")
        assert info.value.op is y.op
        assert sess.run(first, {x: 2.0}) == 2.0


# ------------------------------------------------------------------------ make_callable

def test_make_callable(fresh, plan_builds):
    x = gp.placeholder(gp.float32, shape=(None,), name="x")
    k = gp.placeholder(gp.float32, shape=(), name="k")
    y = gp.raw_ops.AddV2(x=x, y=k)
    with Session() as sess:
        fn = sess.make_callable([y, {"k": k}], feed_list=[x, "k:0"])
        out = fn([1.0, 2.0], 10)
        assert out[0].tolist() == [11.0, 12.0] and out[1] == {"k": np.float32(10.0)}
        assert fn(np.zeros(1), 1.5)[0].tolist() == [1.5]
        single = sess.make_callable(y.op, [x, k])
        assert single([1.0], 1.0) is None
        assert len(plan_builds) == 2
        with pytest.raises(TypeError, match=r"takes 2 feed value\(s\) \(1 given\)"):
            fn([1.0])
        with pytest.raises(ValueError, match=r"Cannot feed value of shape \(2, 2\) for Tensor "
                                             r"'x:0', which has shape '\(\?,\)'"):
            fn(np.zeros((2, 2)), 1.0)
    with pytest.raises(RuntimeError, match="Attempted to use a closed Session."):
        fn([1.0], 1.0)


def test_make_callable_without_feeds(fresh):
    c = gp.constant(4.0)
    with Session() as sess:
        assert sess.make_callable(c)() == 4.0


# ---------------------------------------------------------------------------- lifecycle

def test_closed_session_refuses_to_run(fresh):
    c = gp.constant(1.0)
    sess = Session()
    assert sess.run(c) == 1.0
    sess.close()
    with pytest.raises(RuntimeError) as info:
        sess.run(c)
    assert str(info.value) == "Attempted to use a closed Session."


def test_context_manager_sets_defaults_and_closes():
    g = gp.Graph()
    sess = Session(graph=g)
    with sess as entered:
        assert entered is sess and get_default_session() is sess
        assert gp.get_default_graph() is g
        c = gp.constant(2.0)
        assert c.graph is g and sess.run(c) == 2.0
    assert get_default_session() is None
    with pytest.raises(RuntimeError, match="closed Session"):
        sess.run(c)


def test_empty_graph(fresh):
    with Session() as sess, pytest.raises(RuntimeError, match="The Session graph is empty"):
        sess.run([])


def test_config_and_logging(fresh, capsys):
    c = gp.constant(1.0, name="c")
    config = {"log_device_placement": True}
    with Session(config=config) as sess:
        sess.run(c)
    assert "c: (Const): /job:localhost/replica:0/task:0/device:CPU:0" in capsys.readouterr().err
    with pytest.raises(errors.UnimplementedError, match="target 'grpc://x:1' is not supported"):
        Session(target="grpc://x:1")


def test_dtypes_survive_the_round_trip(fresh):
    for dtype in (gp.float16, gp.bfloat16, gp.float64, gp.int8, gp.uint8, gp.int64, gp.bool):
        p = gp.placeholder(dtype, shape=(2,))
        with Session() as sess:
            out = sess.run(count(p), {p: [1, 0]})
        assert out.dtype == dtype.as_numpy_dtype and out.tolist() == [1, 0]
    assert dtypes.float32.as_numpy_dtype is np.float32


def test_fetched_constants_are_writable_copies():
    g = gp.Graph()
    with g.as_default():
        c = gp.constant([1.0, 2.0], name="c")
    with gp.Session(graph=g) as sess:
        first = sess.run(c)
        first[0] = 5.0                       # the caller owns what it fetched
        assert sess.run(c).tolist() == [1.0, 2.0]
