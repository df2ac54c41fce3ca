"""OpenBLAS's parallel jobs on numba's OpenMP threads while a plan runs: one pool of threads
for compiled loops and products alike. OpenBLAS's own idle threads poll for work for tens
of milliseconds after each product, on the cores the next compiled loop's threads need
(inside ResNet50 at batch 8 its 3x3 convs took 1.5-2x their time alone); handed to numba's
threads, which spin for a fraction of a millisecond and then sleep, the products cost what
they cost on OpenBLAS's threads and the loops after them run at their own speed.
"""

import ctypes
import os
import sys
import threading

from graphops.kernels.support.parallelism import blas_controllers

_lock = threading.Lock()
_blas_hook = None                 # see `_find_blas_hook`; False where none applies
_blas_hook_users = 0              # runs inside `blas_jobs_on_compiled_threads`


def blas_jobs_on_compiled_threads():
    """A context: while the block runs (nestable, across threads), NumPy's OpenBLAS runs its
    parallel jobs on numba's OpenMP threads (``compiled.blas_jobs``), one pool for compiled
    loops and products alike, where that is safe: an OpenBLAS with the threads callback, numba's
    OpenMP layer, and OpenBLAS's thread count within numba's (its jobs wait on each other,
    so each needs a thread of its own). Elsewhere BLAS runs as it is."""
    return _OnCompiledThreads()


class _OnCompiledThreads:
    """`blas_jobs_on_compiled_threads`' context, a class rather than a generator: every
    plan's run enters one."""

    __slots__ = ("installed",)

    def __enter__(self):
        global _blas_hook_users
        hook = _blas_hook if _blas_hook is not None else _find_blas_hook()
        self.installed = False
        if hook:
            set_callback, get_threads, address, most_threads = hook
            with _lock:
                if _blas_hook_users or get_threads() <= most_threads:
                    if _blas_hook_users == 0:
                        set_callback(address)
                    _blas_hook_users += 1
                    self.installed = True

    def __exit__(self, *exc_info):
        global _blas_hook_users
        if self.installed and _blas_hook:      # (not in a child forked during the block)
            with _lock:
                _blas_hook_users -= 1
                if _blas_hook_users == 0:
                    _blas_hook[0](None)


def _find_blas_hook():
    """(set_callback, get_num_threads, the callback's address, numba's most threads) for
    `blas_jobs_on_compiled_threads`, or False where it does not apply; decided once a kernel
    has loaded numba (a plan that needs no compiled loop does not load it for this)."""
    global _blas_hook
    if "numba" not in sys.modules:
        return False
    from graphops.kernels.compiled import loops, usable
    libraries = blas_controllers()
    hook = False
    if usable() and len(libraries) == 1 and libraries[0].internal_api == "openblas":
        set_callback, get_threads = (_openblas_symbol(libraries[0], name) for name in (
            "openblas_set_threads_callback_function", "openblas_get_num_threads"))
        module = loops("blas_jobs")
        numba = sys.modules["numba"]
        if None not in (set_callback, get_threads) and numba.threading_layer() == "omp":
            set_callback.argtypes, set_callback.restype = (ctypes.c_void_p,), None
            get_threads.argtypes, get_threads.restype = (), ctypes.c_int
            hook = (set_callback, get_threads, module.callback.address,
                    numba.config.NUMBA_NUM_THREADS)
    _blas_hook = hook
    return hook


def _openblas_symbol(library, name):
    """OpenBLAS's function ``name`` under the prefixes and suffixes its builds give it
    (``scipy_`` and ``64_`` in NumPy's wheels), or None."""
    for prefix in ("", "scipy_"):
        for suffix in ("", "64_", "_64"):
            function = getattr(library.dynlib, prefix + name + suffix, None)
            if function is not None:
                return function
    return None


def _drop_blas_hook_in_child():
    """A child forked during a run must not call numba's OpenMP threads (they do not survive
    a fork): OpenBLAS runs its own there."""
    global _blas_hook, _blas_hook_users
    if _blas_hook:
        _blas_hook[0](None)
    _blas_hook, _blas_hook_users = False, 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_drop_blas_hook_in_child)
