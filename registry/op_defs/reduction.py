"""The reductions (TF's math_ops.cc): Sum, Mean, Prod, Max, Min, Any, All and EuclideanNorm
over axes given as a tensor, the scans Cumsum and Cumprod, and ArgMax/ArgMin."""

from graphops.registry.errors import InvalidArgumentError
from graphops.registry.op_defs.array import int_values
from graphops.registry.op_registry import register_op
from graphops.registry.shape_inference import unchanged_shape, with_rank_at_most
from graphops.registry.tensor_shape import TensorShape, unknown_shape


def _reduction_shape(c):
    """TF's ReductionShape: axes known at build time give the exact output shape."""
    src = c.input(0)
    with_rank_at_most(c.input(1), 1)
    keep_dims, axes = c.get_attr("keep_dims"), c.input_value(1)
    if axes is None or src.rank is None:
        c.set_output(0, unknown_shape(src.rank) if keep_dims and src.rank is not None
                     else unknown_shape())
        return
    rank, reduced = src.rank, set()
    for axis in int_values(axes):
        if not -rank <= axis < rank:
            raise InvalidArgumentError(
                f"Invalid reduction dimension {axis} for input with {rank} dimensions.")
        reduced.add(axis % rank)
    dims = [1 if i in reduced else d for i, d in enumerate(src.dims)
            if keep_dims or i not in reduced]
    c.set_output(0, TensorShape(dims))


for _name, _type, _doc in (
        ("Sum", "T", "Computes the sum of elements across dimensions of a tensor."),
        ("Mean", "T", "Computes the mean of elements across dimensions of a tensor."),
        ("Prod", "T", "Computes the product of elements across dimensions of a tensor."),
        ("Max", "T", "Computes the maximum of elements across dimensions of a tensor."),
        ("Min", "T", "Computes the minimum of elements across dimensions of a tensor."),
        ("Any", "bool", 'Computes the "logical or" of elements across dimensions of a tensor.'),
        ("All", "bool", 'Computes the "logical and" of elements across dimensions of a '
                        'tensor.')):
    builder = register_op(_name) \
        .input(f"input: {_type}") \
        .input("reduction_indices: Tidx") \
        .output(f"output: {_type}") \
        .attr("keep_dims: bool = false")
    if _type == "T":
        builder.attr("T: {realnumbertype, quantizedtype}" if _name in ("Max", "Min")
                     else "T: numbertype")
    builder \
        .attr("Tidx: {int32, int64} = DT_INT32") \
        .python_name("reduction_indices", "axis") \
        .set_shape_fn(_reduction_shape) \
        .doc(_doc)


# the scans: one signature
for _name, _doc in (
        ("Cumsum", "Compute the cumulative sum of the tensor `x` along `axis`."),
        ("Cumprod", "Compute the cumulative product of the tensor x along axis.\n"
                    "exclusive: start from 1 (the first output is 1); reverse: run from the "
                    "end.")):
    register_op(_name) \
        .input("x: T") \
        .input("axis: Tidx") \
        .output("out: T") \
        .attr("exclusive: bool = false") \
        .attr("reverse: bool = false") \
        .attr("T: numbertype") \
        .attr("Tidx: {int32, int64} = DT_INT32") \
        .set_shape_fn(unchanged_shape) \
        .doc(_doc)


# EuclideanNorm: sqrt(sum(|x|^2)), with Sum's signature and shape function
register_op("EuclideanNorm") \
    .input("input: T") \
    .input("reduction_indices: Tidx") \
    .output("output: T") \
    .attr("keep_dims: bool = false") \
    .attr("T: numbertype") \
    .attr("Tidx: {int32, int64} = DT_INT32") \
    .python_name("reduction_indices", "axis") \
    .set_shape_fn(_reduction_shape) \
    .doc("Computes the euclidean norm of elements across dimensions of a tensor.")


def _arg_op_shape(c):
    """TF's ArgOpShape: the input's shape without the (constant) reduced dimension."""
    c.with_rank(c.input(1), 0)
    src, dimension = c.input(0), c.input_value(1)
    if src.rank is not None and src.rank <= 1:
        c.set_output(0, TensorShape([]))
    elif src.rank is None or dimension is None:
        c.set_output(0, TensorShape(None if src.rank is None else [None] * (src.rank - 1)))
    else:
        axis = int(dimension)
        if not -src.rank <= axis < src.rank:
            raise InvalidArgumentError(
                f"Dimension ({axis}) must be in the range [{-src.rank}, {src.rank}), where "
                f"{src.rank} is the number of dimensions in the input.")
        axis %= src.rank
        c.set_output(0, TensorShape([d for i, d in enumerate(src.dims) if i != axis]))


for _name, _index_types, _output_types, _which in (
        ("ArgMax", "int16, int32, int64", "int16, uint16, int32, int64", "largest"),
        ("ArgMin", "int32, int64", "int32, int64", "smallest")):
    register_op(_name) \
        .input("input: T") \
        .input("dimension: Tidx") \
        .output("output: output_type") \
        .attr("T: {realnumbertype, quantizedtype, bool}") \
        .attr(f"Tidx: {{{_index_types}}} = DT_INT32") \
        .attr(f"output_type: {{{_output_types}}} = DT_INT64") \
        .set_shape_fn(_arg_op_shape) \
        .doc(f"Returns the index with the {_which} value across dimensions of a tensor.\n"
             "Ties are resolved in favour of the smallest index; NaNs are skipped.")
