"""Gradient of EuclideanNorm (TF's math_grad.py): x / (norm / grad), the norm and the
gradient first given the input's rank (kept dims) when the reduction dropped them."""

from graphops.api import raw_ops
from graphops.autodiff.gradients import RegisterGradient
from graphops.autodiff.rules.util import reduced_shape, shape_of


@RegisterGradient("EuclideanNorm")
def _euclidean_norm_grad(op, grad):
    x, axes = op.inputs
    norm = op.outputs[0]
    if not op.get_attr("keep_dims"):
        kept = reduced_shape(shape_of(x), axes)
        norm = raw_ops.Reshape(tensor=norm, shape=kept)
        grad = raw_ops.Reshape(tensor=grad, shape=kept)
    return [raw_ops.RealDiv(x=x, y=raw_ops.RealDiv(x=norm, y=grad)), None]
