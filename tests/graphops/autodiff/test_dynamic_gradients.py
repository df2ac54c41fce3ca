"""Gradients whose shapes, ranks, axes, perms or begin/size are only known at run time, and
the ops their graphs use (InvertPermutation, Range, FloorMod, Pad, ConcatOffset).

Each gradient case is built twice from the same function: once with every input a
placeholder of unknown shape (the run-time path) and once with constants and fully known
shapes (the build-time path). The run-time path must match the numeric Jacobian, the
build-time path, and TF's tf.GradientTape on the same values when TF is importable.
"""

import math
import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import graphops as gp
from graphops.registry import dtypes, errors
from tests.op_runners import invalid, run_eager, run_graph

R = gp.raw_ops
SETTINGS = settings(max_examples=25, deadline=None)


def i32(*v):
    return np.array(v, np.int32)


def i64(*v):
    return np.array(v, np.int64)


def sq(r, x):
    """x * x: keeps the gradient depending on x's values."""
    return r.Mul(x=x, y=x)


# ----------------------------------------------------------------------------- gradient cases

CASES = {   # name: (build(raw_ops, x, *params), x shape, params, op type the run-time path uses)
    "Sum axes": (lambda r, x, a: r.Sum(input=sq(r, x), axis=a), (2, 3, 4), [i32(0, -1)],
                 "FloorMod"),
    "Sum int64 scalar axis": (lambda r, x, a: r.Sum(input=sq(r, x), axis=a), (2, 3, 4),
                              [np.int64(-2)], "FloorMod"),
    "Sum keep_dims": (lambda r, x, a: r.Sum(input=sq(r, x), axis=a, keep_dims=True),
                      (2, 3, 4), [i32(1)], None),
    "Sum all of a scalar": (lambda r, x, a: r.Sum(input=sq(r, x), axis=a), (), [i32()],
                            "FloorMod"),
    "Mean axes": (lambda r, x, a: r.Mean(input=sq(r, x), axis=a), (2, 3, 4), [i32(2, 0)],
                  "FloorMod"),
    "Mean keep_dims": (lambda r, x, a: r.Mean(input=sq(r, x), axis=a, keep_dims=True),
                       (3, 4), [i64(-1)], None),
    "Transpose": (lambda r, x, p: r.Transpose(x=sq(r, x), perm=p), (2, 3, 4), [i32(2, 0, 1)],
                  "InvertPermutation"),
    "Transpose int64 perm": (lambda r, x, p: r.Transpose(x=sq(r, x), perm=p), (2, 3, 4, 1),
                             [i64(1, 3, 0, 2)], "InvertPermutation"),
    "Slice": (lambda r, x, b, s: r.Slice(input=sq(r, x), begin=b, size=s), (3, 4, 2),
              [i32(1, 0, 1), i32(2, -1, 1)], "Pad"),
    "Slice int64": (lambda r, x, b, s: r.Slice(input=sq(r, x), begin=b, size=s), (4, 3),
                    [i64(2, 1), i64(-1, 1)], "Pad"),
    "ConcatV2 axis": (lambda r, x, a: r.ConcatV2(values=[sq(r, x), x, x], axis=a), (2, 3),
                      [np.int32(-1)], "ConcatOffset"),
    "ConcatV2 int64 axis": (lambda r, x, a: r.ConcatV2(values=[x, sq(r, x)], axis=a), (2, 3),
                            [np.int64(0)], "ConcatOffset"),
    "ConcatV2 unknown rank": (lambda r, x: r.ConcatV2(values=[sq(r, x), x], axis=1), (2, 3),
                              [], "ConcatOffset"),
    "Pack": (lambda r, x: r.Pack(values=[sq(r, x), x], axis=-1), (2, 3), [], "Range"),
    "Pack axis 1": (lambda r, x: r.Pack(values=[x, sq(r, x), x], axis=1), (2, 3), [], "Range"),
    "Tile": (lambda r, x, m: r.Tile(input=sq(r, x), multiples=m), (2, 3), [i32(2, 3)],
             "Range"),
    "Tile int64": (lambda r, x, m: r.Tile(input=sq(r, x), multiples=m), (2, 1, 2),
                   [i64(1, 3, 2)], "Range"),
    "BiasAdd": (lambda r, x: r.BiasAdd(value=sq(r, x), bias=np.arange(1.0, 5.0)), (2, 3, 4),
                [], "BiasAddGrad"),
    "BiasAdd NCHW": (lambda r, x: r.BiasAdd(value=sq(r, x), bias=np.arange(1.0, 4.0),
                                            data_format="NCHW"), (2, 3, 2, 2), [],
                     "BiasAddGrad"),
    "Pad": (lambda r, x, p: r.Pad(input=sq(r, x), paddings=p), (2, 3),
            [i32(1, 0, 2, 1).reshape(2, 2)], None),
    "FloorMod": (lambda r, x: r.FloorMod(x=r.Mul(x=x, y=np.float64(3)),
                                         y=np.array([1.7, -1.3, 2.1])), (2, 3), [], None),
}


def _x_value(name, shape):
    rng = np.random.default_rng(len(name))
    value = rng.uniform(0.5, 1.5, shape) * rng.choice([-1, 1], shape)
    return np.asarray(value, np.float64)


def _build(name, dynamic):
    """(graph, x, y, feeds): x and the params are placeholders of unknown shape if
    `dynamic`, else x has its full shape and the params are constants."""
    build, shape, params, _ = CASES[name]
    x_value = _x_value(name, shape)
    g = gp.Graph()
    with g.as_default():
        x = gp.placeholder(gp.float64, None if dynamic else shape)
        feeds = {x: x_value}
        args = []
        for value in params:
            if dynamic:
                ph = gp.placeholder(dtypes.as_dtype(value.dtype), None)
                feeds[ph] = value
                args.append(ph)
            else:
                args.append(gp.constant(value))
        y = build(R, x, *args)
    return g, x, y, feeds


def _gradient(name, dynamic, dy):
    g, x, y, feeds = _build(name, dynamic)
    with g.as_default():
        seed = gp.placeholder(gp.float64, None)
        (dx,) = gp.gradients(y, [x], grad_ys=seed)
        with gp.Session() as sess:
            return sess.run(dx, {**feeds, seed: dy}), g


def _output_shape(name):
    g, _, y, feeds = _build(name, True)
    with g.as_default(), gp.Session() as sess:
        return sess.run(y, feeds).shape


@pytest.mark.parametrize("name", sorted(CASES))
def test_run_time_gradient_matches_numeric_jacobian(name):
    g, x, y, feeds = _build(name, dynamic=True)
    with g.as_default(), gp.Session() as sess:
        y_shape = sess.run(y, feeds).shape
        error = gp.test.compute_gradient_error(
            x, CASES[name][1], y, y_shape, x_init_value=feeds.pop(x), extra_feed_dict=feeds)
    assert error < 1e-8


@pytest.mark.parametrize("name", sorted(CASES))
def test_run_time_gradient_matches_build_time_one_and_tensorflow(name):
    dy = np.random.default_rng(7).standard_normal(_output_shape(name))
    dynamic, graph = _gradient(name, True, dy)
    static, _ = _gradient(name, False, dy)
    np.testing.assert_allclose(dynamic, static, rtol=1e-12, atol=1e-12)
    uses = CASES[name][3]
    if uses is not None:      # the run-time path really ran: it built its own op
        assert uses in {op.type for op in graph.get_operations()}
    try:
        import tensorflow as tf
    except ImportError:
        return
    build, shape, params, _ = CASES[name]
    x = tf.constant(_x_value(name, shape))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = build(tf.raw_ops, x, *params)
    want = tape.gradient(y, x, output_gradients=tf.constant(dy))
    np.testing.assert_allclose(dynamic, want.numpy(), rtol=1e-12, atol=1e-12)


def test_build_time_path_builds_none_of_the_run_time_ops():
    for name in CASES:
        _, graph = _gradient(name, False, np.ones(_output_shape(name)))
        types = {op.type for op in graph.get_operations()}
        assert not types & {"InvertPermutation", "ConcatOffset", "Range"}, name


def test_integer_floor_mod_gets_no_divisor_gradient():
    with gp.Graph().as_default():
        x, y = gp.placeholder(gp.int32, None), gp.placeholder(gp.int32, None)
        z = R.FloorMod(x=x, y=y)
        grad_x, grad_y = gp.gradients(z, [x, y], grad_ys=gp.constant(i32(1, 1)))
        assert grad_y is None
        with gp.Session() as sess:
            assert sess.run(grad_x, {x: i32(5, 6), y: i32(2, 2)}).tolist() == [1, 1]


# ----------------------------------------------------------------------------- kernels


@SETTINGS
@given(st.permutations(list(range(6))), st.integers(0, 6), st.sampled_from([np.int32, np.int64]))
def test_invert_permutation_matches_reference(perm, n, dtype):
    perm = [p for p in perm if p < n]
    x = np.array(perm, dtype)
    want = [0] * n
    for i, p in enumerate(perm):
        want[p] = i
    got = R.InvertPermutation(x=x)
    assert got.dtype == dtype and got.tolist() == want


def test_invert_permutation_errors(run):
    with invalid("invert_permutation expects a 1D vector."):
        run("InvertPermutation", x=np.zeros((2, 2), np.int32))
    with invalid("3 is not between 0 and 3"):
        run("InvertPermutation", x=i32(0, 3, 1))
    with invalid("-1 is not between 0 and 3"):
        run("InvertPermutation", x=i32(0, -1, 1))
    with invalid("0 is duplicated in the input."):
        run("InvertPermutation", x=i32(0, 0, 5))


def _range_reference(start, limit, delta):
    values, i = [], 0
    while (start + i * delta < limit) if delta > 0 else (start + i * delta > limit):
        values.append(start + i * delta)
        i += 1
    return values


@SETTINGS
@given(st.integers(-20, 20), st.integers(-20, 20), st.integers(-7, 7).filter(bool))
def test_integer_range_matches_reference(start, limit, delta):
    if (limit - start) * delta < 0:
        return
    for dtype in (np.int32, np.int64):
        got = R.Range(start=dtype(start), limit=dtype(limit), delta=dtype(delta))
        assert got.dtype == dtype and got.tolist() == _range_reference(start, limit, delta)


def test_float_range(run):
    got = run("Range", start=np.float32(0), limit=np.float32(1), delta=np.float32(0.1))
    want = [np.float32(0) + np.float32(i) * np.float32(0.1) for i in range(10)]
    assert got.dtype == np.float32 and got.tolist() == want
    got = run("Range", start=np.float64(1), limit=np.float64(2), delta=np.float64(0.3))
    np.testing.assert_allclose(got, [1.0, 1.3, 1.6, 1.9])
    assert run("Range", start=i32(1), limit=np.int32(10), delta=np.int32(3)).tolist() == [1, 4, 7]


def test_range_errors(run):
    with invalid("start must be a scalar, not shape [2]"):
        run("Range", start=i32(1, 2), limit=np.int32(10), delta=np.int32(3))
    with invalid("delta must be a scalar, not shape [1,1]"):
        run("Range", start=np.int32(1), limit=np.int32(10), delta=np.ones((1, 1), np.int32))
    with invalid("Requires delta != 0: 0"):
        run("Range", start=np.float64(0.5), limit=np.float64(1), delta=np.float64(0))
    with invalid("Requires start <= limit when delta > 0: 10/1"):
        run("Range", start=np.int32(10), limit=np.int32(1), delta=np.int32(1))
    with invalid("Requires ((limit - start) / delta) <= 9223372036854775807"):
        run("Range", start=np.float16(0), limit=np.float16(60000), delta=np.float16(0.125))
    with invalid("Requires start >= limit when delta < 0: 1.5/10"):
        run("Range", start=np.float64(1.5), limit=np.float64(10), delta=np.float64(-1))
    with pytest.raises(errors.NotFoundError, match="No registered 'Range' OpKernel for 'CPU'"):
        run("Range", start=np.int8(0), limit=np.int8(3), delta=np.int8(1))


def test_range_shape_function():
    with gp.Graph().as_default():
        assert R.Range(start=1, limit=10, delta=3).shape.as_list() == [3]
        assert R.Range(start=1.0, limit=2.0, delta=0.3).shape.as_list() == [4]
        assert R.Range(start=1, limit=gp.placeholder(gp.int32, []), delta=3).shape.as_list() \
            == [None]
        with invalid("Shape must be rank 0 but is rank 1\n\t for 'start'"):
            R.Range(start=[1], limit=10, delta=3)
        with invalid("Requires start >= limit when delta < 0: 1/10"):
            R.Range(start=1, limit=10, delta=-1)


def _floor_mod_reference(a, b):
    if isinstance(a, int):
        return a % b
    m = math.fmod(a, b)
    return m + b if m != 0 and (b < 0) != (m < 0) else m


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8, np.float32, np.float64])
def test_floor_mod_matches_reference(run, dtype):
    rng = np.random.default_rng(3)
    if np.dtype(dtype).kind == "f":
        x, y = rng.uniform(-9, 9, (3, 4)), rng.uniform(-3, 3, (4,))
    else:
        low = 0 if np.dtype(dtype).kind == "u" else -20
        x, y = rng.integers(low, 20, (3, 4)), rng.choice([v for v in range(low, 7) if v], (4,))
    x, y = x.astype(dtype), y.astype(dtype)
    got = run("FloorMod", x=x, y=y)
    want = [[_floor_mod_reference(a.item(), b.item()) for a, b in zip(row, y)] for row in x]
    assert got.dtype == dtype
    np.testing.assert_allclose(got, np.array(want, dtype), rtol=1e-6)


def test_floor_mod_special_values_and_errors(run):
    got = run("FloorMod", x=np.array([np.inf, 3.0, -3.0, 0.0, -0.0, 7.5]),
              y=np.array([2, np.inf, np.inf, -2.0, 2.0, 0.0]))
    np.testing.assert_array_equal(got, [np.nan, 3.0, np.inf, 0.0, -0.0, np.nan])
    assert np.signbit(got[3:5]).tolist() == [False, True]
    with invalid("Integer division by zero"):
        run("FloorMod", x=i32(7, 1), y=i32(2, 0))
    with invalid("Incompatible shapes: [2] vs. [3]"):
        run("FloorMod", x=i32(7, 1), y=i32(1, 2, 3))
    assert run("FloorMod", x=i32(), y=np.int32(0)).tolist() == []


def _pad_reference(x, paddings):
    out = np.zeros([d + b + a for d, (b, a) in zip(x.shape, paddings)], x.dtype)
    out[tuple(slice(b, b + d) for d, (b, _) in zip(x.shape, paddings))] = x
    return out


@SETTINGS
@given(st.lists(st.integers(0, 3), min_size=0, max_size=3), st.data())
def test_pad_matches_reference(shape, data):
    x = np.arange(math.prod(shape), dtype=np.float32).reshape(shape) + 1
    paddings = np.array([[data.draw(st.integers(0, 2)) for _ in range(2)] for _ in shape],
                        np.int64).reshape(len(shape), 2)
    for runner in (run_eager, run_graph):
        got = runner("Pad", input=x, paddings=paddings)
        np.testing.assert_array_equal(got, _pad_reference(x, paddings.tolist()))


def test_pad_errors(run):
    x = np.ones((2, 3))
    with invalid("Paddings must be non-negative: 1 -1"):
        run("Pad", input=x, paddings=i32(1, -1, 2, 1).reshape(2, 2))
    with invalid("paddings must be a matrix with 2 columns: [2,3]"):
        run("Pad", input=x, paddings=np.zeros((2, 3), np.int32))
    with invalid("The first dimension of paddings must be the rank of inputs[3,2] [2,3]"):
        run("Pad", input=x, paddings=np.zeros((3, 2), np.int32))
    with pytest.raises(errors.UnimplementedError, match=re.escape("inputs rank not in [0,8]: 9")):
        run("Pad", input=np.ones((1,) * 9), paddings=np.zeros((9, 2), np.int32))


def test_pad_shape_function():
    with gp.Graph().as_default():
        x = gp.placeholder(gp.float32, [None, 3])
        assert R.Pad(input=x, paddings=[[1, 2], [0, 1]]).shape.as_list() == [None, 4]
        unknown = gp.placeholder(gp.float32, None)
        assert R.Pad(input=unknown, paddings=gp.placeholder(gp.int32, [4, 2])).shape.rank == 4
        with invalid("Dimension must be 2 but is 3"):
            R.Pad(input=unknown, paddings=gp.placeholder(gp.int32, [None, 3]))
        with invalid("Shape must be rank 3 but is rank 2"):
            R.Pad(input=gp.placeholder(gp.float32, [2, 3]),
                  paddings=gp.placeholder(gp.int32, [3, 2]))
        with invalid("Paddings must be non-negative"):
            R.Pad(input=x, paddings=[[1, -1], [0, 0]])


def test_concat_offset(run):
    got = run("ConcatOffset", concat_dim=np.int32(1), shape=[i32(2, 2, 5), i32(2, 3, 5),
                                                             i32(2, 4, 5)])
    assert [v.tolist() for v in got] == [[0, 0, 0], [0, 2, 0], [0, 5, 0]]
    got = run("ConcatOffset", concat_dim=np.int32(-2), shape=[i64(3, 2), i64(4, 2)])
    assert [v.tolist() for v in got] == [[0, 0], [3, 0]] and got[1].dtype == np.int64


def test_concat_offset_errors(run):
    shapes = [i32(2, 2, 5), i32(2, 3, 5)]
    with invalid("Concat dim is out of range: -4 vs. 3"):
        run("ConcatOffset", concat_dim=np.int32(-4), shape=shapes)
    with invalid("Concat dim tensor should be a scalar integer, but got shape [1]"):
        run("ConcatOffset", concat_dim=i32(1), shape=shapes)
    with invalid("input 2 should be a vector, but got shape [1,3]"):
        run("ConcatOffset", concat_dim=np.int32(1), shape=[shapes[0], np.ones((1, 3), np.int32)])
    with invalid("input 1 should contain 3 elements, but got 2"):
        run("ConcatOffset", concat_dim=np.int32(1), shape=[shapes[0], i32(2, 3)])
    with invalid("All dimensions except 1 must match. Input 1 has shape [2 3 6] and doesn't "
                 "match input 0 with shape [2 2 5]."):
        run("ConcatOffset", concat_dim=np.int32(1), shape=[shapes[0], i32(2, 3, 6)])


def test_new_ops_on_the_gpu(gpu):
    """One graph pinned to the simulated (or real) GPU: the index ops stay in host memory,
    the results equal the CPU's."""
    g = gp.Graph()
    with g.as_default():
        x = gp.placeholder(gp.float32, None)
        perm = gp.placeholder(gp.int32, None)
        outs = []
        for device in ("/CPU:0", "/GPU:0"):
            with g.device(device):
                inverse = R.InvertPermutation(x=perm)
                moved = R.Transpose(x=x, perm=inverse)
                padded = R.Pad(input=moved, paddings=[[1, 0], [0, 2]])
                offsets = R.ConcatOffset(concat_dim=1, shape=[R.Shape(input=moved),
                                                              R.Shape(input=moved)])
                steps = R.Range(start=0.5, limit=3.0, delta=0.5)
                mod = R.FloorMod(x=padded, y=1.5)
                outs.append([inverse, padded, offsets[1], steps, mod])
    feeds = {x: np.arange(6, dtype=np.float32).reshape(2, 3) - 2, perm: i32(1, 0)}
    with gp.Session(graph=g, allow_soft_placement=False) as sess:
        cpu, dev = sess.run(outs, feeds)
    for a, b in zip(cpu, dev):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    np.testing.assert_array_equal(cpu[1], _pad_reference(feeds[x].T, [[1, 0], [0, 2]]))
    assert cpu[2].tolist() == [0, 2] and cpu[3].tolist() == [0.5, 1.0, 1.5, 2.0, 2.5]


@pytest.mark.parametrize("name", ["Sum axes", "Transpose", "Slice", "ConcatV2 axis", "Pack"])
def test_run_time_gradients_on_the_gpu(gpu, name):
    dy = np.random.default_rng(2).standard_normal(_output_shape(name))
    g, x, y, feeds = _build(name, dynamic=True)
    with g.as_default():
        with g.device("/GPU:0"):
            (dx,) = gp.gradients(y, [x], grad_ys=gp.constant(dy))
        with gp.Session() as sess:
            got = sess.run(dx, feeds)
    want, _ = _gradient(name, False, dy)
    np.testing.assert_allclose(got, want, rtol=1e-12)
