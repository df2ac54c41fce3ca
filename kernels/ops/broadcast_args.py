"""BroadcastArgs' kernel: shape vectors in, their broadcast shape out, all in host memory
(on every device, as TF's registrations)."""

import numpy as np

from graphops.kernels.support.kernel_util import DEVICES
from graphops.kernels.ops.math import broadcast_shape
from graphops.registry.errors import InvalidArgumentError
from graphops.registry.kernel_registry import OpKernel, register_kernel
from graphops.registry.op_defs.array import int_values
from graphops.registry.tensor_shape import shape_str


@register_kernel("BroadcastArgs", DEVICES, host_memory=("s0", "s1", "r0"))
class BroadcastArgsOp(OpKernel):
    def compute(self, ctx):
        shapes = []
        for vector in ctx.inputs:
            if vector.ndim != 1:
                raise InvalidArgumentError(f"In[{len(shapes)}] must be a vector."
                                           f"{shape_str(vector.shape)}")
            shapes.append(int_values(vector))
        result = broadcast_shape(*shapes)
        if result is None:
            raise InvalidArgumentError(f"Incompatible shapes: {shape_str(shapes[0])} vs. "
                                       f"{shape_str(shapes[1])}")
        ctx.set_output(0, np.asarray(result, dtype=ctx.output_dtype(0).np_dtype))
