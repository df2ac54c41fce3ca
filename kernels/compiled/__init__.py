"""Compiled CPU loops: modules of numba functions, imported on a kernel's first use.

numba is imported only when a kernel first needs a compiled loop, so `import graphops`
stays fast. A loop module (every module of this package but `ir`, the LLVM-IR building
blocks, `pool_vectors`, intrinsics built from them, `constants`, and `host_isa`, the
vector unit numba compiles for and the register tiles taken from it) is plain numba code
with `@njit(cache=True, ...)`: compiled
functions are cached on disk beside the module or, where that directory is read-only, in
numba's per-user cache directory, so a warm process loads each in milliseconds instead of
compiling it. Caches beside the modules, or in `NUMBA_CACHE_DIR`'s directory for the
package where that is set, are dropped whenever any module's source changes
(`drop_stale_caches`).

Parallel loops are scheduled dynamically: threads take `chunk` iterations at a time as they
come free, so a thread held off its core by another process delays one chunk, not the
loop. numba's parallel loops run on OpenMP threads. Unless the user chose otherwise, they wait
passively (OMP_WAIT_POLICY, set as graphops loads and read when numba first loads OpenMP)
after a short spin (GOMP_SPINCOUNT, ``SPIN_COUNT``: about 0.3 ms in GNU OpenMP): OpenMP's
default is to spin for milliseconds after each loop, and spinning threads starve the next
kernel's threads when the cores are all in use (2-60x slower steps on a 2-core machine, 3x
slower whole models), while threads that sleep at once wake for every loop (50-100 us on a
virtual machine). While a plan runs, OpenBLAS's parallel jobs run on these same threads
(``blas_threads.blas_jobs_on_compiled_threads``). OpenMP's threads do not survive a fork: in
a child forked after numba was loaded, `usable()` is False and kernels take their NumPy
path.
"""

import hashlib
import importlib
import os
import sys
import threading

from graphops.kernels.support.parallelism import numba_threads


# OpenMP reads its wait policy once, when numba first loads it (at the first parallel loop of
# any numba code in the process), so the default is set as graphops loads: whether or not
# numba was imported before, its OpenMP threads then wait passively unless the user chose,
# after a short spin in GNU OpenMP (GOMP_SPINCOUNT: about SPIN_COUNT / 100 us).
SPIN_COUNT = 30000
if "OMP_WAIT_POLICY" not in os.environ:
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    os.environ.setdefault("GOMP_SPINCOUNT", str(SPIN_COUNT))

ELEMENT_CHUNK = 1 << 14    # iterations a thread takes at a time in elementwise loops
_forked_after_numba = False
_modules = {}                 # name -> the imported loop module
_given = threading.local()    # per thread: the (threads, chunk) numba was last given
_module_listeners = []        # called each time `loops` first loads a module


def _note_fork():
    global _forked_after_numba
    _forked_after_numba = _forked_after_numba or "numba" in sys.modules


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_note_fork)


def usable():
    """Whether compiled loops may run in this process: not in a child forked after numba
    was loaded (numba's OpenMP loops abort there)."""
    return not _forked_after_numba


def on_module_load(listener):
    """Calls ``listener()`` each time ``loops`` first loads a module (so also once numba is
    loaded: ``blas_threads`` installs its hook for a run begun before that)."""
    _module_listeners.append(listener)


def loops(name, chunk=ELEMENT_CHUNK, single=False):
    """The compiled-loop module `<name>` of this package, with numba's thread count and the chunk
    of iterations a thread takes at a time set for the caller's next parallel loops (one
    thread takes them all at once: dynamic chunks would cost it ~60 ns each); one
    thread with `single` (waking passively waiting threads costs ~50 us: small work runs
    faster alone). numba keeps both settings per thread, so each thread's last ones are
    remembered and only changes reach numba (a kernel's call costs well under 1 us)."""
    module = _modules.get(name)
    if module is None:
        if not _modules:
            drop_stale_caches(os.path.dirname(__file__))
        module = _modules[name] = importlib.import_module(f"{__name__}.{name}")
        for listener in _module_listeners:
            listener()
    threads = numba_threads(single)
    wanted = (threads, chunk if threads > 1 else 0)    # one thread: one static block
    given = getattr(_given, "settings", None)
    if given != wanted:
        _give_numba(wanted, given)
        _given.settings = wanted
    return module


def drop_stale_caches(package):
    """Removes numba's cache files of the loop modules of directory ``package`` when any
    module's source differs from the sources they were compiled from (a digest of them all
    kept beside the cache files, ``sources.sha256``): a cached function holds the code it
    inlined from other modules, and numba checks only its own module's source. The caches
    lie beside the modules (``__pycache__``) or, where ``NUMBA_CACHE_DIR`` is set, in the
    directory numba keeps for the package there (as numba's default cache locators place
    them). Where the directory is read-only, numba caches in its per-user directory and
    nothing is removed here."""
    digest = hashlib.sha256()
    for name in sorted(os.listdir(package)):
        if name.endswith(".py"):
            with open(os.path.join(package, name), "rb") as source:
                digest.update(name.encode() + b"\0" + source.read())
    for cache, create in _cache_directories(package):
        _drop_unless_stamped(cache, digest.hexdigest(), create)


def _cache_directories(package):
    """``(directory, create)`` pairs: where numba may keep the cache files of
    ``package``'s modules, beside them and, where ``NUMBA_CACHE_DIR`` is set, in its
    directory for the package there; ``create``: whether to make the directory to stamp it
    (numba makes that one as it first caches, and a cache made from the current sources
    must find it stamped)."""
    from numba import config
    from numba.core.caching import UserProvidedCacheLocator
    directories = [(os.path.join(package, "__pycache__"), False)]
    if config.CACHE_DIR:
        subpath = UserProvidedCacheLocator.get_suitable_cache_subpath(
            os.path.join(package, "__init__.py"))
        directories.append((os.path.join(config.CACHE_DIR, subpath), True))
    return directories


def _drop_unless_stamped(cache, digest, create):
    """Removes the cache files in directory ``cache`` unless its stamp holds ``digest``,
    then stamps it; nothing where it cannot be written, or does not exist and ``create``
    is false."""
    stamp = os.path.join(cache, "sources.sha256")
    try:
        with open(stamp) as f:
            if f.read() == digest:
                return
    except OSError:
        pass
    try:
        if create:
            os.makedirs(cache, exist_ok=True)
        for name in os.listdir(cache):
            if name.endswith((".nbi", ".nbc")):
                os.remove(os.path.join(cache, name))
        with open(stamp + ".new", "w") as f:
            f.write(digest)
        os.replace(stamp + ".new", stamp)     # whole, for processes starting meanwhile
    except OSError:          # no cache yet, or a read-only install
        pass


def _give_numba(wanted, given):
    """Sets numba's (thread count, chunk) for the calling thread to ``wanted`` where they
    differ from ``given`` (None: not set yet). The first time through numba's public
    setters, which start its threading layer and check the values; after that through the
    C functions they end in (a CNN alternates one-thread and all-thread kernels, and each
    public setter costs over a microsecond in checks and locks)."""
    numba = sys.modules["numba"]
    parallel = sys.modules.get("numba.np.ufunc.parallel")
    set_threads = getattr(parallel, "_set_num_threads", None)
    set_chunk = getattr(parallel, "_set_parallel_chunksize", None)
    if given is None or set_threads is None or set_chunk is None:
        set_threads, set_chunk = numba.set_num_threads, numba.set_parallel_chunksize
        given = (None, None)
    if given[0] != wanted[0]:
        set_threads(wanted[0])
    if given[1] != wanted[1]:
        set_chunk(wanted[1])
