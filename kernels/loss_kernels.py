"""Fused softmax cross-entropy kernels: loss and backprop (softmax - labels) in one pass.

float16/bfloat16 are computed in float32 and rounded once, as the conv kernels do.
"""

import numpy as np

from kernels.array_kernels import shape_str
from registry import dtypes
from registry.errors import InvalidArgumentError
from registry.kernel_registry import OpKernel, register_kernel

_FLOATS = list(dtypes.FLOAT_TYPES)


def _log_softmax(logits):
    """log(softmax(logits)) along the last axis, in float32 or wider."""
    wide = logits.astype(np.promote_types(logits.dtype, np.float32))
    shifted = wide - wide.max(axis=1, keepdims=True, initial=-np.inf)
    return shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))


@register_kernel("SparseSoftmaxCrossEntropyWithLogits",
                 type_constraints={"T": _FLOATS, "Tlabels": [dtypes.int32, dtypes.int64]})
class SparseSoftmaxCrossEntropyWithLogitsKernel(OpKernel):
    def compute(self, ctx):
        logits, labels = ctx.input(0), ctx.input(1)
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
        bad = (labels < 0) | (labels >= classes)
        if bad.any():
            raise InvalidArgumentError(
                f"Received a label value of {labels[bad][0]} which is outside the valid range "
                f"of [0, {classes}).  Label values: {' '.join(str(v) for v in labels)}")
        log_probs = _log_softmax(logits)
        rows = np.arange(batch)
        backprop = np.exp(log_probs)
        backprop[rows, labels] -= 1
        ctx.set_output(0, (-log_probs[rows, labels]).astype(logits.dtype))
        ctx.set_output(1, backprop.astype(logits.dtype))


@register_kernel("SoftmaxCrossEntropyWithLogits", type_constraints={"T": _FLOATS})
class SoftmaxCrossEntropyWithLogitsKernel(OpKernel):
    def compute(self, ctx):
        logits, labels = ctx.input(0), ctx.input(1)
        if logits.ndim != 2 or labels.ndim != 2:
            raise InvalidArgumentError("logits and labels must be either 2-dimensional, or "
                                       "broadcasted to be 2-dimensional")
        try:
            shape = np.broadcast_shapes(logits.shape, labels.shape)
        except ValueError:
            raise InvalidArgumentError(
                "logits and labels must be broadcastable: logits_size="
                f"{shape_str(logits.shape)} labels_size={shape_str(labels.shape)}") from None
        log_probs = _log_softmax(np.broadcast_to(logits, shape))
        wide_labels = labels.astype(log_probs.dtype)
        loss = -(wide_labels * log_probs).sum(axis=1)
        ctx.set_output(0, loss.astype(logits.dtype))
        ctx.set_output(1, (np.exp(log_probs) - wide_labels).astype(logits.dtype))


@register_kernel("ArgMax",
                 type_constraints={"T": list(dtypes.type_set("realnumbertype")) + [dtypes.bool_]})
class ArgMaxKernel(OpKernel):
    """Index of the largest value along `dimension` (the first one on ties)."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.output_type = ctx.get_attr("output_type")

    def compute(self, ctx):
        x, dimension = ctx.input(0), np.asarray(ctx.input(1))
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
        ctx.set_output(0, np.argmax(x, axis=axis).astype(self.output_type.np_dtype))
