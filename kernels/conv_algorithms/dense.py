"""Dense N-d convolution math (Conv2D/Conv3D and their gradients), for NumPy and CuPy.

Each op picks the first path that applies (``conv_forward`` and friends read top to bottom):

* CPU, bfloat16 on a host with AMX: the forward conv, the stride-1 input gradient and the
  stride-1 filter gradient of a finite input on tile products (``matrix_tiles``);
* 1x1 filters without padding: one GEMM on the (strided) input positions;
* CPU, very few channels (``few_channel_loops``): direct compiled loops that compute each
  output plane on the padded width, every kernel tap one long contiguous run
  (``conv_few_channels``);
* CPU, the float32 forward conv and filter gradient with output channels in groups of 8,
  strided, small, or of any size where Winograd does not take them (5x5 stride-1 convs,
  dilated ones whose sizes do not split into phases: twice as fast as on the scatter
  GEMMs; the filter gradient before the scalar few-channel loops, with an output plane
  for every thread), and the stride-1 input gradient with input channels so (the forward
  of dy with the filter flipped; ``_few_channel_input`` sends it to the few-channel loops
  where dx has few channels): register-blocked micro-kernels reading the padded input in
  place (``conv_direct``); a forward-conv kernel calls them itself where the fixed rule
  takes them (``routes.kernel_route``);
* CPU, 3x3(x3) stride-1 float convs of 16-128 channels (``winograd.applies``), and dilated
  ones as the undilated convs of their dilation phases (``dilation_phases``): Winograd
  (its products on the same micro-kernels where the output channels come in groups of 8),
  redone on the next path when a result comes out non-finite. Where both these paths take
  a large conv, which one is faster depends on the CPU: ``direct_or_winograd`` times both
  on the host (``tuning``) and keeps the faster;
* CPU, strided input gradients with at most ``PHASE_MAX_DEPTH`` dy channels (transposed
  convs to few channels, ``_by_phases``): one stride-1 direct conv per phase of dx, written
  into its strided view (``conv_phases``);
* CPU, other strided float32 input gradients phase by phase on the micro-kernels
  (``conv_direct.backprop_input_strided``) where that beats the scatter GEMMs below on the
  vector unit numba compiles for (``conv_direct.phases_win``: at AVX-512, not at AVX2), or
  as ``tuning`` finds on the host where both apply (``_phases_or_scatter``);
* CPU, the input gradient (and the stride-1 forward with ``SCATTER_MIN_DEPTH``+ input
  channels) with at most ``POOL_MAX_CHANNELS`` output channels: one GEMM per block with
  taps x channels columns, ``dy[rows, O] @ w.T[O, taps*C]`` (or ``x[rows, C] @
  w[C, taps*O]`` with the filter flipped), whose products ``compiled.conv.add_taps``
  scatter-adds into place (``scatter.py``: runs of whole images, or first-dim slabs
  thick enough that slabs two apart never meet, even ones then odd ones, on the pool);
* otherwise GEMMs against a patch matrix ("im2col"): rows are output positions, columns
  (kernel offset, input channel) with the channel fastest, matching the ``[*K, C, O]``
  filter reshaped to ``[K*C, O]``:

  - forward:          y[rows, O]    = col[rows, KC] @ w[KC, O]
  - backprop-filter:  dw[KC, O]    += col[rows, KC].T @ dy[rows, O]
  - backprop-input:   p[k, rows, C] = dy[rows, O] @ w[k].T for each kernel offset k, each
                      added into its slice of the padded input gradient (col2im; never
                      ``np.add.at``), kept phase-split so every slice has long rows.

  The patch matrix is built block by block from a strided window view, a block near
  ``chunk_bytes(xp, CHUNK_BYTES)``. On the CPU, with at most ``POOL_MAX_CHANNELS`` output
  channels, the blocks are spread over the intra-op pool (single-threaded GEMMs, the filter
  gradient summing one partial per share in share order); with more, in turn, BLAS on all
  cores.

On a CUDA GPU float convs run on cuDNN where it is installed and faster (``cudnn_convs``),
else gather their patch matrices with kernels (``cuda_patches``). The im2col path takes
any array module (NumPy, CuPy, the simulated GPU); the other CPU paths are NumPy only.
NCHW operands are transposed to channels-last once, image by image, half types widened once.
"""

import itertools
import math

import numpy as np

from graphops.kernels.conv_algorithms import cuda_patches, cudnn_convs
from graphops.kernels.conv_algorithms import direct as conv_direct
from graphops.kernels.conv_algorithms import direct_or_winograd
from graphops.kernels.conv_algorithms import few_channels as conv_few_channels
from graphops.kernels.conv_algorithms import gemm as conv_gemm
from graphops.kernels.conv_algorithms import matrix_tiles
from graphops.kernels.conv_algorithms import phases as conv_phases
from graphops.kernels.conv_algorithms import scatter as conv_scatter
from graphops.kernels.conv_algorithms import tuning as conv_tuning
from graphops.kernels.compiled import usable
from graphops.kernels.conv_algorithms.cuda_build import runs_on
from graphops.kernels.conv_algorithms.gemm import gemm_filter
from graphops.kernels.conv_algorithms.layout import (blocks, channels_last_copy,
                                                     channels_last_shape, chunk_bytes,
                                                     compute_dtype, conv_output_size,
                                                     flipped_filter, flipped_pads,
                                                     from_channels_last, pad_spatial,
                                                     padded_for_windows, window_view)
from graphops.kernels.support.kernel_util import astype, channel_chain, ufunc_rows
from graphops.kernels.support.parallelism import one_thread, pool_map, share_count

CHUNK_BYTES = 8 << 20  # CPU im2col block size (measured best at 4-16 MB)
MIN_BLOCK_BYTES = 1 << 20   # a CPU block never smaller: below it the pool costs more
TAP_MAJOR_MAX_CHANNELS = 2  # input channels up to which patch matrices are built tap-major
POOL_MAX_CHANNELS = 128     # output channels up to which blocks run on the intra-op pool
SMALL_MAX_CHANNEL_PAIRS = 16  # input x output channels up to which direct loops do best
SMALL_MAX_PLANE_BYTES = 16 << 20  # a thread's plane buffers in the direct loops, at most
PHASE_MAX_DEPTH = 4           # dy channels up to which strided input gradients run by phases
# CPU convs of fewer FLOPs run on the calling thread alone (`parallelism.one_thread`): waking
# a sleeping thread costs 50-110 us, and an idle core runs slower for a while. Inside a
# model numba's threads still spin from the last op (`compiled` sets their spin), and
# convs of 8-32 MFLOP ran faster on both cores (U-Net at batch 8 12.5 -> 9.1 ms, DenseNet121
# and ResNet50 at batch 1 4-7% faster; the TF1 programs within their noise).
SERIAL_MAX_FLOPS = 1 << 23
SCATTER_MIN_DEPTH = 32        # forward: input channels below which patch matrices do better
SCATTER_MIN_SOURCES = 1024    # source positions (all images) a scatter conv needs at least


def conv_forward(x, w, strides, dilations, pads, channels_last=True, xp=np, epilogue=None):
    """Convolve ``x`` ([N,*S,C] or [N,C,*S]) with ``w`` ([*K,C,O]); result in x's dtype.
    ``epilogue``: a channels-last CPU conv's ``(stages, activation, tiles)`` after it, as
    ``kernel_util.channel_chain`` takes them (a BiasAdd and Relu the plan fused in): the
    few-channel and direct loops apply it as they write the output, the other paths after."""
    def own(x, w):
        with one_thread(serial_forward(xp, x, w, strides, channels_last)):
            return _forward(x, w, strides, dilations, pads, channels_last, xp, epilogue)
    return cudnn_convs.forward(x, w, strides, dilations, pads, channels_last, xp, own)


def serial(xp, multiply_adds):
    """Whether a conv of about ``multiply_adds`` runs on one thread (``SERIAL_MAX_FLOPS``)."""
    return xp is np and 2 * multiply_adds < SERIAL_MAX_FLOPS


def serial_forward(xp, x, w, strides, channels_last=True):
    """``serial`` for the forward conv of ``x`` by ``w``: about x's positions over the
    strides, times the filter's size; never for a filter the direct loops stream
    (``direct.streams``), as a filter streams from memory faster on every core."""
    positions = x.size // max(1, x.shape[-1 if channels_last else 1]) // math.prod(strides)
    return (serial(xp, positions * math.prod(w.shape))
            and not conv_direct.streams(positions, 4 * x.size, 4 * w.size))


def _forward(x, w, strides, dilations, pads, channels_last, xp, epilogue):
    if epilogue is None and matrix_tiles.applies(xp, x.dtype, w.shape[:-2], *w.shape[-2:], pads):
        return matrix_tiles.conv_forward(x, w, strides, dilations, pads, channels_last)
    ct = compute_dtype(x.dtype)
    xc = channels_last_copy(astype(xp, x, ct), channels_last, xp)
    wc = w.astype(ct, copy=False)
    kernel, (c, o) = w.shape[:-2], w.shape[-2:]
    n = xc.shape[0]
    out_sp = tuple(conv_output_size(s, k, st, d, b, a) for s, k, st, d, (b, a)
                   in zip(xc.shape[1:-1], kernel, strides, dilations, pads))
    y, pending = None, epilogue
    if 0 in (n, o, c, *kernel, *out_sp):
        y = xp.zeros((n, *out_sp, o), ct)
    elif conv_gemm.pointwise(kernel, pads):
        if conv_direct.takes_pointwise(xp, ct, strides, o, (n, *out_sp), c):
            y, pending = conv_direct.forward(xc, wc, strides, dilations, pads, out_sp,
                                             epilogue=epilogue), None
        else:
            picked = xc[_sampled(out_sp, strides)]
            y = conv_gemm.filter_product(picked.reshape(-1, c), wc).reshape(n, *out_sp, o)
    elif 0 not in xc.shape and xp is np:
        if few_channel_loops(xp, ct, kernel, strides, dilations, c, o, out_sp):
            y, pending = conv_few_channels.forward(xc, wc, out_sp, strides, dilations, pads,
                                                   ct, epilogue=epilogue), None
        elif conv_gemm.on_few_positions(xp, ct, n, out_sp, kernel, strides, c, o):
            y = conv_gemm.few_positions(xc, wc, strides, dilations, pads, out_sp, ct)
        else:
            y = direct_or_winograd.forward(xc, wc, strides, dilations, pads, out_sp, ct,
                                           epilogue)
            pending = epilogue if y is None else None
        if y is None and (c >= SCATTER_MIN_DEPTH and all(s == 1 for s in strides)
                          and _scatters(xp, kernel, o, math.prod(xc.shape[:-1]))):
            y = conv_scatter.forward(xc, wc, out_sp, dilations, pads)
    if y is None and runs_on(xp, ct):
        y = cuda_patches.forward(xc, wc, strides, dilations, pads, out_sp, xp)
    if y is None:
        y = _forward_by_im2col(xc, wc, strides, dilations, pads, out_sp, ct, xp)
    if pending is not None:
        y = channel_chain(y, *pending, in_place=True)
    return from_channels_last(astype(xp, y, x.dtype), channels_last, xp)


def conv_backprop_filter(x, dy, filter_shape, strides, dilations, pads, channels_last=True,
                         xp=np):
    """Gradient of the forward conv with respect to the filter, shape ``filter_shape``."""
    def own(x, dy):
        shape = tuple(int(d) for d in filter_shape)
        with one_thread(serial(xp, dy.size // max(1, shape[-1]) * math.prod(shape))):
            return _backprop_filter(x, dy, shape, strides, dilations, pads, channels_last, xp)
    return cudnn_convs.backprop_filter(x, dy, filter_shape, strides, dilations, pads,
                                       channels_last, xp, own)


def _backprop_filter(x, dy, filter_shape, strides, dilations, pads, channels_last, xp):
    if matrix_tiles.takes_filter_gradient(xp, x.dtype, filter_shape, strides, pads):
        dw = matrix_tiles.conv_backprop_filter(x, dy, filter_shape, dilations, pads,
                                               channels_last)
        if dw is not None:
            return dw
    ct = compute_dtype(x.dtype)
    xc = channels_last_copy(astype(xp, x, ct), channels_last, xp)
    dyc = channels_last_copy(astype(xp, dy, ct), channels_last, xp)
    kernel, (c, o) = filter_shape[:-2], filter_shape[-2:]
    out_sp = dyc.shape[1:-1]
    if 0 in dyc.shape or math.prod(filter_shape) == 0 or 0 in xc.shape:
        return xp.zeros(filter_shape, x.dtype)
    dw = None
    if conv_gemm.pointwise(kernel, pads):
        picked = xc[_sampled(out_sp, strides)]
        dw = (dyc.reshape(-1, o).T @ picked.reshape(-1, c)).T
    elif xp is np:
        few = few_channel_loops(xp, ct, kernel, strides, dilations, c, o, out_sp,
                                accumulates=True)
        if not (few and conv_few_channels.planar(ct, o, filter_grad=True)):
            dw = direct_or_winograd.backprop_filter(xc, dyc, filter_shape, strides, dilations,
                                                    pads, ct, winograd_allowed=not few)
        if dw is None and few:
            dw = conv_few_channels.backprop_filter(xc, dyc, filter_shape, strides, dilations,
                                                   pads, ct)
    if dw is None and runs_on(xp, ct):
        dw = cuda_patches.backprop_filter(xc, dyc, filter_shape, strides, dilations, pads, xp)
    if dw is None:
        dw = _filter_by_im2col(xc, dyc, filter_shape, strides, dilations, pads, ct, xp)
    return xp.ascontiguousarray(dw.reshape(filter_shape), dtype=x.dtype)


def conv_backprop_input(dy, w, input_shape, strides, dilations, pads, channels_last=True,
                        xp=np):
    """Gradient of the forward conv with respect to its input, shape ``input_shape``."""
    def own(dy, w):
        with one_thread(serial(xp, dy.size // max(1, w.shape[-1]) * w.size)):
            return _backprop_input(dy, w, input_shape, strides, dilations, pads, channels_last,
                                   xp)
    return cudnn_convs.backprop_input(dy, w, input_shape, strides, dilations, pads,
                                      channels_last, xp, own)


def _backprop_input(dy, w, input_shape, strides, dilations, pads, channels_last, xp):
    if matrix_tiles.takes_input_gradient(xp, dy.dtype, w.shape, strides, dilations, pads):
        return matrix_tiles.conv_backprop_input(dy, w, input_shape, dilations, pads,
                                                channels_last)
    ct = compute_dtype(dy.dtype)
    dyc = channels_last_copy(astype(xp, dy, ct), channels_last, xp)
    in_shape = channels_last_shape(input_shape, channels_last)
    kernel, (c, o) = w.shape[:-2], w.shape[-2:]
    wc = w.astype(ct, copy=False)
    out_sp = dyc.shape[1:-1]
    if 0 in dyc.shape or 0 in in_shape or w.size == 0:
        return from_channels_last(xp.zeros(in_shape, dy.dtype), channels_last, xp)
    dx = None
    if conv_gemm.pointwise(kernel, pads):
        dx = xp.zeros(in_shape, ct)
        w2 = xp.ascontiguousarray(wc.reshape(c, o))
        dx[_sampled(out_sp, strides)] = (dyc.reshape(-1, o) @ w2.T).reshape(*dyc.shape[:-1], c)
    elif _few_channel_input(xp, ct, wc, strides, dilations, pads, in_shape):
        dx = conv_few_channels.forward(dyc, flipped_filter(wc), in_shape[1:-1], strides,
                                       dilations, flipped_pads(kernel, dilations, pads), ct)
    elif xp is np and (paths := direct_or_winograd.input_paths(wc.shape, in_shape, strides,
                                                               dilations, pads, ct)):
        dx = direct_or_winograd.backprop_input(dyc, wc, in_shape, dilations, pads, ct, paths)
    elif _by_phases(xp, kernel, strides, c, o) and np.isfinite(wc).all():
        dx = _input_by_phases(dyc, wc, in_shape, strides, dilations, pads, ct)
    elif conv_direct.applies(xp, ct, kernel, strides, c, in_shape[:-1], o):
        dx = _phases_or_scatter(dyc, wc, in_shape, strides, dilations, pads, ct)
    if dx is None and runs_on(xp, ct):
        dx = cuda_patches.backprop_input(dyc, wc, in_shape, strides, dilations, pads, xp)
    if dx is None and _scatters(xp, kernel, o, math.prod(dyc.shape[:-1]), min_sources=1):
        dx = conv_scatter.backprop_input(dyc, wc, in_shape, strides, dilations, pads)
    if dx is None:
        dx = _col2im(dyc, wc, in_shape, strides, dilations, pads, dy.dtype, xp)
    return from_channels_last(astype(xp, dx, dy.dtype), channels_last, xp)


def _forward_by_im2col(xc, wc, strides, dilations, pads, out_sp, ct, xp):
    """The forward conv as im2col blocks, each one GEMM against the filter."""
    kernel, o, n = wc.shape[:-2], wc.shape[-1], xc.shape[0]
    padded = pad_spatial(xc, pads, ct, xp=xp)
    y = xp.empty((n, *out_sp, o), ct)
    win = window_view(padded, kernel, strides, dilations, out_sp, xp)
    w2 = gemm_filter(wc)

    def work(share):
        for idx, col in _im2col(win, share, xp):
            xp.matmul(col, w2, out=y[idx].reshape(-1, o))

    _map(work, _blocks((n, *out_sp), w2.shape[0] * padded.itemsize, o, xp), o, xp)
    return y


def _filter_by_im2col(xc, dyc, filter_shape, strides, dilations, pads, ct, xp):
    """The filter gradient as im2col blocks: ``col.T @ dy`` per block (measured faster than
    ``dy.T @ col``), one partial sum per pool share, added in share order."""
    kernel, o, out_sp = filter_shape[:-2], filter_shape[-1], dyc.shape[1:-1]
    padded = padded_for_windows(xc, pads, kernel, strides, dilations, out_sp, ct, xp)
    win = window_view(padded, kernel, strides, dilations, out_sp, xp)
    kc = math.prod(filter_shape[:-1])

    def work(share):
        dw = xp.zeros((kc, o), ct)
        for idx, col in _im2col(win, share, xp):
            dw += col.T @ dyc[idx].reshape(-1, o)
        return dw

    return sum(_map(work, _blocks(dyc.shape[:-1], kc * padded.itemsize, o, xp), o, xp))


def _sampled(out_sp, strides):
    """Index of the input positions a 1x1 filter reads: every stride-th, ``out_sp`` of them."""
    return (slice(None),) + tuple(slice(0, (q - 1) * s + 1, s) for q, s in zip(out_sp, strides))


def few_channel_loops(xp, ct, kernel, strides, dilations, in_channels, out_channels, out_sp,
                  accumulates=False):
    """Whether a conv runs as the direct loops for few channels (``compiled.conv.small_*``): CPU,
    up to 3 spatial dims, at most ``SMALL_MAX_CHANNEL_PAIRS`` input x output channels (measured:
    beyond, the GEMM paths win), stride 1 along all but the first of 3 spatial dims (along all
    of fewer), and an output plane on the padded width (a thread's buffers) within
    ``SMALL_MAX_PLANE_BYTES``. The filter gradient (``accumulates``) sums in float64, so it
    takes float types only (integer sums wrap elsewhere)."""
    lead = 1 if len(kernel) == 3 else 0
    width = out_sp[-1] + (kernel[-1] - 1) * dilations[-1] if kernel else 1
    plane = math.prod(out_sp[lead:-1]) * width * out_channels * 8
    return (xp is np and usable() and len(kernel) <= 3
            and in_channels * out_channels <= SMALL_MAX_CHANNEL_PAIRS
            and plane <= SMALL_MAX_PLANE_BYTES
            and (np.dtype(ct).kind == "f" or not accumulates)
            and all(s == 1 for s in strides[lead:]))


def _few_channel_input(xp, ct, w, strides, dilations, pads, in_shape):
    """Whether a stride-1 input gradient runs on the few-channel loops
    (``few_channel_loops``) as the forward conv of dy with the filter flipped (its padding
    ``(k-1)*d`` less the conv's, so a padding past that takes the other paths), for a
    finite filter, as the loops multiply it by dy's zero padding: 3-10x faster than
    scattering dy's few channels into a 1-channel dx."""
    kernel, (in_channels, out_channels) = w.shape[:-2], w.shape[-2:]
    return (all(s == 1 for s in strides)
            and min(min(p) for p in flipped_pads(kernel, dilations, pads)) >= 0
            and few_channel_loops(xp, ct, kernel, strides, dilations, out_channels, in_channels,
                              in_shape[1:-1])
            and np.isfinite(w).all())


def _phases_or_scatter(dyc, wc, in_shape, strides, dilations, pads, ct):
    """The input gradient phase by phase on the micro-kernels
    (``direct.backprop_input_strided``) or, where it applies too, on the scatter GEMMs
    (``scatter.backprop_input``): the phases first where ``direct.phases_win`` says so for the
    vector unit, and ``tuning`` times both on the host (which wins depends on the shape and
    on the BLAS: with OpenBLAS on its AVX-512 kernels the scatter won a stride-2 3-D
    gradient of 64 -> 32 channels by 1.3x, the phases most others by 1.1-1.7x)."""
    kernel, (c, o) = wc.shape[:-2], wc.shape[-2:]
    rows = math.prod(dyc.shape[:-1])
    phases = ("phases", lambda: conv_direct.backprop_input_strided(dyc, wc, in_shape, strides,
                                                                     dilations, pads))
    if not _scatters(np, kernel, o, rows):
        return phases[1]()
    scatter = ("scatter", lambda: conv_scatter.backprop_input(dyc, wc, in_shape, strides,
                                                              dilations, pads))
    return conv_tuning.run(("strided input", dyc.shape, wc.shape, in_shape, strides,
                            dilations, pads, np.dtype(ct).str), rows * wc.size,
                           [phases, scatter] if conv_direct.phases_win(c) else [scatter, phases])


def _by_phases(xp, kernel, strides, in_channels, out_channels):
    """Whether a strided input gradient runs as one stride-1 conv per phase of dx
    (``conv_phases``): CPU, up to 3 spatial dims, at most ``PHASE_MAX_DEPTH`` channels in dy
    and few enough pairs that the phases take the direct loops. Measured against the
    scatter path, which adds a few channels at a time: 1.3-4.9x faster with 1-2 dy
    channels (4x for a 2-channel 3-D transposed conv), even at 4, slower from 8. The caller
    also wants a finite filter: the phases multiply it by dy's zero padding."""
    return (xp is np and usable() and len(kernel) <= 3 and any(s > 1 for s in strides)
            and out_channels <= PHASE_MAX_DEPTH
            and in_channels * out_channels <= SMALL_MAX_CHANNEL_PAIRS)


def _input_by_phases(dyc, wc, in_shape, strides, dilations, pads, ct):
    """The strided input gradient as a stride-1 forward conv per phase of dx
    (``conv_phases``), the last dim's phases folded into channels first
    (``direct.last_dim_folded``) where the folded channels take the planar vector kernels
    (``few_channels.planar``): half the phases, each with full vectors of positions
    (2.2x faster on a 1 -> 2 channel stride-2 3-D transposed conv)."""
    c, o = wc.shape[-2:]
    folded = None
    if (conv_few_channels.planar(ct, strides[-1] * c)
            and strides[-1] * c * o <= SMALL_MAX_CHANNEL_PAIRS):
        folded = conv_direct.last_dim_folded(dyc, wc, in_shape, strides, dilations, pads)
    if folded is None:
        return conv_phases.backprop_input_by_phases(dyc, wc, in_shape, strides, dilations,
                                                    pads, _forward_into)
    return conv_phases.backprop_input_by_phases(dyc, *folded, _forward_into).reshape(in_shape)


def _forward_into(out, xc, w, dilations, pads):
    """``out[...]`` = the stride-1 forward conv of channels-last ``xc`` with ``w``, all in the
    compute dtype: the few-channel loops write into ``out`` (a view of any strides) as they
    go, the other paths copy their result."""
    strides = (1,) * (xc.ndim - 2)
    kernel, (c, o) = w.shape[:-2], w.shape[-2:]
    if few_channel_loops(np, out.dtype, kernel, strides, dilations, c, o, out.shape[1:-1]):
        conv_few_channels.forward(xc, w, out.shape[1:-1], strides, dilations, pads, out.dtype,
                                  out=out)
    else:
        out[...] = conv_forward(xc, w, strides, dilations, pads)


def _scatters(xp, kernel, out_channels, sources, min_sources=None):
    """Whether a conv runs as GEMMs whose products, ``out_channels`` per kernel offset, are
    scattered by compiled loops (``scatter.py``): on the CPU, up to 3 spatial
    dims, in the pooled regime (measured: wider outputs do better as whole GEMMs with BLAS
    on all cores), from at least ``min_sources`` source positions (by default the
    forward's ``SCATTER_MIN_SOURCES``: below, its fixed costs make it up to 8x slower than
    the patch matrices; the input gradient's other path, NumPy's pass per tap
    (``_col2im``), is slower at any size: 1.5-3.4x on one thread with 64-784 dy
    positions)."""
    return (xp is np and usable() and len(kernel) <= 3 and _pooled(xp, out_channels)
            and sources >= (SCATTER_MIN_SOURCES if min_sources is None else min_sources))


def _pooled(xp, out_channels):
    """Whether a conv's blocks run on the intra-op pool (see the module's docstring)."""
    return xp is np and out_channels <= POOL_MAX_CHANNELS


def _blocks(grid, row_bytes, out_channels, xp):
    """The output grid's blocks ``(idx, rows)`` (see ``layout.blocks``): about
    ``chunk_bytes`` each, and small enough for every pool share to get one when pooled."""
    budget = chunk_bytes(xp, CHUNK_BYTES)
    if _pooled(xp, out_channels):
        share = math.prod(grid) * row_bytes // share_count()
        budget = min(budget, max(share, MIN_BLOCK_BYTES))
    return list(blocks(grid, row_bytes, budget))


def _map(work, items, out_channels, xp):
    """``work`` over shares of ``items``: at once on the intra-op pool when pooled; else in
    one call (BLAS on all cores; a GPU's kernels queue on one stream anyway)."""
    if _pooled(xp, out_channels):
        return pool_map(work, items)
    return [work(items)]


def _im2col(win, share, xp):
    """Yield ``(idx, col)``: the patch matrix ``[rows, K*C]`` of each block of ``share``,
    copied from the window view ``win``. ``col`` is a reused buffer, valid until the next
    iteration. With at most ``TAP_MAJOR_MAX_CHANNELS`` channels (NumPy), ``col`` is the
    transposed view of a tap-major ``[K*C, rows]`` buffer: copying it reads and writes whole
    input rows, where the row-major copy moves C values at a time (4x faster for C = 1)."""
    rank = (win.ndim - 2) // 2
    kc = math.prod(win.shape[rank + 1:])
    tap_major = xp is np and win.shape[-1] <= TAP_MAJOR_MAX_CHANNELS
    buf = xp.empty(max(rows for _, rows in share) * kc, win.dtype)
    for idx, rows in share:
        part = win[idx]
        if tap_major:
            part = np.moveaxis(part, range(rank + 1, 2 * rank + 2), range(rank + 1))
            col = buf[:rows * kc].reshape(kc, rows)
            np.copyto(col.reshape(part.shape), part)
            yield idx, col.T
        else:
            col = buf[:rows * kc].reshape(rows, kc)
            xp.copyto(col.reshape(part.shape), part)
            yield idx, col


def _col2im(dyc, w, in_shape, strides, dilations, pads, out_dtype, xp):
    """Input gradient: ``dy @ w[k].T`` for every kernel offset k, added into place.

    The padded gradient is kept in a phase-split layout ``[N, s1, P1/s1, s2, P2/s2, ..., C]``
    (padded position ``p`` of a dim lives at ``[p % s, p // s]``), where every offset's
    target is a plain slice with ``OW*C``-long contiguous rows, whatever the strides.
    """
    kernel, (c, o) = w.shape[:-2], w.shape[-2:]
    n, out_sp = dyc.shape[0], dyc.shape[1:-1]
    phase_len = [-(-max(i + b + a, (q - 1) * s + (k - 1) * d + 1) // s) for i, (b, a), q, k, s, d
                 in zip(in_shape[1:-1], pads, out_sp, kernel, strides, dilations)]
    buf = xp.zeros((n, *(v for pair in zip(strides, phase_len) for v in pair), c), dyc.dtype)
    reaching = conv_scatter.reaching_taps(in_shape, pads, out_sp, kernel, strides, dilations)
    taps = math.prod(len(r) for r in reaching)
    w3 = xp.swapaxes(xp.ascontiguousarray(  # [taps, O, C] view of [taps, C, O]
        w[tuple(slice(r.start, r.stop) for r in reaching)].reshape(taps, c, o)), 1, 2)
    # Blocks of different images never add into the same place: each share of the pool
    # takes whole images' worth of blocks.
    images = [list(group) for _, group in itertools.groupby(
        _blocks(dyc.shape[:-1], taps * c * dyc.itemsize, o, xp) if taps else (),
        key=lambda block: (block[0][0].start, block[0][0].stop))]

    def work(share):
        block_list = [block for group in share for block in group]
        prod_buf = xp.empty(taps * max(rows for _, rows in block_list) * c, dyc.dtype)
        with ufunc_rows(out_sp[-1] * c, xp):
            for idx, rows in block_list:
                prods = prod_buf[:taps * rows * c].reshape(taps, rows, c)
                xp.matmul(dyc[idx].reshape(rows, o), w3, out=prods)
                for k, offset in enumerate(itertools.product(*reaching)):
                    target = buf[_phase_index(idx, offset, dyc.shape[:-1], strides,
                                              dilations)]
                    xp.add(target, prods[k].reshape(target.shape), out=target)

    if images:
        _map(work, images, o, xp)
    dx = xp.empty(in_shape, out_dtype)
    for phases in itertools.product(*(range(s) for s in strides)):
        src, dst = [slice(None)], [slice(None)]
        for phase, s, (before, _), size in zip(phases, strides, pads, in_shape[1:-1]):
            first = (phase - before) % s  # first unpadded position in this phase
            count = len(range(first, size, s))
            src += [phase, slice((first + before) // s, (first + before) // s + count)]
            dst.append(slice(first, size, s))
        xp.copyto(dx[tuple(dst)], buf[tuple(src)])
    return dx


def _phase_index(idx, offset, grid, strides, dilations):
    """Index into the phase-split buffer of the inputs that kernel ``offset`` touches for
    output block ``idx`` (input position ``o * s + k * d``)."""
    parts = [idx[0]]
    for axis in range(1, len(grid)):
        start, phase = divmod(offset[axis - 1] * dilations[axis - 1], strides[axis - 1])
        sel = idx[axis] if axis < len(idx) else slice(0, grid[axis])
        parts += [phase, slice(start + sel.start, start + sel.stop)]
    return tuple(parts) + (slice(None),)
