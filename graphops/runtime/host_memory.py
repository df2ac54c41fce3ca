"""Freed host memory kept for reuse (glibc's malloc tuned), as TF's CPU allocator keeps its
pools.

By default glibc hands a freed buffer of more than a few hundred KB back to the OS (munmap,
or a trimmed heap top), so the next buffer of that size faults in every page again: ~650
page faults for a 4 MB array, 3-4 ms on a virtual machine; a fresh 51 MB output costs
2-3 ms before a kernel writes it. Kernels allocate their outputs afresh each run, so every
large op of a training step paid that (examples/train_cnn3d.py: 23 ms a step, 15 ms with
buffers kept). Once a kernel first runs, every buffer comes from the heap (no mmap: glibc
still maps memory when the heap cannot grow) and the heap is never trimmed: the process
keeps its high-water mark of memory, as a TF process does. Opt out with
``gp.config.set_retain_host_memory(False)``: before the first kernel runs, malloc is then
never touched; after, glibc's default thresholds come back as fixed values (its adaptive
mmap threshold stays off once set). Elsewhere than on glibc this does nothing.
"""

import ctypes
import platform

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD, _M_MMAP_MAX = -1, -3, -4
_GLIBC_DEFAULTS = ((_M_MMAP_MAX, 65536), (_M_MMAP_THRESHOLD, 128 << 10),
                   (_M_TRIM_THRESHOLD, 128 << 10))
_RETAINING = ((_M_MMAP_MAX, 0), (_M_TRIM_THRESHOLD, (1 << 31) - 1))

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
    """Called before kernels run (a plan's run, an eager op): the setting reaches malloc the
    first time."""
    if _applied is None:
        _apply()


def _apply():
    """Tells malloc the setting; nothing when retention was never on (malloc untouched)."""
    global _applied
    first, _applied = _applied is None, _wanted
    mallopt = _glibc_mallopt()
    if mallopt is None or (first and not _wanted):
        return
    for option, value in _RETAINING if _wanted else _GLIBC_DEFAULTS:
        mallopt(option, value)


def _glibc_mallopt():
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None
    mallopt = getattr(ctypes.CDLL(None), "mallopt", None)
    if mallopt is not None:
        mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return mallopt
