"""Benchmark the conv math against SGEMM peak, TensorFlow and PyTorch.

Usage (from the repo root):
    python benchmarks/bench_conv.py [--quick] [--repeat R] [--rounds K] [--only TEXT[|TEXT...]]

Per case it prints the best-of-R time, nominal GFLOP/s (docs/benchmarks.md: 2 * output
positions * filter taps * C * O, or * C * M for depthwise), this process's SGEMM rate
(2048^3 float32 matmul, all cores, timed right after the case: interleaving them would bill
the spinning of BLAS's threads to graphops' threads) and our fraction of it, and the speed
of TF / PyTorch relative to ours (their time / our time, > 1 means we are faster) when they
import. Depthwise cases, which are memory-bound,
also get their bytes moved per second (x, dy and the filter counted once each) and its
share of this process's stream bandwidth (a 256 MiB array copy, timed with the SGEMM).
Data is float32 and channels-last unless the label says otherwise. TF and PyTorch are timed
in a child process of their own (`--references-server`): their pool threads spin after each
call and would slow graphops' threads in a shared process (by up to 1.5x here). The child
times each case right after graphops has, ``--rounds`` times in turn (best of each side), so
that a host whose speed drifts over minutes (a shared virtual machine's) slows both sides
of a comparison alike.

Above its table it prints the instruction set each side ran with: the CPU name and
features numba generates graphops' code for (``NUMBA_CPU_NAME`` / ``NUMBA_CPU_FEATURES``,
else the host's), its float32 lanes and vector registers and the micro-kernels' tiles
(``kernels/compiled/host_isa.py``), OpenBLAS's kernels, and TF's ``ONEDNN_MAX_CPU_ISA`` with
the ISA oneDNN reports (``ONEDNN_VERBOSE``, in a child running one small conv). To compare
both x86 levels on an AVX-512 machine, run it once plainly and once with
``NUMBA_CPU_NAME=haswell NUMBA_CPU_FEATURES="" OPENBLAS_CORETYPE=Haswell
ONEDNN_MAX_CPU_ISA=AVX2``.
"""

import argparse
import math
import os
import subprocess
import sys
import time

import ml_dtypes
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from graphops.runtime import host_memory  # noqa: E402
from graphops.kernels.conv_algorithms import dense as conv_dense
from graphops.kernels.conv_algorithms import depthwise as conv_depthwise  # noqa: E402
from graphops.kernels.conv_algorithms import tuning  # noqa: E402
from graphops.kernels.conv_algorithms.layout import conv_output_size  # noqa: E402

tf = torch = F = None     # TensorFlow and PyTorch, imported by load_references()
WARM_UP_SECONDS = 0.15     # each callable runs this long before it is timed
TUNING_CALLS = 2 * (tuning.WARM_UPS + tuning.TRIALS)   # and at least this often: two paths tuned


def load_references():
    """Imports TensorFlow and PyTorch where installed (slow: only when they are timed)."""
    global tf, torch, F
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    try:
        import tensorflow as tf
    except ImportError:
        tf = None
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        torch = None


def same_pads(spatial, kernel, strides, dilations=None):
    """TF SAME padding: out = ceil(in/s), total = max((out-1)*s + (k-1)*d + 1 - in, 0)."""
    dilations = dilations or (1,) * len(spatial)
    pads = []
    for i, k, s, d in zip(spatial, kernel, strides, dilations):
        out = -(-i // s)
        total = max((out - 1) * s + (k - 1) * d + 1 - i, 0)
        pads.append((total // 2, total - total // 2))
    return tuple(pads)


class Case:
    """One benchmark problem: op kind, channels-last x shape, filter shape, strides, padding;
    optionally dilations, the layout the op is given (NCHW: inputs transposed beforehand)
    and the dtype."""

    def __init__(self, op, x_shape, f_shape, strides, padding, dilations=None,
                 data_format="NHWC", dtype=np.float32):
        self.op, self.x_shape, self.f_shape = op, x_shape, f_shape
        self.strides, self.padding = strides, padding
        self.depthwise = op.startswith("Depthwise")
        rank = len(x_shape) - 2
        self.kernel = f_shape[:rank]
        self.dilations = dilations or (1,) * rank
        self.channels_last = data_format == "NHWC"
        self.dtype = np.dtype(dtype)
        if padding == "SAME":
            self.pads = same_pads(x_shape[1:-1], self.kernel, strides, self.dilations)
        else:
            self.pads = ((0, 0),) * rank
        self.out_sp = tuple(conv_output_size(i, k, s, d, b, a) for i, k, s, d, (b, a)
                            in zip(x_shape[1:-1], self.kernel, strides, self.dilations,
                                   self.pads))
        out_c = f_shape[-2] * f_shape[-1] if self.depthwise else f_shape[-1]
        self.dy_shape = (x_shape[0], *self.out_sp, out_c)
        per_out = math.prod(self.kernel) * (1 if self.depthwise else f_shape[-2])
        self.flops = 2 * math.prod(self.dy_shape) * per_out

    def label(self):
        extra = [f"d{self.dilations[0]}"] * (max(self.dilations) > 1)
        extra += ["NCHW"] * (not self.channels_last)
        extra += [str(self.dtype)] * (self.dtype != np.float32)
        return " ".join([f"x{list(self.x_shape)} f{list(self.f_shape)} s{self.strides[0]}",
                         self.padding, *extra])

    def bytes(self):
        """Bytes a depthwise op must move at least: x, dy and the filter, once each."""
        return self.dtype.itemsize * (math.prod(self.x_shape) + math.prod(self.dy_shape)
                                      + math.prod(self.f_shape))

    def kind(self):
        return self.op.replace("V2", "").replace("Native", "").split("Backprop")[-1] \
            if "Backprop" in self.op else "Forward"

    def data(self, rng):
        """x, w, dy of the case's dtype, channels-last."""
        x = rng.standard_normal(self.x_shape, dtype=np.float32).astype(self.dtype)
        w = rng.standard_normal(self.f_shape, dtype=np.float32).astype(self.dtype)
        dy = rng.standard_normal(self.dy_shape, dtype=np.float32).astype(self.dtype)
        return x, w, dy

    def _layout(self, a):
        """Channels-last ``a`` in the case's layout (a contiguous copy for NCHW)."""
        return a if self.channels_last else np.ascontiguousarray(np.moveaxis(a, -1, 1))

    def ours(self, x, w, dy):
        mod = conv_depthwise if self.depthwise else conv_dense
        prefix = "depthwise" if self.depthwise else "conv"
        geo = (self.strides, self.dilations, self.pads, self.channels_last)
        x, dy = self._layout(x), self._layout(dy)
        kind = self.kind()
        if kind == "Forward":
            return lambda: getattr(mod, prefix + "_forward")(x, w, *geo)
        if kind == "Input":
            return lambda: getattr(mod, prefix + "_backprop_input")(dy, w, x.shape, *geo)
        return lambda: getattr(mod, prefix + "_backprop_filter")(x, dy, self.f_shape, *geo)

    def tensorflow(self, x, w, dy):
        op = getattr(tf.raw_ops, self.op)
        x, dy = self._layout(x), self._layout(dy)
        spatial = (1, *self.strides, 1), (1, *self.dilations, 1)
        if not self.channels_last:
            spatial = tuple((1, 1, *s[1:-1]) for s in spatial)
        layouts = ("NHWC", "NCHW") if len(self.kernel) == 2 else ("NDHWC", "NCDHW")
        attrs = dict(strides=spatial[0], padding=self.padding,
                     data_format=layouts[0] if self.channels_last else layouts[1])
        if max(self.dilations) > 1:
            attrs["dilations"] = spatial[1]
        tx, tw, tdy = tf.constant(x), tf.constant(w), tf.constant(dy)
        kind = self.kind()
        if kind == "Forward":
            return lambda: op(input=tx, filter=tw, **attrs)
        if kind == "Input":
            sizes = tf.constant(x.shape, tf.int32)
            return lambda: op(input_sizes=sizes, filter=tw, out_backprop=tdy, **attrs)
        sizes = tf.constant(self.f_shape, tf.int32)
        return lambda: op(input=tx, filter_sizes=sizes, out_backprop=tdy, **attrs)

    def torch(self, x, w, dy, device="cpu"):
        """The case through PyTorch (channels-first tensors on `device`)."""
        rank = len(self.kernel)
        first = lambda a: torch.from_numpy(  # noqa: E731
            np.ascontiguousarray(np.moveaxis(a, -1, 1))).to(device)
        tx, tdy = first(x), first(dy)
        c = self.f_shape[-2]
        if self.depthwise:
            tw = torch.from_numpy(np.ascontiguousarray(
                w.reshape(*self.kernel, c * self.f_shape[-1], 1).transpose(
                    rank, rank + 1, *range(rank)))).to(device)
            groups = c
        else:
            tw = torch.from_numpy(np.ascontiguousarray(
                np.moveaxis(np.moveaxis(w, -1, 0), -1, 1))).to(device)
            groups = 1
        conv = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[rank]
        grad = {2: (torch.nn.grad.conv2d_input, torch.nn.grad.conv2d_weight),
                3: (torch.nn.grad.conv3d_input, torch.nn.grad.conv3d_weight)}[rank]
        if all(b == a for b, a in self.pads):  # torch takes symmetric padding only
            padding, pad = tuple(b for b, _ in self.pads), (lambda t: t)
            in_shape = list(tx.shape)
        else:  # asymmetric SAME: pad explicitly (inside the timed call), grad of padded input
            flat = [p for pair in reversed(self.pads) for p in pair]
            padding, pad = 0, (lambda t: F.pad(t, flat))
            in_shape = [*tx.shape[:2], *(i + b + a for i, (b, a)
                                         in zip(self.x_shape[1:-1], self.pads))]
        opts = dict(stride=self.strides, padding=padding, groups=groups,
                    dilation=self.dilations)
        kind = self.kind()
        if kind == "Forward":
            return lambda: conv(pad(tx), tw, **opts)
        if kind == "Input":
            return lambda: grad[0](in_shape, tw, tdy, **opts)
        return lambda: grad[1](pad(tx), tw.shape, tdy, **opts)


def full_cases():
    c3 = ((4, 16, 32, 32, 32), (3, 3, 3, 32, 64))
    dw1 = ((32, 112, 112, 32), (3, 3, 32, 1), (1, 1), "SAME")
    dw2 = ((32, 112, 112, 64), (3, 3, 64, 1), (2, 2), "SAME")
    depthwise = ["DepthwiseConv2dNative", "DepthwiseConv2dNativeBackpropFilter",
                 "DepthwiseConv2dNativeBackpropInput"]
    return [
        Case("Conv3D", *c3, (1, 1, 1), "SAME"),
        Case("Conv3D", *c3, (2, 2, 2), "VALID"),
        Case("Conv3DBackpropFilterV2", *c3, (1, 1, 1), "SAME"),
        Case("Conv3DBackpropFilterV2", *c3, (2, 2, 2), "VALID"),
        Case("Conv3DBackpropInputV2", *c3, (1, 1, 1), "SAME"),
        Case("Conv3DBackpropInputV2", *c3, (2, 2, 2), "VALID"),
        Case("Conv2D", (32, 56, 56, 64), (3, 3, 64, 64), (1, 1), "SAME"),
        Case("Conv2D", (32, 56, 56, 64), (3, 3, 64, 128), (2, 2), "SAME"),
        Case("Conv2DBackpropFilter", (32, 56, 56, 64), (3, 3, 64, 64), (1, 1), "SAME"),
        Case("Conv2DBackpropFilter", (32, 56, 56, 64), (3, 3, 64, 128), (2, 2), "SAME"),
        Case("Conv2DBackpropInput", (32, 56, 56, 64), (3, 3, 64, 64), (1, 1), "SAME"),
        Case("Conv2DBackpropInput", (32, 56, 56, 64), (3, 3, 64, 128), (2, 2), "SAME"),
        *(Case(op, *dw1) for op in depthwise),
        *(Case(op, *dw2) for op in depthwise),
        *(Case(op, *dw1, data_format="NCHW") for op in depthwise),
        *(Case(op, *dw1, dilations=(2, 2)) for op in depthwise),
        *(Case(op, *dw1, dtype=np.float16) for op in depthwise),
        *(Case(op, *dw1, dtype=ml_dtypes.bfloat16) for op in depthwise),
        Case("Conv2D", (32, 56, 56, 64), (3, 3, 64, 64), (1, 1), "SAME", data_format="NCHW"),
        Case("Conv2D", (32, 56, 56, 64), (3, 3, 64, 64), (1, 1), "SAME", dilations=(2, 2)),
        Case("Conv3DBackpropFilterV2", *c3, (1, 1, 1), "SAME", dtype=np.float16),
        Case("Conv3DBackpropInputV2", *c3, (1, 1, 1), "SAME", dtype=ml_dtypes.bfloat16),
        Case("Conv2D", (8, 14, 14, 256), (3, 3, 256, 256), (1, 1), "SAME",
             dtype=ml_dtypes.bfloat16),
        Case("Conv2DBackpropInput", (8, 7, 7, 512), (3, 3, 512, 512), (1, 1), "SAME",
             dtype=ml_dtypes.bfloat16),
        Case("Conv3D", (32, 16, 16, 16, 1), (3, 3, 3, 1, 8), (1, 1, 1), "SAME"),
        Case("Conv3DBackpropFilterV2", (32, 16, 16, 16, 1), (3, 3, 3, 1, 8), (1, 1, 1), "SAME"),
    ]


def quick_cases():
    c3 = ((1, 8, 16, 16, 16), (3, 3, 3, 16, 32))
    c2 = ((4, 28, 28, 32), (3, 3, 32, 32))
    return [
        Case("Conv3D", *c3, (1, 1, 1), "SAME"),
        Case("Conv3DBackpropFilterV2", *c3, (1, 1, 1), "SAME"),
        Case("Conv3DBackpropInputV2", *c3, (2, 2, 2), "VALID"),
        Case("Conv2D", *c2, (1, 1), "SAME"),
        Case("Conv2DBackpropFilter", *c2, (2, 2), "SAME"),
        Case("Conv2DBackpropInput", *c2, (1, 1), "SAME"),
        Case("DepthwiseConv2dNativeBackpropFilter", (4, 28, 28, 16), (3, 3, 16, 1),
             (1, 1), "SAME"),
    ]


def best_times(fns, repeat):
    """Best wall time of each callable, the calls interleaved round by round (fair under load),
    after each has run for WARM_UP_SECONDS: cores that were idle run at half speed for their
    first 40-50 ms of work here (a virtual machine's host clocking them back up), which
    would otherwise decide the best of a few 2 ms calls. The warm-up is also at least
    TUNING_CALLS calls, so a conv whose path the host chooses (``conv_algorithms.tuning``)
    is timed on its chosen path."""
    for fn in fns:
        end = time.perf_counter() + WARM_UP_SECONDS
        fn()
        calls = 1
        while time.perf_counter() < end or calls < TUNING_CALLS:
            fn()
            calls += 1
    best = [math.inf] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            start = time.perf_counter()
            fn()
            best[i] = min(best[i], time.perf_counter() - start)
    return best


def sgemm(n=2048):
    """A 2*n**3-FLOP float32 matmul, timed next to each case as the peak to compare with."""
    a = np.random.default_rng(0).standard_normal((n, n), dtype=np.float32)
    return lambda: a @ a, 2 * n**3


def stream(nbytes=256 << 20):
    """A copy of ``nbytes`` (read once, written once), timed next to depthwise cases as the
    memory bandwidth to compare with: returns the callable and the bytes it moves."""
    src = np.ones(nbytes, np.uint8)
    dst = np.zeros_like(src)

    def copy():
        dst[...] = src
    return copy, 2 * nbytes


def reference_time(make, case, x, w, dy, repeat):
    """Best time of another library on the case, or None where it cannot run it."""
    try:
        other, = best_times([make(x, w, dy)], repeat)
    except Exception:  # noqa: BLE001 -- e.g. a layout or dtype that library lacks on CPU
        return None
    finally:
        time.sleep(0.2)  # let their spinning worker threads go idle
    return other


def serve_references(args):
    """`--references-server`: for each case index read from stdin, prints 'REF<TAB>TF
    ms<TAB>torch ms' ('' where the library is missing or cannot run the case); first
    'LIBS<TAB>TF?<TAB>torch?'."""
    load_references()
    print("LIBS", tf is not None, torch is not None, sep="\t", flush=True)
    cases, held = selected_cases(args), None
    for line in sys.stdin:
        index = int(line)
        if held != index:             # the rounds of a case come one after another
            held, (x, w, dy) = index, cases[index].data(case_rng(index))
        case = cases[index]
        times = [reference_time(make, case, x, w, dy, repeat(args)) if lib is not None
                 else None for lib, make in ((tf, case.tensorflow), (torch, case.torch))]
        print("REF", *("" if t is None else f"{t * 1e3:.3f}" for t in times), sep="\t",
              flush=True)


class References:
    """TF and PyTorch in a child process of their own (`--references-server`), asked to
    time one case at a time, right after graphops has timed it."""

    def __init__(self, args):
        command = [sys.executable, os.path.abspath(__file__), "--references-server",
                   "--repeat", str(repeat(args)), "--only", args.only] + ["--quick"] * args.quick
        self.child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=subprocess.DEVNULL, text=True)
        fields = self.child.stdout.readline().rstrip("\n").split("\t")
        self.libs = tuple(v == "True" for v in fields[1:3]) if fields[0] == "LIBS" \
            else (False, False)

    def time(self, index):
        """(TF ms or None, torch ms or None) of case ``index`` (None, None once the child
        has gone)."""
        try:
            self.child.stdin.write(f"{index}\n")
            self.child.stdin.flush()
        except BrokenPipeError:
            return None, None
        fields = self.child.stdout.readline().rstrip("\n").split("\t")
        return tuple(float(v) if v else None for v in fields[1:3]) if fields[0] == "REF" \
            else (None, None)

    def close(self):
        try:
            self.child.stdin.close()
        except BrokenPipeError:
            pass
        self.child.wait()


def case_rng(index):
    """The random numbers of case ``index``'s data, the same in both processes."""
    return np.random.default_rng(index)


def graphops_isa():
    """A line: the code numba generates for graphops' loops and the tiles taken from it,
    and the kernels OpenBLAS runs."""
    from graphops.kernels.compiled import host_isa
    from threadpoolctl import threadpool_info
    isa, tiles = host_isa.isa(), host_isa.tiles()
    named = [f for f in ("avx512f", "avx2", "fma", "avx", "sse4.2", "neon")
             if f"+{f}" in isa.features]
    features = (f"'{isa.features}'" if os.environ.get("NUMBA_CPU_FEATURES") is not None
                else "host's") + (f" ({', '.join(named)})" if named else "")
    blas = [f"{i.get('internal_api')} {i.get('architecture')}" for i in threadpool_info()
            if i.get("user_api") == "blas"]
    return (f"graphops: numba cpu={isa.cpu} features={features}: {isa.lanes} float32 lanes, "
            f"{isa.registers} vector registers; tiles rows={tiles.rows} "
            f"wide_rows={tiles.wide_rows}; BLAS {', '.join(blas) or '?'} "
            f"(OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', 'unset')})")


def tensorflow_isa():
    """A line: TF's ONEDNN_MAX_CPU_ISA and the ISA oneDNN reports running one small conv in a
    child with ONEDNN_VERBOSE=1 (None where TF does not import)."""
    code = ("import tensorflow as tf\n"
            "tf.raw_ops.Conv2D(input=tf.ones([1, 8, 8, 8]), filter=tf.ones([3, 3, 8, 8]), "
            "strides=[1, 1, 1, 1], padding='SAME')\n")
    env = dict(os.environ, ONEDNN_VERBOSE="1", TF_CPP_MIN_LOG_LEVEL="3")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env)
    if out.returncode:
        return None
    isa = [line.split("isa:", 1)[1] for line in out.stdout.splitlines() if ",isa:" in line]
    return (f"TF: ONEDNN_MAX_CPU_ISA={os.environ.get('ONEDNN_MAX_CPU_ISA', 'unset')}; oneDNN "
            f"runs {isa[0] if isa else 'without reporting an ISA'}")


def repeat(args):
    return args.repeat or (3 if args.quick else 5)


def selected_cases(args):
    wanted = args.only.split("|")
    return [c for c in (quick_cases() if args.quick else full_cases())
            if any(text in f"{c.op} {c.label()}" for text in wanted)]


def time_case(index, case, refs, args):
    """(our best time, [TF's, PyTorch's best time or None]) over ``args.rounds`` rounds,
    each timing ours, then asking the references' child: the two sides of a round run
    within seconds of each other, so a host whose speed drifts over minutes slows both."""
    x, w, dy = case.data(case_rng(index))
    ours, theirs = math.inf, [math.inf, math.inf]
    for _ in range(args.rounds):
        t, = best_times([case.ours(x, w, dy)], repeat(args))
        ours = min(ours, t)
        time.sleep(0.2)      # graphops' and BLAS's threads may spin a while: let them idle
        if refs is not None:
            for k, other in enumerate(refs.time(index)):
                if other is not None:
                    theirs[k] = min(theirs[k], other / 1e3)
    return ours, [None if t == math.inf else t for t in theirs]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small shapes, seconds")
    parser.add_argument("--repeat", type=int, default=None, help="timed runs per case")
    parser.add_argument("--rounds", type=int, default=1,
                        help="alternating rounds of graphops and the references per case")
    parser.add_argument("--only", default="", help="run cases whose op/shape contains this "
                        "(or any of texts separated by '|')")
    parser.add_argument("--no-ref", action="store_true", help="skip TensorFlow and PyTorch")
    parser.add_argument("--references-server", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.references_server:
        return serve_references(args)
    host_memory.kernels_starting()   # freed buffers kept for reuse, as from a Session's first run
    cases = selected_cases(args)
    refs = None if args.no_ref else References(args)
    use_tf, use_torch = refs.libs if refs is not None else (False, False)
    peak_fn, peak_flops = sgemm()
    copy_fn, copy_bytes = stream() if any(c.depthwise for c in cases) else (None, 0)
    print(graphops_isa())
    if use_tf:
        print(tensorflow_isa() or "TF: oneDNN's ISA unknown")
    print(f"cpus={os.cpu_count()}; numpy {np.__version__}; TF {'yes' if use_tf else 'no'}; "
          f"torch {'yes' if use_torch else 'no'}; SGEMM% = our rate / 2048^3 float32 matmul "
          f"rate timed after the case; depthwise: GB/s = (x + dy + filter bytes) / time, "
          f"BW% = that / a 256 MiB copy's rate (read + write); "
          f"'vs X' = X's ms / our ms (> 1: we are faster), X timed in its own process right "
          f"after ours, best of {args.rounds} round(s) each")
    header = f"{'op':36} {'shape':56} {'ms':>8} {'GFLOP/s':>8} {'SGEMM':>6} {'SGEMM%':>7}"
    header += f" {'GB/s':>6} {'stream':>6} {'BW%':>5}"
    header += f" {'TF ms':>8} {'vs TF':>6}" * use_tf + f" {'torch ms':>8} {'vs pt':>6}" * use_torch
    print(header, flush=True)
    best_peak = 0.0
    for index, case in enumerate(cases):
        t, others = time_case(index, case, refs, args)
        t_peak, *t_copy = best_times([peak_fn] + [copy_fn] * case.depthwise, repeat(args))
        time.sleep(0.2)          # BLAS's threads spin a while after the SGEMM: let them idle
        rate, peak = case.flops / t, peak_flops / t_peak
        best_peak = max(best_peak, peak)
        line = f"{case.op:36} {case.label():56} {t * 1e3:8.1f} {rate / 1e9:8.1f} " \
               f"{peak / 1e9:6.0f} {100 * rate / peak:6.0f}%"
        if case.depthwise:
            moved, bandwidth = case.bytes() / t, copy_bytes / t_copy[0]
            line += f" {moved / 1e9:6.1f} {bandwidth / 1e9:6.1f} {100 * moved / bandwidth:4.0f}%"
        else:
            line += f" {'-':>6} {'-':>6} {'-':>5}"
        for enabled, other in zip((use_tf, use_torch), others):
            if enabled:
                line += f" {other * 1e3:8.1f} {other / t:6.2f}" if other else \
                    f" {'n/a':>8} {'':>6}"
        print(line, flush=True)
    if refs is not None:
        refs.close()
    print(f"best SGEMM rate seen: {best_peak / 1e9:.0f} GFLOP/s")


if __name__ == "__main__":
    main()
