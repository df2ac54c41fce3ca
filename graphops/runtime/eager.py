"""Eager execution: run one op at once through the same placement and kernel lookup.

`execute(op_def, inputs, attrs, name)` places the op (GPU when present with a kernel,
else CPU), instantiates its kernel — cached per (op type, frozen attrs, input dtypes) and
device table — moves the inputs where the kernel wants them and returns the output arrays
(NumPy on CPU, CuPy on GPU).
"""

import threading

import numpy as np

from graphops.runtime import devices, host_memory, placement
from graphops.runtime.kernel_call import (compute, error_cause, host_memory_indices, instantiate,
                                          node_error)
from graphops.registry import dtypes
from graphops.registry.op_def import arg_types
from graphops.registry.resources import DEFAULT_RESOURCES, ResourceHandle
from graphops.registry.tensor_shape import TensorShape

_MAX_CACHED = 4096
_cache = {}
_lock = threading.Lock()


def clear_kernel_cache():
    """Drops every cached eager kernel (TFE_ContextClearCaches): stateful kernels such as
    the random ops' start afresh on their next call."""
    with _lock:
        _cache.clear()


def _freeze(value):
    """A hashable stand-in for an attr value (lists, arrays and shapes included)."""
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, np.ndarray):
        return ("ndarray", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, TensorShape):
        return ("shape", value.as_tuple())
    return value


def _resource_device(inputs, input_dtypes):
    """The device of the first resource handle among the inputs ("" when none): ops on a
    variable run where it lives. Handles are object arrays, which read as dtype string."""
    for x, dtype in zip(inputs, input_dtypes):
        if dtype is dtypes.string and x.shape == ():
            handle = x.item()
            if isinstance(handle, ResourceHandle):
                return handle.device
    return ""


class _Entry:
    """A cached, ready kernel: what `execute` needs besides the inputs."""

    __slots__ = ("kernel", "construction", "device", "host_in")

    def __init__(self, op_def, name, attrs, input_dtypes, requested):
        placed = placement.place_node(name, op_def.name, attrs, requested)
        self.device = placed.device
        self.construction, self.kernel = instantiate(
            op_def, name, attrs, input_dtypes, arg_types(op_def.output_arg, attrs)[0], placed,
            DEFAULT_RESOURCES)
        self.host_in = host_memory_indices(placed.kernel_def, op_def.input_arg, attrs)


def _hashable(key):
    try:
        hash(key)
    except TypeError:
        return False
    return True


def _cache_key(op_def, attrs, input_dtypes, requested):
    """The kernel cache key of a call, or None when an attr value cannot be frozen."""
    rest = (tuple(input_dtypes), requested, devices.table_version())
    key = (op_def.name, tuple(attrs.items())) + rest      # attr values usually hash as they are
    if _hashable(key):
        return key
    key = (op_def.name, tuple(sorted((k, _freeze(v)) for k, v in attrs.items()))) + rest
    return key if _hashable(key) else None


def _entry(op_def, name, attrs, input_dtypes, requested):
    key = _cache_key(op_def, attrs, input_dtypes, requested)
    if key is None:       # an attr value we cannot freeze: no caching
        return _Entry(op_def, name, attrs, input_dtypes, requested)
    entry = _cache.get(key)
    if entry is None:
        entry = _Entry(op_def, name, attrs, input_dtypes, requested)
        with _lock:
            if len(_cache) >= _MAX_CACHED:
                _cache.clear()
            _cache[key] = entry
    return entry


def _error(exc, op_type, name, device_name, inputs):
    tail = f" [Op:{op_type}]" + (f" name: {name}" if name else "")
    return node_error(exc, name or op_type, op_type, device_name, inputs, tail=tail,
                      header="Eager execution error")


def execute(op_def, inputs, attrs, name=None):
    """Runs one op on arrays and returns the list of output arrays."""
    host_memory.kernels_starting()
    arrays, places = [], []
    for x in inputs:
        place = devices.location_of(x)
        if place is None and not isinstance(x, np.ndarray):
            x = np.asarray(x)
        arrays.append(x)
        places.append(place)
    inputs = arrays
    node_name = name or op_def.name
    try:
        input_dtypes = [dtypes.as_dtype(x.dtype) for x in inputs]
        entry = _entry(op_def, node_name, attrs, input_dtypes,
                       _resource_device(inputs, input_dtypes))
    except Exception as exc:
        raise _error(exc, op_def.name, name, "(not placed)", inputs) from error_cause(exc)
    device = entry.device
    target = None if device.type.is_host else device
    if target is not None or any(place is not None for place in places):
        for j, (x, have) in enumerate(zip(inputs, places)):
            want = None if j in entry.host_in else target
            if have != want:
                inputs[j] = devices.transfer(x, have, want)
    try:
        with np.errstate(all="ignore"):     # NaN/Inf follow IEEE rules, silently
            return list(compute(entry.kernel, entry.construction, inputs, device))
    except Exception as exc:
        raise _error(exc, op_def.name, name, device.name, inputs) from error_cause(exc)
