"""Elementwise clusters run as one compiled program (graphops/runtime/elementwise_clusters.py):
which nodes cluster (never into a step that waits on itself), that a cluster gives the
unfused kernels' values (the arithmetic bit for bit, NaN, infinities and -0 included; exp,
tanh and sigmoid within an ulp of float64's), broadcasting in every pattern, and that
nothing TF's semantics promise (fetches, feeds, control edges, errors) changes."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import graphops as gp
from graphops.runtime import elementwise_clusters, executor, fusion
from graphops.runtime.steps import ClusterStep
from tests.kernels.test_kernel_repeats_more import compiled_sigmoid
from tests.op_runners import plan_kernel_steps
from graphops.kernels.support.kernel_util import PARALLEL_MIN_SIZE_COMPUTE


@pytest.fixture(autouse=True)
def graph(request):
    """A default graph; the program runs wherever a recipe fits (whether it pays is
    ``test_the_program_runs_where_it_pays``'s)."""
    with pytest.MonkeyPatch.context() as patch:
        if "pays" not in request.node.name:
            patch.setattr(elementwise_clusters, "_prior", lambda *args: ("program", "program"))
        g = gp.Graph()
        with g.as_default():
            yield g


def _clusters(fetches, feeds=()):
    """[member op types] of each cluster step of the plan."""
    return [[op.type for op in step.kernel.ops] for step in plan_kernel_steps(fetches, feeds)
            if isinstance(step, ClusterStep)]


def _run(fetches, feed, fused=True):
    """The fetches' values from a new Session, with clusters (and chains) or without."""
    with pytest.MonkeyPatch.context() as patch:
        if not fused:
            patch.setattr(fusion, "fuse_chains", lambda *args: {})
        with np.errstate(all="ignore"), gp.Session() as sess:
            return sess.run(fetches, feed)


def _assert_same_bits(got, want, zero_signs=True):
    """Equal values, and signs (a NaN's too); ``zero_signs``: a zero's too (else a tie of
    max or min between -0 and 0 may leave either: the cluster keeps TF's first operand,
    NumPy's vector loops the second)."""
    np.testing.assert_array_equal(got, want)
    signs = np.signbit(got) == np.signbit(want)
    assert np.all(signs if zero_signs else signs | (got == 0))


def _hostile(rng, shape, dtype=np.float32):
    """Values with NaN, infinities, -0, zeros and a wide range."""
    x = (rng.standard_normal(shape) * 8).astype(dtype)
    flat = x.reshape(-1)
    for value, at in ((np.nan, 0), (np.inf, 3), (-np.inf, 5), (-0.0, 7), (0.0, 9)):
        if at < flat.size:
            flat[at] = value
    return x


def test_an_lstm_cell_is_one_step_with_the_kernels_values():
    """The gates of an LSTM cell (3 sigmoids, 2 tanh, 3 products and a sum) are one step;
    both values it gives (the new c and h, each read elsewhere) are within an ulp of the
    float64 reference, and the two products and the sum rounded as the kernels round."""
    rng = np.random.default_rng(0)
    z = [gp.placeholder(gp.float32, [None, 64]) for _ in range(4)]
    c_prev = gp.placeholder(gp.float32, [None, 64])
    i, f, g, o = gp.sigmoid(z[0]), gp.sigmoid(z[1]), gp.tanh(z[2]), gp.sigmoid(z[3])
    c = f * c_prev + i * g
    h = o * gp.tanh(c)
    assert _clusters([c, h], z + [c_prev]) == [
        ["Sigmoid", "Sigmoid", "Tanh", "Sigmoid", "Mul", "Mul", "AddV2", "Tanh", "Mul"]]
    values = [rng.standard_normal((3, 64)).astype(np.float32) * 4 for _ in range(5)]
    feed = dict(zip(z + [c_prev], values))
    got_c, got_h = _run([c, h], feed)
    want_c, want_h = _run([c, h], feed, fused=False)
    np.testing.assert_allclose(got_c, want_c, rtol=3e-7, atol=3e-7)
    np.testing.assert_allclose(got_h, want_h, rtol=3e-7, atol=3e-7)
    z64 = [v.astype(np.float64) for v in values]
    sig = lambda v: 1 / (1 + np.exp(-v))      # noqa: E731
    ref_c = sig(z64[1]) * z64[4] + sig(z64[0]) * np.tanh(z64[2])
    np.testing.assert_allclose(got_c, ref_c, rtol=3e-7, atol=3e-7)
    np.testing.assert_allclose(got_h, sig(z64[3]) * np.tanh(ref_c), rtol=5e-7, atol=5e-7)


def test_transcendentals_are_within_an_ulp_of_float64():
    """exp of float32 values (0, tiny, huge, NaN, +-inf) in a cluster is the float64 value
    rounded once, give or take an ulp; tanh, computed in float32, within 2 ulp; sigmoid,
    computed in float32 as the Sigmoid kernel computes it (the same bits), within 3."""
    x = gp.placeholder(gp.float32, [None])
    values = np.concatenate([np.float32([0, -0.0, 1e-30, -1e-8, 3e-4, 88.7, 89, -104, -120,
                                         np.inf, -np.inf, np.nan]),
                             np.random.default_rng(1).standard_normal(5000).astype(
                                 np.float32) * 10])
    ops = {"exp": (gp.exp, np.exp), "tanh": (gp.tanh, np.tanh),
           "sigmoid": (gp.sigmoid, lambda v: np.where(v >= 0, 1 / (1 + np.exp(-v)),
                                                      np.exp(v) / (1 + np.exp(v))))}
    for name, (ours, reference) in ops.items():
        out = gp.negative(gp.abs(ours(x)))     # three members, so a cluster forms
        assert _clusters([out], [x]) == [[ours(x).op.type, "Abs", "Neg"]], name
        got = _run(out, {x: values})
        with np.errstate(all="ignore"):
            want = -np.abs(reference(values.astype(np.float64)).astype(np.float32))
        np.testing.assert_array_max_ulp(got, want, maxulp={"sigmoid": 3, "tanh": 2}.get(name, 1))
        if name == "sigmoid":
            np.testing.assert_array_equal(got, -np.abs(compiled_sigmoid(values)))


def test_float32_tanh_over_its_whole_range():
    """Every float32 magnitude from 2**-149 to 2**5, both signs, and the special values:
    within 2 ulp, the value itself below 2**-12 (-0 and subnormals kept), +-1 at +-inf."""
    exponents = np.arange(-149, 6, dtype=np.float64)
    mantissas = np.random.default_rng(2).uniform(1, 2, (exponents.size, 64))
    magnitudes = (mantissas * 2.0 ** exponents[:, None]).astype(np.float32).reshape(-1)
    values = np.concatenate([magnitudes, -magnitudes, np.float32(
        [0, -0.0, np.inf, -np.inf, np.nan, 0.625, -0.625, 2.0 ** -12, 9.01])])
    x = gp.placeholder(gp.float32, [None])
    out = gp.negative(gp.negative(gp.tanh(x)))       # three members, so a cluster forms
    assert _clusters([out], [x]) == [["Tanh", "Neg", "Neg"]]
    got = _run(out, {x: values})
    tiny = np.abs(values) < 2.0 ** -12
    np.testing.assert_array_equal(got[tiny].view(np.uint32), values[tiny].view(np.uint32))
    nan = np.isnan(values)
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_max_ulp(got[~nan], np.tanh(values[~nan].astype(np.float64)).astype(
        np.float32), 2)
    assert got[-7] == 1 and got[-6] == -1


_UNARY = [gp.negative, gp.abs, gp.square, gp.nn.relu, gp.nn.relu6, gp.math.reciprocal,
          gp.sqrt, gp.math.rsqrt]
_BINARY = [gp.add, gp.subtract, gp.multiply, gp.math.truediv, gp.maximum, gp.minimum]
_SHAPES = {"full": (3, 4, 5), "scalar": (), "row": (5,), "rows": (4, 5), "column": (3, 1, 1),
           "columns": (3, 4, 1), "one": (1, 1, 5)}


def random_dag(recipe, inputs, unary_ops=tuple(_UNARY), binary_ops=tuple(_BINARY)):
    """The values a DAG made by ``recipe`` computes from ``inputs``: per (unary, kind, a, b)
    one op (its kind-th of ``unary_ops`` or ``binary_ops``) on the a-th (and b-th) value
    so far."""
    values = list(inputs)
    for unary, kind, a, b in recipe:
        x = values[a % len(values)]
        if unary:
            values.append(unary_ops[kind % len(unary_ops)](x))
        else:
            values.append(binary_ops[kind % len(binary_ops)](x, values[b % len(values)]))
    return values[len(inputs):]


@settings(max_examples=40, deadline=None)
@given(st.sampled_from([np.float32, np.float64]),
       st.lists(st.tuples(st.booleans(), st.integers(0, 7), st.integers(0, 20),
                          st.integers(0, 20)), min_size=2, max_size=9),
       st.lists(st.sampled_from(sorted(_SHAPES)), min_size=1, max_size=4),
       st.integers(0, 2 ** 31))
def test_random_arithmetic_clusters_give_the_kernels_bits(dtype, recipe, shapes, seed):
    """Random DAGs of the exactly rounded ops over inputs that broadcast in every pattern
    the grid takes (scalars, rows, columns, full): one cluster, the unfused bits."""
    rng = np.random.default_rng(seed)
    tf_dtype = gp.as_dtype(dtype)
    inputs = [gp.placeholder(tf_dtype, _SHAPES["full"])]
    inputs += [gp.placeholder(tf_dtype, _SHAPES[name]) for name in shapes]
    made = random_dag(recipe, inputs)
    outs = [made[-1], made[len(made) // 2]]
    feed = {t: _hostile(rng, t.shape.as_list(), dtype) for t in inputs}
    for got, want in zip(_run(outs, feed), _run(outs, feed, fused=False)):
        _assert_same_bits(got, want, zero_signs=False)


def test_a_path_through_another_node_keeps_two_clusters():
    """a -> (a node no cluster takes) -> b: a and b in one step would wait on itself."""
    x = gp.placeholder(gp.float32, [2, 3])
    a = gp.abs(gp.tanh(x)) * 2.0
    total = gp.reduce_sum(a, axis=1, keepdims=True)
    b = gp.exp(a) + total
    out = gp.sigmoid(b) * a
    clusters = _clusters([out], [x])
    assert len(clusters) == 2 and "ReduceSum" not in sum(clusters, [])
    value = np.float32([[1, -2, 0.5], [3, 0, -1]])
    np.testing.assert_allclose(_run(out, {x: value}), _run(out, {x: value}, fused=False),
                               rtol=3e-7)


def test_values_read_elsewhere_and_fetched_come_out():
    """A member read by a node that comes before the cluster's last member (in the
    graph's order) and a fetched member are outputs; the readers run after the step."""
    x = gp.placeholder(gp.float32, [4])
    y = gp.placeholder(gp.float32, [4])
    first = x * y
    side = gp.reduce_max(first)            # reads a member, sits before the last one
    last = gp.square(first - 1.0) + y
    out = last * side                      # (+ y, * side: a chain of two run-time operands)
    assert _clusters([out, first], [x, y]) == [["Mul", "Sub", "Square"]]
    feed = {x: np.float32([1, 2, -3, 0.5]), y: np.float32([2, -1, 4, 8])}
    for got, want in zip(_run([out, first], feed), _run([out, first], feed, fused=False)):
        _assert_same_bits(got, want)


def test_what_must_not_cluster():
    """Fed and control-edge nodes, integer and half dtypes, groups of fewer than three
    nodes of the full shape, channels-first BiasAdd: steps of their own."""
    x = gp.placeholder(gp.float32, [2, 3])
    a = gp.tanh(x)
    b = a * 2.0
    assert _clusters([b + 1.0], [x, b]) == []                    # b fed: a alone, then b + 1
    with gp.control_dependencies([a.op]):
        waits = gp.identity(x)
    assert _clusters([b, waits], [x]) == []                      # a: a control edge
    n = gp.placeholder(gp.int32, [2, 3])
    assert _clusters([(n + 1) * n], [n]) == []
    h = gp.placeholder(gp.float16, [2, 3])
    assert _clusters([gp.tanh(h) * h], [h]) == []
    assert _clusters([gp.abs(gp.tanh(x))], [x]) == []           # two: not worth a program
    gate = gp.sigmoid(gp.placeholder(gp.float32, [2, 1, 3]) + 1.0)  # squeeze-and-excite:
    assert _clusters([gate * x * 2.0], [x]) == []        # one node of the full shape (x)
    nchw = gp.placeholder(gp.float32, [2, 3, 4, 4])
    out = gp.tanh(gp.nn.bias_add(nchw, gp.constant(np.ones(3, np.float32)),
                                 data_format="NCHW"))
    assert _clusters([gp.abs(out) * 2.0], [nchw]) == [["Tanh", "Abs", "Mul"]]


@pytest.mark.parametrize("rows, lifted", [(5, True), (16384, False)])
def test_small_members_are_computed_by_the_program_or_by_their_kernels(rows, lifted):
    """A batch norm's per-channel factors ([C]) are members of a smaller shape. Over few
    rows the program computes them too, at the full shape (the same values, broadcast);
    over many, a pass over every element would cost more than their kernels' calls: their
    own kernels compute them, and the program reads them as rows. The kernels' bits either
    way (shapes left unknown: no chain takes the per-channel operands)."""
    rng = np.random.default_rng(3)
    x = gp.placeholder(gp.float32, [None, 8])
    mean, var, gamma, beta = (gp.placeholder(gp.float32, [None]) for _ in range(4))
    scale = gamma * gp.math.rsqrt(var + 1e-3)
    out = gp.nn.relu6((x - mean) * scale) + beta
    [cluster] = [s.kernel for s in plan_kernel_steps([out], [x, mean, var, gamma, beta])
                 if isinstance(s, ClusterStep)]
    assert len(cluster.ops) == 7
    feed = {x: _hostile(rng, (rows, 8)), mean: rng.standard_normal(8).astype(np.float32),
            var: _hostile(rng, 8), gamma: rng.standard_normal(8).astype(np.float32),
            beta: rng.standard_normal(8).astype(np.float32)}
    _assert_same_bits(_run(out, feed), _run(out, feed, fused=False))
    recipe = cluster.recipe([feed[t] if t in feed else np.asarray(np.float32(1e-3))
                             for t in cluster.inputs])      # the feeds and epsilon
    assert len(recipe.small) == (0 if lifted else 3) and recipe.plan[:2].tolist() == [rows, 8]


def test_a_small_member_read_outside_keeps_its_kernel_and_shape():
    """Per-row factors fetched besides the cluster's result are not computed at the full
    shape: their kernels give them, [N, 1]."""
    x = gp.placeholder(gp.float32, [None, 6])
    mean, var = (gp.placeholder(gp.float32, [None, 1]) for _ in range(2))
    factor = gp.math.rsqrt(var + mean) * var - mean
    out = (x - mean) * factor + x
    [cluster] = [s.kernel for s in plan_kernel_steps([out, factor], [x, mean, var])
                 if isinstance(s, ClusterStep)]
    assert len(cluster.ops) == 7
    rng = np.random.default_rng(4)
    feed = {x: _hostile(rng, (3, 6)), mean: _hostile(rng, (3, 1)), var: _hostile(rng, (3, 1))}
    got, want = _run([out, factor], feed), _run([out, factor], feed, fused=False)
    assert got[1].shape == (3, 1)
    for g, w in zip(got, want):
        _assert_same_bits(g, w)
    assert len(cluster.recipe([feed[t] for t in cluster.inputs]).small) == 4


def test_shapes_the_kernels_refuse_give_their_errors_naming_the_node():
    """Shapes that do not broadcast, a bias that does not match and a value over the
    memory budget: the members' kernels run, and the failing one's error names it."""
    x = gp.placeholder(gp.float32, None, name="x")
    y = gp.placeholder(gp.float32, None, name="y")
    out = gp.tanh(gp.add(gp.exp(x), y, name="sum")) * 2.0
    assert len(_clusters([out], [x, y])) == 1
    with gp.Session() as sess:
        np.testing.assert_allclose(sess.run(out, {x: [0.0], y: [[1.0], [2.0]]}),
                                   2 * np.tanh([[2.0], [3.0]]), rtol=1e-6)
        with pytest.raises(gp.errors.InvalidArgumentError,
                           match=r"Incompatible shapes: \[2,3\] vs. \[4\]") as err:
            sess.run(out, {x: np.zeros((2, 3)), y: np.zeros(4)})
        assert err.value.op.name == "sum"
        with gp.config.memory_budget(1 << 12), \
                pytest.raises(gp.errors.ResourceExhaustedError, match="OOM") as err:
            sess.run(out, {x: np.zeros((64, 64)), y: np.zeros((64, 1))})
        assert err.value.op.name == "sum"
    bias = gp.nn.bias_add(x, y, name="bias")
    with gp.Session() as sess:
        with pytest.raises(gp.errors.InvalidArgumentError,
                           match="Must provide as many biases") as err:
            sess.run(gp.tanh(bias) * 2.0, {x: np.ones((2, 4)), y: np.ones(1)})
        assert err.value.op.name == "bias"


@pytest.mark.parametrize("name", ["TanhGrad", "SigmoidGrad"])
def test_activation_gradients_cluster_with_the_kernels_bits_and_shapes(name):
    """y, dy -> dy * (1 - y * y) or dy * y * (1 - y) in a cluster: the kernel's bits; a dy
    of y's size in another shape (which the kernel reshapes to y's, and a program would
    broadcast) or another size runs the kernels, whose error names the node."""
    from graphops.api import raw_ops as R
    y = gp.placeholder(gp.float32, None, name="y")
    dy = gp.placeholder(gp.float32, None, name="dy")
    out = -gp.abs(getattr(R, name)(y=y, dy=dy, name="grad")) * 2.0
    assert _clusters([out], [y, dy]) == [[name, "Abs", "Neg", "Mul"]]
    rng = np.random.default_rng(2)
    values = {y: _hostile(rng, (3, 40)), dy: _hostile(rng, (3, 40))}
    _assert_same_bits(_run(out, values), _run(out, values, fused=False))
    for shape in ((40, 3), (1, 3, 40)):
        values[dy] = values[dy].reshape(shape)
        got = _run(out, values)
        assert got.shape == (3, 40)
        _assert_same_bits(got, _run(out, values, fused=False))
    with gp.Session() as sess, pytest.raises(
            gp.errors.InvalidArgumentError, match="must have same number of elements, "
                                                  "got 120 and 40") as err:
        sess.run(out, {y: values[y], dy: np.ones(40, np.float32)})
    assert err.value.op.name == "grad"


def test_strided_empty_and_large_inputs():
    """A strided view (a split's piece), an empty batch, and a value large enough for the
    program's blocks to run on several threads."""
    rng = np.random.default_rng(4)
    x = gp.placeholder(gp.float32, [None, 12])
    a, b, c = gp.split(x, 3, axis=1)
    out = gp.sigmoid(a) * gp.tanh(b) - gp.nn.relu(c)
    for rows in (7, 0, PARALLEL_MIN_SIZE_COMPUTE // 4 + 3):
        value = _hostile(rng, (rows, 12))
        got, want = _run(out, {x: value}), _run(out, {x: value}, fused=False)
        assert got.shape == (rows, 4)
        np.testing.assert_allclose(got, want, rtol=3e-7, atol=3e-7)
    assert _clusters([out], [x]) == [["Sigmoid", "Tanh", "Mul", "Relu", "Sub"]]


def test_division_by_zero_and_nan_order_follow_numpy():
    """x / 0 is +-inf or NaN, max and min keep NaN from either side, as the kernels."""
    x = gp.placeholder(gp.float64, [None])     # (unknown: no chain takes the sums)
    y = gp.placeholder(gp.float64, [None])
    quotient, larger, smaller = x / y, gp.maximum(x, y), gp.minimum(y, x)
    outs = [quotient, larger, smaller, quotient + larger + smaller]
    assert len(_clusters(outs, [x, y])) == 1
    feed = {x: np.float64([1, -1, 0, np.nan, 2, -0.0]),
            y: np.float64([0, 0, 0, 1, np.nan, 0.0])}
    for got, want in zip(_run(outs, feed), _run(outs, feed, fused=False)):
        _assert_same_bits(got, want, zero_signs=False)


def test_a_cluster_in_a_while_body_and_its_gradient(monkeypatch):
    """Clusters form in a While's body (and its gradient's): the loop's value is NumPy's,
    its gradient the unfused one."""
    made = []
    monkeypatch.setattr(elementwise_clusters, "find_clusters", lambda fusion, find=(
        elementwise_clusters.find_clusters): made.append(find(fusion)) or made[-1])
    x = gp.placeholder(gp.float32, [2, 3])
    weights = np.linspace(-1, 1, 9, dtype=np.float32).reshape(3, 3)

    def body(i, h):
        return i + 1, gp.tanh(gp.matmul(h, weights)) * gp.sigmoid(h) + 0.5 * h

    _, h = gp.while_loop(lambda i, h: i < 4, body, [0, x])
    grad = gp.gradients(gp.reduce_sum(h), x)[0]
    value = np.float32([[0.3, -1, 2], [0.1, 0.4, -0.7]])
    got = _run([h, grad], {x: value})
    assert any(len(found) for found in made)
    want = value.astype(np.float64)
    for _ in range(4):
        want = np.tanh(want @ weights) / (1 + np.exp(-want)) + 0.5 * want
    np.testing.assert_allclose(got[0], want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[1], _run(grad, {x: value}, fused=False), rtol=1e-5,
                               atol=1e-6)


def test_contracted_order_puts_readers_after_the_step():
    """contracted_order keeps a topological order with each cluster as one node."""
    x = gp.placeholder(gp.float32, [3])
    a = gp.exp(x)
    side = gp.reduce_sum(a)
    out = gp.tanh(a) + 1.0
    ops, _ = executor.prune_and_sort([x], [out, side], [])
    fused = {out.op._id: elementwise_clusters.Cluster(
        [a.op, out.op.inputs[0].op, out.op], ["exp", "tanh", "add"], np.dtype(np.float32),
        lambda op: op is out.op or op is a.op)}
    order = [op.name for op in elementwise_clusters.contracted_order(ops, fused)]
    assert order.index(side.op.name) > order.index(out.op.name)


def test_the_program_runs_where_it_pays():
    """The estimates: many steps over few elements (an LSTM cell at batch 1) lean to the
    program; three cheap steps over one row to their kernels (the program's own step costs
    more than theirs), over a mid-sized tensor to the program (an instruction costs a fifth
    of a NumPy pass); transcendentals over a mid-sized tensor to their kernels (the
    program's float32 exp goes through float64). None of these is clear, so each is timed;
    a long chain over few elements is clearly the program's, and large tensors always take
    the program."""
    x = gp.placeholder(gp.float32, [None, 256])
    b = gp.placeholder(gp.float32, [256])
    cell = gp.tanh(gp.sigmoid(x) * gp.exp(x) + b)
    [cluster] = [s.kernel for s in plan_kernel_steps([cell], [x, b]) if isinstance(s, ClusterStep)]
    values = lambda rows: [np.ones((rows, 256), np.float32), np.ones(256, np.float32)]  # noqa
    ways = lambda rows: (cluster.recipe(values(rows)).prior,  # noqa: E731
                         cluster.recipe(values(rows)).path)
    assert ways(1) == ("program", None) and ways(128) == ("kernels", None)
    cheap = gp.abs(gp.maximum(x, b) - x)
    [cluster] = [s.kernel for s in plan_kernel_steps([cheap], [x, b])
                 if isinstance(s, ClusterStep)]
    assert ways(1) == ("kernels", None) and ways(512) == ("program", None)
    assert ways(PARALLEL_MIN_SIZE_COMPUTE // 256) == ("program", "program")
    chain = x
    for _ in range(6):
        chain = gp.abs(chain * b - x)
    [cluster] = [s.kernel for s in plan_kernel_steps([chain], [x, b])
                 if isinstance(s, ClusterStep)]
    assert ways(1) == ("program", "program")
    feed = {x: np.arange(128 * 256, dtype=np.float32).reshape(128, 256), b: values(1)[1]}
    np.testing.assert_array_equal(_run(cheap, feed), np.abs(np.maximum(feed[x], 1) - feed[x]))


@pytest.mark.parametrize("program_cost, kernels_cost, chosen", [
    (1.0, 3.0, "program"), (3.0, 1.0, "kernels"), (1.0, 1.1, "kernels")])
def test_a_timed_signature_takes_the_faster_way_that_pays(program_cost, kernels_cost, chosen):
    """A signature whose estimates are close runs the program and the kernels in turn, the
    estimate's way first, WARM_UPS + TRIALS times each, then the faster one from then on
    (the estimate's unless the other is MARGIN times faster); every run gives the
    kernels' bits."""
    x = gp.placeholder(gp.float32, [None, 256])
    b = gp.placeholder(gp.float32, [256])
    cheap = gp.abs(gp.maximum(x, b) - x)
    clock, ways = [0.0], []
    program, members = elementwise_clusters.Recipe._program, ClusterStep._run_members

    def timed(way, cost, run):
        def call(self, *args):
            ways.append(way)
            clock[0] += cost
            return run(self, *args)
        return call
    feed = {x: np.linspace(-3, 3, 256, dtype=np.float32).reshape(1, 256),
            b: np.linspace(2, -2, 256, dtype=np.float32)}
    want = np.abs(np.maximum(feed[x], feed[b]) - feed[x])
    runs = 2 * (elementwise_clusters.WARM_UPS + elementwise_clusters.TRIALS)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(elementwise_clusters, "_clock", lambda: clock[0])
        patch.setattr(elementwise_clusters.Recipe, "_program",
                      timed("program", program_cost, program))
        patch.setattr(ClusterStep, "_run_members", timed("kernels", kernels_cost, members))
        with gp.Session() as sess:
            for _ in range(runs + 3):
                _assert_same_bits(sess.run(cheap, feed), want)
    assert ways[:runs] == ["kernels", "program"] * (runs // 2)     # the estimate's first
    assert ways[runs:] == [chosen] * 3
