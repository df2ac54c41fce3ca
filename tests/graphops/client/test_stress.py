"""Many threads on one Session (and in eager mode): correct results, exact variable updates,
failures that stay in their own run, a graph growing meanwhile, and closing under load.
Each test runs for about a second of wall time."""

import threading
import time
from types import SimpleNamespace

import numpy as np
import pytest

import graphops as gp
from graphops.registry import errors

THREADS = 8
SECONDS = 1.0
W = np.arange(6, dtype=np.float32).reshape(3, 2)


def hammer(worker, threads=THREADS, seconds=SECONDS):
    """Runs worker(rng, stop_time) in `threads` threads; re-raises the first failure."""
    failures, stop = [], time.monotonic() + seconds

    def body(seed):
        try:
            worker(np.random.default_rng(seed), stop)
        except BaseException as e:  # noqa: BLE001 - reported below
            failures.append(e)

    pool = [threading.Thread(target=body, args=(seed,)) for seed in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join(seconds + 30)
    assert not any(t.is_alive() for t in pool), "a thread hangs"
    if failures:
        raise failures[0]


def build_graph():
    g = gp.Graph()
    with g.as_default():
        x = gp.placeholder(gp.float32, [None, 3], name="x")
        y = gp.raw_ops.MatMul(a=x, b=W, name="y")
        z = gp.raw_ops.Sum(input=y * 2.0 + 1.0, axis=[0, 1], name="z")
        images = gp.raw_ops.Reshape(tensor=x, shape=[-1, 1, 1, 3])
        conv = gp.raw_ops.Conv2D(input=images, filter=np.reshape(W, (1, 1, 3, 2)),
                                 strides=[1] * 4, padding="SAME", name="conv")
        shape = gp.placeholder(gp.int32, [None], name="shape")
        bad = gp.raw_ops.Reshape(tensor=x, shape=shape, name="bad")
        counter = gp.Variable(np.int64(0), name="counter")
        total = gp.Variable(np.zeros(3), name="total")
        delta = gp.placeholder(gp.float64, [3], name="delta")
        tick = counter.assign_add(np.int64(1), read_value=False)
        add = total.assign_add(delta, read_value=False)
        init = gp.global_variables_initializer()
    return g, SimpleNamespace(x=x, y=y, z=z, conv=conv, shape=shape, bad=bad, counter=counter,
                              total=total, delta=delta, tick=tick, add=add, init=init)


def test_threads_share_one_session():
    g, n = build_graph()
    ticks, deltas = [], []
    with gp.Session(graph=g) as sess:
        sess.run(n.init)
        scaled = sess.make_callable(n.z, [n.x])

        def worker(rng, stop):
            my_ticks, my_delta, last_seen = 0, np.zeros(3), 0
            while time.monotonic() < stop:
                x = rng.integers(-4, 5, (int(rng.integers(1, 6)), 3)).astype(np.float32)
                task = int(rng.integers(0, 6))
                if task == 0:
                    np.testing.assert_array_equal(sess.run(n.y, {n.x: x}), x @ W)
                elif task == 1:
                    got = sess.run({"z": n.z, "conv": n.conv}, {"x:0": x})
                    assert got["z"] == ((x @ W) * 2 + 1).sum()
                    np.testing.assert_array_equal(got["conv"].reshape(-1, 2), x @ W)
                elif task == 2:
                    assert scaled(x) == ((x @ W) * 2 + 1).sum()
                elif task == 3:
                    with pytest.raises(errors.InvalidArgumentError, match="Input to reshape"):
                        sess.run(n.bad, {n.x: x, n.shape: [x.size + 1]})
                elif task == 4:
                    sess.run(n.tick)
                    my_ticks += 1
                    seen = sess.run(n.counter)
                    assert seen >= last_seen + 1     # our own tick is visible at once
                    last_seen = seen
                else:
                    d = rng.integers(-3, 4, 3).astype(np.float64)
                    sess.run(n.add, {n.delta: d})
                    my_delta += d
            ticks.append(my_ticks)
            deltas.append(my_delta)

        hammer(worker)
        assert sess.run(n.counter) == sum(ticks) > 0
        np.testing.assert_array_equal(sess.run(n.total), np.sum(deltas, axis=0))


def test_runs_while_the_graph_grows():
    g, n = build_graph()
    with gp.Session(graph=g) as sess:
        def worker(rng, stop):
            while time.monotonic() < stop:
                x = rng.standard_normal((2, 3)).astype(np.float32)
                k = float(rng.integers(1, 100))
                if rng.integers(0, 2):
                    with g.as_default():
                        node = n.y * k
                else:
                    node = n.y
                    k = 1.0
                got = sess.run(node, {n.x: x})
                np.testing.assert_allclose(got, (x @ W) * np.float32(k), rtol=1e-6)

        hammer(worker)
    assert len(g.get_operations()) > len(build_graph()[0].get_operations())


def test_closing_under_load_gives_results_or_typed_errors():
    g, n = build_graph()
    sess = gp.Session(graph=g)
    outcomes = {"result": 0, "cancelled": 0, "closed": 0}
    count = threading.Lock()

    def worker(rng, stop):
        # Run until this thread sees the session closed: under load the closer thread may
        # get the session's lock well after `stop`, so time alone does not bound the loop.
        kind, deadline = None, stop + 20.0
        while kind != "closed" and time.monotonic() < deadline:
            x = rng.standard_normal((4, 3)).astype(np.float32)
            try:
                got = sess.run(n.conv, {n.x: x})
                kind = "result"
                np.testing.assert_allclose(got.reshape(-1, 2), x @ W, rtol=1e-5)
                first_result.set()
            except errors.CancelledError:
                kind = "cancelled"
            except RuntimeError as e:
                assert str(e) == "Attempted to use a closed Session."
                kind = "closed"
            with count:
                outcomes[kind] += 1

    def close_after_first_result():
        first_result.wait(30)
        time.sleep(SECONDS / 2)
        sess.close()

    first_result = threading.Event()
    closer = threading.Thread(target=close_after_first_result)
    closer.start()
    hammer(worker)
    closer.join()
    assert outcomes["result"] > 0 and outcomes["closed"] == THREADS
    with pytest.raises(RuntimeError, match="closed Session"):
        sess.run(n.y, {n.x: np.ones((1, 3), np.float32)})


def test_eager_ops_from_many_threads():
    def worker(rng, stop):
        while time.monotonic() < stop:
            stride = int(rng.integers(1, 3))
            x = rng.standard_normal((1, 6, 6, 2)).astype(np.float32)
            w = rng.standard_normal((1, 1, 2, 3)).astype(np.float32)
            got = gp.raw_ops.Conv2D(input=x, filter=w, strides=[1, stride, stride, 1],
                                    padding="VALID")
            expected = x[:, ::stride, ::stride] @ w[0, 0]
            np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
            k = int(rng.integers(1, 5))
            np.testing.assert_array_equal(
                gp.raw_ops.Tile(input=x, multiples=[1, k, 1, 1]), np.tile(x, (1, k, 1, 1)))

    hammer(worker)
