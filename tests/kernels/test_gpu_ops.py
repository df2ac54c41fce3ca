"""GPU kernels of the everyday ops (array, math, nn, loss, gradient support).

Every op runs in one graph twice, pinned to /CPU:0 and to /GPU:0 (no soft placement) on the
same random inputs, for each type of its GPU type list; the results must agree (exactly for
integers and bools). The `gpu` fixture runs each test on the simulated GPU and, when there
is one, on a real CUDA GPU. Also checked: every CPU kernel of the registry has a GPU twin,
host-memory inputs and outputs never cross to the device, unpinned graphs go to the GPU,
bfloat16 falls back to the CPU, and errors read the same on both devices.
"""

import contextlib
import itertools
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import graphops as gp
from graphops.testing.simulated_gpu import SimArray, xp as sim_xp
from graphops.registry import dtypes, errors, get_op_def
from graphops.registry.kernel_registry import (OpKernelConstruction, OpKernelContext, find_kernel,
                                      registered_kernels)
from graphops.registry.op_registry import list_ops
from tests import placement_log
from tests.gpu_compare import assert_same, compare, gpu_types, ints, run_error, values
from tests.placement_log import CPU_NAME, GPU_NAME

SETTINGS = settings(max_examples=15, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])
MODULES = {f"graphops.kernels.ops.{m}" for m in ("array", "math", "nn", "loss", "gradient",
                                                "pad", "reduction")}


# ----------------------------------------------------------------------------- one case per type

def _binary(few=False):
    return lambda r, t: ({"x": values(r, t, (3, 1, 4), few=few), "y": values(r, t, (2, 4),
                                                                              few=few)}, {})


def _reduction(keep_dims):
    return lambda r, t: ({"input": values(r, t, (3, 4, 5)), "axis": ints(0, -1)},
                         {"keep_dims": keep_dims})


CASES = {   # (op, case name): (type attr, make(rng, dtype) -> (inputs, attrs))
    ("Identity", ""): ("T", lambda r, t: ({"input": values(r, t, (2, 3))}, {})),
    ("StopGradient", ""): ("T", lambda r, t: ({"input": values(r, t, (2, 3))}, {})),
    ("PlaceholderWithDefault", ""): ("dtype", lambda r, t: (
        {"input": values(r, t, (2, 3))}, {"shape": [2, 3]})),
    ("ZerosLike", ""): ("T", lambda r, t: ({"x": values(r, t, (2, 3))}, {})),
    ("OnesLike", ""): ("T", lambda r, t: ({"x": values(r, t, (2, 3))}, {})),
    ("Fill", ""): ("T", lambda r, t: ({"dims": ints(2, 3), "value": values(r, t, ())}, {})),
    ("Fill", "int64 dims"): ("T", lambda r, t: (
        {"dims": ints(2, 0, dtype=np.int64), "value": values(r, t, ())}, {})),
    ("Shape", ""): ("T", lambda r, t: ({"input": values(r, t, (2, 0, 3))}, {})),
    ("Shape", "int64"): ("T", lambda r, t: ({"input": values(r, t, (2, 3))},
                                            {"out_type": gp.int64})),
    ("Size", ""): ("T", lambda r, t: ({"input": values(r, t, (2, 3))}, {})),
    ("Size", "int64"): ("T", lambda r, t: ({"input": values(r, t, (4,))},
                                           {"out_type": gp.int64})),
    ("Rank", ""): ("T", lambda r, t: ({"input": values(r, t, (2, 1, 3))}, {})),
    ("Reshape", ""): ("T", lambda r, t: ({"tensor": values(r, t, (2, 3, 4)),
                                          "shape": ints(4, -1)}, {})),
    ("Transpose", ""): ("T", lambda r, t: ({"x": values(r, t, (2, 3, 4)),
                                            "perm": ints(2, 0, -2, dtype=np.int64)}, {})),
    ("Squeeze", ""): ("T", lambda r, t: ({"input": values(r, t, (1, 3, 1, 2))}, {"axis": [2]})),
    ("ExpandDims", ""): ("T", lambda r, t: ({"input": values(r, t, (2, 3)), "axis": ints(-1)},
                                            {})),
    ("Pack", ""): ("T", lambda r, t: ({"values": [values(r, t, (2, 3)) for _ in range(3)]},
                                      {"axis": 1})),
    ("ConcatV2", ""): ("T", lambda r, t: ({"values": [values(r, t, (2, 3)), values(r, t, (2, 1))],
                                           "axis": ints(-1)}, {})),
    ("Tile", ""): ("T", lambda r, t: ({"input": values(r, t, (2, 3)), "multiples": ints(2, 1)},
                                      {})),
    ("Slice", ""): ("T", lambda r, t: ({"input": values(r, t, (4, 5)), "begin": ints(1, 0),
                                        "size": ints(2, -1)}, {})),
    ("MatMul", ""): ("T", lambda r, t: ({"a": values(r, t, (3, 4)), "b": values(r, t, (4, 5))},
                                        {})),
    ("MatMul", "transposed"): ("T", lambda r, t: (
        {"a": values(r, t, (4, 3)), "b": values(r, t, (5, 4))},
        {"transpose_a": True, "transpose_b": True})),
    ("Sum", ""): ("T", _reduction(False)),
    ("Sum", "keep_dims"): ("T", _reduction(True)),
    ("Mean", ""): ("T", _reduction(False)),
    ("Mean", "keep_dims"): ("T", _reduction(True)),
    ("Relu", ""): ("T", lambda r, t: ({"features": values(r, t, (3, 4))}, {})),
    ("BiasAdd", ""): ("T", lambda r, t: ({"value": values(r, t, (2, 3, 4)),
                                          "bias": values(r, t, (4,))}, {})),
    ("BiasAdd", "NCHW"): ("T", lambda r, t: ({"value": values(r, t, (2, 3, 4, 5)),
                                              "bias": values(r, t, (3,))},
                                             {"data_format": "NCHW"})),
    ("BiasAddV1", ""): ("T", lambda r, t: ({"value": values(r, t, (2, 3, 4)),
                                            "bias": values(r, t, (4,))}, {})),
    ("BiasAddGrad", ""): ("T", lambda r, t: ({"out_backprop": values(r, t, (2, 3, 4))}, {})),
    ("BiasAddGrad", "NCHW"): ("T", lambda r, t: ({"out_backprop": values(r, t, (2, 3, 4, 5))},
                                                 {"data_format": "NCHW"})),
    ("Softmax", ""): ("T", lambda r, t: ({"logits": values(r, t, (3, 5))}, {})),
    ("SoftmaxCrossEntropyWithLogits", ""): ("T", lambda r, t: (
        {"features": values(r, t, (4, 5)), "labels": (r.dirichlet(np.ones(5), (1,))).astype(
            dtypes.as_dtype(t).np_dtype)}, {})),
    ("SparseSoftmaxCrossEntropyWithLogits", ""): ("T", lambda r, t: (
        {"features": values(r, t, (4, 5)), "labels": r.integers(0, 5, 4).astype(np.int32)}, {})),
    ("SparseSoftmaxCrossEntropyWithLogits", "int64 labels"): ("T", lambda r, t: (
        {"features": values(r, t, (4, 5)), "labels": r.integers(0, 5, 4)}, {})),
    ("ArgMax", ""): ("T", lambda r, t: ({"input": values(r, t, (3, 4, 5), few=True),
                                         "dimension": np.int32(1)}, {})),
    ("ArgMax", "int32 output"): ("T", lambda r, t: (
        {"input": values(r, t, (3, 4), few=True), "dimension": np.int64(-1)},
        {"output_type": gp.int32})),
    ("BroadcastGradientArgs", ""): ("T", lambda r, t: (
        {"s0": ints(2, 1, 3, dtype=t.np_dtype), "s1": ints(4, 3, dtype=t.np_dtype)}, {})),
    ("InvertPermutation", ""): ("T", lambda r, t: ({"x": ints(2, 0, 3, 1, dtype=t.np_dtype)},
                                                   {})),
    ("ConcatOffset", ""): ("shape_type", lambda r, t: (
        {"concat_dim": np.int32(-1), "shape": [ints(2, 3, dtype=t.np_dtype),
                                               ints(2, 1, dtype=t.np_dtype)]}, {})),
    ("Range", ""): ("Tidx", lambda r, t: ({"start": t.np_dtype.type(1), "limit": t.np_dtype.type(
        9), "delta": t.np_dtype.type(2)}, {})),
    ("Range", "negative delta"): ("Tidx", lambda r, t: (
        {"start": t.np_dtype.type(3), "limit": t.np_dtype.type(-4),
         "delta": t.np_dtype.type(-1.5 if t.is_floating else -2)}, {})),
    ("FloorMod", ""): ("T", lambda r, t: (
        {"x": values(r, t, (3, 1, 4)), "y": values(r, t, (2, 4), positive=True)}, {})),
    ("Pad", ""): ("T", lambda r, t: ({"input": values(r, t, (2, 3)),
                                      "paddings": ints(1, 0, 2, 1).reshape(2, 2)}, {})),
    ("Pad", "int64 paddings"): ("T", lambda r, t: (
        {"input": values(r, t, (2, 1, 3)), "paddings": np.ones((3, 2), np.int64)}, {})),
    ("PadV2", ""): ("T", lambda r, t: ({"input": values(r, t, (2, 3)),
                                        "paddings": ints(1, 0, 2, 1).reshape(2, 2),
                                        "constant_values": values(r, t, ())}, {})),
}
for _op in ("AddV2", "Sub", "Mul", "RealDiv", "Maximum", "Minimum"):
    CASES[(_op, "")] = ("T", _binary())
for _op in ("Less", "LessEqual", "Greater", "GreaterEqual", "Equal", "NotEqual"):
    CASES[(_op, "")] = ("T", _binary(few=True))
for _op in ("Equal", "NotEqual"):
    CASES[(_op, "incompatible")] = ("T", lambda r, t: (
        {"x": values(r, t, (2,)), "y": values(r, t, (3,))}, {"incompatible_shape_error": False}))
for _op in ("Neg", "Square", "Exp", "Tanh", "Sigmoid"):
    CASES[(_op, "")] = ("T", lambda r, t: ({"x": values(r, t, (3, 4))}, {}))
for _op in ("Sqrt", "Rsqrt", "Log"):
    CASES[(_op, "")] = ("T", lambda r, t: ({"x": values(r, t, (3, 4), positive=True)}, {}))
for _op in ("Abs", "Sign", "Floor", "Ceil", "Round", "Sin", "Cos", "Expm1", "Erf", "Erfc"):
    CASES[(_op, "")] = ("T", lambda r, t: ({"x": values(r, t, (3, 4))}, {}))
for _op in ("Reciprocal", "Inv", "Log1p"):     # no integer zeros
    CASES[(_op, "")] = ("T", lambda r, t: ({"x": values(r, t, (3, 4), positive=True) + 1}, {}))
for _op in ("Prod", "Max", "Min"):
    CASES[(_op, "")] = ("T", _reduction(False))
    CASES[(_op, "keep_dims")] = ("T", _reduction(True))
for _op in ("Any", "All"):
    CASES[(_op, "")] = ("Tidx", lambda r, t: ({"input": r.random((3, 4, 5)) < 0.5,
                                               "axis": ints(0, -1, dtype=t.np_dtype)}, {}))
CASES[("ArgMin", "")] = ("T", lambda r, t: ({"input": values(r, t, (3, 4, 5), few=True),
                                             "dimension": np.int32(1)}, {}))
CASES[("Cumprod", "")] = ("T", lambda r, t: ({"x": values(r, t, (3, 4), few=True),
                                              "axis": np.int32(1)}, {"exclusive": True}))
CASES[("Cumsum", "")] = ("T", lambda r, t: ({"x": values(r, t, (3, 4), few=True),
                                             "axis": np.int32(0)}, {"reverse": True}))

TYPED_CASES = [pytest.param(op, name, t, id=f"{op}-{name}-{t.name}" if name else f"{op}-{t.name}")
               for (op, name), (attr, _) in CASES.items() for t in gpu_types(op, attr)]


@pytest.mark.parametrize("op,name,dtype", TYPED_CASES)
def test_gpu_matches_cpu(gpu, op, name, dtype):
    inputs, attrs = CASES[(op, name)][1](np.random.default_rng(0), dtype)
    compare(op, inputs, **attrs)


@pytest.mark.parametrize("src", gpu_types("Cast", "SrcT"), ids=lambda t: t.name)
def test_cast_gpu_matches_cpu(gpu, src):
    """Every pair of GPU types, on values every type holds (C++ leaves float -> int casts
    out of range undefined: CUDA saturates them, x86 does not)."""
    rng = np.random.default_rng(1)
    x = rng.integers(0, 100, (3, 4)).astype(src.np_dtype)
    if src.is_floating or src.is_complex:
        x = (x + rng.random((3, 4)) * 0.99).astype(src.np_dtype)
    for dst in gpu_types("Cast", "DstT"):
        compare("Cast", {"x": x}, DstT=dst)
        if dst.is_floating and src.is_floating and dst.size < src.size:
            compare("Cast", {"x": x}, DstT=dst, Truncate=True)


@pytest.mark.parametrize("dtype", gpu_types("Const", "dtype"), ids=lambda t: t.name)
def test_const_gpu_matches_cpu(gpu, dtype):
    value = values(np.random.default_rng(2), dtype, (2, 3))
    g = gp.Graph()
    with g.as_default():
        outs = []
        for device in ("/CPU:0", "/GPU:0"):
            with g.device(device):
                outs.append(gp.constant(value, dtype=dtype))
    with gp.Session(graph=g, allow_soft_placement=False) as sess:
        cpu, gpu_out = sess.run(outs)
        assert_same(gpu_out, cpu)
        assert_same(sess.run(outs[1]), value)


def test_special_values_gpu_matches_cpu(gpu):
    """NaN, infinities and signed zeros through the float kernels."""
    x = np.array([[np.nan, np.inf, -np.inf, 0.0, -0.0, -1.0, 1e30, -1e30]], np.float32)
    for op in ("Neg", "Square", "Sqrt", "Rsqrt", "Exp", "Log", "Tanh", "Sigmoid"):
        compare(op, {"x": x})
    for op in ("AddV2", "Sub", "Mul", "RealDiv", "Maximum", "Minimum", "Less", "Equal"):
        compare(op, {"x": x, "y": x.T})
    compare("Relu", {"features": x})
    compare("Softmax", {"logits": x[:, 3:]})
    compare("Sum", {"input": x, "axis": ints(1)})
    compare("Cast", {"x": x}, DstT=gp.float16)
    compare("Cast", {"x": x}, DstT=gp.bool)


# ----------------------------------------------------------------------------- shapes (hypothesis)

ARRAY_TYPES = gpu_types("Identity")


@st.composite
def typed_array(draw, shape, dtype=None):
    dtype = dtype or draw(st.sampled_from(ARRAY_TYPES))
    seed = draw(st.integers(0, 2**16))
    return values(np.random.default_rng(seed), dtype, shape)


@SETTINGS
@given(st.data())
def test_broadcasting_binary_ops(gpu, data):
    op = data.draw(st.sampled_from(["AddV2", "Sub", "Mul", "RealDiv", "Maximum", "Minimum",
                                    "Less", "GreaterEqual", "Equal", "NotEqual"]))
    dtype = data.draw(st.sampled_from(gpu_types(op)))
    shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=4,
                                                         min_side=0, max_side=3))
    x, y = (data.draw(typed_array(s, dtype)) for s in shapes.input_shapes)
    compare(op, {"x": x, "y": y})


@SETTINGS
@given(st.data())
def test_reductions(gpu, data):
    op = data.draw(st.sampled_from(["Sum", "Mean"]))
    dtype = data.draw(st.sampled_from(gpu_types(op)))
    x = data.draw(typed_array(data.draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0,
                                                         max_side=4)), dtype))
    axes = data.draw(st.lists(st.integers(0, max(x.ndim - 1, 0)), unique=True,
                              max_size=x.ndim)) if x.ndim else []
    axes = [a - x.ndim if data.draw(st.booleans()) else a for a in axes]
    index_type = data.draw(st.sampled_from([np.int32, np.int64]))
    compare(op, {"input": x, "axis": np.array(axes, index_type)},
            keep_dims=data.draw(st.booleans()))


@SETTINGS
@given(st.data())
def test_pack_and_concat(gpu, data):
    dtype = data.draw(st.sampled_from(ARRAY_TYPES))
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=3))
    n = data.draw(st.integers(1, 3))
    pack_axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    compare("Pack", {"values": [data.draw(typed_array(shape, dtype)) for _ in range(n)]},
            axis=pack_axis)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    parts = []
    for _ in range(n + 1):       # ConcatV2 takes at least two values
        part = list(shape)
        part[axis] = data.draw(st.integers(0, 3))
        parts.append(data.draw(typed_array(tuple(part), dtype)))
    compare("ConcatV2", {"values": parts, "axis": ints(axis)})


@SETTINGS
@given(st.data())
def test_tile_and_transpose(gpu, data):
    x = data.draw(typed_array(data.draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0,
                                                         max_side=3))))
    multiples = data.draw(st.lists(st.integers(0, 3), min_size=x.ndim, max_size=x.ndim))
    compare("Tile", {"input": x, "multiples": np.array(multiples, np.int32)})
    perm = data.draw(st.permutations(range(x.ndim)))
    compare("Transpose", {"x": x, "perm": np.array(perm, np.int64)})


@SETTINGS
@given(st.data())
def test_slice(gpu, data):
    x = data.draw(typed_array(data.draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0,
                                                         max_side=4))))
    begin, size = [], []
    for d in x.shape:
        b = data.draw(st.integers(0, d))
        begin.append(b)
        size.append(data.draw(st.sampled_from([-1, data.draw(st.integers(0, d - b))])))
    compare("Slice", {"input": x, "begin": ints(*begin), "size": ints(*size)})


@SETTINGS
@given(st.data())
def test_reshape_squeeze_expand_dims(gpu, data):
    x = data.draw(typed_array(data.draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0,
                                                         max_side=3))))
    shape = list(data.draw(st.permutations(x.shape)))
    if shape and data.draw(st.booleans()):
        shape[data.draw(st.integers(0, len(shape) - 1))] = -1
    if 0 in x.shape and -1 in shape:
        shape = list(x.shape)            # -1 next to a 0 dim would be ambiguous
    compare("Reshape", {"tensor": x, "shape": np.array(shape, np.int64)})
    ones = [i for i, d in enumerate(x.shape) if d == 1]
    squeeze = data.draw(st.lists(st.sampled_from(ones), unique=True)) if ones else []
    compare("Squeeze", {"input": x}, axis=squeeze)
    compare("ExpandDims", {"input": x, "axis": ints(data.draw(st.integers(-x.ndim - 1, x.ndim)))})


# ----------------------------------------------------------------------------- coverage

def _my_ops():
    return {k.op for k in registered_kernels()
            if k.device_type == "CPU" and k.kernel_class.__module__ in MODULES}


def test_every_everyday_kernel_is_compared():
    compared = {op for op, _ in CASES} | {"Cast", "Const"}
    # Placeholder and NoOp produce no value to compare: see the error and placement tests.
    assert _my_ops() - compared == {"Placeholder", "NoOp"}
    assert compared <= _my_ops()


def _gpu_attr_combinations(op, kdef):
    """Every assignment of GPU-holdable types (and constrained attr values) that the CPU
    kernel `kdef` accepts."""
    choices = {}
    for attr in get_op_def(op).attr:
        if attr.type in ("type", "list(type)"):
            allowed = kdef.type_constraints.get(attr.name) or attr.allowed_values \
                or dtypes.GPU_TYPES
            types = [t for t in allowed if t in dtypes.GPU_TYPES]
            choices[attr.name] = [[t] for t in types] if attr.type == "list(type)" else types
    choices.update((name, list(v)) for name, v in kdef.attr_constraints.items())
    names = list(choices)
    for combo in itertools.product(*(choices[n] for n in names)):
        yield dict(zip(names, combo))


def test_every_cpu_kernel_has_a_gpu_kernel_for_gpu_types():
    """Every built-in op: a node a CPU kernel accepts finds a GPU kernel whenever a GPU can
    hold its types. (No built-in op is host-only by nature today: ops of strings, resources
    or bfloat16 alone have no GPU-holdable type and drop out on their own.)"""
    missing, checked = set(), set()
    for op in list_ops():
        if not get_op_def(op).module.startswith("graphops.registry.op_defs."):
            continue          # an op some test registered for itself
        checked.add(op)
        for kdef in registered_kernels(op):
            if kdef.device_type != "CPU":
                continue
            for attrs in _gpu_attr_combinations(op, kdef):
                try:
                    find_kernel(op, "GPU", attrs, kdef.label)
                except errors.NotFoundError:
                    missing.add(op)
                    break
    assert {"Conv2D", "MatMul", "Relu"} <= checked      # the filter above finds them
    assert sorted(missing) == []


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
