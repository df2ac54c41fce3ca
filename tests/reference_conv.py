"""Slow, obvious float64 reference for dense N-d convolution and its two gradients.

Written independently of kernels/: explicit loops over output positions and kernel
offsets, one small dot product per pair. Small sizes only.
Layouts: x is [N, *S, C] (channels_last) or [N, C, *S]; w is [*K, C, O].
"""

import itertools

import numpy as np


def _to_last(a, channels_last):
    a = np.asarray(a, dtype=np.float64)
    if channels_last:
        return a
    return np.transpose(a, (0, *range(2, a.ndim), 1))


def _from_last(a, channels_last):
    if channels_last:
        return a
    return np.transpose(a, (0, a.ndim - 1, *range(1, a.ndim - 1)))


def output_size(in_size, k, stride, dilation, before, after):
    """floor((in + before + after - ((k - 1) * dilation + 1)) / stride) + 1, clamped at 0."""
    span = in_size + before + after - ((k - 1) * dilation + 1)
    if span < 0:
        return 0
    return span // stride + 1


def _pairs(in_spatial, out_spatial, kernel, strides, dilations, pads):
    """All (output position, kernel offset, input position) triples with the input in bounds."""
    for opos in itertools.product(*(range(o) for o in out_spatial)):
        for koff in itertools.product(*(range(k) for k in kernel)):
            ipos = tuple(o * s + k * d - p[0] for o, k, s, d, p
                         in zip(opos, koff, strides, dilations, pads))
            if all(0 <= i < n for i, n in zip(ipos, in_spatial)):
                yield opos, koff, ipos


def _sel(pos):
    return (slice(None),) + tuple(pos) + (slice(None),)


def conv_forward_ref(x, w, strides, dilations, pads, channels_last=True):
    """y[n, o, :] = sum over offsets k of x[n, o*s + k*d - before, :] @ w[k]."""
    x = _to_last(x, channels_last)
    w = np.asarray(w, dtype=np.float64)
    kernel = w.shape[:-2]
    in_spatial = x.shape[1:-1]
    out_spatial = tuple(output_size(i, k, s, d, b, a) for i, k, s, d, (b, a)
                        in zip(in_spatial, kernel, strides, dilations, pads))
    y = np.zeros((x.shape[0], *out_spatial, w.shape[-1]))
    for opos, koff, ipos in _pairs(in_spatial, out_spatial, kernel, strides, dilations, pads):
        y[_sel(opos)] += x[_sel(ipos)] @ w[koff]
    return _from_last(y, channels_last)


def conv_backprop_input_ref(dy, w, input_shape, strides, dilations, pads, channels_last=True):
    """dx[n, o*s + k*d - before, :] += dy[n, o, :] @ w[k].T over all in-bounds pairs."""
    dy = _to_last(dy, channels_last)
    w = np.asarray(w, dtype=np.float64)
    input_shape = tuple(input_shape)
    if not channels_last:
        input_shape = (input_shape[0], *input_shape[2:], input_shape[1])
    dx = np.zeros(input_shape)
    for opos, koff, ipos in _pairs(input_shape[1:-1], dy.shape[1:-1], w.shape[:-2],
                                   strides, dilations, pads):
        dx[_sel(ipos)] += dy[_sel(opos)] @ w[koff].T
    return _from_last(dx, channels_last)


def conv_backprop_filter_ref(x, dy, filter_shape, strides, dilations, pads, channels_last=True):
    """dw[k] += x[:, o*s + k*d - before, :].T @ dy[:, o, :] over all in-bounds pairs."""
    x = _to_last(x, channels_last)
    dy = _to_last(dy, channels_last)
    dw = np.zeros(tuple(filter_shape))
    for opos, koff, ipos in _pairs(x.shape[1:-1], dy.shape[1:-1], dw.shape[:-2],
                                   strides, dilations, pads):
        dw[koff] += x[_sel(ipos)].T @ dy[_sel(opos)]
    return dw
