"""CPU and GPU kernels of the bias ops, BiasAdd, BiasAddV1 and BiasAddGrad, written once
against `ctx.xp`."""

import numpy as np

from graphops.kernels.ops.reduction import column_sum
from graphops.kernels.support.kernel_util import DEVICES, add_bias, computable_types, float_sum
from graphops.registry.errors import InvalidArgumentError
from graphops.registry.kernel_registry import OpKernel, register_kernel
from graphops.registry.tensor_shape import shape_str


def _check_at_least_2d(value):
    if value.ndim < 2:
        raise InvalidArgumentError(f"Input tensor must be at least 2D: {shape_str(value.shape)}")


class _BiasKernel(OpKernel):
    """The channel dim is the last one (NHWC; BiasAddV1 has no data_format) or dim 1 (NCHW)."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self._channels_first = (ctx.has_attr("data_format")
                                and ctx.get_attr("data_format") == "NCHW")


@register_kernel("BiasAdd", DEVICES, type_constraints={"T": computable_types("BiasAdd")})
@register_kernel("BiasAddV1", DEVICES, type_constraints={"T": computable_types("BiasAddV1")})
class BiasAddOp(_BiasKernel):
    """value + bias along the channel dim."""

    chain_stage = elementwise = "bias_add"

    def __init__(self, ctx):
        super().__init__(ctx)
        if self._channels_first:         # fused chains and clusters run along the last dim
            self.chain_stage = self.elementwise = None

    def compute(self, ctx):
        value, bias = ctx.input(0), ctx.input(1)
        ctx.set_output(0, add_bias(ctx.xp, value, bias, self._channel(value, bias)))

    def prepare(self, ctx):
        """`add_bias` along the checked channel dim."""
        value, bias = ctx.inputs
        channel = self._channel(value, bias)
        return None if ctx.xp is not np else lambda inputs: [add_bias(np, *inputs, channel)]

    def _channel(self, value, bias):
        """The channel dim of `value`, once the shapes are checked as TF checks them."""
        _check_at_least_2d(value)
        if bias.ndim != 1:
            raise InvalidArgumentError(f"Biases must be 1D: {shape_str(bias.shape)}")
        channel = 1 if self._channels_first else value.ndim - 1
        if bias.shape[0] != value.shape[channel]:
            raise InvalidArgumentError(
                "Must provide as many biases as the last dimension of the input tensor: "
                f"{shape_str(bias.shape)} vs. {shape_str(value.shape)}")
        return channel


@register_kernel("BiasAddGrad", DEVICES,
                 type_constraints={"T": computable_types("BiasAddGrad")})
class BiasAddGradOp(_BiasKernel):
    """out_backprop summed over all but the channel dim (integers wrap, as TF's); channels
    last on the CPU by `column_sum` where it applies (the same sums as NumPy's)."""

    def compute(self, ctx):
        grad, dtype = ctx.input(0), ctx.output_dtype(0)
        _check_at_least_2d(grad)
        channel = 1 if self._channels_first else grad.ndim - 1
        axes = tuple(d for d in range(grad.ndim) if d != channel)
        total = column_sum(grad, axes) if ctx.xp is np else None
        if total is None:
            total = float_sum(ctx.xp, grad, axes)
        ctx.set_output(0, total.astype(dtype.np_dtype, copy=False))
