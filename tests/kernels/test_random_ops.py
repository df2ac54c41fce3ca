"""Random ops without TensorFlow: Philox against Random123's known answers and a scalar
reference, the distributions against obvious per-element formulas, stream and seed
semantics, validation, gradients, dropout, GPU agreement."""

import ctypes
import ctypes.util
import math
import platform
import struct
import threading

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import graphops as gp
from graphops.api import random_ops
from graphops.kernels.random_numbers import libm_double
from graphops.kernels.random_numbers import libm_float
from graphops.kernels.random_numbers import philox
from graphops.registry import errors
from tests.gpu_compare import compare
from tests.module_settings import module_settings
from tests.op_runners import invalid

M32 = 0xFFFFFFFF


# ------------------------------------------------------------------ reference Philox

def philox_scalar(key, counter):
    """Philox4x32-10 of one 128-bit counter, one word at a time (the obvious way)."""
    c = [(counter >> (32 * i)) & M32 for i in range(4)]
    k = [key & M32, key >> 32]
    for _ in range(10):
        p0, p1 = 0xD2511F53 * c[0], 0xCD9E8D57 * c[2]
        c = [(p1 >> 32) ^ c[1] ^ k[0], p1 & M32, (p0 >> 32) ^ c[3] ^ k[1], p0 & M32]
        k = [(k[0] + 0x9E3779B9) & M32, (k[1] + 0xBB67AE85) & M32]
    return c


def words(c0, c1, c2, c3):
    return c0 | c1 << 32 | c2 << 64 | c3 << 96


@pytest.fixture(params=["compiled", "array ops"])
def philox_path(request, monkeypatch):
    """philox.blocks on its compiled loop, or on the array operations CuPy runs."""
    if request.param == "array ops":
        monkeypatch.setattr(philox, "usable", lambda: False)
    return request.param


@pytest.mark.parametrize("key, counter, expected", [
    (0, 0, [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]),
    ((1 << 64) - 1, (1 << 128) - 1, [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]),
    (0xA4093822 | 0x299F31D0 << 32, words(0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
     [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]),
])
def test_philox_known_answers(key, counter, expected, philox_path):
    """Random123's published Philox4x32-10 test vectors."""
    assert philox.blocks(key, counter, np.zeros(1, np.uint64))[0].tolist() == expected
    assert philox_scalar(key, counter) == expected


@pytest.mark.parametrize("compiled", [True, False])
@settings(max_examples=15, deadline=None)
@given(key=st.integers(0, 2**64 - 1), counter=st.integers(0, 2**128 - 1),
       start=st.sampled_from([0, 2**32 - 2, 2**64 - 3]))
def test_philox_blocks_match_the_scalar_reference_across_carries(key, counter, start,
                                                                 compiled):
    offsets = np.arange(start, start + 5, dtype=np.uint64)
    with module_settings(philox, **({} if compiled else {"usable": lambda: False})):
        got = philox.blocks(key, counter, offsets)
    for row, off in zip(got, offsets.tolist()):
        assert row.tolist() == philox_scalar(key, philox.skip(counter, off))


def test_philox_compiled_blocks_on_every_thread_equal_the_array_ops():
    """Past PARALLEL_MIN_BLOCKS the compiled loop runs on every thread, chunk by chunk;
    scattered offsets, a counter about to carry into its high word."""
    offsets = np.random.default_rng(5).integers(0, 2**64 - 1, philox.PARALLEL_MIN_BLOCKS * 3,
                                                dtype=np.uint64)
    key, counter = 0x0123456789ABCDEF, (2**64 - 9) | (5 << 64)
    got = philox.blocks(key, counter, offsets.reshape(-1, 3))
    with module_settings(philox, usable=lambda: False):
        want = philox.blocks(key, counter, offsets.reshape(-1, 3))
    assert got.shape == (philox.PARALLEL_MIN_BLOCKS, 3, 4)
    np.testing.assert_array_equal(got, want)


def test_seeding_puts_seed_in_the_key_and_seed2_in_the_counter():
    key, counter = philox.seeded(-1, 7)
    assert key == 2**64 - 1 and counter == 7 << 64
    assert philox.skip((1 << 128) - 1, 2) == 1


# -------------------------------------------------------------- distributions per element

def as_float32(bits):
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def test_uniform_float_and_double_use_the_mantissa_bits():
    key, counter = 3, 5 << 64
    b = philox.stream(key, counter, 2).reshape(-1).tolist()
    f32 = philox.uniform(key, counter, 7, np.float32)
    assert f32.tolist() == [as_float32((x & 0x7FFFFF) | 0x3F800000) - 1.0 for x in b[:7]]
    f64 = philox.uniform(key, counter, 3, np.float64)
    expect = [struct.unpack("<d", struct.pack("<Q", (1023 << 52) | (b[2 * i] & 0xFFFFF) << 32
                                              | b[2 * i + 1]))[0] - 1.0 for i in range(3)]
    assert f64.tolist() == expect
    f16 = philox.uniform(key, counter, 5, np.float16)
    assert f16.tolist() == [(1 + (x & 0x3FF) / 1024) - 1 for x in b[:5]]


@pytest.mark.parametrize("dtype, lo, hi", [(np.int32, -5, 100), (np.int32, -2**31, 2**31 - 1),
                                           (np.int64, -2**63, 2**63 - 1), (np.int64, 7, 9)])
def test_uniform_int_is_lo_plus_bits_mod_range(dtype, lo, hi):
    key, counter = 11, 0
    b = philox.stream(key, counter, 3).reshape(-1).tolist()
    got = philox.uniform_int(key, counter, 5, dtype, lo=lo, hi=hi).tolist()
    if dtype == np.int32:
        bits = b[:5]
    else:
        bits = [b[2 * i] | b[2 * i + 1] << 32 for i in range(5)]
    assert got == [lo + x % (hi - lo) for x in bits]


def test_box_muller_follows_the_formula():
    key, counter = 1, 2
    b = philox.stream(key, counter, 4).reshape(-1).tolist()
    got = philox.normal(key, counter, 16, np.float32)
    for i in range(0, 16, 2):
        u1 = max(as_float32((b[i] & 0x7FFFFF) | 0x3F800000) - 1.0, np.float32(1e-7))
        v1 = 2 * math.pi * (as_float32((b[i + 1] & 0x7FFFFF) | 0x3F800000) - 1.0)
        r = math.sqrt(-2 * math.log(u1))
        np.testing.assert_allclose(got[i:i + 2], [r * math.sin(v1), r * math.cos(v1)],
                                   rtol=1e-5, atol=1e-6)


glibc = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="needs glibc's libm")


@glibc
def test_libm_emulations_equal_the_c_library():
    """logf/sincosf/log as the C library computes them (what TF's kernels call)."""
    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    for name, ctype in (("logf", ctypes.c_float), ("sinf", ctypes.c_float),
                        ("cosf", ctypes.c_float), ("log", ctypes.c_double),
                        ("sin", ctypes.c_double), ("cos", ctypes.c_double)):
        getattr(libm, name).restype = ctype
        getattr(libm, name).argtypes = [ctype]
    bits = philox.stream(5, 0, 1500).reshape(-1)
    u32 = np.maximum(philox._unit_float32(bits, np), np.float32(1e-7))
    angles = (2 * math.pi * u32.astype(np.float64)).astype(np.float32)
    u64 = np.maximum(philox._unit_float64(bits[0::2], bits[1::2], np), 1e-7)
    s, c = libm_float.sincosf(angles)
    assert libm_float.logf(u32).tolist() == [libm.logf(v) for v in u32.tolist()]
    assert s.tolist() == [libm.sinf(v) for v in angles.tolist()]
    assert c.tolist() == [libm.cosf(v) for v in angles.tolist()]
    assert libm_double.log(u64).tolist() == [libm.log(v) for v in u64.tolist()]
    # BoxMullerDouble relies on NumPy's float64 sin and cos being the C library's
    wide_angles = 2 * math.pi * u64
    assert np.sin(wide_angles).tolist() == [libm.sin(v) for v in wide_angles.tolist()]
    assert np.cos(wide_angles).tolist() == [libm.cos(v) for v in wide_angles.tolist()]


def test_libm_float_is_within_an_ulp_of_the_exact_functions():
    x = np.random.default_rng(0).random(20000).astype(np.float32) + np.float32(1e-7)
    np.testing.assert_array_max_ulp(libm_float.logf(x), np.log(x.astype(np.float64))
                                    .astype(np.float32), maxulp=1)
    angles = (x * np.float32(2 * math.pi)).astype(np.float32)
    s, c = libm_float.sincosf(angles)
    exact = angles.astype(np.float64)
    assert np.abs(s - np.sin(exact)).max() < 1e-7 and np.abs(c - np.cos(exact)).max() < 1e-7
    wide = x.astype(np.float64) * np.pi
    np.testing.assert_array_max_ulp(libm_double.log(wide), np.log(wide), maxulp=1)


def test_truncated_normal_rejects_beyond_two_and_reserves_256_per_output():
    key, counter = 9, 0
    values = philox.truncated_normal(key, counter, 4001, np.float32)
    assert np.abs(values).max() < 2
    # group g only reads from block g * 256 on: dropping the first group shifts nothing
    later = philox.truncated_normal(key, philox.skip(counter, 256), 4000 - 3, np.float32)
    np.testing.assert_array_equal(values[4:4001], later)
    # the first group is the first four accepted Box-Muller candidates
    b = philox.stream(key, counter, 8)
    pairs = [philox.box_muller_float(b[:, i], b[:, i + 1], np) for i in (0, 2)]
    candidates = np.stack([pairs[0][0], pairs[0][1], pairs[1][0], pairs[1][1]], -1).reshape(-1)
    np.testing.assert_array_equal(values[:4], candidates[np.abs(candidates) < 2][:4])


def test_chunked_fill_equals_one_piece(monkeypatch):
    whole = philox.fill(philox.truncated_normal, 4, 6, 50, np.float64)
    monkeypatch.setattr(philox, "_CHUNK", 8)
    np.testing.assert_array_equal(philox.fill(philox.truncated_normal, 4, 6, 50, np.float64),
                                  whole)
    np.testing.assert_array_equal(philox.fill(philox.uniform, 4, 6, 50, np.float32),
                                  philox.uniform(4, 6, 50, np.float32))


@pytest.mark.parametrize("op", ["RandomStandardNormal", "TruncatedNormal", "RandomUniform"])
def test_moments(op):
    x = getattr(gp.raw_ops, op)(shape=[20000], dtype=gp.float64, seed=1, seed2=2)
    mean, std = {"RandomStandardNormal": (0, 1), "TruncatedNormal": (0, 0.8796),
                 "RandomUniform": (0.5, math.sqrt(1 / 12))}[op]
    assert abs(x.mean() - mean) < 0.03 and abs(x.std() - std) < 0.03


# ---------------------------------------------------------------------- streams, seeds

def _graph_with(fn):
    g = gp.Graph()
    with g.as_default():
        out = fn()
    return g, out


def test_each_run_continues_the_nodes_stream_and_sessions_restart_it():
    g, u = _graph_with(lambda: gp.raw_ops.RandomUniform(shape=[3, 2], dtype=gp.float32,
                                                        seed=4, seed2=8))
    key, counter = philox.seeded(4, 8)
    with gp.Session(graph=g) as sess:
        first, second = sess.run(u), sess.run(u)
        with g.as_default():
            gp.constant(1.0)             # the graph changes: plans are rebuilt
        third = sess.run(u)
    np.testing.assert_array_equal(first.ravel(), philox.uniform(key, counter, 6, np.float32))
    for k, run_value in enumerate((second, third), start=1):
        np.testing.assert_array_equal(
            run_value.ravel(), philox.uniform(key, philox.skip(counter, k * 6 * 256), 6,
                                              np.float32))
    with gp.Session(graph=g) as sess:
        np.testing.assert_array_equal(sess.run(u), first)


def test_two_nodes_with_the_same_seeds_give_the_same_values():
    g, (a, b) = _graph_with(lambda: [gp.raw_ops.RandomStandardNormal(
        shape=[5], dtype=gp.float32, seed=3, seed2=3) for _ in range(2)])
    with gp.Session(graph=g) as sess:
        x, y = sess.run([a, b])
    np.testing.assert_array_equal(x, y)


def test_zero_seeds_give_a_random_stream():
    a = gp.raw_ops.RandomUniform(shape=[4], dtype=gp.float64)
    b = gp.raw_ops.RandomUniform(shape=[4], dtype=gp.float64, seed=0, seed2=0)
    assert not np.array_equal(a, b)


def test_concurrent_runs_take_disjoint_stretches():
    g, u = _graph_with(lambda: gp.raw_ops.RandomUniform(shape=[8], dtype=gp.float32,
                                                        seed=1, seed2=1))
    key, counter = philox.seeded(1, 1)
    results = []
    with gp.Session(graph=g) as sess:
        threads = [threading.Thread(target=lambda: results.append(sess.run(u)))
                   for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    expected = {philox.uniform(key, philox.skip(counter, k * 8 * 256), 8, np.float32).tobytes()
                for k in range(4)}
    assert {r.tobytes() for r in results} == expected


def test_get_seed_rules():
    g = gp.Graph()
    with g.as_default():
        assert gp.get_seed(None) == (None, None)
        assert gp.get_seed(5) == (random_ops.DEFAULT_GRAPH_SEED, 5)
        gp.set_random_seed(7)
        assert g.seed == 7
        assert [gp.get_seed(None) for _ in range(3)] == [(7, 0), (7, 1), (7, 2)]
        assert gp.get_seed(2**31 + 3) == (7, 4)
        gp.set_random_seed(0)
        assert gp.get_seed(0) == (0, 2**31 - 1)


def test_wrappers_take_seeds_from_the_graph():
    g = gp.Graph()
    with g.as_default():
        gp.random.set_seed(10)
        gp.random_normal([2])
        gp.truncated_normal([2], seed=3)
        gp.random_uniform([2], maxval=5, dtype=gp.int64)
    seeds = [(op.type, op.get_attr("seed"), op.get_attr("seed2"))
             for op in g.get_operations() if op.type.startswith(("Random", "Trunc"))]
    assert seeds == [("RandomStandardNormal", 10, 0), ("TruncatedNormal", 10, 3),
                     ("RandomUniformInt", 10, 1)]


def test_eager_seed_restarts_eager_streams():
    gp.random.set_seed(1234)
    try:
        first = [gp.random.uniform([3], seed=1) for _ in range(2)]
        gp.random.set_seed(1234)
        again = [gp.random.uniform([3], seed=1) for _ in range(2)]
    finally:
        random_ops._eager_seed.set(None)
        gp.get_default_graph().seed = None
    assert not np.array_equal(first[0], first[1])
    np.testing.assert_array_equal(np.stack(first), np.stack(again))


def test_wrapper_values_are_scaled_and_shifted():
    g = gp.Graph()
    with g.as_default():
        n = gp.random_normal([4], mean=3.0, stddev=2.0, seed=1)
        u = gp.random_uniform([4], minval=-1.0, maxval=1.0, seed=1)
        i = gp.random_uniform([1000], minval=-3, maxval=4, dtype=gp.int32, seed=1)
    with gp.Session(graph=g) as sess:
        n_v, u_v, i_v = sess.run([n, u, i])
    base = gp.raw_ops.RandomStandardNormal(shape=[4], dtype=gp.float32,
                                           seed=random_ops.DEFAULT_GRAPH_SEED, seed2=1)
    np.testing.assert_allclose(n_v, base * 2 + 3, rtol=1e-6)
    assert -1 <= u_v.min() and u_v.max() < 1
    assert set(i_v.tolist()) == set(range(-3, 4))


# ---------------------------------------------------------------------------- stateless

@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_stateless_v1_and_v2_agree(run, dtype):
    seed = np.array([3, -4], np.int64)
    key, counter = run("StatelessRandomGetKeyCounter", seed=seed)
    for v1, v2 in [("StatelessRandomNormal", "StatelessRandomNormalV2"),
                   ("StatelessTruncatedNormal", "StatelessTruncatedNormalV2"),
                   ("StatelessRandomUniform", "StatelessRandomUniformV2")]:
        a = run(v1, shape=np.array([3, 5], np.int32), seed=seed, dtype=gp.as_dtype(dtype))
        b = run(v2, shape=np.array([3, 5], np.int32), key=key, counter=counter,
                alg=np.array(3, np.int32), dtype=gp.as_dtype(dtype))
        assert a.dtype == dtype and a.shape == (3, 5)
        np.testing.assert_array_equal(a, b)


def test_stateless_key_counter_alg(run):
    key, counter, alg = run("StatelessRandomGetKeyCounterAlg", seed=np.array([1, 2], np.int32))
    k, c = philox.stateless_key_counter(1, 2)
    assert key.tolist() == [k] and counter.tolist() == [c & philox.MASK64, c >> 64]
    assert int(alg) == 1 and int(run("StatelessRandomGetAlg")) == 1


def test_stateless_int(run):
    out = run("StatelessRandomUniformIntV2", shape=np.array([500], np.int32),
              key=np.array([5], np.uint64), counter=np.array([0, 1], np.uint64),
              alg=np.array(1, np.int32), minval=np.array(-2, np.int64),
              maxval=np.array(3, np.int64))
    assert set(out.tolist()) == {-2, -1, 0, 1, 2}
    v1 = run("StatelessRandomUniformInt", shape=np.array([4], np.int64),
             seed=np.array([1, 1], np.int64), minval=np.array(0, np.int32),
             maxval=np.array(10, np.int32))
    assert v1.dtype == np.int32 and v1.min() >= 0 and v1.max() < 10


# ---------------------------------------------------------------------------- validation

def test_kernel_validation(run):
    with invalid("shape must be a vector of {int32,int64}, got shape [1,2]"):
        run("RandomUniform", shape=np.array([[1, 2]], np.int32), dtype=gp.float32)
    with invalid("Dimension -3 must be >= 0"):
        run("RandomStandardNormal", shape=np.array([2, -3], np.int32), dtype=gp.float32)
    with invalid("would have more than 2**63 - 1 elements"):
        run("RandomUniform", shape=np.array([2**40, 2**40], np.int64), dtype=gp.float32)
    with invalid("Need minval < maxval, got 5 >= 5"):
        run("RandomUniformInt", shape=np.array([2], np.int32), minval=np.array(5, np.int32),
            maxval=np.array(5, np.int32))
    with invalid("minval must be 0-D, got shape [1]"):
        run("RandomUniformInt", shape=np.array([2], np.int32), minval=np.array([1], np.int32),
            maxval=np.array(5, np.int32))
    assert run("RandomUniformInt", shape=np.array([0], np.int32), minval=np.array(5, np.int32),
               maxval=np.array(5, np.int32)).shape == (0,)
    with invalid("seed must have shape [2], not [3]"):
        run("StatelessRandomGetKeyCounter", seed=np.array([1, 2, 3], np.int64))
    with invalid("seed must have shape [2], not [1,2]"):
        run("StatelessRandomUniform", shape=np.array([2], np.int32),
            seed=np.array([[1, 2]], np.int64))


def test_v2_key_counter_alg_validation(run):
    def v2(key, counter, alg, shape=(2,)):
        return run("StatelessRandomUniformV2", shape=np.array(shape, np.int32),
                   key=np.array(key, np.uint64), counter=np.array(counter, np.uint64),
                   alg=np.array(alg, np.int32))
    with invalid("key must have shape [1], not [2]. (Note that batched keys are not "
                 "supported yet.)"):
        v2([1, 2], [1, 2], 1)
    with invalid("counter must be a vector with length at least 1; got shape: [0]."):
        v2([1], [], 1)
    with invalid("input 3 (0-based) must have shape [], not [1]"):
        v2([1], [1, 2], [1])
    with invalid("Unsupported algorithm id: 2"):
        v2([1], [1, 2], 2)
    assert v2([1], [1, 2], 2, shape=(0,)).shape == (0,)


def test_shape_functions():
    g = gp.Graph()
    with g.as_default():
        p = gp.placeholder(gp.int32, [3])
        assert gp.raw_ops.RandomUniform(shape=p, dtype=gp.float32).shape.as_list() == [None] * 3
        assert gp.raw_ops.RandomUniform(shape=[2, 5], dtype=gp.half).shape.as_list() == [2, 5]
        key, counter = gp.raw_ops.StatelessRandomGetKeyCounter(seed=gp.placeholder(gp.int64))
        assert key.shape.as_list() == [1] and counter.shape.as_list() == [2]
        with pytest.raises(ValueError, match="Shape must be rank 1 but is rank 2"):
            gp.raw_ops.RandomUniform(shape=[[2, 2]], dtype=gp.float32)
        with pytest.raises(ValueError, match="Invalid value in tensor used for shape: -3"):
            gp.raw_ops.TruncatedNormal(shape=[2, -3], dtype=gp.float32)
        with pytest.raises(ValueError, match=r"minval must be a scalar; got a tensor of shape"):
            gp.raw_ops.RandomUniformInt(shape=[2], minval=[1], maxval=5)
        with pytest.raises(ValueError, match="Dimension must be 2 but is 3"):
            gp.raw_ops.StatelessRandomUniform(shape=[2], seed=[1, 2, 3])
        with pytest.raises(ValueError, match="Shape must be rank 0 but is rank 1"):
            gp.raw_ops.StatelessRandomNormalV2(shape=[2], key=np.array([1], np.uint64),
                                               counter=np.array([1, 2], np.uint64), alg=[1])


def test_memory_budget_is_checked_before_generating():
    from graphops.registry import memory
    old = memory.get_memory_budget()
    memory.set_memory_budget(1000)
    try:
        with pytest.raises(errors.ResourceExhaustedError):
            gp.raw_ops.RandomUniform(shape=[1000], dtype=gp.float32, seed=1)
    finally:
        memory.set_memory_budget(old)


# ------------------------------------------------------------------ gradients, dropout

def test_random_ops_have_no_gradient():
    g = gp.Graph()
    with g.as_default():
        stddev = gp.placeholder(gp.float64, [])
        y = gp.raw_ops.RandomStandardNormal(shape=[3], dtype=gp.float64, seed=1) * stddev
        (grad,) = gp.gradients(y, [stddev])
    with gp.Session(graph=g) as sess:
        noise, value = sess.run([y, grad], {stddev: 1.0})
    assert value == pytest.approx(noise.sum())


def test_dropout_builds_tf_ops_and_scales_kept_values():
    g = gp.Graph()
    with g.as_default():
        x = gp.placeholder(gp.float32, [50, 40])
        rate = gp.placeholder(gp.float32, [])
        a = gp.nn.dropout(x, keep_prob=0.75, seed=2)
        b = gp.nn.dropout(x, rate=rate, noise_shape=[50, 1], seed=2)
    types = [op.type for op in g.get_operations() if op.name.startswith("dropout/")]
    assert types == ["Const", "Mul", "Const", "RandomUniform", "Const", "GreaterEqual",
                     "Const", "SelectV2"]
    assert "RealDiv" in [op.type for op in g.get_operations()]
    data = np.ones((50, 40), np.float32)
    with gp.Session(graph=g) as sess:
        av, bv = sess.run([a, b], {x: data, rate: 0.5})
    assert set(np.unique(av).tolist()) == {0.0, np.float32(1 / 0.75)}
    assert 0.65 < (av > 0).mean() < 0.85
    assert all(len(set(row.tolist())) == 1 for row in bv)      # one draw per row
    with pytest.raises(ValueError, match="Cannot specify both"):
        gp.nn.dropout(data, keep_prob=0.5, rate=0.5)
    with pytest.raises(ValueError, match="range"):
        gp.nn.dropout(data, rate=1.0)
    assert gp.nn.dropout(data, rate=0.0) is not None


# --------------------------------------------------------------------------------- GPU

@pytest.mark.parametrize("op", ["RandomUniform", "RandomStandardNormal", "TruncatedNormal"])
@pytest.mark.parametrize("dtype", [gp.float16, gp.float32, gp.float64])
def test_gpu_matches_cpu(gpu, op, dtype):
    compare(op, {"shape": np.array([3, 7], np.int32)}, dtype=dtype, seed=5, seed2=6)


def test_gpu_matches_cpu_stateless_and_int(gpu):
    compare("RandomUniformInt", {"shape": np.array([9], np.int64), "minval": np.array(-3),
                                 "maxval": np.array(40)}, seed=1, seed2=2)
    compare("StatelessRandomNormalV2", {"shape": np.array([10], np.int32),
                                        "key": np.array([3], np.uint64),
                                        "counter": np.array([0, 9], np.uint64),
                                        "alg": np.array(1, np.int32)}, dtype=gp.float32)
    compare("StatelessRandomGetKeyCounter", {"seed": np.array([1, 2], np.int64)})
