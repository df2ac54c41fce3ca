"""Per-session state (variables and other resources), shared by the kernels of a Session,
and the handle that names one resource along a `resource` edge."""

import threading
from dataclasses import dataclass

from graphops.registry import dtypes
from graphops.registry.errors import NotFoundError
from graphops.registry.tensor_shape import TensorShape


@dataclass(frozen=True)
class ResourceHandle:
    """What flows along a `resource` edge: the variable's name, dtype and declared shape."""

    name: str
    dtype: dtypes.DType
    shape: TensorShape
    device: str


class ResourceMgr:
    """A thread-safe map name -> resource object; one per Session (and one for eager mode)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._resources = {}

    def lookup(self, name):
        try:
            return self._resources[name]
        except KeyError:
            raise NotFoundError(f"Resource {name} does not exist.") from None

    def lookup_or_create(self, name, factory):
        with self._lock:
            found = self._resources.get(name)
            if found is None:
                found = self._resources[name] = factory()
            return found

    def clear(self):
        with self._lock:
            self._resources.clear()


DEFAULT_RESOURCES = ResourceMgr()   # eager mode's state
