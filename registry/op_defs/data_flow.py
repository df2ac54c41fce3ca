"""Data-flow op definitions (TF's data_flow_ops.cc): DynamicStitch, ParallelDynamicStitch
and DynamicPartition, which TF's gradients of reductions and gathers write."""

from graphops.registry.op_defs.array import int_values
from graphops.registry.op_registry import register_op
from graphops.registry.shape_inference import merge_prefix, merge_shapes
from graphops.registry.tensor_shape import TensorShape, unknown_shape


def _dynamic_stitch_shape(c):
    """[max over constant indices + 1] + the data dims after each indices' rank."""
    n = c.get_attr("N")
    all_constant, max_index, extra = True, -1, unknown_shape()
    for i in range(n):
        value = c.input_value(i)
        all_constant = all_constant and value is not None
        indices, data = c.input(i), c.input(i + n)
        if indices.rank is None:
            continue
        data, _ = merge_prefix(data, indices)
        if data.rank is not None:
            extra = merge_shapes(extra, TensorShape(data.dims[indices.rank:]))
        if value is not None:
            max_index = max([max_index] + int_values(value))
    first = TensorShape([max_index + 1 if all_constant else None])
    c.set_output(0, first.concatenate(extra))


for _name, _doc in (
        ("DynamicStitch", "Interleaves the values from the `data` tensors into a single tensor: "
                          "merged[indices[m][i, ..., j], ...] = data[m][i, ..., j, ...]."),
        ("ParallelDynamicStitch", "Interleaves the values from the `data` tensors into a single "
                                  "tensor (duplicate indices: any of the values may win).")):
    register_op(_name) \
        .input("indices: N * int32") \
        .input("data: N * T") \
        .output("merged: T") \
        .attr("N : int >= 1") \
        .attr("T : type") \
        .set_shape_fn(_dynamic_stitch_shape) \
        .doc(_doc)


def _dynamic_partition_shape(c):
    """Every output is [?] + the data dims after partitions' rank."""
    partitions = c.input(1)
    if partitions.rank is None:
        for i in range(c.num_outputs):
            c.set_output(i, unknown_shape())
        return
    data, _ = merge_prefix(c.input(0), partitions)
    rest = unknown_shape() if data.rank is None else TensorShape(data.dims[partitions.rank:])
    for i in range(c.num_outputs):
        c.set_output(i, TensorShape([None]).concatenate(rest))


register_op("DynamicPartition") \
    .input("data: T") \
    .input("partitions: int32") \
    .output("outputs: num_partitions * T") \
    .attr("num_partitions: int >= 1") \
    .attr("T: type") \
    .set_shape_fn(_dynamic_partition_shape) \
    .doc("Partitions `data` into `num_partitions` tensors using indices from `partitions`.")
