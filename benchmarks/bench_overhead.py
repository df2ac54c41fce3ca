"""Framework overhead: `import graphops`, graph building, Session.run and eager ops.

Chains of 10 / 100 / 1000 small ops (Identity, AddV2 with a Const) on a small array are
built and run; the table shows microseconds per node for building, for `sess.run` and for
a `make_callable` function, next to TensorFlow 2.x graph mode (tf.compat.v1) when it
imports. "Per node" divides by every node of the graph: the chain plus its Placeholder and
Const. Eager rows time one op call on a small NumPy array (TF: the same raw op eagerly).

`import graphops` is timed in fresh interpreters, best of 5, twice: with the bytecode cache
(what an installed package sees) and compiling every module (PYTHONDONTWRITEBYTECODE=1).

Every figure is the best of `--repeat` runs of wall time. On a busy machine pass
`--cpu-time` to time graphops by process CPU time instead (TF always uses wall time: its
runtime is multi-threaded). The executor's own cost is a warm run of a chain of int32 Maximum
nodes (neither folded nor fused) less the time the kernel's `compute` takes on its own.
Targets: build <= 20 us/node, run <= 5 us/node, executor's own cost < 1 us/node, import
< 0.3 s.

    python benchmarks/bench_overhead.py [--repeat 20] [--shape 2,3] [--no-tf] [--cpu-time]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
SIZES = (10, 100, 1000)
EAGER_CALLS = 1000
TARGETS = {"build": 20.0, "run": 5.0, "import": 0.3, "executor": 1.0}


def import_time(module, cached, tries=5):
    """Best wall time of `import module` in a fresh interpreter (seconds).

    `cached`: bytecode goes to (and is read from) a scratch cache, warmed by a first import;
    otherwise every module is compiled from source on each import."""
    code = f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
    env = dict(os.environ)
    env.pop("PYTHONPYCACHEPREFIX", None)
    with tempfile.TemporaryDirectory() as cache:
        if cached:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = cache
            subprocess.run([sys.executable, "-c", f"import {module}"], cwd=ROOT, env=env,
                           check=True)
        else:
            env["PYTHONDONTWRITEBYTECODE"] = "1"
        best = float("inf")
        for _ in range(tries):
            out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env,
                                 capture_output=True, text=True, check=True)
            best = min(best, float(out.stdout.strip().splitlines()[-1]))
    return best


def best_of(fn, repeat, clock):
    """Best time of one call to `fn` over `repeat` calls (seconds)."""
    best = float("inf")
    for _ in range(repeat):
        start = clock()
        fn()
        best = min(best, clock() - start)
    return best


def graphops_chain(n, op, shape):
    import graphops as gp
    graph = gp.Graph()
    with graph.as_default():
        x = gp.placeholder(gp.float32, shape=shape, name="x")
        one = gp.constant(1.0, dtype=gp.float32)
        y = x
        for _ in range(n):
            y = gp.raw_ops.Identity(input=y) if op == "Identity" else gp.raw_ops.AddV2(x=y, y=one)
    return graph, x, y


def tf_chain(tf, n, op, shape):
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, shape=shape, name="x")
        one = tf.constant(1.0, dtype=tf.float32)
        y = x
        for _ in range(n):
            y = tf.raw_ops.Identity(input=y) if op == "Identity" else tf.raw_ops.AddV2(x=y, y=one)
    return graph, x, y


def measure(build, session_cls, n, op, shape, repeat, clock):
    """(build us/node, run us/node, callable us/node) for one chain."""
    build_s = best_of(lambda: build(n, op, shape), max(5, repeat // 2), clock)
    graph, x, y = build(n, op, shape)
    nodes = len(graph.get_operations())
    value = np.ones(shape, np.float32)
    with session_cls(graph=graph) as sess:
        feed = {x: value}
        sess.run(y, feed)                       # plan / executor creation
        run_s = best_of(lambda: sess.run(y, feed), repeat, clock)
        fn = sess.make_callable(y, [x])
        fn(value)
        call_s = best_of(lambda: fn(value), repeat, clock)
    return [1e6 * t / nodes for t in (build_s, run_s, call_s)]


def measure_eager(raw_ops, op, shape, repeat, clock):
    """Microseconds per eager call of `op` on small float32 arrays."""
    a = np.ones(shape, np.float32)
    fn = getattr(raw_ops, op)
    kwargs = {"input": a} if op == "Identity" else {"x": a, "y": a}
    fn(**kwargs)

    def calls():
        for _ in range(EAGER_CALLS):
            fn(**kwargs)
    return 1e6 * best_of(calls, max(3, repeat // 4), clock) / EAGER_CALLS


def load_tf():
    try:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        import tensorflow as tf
    except ImportError:
        return None
    return tf


def tf_eager(tf, shape, repeat):
    """TF's eager times, measured in a fresh interpreter (graph mode is off for the rest)."""
    code = ("import json, sys; sys.path.insert(0, %r); import bench_overhead as b; "
            "tf = b.load_tf(); print(json.dumps([b.measure_eager(tf.raw_ops, op, %r, %d, "
            "b.time.perf_counter) for op in ('Identity', 'AddV2')]))"
            % (os.path.dirname(os.path.abspath(__file__)), shape, repeat))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if out.returncode:
        return None
    return json.loads(out.stdout.strip().splitlines()[-1])


def executor_cost(gp, shape, repeat, clock, n=1000):
    """(us per node of a warm `make_callable` run, us of the kernel's own compute, their
    difference: the executor's own cost) on a chain of `n` int32 Maximum nodes, which the
    plan neither folds nor fuses (elementwise clusters are float). The kernel's time is its
    `compute` on one reused context."""
    from graphops.registry.kernel_registry import OpKernelContext
    from graphops.runtime import executor
    graph = gp.Graph()
    with graph.as_default():
        x = gp.placeholder(gp.int32, shape=shape, name="x")
        y = x
        for _ in range(n):
            y = gp.raw_ops.Maximum(x=y, y=x)
    value = np.ones(shape, np.int32)
    with gp.Session(graph=graph) as sess:
        fn = sess.make_callable(y, [x])
        fn(value)
        run_us = 1e6 * best_of(lambda: fn(value), repeat, clock) / n
    step = next(s for s in executor.build_plan([x], [y], []).steps if hasattr(s, "kernel"))
    ctx = OpKernelContext(step.construction, [value, value])
    compute_us = 1e6 * best_of(lambda: [step.kernel.compute(ctx) for _ in range(n)], repeat,
                               clock) / n
    return run_us, compute_us, run_us - compute_us


def verdict(value, target):
    return "ok" if value <= target else "OVER"


def chain_table(name, build, session_cls, shape, repeat, clock):
    """Prints one framework's rows; returns the worst (build, run) us/node."""
    worst_build = worst_run = 0.0
    for op in ("Identity", "AddV2"):
        for n in SIZES:
            b, r, c = measure(build, session_cls, n, op, shape, repeat, clock)
            print(f"{name:<12} {op:<9} {n:>6} {b:>14.2f} {r:>12.2f} {c:>17.2f}")
            worst_build, worst_run = max(worst_build, b), max(worst_run, r, c)
    return worst_build, worst_run


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--shape", default="2,3",
                        help="shape of the chained value, comma-separated ('' for a scalar)")
    parser.add_argument("--no-tf", action="store_true", help="skip the TensorFlow comparison")
    parser.add_argument("--cpu-time", action="store_true",
                        help="time graphops by process CPU time (for a busy machine)")
    args = parser.parse_args()
    shape = tuple(int(d) for d in args.shape.split(",") if d.strip())
    clock = time.process_time if args.cpu_time else time.perf_counter

    cached, compiled = import_time("graphops", True), import_time("graphops", False)
    base = import_time("numpy, ml_dtypes", True)
    print(f"import graphops: {cached:.3f} s with bytecode cache, {compiled:.3f} s compiling "
          f"every module (numpy + ml_dtypes alone: {base:.3f} s); target < "
          f"{TARGETS['import']} s: {verdict(max(cached, compiled), TARGETS['import'])}")

    # graphops first: TensorFlow's many objects would slow down Python's garbage collector.
    import graphops as gp
    print(f"\nchains on float32{list(shape)}; {'CPU' if args.cpu_time else 'wall'} time, "
          f"best of {args.repeat}")
    print(f"{'framework':<12} {'op':<9} {'nodes':>6} {'build us/node':>14} "
          f"{'run us/node':>12} {'callable us/node':>17}")
    worst_build, worst_run = chain_table("graphops", graphops_chain, gp.Session, shape,
                                         args.repeat, clock)
    run_us, compute_us, own_us = executor_cost(gp, shape, args.repeat, clock)
    print(f"\nexecutor's own cost, a chain of 1000 int32 Maximum nodes: {run_us:.2f} us/node run, "
          f"{compute_us:.2f} of it the kernel's compute: {own_us:.2f} us/node; target < "
          f"{TARGETS['executor']} us: {verdict(own_us, TARGETS['executor'])}")
    gp.enable_eager_execution()
    eager = [measure_eager(gp.raw_ops, op, shape, args.repeat, clock)
             for op in ("Identity", "AddV2")]
    gp.disable_eager_execution()

    tf = None if args.no_tf else load_tf()
    if tf is not None:
        tf_times = tf_eager(tf, shape, args.repeat)
        tf.compat.v1.disable_eager_execution()
        chain_table(f"tf {tf.__version__}", lambda n, op, s: tf_chain(tf, n, op, s),
                    tf.compat.v1.Session, shape, args.repeat, time.perf_counter)
    elif not args.no_tf:
        print("(TensorFlow not importable: no comparison)")

    print(f"\neager, one op on float32{list(shape)}: us/op")
    print(f"{'graphops':<12} Identity {eager[0]:8.2f}   AddV2 {eager[1]:8.2f}")
    if tf is not None and tf_times is not None:
        print(f"{'tf ' + tf.__version__:<12} Identity {tf_times[0]:8.2f}   "
              f"AddV2 {tf_times[1]:8.2f}")

    print(f"\ntargets (every chain): build <= {TARGETS['build']} us/node: "
          f"{verdict(worst_build, TARGETS['build'])} (worst {worst_build:.2f}); "
          f"run <= {TARGETS['run']} us/node: {verdict(worst_run, TARGETS['run'])} "
          f"(worst {worst_run:.2f})")


if __name__ == "__main__":
    main()
