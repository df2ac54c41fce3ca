"""Sparse op definitions (TF's sparse_ops.cc): SparseToDense, the dense tensor of a list of
(index, value) pairs over a default value."""

from graphops.registry.op_defs.array import shape_from_shape_tensor
from graphops.registry.op_registry import register_op

register_op("SparseToDense") \
    .input("sparse_indices: Tindices") \
    .input("output_shape: Tindices") \
    .input("sparse_values: T") \
    .input("default_value: T") \
    .output("dense: T") \
    .attr("validate_indices: bool = true") \
    .attr("T: type") \
    .attr("Tindices: {int32, int64}") \
    .set_shape_fn(lambda c: c.set_output(0, shape_from_shape_tensor(c, 1))) \
    .doc("A dense tensor of shape `output_shape` holding `default_value`, with "
         "`sparse_values` (one per index, or a scalar for all) at `sparse_indices` ([n, "
         "rank], [n] or a scalar). `validate_indices`: indices must be sorted, unique and "
         "in bounds.")

