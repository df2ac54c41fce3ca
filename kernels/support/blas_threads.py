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

from graphops.kernels.compiled import loops, on_module_load, usable
from graphops.kernels.support.parallelism import blas_controllers

_lock = threading.Lock()
_finding = threading.local()      # `active`: this thread is in `_find_blas_hook`
_blas_hook = None                 # see `_find_blas_hook`; False where none applies
_users = 0                        # runs inside `blas_jobs_on_compiled_threads`
_installed = False                # whether OpenBLAS's jobs run on numba's threads now


def blas_jobs_on_compiled_threads():
    """A context: while the block runs (nestable, across threads), NumPy's OpenBLAS runs its
    parallel jobs on numba's OpenMP threads (``compiled.blas_jobs``), one pool for compiled
    loops and products alike, where that is safe: an OpenBLAS with the threads callback, numba's
    OpenMP layer, and OpenBLAS's thread count within numba's (its jobs wait on each other,
    so each needs a thread of its own). Elsewhere BLAS runs as it is. A block entered before
    any kernel loaded numba (a process's first run) takes the hook as the first compiled
    loop module loads (``_compiled_loops_loaded``), so that its products after that point,
    and the tuning trials timed beside them, run as in later runs."""
    return _OnCompiledThreads()


class _OnCompiledThreads:
    """`blas_jobs_on_compiled_threads`' context, a class rather than a generator: every
    plan's run enters one."""

    __slots__ = ()

    def __enter__(self):
        global _users
        with _lock:
            if not _installed:
                _install()
            _users += 1                   # (counted once the hook is in place)

    def __exit__(self, *exc_info):
        global _users, _installed
        with _lock:
            _users = max(0, _users - 1)   # (0 already in a child forked during the block)
            if _users == 0 and _installed:
                _blas_hook[0](None)
                _installed = False


def _compiled_loops_loaded():
    """Called as ``compiled.loops`` first loads a module: runs already inside the context,
    entered before numba was loaded, hand OpenBLAS's jobs to its threads from now on."""
    finding = getattr(_finding, "active", False)
    if _users and not _installed and _blas_hook is None and not finding:
        with _lock:
            if _users and not _installed:
                _install()


on_module_load(_compiled_loops_loaded)


def _install():
    """Installs the callback where the hook applies (under ``_lock``)."""
    global _installed
    hook = _blas_hook if _blas_hook is not None else _find_blas_hook()
    if hook and not _installed:
        set_callback, get_threads, address, most_threads = hook
        if get_threads() <= most_threads:
            set_callback(address)
            _installed = True


def _find_blas_hook():
    """(set_callback, get_num_threads, the callback's address, numba's most threads) for
    `blas_jobs_on_compiled_threads`, or False where it does not apply; decided once a kernel
    has loaded numba (a plan that needs no compiled loop does not load it for this)."""
    global _blas_hook
    if "numba" not in sys.modules:
        return False
    libraries = blas_controllers()
    hook = False
    if usable() and len(libraries) == 1 and libraries[0].internal_api == "openblas":
        set_callback, get_threads = (_openblas_symbol(libraries[0], name) for name in (
            "openblas_set_threads_callback_function", "openblas_get_num_threads"))
        _finding.active = True
        try:
            module = loops("blas_jobs")
        finally:
            _finding.active = False
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
    global _blas_hook, _users, _installed, _lock
    if _blas_hook:
        _blas_hook[0](None)
    _blas_hook, _users, _installed = False, 0, False
    _lock = threading.Lock()          # (another thread may have held it at the fork)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_drop_blas_hook_in_child)
