"""The process's intra-op parallelism (TF's `intra_op_parallelism_threads`): one thread count
and one pool of threads.

Every way a CPU kernel runs in parallel draws on this count: numba's compiled loops,
`pool_map`, which spreads blocks of NumPy work (im2col copies with their GEMMs) over a pool
of threads, and BLAS. Inside `pool_map` BLAS runs single-threaded (`blas_single_threaded`):
the pool's threads already use the cores, and BLAS's own would spin against them. While a
plan runs, OpenBLAS's parallel jobs run on numba's threads rather than its own
(`blas_threads.blas_jobs_on_compiled_threads`): OpenBLAS's idle threads poll for tens of
milliseconds after each product, on the cores the next compiled loop's threads need; a
product too small to pay for waking one of those threads runs BLAS on one (`matmul`). Work is
cut into a few shares per thread that threads take as they come free (compiled loops
likewise take dynamic chunks), so a thread that another process holds off its core delays
a share, not the whole kernel. Kernels run one at a time, so no phase ever runs more threads
than the count. Idle pool and numba threads sleep. 0 (the default) means every core the
process may use.
"""

import contextlib
import contextvars
import functools
import os
import sys
import threading

import numpy as np

SHARES_PER_THREAD = 4
# OpenBLAS runs a product of up to this many multiply-adds on one thread itself (its
# SMP_THRESHOLD_MIN x GEMM_MULTITHREAD_THRESHOLD); `matmul` keeps it on one up to
# SERIAL_PRODUCT_MACS, where waking another thread for it costs more than that thread saves,
# unless its operands hold SERIAL_MAX_BYTES or more: such a product waits on memory reads,
# which one core does not saturate.
BLAS_SERIAL_MACS = 1 << 18
SERIAL_PRODUCT_MACS = 1 << 23
SERIAL_MAX_BYTES = 1 << 21
_POOL_NAME = "graphops-intra-op"
_requested = 0
_lock = threading.Lock()
_pool = _pool_key = None          # the ThreadPoolExecutor and the (pid, size) it was made for
_blas = None                      # threadpoolctl's controllers of NumPy's BLAS libraries
_blas_users = 0                   # threads inside `blas_single_threaded`
_blas_saved = ()                  # their thread counts before the first one entered
_alone = contextvars.ContextVar("graphops_one_thread", default=False)   # inside `one_thread`


@functools.cache
def available_cores():
    """The cores this process may run on (its affinity mask where the OS has one), read
    once, as TF reads it."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def intra_op_threads():
    """The thread count parallel kernels use now: 1 inside `one_thread`."""
    return 1 if _alone.get() else (_requested or available_cores())


@contextlib.contextmanager
def one_thread(when=True):
    """While the block runs (when `when`), the calling thread's kernels run on it alone:
    compiled loops, `pool_map` and the shares work is cut into (small work, where waking
    the other threads costs more than they save)."""
    if not when:
        yield
        return
    token = _alone.set(True)
    try:
        yield
    finally:
        _alone.reset(token)


def get_intra_op_threads():
    """The requested count: 0 means "every core"."""
    return _requested


def set_intra_op_threads(num_threads):
    """Sets the count (0: every core); the pool and compiled loops follow on their next use."""
    global _requested
    if isinstance(num_threads, bool) or not isinstance(num_threads, int) or num_threads < 0:
        raise ValueError(f"intra_op_parallelism_threads must be a non-negative int, "
                         f"got {num_threads!r}")
    _requested = num_threads


def numba_threads(single=False):
    """The thread count for the caller's next compiled loops: `intra_op_threads()`, at most
    the pool numba started with; 1 when `single` (work too small to pay for waking the
    others)."""
    return 1 if single else min(intra_op_threads(),
                                sys.modules["numba"].config.NUMBA_NUM_THREADS)


def share_count():
    """How many shares work is split into: ``SHARES_PER_THREAD`` per intra-op thread."""
    return SHARES_PER_THREAD * intra_op_threads()


def shares(items, parts):
    """`items` dealt round-robin into at most `parts` non-empty lists (a fixed split: the
    same items and count always give the same shares)."""
    parts = max(1, min(parts, len(items)))
    return [items[i::parts] for i in range(parts)]


def pool_map(work, items):
    """[work(share) for share in shares(items, share_count())], the
    shares run on the pool as its threads come free; inline when there is one thread, one
    item, or the caller is itself a pool thread (nested work never waits on the pool it
    holds). The shares depend only on the items and the thread count. Each share runs in a
    copy of the caller's context, so its settings (``np.errstate``) hold there too."""
    global _pool, _pool_key
    threads = intra_op_threads()
    if threads == 1 or len(items) < 2 or in_pool_thread():
        return [work(list(items))]
    key = (os.getpid(), threads)            # a forked child needs threads of its own
    with _lock:
        if _pool_key != key:
            from concurrent.futures import ThreadPoolExecutor   # lazily: keeps import fast
            if _pool is not None and _pool_key[0] == key[0]:
                _pool.shutdown(wait=False)
            _pool, _pool_key = ThreadPoolExecutor(threads, _POOL_NAME), key
        pool = _pool
    context = contextvars.copy_context()

    def run(share):
        return context.copy().run(work, share)

    with blas_single_threaded():
        return list(pool.map(run, shares(items, share_count())))


def matmul(xp, a, b):
    """``xp.matmul(a, b)``; on the host, a product of fewer than ``SERIAL_PRODUCT_MACS``
    multiply-adds (counted as ``a``'s elements times ``b``'s columns) whose operands hold
    under ``SERIAL_MAX_BYTES`` with BLAS on one thread. Inside a plan BLAS's parallel jobs
    wait for a compiled-loop thread that has usually gone to sleep since the last loop:
    over such a product its wake-up costs more than the second thread saves. A product
    reading more bytes waits on memory, which two cores read faster than one (a model's
    last layer at batch 1, [1, 2048] x [2048, 1000]: 1.25x faster on two threads from
    memory, 1.4x from the cache)."""
    if xp is np and BLAS_SERIAL_MACS < a.size * b.shape[-1] < SERIAL_PRODUCT_MACS \
            and a.nbytes + b.nbytes < SERIAL_MAX_BYTES and intra_op_threads() > 1:
        with blas_single_threaded():
            return np.matmul(a, b)
    return xp.matmul(a, b)


def in_pool_thread():
    """Whether the calling thread is one of the pool's."""
    return threading.current_thread().name.startswith(_POOL_NAME)


def blas_controllers():
    """threadpoolctl's controllers of the BLAS libraries NumPy loaded, found once."""
    global _blas
    if _blas is None:
        from threadpoolctl import ThreadpoolController   # lazily: keeps import fast
        _blas = ThreadpoolController().select(user_api="blas").lib_controllers
    return _blas


@contextlib.contextmanager
def blas_single_threaded():
    """BLAS at one thread while the block runs (nestable, across threads); the caller's
    setting comes back when the last running block ends."""
    global _blas_users, _blas_saved
    with _lock:
        if _blas_users == 0:
            libraries = blas_controllers()
            _blas_saved = [lib.get_num_threads() for lib in libraries]
            for lib in libraries:
                lib.set_num_threads(1)
        _blas_users += 1
    try:
        yield
    finally:
        with _lock:
            _blas_users -= 1
            if _blas_users == 0:
                for lib, threads in zip(blas_controllers(), _blas_saved):
                    lib.set_num_threads(threads)
