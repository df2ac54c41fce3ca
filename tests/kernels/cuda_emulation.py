"""CuPy's ``RawModule``, emulated on the CPU: the conv family's CUDA kernels tested without a GPU.

A kernel source is compiled by the C++ compiler after a prelude that turns CUDA's
qualifiers into plain C++ and ``blockIdx``/``threadIdx``/``blockDim``/``gridDim`` into
globals; each ``extern "C" __global__`` kernel gets a launcher that runs every thread of
the grid in turn. That is a faithful run of kernels that use no shared memory and no
barriers (``kernels/conv_algorithms/cuda_build.py`` keeps them so): each thread's
arithmetic, indexing and bounds checks are the GPU's, on the CPU.

``xp`` is NumPy with ``RawModule`` and ``cuda.Device`` added, named "cupy" as the conv paths
ask (``cuda_build.runs_on``): given as the array module to ``dense`` and ``depthwise``, it
takes their ops down the CUDA paths, drivers and kernels as on a GPU.
"""

import ctypes
import hashlib
import re
import shutil
import subprocess
import tempfile
import types
from pathlib import Path

import numpy as np

PRELUDE = r"""
struct Dim3 { unsigned x, y, z; };
static Dim3 blockIdx, threadIdx, blockDim, gridDim;
#define __global__
#define __device__
#define __forceinline__ inline
"""
_KERNEL = re.compile(r'extern "C" __global__ void (\w+)\(([^)]*)\)')
_BUILD_DIR = Path(tempfile.mkdtemp(prefix="graphops-cuda-emulation-"))
COMPILER = shutil.which("g++") or shutil.which("c++")


def _launcher(name, params):
    """C++ for ``launch_<name>(grid, block, params...)``: every thread of the grid in turn."""
    names = ", ".join(p.split()[-1].lstrip("*") for p in params.split(","))
    return f"""
extern "C" void launch_{name}(unsigned grid_x_, unsigned grid_y_, unsigned grid_z_,
                              unsigned block_x_, unsigned block_y_, unsigned block_z_,
                              {params}) {{
  gridDim = Dim3{{grid_x_, grid_y_, grid_z_}};
  blockDim = Dim3{{block_x_, block_y_, block_z_}};
  for (unsigned bz_ = 0; bz_ < grid_z_; ++bz_) for (unsigned by_ = 0; by_ < grid_y_; ++by_)
    for (unsigned bx_ = 0; bx_ < grid_x_; ++bx_) for (unsigned tz_ = 0; tz_ < block_z_; ++tz_)
      for (unsigned ty_ = 0; ty_ < block_y_; ++ty_)
        for (unsigned tx_ = 0; tx_ < block_x_; ++tx_) {{
          blockIdx = Dim3{{bx_, by_, bz_}};
          threadIdx = Dim3{{tx_, ty_, tz_}};
          {name}({names});
        }}
}}
"""


class RawModule:
    """A kernel source compiled for the CPU (``cupy.RawModule(code=...)``)."""

    def __init__(self, code):
        source = PRELUDE + code + "".join(_launcher(*m) for m in _KERNEL.findall(code))
        digest = hashlib.sha256(source.encode()).hexdigest()[:16]
        library = _BUILD_DIR / f"kernels_{digest}.so"
        if not library.exists():
            path = _BUILD_DIR / f"kernels_{digest}.cpp"
            path.write_text(source)
            subprocess.run([COMPILER, "-O1", "-shared", "-fPIC", "-o", str(library),
                            str(path)], check=True, capture_output=True, text=True)
        self._library = ctypes.CDLL(str(library))

    def get_function(self, name):
        launch = getattr(self._library, f"launch_{name}")

        def run(grid, block, args):
            dims = [*grid, 1, 1][:3] + [*block, 1, 1][:3]
            launch(*(ctypes.c_uint(int(d)) for d in dims), *map(_argument, args))
        return run


def _argument(value):
    """A kernel argument as ctypes passes it: arrays by their data pointer."""
    if isinstance(value, np.ndarray):
        assert value.flags.c_contiguous, "kernels take C-contiguous arrays"
        return ctypes.c_void_p(value.ctypes.data)
    if isinstance(value, np.int64):
        return ctypes.c_longlong(int(value))
    if isinstance(value, np.int32):
        return ctypes.c_int(int(value))
    raise TypeError(f"kernel argument of type {type(value).__name__}")


class _Device:
    id = 0


xp = types.ModuleType("cupy")
xp.__dict__.update((name, getattr(np, name)) for name in dir(np) if not name.startswith("__"))
xp.RawModule = RawModule
xp.cuda = types.SimpleNamespace(Device=_Device)
