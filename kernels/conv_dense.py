"""Dense N-d convolution math (Conv2D/Conv3D and their gradients) on NumPy.

All three ops are GEMMs against a patch matrix ("im2col"): rows are output
positions, columns are (kernel offset, input channel) with the channel fastest,
matching the ``[*K, C, O]`` filter layout reshaped to ``[K*C, O]``:

* forward:          y[rows, O]    = col[rows, KC] @ w[KC, O]
* backprop-filter:  dw.T[O, KC]  += dy[rows, O].T @ col[rows, KC]
* backprop-input:   p[k, rows, C] = dy[rows, O] @ w[k].T for each kernel offset k,
                    each added into its slice of the padded input gradient (col2im;
                    never ``np.add.at``), kept phase-split so every slice has long rows.

The patch matrix is built block by block from a strided window view so that one
block stays near ``CHUNK_BYTES``: whole images when they fit, else slabs of output
rows (of the first spatial dim, then deeper dims for huge volumes). Small filter
operands are handed to BLAS as transposed views, which OpenBLAS runs markedly faster.
1x1 filters without padding skip im2col: one GEMM on the (strided) input.
"""

import contextlib
import itertools
import math

import numpy as np

from kernels.conv_layout import (compute_dtype, conv_output_size, from_channels_last,
                                 channels_last_shape, pad_spatial, to_channels_last,
                                 window_view)

CHUNK_BYTES = 8 << 20  # target size of one im2col block (measured best at 4-16 MB)


def conv_forward(x, w, strides, dilations, pads, channels_last=True):
    """Convolve ``x`` ([N,*S,C] or [N,C,*S]) with ``w`` ([*K,C,O]); result in x's dtype."""
    ct = compute_dtype(x.dtype)
    xc = to_channels_last(x, channels_last)
    kernel, (c, o) = w.shape[:-2], w.shape[-2:]
    n = xc.shape[0]
    out_sp = tuple(conv_output_size(s, k, st, d, b, a) for s, k, st, d, (b, a)
                   in zip(xc.shape[1:-1], kernel, strides, dilations, pads))
    w2 = np.ascontiguousarray(w.reshape(math.prod(w.shape[:-1]), o).T, dtype=ct).T
    if 0 in (n, o, w2.shape[0], *out_sp):
        y = np.zeros((n, *out_sp, o), ct)
    elif _pointwise(kernel, pads):
        picked = np.asarray(xc[_sampled(out_sp, strides)], ct)
        y = (picked.reshape(-1, c) @ w2).reshape(n, *out_sp, o)
    else:
        xp = pad_spatial(xc, pads, ct)
        y = np.empty((n, *out_sp, o), ct)
        for idx, col in _im2col_blocks(xp, kernel, strides, dilations, out_sp):
            np.matmul(col, w2, out=y[idx].reshape(-1, o))
    return from_channels_last(y.astype(x.dtype, copy=False), channels_last)


def conv_backprop_filter(x, dy, filter_shape, strides, dilations, pads, channels_last=True):
    """Gradient of the forward conv with respect to the filter, shape ``filter_shape``."""
    ct = compute_dtype(x.dtype)
    xc = to_channels_last(x, channels_last)
    dyc = to_channels_last(dy, channels_last)
    filter_shape = tuple(int(d) for d in filter_shape)
    kernel, o = filter_shape[:-2], filter_shape[-1]
    out_sp = dyc.shape[1:-1]
    if 0 in dyc.shape or math.prod(filter_shape) == 0 or 0 in xc.shape:
        return np.zeros(filter_shape, x.dtype)
    dyc = np.ascontiguousarray(dyc, dtype=ct)
    if _pointwise(kernel, pads):
        picked = np.asarray(xc[_sampled(out_sp, strides)], ct)
        dw = (dyc.reshape(-1, o).T @ picked.reshape(-1, xc.shape[-1])).T
    else:
        xp = _padded_for(xc, pads, kernel, strides, dilations, out_sp, ct)
        dwt = np.zeros((o, math.prod(filter_shape[:-1])), ct)
        for idx, col in _im2col_blocks(xp, kernel, strides, dilations, out_sp):
            dwt += dyc[idx].reshape(-1, o).T @ col
        dw = dwt.T
    return np.ascontiguousarray(dw.reshape(filter_shape), dtype=x.dtype)


def conv_backprop_input(dy, w, input_shape, strides, dilations, pads, channels_last=True):
    """Gradient of the forward conv with respect to its input, shape ``input_shape``."""
    ct = compute_dtype(dy.dtype)
    dyc = to_channels_last(dy, channels_last)
    in_shape = channels_last_shape(input_shape, channels_last)
    kernel, (c, o) = w.shape[:-2], w.shape[-2:]
    out_sp = dyc.shape[1:-1]
    if 0 in dyc.shape or 0 in in_shape or w.size == 0:
        return from_channels_last(np.zeros(in_shape, dy.dtype), channels_last)
    dyc = np.ascontiguousarray(dyc, dtype=ct)
    if _pointwise(kernel, pads):
        dx = np.zeros(in_shape, ct)
        w2 = np.ascontiguousarray(w.reshape(c, o), dtype=ct)
        dx[_sampled(out_sp, strides)] = (dyc.reshape(-1, o) @ w2.T).reshape(*dyc.shape[:-1], c)
    else:
        dx = _col2im(dyc, np.asarray(w, ct), in_shape, strides, dilations, pads, dy.dtype)
    return from_channels_last(dx.astype(dy.dtype, copy=False), channels_last)


def _pointwise(kernel, pads):
    """1x1 filter and no padding: the conv is a GEMM on the strided input positions."""
    return all(k == 1 for k in kernel) and not any(b or a for b, a in pads)


def _sampled(out_sp, strides):
    """Index of the input positions a 1x1 filter reads: every stride-th, ``out_sp`` of them."""
    return (slice(None),) + tuple(slice(0, (q - 1) * s + 1, s) for q, s in zip(out_sp, strides))


def _padded_for(xc, pads, kernel, strides, dilations, out_sp, dtype):
    """Zero-padded input, enlarged if needed so every window of ``out_sp`` lies inside it."""
    need = [(q - 1) * s + (k - 1) * d + 1
            for q, k, s, d in zip(out_sp, kernel, strides, dilations)]
    return pad_spatial(xc, pads, dtype, min_shape=need)


def _blocks(grid, row_bytes):
    """Split the output grid ``(N, *out_sp)`` into index blocks of about CHUNK_BYTES.

    Blocks run along the outermost axis whose inner rows fit the budget; the axes
    before it are iterated one index at a time. Yields ``(idx, rows)`` where ``idx``
    indexes ``[N, *out_sp, ...]`` arrays and ``rows`` is the block's number of positions.
    """
    for axis in range(len(grid)):
        inner = math.prod(grid[axis + 1:])
        if inner * row_bytes <= CHUNK_BYTES:
            break
    step = max(1, CHUNK_BYTES // (inner * row_bytes))
    for prefix in np.ndindex(*grid[:axis]):
        for start in range(0, grid[axis], step):
            stop = min(start + step, grid[axis])
            yield prefix + (slice(start, stop),), (stop - start) * inner


def _im2col_blocks(xp, kernel, strides, dilations, out_sp):
    """Yield ``(idx, col)``: the patch matrix ``[rows, K*C]`` of each output block.

    ``col`` is a reused buffer, valid until the next iteration.
    """
    kc = math.prod(kernel) * xp.shape[-1]
    grid = (xp.shape[0], *out_sp)
    win = window_view(xp, kernel, strides, dilations, out_sp)
    buf = None
    for idx, rows in _blocks(grid, kc * xp.itemsize):
        if buf is None:
            buf = np.empty(rows * kc, xp.dtype)  # the first block is the largest
        part = win[idx]
        col = buf[:rows * kc].reshape(rows, kc)
        np.copyto(col.reshape(part.shape), part)
        yield idx, col


def _col2im(dyc, w, in_shape, strides, dilations, pads, out_dtype):
    """Input gradient: ``dy @ w[k].T`` for every kernel offset k, added into place.

    The padded gradient is kept in a phase-split layout ``[N, s1, P1/s1, s2, P2/s2, ..., C]``
    (padded position ``p`` of a dim lives at ``[p % s, p // s]``), where every offset's
    target is a plain slice with ``OW*C``-long contiguous rows, whatever the strides.
    """
    kernel, (c, o) = w.shape[:-2], w.shape[-2:]
    n, out_sp = dyc.shape[0], dyc.shape[1:-1]
    phase_len = [-(-max(i + b + a, (q - 1) * s + (k - 1) * d + 1) // s) for i, (b, a), q, k, s, d
                 in zip(in_shape[1:-1], pads, out_sp, kernel, strides, dilations)]
    buf = np.zeros((n, *(v for pair in zip(strides, phase_len) for v in pair), c), dyc.dtype)
    # Only offsets that can reach the unpadded input matter (a huge filter has few of them).
    reaching = [range(max(0, -(((q - 1) * s - b) // d)), min(k, (b + i - 1) // d + 1))
                for i, (b, _), q, k, s, d in zip(in_shape[1:-1], pads, out_sp, kernel, strides,
                                                  dilations)]
    taps = math.prod(len(r) for r in reaching)
    w3 = np.swapaxes(np.ascontiguousarray(  # [taps, O, C] view of [taps, C, O]
        w[tuple(slice(r.start, r.stop) for r in reaching)].reshape(taps, c, o)), 1, 2)
    prod_buf = None
    with _ufunc_bufsize(out_sp[-1] * c):
        for idx, rows in _blocks(dyc.shape[:-1], taps * c * dyc.itemsize) if taps else ():
            if prod_buf is None:
                prod_buf = np.empty(taps * rows * c, dyc.dtype)
            prods = prod_buf[:taps * rows * c].reshape(taps, rows, c)
            np.matmul(dyc[idx].reshape(rows, o), w3, out=prods)
            for k, offset in enumerate(itertools.product(*reaching)):
                target = buf[_phase_index(idx, offset, dyc.shape[:-1], strides, dilations)]
                np.add(target, prods[k].reshape(target.shape), out=target)
    dx = np.empty(in_shape, out_dtype)
    for phases in itertools.product(*(range(s) for s in strides)):
        src, dst = [slice(None)], [slice(None)]
        for phase, s, (before, _), size in zip(phases, strides, pads, in_shape[1:-1]):
            first = (phase - before) % s  # first unpadded position in this phase
            count = len(range(first, size, s))
            src += [phase, slice((first + before) // s, (first + before) // s + count)]
            dst.append(slice(first, size, s))
        np.copyto(dx[tuple(dst)], buf[tuple(src)])
    return dx


@contextlib.contextmanager
def _ufunc_bufsize(row):
    """Let ufuncs work on contiguous rows of ``row`` elements in place: with a buffer much
    larger (or smaller) than a row, NumPy copies rows through its buffers, 2-3x slower."""
    old = np.setbufsize(min(-(-row // 16) * 16, 8192) if row >= 256 else np.getbufsize())
    try:
        yield
    finally:
        np.setbufsize(old)


def _phase_index(idx, offset, grid, strides, dilations):
    """Index into the phase-split buffer of the inputs that kernel ``offset`` touches for
    output block ``idx`` (input position ``o * s + k * d``)."""
    parts = [idx[0]]
    for axis in range(1, len(grid)):
        start, phase = divmod(offset[axis - 1] * dilations[axis - 1], strides[axis - 1])
        sel = idx[axis] if axis < len(idx) else slice(0, grid[axis])
        if isinstance(sel, slice):
            parts += [phase, slice(start + sel.start, start + sel.stop)]
        else:
            parts += [phase, start + sel]
    return tuple(parts) + (slice(None),)
