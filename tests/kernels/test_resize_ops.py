"""ResizeBilinear, ResizeNearestNeighbor and their gradients: values against slow
pixel-by-pixel references of TF's coordinate rules (every align_corners / half_pixel_centers
combination), properties any resize must have, static shapes, TF's messages, gradients and
the ops they build, GPU."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import graphops as gp
from graphops.registry import errors
from tests.gpu_compare import compare
from tests.op_runners import invalid, raises

SETTINGS = settings(max_examples=20, deadline=None)
FLAGS = [(False, False), (True, False), (False, True)]    # (align_corners, half_pixel_centers)
F32 = np.float32


# ----------------------------------------------------------------------------- references

def scale(in_size, out_size, align_corners):
    if align_corners and out_size > 1:
        return F32(in_size - 1) / F32(out_size - 1)
    return F32(in_size) / F32(out_size)


def bilinear_source(i, in_size, out_size, align_corners, half_pixel):
    """(lower, upper, lerp) of output index i, one scalar at a time."""
    s = scale(in_size, out_size, align_corners)
    src = (F32(i) + F32(0.5)) * s - F32(0.5) if half_pixel else F32(i) * s
    low = math.floor(float(src))
    return max(low, 0), min(math.ceil(float(src)), in_size - 1), F32(src - F32(low))


def nearest_source(i, in_size, out_size, align_corners, half_pixel):
    s = scale(in_size, out_size, align_corners)
    src = float((F32(i) + F32(0.5)) * s if half_pixel else F32(i) * s)
    index = math.floor(src + 0.5) if align_corners else math.floor(src)
    index = min(index, in_size - 1)
    return max(index, 0) if half_pixel else index


def ref_bilinear(x, size, align_corners, half_pixel):
    n, h, w, c = x.shape
    out = np.zeros((n, size[0], size[1], c), F32)
    x = x.astype(F32)
    for i in range(size[0]):
        top, bottom, dy = bilinear_source(i, h, size[0], align_corners, half_pixel)
        for j in range(size[1]):
            left, right, dx = bilinear_source(j, w, size[1], align_corners, half_pixel)
            for b in range(n):
                for k in range(c):
                    t = x[b, top, left, k] + (x[b, top, right, k] - x[b, top, left, k]) * dx
                    d = (x[b, bottom, left, k]
                         + (x[b, bottom, right, k] - x[b, bottom, left, k]) * dx)
                    out[b, i, j, k] = t + (d - t) * dy
    return out


def ref_nearest(x, size, align_corners, half_pixel):
    n, h, w, c = x.shape
    out = np.zeros((n, size[0], size[1], c), x.dtype)
    for i in range(size[0]):
        for j in range(size[1]):
            out[:, i, j, :] = x[:, nearest_source(i, h, size[0], align_corners, half_pixel),
                                nearest_source(j, w, size[1], align_corners, half_pixel), :]
    return out


def ref_bilinear_grad(g, original, align_corners, half_pixel):
    n, rh, rw, c = g.shape
    h, w = original
    out = np.zeros((n, h, w, c), np.float64)
    for i in range(rh):
        top, bottom, dy = bilinear_source(i, h, rh, align_corners, half_pixel)
        for j in range(rw):
            left, right, dx = bilinear_source(j, w, rw, align_corners, half_pixel)
            for (y, wy) in ((top, 1 - float(dy)), (bottom, float(dy))):
                for (x, wx) in ((left, 1 - float(dx)), (right, float(dx))):
                    out[:, y, x, :] += g[:, i, j, :] * wy * wx
    return out


def ref_nearest_grad(g, original, align_corners, half_pixel):
    """Sums in int64 for integer grads (the caller's cast wraps them), else float64."""
    n, rh, rw, c = g.shape
    h, w = original
    out = np.zeros((n, h, w, c), np.int64 if g.dtype.kind in "iu" else np.float64)
    for i in range(rh):
        for j in range(rw):
            out[:, nearest_source(i, h, rh, align_corners, half_pixel),
                nearest_source(j, w, rw, align_corners, half_pixel), :] += g[:, i, j, :]
    return out


# ----------------------------------------------------------------------------- values

sizes = st.tuples(st.integers(1, 6), st.integers(1, 6))


@SETTINGS
@given(st.integers(1, 2), sizes, sizes, st.integers(1, 2), st.sampled_from(FLAGS),
       st.sampled_from([np.float32, np.float64, np.float16, np.uint8, np.int16, np.int64]))
def test_resize_forward_matches_the_references(n, in_size, out_size, c, flags, dtype):
    rng = np.random.default_rng(sum(in_size) + sum(out_size))
    x = (rng.standard_normal((n, *in_size, c)) * 40).astype(dtype)
    kwargs = dict(images=x, size=np.int32(out_size), align_corners=flags[0],
                  half_pixel_centers=flags[1])
    y = np.asarray(gp.raw_ops.ResizeBilinear(**kwargs))
    assert y.dtype == np.float32
    np.testing.assert_allclose(y, ref_bilinear(x, out_size, *flags), rtol=1e-6, atol=1e-5)
    np.testing.assert_array_equal(gp.raw_ops.ResizeNearestNeighbor(**kwargs),
                                  ref_nearest(x, out_size, *flags))


@SETTINGS
@given(st.integers(1, 3), st.tuples(st.integers(1, 12), st.integers(1, 12)),
       st.tuples(st.integers(1, 40), st.integers(1, 40)), st.integers(1, 20),
       st.sampled_from(FLAGS))
def test_bilinear_loop_gives_tfs_float32_bits_as_numpy_does(n, in_size, out_size, c, flags):
    """The compiled loop rounds each step in float32 as TF's compute_lerp (and the NumPy
    path, which takes arrays the loop does not) does: the same bits as the reference."""
    from graphops.kernels.ops import image
    rng = np.random.default_rng(n + sum(in_size) + sum(out_size) + c)
    x = (rng.standard_normal((n, *in_size, c)) * 40).astype(np.float32)
    kwargs = dict(images=x, size=np.int32(out_size), align_corners=flags[0],
                  half_pixel_centers=flags[1])
    compiled = np.asarray(gp.raw_ops.ResizeBilinear(**kwargs))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(image, "compiled_cpu", lambda *args, **kw: False)
        by_numpy = np.asarray(gp.raw_ops.ResizeBilinear(**kwargs))
    np.testing.assert_array_equal(compiled, ref_bilinear(x, out_size, *flags))
    np.testing.assert_array_equal(by_numpy, compiled)


@SETTINGS
@given(st.integers(1, 2), sizes, sizes, st.sampled_from(FLAGS + [(True, True)]),
       st.sampled_from([np.float32, np.float64, np.float16, np.int32, np.uint8]))
def test_resize_gradients_match_the_references(n, in_size, out_size, flags, dtype):
    rng = np.random.default_rng(sum(in_size) * 7 + sum(out_size))
    grads = rng.standard_normal((n, *out_size, 2)).astype(np.float32)
    nearest_grads = (grads * 10).astype(dtype)
    got = np.asarray(gp.raw_ops.ResizeNearestNeighborGrad(
        grads=nearest_grads, size=np.int32(in_size), align_corners=flags[0],
        half_pixel_centers=flags[1]))
    wide = np.float64 if np.dtype(dtype).kind == "f" else np.int64
    want = ref_nearest_grad(nearest_grads.astype(wide), in_size, *flags)
    if np.dtype(dtype).kind == "f":
        tol = 1e-2 if dtype == np.float16 else 1e-5
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(got, want.astype(dtype))
    if flags == (True, True) or dtype not in (np.float32, np.float64, np.float16):
        return
    image = np.zeros((n, *in_size, 2), dtype)
    got = np.asarray(gp.raw_ops.ResizeBilinearGrad(grads=grads, original_image=image,
                                                   align_corners=flags[0],
                                                   half_pixel_centers=flags[1]))
    assert got.dtype == dtype
    tol = 2e-2 if dtype == np.float16 else 1e-5
    np.testing.assert_allclose(got, ref_bilinear_grad(grads, in_size, *flags), rtol=tol, atol=tol)


@pytest.mark.parametrize("flags", FLAGS)
def test_resize_properties(flags):
    """Same size is the identity; a constant image stays constant; a ramp stays a ramp."""
    align_corners, half_pixel = flags
    x = np.random.default_rng(0).standard_normal((2, 5, 7, 3)).astype(np.float32)
    for op in ("ResizeBilinear", "ResizeNearestNeighbor"):
        same = getattr(gp.raw_ops, op)(images=x, size=np.int32([5, 7]),
                                       align_corners=align_corners, half_pixel_centers=half_pixel)
        np.testing.assert_array_equal(same, x)
        flat = getattr(gp.raw_ops, op)(images=np.full((1, 3, 4, 1), 2.5, np.float32),
                                       size=np.int32([7, 9]), align_corners=align_corners,
                                       half_pixel_centers=half_pixel)
        np.testing.assert_allclose(flat, 2.5, rtol=1e-6)
    if align_corners:   # corners map onto corners: a ramp is sampled exactly
        ramp = np.arange(5, dtype=np.float32).reshape(1, 5, 1, 1) * np.ones((1, 1, 2, 1), F32)
        y = np.asarray(gp.raw_ops.ResizeBilinear(images=ramp, size=np.int32([9, 2]),
                                                 align_corners=True))
        np.testing.assert_allclose(y[0, :, 0, 0], np.arange(9) / 2, rtol=1e-6)


def test_nearest_neighbour_rounds_halves_up_with_align_corners():
    """roundf, not banker's rounding: 3 -> 5 samples rows 0, 0.5, 1, 1.5, 2 -> 0, 1, 1, 2, 2."""
    x = np.arange(3, dtype=np.float32).reshape(1, 3, 1, 1)
    y = gp.raw_ops.ResizeNearestNeighbor(images=x, size=np.int32([5, 1]), align_corners=True)
    np.testing.assert_array_equal(np.asarray(y).reshape(-1), [0, 1, 1, 2, 2])
    y = gp.raw_ops.ResizeNearestNeighbor(images=x, size=np.int32([5, 1]))
    np.testing.assert_array_equal(np.asarray(y).reshape(-1), [0, 0, 1, 1, 2])
    y = gp.raw_ops.ResizeNearestNeighbor(images=x, size=np.int32([5, 1]), half_pixel_centers=True)
    np.testing.assert_array_equal(np.asarray(y).reshape(-1), [0, 0, 1, 2, 2])


def test_resize_in_graph_and_eager(run):
    x = np.arange(2 * 3 * 4 * 2, dtype=np.float32).reshape(2, 3, 4, 2)
    size = np.int32([5, 3])
    for flags in FLAGS:
        kw = dict(align_corners=flags[0], half_pixel_centers=flags[1])
        np.testing.assert_allclose(run("ResizeBilinear", images=x, size=size, **kw),
                                   ref_bilinear(x, [5, 3], *flags), rtol=1e-6)
        np.testing.assert_array_equal(run("ResizeNearestNeighbor", images=x, size=size, **kw),
                                      ref_nearest(x, [5, 3], *flags))
        g = np.ones((2, 5, 3, 2), np.float32)
        np.testing.assert_allclose(run("ResizeBilinearGrad", grads=g, original_image=x, **kw),
                                   ref_bilinear_grad(g, (3, 4), *flags), rtol=1e-6)
        np.testing.assert_allclose(run("ResizeNearestNeighborGrad", grads=g,
                                       size=np.int32([3, 4]), **kw),
                                   ref_nearest_grad(g, (3, 4), *flags))


def test_empty_batches_and_bounded_sizes(run):
    empty = np.zeros((0, 2, 2, 1), np.float32)
    for op in ("ResizeBilinear", "ResizeNearestNeighbor"):
        assert run(op, images=empty, size=np.int32([3, 5])).shape == (0, 3, 5, 1)
        with raises(errors.ResourceExhaustedError, "OOM when allocating"):
            run(op, images=np.zeros((1, 2, 2, 1), np.float32), size=np.int32([2**31 - 1] * 2))
    assert run("ResizeBilinearGrad", grads=np.zeros((0, 3, 3, 1), np.float32),
               original_image=empty).shape == (0, 2, 2, 1)
    zeros = run("ResizeNearestNeighborGrad", grads=np.zeros((1, 0, 3, 1), np.float32),
                size=np.int32([2, 2]))
    np.testing.assert_array_equal(zeros, np.zeros((1, 2, 2, 1)))


def test_bilinear_grad_takes_batch_and_channels_from_grads(run):
    """As TF's kernel does (its shape function says the original image's shape)."""
    out = run("ResizeBilinearGrad", grads=np.ones((1, 3, 3, 1), np.float32),
              original_image=np.zeros((2, 2, 2, 4), np.float32))
    assert out.shape == (1, 2, 2, 1)


# ----------------------------------------------------------------------------- messages

IMAGE = np.zeros((2, 4, 4, 3), np.float32)


@pytest.mark.parametrize("op", ["ResizeBilinear", "ResizeNearestNeighbor"])
@pytest.mark.parametrize("images, size, flags, message", [
    (IMAGE, [3, 3], (True, True), "If half_pixel_centers is True, align_corners must be False."),
    (IMAGE[0], [3, 3], (False, False), "input must be 4-dimensional[4,4,3]"),
    (IMAGE, [[3, 3]], (False, False), "shape_t must be 1-dimensional[1,2]"),
    (IMAGE, [3, 3, 3], (False, False), "shape_t must have two elements[3]"),
    (IMAGE, [0, 3], (False, False), "output dimensions must be positive"),
    (IMAGE, [3, -3], (False, False), "output dimensions must be positive"),
    (np.zeros((1, 2, 2, 0), np.float32), [3, 3], (False, False),
     "image must have at least one channel"),
    (np.zeros((1, 0, 2, 1), np.float32), [3, 3], (False, False),
     "input image must be of non-zero size"),
])
def test_resize_messages(run, op, images, size, flags, message):
    with invalid(message):
        run(op, images=images, size=np.int32(size), align_corners=flags[0],
            half_pixel_centers=flags[1])


@pytest.mark.parametrize("grads, original, flags, message", [
    (np.ones((3, 3, 1), np.float32), (1, 2, 2, 1), (False, False),
     "input_grad must be 4-dimensional[3,3,1]"),
    (np.ones((1, 3, 3, 1), np.float32), (2, 2, 1), (False, False),
     "original_image must be 4-dimensional[2,2,1]"),
    (np.ones((1, 3, 3, 1), np.float32), (1, 2, 2, 1), (True, True),
     "If half_pixel_centers is True, align_corners must be False."),
    (np.ones((1, 3, 3, 1), np.float32), (1, 0, 2, 1), (False, False),
     "original dimensions must be positive"),
    (np.ones((1, 0, 3, 1), np.float32), (1, 2, 2, 1), (False, False),
     "resized dimensions must be positive"),
])
def test_resize_bilinear_grad_messages(run, grads, original, flags, message):
    with invalid(message):
        run("ResizeBilinearGrad", grads=grads, original_image=np.zeros(original, np.float32),
            align_corners=flags[0], half_pixel_centers=flags[1])


@pytest.mark.parametrize("grads, size, message", [
    (np.ones((3, 3, 1), np.float32), [2, 2], "input must be 4-dimensional[3,3,1]"),
    (np.ones((1, 3, 3, 1), np.float32), [[2, 2]], "shape_t must be 1-dimensional[1,2]"),
    (np.ones((1, 3, 3, 1), np.float32), [2, 2, 2], "shape_t must have two elements[3]"),
    (np.ones((1, 3, 3, 1), np.float32), [0, 2], "shape_t's elements must be positive"),
    (np.ones((1, 3, 3, 1), np.float32), [-1, 2], "shape_t's elements must be positive"),
])
def test_resize_nearest_neighbor_grad_messages(run, grads, size, message):
    with invalid(message):
        run("ResizeNearestNeighborGrad", grads=grads, size=np.int32(size))


def static_shape(op, first, size, **attrs):
    with gp.Graph().as_default():
        x = gp.placeholder(gp.float32, first)
        size = gp.placeholder(gp.int32, size[0]) if isinstance(size, tuple) else \
            gp.constant(np.int32(size))
        key = "grads" if op == "ResizeNearestNeighborGrad" else "images"
        return getattr(gp.raw_ops, op)(**{key: x}, size=size, **attrs).shape.as_list()


@pytest.mark.parametrize("op", ["ResizeBilinear", "ResizeNearestNeighbor",
                                "ResizeNearestNeighborGrad"])
def test_resize_static_shapes(op):
    assert static_shape(op, [2, 4, None, 3], [3, 5]) == [2, 3, 5, 3]
    assert static_shape(op, [2, 4, None, 3], ([2],)) == [2, None, None, 3]
    assert static_shape(op, None, [3, -1]) == [None, 3, None, None]
    assert static_shape(op, [2, 4, None, 3], [0, 5]) == [2, 0, 5, 3]
    with invalid("Dimension -5 must be >= 0"):
        static_shape(op, [2, 4, None, 3], [3, -5])
    with invalid("Shape must be rank 4 but is rank 3"):
        static_shape(op, [4, None, 3], [3, 5])
    with invalid("Dimension must be 2 but is 3"):
        static_shape(op, [2, 4, None, 3], [3, 5, 5])
    with invalid("Shape must be rank 1 but is rank 2"):
        static_shape(op, [2, 4, None, 3], [[3, 5]])


def test_resize_bilinear_grad_static_shape_is_the_original_images():
    with gp.Graph().as_default():
        g = gp.placeholder(gp.float32, [2, 4, 5, 3])
        for shape in ([None, 7, None, 3], [7, None, 3]):
            image = gp.placeholder(gp.float64, shape)
            out = gp.raw_ops.ResizeBilinearGrad(grads=g, original_image=image)
            assert out.shape.as_list() == shape and out.dtype == gp.float64


# ----------------------------------------------------------------------------- gradients

@pytest.mark.parametrize("flags", FLAGS)
def test_resize_gradients_against_central_differences(flags):
    kw = dict(align_corners=flags[0], half_pixel_centers=flags[1])
    with gp.Graph().as_default():
        x = gp.placeholder(gp.float64, [1, 3, 4, 2])
        nearest = gp.raw_ops.ResizeNearestNeighbor(images=x, size=np.int32([5, 3]), **kw)
        bilinear = gp.raw_ops.ResizeBilinear(images=x, size=np.int32([5, 3]), **kw)
        with gp.Session():
            assert gp.test.compute_gradient_error(x, [1, 3, 4, 2], nearest, [1, 5, 3, 2]) < 1e-8
            # the output is float32: central differences are only float32-accurate
            assert gp.test.compute_gradient_error(x, [1, 3, 4, 2], bilinear, [1, 5, 3, 2],
                                                  delta=1e-2) < 1e-3


def test_resize_gradients_build_tfs_ops():
    with gp.Graph().as_default():
        x = gp.placeholder(gp.float32, [1, 3, 4, 2])
        y = gp.raw_ops.ResizeBilinear(images=x, size=np.int32([5, 3]), half_pixel_centers=True)
        grad = gp.gradients(y, [x])[0]
        assert grad.op.type == "ResizeBilinearGrad"
        assert grad.op.get_attr("half_pixel_centers") is True
        assert grad.op.inputs[1] is x
        y = gp.raw_ops.ResizeNearestNeighbor(images=x, size=np.int32([5, 3]), align_corners=True)
        grad = gp.gradients(y, [x])[0]
        assert grad.op.type == "ResizeNearestNeighborGrad"
        assert grad.op.get_attr("align_corners") is True
        np.testing.assert_array_equal(grad.op.inputs[1].op.get_attr("value"), [3, 4])
        assert grad.shape.as_list() == [1, 3, 4, 2]
        unknown = gp.placeholder(gp.float32, [1, None, 4, 2])
        y = gp.raw_ops.ResizeNearestNeighbor(images=unknown, size=np.int32([5, 3]))
        grad = gp.gradients(y, [unknown])[0]
        with gp.Session() as sess:
            out = sess.run(grad, {unknown: np.ones((1, 3, 4, 2), np.float32)})
        assert out.shape == (1, 3, 4, 2)
        bilinear_grad = gp.raw_ops.ResizeBilinearGrad(grads=gp.placeholder(gp.float32,
                                                                           [1, 5, 3, 2]),
                                                      original_image=x)
        assert gp.gradients(bilinear_grad, [x]) == [None]
        nearest_grad = gp.raw_ops.ResizeNearestNeighborGrad(
            grads=x, size=np.int32([2, 2]))
        with pytest.raises(LookupError, match="No gradient defined"):
            gp.gradients(nearest_grad, [x])


# ----------------------------------------------------------------------------- GPU

@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64, np.uint8, np.int32])
def test_gpu_matches_cpu(gpu, dtype):
    rng = np.random.default_rng(2)
    x = (rng.standard_normal((2, 5, 7, 3)) * 30).astype(dtype)
    for align_corners, half_pixel in FLAGS:
        kw = dict(align_corners=align_corners, half_pixel_centers=half_pixel)
        compare("ResizeBilinear", dict(images=x, size=np.int32([9, 4])), **kw)
        compare("ResizeNearestNeighbor", dict(images=x, size=np.int32([3, 11])), **kw)
        compare("ResizeNearestNeighborGrad", dict(grads=x, size=np.int32([3, 11])), **kw)
        if dtype in (np.float32, np.float16, np.float64):
            compare("ResizeBilinearGrad", dict(grads=x.astype(np.float32),
                                               original_image=x[:, :3, :2]), **kw)


def test_half_types_are_computed_in_float32_and_rounded_once():
    rng = np.random.default_rng(3)
    grads = rng.standard_normal((1, 7, 5, 2)).astype(F32)
    for dtype in (gp.bfloat16.np_dtype, np.float16):
        image = np.zeros((1, 3, 4, 2), dtype)
        got = np.asarray(gp.raw_ops.ResizeBilinearGrad(grads=grads, original_image=image))
        want = np.asarray(gp.raw_ops.ResizeBilinearGrad(grads=grads,
                                                        original_image=image.astype(F32)))
        np.testing.assert_array_equal(got, want.astype(dtype))
        half_grads = grads.astype(dtype)
        got = np.asarray(gp.raw_ops.ResizeNearestNeighborGrad(grads=half_grads,
                                                              size=np.int32([3, 4])))
        want = np.asarray(gp.raw_ops.ResizeNearestNeighborGrad(grads=half_grads.astype(F32),
                                                               size=np.int32([3, 4])))
        np.testing.assert_array_equal(got, want.astype(dtype))
        x = grads.astype(dtype)
        np.testing.assert_array_equal(gp.raw_ops.ResizeBilinear(images=x, size=np.int32([3, 3])),
                                      gp.raw_ops.ResizeBilinear(images=x.astype(F32),
                                                                size=np.int32([3, 3])))
        np.testing.assert_array_equal(
            gp.raw_ops.ResizeNearestNeighbor(images=x, size=np.int32([3, 9])),
            ref_nearest(x, (3, 9), False, False))


def test_bilinear_loop_reads_strided_images_as_their_copy():
    """A strided view of the images (a slice of a larger batch, channels picked) is resized
    as its contiguous copy is: the loop reads a contiguous copy, never the view's memory."""
    x = np.random.default_rng(5).standard_normal((3, 7, 9, 6)).astype(np.float32)
    view = x[::2, 1:, ::2, ::3]
    got = np.asarray(gp.raw_ops.ResizeBilinear(images=view, size=np.int32([11, 4])))
    want = np.asarray(gp.raw_ops.ResizeBilinear(images=np.ascontiguousarray(view),
                                                size=np.int32([11, 4])))
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, ref_bilinear(view, (11, 4), False, False))
