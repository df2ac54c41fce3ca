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


def test_a_direct_route_kept_per_signature_skips_the_checks_only_for_that_signature(
        monkeypatch):
    """A conv on the direct kernels' route keeps that route with its checks: later runs of
    the same shapes, dtype and budget call the direct loops straight from ``compute``; a new
    shape, a failing one or a smaller budget goes through the checks again."""
    from graphops.kernels.compiled import usable
    from graphops.kernels.ops import conv as conv_kernels
    if not usable():
        pytest.skip("no compiled loops in this process")
    checked, direct = [], []
    forward, direct_forward = conv_kernels._ForwardKernel.forward, conv_kernels.direct_forward
    monkeypatch.setattr(conv_kernels._ForwardKernel, "forward",
                        lambda self, ctx, x, *a: checked.append(x.shape) or forward(
                            self, ctx, x, *a))
    monkeypatch.setattr(conv_kernels, "direct_forward",
                        lambda x, *a, **k: direct.append(x.shape) or direct_forward(x, *a, **k))
    wv = values((3, 3, 16, 8), 4)
    with gp.Graph().as_default():
        x = gp.placeholder(gp.float32, [None, None, None, None])
        y = gp.nn.relu(gp.nn.conv2d(x, gp.constant(wv), strides=1, padding="SAME"))
        with gp.Session() as sess:
            def check(shape, runs):
                xv = values(shape, sum(shape))
                want = np.maximum(conv_forward_ref(xv, wv, strides=(1, 1), dilations=(1, 1),
                                                   pads=((1, 1), (1, 1))), 0)
                for _ in range(runs):
                    np.testing.assert_allclose(sess.run(y, {x: xv}), want, rtol=1e-4,
                                               atol=1e-4)
            check((1, 12, 12, 16), 3)
            assert checked == [(1, 12, 12, 16)] and direct == [(1, 12, 12, 16)] * 3
            check((2, 12, 12, 16), 2)
            assert checked == [(1, 12, 12, 16), (2, 12, 12, 16)] and len(direct) == 5
            for _ in range(2):
                with pytest.raises(errors.InvalidArgumentError, match="input depth must be"):
                    sess.run(y, {x: values((1, 12, 12, 5), 5)})
            with memory_budget(64), pytest.raises(errors.ResourceExhaustedError,
                                                  match="memory budget of 64 bytes"):
                sess.run(y, {x: values((1, 12, 12, 16), 6)})
            assert checked[2:] == [(1, 12, 12, 16)] and len(direct) == 5   # checked again
            check((1, 12, 12, 16), 1)
            assert len(checked) == 3 and len(direct) == 6
