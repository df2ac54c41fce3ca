"""TF1's softmax cross-entropy wrappers (``tf.nn.sparse_softmax_cross_entropy_with_logits``,
``softmax_cross_entropy_with_logits(_v2)``): logits of any rank reshaped to the fused ops'
[rows, classes] matrices and back."""

import numpy as np

from graphops.api import raw_ops
from graphops.api.nn_args import static_dims
from graphops.building.values import convert_value


def _rows(value, classes):
    """`value` reshaped to [rows, classes] (or to a vector of rows when `classes` is None)."""
    return raw_ops.Reshape(tensor=value, shape=np.int32([-1] if classes is None else [-1, classes]))


def sparse_softmax_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None,
                                             name=None):
    """Per-example softmax cross-entropy of `logits` [..., classes] against class indices
    `labels` [...] (TF1's tf.nn.sparse_softmax_cross_entropy_with_logits)."""
    if _sentinel is not None:
        raise ValueError("Only call `sparse_softmax_cross_entropy_with_logits` with named "
                         "arguments (labels=..., logits=..., ...)")
    labels, logits = convert_value(labels), convert_value(logits)
    label_dims, logit_dims = static_dims(labels), static_dims(logits)
    if label_dims is not None and logit_dims is not None:
        if len(label_dims) != len(logit_dims) - 1:
            raise ValueError(f"Rank mismatch: Rank of labels (received {len(label_dims)}) should "
                             f"equal rank of logits minus 1 (received {len(logit_dims)}).")
        if any(a is not None and b is not None and a != b
               for a, b in zip(label_dims, logit_dims[:-1])):
            raise ValueError(
                f"Shape mismatch: The shape of labels (received {tuple(label_dims)}) should "
                f"equal the shape of logits except for the last dimension (received "
                f"{tuple(logit_dims)}).")
    if logit_dims is not None and len(logit_dims) == 2:
        return raw_ops.SparseSoftmaxCrossEntropyWithLogits(features=logits, labels=labels,
                                                           name=name).loss
    classes = -1 if logit_dims is None or logit_dims[-1] is None else logit_dims[-1]
    loss = raw_ops.SparseSoftmaxCrossEntropyWithLogits(
        features=_rows(logits, classes), labels=_rows(labels, None)).loss
    return raw_ops.Reshape(tensor=loss, shape=raw_ops.Shape(input=labels), name=name)


def softmax_cross_entropy_with_logits(labels, logits, axis=-1, name=None):
    """Per-example softmax cross-entropy of `logits` against probability rows `labels`
    along the last axis; gradients flow into both (TF2's form, TF1's _v2)."""
    labels, logits = convert_value(labels), convert_value(logits)
    dims = static_dims(logits)
    if dims is None:
        raise ValueError("softmax_cross_entropy_with_logits needs logits of known rank")
    if axis % max(len(dims), 1) != len(dims) - 1:
        raise ValueError(f"softmax_cross_entropy_with_logits supports only the last axis, "
                         f"got axis={axis} for logits of rank {len(dims)}")
    if len(dims) == 2:
        return raw_ops.SoftmaxCrossEntropyWithLogits(features=logits, labels=labels,
                                                     name=name).loss
    classes = dims[-1] if dims and dims[-1] is not None else -1
    loss = raw_ops.SoftmaxCrossEntropyWithLogits(features=_rows(logits, classes),
                                                 labels=_rows(labels, classes)).loss
    batch = raw_ops.Slice(input=raw_ops.Shape(input=logits), begin=np.int32([0]),
                          size=np.int32([len(dims) - 1]))
    return raw_ops.Reshape(tensor=loss, shape=batch, name=name)


softmax_cross_entropy_with_logits_v2 = softmax_cross_entropy_with_logits
