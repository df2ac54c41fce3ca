"""Pooling op definitions (TF's nn_ops.cc): max/avg pooling in 2-D and 3-D, their gradients
and second gradients, MaxPoolWithArgmax. The shape functions are built from
``registry.pool_geometry``, which the kernels share."""

from graphops.registry import pool_geometry as geo
from graphops.registry.op_defs.array import int_values, shape_from_shape_tensor
from graphops.registry.op_registry import register_op
from graphops.registry.shape_inference import with_value
from graphops.registry.tensor_shape import unknown_shape

_MAX_TYPES = "T: {half, bfloat16, float, double, int32, int64, uint8, int16, int8, uint16, qint8}"
_FLOAT_TYPES = "T: {half, bfloat16, float, double}"
_3D_TYPES = "{half, bfloat16, float}"
_PADDING = "padding: {'SAME', 'VALID'}"
_EXPLICIT = "padding: {'SAME', 'VALID', 'EXPLICIT'}"


# ----------------------------------------------------------------------------- shape fns


def _attr_pool_shape(c, input_index=0, ksize=None, strides=None):
    """The output shape of the forward pool of ``c``'s op applied to input ``input_index``."""
    op = geo.FORWARD_OF.get(c.op_type, c.op_type)
    ksize = list(c.get_attr("ksize")) if ksize is None else ksize
    strides = list(c.get_attr("strides")) if strides is None else strides
    explicit = list(c.get_attr("explicit_paddings")) if c.has_attr("explicit_paddings") else []
    data_format = c.get_attr("data_format") if c.has_attr("data_format") else "NHWC"
    return geo.static_output_shape(op, c.input(input_index), ksize, strides,
                                   c.get_attr("padding"), data_format, explicit)


def _pool_shape(c):
    c.set_output(0, _attr_pool_shape(c))


def _with_argmax_shape(c):
    out = _attr_pool_shape(c)
    c.set_output(0, out)
    c.set_output(1, out)


def _vector_values(c, i):
    """A V2 op's ksize/strides input: a length-4 vector, its values when constant."""
    vector = c.with_rank(c.input(i), 1)
    with_value(vector[0], 4)
    value = c.input_value(i)
    return None if value is None else int_values(value)


def _v2_pool_shape(c, first):
    """MaxPoolV2's output shape (ksize, strides: inputs ``first``, ``first + 1``)."""
    ksize, strides = _vector_values(c, first), _vector_values(c, first + 1)
    if ksize is None or strides is None:
        return unknown_shape()
    return _attr_pool_shape(c, ksize=ksize, strides=strides)


def _grad_grad_shape(out):
    """TF's MaxPoolGradGrad shape fns: the pool's output, merged with orig_output; the
    grad merged with orig_input."""
    def shape_fn(c):
        output = out(c)
        c.merge(c.input(0), c.input(2))
        c.merge(c.input(1), output)
        c.set_output(0, output)
    return shape_fn


def _unchanged_with_rank(rank):
    def shape_fn(c):
        c.set_output(0, c.with_rank(c.input(0), rank))
    return shape_fn


def _shape_from_sizes(rank):
    def shape_fn(c):
        c.set_output(0, c.with_rank(shape_from_shape_tensor(c, 0), rank))
    return shape_fn


# ----------------------------------------------------------------------------- forward

register_op("MaxPool") \
    .input("input: T") \
    .output("output: T") \
    .attr(_MAX_TYPES + " = DT_FLOAT") \
    .attr("ksize: list(int) >= 4") \
    .attr("strides: list(int) >= 4") \
    .attr(_EXPLICIT) \
    .attr("explicit_paddings: list(int) = []") \
    .attr("data_format: {'NHWC', 'NCHW', 'NCHW_VECT_C'} = 'NHWC'") \
    .set_shape_fn(_pool_shape) \
    .doc("Performs max pooling on the input.")

register_op("MaxPoolV2") \
    .input("input: T") \
    .input("ksize: int32") \
    .input("strides: int32") \
    .output("output: T") \
    .attr(_MAX_TYPES + " = DT_FLOAT") \
    .attr(_PADDING) \
    .attr("data_format: {'NHWC', 'NCHW', 'NCHW_VECT_C'} = 'NHWC'") \
    .set_shape_fn(lambda c: c.set_output(0, _v2_pool_shape(c, 1))) \
    .doc("Performs max pooling on the input; ksize and strides are tensors.")

register_op("AvgPool") \
    .input("value: T") \
    .output("output: T") \
    .attr("ksize: list(int) >= 4") \
    .attr("strides: list(int) >= 4") \
    .attr(_PADDING) \
    .attr("data_format: {'NHWC', 'NCHW'} = 'NHWC'") \
    .attr(_FLOAT_TYPES) \
    .set_shape_fn(_pool_shape) \
    .doc("""Performs average pooling on the input.

Each entry in `output` is the mean of the corresponding size `ksize` window in `value`
(padded positions are not counted).""")

for _name, _doc in (("MaxPool3D", "Performs 3D max pooling on the input."),
                    ("AvgPool3D", "Performs 3D average pooling on the input.")):
    register_op(_name) \
        .input("input: T") \
        .output("output: T") \
        .attr("ksize: list(int) >= 5") \
        .attr("strides: list(int) >= 5") \
        .attr(_PADDING) \
        .attr("data_format: {'NDHWC', 'NCDHW'} = 'NDHWC'") \
        .attr(f"T: {_3D_TYPES if _name == 'MaxPool3D' else '{half, bfloat16, float, double}'}") \
        .set_shape_fn(_pool_shape) \
        .doc(_doc)

register_op("MaxPoolWithArgmax") \
    .input("input: T") \
    .output("output: T") \
    .output("argmax: Targmax") \
    .attr("ksize: list(int) >= 4") \
    .attr("strides: list(int) >= 4") \
    .attr("Targmax: {int32, int64} = DT_INT64") \
    .attr(_PADDING) \
    .attr("include_batch_in_index: bool = false") \
    .attr("T: realnumbertype") \
    .set_shape_fn(_with_argmax_shape) \
    .doc("""Performs max pooling on the input and outputs both max values and indices.

The index of `input[b, y, x, c]` is `((b * height + y) * width + x) * channels + c` when
`include_batch_in_index`, else `(y * width + x) * channels + c`.""")

# ----------------------------------------------------------------------------- gradients

register_op("MaxPoolGrad") \
    .input("orig_input: T") \
    .input("orig_output: T") \
    .input("grad: T") \
    .output("output: T") \
    .attr("ksize: list(int) >= 4") \
    .attr("strides: list(int) >= 4") \
    .attr(_EXPLICIT) \
    .attr("explicit_paddings: list(int) = []") \
    .attr("data_format: {'NHWC', 'NCHW'} = 'NHWC'") \
    .attr("T: realnumbertype = DT_FLOAT") \
    .set_shape_fn(_unchanged_with_rank(4)) \
    .doc("Computes gradients of the maxpooling function.")

register_op("MaxPoolGradV2") \
    .input("orig_input: T") \
    .input("orig_output: T") \
    .input("grad: T") \
    .input("ksize: int32") \
    .input("strides: int32") \
    .output("output: T") \
    .attr(_PADDING) \
    .attr("data_format: {'NHWC', 'NCHW'} = 'NHWC'") \
    .attr("T: realnumbertype = DT_FLOAT") \
    .set_shape_fn(_unchanged_with_rank(4)) \
    .doc("Computes gradients of the maxpooling function.")

register_op("AvgPoolGrad") \
    .input("orig_input_shape: int32") \
    .input("grad: T") \
    .output("output: T") \
    .attr("ksize: list(int) >= 4") \
    .attr("strides: list(int) >= 4") \
    .attr(_PADDING) \
    .attr("data_format: {'NHWC', 'NCHW'} = 'NHWC'") \
    .attr(_FLOAT_TYPES) \
    .set_shape_fn(_shape_from_sizes(4)) \
    .doc("Computes gradients of the average pooling function.")

register_op("MaxPool3DGrad") \
    .input("orig_input: TInput") \
    .input("orig_output: TInput") \
    .input("grad: T") \
    .output("output: T") \
    .attr("ksize: list(int) >= 5") \
    .attr("strides: list(int) >= 5") \
    .attr(_PADDING) \
    .attr("data_format: {'NDHWC', 'NCDHW'} = 'NDHWC'") \
    .attr(f"T: {_3D_TYPES} = DT_FLOAT") \
    .attr(f"TInput: {_3D_TYPES} = DT_FLOAT") \
    .set_shape_fn(_unchanged_with_rank(5)) \
    .doc("Computes gradients of 3D max pooling function.")

register_op("AvgPool3DGrad") \
    .input("orig_input_shape: int32") \
    .input("grad: T") \
    .output("output: T") \
    .attr("ksize: list(int) >= 5") \
    .attr("strides: list(int) >= 5") \
    .attr(_PADDING) \
    .attr("data_format: {'NDHWC', 'NCDHW'} = 'NDHWC'") \
    .attr(_FLOAT_TYPES) \
    .set_shape_fn(_shape_from_sizes(5)) \
    .doc("Computes gradients of average pooling function.")

for _name, _rank in (("MaxPoolGradGrad", 4), ("MaxPool3DGradGrad", 5)):
    register_op(_name) \
        .input("orig_input: T") \
        .input("orig_output: T") \
        .input("grad: T") \
        .output("output: T") \
        .attr(f"ksize: list(int) >= {_rank}") \
        .attr(f"strides: list(int) >= {_rank}") \
        .attr(_PADDING) \
        .attr("data_format: {'NHWC', 'NCHW'} = 'NHWC'" if _rank == 4
              else "data_format: {'NDHWC', 'NCDHW'} = 'NDHWC'") \
        .attr("T: realnumbertype") \
        .set_shape_fn(_grad_grad_shape(_attr_pool_shape)) \
        .doc("Computes second-order gradients of the maxpooling function.")

register_op("MaxPoolGradGradV2") \
    .input("orig_input: T") \
    .input("orig_output: T") \
    .input("grad: T") \
    .input("ksize: int32") \
    .input("strides: int32") \
    .output("output: T") \
    .attr(_PADDING) \
    .attr("data_format: {'NHWC', 'NCHW'} = 'NHWC'") \
    .attr("T: realnumbertype") \
    .set_shape_fn(_grad_grad_shape(lambda c: _v2_pool_shape(c, 3))) \
    .doc("Computes second-order gradients of the maxpooling function.")

register_op("MaxPoolGradWithArgmax") \
    .input("input: T") \
    .input("grad: T") \
    .input("argmax: Targmax") \
    .output("output: T") \
    .attr("ksize: list(int) >= 4") \
    .attr("strides: list(int) >= 4") \
    .attr(_PADDING) \
    .attr("include_batch_in_index: bool = false") \
    .attr("Targmax: {int32, int64}") \
    .attr("T: realnumbertype") \
    .set_shape_fn(_unchanged_with_rank(4)) \
    .doc("Computes gradients of the maxpooling function (routed by `argmax`).")
