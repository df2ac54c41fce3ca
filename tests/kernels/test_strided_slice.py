"""StridedSlice, StridedSliceGrad and `Tensor.__getitem__`: every mask, negative strides,
partially known shapes, TF's messages, gradients.

NumPy's basic indexing (ints, slices, Ellipsis, None) has TF's slicing semantics, so it is
the independent reference: `tensor[expr]` (built as TF's `_slice_helper` builds it) must
equal `array[expr]`, and StridedSliceGrad must equal zeros with `dy` assigned at `expr`.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

import graphops as gp
from graphops.registry.op_defs.strided_slice import MASK_ATTRS as MASKS
from tests.gpu_compare import compare, values
from tests.op_runners import invalid

SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])
R = gp.raw_ops


def i32(*v):
    return np.array(v, np.int32)


@st.composite
def index_case(draw):
    """(shape, index expression) with every int index in range."""
    shape = draw(st.lists(st.integers(0, 4), min_size=1, max_size=4))
    items, dim = [], 0
    ellipsis = draw(st.booleans())
    ellipsis_at = draw(st.integers(0, len(shape)))
    bound = st.one_of(st.none(), st.integers(-6, 6))
    while dim < len(shape) and draw(st.integers(0, 4)):
        if ellipsis and len(items) == ellipsis_at:
            items.append(Ellipsis)
            ellipsis = False
            dim = len(shape) - max(0, len(shape) - dim - 1)
            continue
        kind = draw(st.sampled_from(["int", "slice", "slice", "new"]))
        if kind == "new":
            items.append(None)
        elif kind == "int" and shape[dim]:
            items.append(draw(st.integers(-shape[dim], shape[dim] - 1)))
            dim += 1
        else:
            step = draw(st.one_of(st.none(), st.sampled_from([-3, -2, -1, 1, 2, 3])))
            items.append(slice(draw(bound), draw(bound), step))
            dim += 1
    if ellipsis:
        items.append(Ellipsis)
    try:
        np.zeros(shape)[tuple(items)]
    except IndexError:                       # an int index past the Ellipsis on a 0 dim
        assume(False)
    return shape, tuple(items)


def sliced(x, expr):
    """`x[expr]` through Tensor.__getitem__ and a Session; the StridedSlice node too."""
    with gp.Graph().as_default():
        t = gp.placeholder(gp.as_dtype(x.dtype), x.shape)
        y = t[expr]
        with gp.Session() as sess:
            return sess.run(y, {t: x}), y


@SETTINGS
@given(case=index_case())
def test_getitem_matches_numpy(case):
    shape, expr = case
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    got, y = sliced(x, expr)
    want = x[expr]
    assert y.shape.dims == list(want.shape)          # the static shape is exact
    np.testing.assert_array_equal(got, want)


def spec_inputs(y):
    """A StridedSlice node's constant begin/end/strides and its masks."""
    begin, end, strides = (t.op.get_attr("value") for t in y.op.inputs[1:])
    return begin, end, strides, {m: y.op.get_attr(m) for m in MASKS}


@SETTINGS
@given(case=index_case())
def test_strided_slice_grad_places_dy_where_the_slice_read(run, case):
    shape, expr = case
    x = np.zeros(shape, np.float64)
    _, y = sliced(x.astype(np.float32), expr)
    begin, end, strides, masks = spec_inputs(y)
    dy = np.arange(1, x[expr].size + 1, dtype=np.float64).reshape(x[expr].shape)
    want = np.zeros(shape)
    want[expr] = dy
    got = run("StridedSliceGrad", shape=np.array(shape, np.int64), begin=begin.astype(np.int64),
              end=end.astype(np.int64), strides=strides.astype(np.int64), dy=dy, **masks)
    np.testing.assert_array_equal(got, want)


def test_masks_ignore_the_values_they_cover(run):
    x = np.arange(24).reshape(2, 3, 4)
    got = run("StridedSlice", input=x, begin=i32(9, 1, -9), end=i32(-9, 9, 9),
              strides=i32(-1, 1, 2), begin_mask=0b101, end_mask=0b001)
    np.testing.assert_array_equal(got, x[::-1, 1:, ::2])
    got = run("StridedSlice", input=x, begin=i32(0, 1), end=i32(0, 2), strides=i32(1, 1),
              ellipsis_mask=1, shrink_axis_mask=2)
    np.testing.assert_array_equal(got, x[..., 1])
    got = run("StridedSlice", input=x, begin=i32(1, 0, -1), end=i32(2, 0, 0),
              strides=i32(1, 1, 1), new_axis_mask=0b010, shrink_axis_mask=0b101)
    np.testing.assert_array_equal(got, x[1, None, -1])


def test_new_axis_and_ellipsis_bits_win_over_others(run):
    x = np.arange(6).reshape(2, 3)
    got = run("StridedSlice", input=x, begin=i32(0, 0), end=i32(0, 0), strides=i32(1, 1),
              new_axis_mask=1, shrink_axis_mask=1, ellipsis_mask=2)
    assert got.shape == (1, 2, 3)


@pytest.mark.parametrize("dtype", [np.bool_, np.int16, np.uint64, np.complex128, object])
def test_every_type(run, dtype):
    x = (np.arange(12).reshape(3, 4) % 5).astype(dtype)
    got = run("StridedSlice", input=x, begin=np.array([-1, 3], np.int16),
              end=np.array([0, 0], np.int16), strides=np.array([-2, -1], np.int16),
              end_mask=1, shrink_axis_mask=0)
    assert got.tolist() == x[::-2, 3:0:-1].tolist()
    grad = run("StridedSliceGrad", shape=i32(3, 4), begin=i32(1), end=i32(2), strides=i32(1),
               dy=x[1], shrink_axis_mask=1)
    assert grad.dtype == x.dtype and grad[1].tolist() == x[1].tolist()


ERRORS = [   # (kwargs, TF 2.21's message)
    (dict(begin=i32(0), end=i32(1), strides=i32(0)), "strides[0] must be non-zero"),
    (dict(begin=i32(0, 0), end=i32(1), strides=i32(1)),
     "Expected begin, end, and strides to be 1D equal size tensors, but got shapes [2], [1], "
     "and [1] instead."),
    (dict(begin=i32(0, 0), end=i32(1, 1), strides=i32(1, 1), ellipsis_mask=3),
     "Multiple ellipses in slice spec not allowed"),
    (dict(begin=i32(5), end=i32(6), strides=i32(1), shrink_axis_mask=1),
     "slice index 5 of dimension 0 out of bounds."),
    (dict(begin=i32(-4), end=i32(6), strides=i32(1), shrink_axis_mask=1),
     "slice index -1 of dimension 0 out of bounds."),
    (dict(begin=i32(1), end=i32(2), strides=i32(-1), shrink_axis_mask=1),
     "only stride 1 allowed on non-range indexing."),
    (dict(begin=i32(0, 0, 0), end=i32(1, 1, 1), strides=i32(1, 1, 1)),
     "Index out of range using input dim 2; input has only 2 dims"),
]


@pytest.mark.parametrize("kwargs, message", ERRORS, ids=[m[:30] for _, m in ERRORS])
def test_errors_at_run_time(run, kwargs, message):
    with invalid(message):
        run("StridedSlice", input=np.zeros((3, 4), np.float32), **kwargs)


@pytest.mark.parametrize("kwargs, message", ERRORS[:1] + ERRORS[2:],
                         ids=[m[:30] for _, m in ERRORS[:1] + ERRORS[2:]])
def test_errors_at_build_time(kwargs, message):
    """The same checks while building (unequal lengths fail the shapes' merge first)."""
    with gp.Graph().as_default():
        x = gp.placeholder(gp.float32, [3, 4])
        with invalid(message):
            R.StridedSlice(input=x, **kwargs)


def test_scalar_and_grad_errors(run):
    with invalid("Attempting to slice scalar input."):
        run("StridedSlice", input=np.float32(1), begin=i32(0), end=i32(1), strides=i32(1))
    grad = dict(begin=i32(0), end=i32(1), strides=i32(1), dy=np.zeros([2, 4], np.float32))
    with invalid("shape of dy was [2,4] instead of [1,4]"):
        run("StridedSliceGrad", shape=i32(3, 4), **grad)
    with invalid("shape must be 1-D, got shape.shape = [1,2]"):
        run("StridedSliceGrad", shape=np.zeros([1, 2], np.int32), **grad)
    with invalid("Dimension -3 must be >= 0"):
        run("StridedSliceGrad", shape=i32(-3, 4), **grad)


def build_shape(shape, begin, end, strides, **masks):
    with gp.Graph().as_default():
        x = gp.placeholder(gp.float32, shape)

        def spec(v):
            n = len(next(s for s in (begin, end, strides) if s is not None))
            return gp.placeholder(gp.int32, [n]) if v is None else gp.constant(v)
        return R.StridedSlice(input=x, begin=spec(begin), end=spec(end),
                              strides=spec(strides), **masks).shape.dims


def test_partially_known_shapes():
    assert build_shape([None, 5], [0, 1], [2, 4], [1, 2]) == [None, 2]
    assert build_shape(None, [0], [2], [1]) is None
    assert build_shape([6, 5], None, [2, 4], [1, 2]) == [None, None]
    assert build_shape([6, 5], None, None, [1, -1], shrink_axis_mask=1) == [None]
    assert build_shape([6, 5], None, None, [1, -1], begin_mask=2, end_mask=2,
                       shrink_axis_mask=1) == [5]
    assert build_shape([6, 5], None, None, [1, 1], new_axis_mask=1) == [1, None, 5]
    assert build_shape([6, 5], [0, 0], [0, 0], None) is None
    with gp.Graph().as_default():
        shape = R.StridedSliceGrad(shape=i32(3, -1 + 5), begin=i32(0), end=i32(1),
                                   strides=i32(1), dy=gp.placeholder(gp.float32)).shape
        assert shape.dims == [3, 4]


# ----------------------------------------------------------------------------- __getitem__

GETITEM = [   # (expression on a [4, 5, 6] tensor, begin, end, strides, masks bd/ed/el/na/sh)
    (lambda t: t[1], [1], [2], [1], (0, 0, 0, 0, 1)),
    (lambda t: t[-1, 2:], [-1, 2], [0, 0], [1, 1], (0, 2, 0, 0, 1)),
    (lambda t: t[::-2, ..., None], [0, 0, 0], [0, 0, 0], [-2, 1, 1], (1, 1, 2, 4, 0)),
    (lambda t: t[..., 1:-1:3], [0, 1], [0, -1], [1, 3], (0, 0, 1, 0, 0)),
    (lambda t: t[None, :, 3], [0, 0, 3], [0, 0, 4], [1, 1, 1], (2, 2, 0, 1, 4)),
    (lambda t: t[:], [0], [0], [1], (1, 1, 0, 0, 0)),
    (lambda t: t[()], [], [], [], (0, 0, 0, 0, 0)),
]


@pytest.mark.parametrize("index, begin, end, strides, masks", GETITEM)
def test_getitem_builds_tf_s_strided_slice(index, begin, end, strides, masks):
    with gp.Graph().as_default():
        y = index(gp.placeholder(gp.float32, [4, 5, 6]))
    assert y.op.type == "StridedSlice" and y.op.name == "strided_slice"
    got_begin, got_end, got_strides, got_masks = spec_inputs(y)
    assert got_begin.dtype == np.int32
    assert (got_begin.tolist(), got_end.tolist(), got_strides.tolist()) == (begin, end, strides)
    assert tuple(got_masks.values()) == masks


def test_getitem_with_tensor_indices():
    with gp.Graph().as_default():
        x = gp.placeholder(gp.float32, [4, 5])
        i = gp.placeholder(gp.int64, [])
        j = gp.placeholder(gp.int32, [])
        y = x[i, 3:]
        begin, end, strides = y.op.inputs[1:]
        assert [t.op.type for t in (begin, end, strides)] == ["Pack", "Pack", "Pack"]
        assert {t.dtype for t in (begin, end, strides)} == {gp.int64}
        z = x[1:j]
        assert [t.op.type for t in z.op.inputs[1:]] == ["Const", "Pack", "Pack"]
        with pytest.raises(TypeError, match="don't all match"):      # as in TF
            x[i, j:]
        with gp.Session() as sess:
            got = sess.run([y, z], {x: np.arange(20.).reshape(4, 5), i: 2, j: 3})
    assert got[0].tolist() == [13, 14] and got[1].shape == (2, 5)


@pytest.mark.parametrize("index", [1.5, "a", np.array([1, 2])])
def test_getitem_refuses_other_indices(index):
    with gp.Graph().as_default():
        x = gp.placeholder(gp.float32, [4, 5])
        with pytest.raises(TypeError, match="Only integers, slices"):
            x[index, 0]
        assert x[[1, 2]].op.get_attr("shrink_axis_mask") == 3     # a list is a tuple
        for mask in (True, np.array([True, False, True, True]),
                     gp.placeholder(gp.bool, [4])):
            with pytest.raises(TypeError, match="Boolean masks are not supported"):
                x[mask]


def test_getitem_out_of_range_fails_at_build_time_and_tensors_do_not_iterate():
    with gp.Graph().as_default():
        x = gp.placeholder(gp.float32, [4, 5])
        with invalid("slice index 4 of dimension 0 out of bounds."):
            x[4]
        with pytest.raises(TypeError, match="only iterable when eager"):
            list(x)


# ----------------------------------------------------------------------------- gradients

def test_gradients_strided_slice_and_back():
    g = gp.Graph()
    with g.as_default():
        x = gp.placeholder(gp.float64, [3, 4])
        y = x[::-1, 1::2]
        err = gp.test.compute_gradient_error(x, [3, 4], y, [3, 2])
        dy = gp.placeholder(gp.float64, [3, 2])
        grad = R.StridedSliceGrad(shape=i32(3, 4), begin=i32(0, 1), end=i32(0, 0),
                                  strides=i32(-1, 2), dy=dy, begin_mask=1, end_mask=3)
        err2 = gp.test.compute_gradient_error(dy, [3, 2], grad, [3, 4])
        unknown = gp.placeholder(gp.float64, None)
        dx, = gp.gradients(unknown[1], [unknown])
        with gp.Session() as sess:
            assert sess.run(dx, {unknown: np.ones((2, 2))}).tolist() == [[0, 0], [1, 1]]
    assert err < 1e-10 and err2 < 1e-10
    types = [op.type for op in g.get_operations()]
    assert "StridedSliceGrad" in types and types.count("StridedSlice") >= 3


@pytest.mark.parametrize("dtype", [gp.float32, gp.int64, gp.bool, gp.complex64])
def test_gpu_matches_cpu(gpu, dtype):
    rng = np.random.default_rng(5)
    x = values(rng, dtype, (3, 4, 5))
    compare("StridedSlice", {"input": x, "begin": i32(-1, 0, 1), "end": i32(0, 0, 5),
                             "strides": i32(-1, 1, 2)}, end_mask=3, new_axis_mask=2)
    compare("StridedSliceGrad", {"shape": i32(3, 4), "begin": i32(2, 0), "end": i32(0, 3),
                                 "strides": i32(-1, 1), "dy": values(rng, dtype, (2, 3))})


def test_masks_must_fit_int32_as_tf_reads_them(run):
    message = "Attr end_mask has value 4611686018427387904 out of range for an int32"
    with invalid(message):
        run("StridedSlice", input=np.ones((2, 3)), begin=np.array([0, 0]),
            end=np.array([1, 3]), strides=np.array([1, 1]), end_mask=2**62)
    with gp.Graph().as_default(), invalid(message):
        gp.raw_ops.StridedSlice(input=gp.placeholder(gp.float32, [2, 3]), begin=[0, 0],
                                end=[1, 3], strides=[1, 1], end_mask=2**62)
