"""Gradients of the convolution family (TF's nn_grad.py; see docs/conv-semantics.md).

Every gradient is another conv op of the family (``registry.conv_family``) with the forward
op's attrs passed through unchanged (strides, padding, explicit_paddings, data_format,
dilations, ...), backprop_input and backprop_filter being the family's ops that take sizes:

    forward(x, w)          -> [backprop_input(shape(x), w, g), backprop_filter(x, shape(w), g)]
    backprop_input(s, w, d) -> [None, backprop_filter(g, shape(w), d), forward(g, w)]
    backprop_filter(x, s, d) -> [backprop_input(shape(x), g, d), None, forward(x, g)]

Every op the table marks ``has_gradient`` gets the rule of its kind, the deprecated V1
Conv3DBackpropInput/Filter too (TF registers no gradient for them): they take real tensors
where V2 takes sizes, and that first/second input gets no gradient, as TF treats a tensor
used only for its shape.
"""

from graphops.autodiff.gradients import RegisterGradient
from graphops.autodiff.rules.util import shape_of, with_attrs_of
from graphops.registry.conv_family import CONV_OPS, backprop_ops


def _gradient(info):
    """The gradient function of a conv op: the rule of its kind, within its family."""
    forward = info.family
    backprop_input, backprop_filter = backprop_ops(forward)

    def forward_grad(op, grad):
        x, w = op.inputs
        return [with_attrs_of(op, backprop_input, input_sizes=shape_of(x), filter=w,
                              out_backprop=grad),
                with_attrs_of(op, backprop_filter, input=x, filter_sizes=shape_of(w),
                              out_backprop=grad)]

    def backprop_input_grad(op, grad):
        _, w, dy = op.inputs
        return [None,
                with_attrs_of(op, backprop_filter, input=grad, filter_sizes=shape_of(w),
                              out_backprop=dy),
                with_attrs_of(op, forward, input=grad, filter=w)]

    def backprop_filter_grad(op, grad):
        x, _, dy = op.inputs
        return [with_attrs_of(op, backprop_input, input_sizes=shape_of(x), filter=grad,
                              out_backprop=dy),
                None,
                with_attrs_of(op, forward, input=x, filter=grad)]

    return {"forward": forward_grad, "input": backprop_input_grad,
            "filter": backprop_filter_grad}[info.kind]


for _op_type, _info in CONV_OPS.items():
    if _info.has_gradient:
        RegisterGradient(_op_type)(_gradient(_info))
