"""The GPU's host memory, placement and errors for the everyday ops: host-memory inputs and
outputs never cross to the device, a Const is uploaded once, unpinned graphs go to the GPU,
bfloat16 falls back to the CPU, and errors read the same on both devices (the simulated GPU
always, a real CUDA GPU when there is one)."""

import contextlib
import re

import numpy as np
import pytest

import graphops as gp
from graphops.testing.simulated_gpu import SimArray, xp as sim_xp
from graphops.registry import dtypes, errors, get_op_def
from graphops.registry.kernel_registry import (OpKernelConstruction, OpKernelContext, find_kernel,
                                               registered_kernels)
from tests import placement_log
from tests.gpu_compare import assert_same, ints, run_error
from tests.placement_log import CPU_NAME, GPU_NAME


# ----------------------------------------------------------------------------- host memory

def test_host_memory_args_never_cross_to_the_device(sim_gpu):
    """Shape/axis/perm/multiples/begin/size inputs, Shape/Size/Rank outputs, int32 constants
    and BroadcastGradientArgs stay in host memory: one run copies only the fed value in and
    the fetched device value out, however often it runs."""
    g = gp.Graph()
    with g.as_default():
        x = gp.placeholder(gp.float32, None)
        with g.device("/GPU:0"):
            y = gp.raw_ops.Reshape(tensor=x, shape=[2, 3])
            y = gp.raw_ops.Transpose(x=y, perm=[1, 0])
            y = gp.raw_ops.ExpandDims(input=y, axis=0)
            y = gp.raw_ops.Tile(input=y, multiples=[2, 1, 1])
            y = gp.raw_ops.ConcatV2(values=[y, y], axis=0)
            y = gp.raw_ops.Slice(input=y, begin=[1, 0, 0], size=[-1, 2, 2])
            shape = gp.raw_ops.Shape(input=y)
            z = gp.raw_ops.Mul(x=gp.raw_ops.Fill(dims=shape, value=2.0), y=y)
            kept = gp.raw_ops.Sum(input=z, axis=[0, 2], keep_dims=True)
            _, r1 = gp.raw_ops.BroadcastGradientArgs(s0=shape, s1=gp.raw_ops.Shape(input=kept))
            out = gp.raw_ops.Mean(input=z, axis=r1)
            index = gp.raw_ops.ArgMax(input=out, dimension=0)
            size, rank = gp.raw_ops.Size(input=out), gp.raw_ops.Rank(input=out)
    feed = np.arange(6, dtype=np.float32)
    with gp.Session(graph=g, allow_soft_placement=False) as sess:
        for _ in range(2):
            sim_gpu.reset()
            got = sess.run([out, shape, size, rank, index], {x: feed})
            assert (sim_gpu.to_device, sim_gpu.to_host) == (1, 2)
    tiled = np.tile(feed.reshape(2, 3).T[None], (2, 1, 1))
    mean = (2 * np.concatenate([tiled, tiled])[1:, :2, :2]).mean(axis=(0, 2))
    for value, want in zip(got, [mean, [3, 2, 2], 2, 1, np.argmax(mean)]):
        np.testing.assert_array_equal(value, want)


def test_host_memory_registrations():
    for op, names in [("Shape", ("output",)), ("Size", ("output",)), ("Rank", ("output",)),
                      ("Reshape", ("shape",)), ("Transpose", ("perm",)), ("Fill", ("dims",)),
                      ("ExpandDims", ("dim",)), ("ConcatV2", ("axis",)), ("Tile", ("multiples",)),
                      ("Slice", ("begin", "size")), ("Sum", ("reduction_indices",)),
                      ("Mean", ("reduction_indices",)), ("ArgMax", ("dimension",)),
                      ("BroadcastGradientArgs", ("s0", "s1", "r0", "r1")),
                      ("InvertPermutation", ("x", "y")), ("Pad", ("paddings",)),
                      ("ConcatOffset", ("concat_dim", "shape", "offset"))]:
        assert {k.host_memory for k in registered_kernels(op)} == {names}, op
    assert find_kernel("Const", "GPU", {"dtype": gp.int32}).host_memory == ("output",)
    assert find_kernel("Range", "GPU", {"Tidx": gp.int32}).host_memory == (
        "start", "limit", "delta", "output")
    for device, dtype in (("GPU", gp.int64), ("CPU", gp.int32)):
        assert find_kernel("Range", device, {"Tidx": dtype}).host_memory == (
            "start", "limit", "delta")
    assert find_kernel("Const", "GPU", {"dtype": gp.int64}).host_memory == ()


def test_const_is_uploaded_once_per_kernel():
    """A GPU Const makes its device copy when the kernel is built and hands out that same
    array on every run; an int32 one (host memory) is a read-only NumPy array."""
    value = np.arange(6, dtype=np.float32).reshape(2, 3)
    for dtype, host in ((gp.float32, False), (gp.int32, True)):
        kdef = find_kernel("Const", "GPU", {"dtype": dtype})
        construction = OpKernelConstruction(
            get_op_def("Const"), "c", {"dtype": dtype, "value": value.astype(dtype.np_dtype)},
            [], [dtype], device_type="GPU", xp=sim_xp, host_outputs={0} if host else ())
        kernel = kdef.kernel_class(construction)
        runs = []
        for _ in range(2):
            ctx = OpKernelContext(construction, [])
            kernel.compute(ctx)
            runs.append(ctx.outputs[0])
        assert runs[0] is runs[1]
        if host:
            assert type(runs[0]) is np.ndarray and not runs[0].flags.writeable
        else:
            assert type(runs[0]) is SimArray
            np.testing.assert_array_equal(runs[0].get(), value)


# ----------------------------------------------------------------------------- placement

def _placements(capsys):
    """{node: device} from the log_device_placement lines printed so far."""
    return {node: device for node, (_, device)
            in placement_log.parse(capsys.readouterr().err).items()}


def _model(x, labels, device):
    """A small classifier graph of the everyday ops, built under `device` (None: unpinned)."""
    with gp.get_default_graph().device(device) if device else contextlib.nullcontext():
        w = gp.raw_ops.Reshape(tensor=gp.constant(np.linspace(-1, 1, 12, dtype=np.float32)),
                               shape=[4, 3])
        h = gp.raw_ops.Relu(features=gp.raw_ops.BiasAdd(
            value=gp.raw_ops.MatMul(a=x, b=w), bias=gp.constant([0.1, -0.2, 0.3])))
        probs = gp.raw_ops.Softmax(logits=gp.raw_ops.Tanh(x=h))
        loss, _ = gp.raw_ops.SparseSoftmaxCrossEntropyWithLogits(features=h, labels=labels)
        total = gp.raw_ops.Mean(input=gp.raw_ops.Square(x=loss), axis=[0])
        best = gp.raw_ops.ArgMax(input=probs, dimension=1)
        cast = gp.raw_ops.Cast(x=gp.raw_ops.Equal(x=best, y=gp.raw_ops.Cast(
            x=labels, DstT=gp.int64)), DstT=gp.float32)
        return [total, gp.raw_ops.Sum(input=cast, axis=[0]), probs]


def test_unpinned_graph_runs_on_the_gpu(gpu, capsys):
    rng = np.random.default_rng(3)
    feed_x, feed_labels = rng.standard_normal((5, 4)).astype(np.float32), ints(0, 2, 1, 1, 0)
    results = {}
    for device in (None, "/CPU:0"):
        g = gp.Graph()
        with g.as_default():
            x, labels = gp.placeholder(gp.float32, None), gp.placeholder(gp.int32, None)
            fetches = _model(x, labels, device)
        with gp.Session(graph=g, log_device_placement=True) as sess:
            results[device] = sess.run(fetches, {x: feed_x, labels: feed_labels})
        placed = _placements(capsys)
        assert set(placed) == {op.name for op in g.get_operations() if op.type != "Placeholder"}
        assert set(placed.values()) == {GPU_NAME if device is None else CPU_NAME}
    assert_same(tuple(results[None]), tuple(results["/CPU:0"]))


def test_bfloat16_ops_soft_place_to_the_cpu(gpu, capsys):
    g = gp.Graph()
    with g.as_default():
        x = gp.placeholder(gp.bfloat16, None)
        with g.device("/GPU:0"):
            y = gp.raw_ops.Relu(features=gp.raw_ops.AddV2(x=x, y=x))
            s = gp.raw_ops.Sum(input=y, axis=[0])
            out = gp.raw_ops.Square(x=gp.raw_ops.Cast(x=s, DstT=gp.float32))
    feed = np.array([[1.5, -2.0], [3.0, 0.25]], dtype=dtypes.bfloat16.np_dtype)
    with gp.Session(graph=g, log_device_placement=True) as sess:
        np.testing.assert_array_equal(sess.run(out, {x: feed}), [81.0, 0.25])
    placed = _placements(capsys)
    for node in ("AddV2", "Relu", "Sum", "Cast"):
        assert placed[node] == CPU_NAME, node
    assert (placed["Sum/reduction_indices"], placed["Square"]) == (GPU_NAME, GPU_NAME)
    with gp.Session(graph=g, allow_soft_placement=False) as sess:
        with pytest.raises(errors.InvalidArgumentError,
                           match=re.escape("Cannot assign a device for operation AddV2: Could "
                                           "not satisfy explicit device specification "
                                           "'/device:GPU:0' because no supported kernel for "
                                           "GPU devices is available.")):
            sess.run(out, {x: feed})


def test_placeholder_and_noop_run_on_the_gpu(gpu):
    g = gp.Graph()
    with g.as_default(), g.device("/GPU:0"):
        p = gp.placeholder(gp.float32, [2], name="p")
        noop = gp.raw_ops.NoOp()
    with gp.Session(graph=g, allow_soft_placement=False) as sess:
        assert sess.run(noop) is None
        with pytest.raises(errors.InvalidArgumentError) as info:
            sess.run(p)
    assert f"(op: Placeholder, device: {GPU_NAME})" in info.value.message
    assert "You must feed a value for placeholder tensor 'p' with dtype float and shape [2]" \
        in info.value.message


# ----------------------------------------------------------------------------- errors

f32 = np.zeros((2, 3), np.float32)
ERROR_CASES = [
    ("Reshape", {"tensor": f32, "shape": ints(4, -1)}, {}),
    ("Transpose", {"x": f32, "perm": ints(0, 0)}, {}),
    ("Squeeze", {"input": f32}, {"axis": [1]}),
    ("ExpandDims", {"input": f32, "axis": ints(4)}, {}),
    ("Pack", {"values": [f32, f32.T]}, {}),
    ("ConcatV2", {"values": [f32, f32.T], "axis": ints(1)}, {}),
    ("Tile", {"input": f32, "multiples": ints(1, -1)}, {}),
    ("Slice", {"input": f32, "begin": ints(0, 2), "size": ints(1, 2)}, {}),
    ("Fill", {"dims": ints(2, -3), "value": np.float32(1)}, {}),
    ("AddV2", {"x": f32, "y": f32.T}, {}),
    ("Equal", {"x": f32, "y": f32.T}, {}),
    ("MatMul", {"a": f32, "b": f32}, {}),
    ("Sum", {"input": f32, "axis": ints(2)}, {}),
    ("Mean", {"input": f32, "axis": ints(1, -1)}, {}),
    ("BiasAdd", {"value": f32, "bias": np.zeros(2, np.float32)}, {}),
    ("Softmax", {"logits": np.float32(1)}, {}),
    ("SoftmaxCrossEntropyWithLogits", {"features": f32, "labels": f32.T}, {}),
    ("SparseSoftmaxCrossEntropyWithLogits", {"features": f32, "labels": ints(1, 3)}, {}),
    ("SparseSoftmaxCrossEntropyWithLogits", {"features": f32, "labels": ints(0, 1, 2)}, {}),
    ("SparseSoftmaxCrossEntropyWithLogits", {"features": f32.T, "labels": ints(0, -1, 2)}, {}),
    ("ArgMax", {"input": np.zeros((2, 0), np.float32), "dimension": np.int32(1)}, {}),
    ("BroadcastGradientArgs", {"s0": ints(2, 3), "s1": ints(4)}, {}),
]


@pytest.mark.parametrize("op,inputs,attrs", ERROR_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(ERROR_CASES)])
def test_errors_read_the_same_on_both_devices(gpu, op, inputs, attrs):
    assert run_error(op, inputs, attrs, "/GPU:0") == run_error(op, inputs, attrs, "/CPU:0")


def test_out_of_range_labels_are_an_error_on_the_gpu(gpu):
    """TF's GPU kernel would give NaN rows; ours keeps the CPU kernel's error everywhere."""
    _, message = run_error("SparseSoftmaxCrossEntropyWithLogits",
                           {"features": f32, "labels": ints(1, 3)}, {}, "/GPU:0")
    assert "Received a label value of 3 which is outside the valid range of [0, 3).  " \
           "Label values: 1 3" in message
