"""The pooling math on channels-last ``[N, *S, C]`` arrays, written once against ``xp``.

Every op walks the window offsets (a Python loop over the ``prod(ksize)`` offsets only):
for offset ``k`` the inputs it reads for all output positions at once are one strided slice
of the padded input, ``padded[:, k + o * stride, :]``. Forward ops reduce over the offsets;
gradients scatter into the padded buffer one offset at a time (within one offset the
positions are distinct, so ``+=`` on the slice is exact) and crop the padding off.
``pads`` are (before, after) per spatial dim, as ``registry.pool_geometry`` resolves them.

TF's CPU semantics (checked against TF 2.21, ties and NaN included):

* max pooling (MaxPool, MaxPoolV2, MaxPool3D): the maximum of the window's values ignoring
  NaN, never below the dtype's lowest finite value (an all-NaN or all -inf window gives
  ``lowest``; padded positions take part as ``lowest``);
* MaxPoolWithArgmax and MaxPoolGrad choose, in scan order, the first valid position, then
  any later one strictly greater (so a leading NaN wins, a later NaN never does);
* MaxPool3DGrad routes the gradient to every position within 1e-5 (absolute) of
  ``orig_output``, TF's CPU tolerance, so near-ties share it and a window whose max is
  infinite routes nothing;
  MaxPoolGradGrad and MaxPool3DGradGrad read the first position equal to ``orig_output``
  (zero when none is);
* average pooling divides by the number of non-padded positions in the window.
"""

import itertools

import ml_dtypes
import numpy as np

_HALF = (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))


def widened(x):
    """``x`` as float32 when it is a half type (computed in float32, rounded once)."""
    return x.astype(np.float32) if x.dtype in _HALF else x


def lowest(dtype):
    """The dtype's lowest finite value (TF's ``NumTraits<T>::lowest()``)."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        return np.iinfo(dtype).min
    return float(ml_dtypes.finfo(dtype).min)


def padded_shape(shape, pads):
    return (shape[0], *(s + b + a for s, (b, a) in zip(shape[1:-1], pads)), shape[-1])


def trim_window(ksize, strides, pads, in_spatial, out_spatial):
    """(ksize, pads) without the window offsets that read only padding for every output:
    the same pooling, with a buffer no larger than the windows that touch the input (a
    huge SAME window over a small input stays cheap). Needs a non-empty output."""
    trimmed_k, trimmed_pads = [], []
    for k, s, (before, _), size, o in zip(ksize, strides, pads, in_spatial, out_spatial):
        low, high = max(0, before - (o - 1) * s), min(k, before + size)
        k, before = high - low, before - low
        trimmed_k.append(k)
        trimmed_pads.append((before, max(0, (o - 1) * s + k - before - size)))
    return tuple(trimmed_k), tuple(trimmed_pads)


def _pad(x, pads, fill, xp):
    if not any(b or a for b, a in pads):
        return x
    return xp.pad(x, [(0, 0), *pads, (0, 0)], mode="constant", constant_values=fill)


def _crop(padded, pads, spatial):
    inner = tuple(slice(b, b + s) for (b, _), s in zip(pads, spatial))
    return padded[(slice(None),) + inner + (slice(None),)]


def _offsets(ksize, strides, out_spatial):
    """(offset index, offset, slice of the padded input it reads) in scan order."""
    for j, offset in enumerate(itertools.product(*(range(k) for k in ksize))):
        idx = tuple(slice(k, k + (o - 1) * s + 1, s)
                    for k, s, o in zip(offset, strides, out_spatial))
        yield j, offset, (slice(None),) + idx + (slice(None),)


def _valid(offset, strides, pads, in_spatial, out_spatial, xp):
    """Bool ``[1, *O, 1]``: where offset ``offset`` reads a real (non-padded) position;
    None when it does everywhere."""
    mask, every = np.ones((1,) * (len(offset) + 2), bool), True
    for d, (k, s, (before, _), size, o) in enumerate(
            zip(offset, strides, pads, in_spatial, out_spatial)):
        pos = np.arange(o) * s - before + k
        ok = (pos >= 0) & (pos < size)
        every &= bool(ok.all())
        mask = mask & ok.reshape((1,) * (d + 1) + (o,) + (1,) * (len(offset) - d))
    return None if every else xp.asarray(mask)


def _counts(ksize, strides, pads, in_spatial, out_spatial, dtype, xp):
    """``[1, *O, 1]``: how many non-padded positions each window holds."""
    counts = np.ones((1,) * (len(ksize) + 2), np.int64)
    for d, (k, s, (before, _), size, o) in enumerate(
            zip(ksize, strides, pads, in_spatial, out_spatial)):
        start = np.arange(o) * s - before
        n = np.minimum(start + k, size) - np.maximum(start, 0)
        counts = counts * n.reshape((1,) * (d + 1) + (o,) + (1,) * (len(ksize) - d))
    return xp.asarray(np.maximum(counts, 1).astype(dtype))


# ----------------------------------------------------------------------------- forward


def max_pool(x, floor, ksize, strides, pads, out_spatial, xp):
    """TF's max pooling of ``x`` (widened, passed through ``clamp_lowest``); padded
    positions hold ``floor``, the dtype's lowest value. A tap replaces the maximum so far
    only where it is greater, so of equal maxima (zeros of both signs) the first in scan
    order is kept, as TF keeps it."""
    padded = _pad(x, pads, floor, xp)
    out = None
    for _, _, idx in _offsets(ksize, strides, out_spatial):
        tap = padded[idx]
        if out is None:
            out = tap.copy()
        else:
            xp.copyto(out, tap, where=tap > out)
    return out


def clamp_lowest(x, floor, xp):
    """``x`` with NaN and values below ``floor`` (the dtype's lowest) raised to it."""
    return xp.fmax(x, x.dtype.type(floor)) if x.dtype.kind == "f" else x


def depth_max_pool(x, window, xp):
    """Max pooling across channels in groups of ``window`` (stride = window)."""
    grouped = x.reshape(x.shape[:-1] + (x.shape[-1] // window, window))
    return xp.max(grouped, axis=-1)


def avg_pool(x, ksize, strides, pads, out_spatial, xp):
    """Window sums over the count of non-padded positions; ``x`` widened already."""
    padded = _pad(x, pads, 0, xp)
    out = xp.zeros((x.shape[0], *out_spatial, x.shape[-1]), x.dtype)
    for _, _, idx in _offsets(ksize, strides, out_spatial):
        out += padded[idx]
    return out / _counts(ksize, strides, pads, x.shape[1:-1], out_spatial, x.dtype, xp)


def first_max(x, ksize, strides, pads, out_spatial, xp):
    """(values, offset index) of TF's argmax rule: the first valid position, then any later
    one strictly greater."""
    padded = _pad(x, pads, 0, xp)
    best = which = have = None
    for j, offset, idx in _offsets(ksize, strides, out_spatial):
        v = padded[idx]
        valid = _valid(offset, strides, pads, x.shape[1:-1], out_spatial, xp)
        if best is None:
            best, which = v.copy(), xp.zeros(v.shape, np.int32)
            have = xp.ones((1,) * v.ndim, bool) if valid is None else valid
            continue
        take = (best < v) | ~have
        if valid is not None:
            take &= valid
            have = have | valid
        else:
            have = xp.ones((1,) * v.ndim, bool)
        best = xp.where(take, v, best)
        which = xp.where(take, np.int32(j), which)
    return best, which


def argmax_index(which, ksize, strides, pads, in_shape, include_batch, xp):
    """MaxPoolWithArgmax's flat indices ``((b * H + y) * W + x) * C + c`` (``b`` only with
    ``include_batch``) of the offsets ``which`` of a 2-D pool."""
    n, height, width, channels = in_shape
    out_h, out_w = which.shape[1:3]
    which = which.astype(np.int64)
    ky, kx = which // ksize[1], which % ksize[1]
    y = xp.asarray((np.arange(out_h) * strides[0] - pads[0][0]).reshape(1, -1, 1, 1)) + ky
    x = xp.asarray((np.arange(out_w) * strides[1] - pads[1][0]).reshape(1, 1, -1, 1)) + kx
    index = (y * width + x) * channels + xp.asarray(np.arange(channels).reshape(1, 1, 1, -1))
    if include_batch:
        index = index + xp.asarray(np.arange(n).reshape(-1, 1, 1, 1) * (height * width * channels))
    return index


# ----------------------------------------------------------------------------- gradients


def _scatter(contribution, in_shape, ksize, strides, pads, out_spatial, dtype, xp):
    """Sum over window offsets ``j`` of ``contribution(j, idx)`` placed at the positions
    offset ``j`` reads, cropped to ``in_shape``."""
    dx = xp.zeros(padded_shape(in_shape, pads), dtype)
    for j, _, idx in _offsets(ksize, strides, out_spatial):
        dx[idx] += contribution(j, idx)
    return _crop(dx, pads, in_shape[1:-1])


def routed_grad(which, grad, in_shape, ksize, strides, pads, xp):
    """MaxPoolGrad: each output's gradient added at its window's offset ``which``."""
    zero = grad.dtype.type(0)
    return _scatter(lambda j, _: xp.where(which == j, grad, zero), in_shape, ksize, strides,
                    pads, grad.shape[1:-1], grad.dtype, xp)


MAX_POOL_3D_GRAD_TOLERANCE = 1e-5     # TF's CPU MaxPool3DGrad: |x - max| < 1e-5 shares


def tied_grad(x, y, grad, ksize, strides, pads, xp):
    """MaxPool3DGrad: each output's gradient added at every window position within
    ``MAX_POOL_3D_GRAD_TOLERANCE`` of it (positions in the padding are cropped off, so they
    need no mask)."""
    padded = _pad(x, pads, 0, xp)
    zero = grad.dtype.type(0)
    return _scatter(
        lambda _, idx: xp.where(xp.abs(padded[idx] - y) < MAX_POOL_3D_GRAD_TOLERANCE, grad,
                                zero),
        x.shape, ksize, strides, pads, grad.shape[1:-1], grad.dtype, xp)


def avg_pool_grad(grad, in_shape, ksize, strides, pads, xp):
    """AvgPoolGrad: each output's gradient spread evenly over its non-padded positions."""
    share = grad / _counts(ksize, strides, pads, in_shape[1:-1], grad.shape[1:-1],
                           grad.dtype, xp)
    return _scatter(lambda j, idx: share, in_shape, ksize, strides, pads, grad.shape[1:-1],
                    grad.dtype, xp)


def first_match(x, y, grad, ksize, strides, pads, xp):
    """MaxPoolGradGrad: ``grad`` (shaped like ``x``) read at the first window position equal
    to ``y``, zero where none is."""
    out_spatial = y.shape[1:-1]
    padded_x, padded_grad = _pad(x, pads, 0, xp), _pad(grad, pads, 0, xp)
    out = xp.zeros(y.shape, grad.dtype)
    found = xp.zeros(y.shape, bool)
    for _, offset, idx in _offsets(ksize, strides, out_spatial):
        match = (padded_x[idx] == y) & ~found
        valid = _valid(offset, strides, pads, x.shape[1:-1], out_spatial, xp)
        if valid is not None:
            match &= valid
        out = xp.where(match, padded_grad[idx], out)
        found |= match
    return out


def grad_at_indices(grad, index, size, xp):
    """A flat vector of ``size``: the sum of ``grad``'s entries at each ``index``
    (MaxPoolGradWithArgmax's scatter, exact for integers, float64 sums for floats)."""
    grad, index = grad.reshape(-1), index.reshape(-1).astype(np.int64)
    if grad.dtype.kind == "f":
        summed = xp.bincount(index, weights=grad.astype(np.float64), minlength=size)
        return summed.astype(grad.dtype)
    order = xp.argsort(index, kind="stable")
    index, totals = index[order], xp.cumsum(grad[order].astype(np.int64))
    last = xp.ones(index.shape, bool)
    last[:-1] = index[1:] != index[:-1]
    ends = totals[last]
    sums = ends - xp.concatenate([xp.zeros(1, np.int64), ends[:-1]])
    out = xp.zeros(size, np.int64)
    out[index[last]] = sums
    return out.astype(grad.dtype)
