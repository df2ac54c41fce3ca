"""The 13 conv ops end to end: graph + Session, eager, nn wrappers, Scope API.

Values are checked against the slow references (tests/reference_conv.py,
tests/reference_depthwise.py) and the adjoint identities; static shapes against run shapes.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

import graphops as gp
from graphops.registry import dtypes, errors
from graphops.registry.conv_shapes import CONV_OPS
from graphops.registry.kernel_registry import registered_kernels
from graphops.registry.op_registry import get_op_def
from tests.reference_conv import (conv_backprop_filter_ref, conv_backprop_input_ref,
                                  conv_forward_ref)
from tests.reference_depthwise import (depthwise_backprop_filter_ref,
                                       depthwise_backprop_input_ref, depthwise_forward_ref)

RTOL = {"float64": 1e-10, "float32": 1e-4, "float16": 2e-3, "bfloat16": 1.6e-2, "int32": 0}
SETTINGS = settings(max_examples=70, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# ----------------------------------------------------------------------------- cases


def same_pads(size, k, s, d):
    """TF's SAME padding, written out: the extra pixel goes after."""
    out = -(-size // s)
    total = max(0, (out - 1) * s + (k - 1) * d + 1 - size)
    return total // 2, total - total // 2


def out_size(size, k, s, d, before, after):
    return (size + before + after - (k - 1) * d - 1) // s + 1


class Case:
    """One configuration of an op: its input arrays, attrs and the reference result."""

    def __init__(self, op, dtype, channels_last, padding, spatial, kernel, strides, dilations,
                 explicit, groups, multiplier, rng, tshape=np.int32):
        info = CONV_OPS[op]
        nsp = info.num_spatial
        self.op, self.dtype, self.groups = op, np.dtype(dtype), groups
        if padding == "SAME":
            pads = [same_pads(n, k, s, d) for n, k, s, d in zip(spatial, kernel, strides,
                                                                 dilations)]
        else:
            pads = explicit if padding == "EXPLICIT" else [(0, 0)] * nsp
        out_sp = [out_size(n, k, s, d, b, a) for n, k, s, d, (b, a)
                  in zip(spatial, kernel, strides, dilations, pads)]
        cg = 2 if groups > 1 else 3
        c = groups * cg
        batch = 2
        if info.depthwise:
            w_shape, o = (*kernel, c, multiplier), c * multiplier
        else:
            w_shape, o = (*kernel, cg, groups * 2), groups * 2

        def act(sp, ch):
            return (batch, *sp, ch) if channels_last else (batch, ch, *sp)

        x, w, dy = (self.random(rng, s) for s in (act(spatial, c), w_shape, act(out_sp, o)))
        args = (tuple(strides), tuple(dilations), tuple(map(tuple, pads)), channels_last)
        ref = _reference(info, groups, x, w, dy, args)
        sizes = {"input": np.array(x.shape, tshape), "filter": np.array(w.shape, np.int32)}
        grad_of = info.kind
        arrays = {"forward": [x, w], "input": [x, w, dy], "filter": [x, w, dy]}[grad_of]
        if info.sizes_input >= 0:
            arrays[info.sizes_input] = sizes[grad_of]
        self.arrays, self.expected = arrays, ref[grad_of]
        fmt = ("NDHWC" if channels_last else "NCDHW") if nsp == 3 else \
              ("NHWC" if channels_last else "NCHW")
        full = (lambda v: [1, *v, 1]) if channels_last else (lambda v: [1, 1, *v])
        self.attrs = dict(strides=full(strides), dilations=full(dilations), padding=padding)
        if info.has_data_format:
            self.attrs["data_format"] = fmt
        if padding == "EXPLICIT":
            self.attrs["explicit_paddings"] = [p for pair in ([(0, 0)] + list(pads) + [(0, 0)]
                                                             if channels_last else
                                                             [(0, 0), (0, 0)] + list(pads))
                                               for p in pair]

    def random(self, rng, shape):
        if self.dtype.kind == "i":
            return rng.integers(-3, 4, shape).astype(self.dtype)
        return rng.standard_normal(shape).astype(self.dtype)

    def check(self, got):
        assert got.dtype == self.dtype and got.shape == self.expected.shape
        got = got.astype(np.float64)
        tol = RTOL[self.dtype.name] * max(1.0, np.abs(self.expected).max(initial=0))
        np.testing.assert_allclose(got, self.expected, rtol=0, atol=tol)


def _reference(info, groups, x, w, dy, args):
    """{forward, input, filter} results of the slow references (float64)."""
    if info.depthwise:
        return {"forward": depthwise_forward_ref(x, w, *args),
                "input": depthwise_backprop_input_ref(dy, w, x.shape, *args),
                "filter": depthwise_backprop_filter_ref(x, dy, w.shape, *args)}
    axis = -1 if args[-1] else 1
    xs, ws, dys = (np.split(a, groups, ax) for a, ax in ((x, axis), (w, -1), (dy, axis)))
    group_x = list(x.shape)
    group_x[axis] //= groups
    group_w = (*w.shape[:-1], w.shape[-1] // groups)
    return {"forward": np.concatenate([conv_forward_ref(a, b, *args) for a, b in zip(xs, ws)],
                                      axis),
            "input": np.concatenate([conv_backprop_input_ref(a, b, group_x, *args)
                                     for a, b in zip(dys, ws)], axis),
            "filter": np.concatenate([conv_backprop_filter_ref(a, b, group_w, *args)
                                      for a, b in zip(xs, dys)], -1)}


@st.composite
def cases(draw, ops=tuple(sorted(CONV_OPS)), dtypes_=None):
    op = draw(st.sampled_from(ops))
    info = CONV_OPS[op]
    nsp = info.num_spatial
    allowed = [t.name for t in get_op_def(op).attr_def("T").allowed_values]
    dtype = draw(st.sampled_from([t for t in allowed if dtypes_ is None or t in dtypes_]))
    channels_last = True if not info.has_data_format else draw(st.booleans())
    padding = draw(st.sampled_from(["SAME", "VALID"] + (["EXPLICIT"] if info.has_explicit
                                                        else [])))
    hi = 3 if nsp == 3 else 4
    kernel = [draw(st.integers(1, 3)) for _ in range(nsp)]
    strides = [draw(st.integers(1, 3)) for _ in range(nsp)]
    dilations = [draw(st.integers(1, 2)) for _ in range(nsp)]
    explicit = [(draw(st.integers(0, 2)), draw(st.integers(0, 2))) for _ in range(nsp)]
    spatial = []
    for k, d, (b, a) in zip(kernel, dilations, explicit):
        pads = b + a if padding == "EXPLICIT" else 0
        low = 1 if padding == "SAME" else max(1, (k - 1) * d + 1 - pads)
        spatial.append(draw(st.integers(low, low + hi)))
    groups = 1
    if not info.depthwise and not (nsp == 3 and info.kind != "forward"):
        groups = draw(st.sampled_from([1, 1, 2]))
    multiplier = draw(st.integers(1, 2))
    tshape = draw(st.sampled_from([np.int32, np.int64])) if op == "Conv3DBackpropInputV2" \
        else np.int32
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return Case(op, dtypes.as_dtype(dtype).np_dtype, channels_last, padding, spatial, kernel,
                strides, dilations, explicit, groups, multiplier, rng, tshape)


def op_kwargs(op, arrays):
    return dict(zip((a.name for a in get_op_def(op).input_arg), arrays))


def run_in_session(case, known=True):
    """Builds with placeholders (sizes as constants); returns (static shape, value)."""
    sizes = CONV_OPS[case.op].sizes_input
    with gp.Graph().as_default():
        inputs = [a if i == sizes else gp.placeholder(a.dtype, a.shape if known else None)
                  for i, a in enumerate(case.arrays)]
        out = getattr(gp.raw_ops, case.op)(**op_kwargs(case.op, inputs), **case.attrs)
        feeds = {t: a for t, a in zip(inputs, case.arrays) if isinstance(t, gp.Tensor)}
        with gp.Session() as sess:
            return out.shape, sess.run(out, feeds)


pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


# ----------------------------------------------------------------------------- values


@SETTINGS
@given(case=cases(), mode=st.sampled_from(["eager", "session"]))
def test_ops_match_reference(case, mode):
    if mode == "eager":
        got = getattr(gp.raw_ops, case.op)(**op_kwargs(case.op, case.arrays), **case.attrs)
    else:
        static, got = run_in_session(case)
        assert static.as_list() == list(got.shape)   # shape fn == kernel result
    case.check(got)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases(ops=("Conv2D", "Conv3D", "DepthwiseConv2dNative"), dtypes_=("float64",)))
def test_gradients_are_adjoint_to_the_forward_conv(case):
    """<conv(x, w), dy> == <x, backprop_input(dy, w)> == <w, backprop_filter(x, dy)>."""
    assume(case.op != "Conv3D" or case.groups == 1)   # TF's 3-D gradients refuse groups
    x, w = case.arrays
    attrs = case.attrs
    names = {"Conv2D": ("Conv2DBackpropInput", "Conv2DBackpropFilter"),
             "Conv3D": ("Conv3DBackpropInputV2", "Conv3DBackpropFilterV2"),
             "DepthwiseConv2dNative": ("DepthwiseConv2dNativeBackpropInput",
                                       "DepthwiseConv2dNativeBackpropFilter")}[case.op]
    y = getattr(gp.raw_ops, case.op)(input=x, filter=w, **attrs)
    dy = np.random.default_rng(1).standard_normal(y.shape)
    dx = getattr(gp.raw_ops, names[0])(input_sizes=np.array(x.shape, np.int32), filter=w,
                                       out_backprop=dy, **attrs)
    dw = getattr(gp.raw_ops, names[1])(input=x, filter_sizes=np.array(w.shape, np.int32),
                                       out_backprop=dy, **attrs)
    lhs = np.vdot(y, dy)
    scale = max(1.0, abs(lhs))
    assert abs(np.vdot(x, dx) - lhs) <= 1e-9 * scale
    assert abs(np.vdot(w, dw) - lhs) <= 1e-9 * scale


def test_int32_conv2d_and_backprop_input_are_exact():
    rng = np.random.default_rng(0)
    x = rng.integers(-100, 100, (2, 5, 6, 4)).astype(np.int32)
    w = rng.integers(-100, 100, (3, 2, 2, 6)).astype(np.int32)    # 2 groups
    y = gp.raw_ops.Conv2D(input=x, filter=w, strides=[1, 2, 1, 1], padding="SAME")
    pads = (same_pads(5, 3, 2, 1), same_pads(6, 2, 1, 1))
    ref = np.concatenate([conv_forward_ref(x[..., :2], w[..., :3], (2, 1), (1, 1), pads),
                          conv_forward_ref(x[..., 2:], w[..., 3:], (2, 1), (1, 1), pads)], -1)
    assert y.dtype == np.int32 and np.array_equal(y, ref.astype(np.int64))
    dx = gp.raw_ops.Conv2DBackpropInput(input_sizes=[2, 5, 6, 4], filter=w, out_backprop=y,
                                        strides=[1, 2, 1, 1], padding="SAME")
    assert dx.dtype == np.int32 and dx.shape == x.shape


@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
def test_conv2d_backprop_input_takes_height_and_width_only(data_format):
    case = Case("Conv2DBackpropInput", np.float64, data_format == "NHWC", "SAME", [5, 6],
                [3, 2], [2, 2], [1, 1], None, 1, 1, np.random.default_rng(4))
    sizes, w, dy = case.arrays
    hw = sizes[1:3] if data_format == "NHWC" else sizes[2:]
    with gp.Graph().as_default():
        dx = gp.raw_ops.Conv2DBackpropInput(input_sizes=hw, filter=w, out_backprop=dy,
                                            **case.attrs)
        assert dx.shape.as_list() == list(case.expected.shape)
        with gp.Session() as sess:
            case.check(sess.run(dx))
    case.check(gp.raw_ops.Conv2DBackpropInput(input_sizes=hw, filter=w, out_backprop=dy,
                                              **case.attrs))


def test_unknown_shapes_and_fed_sizes():
    case = Case("Conv2DBackpropFilter", np.float32, False, "SAME", [5, 4], [3, 2], [2, 1],
                [1, 2], None, 1, 1, np.random.default_rng(3))
    static, got = run_in_session(case, known=False)   # constant filter_sizes: shape known
    assert static.as_list() == list(case.expected.shape)
    case.check(got)
    x_value, sizes_value, dy_value = case.arrays
    with gp.Graph().as_default():
        x = gp.placeholder(gp.float32, [None, 3, 5, 4])
        sizes = gp.placeholder(gp.int32, [4])
        dy = gp.placeholder(gp.float32, [None, 2, 3, 4])
        dw = gp.raw_ops.Conv2DBackpropFilter(input=x, filter_sizes=sizes, out_backprop=dy,
                                             strides=[1, 1, 2, 1], padding="SAME",
                                             data_format="NCHW", dilations=[1, 1, 1, 2])
        y = gp.raw_ops.Conv2D(input=x, filter=np.ones((3, 2, 3, 2), np.float32),
                              strides=[1, 1, 2, 1], padding="SAME", data_format="NCHW")
        assert dw.shape.as_list() == [None] * 4 and y.shape.as_list() == [None, 2, 3, 4]
        with gp.Session() as sess:
            case.check(sess.run(dw, {x: x_value, sizes: sizes_value, dy: dy_value}))


def test_empty_tensors_give_zeros_of_the_right_shape():
    z = np.zeros
    y = gp.raw_ops.Conv2D(input=z((0, 5, 5, 2), np.float32), filter=np.ones((3, 3, 2, 4),
                          np.float32), strides=[1] * 4, padding="SAME")
    assert y.shape == (0, 5, 5, 4)
    dw = gp.raw_ops.Conv3DBackpropFilterV2(input=np.ones((1, 3, 3, 3, 2), np.float32),
                                           filter_sizes=[1, 1, 1, 2, 0],
                                           out_backprop=z((1, 3, 3, 3, 0), np.float32),
                                           strides=[1] * 5, padding="VALID")
    assert dw.shape == (1, 1, 1, 2, 0)
    dx = gp.raw_ops.DepthwiseConv2dNativeBackpropInput(
        input_sizes=[2, 5, 5, 0], filter=z((3, 3, 0, 2), np.float32),
        out_backprop=z((2, 5, 5, 0), np.float32), strides=[1] * 4, padding="SAME")
    assert dx.shape == (2, 5, 5, 0)
    dw = gp.raw_ops.Conv2DBackpropFilter(input=np.ones((2, 4, 4, 3), np.float32),
                                         filter_sizes=[2, 2, 3, 5],
                                         out_backprop=z((2, 3, 3, 5), np.float32),
                                         strides=[1] * 4, padding="VALID")
    assert dw.shape == (2, 2, 3, 5) and not dw.any()


# ----------------------------------------------------------------------------- public APIs


def test_nn_wrappers_in_graph_mode():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 6, 7, 3)).astype(np.float32)
    w = rng.standard_normal((3, 2, 3, 4)).astype(np.float32)
    pads = ((1, 2), (0, 1))
    y_ref = conv_forward_ref(x, w, (2, 2), (1, 1), pads)
    dy = rng.standard_normal(y_ref.shape).astype(np.float32)
    with gp.Graph().as_default():
        xt = gp.placeholder(gp.float32, [None, 6, 7, 3])
        y = gp.nn.conv2d(xt, filters=w, strides=2, padding=[[0, 0], [1, 2], [0, 1], [0, 0]])
        dx = gp.nn.conv2d_backprop_input([2, 6, 7, 3], w, dy, strides=[1, 2, 2, 1],
                                         padding=[[0, 0], [1, 2], [0, 1], [0, 0]])
        dw = gp.nn.conv2d_backprop_filter(xt, [3, 2, 3, 4], dy, [1, 2, 2, 1],
                                          [[0, 0], [1, 2], [0, 1], [0, 0]],
                                          use_cudnn_on_gpu=False)
        assert y.op.get_attr("padding") == "EXPLICIT"
        assert y.op.get_attr("explicit_paddings") == [0, 0, 1, 2, 0, 1, 0, 0]
        assert y.shape.as_list() == [None, *y_ref.shape[1:]]
        with gp.Session() as sess:
            got = sess.run({"y": y, "dx": dx, "dw": dw}, {xt: x})
    np.testing.assert_allclose(got["y"], y_ref, atol=1e-4 * np.abs(y_ref).max())
    dx_ref = conv_backprop_input_ref(dy, w, x.shape, (2, 2), (1, 1), pads)
    np.testing.assert_allclose(got["dx"], dx_ref, atol=1e-4 * np.abs(dx_ref).max())
    dw_ref = conv_backprop_filter_ref(x, dy, w.shape, (2, 2), (1, 1), pads)
    np.testing.assert_allclose(got["dw"], dw_ref, atol=1e-4 * np.abs(dw_ref).max())


def test_nn_3d_and_depthwise_wrappers_eagerly():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((1, 2, 4, 5, 6))
    w = rng.standard_normal((2, 1, 3, 2, 3))
    args = ((1, 2, 1), (1, 1, 2), ((0, 0),) * 3, False)
    y = gp.nn.conv3d(x, w, strides=[1, 1, 1, 2, 1], padding="VALID", data_format="NCDHW",
                     dilations=[1, 1, 1, 1, 2])
    np.testing.assert_allclose(y, conv_forward_ref(x, w, *args), atol=1e-12)
    dy = rng.standard_normal(y.shape)
    assert gp.nn.conv3d_backprop_filter_v2 is gp.nn.conv3d_backprop_filter
    dw = gp.nn.conv3d_backprop_filter(x, [2, 1, 3, 2, 3], dy, [1, 1, 1, 2, 1], "VALID",
                                      data_format="NCDHW", dilations=[1, 1, 1, 1, 2])
    np.testing.assert_allclose(dw, conv_backprop_filter_ref(x, dy, w.shape, *args), atol=1e-12)
    dx = gp.nn.conv3d_backprop_input_v2(np.array(x.shape, np.int64), w, dy, [1, 1, 1, 2, 1],
                                        "VALID", "NCDHW", [1, 1, 1, 1, 2])
    np.testing.assert_allclose(dx, conv_backprop_input_ref(dy, w, x.shape, *args), atol=1e-12)
    xd = rng.standard_normal((2, 5, 6, 3))
    wd = rng.standard_normal((2, 3, 3, 2))
    dargs = ((1, 2), (2, 1), ((1, 1), (0, 1)))
    yd = gp.nn.depthwise_conv2d_native(xd, wd, [1, 1, 2, 1], [[0, 0], [1, 1], [0, 1], [0, 0]],
                                       dilations=[1, 2, 1, 1])
    np.testing.assert_allclose(yd, depthwise_forward_ref(xd, wd, *dargs), atol=1e-12)
    dyd = rng.standard_normal(yd.shape)
    assert gp.nn.depthwise_conv2d_backprop_filter is gp.nn.depthwise_conv2d_native_backprop_filter
    dwd = gp.nn.depthwise_conv2d_backprop_filter(xd, [2, 3, 3, 2], dyd, [1, 1, 2, 1],
                                                 [[0, 0], [1, 1], [0, 1], [0, 0]],
                                                 dilations=[1, 2, 1, 1])
    np.testing.assert_allclose(dwd, depthwise_backprop_filter_ref(xd, dyd, wd.shape, *dargs),
                               atol=1e-12)
    dxd = gp.nn.depthwise_conv2d_native_backprop_input([2, 5, 6, 3], wd, dyd, [1, 1, 2, 1],
                                                       [[0, 0], [1, 1], [0, 1], [0, 0]],
                                                       dilations=[1, 2, 1, 1])
    np.testing.assert_allclose(dxd, depthwise_backprop_input_ref(dyd, wd, xd.shape, *dargs),
                               atol=1e-12)


@pytest.mark.parametrize("call, message", [
    (lambda x, w: gp.nn.conv2d(x, w, [1, 1, 1, 1], "EXPLICIT"),
     "'EXPLICIT' is not a valid value for `padding`. To use explicit padding, `padding` must "
     "be a list."),
    (lambda x, w: gp.nn.conv2d(x, w, [1, 1, 1, 1], [[0, 0], [1, 1], [1, 1]]),
     "When padding is a list, it must be of size 4. Received: padding=[[0, 0], [1, 1], [1, 1]] "
     "of size 3"),
    (lambda x, w: gp.nn.conv2d(x, w, [1, 1, 1, 1], [[0, 0], [1, 1, 1], [1, 1], [0, 0]]),
     "When `padding` is a list, each element of `padding` must be a list/tuple of size 2. "
     "Received: padding=[[0, 0], [1, 1, 1], [1, 1], [0, 0]] with element at index 1 of size 3"),
    (lambda x, w: gp.nn.depthwise_conv2d_native(x, w, [1, 1, 1, 1], [0, 1, 1, 0]),
     "When `padding` is a list, each element of `padding` must be a list/tuple of size 2. "
     "Received: padding=[0, 1, 1, 0] with element at index 0 of type <class 'int'>"),
    (lambda x, w: gp.nn.conv2d(x, w, [1, 1, 1], "SAME"),
     "strides should be of length 1, 2 or 4. Received: strides=[1, 1, 1] of length 3"),
    (lambda x, w: gp.nn.conv2d(x, w, 1, "SAME", filters=w),
     "Cannot specify both 'filter' and 'filters'"),
])
def test_nn_wrapper_argument_errors(call, message):
    x, w = np.ones((1, 4, 4, 2), np.float32), np.ones((2, 2, 2, 3), np.float32)
    with pytest.raises(ValueError) as e:
        call(x, w)
    assert str(e.value) == message


def test_conv2d_wrapper_broadcasts_strides_and_dilations_like_tf():
    x, w = np.ones((1, 2, 5, 5), np.float32), np.ones((2, 2, 2, 3), np.float32)
    with gp.Graph().as_default():
        y = gp.nn.conv2d(x, w, strides=[2, 1], padding="VALID", data_format="NCHW",
                         dilations=2)
        assert y.op.get_attr("strides") == [1, 1, 2, 1]
        assert y.op.get_attr("dilations") == [1, 1, 2, 2]
        assert y.shape.as_list() == [1, 3, 2, 3]


def test_scope_api_ops_with_client_session():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 5, 6, 3)).astype(np.float32)
    dy = rng.standard_normal((2, 5, 3, 6)).astype(np.float32)
    root = gp.Scope.new_root_scope()
    xp = gp.ops.Placeholder(root.with_op_name("x"), gp.float32, shape=[None, 5, 6, 3])
    op = gp.ops.DepthwiseConv2dNativeBackpropFilter
    dw = op(root.new_sub_scope("grads"), xp, [3, 2, 3, 2], dy, strides=[1, 1, 2, 1],
            padding="SAME", attrs=op.Attrs().dilations([1, 2, 1, 1]))
    dwb = gp.ops.Conv2DBackpropFilter(root, xp, [3, 2, 3, 6], dy, strides=[1, 1, 2, 1],
                                      padding="SAME", use_cudnn_on_gpu=False)
    assert dw.operation.name == "grads/DepthwiseConv2dNativeBackpropFilter"
    assert dw.output.shape.as_list() == [3, 2, 3, 2]
    got_dw, got_dwb = gp.ClientSession(root).run([dw, dwb.output], feed_dict={xp: x})
    pads = (same_pads(5, 3, 1, 2), same_pads(6, 2, 2, 1))
    np.testing.assert_allclose(got_dw, depthwise_backprop_filter_ref(
        x, dy, (3, 2, 3, 2), (1, 2), (2, 1), pads), atol=1e-4 * 10)
    pads = (same_pads(5, 3, 1, 1), same_pads(6, 2, 2, 1))
    ref = conv_backprop_filter_ref(x, dy, (3, 2, 3, 6), (1, 2), (1, 1), pads)
    np.testing.assert_allclose(got_dwb, ref, atol=1e-4 * np.abs(ref).max())


@pytest.mark.parametrize("op, new", [("Conv3DBackpropInput", "Conv3DBackpropInputV2"),
                                     ("Conv3DBackpropFilter", "Conv3DBackpropFilterV2")])
@pytest.mark.filterwarnings("default::DeprecationWarning")
def test_deprecated_v1_ops_warn_and_run(op, new):
    case = Case(op, np.float32, True, "SAME", [3, 4, 5], [2, 2, 3], [1, 2, 2], [2, 1, 1], None,
                1, 1, np.random.default_rng(8))
    message = (f"Op {op} is deprecated. It will cease to work in GraphDef version 10. "
               f"Use {new}.")
    with pytest.warns(DeprecationWarning, match=message):
        static, got = run_in_session(case)
    case.check(got)
    assert static.as_list() == list(got.shape)
    with pytest.warns(DeprecationWarning, match=message):
        case.check(getattr(gp.raw_ops, op)(**op_kwargs(op, case.arrays), **case.attrs))
    assert get_op_def(op).deprecation.version == 10


# ----------------------------------------------------------------------------- registrations


def test_op_definitions_match_tensorflow():
    assert get_op_def("Conv3DBackpropInputV2").signature() == (
        "Op<name=Conv3DBackpropInputV2; signature=input_sizes:Tshape, filter:T, out_backprop:T "
        "-> output:T; attr=T:type,allowed=[DT_HALF, DT_BFLOAT16, DT_FLOAT, DT_DOUBLE]; "
        "attr=strides:list(int),min=5; attr=padding:string,allowed=[\"SAME\", \"VALID\"]; "
        "attr=data_format:string,default=\"NDHWC\",allowed=[\"NDHWC\", \"NCDHW\"]; "
        "attr=dilations:list(int),default=[1, 1, 1, 1, 1]; "
        "attr=Tshape:type,default=DT_INT32,allowed=[DT_INT32, DT_INT64]>")
    assert get_op_def("Conv2DBackpropFilter").signature() == (
        "Op<name=Conv2DBackpropFilter; signature=input:T, filter_sizes:int32, out_backprop:T "
        "-> output:T; attr=T:type,allowed=[DT_HALF, DT_BFLOAT16, DT_FLOAT, DT_DOUBLE]; "
        "attr=strides:list(int); attr=use_cudnn_on_gpu:bool,default=true; "
        "attr=padding:string,allowed=[\"SAME\", \"VALID\", \"EXPLICIT\"]; "
        "attr=explicit_paddings:list(int),default=[]; "
        "attr=data_format:string,default=\"NHWC\",allowed=[\"NHWC\", \"NCHW\"]; "
        "attr=dilations:list(int),default=[1, 1, 1, 1]>")
    attr_names = {op: [a.name for a in get_op_def(op).attr] for op in CONV_OPS}
    assert attr_names["Conv3DBackpropFilter"] == ["T", "strides", "padding", "dilations"]
    assert attr_names["DepthwiseConv2dNative"] == ["T", "strides", "padding",
                                                   "explicit_paddings", "data_format",
                                                   "dilations"]
    assert attr_names["Conv2D"] == ["T", "strides", "use_cudnn_on_gpu", "padding",
                                    "explicit_paddings", "data_format", "dilations"]
    t = {op: [d.name for d in get_op_def(op).attr_def("T").allowed_values] for op in CONV_OPS}
    assert t["Conv2D"] == t["Conv2DBackpropInput"] == t["Conv2DBackpropInputV2"] == \
        ["float16", "bfloat16", "float32", "float64", "int32"]
    assert t["Conv3DBackpropInput"] == t["Conv3DBackpropFilter"] == \
        ["float16", "float32", "float64"]
    assert get_op_def("Conv3DBackpropFilter").deprecation.explanation == \
        "Use Conv3DBackpropFilterV2"
    assert [a.type.name for a in get_op_def("Conv3DBackpropFilterV2").input_arg
            if a.type is not None] == ["int32"]


def test_every_conv_op_has_a_cpu_kernel_for_every_allowed_type():
    for op in CONV_OPS:
        kdefs = [k for k in registered_kernels(op) if k.device_type == "CPU"]
        assert len(kdefs) == 1, op
        allowed = get_op_def(op).attr_def("T").allowed_values
        assert list(kdefs[0].type_constraints["T"]) == list(allowed)
        sizes = CONV_OPS[op].sizes_input
        expected = () if sizes < 0 else (get_op_def(op).input_arg[sizes].name,)
        assert kdefs[0].host_memory == expected


def test_kernel_errors_are_typed_through_session():
    with gp.Graph().as_default():
        x = gp.placeholder(gp.float32)
        y = gp.raw_ops.Conv2D(input=x, filter=np.ones((3, 3, 2, 4), np.float32),
                              strides=[1] * 4, padding="VALID")
        with gp.Session() as sess, pytest.raises(errors.InvalidArgumentError) as e:
            sess.run(y, {x: np.ones((1, 5, 5, 3), np.float32)})
    assert "input depth must be evenly divisible by filter depth: 3 vs 2" in e.value.message
    assert "{{node Conv2D}}" in e.value.message


def test_activation_wrappers():
    x = np.array([[[-1.0, 2.0], [0.5, -3.0]]], np.float32)            # [1, 2, 2]
    np.testing.assert_array_equal(gp.nn.relu(x), np.maximum(x, 0))
    b = np.array([10.0, 20.0], np.float32)
    np.testing.assert_array_equal(gp.nn.bias_add(x, b), x + b)
    np.testing.assert_array_equal(gp.nn.bias_add(x, np.float32([1, 2]), data_format="NCHW"),
                                  x + np.float32([1, 2])[:, None])
    for axis in (-1, 0, 1, None):
        e = np.exp(x - x.max(axis=-1 if axis is None else axis, keepdims=True))
        want = e / e.sum(axis=-1 if axis is None else axis, keepdims=True)
        np.testing.assert_allclose(gp.nn.softmax(x, axis=axis), want, rtol=1e-6)
    with pytest.raises(ValueError, match=r"`dim` must be in the range \[-3, 3\)"):   # TF's
        gp.nn.softmax(x, axis=3)


@pytest.mark.parametrize("x_shape, w_shape, strides, padding, route", [
    ((1, 2, 2, 16), (3, 3, 16, 12), [1, 1, 1, 1], "SAME", "few"),     # 4 positions
    ((2, 5, 5, 16), (3, 3, 16, 12), [1, 2, 2, 1], "SAME", "few"),     # strided, 18
    ((1, 2, 2, 16), (3, 3, 16, 8), [1, 1, 1, 1], "SAME", "direct"),   # whole vectors
    ((2, 4, 4, 8), (1, 1, 8, 16), [1, 1, 1, 1], "VALID", "pointwise"),
    ((1, 12, 12, 16), (3, 3, 16, 8), [1, 1, 1, 1], "SAME", "direct"),  # 144 positions
    ((2, 9, 9, 16), (3, 3, 16, 16), [1, 2, 2, 1], "VALID", "direct"),  # strided
    ((4, 28, 28, 64), (3, 3, 64, 64), [1, 1, 1, 1], "SAME", None),    # tuned against Winograd
    ((1, 4, 4, 2), (3, 3, 2, 3), [1, 1, 1, 1], "SAME", None),         # few channels first
])
def test_conv2d_takes_its_fixed_paths_itself(monkeypatch, x_shape, w_shape, strides,
                                             padding, route):
    """A Conv2D over few output positions, a pointwise one, or one the direct micro-kernels
    take by the fixed rule, runs that path from the kernel (the shape's route kept with its
    checks); the others run conv_forward."""
    from graphops.kernels.compiled import usable
    from graphops.kernels.ops import conv as conv_kernels
    if route == "direct" and not usable():
        route = None
    taken = []
    for name in ("few_positions", "gemm_forward", "direct_forward", "conv_forward"):
        original = getattr(conv_kernels, name)
        monkeypatch.setattr(conv_kernels, name,
                            lambda *a, name=name, f=original, **k: taken.append(name) or f(*a, **k))
    rng = np.random.default_rng(9)
    x = rng.standard_normal(x_shape).astype(np.float32)
    w = rng.standard_normal(w_shape).astype(np.float32)
    with gp.Graph().as_default(), gp.Session() as sess:
        out = gp.nn.conv2d(gp.constant(x), gp.placeholder_with_default(w, w_shape), strides,
                           padding)
        got = [sess.run(out) for _ in range(2)]
    pads = [same_pads(n, k, s, 1) if padding == "SAME" else (0, 0)
            for n, k, s in zip(x_shape[1:3], w_shape[:2], strides[1:3])]
    want = conv_forward_ref(x.astype(np.float64), w.astype(np.float64), strides[1:3], (1, 1),
                            pads)
    for value in got:
        np.testing.assert_allclose(value, want, rtol=1e-4, atol=1e-4)
    names = {"few": "few_positions", "pointwise": "gemm_forward", "direct": "direct_forward",
             None: "conv_forward"}
    assert taken == [names[route]] * 2


def test_a_direct_route_kept_into_a_forked_child_runs_conv_forward(monkeypatch):
    """A Conv2D's direct route, kept with its checks, gives way to conv_forward where the
    compiled loops may not run (a child forked after numba loaded), with the same values."""
    from graphops.kernels.conv_algorithms import dense, routes
    from graphops.kernels.compiled import usable
    if not usable():
        pytest.skip("no compiled loops in this process")
    forwards = []
    original = dense.conv_forward
    monkeypatch.setattr(routes, "conv_forward",
                        lambda *a, **k: forwards.append(1) or original(*a, **k))
    x = np.random.default_rng(3).standard_normal((1, 6, 6, 16)).astype(np.float32)
    w = np.random.default_rng(4).standard_normal((3, 3, 16, 8)).astype(np.float32)
    with gp.Graph().as_default(), gp.Session() as sess:
        out = gp.nn.relu(gp.nn.conv2d(gp.constant(x), gp.placeholder_with_default(w, w.shape),
                                      [1, 1, 1, 1], "SAME"))
        first = sess.run(out)
        monkeypatch.setattr(routes, "usable", lambda: False)
        second = sess.run(out)
    assert forwards == [1]
    want = np.maximum(conv_forward_ref(x.astype(np.float64), w.astype(np.float64), (1, 1),
                                       (1, 1), [(1, 1), (1, 1)]), 0)
    for got in (first, second):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
