"""Data-parallel training of train_cnn3d.py's 3-D CNN on a Dask cluster, TF1 style.

The variables (and Adam's slots) live on the ps task; each worker task computes the loss
and gradients of its shard of every batch; the ps averages the gradients and applies them
once per step, synchronously. With the same initial values and data order the loss curve
is single-process training's on the full batch (this script runs both and compares).

    python examples/train_cnn3d_distributed.py                # LocalCluster: ps + 2 workers
    python examples/train_cnn3d_distributed.py --workers 1 --steps 5
    python examples/train_cnn3d_distributed.py --scheduler tcp://host:8786 --ps 0 --workers 2
"""

import argparse
import time

import numpy as np

import graphops as gp
from graphops.distributed.workers import worker_names
from train_cnn3d import CLASSES, GRID, LAYERS, _he, augment, build_model, make_dataset


def make_params(rng):
    """The CNN's variables, created (and drawn from `rng`) as train_cnn3d.build_model does."""
    params = []
    for name, c_in, c_out, _ in LAYERS:
        with gp.name_scope(name):
            params.append(gp.Variable(_he(rng, (3, 3, 3, c_in, c_out), 27 * c_in),
                                      name="kernel"))
            params.append(gp.Variable(np.zeros(c_out, np.float32), name="bias"))
    flat_size = (GRID // 4) ** 3 * LAYERS[-1][2]
    with gp.name_scope("dense"):
        params.append(gp.Variable(_he(rng, (flat_size, len(CLASSES)), flat_size), name="kernel"))
        params.append(gp.Variable(np.zeros(len(CLASSES), np.float32), name="bias"))
    return params


def shard_loss(x, y, params):
    """Mean cross-entropy of one shard: train_cnn3d's model over shared variables."""
    h = x
    for (_, _, _, stride), (w, b) in zip(LAYERS, zip(params[0::2], params[1::2])):
        h = gp.nn.conv3d(h, w, strides=[1, stride, stride, stride, 1], padding="SAME")
        h = gp.raw_ops.Relu(features=gp.raw_ops.BiasAdd(value=h, bias=b))
    w, b = params[-2:]
    flat = gp.raw_ops.Reshape(tensor=h, shape=np.int32([-1, w.shape.as_list()[0]]))
    logits = gp.raw_ops.BiasAdd(value=gp.raw_ops.MatMul(a=flat, b=w), bias=b)
    return gp.reduce_mean(gp.nn.sparse_softmax_cross_entropy_with_logits(labels=y,
                                                                         logits=logits))


def build_data_parallel(rng, learning_rate, cluster):
    """(shard placeholders [(x, y)] per worker, mean loss, train_op, init) for `cluster`."""
    workers = cluster.num_tasks("worker")
    with gp.device(gp.train.replica_device_setter(cluster=cluster)):
        params = make_params(rng)
    shards, losses, grads = [], [], []
    for task in range(workers):
        with gp.device(f"/job:worker/task:{task}"):
            x = gp.placeholder(gp.float32, [None, GRID, GRID, GRID, 1], name=f"voxels_{task}")
            y = gp.placeholder(gp.int64, [None], name=f"labels_{task}")
            loss = shard_loss(x, y, params)
            shards.append((x, y))
            losses.append(loss)
            grads.append(gp.gradients(loss, params))
    with gp.device("/job:ps/task:0"):
        mean_loss = gp.add_n(losses) / float(workers)
        mean_grads = [gp.add_n(list(g)) / float(workers) for g in zip(*grads)]
        train_op = gp.train.AdamOptimizer(learning_rate).apply_gradients(
            list(zip(mean_grads, params)))
    return shards, mean_loss, train_op, gp.global_variables_initializer()


def batches(voxels, labels, batch, steps, seed):
    """`steps` augmented training batches in a fixed order (the same for every run)."""
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        chosen = rng.choice(len(labels), batch, replace=False)
        yield augment(voxels[chosen], rng), labels[chosen]


def train_distributed(sess_target, cluster, data, steps, batch, lr, seed):
    """The per-step losses of data-parallel training, and the mean step time (s)."""
    graph = gp.Graph()
    with graph.as_default():
        shards, loss, train_op, init = build_data_parallel(np.random.default_rng(seed), lr,
                                                           cluster)
    losses, times = [], []
    with gp.Session(graph=graph, target=sess_target, cluster=cluster) as sess:
        sess.run(init)
        step = sess.make_callable([loss, train_op], [t for xy in shards for t in xy])
        for voxels, labels in batches(*data, batch, steps, seed):
            feeds = [part for pair in zip(np.array_split(voxels, len(shards)),
                                          np.array_split(labels, len(shards)))
                     for part in pair]
            start = time.perf_counter()
            losses.append(float(step(*feeds)[0]))
            times.append(time.perf_counter() - start)
    return losses, float(np.mean(times[1:] or times))


def train_single_process(data, steps, batch, lr, seed):
    """The per-step losses of train_cnn3d.py's model trained in-process on full batches,
    and the mean step time (s)."""
    graph = gp.Graph()
    with graph.as_default():
        x, y, loss, _, train_op = build_model(np.random.default_rng(seed), lr)
        init = gp.global_variables_initializer()
    losses, times = [], []
    with gp.Session(graph=graph) as sess:
        sess.run(init)
        step = sess.make_callable([loss, train_op], [x, y])
        for voxels, labels in batches(*data, batch, steps, seed):
            start = time.perf_counter()
            losses.append(float(step(voxels, labels)[0]))
            times.append(time.perf_counter() - start)
    return losses, float(np.mean(times[1:] or times))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scheduler", default="", help="Dask scheduler address "
                        "(default: start a LocalCluster of ps + workers)")
    parser.add_argument("--workers", type=int, default=2, help="worker tasks")
    parser.add_argument("--ps", default=None, help="Dask worker name for the ps task")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    import dask
    import distributed

    data = make_dataset(max(4 * args.batch, 64), np.random.default_rng(args.seed + 1))
    if args.scheduler:
        client, cluster_obj = distributed.Client(args.scheduler), None
    else:   # Dask's worker profiler slows graphops' executor: off (docs/distributed.md)
        dask.config.set({"distributed.worker.profile.enabled": False})
        cluster_obj = distributed.LocalCluster(n_workers=args.workers + 1, threads_per_worker=1,
                                               processes=True, host="127.0.0.1",
                                               dashboard_address=None)
        client = distributed.Client(cluster_obj)
    names = sorted(worker_names(client).values())
    ps = args.ps if args.ps is not None else names[0]
    workers = [n for n in names if n != ps][:args.workers]
    cluster = gp.train.ClusterSpec({"ps": [ps], "worker": workers})
    try:
        losses, step_time = train_distributed(client, cluster, data, args.steps, args.batch,
                                              args.lr, args.seed)
        reference, reference_time = train_single_process(data, args.steps, args.batch,
                                                         args.lr, args.seed)
    finally:
        client.close()
        if cluster_obj is not None:
            cluster_obj.close()
    for n, (a, b) in enumerate(zip(losses, reference), 1):
        print(f"step {n:3d}  loss {a:.6f}  single-process {b:.6f}")
    difference = np.max(np.abs(np.subtract(losses, reference)))
    print(f"{len(workers)} worker(s): {1000 * step_time:.1f} ms/step (in-process "
          f"{1000 * reference_time:.1f} ms/step); largest loss difference from "
          f"single-process training {difference:.2e}")
    return losses, reference


if __name__ == "__main__":
    main()
