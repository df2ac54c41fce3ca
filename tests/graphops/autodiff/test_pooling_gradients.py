"""The pooling family's registered gradients (central differences, and the ops TF's rules
build, second and third order included), its GPU kernels against the CPU ones, and the
gp.nn pooling wrappers."""

import numpy as np
import pytest

import graphops as gp
from tests import reference_pooling as ref
from tests.gpu_compare import compare

R = gp.raw_ops


def _values(rng, shape, dtype):
    """Few distinct values (ties everywhere), as ``dtype``."""
    return rng.integers(-2, 3, shape).astype(dtype)


# ----------------------------------------------------------------------------- gradients


def _grad_error(build, shape, dtype=gp.float64, seed=0):
    g = gp.Graph()
    with g.as_default():
        x = gp.placeholder(dtype, shape)
        y = build(x)
        with gp.Session(graph=g) as sess:
            y_shape = np.shape(sess.run(y, {x: np.zeros(shape)}))
        # distinct values: no ties, so max pooling is differentiable at the point
        init = np.random.default_rng(seed).permutation(int(np.prod(shape))).reshape(shape) / 7.0
        return gp.test.compute_gradient_error(x, shape, y, y_shape, x_init_value=init)


X0 = np.random.default_rng(1).permutation(32).reshape(1, 4, 4, 2).astype(np.float64)
GRADIENT_CASES = {
    "MaxPool": (lambda x: R.MaxPool(input=x, ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1],
                                    padding="SAME"), [2, 5, 5, 2]),
    "MaxPool_explicit_nchw": (lambda x: R.MaxPool(
        input=x, ksize=[1, 1, 2, 3], strides=[1, 1, 2, 1], padding="EXPLICIT",
        explicit_paddings=[0, 0, 0, 0, 1, 1, 2, 0], data_format="NCHW"), [1, 2, 4, 3]),
    "MaxPoolV2": (lambda x: R.MaxPoolV2(input=x, ksize=np.int32([1, 2, 2, 1]),
                                        strides=np.int32([1, 1, 1, 1]), padding="VALID"),
                  [1, 3, 3, 2]),
    "AvgPool": (lambda x: R.AvgPool(value=x, ksize=[1, 1, 3, 3], strides=[1, 1, 2, 2],
                                    padding="SAME", data_format="NCHW"), [1, 2, 5, 5]),
    "AvgPool3D": (lambda x: R.AvgPool3D(input=x, ksize=[1, 2, 2, 2, 1],
                                        strides=[1, 1, 2, 1, 1], padding="SAME"),
                  [1, 3, 3, 3, 2]),
    "MaxPoolWithArgmax": (lambda x: R.MaxPoolWithArgmax(
        input=x, ksize=[1, 2, 2, 1], strides=[1, 1, 1, 1], padding="SAME").output,
        [2, 3, 3, 2]),
    "MaxPoolGrad": (lambda g: R.MaxPoolGrad(
        orig_input=X0, orig_output=R.MaxPool(input=X0, ksize=[1, 2, 2, 1],
                                             strides=[1, 1, 1, 1], padding="SAME"),
        grad=g, ksize=[1, 2, 2, 1], strides=[1, 1, 1, 1], padding="SAME"), [1, 4, 4, 2]),
    "MaxPoolGradV2": (lambda g: R.MaxPoolGradV2(
        orig_input=X0, orig_output=R.MaxPool(input=X0, ksize=[1, 2, 2, 1],
                                             strides=[1, 2, 2, 1], padding="VALID"),
        grad=g, ksize=np.int32([1, 2, 2, 1]), strides=np.int32([1, 2, 2, 1]),
        padding="VALID"), [1, 2, 2, 2]),
    "MaxPoolGradGrad": (lambda g: R.MaxPoolGradGrad(
        orig_input=X0, orig_output=R.MaxPool(input=X0, ksize=[1, 2, 2, 1],
                                             strides=[1, 1, 1, 1], padding="SAME"),
        grad=g, ksize=[1, 2, 2, 1], strides=[1, 1, 1, 1], padding="SAME"), [1, 4, 4, 2]),
    "AvgPoolGrad": (lambda g: R.AvgPoolGrad(
        orig_input_shape=np.int32([1, 4, 4, 2]), grad=g, ksize=[1, 3, 3, 1],
        strides=[1, 2, 2, 1], padding="SAME"), [1, 2, 2, 2]),
    "AvgPool3DGrad": (lambda g: R.AvgPool3DGrad(
        orig_input_shape=np.int32([1, 2, 3, 3, 1]), grad=g, ksize=[1, 2, 2, 2, 1],
        strides=[1, 1, 1, 1, 1], padding="VALID"), [1, 1, 2, 2, 1]),
}


@pytest.mark.parametrize("case", sorted(GRADIENT_CASES))
def test_gradient_matches_central_differences(case):
    build, shape = GRADIENT_CASES[case]
    assert _grad_error(build, shape) < 1e-6


def test_float32_only_3d_max_pool_gradients():
    """MaxPool3D and MaxPool3DGrad have no float64 (nor, through its gradient,
    MaxPool3DGradGrad): checked in float32."""
    x3 = X0.reshape(1, 2, 2, 4, 2).astype(np.float32)
    attrs = {"ksize": [1, 2, 1, 2, 1], "strides": [1, 2, 1, 1, 1], "padding": "SAME"}
    assert _grad_error(lambda x: R.MaxPool3D(input=x, **attrs), [1, 3, 2, 4, 2],
                       gp.float32) < 1e-3
    y3 = ref.pool(x3, [2, 1, 2], [2, 1, 1], "SAME", "max").astype(np.float32)
    assert _grad_error(lambda g: R.MaxPool3DGrad(orig_input=x3, orig_output=y3, grad=g,
                                                 **attrs), list(y3.shape), gp.float32) < 1e-3
    assert _grad_error(lambda g: R.MaxPool3DGradGrad(orig_input=x3, orig_output=y3, grad=g,
                                                     **attrs), list(x3.shape), gp.float32) < 1e-3


GRADIENT_OPS = [
    ("MaxPool", lambda x: R.MaxPool(input=x, ksize=[1, 2, 2, 1], strides=[1, 1, 1, 1],
                                    padding="SAME"), {"MaxPoolGrad"}),
    ("MaxPoolV2", lambda x: R.MaxPoolV2(input=x, ksize=np.int32([1, 2, 2, 1]),
                                        strides=np.int32([1, 1, 1, 1]), padding="SAME"),
     {"MaxPoolGradV2"}),
    ("AvgPool", lambda x: R.AvgPool(value=x, ksize=[1, 2, 2, 1], strides=[1, 1, 1, 1],
                                    padding="SAME"), {"AvgPoolGrad"}),
    ("MaxPool3D", lambda x: R.MaxPool3D(input=R.ExpandDims(input=x, axis=np.int32(1)),
                                        ksize=[1, 1, 2, 2, 1], strides=[1] * 5,
                                        padding="SAME"), {"MaxPool3DGrad"}),
    ("AvgPool3D", lambda x: R.AvgPool3D(input=R.ExpandDims(input=x, axis=np.int32(1)),
                                        ksize=[1, 1, 2, 2, 1], strides=[1] * 5,
                                        padding="SAME"), {"AvgPool3DGrad"}),
    ("MaxPoolWithArgmax", lambda x: R.MaxPoolWithArgmax(
        input=x, ksize=[1, 2, 2, 1], strides=[1, 1, 1, 1], padding="SAME").output,
     {"MaxPoolGradWithArgmax"}),
]


@pytest.mark.parametrize("name,build,ops", GRADIENT_OPS, ids=[c[0] for c in GRADIENT_OPS])
def test_gradient_graphs_hold_tfs_ops(name, build, ops):
    g = gp.Graph()
    with g.as_default():
        x = gp.placeholder(gp.float32, [1, 4, 4, 2])
        gp.gradients(build(x), [x])
        assert ops <= {op.type for op in g.get_operations()}


def _backprop(op, x, y, g, v2=False):
    attrs = {"ksize": [1, 2, 2, 1], "strides": [1, 1, 1, 1], "padding": "SAME"}
    if "3D" in op:
        attrs = {"ksize": [1, 1, 2, 2, 1], "strides": [1] * 5, "padding": "SAME"}
    if v2:
        attrs["ksize"], attrs["strides"] = np.int32(attrs["ksize"]), np.int32(attrs["strides"])
    if op.startswith("AvgPool"):
        return getattr(R, op)(orig_input_shape=np.int32(x.shape.as_list()), grad=g, **attrs)
    return getattr(R, op)(orig_input=x, orig_output=y, grad=g, **attrs)


SECOND_ORDER = [("MaxPoolGrad", "MaxPoolGradGrad"), ("MaxPoolGradGrad", "MaxPoolGrad"),
                ("MaxPoolGradV2", "MaxPoolGradGradV2"), ("AvgPoolGrad", "AvgPool"),
                ("MaxPool3DGrad", "MaxPool3DGradGrad"), ("MaxPool3DGradGrad", "MaxPool3DGrad"),
                ("AvgPool3DGrad", "AvgPool3D")]


@pytest.mark.parametrize("op,second", SECOND_ORDER)
def test_second_order_gradients_are_tfs_ops(op, second):
    with gp.Graph().as_default():
        shape = [1, 1, 4, 4, 2] if "3D" in op else [1, 4, 4, 2]
        x, y = gp.placeholder(gp.float32, shape), gp.placeholder(gp.float32, shape)
        g = gp.placeholder(gp.float32, shape)
        dx = _backprop(op, x, y, g, v2=op.endswith("V2"))
        grads = gp.gradients(dx, [x, y, g] if "Max" in op else [g])
        assert grads[-1].op.type == second
        if "Max" in op:
            assert [t.op.type for t in grads[:2]] == ["ZerosLike", "ZerosLike"]


@pytest.mark.parametrize("op", ["MaxPoolGradGradV2", "MaxPoolGradWithArgmax"])
def test_ops_tf_registers_no_gradient_for(op):
    with gp.Graph().as_default():
        x = gp.placeholder(gp.float32, [1, 4, 4, 2])
        y = R.MaxPoolWithArgmax(input=x, ksize=[1, 2, 2, 1], strides=[1, 1, 1, 1],
                                padding="SAME")
        if op == "MaxPoolGradGradV2":
            out = _backprop(op, x, y.output, x, v2=True)
        else:
            out = R.MaxPoolGradWithArgmax(input=x, grad=y.output, argmax=y.argmax,
                                          ksize=[1, 2, 2, 1], strides=[1, 1, 1, 1],
                                          padding="SAME")
        with pytest.raises(LookupError):
            gp.gradients(out, [x])


# ----------------------------------------------------------------------------- GPU


def _gpu_cases():
    rng = np.random.default_rng(7)
    x = _values(rng, [2, 5, 4, 3], np.float32)
    x5 = _values(rng, [1, 3, 4, 3, 2], np.float32)
    k, s = [1, 3, 2, 1], [1, 2, 1, 1]
    y = ref.pool(x, [3, 2], [2, 1], "SAME", "max").astype(np.float32)
    k5, s5 = [1, 2, 2, 2, 1], [1, 1, 2, 1, 1]
    y5 = ref.pool(x5, [2, 2, 2], [1, 2, 1], "SAME", "max").astype(np.float32)
    attrs = {"ksize": k, "strides": s, "padding": "SAME"}
    attrs5 = {"ksize": k5, "strides": s5, "padding": "SAME"}
    _, chosen = ref.argmax_pool(x, [3, 2], [2, 1], "SAME")
    argmax = ref.flat_argmax(x.shape, y.shape, chosen, False)
    return [
        ("MaxPool", {"input": x}, attrs),
        ("MaxPool", {"input": np.moveaxis(x, -1, 1)},
         {"ksize": [1, 1, 3, 2], "strides": [1, 1, 2, 1], "padding": "EXPLICIT",
          "explicit_paddings": [0, 0, 0, 0, 1, 2, 1, 0], "data_format": "NCHW"}),
        ("MaxPoolV2", {"input": x, "ksize": np.int32(k), "strides": np.int32(s)},
         {"padding": "SAME"}),
        ("AvgPool", {"value": x}, attrs),
        ("MaxPool3D", {"input": x5}, attrs5),
        ("AvgPool3D", {"input": x5}, attrs5),
        ("MaxPoolWithArgmax", {"input": x}, {**attrs, "include_batch_in_index": True}),
        ("MaxPoolGrad", {"orig_input": x, "orig_output": y, "grad": y}, attrs),
        ("MaxPoolGradV2", {"orig_input": x, "orig_output": y, "grad": y, "ksize": np.int32(k),
                           "strides": np.int32(s)}, {"padding": "SAME"}),
        ("MaxPoolGradGrad", {"orig_input": x, "orig_output": y, "grad": x}, attrs),
        ("MaxPoolGradGradV2", {"orig_input": x, "orig_output": y, "grad": x,
                               "ksize": np.int32(k), "strides": np.int32(s)},
         {"padding": "SAME"}),
        ("AvgPoolGrad", {"orig_input_shape": np.int32(x.shape), "grad": y}, attrs),
        ("MaxPool3DGrad", {"orig_input": x5, "orig_output": y5, "grad": y5}, attrs5),
        ("MaxPool3DGradGrad", {"orig_input": x5, "orig_output": y5, "grad": x5}, attrs5),
        ("AvgPool3DGrad", {"orig_input_shape": np.int32(x5.shape), "grad": y5}, attrs5),
        ("MaxPoolGradWithArgmax", {"input": x, "grad": y, "argmax": argmax}, attrs),
    ]


GPU_CASES = _gpu_cases()
GPU_DTYPES = {"MaxPool3D": [np.float32, np.float16], "AvgPool3D": [np.float32, np.float64],
              "MaxPool3DGrad": [np.float32, np.float16], "AvgPool": [np.float32, np.float64],
              "AvgPoolGrad": [np.float32, np.float16], "AvgPool3DGrad": [np.float32]}


@pytest.mark.parametrize("op,inputs,attrs", GPU_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(GPU_CASES)])
def test_gpu_matches_cpu(gpu, op, inputs, attrs):
    for dtype in GPU_DTYPES.get(op, [np.float32, np.int32, np.float16]):
        cast = {k: v.astype(dtype) if v.dtype == np.float32 else v for k, v in inputs.items()}
        compare(op, cast, **attrs)


def test_every_pooling_op_is_compared_on_the_gpu():
    from graphops.registry.kernel_registry import registered_kernels
    mine = {k.op for k in registered_kernels() if k.device_type == "GPU"
            and k.kernel_class.__module__ == "graphops.kernels.ops.pooling"}
    assert mine == {op for op, _, _ in GPU_CASES}


# ----------------------------------------------------------------------------- gp.nn


def test_nn_wrappers_match_the_raw_ops(run):
    x = np.random.default_rng(8).standard_normal([1, 5, 4, 2]).astype(np.float32)
    x5 = np.random.default_rng(9).standard_normal([1, 3, 4, 4, 2]).astype(np.float32)
    same = {"ksize": [1, 2, 2, 1], "strides": [1, 2, 2, 1], "padding": "SAME"}
    want = run("MaxPool", input=x, **same)
    for got in (gp.nn.max_pool(x, 2, 2, "SAME"), gp.nn.max_pool(x, [2, 2], [2], "SAME"),
                gp.nn.max_pool2d(x, [1, 2, 2, 1], (2, 2), "SAME"),
                gp.nn.max_pool(None, 2, 2, "SAME", input=x)):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(gp.nn.avg_pool(x, 2, 2, "SAME"),
                                  run("AvgPool", value=x, **same))
    np.testing.assert_array_equal(gp.nn.avg_pool2d(np.moveaxis(x, -1, 1), 2, 2, "SAME",
                                                   data_format="NCHW"),
                                  np.moveaxis(run("AvgPool", value=x, **same), -1, 1))
    explicit = gp.nn.max_pool2d(x, 3, 1, [[0, 0], [1, 1], [2, 0], [0, 0]])
    np.testing.assert_array_equal(explicit, run(
        "MaxPool", input=x, ksize=[1, 3, 3, 1], strides=[1, 1, 1, 1], padding="EXPLICIT",
        explicit_paddings=[0, 0, 1, 1, 2, 0, 0, 0]))
    np.testing.assert_array_equal(gp.nn.max_pool3d(x5, 2, [1, 2, 1], "VALID"), run(
        "MaxPool3D", input=x5, ksize=[1, 2, 2, 2, 1], strides=[1, 1, 2, 1, 1], padding="VALID"))
    np.testing.assert_array_equal(
        gp.nn.avg_pool3d(np.moveaxis(x5, -1, 1), [2, 2, 2], 1, "SAME", data_format="NCDHW"),
        np.moveaxis(run("AvgPool3D", input=x5, ksize=[1, 2, 2, 2, 1], strides=[1] * 5,
                        padding="SAME"), -1, 1))
    out, argmax = gp.nn.max_pool_with_argmax(x, [1, 2, 2, 1], [1, 2, 2, 1], "SAME",
                                             output_dtype=gp.int32)
    assert argmax.dtype == np.int32
    np.testing.assert_array_equal(out, want)


def test_nn_wrappers_in_graph_mode_and_their_errors():
    with gp.Graph().as_default():
        x = gp.placeholder(gp.float32, [None, 4, 4, 3])
        assert gp.nn.max_pool(x, 2, 2, "VALID", name="pool").name == "pool:0"
        assert gp.nn.avg_pool3d(gp.placeholder(gp.float32, [1, 4, 4, 4, 1]), 2, 2,
                                "VALID").shape.as_list() == [1, 2, 2, 2, 1]
        with pytest.raises(ValueError, match="`ksize` cannot be zero"):
            gp.nn.max_pool(x, [0, 2], 1, "VALID")
        with pytest.raises(ValueError, match="ksize should be of length 1, 2 or 4"):
            gp.nn.max_pool2d(x, [2, 2, 2], 1, "VALID")
        with pytest.raises(ValueError, match="not supported with explicit padding"):
            gp.nn.max_pool2d(x, 2, 1, [[0, 0]] * 4, data_format="NCHW_VECT_C")
        with pytest.raises(ValueError, match="values other  than 'NHWC' are not supported"):
            gp.nn.max_pool_with_argmax(x, 2, 2, "VALID", data_format="NCHW")
        with pytest.raises(ValueError, match="Cannot specify both 'value' and 'input'"):
            gp.nn.avg_pool(x, 2, 2, "VALID", input=x)
