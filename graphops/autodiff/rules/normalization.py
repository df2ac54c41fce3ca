"""Gradients of the normalisation ops (TF's nn_grad.py and nn_fused_batch_norm_grad.py):
FusedBatchNorm* -> FusedBatchNormGrad* of the same version, LRN -> LRNGrad, and the
FusedBatchNormGrad* ops through a composition of primitive ops differentiated in turn.
LRNGrad has no gradient, as in TF."""

from graphops.api import raw_ops
from graphops.autodiff.gradients import RegisterGradient, gradients
from graphops.autodiff.rules.util import const, scalar_like
from graphops.registry import dtypes

_GRAD_OPS = {"FusedBatchNorm": "FusedBatchNormGrad", "FusedBatchNormV2": "FusedBatchNormGradV2",
             "FusedBatchNormV3": "FusedBatchNormGradV3"}
_TO_CHANNELS_LAST = {"NCHW": ([0, 2, 3, 1], [0, 3, 1, 2], "NHWC"),
                     "NCDHW": ([0, 2, 3, 4, 1], [0, 4, 1, 2, 3], "NDHWC")}


def _transpose(tensor, perm):
    return raw_ops.Transpose(x=tensor, perm=const(perm))


def _fused_batch_norm_grad(op, grad_y, *_):
    """Training: the Grad op from the saved statistics (reserve spaces). Inference: from the
    population mean and variance inputs, in channels-last layout (TF transposes NCHW and
    NCDHW there, since its CPU Grad kernel refuses them in inference mode)."""
    x, scale = op.inputs[0], op.inputs[1]
    grad_op = getattr(raw_ops, _GRAD_OPS[op.type])
    data_format = op.get_attr("data_format")
    args = {"scale": scale, "epsilon": op.get_attr("epsilon"),
            "is_training": op.get_attr("is_training")}
    if op.type == "FusedBatchNormV3":
        args["reserve_space_3"] = op.outputs[5]
    if args["is_training"]:
        dx, dscale, doffset, _, _ = grad_op(
            y_backprop=grad_y, x=x, reserve_space_1=op.outputs[3],
            reserve_space_2=op.outputs[4], data_format=data_format, **args)
        return [dx, dscale, doffset, None, None]
    back = None
    if data_format in _TO_CHANNELS_LAST:
        to_last, back, data_format = _TO_CHANNELS_LAST[data_format]
        x, grad_y = _transpose(x, to_last), _transpose(grad_y, to_last)
    dx, dscale, doffset, _, _ = grad_op(
        y_backprop=grad_y, x=x, reserve_space_1=op.inputs[3], reserve_space_2=op.inputs[4],
        data_format=data_format, **args)
    if back is not None:
        dx = _transpose(dx, back)
    return [dx, dscale, doffset, None, None]


for _forward in _GRAD_OPS:
    RegisterGradient(_forward)(_fused_batch_norm_grad)


def _reduce(fn, tensor, axes, keep_dims=False):
    return fn(input=tensor, axis=const(axes), keep_dims=keep_dims)


def _batch_norm_grad_composition(grad_y, x, scale, pop_mean, pop_var, epsilon, data_format,
                                 is_training):
    """(grad_x, grad_scale, grad_offset) of batch norm built from primitive ops (TF's
    _BatchNormGrad), half types in float32. Training recomputes the batch statistics from x
    (the variance's mean behind a StopGradient), inference uses pop_mean and pop_var."""
    x_dtype = x.dtype
    if x_dtype in (dtypes.float16, dtypes.bfloat16):
        x = raw_ops.Cast(x=x, DstT=dtypes.float32)
        grad_y = raw_ops.Cast(x=grad_y, DstT=dtypes.float32)
    rank = 5 if data_format in ("NDHWC", "NCDHW") else 4
    channels_first = data_format.startswith("NC")
    axes = [0] + list(range(2, rank)) if channels_first else list(range(rank - 1))
    as_channels = (lambda v: raw_ops.Reshape(tensor=v, shape=const([1, -1] + [1] * (rank - 2)))) \
        if channels_first else (lambda v: v)
    mean, sum_, mul, sub = raw_ops.Mean, raw_ops.Sum, raw_ops.Mul, raw_ops.Sub
    scale = as_channels(scale)
    grad_offset = _reduce(sum_, grad_y, axes)
    if is_training:
        keep = channels_first
        mean_x = _reduce(mean, x, axes, keep)
        x_offset = sub(x=x, y=mean_x)
        var_x = _reduce(mean, raw_ops.SquaredDifference(
            x=x, y=raw_ops.StopGradient(input=mean_x)), axes, keep)
        var_eps = raw_ops.AddV2(x=var_x, y=scalar_like(epsilon, var_x))
        grad_y_offset = sub(x=grad_y, y=_reduce(mean, grad_y, axes, keep))
        mean_dy_x = _reduce(mean, mul(x=grad_y, y=x_offset), axes, keep)
        reciprocal = raw_ops.Reciprocal(x=var_eps)
        grad_x = mul(x=mul(x=scale, y=raw_ops.Rsqrt(x=var_eps)),
                     y=sub(x=grad_y_offset, y=mul(x=mul(x=reciprocal, y=mean_dy_x), y=x_offset)))
        grad_scale = mul(x=raw_ops.Rsqrt(x=var_eps),
                         y=_reduce(sum_, mul(x=grad_y, y=x_offset), axes, keep))
        if channels_first:
            grad_scale = raw_ops.Squeeze(input=grad_scale, axis=axes)
    else:
        pop_mean, pop_var = as_channels(pop_mean), as_channels(pop_var)
        var_rsqrt = raw_ops.Rsqrt(x=raw_ops.AddV2(x=pop_var, y=scalar_like(epsilon, pop_var)))
        grad_scale = _reduce(sum_, mul(x=mul(x=grad_y, y=sub(x=x, y=pop_mean)), y=var_rsqrt),
                             axes)
        grad_x = mul(x=mul(x=grad_y, y=scale), y=var_rsqrt)
    if x_dtype != grad_x.dtype:
        grad_x = raw_ops.Cast(x=grad_x, DstT=x_dtype)
    return grad_x, grad_scale, grad_offset


def _fused_batch_norm_grad_grad(op, grad_grad_x, grad_grad_scale, grad_grad_offset, *_):
    """Differentiates the composition above w.r.t. y_backprop, x and scale, seeded with the
    incoming gradients. TF does this with a GradientTape, which sees only the composition:
    here the op's inputs are stop_gradients, so no path through their producers counts."""
    grad_y, x, scale, pop_mean, pop_var = inputs = op.inputs[:5]
    outputs = _batch_norm_grad_composition(
        grad_y, x, scale, pop_mean, pop_var, op.get_attr("epsilon"),
        op.get_attr("data_format"), op.get_attr("is_training"))
    grad_grad_y, grad_x, grad_scale = gradients(
        list(outputs), [grad_y, x, scale],
        grad_ys=[grad_grad_x, grad_grad_scale, grad_grad_offset], stop_gradients=list(inputs))
    return [grad_grad_y, grad_x, grad_scale] + [None] * (len(op.inputs) - 3)


for _grad_op in _GRAD_OPS.values():
    RegisterGradient(_grad_op)(_fused_batch_norm_grad_grad)


@RegisterGradient("LRN")
def _lrn_grad(op, grad):
    attrs = {name: op.get_attr(name) for name in ("depth_radius", "bias", "alpha", "beta")}
    return [raw_ops.LRNGrad(input_grads=grad, input_image=op.inputs[0],
                            output_image=op.outputs[0], **attrs)]
