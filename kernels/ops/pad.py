"""CPU and GPU kernels of Pad and PadV2, written once against `ctx.xp`, with TF's checks. The
paddings are host memory, as in TF's GPU registration.

A CPU Pad of a float image batch by zeros around its spatial dims only (a Keras
``ZeroPadding2D`` before a strided conv) takes the convs' compiled padding loop: one
parallel pass that writes each output row once, where NumPy fills the whole output and then
copies the input over it, on one thread.
"""

import numpy as np

from graphops.kernels.conv_algorithms.layout import pad_spatial
from graphops.kernels.support.kernel_util import DEVICES, padding_pairs, zero_value
from graphops.registry.errors import InvalidArgumentError
from graphops.registry.kernel_registry import OpKernel, register_kernel
from graphops.registry.tensor_shape import shape_str


@register_kernel("Pad", DEVICES, host_memory=("paddings",))
@register_kernel("PadV2", DEVICES, host_memory=("paddings",))
class PadOp(OpKernel):
    """Zeros (empty strings), or PadV2's scalar `constant_values`, around the input; the input
    itself when nothing is added."""

    def compute(self, ctx):
        x = ctx.input(0)
        pads = padding_pairs(x, ctx.input(1), max_rank=8)
        fill = zero_value(ctx.output_dtype(0))
        if ctx.num_inputs == 3:
            fill = ctx.input(2)
            if fill.ndim != 0:
                raise InvalidArgumentError(
                    f"constant_values must be a scalar. Found: {shape_str(fill.shape)}")
        for before, after in pads:
            if before < 0 or after < 0:
                raise InvalidArgumentError(f"Paddings must be non-negative: {before} {after}")
        if not any(before or after for before, after in pads):
            ctx.set_output(0, x)
            return
        shape = [d + b + a for d, (b, a) in zip(x.shape, pads)]
        ctx.check_allocation(shape, x.dtype)
        if ctx.num_inputs == 2 and _spatial_zeros(ctx.xp, x, pads):
            ctx.set_output(0, pad_spatial(x, pads[1:-1]))
            return
        out = ctx.xp.empty(shape, ctx.output_dtype(0).np_dtype)
        out[...] = fill
        out[tuple(slice(b, b + d) for d, (b, _) in zip(x.shape, pads))] = x
        ctx.set_output(0, out)


def _spatial_zeros(xp, x, pads):
    """Whether zero padding of ``x`` by ``pads`` is ``layout.pad_spatial``'s: a float32 or
    float64 NumPy array of 1-3 spatial dims between batch and channels, neither of those
    two padded (``pad_spatial`` itself decides between its compiled loop and NumPy)."""
    return (xp is np and 3 <= x.ndim <= 5 and x.dtype in (np.float32, np.float64)
            and not any(pads[0]) and not any(pads[-1]))
