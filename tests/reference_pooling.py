"""Slow, obvious float64 references of the pooling ops: explicit loops over every output
position and window element, TF's CPU semantics spelled out (see kernels/pooling_windows.py):
max pooling ignores NaN and never goes below the dtype's lowest value; the argmax rule takes
the first valid position, then any later strictly greater one; MaxPool3DGrad routes to every
position within 1e-5 of orig_output; MaxPoolGradGrad reads the first one; average pooling divides
by the number of non-padded positions.

Arrays are channels-last ([N, *S, C]); ``to_cl`` / ``from_cl`` convert channels-first data.
"""

import itertools

import ml_dtypes
import ml_dtypes
import numpy as np


def to_cl(x, data_format):
    return x if data_format in ("NHWC", "NDHWC") else np.moveaxis(x, 1, -1)


def from_cl(x, data_format):
    return x if data_format in ("NHWC", "NDHWC") else np.moveaxis(x, -1, 1)


def geometry(in_spatial, ksize, strides, padding, explicit=None):
    """(output sizes, pads before) per spatial dim, straight from TF's documented formulas."""
    outs, befores = [], []
    for d, (n, k, s) in enumerate(zip(in_spatial, ksize, strides)):
        if padding == "VALID":
            out, before = max(0, -(-(n - k + 1) // s)), 0
        elif padding == "SAME":
            out = -(-n // s)
            before = max((out - 1) * s + k - n, 0) // 2
        else:
            before, after = explicit[d]
            out = (n + before + after - k) // s + 1
        outs.append(out)
        befores.append(before)
    return outs, befores


def _windows(in_spatial, ksize, strides, befores, out_spatial):
    """Yields (output position, [valid input positions of its window in scan order])."""
    for o in itertools.product(*(range(q) for q in out_spatial)):
        positions = []
        for k in itertools.product(*(range(w) for w in ksize)):
            p = tuple(oi * s - b + ki for oi, s, b, ki in zip(o, strides, befores, k))
            if all(0 <= pi < n for pi, n in zip(p, in_spatial)):
                positions.append(p)
        yield o, positions


def lowest(dtype):
    dtype = np.dtype(dtype)
    return np.iinfo(dtype).min if dtype.kind in "iu" else float(ml_dtypes.finfo(dtype).min)


def pool(x, ksize, strides, padding, mode, explicit=None, depth_window=1):
    """max/avg pooling of channels-last ``x`` (float64 result, or x's ints for max)."""
    n_batch, *in_spatial, channels = x.shape
    if depth_window > 1:
        grouped = x.reshape(*x.shape[:-1], channels // depth_window, depth_window)
        return np.stack([pool(grouped[..., i], [1] * len(in_spatial), [1] * len(in_spatial),
                              "VALID", mode) for i in range(depth_window)]).max(axis=0)
    outs, befores = geometry(in_spatial, ksize, strides, padding, explicit)
    floating = x.dtype.kind == "f" or x.dtype == ml_dtypes.bfloat16
    wide = x.astype(np.float64) if floating or mode == "avg" else x
    out = np.zeros((n_batch, *outs, channels), wide.dtype)
    floor = lowest(x.dtype)
    for o, positions in _windows(in_spatial, ksize, strides, befores, outs):
        for b in range(n_batch):
            for c in range(channels):
                values = [wide[(b, *p, c)] for p in positions]
                if mode == "avg":
                    out[(b, *o, c)] = sum(values) / len(values)
                else:
                    kept = [v for v in values if not np.isnan(v)] if wide.dtype.kind == "f" \
                        else values
                    out[(b, *o, c)] = max(kept + [floor])
    return out


def argmax_pool(x, ksize, strides, padding, explicit=None):
    """(values, [N, *O, C] tuples of chosen input positions) by TF's argmax rule."""
    n_batch, *in_spatial, channels = x.shape
    outs, befores = geometry(in_spatial, ksize, strides, padding, explicit)
    values = np.zeros((n_batch, *outs, channels), np.float64)
    chosen = {}
    for o, positions in _windows(in_spatial, ksize, strides, befores, outs):
        for b in range(n_batch):
            for c in range(channels):
                best = None
                for p in positions:
                    v = float(x[(b, *p, c)])
                    if best is None or best[0] < v:
                        best = (v, p)
                values[(b, *o, c)] = best[0]
                chosen[(b, *o, c)] = best[1]
    return values, chosen


def flat_argmax(x_shape, out_shape, chosen, include_batch):
    """MaxPoolWithArgmax's flat indices of the chosen positions."""
    n_batch, height, width, channels = x_shape
    index = np.zeros(out_shape, np.int64)
    for (b, oy, ox, c), (y, xx) in chosen.items():
        row = b * height + y if include_batch else y
        index[b, oy, ox, c] = (row * width + xx) * channels + c
    return index


def max_pool_grad(x, grad, ksize, strides, padding, explicit=None):
    """MaxPoolGrad: grad routed to the argmax rule's choice."""
    _, chosen = argmax_pool(x, ksize, strides, padding, explicit)
    dx = np.zeros(x.shape, np.float64)
    for (b, *o, c), p in chosen.items():
        dx[(b, *p, c)] += grad[(b, *o, c)]
    return dx


def max_pool_grad_ties(x, y, grad, ksize, strides, padding):
    """MaxPool3DGrad: grad routed to every window position within 1e-5 (absolute) of
    orig_output, TF's CPU rule."""
    n_batch, *in_spatial, channels = x.shape
    _, befores = geometry(in_spatial, ksize, strides, padding)
    dx = np.zeros(x.shape, np.float64)
    for o, positions in _windows(in_spatial, ksize, strides, befores, y.shape[1:-1]):
        for b in range(n_batch):
            for c in range(channels):
                for p in positions:
                    if abs(float(x[(b, *p, c)]) - float(y[(b, *o, c)])) < 1e-5:
                        dx[(b, *p, c)] += grad[(b, *o, c)]
    return dx


def max_pool_grad_grad(x, y, grad, ksize, strides, padding):
    """MaxPoolGradGrad: grad read at the first window position equal to orig_output."""
    n_batch, *in_spatial, channels = x.shape
    _, befores = geometry(in_spatial, ksize, strides, padding)
    out = np.zeros(y.shape, np.float64)
    for o, positions in _windows(in_spatial, ksize, strides, befores, y.shape[1:-1]):
        for b in range(n_batch):
            for c in range(channels):
                for p in positions:
                    if abs(float(x[(b, *p, c)]) - float(y[(b, *o, c)])) < 1e-5:
                        out[(b, *o, c)] = grad[(b, *p, c)]
                        break
    return out


def avg_pool_grad(in_shape, grad, ksize, strides, padding):
    n_batch, *in_spatial, channels = in_shape
    _, befores = geometry(in_spatial, ksize, strides, padding)
    dx = np.zeros(in_shape, np.float64)
    for o, positions in _windows(in_spatial, ksize, strides, befores, grad.shape[1:-1]):
        for b in range(n_batch):
            for c in range(channels):
                for p in positions:
                    dx[(b, *p, c)] += grad[(b, *o, c)] / len(positions)
    return dx


def grad_with_argmax(x_shape, grad, argmax, include_batch):
    dx = np.zeros(int(np.prod(x_shape)), np.float64)
    per_batch = int(np.prod(x_shape[1:]))
    for b in range(grad.shape[0]):
        for i, g in zip(argmax[b].reshape(-1), grad[b].reshape(-1)):
            dx[int(i) + (0 if include_batch else b * per_batch)] += g
    return dx.reshape(x_shape)
