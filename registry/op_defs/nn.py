"""The bias ops (TF's nn_ops.cc): BiasAdd, BiasAddV1 and BiasAdd's gradient op BiasAddGrad."""

from graphops.registry.op_registry import register_op
from graphops.registry.shape_inference import merge_dim
from graphops.registry.tensor_shape import TensorShape, unknown_shape

def _channels_first(c):
    """BiasAddV1 has no data_format attr: it is always NHWC."""
    return c.has_attr("data_format") and c.get_attr("data_format") == "NCHW"


def _bias_add_shape(c):
    """TF's BiasAddShape: the bias length merges into the channel dim."""
    channels_first = _channels_first(c)
    value = c.with_rank_at_least(c.input(0), 3 if channels_first else 2)
    bias = c.with_rank(c.input(1), 1)
    if value.rank is None:
        c.set_output(0, unknown_shape())
        return
    dims = value.dims
    channel = 1 if channels_first else len(dims) - 1
    dims[channel] = merge_dim(dims[channel], bias[0])
    c.set_output(0, TensorShape(dims))


register_op("BiasAdd") \
    .input("value: T") \
    .input("bias: T") \
    .output("output: T") \
    .attr("T: numbertype") \
    .attr("data_format: { 'NHWC', 'NCHW' } = 'NHWC' ") \
    .set_shape_fn(_bias_add_shape) \
    .doc("Adds `bias` to `value`.")

register_op("BiasAddV1") \
    .input("value: T") \
    .input("bias: T") \
    .output("output: T") \
    .attr("T: numbertype") \
    .set_shape_fn(_bias_add_shape) \
    .doc("Adds `bias` to `value` (the deprecated form of BiasAdd: always NHWC).")


def _bias_add_grad_shape(c):
    """TF's BiasAddGradShape: a vector of the channel dim's length."""
    if _channels_first(c):
        value = c.with_rank_at_least(c.input(0), 3)
        channels = None if value.rank is None else value.dims[1]
    else:
        value = c.with_rank_at_least(c.input(0), 2)
        channels = None if value.rank is None else value.dims[-1]
    c.set_output(0, TensorShape([channels]))


register_op("BiasAddGrad") \
    .input("out_backprop: T") \
    .output("output: T") \
    .attr("T: numbertype") \
    .attr("data_format: { 'NHWC', 'NCHW' } = 'NHWC' ") \
    .set_shape_fn(_bias_add_grad_shape) \
    .doc("""\
The backward operation for BiasAdd: sums `out_backprop` over all but the channel dim (the
last one for NHWC, dim 1 for NCHW).""")
