"""TF1's random wrappers and seeds: gp.random_normal / random_uniform / truncated_normal
(also as gp.random.normal, ...), gp.multinomial / random.categorical, gp.random_shuffle,
gp.random_gamma, gp.random_poisson, gp.set_random_seed, gp.get_seed, the stateless
gp.random.stateless_uniform / stateless_normal / stateless_truncated_normal (TF2's graphs:
StatelessRandomGetKeyCounter feeding the V2 ops) and gp.nn.dropout.

Seeds follow TF's framework/random_seed.get_seed: with a graph-level seed and no op seed an
op gets the graph's next op seed (0, 1, 2, ...); with only an op seed the graph seed is
DEFAULT_GRAPH_SEED; with neither, (0, 0), a nondeterministic stream; (0, 0) derived from
given seeds becomes (0, 2**31 - 1). Graph mode when a graph is entered or an input is a
graph Tensor (as `raw_ops`); otherwise the ops run eagerly with the eager seed, whose op
seeds come from `random.Random(seed)` as TF's eager context draws them.
"""

import contextlib
import numbers
import random as _py_random
import threading

import numpy as np

from graphops.api import raw_ops
from graphops.building import graph as graph_lib
from graphops.building.constant_op import constant
from graphops.building.tensor import Tensor
from graphops.building.values import convert_value
from graphops.runtime import eager
from graphops.registry import dtypes
from graphops.registry.tensor_shape import as_shape
from graphops.api.tf1_names import missing_tf1_attribute

DEFAULT_GRAPH_SEED = 87654321
_MAXINT32 = 2**31 - 1


class _EagerSeed:
    """The eager context's global seed and its op-seed generator."""

    def __init__(self):
        self.seed = None
        self._rng = _py_random.Random()
        self._lock = threading.Lock()

    def set(self, seed):
        with self._lock:
            self.seed = seed
            self._rng = _py_random.Random(int(seed) if seed is not None else None)
        eager.clear_kernel_cache()

    def next_op_seed(self):
        with self._lock:
            return self._rng.randint(0, _MAXINT32)


_eager_seed = _EagerSeed()


def graph_of(*values):
    """The graph an op on `values` is built in: that of a Tensor among them, else the
    entered graph; None means eager."""
    for value in values:
        if isinstance(value, Tensor):
            return value.graph
    return graph_lib.entered_graph()


def get_seed(op_seed, graph=None):
    """(seed, seed2) for a random op given its op seed (TF's random_seed.get_seed);
    `graph` is the graph the op goes to (default: the entered graph; None there: eager)."""
    graph = graph if graph is not None else graph_lib.entered_graph()
    global_seed = graph.seed if graph is not None else _eager_seed.seed
    if global_seed is not None:
        if op_seed is None:
            op_seed = graph._next_op_seed() if graph is not None else _eager_seed.next_op_seed()
        seeds = global_seed % _MAXINT32, op_seed % _MAXINT32
    elif op_seed is not None:
        seeds = DEFAULT_GRAPH_SEED, op_seed % _MAXINT32
    else:
        seeds = None, None
    return (0, _MAXINT32) if seeds == (0, 0) else seeds


def set_random_seed(seed):
    """Sets the graph-level seed of the entered graph; outside any graph, the eager seed
    (resetting eager random kernels, as TF does) and the global default graph's seed,
    which TF1 programs building at module level use."""
    graph = graph_lib.entered_graph()
    if graph is not None:
        graph.seed = seed
        return
    _eager_seed.set(seed)
    graph_lib.get_default_graph().seed = seed


@contextlib.contextmanager
def building(graph, name, default_name):
    """Inside `graph` and its name scope (yields the scope name), or nothing when eager."""
    if graph is None:
        yield name
        return
    with graph.as_default(), graph.name_scope(name or default_name) as scope:
        yield scope


def as_input(graph, value, dtype, name):
    """`value` as an input: a Const node of `graph` (or the Tensor itself), an array eagerly."""
    converted = convert_value(value, dtype)
    if graph is None or isinstance(converted, Tensor):
        return converted
    return constant(converted, name=name)


def _shape_input(graph, shape):
    """TF's shape_util.shape_tensor: a list/tuple becomes int32 (int64 if needed)."""
    if isinstance(shape, Tensor):
        return shape
    if hasattr(shape, "as_list"):
        shape = shape.as_list()
    dtype = dtypes.int32 if isinstance(shape, (list, tuple)) and not shape else None
    return as_input(graph, shape, dtype, "shape")


def _seeds(seed, graph):
    seed1, seed2 = get_seed(seed, graph)
    return (seed1 or 0), (seed2 or 0)


def _scaled(op, shape, mean, stddev, dtype, seed, name, default_name):
    dtype = dtypes.as_dtype(dtype)
    graph = graph_of(shape, mean, stddev)
    with building(graph, name, default_name) as scope:
        shape_t = _shape_input(graph, shape)
        mean_t = as_input(graph, mean, dtype, "mean")
        stddev_t = as_input(graph, stddev, dtype, "stddev")
        seed1, seed2 = _seeds(seed, graph)
        rnd = getattr(raw_ops, op)(shape=shape_t, dtype=dtype, seed=seed1, seed2=seed2)
        mul = raw_ops.Mul(x=rnd, y=stddev_t, name="mul")
        return raw_ops.AddV2(x=mul, y=mean_t, name=scope if graph is not None else None)


def random_normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None, name=None):
    """Normal values `mean + stddev * RandomStandardNormal` (tf.random.normal)."""
    return _scaled("RandomStandardNormal", shape, mean, stddev, dtype, seed, name,
                   "random_normal")


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None, name=None):
    """Normal values within two stddevs of `mean` (tf.random.truncated_normal)."""
    return _scaled("TruncatedNormal", shape, mean, stddev, dtype, seed, name,
                   "truncated_normal")


_UNIFORM_TYPES = (dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64,
                  dtypes.int32, dtypes.int64)


def random_uniform(shape, minval=0, maxval=None, dtype=dtypes.float32, seed=None, name=None):
    """Uniform values in [minval, maxval) (tf.random.uniform); integers need maxval."""
    dtype = dtypes.as_dtype(dtype)
    if dtype not in _UNIFORM_TYPES:
        raise ValueError(f"Argument `dtype` got invalid value {dtype}. Accepted dtypes are "
                         f"{_UNIFORM_TYPES}.")
    integer = dtype.kind == "int"
    if maxval is None:
        if integer:
            raise ValueError("Must specify maxval for integer dtype %r" % dtype)
        maxval = 1
    graph = graph_of(shape, minval, maxval)
    with building(graph, name, "random_uniform") as scope:
        out_name = scope if graph is not None else None
        shape_t = _shape_input(graph, shape)
        minval_is_zero = isinstance(minval, int) and minval == 0
        maxval_is_one = isinstance(maxval, int) and maxval == 1
        if not minval_is_zero or not maxval_is_one or integer:
            minval = as_input(graph, minval, dtype, "min")
            maxval = as_input(graph, maxval, dtype, "max")
        seed1, seed2 = _seeds(seed, graph)
        if integer:
            return raw_ops.RandomUniformInt(shape=shape_t, minval=minval, maxval=maxval,
                                            seed=seed1, seed2=seed2, name=out_name)
        result = raw_ops.RandomUniform(shape=shape_t, dtype=dtype, seed=seed1, seed2=seed2)
        if minval_is_zero:
            if not maxval_is_one:
                result = raw_ops.Mul(x=result, y=maxval)
            return result
        scaled = raw_ops.Mul(x=result, y=raw_ops.Sub(x=maxval, y=minval, name="sub"),
                             name="mul")
        return raw_ops.AddV2(x=scaled, y=minval, name=out_name)


# ------------------------------------------------------------------------- stateless

_ALGORITHMS = {"philox": 1, "threefry": 2, "autoselect": 3}


def _alg_id(alg):
    """TF's convert_alg_to_int: an int, or 'philox' / 'threefry' / 'auto_select'."""
    if isinstance(alg, int) or isinstance(alg, Tensor):
        return alg
    canonical = str(alg).strip().lower().replace("-", "").replace("_", "")
    if canonical not in _ALGORITHMS:
        raise ValueError(f"Argument `alg` got unsupported string value {alg}. Supported "
                         "string values are 'philox' for the Philox algorithm, 'threefry' for "
                         "the ThreeFry algorithm, and 'auto_select' for auto-selection.")
    return _ALGORITHMS[canonical]


def _key_counter(graph, seed, alg, alg_name):
    """TF's get_key_counter_alg: StatelessRandomGetKeyCounter of `seed`, and the alg input
    (a Const named like TF's). For an explicit alg TF scrambles the seed with a dozen
    Python-built ops instead; GetKeyCounter computes the same key and counter."""
    seed = as_input(graph, seed, None, "StatelessRandomGetKeyCounter/seed")
    key, counter = raw_ops.StatelessRandomGetKeyCounter(seed=seed)
    return key, counter, as_input(graph, _alg_id(alg), dtypes.int32, alg_name)


def _stateless_scaled(op, shape, seed, mean, stddev, dtype, name, default_name, alg):
    dtype = dtypes.as_dtype(dtype)
    graph = graph_of(shape, seed, mean, stddev)
    with building(graph, name, default_name) as scope:
        shape_t = _shape_input(graph, shape)
        mean_t = as_input(graph, mean, dtype, "mean")
        stddev_t = as_input(graph, stddev, dtype, "stddev")
        key, counter, alg_t = _key_counter(graph, seed, alg, f"{op}/alg")
        rnd = getattr(raw_ops, op)(shape=shape_t, key=key, counter=counter, alg=alg_t,
                                   dtype=dtype)
        return raw_ops.AddV2(x=raw_ops.Mul(x=rnd, y=stddev_t, name="mul"), y=mean_t,
                             name=scope if graph is not None else None)


def stateless_normal(shape, seed, mean=0.0, stddev=1.0, dtype=dtypes.float32, name=None,
                     alg="auto_select"):
    """Normal values determined by `seed` (a [2] int tensor): tf.random.stateless_normal."""
    return _stateless_scaled("StatelessRandomNormalV2", shape, seed, mean, stddev, dtype,
                             name, "stateless_random_normal", alg)


def stateless_truncated_normal(shape, seed, mean=0.0, stddev=1.0, dtype=dtypes.float32,
                               name=None, alg="auto_select"):
    """Truncated normal values determined by `seed`: tf.random.stateless_truncated_normal."""
    return _stateless_scaled("StatelessTruncatedNormalV2", shape, seed, mean, stddev, dtype,
                             name, "stateless_truncated_normal", alg)


def stateless_uniform(shape, seed, minval=0, maxval=None, dtype=dtypes.float32, name=None,
                      alg="auto_select"):
    """Uniform values in [minval, maxval) determined by `seed`: tf.random.stateless_uniform
    (integers need both bounds; the full-range integer form is not provided)."""
    dtype = dtypes.as_dtype(dtype)
    integer = dtype.kind == "int"
    if dtype not in _UNIFORM_TYPES:
        raise ValueError(f"Argument `dtype` got invalid value {dtype}. Accepted dtypes are "
                         f"{_UNIFORM_TYPES}.")
    if integer and (minval is None or maxval is None):
        raise ValueError(f"For integer `dtype` argument {dtype}, argument `minval` and "
                         "`maxval` must both be given (full-range integers are not supported).")
    if maxval is None:
        maxval = 1
    graph = graph_of(shape, seed, minval, maxval)
    with building(graph, name, "stateless_random_uniform") as scope:
        out_name = scope if graph is not None else None
        shape_t = _shape_input(graph, shape)
        minval = as_input(graph, minval, dtype, "min")
        maxval = as_input(graph, maxval, dtype, "max")
        if integer:
            key, counter, alg_t = _key_counter(graph, seed, alg, "alg")     # TF's name
            return raw_ops.StatelessRandomUniformIntV2(
                shape=shape_t, key=key, counter=counter, alg=alg_t, minval=minval,
                maxval=maxval, name=out_name)
        key, counter, alg_t = _key_counter(graph, seed, alg, "StatelessRandomUniformV2/alg")
        rnd = raw_ops.StatelessRandomUniformV2(shape=shape_t, key=key, counter=counter,
                                               alg=alg_t, dtype=dtype)
        scaled = raw_ops.Mul(x=rnd, y=raw_ops.Sub(x=maxval, y=minval, name="sub"), name="mul")
        return raw_ops.AddV2(x=scaled, y=minval, name=out_name)


# ---------------------------------------------------------------------------- dropout

def dropout(x, keep_prob=None, noise_shape=None, seed=None, name=None, rate=None):
    """tf.compat.v1.nn.dropout: zeroes each element with probability `rate` (or
    1 - keep_prob) and scales the others by 1 / (1 - rate). Builds TF 2.21's ops: Mul (or
    RealDiv by 1 - rate for a tensor rate), RandomUniform, GreaterEqual, SelectV2."""
    try:
        rate_from_keep_prob = 1. - keep_prob if keep_prob is not None else None
    except TypeError:
        raise ValueError("`keep_prob` must be a floating point number or Tensor. "
                         f"Received: keep_prob={keep_prob}") from None
    if rate_from_keep_prob is not None:
        if rate is not None:
            raise ValueError("Cannot specify both 'keep_prob' and 'rate'.")
        rate = rate_from_keep_prob
    if rate is None:
        raise ValueError(f"`rate` must be provided. Received: rate={rate}")
    graph = graph_of(x, rate, noise_shape)
    with building(graph, name, "dropout"):
        return _dropout(graph, x, rate, noise_shape, seed)


def _dropout(graph, x, rate, noise_shape, seed):
    is_rate_number = isinstance(rate, numbers.Real)
    if is_rate_number and (rate < 0 or rate >= 1):
        raise ValueError("`rate` must be a scalar tensor or a float in the range [0, 1). "
                         f"Received: rate={rate}")
    x = as_input(graph, x, None, "x")
    x_dtype = dtypes.as_dtype(x.dtype)
    if not x_dtype.is_floating:
        raise ValueError("`x.dtype` must be a floating point tensor as `x` will be scaled. "
                         f"Received: x_dtype={x_dtype}")
    if is_rate_number and rate == 0:
        get_seed(seed, graph)
        return x
    if isinstance(rate, Tensor):
        if rate.shape.rank not in (None, 0):
            raise ValueError(f"Shape {rate.shape} must have rank 0")
        if dtypes.as_dtype(rate.dtype) != x_dtype:
            rate = raw_ops.Cast(x=rate, DstT=x_dtype, name="rate")
        one = as_input(graph, 1, x_dtype, "Const")
        kept = raw_ops.RealDiv(x=x, y=raw_ops.Sub(x=one, y=rate))
    elif is_rate_number:
        kept = raw_ops.Mul(x=x, y=as_input(graph, 1 / (1 - rate), x_dtype, "Const"))
    else:
        raise ValueError(f"`rate` must be a scalar or scalar tensor. Received: rate={rate}")
    random_tensor = random_uniform(_noise_shape(graph, x, noise_shape), dtype=x_dtype,
                                   seed=seed)
    threshold = as_input(graph, rate, x_dtype, "GreaterEqual/y")
    keep_mask = raw_ops.GreaterEqual(x=random_tensor, y=threshold)
    zero = as_input(graph, 0, x_dtype, "Const")
    dropped = raw_ops.SelectV2(condition=keep_mask, t=kept, e=zero)
    if graph is not None:           # as TF's graph: x's shape, whatever the rate's is
        dropped.set_shape(x.shape)
    return dropped


def _noise_shape(graph, x, noise_shape):
    """TF's _get_noise_shape: x's shape (a constant when known), or `noise_shape` with
    its unknown dims filled from x's static shape."""
    static = as_shape(x.shape)
    if noise_shape is None:
        if graph is None:
            return list(static.as_tuple())
        if static.is_fully_defined():
            return as_input(graph, list(static.as_tuple()), dtypes.int32, "Shape")
        return raw_ops.Shape(input=x)
    if isinstance(noise_shape, Tensor):
        return noise_shape
    noise = as_shape(noise_shape)
    if static.rank is not None and noise.rank == static.rank:
        dims = [d if n is None and d is not None else n
                for d, n in zip(static.as_tuple(), noise.as_tuple())]
        if None not in dims:
            return dims
    return noise_shape


normal = random_normal
uniform = random_uniform
set_seed = set_random_seed


# ------------------------------------------------------------ categorical, shuffle, gamma

def multinomial(logits, num_samples, seed=None, name=None, output_dtype=None):
    """`num_samples` class indices per row of `logits` [batch, classes] (tf.multinomial)."""
    return _categorical(logits, num_samples, output_dtype, seed, name, "multinomial")


def categorical(logits, num_samples, dtype=None, seed=None, name=None):
    """`num_samples` class indices per row of `logits` (tf.random.categorical)."""
    return _categorical(logits, num_samples, dtype, seed, name, "categorical")


def _categorical(logits, num_samples, dtype, seed, name, default_name):
    dtype = dtypes.as_dtype(dtype) if dtype else dtypes.int64
    if dtype not in (dtypes.int32, dtypes.int64):
        raise ValueError(f"Argument `dtype` got invalid value {dtype}. Accepted dtypes are "
                         f"{(dtypes.int32, dtypes.int64)}.")
    graph = graph_of(logits, num_samples)
    with building(graph, name, default_name):
        logits = as_input(graph, logits, None, "logits")
        seed1, seed2 = _seeds(seed, graph)
        return raw_ops.Multinomial(logits=logits, num_samples=num_samples, seed=seed1,
                                   seed2=seed2, output_dtype=dtype)


def random_shuffle(value, seed=None, name=None):
    """`value` randomly permuted along its first dimension (tf.random.shuffle)."""
    graph = graph_of(value)
    seed1, seed2 = _seeds(seed, graph)
    if graph is None:
        return raw_ops.RandomShuffle(value=value, seed=seed1, seed2=seed2)
    with graph.as_default():
        return raw_ops.RandomShuffle(value=value, seed=seed1, seed2=seed2, name=name)


def random_gamma(shape, alpha, beta=None, dtype=dtypes.float32, seed=None, name=None):
    """Gamma(alpha, beta) samples of shape `shape + broadcast(alpha, beta).shape`, at least
    the type's smallest normal (tf.random.gamma)."""
    dtype = dtypes.as_dtype(dtype)
    graph = graph_of(shape, alpha, beta)
    with building(graph, name, "random_gamma"):
        shape = as_input(graph, shape, dtypes.int32, "shape")
        alpha = as_input(graph, alpha, dtype, "alpha")
        beta = as_input(graph, beta if beta is not None else 1, dtype, "beta")
        alpha_shape, beta_shape = as_shape(alpha.shape), as_shape(beta.shape)
        if graph is not None and alpha_shape.is_fully_defined() and \
                beta_shape.is_fully_defined():
            alpha_shape = as_input(graph, list(alpha_shape.as_tuple()), dtypes.int32, "Shape_1")
            beta_shape = as_input(graph, list(beta_shape.as_tuple()), dtypes.int32, "Shape_2")
        else:
            alpha_shape, beta_shape = raw_ops.Shape(input=alpha), raw_ops.Shape(input=beta)
        broadcast = raw_ops.BroadcastArgs(s0=alpha_shape, s1=beta_shape)
        alpha = raw_ops.BroadcastTo(input=alpha, shape=broadcast)
        seed1, seed2 = _seeds(seed, graph)
        sample = raw_ops.RandomGamma(shape=shape, alpha=alpha, seed=seed1, seed2=seed2)
        scaled = raw_ops.RealDiv(x=sample, y=beta, name="truediv")
        tiny = as_input(graph, float(np.finfo(dtype.np_dtype).tiny), dtype, "Maximum/x")
        return raw_ops.Maximum(x=tiny, y=scaled)


def random_poisson(lam, shape, dtype=dtypes.float32, seed=None, name=None):
    """Poisson(lam) samples of shape `shape + lam.shape` (tf.compat.v1.random_poisson)."""
    graph = graph_of(shape, lam)
    with building(graph, name, "random_poisson"):
        shape = as_input(graph, shape, dtypes.int32, "shape")
        seed1, seed2 = _seeds(seed, graph)
        return raw_ops.RandomPoissonV2(shape=shape, rate=lam, dtype=dtypes.as_dtype(dtype),
                                       seed=seed1, seed2=seed2)


gamma = random_gamma
poisson = random_poisson
shuffle = random_shuffle


def __getattr__(name):
    raise missing_tf1_attribute("random", name)
