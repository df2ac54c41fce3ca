"""The 13 convolution op definitions of ``CONV_OPS`` and the generic N-d ``Conv`` (TF's
nn_ops.cc), with their shape functions.

Each shape function first runs TF's own shape inference (same checks, same messages),
then the checks the op's kernel would run (``registry.conv_shapes``) on whatever is known
at build time, so a bad combination fails while building as InvalidArgumentError.
"""

from graphops.registry.conv_family import CONV_OPS, GENERIC_DATA_FORMATS, fixed_rank_format
from graphops.registry.conv_generic import generic_conv
from graphops.registry.conv_shapes import (backprop_geometry, check_valid_padding, conv_params,
                                           format_dims, forward_geometry, is_channels_last,
                                           make_shape, spatial_explicit_pads, windowed_output_dim)
from graphops.registry.errors import InvalidArgumentError, OpError
from graphops.registry.op_defs.array import shape_from_shape_tensor
from graphops.registry.op_registry import register_op
from graphops.registry.shape_inference import merge_dim
from graphops.registry.tensor_shape import unknown_shape

PADDING = "padding: {'SAME', 'VALID'}"
PADDING_EXPLICIT = "padding: {'SAME', 'VALID', 'EXPLICIT'}"
EXPLICIT_PADDINGS = "explicit_paddings: list(int) = []"
DATA_FORMAT = "data_format: { 'NHWC', 'NCHW' } = 'NHWC' "
DATA_FORMAT_3D = "data_format: { 'NDHWC', 'NCDHW' } = 'NDHWC' "

# ----------------------------------------------------------------------------- helpers


def _multiply_dim(a, b):
    if a == 1:
        return b
    if b == 1:
        return a
    return None if a is None or b is None else a * b


def _run_kernel_checks(check, *args):
    """Runs a kernel-side check at build time; any failure becomes InvalidArgumentError."""
    try:
        return check(*args)
    except InvalidArgumentError:
        raise
    except OpError as e:
        raise InvalidArgumentError(e.message) from None


def _forward_kernel_checks(c, input_shape, filter_shape):
    params = _run_kernel_checks(conv_params, c.op_type, c.get_attr)
    _run_kernel_checks(forward_geometry, c.op_type, params, input_shape, filter_shape)


def _backprop_kernel_checks(c, input_shape, filter_shape, out_backprop_shape):
    params = _run_kernel_checks(conv_params, c.op_type, c.get_attr)
    _run_kernel_checks(backprop_geometry, c.op_type, params, input_shape, filter_shape,
                       out_backprop_shape)


def _check_format_string(data_format):
    try:
        is_channels_last(data_format)
    except InvalidArgumentError:
        raise InvalidArgumentError(f"Invalid data format string: {data_format}") from None


def _check_filter_depth(in_depth, f_in):
    """The input depth a multiple of the filter's input depth; False when either is
    unknown (nothing checked)."""
    if in_depth is None or f_in is None:
        return False
    if f_in == 0:
        raise InvalidArgumentError("Depth of filter must not be 0")
    if in_depth % f_in:
        raise InvalidArgumentError(
            f"Depth of input ({in_depth}) is not a multiple of input depth of filter ({f_in})")
    return True


def _check_depth_groups(in_depth, f_in, f_out):
    """The Conv2D/Conv3D shape functions' depth and group checks."""
    if not _check_filter_depth(in_depth, f_in):
        return
    if in_depth != f_in and f_out is not None:
        groups = in_depth // f_in
        if groups == 0:
            raise InvalidArgumentError("Number of groups must not be 0")
        if f_out % groups:
            raise InvalidArgumentError(
                f"Depth of output ({f_out}) is not a multiple of the number of groups ({groups})")


def _output_dims(x, w_spatial, strides, dilations, data_format, padding, pads):
    num_dims = len(x)
    spatial = format_dims(data_format, num_dims)[2]
    return [windowed_output_dim(x[d], k, dilations[d], strides[d], padding, b, a)
            for d, k, (b, a) in zip(spatial, w_spatial, pads)]


def _padding_pairs(c, data_format, num_dims):
    """Validated padding and explicit pads of a 2-D op with explicit-padding support."""
    padding = c.get_attr("padding")
    explicit = list(c.get_attr("explicit_paddings")) if c.has_attr("explicit_paddings") else []
    check_valid_padding(padding, explicit, num_dims, data_format)
    if padding == "EXPLICIT":
        return padding, spatial_explicit_pads(explicit, data_format, num_dims)
    return padding, ((0, 0),) * (num_dims - 2)


# ----------------------------------------------------------------------------- shape fns


def conv2d_shape(c):
    """TF's Conv2DShapeWithExplicitPadding."""
    data_format = c.get_attr("data_format")
    _check_format_string(data_format)
    x = c.with_rank(c.input(0), 4).dims
    w = c.with_rank(c.input(1), 4).dims
    dilations, strides = c.get_attr("dilations"), c.get_attr("strides")
    if len(dilations) != 4:
        raise InvalidArgumentError(
            "Conv2D requires the dilation attribute to contain 4 values, but got: "
            f"{len(dilations)}")
    if len(strides) != 4:
        raise InvalidArgumentError(
            f"Conv2D on data format {data_format} requires the stride attribute to contain 4 "
            f"values, but got: {len(strides)}")
    batch, feature, _ = format_dims(data_format, 4)
    _check_depth_groups(x[feature], w[2], w[3])
    padding, pads = _padding_pairs(c, data_format, 4)
    outs = _output_dims(x, w[:2], strides, dilations, data_format, padding, pads)
    c.set_output(0, make_shape(x[batch], outs, w[3], data_format))
    _forward_kernel_checks(c, x, w)


def conv3d_shape(c):
    """TF's Conv3DShape (with H/W dilations in their documented order; TF swaps them)."""
    x = c.with_rank(c.input(0), 5).dims
    w = c.with_rank(c.input(1), 5).dims
    data_format = c.get_attr("data_format")
    _check_format_string(data_format)
    dilations, strides = c.get_attr("dilations"), c.get_attr("strides")
    if len(dilations) != 5:
        raise InvalidArgumentError(
            "Conv3D requires the dilation attribute to contain 5 values, but got: "
            f"{len(dilations)}")
    if len(strides) != 5:
        raise InvalidArgumentError(
            f"Conv3D requires the stride attribute to contain 5 values, but got: {len(strides)}")
    batch, feature, _ = format_dims(data_format, 5)
    _check_depth_groups(x[feature], w[3], w[4])
    padding = c.get_attr("padding")
    outs = _output_dims(x, w[:3], strides, dilations, data_format, padding, ((0, 0),) * 3)
    c.set_output(0, make_shape(x[batch], outs, w[4], data_format))
    _forward_kernel_checks(c, x, w)


def depthwise_conv2d_native_shape(c):
    """TF's DepthwiseConv2DNativeShapeWithExplicitPadding."""
    x = c.with_rank(c.input(0), 4).dims
    w = c.with_rank(c.input(1), 4).dims
    strides, dilations = c.get_attr("strides"), c.get_attr("dilations")
    if len(strides) != 4:
        raise InvalidArgumentError(
            "DepthwiseConv2D requires the stride attribute to contain 4 values, but got: "
            f"{len(strides)}")
    if len(dilations) != 4:
        raise InvalidArgumentError(
            "DepthwiseConv2D requires the dilations attribute to contain 4 values, but got: "
            f"{len(dilations)}")
    data_format = c.get_attr("data_format")
    batch, feature, _ = format_dims(data_format, 4)
    in_depth = merge_dim(x[feature], w[2])
    out_depth = _multiply_dim(in_depth, w[3])
    padding, pads = _padding_pairs(c, data_format, 4)
    outs = _output_dims(x, w[:2], strides, dilations, data_format, padding, pads)
    c.set_output(0, make_shape(x[batch], outs, out_depth, data_format))
    _forward_kernel_checks(c, x, w)


def conv2d_backprop_input_shape(c):
    """TF's Conv2DBackpropInputShape: input_sizes may be [N, H, W, C]-like or just [H, W]."""
    data_format = c.get_attr("data_format")
    _check_format_string(data_format)
    dy = c.with_rank(c.input(2), 4).dims
    w = c.with_rank(c.input(1), 4).dims
    batch_dim, feature, spatial = format_dims(data_format, 4)
    batch = dy[batch_dim]
    merge_dim(dy[feature], w[3])
    sizes = shape_from_shape_tensor(c, 0)
    if sizes.rank is None:
        sizes = unknown_shape(4)
    if sizes.rank == 4:
        given = sizes.dims
        batch = merge_dim(given[batch_dim], batch)
        hw, depth = [given[d] for d in spatial], given[feature]
    elif sizes.rank == 2:
        hw, depth = sizes.dims, w[2]
    else:
        raise InvalidArgumentError(
            "Conv2DBackpropInput requires input_sizes to contain 4 values or 2 values, but "
            f"got: {sizes.rank}")
    x = make_shape(batch, hw, depth, data_format)
    c.set_output(0, x)
    _backprop_kernel_checks(c, x, w, dy)


def conv_backprop_shape(c):
    """Shape fn of the gradient ops (but Conv2DBackpropInput): the result has the shape of
    the input or filter they differentiate for, given by a sizes vector or a tensor."""
    info = CONV_OPS[c.op_type]
    i = info.result_input
    shapes = [c.input(0), c.input(1), c.input(2)]
    given = shape_from_shape_tensor(c, i) if info.sizes_name else shapes[i]
    shapes[i] = c.with_rank(given, info.num_spatial + 2)
    c.set_output(0, shapes[i])
    _backprop_kernel_checks(c, *shapes)


def conv_shape(c):
    """TF's ConvShape (the generic N-d Conv), then its kernel's checks (``conv_generic``)."""
    x, w = c.input(0), c.input(1)
    if x.rank is None or w.rank is None:
        c.set_output(0, unknown_shape())
        return
    batch_dims = c.get_attr("batch_dims")
    if batch_dims < 0:
        raise InvalidArgumentError("Batch dims must be non-negative.")
    rank = x.rank - (batch_dims - 1)    # the rank with the batch dims as one
    if rank not in (4, 5):
        raise InvalidArgumentError(
            "Input tensor must be rank 4 or 5, excluding extra batch dimensions, but got: "
            f"{rank}")
    if w.rank not in (4, 5):    # TF's message names the input's rank
        raise InvalidArgumentError(f"Filter tensor must be rank 4 or 5, but got: {rank}")
    if w.rank != rank:
        raise InvalidArgumentError("Input tensor rank must be the same as filter rank.")
    channels_last = c.get_attr("data_format") == "CHANNELS_LAST"
    data_format = fixed_rank_format(channels_last, rank - 2)
    dilations = list(c.get_attr("dilations")) or [1] * rank
    strides = c.get_attr("strides")
    if len(dilations) != rank:
        raise InvalidArgumentError(
            f"Conv requires the dilation attribute to contain {rank} values, but got: "
            f"{len(dilations)}")
    if len(strides) != rank:
        raise InvalidArgumentError(
            f"Stride attribute should contain {rank} values, but got: {len(strides)}")
    batch = x.dims[:batch_dims]
    standard = x.dims[batch_dims - 1:] if batch_dims else [None, *x.dims]
    w = w.dims
    _check_groups(c.get_attr("groups"), standard[format_dims(data_format, rank)[1]], w[-2],
                  w[-1])
    padding, pads = _generic_padding(c, data_format, rank)
    outs = _output_dims(standard, w[:-2], strides, dilations, data_format, padding, pads)
    c.set_output(0, [*batch, *outs, w[-1]] if channels_last else [*batch, w[-1], *outs])
    _run_kernel_checks(generic_conv, c.get_attr, x, w)


def _check_groups(groups, in_depth, f_in, f_out):
    """ConvShape's groups and depth checks."""
    if groups < 1:
        raise InvalidArgumentError("Groups attribute should be a positive integer")
    if in_depth is not None and in_depth % groups:
        raise InvalidArgumentError("Number of groups should divide input depth")
    if f_out is not None and f_out % groups:
        raise InvalidArgumentError("Number of groups should divide output depth")
    if _check_filter_depth(in_depth, f_in) and in_depth // f_in != groups:
        raise InvalidArgumentError(
            "Input depth divided by filter input depth does not match with groups parameter "
            f"({groups})")


def _generic_padding(c, data_format, rank):
    if c.get_attr("padding") == "EXPLICIT" and rank == 5:
        raise InvalidArgumentError("Explicit padding not supported for 3D Convolution")
    return _padding_pairs(c, data_format, rank)


# ----------------------------------------------------------------------------- registrations

_T_CONV2D = "T: {half, bfloat16, float, double, int32}"
_T_FLOAT = "T: {half, bfloat16, float, double}"
_DILATIONS_2D = "dilations: list(int) = [1, 1, 1, 1]"
_DILATIONS_3D = "dilations: list(int) = [1, 1, 1, 1, 1]"


def _conv2d_family(name, inputs, t_spec, shape_fn, doc, use_cudnn=True):
    builder = register_op(name)
    for spec in inputs:
        builder.input(spec)
    builder.output("output: T").attr(t_spec).attr("strides: list(int)")
    if use_cudnn:
        builder.attr("use_cudnn_on_gpu: bool = true")
    (builder.attr(PADDING_EXPLICIT).attr(EXPLICIT_PADDINGS).attr(DATA_FORMAT)
     .attr(_DILATIONS_2D).set_shape_fn(shape_fn).doc(doc))


_conv2d_family("Conv2D", ["input: T", "filter: T"], _T_CONV2D, conv2d_shape, """\
Computes a 2-D convolution given 4-D `input` and `filter` tensors.

input: [batch, in_height, in_width, in_channels] (NHWC) or [batch, in_channels, in_height,
  in_width] (NCHW). filter: [filter_height, filter_width, in_channels / groups, out_channels].
strides, dilations: one value per input dimension in data_format order; batch and depth
  entries must be 1. padding: SAME, VALID or EXPLICIT (then explicit_paddings holds a
  [before, after] pair per input dimension).""")

_conv2d_family("Conv2DBackpropInput", ["input_sizes: int32", "filter: T", "out_backprop: T"],
               _T_CONV2D, conv2d_backprop_input_shape, """\
Computes the gradients of convolution with respect to the input.

input_sizes: the shape of `input` (4 values, or [height, width]). filter: [filter_height,
  filter_width, in_channels, out_channels]. out_backprop: gradients w.r.t. the output of the
  convolution. Attrs as for Conv2D.""")

_conv2d_family("Conv2DBackpropInputV2", ["input: T", "filter: T", "out_backprop: T"],
               _T_CONV2D, conv_backprop_shape, """\
Computes the gradients of convolution with respect to the input.

input: a tensor of the input's shape (only its shape is used). Attrs as for Conv2D.""")

_conv2d_family("Conv2DBackpropFilter", ["input: T", "filter_sizes: int32", "out_backprop: T"],
               _T_FLOAT, conv_backprop_shape, """\
Computes the gradients of convolution with respect to the filter.

filter_sizes: the shape of `filter`, [filter_height, filter_width, in_channels,
  out_channels]. out_backprop: gradients w.r.t. the output of the convolution.""")

_conv2d_family("Conv2DBackpropFilterV2", ["input: T", "filter: T", "out_backprop: T"],
               _T_FLOAT, conv_backprop_shape, """\
Computes the gradients of convolution with respect to the filter.

filter: a tensor of the filter's shape (only its shape is used). Attrs as for Conv2D.""")

register_op("Conv3D") \
    .input("input: T").input("filter: T").output("output: T") \
    .attr(_T_FLOAT).attr("strides: list(int) >= 5").attr(PADDING).attr(DATA_FORMAT_3D) \
    .attr(_DILATIONS_3D).set_shape_fn(conv3d_shape).doc("""\
Computes a 3-D convolution given 5-D `input` and `filter` tensors.

input: [batch, in_depth, in_height, in_width, in_channels] (NDHWC) or channels-first
  (NCDHW). filter: [filter_depth, filter_height, filter_width, in_channels, out_channels].
strides, dilations: 5 values in data_format order; batch and depth entries must be 1.""")

register_op("Conv3DBackpropInput") \
    .input("input: T").input("filter: T").input("out_backprop: T").output("output: T") \
    .attr("T: {half, float, double}").attr("strides: list(int) >= 5").attr(PADDING) \
    .deprecated(10, "Use Conv3DBackpropInputV2") \
    .attr(_DILATIONS_3D).set_shape_fn(conv_backprop_shape).doc("""\
Computes the gradients of 3-D convolution with respect to the input.

input: a tensor of the input's shape (NDHWC). Deprecated: use Conv3DBackpropInputV2.""")

register_op("Conv3DBackpropFilter") \
    .input("input: T").input("filter: T").input("out_backprop: T").output("output: T") \
    .attr("T: {half, float, double}").attr("strides: list(int) >= 5").attr(PADDING) \
    .deprecated(10, "Use Conv3DBackpropFilterV2") \
    .attr(_DILATIONS_3D).set_shape_fn(conv_backprop_shape).doc("""\
Computes the gradients of 3-D convolution with respect to the filter.

filter: a tensor of the filter's shape (NDHWC). Deprecated: use Conv3DBackpropFilterV2.""")

register_op("Conv3DBackpropInputV2") \
    .input("input_sizes: Tshape").input("filter: T").input("out_backprop: T") \
    .output("output: T") \
    .attr(_T_FLOAT).attr("strides: list(int) >= 5").attr(PADDING).attr(DATA_FORMAT_3D) \
    .attr(_DILATIONS_3D).attr("Tshape: {int32, int64} = DT_INT32") \
    .set_shape_fn(conv_backprop_shape).doc("""\
Computes the gradients of 3-D convolution with respect to the input.

input_sizes: the shape of `input`, [batch, depth, rows, cols, in_channels] in data_format
  order. filter: [depth, rows, cols, in_channels, out_channels]. out_backprop: backprop
  signal of shape [batch, out_depth, out_rows, out_cols, out_channels].""")

register_op("Conv3DBackpropFilterV2") \
    .input("input: T").input("filter_sizes: int32").input("out_backprop: T") \
    .output("output: T") \
    .attr(_T_FLOAT).attr("strides: list(int) >= 5").attr(PADDING).attr(DATA_FORMAT_3D) \
    .attr(_DILATIONS_3D).set_shape_fn(conv_backprop_shape).doc("""\
Computes the gradients of 3-D convolution with respect to the filter.

filter_sizes: the shape of `filter`, [filter_depth, filter_height, filter_width,
  in_channels, out_channels]. out_backprop: backprop signal of shape [batch, out_depth,
  out_rows, out_cols, out_channels].""")

_conv2d_family("DepthwiseConv2dNative", ["input: T", "filter: T"], _T_FLOAT,
               depthwise_conv2d_native_shape, """\
Computes a 2-D depthwise convolution given 4-D `input` and `filter` tensors.

filter: [filter_height, filter_width, in_channels, channel_multiplier]; the output has
  in_channels * channel_multiplier channels.""", use_cudnn=False)

_conv2d_family("DepthwiseConv2dNativeBackpropInput",
               ["input_sizes: int32", "filter: T", "out_backprop: T"], _T_FLOAT,
               conv_backprop_shape, """\
Computes the gradients of depthwise convolution with respect to the input.

input_sizes: the shape of `input`. filter: [filter_height, filter_width, in_channels,
  depthwise_multiplier].""", use_cudnn=False)

_conv2d_family("DepthwiseConv2dNativeBackpropFilter",
               ["input: T", "filter_sizes: int32", "out_backprop: T"], _T_FLOAT,
               conv_backprop_shape, """\
Computes the gradients of depthwise convolution with respect to the filter.

filter_sizes: the shape of `filter`, [filter_height, filter_width, in_channels,
  depthwise_multiplier].""", use_cudnn=False)


_GENERIC_DATA_FORMAT = "data_format: {%s} = 'CHANNELS_LAST'" % ", ".join(
    f"'{f}'" for f in GENERIC_DATA_FORMATS)

register_op("Conv") \
    .input("input: T").input("filter: T").output("output: T") \
    .attr(_T_CONV2D).attr("strides: list(int)").attr(PADDING_EXPLICIT).attr(EXPLICIT_PADDINGS) \
    .attr(_GENERIC_DATA_FORMAT) \
    .attr("dilations: list(int) = []").attr("batch_dims: int = 1").attr("groups: int = 1") \
    .set_shape_fn(conv_shape).doc("""\
Computes an N-D convolution (2-D or 3-D) given `input` and `filter` tensors.

input: [*batch, *spatial, in_channels] (CHANNELS_LAST) or [*batch, in_channels, *spatial]
  (CHANNELS_FIRST), with `batch_dims` leading batch dims (0 for none). filter:
  [*spatial, in_channels / groups, out_channels]. strides, dilations (empty: all 1): one
  value per dim of the input with its batch dims as one; batch and depth entries must be 1.
padding: SAME, VALID or EXPLICIT (2-D only; explicit_paddings then holds a [before, after]
  pair per dim). groups: the number of channel groups (in_channels / filter's in_channels).""")
