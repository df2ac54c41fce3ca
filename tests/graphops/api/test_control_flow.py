"""gp.cond and gp.while_loop: If / While ops over library functions, their kernels and
gradients, checked against plain Python/NumPy references."""

import collections

import numpy as np
import pytest

import graphops as gp
from graphops.registry.errors import InvalidArgumentError

R = gp.raw_ops


def _types(graph):
    return [op.type for op in graph.get_operations()]


@pytest.fixture
def graph():
    g = gp.Graph()
    with g.as_default():
        yield g


# ------------------------------------------------------------------------------ cond

def test_cond_runs_the_branch_the_predicate_selects(graph):
    x = gp.placeholder(gp.float32, [3], name="x")
    p = gp.placeholder(gp.bool, [], name="p")
    y = gp.cond(p, lambda: x * 2.0, lambda: x - 1.0)
    assert y.name == "cond/Identity:0" and y.shape.as_list() == [3]
    assert _types(graph) == ["Placeholder", "Placeholder", "StatelessIf", "Identity"]
    op = graph.get_operation_by_name("cond")
    assert [t.name for t in op.inputs] == ["p:0", "x:0"]
    assert sorted(graph._functions) == sorted([op.get_attr("then_branch"),
                                               op.get_attr("else_branch")])
    xv = np.array([1.0, -2.0, 3.0], np.float32)
    with gp.Session() as sess:
        np.testing.assert_array_equal(sess.run(y, {x: xv, p: True}), xv * 2)
        np.testing.assert_array_equal(sess.run(y, {x: xv, p: False}), xv - 1)


def test_cond_keeps_nested_result_structures(graph):
    p = gp.placeholder(gp.bool, [])
    a, b = gp.constant(1.0), gp.constant(2)
    pair = collections.namedtuple("pair", "first second")
    single = gp.cond(p, lambda: [a], lambda: [a + 1.0])
    assert isinstance(single, list) and len(single) == 1
    nested = gp.cond(p, lambda: {"k": pair(a, [b, b])}, lambda: {"k": pair(a * 3.0, [b, b + 1])})
    assert isinstance(nested["k"], pair) and isinstance(nested["k"].second, list)
    with gp.Session() as sess:
        assert sess.run(single, {p: False}) == [2.0]
        result = sess.run(nested, {p: False})
        assert result["k"].first == 3.0 and result["k"].second == [2, 3]
        assert sess.run(nested, {p: True})["k"].second == [2, 2]


def test_cond_with_a_variable_is_a_stateful_if_and_runs_only_the_taken_side_effects(graph):
    x = gp.placeholder(gp.float32, None, name="x")
    p = gp.placeholder(gp.bool, [], name="p")
    counter = gp.Variable(0.0, name="counter")

    def increment():
        with gp.control_dependencies([counter.assign_add(1.0)]):
            return R.Identity(input=x)

    def decrement():
        with gp.control_dependencies([counter.assign_sub(10.0)]):
            return R.Identity(input=x) * 2.0

    y = gp.cond(p, increment, decrement)
    assert graph.get_operation_by_name("cond").type == "If"
    assert "AssignVariableOp" not in _types(graph)[-3:]
    with gp.Session() as sess:
        sess.run(counter.initializer)
        assert list(sess.run(y, {x: [1.0, 2.0], p: True})) == [1.0, 2.0]
        assert sess.run(counter) == 1.0
        assert list(sess.run(y, {x: [1.0], p: False})) == [2.0]
        assert sess.run(counter) == -9.0
        assert sess.run(y, {x: [], p: True}).shape == (0,)
        assert sess.run(counter) == -8.0


def test_batch_norm_with_cond_updates_the_moving_mean_only_when_training(graph):
    """TF1's batch norm under tf.cond: the training branch assigns the moving mean under
    control dependencies and normalises with the batch mean; inference uses the moving one."""
    x = gp.placeholder(gp.float32, [4, 2])
    training = gp.placeholder(gp.bool, [])
    moving = gp.Variable(np.zeros(2, np.float32), name="moving_mean")
    batch_mean = gp.reduce_mean(x, axis=0)

    def train_branch():
        update = moving.assign(moving * 0.5 + batch_mean * 0.5)
        with gp.control_dependencies([update]):
            return R.Identity(input=batch_mean)

    mean = gp.cond(training, train_branch, lambda: moving.value())
    normalised = x - mean
    data = np.arange(8, dtype=np.float32).reshape(4, 2)
    with gp.Session() as sess:
        sess.run(moving.initializer)
        np.testing.assert_allclose(sess.run(normalised, {x: data, training: False}), data)
        np.testing.assert_allclose(sess.run(moving), [0, 0])
        np.testing.assert_allclose(sess.run(normalised, {x: data, training: True}),
                                   data - data.mean(0))
        np.testing.assert_allclose(sess.run(moving), data.mean(0) / 2)
        np.testing.assert_allclose(sess.run(normalised, {x: data, training: False}),
                                   data - data.mean(0) / 2)


def test_cond_predicate_errors(graph):
    x = gp.constant(1.0)
    with pytest.raises(TypeError, match="pred must not be a Python bool"):
        gp.cond(True, lambda: x, lambda: x)
    with pytest.raises(TypeError, match="'true_fn' must be callable."):
        gp.cond(gp.constant(True), x, lambda: x)
    with pytest.raises(TypeError, match="cond\\(\\): 'false_fn' argument required"):
        gp.cond(gp.constant(True), lambda: x)
    p = gp.placeholder(gp.bool, None)
    y = gp.cond(p, lambda: x, lambda: x + 1.0)
    assert _types(graph)[-3:] == ["Squeeze", "StatelessIf", "Identity"]
    with gp.Session() as sess:
        assert sess.run(y, {p: [[False]]}) == 2.0
        with pytest.raises(InvalidArgumentError,
                           match=r"The second input must be a scalar, but it has shape \[2\]"):
            sess.run(y, {p: [True, False]})


def test_cond_branches_must_agree(graph):
    p = gp.placeholder(gp.bool, [])
    x = gp.constant(1.0)
    with pytest.raises(TypeError, match="true_fn and false_fn arguments to tf.cond must have "
                                        "the same number, type, and overall structure"):
        gp.cond(p, lambda: x, lambda: gp.constant(1))
    with pytest.raises(TypeError, match="overall structure"):
        gp.cond(p, lambda: x, lambda: (x, x))


def test_an_error_inside_a_branch_names_the_branch_node(graph):
    x = gp.placeholder(gp.float32, None)
    p = gp.placeholder(gp.bool, [])
    y = gp.cond(p, lambda: R.Reshape(tensor=x, shape=[3], name="bad_reshape"), lambda: x)
    with gp.Session() as sess:
        with pytest.raises(InvalidArgumentError) as info:
            sess.run(y, {x: np.zeros(4), p: True})
    assert "bad_reshape" in str(info.value) and "{{node cond}}" in str(info.value)
    assert "Input to reshape is a tensor with 4 values" in str(info.value)


def test_cond_eagerly_calls_the_branch():
    assert gp.cond(np.array(True), lambda: 1, lambda: 2) == 1
    assert gp.cond(False, lambda: [1], lambda: [2]) == 2     # TF's eager unpacking


# ------------------------------------------------------------------------------ while

def test_while_loop_values_and_ops(graph):
    n = gp.placeholder(gp.int32, [], name="n")
    i, total = gp.while_loop(lambda i, s: R.Less(x=i, y=n),
                             lambda i, s: (i + 1, s + i * i), [0, 0])
    assert _types(graph) == ["Placeholder", "Const", "Const", "Const", "Const",
                             "StatelessWhile"] + ["Identity"] * 5
    assert [op.name for op in graph.get_operations()][3:6] == [
        "while/maximum_iterations", "while/loop_counter", "while"]
    assert i.name == "while/Identity_2:0"
    with gp.Session() as sess:
        for value in (0, 1, 7):
            assert sess.run([i, total], {n: value}) == [value, sum(k * k for k in range(value))]


def test_while_loop_stops_at_maximum_iterations(graph):
    x = gp.placeholder(gp.float32, [2])
    limit = gp.placeholder(gp.int32, [])
    y = gp.while_loop(lambda a: R.Less(x=gp.reduce_sum(a), y=1e6), lambda a: [a * 2.0], [x],
                      maximum_iterations=limit)
    assert isinstance(y, gp.Tensor)          # a single loop var comes back unpacked
    same = gp.while_loop(lambda a: R.Less(x=gp.reduce_sum(a), y=1e6), lambda a: a * 2.0,
                         [x], return_same_structure=True)
    assert isinstance(same, list) and len(same) == 1
    with gp.Session() as sess:
        assert list(sess.run(y, {x: [1, 2], limit: 3})) == [8, 16]
        assert list(sess.run(y, {x: [1, 2], limit: 0})) == [1, 2]
        assert list(sess.run(y, {x: [1, 2], limit: 100})) == [2 ** 19, 2 ** 20]
        assert list(sess.run(same[0], {x: [1, 2]})) == [2 ** 19, 2 ** 20]


def test_while_loop_with_a_captured_variable_and_side_effects(graph):
    w = gp.Variable(3.0, name="w")
    steps = gp.Variable(0, name="steps")

    def body(i, acc):
        with gp.control_dependencies([steps.assign_add(1)]):
            return i + 1, acc * w.value()

    result = gp.while_loop(lambda i, acc: R.Less(x=i, y=4), body, (0, 1.0))
    assert isinstance(result, tuple)
    assert graph.get_operation_by_name("while").type == "While"
    with gp.Session() as sess:
        sess.run(gp.global_variables_initializer())
        assert sess.run(result) == (4, 81.0)
        assert sess.run(steps) == 4


def test_nested_cond_inside_while(graph):
    """Collatz steps: a cond in the loop body."""
    start = gp.placeholder(gp.int32, [])

    def body(n, count):
        even = R.Equal(x=R.FloorMod(x=n, y=2), y=0)
        n = gp.cond(even, lambda: R.FloorDiv(x=n, y=2), lambda: n * 3 + 1)
        return n, count + 1

    _, count = gp.while_loop(lambda n, c: R.NotEqual(x=n, y=1), body, [start, 0])

    def collatz(n):
        count = 0
        while n != 1:
            n, count = (n // 2 if n % 2 == 0 else 3 * n + 1), count + 1
        return count

    with gp.Session() as sess:
        for n in (1, 6, 27):
            assert sess.run(count, {start: n}) == collatz(n)


def test_while_loop_shape_invariants(graph):
    x = gp.constant([1.0])
    grow = lambda i, a: (i + 1, R.ConcatV2(values=[a, a], axis=0))     # noqa: E731
    with pytest.raises(ValueError, match=r"Input tensor `Const:0` enters the loop with shape "
                                         r"\(1,\), but has shape \(2,\) after one iteration"):
        gp.while_loop(lambda i, a: R.Less(x=i, y=3), grow, [0, x])
    _, a = gp.while_loop(lambda i, a: R.Less(x=i, y=3), grow, [0, x],
                         shape_invariants=[gp.TensorShape([]), gp.TensorShape([None])])
    assert a.shape.as_list() == [None]
    with pytest.raises(ValueError, match="is not compatible with the initial shape"):
        gp.while_loop(lambda a: R.Less(x=a[0], y=3.0), lambda a: a, [x],
                      shape_invariants=[gp.TensorShape([2])])
    with pytest.raises(TypeError, match="Loop var Const_[0-9]+:0 enters the loop with type "
                                        "<dtype: 'int32'> but has type <dtype: 'float32'>"):
        gp.while_loop(lambda i: R.Less(x=i, y=3), lambda i: R.Cast(x=i, DstT=gp.float32), [0])
    with pytest.raises(TypeError, match="'parallel_iterations' must be a positive integer."):
        gp.while_loop(lambda i: i, lambda i: i, [0], parallel_iterations=0)
    with gp.Session() as sess:
        assert sess.run(a).shape == (8,)


def test_while_loop_eagerly_runs_python():
    assert gp.while_loop(lambda i: i < 5, lambda i: i + 2, [0]) == 6
    assert gp.while_loop(lambda i, s: True, lambda i, s: (i + 1, s * 2), [0, 1],
                         maximum_iterations=4) == (4, 16)


def test_graph_def_round_trip_runs_the_library(graph):
    x = gp.placeholder(gp.float32, [3], name="x")
    p = gp.placeholder(gp.bool, [], name="p")
    y = gp.cond(p, lambda: x * 2.0, lambda: x - 1.0)
    gp.while_loop(lambda i, a: R.Less(x=i, y=10), lambda i, a: (i + 1, a + y), [0, x],
                  maximum_iterations=4, name="loop")
    graph_def = graph.as_graph_def()
    other = gp.Graph()
    with other.as_default():
        gp.import_graph_def(graph_def, name="")
        with gp.Session() as sess:
            out = sess.run("loop/Identity_3:0", {"x:0": [1, 2, 3], "p:0": False})
    np.testing.assert_array_equal(out, np.array([1, 2, 3]) + 4 * np.array([0, 1, 2]))


# ------------------------------------------------------------------------------ gradients

def test_cond_gradient_matches_each_branch(graph):
    x = gp.placeholder(gp.float64, [3])
    p = gp.placeholder(gp.bool, [])
    v = gp.Variable(np.float64(1.5))
    y = gp.cond(p, lambda: x * x * v.value(), lambda: x - 1.0)
    gx, gv = gp.gradients(y, [x, v])
    assert graph.get_operation_by_name("gradients/cond_grad/If").type == "If"
    xv = np.array([1.0, 2.0, -3.0])
    with gp.Session() as sess:
        sess.run(v.initializer)
        gxv, gvv = sess.run([gx, gv], {x: xv, p: True})
        np.testing.assert_allclose(gxv, 2 * xv * 1.5)
        np.testing.assert_allclose(gvv, (xv * xv).sum())
        gxv, gvv = sess.run([gx, gv], {x: xv, p: False})
        np.testing.assert_allclose(gxv, np.ones(3))
        assert gvv == 0.0


@pytest.mark.parametrize("taken", [True, False])
def test_cond_gradient_numerically(graph, taken):
    x = gp.placeholder(gp.float64, [2, 3])
    y = gp.cond(gp.constant(taken), lambda: R.Tanh(x=x) * x, lambda: R.Exp(x=x) * 0.5)
    with gp.Session():
        assert gp.test.compute_gradient_error(x, [2, 3], y, [2, 3]) < 1e-6


def test_while_gradient_numerically(graph):
    x = gp.placeholder(gp.float64, [3])
    w = gp.placeholder(gp.float64, [3])
    _, y = gp.while_loop(lambda i, a: R.Less(x=i, y=4),
                         lambda i, a: (i + 1, R.Sin(x=a) * w + x), [0, x])
    with gp.Session():
        rng = np.random.default_rng(7)
        inits = [rng.uniform(-1, 1, 3), rng.uniform(-1, 1, 3)]
        assert gp.test.compute_gradient_error([x, w], [[3], [3]], y, [3], x_init_value=inits,
                                              delta=1e-5) < 1e-7


def test_while_gradient_equals_the_unrolled_gradient(graph):
    x = gp.placeholder(gp.float32, [2])
    _, y = gp.while_loop(lambda i, a: R.Less(x=i, y=3), lambda i, a: (i + 1, a * a + x),
                         [0, x], maximum_iterations=10)
    unrolled = x
    for _ in range(3):
        unrolled = unrolled * unrolled + x
    (g_loop,), (g_unrolled,) = gp.gradients(y, [x]), gp.gradients(unrolled, [x])
    with gp.Session() as sess:
        a, b = sess.run([g_loop, g_unrolled], {x: [0.5, -0.25]})
    np.testing.assert_allclose(a, b, rtol=1e-6)


def test_gradient_of_a_cond_inside_a_while(graph):
    x = gp.placeholder(gp.float64, [])

    def body(i, a):
        return i + 1, gp.cond(R.Greater(x=a, y=1.0), lambda: a * 0.5, lambda: a * a + 1.0)

    _, y = gp.while_loop(lambda i, a: R.Less(x=i, y=5), body, [0, x])

    def reference(v):
        for _ in range(5):
            v = v * 0.5 if v > 1 else v * v + 1
        return v

    (g,) = gp.gradients(y, [x])
    with gp.Session() as sess:
        for v in (0.3, 2.5):
            numeric = (reference(v + 1e-6) - reference(v - 1e-6)) / 2e-6
            np.testing.assert_allclose(sess.run(g, {x: v}), numeric, rtol=1e-5)


def test_back_prop_false_stops_gradients(graph):
    x = gp.placeholder(gp.float32, [])
    y = gp.while_loop(lambda a: R.Less(x=a, y=10.0), lambda a: a * 2.0, [x], back_prop=False)
    assert gp.gradients(y, [x]) == [None]


def test_training_a_recurrent_loop_with_gradient_descent(graph):
    rng = np.random.RandomState(0)
    inputs = rng.randn(6, 2, 3).astype(np.float32)
    w0 = (rng.randn(3, 3) * 0.5).astype(np.float32)
    u0 = (rng.randn(3, 3) * 0.5).astype(np.float32)
    xs = gp.constant(inputs)
    w, u = gp.Variable(w0, name="w"), gp.Variable(u0, name="u")

    def body(t, h):
        x_t = R.GatherV2(params=xs, indices=t, axis=0)
        return t + 1, R.Tanh(x=gp.matmul(h, w) + gp.matmul(x_t, u))

    _, h = gp.while_loop(lambda t, h: R.Less(x=t, y=6), body,
                         [0, gp.constant(np.zeros((2, 3), np.float32))])
    loss = gp.reduce_sum(h * h)
    train = gp.train.GradientDescentOptimizer(0.05).minimize(loss)

    def reference_step(wv, uv):
        """Loss and its gradients by NumPy backpropagation through time."""
        hs = [np.zeros((2, 3))]
        for t in range(6):
            hs.append(np.tanh(hs[-1] @ wv + inputs[t] @ uv))
        dh, dw, du = 2 * hs[-1], np.zeros((3, 3)), np.zeros((3, 3))
        for t in reversed(range(6)):
            dz = dh * (1 - hs[t + 1] ** 2)
            dw += hs[t].T @ dz
            du += inputs[t].T @ dz
            dh = dz @ wv.T
        return (hs[-1] ** 2).sum(), dw, du

    wv, uv = w0.astype(np.float64), u0.astype(np.float64)
    with gp.Session() as sess:
        sess.run(gp.global_variables_initializer())
        for _ in range(4):
            expected, dw, du = reference_step(wv, uv)
            value, _ = sess.run([loss, train])
            np.testing.assert_allclose(value, expected, rtol=1e-5)
            wv, uv = wv - 0.05 * dw, uv - 0.05 * du
        np.testing.assert_allclose(sess.run(w), wv, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(sess.run(u), uv, rtol=1e-4, atol=1e-5)


def test_cond_and_while_on_the_simulated_gpu_match_the_cpu():
    def run():
        g = gp.Graph()
        with g.as_default():
            x = gp.placeholder(gp.float32, [3])
            p = gp.placeholder(gp.bool, [])
            v = gp.Variable(2.0)
            y = gp.cond(p, lambda: x * v.value(), lambda: x - 1.0)
            _, z = gp.while_loop(lambda i, a: R.Less(x=i, y=3),
                                 lambda i, a: (i + 1, a * 0.5 + y), [0, x])
            grads = gp.gradients(z, [x, v])
            with gp.Session() as sess:
                sess.run(v.initializer)
                return [sess.run([y, z] + grads, {x: [1, 2, 3], p: taken}) for taken in (1, 0)]

    expected = run()
    with gp.test.simulated_gpu():
        got = run()
    for a, b in zip(sum(got, []), sum(expected, [])):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_gradient_of_a_while_inside_a_cond_with_a_captured_variable(graph):
    x = gp.placeholder(gp.float64, [])
    p = gp.placeholder(gp.bool, [])
    w = gp.Variable(np.float64(0.7))

    def loop():
        return gp.while_loop(lambda i, a: R.Less(x=i, y=3),
                             lambda i, a: (i + 1, R.Sin(x=a) * w.value() + x), [0, x])[1]

    y = gp.cond(p, loop, lambda: x * x)
    gx, gw = gp.gradients(y, [x, w])

    def reference(xv, wv):
        a = xv
        for _ in range(3):
            a = np.sin(a) * wv + xv
        return a

    eps = 1e-6
    with gp.Session() as sess:
        sess.run(w.initializer)
        gxv, gwv = sess.run([gx, gw], {x: 0.4, p: True})
        np.testing.assert_allclose(gxv, (reference(0.4 + eps, 0.7) - reference(0.4 - eps, 0.7))
                                   / (2 * eps), rtol=1e-6)
        np.testing.assert_allclose(gwv, (reference(0.4, 0.7 + eps) - reference(0.4, 0.7 - eps))
                                   / (2 * eps), rtol=1e-6)
        assert sess.run([gx, gw], {x: 0.4, p: False}) == [0.8, 0.0]


def test_case_is_nested_conds(graph):
    x = gp.placeholder(gp.int32, [])
    r = gp.case([(R.Less(x=x, y=0), lambda: gp.constant(-1)),
                 (R.Equal(x=x, y=0), lambda: gp.constant(0))], default=lambda: gp.constant(1))
    assert r.name == "case/cond/Identity:0"
    last_is_default = gp.case([(R.Less(x=x, y=0), lambda: gp.constant(-1)),
                               (R.Equal(x=x, y=0), lambda: gp.constant(0))])
    with pytest.raises(TypeError, match="pred must be Tensor of type bool"):
        gp.case([(x, lambda: x)])
    with gp.Session() as sess:
        assert [sess.run(r, {x: v}) for v in (-5, 0, 5)] == [-1, 0, 1]
        assert [sess.run(last_is_default, {x: v}) for v in (-5, 0, 5)] == [-1, 0, 0]


def test_gradient_reaches_a_variable_read_in_a_cond_inside_the_loop_body(graph):
    w = gp.Variable(np.float64(0.9))
    x = gp.placeholder(gp.float64, [])

    def body(i, a):
        return i + 1, gp.cond(R.Less(x=i, y=2), lambda: a * w.value(), lambda: a + w.value())

    _, y = gp.while_loop(lambda i, a: R.Less(x=i, y=4), body, [0, x])
    (gw,) = gp.gradients(y, [w])
    with gp.Session() as sess:
        sess.run(w.initializer)
        # y = x w^2 + 2 w
        np.testing.assert_allclose(sess.run(gw, {x: 1.5}), 2 * 1.5 * 0.9 + 2)
