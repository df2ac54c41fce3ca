"""The intra-op thread setting, the shared pool and BLAS held to one thread inside it:
results are the same run to run for a thread count, agree across thread counts, and the
caller's BLAS setting comes back after every pool run."""

import contextlib
import os
import subprocess
import sys
import threading

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

import graphops as gp
from graphops.kernels.conv_algorithms import dense as conv_dense
from graphops.kernels.conv_algorithms import scatter as conv_scatter
from graphops.kernels.support import parallelism
from tests.reference_conv import (conv_backprop_filter_ref, conv_backprop_input_ref,
                                  conv_forward_ref)


@pytest.fixture
def threads():
    """Sets the intra-op thread count for one test, restoring the default afterwards."""
    yield gp.config.set_intra_op_parallelism_threads
    gp.config.set_intra_op_parallelism_threads(0)


def _blas_threads():
    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]


def test_the_setting_reads_back_and_rejects_bad_values(threads):
    assert gp.config.get_intra_op_parallelism_threads() == 0
    assert parallelism.intra_op_threads() == parallelism.available_cores()
    threads(3)
    assert gp.config.get_intra_op_parallelism_threads() == 3
    assert parallelism.intra_op_threads() == 3
    for bad in (-1, 1.5, "2", True):
        with pytest.raises(ValueError, match="intra_op_parallelism_threads must be a "
                                             "non-negative int"):
            threads(bad)
    assert gp.config.get_intra_op_parallelism_threads() == 3


def test_shares_are_a_fixed_round_robin_split():
    assert parallelism.shares(list(range(7)), 3) == [[0, 3, 6], [1, 4], [2, 5]]
    assert parallelism.shares([1, 2], 8) == [[1], [2]]
    assert parallelism.shares([], 4) == [[]]


@pytest.mark.parametrize("count", [1, 2, 4])
def test_pool_map_keeps_share_order(threads, count):
    threads(count)
    items = list(range(50))
    results = parallelism.pool_map(lambda share: sum(share), items)
    expected = [sum(s) for s in parallelism.shares(items, parallelism.SHARES_PER_THREAD * count)]
    assert results == (expected if count > 1 else [sum(items)])


def _conv_case(channels, strides=(1, 2, 1), seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((5, 9, 10, 11, channels)).astype(np.float32)
    w = rng.standard_normal((3, 2, 3, channels, 7)).astype(np.float32)
    geometry = (strides, (1, 1, 2), ((1, 1), (0, 1), (2, 2)))
    y = conv_dense.conv_forward(x, w, *geometry)
    dy = rng.standard_normal(y.shape).astype(np.float32)
    return x, w, dy, geometry


def _all_three(x, w, dy, geometry):
    return (conv_dense.conv_forward(x, w, *geometry),
            conv_dense.conv_backprop_filter(x, dy, w.shape, *geometry),
            conv_dense.conv_backprop_input(dy, w, x.shape, *geometry))


@pytest.mark.parametrize("count", [1, 2, 3, 8])
@pytest.mark.parametrize("channels, strides", [
    (1, (1, 2, 1)), (6, (1, 2, 1)),      # tap-major and row-major patches
    (40, (1, 1, 1)),                     # forward as GEMMs and a scatter
])
def test_parallel_conv_is_deterministic_and_matches_the_reference(threads, monkeypatch, count,
                                                                   channels, strides):
    monkeypatch.setattr(conv_dense, "SERIAL_MAX_FLOPS", 0)        # every thread, however small
    monkeypatch.setattr(conv_dense, "MIN_BLOCK_BYTES", 1 << 10)   # many blocks, many shares
    monkeypatch.setattr(conv_scatter, "SCATTER_MIN_UNIT_ROWS", 1)  # many slabs in two waves
    monkeypatch.setattr(conv_dense, "SCATTER_MIN_SOURCES", 1)
    threads(count)
    x, w, dy, geometry = _conv_case(channels, strides)
    first = _all_three(x, w, dy, geometry)
    for again in (_all_three(x, w, dy, geometry) for _ in range(3)):
        for a, b in zip(first, again):
            np.testing.assert_array_equal(a, b)
    strides, dilations, pads = geometry
    references = (conv_forward_ref(x, w, strides, dilations, pads),
                  conv_backprop_filter_ref(x, dy, w.shape, strides, dilations, pads),
                  conv_backprop_input_ref(dy, w, x.shape, strides, dilations, pads))
    for got, want in zip(first, references):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-4 * np.abs(want).max())


def test_one_thread_holds_the_callers_kernels_to_one_thread_while_it_runs(threads):
    threads(3)
    items = list(range(10))
    seen_elsewhere = []
    with parallelism.one_thread():
        assert parallelism.intra_op_threads() == 1
        assert parallelism.pool_map(lambda share: share, items) == [items]   # inline, whole
        other = threading.Thread(target=lambda: seen_elsewhere.append(
            parallelism.intra_op_threads()))
        other.start()
        other.join()
        with parallelism.one_thread(when=False):
            assert parallelism.intra_op_threads() == 1
    assert seen_elsewhere == [3]                 # other threads keep the setting
    assert parallelism.intra_op_threads() == 3
    with parallelism.one_thread(when=False):
        assert parallelism.intra_op_threads() == 3
    with pytest.raises(ZeroDivisionError), parallelism.one_thread():
        1 / 0
    assert parallelism.intra_op_threads() == 3


def test_compiled_loops_get_the_callers_thread_count_and_chunk_on_every_thread(threads):
    numba = pytest.importorskip("numba")
    from graphops.kernels.compiled import loops

    threads(2)
    most = min(2, numba.config.NUMBA_NUM_THREADS)

    def settings(**kwargs):
        loops("elementwise", **kwargs)
        return numba.get_num_threads(), numba.get_parallel_chunksize()

    assert settings(chunk=7) == (most, 7 if most > 1 else 0)
    assert settings(chunk=7, single=True) == (1, 0)    # one thread takes one static block
    with parallelism.one_thread():
        assert settings(chunk=5) == (1, 0)
    assert settings(chunk=5) == (most, 5 if most > 1 else 0)
    elsewhere = []
    other = threading.Thread(target=lambda: elsewhere.append(settings(chunk=3, single=True)))
    other.start()
    other.join()
    assert elsewhere == [(1, 0)]
    assert settings(chunk=5) == (most, 5 if most > 1 else 0)   # this thread's, unchanged


@pytest.mark.parametrize("op", ["forward", "filter", "input"])
def test_convs_under_serial_max_flops_run_on_one_thread(threads, monkeypatch, op):
    """Small convs run on the calling thread alone (waking the others costs more than they
    save); from ``SERIAL_MAX_FLOPS`` on, on every intra-op thread."""
    threads(2)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 6, 6, 8)).astype(np.float32)
    w = rng.standard_normal((3, 3, 8, 16)).astype(np.float32)
    dy = rng.standard_normal((2, 6, 6, 16)).astype(np.float32)
    geometry = ((1, 1), (1, 1), ((1, 1), (1, 1)))
    flops = 2 * 2 * 6 * 6 * w.size
    run = {"forward": lambda: conv_dense.conv_forward(x, w, *geometry),
           "filter": lambda: conv_dense.conv_backprop_filter(x, dy, w.shape, *geometry),
           "input": lambda: conv_dense.conv_backprop_input(dy, w, x.shape, *geometry)}[op]
    seen = []
    for inner in ("_forward", "_backprop_filter", "_backprop_input"):
        monkeypatch.setattr(conv_dense, inner,
                            lambda *a: seen.append(parallelism.intra_op_threads()))
    for limit, want in ((flops + 1, 1), (flops, 2)):
        monkeypatch.setattr(conv_dense, "SERIAL_MAX_FLOPS", limit)
        run()
        assert seen.pop() == want
    assert parallelism.intra_op_threads() == 2


def test_pool_shares_run_under_the_callers_errstate(threads):
    threads(2)
    with np.errstate(invalid="raise"):
        modes = parallelism.pool_map(lambda share: np.geterr()["invalid"], list(range(8)))
    assert modes == ["raise"] * len(modes)
    x = np.full((2, 8, 8, 40), np.inf, np.float32)        # inf * 0 in the GEMMs: NaN
    w = np.zeros((3, 3, 40, 4), np.float32)
    with np.errstate(all="ignore"):
        y = conv_dense.conv_forward(x, w, (1, 1), (1, 1), ((1, 1), (1, 1)))
    assert np.isnan(y).all()


def test_pool_work_submitted_from_a_pool_thread_runs_inline(threads):
    threads(2)
    inner = parallelism.pool_map(lambda share: parallelism.pool_map(len, list(range(9))),
                                 list(range(4)))
    assert inner == [[9]] * len(inner)           # nested: one inline share, no deadlock


def test_blas_is_single_threaded_in_the_pool_and_restored_after(threads):
    threads(2)
    with threadpool_limits(2, user_api="blas"):
        seen = parallelism.pool_map(lambda share: _blas_threads(), list(range(8)))
        assert all(n == 2 for n in _blas_threads())

        def failing(share):
            raise ValueError("kernel failed")

        with pytest.raises(ValueError, match="kernel failed"):
            parallelism.pool_map(failing, list(range(8)))
        assert all(n == 2 for n in _blas_threads())
    assert seen and all(all(n == 1 for n in counts) for counts in seen)


@pytest.mark.parametrize("count, rows, inner, columns, serial", [
    (2, 512, 32, 64, True),        # 1M multiply-adds: one thread (a wake-up costs more)
    (2, 64, 64, 64, False),        # OpenBLAS keeps such a product on one thread itself
    (2, 256, 256, 256, False),     # past SERIAL_PRODUCT_MACS: BLAS's threads
    (2, 1, 1024, 512, False),      # 2 MB of operands: memory-bound, BLAS's threads
    (2, 1, 1024, 510, True),       # just under SERIAL_MAX_BYTES
    (1, 512, 32, 64, False)])      # one intra-op thread: nothing to hold
def test_small_products_run_blas_on_one_thread(threads, monkeypatch, count, rows, inner,
                                               columns, serial):
    """MatMul, BatchMatMulV2 and Einsum on the host: a product between OpenBLAS's own
    one-thread bound and SERIAL_PRODUCT_MACS, on operands under SERIAL_MAX_BYTES, runs with
    BLAS held to one thread (and the caller's setting back after); the values are NumPy's
    product's either way."""
    threads(count)
    seen = []
    held = parallelism.blas_single_threaded

    @contextlib.contextmanager
    def recording():
        with held():
            seen.append(_blas_threads())
            yield
    monkeypatch.setattr(parallelism, "blas_single_threaded", recording)
    rng = np.random.default_rng(5)
    a = rng.standard_normal((rows, inner)).astype(np.float32)
    b = rng.standard_normal((inner, columns)).astype(np.float32)
    with gp.Graph().as_default():
        x, y = gp.placeholder(gp.float32), gp.placeholder(gp.float32)
        products = [gp.matmul(x, y), gp.linalg.matmul(x[None], y[None])[0],
                    gp.einsum("ik,kj->ij", x, y)]
        with gp.Session() as sess:
            before = _blas_threads()
            got = sess.run(products, {x: a, y: b})
            assert _blas_threads() == before
    want = a.astype(np.float64) @ b.astype(np.float64)
    for value in got:
        np.testing.assert_allclose(value, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
    assert seen == ([[1] * len(before)] * 3 if serial else [])


def test_pool_works_in_a_forked_child(threads):
    threads(2)
    parallelism.pool_map(len, [1, 2, 3])             # the parent's pool exists
    script = ("import os, sys; sys.path.insert(0, os.getcwd());"
              "from graphops.kernels.support import parallelism;"
              "parallelism.set_intra_op_threads(2);"
              "parallelism.pool_map(len, [1, 2]);"
              "pid = os.fork();"
              "r = parallelism.pool_map(lambda s: [x * 2 for x in s], list(range(6))) "
              "if pid == 0 else None;"
              "os._exit(0 if r is None or sum(sum(s) for s in r) == 30 else 3) if pid == 0 "
              "else sys.exit(os.waitpid(pid, 0)[1] >> 8)")
    done = subprocess.run([sys.executable, "-c", script], cwd=os.getcwd(), timeout=60)
    assert done.returncode == 0


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_compiled_where_matches_numpy_nan_and_inf_included(dtype):
    rng = np.random.default_rng(3)
    shape = (64, 1024)                         # above COMPILED_MIN_SIZE
    x = rng.standard_normal(shape).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    g[::7, ::5] = np.nan
    g[::11, ::3] = np.inf
    x[::13] = np.nan
    with np.errstate(invalid="ignore"):         # inf * 0: NaN, as TF's product gives
        np.testing.assert_array_equal(gp.raw_ops.ReluGrad(gradients=g, features=x),
                                      g * (x > 0).astype(dtype))
    np.testing.assert_array_equal(gp.raw_ops.LeakyReluGrad(gradients=g, features=x, alpha=0.25),
                                  np.where(x > 0, g, g * dtype(0.25)))
    cond = x > 0.3
    np.testing.assert_array_equal(gp.raw_ops.SelectV2(condition=cond, t=g, e=x),
                                  np.where(cond, g, x))
    np.testing.assert_array_equal(gp.raw_ops.Select(condition=cond, x=x, y=g),
                                  np.where(cond, x, g))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("data_format, shape", [("NHWC", (8, 32, 32, 8)), ("NCHW", (8, 8, 128, 64)),
                                                ("NHWC", (5243, 100))])
def test_compiled_bias_add_matches_numpy_nan_and_inf_included(dtype, data_format, shape):
    rng = np.random.default_rng(5)
    value = rng.standard_normal(shape).astype(dtype)   # compiled: few channels, or 2**19 values
    value[::3, ::2] = np.inf
    channel = 1 if data_format == "NCHW" else len(shape) - 1
    bias = rng.standard_normal(shape[channel]).astype(dtype)
    bias[1] = np.nan
    got = gp.raw_ops.BiasAdd(value=value, bias=bias, data_format=data_format)
    want = value + bias.reshape(bias.shape + (1,) * (len(shape) - 1 - channel))
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("axes", [(0,), (0, 1), (0, 1, 2)])
def test_compiled_leading_axis_sums_match_float64(axes):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((40, 30, 20, 8)).astype(np.float32)
    want = x.astype(np.float64).sum(axis=axes)
    got = gp.raw_ops.Sum(input=x, axis=np.int32(axes), keep_dims=True)
    assert got.shape == np.sum(x, axis=axes, keepdims=True).shape
    np.testing.assert_allclose(got.reshape(want.shape), want.astype(np.float32), rtol=1e-6)
    mean = gp.raw_ops.Mean(input=x, axis=np.int32(axes))
    np.testing.assert_allclose(mean, (want / np.prod([x.shape[a] for a in axes])).astype(
        np.float32), rtol=1e-6)
    grad = gp.raw_ops.BiasAddGrad(out_backprop=x)
    np.testing.assert_allclose(grad, x.astype(np.float64).sum(axis=(0, 1, 2)).astype(
        np.float32), rtol=1e-6)


def test_config_proto_sets_the_thread_count_and_session_options(threads):
    config = gp.ConfigProto(intra_op_parallelism_threads=2, log_device_placement=False)
    config.gpu_options.allow_growth = True
    assert config.allow_soft_placement is False                    # TF's default
    with gp.Graph().as_default():
        total = gp.reduce_sum(gp.constant(np.arange(6.0)))
        with gp.Session(config=config) as sess:
            assert sess.run(total) == 15.0
    assert gp.config.get_intra_op_parallelism_threads() == 2
    with gp.Graph().as_default(), gp.Session(config=gp.ConfigProto()):
        pass
    assert gp.config.get_intra_op_parallelism_threads() == 2       # 0 keeps the setting
    with pytest.raises(ValueError, match='Protocol message ConfigProto has no "intra_op" '
                                         'field.'):
        gp.ConfigProto(intra_op=2)
    with pytest.raises(ValueError, match="must be a non-negative int"):
        gp.Session(config=gp.ConfigProto(intra_op_parallelism_threads=-3))


def test_a_child_forked_after_compiled_loops_ran_takes_the_numpy_path():
    """numba's OpenMP threads do not survive a fork: the child must not call compiled loops
    (it would abort), and gets the same values through NumPy."""
    script = """
import os, sys
import numpy as np
sys.path.insert(0, os.getcwd())
import graphops as gp
from graphops.kernels import compiled
gp.enable_eager_execution()
x = np.linspace(-1, 1, 1 << 20, dtype=np.float32).reshape(1024, 1024)
parent = gp.raw_ops.ReluGrad(gradients=x, features=x)     # runs the compiled loop
pid = os.fork()
if pid == 0:
    ok = (not compiled.usable() and
          np.array_equal(gp.raw_ops.ReluGrad(gradients=x, features=x), parent) and
          np.allclose(gp.raw_ops.BiasAddGrad(out_backprop=x), x.sum(axis=0, dtype=np.float64),
                      atol=1e-4))
    os._exit(0 if ok else 3)
sys.exit(os.waitpid(pid, 0)[1] >> 8 if compiled.usable() else 4)
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=os.getcwd(), timeout=120)
    assert done.returncode == 0


@pytest.mark.parametrize("chosen, expected", [(None, "PASSIVE 30000"), ("ACTIVE", "ACTIVE -")])
def test_openmp_waits_passively_unless_chosen_even_after_numba(chosen, expected):
    """OpenMP's threads wait passively after a short spin (long-spinning ones starve the
    next kernel's threads) also when the program imported numba before graphops; a policy
    the user set stays, without the spin."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    if chosen:
        env["OMP_WAIT_POLICY"] = chosen
    script = ("import numba, os, numpy as np\n"
              "import graphops as gp\n"
              "gp.nn.relu(np.ones(1 << 16, np.float32))\n"
              "print(os.environ['OMP_WAIT_POLICY'], os.environ.get('GOMP_SPINCOUNT', '-'))\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=os.getcwd(), env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert " ".join(done.stdout.split()[-2:]) == expected
