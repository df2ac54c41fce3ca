"""Softmax and the sparse softmax cross-entropy in one pass per row (numba), what
`kernels.ops.activations` and `kernels.ops.loss` compute on the host: each row's softmax
(exp(x - max) / sum(exp(x - max))) or log-softmax (x - max - log(sum(exp(x - max)))), and
for the cross-entropy its loss at the label and the backprop (softmax less one at the
label). x - max and its exp are in the logits' type, as in NumPy's passes, one exp per value
(kept in the output until divided by the sum); the sum of the exps, its log and the
quotients are float64, each rounded once to the logits' type (a long row of float32
logits then loses no accuracy to the order of its additions)."""

import numpy as np
from numba import njit, prange


@njit(cache=True, nogil=True)
def _exps(row, out):
    """Writes exp(row - max(row)) to `out` in the row's type and returns (the max, the
    float64 sum of the exps). A row holding a NaN or +inf, or only -inf, gives NaN
    throughout, as NumPy's passes do."""
    top = row[0]
    for j in range(1, row.size):
        if row[j] > top or row[j] != row[j]:
            top = row[j]
    total = 0.0
    for j in range(row.size):
        out[j] = np.exp(row[j] - top)
        total += out[j]
    return top, total


@njit(cache=True, parallel=True, nogil=True)
def softmax_rows(logits, out, log):
    """Fills `out` (C-contiguous, of the logits' shape and type) with the softmax
    (log-softmax with `log`) of each row of C-contiguous `logits` [batch, classes]
    (classes >= 1)."""
    for i in prange(logits.shape[0]):
        row, probs = logits[i], out[i]
        top, total = _exps(row, probs)
        if log:
            log_total = np.log(total)
            for j in range(row.size):
                probs[j] = np.float64(row[j] - top) - log_total
        else:
            for j in range(row.size):
                probs[j] = probs[j] / total


@njit(cache=True, parallel=True, nogil=True)
def sparse_rows(logits, labels, loss, backprop):
    """Fills `loss` [batch] and `backprop` [batch, classes] from C-contiguous `logits`
    [batch, classes] (classes >= 1) and `labels` [batch]. Returns the index of the first
    label outside [0, classes), having filled nothing meaningful, or -1."""
    batch, classes = logits.shape
    for i in range(batch):
        if labels[i] < 0 or labels[i] >= classes:
            return i
    for i in prange(batch):
        row, out = logits[i], backprop[i]
        top, total = _exps(row, out)
        label = labels[i]
        loss[i] = np.log(total) - np.float64(row[label] - top)
        for j in range(classes):
            out[j] = out[j] / total
        out[label] -= 1
    return -1
