"""What the everyday-op kernel modules share: the device types they register on, the
types NumPy can compute for an op, and host copies of arrays."""

import numpy as np

from registry.op_registry import get_op_def

DEVICES = ("CPU", "GPU")     # the device types the everyday-op kernels are registered on


def computable_types(op, attr="T"):
    """The op's allowed types for `attr` that NumPy can compute (no quantized types);
    None when the OpDef allows any type."""
    allowed = get_op_def(op).attr_def(attr).allowed_values
    return None if allowed is None else [t for t in allowed if not t.is_quantized]


def host_copy(array):
    """`array` in host memory: a NumPy array as it is, a device array copied (`.get()`)."""
    return array if isinstance(array, np.ndarray) else array.get()
