"""A residual block's fused conv and its ``Relu(Add(y, b))`` joined in one step
(``fusion.ConvSumActivation``): which graphs join, that the step gives the unfused graph's
bits (NaN, infinities and -0 included) and a float64 reference's values, and that what the
plan cannot take at run time runs the nodes' own kernels with their own errors."""

import numpy as np
import pytest

import graphops as gp
from graphops.runtime import elementwise_clusters, fusion
from tests.graphops.runtime.test_fusion import (_assert_same_bits_as_unfused, _hostile,
                                                _kernel_types, _run)
from tests.op_runners import plan_kernel_steps
from tests.reference_conv import conv_forward_ref

CASES = {   # name: (x shape, filter shape, stride): the conv paths the joined step meets
    "direct micro-kernels": ((2, 8, 8, 3), (3, 3, 3, 16), 1),
    "pointwise": ((2, 6, 6, 32), (1, 1, 32, 64), 1),
    "Winograd": ((4, 16, 16, 16), (3, 3, 16, 20), 1),
    "patch matrices": ((2, 9, 9, 3), (3, 3, 3, 20), 2),
    "3-D, strided": ((2, 8, 8, 8, 8), (3, 3, 3, 8, 16), 2),
}


@pytest.fixture(autouse=True)
def graph():
    """A default graph; the nodes no chain takes stay steps of their own."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(elementwise_clusters, "find_clusters", lambda fusion: {})
        g = gp.Graph()
        with g.as_default():
            yield g


def _residual_block(rng, x_shape, w_shape, stride, activation=gp.nn.relu, y_first=True):
    """x, the shortcut b and ``activation(bias_add(conv(x)) + b)``."""
    rank = len(x_shape) - 2
    x = gp.placeholder(gp.float32, [None, *x_shape[1:]])
    w = gp.constant(rng.standard_normal(w_shape).astype(np.float32))
    conv = gp.nn.conv2d if rank == 2 else gp.nn.conv3d
    y = gp.nn.bias_add(conv(x, w, [1, *[stride] * rank, 1], "SAME"),
                       gp.constant(rng.standard_normal(w_shape[-1]).astype(np.float32)))
    b = gp.placeholder(gp.float32, y.shape)
    return x, b, activation(y + b if y_first else gp.add(b, y))


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("activation", [gp.nn.relu, gp.nn.relu6])
def test_a_conv_and_its_residual_sum_run_as_one_step_bit_for_bit(case, activation,
                                                                 monkeypatch):
    """Conv + BiasAdd + AddV2 of a run-time shortcut + Relu/Relu6 is one step on every
    path of the conv, with the unfused graph's bits on hostile values (the shortcut
    either input of the sum; residual tensors on one core and on both)."""
    x_shape, w_shape, stride = CASES[case]
    rng = np.random.default_rng(7)
    for y_first in (True, False):
        x, b, out = _residual_block(rng, x_shape, w_shape, stride, activation, y_first)
        assert _kernel_types([out], [x, b]) == ["ConvSumActivation"]
        b_shape = (x_shape[0], *(-(-size // stride) for size in x_shape[1:-1]), w_shape[-1])
        feed = {x: _hostile(rng, x_shape, np.float32), b: _hostile(rng, b_shape, np.float32)}
        for threshold in (1, 1 << 30):
            monkeypatch.setattr(fusion, "RESIDUAL_PARALLEL_MIN_SIZE", threshold)
            _assert_same_bits_as_unfused([out], feed, monkeypatch)


def test_the_joined_step_matches_a_float64_reference():
    """relu(conv(x, w) + bias + b) against an obvious float64 conv (finite values)."""
    rng = np.random.default_rng(8)
    x_value = rng.standard_normal((2, 7, 7, 4)).astype(np.float32)
    w_value = rng.standard_normal((3, 3, 4, 24)).astype(np.float32)
    bias_value = rng.standard_normal(24).astype(np.float32)
    b_value = rng.standard_normal((2, 7, 7, 24)).astype(np.float32)
    x = gp.placeholder(gp.float32, [None, 7, 7, 4])
    b = gp.placeholder(gp.float32, [None, 7, 7, 24])
    y = gp.nn.bias_add(gp.nn.conv2d(x, gp.constant(w_value), [1, 1, 1, 1], "SAME"),
                       gp.constant(bias_value))
    out = gp.nn.relu(y + b)
    assert _kernel_types([out], [x, b]) == ["ConvSumActivation"]
    got = _run(out, {x: x_value, b: b_value})
    want = np.maximum(conv_forward_ref(x_value, w_value, (1, 1), (1, 1), ((1, 1), (1, 1)))
                      + bias_value + b_value, 0)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)


def test_a_batch_norm_scale_folded_into_the_joined_conv(monkeypatch):
    """A frozen ResNet block's main path: Conv2D, Mul (folded into the filter), AddV2 of
    the shift, AddV2 of the shortcut, Relu: one step, its conv reading the scaled filter,
    with the unfused graph's bits."""
    rng = np.random.default_rng(12)
    x = gp.placeholder(gp.float32, [None, 6, 6, 3])
    w = gp.constant(rng.standard_normal((3, 3, 3, 8)).astype(np.float32))
    scaled = gp.nn.conv2d(x, w, [1, 1, 1, 1], "SAME") * gp.constant(
        rng.standard_normal(8).astype(np.float32))
    shifted = scaled + gp.constant(rng.standard_normal(8).astype(np.float32))
    b = gp.placeholder(gp.float32, [None, 6, 6, 8])
    out = gp.nn.relu(shifted + b)
    assert _kernel_types([out], [x, b]) == ["ConvSumActivation"]
    feed = {x: _hostile(rng, (2, 6, 6, 3), np.float32), b: _hostile(rng, (2, 6, 6, 8), np.float32)}
    _assert_same_bits_as_unfused([out], feed, monkeypatch)


def test_joins_that_must_not_happen():
    """The conv's output or the sum fetched, or read twice, keeps the steps apart."""
    rng = np.random.default_rng(9)
    x, b, out = _residual_block(rng, (1, 6, 6, 8), (3, 3, 8, 16), 1)
    total = out.op.inputs[0]
    y = total.op.inputs[0]
    assert _kernel_types([out, y], [x, b]) == ["ConvChain", "SumActivation"]
    assert _kernel_types([out, total], [x, b])[0] == "ConvChain"
    assert "ConvSumActivation" not in _kernel_types([out, total], [x, b])
    assert "ConvSumActivation" not in _kernel_types([out, y * 2.0], [x, b])
    assert "ConvSumActivation" not in _kernel_types([out], [x, b, y])      # y fed


def test_of_two_fused_convs_the_later_one_joins(monkeypatch):
    """A projection block: both inputs of the sum are fused convs; the one the plan meets
    later joins the sum, the other runs before as its own step."""
    rng = np.random.default_rng(10)
    x = gp.placeholder(gp.float32, [None, 6, 6, 8])
    convs = [gp.nn.bias_add(gp.nn.conv2d(x, gp.constant(rng.standard_normal(
        (k, k, 8, 16)).astype(np.float32)), [1, 1, 1, 1], "SAME"),
        gp.constant(rng.standard_normal(16).astype(np.float32))) for k in (1, 3)]
    out = gp.nn.relu(convs[0] + convs[1])
    steps = plan_kernel_steps([out], [x])
    assert [type(step.kernel).__name__ for step in steps] == ["ConvChain", "ConvSumActivation"]
    assert steps[0].op is convs[0].op
    assert steps[1].kernel.conv is convs[1].op.inputs[0].op
    _assert_same_bits_as_unfused([out], {x: _hostile(rng, (3, 6, 6, 8), np.float32)}, monkeypatch)


def test_a_shortcut_that_broadcasts_at_run_time_runs_the_kernels(monkeypatch):
    """A shortcut whose static shape allowed the join but whose value broadcasts runs the
    nodes' kernels: the broadcast sum's values, and the AddV2 kernel's error where the
    shapes do not broadcast."""
    rng = np.random.default_rng(11)
    x = gp.placeholder(gp.float32, [None, 6, 6, 8])
    y = gp.nn.bias_add(gp.nn.conv2d(x, gp.constant(rng.standard_normal(
        (3, 3, 8, 16)).astype(np.float32)), [1, 1, 1, 1], "SAME"),
        gp.constant(np.zeros(16, np.float32)))
    b = gp.placeholder(gp.float32, [None, None, None, 16])
    out = gp.nn.relu(y + b, name="out")
    assert _kernel_types([out], [x, b]) == ["ConvSumActivation"]
    x_value = rng.standard_normal((2, 6, 6, 8)).astype(np.float32)
    row = rng.standard_normal((1, 1, 1, 16)).astype(np.float32)
    _assert_same_bits_as_unfused([out], {x: x_value, b: row}, monkeypatch)
    with gp.Session() as sess, pytest.raises(gp.errors.InvalidArgumentError,
                                             match="Incompatible shapes"):
        sess.run(out, {x: x_value, b: np.ones((2, 5, 6, 16), np.float32)})


def test_a_joined_conv_s_errors_name_the_conv():
    """Input the conv's kernel rejects runs the nodes' kernels: the error is the conv's."""
    x = gp.placeholder(gp.float32, [None, None, None, None])
    y = gp.nn.bias_add(gp.nn.conv2d(x, gp.constant(np.ones((3, 3, 3, 8), np.float32)),
                                    [1, 1, 1, 1], "SAME", name="the_conv"),
                       gp.constant(np.ones(8, np.float32)))
    b = gp.placeholder(gp.float32, [None, None, None, 8])
    out = gp.nn.relu(y + b)
    assert _kernel_types([out], [x, b]) == ["ConvSumActivation"]
    with gp.Session() as sess, pytest.raises(gp.errors.InvalidArgumentError,
                                             match="the_conv"):
        sess.run(out, {x: np.ones((1, 5, 5, 4), np.float32),
                       b: np.ones((1, 5, 5, 8), np.float32)})
