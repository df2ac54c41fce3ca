"""Spatial rearrangement and mirror padding (TF's array_ops.cc): SpaceToBatchND /
BatchToSpaceND (and the old 4-D SpaceToBatch / BatchToSpace), SpaceToDepth / DepthToSpace,
MirrorPad / MirrorPadGrad, with TF's shape functions and messages."""

import numpy as np

from graphops.registry.errors import InvalidArgumentError
from graphops.registry.op_defs.array import int_values
from graphops.registry.op_defs.pad import pad_shape
from graphops.registry.op_registry import register_op
from graphops.registry.shape_inference import divide_evenly
from graphops.registry.tensor_shape import TensorShape, unknown_shape

# ----------------------------------------------------------------------------- space <-> batch


def _block_dims(block_shape):
    """M, the number of block dims: block_shape must be a vector of known size."""
    if block_shape.rank != 1:
        raise InvalidArgumentError("block_shape must have rank 1.")
    if block_shape.dims[0] is None:
        raise InvalidArgumentError("block_shape must have known size.")
    return block_shape.dims[0]


def _space_batch_shape(c, input_shape, block_shape, block_values, pads_shape, pads_values,
                       to_batch):
    """TF's SpaceToBatchShapeHelper (`to_batch`) and BatchToSpaceShapeHelper: the batch dim
    grows (shrinks) by the block product, each block dim is padded and divided (multiplied
    and cropped); the remaining dims pass through."""
    m = _block_dims(block_shape)
    input_shape = c.with_rank_at_least(input_shape, m + 1)
    c.merge(pads_shape, TensorShape([m, 2]))
    batch = input_shape.dims[0] if input_shape.rank is not None else None
    blocks = None
    if block_values is not None:
        blocks = int_values(block_values)
        for block in blocks:
            if block < 1:
                raise InvalidArgumentError("block_shape must be positive")
            if batch is not None:
                batch = batch * block if to_batch else divide_evenly(batch, block)
    elif m > 0:
        batch = None
    dims = [batch] + [None] * m
    if pads_values is not None:
        amounts = int_values(pads_values)
        for d in range(m):
            start, end = amounts[2 * d], amounts[2 * d + 1]
            if start < 0 or end < 0:
                what = "paddings" if to_batch else "crops"
                raise InvalidArgumentError(f"{what} cannot be negative")
            if blocks is None:
                continue
            size = input_shape.dims[d + 1] if input_shape.rank is not None else None
            if size is None:
                continue
            if to_batch:
                dims[d + 1] = divide_evenly(size + start + end, blocks[d])
            else:
                if size * blocks[d] < start + end:
                    raise InvalidArgumentError(
                        "Negative dimension size caused by subtracting "
                        f"{start + end} from {size * blocks[d]}")
                dims[d + 1] = size * blocks[d] - start - end
    if input_shape.rank is None:
        c.set_output(0, unknown_shape())
        return
    c.set_output(0, TensorShape(dims + list(input_shape.dims[m + 1:])))


def _space_to_batch_nd_shape(c):
    _space_batch_shape(c, c.input(0), c.input(1), c.input_value(1), c.input(2),
                       c.input_value(2), to_batch=True)


def _batch_to_space_nd_shape(c):
    _space_batch_shape(c, c.input(0), c.input(1), c.input_value(1), c.input(2),
                       c.input_value(2), to_batch=False)


def _old_space_batch_shape(to_batch):
    """The 4-D ops: block_shape is [block_size, block_size]."""
    def shape_fn(c):
        block = c.get_attr("block_size")
        _space_batch_shape(c, c.with_rank(c.input(0), 4), TensorShape([2]),
                           np.array([block, block]), c.input(1), c.input_value(1), to_batch)
    return shape_fn


register_op("SpaceToBatchND") \
    .input("input: T") \
    .input("block_shape: Tblock_shape") \
    .input("paddings: Tpaddings") \
    .output("output: T") \
    .attr("T: type") \
    .attr("Tblock_shape: {int32, int64} = DT_INT32") \
    .attr("Tpaddings: {int32, int64} = DT_INT32") \
    .set_shape_fn(_space_to_batch_nd_shape) \
    .doc("Zero-pads the M block dims, then moves blocks of block_shape into the batch dim.")

register_op("BatchToSpaceND") \
    .input("input: T") \
    .input("block_shape: Tblock_shape") \
    .input("crops: Tcrops") \
    .output("output: T") \
    .attr("T: type") \
    .attr("Tblock_shape: {int32, int64} = DT_INT32") \
    .attr("Tcrops: {int32, int64} = DT_INT32") \
    .set_shape_fn(_batch_to_space_nd_shape) \
    .doc("Moves blocks of the batch dim into the M block dims, then crops them.")

register_op("SpaceToBatch") \
    .input("input: T") \
    .input("paddings: Tpaddings") \
    .output("output: T") \
    .attr("T: type") \
    .attr("Tpaddings: {int32, int64} = DT_INT32") \
    .attr("block_size: int >= 2") \
    .set_shape_fn(_old_space_batch_shape(to_batch=True)) \
    .doc("SpaceToBatchND of a 4-D input with block_shape [block_size, block_size].")

register_op("BatchToSpace") \
    .input("input: T") \
    .input("crops: Tidx") \
    .output("output: T") \
    .attr("T: type") \
    .attr("block_size: int >= 2") \
    .attr("Tidx: {int32, int64} = DT_INT32") \
    .set_shape_fn(_old_space_batch_shape(to_batch=False)) \
    .doc("BatchToSpaceND of a 4-D input with block_shape [block_size, block_size].")

# ----------------------------------------------------------------------------- space <-> depth

DEPTH_FORMATS = "data_format: {'NHWC', 'NCHW', 'NCHW_VECT_C'} = 'NHWC'"
# (batch, height, width, channels) positions and rank of each data format.
LAYOUT = {"NHWC": (0, 1, 2, 3), "NCHW": (0, 2, 3, 1), "NCHW_VECT_C": (0, 2, 3, 1)}


def _depth_shape(to_depth):
    """TF's SpaceToDepth / DepthToSpace shape functions (NCHW_VECT_C has a trailing 4)."""
    def shape_fn(c):
        data_format, block = c.get_attr("data_format"), c.get_attr("block_size")
        vect = data_format == "NCHW_VECT_C"
        x = c.with_rank(c.input(0), 5 if vect else 4)
        if x.rank is None:
            x = unknown_shape(5 if vect else 4)
        n, h, w, ch = (x.dims[i] for i in LAYOUT[data_format])
        if to_depth:
            h = None if h is None else divide_evenly(h, block)
            w = None if w is None else divide_evenly(w, block)
            ch = None if ch is None else ch * block * block
        else:
            h = None if h is None else h * block
            w = None if w is None else w * block
            ch = None if ch is None else divide_evenly(ch, block * block)
        dims = [n, h, w, ch] if data_format == "NHWC" else [n, ch, h, w]
        c.set_output(0, TensorShape(dims + ([4] if vect else [])))
    return shape_fn


register_op("SpaceToDepth") \
    .input("input: T") \
    .output("output: T") \
    .attr("T: type") \
    .attr("block_size: int >= 2") \
    .attr(DEPTH_FORMATS) \
    .set_shape_fn(_depth_shape(to_depth=True)) \
    .doc("Moves block_size x block_size spatial blocks into the depth dimension.")

register_op("DepthToSpace") \
    .input("input: T") \
    .output("output: T") \
    .attr("T: type") \
    .attr("block_size: int >= 2") \
    .attr(DEPTH_FORMATS) \
    .set_shape_fn(_depth_shape(to_depth=False)) \
    .doc("Moves depth into block_size x block_size spatial blocks.")

# ----------------------------------------------------------------------------- mirror padding


def _mirror_pad_grad_shape(c):
    """TF's MirrorPadGrad shape function: the input less the paddings."""
    paddings = c.with_rank(c.input(1), 2)
    rank = paddings.dims[0]
    if rank is None:
        c.set_output(0, unknown_shape())
        return
    x = c.with_rank(c.input(0), rank)
    c.merge(paddings, TensorShape([rank, 2]))
    value = c.input_value(1)
    if value is None:
        c.set_output(0, unknown_shape(rank))
        return
    dims = x.dims if x.rank is not None else [None] * rank
    out = []
    for d, (before, after) in zip(dims, value.reshape(rank, 2).tolist()):
        if before < 0 or after < 0:
            raise InvalidArgumentError("Paddings must be non-negative")
        if d is not None and d < before + after:
            raise InvalidArgumentError(
                f"Negative dimension size caused by subtracting {before + after} from {d}")
        out.append(None if d is None else d - before - after)
    c.set_output(0, TensorShape(out))


MIRROR_MODE = "mode: {'REFLECT', 'SYMMETRIC'}"

for _name, _shape_fn, _doc in (
        ("MirrorPad", pad_shape,
         "Pads a tensor with mirrored copies of its borders (REFLECT leaves the edge out)."),
        ("MirrorPadGrad", _mirror_pad_grad_shape,
         "The gradient of MirrorPad: the mirrored borders folded back onto the input.")):
    register_op(_name) \
        .input("input: T") \
        .input("paddings: Tpaddings") \
        .output("output: T") \
        .attr("T: type") \
        .attr("Tpaddings: {int32, int64} = DT_INT32") \
        .attr(MIRROR_MODE) \
        .set_shape_fn(_shape_fn) \
        .doc(_doc)
