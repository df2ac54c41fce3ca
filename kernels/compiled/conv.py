"""Compiled loops of the dense conv ops (numba): the scatter-add of GEMM products into the
input gradient or the stride-1 forward output (``add_taps``), and the direct loops for convs
with very few channels (``small_forward``, ``small_filter_grad``), the input's zero padding
(``pad``) and the moves between an operand and its dilation phases (``dilation_phases``).

Operands have three spatial dims (lower ranks get size-1 dims).
"""

import numpy as np
from numba import njit, prange



@njit(cache=True, nogil=True)
def add_taps(prods, dx, first, strides, dilations, before, tap_first):
    """dx[n, p, c] += prods[b, q, t, c] for a block of source positions, p = o*s + k*d - before
    with image n = first[0] + b, source position o = first[1:] + q, kernel offset
    k = tap_first + t; positions outside dx are skipped. prods is
    ``[B, Q1, Q2, Q3, T1, T2, T3, C]``, dx ``[N, I1, I2, I3, C]``: for the input gradient
    the sources are dy's positions and dx the input gradient; for the forward conv the
    sources are x's positions and dx the output. Each element's sum runs in order of the
    block's rows, then kernel offsets."""
    nb, n1, n2, n3, k1, k2, k3, channels = prods.shape
    size1, size2, size3 = dx.shape[1], dx.shape[2], dx.shape[3]
    for b in range(nb):
        n = first[0] + b
        for q1 in range(n1):
            for q2 in range(n2):
                for q3 in range(n3):
                    for t1 in range(k1):
                        p1 = (first[1] + q1) * strides[0] + (tap_first[0] + t1) * dilations[0] \
                            - before[0]
                        if p1 < 0 or p1 >= size1:
                            continue
                        for t2 in range(k2):
                            p2 = (first[2] + q2) * strides[1] \
                                + (tap_first[1] + t2) * dilations[1] - before[1]
                            if p2 < 0 or p2 >= size2:
                                continue
                            for t3 in range(k3):
                                p3 = (first[3] + q3) * strides[2] \
                                    + (tap_first[2] + t3) * dilations[2] - before[2]
                                if p3 < 0 or p3 >= size3:
                                    continue
                                for c in range(channels):
                                    dx[n, p1, p2, p3, c] += prods[b, q1, q2, q3, t1, t2, t3, c]


@njit(cache=True, parallel=True, nogil=True)
def small_forward(xp, w, y, stride, dilations, parts, tiled, kinds, activation):
    """y[n, q, o] = sum over taps k and channels c of xp[n, c, q*s + k*d] * w[k, c, o]: the
    direct conv for a few input channels, stride ``stride`` along the first spatial dim and
    1 along the others. ``xp`` is the zero-padded input, channel-planar ``[N, C, P1, P2, P3]``
    with ``P3 = Q3 + (K3-1)*d3`` and a spare zero row (``P2 = Q2 + (K2-1)*d2 + 1``); w is
    ``[K1, K2, K3, C, O]``, y ``[N, Q1, Q2, Q3, O]``.

    Each output plane (n, q1) is computed on the padded width: tap (k2, k3) of all its
    positions is one contiguous run of xp's plane, so every multiply-add loop runs
    ``Q2 * P3`` long; the columns past Q3 are dropped when the plane is written out, then
    the plane goes through the epilogue ``(tiled, kinds, activation)`` while it is in the
    cache (``_chain_plane``; no kinds and activation 0 for none). Planes are split into
    ``parts`` blocks taken by the threads."""
    images, q1n, q2n, q3n, outs = y.shape
    k1n, k2n, k3n, channels, _ = w.shape
    p3 = xp.shape[4]
    run = q2n * p3
    planes = images * q1n
    parts = max(1, min(parts, planes))
    d1, d2, d3 = dilations
    for part in prange(parts):
        acc = np.empty((outs, run), y.dtype)
        for plane in range(planes * part // parts, planes * (part + 1) // parts):
            n, q1 = plane // q1n, plane % q1n
            acc[:] = 0
            for k1 in range(k1n):
                for c in range(channels):
                    flat = xp[n, c, q1 * stride + k1 * d1].reshape(-1)
                    for k2 in range(k2n):
                        k3 = 0
                        while k3 < k3n:      # three taps a pass: one load and store of acc
                            taps = min(3, k3n - k3)
                            x0, x1, x2 = _tap_runs(flat, k2 * d2 * p3 + k3 * d3, d3, run, taps)
                            for o in range(outs):
                                w0 = w[k1, k2, k3, c, o]
                                target = acc[o]
                                if taps == 3:
                                    w1, w2 = w[k1, k2, k3 + 1, c, o], w[k1, k2, k3 + 2, c, o]
                                    for i in range(run):
                                        target[i] += x0[i] * w0 + x1[i] * w1 + x2[i] * w2
                                elif taps == 2:
                                    w1 = w[k1, k2, k3 + 1, c, o]
                                    for i in range(run):
                                        target[i] += x0[i] * w0 + x1[i] * w1
                                else:
                                    for i in range(run):
                                        target[i] += x0[i] * w0
                            k3 += taps
            out = y[n, q1]
            for q2 in range(q2n):
                for q3 in range(q3n):
                    for o in range(outs):
                        out[q2, q3, o] = acc[o, q2 * p3 + q3]
            if kinds.shape[0] or activation:
                _chain_plane(out, tiled, kinds, activation, y.dtype.type(0), y.dtype.type(6))


@njit(cache=True, nogil=True)
def _chain_plane(out, tiled, kinds, activation, zero, six):
    """``compiled.elementwise.chain_rows`` on an output plane ``[Q2, Q3, O]`` of any strides
    (a phase view of dx among them), element by element: stage j of channel o takes
    ``tiled[j, o]``."""
    q2n, q3n, outs = out.shape
    for j in range(kinds.shape[0]):
        kind = kinds[j]
        for q2 in range(q2n):
            for q3 in range(q3n):
                for o in range(outs):
                    value, operand = out[q2, q3, o], tiled[j, o]
                    out[q2, q3, o] = (value * operand if kind == 1 else
                                      value + operand if kind == 2 else value - operand)
    if activation:
        for q2 in range(q2n):
            for q3 in range(q3n):
                for o in range(outs):
                    value = out[q2, q3, o]
                    out[q2, q3, o] = (zero if value < zero else
                                      six if activation == 2 and value > six else value)


@njit(cache=True, nogil=True)
def _tap_runs(flat, start, step, run, taps):
    """The runs of ``taps`` (1-3) consecutive kernel taps along the last dim, ``step`` apart
    from ``start``: three ``run``-long slices of ``flat``, past ``taps`` repeating the first."""
    first = flat[start:start + run]
    second = flat[start + step:start + step + run] if taps > 1 else first
    third = flat[start + 2 * step:start + 2 * step + run] if taps > 2 else first
    return first, second, third


@njit(cache=True, nogil=True, fastmath={"reassoc", "contract"})
def _dots(a0, a1, a2, b):
    """(sum of a0[i] * b[i], the same of a1 and of a2): three dot products sharing each
    load of b, reassociated as ``_dot``."""
    total0 = total1 = total2 = a0.dtype.type(0)
    for i in range(b.shape[0]):
        value = b[i]
        total0 += a0[i] * value
        total1 += a1[i] * value
        total2 += a2[i] * value
    return total0, total1, total2


@njit(cache=True, nogil=True, fastmath={"reassoc", "contract"})
def _dot(a, b):
    """sum of a[i] * b[i], reassociated so that it vectorizes (NaN and infinities still
    propagate: no finite-math assumption)."""
    total = a.dtype.type(0)
    for i in range(a.shape[0]):
        total += a[i] * b[i]
    return total


@njit(cache=True, parallel=True, nogil=True)
def small_filter_grad(xp, dy, sums, stride, dilations):
    """sums[p, k, c, o] += the sum of xp[n, c, q*s + k*d] * dy[n, q, o] over block p's output
    planes (the caller adds the blocks in order): the filter gradient for a few input
    channels. ``xp`` as in ``small_forward``, dy ``[N, Q1, Q2, Q3, O]``, sums
    ``[parts, K1, K2, K3, C, O]`` (float64). Per plane dy is laid out channel-planar on the
    padded width (zeros past Q3), so each tap's sum is a dot product of two runs
    ``Q2 * P3`` long, added to the block's float64 sums. A non-finite dot is redone over the
    valid columns alone: past Q3 a zero gradient may have met an infinite x."""
    images, q1n, q2n, q3n, outs = dy.shape
    parts, k1n, k2n, k3n, channels = sums.shape[:5]
    p3 = xp.shape[4]
    run = q2n * p3
    planes = images * q1n
    d1, d2, d3 = dilations
    for part in prange(parts):
        grads = np.zeros((outs, run), dy.dtype)
        total = sums[part]
        for plane in range(planes * part // parts, planes * (part + 1) // parts):
            n, q1 = plane // q1n, plane % q1n
            grad_plane = dy[n, q1]
            for q2 in range(q2n):
                for q3 in range(q3n):
                    for o in range(outs):
                        grads[o, q2 * p3 + q3] = grad_plane[q2, q3, o]
            for k1 in range(k1n):
                for c in range(channels):
                    flat = xp[n, c, q1 * stride + k1 * d1].reshape(-1)
                    for k2 in range(k2n):
                        k3 = 0
                        while k3 < k3n:     # three taps a pass share each gradient load
                            taps = min(3, k3n - k3)
                            runs = _tap_runs(flat, k2 * d2 * p3 + k3 * d3, d3, run, taps)
                            for o in range(outs):
                                values = _dots(runs[0], runs[1], runs[2], grads[o])
                                for t in range(taps):
                                    value = values[t]
                                    if not np.isfinite(value):   # the padded width's x? redo
                                        value = _row_dots(runs[t], grads[o], q2n, q3n, p3)
                                    total[k1, k2, k3 + t, c, o] += value
                            k3 += taps


@njit(cache=True, nogil=True)
def _row_dots(xs, g, rows, width, stride):
    """The dot product of xs and g over the first ``width`` of every ``stride`` values only:
    the exact sum where the padded width multiplied a non-finite x by a zero gradient."""
    total = xs.dtype.type(0)
    for r in range(rows):
        total += _dot(xs[r * stride:r * stride + width], g[r * stride:r * stride + width])
    return total


@njit(cache=True, parallel=True, nogil=True)
def pad(x, buf, before):
    """buf = channels-last ``x`` ``[N, S1, S2, S3, C]`` zero-padded: ``buf[n, p1, p2, p3]`` is
    ``x[n, p1 - before[0], p2 - before[1], p3 - before[2]]`` inside x, else zeros. Each row
    of buf is written once (its zeros and its copy of an x row), threads taking blocks of
    rows. Flat unsigned indices: no view per row (it costs more than a short row's copy),
    no negative-index wraparound (it keeps the copy from vectorizing)."""
    n_total, size1, size2, size3, channels = x.shape
    _, padded1, padded2, padded3, _ = buf.shape
    xf, bf = x.reshape(x.size), buf.reshape(buf.size)
    row_length, x_length = padded3 * channels, size3 * channels
    first = before[2] * channels
    rows = n_total * padded1 * padded2
    blocks = min(rows, 64)
    for block in prange(blocks):
        for row in range(rows * block // blocks, rows * (block + 1) // blocks):
            n, p1, p2 = row // (padded1 * padded2), row // padded2 % padded1, row % padded2
            i1, i2 = p1 - before[0], p2 - before[1]
            out = np.uint64(row * row_length)
            inside = 0 <= i1 < size1 and 0 <= i2 < size2
            copied = np.uint64(first + x_length if inside else 0)
            head = np.uint64(first if inside else 0)
            source = np.uint64(((n * size1 + max(i1, 0)) * size2 + max(i2, 0)) * x_length)
            for k in range(head):
                bf[out + k] = 0
            for k in range(copied - head):
                bf[out + head + k] = xf[source + k]
            for k in range(copied, np.uint64(row_length)):
                bf[out + k] = 0


@njit(cache=True, parallel=True, nogil=True)
def dilation_phases(full, phased, dilations, split):
    """Moves channels-last values between ``full`` ``[N, S1, S2, S3, C]`` and its dilation
    phases ``phased`` ``[D1*D2*D3*N, S1/D1, S2/D2, S3/D3, C]`` (each S a multiple of its
    D): phase (r1, r2, r3) of image n is ``phased[((r1*D2 + r2)*D3 + r3)*N + n]``, holding
    ``full[n, r1 + D1*m1, r2 + D2*m2, r3 + D3*m3]`` at (m1, m2, m3). ``split``: full to
    phased, else back. Threads take blocks of full's rows; each position's channels are one
    contiguous run on both sides."""
    n_total, size1, size2, size3, channels = full.shape
    d1, d2, d3 = dilations
    m1n, m2n, m3n = size1 // d1, size2 // d2, size3 // d3
    ff, pf = full.reshape(full.size), phased.reshape(phased.size)
    rows = n_total * size1 * size2
    blocks = min(rows, 64)
    for block in prange(blocks):
        for row in range(rows * block // blocks, rows * (block + 1) // blocks):
            n, p1, p2 = row // (size1 * size2), row // size2 % size1, row % size2
            image = ((p1 % d1) * d2 + p2 % d2) * d3 * n_total + n
            for p3 in range(size3):
                at = np.uint64(((((image + p3 % d3 * n_total) * m1n + p1 // d1) * m2n
                                 + p2 // d2) * m3n + p3 // d3) * channels)
                here = np.uint64((row * size3 + p3) * channels)
                if split:
                    for c in range(np.uint64(channels)):
                        pf[at + c] = ff[here + c]
                else:
                    for c in range(np.uint64(channels)):
                        ff[here + c] = pf[at + c]
