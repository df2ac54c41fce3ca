"""The array plumbing ops against TensorFlow 2.21 itself (skipped without TensorFlow): kernel
values and messages, static shapes and build-time messages, the StridedSlice nodes
`tensor[expr]` builds, and the op types of the gradient graphs."""


import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import graphops as gp
from tests.kernels import test_indexing_ops as ops_tests
from tests.kernels import test_indexing_validation as checks
from tests.kernels import test_strided_slice as slice_tests
from tests.gpu_compare import values

tf = pytest.importorskip("tensorflow")
from tensorflow.python.framework import tensor_util  # noqa: E402

SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])
MASKS = slice_tests.MASKS


def tf_error(op, kwargs):
    """(class name, message) of running tf.raw_ops.`op` eagerly, without TF's decorations."""
    with pytest.raises(tf.errors.OpError) as info:
        getattr(tf.raw_ops, op)(**kwargs)
    message = info.value.message
    message = message.split("}} ", 1)[-1] if message.startswith("{{function_node") else message
    return type(info.value).__name__, message.split(" [Op:")[0]


@pytest.mark.parametrize("op, kwargs, error, message", checks.ERROR_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(checks.ERROR_CASES)])
def test_kernel_messages_are_tensorflow_s(op, kwargs, error, message):
    name, theirs = tf_error(op, kwargs)
    assert name == error.__name__
    assert theirs.startswith(message)


@pytest.mark.parametrize("kwargs, message", slice_tests.ERRORS,
                         ids=[m[:30] for _, m in slice_tests.ERRORS])
def test_strided_slice_messages_are_tensorflow_s(kwargs, message):
    assert tf_error("StridedSlice", dict(input=np.zeros((3, 4), np.float32), **kwargs)) == \
        ("InvalidArgumentError", message)


def _tf_build(op, kwargs):
    """Builds tf.raw_ops.`op` in a TF1 graph (P specs placeholders, arrays constants)."""
    def make(v):
        if isinstance(v, checks.P):
            return tf.compat.v1.placeholder(tf.as_dtype(v.dtype), v.shape)
        return tf.constant(v)

    with tf.Graph().as_default():
        args = {k: ([make(x) for x in v] if isinstance(v, list) else
                    make(v) if isinstance(v, (checks.P, np.ndarray, np.generic)) else v)
                for k, v in kwargs.items()}
        out = getattr(tf.raw_ops, op)(**args)
        return out if isinstance(out, list) else [out]


@pytest.mark.parametrize("op, kwargs, expected", checks.SHAPE_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(checks.SHAPE_CASES)])
def test_static_shapes_are_tensorflow_s(op, kwargs, expected):
    theirs = [t.shape.as_list() if t.shape.rank is not None else None
              for t in _tf_build(op, kwargs)]
    assert theirs == expected


@pytest.mark.parametrize("op, kwargs, message", checks.SHAPE_ERRORS,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(checks.SHAPE_ERRORS)])
def test_build_time_messages_are_tensorflow_s(op, kwargs, message):
    with pytest.raises(ValueError) as info:
        _tf_build(op, kwargs)
    assert message in str(info.value)


@pytest.mark.parametrize("dtype", [gp.float32, gp.float16, gp.int32, gp.bool, gp.complex64])
def test_values_are_tensorflow_s(dtype):
    rng = np.random.default_rng(11)
    for op, inputs, attrs in ops_tests.gpu_cases(rng, dtype):
        if op == "Where" and dtype == gp.bool:
            inputs = {"condition": rng.random((3, 4)) < 0.5}
        ours = getattr(gp.raw_ops, op)(**inputs, **attrs)
        theirs = getattr(tf.raw_ops, op)(**inputs, **attrs)
        ours, theirs = (x if isinstance(x, list) else [x] for x in (ours, theirs))
        for a, b in zip(ours, theirs):
            np.testing.assert_array_equal(a, b.numpy(), err_msg=op)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.complex64])
def test_sums_are_tensorflow_s(dtype):
    rng = np.random.default_rng(2)
    cases = [("ScatterNd", dict(indices=np.array([[1, 0], [1, 0], [3, 1]], np.int64),
                                updates=values(rng, dtype, (3, 2)),
                                shape=np.array([5, 2, 2], np.int64))),
             ("UnsortedSegmentSum", dict(data=values(rng, dtype, (5, 2)),
                                         segment_ids=np.array([0, 2, -1, 2, 2], np.int32),
                                         num_segments=np.int64(4))),
             ("Cumsum", dict(x=values(rng, dtype, (3, 4)), axis=np.int32(0),
                             exclusive=True, reverse=True))]
    for op, kwargs in cases:
        np.testing.assert_allclose(getattr(gp.raw_ops, op)(**kwargs),
                                   getattr(tf.raw_ops, op)(**kwargs).numpy(), rtol=1e-6)


# ----------------------------------------------------------------------------- __getitem__

def _slice_node(tensor_op):
    """(begin, end, strides values, masks) of a TF or graphops StridedSlice node."""
    spec = []
    for t in list(tensor_op.inputs)[1:]:
        value = t.op.get_attr("value")
        value = value if isinstance(value, np.ndarray) else tensor_util.MakeNdarray(value)
        spec.append((value.dtype.name, value.tolist()))
    return spec, {m: tensor_op.get_attr(m) for m in MASKS}


@SETTINGS
@given(case=slice_tests.index_case())
def test_getitem_builds_tensorflow_s_node(case):
    shape, expr = case
    with tf.Graph().as_default():
        theirs = tf.compat.v1.placeholder(tf.float32, shape)[expr]
        their_node = _slice_node(theirs.op)
        their_shape = theirs.shape.as_list()
    with gp.Graph().as_default():
        ours = gp.placeholder(gp.float32, shape)[expr]
        assert _slice_node(ours.op) == their_node
        assert ours.shape.dims == their_shape
        assert ours.op.name == "strided_slice"


def test_getitem_with_tensor_indices_builds_tensorflow_s_inputs():
    def inputs(module, placeholder, int64):
        x = placeholder(module.float32, [4, 5])
        i = placeholder(int64, [])
        y = x[i, 1::2]
        return [(t.op.type, t.dtype.name) for t in list(y.op.inputs)[1:]], y.shape

    with tf.Graph().as_default():
        theirs, their_shape = inputs(tf, tf.compat.v1.placeholder, tf.int64)
    with gp.Graph().as_default():
        ours, our_shape = inputs(gp, gp.placeholder, gp.int64)
    assert ours == theirs
    assert their_shape.as_list() == [None]      # TF folds the packed strides: we do not
    assert our_shape.rank is None


# ----------------------------------------------------------------------------- gradients

def _gradient_op_types(module, make, shape, placeholder, gradients):
    """The op types TF's or our gradient graph of y = make(x) holds (IndexedSlices made
    dense as TF does when they are used)."""
    g = module.Graph()
    with g.as_default():
        x = placeholder(module.float64, shape)
        y = make(module, x)
        dx, = gradients(y, [x])
        if hasattr(dx, "values") and hasattr(dx, "indices"):
            dx = module.convert_to_tensor(dx)
    return {op.type for op in g.get_operations() if op.name.startswith("gradients")}


GRADIENT_CASES = [   # (name, input shape, y = make(module, x) built with its raw ops)
    ("StridedSlice", [3, 4], lambda m, x: x[::-1, 1]),
    ("GatherV2-axis0", [5, 3], lambda m, x: m.raw_ops.GatherV2(
        params=x, indices=np.array([1, 1, 4], np.int32), axis=np.int32(0))),
    ("GatherV2-axis1-batch", [3, 5, 2], lambda m, x: m.raw_ops.GatherV2(
        params=x, indices=np.array([[1, 1], [4, 0], [2, 2]], np.int32), axis=np.int32(1),
        batch_dims=1)),
    ("Gather", [5, 3], lambda m, x: m.raw_ops.Gather(params=x, indices=np.array([1, 4]))),
    ("GatherNd", [3, 4], lambda m, x: m.raw_ops.GatherNd(params=x,
                                                         indices=np.array([[1, 2], [0, 2]]))),
    ("GatherNd-rows", [3, 4], lambda m, x: m.raw_ops.GatherNd(params=x,
                                                              indices=np.array([[1], [0]]))),
    ("ScatterNd", [3, 2], lambda m, x: m.raw_ops.ScatterNd(
        indices=np.array([[1], [1], [3]], np.int32), updates=x,
        shape=np.array([4, 2], np.int32))),
    ("SplitV", [3, 4], lambda m, x: m.raw_ops.SplitV(
        value=x, size_splits=np.array([1, 3]), axis=np.int32(1), num_split=2)[1]),
    ("Unpack", [3, 4], lambda m, x: m.raw_ops.Unpack(value=x, num=3)[0]),
    ("Select", [3, 2], lambda m, x: m.raw_ops.Select(condition=np.array([True, False, True]),
                                                     x=x, y=np.ones((3, 2)))),
    ("ReverseV2", [3, 4], lambda m, x: m.raw_ops.ReverseV2(tensor=x,
                                                           axis=np.array([1], np.int32))),
    ("Cumsum", [3, 4], lambda m, x: m.raw_ops.Cumsum(x=x, axis=np.int32(1), reverse=True)),
    ("UnsortedSegmentSum", [4, 2], lambda m, x: m.raw_ops.UnsortedSegmentSum(
        data=x, segment_ids=np.array([0, -1, 2, 0], np.int32), num_segments=np.int32(3))),
]
# Ops TF's gradients add that ours have no need of: TF's `ones_like` of the output gradient
# (Fill/Shape), IndexedSlices' Identity/colocation copies, and `x & ones_like(x)` (LogicalAnd).
TF_ONLY = {"Fill", "Shape", "Identity", "LogicalAnd", "OnesLike", "Const"}


@pytest.mark.parametrize("name, shape, make", GRADIENT_CASES, ids=[c[0] for c in GRADIENT_CASES])
def test_gradients_build_tensorflow_s_ops(name, shape, make):
    theirs = _gradient_op_types(tf, make, shape, tf.compat.v1.placeholder, tf.gradients)
    ours = _gradient_op_types(gp, make, shape, gp.placeholder, gp.gradients)
    assert theirs - TF_ONLY <= ours
