"""Kernels of the 13 convolution ops and the generic N-d ``Conv``, on CPU and GPU: validation
(TF's messages), then the math.

Constructors check attrs as TF's kernels do (``registry.conv_shapes.conv_params``);
``compute`` reads the sizes vectors (host memory on every device), runs the shape checks
of ``registry.conv_shapes``, bounds every buffer by the memory budget, then calls
``conv_algorithms.dense`` or ``conv_algorithms.depthwise`` with the device's array module
(``ctx.xp``: NumPy on CPU, CuPy on GPU; the GPU kernels take every T but bfloat16).
Unlike TF's CPU build these kernels also compute channels-first layouts, dilations in
every op, stride with dilation, unequal depthwise strides and grouped dense convolutions
(gradients included, except Conv3D's, which TF forbids with a channel check). ``Conv``
folds its batch dims and computes as the forward op of its spatial rank
(``registry.conv_generic``).
"""

import math

import numpy as np

from graphops.kernels.conv_algorithms.dense import (conv_backprop_filter, conv_backprop_input,
                                                    conv_forward, serial_forward)
from graphops.kernels.conv_algorithms.depthwise import (depthwise_backprop_filter,
                                                        depthwise_backprop_input,
                                                        depthwise_forward)
from graphops.kernels.conv_algorithms.direct import forward_layout
from graphops.kernels.conv_algorithms.gemm import few_positions, gemm_forward
from graphops.kernels.conv_algorithms.layout import compute_dtype
from graphops.kernels.conv_algorithms.routes import direct_forward, kernel_route
from graphops.kernels.support.kernel_util import channel_chain, nonnegative_dims
from graphops.registry import memory
from graphops.registry.conv_family import CONV_OPS, GENERIC_CONV
from graphops.registry.conv_generic import generic_conv
from graphops.registry.conv_shapes import (backprop_geometry, conv_params, format_dims,
                                           forward_geometry, make_shape)
from graphops.registry.errors import InvalidArgumentError, ResourceExhaustedError
from graphops.registry.kernel_registry import OpKernel, register_kernel
from graphops.registry.op_registry import get_op_def
from graphops.registry.tensor_shape import shape_str

# ----------------------------------------------------------------------------- sizes vectors


def _sizes_vector(sizes, not_vector_message):
    """The int values of a sizes input, which must be an integer vector."""
    sizes = np.asarray(sizes)
    if sizes.ndim != 1:
        raise InvalidArgumentError(not_vector_message)
    if sizes.dtype.kind not in "iu":
        raise InvalidArgumentError(f"sizes vector must be int32 or int64, got {sizes.dtype.name}")
    return [int(v) for v in sizes]


def _checked_each(values, name):
    """The depthwise gradients' per-element check of a sizes vector."""
    for i, v in enumerate(values):
        if v < 0:
            raise InvalidArgumentError(f"Dimension {i} of {name} must be >= 0")
    return values


def _conv2d_input_sizes(sizes, filter_shape, out_backprop_shape, data_format):
    """TF's Conv2DBackpropComputeInputShape: input_sizes holds 4 values or just [H, W]."""
    values = _sizes_vector(
        sizes, f"Conv2DBackpropInput: input_sizes input must be 1-dim, not {np.ndim(sizes)}")
    if len(values) == 4:
        return nonnegative_dims(values)
    if len(values) == 2:
        if len(filter_shape) != 4:
            raise InvalidArgumentError("Conv2DCustomBackpropInput: filter must be 4-dimensional")
        height, width = values
        if height < 0 or width < 0:
            raise InvalidArgumentError(
                "Conv2DBackpropInput: elements of input_sizes must be >= 0, not "
                f"{height}x{width}")
        return make_shape(out_backprop_shape[0], values, filter_shape[2], data_format)
    raise InvalidArgumentError(
        "Conv2DBackpropInput requires input_sizes to contain 4 values or 2 values, but got: "
        f"{len(values)}")


# ----------------------------------------------------------------------------- base classes


def _finished(y, epilogue):
    """``y`` through a fused ``epilogue`` (``kernel_util.channel_chain``), if any."""
    return y if epilogue is None else channel_chain(y, *epilogue, in_place=True)


def _split(xp, a, groups, axis):
    return xp.split(a, groups, axis=axis) if groups > 1 else [a]


CHECKED_SHAPES = 16    # shape signatures a conv kernel keeps its checks' answers for


class _ConvKernel(OpKernel):
    """Attr parsing shared by all conv kernels, plus the buffer-size guard.

    A node's shape checks and buffer bounds depend on its attrs, its operands' shapes and
    dtype and the memory budget alone: their answers are kept per such signature
    (``_checked``; a failed check keeps nothing and raises again), so a run of a shape seen
    before goes straight to the math (a forward conv's window keeps the path its kernel
    calls itself with its arguments, and ``compute`` calls it from that one lookup: each
    layer between costs microseconds, the time of a small conv's arithmetic). The
    table is the one thing ``compute`` writes on the kernel: entries are added whole, and
    two threads adding the same one agree."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.info = CONV_OPS[self.op_type]
        self.params = conv_params(self.op_type, ctx.get_attr)
        self._checks = {}
        if not self.params.channels_last:   # the runtime's declarations hold channels last
            self.channels_last_format, self.chain_epilogue = None, False

    def _checked(self, key, check):
        """``check()``, once per ``key`` (up to CHECKED_SHAPES of them)."""
        answer = self._checks.get(key)
        if answer is None:
            answer = check()
            if len(self._checks) < CHECKED_SHAPES:
                self._checks[key] = answer
        return answer

    @property
    def _channel_axis(self):
        return -1 if self.params.channels_last else 1

    @staticmethod
    def _window(ctx, p, result_shape, dtype, input_shape, kernel, out_spatial, pads):
        """Bounds the buffers the math builds; returns its (strides, dilations, pads, layout).

        The dilation of a length-1 kernel dim changes nothing, nor does the stride over a
        length-1 output dim beyond the padded input's length: both are passed reduced, so
        an absurd value there is harmless.
        """
        ctx.check_allocation(result_shape, dtype)
        _, feature, spatial = format_dims(p.data_format, len(input_shape))
        padded_sizes = [input_shape[d] + b + a for d, (b, a) in zip(spatial, pads)]
        dilations = tuple(1 if k <= 1 else d for k, d in zip(kernel, p.dilations))
        strides = tuple(s if o > 1 else min(s, max(1, n - (k - 1) * d))
                        for o, s, n, k, d in zip(out_spatial, p.strides, padded_sizes, kernel,
                                                 dilations))
        padded = [input_shape[0], input_shape[feature]]
        padded[1:1] = [max(n, (o - 1) * s + (k - 1) * d + 1) for n, o, s, k, d
                       in zip(padded_sizes, out_spatial, strides, kernel, dilations)]
        work = compute_dtype(dtype)
        num_bytes = math.prod(padded) * work.itemsize
        if num_bytes > memory.get_memory_budget():
            raise ResourceExhaustedError(
                f"OOM when allocating the zero-padded input buffer of shape {padded} and type "
                f"{work.name} for node {ctx.node_name}: {num_bytes} bytes exceed the memory "
                f"budget of {memory.get_memory_budget()} bytes")
        return strides, dilations, pads, p.channels_last

    @staticmethod
    def _spatial(params, shape):
        return [shape[d] for d in format_dims(params.data_format, len(shape))[2]]

    def _zeros(self, ctx, shape, dtype):
        ctx.check_allocation(shape, dtype)
        ctx.set_output(0, ctx.xp.zeros(shape, dtype))


class _ForwardKernel(_ConvKernel):
    """Conv2D, Conv3D, DepthwiseConv2dNative: (input, filter) -> output."""

    def compute(self, ctx):
        x, w = ctx.input(0), ctx.input(1)
        checked = self._checks.get(_window_key(self.params, x, w))
        if checked is not None and checked[1] is not None:   # on a path of its own
            return ctx.set_output(0, _on_path(ctx.xp, x, w, *checked[1], ctx.epilogue))
        geo = self._checked(("geometry", x.shape, w.shape), lambda: forward_geometry(
            self.op_type, self.params, x.shape, w.shape))
        ctx.set_output(0, self.forward(ctx, x, w, self.params, geo, self.info.depthwise,
                                       ctx.epilogue))

    def forward(self, ctx, x, w, params, geo, depthwise=False, epilogue=None):
        """The forward conv of checked operands, as an array of ``geo``'s output shape;
        ``epilogue``: the stages and activation a plan fused after it (``conv_forward``),
        applied by the conv loops where they can, else after."""
        out_shape = tuple(geo.output_shape)
        if x.size == 0 or w.size == 0 or 0 in out_shape:
            ctx.check_allocation(out_shape, x.dtype)
            return _finished(ctx.xp.zeros(out_shape, x.dtype), epilogue)
        window, path = self._checked(
            _window_key(params, x, w),
            lambda: self._forward_window(ctx, params, out_shape, x, w, geo, depthwise))
        if path is not None:
            return _on_path(ctx.xp, x, w, *path, epilogue)
        xp, axis = ctx.xp, -1 if params.channels_last else 1
        if geo.groups == 1:
            return conv_forward(x, w, *window, xp=xp, epilogue=epilogue)
        parts = [conv_forward(xg, wg, *window, xp=xp) for xg, wg
                 in zip(_split(xp, x, geo.groups, axis), _split(xp, w, geo.groups, -1))]
        return _finished(xp.concatenate(parts, axis=axis), epilogue)

    def _forward_window(self, ctx, params, out_shape, x, w, geo, depthwise):
        """The checked window (``_window``), and the path the kernel calls itself, without
        the general path's setup, as ``(path, arguments)`` for ``_on_path``: the depthwise
        loops, or for a channels-last conv the route ``routes.kernel_route`` decides (one
        GEMM, the few-positions patch matrix, the direct loops with the shape's
        ``dense.serial_forward``); None: ``conv_forward``."""
        out_spatial = tuple(self._spatial(params, out_shape))
        window = self._window(ctx, params, out_shape, x.dtype, x.shape, w.shape[:-2],
                              out_spatial, geo.pads)
        if depthwise:
            return window, ("depthwise", window)
        if geo.groups != 1 or not window[3] or ctx.xp is not np:
            return window, None
        route = kernel_route(x.shape, w.shape, *window[:3], out_spatial, x.dtype)
        if route == "direct":
            return window, ("direct", (*window[:3], out_spatial,
                                       serial_forward(np, x, w, window[0]),
                                       forward_layout(x, w, *window[:3], out_spatial)))
        if route == "few":
            return window, ("few", (*window[:3], out_spatial))
        if route == "pointwise":
            return window, ("pointwise", ())
        return window, None


def _window_key(params, x, w):
    """The key of a forward conv's checked window and path: everything they depend on."""
    return ("window", params, x.shape, w.shape, x.dtype, memory.get_memory_budget())


def _on_path(xp, x, w, path, arguments, epilogue):
    """The forward conv on the path ``_ForwardKernel._forward_window`` chose, through
    ``epilogue``."""
    if path == "direct":
        return direct_forward(x, w, *arguments, epilogue=epilogue)
    if path == "pointwise":
        y = gemm_forward(x, w)
    elif path == "depthwise":
        y = depthwise_forward(x, w, *arguments, xp=xp)
    else:
        y = few_positions(x, w, *arguments, x.dtype)
    return _finished(y, epilogue)


class _BackpropInputKernel(_ConvKernel):
    """Gradients w.r.t. the input: (input_sizes or input, filter, out_backprop) -> output.
    A transposed conv's BiasAdd and activation after it, channels last, come fused as an
    epilogue (``chain_epilogue``), applied to its output on every core."""

    chain_epilogue = True

    def input_shape(self, ctx):
        """The forward input's shape: from the sizes vector or the tensor input 0."""
        return list(ctx.input(0).shape)

    def compute(self, ctx):
        w, dy = ctx.input(1), ctx.input(2)
        in_shape = tuple(self.input_shape(ctx))
        signature = (in_shape, w.shape, dy.shape)
        geo = self._checked(("geometry",) + signature, lambda: backprop_geometry(
            self.op_type, self.params, list(in_shape), w.shape, dy.shape))
        if math.prod(in_shape) == 0 or dy.size == 0 or w.size == 0:
            ctx.check_allocation(in_shape, dy.dtype)
            return ctx.set_output(0, _finished(ctx.xp.zeros(in_shape, dy.dtype), ctx.epilogue))
        window = self._checked(
            ("window", dy.dtype, memory.get_memory_budget()) + signature,
            lambda: self._window(ctx, self.params, in_shape, dy.dtype, in_shape, w.shape[:-2],
                                 self._spatial(self.params, dy.shape), geo.pads))
        xp = ctx.xp
        if self.info.depthwise:
            dx = depthwise_backprop_input(dy, w, in_shape, *window, xp=xp)
        else:
            axis, groups = self._channel_axis, geo.groups
            group_shape = list(in_shape)
            group_shape[axis] //= groups
            parts = [conv_backprop_input(dyg, wg, tuple(group_shape), *window, xp=xp)
                     for dyg, wg in zip(_split(xp, dy, groups, axis), _split(xp, w, groups, -1))]
            dx = parts[0] if len(parts) == 1 else xp.concatenate(parts, axis=axis)
        ctx.set_output(0, _finished(dx, ctx.epilogue))


class _BackpropFilterKernel(_ConvKernel):
    """Gradients w.r.t. the filter: (input, filter_sizes or filter, out_backprop) -> output."""

    def filter_shape(self, ctx):
        """The forward filter's shape: from the sizes vector or the tensor input 1."""
        return list(ctx.input(1).shape)

    def compute(self, ctx):
        x, dy = ctx.input(0), ctx.input(2)
        w_shape = tuple(self.filter_shape(ctx))
        signature = (x.shape, w_shape, dy.shape)
        geo = self._checked(("geometry",) + signature, lambda: backprop_geometry(
            self.op_type, self.params, x.shape, list(w_shape), dy.shape))
        if math.prod(w_shape) == 0 or x.size == 0 or dy.size == 0:
            return self._zeros(ctx, w_shape, x.dtype)
        window = self._checked(
            ("window", x.dtype, memory.get_memory_budget()) + signature,
            lambda: self._window(ctx, self.params, w_shape, x.dtype, x.shape, w_shape[:-2],
                                 self._spatial(self.params, dy.shape), geo.pads))
        xp = ctx.xp
        if self.info.depthwise:
            dw = depthwise_backprop_filter(x, dy, w_shape, *window, xp=xp)
        else:
            axis, groups = self._channel_axis, geo.groups
            group_shape = w_shape[:-1] + (w_shape[-1] // groups,)
            parts = [conv_backprop_filter(xg, dyg, group_shape, *window, xp=xp) for xg, dyg
                     in zip(_split(xp, x, groups, axis), _split(xp, dy, groups, axis))]
            dw = parts[0] if len(parts) == 1 else xp.concatenate(parts, axis=-1)
        ctx.set_output(0, dw)


# ----------------------------------------------------------------------------- the 13 kernels


def _register(op):
    """Registers a kernel class for ``op`` on CPU and GPU for every T the op allows (the
    registry leaves bfloat16 out on GPU); its sizes vector, if any, stays in host memory."""
    allowed = get_op_def(op).attr_def("T").allowed_values
    sizes = CONV_OPS[op].sizes_name
    return register_kernel(op, device=("CPU", "GPU"), type_constraints={"T": allowed},
                           host_memory=(sizes,) if sizes else ())


@_register("Conv2D")
class Conv2DOp(_ForwardKernel):
    channels_last_format = "NHWC"
    chain_epilogue = True


@_register("Conv3D")
class Conv3DOp(_ForwardKernel):
    channels_last_format = "NDHWC"
    chain_epilogue = True


@_register("DepthwiseConv2dNative")
class DepthwiseConv2dNativeOp(_ForwardKernel):
    channels_last_format = "NHWC"
    chain_epilogue = True
    depthwise_filter = True


@_register("Conv2DBackpropInput")
class Conv2DBackpropInputOp(_BackpropInputKernel):
    def input_shape(self, ctx):
        w, dy = ctx.input(1), ctx.input(2)
        if dy.ndim != 4:
            raise InvalidArgumentError(f"input_sizes must be 4-dimensional, got: {dy.ndim}")
        return _conv2d_input_sizes(ctx.input(0), w.shape, dy.shape, self.params.data_format)


@_register("Conv2DBackpropInputV2")
class Conv2DBackpropInputV2Op(_BackpropInputKernel):
    pass


@_register("Conv3DBackpropInput")
class Conv3DBackpropInputOp(_BackpropInputKernel):
    pass


@_register("Conv3DBackpropInputV2")
class Conv3DBackpropInputV2Op(_BackpropInputKernel):
    def input_shape(self, ctx):
        sizes = np.asarray(ctx.input(0))
        message = f"shape must be a vector of {{int32,int64}}, got shape {shape_str(sizes.shape)}"
        return nonnegative_dims(_sizes_vector(sizes, message))


@_register("DepthwiseConv2dNativeBackpropInput")
class DepthwiseConv2dNativeBackpropInputOp(_BackpropInputKernel):
    def input_shape(self, ctx):
        sizes = ctx.input(0)
        message = f"Conv2DBackpropInput: input_sizes input must be 1-dim, not {np.ndim(sizes)}"
        return _checked_each(_sizes_vector(sizes, message), "input_sizes")


@_register("Conv2DBackpropFilter")
class Conv2DBackpropFilterOp(_BackpropFilterKernel):
    def filter_shape(self, ctx):
        sizes = ctx.input(1)
        message = ("Conv2DCustomBackpropFilter: filter_sizes input must be 1-dim, not "
                   f"{np.ndim(sizes)}")
        return nonnegative_dims(_sizes_vector(sizes, message))


@_register("Conv2DBackpropFilterV2")
class Conv2DBackpropFilterV2Op(_BackpropFilterKernel):
    pass


@_register("Conv3DBackpropFilter")
class Conv3DBackpropFilterOp(_BackpropFilterKernel):
    pass


@_register("Conv3DBackpropFilterV2")
class Conv3DBackpropFilterV2Op(_BackpropFilterKernel):
    def filter_shape(self, ctx):
        sizes = ctx.input(1)
        message = f"filter_sizes shape must be rank 1 but is rank {np.ndim(sizes)}"
        return nonnegative_dims(_sizes_vector(sizes, message))


@_register("DepthwiseConv2dNativeBackpropFilter")
class DepthwiseConv2dNativeBackpropFilterOp(_BackpropFilterKernel):
    def filter_shape(self, ctx):
        sizes = ctx.input(1)
        message = f"Conv2DBackpropFilter: filter_sizes input must be 1-dim, not {np.ndim(sizes)}"
        return _checked_each(_sizes_vector(sizes, message), "filter_sizes")


@register_kernel(GENERIC_CONV, device=("CPU", "GPU"),
                 type_constraints={"T": get_op_def(GENERIC_CONV).attr_def("T").allowed_values})
class ConvOp(_ForwardKernel):
    """The generic N-d Conv: checked and computed at run time, when the input's rank gives
    its spatial rank; the batch dims are folded into one around the fixed-rank math."""

    def __init__(self, ctx):    # conv_params needs the spatial rank: compute reads the attrs
        OpKernel.__init__(self, ctx)
        self._checks = {}
        self.conv_attrs = {name: ctx.get_attr(name) for name in (
            "strides", "padding", "explicit_paddings", "data_format", "dilations",
            "batch_dims", "groups")}

    def compute(self, ctx):
        x, w = ctx.input(0), ctx.input(1)
        conv = generic_conv(self.conv_attrs.__getitem__, x.shape, w.shape)
        flat = x.reshape(conv.flat_input_shape)
        y = self.forward(ctx, flat, w, conv.params, conv.geometry)
        ctx.set_output(0, y.reshape(conv.output_shape))
