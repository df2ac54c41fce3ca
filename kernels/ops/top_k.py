"""TopKV2 and InTopKV2 kernels for the CPU and the GPU, written once against `ctx.xp`.

TopKV2 sorts each last-axis row stably in descending order (ties keep the lower index
first; NaN sorts above every number, as on TF's CPU); `sorted=False` gives the same order,
which TF allows. k is host memory.
"""

import numpy as np

from graphops.kernels.support.kernel_util import DEVICES, computable_types, host_copy
from graphops.registry import dtypes
from graphops.registry.errors import InvalidArgumentError
from graphops.registry.kernel_registry import OpKernel, register_kernel
from graphops.registry.tensor_shape import shape_str


def _scalar_k(k, message):
    if k.ndim != 0:
        raise InvalidArgumentError(f"{message}, got shape {shape_str(k.shape)}")
    return int(host_copy(k))


@register_kernel("TopKV2", DEVICES, host_memory=("k",),
                 type_constraints={"T": computable_types("TopKV2")})
class TopKV2Kernel(OpKernel):
    def __init__(self, ctx):
        super().__init__(ctx)
        self.index_type = ctx.get_attr("index_type").np_dtype

    def compute(self, ctx):
        x, xp = ctx.input(0), ctx.xp
        k = _scalar_k(ctx.input(1), "k must be scalar")
        if k < 0:
            raise InvalidArgumentError(f"Need k >= 0, got {k}")
        if x.ndim < 1:
            raise InvalidArgumentError(f"input must be >= 1-D, got shape {shape_str(x.shape)}")
        columns = x.shape[-1]
        if columns < k:
            raise InvalidArgumentError(
                f"input must have at least k columns. Had {columns}, needed {k}")
        keys = x.astype(np.float32) if x.dtype == dtypes.bfloat16.np_dtype else x
        # An ascending stable sort of the reversed rows, read backwards: descending values,
        # equal ones in ascending index order.
        reversed_order = xp.argsort(keys[..., ::-1], axis=-1, kind="stable")[..., ::-1]
        indices = (columns - 1 - reversed_order[..., :k]).astype(self.index_type)
        ctx.set_output(0, xp.take_along_axis(x, indices.astype(np.intp), axis=-1))
        ctx.set_output(1, indices)


@register_kernel("InTopKV2", DEVICES, host_memory=("k",),
                 type_constraints={"T": [dtypes.int32, dtypes.int64]})
class InTopKV2Kernel(OpKernel):
    def compute(self, ctx):
        predictions, targets, xp = ctx.input(0), ctx.input(1), ctx.xp
        k = _scalar_k(ctx.input(2), "k must be 0-D")
        if predictions.ndim != 2:
            raise InvalidArgumentError("predictions must be 2-dimensional")
        if targets.ndim != 1:
            raise InvalidArgumentError("targets must be 1-dimensional")
        batch, classes = predictions.shape
        if batch != targets.shape[0]:
            raise InvalidArgumentError(
                f"First dimension of predictions {batch} must match length of targets "
                f"{targets.shape[0]}")
        valid = (targets >= 0) & (targets < classes)
        target_value = xp.take_along_axis(
            predictions, xp.where(valid, targets, 0).astype(np.intp)[:, None], axis=1)
        larger = (predictions > target_value).sum(axis=1)
        found = valid & xp.isfinite(target_value[:, 0]) & (larger < k)
        ctx.set_output(0, found)
