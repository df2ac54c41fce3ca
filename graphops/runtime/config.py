"""Process-wide settings (`gp.config`): the memory budget and the devices graphops sees.

The memory budget bounds any single buffer a kernel allocates from user-given sizes
(sizes vectors, Fill dims, broadcast and conv outputs): a larger request raises
ResourceExhaustedError before anything is allocated. It defaults to 8 GiB.
"""

import contextlib

from graphops.runtime.devices import list_physical_devices
from registry.memory import get_memory_budget, set_memory_budget

__all__ = ["get_memory_budget", "set_memory_budget", "memory_budget", "list_physical_devices"]


@contextlib.contextmanager
def memory_budget(num_bytes):
    """`with gp.config.memory_budget(2**20): ...` sets the budget, restoring it on exit."""
    old = get_memory_budget()
    set_memory_budget(num_bytes)
    try:
        yield
    finally:
        set_memory_budget(old)
