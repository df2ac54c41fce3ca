"""CPU and GPU kernels of FusedBatchNorm (V1-V3), FusedBatchNormGrad (V1-V3), LRN and
LRNGrad, written once against `ctx.xp`, with TF's checks and messages.

Everything is computed in float32 (half and bfloat16 inputs widened, results rounded once).
The batch-norm kernels take the channel dim from data_format (dim 1 for NCHW/NCDHW, else the
last) for 4-D and 5-D inputs alike, as TF's kernels do, and compute every format and mode,
including those TF's CPU build refuses (FusedBatchNormGrad NCHW in inference mode).
"""

import numpy as np

from graphops.kernels.support.kernel_util import DEVICES, computable_types, float_sum
from graphops.kernels.ops.math import float32_if_half
from graphops.registry.errors import InvalidArgumentError
from graphops.registry.kernel_registry import OpKernel, register_kernel
from graphops.registry.op_defs.normalization import channel_axis
from graphops.registry.tensor_shape import shape_str

_INT_MAX = 2**31 - 1


def _check_rank_4_or_5(x):
    if x.ndim not in (4, 5):
        raise InvalidArgumentError(f"input must be 4 or 5-dimensional{shape_str(x.shape)}")


def _check_vector(v, what):
    if v.ndim != 1:
        raise InvalidArgumentError(f"{what} must be 1-dimensional{shape_str(v.shape)}")


def _check_channels(v, channels, what, prefix=""):
    if v.size != channels:
        raise InvalidArgumentError(
            f"{prefix}{what} must have the same number of elements as the channels of x, "
            f"got {v.size} and {channels}")


class _ChannelLayout:
    """Where the channels of `x` lie: per-channel vectors reshaped to broadcast against x,
    and sums over every other dim."""

    def __init__(self, x, data_format):
        self.axis = channel_axis(data_format, x.ndim)
        self.channels = x.shape[self.axis]
        self.others = tuple(d for d in range(x.ndim) if d != self.axis)
        self.count = x.size // self.channels if self.channels else 0   # values per channel
        self._shape = [1] * x.ndim
        self._shape[self.axis] = self.channels

    def widened(self, v):
        """A per-channel vector as float32, shaped to broadcast against x."""
        return v.astype(np.float32, copy=False).reshape(self._shape)

    def sum(self, xp, x):
        """Per-channel sums, accumulated in float64 (batches can be large) and given back
        as float32."""
        return float_sum(xp, x, self.others).astype(np.float32)


# ----------------------------------------------------------------------------- FusedBatchNorm

class FusedBatchNormOp(OpKernel):
    """y = (x - mean) / sqrt(variance + epsilon) * scale + offset per channel. Training uses
    the batch's mean and biased variance, outputs the running statistics (variance with
    Bessel's correction, blended with the inputs when exponential_avg_factor != 1) and
    saves the batch mean and biased variance as reserve_space_1/2. Inference passes mean
    and variance through. V3's reserve_space_3 is a scalar 0, as TF's Eigen CPU kernel gives it
    (its oneDNN kernel gives an empty [0])."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self._epsilon = ctx.get_attr("epsilon")
        self._factor = ctx.get_attr("exponential_avg_factor")
        self._training = ctx.get_attr("is_training")
        self._data_format = ctx.get_attr("data_format")
        self._has_reserve_3 = len(ctx.output_dtypes) == 6

    def _validate(self, x, scale, offset, mean, variance):
        _check_rank_4_or_5(x)
        for v, what in ((scale, "scale"), (offset, "offset"), (mean, "estimated_mean"),
                        (variance, "estimated_variance")):
            _check_vector(v, what)
        layout = _ChannelLayout(x, self._data_format)
        _check_channels(scale, layout.channels, "scale")
        _check_channels(offset, layout.channels, "offset")
        if not self._training or self._factor != 1.0:
            prefix = ("When exponential_avg_factor != 1, " if self._training
                      else "When is_training=false, ")
            _check_channels(mean, layout.channels, "mean", prefix)
            _check_channels(variance, layout.channels, "variance", prefix)
        return layout

    def compute(self, ctx):
        x, scale, offset, mean, variance = ctx.inputs
        layout = self._validate(x, scale, offset, mean, variance)
        xp, y_dtype, stat_dtype = ctx.xp, ctx.output_dtype(0), ctx.output_dtype(1).np_dtype
        if x.size == 0:
            nan = xp.full((layout.channels,), np.nan, stat_dtype)
            zeros = xp.zeros((layout.channels,), stat_dtype)
            self._set_outputs(ctx, x, nan, nan, zeros, zeros)
            return
        wide = float32_if_half(x, y_dtype)
        if self._training:
            batch_mean = layout.sum(xp, wide) / layout.count
            centered = wide - layout.widened(batch_mean)
            variance_used = layout.sum(xp, centered * centered) / layout.count
            stats = self._running_stats(layout, mean, variance, batch_mean, variance_used)
            stats += [batch_mean, variance_used]
        else:
            centered = wide - layout.widened(mean)
            variance_used = variance.astype(np.float32)
            stats = [mean, variance, mean, variance]
        inv_std = 1 / xp.sqrt(variance_used + self._epsilon)
        y = centered * layout.widened(inv_std * scale.astype(np.float32)) + layout.widened(offset)
        self._set_outputs(ctx, y.astype(y_dtype.np_dtype, copy=False),
                          *(s.astype(stat_dtype, copy=False) for s in stats))

    def _running_stats(self, layout, mean, variance, batch_mean, batch_variance):
        """The batch mean and Bessel-corrected variance, blended into the given mean and
        variance by exponential_avg_factor."""
        corrected = batch_variance * (layout.count / max(layout.count - 1, 1))
        if self._factor == 1.0:
            return [batch_mean, corrected]
        keep = 1 - self._factor
        return [keep * mean.astype(np.float32) + self._factor * batch_mean,
                keep * variance.astype(np.float32) + self._factor * corrected]

    def _set_outputs(self, ctx, y, *stats):
        ctx.set_output(0, y)
        for i, s in enumerate(stats, 1):
            ctx.set_output(i, s)
        if self._has_reserve_3:
            ctx.set_output(5, ctx.xp.zeros((), ctx.output_dtype(5).np_dtype))


class FusedBatchNormGradOp(OpKernel):
    """The gradients of FusedBatchNorm from the statistics it saved (training: batch mean and
    biased variance) or was given (inference: population mean and variance); the last two
    outputs are empty placeholders, as in TF."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self._epsilon = ctx.get_attr("epsilon")
        self._training = ctx.get_attr("is_training")
        self._data_format = ctx.get_attr("data_format")

    def _validate(self, y_backprop, x, scale, mean, variance):
        _check_rank_4_or_5(y_backprop)
        _check_rank_4_or_5(x)
        _check_vector(scale, "scale")
        _check_vector(mean, "saved mean")
        _check_vector(variance, "saved variance")
        if x.shape != y_backprop.shape:
            raise InvalidArgumentError(
                f"x and y_backprop must have same shape, but x has shape {shape_str(x.shape)} "
                f"and y_backprop has shape {shape_str(y_backprop.shape)}")
        layout = _ChannelLayout(x, self._data_format)
        _check_channels(scale, layout.channels, "scale")
        _check_channels(mean, layout.channels, "reserve_space_1")
        _check_channels(variance, layout.channels, "reserve_space_2")
        return layout

    def compute(self, ctx):
        y_backprop, x, scale, mean, variance = ctx.inputs[:5]
        layout = self._validate(y_backprop, x, scale, mean, variance)
        xp, x_dtype, stat_dtype = ctx.xp, ctx.output_dtype(0), ctx.output_dtype(1).np_dtype
        empty = xp.zeros((0,), stat_dtype)
        if x.size == 0:
            zeros = xp.zeros((layout.channels,), stat_dtype)
            for i, out in enumerate((xp.zeros(x.shape, x_dtype.np_dtype), zeros, zeros,
                                     empty, empty)):
                ctx.set_output(i, out)
            return
        dy = float32_if_half(y_backprop, x_dtype)
        centered = float32_if_half(x, x_dtype) - layout.widened(mean)
        inv_std = 1 / xp.sqrt(variance.astype(np.float32) + self._epsilon)
        offset_backprop = layout.sum(xp, dy)
        dy_centered = layout.sum(xp, dy * centered)
        scale_backprop = dy_centered * inv_std
        coefficient = layout.widened(scale.astype(np.float32) * inv_std)
        if self._training:
            dy_mean = layout.widened(offset_backprop / layout.count)
            slope = layout.widened(dy_centered / layout.count * inv_std * inv_std)
            x_backprop = coefficient * (dy - dy_mean - centered * slope)
        else:
            x_backprop = coefficient * dy
        for i, out in enumerate((x_backprop.astype(x_dtype.np_dtype, copy=False),
                                 scale_backprop.astype(stat_dtype, copy=False),
                                 offset_backprop.astype(stat_dtype, copy=False), empty, empty)):
            ctx.set_output(i, out)


def _type_constraints(op):
    attrs = ("T", "U") if op.endswith(("V2", "V3")) else ("T",)
    return {attr: computable_types(op, attr) for attr in attrs}


for _op, _base in (("FusedBatchNorm", FusedBatchNormOp), ("FusedBatchNormV2", FusedBatchNormOp),
                   ("FusedBatchNormV3", FusedBatchNormOp),
                   ("FusedBatchNormGrad", FusedBatchNormGradOp),
                   ("FusedBatchNormGradV2", FusedBatchNormGradOp),
                   ("FusedBatchNormGradV3", FusedBatchNormGradOp)):
    register_kernel(_op, DEVICES, type_constraints=_type_constraints(_op))(
        type(_op + "Op", (_base,), {}))


# ----------------------------------------------------------------------------- LRN

class _LRNBase(OpKernel):
    """The attrs of LRN and LRNGrad, and the windowed sum over the depth (last) dim."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self._radius = ctx.get_attr("depth_radius")
        if not 0 <= self._radius < _INT_MAX:
            raise InvalidArgumentError(f"depth_radius = {self._radius} larger than int max")
        self._bias = ctx.get_attr("bias")
        self._alpha = ctx.get_attr("alpha")
        self._beta = ctx.get_attr("beta")

    def _band(self, ctx, depth):
        """The 0/1 band matrix |i - j| <= r: `values @ band` is sum(values[..., max(0, d - r)
        : d + r + 1]) for every depth d, the windowed sum as TF's CPU kernel computes it."""
        ctx.check_allocation([depth, depth], np.float32)
        index = ctx.xp.arange(depth)
        return (ctx.xp.abs(index[:, None] - index[None, :]) <= self._radius).astype(np.float32)

    def _norm(self, xp, band, image):
        """bias + alpha * the windowed sum of squares."""
        return self._bias + self._alpha * xp.matmul(image * image, band)


class LRNOp(_LRNBase):
    """output = input / (bias + alpha * windowed sum of input ** 2) ** beta."""

    def compute(self, ctx):
        image, dtype = ctx.input(0), ctx.output_dtype(0)
        if image.ndim != 4:
            raise InvalidArgumentError("in must be 4-dimensional")
        if image.size == 0:
            ctx.set_output(0, image)
            return
        wide = float32_if_half(image, dtype)
        norm = self._norm(ctx.xp, self._band(ctx, image.shape[-1]), wide)
        out = wide * norm ** -np.float32(self._beta)
        ctx.set_output(0, out.astype(dtype.np_dtype, copy=False))


class LRNGradOp(_LRNBase):
    """d output_j / d input_k = [j == k] norm_j ** -beta
    - 2 alpha beta input_k output_j / norm_j for k in j's window, applied to input_grads,
    with norm recomputed from input_image and output_j taken from output_image (as TF)."""

    def compute(self, ctx):
        grads, image, output = ctx.inputs
        dtype = ctx.output_dtype(0)
        if grads.ndim != 4 or image.ndim != 4:
            raise InvalidArgumentError("inputs must be 4-dimensional")
        if output.shape != image.shape or grads.shape != image.shape:
            raise InvalidArgumentError(
                "input_grads, input_image, and out_image should have the same shape")
        if image.size == 0:
            ctx.set_output(0, ctx.xp.zeros(image.shape, dtype.np_dtype))
            return
        grads, image, output = (float32_if_half(a, dtype) for a in (grads, image, output))
        xp, band = ctx.xp, self._band(ctx, image.shape[-1])
        norm = self._norm(xp, band, image)
        spread = xp.matmul(grads * output / norm, band)
        result = grads * norm ** -np.float32(self._beta) \
            - np.float32(2 * self._alpha * self._beta) * image * spread
        ctx.set_output(0, result.astype(dtype.np_dtype, copy=False))


register_kernel("LRN", DEVICES, type_constraints={"T": computable_types("LRN")})(LRNOp)
register_kernel("LRNGrad", DEVICES, type_constraints={"T": computable_types("LRNGrad")})(
    LRNGradOp)
