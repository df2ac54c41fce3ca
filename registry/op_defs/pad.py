"""Pad and PadV2 (TF's array_ops.cc): zeros (or a constant) around a tensor; the gradient of
Slice uses Pad. `pad_shape` also serves MirrorPad."""

from graphops.registry.errors import InvalidArgumentError
from graphops.registry.op_registry import register_op
from graphops.registry.shape_inference import with_value
from graphops.registry.tensor_shape import TensorShape, unknown_shape


def pad_shape(c):
    """TF's PadShapeFn: paddings is [rank, 2]; known paddings give the exact shape."""
    paddings = c.with_rank(c.input(1), 2)
    with_value(paddings[1], 2)
    src, rows = c.input(0), paddings[0]
    if rows is not None:
        src = c.with_rank(src, rows)
    elif src.rank is not None:
        rows = src.rank
    value = c.input_value(1)
    if value is None:
        c.set_output(0, unknown_shape(rows) if rows is not None else unknown_shape())
        return
    src = c.with_rank(src, value.shape[0])
    dims = []
    for d, (before, after) in zip(src.dims, value.tolist()):
        if before < 0 or after < 0:
            raise InvalidArgumentError("Paddings must be non-negative")
        dims.append(None if d is None else d + before + after)
    c.set_output(0, TensorShape(dims))


register_op("Pad") \
    .input("input: T") \
    .input("paddings: Tpaddings") \
    .output("output: T") \
    .attr("T: type") \
    .attr("Tpaddings: {int32, int64} = DT_INT32") \
    .set_shape_fn(pad_shape) \
    .doc("Pads a tensor with zeros: paddings[d] = [before, after] for dimension d.")

register_op("PadV2") \
    .input("input: T") \
    .input("paddings: Tpaddings") \
    .input("constant_values: T") \
    .output("output: T") \
    .attr("T: type") \
    .attr("Tpaddings: {int32, int64} = DT_INT32") \
    .set_shape_fn(pad_shape) \
    .doc("Pads a tensor with the scalar `constant_values`: paddings[d] = [before, after].")
