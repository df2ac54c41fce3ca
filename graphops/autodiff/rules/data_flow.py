"""Gradients of DynamicStitch, ParallelDynamicStitch and DynamicPartition (TF's
data_flow_grad.py): a stitch's gradient gathers the rows each input wrote; a partition's
stitches the gradients back into place."""

from graphops.api import raw_ops
from graphops.autodiff.gradients import RegisterGradient
from graphops.autodiff.rules.util import const


@RegisterGradient("DynamicStitch")
@RegisterGradient("ParallelDynamicStitch")
def _dynamic_stitch_grad(op, grad):
    n = len(op.inputs) // 2
    return [None] * n + [raw_ops.GatherV2(params=grad, indices=indices, axis=const(0))
                         for indices in op.inputs[:n]]


@RegisterGradient("DynamicPartition")
def _dynamic_partition_grad(op, *grads):
    data, partitions = op.inputs
    prefix_shape = raw_ops.Shape(input=partitions)
    count = raw_ops.Prod(input=prefix_shape, axis=const([0]))
    positions = raw_ops.Reshape(
        tensor=raw_ops.Range(start=const(0), limit=count, delta=const(1)), shape=prefix_shape)
    partitioned = raw_ops.DynamicPartition(data=positions, partitions=partitions,
                                           num_partitions=op.get_attr("num_partitions"))
    stitched = raw_ops.ParallelDynamicStitch(indices=partitioned, data=list(grads))
    return [raw_ops.Reshape(tensor=stitched, shape=raw_ops.Shape(input=data)), None]
