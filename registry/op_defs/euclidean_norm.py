"""EuclideanNorm (TF's math_ops.cc): sqrt(sum(|x|^2)) over the reduction axes, a reduction
with the signature and shape function of Sum."""

from graphops.registry.op_defs.math import _reduction_shape
from graphops.registry.op_registry import register_op

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
