"""Freed host memory kept for reuse (glibc's malloc tuned), as TF's CPU allocator keeps its
pools.

By default glibc hands a freed buffer of more than a few hundred KB back to the OS (munmap,
or a trimmed heap top), so the next buffer of that size faults in every page again: ~650
page faults for a 4 MB array, 3-4 ms on a virtual machine. Kernels allocate their outputs
afresh each run, so every large op of a training step paid that (examples/train_cnn3d.py:
23 ms a step, 15 ms with buffers kept). Once a kernel first runs, buffers up to
``HEAP_MAX_BYTES`` come from the heap and the heap is never trimmed: the process keeps its
high-water mark of memory, as a TF process does. Opt out with
``gp.config.set_retain_host_memory(False)`` (glibc's defaults come back). Elsewhere than on
glibc this does nothing.
"""

import ctypes
import platform

HEAP_MAX_BYTES = 32 << 20        # glibc's ceiling for M_MMAP_THRESHOLD on 64-bit systems
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_GLIBC_DEFAULT_BYTES = 128 << 10
_NEVER_TRIM = (1 << 31) - 1

_wanted = True
_applied = None                  # the setting last given to malloc (None: not yet)


def set_retain_host_memory(enabled):
    """Whether freed host buffers stay mapped for reuse (default True); takes effect at once
    if kernels have run, else when the first one does."""
    global _wanted
    _wanted = bool(enabled)
    if _applied is not None:
        _apply()


def get_retain_host_memory():
    return _wanted


def kernels_starting():
    """Called before a kernel runs: the setting reaches malloc the first time."""
    if _applied is None:
        _apply()


def _apply():
    global _applied
    _applied = _wanted
    mallopt = _glibc_mallopt()
    if mallopt is None:
        return
    mallopt(_M_MMAP_THRESHOLD, HEAP_MAX_BYTES if _wanted else _GLIBC_DEFAULT_BYTES)
    mallopt(_M_TRIM_THRESHOLD, _NEVER_TRIM if _wanted else 2 * _GLIBC_DEFAULT_BYTES)


def _glibc_mallopt():
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None
    mallopt = getattr(ctypes.CDLL(None), "mallopt", None)
    if mallopt is not None:
        mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return mallopt
