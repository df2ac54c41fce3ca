"""Framework overhead: `import graphops`, graph building and Session.run per node.

Chains of 10 / 100 / 1000 small ops (Identity, AddV2 on a scalar) are built and run; the
table shows microseconds per node for building, for `sess.run` and for a `make_callable`
function, next to TensorFlow 2.x graph mode (tf.compat.v1) when it imports.
Targets: build <= 20 us/node, run <= 5 us/node, import < 0.3 s.

    python benchmarks/bench_overhead.py [--repeat 20]
"""

import argparse
import os
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
SIZES = (10, 100, 1000)


def import_time(module, tries=5):
    """Best wall time of `import module` in a fresh interpreter (seconds)."""
    code = f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
    best = float("inf")
    for _ in range(tries):
        out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                             text=True, check=True)
        best = min(best, float(out.stdout.strip().splitlines()[-1]))
    return best


def best_of(fn, repeat):
    """Best time of one call to `fn` over `repeat` calls (seconds)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def graphops_chain(n, op):
    import graphops as gp
    graph = gp.Graph()
    with graph.as_default():
        x = gp.placeholder(gp.float32, shape=(), name="x")
        one = gp.constant(1.0, dtype=gp.float32)
        y = x
        for _ in range(n):
            y = gp.raw_ops.Identity(input=y) if op == "Identity" else gp.raw_ops.AddV2(x=y, y=one)
    return graph, x, y


def tf_chain(tf, n, op):
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, shape=(), name="x")
        one = tf.constant(1.0, dtype=tf.float32)
        y = x
        for _ in range(n):
            y = tf.raw_ops.Identity(input=y) if op == "Identity" else tf.raw_ops.AddV2(x=y, y=one)
    return graph, x, y


def measure(build, session_cls, n, op, repeat):
    """(build us/node, run us/node, callable us/node) for one chain."""
    build_s = best_of(lambda: build(n, op), max(3, repeat // 4))
    graph, x, y = build(n, op)
    with session_cls(graph=graph) as sess:
        feed = {x: np.float32(1.0)}
        sess.run(y, feed)                       # plan / executor creation
        run_s = best_of(lambda: sess.run(y, feed), repeat)
        fn = sess.make_callable(y, [x])
        fn(np.float32(1.0))
        call_s = best_of(lambda: fn(np.float32(1.0)), repeat)
    return [1e6 * t / n for t in (build_s, run_s, call_s)]


def load_tf():
    try:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        import tensorflow as tf
    except ImportError:
        return None
    tf.compat.v1.disable_eager_execution()
    return tf


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--no-tf", action="store_true", help="skip the TensorFlow comparison")
    args = parser.parse_args()

    import graphops as gp
    print(f"import graphops: {import_time('graphops'):.3f} s (target < 0.3 s)")
    tf = None if args.no_tf else load_tf()
    frameworks = [("graphops", graphops_chain, gp.Session)]
    if tf is not None:
        frameworks.append((f"tf {tf.__version__}", lambda n, op: tf_chain(tf, n, op),
                           tf.compat.v1.Session))
    else:
        print("(TensorFlow not importable: no comparison)")
    print(f"\n{'framework':<12} {'op':<9} {'nodes':>6} {'build us/node':>14} "
          f"{'run us/node':>12} {'callable us/node':>17}")
    for name, build, session_cls in frameworks:
        for op in ("Identity", "AddV2"):
            for n in SIZES:
                b, r, c = measure(build, session_cls, n, op, args.repeat)
                print(f"{name:<12} {op:<9} {n:>6} {b:>14.2f} {r:>12.2f} {c:>17.2f}")
    print("\ntargets (1000-node chain): build <= 20 us/node, run <= 5 us/node")


if __name__ == "__main__":
    main()
