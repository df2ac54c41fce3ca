"""Building and launching the conv family's CUDA kernels (CuPy ``RawModule``s).

Each kernel source is compiled once per (scalar type, index type): ``T`` is ``float`` or
``double`` (half types are widened before and rounded after, as the CPU paths do), ``I`` is
``int`` where every index fits in 32 bits (GPU integer division is several times cheaper
on them) and ``long long`` otherwise. The kernels use no shared memory and no barriers, so
a kernel's threads may run in any order: ``tests/kernels/cuda_emulation.py`` runs the same
source on the CPU with every thread in turn, which keeps them tested without a GPU.
"""

import functools

import numpy as np

THREADS = 256             # threads per block
MAX_BLOCKS = 1 << 16      # grid-stride loops cover larger element counts
MAX_GRID_Y = 65535        # CUDA's limit on a grid's second dimension
INT32_LIMIT = 2 ** 31 - 1
_SCALARS = {np.dtype(np.float32): "float", np.dtype(np.float64): "double"}

# Device functions the kernel sources share.
HELPERS = r"""
// A grid-stride loop over `total` elements.
#define FOR_EACH_ELEMENT(e, total) \
  for (I e = (I)blockIdx.x * blockDim.x + threadIdx.x; e < (total); \
       e += (I)gridDim.x * blockDim.x)

// A channels-last element index split into its channel c and its last two spatial
// coordinates (w fastest); returns the index of the dims before them.
__device__ __forceinline__ I split_last(I e, I C, I W, I H, I& c, I& w, I& h) {
  I p = e / C;
  c = e - p * C;
  w = p % W;
  p /= W;
  h = p % H;
  return p / H;
}

// One coordinate of the output position that tap offset k*dilation reads at input i, or
// -1 when none does (between strides, or outside the output). Stride 1, the common case,
// takes no division.
__device__ __forceinline__ I source_of(I i, I pad, I offset, I stride, I size) {
  const I t = i + pad - offset;
  if (t < 0) return -1;
  I o = t;
  if (stride != 1) {
    if (t % stride) return -1;
    o = t / stride;
  }
  return o < size ? o : -1;
}
"""


def on_cuda(xp):
    """Whether array module ``xp`` is CuPy on a real GPU (not the simulated one)."""
    return getattr(xp, "__name__", "") == "cupy"


def runs_on(xp, compute_dtype):
    """Whether the CUDA kernels take an op: ``on_cuda`` and the math runs in float32 or
    float64."""
    return on_cuda(xp) and np.dtype(compute_dtype) in _SCALARS


def header(scalar, index):
    """The typedefs and shared device functions a kernel source starts with."""
    return f"typedef {scalar} T;\ntypedef {index} I;\n" + HELPERS


@functools.lru_cache(maxsize=None)
def _module(xp, source, scalar, index, device):
    return xp.RawModule(code=header(scalar, index) + source)


def kernel(xp, source, name, dtype, largest_index):
    """Kernel ``name`` of ``source`` for ``dtype`` values, as ``launch(grid, block, arrays,
    integers)``: the kernel takes the arrays, then the integers as ``I`` (32-bit when
    ``largest_index``, and a grid-stride loop's last step past it, fit)."""
    wide = largest_index + MAX_BLOCKS * THREADS > INT32_LIMIT
    index = np.int64 if wide else np.int32
    raw = _module(xp, source, _SCALARS[np.dtype(dtype)], "long long" if wide else "int",
                  xp.cuda.Device().id).get_function(name)

    def launch(grid, block, arrays, integers):
        raw(grid, block, (*arrays, *(index(v) for v in integers)))
    return launch


def grid_for(count):
    """Blocks of ``THREADS`` for ``count`` elements of a grid-stride loop."""
    return max(1, min(MAX_BLOCKS, -(-count // THREADS)))
