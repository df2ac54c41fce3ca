"""Depthwise 2-D convs on a CUDA GPU: direct kernels over channels-last operands.

A depthwise conv does a few multiply-adds per value it reads, so it is bound by memory, not
arithmetic: one pass over its operands is what it costs. Each kernel makes exactly that
pass, with adjacent threads on adjacent channels (coalesced loads and stores):

* forward: a thread per run of ``ROW_RUN`` adjacent outputs of a row sums their windows'
  taps, splitting its index once and loading each tap's weight once for the run;
* input gradient: a thread per input value sums, tap by tap, the ``dy * w`` products of the
  output positions whose windows hold it (a gather, so no atomics);
* filter gradient: a thread per (tap, channel) sums over a slice of the output positions,
  and the slices' partial sums are added in order afterwards (deterministic).

Operands arrive in either layout and any float dtype; they are made channels-last and
C-contiguous in the compute dtype (half types widened, the result rounded once), as the
CPU paths do.
"""

import math

from graphops.kernels.conv_algorithms import cuda_build
from graphops.kernels.conv_algorithms.layout import (channels_last_copy, channels_last_shape,
                                                     compute_dtype, conv_output_size,
                                                     from_channels_last)

FILTER_THREADS = 1 << 18   # threads the filter gradient aims for (slices x taps x channels)
ROW_RUN = 4                # adjacent outputs of a row each forward thread sums

_GEOMETRY = "I H, I W, I C, I M, I OH, I OW, I KH, I KW, I SH, I SW, I DH, I DW, I PH, I PW"

SOURCE = r"""
#define ROW_RUN %(row_run)d

// y [N, OH, OW, C*M] from x [N, H, W, C] and w [KH, KW, C, M]: a thread per run of ROW_RUN
// adjacent outputs of one row and channel (runs = ceil(OW / ROW_RUN)), so that it splits its
// index once and loads each tap's weight once for the run.
extern "C" __global__ void forward(const T* __restrict__ x, const T* __restrict__ w,
                                   T* __restrict__ y, I total, I runs, %(geometry)s) {
  const I CM = C * M;
  FOR_EACH_ELEMENT(e, total) {
    I cm, run, oh;
    const I n = split_last(e, CM, runs, OH, cm, run, oh), c = cm / M, ow0 = run * ROW_RUN;
    T sum[ROW_RUN];
#pragma unroll
    for (int r = 0; r < ROW_RUN; ++r) sum[r] = 0;
    for (I kh = 0; kh < KH; ++kh) {
      const I ih = oh * SH + kh * DH - PH;
      if (ih < 0 || ih >= H) continue;
      const T* row = x + (n * H + ih) * W * C + c;
      for (I kw = 0; kw < KW; ++kw) {
        const T tap = w[(kh * KW + kw) * CM + cm];
        const I iw0 = ow0 * SW + kw * DW - PW;
#pragma unroll
        for (int r = 0; r < ROW_RUN; ++r) {
          const I iw = iw0 + r * SW;
          if (ow0 + r < OW && iw >= 0 && iw < W) sum[r] += row[iw * C] * tap;
        }
      }
    }
    T* out = y + ((n * OH + oh) * OW + ow0) * CM + cm;
#pragma unroll
    for (int r = 0; r < ROW_RUN; ++r)
      if (ow0 + r < OW) out[r * CM] = sum[r];
  }
}


// dx [N, H, W, C] from dy [N, OH, OW, C*M] and w [KH, KW, C, M].
extern "C" __global__ void backprop_input(const T* dy, const T* w, T* dx, I total,
                                          %(geometry)s) {
  const I CM = C * M;
  FOR_EACH_ELEMENT(e, total) {
    I c, iw, ih;
    const I n = split_last(e, C, W, H, c, iw, ih);
    T sum = 0;
    for (I kh = 0; kh < KH; ++kh) {
      const I oh = source_of(ih, PH, kh * DH, SH, OH);
      if (oh < 0) continue;
      for (I kw = 0; kw < KW; ++kw) {
        const I ow = source_of(iw, PW, kw * DW, SW, OW);
        if (ow < 0) continue;
        const T* d = dy + ((n * OH + oh) * OW + ow) * CM + c * M;
        const T* f = w + (kh * KW + kw) * CM + c * M;
        for (I m = 0; m < M; ++m) sum += d[m] * f[m];
      }
    }
    dx[e] = sum;
  }
}

// partial [slices, KH*KW*C*M]: slice s's sum over output positions
// [s*per_slice, (s+1)*per_slice) of x * dy for each (tap, channel).
extern "C" __global__ void backprop_filter(const T* x, const T* dy, T* partial, I positions,
                                           I per_slice, %(geometry)s) {
  const I CM = C * M, width = KH * KW * CM;
  const I j = (I)blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= width) return;
  const I tap = j / CM, cm = j - tap * CM, c = cm / M;
  const I kh = tap / KW, kw = tap - kh * KW;
  I p = (I)blockIdx.y * per_slice;
  const I stop = p + per_slice < positions ? p + per_slice : positions;
  I ow = p %% OW, oh = (p / OW) %% OH, n = p / (OW * OH);
  T sum = 0;
  for (; p < stop; ++p) {
    const I ih = oh * SH + kh * DH - PH, iw = ow * SW + kw * DW - PW;
    if (ih >= 0 && ih < H && iw >= 0 && iw < W)
      sum += x[((n * H + ih) * W + iw) * C + c] * dy[p * CM + cm];
    if (++ow == OW) { ow = 0; if (++oh == OH) { oh = 0; ++n; } }
  }
  partial[(I)blockIdx.y * width + j] = sum;
}
""" % {"geometry": _GEOMETRY, "row_run": ROW_RUN}


def forward(x, w, strides, dilations, pads, channels_last, xp):
    """DepthwiseConv2dNative: ``y[n, o, c*M+m]`` is the sum over taps k of
    ``x[n, o*s + k*d - before, c] * w[k, c, m]``."""
    ct = compute_dtype(x.dtype)
    xl = channels_last_copy(x.astype(ct, copy=False), channels_last, xp)
    n, h, wd, c = xl.shape
    kh, kw, _, m = w.shape
    out_hw = tuple(conv_output_size(s, k, st, d, *p) for s, k, st, d, p
                   in zip((h, wd), (kh, kw), strides, dilations, pads))
    shape = (n, *out_hw, c * m)
    if 0 in shape or not xl.size:
        y = xp.zeros(shape, ct)
    else:
        y, wc = xp.empty(shape, ct), xp.ascontiguousarray(w, dtype=ct)
        runs = -(-out_hw[1] // ROW_RUN)
        threads = n * out_hw[0] * runs * c * m
        launch = cuda_build.kernel(xp, SOURCE, "forward", ct, max(y.size, xl.size, wc.size))
        launch((cuda_build.grid_for(threads),), (cuda_build.THREADS,), (xl, wc, y),
               (threads, runs, *_geometry(xl.shape, w.shape, out_hw, strides, dilations,
                                          pads)))
    return from_channels_last(y.astype(x.dtype, copy=False), channels_last, xp)


def backprop_input(dy, w, input_shape, strides, dilations, pads, channels_last, xp):
    """DepthwiseConv2dNativeBackpropInput, ``input_shape`` in the op's layout."""
    ct = compute_dtype(dy.dtype)
    in_shape = channels_last_shape(input_shape, channels_last)
    dyl = channels_last_copy(dy.astype(ct, copy=False), channels_last, xp)
    if 0 in in_shape or not (dyl.size and w.size):
        dx = xp.zeros(in_shape, ct)
    else:
        dx, wc = xp.empty(in_shape, ct), xp.ascontiguousarray(w, dtype=ct)
        launch = cuda_build.kernel(xp, SOURCE, "backprop_input", ct,
                                   max(dx.size, dyl.size, wc.size))
        launch((cuda_build.grid_for(dx.size),), (cuda_build.THREADS,), (dyl, wc, dx),
               (dx.size, *_geometry(in_shape, w.shape, dyl.shape[1:3], strides, dilations,
                                    pads)))
    return from_channels_last(dx.astype(dy.dtype, copy=False), channels_last, xp)


def backprop_filter(x, dy, filter_shape, strides, dilations, pads, channels_last, xp):
    """DepthwiseConv2dNativeBackpropFilter: ``[KH, KW, C, M]`` partial sums over slices of
    the output positions, then the slices added in order."""
    ct = compute_dtype(x.dtype)
    filter_shape = tuple(int(d) for d in filter_shape)
    xl = channels_last_copy(x.astype(ct, copy=False), channels_last, xp)
    dyl = channels_last_copy(dy.astype(ct, copy=False), channels_last, xp)
    width, positions = math.prod(filter_shape), math.prod(dyl.shape[:3])
    if not (width and positions and xl.size):
        return xp.zeros(filter_shape, x.dtype)
    slices = max(1, min(positions, FILTER_THREADS // width, cuda_build.MAX_GRID_Y))
    per_slice = -(-positions // slices)
    slices = -(-positions // per_slice)
    partial = xp.empty((slices, width), ct)
    launch = cuda_build.kernel(xp, SOURCE, "backprop_filter", ct,
                               max(xl.size, dyl.size, partial.size))
    threads = cuda_build.THREADS
    launch((-(-width // threads), slices), (threads,), (xl, dyl, partial),
           (positions, per_slice, *_geometry(xl.shape, filter_shape, dyl.shape[1:3], strides,
                                             dilations, pads)))
    return partial.sum(axis=0).reshape(filter_shape).astype(x.dtype, copy=False)


def _geometry(x_shape, filter_shape, out_hw, strides, dilations, pads):
    """The kernels' geometry integers (``_GEOMETRY``)."""
    (kh, kw, c, m), ((pt, _), (pl, _)) = filter_shape, pads
    return (*x_shape[1:3], c, m, *out_hw, kh, kw, *strides, *dilations, pt, pl)
