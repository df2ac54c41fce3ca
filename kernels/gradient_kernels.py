"""Kernels of the gradient-support ops: BroadcastGradientArgs (shape arithmetic: all its
inputs and outputs stay in host memory on every device, as in TF's GPU registration)."""

import numpy as np

from kernels.array_kernels import DEVICES, shape_str
from registry import dtypes
from registry.errors import InvalidArgumentError
from registry.kernel_registry import OpKernel, register_kernel


def broadcast_reduction_axes(s0, s1):
    """(r0, r1): axes of the broadcast shape where s0 (s1) is 1 or missing."""
    rank = max(len(s0), len(s1))
    x = [1] * (rank - len(s0)) + list(s0)
    y = [1] * (rank - len(s1)) + list(s1)
    for a, b in zip(x, y):
        if a != b and a != 1 and b != 1:
            raise InvalidArgumentError(
                f"Incompatible shapes: {shape_str(s0)} vs. {shape_str(s1)}")
    return [i for i in range(rank) if x[i] == 1], [i for i in range(rank) if y[i] == 1]


@register_kernel("BroadcastGradientArgs", DEVICES,
                 type_constraints={"T": [dtypes.int32, dtypes.int64]},
                 host_memory=("s0", "s1", "r0", "r1"))
class BroadcastGradientArgsKernel(OpKernel):
    def compute(self, ctx):
        shapes = ctx.inputs
        for i, shape in enumerate(shapes):
            if shape.ndim != 1:
                raise InvalidArgumentError(
                    f"In[{i}] must be a vector.{shape_str(shape.shape)}")
        reductions = broadcast_reduction_axes([int(d) for d in shapes[0]],
                                              [int(d) for d in shapes[1]])
        for i, axes in enumerate(reductions):
            ctx.set_output(i, np.asarray(axes, dtype=shapes[0].dtype))
