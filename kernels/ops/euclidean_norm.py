"""EuclideanNorm's kernel (CPU and GPU): squares summed as Sum sums them (integers wrap in
their own type, floats in float64, half types rounded once), then the square root
(truncated for integers, as C++'s cast of std::sqrt)."""

import numpy as np

from graphops.kernels.support.kernel_util import DEVICES, computable_types, sum_dtype
from graphops.kernels.ops.reduction import ReductionOp
from graphops.registry.kernel_registry import register_kernel


@register_kernel("EuclideanNorm", DEVICES,
                 type_constraints={"T": computable_types("EuclideanNorm")},
                 host_memory=("reduction_indices",))
class EuclideanNormOp(ReductionOp):
    def reduce(self, xp, x, dtype, axes):
        squares = x * xp.conj(x) if x.dtype.kind == "c" else x * x
        total = xp.sum(squares, axis=axes, dtype=sum_dtype(x), keepdims=self._keep_dims)
        if dtype.is_integer:
            return xp.sqrt(total.astype(np.float64))
        return xp.sqrt(total)
