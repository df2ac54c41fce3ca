"""gp.gradients and the gradient registry; numeric checks of every everyday op's gradient.

Each gradient function is checked with gp.test.compute_gradient_error (central differences
of the forward kernels vs the symbolic Jacobian), in float64, with the inputs fed through
placeholders of static shape and of unknown dims (which takes the Shape /
BroadcastGradientArgs paths instead of build-time constants).
"""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import graphops as gp
from graphops.autodiff.gradients import deregister_gradient, get_gradient_function
from graphops.kernels.ops.gradient import broadcast_reduction_axes
from graphops.registry import errors, list_ops, get_op_def, register_kernel, register_op, OpKernel
from graphops.registry.kernel_registry import deregister_kernels
from graphops.registry.op_registry import deregister_op

TOL = 1e-5      # central differences (delta 1e-3) are exact to ~f'''(x) * 1e-6 / 6


def _check(build, inputs, static=True, tol=TOL):
    """Largest Jacobian error of `build(*placeholders)` at the float64 points `inputs`."""
    g = gp.Graph()
    with g.as_default():
        xs = [gp.placeholder(gp.float64, v.shape if static else [None] * v.ndim) for v in inputs]
        y = build(*xs)
        with gp.Session(graph=g) as sess:
            y_shape = np.shape(sess.run(y, dict(zip(xs, inputs))))
            error = gp.test.compute_gradient_error(xs, [v.shape for v in inputs], y, y_shape,
                                                   x_init_value=inputs)
    assert error < tol
    return error


def _rand(rng, *shape, low=-1.0, high=1.0):
    return rng.uniform(low, high, size=shape)


def _probabilities(rng, *shape):
    """Rows that sum to 1 (the fused softmax cross-entropy's backprop assumes it)."""
    p = rng.uniform(0.1, 1.0, size=shape)
    return p / p.sum(axis=-1, keepdims=True)


def _away_from_zero(rng, *shape):
    return rng.uniform(0.1, 1.0, size=shape) * rng.choice([-1.0, 1.0], size=shape)


R = gp.raw_ops
CASES = {
    # name: (build, input maker(rng))
    "AddV2": (lambda x, y: R.AddV2(x=x, y=y), lambda r: [_rand(r, 2, 3), _rand(r, 3)]),
    "AddV2_both_broadcast": (lambda x, y: R.AddV2(x=x, y=y),
                             lambda r: [_rand(r, 2, 1, 3), _rand(r, 4, 1)]),
    "Sub": (lambda x, y: R.Sub(x=x, y=y), lambda r: [_rand(r, 1, 3), _rand(r, 2, 1)]),
    "Mul": (lambda x, y: R.Mul(x=x, y=y), lambda r: [_rand(r, 2, 3), _rand(r, 2, 1)]),
    "RealDiv": (lambda x, y: R.RealDiv(x=x, y=y),
                lambda r: [_rand(r, 2, 3), _rand(r, 3, low=1, high=2)]),
    "Maximum": (lambda x, y: R.Maximum(x=x, y=y), lambda r: [_rand(r, 2, 3), _rand(r, 3)]),
    "Minimum": (lambda x, y: R.Minimum(x=x, y=y), lambda r: [_rand(r, 2, 3), _rand(r, 2, 3)]),
    "Neg": (lambda x: R.Neg(x=x), lambda r: [_rand(r, 4)]),
    "Square": (lambda x: R.Square(x=x), lambda r: [_rand(r, 2, 2)]),
    "Sqrt": (lambda x: R.Sqrt(x=x), lambda r: [_rand(r, 5, low=0.5, high=2)]),
    "Rsqrt": (lambda x: R.Rsqrt(x=x), lambda r: [_rand(r, 5, low=0.5, high=2)]),
    "Exp": (lambda x: R.Exp(x=x), lambda r: [_rand(r, 3, 2)]),
    "Log": (lambda x: R.Log(x=x), lambda r: [_rand(r, 3, low=0.5, high=2)]),
    "Tanh": (lambda x: R.Tanh(x=x), lambda r: [_rand(r, 3)]),
    "Sigmoid": (lambda x: R.Sigmoid(x=x), lambda r: [_rand(r, 3)]),
    "Cast": (lambda x: R.Cast(x=R.Cast(x=x, DstT=gp.float32), DstT=gp.float64) * x,
             lambda r: [_rand(r, 3)]),
    "MatMul": (lambda a, b: R.MatMul(a=a, b=b), lambda r: [_rand(r, 2, 3), _rand(r, 3, 4)]),
    "MatMul_ta": (lambda a, b: R.MatMul(a=a, b=b, transpose_a=True),
                  lambda r: [_rand(r, 3, 2), _rand(r, 3, 4)]),
    "MatMul_tb": (lambda a, b: R.MatMul(a=a, b=b, transpose_b=True),
                  lambda r: [_rand(r, 2, 3), _rand(r, 4, 3)]),
    "MatMul_ta_tb": (lambda a, b: R.MatMul(a=a, b=b, transpose_a=True, transpose_b=True),
                     lambda r: [_rand(r, 3, 2), _rand(r, 4, 3)]),
    "Sum": (lambda x: R.Sum(input=x, axis=np.int32([0, 2])),
            lambda r: [_rand(r, 2, 3, 2)]),
    "Sum_keep_dims_negative": (lambda x: R.Sum(input=x, axis=np.int32(-1),
                                               keep_dims=True), lambda r: [_rand(r, 2, 3)]),
    "Mean": (lambda x: R.Mean(input=x, axis=np.int32([1])),
             lambda r: [_rand(r, 2, 3, 2)]),
    "Mean_all_keep_dims": (lambda x: R.Mean(input=x, axis=np.int32([0, 1]),
                                            keep_dims=True), lambda r: [_rand(r, 2, 3)]),
    "Identity": (lambda x: R.Identity(input=x) * x, lambda r: [_rand(r, 3)]),
    "PlaceholderWithDefault": (lambda x: R.PlaceholderWithDefault(input=x, shape=[None, 2]),
                               lambda r: [_rand(r, 3, 2)]),
    "Reshape": (lambda x: R.Reshape(tensor=x, shape=np.int32([3, -1])) * np.arange(4.0),
                lambda r: [_rand(r, 2, 6)]),
    "ExpandDims": (lambda x: R.ExpandDims(input=x, axis=np.int32(1)), lambda r: [_rand(r, 3, 2)]),
    "Squeeze": (lambda x: R.Squeeze(input=x, axis=[1]), lambda r: [_rand(r, 3, 1, 2)]),
    "Transpose": (lambda x: R.Transpose(x=x, perm=np.int32([2, 0, 1])) * np.arange(2.0),
                  lambda r: [_rand(r, 3, 2, 3)]),
    "Fill": (lambda v: R.Fill(dims=np.int32([2, 3]), value=R.Reshape(tensor=v, shape=np.int32(
        []))) * np.arange(6.0).reshape(2, 3), lambda r: [_rand(r, 1)]),
    "Pack": (lambda x, y: R.Pack(values=[x, y, x], axis=1) * np.arange(6.0).reshape(2, 3, 1),
             lambda r: [_rand(r, 2, 1), _rand(r, 2, 1)]),
    "Pack_negative_axis": (lambda x, y: R.Pack(values=[x, y], axis=-1),
                           lambda r: [_rand(r, 2, 3), _rand(r, 2, 3)]),
    "ConcatV2": (lambda x, y: R.ConcatV2(values=[x, y, x], axis=np.int32(1)),
                 lambda r: [_rand(r, 2, 1), _rand(r, 2, 3)]),
    "ConcatV2_axis0": (lambda x, y: R.ConcatV2(values=[y, x], axis=np.int32(-2)),
                       lambda r: [_rand(r, 2, 3), _rand(r, 1, 3)]),
    "Tile": (lambda x: R.Tile(input=x, multiples=np.int32([2, 1, 3])),
             lambda r: [_rand(r, 2, 2, 1)]),
    "Relu": (lambda x: R.Relu(features=x), lambda r: [_away_from_zero(r, 3, 4)]),
    "BiasAdd": (lambda x, b: R.BiasAdd(value=x, bias=b) * R.BiasAdd(value=x, bias=b),
                lambda r: [_rand(r, 2, 3, 4), _rand(r, 4)]),
    "BiasAdd_NCHW": (lambda x, b: R.Square(x=R.BiasAdd(value=x, bias=b, data_format="NCHW")),
                     lambda r: [_rand(r, 2, 3, 2, 2), _rand(r, 3)]),
    "Softmax": (lambda x: R.Softmax(logits=x) * np.arange(4.0), lambda r: [_rand(r, 3, 4)]),
    "SparseSoftmaxCrossEntropyWithLogits": (
        lambda x: R.SparseSoftmaxCrossEntropyWithLogits(features=x, labels=np.int64([2, 0, 1]))
        .loss, lambda r: [_rand(r, 3, 4)]),
    "SoftmaxCrossEntropyWithLogits": (
        lambda x, y: R.SoftmaxCrossEntropyWithLogits(features=x, labels=y).loss,
        lambda r: [_rand(r, 3, 4), _probabilities(r, 3, 4)]),
    "SoftmaxCrossEntropyWithLogits_both_outputs": (
        lambda x, y: _both_outputs(R.SoftmaxCrossEntropyWithLogits(features=x, labels=y)),
        lambda r: [_rand(r, 2, 3), _probabilities(r, 2, 3)]),
    "SoftmaxCrossEntropyWithLogits_broadcast_labels": (
        lambda x, y: R.SoftmaxCrossEntropyWithLogits(features=x, labels=y).loss,
        lambda r: [_rand(r, 3, 4), _probabilities(r, 1, 4)]),
}
TOLERANCES = {"Cast": 1e-3}      # the float32 round trip limits the numeric Jacobian
# Broadcasting that only the run shows keeps TF's gradient shape (the broadcast one).
STATIC_ONLY = {"SoftmaxCrossEntropyWithLogits_broadcast_labels"}


def _both_outputs(result):
    """A scalar depending on both outputs of a [2, 3] (loss, backprop) op."""
    weights = np.arange(1.0, 7.0).reshape(2, 3)
    return R.AddV2(x=R.Sum(input=result.loss, axis=np.int32(0)),
                   y=R.Sum(input=result.backprop * weights, axis=np.int32([0, 1])))


@pytest.mark.parametrize("static", [True, False], ids=["static", "unknown_dims"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_gradient_matches_numeric_jacobian(case, static):
    if case in STATIC_ONLY and not static:
        pytest.skip("TF sums no gradient over a broadcast it cannot see while building")
    build, make_inputs = CASES[case]
    _check(build, make_inputs(np.random.default_rng(len(case))), static=static,
           tol=TOLERANCES.get(case, TOL))


def test_slice_gradient():
    inputs = [np.random.default_rng(0).uniform(-1, 1, (3, 4, 2))]
    _check(lambda x: R.Slice(input=x, begin=np.int32([1, 0, 1]), size=np.int32([2, -1, 1])),
           inputs)
    _check(lambda x: R.Slice(input=x, begin=np.int32([1, 0, 1]), size=np.int32([2, -1, 1])),
           inputs, static=False)     # unknown input shape: a Pad (test_dynamic_gradients.py)


def _sum_to(values, shape):
    """Reference: `values` summed over the axes a broadcast of `shape` added or stretched."""
    lead = values.ndim - len(shape)
    values = values.sum(axis=tuple(range(lead)))
    stretched = tuple(i for i, d in enumerate(shape) if d == 1 and values.shape[i] != 1)
    return values.sum(axis=stretched, keepdims=True)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(1, 3), max_size=4), st.data())
def test_broadcasting_gradients_sum_to_each_operand(out_dims, data):
    """Any broadcast-compatible pair: d/dx and d/dy of sum(w * (x + y)) and sum(w * x * y)."""
    operands = []
    for _ in range(2):
        rank = data.draw(st.integers(0, len(out_dims)))
        dims = out_dims[len(out_dims) - rank:]
        operands.append([d if data.draw(st.booleans()) else 1 for d in dims])
    static = data.draw(st.booleans())
    rng = np.random.default_rng(len(out_dims))
    x, y = rng.normal(size=operands[0]), rng.normal(size=operands[1])
    w = rng.normal(size=np.broadcast_shapes(x.shape, y.shape))
    g = gp.Graph()
    with g.as_default():
        px = gp.placeholder(gp.float64, x.shape if static else [None] * x.ndim)
        py = gp.placeholder(gp.float64, y.shape if static else [None] * y.ndim)
        grads = gp.gradients(gp.reduce_sum((px + py) * w), [px, py]) + \
            gp.gradients(gp.reduce_sum(px * py * w), [px, py])
        with gp.Session(graph=g) as sess:
            got = sess.run(grads, {px: x, py: y})
    want = [_sum_to(w, x.shape), _sum_to(w, y.shape), _sum_to(w * y, x.shape),
            _sum_to(w * x, y.shape)]
    for a, b in zip(got, want):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_run_time_broadcasting_gradients_share_one_broadcast_gradient_args():
    """Shapes known only at run time: both operands' gradients read one
    BroadcastGradientArgs of the operands' two Shapes (TF's graph), not one per operand."""
    with gp.Graph().as_default() as g:
        x, y = gp.placeholder(gp.float32, None), gp.placeholder(gp.float32, None)
        before = len(g.get_operations())
        grads = gp.gradients(x * y, [x, y])
        made = g.get_operations()[before:]
        assert [op.type for op in made].count("BroadcastGradientArgs") == 1
        assert sorted(op.inputs[0].name for op in made if op.type == "Shape"
                      and op.inputs[0] in (x, y)) == sorted([x.name, y.name])
        feed = {x: np.float32([[1, 2, 3], [4, 5, 6]]), y: np.float32([0.5, -1, 2])}
        with gp.Session() as sess:
            grad_x, grad_y = sess.run(grads, feed)
    np.testing.assert_array_equal(grad_x, np.broadcast_to(feed[y], (2, 3)))
    np.testing.assert_array_equal(grad_y, feed[x].sum(axis=0))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 3), max_size=4), st.lists(st.integers(0, 3), max_size=4))
def test_broadcast_gradient_args_kernel(s0, s1):
    """r0/r1 are the axes where each (left-padded) shape is 1; incompatible shapes fail."""
    rank = max(len(s0), len(s1))
    x, y = [1] * (rank - len(s0)) + s0, [1] * (rank - len(s1)) + s1
    compatible = all(a == b or 1 in (a, b) for a, b in zip(x, y))
    call = lambda: gp.raw_ops.BroadcastGradientArgs(s0=np.int32(s0), s1=np.int32(s1))  # noqa: E731
    if not compatible:
        with pytest.raises(errors.InvalidArgumentError, match="Incompatible shapes"):
            call()
        return
    r0, r1 = call()
    assert list(r0) == [i for i in range(rank) if x[i] == 1]
    assert list(r1) == [i for i in range(rank) if y[i] == 1]
    assert r0.dtype == np.int32
    assert broadcast_reduction_axes(s0, s1) == (list(r0), list(r1))


# ----------------------------------------------------------------------------- gp.gradients


def test_gradients_sum_over_consumers_and_name_scopes():
    g = gp.Graph()
    with g.as_default():
        x = gp.placeholder(gp.float32, [3], name="x")
        y = x * x + x
        (dx,) = gp.gradients(y, [x])
        with gp.Session() as sess:
            got = sess.run(dx, {x: [1.0, 2.0, -3.0]})
    np.testing.assert_array_equal(got, [3.0, 5.0, -5.0])
    names = [op.name for op in g.get_operations()]
    grad_names = names[names.index("gradients/grad_ys_0"):]
    assert all(n.startswith("gradients/") for n in grad_names)
    assert "gradients/mul_grad/Mul" in grad_names
    assert any(op.type == "AddV2" and op.name.startswith("gradients/x_sum")
               for op in g.get_operations())


def test_gradients_unconnected_stop_and_grad_ys():
    g = gp.Graph()
    with g.as_default():
        x = gp.placeholder(gp.float32, [2], name="x")
        z = gp.placeholder(gp.float32, [2], name="z")
        h = x * 3.0
        y = h * x
        assert gp.gradients(y, [z]) == [None]
        (zero,) = gp.gradients(y, [z], unconnected_gradients="zero")
        (stopped,) = gp.gradients(y, [x], stop_gradients=[h])
        (seeded,) = gp.gradients(y, [x], grad_ys=[np.float32([1.0, 10.0])])
        with gp.Session() as sess:
            got = sess.run([zero, stopped, seeded], {x: [1.0, 2.0], z: [5.0, 5.0]})
    np.testing.assert_array_equal(got[0], [0.0, 0.0])
    np.testing.assert_array_equal(got[1], [3.0, 6.0])        # h held constant
    np.testing.assert_array_equal(got[2], [6.0, 120.0])      # d(3x^2) = 6x, seeded 1 and 10
    with pytest.raises(ValueError, match="unconnected_gradients"):
        gp.gradients(y, [x], unconnected_gradients="sometimes")
    with pytest.raises(ValueError, match="Passed 2 grad_ys for 1 ys"):
        gp.gradients(y, [x], grad_ys=[1.0, 2.0])


def test_gradient_of_y_with_respect_to_itself_is_the_seed():
    with gp.Graph().as_default():
        x = gp.placeholder(gp.float32, [2])
        (dx,) = gp.gradients(x, x)
        with gp.Session() as sess:
            np.testing.assert_array_equal(sess.run(dx, {x: [4.0, 5.0]}), [1.0, 1.0])


def test_not_differentiable_ops_stop_gradients_without_error():
    with gp.Graph().as_default():
        x = gp.placeholder(gp.float32, [2])
        y = gp.raw_ops.StopGradient(input=x) * x + gp.raw_ops.Cast(
            x=gp.raw_ops.Shape(input=x), DstT=gp.float32)
        (dx,) = gp.gradients(y, [x])
        with gp.Session() as sess:
            np.testing.assert_array_equal(sess.run(dx, {x: [2.0, 3.0]}), [2.0, 3.0])


@pytest.fixture
def custom_op(request):
    """A fresh op name; op, kernels and gradient are removed afterwards."""
    name = "GradTest" + request.node.name.title().replace("_", "")[:30]
    yield name
    deregister_gradient(name)
    deregister_kernels(name)
    deregister_op(name)


def _register_cube(name):
    register_op(name).input("x: T").output("y: T").attr("T: {float, double}") \
        .set_shape_fn(lambda c: c.set_output(0, c.input(0)))

    @register_kernel(name, type_constraints={"T": [gp.float32, gp.float64]})
    class Cube(OpKernel):
        def compute(self, ctx):
            ctx.set_output(0, ctx.input(0) ** 3)


def test_missing_gradient_raises_lookup_error_naming_the_op(custom_op):
    _register_cube(custom_op)
    with gp.Graph().as_default():
        x = gp.placeholder(gp.float32, [2])
        y = getattr(gp.raw_ops, custom_op)(x=x, name="cube")
        with pytest.raises(LookupError, match=rf"^No gradient defined for operation 'cube' "
                                              rf"\(op type: {custom_op}\)$"):
            gp.gradients(y, [x])
        gp.gradients(y, [x], stop_gradients=[y])        # a stop gradient avoids the lookup


def test_extension_author_registers_a_gradient_and_checks_it(custom_op):
    _register_cube(custom_op)

    @gp.RegisterGradient(custom_op)
    def _cube_grad(op, grad):
        x = op.inputs[0]
        return [grad * 3.0 * x * x]

    assert get_gradient_function(type("Op", (), {"type": custom_op})) is _cube_grad
    _check(lambda x: getattr(gp.raw_ops, custom_op)(x=x), [np.array([0.5, -1.0, 2.0])])
    with pytest.raises(KeyError, match=f"Registering two gradient with name '{custom_op}'"):
        gp.RegisterGradient(custom_op)(_cube_grad)


def test_registry_rejects_bad_names_and_gradient_count(custom_op):
    with pytest.raises(TypeError, match="op_type must be a string"):
        gp.RegisterGradient(3)
    with pytest.raises(TypeError, match="op_type must be a string"):
        gp.NotDifferentiable(None)
    _register_cube(custom_op)
    gp.RegisterGradient(custom_op)(lambda op, grad: [grad, grad])
    with gp.Graph().as_default():
        x = gp.placeholder(gp.float32, [2])
        y = getattr(gp.raw_ops, custom_op)(x=x)
        with pytest.raises(ValueError, match="Num gradients 2 generated for op .* do not match "
                                             "num inputs 1"):
            gp.gradients(y, [x])


def test_wrong_gradient_shape_is_reported(custom_op):
    _register_cube(custom_op)
    gp.RegisterGradient(custom_op)(lambda op, grad: [gp.reduce_sum(grad, keepdims=True)])
    with gp.Graph().as_default():
        x = gp.placeholder(gp.float32, [3])
        y = getattr(gp.raw_ops, custom_op)(x=x, name="cube")
        with pytest.raises(ValueError, match=r"Incompatible shapes between op input and "
                                             r"calculated input gradient. Forward operation: "
                                             r"cube. Input index: 0. Original input shape: "
                                             r"\(3,\). Calculated input gradient shape: \(1,\)"):
            gp.gradients(y, [x])


# Ops that intentionally have no gradient registration: stateful ops (their outputs are
# handles or nothing) and TF's DTensor-only V2 conv backprops (no kernels, no TF gradient).
WITHOUT_GRADIENT = {
    "AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp", "ResourceApplyAdam",
    "ResourceApplyGradientDescent", "ResourceApplyMomentum", "Conv2DBackpropInputV2",
    "Conv2DBackpropFilterV2", "Placeholder", "Const", "NoOp",
    "Conv", "SoftsignGrad",     # TF registers no gradient for these either
    "LRNGrad", "ResizeNearestNeighborGrad",
    "MaxPoolGradGradV2", "MaxPoolGradWithArgmax",
    # TF1 reference ops TF neither differentiates nor marks (state_grad.py skips them)
    "ScatterUpdate", "ScatterMin", "ScatterMax", "IsVariableInitialized",
    "DestroyTemporaryVariable",
    "DisableCopyOnRead",       # no outputs; TF registers no gradient
    # TF marks only the V1 stack ops; a gradient through the V2 ones is a LookupError there
    "StackV2", "StackPushV2", "StackPopV2", "StackCloseV2",
    # TF registers no gradient for these either (a gradient through them is a LookupError)
    "NonMaxSuppressionV3", "NonMaxSuppressionV4", "NonMaxSuppressionV5",
    "CombinedNonMaxSuppression", "CropAndResizeGradImage", "CropAndResizeGradBoxes",
    "CholeskyGrad", "Lu", "MatrixExponential",
    "SparseFillEmptyRowsGrad", "SparseReshape", "SparseSliceGrad", "SparseReduceSumSparse",
    "SparseSplit", "SparseSegmentSumGrad", "SparseSegmentMeanGrad", "SparseSegmentSqrtNGrad",
    "SparseSegmentSumGradV2", "SparseSegmentMeanGradV2", "SparseSegmentSqrtNGradV2",
    "LSTMBlockCell", "LSTMBlockCellGrad", "BlockLSTMGrad", "BlockLSTMGradV2", "GRUBlockCell",
    "GRUBlockCellGrad", "CudnnRNNBackprop", "CudnnRNNBackpropV2", "CudnnRNNBackpropV3",
    "CudnnRNNParamsSize", "CudnnRNNParamsToCanonical", "CudnnRNNParamsToCanonicalV2",
    "CudnnRNNCanonicalToParams", "CudnnRNNCanonicalToParamsV2",
    "Fingerprint", "LookupTableExportV2", "LookupTableImportV2", "LookupTableRemoveV2",
    "RegexFullMatch", "StaticRegexReplace", "StringLength", "StringLower", "StringSplitV2",
    "StringStrip", "StringUpper", "Substr", "UnicodeDecode", "UnicodeDecodeWithOffsets",
    "UnicodeEncode", "UnicodeTranscode", "UnsortedSegmentJoin",
    "RFFT3D", "IRFFT3D", "FFTND", "IFFTND", "RFFTND", "IRFFTND",
    "AdjustContrastv2", "AdjustHue", "AdjustSaturation", "ResizeBicubicGrad", "ResizeArea",
    "ScaleAndTranslateGrad", "DecodePng", "EncodePng", "DecodeJpeg", "EncodeJpeg",
    "DecodeImage", "DecodeBmp", "DecodeGif",
    "RandomPoisson", "RandomPoissonV2", "RandomGammaGrad", "StatelessSampleDistortedBoundingBox",
    "AssertCardinalityDataset", "BatchDatasetV2", "CacheDataset", "CacheDatasetV2",
    "ConcatenateDataset", "DatasetCardinality", "DeleteIterator", "FilterDataset",
    "FlatMapDataset", "IteratorFromStringHandleV2", "IteratorGetNext", "IteratorGetNextSync",
    "IteratorToStringHandle", "MakeIterator", "MapDataset", "ModelDataset", "OptimizeDataset",
    "OptimizeDatasetV2", "OptionsDataset", "PaddedBatchDatasetV2", "ParallelMapDatasetV2",
    "PrefetchDataset", "RangeDataset", "RepeatDataset", "ShuffleDataset", "ShuffleDatasetV2",
    "ShuffleDatasetV3", "SkipDataset", "TFRecordDataset", "TakeDataset", "TensorDataset",
    "TensorSliceDataset", "TextLineDataset", "ZipDataset",
    "Bincount", "DenseBincount", "ListDiff", "UniqueWithCounts", "UniqueV2", "UniqueWithCountsV2",
    "Mod", "TruncateMod",
    "QueueEnqueueV2", "QueueEnqueueManyV2", "QueueDequeueV2", "QueueDequeueManyV2",
    "QueueDequeueUpToV2", "QueueCloseV2", "QueueSizeV2", "QueueIsClosedV2", "QueueIsClosed",
    "QuantizeV2", "Dequantize", "RaggedTensorToVariantGradient",
    "CountUpTo", "ResourceCountUpTo", "DecodeCSV", "ParseExampleV2", "ParseSingleExample",
    "ReaderReadV2", "ReaderReadUpToV2", "ReaderNumRecordsProducedV2",
    "ReaderNumWorkUnitsCompletedV2", "ReaderResetV2",
    "FixedLengthRecordDataset", "FixedLengthRecordDatasetV2", "InterleaveDataset",
    "ParallelInterleaveDatasetV4", "UnbatchDataset", "ShardDataset", "GeneratorDataset",
    "WindowDataset", "DirectedInterleaveDataset", "LegacyParallelInterleaveDatasetV2",
    "IgnoreErrorsDataset", "DatasetToSingleElement"}


BUILT_IN_OPS = {n for n in list_ops() if get_op_def(n).module.startswith("graphops.registry.op_defs.")}


def test_every_op_with_inputs_has_a_gradient_or_is_declared_not_differentiable():
    assert {"Conv2D", "MatMul", "Relu"} <= BUILT_IN_OPS     # the filter above finds them
    missing = []
    for name in sorted(BUILT_IN_OPS - WITHOUT_GRADIENT):
        op_def = get_op_def(name)
        if not op_def.input_arg:
            continue
        try:
            get_gradient_function(type("Op", (), {"type": name, "name": name}))
        except LookupError:
            missing.append(name)
    assert not missing
