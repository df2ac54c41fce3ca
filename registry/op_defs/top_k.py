"""The top-k ops (TF's nn_ops.cc): TopKV2 (the k largest entries of each last-axis row,
with their indices) and InTopKV2 (whether each target class is among a row's k largest
predictions)."""

from graphops.registry.op_defs.array import scalar_input_dim
from graphops.registry.op_registry import register_op
from graphops.registry.errors import InvalidArgumentError
from graphops.registry.tensor_shape import TensorShape


def _top_k_shape(c):
    """The input's shape with its last dim replaced by k (which must not exceed it)."""
    values = c.with_rank_at_least(c.input(0), 1)
    c.with_rank(c.input(1), 0)
    k = scalar_input_dim(c, 1)
    if values.rank is None:
        c.set_output(0, TensorShape(None))
        c.set_output(1, TensorShape(None))
        return
    last = values.dims[-1]
    if k is not None and last is not None and last < k:
        raise InvalidArgumentError(f"input must have last dimension >= k = {k} but is {last}")
    shape = TensorShape(values.dims[:-1] + [k])
    c.set_output(0, shape)
    c.set_output(1, shape)


def _in_top_k_shape(c):
    predictions = c.with_rank(c.input(0), 2)
    targets = c.with_rank(c.input(1), 1)
    c.set_output(0, TensorShape([c.merge_dim(predictions[0], targets[0])]))


register_op("TopKV2") \
    .input("input: T") \
    .input("k: Tk") \
    .output("values: T") \
    .output("indices: index_type") \
    .attr("sorted: bool = true") \
    .attr("T: realnumbertype") \
    .attr("Tk: {int16, int32, int64} = DT_INT32") \
    .attr("index_type: {int16, int32, int64} = DT_INT32") \
    .set_shape_fn(_top_k_shape) \
    .doc("Finds values and indices of the `k` largest elements for the last dimension.\n"
         "Equal values keep their order: the lower index comes first.")

register_op("InTopKV2") \
    .input("predictions: float") \
    .input("targets: T") \
    .input("k: T") \
    .output("precision: bool") \
    .attr("T: {int32, int64} = DT_INT32") \
    .set_shape_fn(_in_top_k_shape) \
    .doc("Says whether the targets are in the top `K` predictions.\n"
         "A target counts when fewer than k predictions of its row are larger than its own; "
         "a target out of range or a non-finite prediction gives false.")
