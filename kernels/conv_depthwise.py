"""Depthwise 2-D convolution math: DepthwiseConv2dNative forward and its two gradients.

Two paths. With NumPy (``xp=np``, the default) depthwise work is memory-bound, so every op
runs over cache-sized chunks of rows:

* each chunk copies its source rows once into a private zero-padded "slab", casting to the
  compute dtype; the input's channels are repeated M times there, so slab channel ``c*M + m``
  meets filter column ``(c, m)`` (TF's output-channel order);
* one ``np.einsum(optimize=False)`` per group of taps then runs over a strided view of the
  slab whose innermost axis is (width x channel) flattened: the only form in which einsum's
  fused multiply-add loop is contiguous and long. Filters are tiled along the width to match.
* Width stride s, forward and filter gradient: slab columns are split by phase (column % s)
  so every tap still reads a contiguous run; taps sharing a phase form one group.
* Input gradient: a gather, one einsum per row phase of dx. Its slab holds every dy pixel s
  times, so each tap reads one run covering all s column phases of dx at once (no scatter-add,
  no zero insertion, no de-interleaving); the filter table is zero where no tap lands.

Chunks are spread over a thread pool: NumPy releases the GIL inside einsum and copies.

With any other array module (CuPy on a GPU) the ops run written once against ``xp``, over
``chunk_bytes`` chunks of output positions: one einsum per chunk against a strided window
view (forward, filter gradient; a batched GEMM over channels in CuPy), and for the input
gradient one einsum per chunk followed by a strided-slice add per tap. NumPy uses that
input-gradient path too when out_backprop holds NaN/Inf: it never multiplies dy by a
structural zero, so NaN/Inf reach only the dx positions their taps reach (IEEE semantics).
"""

import os
import threading

import numpy as np

from kernels.conv_layout import (blocks, channels_last_shape, chunk_bytes, compute_dtype,
                                 conv_output_size, from_channels_last, padded_for_windows,
                                 tap_index, to_channels_last, window_view)

CHUNK_BYTES = 1 << 19          # slab + result bytes of one chunk: stays in a core's L2
_MIN_PARALLEL_FLOPS = 1 << 22  # smaller calls run in the calling thread
_pool = _pool_pid = None
_pool_lock = threading.Lock()


def depthwise_forward(x, w, strides, dilations, pads, channels_last=True, xp=np):
    """y[n, o, c*M+m] = sum_k x[n, o*s + k*d - before, c] * w[k, c, m]; w is [KH, KW, C, M]."""
    if xp is not np:
        return _forward_by_windows(x, w, strides, dilations, pads, channels_last, xp)
    xl = to_channels_last(x, channels_last)
    n, h, wd, c = xl.shape
    kh, kw, _, m = w.shape
    (sh, sw), (dh, dw) = strides, dilations
    (pt, pb), (pl, pr) = pads
    oh = conv_output_size(h, kh, sh, dh, pt, pb)
    ow = conv_output_size(wd, kw, sw, dw, pl, pr)
    y = np.zeros(_layout((n, oh, ow, c * m), channels_last), x.dtype)
    yl = to_channels_last(y, channels_last)
    if yl.size == 0 or xl.size == 0 or w.size == 0:
        return y
    ct, cm = compute_dtype(x.dtype), c * m
    groups, cells, chunks, in_rows = _input_plan(n, oh, ow, cm, kh, kw, strides, dilations, ct)
    wf = w.reshape(kh, kw, cm).astype(ct)
    tiled = [_tile(wf[:, taps], ow) for _, taps, _, _ in groups]
    direct = y.dtype == ct and yl.flags.c_contiguous

    def work(mine):
        slab = _Slab(_max_images(mine), in_rows, [q - pl for q, _, _, _ in groups], sw, cells,
                     c, wd, ct, inner=m)
        obuf = None if direct else np.empty(slab.out_shape(mine, ow * cm), ct)
        pbuf = np.empty(slab.out_shape(mine, ow * cm), ct) if len(groups) > 1 else None
        for n0, n1, r0, r1 in mine:
            nb, rows = n1 - n0, r1 - r0
            slab.fill(xl[n0:n1], r0 * sh - pt)
            out = (yl[n0:n1, r0:r1].reshape(nb, rows, ow * cm) if direct
                   else obuf[:nb, :rows])
            for g, group in enumerate(groups):
                view = _group_view(slab, g, group, kh, nb, rows, ow * cm, sh, dh)
                target = out if g == 0 else pbuf[:nb, :rows]
                np.einsum("ijnrk,ijk->nrk", view, tiled[g], out=target, optimize=False)
                if g:
                    out += target
            if not direct:
                yl[n0:n1, r0:r1] = out.reshape(nb, rows, ow, cm)

    _run(work, chunks, 2 * yl.size * kh * kw)
    return y


def depthwise_backprop_filter(x, dy, filter_shape, strides, dilations, pads, channels_last=True,
                              xp=np):
    """dw[k, c, m] = sum over n, o of x[n, o*s + k*d - before, c] * dy[n, o, c*M+m]."""
    if xp is not np:
        return _filter_by_windows(x, dy, filter_shape, strides, dilations, pads, channels_last,
                                  xp)
    kh, kw, c, m = (int(d) for d in filter_shape)
    xl, dyl = to_channels_last(x, channels_last), to_channels_last(dy, channels_last)
    n, _, wd, _ = xl.shape
    _, oh, ow, cm = dyl.shape
    (sh, sw), dh = strides, dilations[0]
    pt, pl = pads[0][0], pads[1][0]
    if 0 in (kh, kw, c, m) or dyl.size == 0 or xl.size == 0:
        return np.zeros((kh, kw, c, m), x.dtype)
    ct = compute_dtype(x.dtype)
    groups, cells, chunks, in_rows = _input_plan(n, oh, ow, cm, kh, kw, strides, dilations, ct)
    direct = dyl.dtype == ct and dyl.flags.c_contiguous

    def work(mine):
        slab = _Slab(_max_images(mine), in_rows, [q - pl for q, _, _, _ in groups], sw, cells,
                     c, wd, ct, inner=m)
        dbuf = None if direct else np.empty(slab.out_shape(mine, ow * cm), ct)
        sums = [np.zeros((kh, len(taps), ow * cm), ct) for _, taps, _, _ in groups]
        part = np.empty((kh, max(len(taps) for _, taps, _, _ in groups), ow * cm), ct)
        for n0, n1, r0, r1 in mine:
            nb, rows = n1 - n0, r1 - r0
            slab.fill(xl[n0:n1], r0 * sh - pt)
            if direct:
                d = dyl[n0:n1, r0:r1].reshape(nb, rows, ow * cm)
            else:
                d = dbuf[:nb, :rows]
                d.reshape(nb, rows, ow, cm)[...] = dyl[n0:n1, r0:r1]
            for g, group in enumerate(groups):
                view = _group_view(slab, g, group, kh, nb, rows, ow * cm, sh, dh)
                p = part[:, :len(group[1])]
                np.einsum("ijnrk,nrk->ijk", view, d, out=p, optimize=False)
                sums[g] += p
        return sums

    results = _run(work, chunks, 2 * dyl.size * kh * kw)
    dwf = np.zeros((kh, kw, cm), ct)
    for g, (_, taps, _, _) in enumerate(groups):
        total = sum(r[g] for r in results)
        dwf[:, taps] = total.reshape(kh, len(taps), ow, cm).sum(axis=2)
    return dwf.reshape(kh, kw, c, m).astype(x.dtype)


def depthwise_backprop_input(dy, w, input_shape, strides, dilations, pads, channels_last=True,
                             xp=np):
    """dx[n, i, c] = sum over o, k with o*s + k*d - before = i of dy[n, o, c*M+m] * w[k, c, m]."""
    if xp is not np:
        return _input_by_taps(dy, w, input_shape, strides, dilations, pads, channels_last, xp)
    n, h, wd, c = channels_last_shape(input_shape, channels_last)
    kh, kw, _, m = w.shape
    dyl = to_channels_last(dy, channels_last)
    ow = dyl.shape[2]
    (sh, sw), (dh, dw) = strides, dilations
    pt, pl = pads[0][0], pads[1][0]
    dx = np.zeros(_layout((n, h, wd, c), channels_last), dy.dtype)
    dxl = to_channels_last(dx, channels_last)
    if dxl.size == 0 or dyl.size == 0 or w.size == 0:
        return dx
    ct, cm = compute_dtype(dy.dtype), c * m
    if not np.isfinite(dyl).all():
        return _input_by_taps(dy, w, input_shape, strides, dilations, pads, channels_last, np)
    rgroups = _tap_groups(kh, sh, dh)
    count, step, wq = _tuple_taps(w.reshape(kh, kw, cm).astype(ct), sw, dw)
    a_max = (count - 1) * step
    # dx padded column t = w + pl lies in tuple t // sw; tap a reads dy column tuple - a
    t_lo, t_hi = pl // sw, (pl + wd - 1) // sw
    tiled = wq[:, :, (np.arange(wd) + pl) % sw].reshape(kh, count, wd * cm)
    tiled = {p: tiled[taps] for p, taps, _, _ in rgroups}
    direct = m == 1 and dx.dtype == ct and dxl.flags.c_contiguous
    cells = t_hi - t_lo + a_max + 1
    chunks = _chunks(n, h, ct.itemsize * cm * (wd + sw * cells // sh + 1))
    d_rows = max((r1 - 1 + pt) // sh - (r0 + pt) // sh for _, _, r0, r1 in chunks) + \
        (kh - 1) * dh // sh + 1

    def work(mine):
        slab = _Slab(_max_images(mine), d_rows, [t_lo - a_max], 1, cells, cm, ow, ct, outer=sw)
        obuf = None if direct else np.empty(slab.out_shape(mine, wd * cm), ct)
        for n0, n1, r0, r1 in mine:
            nb, rows = n1 - n0, r1 - r0
            base = (r0 + pt) // sh - (kh - 1) * dh // sh  # dy row held in slab row 0
            slab.fill(dyl[n0:n1], base)
            out = dxl[n0:n1, r0:r1].reshape(nb, rows, wd * cm) if direct else obuf[:nb, :rows]
            for p in range(sh):
                first_row = r0 + (p - r0 - pt) % sh  # first dx row of this row phase
                if first_row >= r1:
                    continue
                target = out[:, first_row - r0::sh]
                group = [g for g in rgroups if g[0] == p]
                if not group:
                    target[...] = 0
                    continue
                _, taps, first, tstep = group[0]
                start = (((first_row + pt) // sh - base - first) * slab.row_len
                         + a_max * slab.cell_len + (pl % sw) * cm)
                view = slab.view(start, (len(taps), count, nb, target.shape[1], wd * cm),
                                 (-tstep * slab.row_len, -step * slab.cell_len,
                                  slab.image_len, slab.row_len, 1))
                np.einsum("ijnrk,ijk->nrk", view, tiled[p], out=target, optimize=False)
            if not direct:
                part = out.reshape(nb, rows, wd, c, m)
                dxl[n0:n1, r0:r1] = part[..., 0] if m == 1 else part.sum(axis=-1)

    _run(work, chunks, 2 * dyl.size * kh * kw)
    return dx


class _Slab:
    """Private, zero-padded copy of a few source rows.

    Layout ``[images, rows, groups, cells, outer, C, inner]``: cell ``k`` of group ``g`` holds
    source column ``k*stride + offsets[g]``, each channel repeated ``inner`` times and the whole
    pixel ``outer`` times; positions outside the source stay zero. Views are built in elements
    from ``row_len``, ``cell_len``, ``group_len`` and ``image_len``.
    """

    def __init__(self, images, rows, offsets, stride, cells, c, src_width, dtype, outer=1,
                 inner=1):
        self.buf = np.empty((images, rows, len(offsets), cells, outer, c, inner), dtype)
        self.cell_len = outer * c * inner
        self.group_len = cells * self.cell_len
        self.row_len = len(offsets) * self.group_len
        self.image_len = rows * self.row_len
        self.spans = []
        for g, off in enumerate(offsets):
            lo = min(cells, max(0, -(off // stride)))
            hi = max(lo, min(cells, -((off - src_width) // stride)))
            self.spans.append((lo, hi, lo * stride + off, stride))
            self.buf[:, :, g, :lo] = 0
            self.buf[:, :, g, hi:] = 0

    def fill(self, src, first_row):
        """Copy ``src[:, first_row + u]`` into slab row u for every u; rows outside are zeros."""
        nb, rows = src.shape[0], self.buf.shape[1]
        lo = min(rows, max(0, -first_row))
        hi = max(lo, min(rows, src.shape[1] - first_row))
        if lo:
            self.buf[:nb, :lo] = 0
        if hi < rows:
            self.buf[:nb, hi:] = 0
        if hi == lo:
            return
        part = src[:, first_row + lo:first_row + hi, :, None, :, None]
        for g, (k0, k1, col, step) in enumerate(self.spans):
            self.buf[:nb, lo:hi, g, k0:k1] = part[:, :, col:col + step * (k1 - k0):step]

    def view(self, start, shape, strides):
        """Read-only view from element ``start``; ``strides`` counted in elements."""
        b = self.buf
        isz = b.itemsize
        return np.ndarray(shape, b.dtype, b, start * isz, tuple(s * isz for s in strides))

    def out_shape(self, chunks, length):
        """Shape of a result buffer for ``chunks``: [images, rows, length]."""
        return (_max_images(chunks), max(r1 - r0 for _, _, r0, r1 in chunks), length)


def _input_plan(n, oh, ow, cm, kh, kw, strides, dilations, ct):
    """For ops that read x: (column tap groups, slab cells per group, chunks, slab rows)."""
    (sh, sw), (dh, dw) = strides, dilations
    groups = _tap_groups(kw, sw, dw)
    cells = ow + max(first + step * (len(taps) - 1) for _, taps, first, step in groups)
    chunks = _chunks(n, oh, ct.itemsize * cm * (ow + sh * len(groups) * cells))
    in_rows = (max(r1 - r0 for _, _, r0, r1 in chunks) - 1) * sh + (kh - 1) * dh + 1
    return groups, cells, chunks, in_rows


def _group_view(slab, g, group, kh, nb, rows, width, sh, dh):
    """``[KH, taps, images, rows, width]`` view of the x slab for column tap group ``g``."""
    _, taps, first, step = group
    return slab.view(g * slab.group_len + first * slab.cell_len, (kh, len(taps), nb, rows, width),
                     (dh * slab.row_len, step * slab.cell_len, slab.image_len,
                      sh * slab.row_len, 1))


def _tap_groups(k, s, d):
    """Taps of one dim grouped by phase ``(t*d) % s``: list of (phase, taps, first, step).

    Tap ``taps[j]`` of a group reads phase cell ``out + first + j*step``.
    """
    groups = []
    for q in sorted({t * d % s for t in range(k)}):
        taps = [t for t in range(k) if t * d % s == q]
        first = taps[0] * d // s
        step = taps[1] * d // s - first if len(taps) > 1 else 0
        groups.append((q, taps, first, step))
    return groups


def _tuple_taps(wf, s, d):
    """Width taps seen in tuples of s columns, for the input gradient.

    Tap j sits at tuple ``a = (j*d)//s``, position ``q = (j*d)%s``. Returns (count, step,
    table): the used tuples are covered by ``a = step*t`` for t < count, and
    ``table[:, t, q]`` is the filter at (t, q) -- zero where no tap sits.
    """
    kh, kw, cm = wf.shape
    used = sorted({j * d // s for j in range(kw)})
    gaps = {b - a for a, b in zip(used, used[1:])}
    step = gaps.pop() if len(gaps) == 1 else 1
    count = used[-1] // step + 1
    table = np.zeros((kh, count, s, cm), wf.dtype)
    for j in range(kw):
        a, q = divmod(j * d, s)
        table[:, a // step, q] = wf[:, j]
    return count, step, table


def _tile(wf, width):
    """Filter taps ``[A, B, C']`` repeated along the width: contiguous ``[A, B, width*C']``."""
    a, b, cm = wf.shape
    return np.ascontiguousarray(np.broadcast_to(wf[:, :, None], (a, b, width, cm))).reshape(
        a, b, width * cm)


def _layout(shape, channels_last):
    """A channels-last shape [N, H, W, C] in the caller's layout."""
    return shape if channels_last else (shape[0], shape[-1]) + tuple(shape[1:-1])


def _chunks(n, rows, row_bytes):
    """(n0, n1, r0, r1) blocks of about CHUNK_BYTES: whole images when they fit, else row blocks."""
    per = max(1, CHUNK_BYTES // max(1, row_bytes))
    if per >= rows:
        step = per // rows
        return [(a, min(a + step, n), 0, rows) for a in range(0, n, step)]
    return [(i, i + 1, r, min(r + per, rows)) for i in range(n) for r in range(0, rows, per)]


def _max_images(chunks):
    return max(n1 - n0 for n0, n1, _, _ in chunks)


def _threads():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # platforms without affinity masks
        return os.cpu_count() or 1


def _run(work, chunks, flops):
    """``work(share)`` over interleaved shares of ``chunks``, on the pool when worth it."""
    global _pool, _pool_pid
    t = min(_threads(), len(chunks)) if flops >= _MIN_PARALLEL_FLOPS else 1
    if t <= 1:
        return [work(chunks)]
    with _pool_lock:
        if _pool is None or _pool_pid != os.getpid():  # a forked child needs its own threads
            from concurrent.futures import ThreadPoolExecutor   # lazily: keeps import fast
            _pool, _pool_pid = ThreadPoolExecutor(_threads(), "depthwise"), os.getpid()
    return list(_pool.map(work, [chunks[i::t] for i in range(t)]))


# ----------------------------------------------------------------------------- any array module


def _forward_by_windows(x, w, strides, dilations, pads, channels_last, xp):
    """The forward conv as one ``win @ w`` einsum per chunk of output positions."""
    xl = to_channels_last(x, channels_last, xp)
    n, c = xl.shape[0], xl.shape[-1]
    kh, kw, _, m = w.shape
    out_hw = tuple(conv_output_size(s, k, st, d, b, a) for s, k, st, d, (b, a)
                   in zip(xl.shape[1:3], (kh, kw), strides, dilations, pads))
    ct = compute_dtype(x.dtype)
    y = xp.zeros((n, *out_hw, c, m), ct)
    if y.size and xl.size and kh * kw:
        padded = padded_for_windows(xl, pads, (kh, kw), strides, dilations, out_hw, ct, xp)
        win = window_view(padded, (kh, kw), strides, dilations, out_hw, xp)
        wc = w.astype(ct, copy=False)
        for idx, _ in _position_blocks((n, *out_hw), kh * kw * c + c * m, ct, xp):
            y[idx] = xp.einsum("nhwijc,ijcm->nhwcm", win[idx], wc, optimize=False)
    y = y.reshape(n, *out_hw, c * m).astype(x.dtype, copy=False)
    return from_channels_last(y, channels_last, xp)


def _filter_by_windows(x, dy, filter_shape, strides, dilations, pads, channels_last, xp):
    """The filter gradient as ``win.T @ dy`` einsums summed over chunks of output positions."""
    kh, kw, c, m = (int(d) for d in filter_shape)
    xl, dyl = to_channels_last(x, channels_last, xp), to_channels_last(dy, channels_last, xp)
    n, oh, ow, _ = dyl.shape
    ct = compute_dtype(x.dtype)
    dw = xp.zeros((kh, kw, c, m), ct)
    if dw.size and dyl.size and xl.size:
        padded = padded_for_windows(xl, pads, (kh, kw), strides, dilations, (oh, ow), ct, xp)
        win = window_view(padded, (kh, kw), strides, dilations, (oh, ow), xp)
        dy5 = dyl.reshape(n, oh, ow, c, m)
        for idx, _ in _position_blocks((n, oh, ow), kh * kw * c + 2 * c * m, ct, xp):
            dw += xp.einsum("nhwijc,nhwcm->ijcm", win[idx], dy5[idx].astype(ct, copy=False),
                            optimize=False)
    return dw.astype(x.dtype, copy=False)


def _input_by_taps(dy, w, input_shape, strides, dilations, pads, channels_last, xp):
    """The input gradient: per chunk, ``dy @ w.T`` for all taps at once (one einsum), then
    each tap's products added into its strided slice of a padded buffer."""
    n, h, wd, c = channels_last_shape(input_shape, channels_last)
    kh, kw, _, m = w.shape
    dyl = to_channels_last(dy, channels_last, xp)
    grid = dyl.shape[:3]
    ct = compute_dtype(dy.dtype)
    padded_hw = [max(size + b + a, (q - 1) * s + (k - 1) * d + 1) for size, (b, a), q, k, s, d
                 in zip((h, wd), pads, grid[1:], (kh, kw), strides, dilations)]
    buf = xp.zeros((n, *padded_hw, c), ct)
    if dyl.size and w.size and buf.size:
        dy5 = dyl.reshape(*grid, c, m)
        wc = w.astype(ct, copy=False)
        for idx, _ in _position_blocks(grid, kh * kw * c + c * m, ct, xp):
            cols = xp.einsum("nhwcm,ijcm->ijnhwc", dy5[idx].astype(ct, copy=False), wc,
                             optimize=False)
            for i in range(kh):
                for j in range(kw):
                    target = buf[tap_index(idx, grid, (i, j), strides, dilations)]
                    target += cols[i, j]
    (pt, _), (pl, _) = pads
    dx = xp.ascontiguousarray(buf[:, pt:pt + h, pl:pl + wd], dtype=dy.dtype)
    return from_channels_last(dx, channels_last, xp)


def _position_blocks(grid, values_per_position, ct, xp):
    """``blocks`` of output positions for the array-module path; each position holds about
    ``values_per_position`` values of ``ct`` (a patch row and the einsum's result), twice
    over for the operand copies CuPy's einsum makes."""
    return blocks(grid, 2 * values_per_position * ct.itemsize, chunk_bytes(xp, CHUNK_BYTES))
