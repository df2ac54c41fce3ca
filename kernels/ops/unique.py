"""Unique's kernel (CPU and GPU): a sort-based unique, reordered by first occurrence."""

from graphops.kernels.support.kernel_util import DEVICES
from graphops.registry.errors import InvalidArgumentError
from graphops.registry.kernel_registry import OpKernel, register_kernel


@register_kernel("Unique", DEVICES)
class UniqueOp(OpKernel):
    def compute(self, ctx):
        x, xp = ctx.input(0), ctx.xp
        if x.ndim != 1:
            raise InvalidArgumentError("unique expects a 1D vector.")
        values, first, inverse = xp.unique(x, return_index=True, return_inverse=True)
        order = xp.argsort(first)
        position = xp.empty_like(order)
        position[order] = xp.arange(order.size)
        index_type = ctx.output_dtype(1).np_dtype
        ctx.set_output(0, values[order])
        ctx.set_output(1, position[inverse.reshape(-1)].astype(index_type))
