"""Normalisation op definitions (TF's nn_ops.cc): FusedBatchNorm (V1-V3) and their gradients,
LRN and LRNGrad, with TF's shape functions."""

from graphops.registry.op_registry import register_op
from graphops.registry.shape_inference import merge_dim
from graphops.registry.tensor_shape import TensorShape

_FORMATS_4D = "data_format: { 'NHWC', 'NCHW' } = 'NHWC' "
_FORMATS_5D = "data_format: { 'NHWC', 'NCHW', 'NDHWC', 'NCDHW' } = 'NHWC' "


def channel_axis(data_format, rank):
    """The channel (feature) dimension's index: 1 for NCHW/NCDHW, else the last one."""
    return 1 if data_format.startswith("NC") else rank - 1


def _rank_and_channel_axis(c):
    rank = 5 if c.get_attr("data_format") in ("NDHWC", "NCDHW") else 4
    return rank, channel_axis(c.get_attr("data_format"), rank)


def _with_channel(shape, axis, channels):
    dims = shape.dims
    dims[axis] = channels
    return TensorShape(dims)


def _fused_batch_norm_shape(c):
    """TF's FusedBatchNormShape: scale and offset (and mean, variance unless they are
    unused: training with exponential_avg_factor 1) are vectors of x's channel count."""
    rank, axis = _rank_and_channel_axis(c)
    x = c.with_rank(c.input(0), rank)
    uses_mean = not c.get_attr("is_training") or c.get_attr("exponential_avg_factor") != 1.0
    channels = x[axis]
    for i in range(1, 5 if uses_mean else 3):
        channels = merge_dim(channels, c.with_rank(c.input(i), 1)[0])
    c.set_output(0, _with_channel(x, axis, channels))
    for i in range(1, 5):
        c.set_output(i, [channels])
    if c.num_outputs == 6:
        c.set_output(5, None)


def _fused_batch_norm_grad_shape(c):
    """TF's FusedBatchNormGradShape: y_backprop and x share the channel count with scale and
    the two saved statistics; x_backprop has y_backprop's shape; the placeholders are [0]."""
    rank, axis = _rank_and_channel_axis(c)
    y_backprop = c.with_rank(c.input(0), rank)
    channels = merge_dim(y_backprop[axis], c.with_rank(c.input(1), rank)[axis])
    for i in range(2, 5):
        channels = merge_dim(channels, c.with_rank(c.input(i), 1)[0])
    c.set_output(0, _with_channel(y_backprop, axis, channels))
    c.set_output(1, [channels])
    c.set_output(2, [channels])
    c.set_output(3, [0])
    c.set_output(4, [0])


def _register_fused_batch_norm(name, scale_type, extra_types, formats, reserve_3=False):
    stat_type = "U" if extra_types else "T"
    builder = register_op(name) \
        .input("x: T") \
        .input(f"scale: {scale_type}") \
        .input(f"offset: {scale_type}") \
        .input(f"mean: {scale_type}") \
        .input(f"variance: {scale_type}") \
        .output("y: T") \
        .output(f"batch_mean: {stat_type}") \
        .output(f"batch_variance: {stat_type}") \
        .output(f"reserve_space_1: {stat_type}") \
        .output(f"reserve_space_2: {stat_type}")
    if reserve_3:
        builder.output("reserve_space_3: U")
    builder.attr("T: {half, bfloat16, float}" if extra_types else "T: {float}")
    if extra_types:
        builder.attr(extra_types)
    builder \
        .attr("epsilon: float = 0.0001") \
        .attr("exponential_avg_factor: float = 1.0") \
        .attr(formats) \
        .attr("is_training: bool = true") \
        .set_shape_fn(_fused_batch_norm_shape) \
        .doc("Batch normalization: (x - mean) / sqrt(variance + epsilon) * scale + offset, "
             "per channel; in training the batch's own statistics.")


_register_fused_batch_norm("FusedBatchNorm", "T", None, _FORMATS_4D)
_register_fused_batch_norm("FusedBatchNormV2", "U", "U: {float}", _FORMATS_4D)
_register_fused_batch_norm("FusedBatchNormV3", "U", "U: {bfloat16, float}", _FORMATS_5D,
                           reserve_3=True)


def _register_fused_batch_norm_grad(name, version, formats):
    stat_type = "T" if version == 1 else "U"
    builder = register_op(name) \
        .input("y_backprop: T") \
        .input("x: T") \
        .input("scale: T" if version == 1 else "scale: float") \
        .input(f"reserve_space_1: {stat_type}") \
        .input(f"reserve_space_2: {stat_type}")
    if version == 3:
        builder.input("reserve_space_3: U")
    first_unused = 4 if version == 3 else 3
    builder \
        .output("x_backprop: T") \
        .output(f"scale_backprop: {stat_type}") \
        .output(f"offset_backprop: {stat_type}") \
        .output(f"reserve_space_{first_unused}: {stat_type}") \
        .output(f"reserve_space_{first_unused + 1}: {stat_type}")
    builder.attr("T: {float}" if version == 1 else "T: {half, bfloat16, float}")
    if version != 1:
        builder.attr("U: {float}")
    builder \
        .attr("epsilon: float = 0.0001") \
        .attr(formats) \
        .attr("is_training: bool = true") \
        .set_shape_fn(_fused_batch_norm_grad_shape) \
        .doc("Gradients of FusedBatchNorm: x_backprop, scale_backprop, offset_backprop.")


_register_fused_batch_norm_grad("FusedBatchNormGrad", 1, _FORMATS_4D)
_register_fused_batch_norm_grad("FusedBatchNormGradV2", 2, _FORMATS_4D)
_register_fused_batch_norm_grad("FusedBatchNormGradV3", 3, _FORMATS_5D)


def _lrn_shape(c):
    c.set_output(0, c.with_rank(c.input(0), 4))


def _lrn_grad_shape(c):
    shape = c.with_rank(c.input(0), 4)
    shape = c.merge(shape, c.input(1))
    c.set_output(0, c.merge(shape, c.input(2)))


_LRN_ATTRS = ("depth_radius: int = 5", "bias: float = 1.0", "alpha: float = 1.0",
              "beta: float = 0.5", "T: {half, bfloat16, float} = DT_FLOAT")


def _lrn_attrs(builder):
    for spec in _LRN_ATTRS:
        builder.attr(spec)
    return builder


_lrn_attrs(register_op("LRN")
           .input("input: T")
           .output("output: T")) \
    .set_shape_fn(_lrn_shape) \
    .doc("Local response normalization over the last dimension: input / (bias + alpha * "
         "sum(input[..., d - depth_radius : d + depth_radius + 1] ** 2)) ** beta.")

_lrn_attrs(register_op("LRNGrad")
           .input("input_grads: T")
           .input("input_image: T")
           .input("output_image: T")
           .output("output: T")) \
    .set_shape_fn(_lrn_grad_shape) \
    .doc("Gradient of LRN with respect to its input.")
