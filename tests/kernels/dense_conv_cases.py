"""Shared by the dense conv math tests (test_conv_dense_math, test_conv_dense_few_channels,
test_conv_dense_direct): random conv problems, their arrays, the closeness checks against the
slow float64 reference, and a fixture running every case on every intra-op thread."""

import contextlib

import ml_dtypes
import numpy as np
import pytest
from hypothesis import settings, strategies as st

from graphops.kernels.conv_algorithms import dense as conv_dense
from graphops.kernels.conv_algorithms import direct as conv_direct
from graphops.kernels.conv_algorithms import inner_taps
from tests.conv_tolerance import assert_conv_close
from tests.module_settings import module_settings
from tests.reference_conv import conv_forward_ref, output_size

SETTINGS = settings(max_examples=200, deadline=None)


@pytest.fixture(autouse=True)
def on_every_thread(monkeypatch):
    """These small cases run on every intra-op thread, as large ones do, so the shares and
    the pool's splits of every path are what they test (`test_parallelism.py` tests the
    one-thread choice for small convs)."""
    monkeypatch.setattr(conv_dense, "SERIAL_MAX_FLOPS", 0)


FLOAT_DTYPES = [np.float16, ml_dtypes.bfloat16, np.float32, np.float64]


@st.composite
def conv_cases(draw, min_size=0):
    """A random conv problem: geometry per spatial dim, layout and an RNG seed."""
    rank = draw(st.integers(1, 3))
    pointwise = draw(st.integers(0, 3)) == 0  # 1x1 filter, no padding: the GEMM shortcut
    dims = []
    for _ in range(rank):
        k = 1 if pointwise else draw(st.integers(1, 3))
        pad = (0, 0) if pointwise else (draw(st.integers(0, 2)), draw(st.integers(0, 2)))
        dims.append(dict(k=k, s=draw(st.integers(1, 3)), d=draw(st.integers(1, 2)),
                         pad=pad, size=draw(st.integers(min_size, 7))))
    return dict(n=draw(st.integers(min_size, 2)), c=draw(st.integers(min_size, 3)),
                o=draw(st.integers(min_size, 3)), dims=dims,
                channels_last=draw(st.booleans()), seed=draw(st.integers(0, 2**32 - 1)))


def geometry(case):
    dims = case["dims"]
    strides = tuple(d["s"] for d in dims)
    dilations = tuple(d["d"] for d in dims)
    pads = tuple(d["pad"] for d in dims)
    spatial = tuple(d["size"] for d in dims)
    out_sp = tuple(output_size(d["size"], d["k"], d["s"], d["d"], *d["pad"]) for d in dims)
    kernel = tuple(d["k"] for d in dims)
    return strides, dilations, pads, spatial, out_sp, kernel


def layout(shape_last, channels_last):
    """Channels-last shape [N, *S, C] in the requested layout."""
    return shape_last if channels_last else (shape_last[0], shape_last[-1], *shape_last[1:-1])


def arrays(case, dtype):
    """Random x, w, dy of ``dtype`` for ``case``, plus the geometry."""
    strides, dilations, pads, spatial, out_sp, kernel = geometry(case)
    rng = np.random.default_rng(case["seed"])
    cl = case["channels_last"]
    x_shape = layout((case["n"], *spatial, case["c"]), cl)
    dy_shape = layout((case["n"], *out_sp, case["o"]), cl)
    w_shape = (*kernel, case["c"], case["o"])
    if np.dtype(dtype).kind == "i":
        make = lambda shape: rng.integers(-5, 6, shape).astype(dtype)
    else:
        make = lambda shape: rng.uniform(-1, 1, shape).astype(dtype)
    return make(x_shape), make(w_shape), make(dy_shape), (strides, dilations, pads), x_shape


def forward_operands(case, channels, out_channels, fused):
    """x, w, the geometry, the epilogue (a BiasAdd and Relu where ``fused``, else None) and
    the float64 reference's result for the channels-last float32 forward conv of ``case``
    with ``channels`` input and ``out_channels`` output channels."""
    case.update(c=channels, o=out_channels, channels_last=True)
    x, w, _, geo, _ = arrays(case, np.float32)
    want = conv_forward_ref(x.astype(np.float64), w.astype(np.float64), *geo)
    if not fused:
        return x, w, geo, None, want
    bias = np.random.default_rng(case["seed"]).uniform(-1, 1, w.shape[-1]).astype(np.float32)
    return x, w, geo, ((("add", bias),), "Relu", None), np.maximum(want + bias, 0)


def check_close(got, ref, dtype, magnitude=None):
    """Half types: dense: an ulp at 1.0, twice the rounding error."""
    assert_conv_close(got, ref, dtype, half_ulps=1.0, magnitude=magnitude)


def check_close_non_finite(got, ref, dtype, magnitude=None):
    """NaN exactly where ``ref`` has NaN, its infinities, and the finite rest close."""
    finite = np.isfinite(ref)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    np.testing.assert_array_equal(got[np.isinf(ref)], ref[np.isinf(ref)])
    check_close(np.where(finite, got, 0).astype(got.dtype), np.where(finite, ref, 0), dtype,
                magnitude)


def flips_to_forward(w, dy, geo):
    """Whether a stride-1 input gradient may run as a forward conv of dy: no padding past
    (k-1)*d, not pointwise, not empty."""
    reach = all(b <= (k - 1) * d and a <= (k - 1) * d
                for k, d, (b, a) in zip(w.shape[:-2], geo[1], geo[2]))
    pointwise = all(k == 1 for k in w.shape[:-2]) and not any(b or a for b, a in geo[2])
    return reach and not pointwise and dy.size > 0


@contextlib.contextmanager
def padded_windows_only():
    """The direct forward conv on its padded windows' loops alone, without classes of
    inner taps (``conv_algorithms.inner_taps``): the shapes' kept layouts are dropped as
    the block starts and ends."""
    conv_direct._forward_layout.cache_clear()
    try:
        with module_settings(inner_taps, layout=lambda *a, **k: None):
            yield
    finally:
        conv_direct._forward_layout.cache_clear()
