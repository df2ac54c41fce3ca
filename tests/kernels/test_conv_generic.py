"""TF's generic N-d Conv op: values against the slow conv reference (tests/reference_conv.py)
over random 2-D/3-D configs (batch_dims, groups, strides, dilations, SAME/VALID/EXPLICIT,
both layouts), static shapes, TF's messages, no gradient (as in TF), GPU kernels, and the
gp.nn.convolution wrapper. `tests/test_conv_generic_tf_oracle.py` compares with TF."""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import graphops as gp
from graphops.registry import errors
from tests.gpu_compare import compare
from tests.op_runners import P, build, invalid, raises
from tests.reference_conv import conv_forward_ref
from tests.kernels.test_conv_ops import same_pads

SETTINGS = settings(max_examples=20, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])
R = gp.raw_ops


def conv_reference(x, w, strides, padding, explicit, channels_last, dilations, batch_dims,
                   groups):
    """Folds the batch dims, splits the groups and calls the dense reference per group.
    strides/dilations: one per spatial dim; explicit: (before, after) per spatial dim."""
    rank = x.ndim - batch_dims + 1
    batch_shape = x.shape[:batch_dims]
    flat = x.reshape((math.prod(batch_shape),) + x.shape[batch_dims:])
    spatial = list(range(1, rank - 1)) if channels_last else list(range(2, rank))
    kernel = w.shape[:-2]
    if padding == "VALID":
        pads = [(0, 0)] * len(kernel)
    elif padding == "SAME":
        pads = [same_pads(flat.shape[d], k, s, dl)
                for d, k, s, dl in zip(spatial, kernel, strides, dilations)]
    else:
        pads = explicit
    axis = -1 if channels_last else 1
    parts = [conv_forward_ref(xg, wg, strides, dilations, pads, channels_last)
             for xg, wg in zip(np.split(flat, groups, axis=axis), np.split(w, groups, axis=-1))]
    y = np.concatenate(parts, axis=axis)
    return y.reshape(batch_shape + y.shape[1:])


@st.composite
def configs(draw, dtypes_=("float32", "float64"), max_groups=2, layouts=(True, False)):
    """(x, w, attrs, the reference's output) of a random valid Conv; `layouts`: the
    channels_last values to draw from."""
    spatial = draw(st.sampled_from([2, 3]))
    batch_dims = draw(st.integers(0, 2))
    groups = draw(st.integers(1, max_groups))
    channels_last = draw(st.sampled_from(layouts))
    padding = draw(st.sampled_from(["VALID", "SAME", "EXPLICIT"] if spatial == 2
                                   else ["VALID", "SAME"]))
    kernel = draw(st.lists(st.integers(1, 3), min_size=spatial, max_size=spatial))
    strides = draw(st.lists(st.integers(1, 2), min_size=spatial, max_size=spatial))
    dilations = draw(st.lists(st.integers(1, 2), min_size=spatial, max_size=spatial))
    explicit = [tuple(draw(st.lists(st.integers(0, 2), min_size=2, max_size=2)))
                for _ in range(spatial)] if padding == "EXPLICIT" else None
    sizes = []
    for i, (k, d) in enumerate(zip(kernel, dilations)):
        pad = sum(explicit[i]) if explicit else 0
        low = max(1, (k - 1) * d + 1 - pad) if padding != "SAME" else 1
        sizes.append(draw(st.integers(low, low + 3)))
    in_per_group, out_per_group = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    in_depth = in_per_group * groups
    batch = draw(st.lists(st.integers(1, 2), min_size=batch_dims, max_size=batch_dims))
    x_shape = [*batch, *sizes, in_depth] if channels_last else [*batch, in_depth, *sizes]
    dtype = draw(st.sampled_from(dtypes_))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 16)))
    x = rng.standard_normal(x_shape).astype(dtype)
    w = rng.standard_normal([*kernel, in_per_group, out_per_group * groups]).astype(dtype)
    full = [1, *strides, 1] if channels_last else [1, 1, *strides]
    full_dil = [1, *dilations, 1] if channels_last else [1, 1, *dilations]
    attrs = {"strides": full, "padding": padding, "dilations": full_dil,
             "data_format": "CHANNELS_LAST" if channels_last else "CHANNELS_FIRST",
             "batch_dims": batch_dims, "groups": groups}
    if explicit:
        pairs = [(0, 0), *explicit, (0, 0)] if channels_last else [(0, 0), (0, 0), *explicit]
        attrs["explicit_paddings"] = [p for pair in pairs for p in pair]
    reference = conv_reference(x.astype(np.float64), w.astype(np.float64), strides, padding,
                               explicit, channels_last, dilations, batch_dims, groups)
    return x, w, attrs, reference


@SETTINGS
@given(config=configs())
def test_conv_matches_the_reference(run, config):
    x, w, attrs, reference = config
    got = run("Conv", input=x, filter=w, **attrs)
    assert got.dtype == x.dtype and got.shape == reference.shape
    scale = max(1.0, np.abs(reference).max(initial=0))
    tol = 1e-4 if x.dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, reference, rtol=0, atol=tol * scale)


@settings(max_examples=10, deadline=None)
@given(config=configs(dtypes_=("float16", "bfloat16", "int32")))
def test_conv_other_types(config):
    x, w, attrs, reference = config
    if x.dtype.kind == "i":     # the reference (of the cast x, w) is linear in each
        x, w, reference = x * 3, w * 3, reference * 9
    got = R.Conv(input=x, filter=w, **attrs)
    assert got.dtype == x.dtype and got.shape == reference.shape
    if x.dtype.kind == "i":
        np.testing.assert_array_equal(got, reference.astype(x.dtype))
    else:
        scale = max(1.0, np.abs(reference).max(initial=0))
        np.testing.assert_allclose(got.astype(np.float64), reference, rtol=0, atol=2e-2 * scale)


def test_conv_is_conv2d_and_conv3d_with_batch_dims_folded():
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((2, 3, 6, 5, 4)), rng.standard_normal((3, 2, 2, 6))
    got = R.Conv(input=x, filter=w, strides=[1, 2, 1, 1], padding="SAME", batch_dims=2,
                 groups=2)
    want = R.Conv2D(input=x.reshape(6, 6, 5, 4), filter=w, strides=[1, 2, 1, 1],
                    padding="SAME")
    np.testing.assert_array_equal(got, np.asarray(want).reshape(2, 3, 3, 5, 6))
    x, w = rng.standard_normal((2, 4, 5, 5, 5)), rng.standard_normal((2, 2, 2, 4, 3))
    got = R.Conv(input=x, filter=w, strides=[1, 1, 2, 1, 1], padding="VALID",
                 data_format="CHANNELS_FIRST", dilations=[1, 1, 1, 2, 1])
    want = R.Conv3D(input=x, filter=w, strides=[1, 1, 2, 1, 1], padding="VALID",
                    data_format="NCDHW", dilations=[1, 1, 1, 2, 1])
    np.testing.assert_array_equal(got, want)


def test_batch_dims_zero_is_an_unbatched_conv(run):
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal((5, 5, 2)), rng.standard_normal((3, 3, 2, 4))
    got = run("Conv", input=x, filter=w, strides=[1, 1, 1, 1], padding="VALID", batch_dims=0)
    np.testing.assert_allclose(got, conv_reference(x[None], w, [1, 1], "VALID", None, True,
                                                   [1, 1], 1, 1)[0], atol=1e-12)


def test_empty_input_gives_zeros(run):
    got = run("Conv", input=np.zeros((0, 3, 5, 5, 2)), filter=np.ones((3, 3, 2, 4)),
              strides=[1, 1, 1, 1], padding="SAME", batch_dims=2)
    assert got.shape == (0, 3, 5, 5, 4)
    got = run("Conv", input=np.zeros((1, 2, 2, 2)), filter=np.ones((3, 3, 2, 4)),
              strides=[1, 1, 1, 1], padding="VALID")
    assert got.shape == (1, 0, 0, 4)


# ----------------------------------------------------------------------------- messages

X4, W4 = np.ones((1, 5, 5, 2)), np.ones((3, 3, 2, 4))
S4 = [1, 1, 1, 1]


@pytest.mark.parametrize("x, w, attrs, message", [
    (X4, W4, {"batch_dims": -1}, "Batch dims must be non-negative."),
    (X4, W4, {"batch_dims": 0}, "Sliding window strides field must specify 5 dimensions"),
    (X4, W4, {"batch_dims": 0, "strides": [1] * 5},
     "Input tensor rank must be the same as filter rank."),
    (X4, W4, {"batch_dims": 2}, "The input must have 2 or 3 spatial dimensions but got 1"),
    (np.ones((1, 5, 2)), W4, {}, "The input must have 2 or 3 spatial dimensions but got 1"),
    (X4, np.ones((3, 3, 2, 0)), {},
     "filter must not have zero elements (i.e. all dimensions must be non-zero)"),
    (X4, np.ones((3, 3, 4)), {}, "The filter must be rank 4 or 5 but got 3"),
    (X4, np.ones((1, 3, 3, 2, 4)), {}, "Input tensor rank must be the same as filter rank."),
    (X4, W4, {"strides": [1, 1, 1]}, "Sliding window strides field must specify 4 dimensions"),
    (X4, W4, {"strides": [2, 1, 1, 1]},
     "Current implementation does not support strides in the batch and depth dimensions."),
    (X4, W4, {"strides": [1, 0, 1, 1]}, "Spatial strides should be larger than 0."),
    (X4, W4, {"dilations": [1, 2, 2]}, "Dilation rates field must specify4dimensions"),
    (X4, W4, {"dilations": [1, 1, 1, 2]},
     "Current implementation does not support dilation rates in the batch and depth "
     "dimensions."),
    (X4, W4, {"dilations": [1, 0, 1, 1]}, "Dilated rates should be larger than 0."),
    (X4, W4, {"padding": "EXPLICIT", "explicit_paddings": [0, 0, 1, 1]},
     "explicit_paddings attribute must contain 8 values, but got: 4"),
    (X4, W4, {"padding": "EXPLICIT", "explicit_paddings": [1, 0, 0, 0, 0, 0, 0, 0]},
     "Nonzero explicit padding in the batch or depth dimensions is not supported"),
    (X4, W4, {"padding": "EXPLICIT", "explicit_paddings": [0, 0, -1, 0, 0, 0, 0, 0]},
     "All elements of explicit_paddings must be nonnegative"),
    (X4, W4, {"explicit_paddings": [0] * 8},
     "explicit_paddings attribute must be empty if the padding attribute is not EXPLICIT"),
    (np.ones((1, 4, 4, 4, 2)), np.ones((1, 1, 1, 2, 2)),
     {"strides": [1] * 5, "padding": "EXPLICIT", "explicit_paddings": [0] * 10},
     "Explicit padding not supported for 3D Convolution"),
    (np.ones((1, 5, 5, 4)), W4, {}, "Input depth must be equal to filter depth: 4 vs 2"),
    (np.ones((1, 5, 5, 6)), W4, {"groups": 2},
     "Input depth divided by filter input depth does not match with groups parameter (2)"),
    (np.ones((1, 5, 5, 6)), np.ones((3, 3, 2, 4)), {"groups": 3},
     "Number of groups should divide output depth"),
    (X4, W4, {"groups": 0}, "Groups attribute should be a positive integer"),
])
def test_kernel_messages(run, x, w, attrs, message):
    attrs = {"strides": S4, "padding": "VALID", **attrs}
    with invalid(message):
        run("Conv", input=x, filter=w, **attrs)


def _static(x_shape, w_shape, **attrs):
    attrs = {"strides": S4, "padding": "VALID", **attrs}
    shape = build("Conv", input=P(x_shape), filter=P(w_shape), **attrs).shape
    return None if shape.rank is None else shape.as_list()


def test_static_shapes():
    assert _static([None, 5, 5, 2], [3, 3, 2, 4]) == [None, 3, 3, 4]
    assert _static([2, None, 5, 5, 2], [3, 3, 2, 4], batch_dims=2) == [2, None, 3, 3, 4]
    assert _static([5, 5, 2], [3, 3, 2, 4], batch_dims=0) == [3, 3, 4]
    assert _static([1, 2, None, 5, 5], [3, 3, 3, 2, 4], strides=[1] * 5, padding="SAME",
                   data_format="CHANNELS_FIRST") == [1, 4, None, 5, 5]
    assert _static([1, 5, 5, 2], [None, 3, 2, 4], dilations=[1, 1, 2, 1]) == [1, None, 1, 4]
    assert _static([1, 5, 5, 2], [3, 3, 2, 4], padding="EXPLICIT",
                   explicit_paddings=[0, 0, 1, 2, 3, 0, 0, 0], strides=[1, 2, 1, 1]) \
        == [1, 3, 6, 4]
    assert _static(None, [3, 3, 2, 4], batch_dims=-1) is None      # unknown rank: no checks
    assert _static([None, None, None, None], None) is None


@pytest.mark.parametrize("x_shape, w_shape, attrs, message", [
    ([1, 5, 5], [3, 3, 2, 4], {},
     "Input tensor must be rank 4 or 5, excluding extra batch dimensions, but got: 3"),
    ([1, 5, 5, 2], [3, 3, 4], {"strides": [1, 1, 1]},
     "Filter tensor must be rank 4 or 5, but got: 4"),
    ([1, 5, 5, 2], [3, 3, 2, 4], {"dilations": [1, 2, 1]},
     "Conv requires the dilation attribute to contain 4 values, but got: 3"),
    ([1, 5, 5, 2], [3, 3, 2, 4], {"strides": [1, 1, 1]},
     "Stride attribute should contain 4 values, but got: 3"),
    ([1, 5, 5, 4], [3, 3, 3, 4], {"groups": 3}, "Number of groups should divide input depth"),
    ([1, 5, 5, 4], [3, 3, 0, 4], {"groups": 2}, "Depth of filter must not be 0"),
    ([1, 5, 5, 6], [3, 3, 4, 4], {"groups": 2},
     "Depth of input (6) is not a multiple of input depth of filter (4)"),
    ([1, 5, 5, 4], [3, 3, 2, 4], {},
     "Input depth divided by filter input depth does not match with groups parameter (1)"),
    ([1, 5, 5, 2], [6, 3, 2, 4], {}, "Negative dimension size caused by subtracting 6 from 5"),
    ([1, 5, 5, 2], [3, 3, 2, 4], {"strides": [1, 0, 1, 1]}, "Stride must be > 0, but got 0"),
    ([1, 5, 5, 2], [3, 3, 2, 4], {"strides": [2, 1, 1, 1]},    # the kernel's, at build time
     "Current implementation does not support strides in the batch and depth dimensions."),
])
def test_shape_function_messages(x_shape, w_shape, attrs, message):
    with invalid(message):
        _static(x_shape, w_shape, **attrs)


def test_conv_has_no_gradient_as_in_tf():
    with gp.Graph().as_default():
        x = gp.constant(X4)
        y = R.Conv(input=x, filter=gp.constant(W4), strides=S4, padding="VALID")
        with pytest.raises(LookupError):
            gp.gradients(y, [x])


def test_huge_output_is_refused_before_allocating():
    with raises(errors.ResourceExhaustedError, "OOM"):
        R.Conv(input=np.ones((1, 1, 1, 1), np.float32), filter=np.ones((1, 1, 1, 1), np.float32),
               strides=S4, padding="EXPLICIT",
               explicit_paddings=[0, 0, 2 ** 20, 2 ** 20, 2 ** 20, 2 ** 20, 0, 0])


# ----------------------------------------------------------------------------- GPU


@pytest.mark.parametrize("x_shape, w_shape, attrs", [
    ((2, 3, 5, 5, 4), (3, 3, 2, 4), {"strides": [1, 2, 1, 1], "padding": "SAME",
                                     "batch_dims": 2, "groups": 2}),
    ((1, 2, 4, 4, 4), (2, 2, 2, 2, 3), {"strides": [1] * 5, "padding": "VALID",
                                        "data_format": "CHANNELS_FIRST",
                                        "dilations": [1, 1, 2, 1, 1]}),
    ((5, 5, 2), (2, 2, 2, 3), {"strides": S4, "padding": "EXPLICIT", "batch_dims": 0,
                               "explicit_paddings": [0, 0, 1, 0, 0, 2, 0, 0]}),
])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_gpu(gpu, x_shape, w_shape, attrs, dtype):
    rng = np.random.default_rng(3)
    compare("Conv", {"input": rng.standard_normal(x_shape).astype(dtype),
                     "filter": rng.standard_normal(w_shape).astype(dtype)}, **attrs)


# ----------------------------------------------------------------------------- gp.nn.convolution


def _op_types(fn):
    with gp.Graph().as_default() as g:
        fn()
        return [o.type for o in g.get_operations() if o.type not in ("Const", "Placeholder")]


@pytest.mark.parametrize("x_shape, w_shape, kwargs, op_types", [
    ((1, 6, 2), (3, 2, 4), {"padding": "SAME", "strides": 2},
     ["ExpandDims", "ExpandDims", "Conv2D", "Squeeze"]),
    ((1, 6, 6, 2), (3, 3, 2, 4), {"padding": "VALID", "dilations": 2},
     ["SpaceToBatchND", "Conv2D", "BatchToSpaceND"]),
    ((1, 2, 6, 6), (3, 3, 2, 4), {"padding": "VALID", "data_format": "NCHW",
                                  "strides": [1, 2]}, ["Conv2D"]),
    ((1, 4, 4, 4, 2), (2, 2, 2, 2, 3), {"padding": "SAME"}, ["Conv3D"]),
    ((2, 3, 6, 6, 2), (3, 3, 2, 4), {"padding": "SAME"},
     ["Reshape", "Conv2D", "ConcatV2", "Reshape"]),
])
def test_nn_convolution(x_shape, w_shape, kwargs, op_types):
    rng = np.random.default_rng(4)
    x, w = rng.standard_normal(x_shape), rng.standard_normal(w_shape)
    assert _op_types(lambda: gp.nn.convolution(
        gp.placeholder(gp.float64, x_shape), gp.constant(w), **kwargs)) == op_types
    got = gp.nn.convolution(x, w, **kwargs)
    spatial = len(w_shape) - 2
    channels_last = not kwargs.get("data_format", "N").startswith("NC")
    strides = kwargs.get("strides", 1)
    strides = [strides] * spatial if isinstance(strides, int) else strides
    dilations = [kwargs.get("dilations", 1)] * spatial
    batch_dims = len(x_shape) - spatial - 1
    want = conv_reference(x, w, strides, kwargs["padding"], None, channels_last, dilations,
                          batch_dims, 1)
    np.testing.assert_allclose(got, want, atol=1e-12)


@pytest.mark.parametrize("x_shape, w_shape, attrs", [
    ((2, 3, 5, 5, 4), (3, 3, 2, 4), {"strides": [1, 2, 1, 1], "padding": "SAME",
                                     "batch_dims": 2, "groups": 2}),
    ((2, 4, 4, 4), (2, 2, 2, 2, 3), {"strides": [1] * 5, "padding": "VALID", "batch_dims": 0,
                                     "data_format": "CHANNELS_FIRST"}),
])
def test_op_check(x_shape, w_shape, attrs):
    """Shape function vs kernel, eager vs graph, simulated GPU vs CPU (gp.test.check_op)."""
    rng = np.random.default_rng(5)
    gp.test.check_op("Conv", {"input": rng.standard_normal(x_shape),
                              "filter": rng.standard_normal(w_shape)}, attrs)
