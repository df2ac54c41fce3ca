"""Run one raw op pinned to the CPU and to the GPU in one graph and compare: the helpers the
GPU kernel tests share (use them with the `gpu` fixture of conftest.py)."""

import numpy as np
import pytest

import graphops as gp
from graphops.registry import dtypes, errors, get_op_def
from graphops.registry.kernel_registry import registered_kernels
from tests.op_runners import feeder, map_inputs
from tests.placement_log import CPU_NAME, GPU_NAME

TOLERANCE = {"float16": 2e-3, "float32": 1e-5, "complex64": 1e-5, "float64": 1e-12,
             "complex128": 1e-12}
FULL_NAME = {"/CPU:0": CPU_NAME, "/GPU:0": GPU_NAME}


def gpu_types(op, attr="T"):
    """The types of `attr` some CPU kernel of `op` accepts that a GPU can hold."""
    allowed = set()
    for kdef in registered_kernels(op):
        if kdef.device_type == "CPU":
            allowed |= set(kdef.type_constraints.get(attr)
                           or get_op_def(op).attr_def(attr).allowed_values or dtypes.GPU_TYPES)
    return sorted((t for t in allowed if t in dtypes.GPU_TYPES), key=lambda t: t.name)


def values(rng, dtype, shape, positive=False, few=False):
    """Random test values: `few` draws from {0, 1, 2} (ties), `positive` stays above 0."""
    dtype = np.dtype(dtypes.as_dtype(dtype).np_dtype)
    if few:
        return rng.integers(0, 3, shape).astype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        low = 0 if positive or dtype.kind == "u" else -20
        return rng.integers(low, 20, shape).astype(dtype)
    x = rng.standard_normal(shape)
    if dtype.kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return (np.abs(x) + 0.5 if positive else x).astype(dtype)


def ints(*v, dtype=np.int32):
    return np.array(v, dtype)


def assert_same(got, want):
    """GPU result `got` equals CPU result `want`: exactly, or within the type's tolerance."""
    if isinstance(want, (tuple, list)):
        assert type(got) is type(want) and len(got) == len(want)
        for g, w in zip(got, want):
            assert_same(g, w)
        return
    got, want = np.asarray(got), np.asarray(want)
    assert (got.dtype, got.shape) == (want.dtype, want.shape)
    tol = TOLERANCE.get(want.dtype.name)
    if tol is None:
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, equal_nan=True)


def compare(op, inputs, **attrs):
    """Runs raw op `op` pinned to the CPU and to the GPU (no soft placement) in one graph,
    its `inputs` fed through placeholders of unknown shape; asserts the results agree."""
    g, feeds = gp.Graph(), {}
    with g.as_default():
        args = map_inputs(op, inputs, feeder(feeds))
        outs = []
        for device in ("/CPU:0", "/GPU:0"):
            with g.device(device):
                outs.append(getattr(gp.raw_ops, op)(**args, **attrs))
    with gp.Session(graph=g, allow_soft_placement=False) as sess:
        cpu, gpu = sess.run(outs, feeds)
    assert_same(gpu, cpu)
    return cpu


def run_error(op, inputs, attrs, device):
    """The (class, message) of running `op` pinned to `device`; the device named as CPU."""
    g, feeds = gp.Graph(), {}
    with g.as_default():
        args = map_inputs(op, inputs, feeder(feeds))
        with g.device(device):
            out = getattr(gp.raw_ops, op)(**args, **attrs)
    with gp.Session(graph=g, allow_soft_placement=False) as sess:
        with pytest.raises(errors.OpError) as info:
            sess.run(out, feeds)
    message = info.value.message
    assert f"(op: {op}, device: {FULL_NAME[device]})" in message
    return type(info.value), message.replace(GPU_NAME, CPU_NAME)
