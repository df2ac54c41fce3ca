"""graphops on a Dask cluster: gp.Session(target=client, cluster=ClusterSpec) against the
same graphs run in-process by gp.Session, on a LocalCluster of worker processes (loopback).

Needs the `distributed` extra (dask.distributed); skipped without it.
"""

import collections
import faulthandler
import os
import re
import signal
import sys
import threading
import time
import warnings

import numpy as np
import pytest

distributed = pytest.importorskip(
    "distributed", reason="dask.distributed is not installed (pip install graphops[distributed])")

import dask  # noqa: E402  (installed with distributed)
import graphops as gp  # noqa: E402
from graphops.distributed.workers import worker_names  # noqa: E402
from tests.paths import ROOT

EXAMPLES = os.path.join(ROOT, "examples")
PS_WORKERS = {"ps": ["0"], "worker": ["1", "2"]}     # LocalCluster names its workers 0, 1, ...
TEST_SECONDS = 90        # a test running longer than this is hung: dump stacks and exit


@pytest.fixture(autouse=True)
def _bounded_in_time():
    faulthandler.dump_traceback_later(TEST_SECONDS, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


def _local_cluster(n_workers):
    with warnings.catch_warnings():     # another cluster (or test run) may hold port 8787
        warnings.filterwarnings("ignore", "Port 8787 is already in use")
        return distributed.LocalCluster(processes=True, n_workers=n_workers,
                                        threads_per_worker=1, host="127.0.0.1",
                                        dashboard_address=None)


@pytest.fixture(scope="module")
def client():
    with _local_cluster(3) as cluster, distributed.Client(cluster, timeout=30) as c:
        c.wait_for_workers(3, timeout=30)
        yield c


@pytest.fixture(scope="module")
def cluster_spec():
    return gp.train.ClusterSpec(PS_WORKERS)


def _address(client, name):
    return next(a for a, w in worker_names(client).items() if w == name)


def test_the_worker_list_is_whole_while_the_client_refreshes_its_cache(client):
    """The client's periodic refresh caches scheduler info listing no workers; a task's
    worker must never look gone because a refresh landed between fetch and read."""
    with dask.config.set({"distributed.client.scheduler-info-interval": "2ms"}), \
            distributed.Client(client.scheduler.address, timeout=30) as refreshing:
        listed = [len(worker_names(refreshing)) for _ in range(1000)]
    assert listed == [3] * 1000


def _ps_worker_program():
    """A TF1 ps/worker program: a variable on ps, a cycle of edges ps -> worker -> ps."""
    g = gp.Graph()
    with g.as_default():
        x = gp.placeholder(gp.float32, [None, 3], name="x")
        with gp.device("/job:ps/task:0"):
            w = gp.Variable(np.arange(6, dtype=np.float32).reshape(3, 2), name="w")
        with gp.device("/job:worker/task:0"):
            h = gp.nn.relu(gp.matmul(x, w) - 4.0, name="h")
        with gp.device("/job:ps/task:0"):
            s = gp.reduce_sum(h, name="s") + gp.reduce_sum(w)
        with gp.device("/job:worker/task:1"):
            out = gp.multiply(h, s, name="out")
        update = gp.assign_add(w, np.full((3, 2), 0.5, np.float32))
        init = gp.global_variables_initializer()
    return g, x, w, h, s, out, update, init


def test_a_ps_worker_program_gives_the_in_process_results(client, cluster_spec):
    g, x, w, h, s, out, update, init = _ps_worker_program()
    xv = np.linspace(-1, 2, 12, dtype=np.float32).reshape(4, 3)
    Pair = collections.namedtuple("Pair", "h out")
    fetches = {"pair": Pair(h, out), "list": [s, "out:0"], "op": update.op}
    with gp.Session(graph=g) as local, \
            gp.Session(graph=g, target=client, cluster=cluster_spec) as remote:
        assert remote.sess_str.startswith("dask://127.0.0.1:")
        for sess in (local, remote):
            sess.run(init)
        for _ in range(2):
            expected, got = local.run(fetches, {x: xv}), remote.run(fetches, {"x:0": xv})
            assert isinstance(got["pair"], Pair) and got["op"] is None
            for e, a in zip([*expected["pair"], *expected["list"]],
                            [*got["pair"], *got["list"]]):
                np.testing.assert_allclose(a, e, rtol=1e-6)
        call = remote.make_callable(out, [x])
        np.testing.assert_allclose(call(xv), local.run(out, {x: xv}), rtol=1e-6)


def test_variables_persist_on_their_task_across_runs_and_die_with_the_session(client,
                                                                              cluster_spec):
    g, x, w, h, s, out, update, init = _ps_worker_program()
    with gp.Session(graph=g, target=client, cluster=cluster_spec) as sess:
        sess.run(init)
        for _ in range(3):
            sess.run(update)
        np.testing.assert_array_equal(sess.run(w), np.arange(6).reshape(3, 2) + 1.5)
        with g.as_default(), gp.device("/job:worker/task:1"):
            doubled = w * 2.0                     # a node added later reads the same w
        np.testing.assert_array_equal(sess.run(doubled), 2 * (np.arange(6).reshape(3, 2) + 1.5))
    with gp.Session(graph=g, target=client, cluster=cluster_spec) as fresh:
        with pytest.raises(gp.errors.FailedPreconditionError, match="uninitialized value w"):
            fresh.run(w)


def test_feeding_fetching_and_kernel_errors_work_as_in_process(client, cluster_spec):
    g, x, w, h, s, out, update, init = _ps_worker_program()
    hv = np.ones((2, 2), np.float32)
    with gp.Session(graph=g) as local, \
            gp.Session(graph=g, target=client, cluster=cluster_spec) as remote:
        for sess in (local, remote):
            sess.run(init)
        # feeding a tensor computed on another task prunes what produces it
        expected = local.run([out, h], {h: hv})
        got = remote.run([out, h], {h: hv})
        np.testing.assert_allclose(got[0], expected[0])
        np.testing.assert_array_equal(got[1], hv)


def test_a_large_feed_goes_straight_to_its_worker(client, cluster_spec):
    g = gp.Graph()
    with g.as_default():
        p = gp.placeholder(gp.float32, [None], name="p")
        with gp.device("/job:worker/task:1"):
            total = gp.reduce_sum(p * 2.0)
    value = np.arange(1 << 20, dtype=np.float32) / (1 << 20)       # 4 MiB: scattered
    with gp.Session(graph=g, target=client, cluster=cluster_spec) as sess:
        np.testing.assert_allclose(sess.run(total, {p: value}), 2 * value.sum(), rtol=1e-5)


def test_a_kernel_error_on_a_worker_comes_back_as_in_process(client, cluster_spec):
    g = gp.Graph()
    with g.as_default():
        p = gp.placeholder(gp.float32, [None], name="p")
        with gp.device("/job:worker/task:1"):
            y = gp.reshape(p, [5], name="y")
    errors = []
    for target in ("", client):
        with gp.Session(graph=g, target=target, cluster=cluster_spec) as sess:
            with pytest.raises(gp.errors.InvalidArgumentError) as caught:
                sess.run(y, {p: np.ones(4, np.float32)})
            errors.append(caught.value.message)
    assert "Input to reshape is a tensor with 4 values" in errors[1]
    assert errors[0].split("\n")[0] == errors[1].split("\n")[0]


def test_a_missing_task_is_a_placement_error(client, cluster_spec):
    g = gp.Graph()
    with g.as_default(), gp.device("/job:worker/task:7"):
        y = gp.constant(1.0, name="y") + 1.0
    with gp.Session(graph=g, target=client, cluster=cluster_spec) as sess:
        with pytest.raises(gp.errors.InvalidArgumentError, match="explicitly assigned to "
                           "/job:worker/task:7 but available devices are"):
            sess.run(y)


def test_tensors_cross_tasks_worker_to_worker_not_through_the_client(client, cluster_spec):
    g = gp.Graph()
    with g.as_default():
        with gp.device("/job:ps/task:0"):
            big = gp.ones([1024, 1024], name="big")             # 4 MiB of float32
            peak = gp.reduce_max(big, name="peak")
        with gp.device("/job:worker/task:1"):
            total = gp.reduce_sum(big, name="total")
    with gp.Session(graph=g, target=client, cluster=cluster_spec) as sess, \
            distributed.get_task_stream(client) as stream:
        assert sess.run([total, peak]) == [1024 * 1024, 1.0]
    ps, worker = _address(client, "0"), _address(client, "2")
    # the ps stage's outputs are `big` (for the worker) and `peak` (for the client): a task
    # on the ps worker picks `peak`, so the 4 MiB never reach the client
    picked = [t["worker"] for t in stream.data if str(t["key"]).endswith("-fetched")]
    assert picked == [ps]
    log = client.run(lambda dask_worker: [(e["who"], list(e["keys"]), e["total"])
                                          for e in dask_worker.transfer_incoming_log],
                     workers=[worker])[worker]
    moved = [n for who, keys, n in log if who == ps and any("job:ps" in str(k) for k in keys)]
    assert moved and max(moved) >= 4 * 1024 * 1024


def test_a_default_cluster_and_a_dask_address_target(client):
    g = gp.Graph()
    with g.as_default():
        with gp.device("/job:worker/task:2"):
            y = gp.constant(np.arange(4, dtype=np.int32)) * 3
    address = "dask://" + client.scheduler.address.split("://")[1]
    with gp.Session(graph=g, target=address) as sess:
        workers = worker_names(client)
        by_address = sorted(workers, key=lambda a: int(a.rsplit(":", 1)[1]))
        assert sess.cluster_spec.as_dict() == {
            "worker": [workers[a] for a in by_address]}
        assert [d.name for d in sess.list_devices()] == [
            f"/job:worker/replica:0/task:{i}/device:CPU:0" for i in range(3)]
        np.testing.assert_array_equal(sess.run(y), [0, 3, 6, 9])


def test_batch_inference_streams_in_order_with_bounded_memory(client, cluster_spec):
    g = gp.Graph()
    with g.as_default():
        x = gp.placeholder(gp.float32, [None], name="x")
        with gp.device("/job:ps/task:0"):
            w = gp.Variable(np.float32(2.0), name="w")
        y = gp.square(x) * w                                  # no job: runs where spread
        init = gp.global_variables_initializer()
    pulled = []

    def feeds():
        for i in range(20):
            pulled.append(i)
            yield {x: np.full(3, i, np.float32)}

    with gp.Session(graph=g, target=client, cluster=cluster_spec) as sess:
        sess.run(init)
        with distributed.get_task_stream(client) as stream:
            results = sess.map(y, feeds(), max_in_flight=3)
            first = next(results)
            assert len(pulled) == 3              # read ahead no further than max_in_flight
            rest = list(results)
        ran_on = {key.split("-")[1] for key in (t["key"] for t in stream.data)
                  if key.startswith("graphops-job:worker")}
        assert ran_on == {"job:worker_replica:0_task:0", "job:worker_replica:0_task:1"}
        on_ps = list(sess.map(y, [{x: [3.0]}], tasks=["/job:ps/task:0"]))
        with pytest.raises(gp.errors.InvalidArgumentError, match="map needs tasks of the"):
            next(sess.map(y, [{x: [3.0]}], tasks=["/job:worker/task:9"]))
    np.testing.assert_allclose(np.stack([first] + rest)[:, 0], 2.0 * np.arange(20) ** 2)
    np.testing.assert_allclose(on_ps, [[18.0]])


def _slow_graph(task):
    """A step of a few seconds on `task`: a chain of 1000 x 1000 matmuls."""
    g = gp.Graph()
    with g.as_default(), gp.device(task):
        h = mean = gp.ones([1000, 1000]) / 1000.0
        for _ in range(60):
            h = gp.matmul(h, mean)
        total = gp.reduce_sum(h, name="total")
    return g, total


def test_a_deadline_raises_deadline_exceeded_and_the_session_goes_on(client, cluster_spec):
    g, total = _slow_graph("/job:worker/task:1")
    with gp.Session(graph=g, target=client, cluster=cluster_spec) as sess:
        start = time.monotonic()
        with pytest.raises(gp.errors.DeadlineExceededError,
                           match="/job:worker/replica:0/task:1"):
            sess.run(total, options=gp.RunOptions(timeout_in_ms=100))
        assert time.monotonic() - start < 5
        np.testing.assert_allclose(sess.run(total), 1000.0, rtol=1e-4)


def test_data_parallel_training_matches_single_process_training(client):
    sys.path.insert(0, EXAMPLES)
    try:
        import train_cnn3d_distributed as example
    finally:
        sys.path.remove(EXAMPLES)
    data = example.make_dataset(24, np.random.default_rng(1))
    cluster = gp.train.ClusterSpec(PS_WORKERS)
    losses, _ = example.train_distributed(client, cluster, data, steps=3, batch=8, lr=2e-3,
                                          seed=0)
    reference, _ = example.train_single_process(data, steps=3, batch=8, lr=2e-3, seed=0)
    np.testing.assert_allclose(losses, reference, rtol=1e-5)
    assert losses[0] != losses[-1]


def test_an_interactive_session_stays_in_process():
    with pytest.raises(gp.errors.UnimplementedError, match="InteractiveSession runs "
                       "in-process only"):
        gp.InteractiveSession(target="dask://127.0.0.1:1")


def _recipe(path):
    """The first ```py block of a Markdown file."""
    with open(path, encoding="utf-8") as f:
        return re.findall(r"```py\n(.*?)```", f.read(), flags=re.S)[0]


def test_the_documented_recipe_runs_as_written():
    recipe = _recipe(os.path.join(ROOT, "docs", "distributed.md"))
    namespace = {}
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Port 8787 is already in use")
        exec(compile(recipe, "docs/distributed.md", "exec"), namespace)  # noqa: S102
    outputs = np.concatenate(namespace["outputs"])
    np.testing.assert_allclose(outputs, 8.0 * np.arange(100)[:, None] * np.ones((1, 2)))
    np.testing.assert_allclose(namespace["y_value"], [[8.0, 8.0]])


# ---------------------------------------------------------------------- faults

@pytest.fixture(scope="module")
def fault_client():
    with _local_cluster(2) as cluster, distributed.Client(cluster, timeout=30) as c:
        c.wait_for_workers(2, timeout=30)
        yield c


def test_a_killed_worker_is_unavailable_and_its_task_comes_back(fault_client, tmp_path):
    client = fault_client
    cluster = gp.train.ClusterSpec({"ps": ["0"], "worker": ["1"]})
    g = gp.Graph()
    with g.as_default():
        with gp.device("/job:ps/task:0"):
            kept = gp.Variable(np.float32(1.0), name="kept")
        with gp.device("/job:worker/task:0"):
            lost = gp.Variable(np.float32(5.0), name="lost")
            h = mean = gp.ones([1000, 1000]) / 1000.0
            for _ in range(80):
                h = gp.matmul(h, mean)
            slow = gp.reduce_sum(h) + lost
        bump = gp.group(gp.assign_add(kept, 1.0), gp.assign_add(lost, 1.0))
        init = gp.global_variables_initializer()
        saver = gp.train.Saver()
    worker = _address(client, "1")
    pid = client.run(os.getpid, workers=[worker])[worker]
    with gp.Session(graph=g, target=client, cluster=cluster) as sess:
        sess.run(init)
        sess.run(bump)
        checkpoint = saver.save(sess, str(tmp_path / "model"))
        killer = threading.Timer(0.5, os.kill, (pid, signal.SIGKILL))
        killer.start()
        start = time.monotonic()
        with pytest.raises((gp.errors.UnavailableError, gp.errors.AbortedError),
                           match="/job:worker/replica:0/task:0"):
            sess.run(slow)
        assert time.monotonic() - start < 20
        killer.join()
        deadline = time.monotonic() + 30          # the nanny restarts the worker, same name
        while not any(w == "1" and a != worker for a, w in worker_names(client).items()):
            assert time.monotonic() < deadline, "the killed worker did not come back"
            time.sleep(0.2)
        assert sess.run(kept) == 2.0              # the ps task kept its variables
        with pytest.raises(gp.errors.FailedPreconditionError, match="uninitialized value lost"):
            sess.run(lost)
        saver.restore(sess, checkpoint)           # the restarted task's, from the checkpoint
        assert sess.run([kept, lost]) == [2.0, 6.0]
        np.testing.assert_allclose(sess.run(slow), 1006.0, rtol=1e-4)
