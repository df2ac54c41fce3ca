"""Gradients of the pooling family (TF's nn_grad.py), each the op TF's rule builds, with the
forward op's attrs passed through:

    MaxPool -> MaxPoolGrad, MaxPoolV2 -> MaxPoolGradV2, MaxPool3D -> MaxPool3DGrad,
    AvgPool -> AvgPoolGrad, AvgPool3D -> AvgPool3DGrad, MaxPoolWithArgmax ->
    MaxPoolGradWithArgmax; MaxPoolGrad <-> MaxPoolGradGrad, MaxPool3DGrad <->
    MaxPool3DGradGrad, MaxPoolGradV2 -> MaxPoolGradGradV2 (zeros for orig_input and
    orig_output); AvgPoolGrad -> AvgPool, AvgPool3DGrad -> AvgPool3D.

TF registers none for MaxPoolGradGradV2 and MaxPoolGradWithArgmax, so neither has one here.
The sizes input of AvgPoolGrad gets None where TF returns a stop_gradient of it.
"""

from graphops.api import raw_ops
from graphops.autodiff.gradients import RegisterGradient
from graphops.autodiff.rules.util import shape_of, with_attrs_of
from graphops.registry.op_registry import get_op_def


def _register_forward(forward, backprop):
    """forward(x) -> backprop(x, y, grad), V2's ksize/strides inputs passed on."""
    @RegisterGradient(forward)
    def _grad(op, grad):
        x, *sizes = op.inputs
        extra = dict(zip(("ksize", "strides"), sizes))
        dx = with_attrs_of(op, backprop, orig_input=x, orig_output=op.outputs[0], grad=grad,
                           **extra)
        return [dx] + [None] * len(sizes)


def _register_backprop(backprop, second):
    """backprop(x, y, g) -> [0, 0, second(x, y, grad)] (+ None for V2's sizes)."""
    @RegisterGradient(backprop)
    def _grad(op, grad):
        x, y, _, *sizes = op.inputs
        extra = dict(zip(("ksize", "strides"), sizes))
        return [raw_ops.ZerosLike(x=x), raw_ops.ZerosLike(x=y),
                with_attrs_of(op, second, orig_input=x, orig_output=y, grad=grad, **extra)] \
            + [None] * len(sizes)


def _register_avg(forward, backprop):
    @RegisterGradient(forward)
    def _forward_grad(op, grad):
        return [with_attrs_of(op, backprop, orig_input_shape=shape_of(op.inputs[0]),
                              grad=grad)]

    @RegisterGradient(backprop)
    def _backprop_grad(op, grad):
        first = get_op_def(forward).input_arg[0].name
        return [None, with_attrs_of(op, forward, **{first: grad})]


for _forward, _backprop in (("MaxPool", "MaxPoolGrad"), ("MaxPoolV2", "MaxPoolGradV2"),
                            ("MaxPool3D", "MaxPool3DGrad")):
    _register_forward(_forward, _backprop)
for _backprop, _second in (("MaxPoolGrad", "MaxPoolGradGrad"),
                           ("MaxPoolGradGrad", "MaxPoolGrad"),
                           ("MaxPoolGradV2", "MaxPoolGradGradV2"),
                           ("MaxPool3DGrad", "MaxPool3DGradGrad"),
                           ("MaxPool3DGradGrad", "MaxPool3DGrad")):
    _register_backprop(_backprop, _second)
_register_avg("AvgPool", "AvgPoolGrad")
_register_avg("AvgPool3D", "AvgPool3DGrad")


@RegisterGradient("MaxPoolWithArgmax")
def _max_pool_with_argmax_grad(op, grad, unused_argmax_grad):
    return [with_attrs_of(op, "MaxPoolGradWithArgmax", input=op.inputs[0], grad=grad,
                          argmax=op.outputs[1])]
