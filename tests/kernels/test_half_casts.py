"""Compiled float16 / bfloat16 <-> float32 conversions: NumPy's and ml_dtypes' results bit
for bit, through kernel_util.astype, the Cast op and the conv kernels that widen half
operands."""

import ml_dtypes
import numpy as np
import pytest

from numba import njit

import graphops as gp
from graphops.kernels.conv_algorithms import dense as conv_dense
from graphops.kernels.conv_algorithms import depthwise as conv_depthwise
from graphops.kernels.compiled import casts as loops_casts
from graphops.kernels.compiled import depthwise as loops_depthwise
from graphops.kernels.support.kernel_util import COMPILED_MIN_SIZE, astype
from tests.conv_tolerance import assert_conv_close
from tests.reference_conv import conv_backprop_input_ref, conv_forward_ref
from tests.reference_depthwise import (depthwise_backprop_filter_ref, depthwise_backprop_input_ref,
                                       depthwise_forward_ref)


def _float_bits_to_test():
    """Random float32 bit patterns plus the edges: around the half range's top (65504, the
    round-to-infinity point 65520), the subnormal halves, zeros, infinities and NaN payloads."""
    rng = np.random.default_rng(0)
    edges = [rng.integers(0, 2**32, 1 << 20, dtype=np.uint64).astype(np.uint32),
             np.float32(65520).view(np.uint32) + np.arange(-4096, 4096, dtype=np.int64),
             np.arange(0, 1 << 24, 3, dtype=np.uint32) + np.uint32(100 << 23),   # subnormals
             np.arange(0x7F7FFF00, 0x7F800010, dtype=np.uint32),
             np.array([0, 0x7FC00000, 0x7F800001, 0x7F802000, 0x7F801FFF, 0x7FFFFFFF],
                      np.uint32)]
    bits = np.concatenate([e.astype(np.uint32) for e in edges])
    return np.concatenate([bits, bits | np.uint32(0x80000000)])


HALF_TYPES = [np.float16, ml_dtypes.bfloat16]


@pytest.mark.parametrize("half", HALF_TYPES)
def test_every_half_widens_like_numpy(half):
    halves = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(half)
    got = astype(np, halves, np.float32)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got.view(np.uint32), halves.astype(np.float32).view(np.uint32))


@pytest.mark.parametrize("half", HALF_TYPES)
def test_floats_narrow_like_numpy(half):
    floats = _float_bits_to_test().view(np.float32)
    got = astype(np, floats, half)
    with np.errstate(all="ignore"):
        want = floats.astype(half)
    assert got.dtype == np.dtype(half) and got.shape == floats.shape
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))


def test_small_or_strided_arrays_take_numpy_and_keep_their_shape():
    small = np.linspace(-3, 3, 12, dtype=np.float32).reshape(3, 4)
    assert astype(np, small, np.float16).shape == (3, 4)
    strided = np.ones((COMPILED_MIN_SIZE, 2), np.float16)[:, 0]
    got = astype(np, strided, np.float32)
    assert got.dtype == np.float32 and got.shape == (COMPILED_MIN_SIZE,) and got.all()
    same = np.ones(8, np.float32)
    assert astype(np, same, np.float32) is same


@pytest.mark.parametrize("src, dst", [(gp.float32, gp.float16), (gp.float16, gp.float32),
                                      (gp.float32, gp.bfloat16), (gp.bfloat16, gp.float32)])
def test_cast_op_matches_numpy(src, dst):
    values = _float_bits_to_test()[:1 << 18].view(np.float32).reshape(512, 512)
    with np.errstate(all="ignore"):
        values = values.astype(src.np_dtype)
        want = values.astype(dst.np_dtype)
    graph = gp.Graph()
    with graph.as_default():
        x = gp.placeholder(src, [512, 512])
        y = gp.cast(x, dst)
    with gp.Session(graph=graph) as sess:
        got = sess.run(y, {x: values})
    assert got.dtype == dst.np_dtype
    view = np.uint32 if dst == gp.float32 else np.uint16
    np.testing.assert_array_equal(got.view(view), want.view(view))


@pytest.mark.parametrize("half", HALF_TYPES)
@pytest.mark.parametrize("channels_last", [True, False])
def test_half_convs_widen_and_narrow_large_operands(channels_last, half):
    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, (2, 32, 32, 40)).astype(half)      # past COMPILED_MIN_SIZE
    w = rng.uniform(-1, 1, (3, 3, 40, 8)).astype(half)
    wd = rng.uniform(-1, 1, (3, 3, 40, 1)).astype(half)
    geo = ((1, 1), (1, 1), ((1, 1), (1, 1)))
    xl = x if channels_last else np.ascontiguousarray(np.moveaxis(x, -1, 1))
    x64 = xl.astype(np.float64)
    y = conv_dense.conv_forward(xl, w, *geo, channels_last=channels_last)
    assert_conv_close(y, conv_forward_ref(x64, w.astype(np.float64), *geo,
                                          channels_last=channels_last), half, half_ulps=1.0)
    dx = conv_dense.conv_backprop_input(y, w, xl.shape, *geo, channels_last=channels_last)
    assert_conv_close(dx, conv_backprop_input_ref(y.astype(np.float64), w.astype(np.float64),
                                                  xl.shape, *geo, channels_last=channels_last),
                      half, half_ulps=1.0)
    yd = conv_depthwise.depthwise_forward(xl, wd, *geo, channels_last=channels_last)
    assert_conv_close(yd, depthwise_forward_ref(x64, wd.astype(np.float64), *geo,
                                                channels_last=channels_last),
                      half, half_ulps=0.5)
    dw = conv_depthwise.depthwise_backprop_filter(xl, yd, wd.shape, *geo,
                                                  channels_last=channels_last)
    assert_conv_close(dw, depthwise_backprop_filter_ref(x64, yd.astype(np.float64), wd.shape,
                                                        *geo, channels_last=channels_last),
                      half, half_ulps=0.5)


def _not_signaling(bits, quiet_bit, exponent_mask):
    """``bits`` without the signaling NaNs (all-ones exponent, a payload, quiet bit clear)."""
    nan = (bits & exponent_mask) == exponent_mask
    payload = bits & (quiet_bit * 2 - 1)
    return bits[~(nan & (payload != 0) & ((bits & quiet_bit) == 0))]


@pytest.mark.skipif(not loops_depthwise.CPU_HALF, reason="no CPU float16 conversions")
def test_cpu_half_conversions_agree_with_the_bit_conversions():
    """The depthwise loops convert float16 with the CPU's instructions: the bit conversions'
    results for every value but a signaling NaN (which arithmetic quiets anyway)."""
    @njit
    def widen(bits, by_cpu, by_bits):
        for i in range(bits.size):
            by_cpu[i] = loops_casts.converted_half_value(bits[i])
            by_bits[i] = loops_casts.half_value(bits[i])

    @njit
    def narrow(values, by_cpu, by_bits):
        for i in range(values.size):
            by_cpu[i] = loops_casts.converted_half_bits(values[i])
            by_bits[i] = loops_casts.half_bits(values[i])

    halves = _not_signaling(np.arange(1 << 16, dtype=np.uint32), 0x200, 0x7C00)
    halves = halves.astype(np.uint16)
    by_cpu, by_bits = np.empty(halves.size, np.float32), np.empty(halves.size, np.float32)
    widen(halves, by_cpu, by_bits)
    np.testing.assert_array_equal(by_cpu.view(np.uint32), by_bits.view(np.uint32))
    floats = _not_signaling(_float_bits_to_test(), 0x400000, 0x7F800000).view(np.float32)
    by_cpu, by_bits = np.empty(floats.size, np.uint16), np.empty(floats.size, np.uint16)
    narrow(floats, by_cpu, by_bits)
    np.testing.assert_array_equal(by_cpu, by_bits)


@pytest.mark.parametrize("half", HALF_TYPES)
def test_half_depthwise_keeps_infinities_and_nans(half):
    """Half operands widen as the loops load rows and results narrow as rows finish: an
    infinity or NaN lands where the float64 reference puts it, finite values stay close."""
    rng = np.random.default_rng(2)
    x = rng.uniform(-1, 1, (2, 24, 24, 16)).astype(half)
    x[0, 3, 5, 2], x[1, 10, 0, 7], x[1, 20, 23, 15] = np.inf, -np.inf, np.nan
    w = rng.uniform(-1, 1, (3, 3, 16, 2)).astype(half)
    geo = ((1, 1), (1, 1), ((1, 1), (1, 1)))
    with np.errstate(all="ignore"):
        want = depthwise_forward_ref(x.astype(np.float64), w.astype(np.float64), *geo)
        got = conv_depthwise.depthwise_forward(x, w, *geo)
        dy = want.astype(half)
        dx = conv_depthwise.depthwise_backprop_input(dy, w, x.shape, *geo)
        dx_want = depthwise_backprop_input_ref(dy.astype(np.float64), w.astype(np.float64),
                                               x.shape, *geo)
    for value, reference in ((got, want), (dx, dx_want)):
        assert value.dtype == np.dtype(half)
        wide = value.astype(np.float64)
        np.testing.assert_array_equal(np.isnan(wide), np.isnan(reference))
        np.testing.assert_array_equal(np.isposinf(wide), np.isposinf(reference))
        np.testing.assert_array_equal(np.isneginf(wide), np.isneginf(reference))
        finite = np.isfinite(reference)
        assert_conv_close(value[finite], reference[finite], half, half_ulps=1.0)
