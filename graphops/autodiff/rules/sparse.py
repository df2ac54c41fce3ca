"""Gradient of SparseToDense (TF's sparse_grad.py): the values' gradient gathered at the
indices; the default value's is the rest of the output's gradient."""

from graphops.api import raw_ops
from graphops.autodiff.gradients import RegisterGradient
from graphops.autodiff.rules.util import const


def _sum_all(tensor):
    rank = tensor.shape.rank
    axes = const(list(range(rank))) if rank is not None else raw_ops.Range(
        start=const(0), limit=raw_ops.Rank(input=tensor), delta=const(1))
    return raw_ops.Sum(input=tensor, axis=axes)


@RegisterGradient("SparseToDense")
def _sparse_to_dense_grad(op, grad):
    values_grad = raw_ops.GatherNd(params=grad, indices=op.inputs[0])
    default_grad = raw_ops.Sub(x=_sum_all(grad), y=_sum_all(values_grad))
    return [None, None, values_grad, default_grad]
