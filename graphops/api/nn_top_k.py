"""TF's top-k wrappers (``tf.nn.top_k``, TF1's ``tf.compat.v1.nn.in_top_k``) on the
TopKV2 and InTopKV2 ops."""

from graphops.api import raw_ops
from graphops.api.nn_args import op_scope
from graphops.building.values import convert_value, dtype_of
from graphops.registry import dtypes


def top_k(input, k=1, sorted=True, index_type=dtypes.int32, name=None):  # noqa: A002
    """(values, indices) of the `k` largest entries of each last-axis row of `input`,
    largest first, equal values in index order (``tf.nn.top_k``)."""
    return raw_ops.TopKV2(input=input, k=k, sorted=sorted, index_type=index_type, name=name)


def in_top_k(predictions, targets, k, name=None):
    """Whether each `targets[i]` is among the `k` largest `predictions[i]` (ties count
    in; a target out of range or a non-finite prediction gives False)
    (``tf.compat.v1.nn.in_top_k``)."""
    with op_scope(name, "in_top_k", [predictions, targets]):
        targets = convert_value(targets)
        return raw_ops.InTopKV2(predictions=predictions, targets=targets,
                                k=convert_value(k, dtype_of(targets)), name=name)
