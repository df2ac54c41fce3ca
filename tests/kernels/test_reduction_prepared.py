"""Sum's and Mean's prepared calls on the host: for fewer values than the column sums take,
one NumPy reduction called directly. They give compute's bits on any shape, axes,
keep_dims and type, for views that are not contiguous too, and a float64 reference's
values."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import graphops as gp
from graphops.kernels.ops import reduction
from graphops.registry.kernel_registry import prepares
from graphops.runtime import steps


def _run(op, x, axes, keep_dims, prepared, runs=2):
    """The op's value, `runs` times in one Session (the later runs: the prepared call), with
    or without the kernel's prepare."""
    with pytest.MonkeyPatch.context() as patch:
        if not prepared:
            patch.setattr(steps, "prepares", lambda kernel_class: False)
        graph = gp.Graph()
        with graph.as_default():
            fed = gp.placeholder(gp.as_dtype(x.dtype), [None] * x.ndim)
            out = getattr(gp.raw_ops, op)(input=fed, axis=np.int32(axes), keep_dims=keep_dims)
        with gp.Session(graph=graph) as sess:
            return [sess.run(out, {fed: x}) for _ in range(runs)]


@st.composite
def _cases(draw):
    shape = tuple(draw(st.lists(st.integers(0, 6), min_size=1, max_size=4)))
    axes = draw(st.lists(st.integers(-len(shape), len(shape) - 1), unique_by=lambda a: a %
                         len(shape), max_size=len(shape)))
    dtype = draw(st.sampled_from([np.float32, np.float64, np.int32]))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    x = (rng.standard_normal(shape) * 100).astype(dtype)
    if draw(st.booleans()) and x.ndim > 1:
        x = np.ascontiguousarray(np.swapaxes(x, 0, -1)).swapaxes(0, -1)    # not C-contiguous
    return x, axes, draw(st.booleans()), draw(st.sampled_from(["Sum", "Mean"]))


@settings(max_examples=60, deadline=None)
@given(_cases())
def test_the_prepared_call_gives_computes_bits(case):
    assert prepares(reduction.SumOp) and prepares(reduction.MeanOp)
    x, axes, keep_dims, op = case
    if op == "Mean" and x.dtype == np.int32:
        op = "Sum"                    # integer means divide in compute's own way
    with np.errstate(invalid="ignore"):
        first, again = _run(op, x, axes, keep_dims, prepared=True)
        (computed,) = _run(op, x, axes, keep_dims, prepared=False, runs=1)
        want = np.sum(x, axis=tuple(axes), dtype=np.float64, keepdims=keep_dims)
        if op == "Mean":
            want = want / max(1, np.prod([x.shape[a] for a in axes], dtype=np.int64))
    for got in (first, again):
        assert got.dtype == x.dtype and got.shape == computed.shape
        assert got.tobytes() == computed.tobytes()
    if op == "Mean" and not np.prod([x.shape[a] for a in axes]):
        assert np.isnan(again).all()            # an empty mean: 0 / 0
    elif x.dtype == np.int32:
        np.testing.assert_array_equal(again, want.astype(np.int64).astype(np.int32))
    else:
        np.testing.assert_allclose(again, want.astype(x.dtype), rtol=1e-6)
