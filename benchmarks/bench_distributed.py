"""Distributed-session overheads on a LocalCluster (worker processes, loopback).

    python benchmarks/bench_distributed.py [--quick] [--repeat R] [--profiler]

Rows: the per-step time of an empty step and of a step with one cross-task edge (and the
in-process Session's for comparison); the rate at which a tensor moves between two
workers inside a step, against a plain Dask transfer of the same array; the step time of
examples/train_cnn3d_distributed.py with 1 and 2 workers (and in-process). Medians of R runs.
"""

import argparse
import os
import statistics
import sys
import time

import numpy as np

import graphops as gp
from graphops.distributed.workers import worker_names

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "examples"))


def median_ms(fn, repeat):
    fn()                                                   # warm: plans, partitions loaded
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def step_overheads(client, cluster, repeat):
    """(empty step, one cross-task edge) in ms, distributed and in-process."""
    g = gp.Graph()
    with g.as_default():
        with gp.device("/job:worker/task:0"):
            empty = gp.no_op(name="empty")
        with gp.device("/job:ps/task:0"):
            a = gp.constant(1.0, name="a") + 1.0
        with gp.device("/job:worker/task:0"):
            b = a * 2.0
    rows = []
    for target in (client, ""):
        with gp.Session(graph=g, target=target, cluster=cluster) as sess:
            rows.append((median_ms(lambda: sess.run(empty), repeat),
                         median_ms(lambda: sess.run(b), repeat)))
    return rows


def transfer_rates(client, cluster, megabytes, repeat):
    """(graphops MB/s, plain Dask MB/s) moving a float32 array of `megabytes` from the ps
    worker to another. Each side times "make the array on ps, sum it on the worker" with
    the two ends on two workers and on one, for the array and for one element; the
    transfer time is what the size adds to the crossing beyond what it adds without it."""
    n = megabytes * (1 << 20) // 4
    names = {name: a for a, name in worker_names(client).items()}
    src, dst = names[cluster.task_address("ps", 0)], names[cluster.task_address("worker", 0)]
    sessions = {}

    def ours(size, crossing):
        if (size, crossing) not in sessions:
            g = gp.Graph()
            with g.as_default():
                with gp.device("/job:ps/task:0"):
                    made = gp.fill([size], 1.0)
                with gp.device("/job:worker/task:0" if crossing else "/job:ps/task:0"):
                    total = gp.reduce_sum(made)
            sess = gp.Session(graph=g, target=client, cluster=cluster)
            sessions[(size, crossing)] = (sess, total)
        sess, total = sessions[(size, crossing)]
        return median_ms(lambda: sess.run(total), repeat)

    def plain(size, crossing):
        def once():
            made = client.submit(np.ones, size, dtype=np.float32, workers=[src], pure=False)
            client.submit(np.sum, made, workers=[dst if crossing else src], pure=False).result()
        return median_ms(once, repeat)

    rates = []
    for timed in (ours, plain):
        ms = (timed(n, True) - timed(1, True)) - (timed(n, False) - timed(1, False))
        rates.append(megabytes * 1000 / ms if ms > 0 else float("nan"))   # nan: lost in noise
    for sess, _ in sessions.values():
        sess.close()
    return rates


def data_parallel_times(client, names, steps, batch):
    """ms per step of the data-parallel example with 1 and 2 workers, and in-process."""
    import train_cnn3d_distributed as example
    data = example.make_dataset(4 * batch, np.random.default_rng(1))
    times = []
    for workers in (1, 2):
        cluster = gp.train.ClusterSpec({"ps": [names[0]], "worker": names[1:1 + workers]})
        _, seconds = example.train_distributed(client, cluster, data, steps, batch, 2e-3, 0)
        times.append(1000 * seconds)
    _, seconds = example.train_single_process(data, steps, batch, 2e-3, 0)
    times.append(1000 * seconds)
    return times


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs, smaller arrays")
    parser.add_argument("--repeat", type=int, default=None, help="runs per timing")
    parser.add_argument("--profiler", action="store_true",
                        help="leave Dask's worker profiler on (its default)")
    args = parser.parse_args(argv)
    repeat = args.repeat or (5 if args.quick else 30)
    import dask
    import distributed

    # Dask's worker profiler samples every thread's stack 100 times a second: it costs
    # graphops' Python-level executor a third of a compute-bound step (docs/distributed.md).
    dask.config.set({"distributed.worker.profile.enabled": args.profiler})
    with distributed.LocalCluster(processes=True, n_workers=3, threads_per_worker=1,
                                  host="127.0.0.1", dashboard_address=None) as local, \
            distributed.Client(local) as client:
        client.wait_for_workers(3)
        names = sorted(worker_names(client).values())
        cluster = gp.train.ClusterSpec({"ps": [names[0]], "worker": names[1:]})
        (empty, edge), (local_empty, local_edge) = step_overheads(client, cluster, repeat)
        print(f"{'measure':44s} {'graphops':>12s} {'reference':>12s}")
        print(f"{'empty step (ms; ref: in-process)':44s} {empty:12.2f} {local_empty:12.3f}")
        print(f"{'one cross-task edge (ms; ref: in-process)':44s} {edge:12.2f} "
              f"{local_edge:12.3f}")
        for megabytes in ((32,) if args.quick else (32, 128)):
            ours, theirs = transfer_rates(client, cluster, megabytes, repeat)
            print(f"{f'transfer {megabytes} MB ps->worker (MB/s; ref: Dask)':44s} "
                  f"{ours:12.0f} {theirs:12.0f}")
        steps, batch = (3, 8) if args.quick else (8, 32)
        one, two, single = data_parallel_times(client, names, steps, batch)
        print(f"{f'data-parallel step, batch {batch}, 1 worker (ms)':44s} {one:12.1f} "
              f"{single:12.1f}")
        print(f"{f'data-parallel step, batch {batch}, 2 workers (ms)':44s} {two:12.1f} "
              f"{single:12.1f}")
        print("reference for the data-parallel rows: in-process Session, full batch")


if __name__ == "__main__":
    main()
