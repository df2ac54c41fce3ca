"""Bounds on allocations: sizes are checked before any buffer is made."""

import operator

import numpy as np

from graphops.registry.errors import InvalidArgumentError, ResourceExhaustedError

_INT64_MAX = 2**63 - 1
_budget = [8 * 2**30]     # bytes one output may take; set_memory_budget changes it


def set_memory_budget(num_bytes):
    """Sets the largest single allocation (bytes) a kernel may make."""
    num_bytes = operator.index(num_bytes)
    if num_bytes <= 0:
        raise ValueError(f"memory budget must be positive, got {num_bytes}")
    _budget[0] = num_bytes


def get_memory_budget():
    return _budget[0]


def checked_num_elements(shape, what="tensor"):
    """Element count of `shape`; typed errors for negative dims and int64 overflow."""
    n = 1
    for d in shape:
        d = int(d)
        if d < 0:
            raise InvalidArgumentError(f"Dimension {d} must be >= 0 in shape {list(shape)} for {what}")
        n *= d
    if n > _INT64_MAX:
        raise InvalidArgumentError(f"Shape {list(shape)} would have more than 2**63 - 1 elements")
    return n


def check_representable(shape, itemsize, what="tensor"):
    """InvalidArgumentError for an empty shape whose other dims overflow: TF allows it, but
    NumPy refuses such arrays and CuPy would make one silently (undefined)."""
    span = itemsize
    for d in shape:
        span *= int(d) or 1
    if span > _INT64_MAX:
        raise InvalidArgumentError(
            f"Shape {list(map(int, shape))} cannot be represented for {what}: its non-zero "
            "dimensions times the element size exceed 2**63 - 1 bytes")


def check_allocation(shape, dtype, what="tensor"):
    """Raises before an allocation of `shape` x `dtype` that exceeds the memory budget."""
    n = checked_num_elements(shape, what)
    itemsize = np.dtype(getattr(dtype, "np_dtype", dtype)).itemsize
    if n == 0:
        check_representable(shape, itemsize, what)
    if n * itemsize > _budget[0]:
        raise ResourceExhaustedError(
            f"OOM when allocating tensor with shape{list(map(int, shape))} and type "
            f"{np.dtype(getattr(dtype, 'np_dtype', dtype)).name} for {what}: "
            f"{n * itemsize} bytes exceed the memory budget of {_budget[0]} bytes "
            "(gp.config.set_memory_budget)")
    return n
