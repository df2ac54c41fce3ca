"""Gradients of the convolution family, checked numerically over random attrs.

For every conv op with a gradient (the three forward ops and their six backprop ops, plus
the deprecated V1 3-D backprops) hypothesis draws a data format, per-dimension filter size,
stride, dilation and padding (EXPLICIT included where the op has it), and
gp.test.compute_gradient_error compares the symbolic Jacobian (built from the other conv
ops, docs/conv-semantics.md "Gradients") with central differences of the forward kernel,
in float64.
"""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import graphops as gp

TOL = 1e-7          # every conv is linear in each input: central differences are exact
SETTINGS = settings(max_examples=15, deadline=None)

FAMILIES = {        # forward op -> (backprop-input op, backprop-filter op, spatial dims)
    "Conv2D": ("Conv2DBackpropInput", "Conv2DBackpropFilter", 2),
    "Conv3D": ("Conv3DBackpropInputV2", "Conv3DBackpropFilterV2", 3),
    "DepthwiseConv2dNative": ("DepthwiseConv2dNativeBackpropInput",
                              "DepthwiseConv2dNativeBackpropFilter", 2),
}
FORMATS = {2: ("NHWC", "NCHW"), 3: ("NDHWC", "NCDHW")}


@st.composite
def configs(draw, forward, formats=None):
    """A valid (attrs, input shape, filter shape) of `forward`, small enough to check fast."""
    nd = FAMILIES[forward][2]
    data_format = draw(st.sampled_from(formats or FORMATS[nd]))
    paddings = ["SAME", "VALID"] + ([] if forward == "Conv3D" else ["EXPLICIT"])
    padding = draw(st.sampled_from(paddings))
    sizes, kernel, strides, dilations, pads = [], [], [], [], []
    for _ in range(nd):
        k, d, s = draw(st.integers(1, 3 if nd == 2 else 2)), draw(st.integers(1, 2)), \
            draw(st.integers(1, 2))
        before, after = (draw(st.integers(0, 2)), draw(st.integers(0, 2))) \
            if padding == "EXPLICIT" else (0, 0)
        low = 1 if padding == "SAME" else max(1, (k - 1) * d + 1 - before - after)
        sizes.append(draw(st.integers(low, low + (2 if nd == 2 else 1))))
        kernel.append(k)
        strides.append(s)
        dilations.append(d)
        pads.append((before, after))
    batch, channels, out = draw(st.integers(1, 2)), draw(st.integers(1, 2)), \
        draw(st.integers(1, 2))
    channels_last = data_format.endswith("C")

    def full(spatial, batch_value, channel_value):
        return [batch_value] + spatial + [channel_value] if channels_last else \
            [batch_value, channel_value] + spatial

    attrs = {"strides": full(strides, 1, 1), "padding": padding, "data_format": data_format,
             "dilations": full(dilations, 1, 1)}
    if padding == "EXPLICIT":
        attrs["explicit_paddings"] = [p for pair in full(pads, (0, 0), (0, 0)) for p in pair]
    return attrs, full(sizes, batch, channels), kernel + [channels, out]


def _output_shape(forward, attrs, x_shape, w_shape):
    y = getattr(gp.raw_ops, forward)(input=np.zeros(x_shape), filter=np.zeros(w_shape), **attrs)
    return list(y.shape)


def _check(build, shapes, static, seed=0):
    """Jacobian error of `build(*placeholders)` w.r.t. all its placeholders."""
    rng = np.random.default_rng(seed)
    values = [rng.uniform(-1, 1, size=s) for s in shapes]
    g = gp.Graph()
    with g.as_default(), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        xs = [gp.placeholder(gp.float64, s if static else [None] * len(s)) for s in shapes]
        y = build(*xs)
        with gp.Session(graph=g) as sess:
            y_shape = sess.run(y, dict(zip(xs, values))).shape
            error = gp.test.compute_gradient_error(xs, shapes, y, y_shape, x_init_value=values)
    assert error < TOL
    return g


@pytest.mark.parametrize("forward", sorted(FAMILIES))
@SETTINGS
@given(data=st.data())
def test_forward_conv_gradients(forward, data):
    attrs, x_shape, w_shape = data.draw(configs(forward))
    static = data.draw(st.booleans())
    op = getattr(gp.raw_ops, forward)
    g = _check(lambda x, w: op(input=x, filter=w, **attrs), [x_shape, w_shape], static)
    backprop_input, backprop_filter, _ = FAMILIES[forward]
    built = {o.type: o for o in g.get_operations()}
    for grad_op in (built[backprop_input], built[backprop_filter]):
        assert grad_op.name.startswith(f"gradients/{forward}_grad/")
        for name, value in attrs.items():
            assert grad_op.get_attr(name) == value, (grad_op.type, name)


@pytest.mark.parametrize("forward", sorted(FAMILIES))
@SETTINGS
@given(data=st.data())
def test_second_order_backprop_input_gradients(forward, data):
    """d(backprop_input)/d(filter) and /d(out_backprop), input_sizes a constant."""
    attrs, x_shape, w_shape = data.draw(configs(forward))
    dy_shape = _output_shape(forward, attrs, x_shape, w_shape)
    op = getattr(gp.raw_ops, FAMILIES[forward][0])
    _check(lambda w, dy: op(input_sizes=np.int32(x_shape), filter=w, out_backprop=dy, **attrs),
           [w_shape, dy_shape], data.draw(st.booleans()))


@pytest.mark.parametrize("forward", sorted(FAMILIES))
@SETTINGS
@given(data=st.data())
def test_second_order_backprop_filter_gradients(forward, data):
    """d(backprop_filter)/d(input) and /d(out_backprop), filter_sizes a constant."""
    attrs, x_shape, w_shape = data.draw(configs(forward))
    dy_shape = _output_shape(forward, attrs, x_shape, w_shape)
    op = getattr(gp.raw_ops, FAMILIES[forward][1])
    _check(lambda x, dy: op(input=x, filter_sizes=np.int32(w_shape), out_backprop=dy, **attrs),
           [x_shape, dy_shape], data.draw(st.booleans()))


@SETTINGS
@given(data=st.data())
def test_deprecated_conv3d_backprops_have_gradients(data):
    """V1 takes real tensors where V2 takes sizes; the shape-only input gets zero gradient."""
    attrs, x_shape, w_shape = data.draw(configs("Conv3D", formats=["NDHWC"]))
    dy_shape = _output_shape("Conv3D", attrs, x_shape, w_shape)
    v1 = {k: v for k, v in attrs.items() if k != "data_format"}
    _check(lambda x, w, dy: gp.raw_ops.Conv3DBackpropInput(input=x, filter=w, out_backprop=dy,
                                                           **v1),
           [x_shape, w_shape, dy_shape], static=True)
    _check(lambda x, w, dy: gp.raw_ops.Conv3DBackpropFilter(input=x, filter=w, out_backprop=dy,
                                                            **v1),
           [x_shape, w_shape, dy_shape], static=True)


def test_conv2d_gradient_values_match_an_explicit_loop():
    """One fixed case against an obvious reference: d(sum(w_out * conv(x, w)))/dx, dw."""
    rng = np.random.default_rng(1)
    x, w = rng.normal(size=(1, 4, 5, 2)), rng.normal(size=(2, 3, 2, 3))
    attrs = {"strides": [1, 2, 1, 1], "padding": "EXPLICIT", "dilations": [1, 1, 2, 1],
             "explicit_paddings": [0, 0, 1, 0, 2, 1, 0, 0]}
    y = gp.raw_ops.Conv2D(input=x, filter=w, **attrs)
    weights = rng.normal(size=y.shape)
    padded = np.pad(x, [(0, 0), (1, 0), (2, 1), (0, 0)])
    dx_padded, dw = np.zeros_like(padded), np.zeros_like(w)
    for i in range(y.shape[1]):
        for j in range(y.shape[2]):
            for a in range(2):
                for b in range(3):
                    for c in range(2):
                        for o in range(3):
                            r, s = 2 * i + a, j + 2 * b
                            dx_padded[0, r, s, c] += weights[0, i, j, o] * w[a, b, c, o]
                            dw[a, b, c, o] += weights[0, i, j, o] * padded[0, r, s, c]
    with gp.Graph().as_default():
        px, pw = gp.placeholder(gp.float64, x.shape), gp.placeholder(gp.float64, w.shape)
        out = gp.raw_ops.Conv2D(input=px, filter=pw, **attrs)
        grads = gp.gradients(gp.reduce_sum(out * weights), [px, pw])
        with gp.Session() as sess:
            got_dx, got_dw = sess.run(grads, {px: x, pw: w})
    np.testing.assert_allclose(got_dx, dx_padded[:, 1:, 2:-1], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got_dw, dw, rtol=1e-12, atol=1e-12)
