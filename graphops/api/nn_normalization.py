"""TF's normalisation and statistics wrappers (``tf.compat.v1.nn.fused_batch_norm``,
``batch_normalization``, ``moments``, ``weighted_moments``, ``l2_normalize``,
``zero_fraction``, ``local_response_normalization`` / ``lrn``), built on
``graphops.raw_ops``, under TF's name scopes in graph mode."""

import numpy as np

from graphops.api import raw_ops
from graphops.api import shape_ops
from graphops.api.nn_args import deprecated_argument_lookup, op_scope, static_dims
from graphops.building.values import convert_value, dtype_of
from graphops.registry import dtypes


def _scope(name, default_name, value):
    """TF's name scope for a composite wrapper in graph mode (eager ops are unnamed)."""
    return op_scope(name, default_name, [value])


def _cast(value, dtype):
    return value if dtype_of(value) == dtype else raw_ops.Cast(x=value, DstT=dtype)


def fused_batch_norm(x, scale, offset, mean=None, variance=None, epsilon=0.001,
                     data_format="NHWC", is_training=True, name=None,
                     exponential_avg_factor=1.0):
    """Batch normalization through FusedBatchNormV3: (y, running_mean, running_variance)
    (``tf.compat.v1.nn.fused_batch_norm``)."""
    if (not is_training or exponential_avg_factor != 1.0) and (mean is None or variance is None):
        raise ValueError("Both `mean` and `variance` must be a 1D tensor when `is_training` is "
                         "False or `exponential_avg_factor` != 1.0. Received: `mean` "
                         f"{mean!r} and `variance` {variance!r}")
    empty = np.zeros([0], np.float32)
    y, running_mean, running_var, _, _, _ = raw_ops.FusedBatchNormV3(
        x=x, scale=scale, offset=offset, mean=empty if mean is None else mean,
        variance=empty if variance is None else variance, epsilon=epsilon,
        exponential_avg_factor=exponential_avg_factor, data_format=data_format,
        is_training=is_training, name=name)
    return y, running_mean, running_var


def batch_normalization(x, mean, variance, offset, scale, variance_epsilon, name=None):
    """(x - mean) * scale / sqrt(variance + variance_epsilon) + offset, with broadcasting;
    `offset` and `scale` may be None (``tf.nn.batch_normalization``)."""
    with _scope(name, "batchnorm", x):
        variance = convert_value(variance)
        inv = raw_ops.Rsqrt(x=raw_ops.AddV2(
            x=variance, y=np.asarray(variance_epsilon, dtype_of(variance).np_dtype)))
        if scale is not None:
            inv = raw_ops.Mul(x=inv, y=scale)
        shift = (raw_ops.Sub(x=offset, y=raw_ops.Mul(x=mean, y=inv)) if offset is not None
                 else raw_ops.Mul(x=raw_ops.Neg(x=mean), y=inv))
        x = convert_value(x)
        return raw_ops.AddV2(x=raw_ops.Mul(x=x, y=_cast(inv, dtype_of(x))),
                             y=_cast(shift, dtype_of(x)))


def moments(x, axes, shift=None, name=None, keep_dims=None, keepdims=None):
    """(mean, variance) of `x` over `axes`, the variance biased; float16 computed in float32
    (``tf.compat.v1.nn.moments``; `shift` is unused, as in TF)."""
    del shift
    keep_dims = bool(deprecated_argument_lookup("keepdims", keepdims, "keep_dims", keep_dims))
    with _scope(name, "moments", x):
        x = convert_value(x)
        wide = _cast(x, dtypes.float32) if dtype_of(x) == dtypes.float16 else x
        axes_value = np.asarray(axes, np.int32)
        mean = raw_ops.Mean(input=wide, axis=axes_value, keep_dims=True, name="mean")
        variance = raw_ops.Mean(
            input=raw_ops.SquaredDifference(x=wide, y=raw_ops.StopGradient(input=mean)),
            axis=axes_value, keep_dims=True, name="variance")
        if not keep_dims:
            squeeze_axes = [int(a) for a in np.reshape(axes_value, -1)]
            mean = raw_ops.Squeeze(input=mean, axis=squeeze_axes)
            variance = raw_ops.Squeeze(input=variance, axis=squeeze_axes)
        return _cast(mean, dtype_of(x)), _cast(variance, dtype_of(x))


def weighted_moments(x, axes, frequency_weights, name=None, keep_dims=None, keepdims=None):
    """(mean, variance) of `x` over `axes` with each element weighted by
    `frequency_weights` (broadcast against x); 0 where the weights sum to 0
    (``tf.compat.v1.nn.weighted_moments``)."""
    keep_dims = bool(deprecated_argument_lookup("keepdims", keepdims, "keep_dims", keep_dims))
    with op_scope(name, "weighted_moments", [x, frequency_weights]):
        x = convert_value(x)
        wide = _cast(x, dtypes.float32) if dtype_of(x) == dtypes.float16 else x
        weights = _cast(convert_value(frequency_weights), dtype_of(wide))
        axes_value = np.asarray(axes, np.int32)
        weighted_sum = raw_ops.Sum(input=raw_ops.Mul(x=weights, y=wide), axis=axes_value,
                                   keep_dims=True, name="weighted_input_sum")
        broadcast_weights = raw_ops.AddV2(x=weights, y=shape_ops.zeros_like(wide))
        weight_sum = raw_ops.Sum(input=broadcast_weights, axis=axes_value, keep_dims=True,
                                 name="sum_of_weights")
        mean = raw_ops.DivNoNan(x=weighted_sum, y=weight_sum)
        distsq = raw_ops.Sum(input=raw_ops.Mul(x=weights, y=raw_ops.SquaredDifference(
            x=wide, y=mean)), axis=axes_value, keep_dims=True, name="weighted_distsq")
        variance = raw_ops.DivNoNan(x=distsq, y=weight_sum)
        if not keep_dims:
            squeeze_axes = [int(a) for a in np.reshape(axes_value, -1)]
            mean = raw_ops.Squeeze(input=mean, axis=squeeze_axes)
            variance = raw_ops.Squeeze(input=variance, axis=squeeze_axes)
        return _cast(mean, dtype_of(x)), _cast(variance, dtype_of(x))


def l2_normalize(x, axis=None, epsilon=1e-12, name=None, dim=None):
    """x / sqrt(max(sum(x ** 2, axis), epsilon)) (``tf.compat.v1.nn.l2_normalize``; `dim`
    is axis's old spelling; None normalises over all axes)."""
    axis = deprecated_argument_lookup("axis", axis, "dim", dim)
    with _scope(name, "l2_normalize", x) as scope:
        x = convert_value(x)
        if axis is None:
            dims = static_dims(x)
            axis = (np.arange(len(dims), dtype=np.int32) if dims is not None else
                    raw_ops.Range(start=np.int32(0), limit=raw_ops.Rank(input=x),
                                  delta=np.int32(1)))
        square_sum = raw_ops.Sum(input=raw_ops.Square(x=x),
                                 axis=axis if hasattr(axis, "op") else np.int32(axis),
                                 keep_dims=True)
        inv_norm = raw_ops.Rsqrt(x=raw_ops.Maximum(
            x=square_sum, y=np.asarray(epsilon, dtype_of(x).np_dtype)))
        return raw_ops.Mul(x=x, y=inv_norm, name=scope)


def zero_fraction(value, name=None):
    """The fraction of zeros in `value`, as float32 (NaN when empty) (``tf.nn.
    zero_fraction``; TF picks an int32 or int64 count with a cond, here it is int64)."""
    with _scope(name, "zero_fraction", value):
        value = convert_value(value)
        size = raw_ops.Size(input=value, out_type=dtypes.int64)
        zero = np.zeros([], dtype_of(value).np_dtype)
        nonzero = raw_ops.Sum(input=raw_ops.Cast(x=raw_ops.NotEqual(x=value, y=zero),
                                                 DstT=dtypes.int64),
                              axis=np.arange(len(static_dims(value)), dtype=np.int32)
                              if static_dims(value) is not None
                              else raw_ops.Range(start=np.int32(0),
                                                 limit=raw_ops.Rank(input=value),
                                                 delta=np.int32(1)),
                              name="nonzero_count")
        fraction = raw_ops.RealDiv(
            x=raw_ops.Cast(x=raw_ops.Sub(x=size, y=nonzero), DstT=dtypes.float32),
            y=raw_ops.Cast(x=size, DstT=dtypes.float32))
        return raw_ops.Identity(input=fraction, name="fraction")


def local_response_normalization(input, depth_radius=5, bias=1, alpha=1, beta=0.5,  # noqa: A002
                                 name=None):
    """input / (bias + alpha * sum of squares over a depth window) ** beta (``tf.nn.lrn``)."""
    return raw_ops.LRN(input=input, depth_radius=depth_radius, bias=bias, alpha=alpha,
                       beta=beta, name=name)


lrn = local_response_normalization
