"""CPU and GPU kernels of the spatial rearrangement ops (SpaceToBatchND / BatchToSpaceND and
the old 4-D SpaceToBatch / BatchToSpace, SpaceToDepth / DepthToSpace) and of MirrorPad /
MirrorPadGrad, written once against `ctx.xp` with TF's checks and messages.

Rearrangements are a reshape, a transpose and a reshape (plus zero padding or cropping);
mirror padding gathers reflected indices per axis and its gradient folds the borders back
with slice additions. Block shapes, paddings and crops are host memory.
"""

import math

import numpy as np

from graphops.kernels.support.kernel_util import DEVICES, padding_pairs, zero_value
from graphops.kernels.ops.math import float32_if_half
from graphops.registry import dtypes
from graphops.registry.errors import InvalidArgumentError
from graphops.registry.kernel_registry import OpKernel, register_kernel
from graphops.registry.op_defs.array import int_values
from graphops.registry.op_defs.spatial import LAYOUT
from graphops.registry.tensor_shape import shape_str

# ----------------------------------------------------------------------------- space <-> batch


def _block_args(x, block_shape, amounts, what):
    """TF's checks of block_shape and paddings/crops against the input, in TF's order:
    (block sizes, [(start, end)] per block dim) as Python ints."""
    if block_shape.ndim != 1:
        raise InvalidArgumentError(f"block_shape rank should be 1 instead of {block_shape.ndim}")
    m = block_shape.shape[0]
    if x.ndim < m + 1:
        raise InvalidArgumentError(f"input rank should be >= {m + 1} instead of {x.ndim}")
    if amounts.shape != (m, 2):
        raise InvalidArgumentError(
            f"{what} should have shape [{m}, 2] instead of {shape_str(amounts.shape)}")
    values = int_values(amounts)
    return int_values(block_shape), list(zip(values[0::2], values[1::2]))


def space_to_batch(ctx, x, blocks, paddings):
    """SpaceToBatchND's checks and result: output batch index (i_1 ... i_M) * batch + b
    holds padded positions (o_d * block_d + i_d)."""
    xp, m = ctx.xp, len(blocks)
    for i, block in enumerate(blocks):
        if block < 1:
            raise InvalidArgumentError(
                f"All values in block_shape must be positive, got value, {block} at index {i}.")
    spatial = []
    for d, (block, (start, end)) in enumerate(zip(blocks, paddings)):
        if start < 0 or end < 0:
            raise InvalidArgumentError("Paddings must be non-negative")
        padded = x.shape[d + 1] + start + end
        if padded % block:
            raise InvalidArgumentError(
                f"padded_shape[{d}]={padded} is not divisible by block_shape[{d}]={block}")
        spatial.append(padded // block)
    batch, rest = x.shape[0], list(x.shape[m + 1:])
    shape = [batch * math.prod(blocks)] + spatial + rest
    ctx.check_allocation(shape, x.dtype)
    if 0 in shape:
        return xp.empty(shape, x.dtype)
    if any(start or end for start, end in paddings):
        padded = xp.empty([batch] + [s * b for s, b in zip(spatial, blocks)] + rest, x.dtype)
        padded[...] = zero_value(ctx.output_dtype(0))
        padded[(slice(None),) + tuple(slice(start, start + n) for (start, _), n
                                      in zip(paddings, x.shape[1:m + 1]))] = x
        x = padded
    split = [batch] + [n for pair in zip(spatial, blocks) for n in pair] + rest
    perm = ([2 + 2 * d for d in range(m)] + [0] + [1 + 2 * d for d in range(m)]
            + list(range(1 + 2 * m, len(split))))
    return x.reshape(split).transpose(perm).reshape(shape)


def batch_to_space(ctx, x, blocks, crops):
    """BatchToSpaceND's checks and result, the inverse of `space_to_batch` then cropped."""
    xp, m = ctx.xp, len(blocks)
    product = math.prod(blocks)
    if product <= 0:
        raise InvalidArgumentError(f"Product of block sizes must be positive, got {product}")
    if x.shape[0] % product:
        raise InvalidArgumentError(
            f"Input batch dimension ({x.shape[0]}) is not divisible by product of block sizes "
            f"({product})")
    spatial = []
    for d, (block, (start, end)) in enumerate(zip(blocks, crops)):
        if start < 0 or end < 0:
            raise InvalidArgumentError("Crops must be non-negative")
        cropped = x.shape[d + 1] * block - start - end
        if cropped < 0:
            raise InvalidArgumentError(f"cropped_shape[{d}]={cropped} must be non-negative")
        spatial.append(cropped)
    batch, rest = x.shape[0] // product, list(x.shape[m + 1:])
    shape = [batch] + spatial + rest
    ctx.check_allocation(shape, x.dtype)
    if 0 in shape:
        return xp.empty(shape, x.dtype)
    sizes = list(x.shape[1:m + 1])
    perm = [m] + [n for d in range(m) for n in (m + 1 + d, d)] + list(range(2 * m + 1,
                                                                            m + x.ndim))
    y = x.reshape(blocks + [batch] + sizes + rest).transpose(perm)
    y = y.reshape([batch] + [n * b for n, b in zip(sizes, blocks)] + rest)
    return y[(slice(None),) + tuple(slice(start, start + n) for (start, _), n
                                    in zip(crops, spatial))]


@register_kernel("SpaceToBatchND", DEVICES, host_memory=("block_shape", "paddings"))
class SpaceToBatchNDOp(OpKernel):
    def compute(self, ctx):
        x = ctx.input(0)
        blocks, paddings = _block_args(x, ctx.input(1), ctx.input(2), "paddings")
        ctx.set_output(0, space_to_batch(ctx, x, blocks, paddings))


@register_kernel("BatchToSpaceND", DEVICES, host_memory=("block_shape", "crops"))
class BatchToSpaceNDOp(OpKernel):
    def compute(self, ctx):
        x = ctx.input(0)
        blocks, crops = _block_args(x, ctx.input(1), ctx.input(2), "crops")
        ctx.set_output(0, batch_to_space(ctx, x, blocks, crops))


class _OldSpaceBatchOp(OpKernel):
    """The 4-D ops: block_shape [block_size, block_size], then as the ND ops."""

    what, rearrange = None, None

    def __init__(self, ctx):
        super().__init__(ctx)
        self.block_size = ctx.get_attr("block_size")

    def compute(self, ctx):
        x = ctx.input(0)
        if x.ndim != 4:
            raise InvalidArgumentError(f"Input rank should be: 4instead of: {x.ndim}")
        blocks, amounts = _block_args(x, np.array([self.block_size] * 2), ctx.input(1),
                                      self.what)
        ctx.set_output(0, type(self).rearrange(ctx, x, blocks, amounts))


@register_kernel("SpaceToBatch", DEVICES, host_memory=("paddings",))
class SpaceToBatchOp(_OldSpaceBatchOp):
    what, rearrange = "paddings", staticmethod(space_to_batch)


@register_kernel("BatchToSpace", DEVICES, host_memory=("crops",))
class BatchToSpaceOp(_OldSpaceBatchOp):
    what, rearrange = "crops", staticmethod(batch_to_space)

# ----------------------------------------------------------------------------- space <-> depth
# Depth index of the block element (i, j) and channel c: (i * block + j) * channels + c, in
# NHWC and NCHW alike. NCHW_VECT_C (qint8 only in TF) finds no kernel, as on TF's CPU.


class _DepthOp(OpKernel):
    """`rank_message` is how the op words its rank check ("... 4 instead of ...")."""

    rank_message = None

    def __init__(self, ctx):
        super().__init__(ctx)
        self.block = ctx.get_attr("block_size")
        data_format = ctx.get_attr("data_format")
        self.nchw = data_format == "NCHW"
        self.layout = LAYOUT[data_format]

    def dims(self, x):
        """(n, h, w, c) of a 4-D `x` in the op's data format."""
        if x.ndim != 4:
            raise InvalidArgumentError(self.rank_message.format(x.ndim))
        return (x.shape[i] for i in self.layout)


_FORMATS = {"data_format": ["NHWC", "NCHW"]}


@register_kernel("SpaceToDepth", DEVICES, attr_constraints=_FORMATS)
class SpaceToDepthOp(_DepthOp):
    rank_message = "Input rank should be 4 instead of {}"

    def compute(self, ctx):
        x, bs = ctx.input(0), self.block
        n, h, w, c = self.dims(x)
        if w % bs or h % bs:
            raise InvalidArgumentError(
                f"Image width {w} and height {h} should be divisible by block_size: {bs}")
        if self.nchw:
            y = x.reshape(n, c, h // bs, bs, w // bs, bs).transpose(0, 3, 5, 1, 2, 4)
            ctx.set_output(0, y.reshape(n, bs * bs * c, h // bs, w // bs))
        else:
            y = x.reshape(n, h // bs, bs, w // bs, bs, c).transpose(0, 1, 3, 2, 4, 5)
            ctx.set_output(0, y.reshape(n, h // bs, w // bs, bs * bs * c))


@register_kernel("DepthToSpace", DEVICES, attr_constraints=_FORMATS)
class DepthToSpaceOp(_DepthOp):
    rank_message = "Input rank should be: 4 instead of: {}"

    def compute(self, ctx):
        x, bs = ctx.input(0), self.block
        n, h, w, c = self.dims(x)
        if c % (bs * bs):
            raise InvalidArgumentError(
                f"Input depth dimension {c} should be divisible by: {bs * bs}")
        c //= bs * bs
        if self.nchw:
            y = x.reshape(n, bs, bs, c, h, w).transpose(0, 3, 4, 1, 5, 2)
            ctx.set_output(0, y.reshape(n, c, h * bs, w * bs))
        else:
            y = x.reshape(n, h, w, bs, bs, c).transpose(0, 1, 3, 2, 4, 5)
            ctx.set_output(0, y.reshape(n, h * bs, w * bs, c))

# ----------------------------------------------------------------------------- mirror padding


class _MirrorPadKernel(OpKernel):
    """REFLECT leaves the edge out (offset 1), SYMMETRIC repeats it (offset 0)."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.offset = 1 if ctx.get_attr("mode") == "REFLECT" else 0

    def check_fits(self, before, after, n, size_name):
        """TF's check that a mirrored border fits in the `n` values it mirrors."""
        if self.offset == 0 and (before > n or after > n):
            raise InvalidArgumentError(
                f"paddings must be no greater than the {size_name}: "
                f"{before}, {after} greater than {n}")
        if self.offset == 1 and (before >= n or after >= n):
            raise InvalidArgumentError(
                f"paddings must be less than the {size_name}: "
                f"{before}, {after} not less than {n}")


@register_kernel("MirrorPad", DEVICES, host_memory=("paddings",))
class MirrorPadOp(_MirrorPadKernel):
    """A gather per padded axis: mirrored indices before, the axis, mirrored indices after."""

    def compute(self, ctx):
        x, offset = ctx.input(0), self.offset
        pads = padding_pairs(x, ctx.input(1), max_rank=5, separator=", ")
        for (before, after), n in zip(pads, x.shape):
            if before < 0 or after < 0:
                raise InvalidArgumentError(f"paddings must be non-negative: {before} {after}")
            self.check_fits(before, after, n, "dimension size")
        ctx.check_allocation([n + b + a for n, (b, a) in zip(x.shape, pads)], x.dtype)
        for axis, ((before, after), n) in enumerate(zip(pads, x.shape)):
            if before or after:
                index = np.concatenate([np.arange(before - 1 + offset, offset - 1, -1),
                                        np.arange(n),
                                        np.arange(n - 1 - offset, n - 1 - offset - after, -1)])
                x = ctx.xp.take(x, ctx.xp.asarray(index), axis=axis)
        ctx.set_output(0, x)


@register_kernel("MirrorPadGrad", DEVICES, host_memory=("paddings",),
                 type_constraints={"T": [t for t in dtypes.type_set("numbertype")
                                         if not t.is_quantized]})
class MirrorPadGradOp(_MirrorPadKernel):
    """The centre of the gradient plus its mirrored borders, added back per axis; half types
    summed in float32 and rounded once."""

    def compute(self, ctx):
        g, dtype, offset = ctx.input(0), ctx.output_dtype(0), self.offset
        pads = padding_pairs(g, ctx.input(1), max_rank=5)
        for (before, after), size in zip(pads, g.shape):
            if before < 0 or after < 0:
                raise InvalidArgumentError(f"Paddings must be non-negative: {before}, {after}")
            total = before + after
            if total >= size:
                raise InvalidArgumentError("Total paddings must be less than the input "
                                           f"dimension size: {total} was not less than {size}")
            self.check_fits(before, after, size - total, "output dimension size")
        xp, g = ctx.xp, float32_if_half(g, dtype)
        for axis, (before, after) in enumerate(pads):
            if before or after:
                g = xp.moveaxis(g, axis, 0)
                n = g.shape[0] - before - after
                folded = g[before:before + n].copy()
                if before:
                    folded[offset:offset + before] += g[before - 1::-1]
                if after:
                    folded[n - offset - after:n - offset] += g[:before + n - 1:-1]
                g = xp.moveaxis(folded, 0, axis)
        ctx.set_output(0, g.astype(dtype.np_dtype, copy=False))
