"""Layout and padding helpers shared by the dense and depthwise conv math.

The conv math works on a canonical channels-last layout: activations are
``[N, *S, C]`` (NHWC / NDHWC) and filters stay in TF's ``[*K, C, O]`` order.
Channels-first inputs are moved to channels-last on entry and back on exit.
"""

import numpy as np
from numpy.lib.stride_tricks import as_strided

import ml_dtypes

_HALF_TYPES = (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))


def to_channels_last(x, channels_last):
    """``[N, C, *S]`` -> ``[N, *S, C]`` (a view); identity when already channels-last."""
    return x if channels_last else np.moveaxis(x, 1, -1)


def from_channels_last(y, channels_last):
    """``[N, *S, C]`` -> ``[N, C, *S]`` as a contiguous array; identity when channels-last."""
    return y if channels_last else np.ascontiguousarray(np.moveaxis(y, -1, 1))


def channels_last_shape(shape, channels_last):
    """The channels-last form of a full activation shape given in either layout."""
    shape = tuple(int(d) for d in shape)
    return shape if channels_last else (shape[0],) + shape[2:] + (shape[1],)


def compute_dtype(dtype):
    """The dtype the math runs in for an input of ``dtype``.

    float16/bfloat16 -> float32 (rounded once at the end, as TF's CPU kernels do);
    float32 and float64 stay; integers -> int64, whose wrap-around product sums are
    exact modulo 2**64 and so equal to int32 arithmetic once cast back.
    """
    dtype = np.dtype(dtype)
    if dtype in _HALF_TYPES:
        return np.dtype(np.float32)
    if dtype.kind in "iu":
        return np.dtype(np.int64)
    return dtype


def conv_output_size(in_size, k, stride, dilation, before, after):
    """Output length of one dim: ``floor((in + pads - eff_k) / stride) + 1``, at least 0."""
    eff_k = (k - 1) * dilation + 1
    span = in_size + before + after - eff_k
    return span // stride + 1 if span >= 0 else 0


def pad_spatial(x, pads, dtype=None, min_shape=None):
    """Copy channels-last ``x`` into a zero buffer padded by ``pads`` ((before, after) per dim).

    ``min_shape`` optionally enlarges each padded spatial dim to at least that length
    (extra zeros at the end). Returns ``x`` itself (cast if needed) when nothing is added.
    """
    dtype = x.dtype if dtype is None else np.dtype(dtype)
    spatial = x.shape[1:-1]
    padded = [s + b + a for s, (b, a) in zip(spatial, pads)]
    if min_shape is not None:
        padded = [max(p, m) for p, m in zip(padded, min_shape)]
    if tuple(padded) == tuple(spatial):
        return np.ascontiguousarray(x, dtype=dtype)
    buf = np.zeros((x.shape[0], *padded, x.shape[-1]), dtype=dtype)
    inner = tuple(slice(b, b + s) for s, (b, _) in zip(spatial, pads))
    buf[(slice(None),) + inner + (slice(None),)] = x
    return buf


def window_view(xp, kernel, strides, dilations, out_spatial):
    """Read-only ``[N, *O, *K, C]`` view of the windows of padded channels-last ``xp``.

    Element ``[n, *o, *k, c]`` is ``xp[n, *(o*stride + k*dilation), c]``. Never write to it.
    """
    st = xp.strides
    sp = st[1:-1]
    shape = (xp.shape[0], *out_spatial, *kernel, xp.shape[-1])
    strides = (st[0], *(a * s for a, s in zip(sp, strides)),
               *(a * d for a, d in zip(sp, dilations)), st[-1])
    return as_strided(xp, shape, strides, writeable=False)

