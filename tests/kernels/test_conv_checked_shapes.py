"""A conv kernel keeps its shape checks' answers per signature (kernels/ops/conv.py,
``_checked``): what it keeps must never outlive what it depends on (the memory budget), a
failed check is never kept, and every signature gets its own answer."""

import numpy as np
import pytest

import graphops as gp
from graphops.registry import errors
from graphops.runtime.config import memory_budget
from tests.reference_conv import conv_forward_ref


@pytest.fixture
def conv_node():
    with gp.Graph().as_default():
        x = gp.placeholder(gp.float32, [None, None, None, None], name="x")
        w = gp.placeholder(gp.float32, [2, 2, 3, 4], name="w")
        y = gp.nn.conv2d(x, w, strides=1, padding="VALID", name="conv")
        with gp.Session() as sess:
            yield lambda xv, wv: sess.run(y, {x: xv, w: wv})


def values(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_each_shape_signature_gets_its_own_geometry(conv_node):
    wv = values((2, 2, 3, 4), 0)
    for shape in [(1, 5, 5, 3), (2, 3, 7, 3), (1, 5, 5, 3), (3, 2, 2, 3)]:
        xv = values(shape, sum(shape))
        got = conv_node(xv, wv)
        want = conv_forward_ref(xv, wv, strides=(1, 1), dilations=(1, 1), pads=((0, 0), (0, 0)))
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_a_failed_check_raises_again_and_a_smaller_budget_is_seen(conv_node):
    wv = values((2, 2, 3, 4), 1)
    for _ in range(2):
        with pytest.raises(errors.InvalidArgumentError,
                           match="input depth must be evenly divisible by filter depth: 5 vs 3"):
            conv_node(values((1, 4, 4, 5), 2), wv)
    xv = values((1, 6, 6, 3), 3)
    conv_node(xv, wv)                       # this signature's checks are now kept
    with memory_budget(64), pytest.raises(errors.ResourceExhaustedError,
                                          match="memory budget of 64 bytes"):
        conv_node(xv, wv)
    assert conv_node(xv, wv).shape == (1, 5, 5, 4)



@pytest.mark.parametrize("w_shape, padding, path, depthwise", [
    ((3, 3, 16, 8), "SAME", "direct_forward", False),
    ((1, 1, 16, 24), "VALID", "gemm_forward", False),
    ((3, 3, 16, 12), "SAME", "few_positions", False),
    ((3, 3, 16, 2), "SAME", "depthwise_forward", True),
])
def test_a_route_kept_per_signature_skips_the_checks_only_for_that_signature(
        monkeypatch, w_shape, padding, path, depthwise):
    """A forward conv on a path the kernel calls itself (the direct loops, one GEMM, few
    positions, the depthwise loops) keeps that path with its checks (the direct loops with
    their layout): later runs of the same shapes, dtype and budget call it straight from
    ``compute``; a new shape, a failing one or a smaller budget goes through the checks
    again."""
    from graphops.kernels.compiled import usable
    from graphops.kernels.ops import conv as conv_kernels
    if path == "direct_forward" and not usable():
        pytest.skip("no compiled loops in this process")
    checked, taken = [], []
    forward, run_path = conv_kernels._ForwardKernel.forward, getattr(conv_kernels, path)
    monkeypatch.setattr(conv_kernels._ForwardKernel, "forward",
                        lambda self, ctx, x, *a: checked.append(x.shape) or forward(
                            self, ctx, x, *a))
    monkeypatch.setattr(conv_kernels, path,
                        lambda x, *a, **k: taken.append(x.shape) or run_path(x, *a, **k))
    layouts, layout = [], conv_kernels.forward_layout    # the direct loops' kept layout
    monkeypatch.setattr(conv_kernels, "forward_layout",
                        lambda x, *a: layouts.append(x.shape) or layout(x, *a))
    direct = path == "direct_forward"
    wv = values(w_shape, 4)
    pads = ((1, 1), (1, 1)) if padding == "SAME" else ((0, 0), (0, 0))
    with gp.Graph().as_default():
        x = gp.placeholder(gp.float32, [None, None, None, None])
        conv = (gp.nn.depthwise_conv2d(x, gp.constant(wv), [1, 1, 1, 1], padding)
                if depthwise else gp.nn.conv2d(x, gp.constant(wv), strides=1, padding=padding))
        y = gp.nn.relu(conv)
        with gp.Session() as sess:
            def check(shape, runs):
                xv = values(shape, sum(shape))
                if depthwise:       # the depthwise conv as a grouped one: a channel a group
                    ref = np.concatenate(
                        [conv_forward_ref(xv[..., c:c + 1], wv[:, :, c:c + 1], strides=(1, 1),
                                          dilations=(1, 1), pads=pads)
                         for c in range(shape[-1])], axis=-1)
                else:
                    ref = conv_forward_ref(xv, wv, strides=(1, 1), dilations=(1, 1), pads=pads)
                for _ in range(runs):
                    np.testing.assert_allclose(sess.run(y, {x: xv}), np.maximum(ref, 0),
                                               rtol=1e-4, atol=1e-4)
            first, second = (1, 2, 2, 16), (2, 2, 2, 16)
            check(first, 3)
            assert checked == [first] and taken == [first] * 3
            assert layouts == [first] * direct
            check(second, 2)
            assert checked == [first, second] and len(taken) == 5
            assert layouts == [first, second] * direct
            for _ in range(2):
                with pytest.raises(errors.InvalidArgumentError, match=(
                        "input and filter must have the same depth: 5 vs 16" if depthwise
                        else "input depth must be evenly divisible by filter depth: 5 vs 16")):
                    sess.run(y, {x: values((1, 2, 2, 5), 5)})
            with memory_budget(64), pytest.raises(errors.ResourceExhaustedError,
                                                  match="memory budget of 64 bytes"):
                sess.run(y, {x: values(first, 6)})
            assert checked[2:] == [first] and len(taken) == 5     # checked again
            check(first, 1)
            assert len(checked) == 3 and len(taken) == 6
