"""Forward convs that are one GEMM: a pointwise conv (a 1x1 filter, stride 1, no padding:
the input's positions times the filter as they are), and a conv over few output
positions (a deep network's last blocks at batch 1: 2x2-8x8 outputs), whose patch
matrix is built tap by tap and multiplied once. On these the general paths' setup (blocks,
the thread pool, the micro-kernels' packing) costs more than the product."""

import itertools
import math

import numpy as np

from graphops.kernels.conv_algorithms import direct as conv_direct
from graphops.kernels.conv_algorithms import packed_filters
from graphops.kernels.conv_algorithms.layout import pad_spatial

FEW_MAX_POSITIONS = 64           # output positions (all images) of a conv on few positions
FEW_MAX_PATCH_BYTES = 1 << 20    # its patch matrix at most


def gemm_filter(wc):
    """The filter ``[*K, C, O]`` as the GEMM's ``[K*C, O]`` operand, as it lies in memory.
    (A transposed copy makes no GEMM faster in OpenBLAS, and NumPy's transposing copy of
    a large filter takes as long as the product: 10 ms for ResNet50's 3x3 512 -> 512.)"""
    return wc.reshape(-1, wc.shape[-1])


def filter_product(rows, wc):
    """``rows`` ``[M, K*C]`` times the filter ``wc`` as the GEMM's operand: on the filter's
    packed strips for a few rows and a large constant filter (``packed_filters``)."""
    return packed_filters.product(rows, gemm_filter(wc))


def pointwise(kernel, pads):
    """1x1 filter and no padding: the conv is a GEMM on the strided input positions."""
    return all(k == 1 for k in kernel) and not any(b or a for b, a in pads)


def plain_gemm(kernel, strides, pads, channels_last, dtype):
    """Whether a forward conv is one GEMM of its input as it is (``gemm_forward``): a
    ``pointwise`` one of stride 1, channels last, float32 or float64."""
    return (channels_last and pointwise(kernel, pads) and all(s == 1 for s in strides)
            and np.dtype(dtype) in (np.float32, np.float64))


def gemm_forward(x, w):
    """``dense.conv_forward`` of a ``plain_gemm`` conv: the GEMM its general path runs (the
    same operands, so the same bits), without that path's setup."""
    c, o = w.shape[-2:]
    rows = x.size // c
    return filter_product(x.reshape(rows, c), w).reshape(x.shape[:-1] + (o,))


def on_few_positions(xp, dtype, n, out_sp, kernel, strides, in_channels, out_channels):
    """Whether a forward conv of ``n`` images to ``out_sp`` runs as ``few_positions``: NumPy,
    float, at most ``FEW_MAX_POSITIONS`` output positions and a patch matrix of at most
    ``FEW_MAX_PATCH_BYTES``, unless the direct micro-kernels take it
    (``direct.takes_few_positions``: faster there on up to 4096 output values)."""
    positions = n * math.prod(out_sp)
    return (xp is np and np.dtype(dtype).kind == "f" and positions <= FEW_MAX_POSITIONS
            and positions * math.prod(kernel) * in_channels * np.dtype(dtype).itemsize
            <= FEW_MAX_PATCH_BYTES
            and not conv_direct.takes_few_positions(xp, dtype, kernel, strides, out_channels,
                                                    (n, *out_sp), in_channels))


def few_positions(xc, wc, strides, dilations, pads, out_sp, ct):
    """The forward conv of channels-last ``xc`` ([N, *S, C]) with ``wc`` ([*K, C, O]) as one
    patch matrix ([positions, K*C], each tap's strided window copied into its columns) times
    the filter."""
    kernel, (c, o) = wc.shape[:-2], wc.shape[-2:]
    padded = pad_spatial(xc, pads, ct)
    n, taps = xc.shape[0], math.prod(kernel)
    patches = np.empty((n, *out_sp, taps, c), ct)
    windows = [[slice(k * d, k * d + (q - 1) * s + 1, s) for k in range(size)]
               for size, d, q, s in zip(kernel, dilations, out_sp, strides)]
    for tap, window in enumerate(itertools.product(*windows)):
        patches[..., tap, :] = padded[(slice(None),) + window]
    rows = n * math.prod(out_sp)
    product = filter_product(patches.reshape(rows, taps * c), wc)
    return product.reshape(n, *out_sp, o)
