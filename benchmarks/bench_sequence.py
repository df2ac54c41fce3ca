"""Sequence models: Keras LSTM, GRU and a Transformer encoder block frozen by TensorFlow, run
by graphops and by TF's own Session on the same GraphDef, each in processes of its own.

Usage (from the repo root; needs TensorFlow):
    python benchmarks/bench_sequence.py [--repeat R] [--rounds K] [--batch 1,32]
        [--only NAME[,NAME]]

The LSTM and GRU (64 units over 20 steps of 16 features) are frozen twice: with TF's
control-flow lowering (`lowered`: v1 Enter/Merge/Switch/NextIteration/Exit loops) and without
it (`functional`: a While op and its function bodies); the Transformer block (16 steps,
width 32, 4 heads, causal mask) has no loop. Per model, variant and batch size it prints
each framework's time per `Session.run` (ms; timed as `bench_models.py` times them: fresh
processes of each, alternating for K rounds, the median over rounds of each process's
median of R runs), the ratio graphops / TF (< 1 means graphops is faster) and the largest
difference between the two outputs relative to their largest magnitude. It starts with
the instruction sets both frameworks compile for, and how to rerun forced down to AVX2
(docs/performance.md).
"""

import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench_models import compare  # noqa: E402

STEPS, FEATURES, UNITS = 20, 16, 64
AVX2 = ('OPENBLAS_CORETYPE=Haswell NUMBA_CPU_NAME=haswell NUMBA_CPU_FEATURES="" '
        'ONEDNN_MAX_CPU_ISA=AVX2')


def isa_notes():
    """Two lines: the instruction sets graphops' compiled loops, NumPy's BLAS and TF's
    oneDNN kernels use in this process, and the command that forces all three to AVX2."""
    import llvmlite.binding as llvm

    features = os.environ.get("NUMBA_CPU_FEATURES")
    cpu = os.environ.get("NUMBA_CPU_NAME") or llvm.get_host_cpu_name()
    wide = ("+avx512f" in features) if features is not None else \
        bool(llvm.get_host_cpu_features().get("avx512f"))
    blas = os.environ.get("OPENBLAS_CORETYPE", "auto")
    onednn = os.environ.get("ONEDNN_MAX_CPU_ISA", "the host's widest")
    return (f"ISA: graphops' compiled loops for {cpu} ({'AVX-512' if wide else 'AVX2'}); "
            f"OpenBLAS core type {blas}; TF's oneDNN: {onednn}\n"
            f"AVX2 run: {AVX2} python benchmarks/bench_sequence.py")


def models(keras):
    """{name: (builder, lowering variants)}: the Keras models timed, random weights."""
    from tests.data.make_sequence_graphs import transformer_block

    def rnn(kind):
        def make():
            inputs = keras.Input((STEPS, FEATURES))
            return keras.Model(inputs, getattr(keras.layers, kind)(UNITS)(inputs))
        return make

    return {"lstm": (rnn("LSTM"), (True, False)),
            "gru": (rnn("GRU"), (True, False)),
            "transformer": (lambda: transformer_block(keras, steps=16, width=32, heads=4,
                                                      hidden=64), (True,))}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch", default="1,32")
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    try:
        import tensorflow as tf
        from tests.data.make_sequence_graphs import freeze_keras
    except ImportError as error:
        sys.exit(f"bench_sequence.py needs TensorFlow: {error}")
    import graphops as gp

    print(isa_notes())
    table = models(tf.keras)
    names = [n for n in table if not args.only or n in args.only.split(",")]
    batches = [int(b) for b in args.batch.split(",")]
    print(f"{'model':<12} {'variant':<11} {'batch':>5} {'nodes':>6} {'graphops ms':>12} "
          f"{'TF ms':>9} {'ratio':>6} {'max rel diff':>13}")
    for name in names:
        make, variants = table[name]
        tf.keras.utils.set_random_seed(3)
        model = make()
        for lowered in variants:
            graph_def, input_name, output_name = freeze_keras(model, lowered)
            variant = "lowered" if lowered else "functional"
            nodes = len(graph_def.node) + sum(len(f.node_def)
                                               for f in graph_def.library.function)
            shapes = [(batch,) + tuple(model.inputs[0].shape[1:]) for batch in batches]
            rows = compare(tf, gp, graph_def, input_name, output_name, shapes, args.repeat,
                           args.rounds)
            for shape, (ms_ours, ms_tf, diff) in zip(shapes, rows):
                print(f"{name:<12} {variant:<11} {shape[0]:>5} {nodes:>6} {ms_ours:>12.2f} "
                      f"{ms_tf:>9.2f} {ms_ours / ms_tf:>6.2f} {diff:>13.2e}", flush=True)


if __name__ == "__main__":
    main()
