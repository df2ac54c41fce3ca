"""Dense convs on a CUDA GPU: patch matrices gathered by a kernel, products by cuBLAS.

The array-module im2col path builds a patch matrix with a copy through a strided window
view of a padded copy of the input: two passes, the second with an index computation per
element over seven dimensions. Here one kernel reads the unpadded channels-last input and
writes the patch matrix ``[rows, K*C]`` (zeros where a window leaves the input), each
thread keeping one (tap, channel) column and walking its rows, so the only divisions are
per thread. A stride-1 input gradient with no more output than input channels is the
forward conv of dy by the flipped filter. Other input gradients are the gather that mirrors
the patch matrix: one GEMM gives every tap's products ``dy[rows, O] @ w[O, K*C]``, and one
kernel sums, for each input element, the products of the (tap, output position) pairs
that read it: no atomics, no zero-filled buffer, the taps added in order, so results
repeat exactly.

Every conv runs as a 3-D one (2-D and 1-D convs get leading size-1 spatial dims), over
channels-last, C-contiguous operands in the compute dtype (``dense`` prepares them).
"""

import math

from graphops.kernels.conv_algorithms import cuda_build, layout
from graphops.kernels.conv_algorithms.layout import flipped_filter, flipped_pads

MIN_ROWS_PER_BLOCK = 4  # patch rows a thread walks at least

_GEOMETRY = ("I N, I D, I H, I W, I C, I OD, I OH, I OW, I KD, I KH, I KW, "
             "I SD, I SH, I SW, I DD, I DH, I DW, I PD, I PH, I PW")

SOURCE = r"""
// Patch matrix rows [row0, row0 + rows) of the conv of x [N, D, H, W, C]: col[r, tap, c].
extern "C" __global__ void im2col(const T* x, T* col, I row0, I rows, I rows_per_block,
                                  %(geometry)s) {
  const I taps = KD * KH * KW;
  const I j = (I)blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= taps * C) return;
  const I tap = j / C, c = j - tap * C;
  const I kw = tap %% KW, kh = (tap / KW) %% KH, kd = tap / (KW * KH);
  I r = (I)blockIdx.y * rows_per_block;
  const I stop = r + rows_per_block < rows ? r + rows_per_block : rows;
  if (r >= stop) return;
  I position = row0 + r;
  I ow = position %% OW;  position /= OW;
  I oh = position %% OH;  position /= OH;
  I od = position %% OD;
  I n = position / OD;
  T* out = col + r * taps * C + j;
  for (; r < stop; ++r, out += taps * C) {
    const I id = od * SD + kd * DD - PD, ih = oh * SH + kh * DH - PH, iw = ow * SW + kw * DW - PW;
    T value = 0;
    if (id >= 0 && id < D && ih >= 0 && ih < H && iw >= 0 && iw < W)
      value = x[(((n * D + id) * H + ih) * W + iw) * C + c];
    *out = value;
    if (++ow == OW) { ow = 0; if (++oh == OH) { oh = 0; if (++od == OD) { od = 0; ++n; } } }
  }
}


// dx [N, D, H, W, C] from prods [N*OD*OH*OW, taps, C]: each element sums the products of
// the (output position, tap) pairs that read it, taps in order.
extern "C" __global__ void col2im(const T* prods, T* dx, I total, %(geometry)s) {
  const I taps = KD * KH * KW;
  FOR_EACH_ELEMENT(e, total) {
    I c, iw, ih;
    const I p = split_last(e, C, W, H, c, iw, ih), id = p %% D, n = p / D;
    T sum = 0;
    for (I kd = 0; kd < KD; ++kd) {
      const I od = source_of(id, PD, kd * DD, SD, OD);
      if (od < 0) continue;
      for (I kh = 0; kh < KH; ++kh) {
        const I oh = source_of(ih, PH, kh * DH, SH, OH);
        if (oh < 0) continue;
        for (I kw = 0; kw < KW; ++kw) {
          const I ow = source_of(iw, PW, kw * DW, SW, OW);
          if (ow < 0) continue;
          const I row = ((n * OD + od) * OH + oh) * OW + ow;
          sum += prods[(row * taps + (kd * KH + kh) * KW + kw) * C + c];
        }
      }
    }
    dx[e] = sum;
  }
}
""" % {"geometry": _GEOMETRY}


def forward(xc, wc, strides, dilations, pads, out_sp, xp):
    """The conv ``[N, *out_sp, O]`` of ``xc`` with the ``[*K, C, O]`` filter ``wc``."""
    n, o = xc.shape[0], wc.shape[-1]
    geometry = _geometry(xc.shape, wc.shape[:-2], strides, dilations, pads, out_sp)
    kc = math.prod(wc.shape[:-1])
    y = xp.empty((n * math.prod(out_sp), o), xc.dtype)
    w2 = wc.reshape(kc, o)
    for r0, col in _patch_blocks(xc, geometry, y.shape[0], kc, xp):
        xp.matmul(col, w2, out=y[r0:r0 + col.shape[0]])
    return y.reshape(n, *out_sp, o)


def backprop_filter(xc, dyc, filter_shape, strides, dilations, pads, xp):
    """The filter gradient ``[*K, C, O]``: ``col.T @ dy`` summed over blocks of rows."""
    kernel, o = filter_shape[:-2], filter_shape[-1]
    geometry = _geometry(xc.shape, kernel, strides, dilations, pads, dyc.shape[1:-1])
    kc = math.prod(filter_shape[:-1])
    dy2 = dyc.reshape(-1, o)
    dw = xp.zeros((kc, o), xc.dtype)
    for r0, col in _patch_blocks(xc, geometry, dy2.shape[0], kc, xp):
        dw += col.T @ dy2[r0:r0 + col.shape[0]]
    return dw.reshape(filter_shape)


def backprop_input(dyc, wc, in_shape, strides, dilations, pads, xp):
    """The input gradient ``in_shape`` (channels-last), or None where one image's products
    would pass ``GPU_CHUNK_BYTES`` (the array-module path splits images). Stride 1 with
    O <= C and a finite filter: the forward conv of dy by the flipped filter, whose patch
    matrix (K*O wide) is then no wider than the gather's products (K*C) and cheaper to make
    (measured on an H200: the gather wins only where O > C); it multiplies the filter by
    dy's zero padding, so an inf or NaN tap would add NaNs the gradient does not have.
    Otherwise every tap's products in one GEMM per block of whole images, then each input
    element's sum of those that reach it."""
    kernel, (c, o) = wc.shape[:-2], wc.shape[-2:]
    flipped = flipped_pads(kernel, dilations, pads)
    if (all(s == 1 for s in strides) and o <= c and min(min(p) for p in flipped) >= 0
            and bool(xp.isfinite(wc).all())):
        return forward(dyc, flipped_filter(wc, xp), strides, dilations, flipped, in_shape[1:-1],
                       xp)
    taps, out_sp = math.prod(kernel), dyc.shape[1:-1]
    image_bytes = math.prod(out_sp) * taps * c * dyc.itemsize
    if image_bytes > layout.GPU_CHUNK_BYTES:
        return None
    w_t = xp.ascontiguousarray(wc.reshape(taps, c, o).transpose(2, 0, 1)).reshape(o, taps * c)
    dx = xp.empty(in_shape, dyc.dtype)
    step = layout.GPU_CHUNK_BYTES // max(1, image_bytes)
    for n0 in range(0, in_shape[0], step):
        images = min(step, in_shape[0] - n0)
        prods = dyc[n0:n0 + images].reshape(-1, o) @ w_t
        part = dx[n0:n0 + images]
        geometry = _geometry((images, *in_shape[1:]), kernel, strides, dilations, pads, out_sp)
        launch = cuda_build.kernel(xp, SOURCE, "col2im", dyc.dtype, max(prods.size, part.size))
        launch((cuda_build.grid_for(part.size),), (cuda_build.THREADS,), (prods, part),
               (part.size, *geometry))
    return dx


def _patch_blocks(xc, geometry, rows, kc, xp):
    """Yield ``(row0, col)``: the patch matrix of each block of about ``GPU_CHUNK_BYTES``
    (a reused buffer, valid until the next block)."""
    step = max(1, min(rows, layout.GPU_CHUNK_BYTES // (kc * xc.itemsize)))
    buf = xp.empty(step * kc, xc.dtype)
    launch = cuda_build.kernel(xp, SOURCE, "im2col", xc.dtype, max(xc.size, buf.size, rows))
    threads = min(cuda_build.THREADS, -(-kc // 32) * 32)
    for r0 in range(0, rows, step):
        count = min(step, rows - r0)
        per_block = max(MIN_ROWS_PER_BLOCK, -(-count // cuda_build.MAX_GRID_Y))
        col = buf[:count * kc].reshape(count, kc)
        launch((-(-kc // threads), -(-count // per_block)), (threads,), (xc, col),
               (r0, count, per_block, *geometry))
        yield r0, col


def _geometry(x_shape, kernel, strides, dilations, pads, out_sp):
    """The kernels' 20 geometry integers, the conv lifted to three spatial dims."""
    lift = 3 - len(kernel)
    spatial = (1,) * lift + tuple(x_shape[1:-1])
    out = (1,) * lift + tuple(out_sp)
    kernel = (1,) * lift + tuple(kernel)
    strides = (1,) * lift + tuple(strides)
    dilations = (1,) * lift + tuple(dilations)
    before = (0,) * lift + tuple(b for b, _ in pads)
    return (x_shape[0], *spatial, x_shape[-1], *out, *kernel, *strides, *dilations, *before)
