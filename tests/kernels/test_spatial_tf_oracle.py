"""TensorFlow as an oracle for the spatial and resize ops (skipped without TensorFlow): values
(the resize ops' float32 results bit for bit), kernel messages and static shapes."""

import re

import numpy as np
import pytest

import graphops as gp
from graphops.registry import errors

tf = pytest.importorskip("tensorflow")

FLAGS = [(False, False), (True, False), (False, True)]
RNG = np.random.default_rng(7)


def both(op, **kwargs):
    return (getattr(tf.raw_ops, op)(**kwargs).numpy(),
            np.asarray(getattr(gp.raw_ops, op)(**kwargs)))


@pytest.mark.parametrize("in_size, out_size", [((4, 4), (8, 8)), ((3, 7), (2, 3)),
                                               ((5, 2), (1, 1)), ((7, 13), (13, 4)),
                                               ((37, 29), (100, 301)), ((1, 1), (3, 2))])
@pytest.mark.parametrize("flags", FLAGS)
def test_resize_values_match_tensorflow(in_size, out_size, flags):
    x = RNG.standard_normal((2, *in_size, 3)).astype(np.float32)
    kw = dict(size=np.int32(out_size), align_corners=flags[0], half_pixel_centers=flags[1])
    for op in ("ResizeBilinear", "ResizeNearestNeighbor"):
        theirs, ours = both(op, images=x, **kw)
        assert ours.dtype == theirs.dtype
        np.testing.assert_array_equal(ours, theirs)
    g = RNG.standard_normal((2, *out_size, 3)).astype(np.float32)
    flag_kw = dict(align_corners=flags[0], half_pixel_centers=flags[1])
    theirs, ours = both("ResizeBilinearGrad", grads=g, original_image=x, **flag_kw)
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)
    theirs, ours = both("ResizeNearestNeighborGrad", grads=g, size=np.int32(in_size), **flag_kw)
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16, np.uint16, np.int32, np.int64,
                                   np.float16, np.float64])
def test_resize_dtypes_match_tensorflow(dtype):
    x = (RNG.standard_normal((1, 5, 3, 2)) * 50).astype(dtype)
    for flags in FLAGS:
        kw = dict(size=np.int32([7, 2]), align_corners=flags[0], half_pixel_centers=flags[1])
        for op in ("ResizeBilinear", "ResizeNearestNeighbor"):
            theirs, ours = both(op, images=x, **kw)
            assert ours.dtype == theirs.dtype
            np.testing.assert_array_equal(ours, theirs)


def test_spatial_values_match_tensorflow():
    x = RNG.standard_normal((2, 4, 6, 3)).astype(np.float32)
    y = RNG.standard_normal((12, 2, 3, 2)).astype(np.float32)
    cases = [
        ("SpaceToBatchND", dict(input=x, block_shape=np.int32([2, 3]),
                                paddings=np.int32([[1, 1], [0, 3]]))),
        ("SpaceToBatchND", dict(input=x, block_shape=np.int64([1, 2, 3]),
                                paddings=np.int64([[0, 0], [1, 1], [0, 0]]))),
        ("BatchToSpaceND", dict(input=y, block_shape=np.int32([2, 3]),
                                crops=np.int32([[1, 0], [2, 3]]))),
        ("BatchToSpaceND", dict(input=y, block_shape=np.int32([4]), crops=np.int32([[1, 2]]))),
        ("SpaceToBatch", dict(input=x, paddings=np.int32([[0, 2], [1, 1]]), block_size=2)),
        ("BatchToSpace", dict(input=y, crops=np.int32([[0, 1], [1, 1]]), block_size=2)),
        ("SpaceToDepth", dict(input=x, block_size=2)),
        ("DepthToSpace", dict(input=RNG.standard_normal((2, 3, 4, 12)), block_size=2)),
        ("MirrorPad", dict(input=x, paddings=np.int32([[1, 0], [3, 2], [0, 5], [1, 1]]),
                           mode="REFLECT")),
        ("MirrorPad", dict(input=x, paddings=np.int32([[2, 1], [4, 3], [0, 6], [3, 3]]),
                           mode="SYMMETRIC")),
        ("MirrorPadGrad", dict(input=(x * 100).astype(np.int32),
                               paddings=np.int32([[0, 1], [2, 0], [2, 2], [1, 1]]),
                               mode="SYMMETRIC")),
        ("MirrorPadGrad", dict(input=x, paddings=np.int32([[0, 0], [1, 1], [2, 1], [0, 1]]),
                               mode="REFLECT")),
        ("PadV2", dict(input=x, paddings=np.int32([[0, 1], [2, 0], [2, 2], [1, 1]]),
                       constant_values=np.float32(-3))),
    ]
    for op, kwargs in cases:
        theirs, ours = both(op, **kwargs)
        np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-6, err_msg=op)


def tf_message(op, kwargs):
    with pytest.raises(tf.errors.OpError) as info:
        getattr(tf.raw_ops, op)(**kwargs)
    text = info.value.message
    text = re.sub(r"^\{\{function_node [^}]*\}\} ", "", text)
    return re.sub(r" \[Op:.*$", "", text, flags=re.S).strip()


X = np.zeros((2, 4, 4, 3), np.float32)
I32 = np.int32
KERNEL_ERRORS = [
    ("SpaceToBatchND", dict(input=X, block_shape=I32([[2]]), paddings=I32([[0, 0]]))),
    ("SpaceToBatchND", dict(input=X, block_shape=I32([2, 2]), paddings=I32([[0, 0]]))),
    ("SpaceToBatchND", dict(input=X[0, 0], block_shape=I32([2, 2]), paddings=I32([[0, 0]] * 2))),
    ("SpaceToBatchND", dict(input=X, block_shape=I32([-1, 2]), paddings=I32([[0, 0]] * 2))),
    ("SpaceToBatchND", dict(input=X, block_shape=I32([2, 2]), paddings=I32([[-1, 1], [0, 0]]))),
    ("SpaceToBatchND", dict(input=X, block_shape=I32([3, 2]), paddings=I32([[0, 0]] * 2))),
    ("BatchToSpaceND", dict(input=X, block_shape=I32([0, 2]), crops=I32([[0, 0]] * 2))),
    ("BatchToSpaceND", dict(input=X, block_shape=I32([1, 2]), crops=I32([[-1, 0], [0, 0]]))),
    ("BatchToSpaceND", dict(input=X, block_shape=I32([3, 1]), crops=I32([[0, 0]] * 2))),
    ("BatchToSpaceND", dict(input=np.zeros((4, 2, 2, 1), np.float32), block_shape=I32([2, 2]),
                            crops=I32([[3, 2], [0, 0]]))),
    ("SpaceToBatch", dict(input=X[0], paddings=I32([[0, 0]] * 2), block_size=2)),
    ("BatchToSpace", dict(input=X, crops=I32([[0, 0]]), block_size=2)),
    ("SpaceToDepth", dict(input=X[0], block_size=2)),
    ("SpaceToDepth", dict(input=X, block_size=3)),
    ("DepthToSpace", dict(input=X[0], block_size=2)),
    ("DepthToSpace", dict(input=X, block_size=2)),
    ("PadV2", dict(input=X[0, 0], paddings=I32([[1, 1], [0, 0]]), constant_values=X[0, 0, 0, :2])),
    ("PadV2", dict(input=X[0, 0], paddings=I32([[1, 1]]), constant_values=np.float32(1))),
    ("MirrorPad", dict(input=X[0, 0], paddings=I32([[4, 0], [0, 0]]), mode="REFLECT")),
    ("MirrorPad", dict(input=X[0, 0], paddings=I32([[0, 5], [0, 0]]), mode="SYMMETRIC")),
    ("MirrorPad", dict(input=X[0, 0], paddings=I32([[1, 1]]), mode="SYMMETRIC")),
    ("MirrorPad", dict(input=X[0, 0], paddings=I32([[-1, 0], [0, 0]]), mode="SYMMETRIC")),
    ("MirrorPadGrad", dict(input=X[0, 0], paddings=I32([[1, 1], [1, 1]]), mode="REFLECT")),
    ("MirrorPadGrad", dict(input=X[0, 0], paddings=I32([[2, 2], [0, 0]]), mode="REFLECT")),
    ("MirrorPadGrad", dict(input=X[0, 0], paddings=I32([[1, 1]]), mode="REFLECT")),
    ("ResizeBilinear", dict(images=X, size=I32([3, 3, 3]))),
    ("ResizeBilinear", dict(images=X[0], size=I32([3, 3]))),
    ("ResizeNearestNeighbor", dict(images=X, size=I32([0, 3]))),
    ("ResizeNearestNeighbor", dict(images=X, size=I32([3, 3]), align_corners=True,
                                   half_pixel_centers=True)),
    ("ResizeBilinearGrad", dict(grads=X, original_image=np.zeros((1, 0, 2, 1), np.float32))),
    ("ResizeBilinearGrad", dict(grads=X[0], original_image=X)),
    ("ResizeNearestNeighborGrad", dict(grads=X, size=I32([-1, 2]))),
    ("ResizeNearestNeighborGrad", dict(grads=X, size=I32([[2, 2]]))),
]


@pytest.mark.parametrize("op, kwargs", KERNEL_ERRORS, ids=lambda v: v if isinstance(v, str)
                         else "")
def test_kernel_messages_match_tensorflow(op, kwargs):
    message = tf_message(op, kwargs)
    with pytest.raises(errors.OpError) as info:
        getattr(gp.raw_ops, op)(**kwargs)
    assert message in info.value.message


def tf_static_shape(op, inputs, attrs):
    with tf.compat.v1.Graph().as_default():
        args = {k: tf.compat.v1.placeholder(v[1], v[0]) if isinstance(v, tuple)
                else tf.constant(v) for k, v in inputs.items()}
        shape = getattr(tf.raw_ops, op)(**args, **attrs).shape
        return None if shape.rank is None else shape.as_list()


def our_static_shape(op, inputs, attrs):
    with gp.Graph().as_default():
        args = {k: gp.placeholder(gp.as_dtype(v[1]), v[0]) if isinstance(v, tuple)
                else gp.constant(v) for k, v in inputs.items()}
        shape = getattr(gp.raw_ops, op)(**args, **attrs).shape
        return None if shape.rank is None else shape.as_list()


F, I = np.float32, np.int32
STATIC = [
    ("SpaceToBatchND", dict(input=([2, 4, None, 3], F), block_shape=I([2, 2]),
                            paddings=I([[0, 2], [1, 1]])), {}),
    ("SpaceToBatchND", dict(input=([2, 4, 4, 3], F), block_shape=([2], I),
                            paddings=I([[0, 0], [0, 0]])), {}),
    ("SpaceToBatchND", dict(input=(None, F), block_shape=I([2, 2]),
                            paddings=I([[0, 0], [0, 0]])), {}),
    ("BatchToSpaceND", dict(input=([None, 4, 4, 3], F), block_shape=I([2, 2]),
                            crops=([2, 2], I)), {}),
    ("BatchToSpaceND", dict(input=([8, 4, None, 3], F), block_shape=I([2, 2]),
                            crops=I([[0, 2], [1, 1]])), {}),
    ("SpaceToBatch", dict(input=([2, 4, 4, 3], F), paddings=I([[0, 2], [1, 1]])),
     dict(block_size=2)),
    ("BatchToSpace", dict(input=([8, 4, 4, 3], F), crops=(None, I)), dict(block_size=2)),
    ("SpaceToDepth", dict(input=([2, 3, 4, None], F)), dict(block_size=2, data_format="NCHW")),
    ("SpaceToDepth", dict(input=([2, 3, 4, 6, 4], F)),
     dict(block_size=2, data_format="NCHW_VECT_C")),
    ("DepthToSpace", dict(input=([2, 4, None, 12], F)), dict(block_size=2)),
    ("PadV2", dict(input=([2, None], F), paddings=I([[1, 1], [0, 2]]), constant_values=F(0)), {}),
    ("MirrorPad", dict(input=([2, None], F), paddings=I([[1, 1], [0, 2]])), dict(mode="REFLECT")),
    ("MirrorPad", dict(input=(None, F), paddings=([3, 2], I)), dict(mode="REFLECT")),
    ("MirrorPadGrad", dict(input=([6, None], F), paddings=I([[1, 1], [0, 2]])),
     dict(mode="SYMMETRIC")),
    ("MirrorPadGrad", dict(input=(None, F), paddings=([2, 2], I)), dict(mode="SYMMETRIC")),
    ("ResizeBilinear", dict(images=([2, 4, None, 3], F), size=I([3, 5])), {}),
    ("ResizeNearestNeighbor", dict(images=(None, F), size=([2], I)), {}),
    ("ResizeBilinearGrad", dict(grads=([2, 4, 5, 3], F), original_image=([None, 7, None, 3], F)),
     {}),
    ("ResizeNearestNeighborGrad", dict(grads=([2, 4, 5, 3], F), size=I([7, 8])), {}),
]


@pytest.mark.parametrize("op, inputs, attrs", STATIC, ids=lambda v: v if isinstance(v, str)
                         else "")
def test_static_shapes_match_tensorflow(op, inputs, attrs):
    assert our_static_shape(op, inputs, attrs) == tf_static_shape(op, inputs, attrs)
