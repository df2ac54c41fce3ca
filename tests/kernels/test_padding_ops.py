"""PadV2, MirrorPad and MirrorPadGrad (and gp.pad): values against slow element-by-element
references, static shapes, TF's messages, gradients (values and the ops they build), GPU."""

import numpy as np
import pytest
from hypothesis import given, strategies as st

import graphops as gp
from graphops.registry import errors
from tests.gpu_compare import compare
from tests.op_runners import invalid, raises
from tests.kernels.test_spatial_ops import DTYPES, SETTINGS, build, grad_error, ph, sample

# ----------------------------------------------------------------------------- references

def mirror_source(i, n, before, offset):
    """The input index a padded index `i` copies (REFLECT: offset 1, SYMMETRIC: 0)."""
    j = i - before
    if j < 0:
        return -j - 1 + offset
    if j >= n:
        return 2 * n - j - 1 - offset
    return j


def ref_mirror_pad(x, pads, offset):
    out = np.zeros([n + b + a for n, (b, a) in zip(x.shape, pads)], x.dtype)
    for index in np.ndindex(*out.shape):
        out[index] = x[tuple(mirror_source(i, n, b, offset)
                             for i, n, (b, _) in zip(index, x.shape, pads))]
    return out


def ref_mirror_pad_grad(g, pads, offset):
    shape = [n - b - a for n, (b, a) in zip(g.shape, pads)]
    out = np.zeros(shape, np.float64)
    for index in np.ndindex(*g.shape):
        out[tuple(mirror_source(i, n, b, offset) for i, n, (b, _) in zip(index, shape, pads))] \
            += g[index]
    return out


# ----------------------------------------------------------------------------- values

@st.composite
def mirror_cases(draw):
    offset = draw(st.integers(0, 1))
    shape = [draw(st.integers(1, 4)) for _ in range(draw(st.integers(0, 3)))]
    pads = [(draw(st.integers(0, n - offset)), draw(st.integers(0, n - offset))) for n in shape]
    return shape, pads, offset, draw(st.sampled_from(DTYPES[:-1]))


@SETTINGS
@given(mirror_cases())
def test_mirror_pad_and_its_gradient_match_the_references(case):
    shape, pads, offset, dtype = case
    mode = ("SYMMETRIC", "REFLECT")[offset]
    x = sample(np.random.default_rng(len(shape)), shape, dtype)
    y = np.asarray(gp.raw_ops.MirrorPad(input=x, paddings=np.int64(pads).reshape(-1, 2),
                                        mode=mode))
    np.testing.assert_array_equal(y, ref_mirror_pad(x, pads, offset))
    if any(n - b - a < 1 for n, (b, a) in zip(y.shape, pads)):
        return
    g = np.asarray(gp.raw_ops.MirrorPadGrad(input=y, paddings=np.int32(pads).reshape(-1, 2),
                                            mode=mode))
    want = ref_mirror_pad_grad(y.astype(np.float64), pads, offset)
    if dtype in (np.float16,):
        np.testing.assert_allclose(g, want, rtol=2e-3, atol=2e-2)
    elif np.dtype(dtype).kind == "f":
        np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-4)
    else:
        np.testing.assert_array_equal(g, ref_mirror_pad_grad(y, pads, offset).astype(dtype))


def test_mirror_pad_in_graph_and_eager(run):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(
        run("MirrorPad", input=x, paddings=np.int32([[1, 1], [2, 2]]), mode="REFLECT"),
        [[5, 4, 3, 4, 5, 4, 3], [2, 1, 0, 1, 2, 1, 0], [5, 4, 3, 4, 5, 4, 3],
         [2, 1, 0, 1, 2, 1, 0]])
    np.testing.assert_array_equal(
        run("MirrorPad", input=x, paddings=np.int32([[1, 1], [2, 2]]), mode="SYMMETRIC"),
        [[1, 0, 0, 1, 2, 2, 1], [1, 0, 0, 1, 2, 2, 1], [4, 3, 3, 4, 5, 5, 4],
         [4, 3, 3, 4, 5, 5, 4]])
    g = run("MirrorPadGrad", input=np.ones((5, 6), np.float32),
            paddings=np.int32([[1, 1], [2, 1]]), mode="REFLECT")
    np.testing.assert_array_equal(g, [[1, 3, 2], [3, 9, 6], [1, 3, 2]])


@pytest.mark.parametrize("op, x, paddings, mode, error, message", [
    ("MirrorPad", (2, 3), [[2, 0], [0, 0]], "REFLECT", errors.InvalidArgumentError,
     "paddings must be less than the dimension size: 2, 0 not less than 2"),
    ("MirrorPad", (2, 3), [[0, 3], [0, 0]], "SYMMETRIC", errors.InvalidArgumentError,
     "paddings must be no greater than the dimension size: 0, 3 greater than 2"),
    ("MirrorPad", (2, 3), [[-1, 0], [0, 0]], "SYMMETRIC", errors.InvalidArgumentError,
     "paddings must be non-negative: -1 0"),
    ("MirrorPad", (2, 3), [[1, 1, 1], [0, 0, 0]], "SYMMETRIC", errors.InvalidArgumentError,
     "paddings must be a matrix with 2 columns: [2,3]"),
    ("MirrorPad", (2, 3), [[1, 1]], "SYMMETRIC", errors.InvalidArgumentError,
     "The first dimension of paddings must be the rank of inputs[1,2], [2,3]"),
    ("MirrorPad", (0, 2), [[0, 0], [0, 0]], "REFLECT", errors.InvalidArgumentError,
     "paddings must be less than the dimension size: 0, 0 not less than 0"),
    ("MirrorPad", (1,) * 6, [[0, 0]] * 6, "REFLECT", errors.UnimplementedError,
     "inputs rank not in [0,5]: 6"),
    ("MirrorPadGrad", (4, 5), [[1, 1], [1, 2]], "REFLECT", errors.InvalidArgumentError,
     "paddings must be less than the output dimension size: 1, 2 not less than 2"),
    ("MirrorPadGrad", (4, 5), [[2, 2], [0, 0]], "SYMMETRIC", errors.InvalidArgumentError,
     "Total paddings must be less than the input dimension size: 4 was not less than 4"),
    ("MirrorPadGrad", (6, 5), [[4, 0], [0, 0]], "SYMMETRIC", errors.InvalidArgumentError,
     "paddings must be no greater than the output dimension size: 4, 0 greater than 2"),
    ("MirrorPadGrad", (4, 5), [[-1, 0], [0, 0]], "REFLECT", errors.InvalidArgumentError,
     "Paddings must be non-negative: -1, 0"),
    ("MirrorPadGrad", (4, 5), [[1, 1]], "REFLECT", errors.InvalidArgumentError,
     "The first dimension of paddings must be the rank of inputs[1,2] [4,5]"),
])
def test_mirror_pad_messages(run, op, x, paddings, mode, error, message):
    with raises(error, message):
        run(op, input=np.zeros(x, np.float32), paddings=np.int32(paddings), mode=mode)


def test_mirror_pad_static_shapes():
    c = np.int32
    assert build("MirrorPad", ph([2, None]), c([[1, 1], [0, 2]]), mode="SYMMETRIC") == [4, None]
    assert build("MirrorPadGrad", ph([6, None]), c([[1, 1], [0, 2]]), mode="SYMMETRIC") == \
        [4, None]
    assert build("MirrorPadGrad", ph(None), ph([2, 2], gp.int32), mode="REFLECT") == \
        [None, None]
    with invalid("Negative dimension size caused by subtracting 7 from 6"):
        build("MirrorPadGrad", ph([6, 5]), c([[4, 3], [0, 2]]), mode="SYMMETRIC")
    with invalid("Paddings must be non-negative"):
        build("MirrorPad", ph([2, 3]), c([[-1, 1], [0, 2]]), mode="REFLECT")


def test_pad_v2_fills_with_the_constant(run):
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    y = run("PadV2", input=x, paddings=np.int64([[1, 0], [0, 2]]), constant_values=np.int32(-7))
    want = np.full((3, 5), -7, np.int32)
    want[1:, :3] = x
    np.testing.assert_array_equal(y, want)
    with invalid("constant_values must be a scalar. Found: [2]"):
        run("PadV2", input=x, paddings=np.int32([[1, 0], [0, 2]]),
            constant_values=np.int32([1, 2]))
    assert build("PadV2", ph([2, None]), np.int32([[1, 1], [0, 2]]), np.float32(1)) == [4, None]


def ref_zero_pad(x, pads):
    """Zeros around ``x``, element by element."""
    out = np.zeros([n + b + a for n, (b, a) in zip(x.shape, pads)], x.dtype)
    for index in np.ndindex(*x.shape):
        out[tuple(i + b for i, (b, _) in zip(index, pads))] = x[index]
    return out


@SETTINGS
@given(st.data())
def test_spatial_zero_pads_take_the_compiled_loop_and_match_the_reference(data):
    """A Pad of only the dims between batch and channels runs the convs' compiled padding
    loop (every size here, its size floor lowered); others, and PadV2, the general path."""
    from unittest import mock
    from graphops.kernels.conv_algorithms import layout
    from graphops.kernels.ops import pad as pad_kernels

    rank = data.draw(st.integers(3, 5), "rank")
    shape = data.draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank), "shape")
    dtype = data.draw(st.sampled_from([np.float32, np.float64]), "dtype")
    pads = [[0, 0]] + [data.draw(st.lists(st.integers(0, 3), min_size=2, max_size=2))
                       for _ in range(rank - 2)] + [[0, 0]]
    outer = data.draw(st.booleans(), "pad the batch and channel dims too")
    if outer:
        pads[0], pads[-1] = [1, 0], [0, 2]
    x = np.random.default_rng(rank).standard_normal(shape).astype(dtype)
    x.flat[0] = np.nan
    calls = []

    def counted(*args):
        calls.append(args[1])
        return layout.pad_spatial(*args)

    with mock.patch.object(layout, "COMPILED_PAD_MIN_SIZE", 0), \
            mock.patch.object(pad_kernels, "pad_spatial", counted):
        with gp.Graph().as_default():
            y = gp.Session().run(gp.pad(gp.constant(x), np.int32(pads)))
    np.testing.assert_array_equal(y, ref_zero_pad(x, pads))
    assert y.dtype == dtype
    added = any(b or a for b, a in pads)
    assert len(calls) == (1 if added and not outer else 0)


def test_pad_wrapper_builds_tfs_ops():
    with gp.Graph().as_default():
        x = gp.placeholder(gp.float32, [2, 3])
        p = [[1, 1], [1, 1]]
        assert gp.pad(x, p).op.type == "Pad"
        assert gp.pad(x, p, constant_values=0.0).op.type == "Pad"
        assert gp.pad(x, p, constant_values=2.0).op.type == "PadV2"
        assert gp.pad(x, p, constant_values=gp.constant(0.0)).op.type == "PadV2"
        assert gp.pad(x, p, "reflect").op.get_attr("mode") == "REFLECT"
        assert gp.pad(x, p, "Symmetric").op.type == "MirrorPad"
        with pytest.raises(ValueError, match="Received `mode` = WRAP"):
            gp.pad(x, p, "wrap")
    np.testing.assert_array_equal(gp.pad(np.float32([1, 2]), [[1, 0]], constant_values=5),
                                  [5, 1, 2])

# ----------------------------------------------------------------------------- gradients

@pytest.mark.parametrize("op, shape, kwargs", [
    ("MirrorPad", [3, 4], dict(paddings=np.int32([[2, 1], [1, 3]]), mode="REFLECT")),
    ("MirrorPad", [3, 4], dict(paddings=np.int32([[2, 3], [0, 4]]), mode="SYMMETRIC")),
    ("MirrorPadGrad", [7, 6], dict(paddings=np.int32([[2, 1], [1, 2]]), mode="REFLECT")),
    ("PadV2", [2, 3], dict(paddings=np.int32([[1, 0], [2, 1]]), constant_values=np.float64(3))),
])
def test_gradients_are_right(op, shape, kwargs):
    assert grad_error(op, shape, **kwargs) < 1e-8


def test_gradients_build_tfs_ops():
    with gp.Graph().as_default():
        x = gp.placeholder(gp.float32, [4, 4])
        pads = np.int32([[1, 1], [0, 2]])
        y = gp.raw_ops.MirrorPad(input=x, paddings=pads, mode="REFLECT")
        grad = gp.gradients(y, [x])[0]
        assert (grad.op.type, grad.op.get_attr("mode")) == ("MirrorPadGrad", "REFLECT")
        assert grad.shape.as_list() == [4, 4]
        z = gp.raw_ops.MirrorPadGrad(input=x, paddings=pads, mode="SYMMETRIC")
        grad = gp.gradients(z, [x])[0]
        assert (grad.op.type, grad.op.get_attr("mode")) == ("MirrorPad", "SYMMETRIC")
        assert grad.shape.as_list() == [4, 4]
        value = gp.constant(np.float32(1))
        v = gp.raw_ops.PadV2(input=x, paddings=pads, constant_values=value)
        grads = gp.gradients(v, [x, value])
        assert grads[0].op.type == "Slice" and grads[1] is None   # as TF's _PadGrad


def test_mirror_pads_pass_check_op():
    x = np.random.default_rng(1).standard_normal((2, 4, 4, 2))
    paddings = np.int32([[1, 1], [0, 3], [2, 0], [0, 0]])
    gp.test.check_op("MirrorPad", dict(input=x, paddings=paddings), dict(mode="REFLECT"))
    gp.test.check_op("MirrorPadGrad", dict(input=x, paddings=np.int32([[0, 1], [1, 0], [1, 1],
                                                                        [0, 0]])),
                     dict(mode="SYMMETRIC"))
    # (PadV2 is left out: TF gives constant_values no gradient, which check_op would flag)


# ----------------------------------------------------------------------------- GPU

@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32, np.bool_])
def test_gpu_matches_cpu(gpu, dtype):
    x = sample(np.random.default_rng(0), (2, 4, 6, 3), dtype)
    for mode in ("REFLECT", "SYMMETRIC"):
        compare("MirrorPad", dict(input=x, paddings=np.int32([[1, 1], [3, 0], [0, 2], [2, 2]])),
                mode=mode)
        if dtype != np.bool_:
            compare("MirrorPadGrad", dict(input=x, paddings=np.int64([[0, 0], [1, 1], [2, 1],
                                                                      [0, 1]])), mode=mode)
    compare("PadV2", dict(input=x, paddings=np.int32([[0, 1], [1, 2], [2, 1], [0, 0]]),
                          constant_values=x.reshape(-1)[0]))


def test_mirror_pad_grad_of_half_types_rounds_once():
    g = np.random.default_rng(4).standard_normal((5, 7)).astype(np.float32)
    pads = np.int32([[2, 1], [1, 3]])
    for dtype in (gp.bfloat16.np_dtype, np.float16):
        half = g.astype(dtype)
        got = np.asarray(gp.raw_ops.MirrorPadGrad(input=half, paddings=pads, mode="SYMMETRIC"))
        want = np.asarray(gp.raw_ops.MirrorPadGrad(input=half.astype(np.float32), paddings=pads,
                                                   mode="SYMMETRIC"))
        np.testing.assert_array_equal(got, want.astype(dtype))
