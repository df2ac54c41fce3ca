"""Benchmark the GPU conv math (CuPy) against cuBLAS SGEMM peak and PyTorch's cuDNN convs.

Usage (from the repo root): python benchmarks/bench_gpu.py [--quick] [--repeat R] [--only TEXT]
                            python benchmarks/bench_gpu.py --simulated --quick   (no GPU: a
                            smoke run of the same code on the simulated GPU; times mean nothing)

The cases are bench_conv.py's (the seed ops' benchmark shapes), less the bfloat16 ones (CuPy
has no bfloat16, so graphops keeps those on the CPU). Per case it prints the best-of-R GPU
time (CUDA events around the call, so kernel time rather than launch time), nominal GFLOP/s
(docs/benchmarks.md), the rate of a 8192^3 float32 cuBLAS matmul timed in the same process
and our fraction of it; where cuDNN is installed (``cudnn_convs``; "ms" is then the faster
of cuDNN and graphops' own kernels, as autotuning picks) the time on graphops' own CUDA
kernels alone ("own ms"); and PyTorch's time and ratio (torch ms / our ms, > 1 means we are
faster) when torch sees the GPU. Both sides compute in strict float32: CuPy's TF32 mode is
off unless CUPY_TF32=1, and PyTorch's TF32 is switched off here. Every case is also checked
against the CPU (NumPy) result.
"""

import argparse
import contextlib
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import bench_conv  # noqa: E402
from bench_conv import full_cases, quick_cases  # noqa: E402


def _gpu_module(simulated):
    """(xp, to_host, timer) for CuPy, or for the simulated GPU."""
    if simulated:
        import time

        from graphops.testing.simulated_gpu import xp

        def timer(fn):
            start = time.perf_counter()
            fn()
            return time.perf_counter() - start
        return xp, lambda a: a.get(), timer
    import cupy

    def timer(fn):
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        return cupy.cuda.get_elapsed_time(start, stop) / 1e3
    return cupy, cupy.asnumpy, timer


def best_time(fn, timer, repeat):
    fn()                                   # warm-up (kernel compilation, memory pool)
    return min(timer(fn) for _ in range(repeat))


def _torch_cuda():
    bench_conv.load_references()
    torch = bench_conv.torch
    if torch is None or not torch.cuda.is_available():
        return None
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    return torch


def run_case(case, xp, impl, geo, x, w, dy):
    """The callable computing `case` with our conv math on device arrays."""
    kind = case.kind()
    name = "depthwise" if case.depthwise else "conv"
    if kind == "Forward":
        return lambda: getattr(impl, name + "_forward")(x, w, *geo, xp=xp)
    if kind == "Input":
        return lambda: getattr(impl, name + "_backprop_input")(dy, w, case.x_shape, *geo, xp=xp)
    return lambda: getattr(impl, name + "_backprop_filter")(x, dy, case.f_shape, *geo, xp=xp)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small shapes")
    parser.add_argument("--repeat", type=int, default=None, help="timed runs per case")
    parser.add_argument("--only", default="", help="run cases whose op/shape contains this")
    parser.add_argument("--simulated", action="store_true",
                        help="run on the simulated GPU (a smoke test without a GPU)")
    args = parser.parse_args()
    from graphops.kernels.conv_algorithms import dense as conv_dense
    from graphops.kernels.conv_algorithms import depthwise as conv_depthwise

    try:
        xp, to_host, timer = _gpu_module(args.simulated)
    except ImportError:
        sys.exit("CuPy is not installed: pip install 'graphops[gpu]' (or run --simulated)")
    repeat = args.repeat or (3 if args.quick or args.simulated else 10)
    torch = None if args.simulated else _torch_cuda()
    n = 1024 if args.simulated else 8192
    a = xp.asarray(np.random.default_rng(0).standard_normal((n, n), dtype=np.float32))
    peak = 2 * n**3 / best_time(lambda: xp.matmul(a, a), timer, repeat)
    device = "simulated GPU" if args.simulated else xp.cuda.runtime.getDeviceProperties(
        xp.cuda.Device().id)["name"].decode()
    from graphops.kernels.conv_algorithms import cudnn_convs
    with_cudnn = cudnn_convs.available(xp, np.float32)
    print(f"{device}; SGEMM (cuBLAS {n}^3 float32) {peak / 1e9:.0f} GFLOP/s; TF32 "
          f"{os.environ.get('CUPY_TF32', '0') == '1' and 'on' or 'off'}; cuDNN "
          f"{_cudnn_version(cudnn_convs) if with_cudnn else 'no'}; torch "
          f"{'yes' if torch else 'no'}; 'vs pt' = torch ms / our ms (> 1: we are faster)")
    print(f"{'op':36} {'shape':48} {'ms':>8} {'GFLOP/s':>8} {'SGEMM%':>7} {'max err':>8}"
          + f" {'on':>5} {'own ms':>8}" * with_cudnn
          + f" {'torch ms':>8} {'vs pt':>6}" * bool(torch))
    from graphops.registry.dtypes import GPU_TYPES
    on_gpu_types = {np.dtype(t.as_numpy_dtype) for t in GPU_TYPES}
    rng = np.random.default_rng(0)
    cases = [c for c in (quick_cases() if args.quick else full_cases())
             if args.only in f"{c.op} {c.label()}" and c.dtype in on_gpu_types]
    for case in cases:
        x, w, dy = case.data(rng)
        impl = conv_depthwise if case.depthwise else conv_dense
        geo = (case.strides, case.dilations, case.pads)
        on_gpu = run_case(case, xp, impl, geo, xp.asarray(x), xp.asarray(w), xp.asarray(dy))
        t = best_time(on_gpu, timer, repeat)
        expected = run_case(case, np, impl, geo, x, w, dy)()
        err = float(np.max(np.abs(to_host(on_gpu()) - expected)) / max(1.0, np.abs(expected).max()))
        rate = case.flops / t
        line = (f"{case.op:36} {case.label():48} {t * 1e3:8.2f} {rate / 1e9:8.0f} "
                f"{100 * rate / peak:6.0f}% {err:8.1e}")
        if with_cudnn:
            line += f" {_chosen_path(cudnn_convs):>5}"
            with _without_cudnn(cudnn_convs):
                line += f" {best_time(on_gpu, timer, repeat) * 1e3:8.2f}"
        if torch:
            other = best_time(case.torch(x, w, dy, device="cuda"),
                              lambda f: _torch_timer(torch, f), repeat)
            line += f" {other * 1e3:8.2f} {other / t:6.2f}"
        print(line, flush=True)


def _cudnn_version(cudnn_convs):
    import cupy
    frontend = cudnn_convs._session(cupy)[0]
    return f"{frontend.backend_version_string()} (frontend {frontend.__version__})"


def _chosen_path(cudnn_convs):
    """What autotuning picked for the conv run last: cuDNN or graphops' own kernels."""
    built = next(reversed(cudnn_convs._graphs.values()), None)
    if built is None or built is cudnn_convs._UNSUPPORTED:
        return "own"
    return "own" if built.plan == cudnn_convs.OWN else "cuDNN"


@contextlib.contextmanager
def _without_cudnn(cudnn_convs):
    """graphops' own CUDA kernels take every conv inside."""
    session = cudnn_convs._state["session"]
    cudnn_convs._state["session"] = None
    try:
        yield
    finally:
        cudnn_convs._state["session"] = session


def _torch_timer(torch, fn):
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    stop.record()
    stop.synchronize()
    return start.elapsed_time(stop) / 1e3


if __name__ == "__main__":
    main()
