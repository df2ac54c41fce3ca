"""Activation op definitions and their gradient ops (TF's nn_ops.cc): Relu, Relu6, Elu, Selu,
LeakyRelu, Softplus, Softsign, Softmax, LogSoftmax, and ReluGrad, Relu6Grad, EluGrad,
SeluGrad, LeakyReluGrad, SoftplusGrad, SoftsignGrad."""

from graphops.registry.op_registry import register_op
from graphops.registry.shape_inference import unchanged_shape

_FLOAT = "T: {half, bfloat16, float, double}"
_REAL = "T: realnumbertype"
_ALPHA = "alpha: float = 0.2"
_FLOAT_DEFAULT = "T: {half, bfloat16, float, double} = DT_FLOAT"


def _merge_both_inputs(c):
    """TF's MergeBothInputsShapeFn: both inputs have one shape, the output's."""
    c.set_output(0, c.merge(c.input(0), c.input(1)))


def _log_softmax_shape(c):
    c.set_output(0, c.with_rank_at_least(c.input(0), 1))


def _activation(name, t_spec, doc, attrs=()):
    builder = register_op(name).input("features: T").output("activations: T")
    for spec in (*attrs, t_spec):
        builder.attr(spec)
    builder.set_shape_fn(unchanged_shape).doc(doc)


def _activation_grad(name, second_input, t_spec, doc, attrs=()):
    builder = (register_op(name).input("gradients: T").input(f"{second_input}: T")
               .output("backprops: T"))
    for spec in (*attrs, t_spec):
        builder.attr(spec)
    builder.set_shape_fn(_merge_both_inputs).doc(doc)


_activation("Relu6", _REAL, "Computes rectified linear 6: `min(max(features, 0), 6)`.")
_activation("Elu", _FLOAT, """\
Computes the exponential linear function.

`features` where `features > 0`, else `exp(features) - 1`.""")
_activation("Selu", _FLOAT, """\
Computes scaled exponential linear: `scale * alpha * (exp(features) - 1)` if < 0,
`scale * features` otherwise (scale = 1.0507..., scale * alpha = 1.7580...).""")
_activation("LeakyRelu", _FLOAT_DEFAULT, """\
Computes rectified linear with a leak: `features` if > 0, else `alpha * features`.""",
            attrs=(_ALPHA,))
_activation("Softplus", _FLOAT, "Computes softplus: `log(exp(features) + 1)`.")
_activation("Softsign", _FLOAT, "Computes softsign: `features / (abs(features) + 1)`.")

register_op("LogSoftmax") \
    .input("logits: T") \
    .output("logsoftmax: T") \
    .attr(_FLOAT) \
    .set_shape_fn(_log_softmax_shape) \
    .doc("Computes log softmax activations: `logits - log(reduce_sum(exp(logits), -1))`.")

_activation_grad("ReluGrad", "features", _REAL, """\
Computes rectified linear gradients for a Relu operation.

backprops: `gradients * (features > 0)`.""")
_activation_grad("Relu6Grad", "features", _REAL, """\
Computes rectified linear 6 gradients for a Relu6 operation.

backprops: `gradients * (features > 0) * (features < 6)`.""")
_activation_grad("EluGrad", "outputs", _FLOAT, """\
Computes gradients for the exponential linear (Elu) operation.

outputs: the outputs of the Elu op. backprops: `gradients * (outputs + 1)` if outputs < 0,
`gradients` otherwise.""")
_activation_grad("SeluGrad", "outputs", _FLOAT, """\
Computes gradients for the scaled exponential linear (Selu) operation.

outputs: the outputs of the Selu op. backprops: `gradients * (outputs + scale * alpha)`
if outputs < 0, `scale * gradients` otherwise.""")
_activation_grad("LeakyReluGrad", "features", _FLOAT_DEFAULT, """\
Computes rectified linear gradients for a LeakyRelu operation.

backprops: `gradients` if features > 0, else `alpha * gradients`.""", attrs=(_ALPHA,))
_activation_grad("SoftplusGrad", "features", _FLOAT, """\
Computes softplus gradients for a softplus operation.

backprops: `gradients / (1 + exp(-features))`.""")
_activation_grad("SoftsignGrad", "features", _FLOAT, """\
Computes softsign gradients for a softsign operation.

backprops: `gradients / (1 + abs(features)) ** 2`.""")

register_op("Relu") \
    .input("features: T") \
    .output("activations: T") \
    .attr("T: {realnumbertype, qint8}") \
    .set_shape_fn(unchanged_shape) \
    .doc("Computes rectified linear: `max(features, 0)`.")


def _softmax_shape(c):
    c.set_output(0, c.with_rank_at_least(c.input(0), 1))


register_op("Softmax") \
    .input("logits: T") \
    .output("softmax: T") \
    .attr("T: {half, bfloat16, float, double}") \
    .set_shape_fn(_softmax_shape) \
    .doc("Computes softmax activations: `exp(logits) / reduce_sum(exp(logits), -1)`.")
