"""Classification ops (TF's nn_ops.cc, math_ops.cc): the fused softmax cross-entropy ops
(loss and its backprop in one node), ArgMax and ArgMin."""

from graphops.registry.errors import InvalidArgumentError
from graphops.registry.op_defs.math import broadcast_shapes
from graphops.registry.op_registry import register_op
from graphops.registry.tensor_shape import TensorShape


def _sparse_xent_shape(c):
    features = c.with_rank(c.input(0), 2)
    labels = c.with_rank(c.input(1), 1)
    batch = c.merge_dim(features[0], labels[0])
    c.set_output(0, TensorShape([batch]))
    c.set_output(1, TensorShape([batch, features[1]]))


def _xent_shape(c):
    """TF's: features of rank 2 merged with labels; failing that, the two broadcast against
    each other (labels [C] against features [1, C], ...), which must give a matrix."""
    features, labels = c.input(0), c.input(1)
    try:
        shape = c.merge(c.with_rank(features, 2), labels)
    except InvalidArgumentError:
        shape = broadcast_shapes(features, labels)
        if shape.rank != 2:
            rank = "is unknown." if shape.rank is None else shape.rank
            raise InvalidArgumentError(
                f"Shape must be broadcasted with rank 2, but is rank {rank}") from None
    c.set_output(0, TensorShape([shape[0]]))
    c.set_output(1, shape)


register_op("SparseSoftmaxCrossEntropyWithLogits") \
    .input("features: T") \
    .input("labels: Tlabels") \
    .output("loss: T") \
    .output("backprop: T") \
    .attr("T: {half, bfloat16, float, double}") \
    .attr("Tlabels: {int32, int64} = DT_INT64") \
    .set_shape_fn(_sparse_xent_shape) \
    .doc("Computes softmax cross entropy cost and gradients to backpropagate.\n"
         "labels are class indices in [0, num_classes); backprop = softmax - onehot(labels).")

register_op("SoftmaxCrossEntropyWithLogits") \
    .input("features: T") \
    .input("labels: T") \
    .output("loss: T") \
    .output("backprop: T") \
    .attr("T: {half, bfloat16, float, double}") \
    .set_shape_fn(_xent_shape) \
    .doc("Computes softmax cross entropy cost and gradients to backpropagate.\n"
         "labels are probability rows, broadcast against features; backprop = softmax - labels.")


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
