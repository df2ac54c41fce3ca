"""Depthwise 2-D convolution math: DepthwiseConv2dNative forward and its two gradients.

Two paths. With NumPy (``xp=np``, the default) each op is one fused pass of compiled loops
(numba, imported on first use) over channels-last, C-contiguous operands: NHWC operands go
in as they are, NCHW ones and strided views are copied once on the way in and the result
once on the way out. float32, bfloat16 and float16 with multiplier 1 run on vector kernels
that read their operands in place (``kernels/compiled/depthwise_vectors.py``; the 16-bit
floats there with at most ``DEPTHWISE_TAPS`` taps, which one call sums, except the filter
gradient, whose sums stay float32 at any size); the rest on loops over a row cache
(``kernels/compiled/depthwise.py``). Either way float16/bfloat16 stay in their dtype: the
loops widen values to float32 as they load them and round each result once as they store
it, so no pass of its own casts them. The loops split the rows into
``parallelism.share_count()`` blocks that threads take as they come free; the
filter gradient sums each block in the compute dtype, then the blocks in order in float64,
so results depend only on the thread count. The float32 NCHW forward conv and input
gradient run instead plane by plane on the NCHW operands as they lie, threads taking
planes (``kernels/compiled/depthwise_planes.py``): no transposes. They leave out the taps
that read the padding, as the vector kernels do; the row-cache loops (multipliers above 1
in NHWC) multiply the padding's zeros, so only there does a non-finite weight next to the
padding make NaN.

On a CUDA GPU (CuPy) the ops run on cuDNN where it is installed and faster
(``cudnn_convs``), else on direct kernels (``cuda_depthwise``). With any other
array module (the simulated GPU) they run written once against ``xp``, over ``chunk_bytes``
chunks of output positions: one einsum per chunk against a strided window view (forward,
filter gradient), and for the input gradient one einsum per chunk followed by a
strided-slice add per tap. NumPy takes that path too in a child forked after numba was
loaded: numba's OpenMP loops abort there.
"""


import math

import ml_dtypes
import numpy as np

from graphops.kernels.compiled import host_isa, loops, usable
from graphops.kernels.compiled.constants import DEPTHWISE_TAPS
from graphops.kernels.conv_algorithms import cuda_depthwise, cudnn_convs
from graphops.kernels.conv_algorithms.cuda_build import runs_on
from graphops.kernels.conv_algorithms.layout import (blocks, channels_last_copy,
                                                     channels_last_shape, chunk_bytes,
                                                     compute_dtype, conv_output_shape,
                                                     conv_output_size,
                                                     from_channels_last, padded_for_windows,
                                                     tap_index, to_channels_last, window_view)
from graphops.kernels.support.kernel_util import aligned_empty
from graphops.kernels.support.parallelism import share_count

CHUNK_BYTES = 1 << 19   # the array-module path's chunk on the CPU
RUN_VALUES = 512        # compiled loops: values (columns x C*M) per inner-loop run
SINGLE_THREAD_MAX_VALUES = 1 << 17   # smaller ops run on one thread (measured: 2-3x faster)
# the 16-bit floats the vector kernels take, as the integers that carry their bits
_VECTOR_BITS = {np.dtype(ml_dtypes.bfloat16): np.dtype(np.uint16),
                np.dtype(np.float16): np.dtype(np.int16)}


def depthwise_forward(x, w, strides, dilations, pads, channels_last=True, xp=np):
    """y[n, o, c*M+m] = sum_k x[n, o*s + k*d - before, c] * w[k, c, m]; w is [KH, KW, C, M]."""
    def own(a, b):
        return _forward(a, b, strides, dilations, pads, channels_last, xp)
    return cudnn_convs.forward(x, w, strides, dilations, pads, channels_last, xp, own,
                               depthwise=True)


def _forward(x, w, strides, dilations, pads, channels_last, xp):
    if runs_on(xp, compute_dtype(x.dtype)):
        return cuda_depthwise.forward(x, w, strides, dilations, pads, channels_last, xp)
    if xp is not np or not usable():
        return _forward_by_windows(x, w, strides, dilations, pads, channels_last, xp)
    out_shape = conv_output_shape(x.shape, w.shape, strides, dilations, pads, channels_last,
                                  depthwise=True)
    if _on_planes(x.dtype, w.dtype, channels_last):
        return _planes("forward", x, w, out_shape, strides, dilations, pads)
    y = _run("forward", channels_last_copy(x, channels_last), w,
             channels_last_shape(out_shape, channels_last), strides, dilations, pads)
    return from_channels_last(y, channels_last)


def depthwise_backprop_filter(x, dy, filter_shape, strides, dilations, pads, channels_last=True,
                              xp=np):
    """dw[k, c, m] = sum over n, o of x[n, o*s + k*d - before, c] * dy[n, o, c*M+m]."""
    def own(a, b):
        return _backprop_filter(a, b, filter_shape, strides, dilations, pads, channels_last, xp)
    return cudnn_convs.backprop_filter(x, dy, filter_shape, strides, dilations, pads,
                                       channels_last, xp, own, depthwise=True)


def _backprop_filter(x, dy, filter_shape, strides, dilations, pads, channels_last, xp):
    if runs_on(xp, compute_dtype(x.dtype)):
        return cuda_depthwise.backprop_filter(x, dy, filter_shape, strides, dilations, pads,
                                              channels_last, xp)
    if xp is not np or not usable():
        return _filter_by_windows(x, dy, filter_shape, strides, dilations, pads, channels_last,
                                  xp)
    kh, kw, c, m = (int(d) for d in filter_shape)
    xl = channels_last_copy(x, channels_last)
    dyl = channels_last_copy(dy, channels_last)
    if 0 in (kh, kw, c, m) or dyl.size == 0 or xl.size == 0:
        return np.zeros((kh, kw, c, m), x.dtype)
    geometry = _geometry((kh, kw, c, m), strides, dilations, pads)
    if _on_vectors(x.dtype, (kh, kw, c, m), float32_sums=True):
        compiled, parts = _loops(dyl.size, "depthwise_vectors")
        sums = np.zeros((min(parts, dyl.shape[0] * dyl.shape[1]), kh * kw * c))
        compiled.backprop_filter(_vector_bits(xl), _vector_bits(dyl), sums, geometry)
        return sums.sum(axis=0).reshape(kh, kw, c, m).astype(x.dtype)
    cols = _run_columns(c * m)
    compiled, parts = _loops(dyl.size)
    blocks_shape = (min(parts, dyl.shape[0] * dyl.shape[1]), kh * kw, cols * c * m)
    sums = np.zeros(blocks_shape)
    compiled.backprop_filter(_bits(xl), _bits(dyl), sums,
                             aligned_empty(blocks_shape, compute_dtype(x.dtype)), geometry, cols,
                             _bfloat(x.dtype))
    dw = sums.sum(axis=0).reshape(kh, kw, cols, c, m).sum(axis=2)
    return dw.astype(x.dtype)


def depthwise_backprop_input(dy, w, input_shape, strides, dilations, pads, channels_last=True,
                             xp=np):
    """dx[n, i, c] = sum over o, k with o*s + k*d - before = i of dy[n, o, c*M+m] * w[k, c, m]."""
    def own(a, b):
        return _backprop_input(a, b, input_shape, strides, dilations, pads, channels_last, xp)
    return cudnn_convs.backprop_input(dy, w, input_shape, strides, dilations, pads,
                                      channels_last, xp, own, depthwise=True)


def _backprop_input(dy, w, input_shape, strides, dilations, pads, channels_last, xp):
    if runs_on(xp, compute_dtype(dy.dtype)):
        return cuda_depthwise.backprop_input(dy, w, input_shape, strides, dilations, pads,
                                             channels_last, xp)
    if xp is not np or not usable():
        return _input_by_taps(dy, w, input_shape, strides, dilations, pads, channels_last, xp)
    if _on_planes(dy.dtype, w.dtype, channels_last):
        return _planes("backprop_input", dy, w, tuple(input_shape), strides, dilations, pads)
    dyl = channels_last_copy(dy, channels_last)
    dx = _run("backprop_input", dyl, w, channels_last_shape(input_shape, channels_last),
              strides, dilations, pads)
    return from_channels_last(dx, channels_last)


def _run(name, source, w, out_shape, strides, dilations, pads):
    """The channels-last ``out_shape`` output of the compiled loop ``name`` (forward or
    backprop_input) from ``source``, or zeros when there is nothing to sum. It starts on a
    cache line, or where the vector kernels read ``source`` as one stream of vectors on its
    lines (``compiled.depthwise_vectors.line_rotation``), at ``source``'s offset within a line, so
    that its stores take whole lines too."""
    size = math.prod(out_shape)
    if not (size and source.size and w.size):
        return np.zeros(out_shape, source.dtype)
    geometry = _geometry(w.shape, strides, dilations, pads)
    if _on_vectors(source.dtype, w.shape):
        compiled, parts = _loops(max(size, source.size), "depthwise_vectors")
        channels = source.shape[-1]
        streamed = compiled.line_rotation(_vector_bits(source).reshape(-1), channels,
                                          strides[1] * channels)
        out = aligned_empty(out_shape, source.dtype, like=source if streamed else None)
        getattr(compiled, name)(_vector_bits(source), np.ascontiguousarray(w, np.float32),
                                _vector_bits(out), geometry, parts)
        return out
    out = aligned_empty(out_shape, source.dtype)
    cols = _run_columns(w.shape[2] * w.shape[3])
    compiled, parts = _loops(max(size, source.size))
    getattr(compiled, name)(_bits(source), _tiled(w, cols, source.dtype), _bits(out),
                            geometry, cols, parts, _bfloat(source.dtype))
    return out


def _on_planes(dtype, filter_dtype, channels_last):
    """Whether an op runs on the channels-first loops (``compiled.depthwise_planes``):
    float32 NCHW operands, which they read and write in place, plane by plane."""
    return not channels_last and np.dtype(dtype) == np.dtype(filter_dtype) == np.float32


def _planes(name, source, w, out_shape, strides, dilations, pads):
    """The NCHW ``out_shape`` output of the channels-first loop ``name`` (forward or
    backprop_input) from NCHW ``source``; zeros where there is nothing to sum."""
    if not (math.prod(out_shape) and source.size and w.size):
        return np.zeros(out_shape, np.float32)
    out = np.empty(out_shape, np.float32)
    compiled, _ = _loops(max(out.size, source.size), "depthwise_planes")
    getattr(compiled, name)(np.ascontiguousarray(source), np.ascontiguousarray(w), out,
                            _geometry(w.shape, strides, dilations, pads))
    return out


def _on_vectors(dtype, filter_shape, float32_sums=False):
    """Whether the vector kernels (``compiled.depthwise_vectors``) take an op: multiplier 1,
    and float32, or bfloat16 or float16 where each output's sum is one call's (at most
    ``DEPTHWISE_TAPS`` taps, or ``float32_sums``: the filter gradient, which sums in
    float32 whatever its size) and so is rounded once, float16 where numba's code converts
    it in hardware (``host_isa.float16_conversions``); the row-cache loops take the rest."""
    kh, kw, _, multiplier = filter_shape
    if multiplier != 1:
        return False
    if np.dtype(dtype) == np.float16 and not host_isa.float16_conversions():
        return False
    return np.dtype(dtype) == np.float32 or (
        np.dtype(dtype) in _VECTOR_BITS and (float32_sums or kh * kw <= DEPTHWISE_TAPS))


def _loops(values, name="depthwise"):
    """The compiled loops ``name`` (threads take one row block, or one plane, at a time)
    and the row-block count; below SINGLE_THREAD_MAX_VALUES output (or dy) values on one
    thread, blocks the same."""
    return loops(name, chunk=1, single=values < SINGLE_THREAD_MAX_VALUES), share_count()


def _run_columns(cm):
    """Output columns per inner-loop run: about RUN_VALUES values, at least one column."""
    return max(1, RUN_VALUES // max(cm, 1))


def _geometry(filter_shape, strides, dilations, pads):
    """The loops' geometry: KH, KW, M, sh, sw, dh, dw, top and left padding, as ints."""
    kh, kw, _, m = filter_shape
    (sh, sw), (dh, dw), ((pt, _), (pl, _)) = strides, dilations, pads
    return tuple(int(v) for v in (kh, kw, m, sh, sw, dh, dw, pt, pl))


def _bits(a):
    """An operand as the loops take it: float16/bfloat16 as their bits (uint16), which the
    loops widen to float32 as rows load and narrow as rows finish; other floats as they are."""
    return a.view(np.uint16) if a.dtype.itemsize == 2 else a


def _vector_bits(a):
    """An operand as the vector kernels take it: float32 as it is, bfloat16 as uint16 bits
    and float16 as int16 bits (``compiled.ir.half_kind``)."""
    return a.view(_VECTOR_BITS[a.dtype]) if a.dtype in _VECTOR_BITS else a


def _bfloat(dtype):
    """Whether half bits are bfloat16's (else float16's)."""
    return np.dtype(dtype) == ml_dtypes.bfloat16


def _tiled(w, cols, dtype):
    """Filter [KH, KW, C, M] as ``[KH*KW, cols*C*M]`` in the compute dtype of ``dtype``:
    each tap's C*M values ``cols`` times."""
    kh, kw, c, m = w.shape
    taps = aligned_empty((kh * kw, cols * c * m), compute_dtype(dtype))
    taps.reshape(kh * kw, cols, c * m)[...] = w.reshape(kh * kw, 1, c * m)
    return taps


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
