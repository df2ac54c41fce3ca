"""TF1's array wrappers that choose between raw ops: ``gp.pad`` (Pad, PadV2 or MirrorPad,
as ``tf.compat.v1.pad`` chooses)."""

import numpy as np

from graphops.api import raw_ops
from graphops.building.tensor import Tensor

_MIRROR_MODES = ("REFLECT", "SYMMETRIC")


def _is_plain_zero(value):
    """TF's test for Pad over PadV2: a scalar Python/NumPy value equal to zero."""
    if isinstance(value, Tensor) or hasattr(value, "__cuda_array_interface__"):
        return False
    return np.ndim(value) == 0 and value == np.zeros_like(value)


def pad(tensor, paddings, mode="CONSTANT", name=None, constant_values=0):
    """Pads `tensor` by `paddings` ([rank, 2]): with `constant_values` ("CONSTANT", a Pad
    when it is a plain zero, else a PadV2) or mirrored ("REFLECT", "SYMMETRIC"); `mode` is
    case-insensitive."""
    mode = mode.upper()
    if mode == "CONSTANT":
        if _is_plain_zero(constant_values):
            return raw_ops.Pad(input=tensor, paddings=paddings, name=name)
        return raw_ops.PadV2(input=tensor, paddings=paddings, constant_values=constant_values,
                             name=name)
    if mode in _MIRROR_MODES:
        return raw_ops.MirrorPad(input=tensor, paddings=paddings, mode=mode, name=name)
    raise ValueError('Value of argument `mode` expected to be one of "CONSTANT", "REFLECT", '
                     f'or "SYMMETRIC". Received `mode` = {mode}')
