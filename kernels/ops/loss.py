"""Fused softmax cross-entropy kernels (loss and backprop, softmax - labels, in one pass)
and ArgMax/ArgMin, for the CPU and the GPU, written once against `ctx.xp`.

float16/bfloat16 are computed in float32 and rounded once, as the conv kernels do.
Out-of-range sparse labels are an InvalidArgumentError on every device (TF's CPU kernel;
TF's GPU kernel gives NaN rows instead): on a GPU that check reads one flag back to the host,
and the labels themselves only to write the message.
"""

import numpy as np

from graphops.kernels.support.kernel_util import DEVICES, host_copy, softmax
from graphops.kernels.ops.math import broadcast_shape
from graphops.registry import dtypes
from graphops.registry.errors import InvalidArgumentError
from graphops.registry.kernel_registry import OpKernel, register_kernel
from graphops.registry.tensor_shape import shape_str

_FLOATS = list(dtypes.FLOAT_TYPES)


def _log_softmax(xp, logits):
    """log(softmax(logits)) along the last axis of a matrix, in float32 or wider."""
    wide = logits.astype(np.promote_types(logits.dtype, np.float32))
    if wide.size == 0:       # no maximum to take (every result is empty anyway)
        return wide
    return softmax(xp, wide, log=True)


@register_kernel("SparseSoftmaxCrossEntropyWithLogits", DEVICES,
                 type_constraints={"T": _FLOATS, "Tlabels": [dtypes.int32, dtypes.int64]})
class SparseSoftmaxCrossEntropyWithLogitsKernel(OpKernel):
    def compute(self, ctx):
        logits, labels, xp = ctx.input(0), ctx.input(1), ctx.xp
        if logits.ndim != 2:
            raise InvalidArgumentError(
                f"logits must be 2-D, but got shape {shape_str(logits.shape)}")
        if labels.ndim != 1:
            raise InvalidArgumentError(
                f"labels must be 1-D, but got shape {shape_str(labels.shape)}")
        if logits.shape[0] != labels.shape[0]:
            raise InvalidArgumentError(
                "logits and labels must have the same first dimension, got logits shape "
                f"{shape_str(logits.shape)} and labels shape {shape_str(labels.shape)}")
        batch, classes = logits.shape
        if batch > 0 and classes == 0:
            raise InvalidArgumentError(
                f"Must have at least one class, but got logits shape {shape_str(logits.shape)}")
        if ((labels < 0) | (labels >= classes)).any():
            values = host_copy(labels)
            bad = values[(values < 0) | (values >= classes)]
            raise InvalidArgumentError(
                f"Received a label value of {bad[0]} which is outside the valid range "
                f"of [0, {classes}).  Label values: {' '.join(str(v) for v in values)}")
        log_probs = _log_softmax(xp, logits)
        rows = xp.arange(batch)
        backprop = xp.exp(log_probs)
        backprop[rows, labels] -= 1
        ctx.set_output(0, (-log_probs[rows, labels]).astype(logits.dtype))
        ctx.set_output(1, backprop.astype(logits.dtype))


@register_kernel("SoftmaxCrossEntropyWithLogits", DEVICES, type_constraints={"T": _FLOATS})
class SoftmaxCrossEntropyWithLogitsKernel(OpKernel):
    def compute(self, ctx):
        logits, labels, xp = ctx.input(0), ctx.input(1), ctx.xp
        shape = broadcast_shape(logits.shape, labels.shape)
        if shape is None:
            raise InvalidArgumentError(
                "logits and labels must be broadcastable: logits_size="
                f"{shape_str(logits.shape)} labels_size={shape_str(labels.shape)}")
        if len(shape) != 2:
            raise InvalidArgumentError("logits and labels must be either 2-dimensional, or "
                                       "broadcasted to be 2-dimensional")
        log_probs = _log_softmax(xp, xp.broadcast_to(logits, tuple(shape)))
        wide_labels = xp.broadcast_to(labels.astype(log_probs.dtype), tuple(shape))
        loss = -(wide_labels * log_probs).sum(axis=1)
        ctx.set_output(0, loss.astype(logits.dtype))
        ctx.set_output(1, (xp.exp(log_probs) - wide_labels).astype(logits.dtype))


class ArgOpKernel(OpKernel):
    """Index of the largest (`largest`) or smallest value along `dimension`: the first one on
    ties; NaNs are skipped (an all-NaN row gives 0), as TF's CPU kernel does."""

    largest = True

    def __init__(self, ctx):
        super().__init__(ctx)
        self.output_type = ctx.get_attr("output_type")

    def compute(self, ctx):
        x, dimension, xp = ctx.input(0), ctx.input(1), ctx.xp
        if dimension.ndim != 0:
            raise InvalidArgumentError(
                f"dim must be a scalar, but received tensor of shape: "
                f"{shape_str(dimension.shape)}")
        axis = int(dimension)
        if not -x.ndim <= axis < x.ndim:
            raise InvalidArgumentError(
                f"Expected dimension in the range [{-x.ndim}, {x.ndim}), but got {axis}")
        if x.shape[axis] == 0:
            raise InvalidArgumentError(
                f"Reduction axis {axis} is empty in shape {shape_str(x.shape)}")
        if x.dtype.kind == "f" or x.dtype == dtypes.bfloat16.np_dtype:
            x = x.astype(np.promote_types(x.dtype, np.float32), copy=False)
            x = xp.where(xp.isnan(x), -np.inf if self.largest else np.inf, x)
        index = xp.argmax(x, axis=axis) if self.largest else xp.argmin(x, axis=axis)
        ctx.set_output(0, index.astype(self.output_type.np_dtype))


_ARG_TYPES = {"T": list(dtypes.type_set("realnumbertype")) + [dtypes.bool_]}
register_kernel("ArgMax", DEVICES, host_memory=("dimension",), type_constraints=_ARG_TYPES)(
    ArgOpKernel)
register_kernel("ArgMin", DEVICES, host_memory=("dimension",), type_constraints=_ARG_TYPES)(
    type("ArgMinKernel", (ArgOpKernel,), {"largest": False}))
