"""Gradients of the convolution family (TF's nn_grad.py, tf-ops-spec.md section 7).

Every gradient is another conv op of the family with the forward op's attrs passed
through unchanged (strides, padding, explicit_paddings, data_format, dilations, ...):

    forward(x, w)          -> [backprop_input(shape(x), w, g), backprop_filter(x, shape(w), g)]
    backprop_input(s, w, d) -> [None, backprop_filter(g, shape(w), d), forward(g, w)]
    backprop_filter(x, s, d) -> [backprop_input(shape(x), g, d), None, forward(x, g)]

The deprecated V1 Conv3DBackpropInput/Filter (TF registers no gradient for them) take real
tensors where V2 takes sizes; their first/second input gets no gradient, as TF treats a
tensor used only for its shape.
"""

from graphops.api import raw_ops
from graphops.autodiff.gradients import RegisterGradient
from graphops.autodiff.rules.util import shape_of
from registry.op_registry import get_op_def

# forward op -> (backprop-input op, backprop-filter op)
_FAMILIES = {
    "Conv2D": ("Conv2DBackpropInput", "Conv2DBackpropFilter"),
    "Conv3D": ("Conv3DBackpropInputV2", "Conv3DBackpropFilterV2"),
    "DepthwiseConv2dNative": ("DepthwiseConv2dNativeBackpropInput",
                              "DepthwiseConv2dNativeBackpropFilter"),
}


def _conv(op_type, op, **inputs):
    """`op_type` applied to `inputs` with every attr of `op` that `op_type` declares."""
    target = get_op_def(op_type)
    inferred = target.inferred_attrs()
    attrs = {a.name: op.get_attr(a.name) for a in target.attr
             if a.name not in inferred and a.name in op.attrs}
    return getattr(raw_ops, op_type)(**inputs, **attrs)


def _register_family(forward, backprop_input, backprop_filter):
    @RegisterGradient(forward)
    def _forward_grad(op, grad):
        x, w = op.inputs
        return [_conv(backprop_input, op, input_sizes=shape_of(x), filter=w, out_backprop=grad),
                _conv(backprop_filter, op, input=x, filter_sizes=shape_of(w), out_backprop=grad)]

    def backprop_input_grad(op, grad):
        _, w, dy = op.inputs
        return [None,
                _conv(backprop_filter, op, input=grad, filter_sizes=shape_of(w), out_backprop=dy),
                _conv(forward, op, input=grad, filter=w)]

    def backprop_filter_grad(op, grad):
        x, _, dy = op.inputs
        return [_conv(backprop_input, op, input_sizes=shape_of(x), filter=grad, out_backprop=dy),
                None,
                _conv(forward, op, input=x, filter=grad)]

    return backprop_input_grad, backprop_filter_grad


for _forward, (_input_op, _filter_op) in _FAMILIES.items():
    _input_grad, _filter_grad = _register_family(_forward, _input_op, _filter_op)
    RegisterGradient(_input_op)(_input_grad)
    RegisterGradient(_filter_op)(_filter_grad)
    if _forward == "Conv3D":
        RegisterGradient("Conv3DBackpropInput")(_input_grad)
        RegisterGradient("Conv3DBackpropFilter")(_filter_grad)
