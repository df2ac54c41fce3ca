"""CPU and GPU kernels of DynamicStitch, ParallelDynamicStitch and DynamicPartition, written
once against `ctx.xp`, with TF's checks. Indices and partitions are read on the host (TF's
GPU DynamicStitch keeps its indices there too); rows move on the device."""

import numpy as np

from graphops.kernels.support.kernel_util import DEVICES, zeros
from graphops.registry.errors import InvalidArgumentError
from graphops.registry.kernel_registry import OpKernel, register_kernel
from graphops.registry.tensor_shape import shape_str


def _starts_with(shape, prefix):
    return shape[:len(prefix)] == prefix


class DynamicStitchOp(OpKernel):
    """merged[indices[m].flat[i]] = data[m] row i; where an index repeats, the value that
    comes last (over m, then i) wins, on every device. Rows no index names are zero."""

    def compute(self, ctx):
        n = len(ctx.inputs) // 2
        indices, data = ctx.inputs[:n], ctx.inputs[n:]
        first_dim = 1 + max((int(i.max()) for i in indices if i.size), default=-1)
        for ind in indices:
            bad = np.flatnonzero(ind.reshape(-1) < 0)
            if bad.size:
                raise InvalidArgumentError(f"indices[{bad[0]}] is out of range")
        for m, (ind, values) in enumerate(zip(indices, data)):
            if not _starts_with(values.shape, ind.shape):
                raise InvalidArgumentError(
                    f"data[{m}].shape = {shape_str(values.shape)} does not start with "
                    f"indices[{m}].shape = {shape_str(ind.shape)}")
            if values.shape[ind.ndim:] != data[0].shape[indices[0].ndim:]:
                raise InvalidArgumentError(
                    f"Need data[0].shape[{indices[0].ndim}:] = data[{m}].shape[{ind.ndim}:], "
                    f"got data[0].shape = {shape_str(data[0].shape)}, data[{m}].shape = "
                    f"{shape_str(values.shape)}, indices[0].shape = "
                    f"{shape_str(indices[0].shape)}, indices[{m}].shape = "
                    f"{shape_str(ind.shape)}")
        extra = data[0].shape[indices[0].ndim:]
        dtype = ctx.output_dtype(0).np_dtype
        ctx.check_allocation((first_dim,) + extra, dtype)
        xp = ctx.xp
        merged = zeros(xp, (first_dim,) + extra, dtype)     # strings: empty ones
        flat = np.concatenate([i.reshape(-1) for i in indices])
        if flat.size:
            # The last writer of each index: the first hit when scanning backwards.
            targets, reversed_pos = np.unique(flat[::-1], return_index=True)
            sources = flat.size - 1 - reversed_pos
            rows = xp.concatenate([v.reshape((i.size,) + extra) for i, v in zip(indices, data)])
            merged[xp.asarray(targets)] = rows[xp.asarray(sources)]
        ctx.set_output(0, merged)


for _name in ("DynamicStitch", "ParallelDynamicStitch"):
    register_kernel(_name, DEVICES, host_memory=("indices",))(
        type(_name + "Op", (DynamicStitchOp,), {}))


@register_kernel("DynamicPartition", DEVICES, host_memory=("partitions",))
class DynamicPartitionOp(OpKernel):
    """outputs[k] = the rows of data (over partitions' dims) whose partition is k, in order."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self._num_partitions = ctx.get_attr("num_partitions")

    def compute(self, ctx):
        data, partitions = ctx.inputs
        if not _starts_with(data.shape, partitions.shape):
            raise InvalidArgumentError(
                "data.shape must start with partitions.shape, got data.shape = "
                f"{shape_str(data.shape)}, partitions.shape = {shape_str(partitions.shape)}")
        flat = partitions.reshape(-1)
        bad = np.flatnonzero((flat < 0) | (flat >= self._num_partitions))
        if bad.size:
            where = "" if partitions.ndim == 0 else \
                "[" + ",".join(map(str, np.unravel_index(bad[0], partitions.shape))) + "]"
            raise InvalidArgumentError(
                f"partitions{where} = {flat[bad[0]]} is not in [0, {self._num_partitions})")
        rows = data.reshape((flat.size,) + data.shape[partitions.ndim:])
        order = np.argsort(flat, kind="stable")
        ends = np.cumsum(np.bincount(flat, minlength=self._num_partitions))
        for k, (start, end) in enumerate(zip(np.concatenate([[0], ends[:-1]]), ends)):
            ctx.set_output(k, rows[ctx.xp.asarray(order[start:end])])
