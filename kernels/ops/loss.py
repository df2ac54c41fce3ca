"""Fused softmax cross-entropy kernels (loss and backprop, softmax - labels, in one pass),
for the CPU and the GPU, written once against `ctx.xp`.

float16/bfloat16 are computed in float32 and rounded once, as the conv kernels do.
Out-of-range sparse labels are an InvalidArgumentError on every device (TF's CPU kernel;
TF's GPU kernel gives NaN rows instead): on a GPU that check reads one flag back to the host,
and the labels themselves only to write the message.
"""

import numpy as np

from graphops.kernels import compiled
from graphops.kernels.compiled import ELEMENT_CHUNK, loops
from graphops.kernels.ops.activations import numpy_softmax
from graphops.kernels.support.kernel_util import (COMPILED_FLOATS, DEVICES,
                                                  PARALLEL_MIN_SIZE_COMPUTE, host_copy, softmax)
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
    """float32 and float64 logits on the CPU skip the float32 copy and the final casts: one
    compiled pass over the rows, computed or prepared alike (so eager ops and Session runs
    give the same bits)."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self._unsigned = np.dtype(f"u{ctx.get_attr('Tlabels').np_dtype.itemsize}")

    def compute(self, ctx):
        logits, labels, xp = ctx.input(0), ctx.input(1), ctx.xp
        self._check_shapes(logits, labels)
        batch, classes = logits.shape
        if type(logits) is np.ndarray and logits.dtype in COMPILED_FLOATS and batch and classes:
            loss, backprop = self._host_outputs(np.ascontiguousarray(logits), labels)
            ctx.set_output(0, loss)
            ctx.set_output(1, backprop)
            return
        self._check_labels(labels, classes)
        log_probs, rows = _log_softmax(xp, logits), xp.arange(batch)
        backprop = xp.exp(log_probs)
        backprop[rows, labels] -= 1
        ctx.set_output(0, (-log_probs[rows, labels]).astype(logits.dtype))
        ctx.set_output(1, backprop.astype(logits.dtype))

    def prepare(self, ctx):
        """compute's host path, for float32 or float64 logits of at least one row and one
        class, after compute's shape checks."""
        logits, labels = ctx.inputs
        self._check_shapes(logits, labels)
        if ctx.xp is not np or logits.dtype not in COMPILED_FLOATS or not logits.size:
            return None
        return lambda inputs: self._host_outputs(np.ascontiguousarray(inputs[0]), inputs[1])

    def _host_outputs(self, logits, labels):
        """[loss, backprop] of C-contiguous float32 or float64 `logits` of at least one row
        and class: the compiled pass over the rows (`compiled/cross_entropy.py`), or in a
        child forked after numba loaded, NumPy's passes."""
        batch, classes = logits.shape
        if not compiled.usable():
            self._check_labels(labels, classes)
            return _numpy_pass(logits, labels)
        loss, backprop = np.empty(batch, logits.dtype), np.empty(logits.shape, logits.dtype)
        single = logits.size < PARALLEL_MIN_SIZE_COMPUTE
        rows = max(1, ELEMENT_CHUNK // classes)       # a thread's rows at a time
        if loops("cross_entropy", chunk=rows, single=single).sparse_rows(
                logits, labels, loss, backprop) >= 0:
            _raise_bad_label(labels, classes)
        return [loss, backprop]

    def _check_labels(self, labels, classes):
        if labels.size and labels.view(self._unsigned).max() >= classes:    # or < 0
            _raise_bad_label(labels, classes)

    @staticmethod
    def _check_shapes(logits, labels):
        """TF's checks of the logits' and labels' shapes."""
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
        if logits.shape[0] > 0 and logits.shape[1] == 0:
            raise InvalidArgumentError(
                f"Must have at least one class, but got logits shape {shape_str(logits.shape)}")


def _numpy_pass(logits, labels):
    """[loss, backprop] of C-contiguous float32 or float64 `logits` by NumPy's passes, each
    row's label picked by its flat index."""
    batch, classes = logits.shape
    log_probs = numpy_softmax(logits, log=True)
    picked = np.arange(0, batch * classes, classes) + labels
    backprop = np.exp(log_probs)
    backprop.reshape(-1)[picked] -= 1
    loss = log_probs.reshape(-1)[picked]
    return [np.negative(loss, out=loss), backprop]


def _raise_bad_label(labels, classes):
    """TF's error for labels outside [0, classes), quoting every label."""
    values = host_copy(labels)
    bad = values[(values < 0) | (values >= classes)]
    raise InvalidArgumentError(
        f"Received a label value of {bad[0]} which is outside the valid range "
        f"of [0, {classes}).  Label values: {' '.join(str(v) for v in values)}")


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
        if (type(logits) is np.ndarray and logits.dtype in COMPILED_FLOATS and logits.size
                and logits.shape == labels.shape):
            log_probs = numpy_softmax(logits, log=True)
            loss = np.add.reduce(labels * log_probs, axis=1)
            backprop = np.exp(log_probs)
            backprop -= labels
            ctx.set_output(0, np.negative(loss, out=loss))
            ctx.set_output(1, backprop)
            return
        log_probs = _log_softmax(xp, xp.broadcast_to(logits, tuple(shape)))
        wide_labels = xp.broadcast_to(labels.astype(log_probs.dtype), tuple(shape))
        loss = -(wide_labels * log_probs).sum(axis=1)
        ctx.set_output(0, loss.astype(logits.dtype))
        ctx.set_output(1, (xp.exp(log_probs) - wide_labels).astype(logits.dtype))
