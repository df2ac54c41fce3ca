"""Slow, obvious float64 reference for depthwise 2-D convolution and its two gradients.

Written independently of kernels/: explicit loops over output positions and kernel offsets.
x is [N, H, W, C] (channels_last) or [N, C, H, W]; w is [KH, KW, C, M]; output channel
c*M + m holds x channel c convolved with w[:, :, c, m]. Small sizes only.
"""

import numpy as np


def _to_last(a, channels_last):
    a = np.asarray(a, dtype=np.float64)
    return a if channels_last else a.transpose(0, 2, 3, 1)


def _from_last(a, channels_last):
    return a if channels_last else a.transpose(0, 3, 1, 2)


def _out_size(size, k, stride, dilation, before, after):
    span = size + before + after - ((k - 1) * dilation + 1)
    return span // stride + 1 if span >= 0 else 0


def _taps(in_hw, out_hw, kernel, strides, dilations, pads):
    """(oh, ow, i, j, ih, iw) for every output position and kernel offset with input in bounds."""
    for oh in range(out_hw[0]):
        for ow in range(out_hw[1]):
            for i in range(kernel[0]):
                for j in range(kernel[1]):
                    ih = oh * strides[0] + i * dilations[0] - pads[0][0]
                    iw = ow * strides[1] + j * dilations[1] - pads[1][0]
                    if 0 <= ih < in_hw[0] and 0 <= iw < in_hw[1]:
                        yield oh, ow, i, j, ih, iw


def depthwise_forward_ref(x, w, strides, dilations, pads, channels_last=True):
    """y[n, oh, ow, c*M+m] = sum over (i, j) of x[n, ih, iw, c] * w[i, j, c, m]."""
    x = _to_last(x, channels_last)
    w = np.asarray(w, dtype=np.float64)
    n, h, wd, c = x.shape
    kh, kw, _, m = w.shape
    out_hw = (_out_size(h, kh, strides[0], dilations[0], *pads[0]),
              _out_size(wd, kw, strides[1], dilations[1], *pads[1]))
    y = np.zeros((n, *out_hw, c, m))
    for oh, ow, i, j, ih, iw in _taps((h, wd), out_hw, (kh, kw), strides, dilations, pads):
        y[:, oh, ow] += x[:, ih, iw, :, None] * w[i, j]
    return _from_last(y.reshape(n, *out_hw, c * m), channels_last)


def depthwise_backprop_input_ref(dy, w, input_shape, strides, dilations, pads,
                                 channels_last=True):
    """dx[n, ih, iw, c] = sum over taps reaching (ih, iw) of dy[n, oh, ow, c*M+m] * w[i, j, c, m]."""
    dy = _to_last(dy, channels_last)
    w = np.asarray(w, dtype=np.float64)
    shape = tuple(input_shape) if channels_last else (
        input_shape[0], input_shape[2], input_shape[3], input_shape[1])
    n, h, wd, c = shape
    kh, kw, _, m = w.shape
    dx = np.zeros(shape)
    out_hw = dy.shape[1:3]
    dy = dy.reshape(n, *out_hw, c, m)
    for oh, ow, i, j, ih, iw in _taps((h, wd), out_hw, (kh, kw), strides, dilations, pads):
        dx[:, ih, iw] += (dy[:, oh, ow] * w[i, j]).sum(axis=-1)
    return _from_last(dx, channels_last)


def depthwise_backprop_filter_ref(x, dy, filter_shape, strides, dilations, pads,
                                  channels_last=True):
    """dw[i, j, c, m] = sum over n and output positions of x[n, ih, iw, c] * dy[n, oh, ow, c*M+m]."""
    x = _to_last(x, channels_last)
    dy = _to_last(dy, channels_last)
    kh, kw, c, m = filter_shape
    n, h, wd, _ = x.shape
    out_hw = dy.shape[1:3]
    dy = dy.reshape(n, *out_hw, c, m)
    dw = np.zeros((kh, kw, c, m))
    for oh, ow, i, j, ih, iw in _taps((h, wd), out_hw, (kh, kw), strides, dilations, pads):
        dw[i, j] += (x[:, ih, iw, :, None] * dy[:, oh, ow]).sum(axis=0)
    return dw
