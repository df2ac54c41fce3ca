"""ConjugateTranspose (TF's array_ops.cc): Transpose of the complex conjugate, what
`tf.transpose(conjugate=True)` builds for complex tensors."""

from graphops.registry.op_defs.array import _transpose_shape
from graphops.registry.op_registry import register_op

register_op("ConjugateTranspose") \
    .input("x: T") \
    .input("perm: Tperm") \
    .output("y: T") \
    .attr("T: type") \
    .attr("Tperm: {int32, int64} = DT_INT32") \
    .set_shape_fn(_transpose_shape) \
    .doc("Shuffle dimensions of x according to a permutation and conjugate the result.")
