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
