"""Dense convs of very few channels on the CPU (``dense.few_channel_loops`` picks them): direct
compiled loops that compute each output plane on the padded width, every kernel tap one long
contiguous run over a zero-padded, channel-planar copy of the input.

float32 with a power of two of output channels (``PLANAR_OUTPUTS``) runs on
``compiled.planar``'s vector kernels, positions along the lanes; the rest on
``compiled.conv.small_forward`` and ``small_filter_grad``. The filter gradient sums in float64
per block of output planes, added in block order.
"""

import itertools

import numpy as np

from graphops.kernels.compiled import loops
from graphops.kernels.support.kernel_util import epilogue_arguments
from graphops.kernels.support.parallelism import share_count

PLANAR_OUTPUTS = (1, 2, 4, 8, 16)   # float32 output channel counts of compiled.planar
PLANAR_FILTER_MAX_OUTPUTS = 8      # filter gradient: past it the direct kernels do better


def planar(ct, out_channels, filter_grad=False):
    """Whether the few-channel loops run on ``compiled.planar``'s vector kernels: float32 with
    a power of two up to 16 output channels, the filter gradient up to
    ``PLANAR_FILTER_MAX_OUTPUTS`` (1.5x faster than the direct micro-kernels on a 1 -> 8
    channel 3-D layer, 1.3-1.8x slower with 16)."""
    return (np.dtype(ct) == np.float32 and out_channels in PLANAR_OUTPUTS
            and (not filter_grad or out_channels <= PLANAR_FILTER_MAX_OUTPUTS))


def forward(xc, w, out_sp, strides, dilations, pads, ct, out=None, epilogue=None):
    """The forward conv for a few input channels (``compiled.planar.forward`` for float32
    with a power of two up to 16 output channels and rows of the result that lie in one
    piece, else ``compiled.conv.small_forward``), into ``out`` (a view of any strides)
    when given, through ``epilogue`` (see ``dense.conv_forward``)."""
    kernel, dil3, before, out3, stride, extents = _grid(w.shape[:-2], strides, dilations,
                                                        pads, out_sp)
    n, (c, o) = xc.shape[0], w.shape[-2:]
    y = np.empty((n, *out_sp, o), ct) if out is None else out
    padded = _padded(xc, before, extents, ct)
    y5 = np.expand_dims(y, tuple(range(1, 4 - len(out_sp))))
    if planar(ct, o) and y.size and _rows_in_one_piece(y5):
        loops("planar", chunk=1).forward(
            padded.reshape(-1), _planar_steps(kernel, dil3, c, extents), _flat(w),
            _spanned(y5), tuple(stride // y5.itemsize for stride in y5.strides[:3]),
            (n, *out3, o, c, *extents, stride), *epilogue_arguments(epilogue, ct, o))
        return y
    loops("conv", chunk=1).small_forward(
        padded, w.reshape(*kernel, c, o), y5, stride, dil3, share_count(),
        *epilogue_arguments(epilogue, ct, o))
    return y


def backprop_filter(xc, dyc, filter_shape, strides, dilations, pads, ct):
    """The filter gradient for a few input channels (``compiled.planar.filter_grad`` where
    ``planar``, else ``compiled.conv.small_filter_grad``): float64 sums per block of output
    planes, added in block order."""
    kernel, dil3, before, out3, stride, extents = _grid(
        filter_shape[:-2], strides, dilations, pads, dyc.shape[1:-1])
    n, (c, o) = dyc.shape[0], filter_shape[-2:]
    parts = max(1, min(share_count(), n * out3[0]))
    sums = np.zeros((parts, *kernel, c, o))
    padded = _padded(xc, before, extents, ct)
    if planar(ct, o, filter_grad=True):
        loops("planar", chunk=1).filter_grad(
            padded.reshape(-1), _planar_steps(kernel, dil3, c, extents), _flat(dyc),
            sums.reshape(parts, -1), (n, *out3, o, c, *extents, stride))
    else:
        loops("conv", chunk=1).small_filter_grad(
            padded, dyc.reshape(n, *out3, o), sums, stride, dil3)
    return sums.sum(axis=0).reshape(filter_shape)


def _grid(kernel, strides, dilations, pads, out_sp):
    """Spatial geometry of the direct loops, padded to 3 dims with leading 1s: kernel,
    dilations, padding before, output sizes, the first dim's stride, and the padded input's
    extents (the last dim exactly what the outputs read, the middle one a spare row more)."""
    lead = 3 - len(kernel)
    kernel, dilations = (1,) * lead + tuple(kernel), (1,) * lead + tuple(dilations)
    before = (0,) * lead + tuple(b for b, _ in pads)
    out_sp = (1,) * lead + tuple(out_sp)
    stride = strides[0] if lead == 0 else 1
    extents = ((out_sp[0] - 1) * stride + (kernel[0] - 1) * dilations[0] + 1,
               out_sp[1] + (kernel[1] - 1) * dilations[1] + 1,
               out_sp[2] + (kernel[2] - 1) * dilations[2])
    return kernel, dilations, before, out_sp, stride, extents


def _padded(xc, before, extents, ct):
    """Channels-last ``xc`` ([N, *S, C], padded to 3 spatial dims) zero-padded and
    channel-planar: ``[N, C, *extents]``, input position i at ``i + before``."""
    n, c = xc.shape[0], xc.shape[-1]
    xc = xc.reshape(n, *(1,) * (5 - xc.ndim), *xc.shape[1:])
    padded = np.zeros((n, c, *extents), ct)
    spans = [max(0, min(s, e - b)) for s, e, b in zip(xc.shape[1:-1], extents, before)]
    if min(spans) > 0:
        padded[(slice(None), slice(None)) + tuple(slice(b, b + s) for b, s in
                                                  zip(before, spans))] = \
            np.moveaxis(xc[(slice(None),) + tuple(slice(0, s) for s in spans)], -1, 1)
    return padded


def _rows_in_one_piece(y5):
    """Whether each row ``[Q3, O]`` of ``y5`` ``[N, Q1, Q2, Q3, O]`` lies in one piece, and
    its images, planes and rows forward of each other (a phase view of a gradient does)."""
    _, _, _, q3, o = y5.shape
    return (min(y5.strides[:3]) >= 0 and (o == 1 or y5.strides[4] == y5.itemsize)
            and (q3 == 1 or y5.strides[3] == o * y5.itemsize))


def _spanned(view):
    """The flat run of memory from ``view``'s first element to its last (forward strides),
    where the loops address it by strides."""
    if view.flags.c_contiguous:
        return view.reshape(-1)
    span = 1 + sum((size - 1) * stride for size, stride in zip(view.shape, view.strides)
                   ) // view.itemsize
    return np.lib.stride_tricks.as_strided(view, shape=(span,), strides=(view.itemsize,))


def _flat(a):
    """``a`` as a flat C-contiguous array, what the loops' kernels read (a group's slice of
    a filter may reshape to a strided view)."""
    return np.ascontiguousarray(a).reshape(-1)


def _planar_steps(kernel, dilations, channels, extents):
    """Where each (tap, channel) pair of a window lies from its origin in the channel-planar
    padded input (``_padded``), pairs in the filter's order."""
    p1, p2, p3 = extents
    pairs = itertools.product(*(range(k) for k in kernel), range(channels))
    return np.array([((c * p1 + k1 * dilations[0]) * p2 + k2 * dilations[1]) * p3
                     + k3 * dilations[2] for k1, k2, k3, c in pairs], np.int64)
