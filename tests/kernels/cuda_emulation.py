"""CuPy's ``RawModule``, emulated on the CPU: the conv family's CUDA kernels tested without a GPU.

A kernel source is compiled by the C++ compiler after a prelude that turns CUDA's
qualifiers into plain C++ and ``blockIdx``/``threadIdx``/``blockDim``/``gridDim`` into
globals; each ``extern "C" __global__`` kernel gets a launcher that runs every thread of
the grid in turn. That is a faithful run of kernels that use no shared memory and no
barriers (``kernels/conv_algorithms/cuda_build.py`` keeps them so): each thread's
arithmetic, indexing and bounds checks are the GPU's, on the CPU.

``xp`` is NumPy with ``RawModule`` and ``cuda.Device`` added, named "cupy" as the conv paths
ask (``cuda_build.runs_on``): given as the array module to ``dense`` and ``depthwise``, it
takes their ops down the CUDA paths, drivers and kernels as on a GPU. It is stricter than
a GPU where that finds bugs: every argument must have the exact type its parameter
declares (CuPy packs arguments by their NumPy type, so a mismatch there misreads the rest),
and ``empty`` arrays start as NaN, so an element a kernel fails to write shows.
"""

import atexit
import ctypes
import hashlib
import re
import shutil
import subprocess
import tempfile
import time
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
_TYPEDEF = re.compile(r"typedef (float|double|int|long long) ([TI]);")
_TYPES = {"float": np.float32, "double": np.float64, "int": np.int32, "long long": np.int64}
_BUILD_DIR = Path(tempfile.mkdtemp(prefix="graphops-cuda-emulation-"))
atexit.register(shutil.rmtree, _BUILD_DIR, ignore_errors=True)
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
        kernels = _KERNEL.findall(code)
        source = PRELUDE + code + "".join(_launcher(*k) for k in kernels)
        digest = hashlib.sha256(source.encode()).hexdigest()[:16]
        library = _BUILD_DIR / f"kernels_{digest}.so"
        if not library.exists():
            path = _BUILD_DIR / f"kernels_{digest}.cpp"
            path.write_text(source)
            built = subprocess.run([COMPILER, "-O1", "-shared", "-fPIC", "-o", str(library),
                                    str(path)], capture_output=True, text=True)
            if built.returncode:
                raise RuntimeError(f"the kernel source does not compile:\n{built.stderr}")
        self._library = ctypes.CDLL(str(library))
        typedefs = {name: _TYPES[kind] for kind, name in _TYPEDEF.findall(code)}
        self._parameters = {name: [_parameter_type(p, typedefs) for p in params.split(",")]
                            for name, params in kernels}

    def get_function(self, name):
        """Kernel ``name`` as CuPy gives it: ``kernel(grid, block, args)``."""
        launch = getattr(self._library, f"launch_{name}")
        declared = self._parameters[name]

        def run(grid, block, args):
            assert len(args) == len(declared), f"{name} takes {len(declared)} arguments"
            dims = [*grid, 1, 1][:3] + [*block, 1, 1][:3]
            launch(*(ctypes.c_uint(int(d)) for d in dims),
                   *(_argument(value, kind) for value, kind in zip(args, declared)))
        return run


def _parameter_type(parameter, typedefs):
    """("pointer", dtype) or ("scalar", dtype) of one declared kernel parameter."""
    words = parameter.replace("*", " * ").split()
    kind = "pointer" if "*" in words else "scalar"
    base = next(w for w in words if w not in ("const", "*"))
    return kind, np.dtype(typedefs.get(base) or _TYPES[base])


def _argument(value, declared):
    """A kernel argument as ctypes passes it, checked against its declared type: arrays
    (C-contiguous, of the pointer's element type) by their data pointer, integers as
    exactly the parameter's width."""
    kind, dtype = declared
    if kind == "pointer":
        assert isinstance(value, np.ndarray) and value.flags.c_contiguous, type(value)
        assert value.dtype == dtype, f"a {value.dtype} array for a {dtype} pointer"
        return ctypes.c_void_p(value.ctypes.data)
    assert type(value) is dtype.type, f"a {type(value).__name__} for a {dtype} parameter"
    return np.ctypeslib.as_ctypes_type(dtype)(int(value))


def _empty(shape, dtype=float, order="C"):
    """``empty`` that starts floats as NaN (an unwritten element shows)."""
    array = np.empty(shape, dtype, order)
    if array.dtype.kind == "f":
        array.fill(np.nan)
    return array


class _Event:
    """A CUDA event, as ``cupy.cuda.Event()`` gives it: the host's clock when recorded."""

    def record(self):
        self.seconds = time.perf_counter()

    def synchronize(self):
        pass


def _elapsed_ms(start, stop):
    return (stop.seconds - start.seconds) * 1e3


class _Device:
    """The current device, as ``cupy.cuda.Device()`` gives it."""

    id = 0


xp = types.ModuleType("cupy")
xp.__dict__.update((name, getattr(np, name)) for name in dir(np) if not name.startswith("__"))
xp.RawModule = RawModule
xp.empty = _empty
xp.cuda = types.SimpleNamespace(Device=_Device, Event=_Event, get_elapsed_time=_elapsed_ms,
                                get_current_stream=lambda: types.SimpleNamespace(ptr=0))
