"""TF1's initializers (tf.compat.v1 init_ops): callables `(shape, dtype=None,
partition_info=None)` building the ops TF's build, under the same default names.

The random ones pass their `seed` to graphops' random ops, which reproduce TF's Philox
streams bit for bit, so a seeded initializer gives TF's exact values.
"""

import math

import numpy as np

from graphops.api import random_ops
from graphops.api import raw_ops
from graphops.building.constant_op import constant
from graphops.building.graph import get_default_graph
from graphops.building.tensor import Tensor
from graphops.registry import dtypes
from graphops.registry.tensor_shape import as_shape

_SMALL = 1000       # TF's _constant_if_small: a Const below this many elements, else Fill


def filled(value, shape, dtype, name):
    """TF's array_ops.zeros/ones for a static shape: a Const if small, else a Fill."""
    dtype = dtypes.as_dtype(dtype)
    graph = get_default_graph()
    with graph.as_default(), graph.name_scope(name) as scope:
        if isinstance(shape, Tensor):
            return raw_ops.Fill(dims=shape, value=constant(value, dtype=dtype), name=scope)
        dims = as_shape(shape).as_list()
        if int(np.prod(dims, dtype=np.int64)) < _SMALL:
            return raw_ops.Const(value=np.full(dims, value, dtype.np_dtype), dtype=dtype,
                                 name=scope)
        dims_t = constant(np.array(dims, np.int32), name="shape_as_tensor")
        return raw_ops.Fill(dims=dims_t, value=constant(value, dtype=dtype), name=scope)


def _float_dtype(dtype):
    dtype = dtypes.as_dtype(dtype)
    if not dtype.is_floating:
        raise ValueError(f"Argument `dtype` is expected to be floating point. Received: "
                         f"{dtype}.")
    return dtype


class Initializer:
    """Base class: `__call__(shape, dtype=None, partition_info=None)` builds the value."""

    def __call__(self, shape, dtype=None, partition_info=None):
        raise NotImplementedError

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class _Filled(Initializer):
    """Every element `_fill` (a Const named `_name`, or a Fill for large shapes)."""

    _fill = _name = None

    def __init__(self, dtype=dtypes.float32):
        self.dtype = dtypes.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        dtype = dtypes.as_dtype(dtype or self.dtype)
        return filled(bool(self._fill) if dtype is dtypes.bool_ else self._fill, shape, dtype,
                      self._name)

    def get_config(self):
        return {"dtype": self.dtype.name}


class Zeros(_Filled):
    """All zeros (a Const named "zeros", or a Fill for large shapes)."""

    _fill, _name = 0, "zeros"


class Ones(_Filled):
    """All ones (a Const named "ones", or a Fill for large shapes)."""

    _fill, _name = 1, "ones"


class Constant(Initializer):
    """`value` (a scalar fills the shape; a list/array of the shape's size is reshaped)."""

    def __init__(self, value=0, dtype=dtypes.float32, verify_shape=False):
        if not (np.isscalar(value) or isinstance(value, (list, tuple, np.ndarray))):
            raise TypeError(f"Invalid type for initial value={value} of type: "
                            f"{type(value).__name__}. Expected Python scalar, list or tuple "
                            "of values, or numpy.ndarray.")
        self.value = value
        self.dtype = dtypes.as_dtype(dtype)
        self._verify_shape = verify_shape

    def __call__(self, shape, dtype=None, partition_info=None, verify_shape=None):
        verify = self._verify_shape if verify_shape is None else verify_shape
        if verify and np.shape(self.value) != tuple(as_shape(shape).as_list()):
            raise TypeError(f"Expected Tensor's shape: {tuple(as_shape(shape).as_list())}, "
                            f"but got {np.shape(self.value)}.")
        return constant(self.value, dtype=dtype or self.dtype, shape=shape)

    def get_config(self):
        return {"value": self.value, "dtype": self.dtype.name}


class RandomUniform(Initializer):
    """Uniform values in [minval, maxval) (tf.random_uniform with `seed`)."""

    def __init__(self, minval=.0, maxval=None, seed=None, dtype=dtypes.float32):
        self.minval, self.maxval, self.seed = minval, maxval, seed
        self.dtype = dtypes.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        return random_ops.random_uniform(shape, self.minval, self.maxval, dtype or self.dtype,
                                         seed=self.seed)

    def get_config(self):
        return {"minval": self.minval, "maxval": self.maxval, "seed": self.seed,
                "dtype": self.dtype.name}


class RandomNormal(Initializer):
    """Normal values (tf.random_normal with `seed`)."""

    def __init__(self, mean=0.0, stddev=1.0, seed=None, dtype=dtypes.float32):
        self.mean, self.stddev, self.seed = mean, stddev, seed
        self.dtype = _float_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        return random_ops.random_normal(shape, self.mean, self.stddev, dtype or self.dtype,
                                        seed=self.seed)

    def get_config(self):
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed,
                "dtype": self.dtype.name}


class TruncatedNormal(RandomNormal):
    """Normal values within two stddevs of the mean (tf.truncated_normal with `seed`)."""

    def __call__(self, shape, dtype=None, partition_info=None):
        return random_ops.truncated_normal(shape, self.mean, self.stddev, dtype or self.dtype,
                                           seed=self.seed)


class UniformUnitScaling(Initializer):
    """Uniform in ±sqrt(3 / input_size) * factor, input_size = all dims but the last."""

    def __init__(self, factor=1.0, seed=None, dtype=dtypes.float32):
        self.factor, self.seed = factor, seed
        self.dtype = _float_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        scale_shape = _static_dims(shape if partition_info is None else
                                   partition_info.full_shape)
        input_size = max(float(np.prod(scale_shape[:-1], dtype=np.float64)), 1.0)
        limit = math.sqrt(3 / input_size) * self.factor
        return random_ops.random_uniform(shape, -limit, limit, dtype or self.dtype,
                                         seed=self.seed)

    def get_config(self):
        return {"factor": self.factor, "seed": self.seed, "dtype": self.dtype.name}


class VarianceScaling(Initializer):
    """Values scaled by the fan-in, fan-out or their average (TF1's VarianceScaling)."""

    def __init__(self, scale=1.0, mode="fan_in", distribution="truncated_normal", seed=None,
                 dtype=dtypes.float32):
        if scale <= 0.:
            raise ValueError(f"Argument `scale` must be a positive float. Received: {scale}")
        if mode not in {"fan_in", "fan_out", "fan_avg"}:
            raise ValueError("Argument `mode` should be one of ('fan_in', 'fan_out', "
                             f"'fan_avg'). Received: {mode}")
        distribution = distribution.lower()
        if distribution not in {"normal", "uniform", "truncated_normal", "untruncated_normal"}:
            raise ValueError("Argument `distribution` should be one of ('normal', uniform', "
                             f"'truncated_normal', 'untruncated_normal'). Received: "
                             f"{distribution}")
        self.scale, self.mode, self.distribution, self.seed = scale, mode, distribution, seed
        self.dtype = _float_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        dtype = dtype or self.dtype
        fan_in, fan_out = _compute_fans(_static_dims(
            shape if partition_info is None else partition_info.full_shape))
        fan = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.}
        scale = self.scale / max(1., fan[self.mode])
        if self.distribution in ("normal", "truncated_normal"):
            stddev = math.sqrt(scale) / .87962566103423978   # std of a normal cut at ±2
            return random_ops.truncated_normal(shape, 0.0, stddev, dtype, seed=self.seed)
        if self.distribution == "untruncated_normal":
            return random_ops.random_normal(shape, 0.0, math.sqrt(scale), dtype,
                                            seed=self.seed)
        limit = math.sqrt(3.0 * scale)
        return random_ops.random_uniform(shape, -limit, limit, dtype, seed=self.seed)

    def get_config(self):
        return {"scale": self.scale, "mode": self.mode, "distribution": self.distribution,
                "seed": self.seed, "dtype": self.dtype.name}


class GlorotUniform(VarianceScaling):
    """Xavier uniform: ±sqrt(6 / (fan_in + fan_out))."""

    def __init__(self, seed=None, dtype=dtypes.float32):
        super().__init__(1.0, "fan_avg", "uniform", seed, dtype)

    def get_config(self):
        return {"seed": self.seed, "dtype": self.dtype.name}


class GlorotNormal(VarianceScaling):
    """Xavier normal: truncated normal with stddev sqrt(2 / (fan_in + fan_out))."""

    def __init__(self, seed=None, dtype=dtypes.float32):
        super().__init__(1.0, "fan_avg", "truncated_normal", seed, dtype)

    def get_config(self):
        return {"seed": self.seed, "dtype": self.dtype.name}


def lecun_normal(seed=None):
    return VarianceScaling(1., "fan_in", "truncated_normal", seed)


def lecun_uniform(seed=None):
    return VarianceScaling(1., "fan_in", "uniform", seed)


def he_normal(seed=None):
    return VarianceScaling(2., "fan_in", "truncated_normal", seed)


def he_uniform(seed=None):
    return VarianceScaling(2., "fan_in", "uniform", seed)


def _static_dims(shape):
    dims = as_shape(shape).as_list()
    if None in dims:
        raise ValueError(f"The initializer needs a fully defined shape, got {as_shape(shape)}.")
    return dims


def _compute_fans(dims):
    """(fan_in, fan_out) as TF's: receptive field times the last two dims."""
    if not dims:
        return 1, 1
    if len(dims) == 1:
        return dims[0], dims[0]
    receptive = int(np.prod(dims[:-2], dtype=np.int64))
    return dims[-2] * receptive, dims[-1] * receptive


# TF1's lower-case names (tf.zeros_initializer, ...)
zeros_initializer = Zeros
ones_initializer = Ones
constant_initializer = Constant
random_uniform_initializer = RandomUniform
random_normal_initializer = RandomNormal
truncated_normal_initializer = TruncatedNormal
uniform_unit_scaling_initializer = UniformUnitScaling
variance_scaling_initializer = VarianceScaling
glorot_uniform_initializer = GlorotUniform
glorot_normal_initializer = GlorotNormal
