"""graphops against TensorFlow itself (skipped when TensorFlow is not importable).

Only configurations TF's CPU kernels support are compared: channels-last layouts, no
dilations in gradients or depthwise ops, equal depthwise strides, no grouped gradients.
TF's oneDNN path is switched off (it got a plain Conv3D case wrong, see docs/CONTRACT.md).
"""


import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

tf = pytest.importorskip("tensorflow")

import graphops as gp  # noqa: E402
from graphops.registry.conv_shapes import CONV_OPS  # noqa: E402
from tests.kernels.test_conv_ops import Case, op_kwargs, same_pads  # noqa: E402
from tests.kernels.test_conv_validation import (  # noqa: E402
    ATTR_CASES, SHAPE_CASES, _VALID_INPUTS, default_attrs, eager_error)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

TF_OPS = ("Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter", "Conv3D",
          "Conv3DBackpropInputV2", "Conv3DBackpropFilterV2", "DepthwiseConv2dNative",
          "DepthwiseConv2dNativeBackpropInput", "DepthwiseConv2dNativeBackpropFilter")


def run_tf(op, arrays, attrs):
    return getattr(tf.raw_ops, op)(**op_kwargs(op, arrays), **attrs).numpy()


@st.composite
def tf_cpu_cases(draw):
    op = draw(st.sampled_from(TF_OPS))
    info = CONV_OPS[op]
    nsp = info.num_spatial
    padding = draw(st.sampled_from(["SAME", "VALID"] + (["EXPLICIT"] if info.has_explicit
                                                        else [])))
    kernel = [draw(st.integers(1, 3)) for _ in range(nsp)]
    strides = [draw(st.integers(1, 3)) for _ in range(nsp)]
    if info.depthwise:
        strides = [strides[0]] * nsp
    dilations = [draw(st.integers(1, 2)) if op == "Conv2D" else 1 for _ in range(nsp)]
    explicit = [(draw(st.integers(0, 2)), draw(st.integers(0, 2))) for _ in range(nsp)]
    spatial = []
    for k, d, (b, a) in zip(kernel, dilations, explicit):
        pads = b + a if padding == "EXPLICIT" else 0
        low = 1 if padding == "SAME" else max(1, (k - 1) * d + 1 - pads)
        spatial.append(draw(st.integers(low, low + (3 if nsp == 3 else 5))))
    groups = draw(st.sampled_from([1, 2])) if op == "Conv2D" else 1
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    tshape = draw(st.sampled_from([np.int32, np.int64])) if op == "Conv3DBackpropInputV2" \
        else np.int32
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return Case(op, dtype, True, padding, spatial, kernel, strides, dilations, explicit,
                groups, draw(st.integers(1, 2)), rng, tshape)


def torch_conv3d(x, w, strides, padding):
    """PyTorch's Conv3D of NDHWC ``x`` and DHWIO ``w`` (SAME padding written out)."""
    torch = pytest.importorskip("torch")
    pads = [same_pads(n, k, s, 1) if padding == "SAME" else (0, 0)
            for n, k, s in zip(x.shape[1:4], w.shape[:3], strides)]
    xt = torch.nn.functional.pad(torch.tensor(x).permute(0, 4, 1, 2, 3),
                                 [p for pair in reversed(pads) for p in pair])
    y = torch.nn.functional.conv3d(xt, torch.tensor(w).permute(4, 3, 0, 1, 2),
                                   stride=tuple(strides))
    return y.permute(0, 2, 3, 4, 1).numpy()


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=tf_cpu_cases())
def test_values_match_tensorflow(case):
    """Equal to TF's result, except where TF's Conv3D is wrong: there PyTorch decides.

    TF 2.21's CPU Conv3D returns wrong values for some SAME cases with stride 3 (e.g.
    input [2,3,1,4,3], filter [1,1,3,3,2], strides [1,3,3,3,1]); PyTorch agrees with graphops.
    """
    ours = getattr(gp.raw_ops, case.op)(**op_kwargs(case.op, case.arrays), **case.attrs)
    theirs = run_tf(case.op, case.arrays, case.attrs)
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
    tol = (1e-4 if case.dtype == np.float32 else 1e-10) * max(1.0, np.abs(theirs).max(initial=0))
    if case.op == "Conv3D" and np.abs(ours - theirs).max() > tol:
        theirs = torch_conv3d(*case.arrays, case.attrs["strides"][1:4], case.attrs["padding"])
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=tol)
    case.check(ours)


def test_tensorflow_conv3d_bug_is_settled_by_pytorch():
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((2, 3, 1, 4, 3)), rng.standard_normal((1, 1, 3, 3, 2))
    strides = [1, 3, 3, 3, 1]
    ours = gp.raw_ops.Conv3D(input=x, filter=w, strides=strides, padding="SAME")
    np.testing.assert_allclose(ours, torch_conv3d(x, w, strides[1:4], "SAME"), atol=1e-12)
    if np.allclose(run_tf("Conv3D", [x, w], dict(strides=strides, padding="SAME")), ours):
        pytest.skip("this TensorFlow computes the case correctly")


def test_half_and_bfloat16_round_like_tensorflow():
    rng = np.random.default_rng(0)
    for dtype in (np.float16, tf.bfloat16.as_numpy_dtype):
        x = rng.standard_normal((2, 6, 6, 3)).astype(dtype)
        w = rng.standard_normal((3, 3, 3, 4)).astype(dtype)
        attrs = dict(strides=[1, 2, 2, 1], padding="SAME")
        ours = gp.raw_ops.Conv2D(input=x, filter=w, **attrs).astype(np.float64)
        theirs = run_tf("Conv2D", [x, w], attrs).astype(np.float64)
        eps = float(np.finfo(np.float16).eps) if dtype == np.float16 else 2.0**-7
        assert np.abs(ours - theirs).max() <= 2 * eps * np.abs(theirs).max()


def _tf_cpu_refuses(op, attrs, message):
    """Configurations TF's CPU build refuses or mishandles, which graphops computes."""
    return (op not in TF_OPS
            or attrs.get("data_format", "N_C").startswith("NC")
            or ("groups" in message and op != "Conv2D")
            or (CONV_OPS[op].depthwise and attrs.get("strides", [1, 1, 1])[1:3]
                in ([0, 1], [1, 0]))
            or (CONV_OPS[op].depthwise and CONV_OPS[op].kind != "forward"
                and "dilations" in attrs))


@pytest.mark.parametrize("case", SHAPE_CASES, ids=lambda c: f"{c[0]}:{c[4][:40]}")
def test_shape_check_messages_match_tensorflow(case):
    op, arrays, attrs, cls, message, _ = case
    if _tf_cpu_refuses(op, attrs, message):
        pytest.skip("TF's CPU build refuses this configuration")
    assert eager_error(op, arrays, attrs) == (cls, message)
    with pytest.raises(tf.errors.OpError) as e:
        run_tf(op, arrays, default_attrs(op, attrs))
    assert message in e.value.message
    assert type(e.value).__name__ == cls.__name__


@pytest.mark.parametrize("case", ATTR_CASES, ids=lambda c: f"{c[0]}:{c[3][:40]}")
def test_attr_check_messages_match_tensorflow(case):
    op, attrs, cls, message, _ = case
    if _tf_cpu_refuses(op, attrs, message):
        pytest.skip("TF's CPU build refuses this configuration")
    with pytest.raises(tf.errors.OpError) as e:
        run_tf(op, _VALID_INPUTS[op], default_attrs(op, attrs))
    assert message in e.value.message
    assert type(e.value).__name__ == cls.__name__


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=tf_cpu_cases(), data=st.data())
def test_static_shapes_match_tensorflow_graph_mode(case, data):
    """Shape inference with some dims unknown (sizes vectors constant) agrees with TF's.

    Ours may know more: TF's Conv2DBackpropInput takes the batch size from out_backprop
    even when a constant input_sizes gives it; graphops keeps the constant's value.
    """
    sizes = CONV_OPS[case.op].sizes_input
    shapes = [None if i == sizes else
              [d if data.draw(st.booleans()) else None for d in a.shape]
              for i, a in enumerate(case.arrays)]
    with tf.Graph().as_default():
        inputs = [tf.constant(a) if s is None else tf.compat.v1.placeholder(a.dtype, s)
                  for a, s in zip(case.arrays, shapes)]
        theirs = getattr(tf.raw_ops, case.op)(**op_kwargs(case.op, inputs), **case.attrs)
    with gp.Graph().as_default():
        inputs = [a if s is None else gp.placeholder(a.dtype, s)
                  for a, s in zip(case.arrays, shapes)]
        ours = getattr(gp.raw_ops, case.op)(**op_kwargs(case.op, inputs), **case.attrs)
    ours, theirs = ours.shape.as_list(), theirs.shape.as_list()
    assert len(ours) == len(theirs)
    assert all(t is None or o == t for o, t in zip(ours, theirs))
    if sizes >= 0:
        assert None not in ours
