"""Whole-model inference: Keras CNNs frozen by TensorFlow, run by graphops and by TF's own
Session on the same GraphDef, each in processes of its own.

Usage (from the repo root; needs TensorFlow):
    python benchmarks/bench_models.py [--repeat R] [--rounds K] [--batch 1,8]
        [--only NAME[,NAME]] [--memory]

Per model and batch size it prints each framework's time per `Session.run` (ms; graphops,
and TF's `tf.compat.v1.Session` on the same frozen GraphDef, NumPy feeds for both), the
ratio graphops / TF (< 1 means graphops is faster), and the largest difference between the
two outputs relative to their largest magnitude. Each framework runs in a fresh process of
its own (the median of R runs after ``WARM_UP_RUNS`` untimed ones), the two alternating for
K rounds (a shared machine's speed drifts by 1.5x within minutes); a time is the median
over rounds. The warm-up lets graphops' conv tuning finish (the first calls of a conv that
several paths take try each of them) and TF build its oneDNN primitives, so that both are
timed as a program's later steps run.
In one process each framework's idle threads slow the other's: after graphops' GEMMs,
OpenBLAS's threads poll for work for about 50 ms, and TF's ResNet50 at batch 8 ran 1.2-1.6x
slower beside them. The models are those of tests/keras_models.py with random weights (no
downloads).

With `--memory` it prints, per model and batch size, each framework's peak resident memory
(RSS) instead: the GraphDef is written to a file, and a fresh process of each framework
imports itself, reads the file, runs the model 5 times and reports its peak RSS, and the
part of it above what the process held once the framework was imported (the model's own
cost: its graph, weights, plans and activations).
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
# Untimed runs before the timed ones: one, then the calls graphops' conv tuning makes of
# two candidate paths (2 x (tuning.WARM_UPS + tuning.TRIALS); tests/project checks it).
WARM_UP_RUNS = 11


def tf_session(tf, graph_def):
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.import_graph_def(graph_def, name="")
    return tf.compat.v1.Session(graph=graph)


def graphops_session(gp, path):
    """The frozen graph as a user runs it in graphops: read from the file TF wrote."""
    graph = gp.Graph()
    with graph.as_default():
        gp.import_graph_def(gp.io.read_graph_def(path), name="")
    return gp.Session(graph=graph)


def _inputs(shape):
    return np.random.default_rng(0).standard_normal(shape).astype(np.float32)


def compare(tf, gp, graph_def, input_name, output_name, shapes, repeat, rounds):
    """Per input shape (graphops ms, TF ms, largest output difference relative to TF's
    largest magnitude) for one standard-normal float32 input: the outputs from both in this
    process; the times from each framework in fresh processes of its own, alternating for
    `rounds` rounds, per process the median of `repeat` runs after ``WARM_UP_RUNS``, and
    the median over rounds."""
    rows = []
    with tempfile.TemporaryDirectory() as directory:
        path = tf.io.write_graph(graph_def, directory, "model.pb", as_text=False)
        with tf_session(tf, graph_def) as theirs, graphops_session(gp, path) as ours:
            diffs = []
            for shape in shapes:
                want = theirs.run(output_name, {input_name: _inputs(shape)})
                got = ours.run(output_name, {input_name: _inputs(shape)})
                diffs.append(np.abs(got - want).max() / max(1e-30, np.abs(want).max()))
        for shape, diff in zip(shapes, diffs):
            rows.append(_times_apart(path, input_name, output_name, shape, repeat, rounds)
                        + (diff,))
    return rows


def _times_apart(path, input_name, output_name, shape, repeat, rounds):
    """(graphops ms, TF ms), each framework timed in fresh processes of its own
    (`time_in_child`), alternating for `rounds` rounds; the median over rounds."""
    times = {"graphops": [], "tf": []}
    for _ in range(rounds):
        for framework, taken in times.items():
            out = subprocess.run(
                [sys.executable, os.path.abspath(__file__), "--time", framework, path,
                 input_name, output_name, ",".join(map(str, shape)), str(repeat)],
                capture_output=True, text=True, check=True, cwd=ROOT)
            taken.append(float(out.stdout.split()[-1]))
    return statistics.median(times["graphops"]), statistics.median(times["tf"])


def child_session(framework, path):
    """A Session of `framework` ("tf" or "graphops") on the GraphDef in `path`, and the peak
    RSS (MB) once the framework was imported."""
    if framework == "tf":
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        import tensorflow as tf
        imported = peak_rss_mb()
        return tf_session(tf, tf.compat.v1.GraphDef.FromString(open(path, "rb").read())), \
            imported
    import graphops as gp
    imported = peak_rss_mb()
    return graphops_session(gp, path), imported


def time_in_child(framework, path, input_name, output_name, shape, repeat):
    """In a child process: prints the median ms of `repeat` runs after ``WARM_UP_RUNS``."""
    feeds = {input_name: _inputs(shape)}
    sess, _ = child_session(framework, path)
    for _ in range(WARM_UP_RUNS):
        sess.run(output_name, feeds)
    taken = []
    for _ in range(repeat):
        start = time.perf_counter()
        sess.run(output_name, feeds)
        taken.append(time.perf_counter() - start)
    print(1e3 * statistics.median(taken))


def peak_rss_mb():
    """This process's peak RSS (Linux's VmHWM: unlike getrusage's ru_maxrss it starts
    afresh at exec, not at the parent's peak)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise OSError("no VmHWM in /proc/self/status: --memory needs Linux")


def run_for_memory(framework, path, input_name, output_name, shape):
    """In a child process: prints (peak RSS after importing the framework, peak RSS after
    5 runs of the model in `path`) in MB."""
    feeds = _inputs(shape)
    sess, imported = child_session(framework, path)
    for _ in range(5):
        sess.run(output_name, {input_name: feeds})
    print(imported, peak_rss_mb())


def memory_of(framework, path, input_name, output_name, shape):
    """(peak RSS, peak above the imported framework's) in MB, from a fresh process."""
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", framework, path,
                          input_name, output_name, ",".join(map(str, shape))],
                         capture_output=True, text=True, check=True, cwd=ROOT)
    imported, peak = map(float, out.stdout.split()[-2:])
    return peak, peak - imported


def memory_table(names, batches, build, freeze, tf):
    print(f"{'model':<16} {'batch':>5} {'graphops MB':>12} {'TF MB':>9} "
          f"{'graphops model MB':>18} {'TF model MB':>12}")
    for name in names:
        model, shape = build(name)
        graph_def, input_name, output_name, _ = freeze(model, shape)
        with tempfile.TemporaryDirectory() as directory:
            path = tf.io.write_graph(graph_def, directory, "model.pb", as_text=False)
            for batch in batches:
                ours, theirs = (memory_of(fw, path, input_name, output_name, (batch,) + shape)
                                for fw in ("graphops", "tf"))
                print(f"{name:<16} {batch:>5} {ours[0]:>12.0f} {theirs[0]:>9.0f} "
                      f"{ours[1]:>18.0f} {theirs[1]:>12.0f}", flush=True)


def main():
    if sys.argv[1:2] == ["--child"]:
        framework, path, input_name, output_name, shape = sys.argv[2:7]
        return run_for_memory(framework, path, input_name, output_name,
                              tuple(int(d) for d in shape.split(",")))
    if sys.argv[1:2] == ["--time"]:
        framework, path, input_name, output_name, shape, repeat = sys.argv[2:8]
        return time_in_child(framework, path, input_name, output_name,
                             tuple(int(d) for d in shape.split(",")), int(repeat))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch", default="1,8")
    parser.add_argument("--only", default="")
    parser.add_argument("--memory", action="store_true",
                        help="peak resident memory of each framework instead of times")
    args = parser.parse_args()
    try:
        from tests.keras_models import MODELS, build, freeze, tf
    except ImportError as error:
        sys.exit(f"bench_models.py needs TensorFlow: {error}")
    import graphops as gp

    names = [n for n in MODELS if not args.only or n in args.only.split(",")]
    batches = [int(b) for b in args.batch.split(",")]
    if args.memory:
        return memory_table(names, batches, build, freeze, tf)
    print(f"{'model':<16} {'batch':>5} {'nodes':>6} {'graphops ms':>12} {'TF ms':>9} "
          f"{'ratio':>6} {'max rel diff':>13}")
    for name in names:
        model, shape = build(name)
        graph_def, input_name, output_name, _ = freeze(model, shape)
        rows = compare(tf, gp, graph_def, input_name, output_name,
                       [(batch,) + shape for batch in batches], args.repeat, args.rounds)
        for batch, (ms_ours, ms_tf, diff) in zip(batches, rows):
            print(f"{name:<16} {batch:>5} {len(graph_def.node):>6} {ms_ours:>12.2f} "
                  f"{ms_tf:>9.2f} {ms_ours / ms_tf:>6.2f} {diff:>13.2e}", flush=True)


if __name__ == "__main__":
    main()
