"""A whole training step: examples/train_cnn3d.py's 3-D CNN (Conv3D x3, dense, softmax
cross-entropy, Adam) in graphops against the same model in TensorFlow's TF1 graph mode.

Usage (from the repo root): python benchmarks/bench_training.py [--batch 32] [--repeat 20]
    [--rounds 3] [--load K] [--threads N]

The TF model is built by the example's own `build_model`, run with `tf.compat.v1` in place
of `graphops`, from the same initial values; each framework runs in a process of its own
(TF's OpenMP and pool threads would otherwise spin against graphops' threads), one step
(`[loss, train_op]` through `make_callable`) on the same fed batch. The two alternate for
`--rounds` rounds, a fresh process each (a shared machine's speed drifts by 1.5x within
minutes). It prints the median over rounds of each framework's median step time, the ratio
graphops / TF (< 1: graphops is faster), each round's ratio, and the loss of both after
the timed steps (they train in lockstep, so the losses agree to float32 rounding).
`--load K` keeps K other processes spinning on the cores meanwhile (a contended machine),
and `--threads N` sets `gp.config.set_intra_op_parallelism_threads(N)` and TF's intra-op
pool.
"""

import argparse
import importlib.util
import multiprocessing
import os
import statistics
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def load_example(framework):
    """examples/train_cnn3d.py as a module whose `gp` is `framework`."""
    spec = importlib.util.spec_from_file_location(f"train_cnn3d_{id(framework)}",
                                                  os.path.join(ROOT, "examples",
                                                               "train_cnn3d.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.gp = framework
    return module


def build_session(example, framework, session_class, config, seed):
    """An initialised session of the example's model and its one-step callable."""
    graph = framework.Graph()
    with graph.as_default():
        x, y, loss, _, train_op = example.build_model(np.random.default_rng(seed), 2e-3)
        init = framework.global_variables_initializer()
    sess = session_class(graph=graph, config=config)
    sess.run(init)
    return sess, sess.make_callable([loss, train_op], [x, y])


def spin():
    while True:
        pass


def step_median(step, batch, repeat):
    """Median time (s) of `repeat` steps after one warm-up, and the last loss."""
    step(*batch)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        loss = step(*batch)[0]
        times.append(time.perf_counter() - start)
    return statistics.median(times), loss


def time_framework(name, args):
    """Runs in the child process: times `name` ("graphops" or "tf"), prints "median loss"."""
    if name == "tf":
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        import tensorflow as tf
        tf.compat.v1.disable_eager_execution()
        config = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=args.threads)
        framework, session_class = tf.compat.v1, tf.compat.v1.Session
    else:
        import graphops as gp
        gp.config.set_intra_op_parallelism_threads(args.threads)
        framework, session_class, config = gp, gp.Session, None
    example = load_example(framework)
    batch = example.make_dataset(args.batch, np.random.default_rng(1))
    _, step = build_session(example, framework, session_class, config, seed=0)
    median, loss = step_median(step, batch, args.repeat)
    print(median, loss)


def run_child(name, args):
    """(median s, loss) from a child process timing `name`, or None when it cannot run."""
    command = [sys.executable, os.path.abspath(__file__), "--framework", name,
               "--batch", str(args.batch), "--repeat", str(args.repeat),
               "--threads", str(args.threads)]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        return None
    median, loss = done.stdout.split()[-2:]
    return float(median), float(loss)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3, help="alternating runs of each")
    parser.add_argument("--load", type=int, default=0, help="spinning processes while timing")
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--framework", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.framework:
        return time_framework(args.framework, args)
    spinners = [multiprocessing.Process(target=spin, daemon=True) for _ in range(args.load)]
    for p in spinners:
        p.start()
    try:
        rounds = [{name: run_child(name, args) for name in ("graphops", "tf")}
                  for _ in range(args.rounds)]
    finally:
        for p in spinners:
            p.terminate()
    print(f"3-D CNN training step, batch {args.batch}, {args.load} spinning processes, "
          f"threads {args.threads or 'all'}, {args.rounds} alternating rounds")
    medians = {}
    for name, label in (("graphops", "graphops"), ("tf", "TF")):
        runs = [r[name] for r in rounds if r[name] is not None]
        if not runs:
            print(f"  {label:<9} not run (TensorFlow missing, or the child failed)")
            continue
        medians[name] = statistics.median(median for median, _ in runs)
        print(f"  {label:<9} {medians[name] * 1e3:8.1f} ms/step   loss after {args.repeat + 2} "
              f"steps {runs[-1][1]:.6f}")
    if len(medians) == 2:
        each = " ".join(f"{r['graphops'][0] / r['tf'][0]:.2f}" for r in rounds
                        if r["graphops"] and r["tf"])
        print(f"  ratio graphops / TF: {medians['graphops'] / medians['tf']:.2f}"
              f"   (rounds: {each})")


if __name__ == "__main__":
    main()
