"""Gradients of the spatial rearrangement and mirror padding ops (TF's array_grad.py): each
rearrangement's gradient is its inverse, MirrorPad's is MirrorPadGrad and back. (PadV2's
gradient is Pad's, in rules/array.py.)"""

import numpy as np

from graphops.api import raw_ops
from graphops.autodiff.gradients import RegisterGradient
from graphops.autodiff.rules.util import const
from graphops.registry import dtypes


@RegisterGradient("SpaceToBatchND")
def _space_to_batch_nd_grad(op, grad):
    return [raw_ops.BatchToSpaceND(input=grad, block_shape=op.inputs[1], crops=op.inputs[2]),
            None, None]


@RegisterGradient("BatchToSpaceND")
def _batch_to_space_nd_grad(op, grad):
    return [raw_ops.SpaceToBatchND(input=grad, block_shape=op.inputs[1], paddings=op.inputs[2]),
            None, None]


def _square_block(op):
    """TF's array_ops.space_to_batch / batch_to_space build the ND op with an int64
    [block_size, block_size] block_shape."""
    size = op.get_attr("block_size")
    return const(np.array([size, size]), dtypes.int64)


@RegisterGradient("SpaceToBatch")
def _space_to_batch_grad(op, grad):
    return [raw_ops.BatchToSpaceND(input=grad, block_shape=_square_block(op),
                                   crops=op.inputs[1]), None]


@RegisterGradient("BatchToSpace")
def _batch_to_space_grad(op, grad):
    return [raw_ops.SpaceToBatchND(input=grad, block_shape=_square_block(op),
                                   paddings=op.inputs[1]), None]


def _depth_attrs(op, name):
    data_format = op.get_attr("data_format")
    if data_format == "NCHW_VECT_C":
        raise ValueError(f"Cannot compute {name} gradient with NCHW_VECT_C. NCHW_VECT_C "
                         "requires qint8 data type.")
    return {"block_size": op.get_attr("block_size"), "data_format": data_format}


@RegisterGradient("SpaceToDepth")
def _space_to_depth_grad(op, grad):
    return [raw_ops.DepthToSpace(input=grad, **_depth_attrs(op, "SpaceToDepth"))]


@RegisterGradient("DepthToSpace")
def _depth_to_space_grad(op, grad):
    return [raw_ops.SpaceToDepth(input=grad, **_depth_attrs(op, "DepthToSpace"))]


@RegisterGradient("MirrorPad")
def _mirror_pad_grad(op, grad):
    return [raw_ops.MirrorPadGrad(input=grad, paddings=op.inputs[1], mode=op.get_attr("mode")),
            None]


@RegisterGradient("MirrorPadGrad")
def _mirror_pad_grad_grad(op, grad):
    return [raw_ops.MirrorPad(input=grad, paddings=op.inputs[1], mode=op.get_attr("mode")),
            None]
