"""CPU and GPU kernels of Relu, BiasAdd and Softmax, written once against `ctx.xp`."""

import numpy as np

from kernels.kernel_util import DEVICES, computable_types
from kernels.math_kernels import float32_if_half
from registry.errors import InvalidArgumentError
from registry.kernel_registry import OpKernel, register_kernel
from registry.tensor_shape import shape_str


@register_kernel("Relu", DEVICES, type_constraints={"T": computable_types("Relu")})
class ReluOp(OpKernel):
    def compute(self, ctx):
        x = ctx.input(0)
        ctx.set_output(0, ctx.xp.maximum(x, x.dtype.type(0)))


@register_kernel("BiasAdd", DEVICES, type_constraints={"T": computable_types("BiasAdd")})
class BiasAddOp(OpKernel):
    """value + bias along the channel dim: the last one (NHWC) or dim 1 (NCHW)."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self._channels_first = ctx.get_attr("data_format") == "NCHW"

    def compute(self, ctx):
        value, bias = ctx.input(0), ctx.input(1)
        if value.ndim < 2:
            raise InvalidArgumentError(
                f"Input tensor must be at least 2D: {shape_str(value.shape)}")
        if bias.ndim != 1:
            raise InvalidArgumentError(f"Biases must be 1D: {shape_str(bias.shape)}")
        channel = 1 if self._channels_first else value.ndim - 1
        if bias.shape[0] != value.shape[channel]:
            raise InvalidArgumentError(
                "Must provide as many biases as the last dimension of the input tensor: "
                f"{shape_str(bias.shape)} vs. {shape_str(value.shape)}")
        bias = bias.reshape(bias.shape + (1,) * (value.ndim - 1 - channel))
        with np.errstate(all="ignore"):
            ctx.set_output(0, value + bias)


@register_kernel("Softmax", DEVICES, type_constraints={"T": computable_types("Softmax")})
class SoftmaxOp(OpKernel):
    """exp(x - max) / sum over the last dim; half types in float32, rounded once."""

    def compute(self, ctx):
        logits, dtype, xp = ctx.input(0), ctx.output_dtype(0), ctx.xp
        if logits.ndim < 1:
            raise InvalidArgumentError(
                f"logits must have >= 1 dimension, got {shape_str(logits.shape)}")
        if logits.size == 0:
            ctx.set_output(0, logits)
            return
        x = float32_if_half(logits, dtype)
        with np.errstate(all="ignore"):
            e = xp.exp(x - xp.max(x, axis=-1, keepdims=True))
            y = e / xp.sum(e, axis=-1, keepdims=True)
        ctx.set_output(0, y.astype(dtype.np_dtype, copy=False))
