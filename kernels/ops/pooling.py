"""CPU and GPU kernels of the pooling ops, written once against ``ctx.xp``.

Each kernel validates its attrs with ``registry.pool_geometry`` (in the constructor, or in
``compute`` for the V2 ops whose ksize/strides are host-memory inputs), checks its input
shapes with TF's messages, resolves the output shape and pads, checks the memory budget,
moves channels-first data to channels-last and runs ``numerics.pooling_windows``. NCHW/NCDHW,
which TF's CPU build refuses, are computed as well; half types run in float32.
"""

import math

import numpy as np

from graphops.kernels.conv_algorithms.layout import (channels_last_shape, from_channels_last,
                                                     to_channels_last)
from graphops.kernels import compiled
from graphops.kernels.compiled import loops
from graphops.kernels.support.kernel_util import (COMPILED_FLOATS, DEVICES, computable_types,
                                                  host_copy)
from graphops.kernels.numerics import pooling_windows as pm
from graphops.registry.errors import InvalidArgumentError
from graphops.registry.kernel_registry import OpKernel, register_kernel
from graphops.registry.op_defs.array import int_values
from graphops.registry.conv_shapes import format_dims
from graphops.registry.pool_geometry import POOL_OPS, output_geometry, pool_params
from graphops.registry.tensor_shape import shape_str


def _check_shape(what, actual, expected):
    if list(actual) != list(expected):
        raise InvalidArgumentError(f"Expected {what} shape to be {shape_str(list(expected))}, "
                                   f"but got {shape_str(list(actual))}")


def _check_rank(array, rank, name):
    if array.ndim != rank:
        raise InvalidArgumentError(f"{name} must be {rank}-dimensional")


SERIAL_MAX_OUTPUTS = 1 << 16   # compiled max pools (and gradients) with fewer outputs: one thread
MAX_COMPILED_GRAD_PLANE = 1 << 31   # positions of a plane the compiled MaxPoolGrad picks in int32
# Channels from which the max and average pools run compiled: with one, a window tap's
# channel loop costs more than NumPy's strided pass per tap (x[8,112,112,1] 3x3: 4-5x
# slower); from 2 on the compiled pass is faster (max pool x[8,112,112,4] 3x3: 0.52 of the
# passes' time, x[8,56,56,2] 2x2: 0.71; average pool 0.33 and 0.82), from 8 several times
# faster on large inputs (docs/performance.md).
COMPILED_MIN_CHANNELS = 2


class _Pool(OpKernel):
    """The attrs every pooling kernel reads; ``params`` gives the validated PoolParams."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.num_spatial = POOL_OPS[self.op_type].num_spatial
        self.rank = self.num_spatial + 2
        self.data_format = ctx.get_attr("data_format") if ctx.has_attr("data_format") else "NHWC"
        self.padding = ctx.get_attr("padding")
        self.explicit = (list(ctx.get_attr("explicit_paddings"))
                         if ctx.has_attr("explicit_paddings") else [])
        self.fixed = (self.make_params(ctx.get_attr("ksize"), ctx.get_attr("strides"))
                      if ctx.has_attr("ksize") else None)

    def make_params(self, ksize, strides):
        return pool_params(self.op_type, ksize, strides, self.padding, self.data_format,
                           self.explicit)

    def params(self, ctx):
        """The PoolParams: from the attrs, or from a V2 op's last two (host) inputs."""
        if self.fixed is not None:
            return self.fixed
        n = ctx.num_inputs
        return self.make_params(int_values(host_copy(ctx.input(n - 2))),
                                int_values(host_copy(ctx.input(n - 1))))

    def geometry(self, ctx, params, input_shape, dtype, resolved=None):
        """(channels-last output shape, ksize and pads trimmed to the windows that touch the
        input; None, None when the input or output is empty); the output checked against
        the memory budget. `resolved`: ``output_geometry``'s result, when the caller has it."""
        out_shape, pads = resolved or output_geometry(params, input_shape)
        ctx.check_allocation(out_shape, dtype)
        out_cl = channels_last_shape(out_shape, params.channels_last)
        in_cl = channels_last_shape(input_shape, params.channels_last)
        if 0 in out_cl or 0 in in_cl:
            return out_cl, None, None
        ksize, pads = pm.trim_window(params.ksize, params.strides, pads, in_cl[1:-1],
                                     out_cl[1:-1])
        ctx.check_allocation(pm.padded_shape(in_cl, pads), dtype)
        return out_cl, ksize, pads

    def layout(self, params, array, xp):
        return pm.widened(to_channels_last(array, params.channels_last, xp))

    def finish(self, ctx, params, result, dtype, index=0):
        ctx.set_output(index, from_channels_last(result.astype(dtype, copy=False),
                                                 params.channels_last, ctx.xp))


class _Forward(_Pool):
    """MaxPool/AvgPool-like ops: the input checked, ``pool`` run on its channels-last form
    (zeros when the output or the input is empty)."""

    def compute(self, ctx):
        x, xp, params = ctx.input(0), ctx.xp, self.params(ctx)
        if self.num_spatial == 3:
            _check_rank(x, 5, "tensor_in")
        elif x.ndim != 4:
            raise InvalidArgumentError("tensor_in_shape must have 2 spatial dimensions. "
                                       f"{x.ndim} {0 if params.channels_last else 1}")
        out_cl, ksize, pads = self.checked_once(
            (x.shape, x.dtype, params), lambda: self.geometry(ctx, params, x.shape, x.dtype))
        if ksize is None:
            return self.finish(ctx, params, xp.zeros(out_cl, x.dtype), x.dtype)
        self.finish(ctx, params, self.pool(x, params, ksize, pads, out_cl, xp), x.dtype)


@register_kernel("MaxPool", DEVICES, type_constraints={"T": computable_types("MaxPool")})
@register_kernel("MaxPoolV2", DEVICES, type_constraints={"T": computable_types("MaxPoolV2")},
                 host_memory=("ksize", "strides"))
@register_kernel("MaxPool3D", DEVICES, type_constraints={"T": computable_types("MaxPool3D")})
class MaxPoolOp(_Forward):
    """Window maxima, NaN ignored and never below the dtype's lowest value (TF's CPU)."""

    def pool(self, x, params, ksize, pads, out_cl, xp):
        floor = pm.lowest(x.dtype)
        wide = self.layout(params, x, xp)
        if (params.depth_window == 1 and xp is np and compiled.usable()
                and wide.dtype in COMPILED_FLOATS and wide.shape[-1] >= COMPILED_MIN_CHANNELS):
            loop, wide = (("max_pool_float32", np.ascontiguousarray(wide))
                          if wide.dtype == np.float32 else ("max_pool", wide))
            return compiled_pool(loop, wide, ksize, params.strides, pads, out_cl,
                                 wide.dtype.type(floor))
        wide = pm.clamp_lowest(wide, floor, xp)
        if params.depth_window > 1:
            return pm.depth_max_pool(wide, params.depth_window, xp)
        return pm.max_pool(wide, floor, ksize, params.strides, pads, out_cl[1:-1], xp)


def compiled_pool(name, x, ksize, strides, pads, out_cl, *extra):
    """``compiled.pooling.<name>`` (max_pool or max_pool_float32, whose ``extra`` is the
    floor, or avg_pool) of channels-last ``x`` (2-D pools as 3-D of depth 1), on one thread
    below ``SERIAL_MAX_OUTPUTS`` outputs (waking the others costs more)."""
    lead = 3 - len(ksize)
    x5 = x.reshape(x.shape[:1] + (1,) * lead + x.shape[1:])
    out = np.empty(out_cl, x.dtype)
    out5 = out.reshape(out_cl[:1] + (1,) * lead + tuple(out_cl[1:]))
    getattr(loops("pooling", chunk=1, single=out.size < SERIAL_MAX_OUTPUTS), name)(
        x5, out5, *extra, *_loop_window(ksize, strides, pads, lead))
    return out


def _loop_window(ksize, strides, pads, lead=0):
    """The pooling loops' window: (ksize, strides, padding before) as tuples of ints, led by
    ``lead`` dims of a size-1 window (a 2-D pool run as 3-D)."""
    return ((1,) * lead + tuple(int(k) for k in ksize),
            (1,) * lead + tuple(int(s) for s in strides),
            (0,) * lead + tuple(int(b) for b, _ in pads))


@register_kernel("AvgPool", DEVICES, type_constraints={"T": computable_types("AvgPool")})
@register_kernel("AvgPool3D", DEVICES, type_constraints={"T": computable_types("AvgPool3D")})
class AvgPoolOp(_Forward):
    """Window means over the non-padded positions."""

    def pool(self, x, params, ksize, pads, out_cl, xp):
        wide = self.layout(params, x, xp)
        if (xp is np and compiled.usable() and wide.dtype in COMPILED_FLOATS
                and wide.shape[-1] >= COMPILED_MIN_CHANNELS):
            return compiled_pool("avg_pool", wide, ksize, params.strides, pads, out_cl)
        return pm.avg_pool(wide, ksize, params.strides, pads, out_cl[1:-1], xp)


class _WithArgmax(_Pool):
    """The argmax ops: flat indices with or without the batch (include_batch_in_index)."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.include_batch = ctx.get_attr("include_batch_in_index")


@register_kernel("MaxPoolWithArgmax", DEVICES,
                 type_constraints={"T": computable_types("MaxPoolWithArgmax")})
class MaxPoolWithArgmaxOp(_WithArgmax):
    """Window maxima by TF's argmax rule, and their flat indices."""

    def compute(self, ctx):
        x, xp, params = ctx.input(0), ctx.xp, self.fixed
        if x.ndim != 4:
            raise InvalidArgumentError("tensor_in must be 4-dimensional (2)")
        out_cl, ksize, pads = self.geometry(ctx, params, x.shape, x.dtype)
        index_type = ctx.output_dtype(1).np_dtype
        ctx.check_allocation(out_cl, index_type)
        if ksize is None:
            ctx.set_output(0, xp.zeros(out_cl, x.dtype))
            ctx.set_output(1, xp.zeros(out_cl, index_type))
            return
        y, which = pm.first_max(pm.widened(x), ksize, params.strides, pads, out_cl[1:-1], xp)
        index = pm.argmax_index(which, ksize, params.strides, pads, x.shape,
                                self.include_batch, xp)
        ctx.set_output(0, y.astype(x.dtype, copy=False))
        ctx.set_output(1, index.astype(index_type))


class _Backprop(_Pool):
    """MaxPoolGrad-like ops: inputs orig_input, orig_output, grad, checked as TF does."""

    grad_name = "out_backprop"

    def checked(self, ctx):
        """(x, y, grad, params, output_geometry's (output shape, pads))."""
        x, y, grad = ctx.input(0), ctx.input(1), ctx.input(2)
        params = self.params(ctx)
        for array, name in ((x, "tensor_in"), (y, "tensor_out"), (grad, self.grad_name)):
            _check_rank(array, self.rank, name)
        resolved = output_geometry(params, x.shape)
        _check_shape("orig_output", y.shape, resolved[0])
        return x, y, grad, params, resolved


@register_kernel("MaxPoolGrad", DEVICES, type_constraints={"T": computable_types("MaxPoolGrad")})
@register_kernel("MaxPoolGradV2", DEVICES,
                 type_constraints={"T": computable_types("MaxPoolGradV2")},
                 host_memory=("ksize", "strides"))
@register_kernel("MaxPool3DGrad", DEVICES,
                 type_constraints={"T": computable_types("MaxPool3DGrad"),
                                   "TInput": computable_types("MaxPool3DGrad", "TInput")})
class MaxPoolGradOp(_Backprop):
    """Each output's gradient routed to its window's maximum: the one TF's argmax rule picks
    (MaxPoolGrad), or every position equal to orig_output (MaxPool3DGrad, as TF's CPU)."""

    def compute(self, ctx):
        x, y, grad, params, resolved = self.checked(ctx)
        xp = ctx.xp
        _check_shape("grad", grad.shape, y.shape)
        dtype = grad.dtype
        ctx.check_allocation(x.shape, dtype)
        out_cl, ksize, pads = self.geometry(ctx, params, x.shape, dtype, resolved)
        in_cl = channels_last_shape(x.shape, params.channels_last)
        if ksize is None:
            return self.finish(ctx, params, xp.zeros(in_cl, dtype), dtype)
        wide_x, wide_grad = self.layout(params, x, xp), self.layout(params, grad, xp)
        if self.op_type == "MaxPool3DGrad":
            dx = _tied_grad(wide_x, self.layout(params, y, xp), wide_grad, ksize,
                            params.strides, pads, xp)
        elif (xp is np and compiled.usable() and wide_x.dtype in COMPILED_FLOATS
              and math.prod(in_cl[1:-1]) < MAX_COMPILED_GRAD_PLANE):
            dx = np.empty(in_cl, wide_grad.dtype)
            float32 = wide_x.dtype == wide_grad.dtype == np.float32
            loop = loops("pooling", chunk=1, single=grad.size < SERIAL_MAX_OUTPUTS)
            (loop.max_pool_grad_float32 if float32 else loop.max_pool_grad)(
                np.ascontiguousarray(wide_x),                      # (planes read flat)
                np.ascontiguousarray(wide_grad) if float32 else wide_grad, dx,
                *_loop_window(ksize, params.strides, pads))
        else:
            _, which = pm.first_max(wide_x, ksize, params.strides, pads, out_cl[1:-1], xp)
            dx = pm.routed_grad(which, wide_grad, in_cl, ksize, params.strides, pads, xp)
        self.finish(ctx, params, dx, dtype)


def _tied_grad(x, y, grad, ksize, strides, pads, xp):
    """MaxPool3DGrad's gradient (``pooling_windows.tied_grad``): on the compiled loop for
    float operands of one dtype (one pass, where NumPy makes several per window tap)."""
    if not (xp is np and compiled.usable() and x.dtype in COMPILED_FLOATS
            and x.dtype == y.dtype == grad.dtype):
        return pm.tied_grad(x, y, grad, ksize, strides, pads, xp)
    dx = np.zeros(x.shape, grad.dtype)
    loops("pooling", chunk=1, single=grad.size < SERIAL_MAX_OUTPUTS).tied_max_pool_grad(
        x, y, grad, dx, *_loop_window(ksize, strides, pads),
        x.dtype.type(pm.MAX_POOL_3D_GRAD_TOLERANCE))
    return dx


@register_kernel("MaxPoolGradGrad", DEVICES,
                 type_constraints={"T": computable_types("MaxPoolGradGrad")})
@register_kernel("MaxPoolGradGradV2", DEVICES,
                 type_constraints={"T": computable_types("MaxPoolGradGradV2")},
                 host_memory=("ksize", "strides"))
@register_kernel("MaxPool3DGradGrad", DEVICES,
                 type_constraints={"T": computable_types("MaxPool3DGradGrad")})
class MaxPoolGradGradOp(_Backprop):
    """``grad`` (shaped like orig_input) read at each window's first position equal to
    orig_output."""

    grad_name = "out_grad_backprop"

    def compute(self, ctx):
        x, y, grad, params, resolved = self.checked(ctx)
        xp = ctx.xp
        _check_shape("grad", grad.shape, x.shape)
        out_cl, ksize, pads = self.geometry(ctx, params, x.shape, grad.dtype, resolved)
        if ksize is None:
            return self.finish(ctx, params, xp.zeros(out_cl, grad.dtype), grad.dtype)
        out = pm.first_match(self.layout(params, x, xp), self.layout(params, y, xp),
                             self.layout(params, grad, xp), ksize, params.strides, pads, xp)
        self.finish(ctx, params, out, grad.dtype)


@register_kernel("AvgPoolGrad", DEVICES, type_constraints={"T": computable_types("AvgPoolGrad")},
                 host_memory=("orig_input_shape",))
@register_kernel("AvgPool3DGrad", DEVICES,
                 type_constraints={"T": computable_types("AvgPool3DGrad")},
                 host_memory=("orig_input_shape",))
class AvgPoolGradOp(_Pool):
    """Each output's gradient spread evenly over its window's non-padded positions."""

    def compute(self, ctx):
        sizes, grad, xp, params = host_copy(ctx.input(0)), ctx.input(1), ctx.xp, self.fixed
        if sizes.ndim != 1 or sizes.size != self.rank:
            what = "out_backprop" if self.num_spatial == 2 else "tensor_in"
            raise InvalidArgumentError(
                f"{what} must be 1-dimensional and {self.rank} elements")
        in_shape = int_values(sizes)
        for d in in_shape:
            if d < 0:
                raise InvalidArgumentError(f"Expected a non-negative size, got {d}")
        _check_rank(grad, self.rank, "out_backprop")
        resolved = output_geometry(params, in_shape)
        out_shape = resolved[0]
        _, feature, spatial = format_dims(params.data_format, self.rank)
        if grad.shape[feature] != in_shape[feature]:
            raise InvalidArgumentError(
                "Expected last dimension of tensor_in_shape and out_backprop to match, got "
                f"{in_shape[feature]} and {grad.shape[feature]}")
        if any(grad.shape[d] > out_shape[d] for d in spatial):
            raise InvalidArgumentError("index * stride must be less than or equal to input size")
        _check_shape("grad", grad.shape, out_shape)
        ctx.check_allocation(in_shape, grad.dtype)
        _, ksize, pads = self.geometry(ctx, params, in_shape, grad.dtype, resolved)
        in_cl = channels_last_shape(in_shape, params.channels_last)
        if ksize is None:
            return self.finish(ctx, params, xp.zeros(in_cl, grad.dtype), grad.dtype)
        dx = pm.avg_pool_grad(self.layout(params, grad, xp), in_cl, ksize, params.strides,
                              pads, xp)
        self.finish(ctx, params, dx, grad.dtype)


@register_kernel("MaxPoolGradWithArgmax", DEVICES,
                 type_constraints={"T": computable_types("MaxPoolGradWithArgmax")})
class MaxPoolGradWithArgmaxOp(_WithArgmax):
    """``grad`` summed at the flat positions ``argmax`` names."""

    def compute(self, ctx):
        x, grad, argmax, xp = ctx.input(0), ctx.input(1), ctx.input(2), ctx.xp
        if x.ndim != 4:
            raise InvalidArgumentError(
                f"tensor_in_shape must have 2 spatial dimensions. {x.ndim} 0")
        out_shape, _ = output_geometry(self.fixed, x.shape)
        _check_shape("grad", grad.shape, out_shape)
        _check_shape("argmax", argmax.shape, out_shape)
        ctx.check_allocation(x.shape, grad.dtype)
        per_batch = int(np.prod(x.shape[1:]))
        index = argmax.astype(np.int64)
        start = xp.asarray((np.arange(x.shape[0]) * per_batch).reshape(-1, 1, 1, 1))
        if not self.include_batch:
            index = index + start
        bad = host_copy((index < start) | (index >= start + per_batch)).reshape(-1)
        if bad.any():
            first = int(np.argmax(bad))
            begin = first // (grad.size // x.shape[0]) * per_batch
            raise InvalidArgumentError(
                f"Invalid output gradient index: {int(host_copy(index).reshape(-1)[first])}, "
                f"{begin}, {begin + per_batch}")
        dx = pm.grad_at_indices(pm.widened(grad), index, int(np.prod(x.shape)), xp)
        ctx.set_output(0, dx.reshape(x.shape).astype(grad.dtype, copy=False))
