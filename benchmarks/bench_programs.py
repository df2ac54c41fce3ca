"""Per-step time of the classic TF1 training programs of tests/tf1_programs/, run unchanged
by graphops and by TensorFlow (`import tensorflow.compat.v1 as tf` in place of
`import graphops as tf`, nothing else changed).

Usage (from the repo root): python benchmarks/bench_programs.py [--only NAME] [--steps S]
    [--repeat R] [--rounds K]

A program's `main(steps)` builds its graph, opens a session, trains for `steps` steps and
reads results back. Its time per step is the difference between `main(2 * S)` and
`main(S)`, divided by S (so building, initialising and the reads cancel out; S = 100 by
default, as a TF program's setup varies by milliseconds), from the medians of R
interleaved calls of each, every call in a fresh default graph. Each
framework runs in a process of its own; the two alternate for K rounds (a shared machine's
speed drifts by 1.5x within minutes). Prints ms per step of each framework (median over
rounds) and the ratio graphops / TF (< 1: graphops is faster).
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROGRAMS_DIR = os.path.join(ROOT, "tests", "tf1_programs")
TRAINING_PROGRAMS = ("logistic_regression", "mlp", "deep_mnist", "cnn3d", "batch_norm",
                     "saver_round_trip", "summaries", "while_loop")


def main_call(module, name, steps):
    """Seconds one `main(steps=steps)` of the program takes, in a fresh default graph."""
    directories = {"saver_round_trip": "checkpoint_dir", "summaries": "logdir"}
    kwargs = {}
    with tempfile.TemporaryDirectory() as scratch:
        if name in directories:
            kwargs[directories[name]] = scratch
        with module.tf.Graph().as_default():
            start = time.perf_counter()
            module.main(steps=steps, **kwargs)
            return time.perf_counter() - start


def time_program(name, tensorflow, steps, repeat):
    """Runs in the child process: prints the program's seconds per step."""
    if tensorflow:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    sys.path[:0] = [ROOT, PROGRAMS_DIR]
    import run_program
    module = run_program.load_program(name, tensorflow)
    main_call(module, name, 2)                         # first-call costs: imports, caches
    short, long = [], []
    for _ in range(repeat):
        short.append(main_call(module, name, steps))
        long.append(main_call(module, name, 2 * steps))
    print((statistics.median(long) - statistics.median(short)) / steps)


def run_child(name, tensorflow, args):
    """Seconds per step from a child process, or None when it cannot run."""
    command = [sys.executable, os.path.abspath(__file__), "--child", name,
               "--steps", str(args.steps), "--repeat", str(args.repeat)]
    if tensorflow:
        command.append("--tensorflow")
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        return None
    return float(done.stdout.split()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="programs whose name contains this")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3, help="alternating runs of each")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--tensorflow", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return time_program(args.child, args.tensorflow, args.steps, args.repeat)
    print(f"ms per training step, {args.steps} vs {2 * args.steps} steps, medians of "
          f"{args.repeat} calls, {args.rounds} alternating rounds")
    print(f"{'program':<22}{'graphops':>10}{'TF':>10}{'ratio':>8}   rounds")
    for name in TRAINING_PROGRAMS:
        if args.only and args.only not in name:
            continue
        rounds = [(run_child(name, False, args), run_child(name, True, args))
                  for _ in range(args.rounds)]
        ours = [g for g, _ in rounds if g is not None]
        theirs = [t for _, t in rounds if t is not None]
        if not ours:
            print(f"{name:<22}{'failed':>10}")
            continue
        mine = statistics.median(ours)
        if not theirs:
            print(f"{name:<22}{mine * 1e3:10.3f}{'n/a':>10}")
            continue
        tf_time = statistics.median(theirs)
        each = " ".join(f"{g / t:.2f}" for g, t in rounds if g and t)
        print(f"{name:<22}{mine * 1e3:10.3f}{tf_time * 1e3:10.3f}{mine / tf_time:8.2f}   {each}")


if __name__ == "__main__":
    main()
