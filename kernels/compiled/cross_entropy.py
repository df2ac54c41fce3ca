"""Sparse softmax cross-entropy in one pass per row (numba): each row's log-softmax
(x - max - log(sum(exp(x - max)))), its loss at the label and the backprop (softmax less
one at the label), what `kernels.ops.loss` computes on the host. The sum of the exps and
what follows from it are float64 (a long row of float32 logits then loses no accuracy to
the order of its additions), each result rounded once to the logits' type."""

import numpy as np
from numba import njit, prange


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
        top = row[0]
        for j in range(1, classes):
            if row[j] > top:
                top = row[j]
        total = 0.0
        for j in range(classes):
            shifted = row[j] - top
            out[j] = shifted
            total += np.exp(shifted)
        log_total = np.log(total)
        for j in range(classes):
            out[j] = np.exp(np.float64(out[j]) - log_total)
        label = labels[i]
        loss[i] = log_total - np.float64(row[label] - top)
        out[label] -= 1
    return -1
