"""Random ops against TensorFlow (skipped without it): bit-exact values of the stateful ops
over two Session.run calls, of the stateless ops, of the seed derivation and the TF1
wrappers (random_normal, dropout, ...) under graph-level seeds; error messages."""


import ml_dtypes
import numpy as np
import pytest

import graphops as gp

tf = pytest.importorskip("tensorflow")
tf1 = tf.compat.v1

def tf_runs(build, runs=2):
    g = tf.Graph()
    with g.as_default():
        out = build(tf1)
    with tf1.Session(graph=g) as sess:
        return [sess.run(out) for _ in range(runs)]


def gp_runs(build, runs=2):
    g = gp.Graph()
    with g.as_default():
        out = build(gp)
    with gp.Session(graph=g) as sess:
        return [sess.run(out) for _ in range(runs)]


def assert_bits(ours, theirs):
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    np.testing.assert_array_equal(ours.view(f"u{ours.dtype.itemsize}"),
                                  theirs.view(f"u{theirs.dtype.itemsize}"))


DTYPES = [np.float16, ml_dtypes.bfloat16, np.float32, np.float64]


@pytest.mark.parametrize("op", ["RandomUniform", "RandomStandardNormal", "TruncatedNormal"])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", [[1], [3, 5], [1030], [20011]])
def test_stateful_float_ops_bit_exact_over_two_runs(op, dtype, shape):
    def build(lib):
        return getattr(lib.raw_ops, op)(shape=shape, dtype=lib.as_dtype(dtype), seed=87,
                                        seed2=-3)
    for ours, theirs in zip(gp_runs(build), tf_runs(build)):
        assert_bits(ours, theirs)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("bounds", [(-5, 100), (0, 1), (-2**31, 2**31 - 1)])
def test_random_uniform_int_bit_exact(dtype, bounds):
    def build(lib):
        return lib.raw_ops.RandomUniformInt(shape=[7], minval=np.array(bounds[0], dtype),
                                            maxval=np.array(bounds[1], dtype), seed=1, seed2=2)
    for ours, theirs in zip(gp_runs(build), tf_runs(build)):
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("seed", [[1, 2], [-1, 2**40]])
def test_stateless_ops_bit_exact(dtype, seed):
    def build(lib):
        s = np.array(seed, np.int64)
        key, counter = lib.raw_ops.StatelessRandomGetKeyCounter(seed=s)
        d = lib.as_dtype(dtype)
        return [key, counter] + [
            getattr(lib.raw_ops, v2)(shape=[3, 7], key=key, counter=counter, alg=3, dtype=d)
            for v2 in ("StatelessRandomUniformV2", "StatelessRandomNormalV2",
                       "StatelessTruncatedNormalV2")] + [
            getattr(lib.raw_ops, v1)(shape=[5], seed=s, dtype=d)
            for v1 in ("StatelessRandomUniform", "StatelessRandomNormal",
                       "StatelessTruncatedNormal")]
    for ours, theirs in zip(gp_runs(build, 1)[0], tf_runs(build, 1)[0]):
        assert_bits(ours, theirs)


def test_stateless_int_ops_bit_exact():
    def build(lib):
        key, counter = lib.raw_ops.StatelessRandomGetKeyCounter(seed=np.array([4, 5], np.int32))
        return [lib.raw_ops.StatelessRandomUniformIntV2(
                    shape=[9], key=key, counter=counter, alg=1,
                    minval=np.array(-7, np.int64), maxval=np.array(2**40, np.int64)),
                lib.raw_ops.StatelessRandomUniformInt(
                    shape=[9], seed=np.array([4, 5], np.int32), minval=np.int32(3),
                    maxval=np.int32(9))]
    for ours, theirs in zip(gp_runs(build, 1)[0], tf_runs(build, 1)[0]):
        np.testing.assert_array_equal(ours, theirs)


def _wrapper_runs(lib, graph_type, session_type, float32, int64):
    g = graph_type()
    with g.as_default():
        lib.set_random_seed(2024)
        x = lib.placeholder(float32, [6, 4])
        ones = x * 0.0 + 1.0
        out = [lib.random_normal([3, 4], mean=1.0, stddev=2.0),
               lib.truncated_normal([5]),
               lib.random_uniform([4], minval=-2.0, maxval=3.0, seed=9),
               lib.random_uniform([4], maxval=50, dtype=int64),
               lib.nn.dropout(ones, keep_prob=0.7),
               lib.nn.dropout(ones, rate=0.4, noise_shape=[6, 1], seed=4)]
    ops = [(op.name, op.type) for op in g.get_operations()]
    with session_type(graph=g) as sess:
        return [sess.run(out, {x: np.zeros((6, 4), np.float32)}) for _ in range(2)], ops


def test_v1_wrappers_under_graph_and_op_seeds_bit_exact():
    ours, our_ops = _wrapper_runs(gp, gp.Graph, gp.Session, gp.float32, gp.int64)
    theirs, tf_ops = _wrapper_runs(tf1, tf.Graph, tf1.Session, tf.float32, tf.int64)
    assert our_ops == tf_ops
    for ours_run, tf_run in zip(ours, theirs):
        for mine, tfs in zip(ours_run, tf_run):
            np.testing.assert_array_equal(mine, tfs)


def test_seed_derivation_matches_tf():
    def seeds(lib):
        g = tf.Graph() if lib is tf1 else gp.Graph()
        with g.as_default():
            out = [lib.get_seed(None), lib.get_seed(3)]
            lib.set_random_seed(0)
            out += [lib.get_seed(0), lib.get_seed(None), lib.get_seed(2**33)]
            lib.set_random_seed(2**40)
            out += [lib.get_seed(None), lib.get_seed(-5)]
        return out
    assert seeds(gp) == seeds(tf1)


def test_eager_op_seeds_follow_tf_eager():
    tf.random.set_seed(77)
    gp.random.set_seed(77)
    try:
        for _ in range(3):
            np.testing.assert_array_equal(gp.random.uniform([4]), tf.random.uniform([4]).numpy())
    finally:
        from graphops.api import random_ops
        random_ops._eager_seed.set(None)
        gp.get_default_graph().seed = None


def _tf_message(fn):
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        fn(tf.raw_ops)
    return info.value.message.split(" [Op:")[0].split("}} ")[-1]


@pytest.mark.parametrize("fn", [
    lambda r: r.RandomUniform(shape=[[2, 2]], dtype=np.float32),
    lambda r: r.RandomUniform(shape=[2, -1], dtype=np.float32),
    lambda r: r.RandomUniformInt(shape=[2], minval=7, maxval=3),
    lambda r: r.RandomUniformInt(shape=[2], minval=[1], maxval=3),
    lambda r: r.StatelessRandomGetKeyCounter(seed=[1, 2, 3]),
    lambda r: r.StatelessRandomUniformV2(shape=[2], key=np.array([1, 2], np.uint64),
                                         counter=np.array([1, 2], np.uint64), alg=1),
    lambda r: r.StatelessRandomUniformV2(shape=[2], key=np.array([1], np.uint64),
                                         counter=np.array([1, 2], np.uint64), alg=5),
    lambda r: r.StatelessRandomUniformV2(shape=[2], key=np.array([1], np.uint64),
                                         counter=np.array([1, 2], np.uint64), alg=2),
], ids=["shape-matrix", "negative-dim", "bounds", "minval-vector", "seed-3", "key-2",
        "alg-5", "threefry"])
def test_error_messages_match_tf(fn):
    message = _tf_message(fn)
    with pytest.raises(gp.errors.InvalidArgumentError) as info:
        fn(gp.raw_ops)
    assert message in info.value.message


def test_stateless_wrappers_bit_exact_and_same_ops():
    def build(lib, float64, int32):
        g = tf.Graph() if lib is tf.random else gp.Graph()
        with g.as_default():
            out = [lib.stateless_uniform([3, 4], seed=[7, 8]),
                   lib.stateless_uniform([5], seed=np.array([1, -2], np.int32), minval=-3,
                                         maxval=9, dtype=int32),
                   lib.stateless_normal([6], seed=[3, 3], mean=2.0, stddev=0.5, dtype=float64),
                   lib.stateless_truncated_normal([2, 2], seed=[0, 1], alg="philox")]
        return g, out

    results = []
    for lib, graph_session, f64, i32 in ((gp.random, gp.Session, gp.float64, gp.int32),
                                         (tf.random, tf1.Session, tf.float64, tf.int32)):
        g, out = build(lib, f64, i32)
        with graph_session(graph=g) as sess:
            results.append((sess.run(out), [(op.name, op.type) for op in g.get_operations()]))
    (ours, our_ops), (theirs, tf_ops) = results
    for mine, tfs in zip(ours, theirs):
        assert_bits(mine, tfs)
    def auto_select_ops(ops):    # alg="philox": TF scrambles the seed with Python-side ops
        return [(n, t) for n, t in ops if not n.startswith("stateless_truncated_normal")]
    assert auto_select_ops(our_ops) == auto_select_ops(tf_ops)


def test_imported_tf_graph_runs_bit_exact():
    """A TF GraphDef with dropout, stateless and truncated normals, imported and run."""
    from google.protobuf import json_format
    g = tf.Graph()
    with g.as_default():
        tf1.set_random_seed(3)
        x = tf1.placeholder(tf.float32, [5, 3], name="x")
        fetches = [tf1.nn.dropout(x, rate=0.3).name,
                   tf.random.stateless_normal([4], seed=[1, 2]).name,
                   tf1.truncated_normal([3, 3], dtype=tf.float64).name]
    feed = np.ones((5, 3), np.float32)
    with tf1.Session(graph=g) as sess:
        theirs = [sess.run(fetches, {"x:0": feed}) for _ in range(2)]
    ours_graph = gp.Graph()
    with ours_graph.as_default():
        gp.import_graph_def(gp.graph_def_from_json(json_format.MessageToJson(g.as_graph_def())),
                            name="")
    with gp.Session(graph=ours_graph) as sess:
        ours = [sess.run(fetches, {"x:0": feed}) for _ in range(2)]
    for ours_run, tf_run in zip(ours, theirs):
        for mine, tfs in zip(ours_run, tf_run):
            assert_bits(mine, tfs)
