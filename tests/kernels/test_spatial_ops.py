"""SpaceToBatchND / BatchToSpaceND (and the 4-D SpaceToBatch / BatchToSpace), SpaceToDepth /
DepthToSpace: values against slow element-by-element references, static shapes, TF's
messages, gradients (values and the ops they build), GPU. (The padding ops are in
test_padding_ops.py, which shares this module's helpers.)"""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import graphops as gp
from graphops.registry import errors, get_op_def
from tests.gpu_compare import compare
from tests.op_runners import invalid, raises

SETTINGS = settings(max_examples=15, deadline=None)
DTYPES = [np.float32, np.float64, np.float16, np.int32, np.int64, np.uint8, np.bool_]


def sample(rng, shape, dtype=np.float32):
    if np.dtype(dtype).kind == "b":
        return rng.random(shape) < 0.5
    return (rng.standard_normal(shape) * 10).astype(dtype)


# ----------------------------------------------------------------------------- references

def ref_space_to_batch(x, blocks, pads):
    m, batch = len(blocks), x.shape[0]
    spatial = [(x.shape[d + 1] + s + e) // b for d, (b, (s, e)) in enumerate(zip(blocks, pads))]
    out = np.zeros([batch * math.prod(blocks)] + spatial + list(x.shape[m + 1:]), x.dtype)
    for index in np.ndindex(*out.shape[:m + 1]):
        offsets = np.unravel_index(index[0] // batch, blocks)
        source = [index[0] % batch]
        for d in range(m):
            source.append(index[d + 1] * blocks[d] + offsets[d] - pads[d][0])
        if all(0 <= p < n for p, n in zip(source[1:], x.shape[1:])):
            out[index] = x[tuple(source)]
    return out


def ref_batch_to_space(x, blocks, crops):
    m, batch = len(blocks), x.shape[0] // math.prod(blocks)
    spatial = [x.shape[d + 1] * b - s - e for d, (b, (s, e)) in enumerate(zip(blocks, crops))]
    out = np.zeros([batch] + spatial + list(x.shape[m + 1:]), x.dtype)
    for index in np.ndindex(*out.shape[:m + 1]):
        padded = [index[d + 1] + crops[d][0] for d in range(m)]
        k = np.ravel_multi_index([p % b for p, b in zip(padded, blocks)], blocks)
        out[index] = x[(k * batch + index[0],) + tuple(p // b for p, b in zip(padded, blocks))]
    return out


def ref_space_to_depth(x, bs):
    n, h, w, c = x.shape
    out = np.zeros((n, h // bs, w // bs, c * bs * bs), x.dtype)
    for b, i, j, k in np.ndindex(*x.shape):
        out[b, i // bs, j // bs, ((i % bs) * bs + j % bs) * c + k] = x[b, i, j, k]
    return out


def ref_depth_to_space(x, bs):
    n, h, w, c = x.shape
    out = np.zeros((n, h * bs, w * bs, c // (bs * bs)), x.dtype)
    for b, i, j, k in np.ndindex(*out.shape):
        out[b, i, j, k] = x[b, i // bs, j // bs, ((i % bs) * bs + j % bs) * out.shape[3] + k]
    return out


# ----------------------------------------------------------------------------- space <-> batch

@st.composite
def space_to_batch_cases(draw):
    m = draw(st.integers(1, 3))
    blocks = [draw(st.integers(1, 3)) for _ in range(m)]
    pads, sizes = [], []
    for b in blocks:
        start, size = draw(st.integers(0, 2)), draw(st.integers(0, 4))
        end = (-(start + size)) % b + b * draw(st.integers(0, 1))
        pads.append((start, end))
        sizes.append(size)
    shape = [draw(st.integers(1, 2))] + sizes + [draw(st.integers(1, 2))] * draw(st.integers(0, 1))
    index_type = draw(st.sampled_from([np.int32, np.int64]))
    return shape, blocks, pads, draw(st.sampled_from(DTYPES)), index_type


@SETTINGS
@given(space_to_batch_cases())
def test_space_to_batch_nd_and_back_match_the_references(case):
    shape, blocks, pads, dtype, index_type = case
    x = sample(np.random.default_rng(len(shape)), shape, dtype)
    run = gp.raw_ops
    y = np.asarray(run.SpaceToBatchND(input=x, block_shape=np.array(blocks, index_type),
                                      paddings=np.array(pads, index_type)))
    np.testing.assert_array_equal(y, ref_space_to_batch(x, blocks, pads))
    back = np.asarray(run.BatchToSpaceND(input=y, block_shape=np.array(blocks, index_type),
                                         crops=np.array(pads, index_type)))
    np.testing.assert_array_equal(back, ref_batch_to_space(y, blocks, pads))
    np.testing.assert_array_equal(back, x)


def run_space_batch(mode, op, x, **kwargs):
    """Eagerly, or in a Session with `x` fed to a placeholder of unknown shape: TF's shape
    functions refuse a block_shape of unknown size, so the index inputs are constants."""
    if mode == "eager":
        return np.asarray(getattr(gp.raw_ops, op)(input=x, **kwargs))
    with gp.Graph().as_default():
        holder = gp.placeholder(gp.as_dtype(x.dtype), None)
        y = getattr(gp.raw_ops, op)(input=holder, **kwargs)
        with gp.Session() as sess:
            return sess.run(y, {holder: x})


@pytest.mark.parametrize("mode", ["eager", "graph"])
def test_space_batch_ops_in_graph_and_eager(mode):
    x = np.arange(2 * 4 * 6 * 3, dtype=np.float32).reshape(2, 4, 6, 3)
    blocks, pads = np.int32([2, 3]), np.int32([[1, 1], [0, 3]])
    y = run_space_batch(mode, "SpaceToBatchND", x, block_shape=blocks, paddings=pads)
    np.testing.assert_array_equal(y, ref_space_to_batch(x, [2, 3], [(1, 1), (0, 3)]))
    crops = np.int32([[1, 0], [2, 1]])
    np.testing.assert_array_equal(
        run_space_batch(mode, "BatchToSpaceND", y, block_shape=blocks, crops=crops),
        ref_batch_to_space(y, [2, 3], [(1, 0), (2, 1)]))
    old = run_space_batch(mode, "SpaceToBatch", x, paddings=np.int64([[0, 2], [1, 1]]),
                          block_size=2)
    np.testing.assert_array_equal(old, ref_space_to_batch(x, [2, 2], [(0, 2), (1, 1)]))
    np.testing.assert_array_equal(
        run_space_batch(mode, "BatchToSpace", old, crops=np.int32([[0, 2], [1, 1]]),
                        block_size=2), x)


@pytest.mark.parametrize("mode", ["eager", "graph"])
def test_space_to_batch_without_block_dims_and_empty_inputs(mode):
    x = np.ones((2, 3), np.float32)
    y = run_space_batch(mode, "SpaceToBatchND", x, block_shape=np.zeros(0, np.int32),
                        paddings=np.zeros((0, 2), np.int32))
    np.testing.assert_array_equal(y, x)
    empty = run_space_batch(mode, "SpaceToBatchND", np.zeros((0, 4, 1), np.float32),
                            block_shape=np.int32([2]), paddings=np.int32([[0, 0]]))
    assert empty.shape == (0, 2, 1)
    assert run_space_batch(mode, "BatchToSpaceND", np.zeros((4, 0, 1), np.float32),
                           block_shape=np.int32([2, 2]),
                           crops=np.zeros((2, 2), np.int32)).shape == (1, 0, 2)


@pytest.mark.parametrize("op, kwargs, message", [
    ("SpaceToBatchND", dict(block_shape=[[2]], paddings=[[0, 0]]),
     "block_shape rank should be 1 instead of 2"),
    ("SpaceToBatchND", dict(block_shape=[2, 2], paddings=[[0, 0]]),
     "paddings should have shape [2, 2] instead of [1,2]"),
    ("SpaceToBatchND", dict(block_shape=[2, 2, 2, 2], paddings=[[0, 0]] * 4),
     "input rank should be >= 5 instead of 4"),
    ("SpaceToBatchND", dict(block_shape=[2, 0], paddings=[[0, 0], [0, 0]]),
     "All values in block_shape must be positive, got value, 0 at index 1."),
    ("SpaceToBatchND", dict(block_shape=[2, 2], paddings=[[-1, 1], [0, 0]]),
     "Paddings must be non-negative"),
    ("SpaceToBatchND", dict(block_shape=[3, 2], paddings=[[0, 0], [0, 0]]),
     "padded_shape[0]=4 is not divisible by block_shape[0]=3"),
    ("BatchToSpaceND", dict(block_shape=[2, 2], crops=[[0, 0, 0], [0, 0, 0]]),
     "crops should have shape [2, 2] instead of [2,3]"),
    ("BatchToSpaceND", dict(block_shape=[0, 2], crops=[[0, 0], [0, 0]]),
     "Product of block sizes must be positive, got 0"),
    ("BatchToSpaceND", dict(block_shape=[3, 1], crops=[[0, 0], [0, 0]]),
     "Input batch dimension (2) is not divisible by product of block sizes (3)"),
    ("BatchToSpaceND", dict(block_shape=[1, 2], crops=[[-1, 0], [0, 0]]),
     "Crops must be non-negative"),
    ("BatchToSpaceND", dict(block_shape=[1, 2], crops=[[3, 2], [0, 0]]),
     "cropped_shape[0]=-1 must be non-negative"),
    ("SpaceToBatch", dict(paddings=[[0, 0]], block_size=2),
     "paddings should have shape [2, 2] instead of [1,2]"),
    ("BatchToSpace", dict(crops=[[0, 0]], block_size=2),
     "crops should have shape [2, 2] instead of [1,2]"),
])
def test_space_batch_kernel_messages(op, kwargs, message):
    """The kernels' checks, eagerly (in a graph the shape functions catch most of these)."""
    x = np.zeros((2, 4, 4, 3), np.float32)
    kwargs = {k: np.int32(v) if k != "block_size" else v for k, v in kwargs.items()}
    with invalid(message):
        getattr(gp.raw_ops, op)(input=x, **kwargs)


@pytest.mark.parametrize("mode", ["eager", "graph"])
def test_old_space_batch_ops_need_rank_4(mode):
    for op, key in (("SpaceToBatch", "paddings"), ("BatchToSpace", "crops")):
        with invalid("Input rank should be: 4instead of: 3"):
            run_space_batch(mode, op, np.zeros((4, 4, 4), np.float32), block_size=2,
                            **{key: np.zeros((2, 2), np.int32)})


@pytest.mark.parametrize("mode", ["eager", "graph"])
def test_space_batch_sizes_are_bounded(mode):
    with raises(errors.ResourceExhaustedError, "OOM when allocating"):
        run_space_batch(mode, "SpaceToBatchND", np.zeros((2, 4, 4, 3), np.float32),
                        block_shape=np.int32([2, 2]), paddings=np.int32([[0, 2**30], [0, 2**30]]))


def build(op, *inputs, **attrs):
    """The static output shape of `op` built from placeholders ([shape]) and constants."""
    with gp.Graph().as_default():
        args = [gp.placeholder(gp.float32 if v[1] is None else v[1], v[0])
                if isinstance(v, tuple) else gp.constant(v) for v in inputs]
        keys = [a.name for a in get_op_def(op).input_arg]
        return getattr(gp.raw_ops, op)(**dict(zip(keys, args)), **attrs).shape.as_list()


def ph(shape, dtype=None):
    return (shape, dtype)


def test_space_batch_static_shapes():
    c = lambda v: np.int32(v)  # noqa: E731
    assert build("SpaceToBatchND", ph([2, 4, None, 3]), c([2, 2]), c([[0, 2], [1, 1]])) == \
        [8, 3, None, 3]
    assert build("SpaceToBatchND", ph([2, 4, 4, 3]), ph([2], gp.int32), c([[0, 0], [0, 0]])) == \
        [None, None, None, 3]
    assert build("SpaceToBatchND", ph([2, 4, 4, 3]), c([2, 2]), ph([2, 2], gp.int32)) == \
        [8, None, None, 3]
    assert build("BatchToSpaceND", ph([8, 4, None, 3]), c([2, 2]), c([[0, 2], [1, 1]])) == \
        [2, 6, None, 3]
    assert build("BatchToSpaceND", ph([None, 4, 4, 3]), c([2, 2]), c([[0, 0], [0, 0]])) == \
        [None, 8, 8, 3]
    assert build("SpaceToBatch", ph([2, 4, 4, 3]), c([[0, 2], [1, 1]]), block_size=2) == \
        [8, 3, 3, 3]
    assert build("BatchToSpace", ph([8, 4, 4, 3]), ph(None, gp.int32), block_size=2) == \
        [2, None, None, 3]


@pytest.mark.parametrize("op, inputs, message", [
    ("SpaceToBatchND", (ph([2, 4, 4, 3]), ph(None, gp.int32), np.int32([[0, 0], [0, 0]])),
     "block_shape must have rank 1."),
    ("SpaceToBatchND", (ph([2, 4, 4, 3]), ph([None], gp.int32), np.int32([[0, 0], [0, 0]])),
     "block_shape must have known size."),
    ("SpaceToBatchND", (ph([2, 4, 4, 3]), np.int32([3, 2]), np.int32([[0, 0], [0, 0]])),
     "Dimension size must be evenly divisible by 3 but is 4"),
    ("SpaceToBatchND", (ph([2, 4, 4, 3]), np.int32([0, 2]), np.int32([[0, 0], [0, 0]])),
     "block_shape must be positive"),
    ("SpaceToBatchND", (ph([2, 4, 4, 3]), np.int32([2, 2]), np.int32([[-2, 0], [0, 0]])),
     "paddings cannot be negative"),
    ("SpaceToBatchND", (ph([2, 4]), np.int32([2, 2]), np.int32([[0, 0], [0, 0]])),
     "Shape must be at least rank 3 but is rank 2"),
    ("SpaceToBatchND", (ph([2, 4, 4, 3]), np.int32([2, 2]), np.int32([[0, 0]])),
     "Dimension 0 in both shapes must be equal, but are 1 and 2. Shapes are [1,2] and [2,2]."),
    ("BatchToSpaceND", (ph([6, 4, 4, 3]), np.int32([2, 2]), np.int32([[0, 0], [0, 0]])),
     "Dimension size must be evenly divisible by 2 but is 3"),
    ("BatchToSpaceND", (ph([8, 4, 4, 3]), np.int32([2, 2]), np.int32([[-1, 0], [0, 0]])),
     "crops cannot be negative"),
    ("BatchToSpaceND", (ph([8, 4, 4, 3]), np.int32([2, 2]), np.int32([[5, 4], [0, 0]])),
     "Negative dimension size caused by subtracting 9 from 8"),
])
def test_space_batch_shape_function_messages(op, inputs, message):
    with invalid(message):
        build(op, *inputs)


# ----------------------------------------------------------------------------- space <-> depth

@SETTINGS
@given(st.integers(2, 3), st.integers(1, 2), st.integers(0, 2), st.integers(1, 2),
       st.integers(1, 3), st.sampled_from(DTYPES), st.sampled_from(["NHWC", "NCHW"]))
def test_space_to_depth_and_back_match_the_references(bs, n, h, w, c, dtype, data_format):
    x = sample(np.random.default_rng(bs), (n, h * bs, w * bs, c), dtype)
    want = ref_space_to_depth(x, bs)
    to_nchw, to_nhwc = (0, 3, 1, 2), (0, 2, 3, 1)
    nchw = data_format == "NCHW"
    y = np.asarray(gp.raw_ops.SpaceToDepth(input=x.transpose(to_nchw) if nchw else x,
                                           block_size=bs, data_format=data_format))
    np.testing.assert_array_equal(y.transpose(to_nhwc) if nchw else y, want)
    back = np.asarray(gp.raw_ops.DepthToSpace(input=y, block_size=bs, data_format=data_format))
    np.testing.assert_array_equal(back.transpose(to_nhwc) if nchw else back, x)
    np.testing.assert_array_equal(ref_depth_to_space(want, bs), x)


def test_space_depth_in_graph_and_eager(run):
    x = np.arange(2 * 4 * 6 * 3, dtype=np.float32).reshape(2, 4, 6, 3)
    y = run("SpaceToDepth", input=x, block_size=2)
    np.testing.assert_array_equal(y, ref_space_to_depth(x, 2))
    np.testing.assert_array_equal(run("DepthToSpace", input=y, block_size=2), x)


def test_space_depth_messages(run):
    x = np.zeros((2, 4, 4, 3), np.float32)
    with invalid("Input rank should be 4 instead of 3"):
        run("SpaceToDepth", input=x[0], block_size=2)
    with invalid("Image width 4 and height 4 should be divisible by block_size: 3"):
        run("SpaceToDepth", input=x, block_size=3)
    with invalid("Input rank should be: 4 instead of: 3"):
        run("DepthToSpace", input=x[0], block_size=2)
    with invalid("Input depth dimension 3 should be divisible by: 4"):
        run("DepthToSpace", input=x, block_size=2)
    with raises(errors.NotFoundError, "No registered 'SpaceToDepth' OpKernel"):
        run("SpaceToDepth", input=np.zeros((1, 1, 2, 2, 4), np.float32), block_size=2,
            data_format="NCHW_VECT_C")


def test_space_depth_static_shapes():
    assert build("SpaceToDepth", ph([2, 4, 6, 3]), block_size=2) == [2, 2, 3, 12]
    assert build("SpaceToDepth", ph([2, 3, 4, None]), block_size=2, data_format="NCHW") == \
        [2, 12, 2, None]
    assert build("SpaceToDepth", ph([2, 3, 4, 6, 4]), block_size=2,
                 data_format="NCHW_VECT_C") == [2, 12, 2, 3, 4]
    assert build("DepthToSpace", ph([2, 12, 4, None]), block_size=2, data_format="NCHW") == \
        [2, 3, 8, None]
    with invalid("Dimension size must be evenly divisible by 2 but is 5"):
        build("SpaceToDepth", ph([2, 4, 5, 3]), block_size=2)
    with invalid("Dimension size must be evenly divisible by 4 but is 6"):
        build("DepthToSpace", ph([2, 4, 6, 6]), block_size=2)
    with invalid("Shape must be rank 5 but is rank 4"):
        build("DepthToSpace", ph([2, 4, 6, 6]), block_size=2, data_format="NCHW_VECT_C")


# ----------------------------------------------------------------------------- gradients

def grad_error(op, shape, **kwargs):
    with gp.Graph().as_default():
        x = gp.placeholder(gp.float64, shape)
        y = getattr(gp.raw_ops, op)(input=x, **kwargs)
        with gp.Session():
            return gp.test.compute_gradient_error(x, shape, y, y.shape.as_list())


@pytest.mark.parametrize("op, shape, kwargs", [
    ("SpaceToBatchND", [2, 3, 4, 1], dict(block_shape=np.int32([2, 2]),
                                          paddings=np.int32([[1, 0], [0, 2]]))),
    ("BatchToSpaceND", [8, 2, 3, 1], dict(block_shape=np.int64([2, 4]),
                                          crops=np.int32([[1, 0], [0, 2]]))),
    ("SpaceToBatch", [1, 2, 4, 2], dict(paddings=np.int32([[1, 1], [0, 0]]), block_size=2)),
    ("BatchToSpace", [4, 2, 2, 1], dict(crops=np.int32([[1, 0], [0, 1]]), block_size=2)),
    ("SpaceToDepth", [1, 4, 2, 2], dict(block_size=2)),
    ("SpaceToDepth", [1, 2, 4, 2], dict(block_size=2, data_format="NCHW")),
    ("DepthToSpace", [1, 2, 1, 8], dict(block_size=2)),
])
def test_gradients_are_right(op, shape, kwargs):
    assert grad_error(op, shape, **kwargs) < 1e-8


@pytest.mark.parametrize("op, kwargs, grad_op", [
    ("SpaceToBatchND", dict(block_shape=np.int32([2, 2]), paddings=np.int32([[0, 0], [0, 0]])),
     "BatchToSpaceND"),
    ("BatchToSpaceND", dict(block_shape=np.int32([1, 1]), crops=np.int32([[0, 0], [0, 0]])),
     "SpaceToBatchND"),
    ("SpaceToBatch", dict(paddings=np.int32([[0, 0], [0, 0]]), block_size=2), "BatchToSpaceND"),
    ("BatchToSpace", dict(crops=np.int32([[0, 0], [0, 0]]), block_size=2), "SpaceToBatchND"),
    ("SpaceToDepth", dict(block_size=2), "DepthToSpace"),
    ("DepthToSpace", dict(block_size=2), "SpaceToDepth"),
])
def test_gradients_build_tfs_ops(op, kwargs, grad_op):
    with gp.Graph().as_default():
        x = gp.placeholder(gp.float32, [4, 4, 4, 4])
        y = getattr(gp.raw_ops, op)(input=x, **kwargs)
        grads = gp.gradients(y, [x])
        assert grads[0].op.type == grad_op
        assert grads[0].shape.as_list() == [4, 4, 4, 4]


def test_old_space_batch_gradients_use_an_int64_square_block():
    with gp.Graph().as_default():
        x = gp.placeholder(gp.float32, [1, 4, 4, 1])
        y = gp.raw_ops.SpaceToBatch(input=x, paddings=np.int32([[0, 0], [0, 0]]), block_size=2)
        block = gp.gradients(y, [x])[0].op.inputs[1]
        assert block.dtype == gp.int64
        np.testing.assert_array_equal(block.op.get_attr("value"), [2, 2])


# ----------------------------------------------------------------------------- GPU

@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32, np.bool_])
def test_gpu_matches_cpu(gpu, dtype):
    rng = np.random.default_rng(0)
    x = sample(rng, (2, 4, 6, 3), dtype)
    # block_shape must have a known size while building (as in TF): index inputs are constants
    compare("SpaceToBatchND", dict(input=x), block_shape=np.int32([2, 3]),
            paddings=np.int32([[1, 1], [0, 3]]))
    compare("BatchToSpaceND", dict(input=x), block_shape=np.int32([2]), crops=np.int32([[1, 2]]))
    compare("SpaceToBatch", dict(input=x, paddings=np.int32([[0, 0], [1, 1]])), block_size=2)
    compare("BatchToSpace", dict(input=np.concatenate([x, x]), crops=np.int32([[0, 1], [1, 1]])),
            block_size=2)
    for data_format in ("NHWC", "NCHW"):
        compare("SpaceToDepth", dict(input=x[:, :, :4, :2]), block_size=2,
                data_format=data_format)
        compare("DepthToSpace", dict(input=x[:, :, :, :1].repeat(4, axis=3)), block_size=2,
                data_format=data_format)


def test_every_spatial_op_passes_check_op():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 4, 4, 2))
    i32 = np.int32
    cases = [
        ("SpaceToBatchND", dict(input=x, block_shape=i32([2, 2]), paddings=i32([[0, 2], [2, 0]]))),
        ("BatchToSpaceND", dict(input=x, block_shape=i32([2]), crops=i32([[1, 2]]))),
        ("SpaceToDepth", dict(input=x), dict(block_size=2)),
        ("DepthToSpace", dict(input=x), dict(block_size=2, data_format="NCHW")),
    ]
    for op, inputs, *attrs in cases:
        gp.test.check_op(op, inputs, *attrs)


def test_rearrangements_are_permutations():
    """Every element lands exactly once: all values present, none repeated."""
    x = np.arange(2 * 8 * 6 * 4).reshape(2, 8, 6, 4)
    moved = [gp.raw_ops.SpaceToBatchND(input=x, block_shape=np.int32([2, 3]),
                                       paddings=np.int32([[0, 0]] * 2)),
             gp.raw_ops.SpaceToDepth(input=x, block_size=2, data_format="NCHW"),
             gp.raw_ops.DepthToSpace(input=x, block_size=2, data_format="NCHW")]
    for y in moved:
        assert sorted(np.asarray(y).reshape(-1)) == list(range(x.size))
