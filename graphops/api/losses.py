"""TF1's ``tf.compat.v1.losses`` as ``gp.losses``: the per-element losses reduced by
`compute_weighted_loss` (weights broadcast against the losses, then a `Reduction`), each
added to the graph's LOSSES collection, and the collection readers `get_losses`,
`get_regularization_loss(es)`, `get_total_loss`.

The graphs are TF's: float32 arithmetic under the loss's name scope, the static
broadcast check as a NoOp every later op depends on, "num_present" counting the
non-zero weights, the result named ".../value". A broadcast check TF can only make at run
time (shapes unknown while building) is not built here. Eagerly the losses compute the
same values and no collection is touched, as in TF."""

import contextlib

import numpy as np

from graphops.api import nn_losses, raw_ops, shape_ops
from graphops.api.nn_args import (building_graph, deprecated_argument_lookup, op_scope,
                                  static_dims)
from graphops.api.math_ops import add_n
from graphops.api.tf1_names import missing_tf1_attribute
from graphops.building.constant_op import constant
from graphops.building.graph import get_default_graph
from graphops.building.graph_collections import GraphKeys
from graphops.building.values import convert_value, dtype_of
from graphops.registry import dtypes


class Reduction:
    """How `compute_weighted_loss` reduces the weighted losses (TF's key strings)."""

    NONE = "none"
    SUM = "weighted_sum"
    SUM_OVER_BATCH_SIZE = "weighted_sum_over_batch_size"
    MEAN = "weighted_mean"
    SUM_BY_NONZERO_WEIGHTS = "weighted_sum_by_nonzero_weights"
    SUM_OVER_NONZERO_WEIGHTS = SUM_BY_NONZERO_WEIGHTS

    @classmethod
    def all(cls):
        return (cls.NONE, cls.SUM, cls.MEAN, cls.SUM_OVER_BATCH_SIZE,
                cls.SUM_OVER_NONZERO_WEIGHTS, cls.SUM_BY_NONZERO_WEIGHTS)

    @classmethod
    def validate(cls, key):
        if key not in cls.all():
            raise ValueError(f"Invalid Reduction Key {key}. Key should be one of {cls.all()}.")


def _float32(value):
    """TF's math_ops.cast(value, float32)."""
    return _cast_to(value, dtypes.float32)


def _all_axes(value):
    """The axes of a reduction over everything: a constant when the rank is known."""
    dims = static_dims(value)
    if dims is not None:
        return np.arange(len(dims), dtype=np.int32)
    return raw_ops.Range(start=np.int32(0), limit=raw_ops.Rank(input=value), delta=np.int32(1))


@contextlib.contextmanager
def _broadcast_checked(weights, values):
    """TF's assert_broadcastable, as far as the static shapes decide it: a ValueError when
    `weights` cannot broadcast to `values`, else (graph mode) a NoOp that the ops built
    inside depend on."""
    w_dims, v_dims = static_dims(weights), static_dims(values)
    check = None
    if w_dims is not None and v_dims is not None:
        if w_dims and len(w_dims) != len(v_dims):
            raise ValueError(
                f"weights can not be broadcast to values. values.rank={len(v_dims)}. "
                f"weights.rank={len(w_dims)}. values.shape={_tf_shape(v_dims)}. "
                f"weights.shape={_tf_shape(w_dims)}.")
        if not w_dims:
            check = "static_scalar_check_success"
        elif None not in w_dims + v_dims:
            for i, (w, v) in enumerate(zip(w_dims, v_dims)):
                if w not in (1, v):
                    raise ValueError(
                        f"weights can not be broadcast to values. Mismatch at dim {i}. "
                        f"values.shape={np.array(v_dims)}, weights.shape={np.array(w_dims)}.")
            check = "static_dims_check_success"
    graph = building_graph(weights, values)
    if graph is None or check is None:
        yield
        return
    with graph.name_scope("assert_broadcastable"):
        done = raw_ops.NoOp(name=check)
    with graph.control_dependencies([done]):
        yield


def _num_present(losses, weights):
    """How many losses carry a non-zero weight (weights broadcast to the losses)."""
    with op_scope(None, "num_present", [losses, weights]) as scope:
        present = raw_ops.Select(condition=raw_ops.Equal(x=weights, y=np.float32(0)),
                                 x=shape_ops.zeros_like(weights), y=shape_ops.ones_like(weights))
        with op_scope(None, "broadcast_weights", [present, losses]) as broadcast:
            with _broadcast_checked(present, losses):
                present = raw_ops.Mul(x=present, y=shape_ops.ones_like(losses), name=broadcast)
        return raw_ops.Sum(input=present, axis=_all_axes(present), name=scope)


def _safe_mean(loss, count):
    total = raw_ops.Sum(input=loss, axis=raw_ops.Range(
        start=np.int32(0), limit=shape_ops.rank(loss), delta=np.int32(1)))
    return raw_ops.DivNoNan(x=total, y=count, name="value")


def compute_weighted_loss(losses, weights=1.0, scope=None, loss_collection=GraphKeys.LOSSES,
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """`losses` * `weights` reduced by `reduction`, in the losses' dtype, added to
    `loss_collection` (``tf.compat.v1.losses.compute_weighted_loss``)."""
    Reduction.validate(reduction)
    with op_scope(scope, "weighted_loss", [losses, weights]):
        losses = convert_value(losses)
        input_dtype = dtype_of(losses)
        weights_in = convert_value(weights) if hasattr(weights, "dtype") else np.asarray(weights)
        with _broadcast_checked(weights_in, losses):
            losses = _float32(losses)
            weights = _float32(weights)
            loss = raw_ops.Mul(x=losses, y=weights)
            if reduction != Reduction.NONE:
                total = raw_ops.Sum(input=loss, axis=_all_axes(loss))
                if reduction == Reduction.MEAN:
                    count = raw_ops.Mul(x=shape_ops.ones_like(losses), y=weights)
                    loss = _safe_mean(total, raw_ops.Sum(input=count, axis=_all_axes(count)))
                elif reduction == Reduction.SUM_BY_NONZERO_WEIGHTS:
                    loss = _safe_mean(total, _num_present(losses, weights))
                elif reduction == Reduction.SUM_OVER_BATCH_SIZE:
                    count = raw_ops.Cast(x=shape_ops.size(losses), DstT=dtypes.float32)
                    loss = _safe_mean(total, count)
                else:
                    loss = total
            if input_dtype != dtypes.float32:
                loss = raw_ops.Cast(x=loss, DstT=input_dtype)
            add_loss(loss, loss_collection)
            return loss


def _check_args(**arguments):
    for name, value in arguments.items():
        if value is None:
            raise ValueError(f"Argument `{name}` must not be None.")


def _check_compatible(a, b):
    a_dims, b_dims = static_dims(a), static_dims(b)
    if a_dims is None or b_dims is None:
        return
    if len(a_dims) != len(b_dims) or any(x is not None and y is not None and x != y
                                         for x, y in zip(a_dims, b_dims)):
        raise ValueError(f"Shapes {_tf_shape(a_dims)} and {_tf_shape(b_dims)} are "
                         "incompatible")


def _tf_shape(dims):
    inner = ", ".join("None" if d is None else str(d) for d in dims)
    return f"({inner},)" if len(dims) == 1 else f"({inner})"


def _pair(predictions, labels):
    """predictions and labels as float32, checked for compatible shapes."""
    predictions, labels = _float32(predictions), _float32(labels)
    _check_compatible(predictions, labels)
    return predictions, labels


def absolute_difference(labels, predictions, weights=1.0, scope=None,
                        loss_collection=GraphKeys.LOSSES,
                        reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """|predictions - labels|, weighted and reduced."""
    _check_args(labels=labels, predictions=predictions)
    with op_scope(scope, "absolute_difference", [predictions, labels, weights]) as name:
        predictions, labels = _pair(predictions, labels)
        losses = raw_ops.Abs(x=raw_ops.Sub(x=predictions, y=labels))
        return compute_weighted_loss(losses, weights, name, loss_collection, reduction)


def mean_squared_error(labels, predictions, weights=1.0, scope=None,
                       loss_collection=GraphKeys.LOSSES,
                       reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """(predictions - labels) ** 2, weighted and reduced."""
    _check_args(labels=labels, predictions=predictions)
    with op_scope(scope, "mean_squared_error", [predictions, labels, weights]) as name:
        predictions, labels = _pair(predictions, labels)
        losses = raw_ops.SquaredDifference(x=predictions, y=labels)
        return compute_weighted_loss(losses, weights, name, loss_collection, reduction)


def huber_loss(labels, predictions, weights=1.0, delta=1.0, scope=None,
               loss_collection=GraphKeys.LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """0.5 * e ** 2 for |e| <= delta, delta * (|e| - 0.5 * delta) beyond (e = the error)."""
    _check_args(labels=labels, predictions=predictions)
    with op_scope(scope, "huber_loss", [predictions, labels, weights]) as name:
        predictions, labels = _pair(predictions, labels)
        abs_error = raw_ops.Abs(x=raw_ops.Sub(x=predictions, y=labels))
        quadratic = raw_ops.Minimum(x=abs_error, y=np.float32(delta))
        linear = raw_ops.Sub(x=abs_error, y=quadratic)
        losses = raw_ops.AddV2(
            x=raw_ops.Mul(x=np.float32(0.5), y=raw_ops.Mul(x=quadratic, y=quadratic)),
            y=raw_ops.Mul(x=np.float32(delta), y=linear))
        return compute_weighted_loss(losses, weights, name, loss_collection, reduction)


def log_loss(labels, predictions, weights=1.0, epsilon=1e-7, scope=None,
             loss_collection=GraphKeys.LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """-labels * log(p + eps) - (1 - labels) * log(1 - p + eps), weighted and reduced."""
    _check_args(labels=labels, predictions=predictions)
    with op_scope(scope, "log_loss", [predictions, labels, weights]) as name:
        predictions, labels = _pair(predictions, labels)
        eps, one = np.float32(epsilon), np.float32(1)
        positive = raw_ops.Neg(x=raw_ops.Mul(x=labels, y=raw_ops.Log(
            x=raw_ops.AddV2(x=predictions, y=eps))))
        negative = raw_ops.Mul(x=raw_ops.Sub(x=one, y=labels), y=raw_ops.Log(
            x=raw_ops.AddV2(x=raw_ops.Sub(x=one, y=predictions), y=eps)))
        losses = raw_ops.Sub(x=positive, y=negative)
        return compute_weighted_loss(losses, weights, name, loss_collection, reduction)


def hinge_loss(labels, logits, weights=1.0, scope=None, loss_collection=GraphKeys.LOSSES,
               reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """relu(1 - (2 * labels - 1) * logits) for labels in {0, 1}, weighted and reduced."""
    _check_args(labels=labels, logits=logits)
    with op_scope(scope, "hinge_loss", [logits, labels, weights]) as name:
        logits, labels = _pair(logits, labels)
        all_ones = shape_ops.ones_like(labels)
        signs = raw_ops.Sub(x=raw_ops.Mul(x=np.float32(2), y=labels), y=all_ones)
        losses = raw_ops.Relu(features=raw_ops.Sub(x=all_ones,
                                                   y=raw_ops.Mul(x=signs, y=logits)))
        return compute_weighted_loss(losses, weights, name, loss_collection, reduction)


def cosine_distance(labels, predictions, axis=None, weights=1.0, scope=None,
                    loss_collection=GraphKeys.LOSSES,
                    reduction=Reduction.SUM_BY_NONZERO_WEIGHTS, dim=None):
    """1 - sum(predictions * labels, axis) for unit-normalised inputs, weighted and
    reduced (`dim` is axis's old spelling)."""
    axis = deprecated_argument_lookup("axis", axis, "dim", dim)
    if axis is None:
        raise ValueError("You must specify argument `axis`.")
    _check_args(labels=labels, predictions=predictions)
    with op_scope(scope, "cosine_distance_loss", [predictions, labels, weights]) as name:
        predictions, labels = _pair(predictions, labels)
        radial = raw_ops.Sum(input=raw_ops.Mul(x=predictions, y=labels),
                             axis=np.int32([axis]), keep_dims=True)
        losses = raw_ops.Sub(x=np.float32(1), y=radial)
        return compute_weighted_loss(losses, weights, name, loss_collection, reduction)


def sigmoid_cross_entropy(multi_class_labels, logits, weights=1.0, label_smoothing=0,
                          scope=None, loss_collection=GraphKeys.LOSSES,
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """nn.sigmoid_cross_entropy_with_logits against labels smoothed towards 1/2."""
    _check_args(multi_class_labels=multi_class_labels, logits=logits)
    with op_scope(scope, "sigmoid_cross_entropy_loss",
                  [logits, multi_class_labels, weights]) as name:
        logits = convert_value(logits)
        labels = _cast_to(multi_class_labels, dtype_of(logits))
        _check_compatible(logits, labels)
        if label_smoothing > 0:
            labels = raw_ops.AddV2(x=raw_ops.Mul(x=labels, y=_scalar(1 - label_smoothing, logits)),
                                   y=_scalar(0.5 * label_smoothing, logits))
        losses = nn_losses.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits,
                                                             name="xentropy")
        return compute_weighted_loss(losses, weights, name, loss_collection, reduction)


def softmax_cross_entropy(onehot_labels, logits, weights=1.0, label_smoothing=0, scope=None,
                          loss_collection=GraphKeys.LOSSES,
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """Softmax cross-entropy against one-hot rows smoothed towards 1/classes; no gradient
    into the labels."""
    _check_args(onehot_labels=onehot_labels, logits=logits)
    with op_scope(scope, "softmax_cross_entropy_loss", [logits, onehot_labels, weights]) as name:
        logits = convert_value(logits)
        labels = _cast_to(onehot_labels, dtype_of(logits))
        _check_compatible(logits, labels)
        if label_smoothing > 0:
            classes = raw_ops.Cast(x=raw_ops.StridedSlice(
                input=shape_ops.shape(labels), begin=np.int32([-1]), end=np.int32([0]),
                strides=np.int32([1]), end_mask=1, shrink_axis_mask=1), DstT=dtype_of(logits))
            negatives = raw_ops.RealDiv(x=_scalar(label_smoothing, logits), y=classes)
            labels = raw_ops.AddV2(
                x=raw_ops.Mul(x=labels, y=_scalar(1 - label_smoothing, logits)), y=negatives)
        labels = raw_ops.StopGradient(input=labels, name="labels_stop_gradient")
        losses = nn_losses.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits,
                                                                name="xentropy")
        return compute_weighted_loss(losses, weights, name, loss_collection, reduction)


def sparse_softmax_cross_entropy(labels, logits, weights=1.0, scope=None,
                                 loss_collection=GraphKeys.LOSSES,
                                 reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """Softmax cross-entropy against class indices; labels (and weights) with a trailing
    dim of 1 are squeezed first."""
    _check_args(labels=labels, logits=logits)
    with op_scope(scope, "sparse_softmax_cross_entropy_loss", [logits, labels, weights]) as name:
        labels, logits = convert_value(labels), convert_value(logits)
        weights = convert_value(weights) if hasattr(weights, "dtype") else \
            convert_value(np.float32(weights))
        label_dims, logit_dims = static_dims(labels), static_dims(logits)
        if label_dims is not None and logit_dims is not None:
            if len(logit_dims) - len(label_dims) == 0 and label_dims[-1] in (1, None):
                labels = raw_ops.Squeeze(input=labels, axis=[-1])
                label_dims = label_dims[:-1]
            weight_dims = static_dims(weights)
            if weight_dims is not None and len(weight_dims) - len(label_dims) == 1:
                weights = raw_ops.Squeeze(input=weights, axis=[-1])
        losses = nn_losses.sparse_softmax_cross_entropy_with_logits(
            labels=labels, logits=logits, name="xentropy")
        return compute_weighted_loss(losses, weights, name, loss_collection, reduction)


def _cast_to(value, dtype):
    """TF's math_ops.cast(value, dtype): a constant for Python values, the tensor itself
    when already of `dtype`, else a Cast."""
    value = convert_value(value) if hasattr(value, "dtype") else np.asarray(value,
                                                                            dtype.np_dtype)
    return value if dtype_of(value) == dtype else raw_ops.Cast(x=value, DstT=dtype)


def _scalar(value, like):
    return np.asarray(value, dtype_of(like).np_dtype)


def add_loss(loss, loss_collection=GraphKeys.LOSSES):
    """Adds `loss` to the graph collection `loss_collection` (nothing eagerly)."""
    graph = building_graph(loss)
    if loss_collection and graph is not None:
        graph.add_to_collection(loss_collection, loss)


def get_losses(scope=None, loss_collection=GraphKeys.LOSSES):
    """The losses in `loss_collection` (those whose name matches `scope`)."""
    return get_default_graph().get_collection(loss_collection, scope)


def get_regularization_losses(scope=None):
    """The REGULARIZATION_LOSSES collection (those whose name matches `scope`)."""
    return get_default_graph().get_collection(GraphKeys.REGULARIZATION_LOSSES, scope)


def get_regularization_loss(scope=None, name="total_regularization_loss"):
    """The sum of the regularization losses (AddN named `name`), 0.0 when there are none."""
    losses = get_regularization_losses(scope)
    if losses:
        return add_n(losses, name)
    return constant(0.0)


def get_total_loss(add_regularization_losses=True, name="total_loss", scope=None):
    """The sum of the LOSSES collection, plus the regularization losses by default."""
    losses = get_losses(scope=scope)
    if add_regularization_losses:
        losses += get_regularization_losses(scope=scope)
    return add_n(losses, name)


def __getattr__(name):
    raise missing_tf1_attribute("losses", name)
