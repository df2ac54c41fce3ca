"""Train the 3-D CNN of examples/train_cnn3d.py on the GPU and on the CPU, and PyTorch's twin.

Usage (from the repo root): python benchmarks/bench_gpu_training.py [--steps S] [--batch B]
                            python benchmarks/bench_gpu_training.py --simulated --steps 3
                            (no GPU: the same run on the simulated GPU; times mean nothing)

The model (three Conv3D+BiasAdd+Relu layers, a dense layer, Adam) is built twice: placed
automatically (every node should land on the GPU) and pinned to the CPU; both train on the
same batches. Prints where the nodes ran (`log_device_placement`), the host<->device copies
of a step (each tensor should cross once), every step's loss on both devices and their
largest relative difference, the median step time of each, and the median step time of the
same model in PyTorch on the GPU (cuDNN, TF32 off; its input copied to the GPU each step as
graphops' is) when torch sees one.
"""

import argparse
import collections
import contextlib
import dataclasses
import io
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples"))
sys.path.insert(0, ROOT)

import graphops as gp  # noqa: E402
import train_cnn3d as example  # noqa: E402
from graphops.runtime import devices  # noqa: E402
from graphops.testing.simulated_gpu import simulated_gpu  # noqa: E402
from tests import placement_log  # noqa: E402

SAMPLES = 128


def counting_copies():
    """Replaces the GPU device type by one that counts its copies; returns the counter."""
    gpu = devices.get_device_type("GPU")
    counts = collections.Counter()

    def to_device(array, index):
        counts["to GPU"] += 1
        return gpu.to_device(array, index)

    def to_host(array):
        counts["to host"] += 1
        return gpu.to_host(array)

    devices.register_device_type(dataclasses.replace(gpu, to_device=to_device,
                                                     to_host=to_host))
    return counts


def train(pin, steps, batch, counts):
    """Losses, step times, {device type: nodes} and the copies of each step, training the
    model placed automatically (``pin`` None) or pinned to ``pin``."""
    rng = np.random.default_rng(0)
    voxels, labels = example.make_dataset(SAMPLES, rng)
    graph = gp.Graph()
    with graph.as_default(), (gp.device(pin) if pin else contextlib.nullcontext()):
        x, y, loss, _, train_op = example.build_model(np.random.default_rng(1), 2e-3)
        init = gp.global_variables_initializer()
    log, losses, times, copies = io.StringIO(), [], [], []
    with contextlib.redirect_stderr(log), gp.Session(graph=graph,
                                                     log_device_placement=True) as sess:
        sess.run(init)
        step = sess.make_callable([loss, train_op], [x, y])
        for _ in range(steps):
            chosen, before = rng.permutation(SAMPLES)[:batch], dict(counts)
            start = time.perf_counter()
            losses.append(float(step(voxels[chosen], labels[chosen])[0]))
            times.append(time.perf_counter() - start)
            copies.append({k: v - before.get(k, 0) for k, v in counts.items()})
    placed = collections.Counter(devices.DeviceSpec.from_string(device).device_type
                                 for _, device in placement_log.parse(log.getvalue()).values())
    return np.array(losses), np.array(times), dict(placed), copies


def torch_step_ms(steps, batch):
    """Median ms of a PyTorch training step of the same model on the GPU, or None."""
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    convs = [(torch.randn(o, i, 3, 3, 3, device="cuda", requires_grad=True),
              torch.zeros(o, device="cuda", requires_grad=True), stride)
             for _, i, o, stride in example.LAYERS]
    dense = torch.randn(4 ** 3 * example.LAYERS[-1][2], 3, device="cuda", requires_grad=True)
    params = [p for w, b, _ in convs for p in (w, b)] + [dense]
    optimizer = torch.optim.Adam(params, lr=2e-3)
    grids = np.random.default_rng(0).normal(size=(batch, 1, 16, 16, 16)).astype(np.float32)
    classes = torch.from_numpy(np.arange(batch) % 3).cuda()

    def step():
        h = torch.from_numpy(grids).cuda()
        for w, b, stride in convs:
            h = F.relu(F.conv3d(h, w, b, stride=stride, padding=1))
        loss = F.cross_entropy(h.flatten(1) @ dense, classes)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss.item()

    times = []
    for i in range(steps + 5):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return 1e3 * float(np.median(times[5:]))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--simulated", action="store_true",
                        help="run on the simulated GPU (a smoke test without a GPU)")
    args = parser.parse_args()
    with simulated_gpu() if args.simulated else contextlib.nullcontext():
        if devices.get_device_type("GPU") is None:
            sys.exit("no GPU: CuPy is not installed or sees no device (or run --simulated)")
        counts = counting_copies()
        on_gpu, gpu_times, gpu_placed, copies = train(None, args.steps, args.batch, counts)
        on_cpu, cpu_times, cpu_placed, _ = train("/CPU:0", args.steps, args.batch, counts)
    print(f"nodes placed automatically: {gpu_placed}; pinned to the CPU: {cpu_placed}")
    print(f"copies of the first step: {copies[0]}; of the last: {copies[-1]}")
    print("losses on the GPU:", " ".join(f"{v:.6f}" for v in on_gpu))
    print("losses on the CPU:", " ".join(f"{v:.6f}" for v in on_cpu))
    print(f"largest relative loss difference: {np.max(np.abs(on_gpu / on_cpu - 1)):.2e}")
    line = (f"median step ms: GPU {1e3 * np.median(gpu_times[1:]):.2f}, "
            f"CPU {1e3 * np.median(cpu_times[1:]):.2f}")
    other = None if args.simulated else torch_step_ms(args.steps, args.batch)
    print(line + (f", PyTorch on the GPU {other:.2f}" if other else ""))


if __name__ == "__main__":
    main()
