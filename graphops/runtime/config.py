"""Process-wide settings (`gp.config`): the memory budget, the devices graphops sees, the
intra-op thread count and whether freed host memory stays mapped for reuse
(`graphops/runtime/host_memory.py`).

The memory budget bounds any single buffer a kernel allocates from user-given sizes
(sizes vectors, Fill dims, broadcast and conv outputs): a larger request raises
ResourceExhaustedError before anything is allocated. It defaults to 8 GiB.
"""

import contextlib

from graphops.runtime.devices import list_physical_devices
from graphops.runtime.host_memory import get_retain_host_memory, set_retain_host_memory
from graphops.kernels.support.parallelism import get_intra_op_threads, set_intra_op_threads
from graphops.registry.memory import get_memory_budget, set_memory_budget

__all__ = ["get_memory_budget", "set_memory_budget", "memory_budget", "list_physical_devices",
           "get_intra_op_parallelism_threads", "set_intra_op_parallelism_threads",
           "get_retain_host_memory", "set_retain_host_memory"]


def set_intra_op_parallelism_threads(num_threads):
    """The threads one CPU kernel may use, compiled loops and BLAS together (0: every core),
    as TF's `tf.config.threading.set_intra_op_parallelism_threads`."""
    set_intra_op_threads(num_threads)


def get_intra_op_parallelism_threads():
    """The count set by `set_intra_op_parallelism_threads` (0: every core)."""
    return get_intra_op_threads()


@contextlib.contextmanager
def memory_budget(num_bytes):
    """`with gp.config.memory_budget(2**20): ...` sets the budget, restoring it on exit."""
    old = get_memory_budget()
    set_memory_budget(num_bytes)
    try:
        yield
    finally:
        set_memory_budget(old)
