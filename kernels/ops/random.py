"""Kernels of the random ops, on `random_numbers.philox`, with TF's validation and messages.

Stateful ops (RandomUniform, RandomStandardNormal, TruncatedNormal, RandomUniformInt) keep
their generator where TF keeps it, in the kernel object: a `PhiloxStream` seeded from the
(seed, seed2) attrs (both 0: a random stream). Each run reserves `256 * size` blocks under
the stream's lock, as TF's GuardedPhiloxRandom::ReserveRandomOutputs does, so runs from
several threads get disjoint stretches and the k-th run of a node gives TF's k-th values.
A Session keeps kernel objects across plan rebuilds, so a node's stream continues for the
Session's life. Stateless ops derive (key, counter) from their inputs on every run.
"""

import math
import secrets
import threading

import numpy as np

from graphops.kernels.random_numbers import philox
from graphops.kernels.support.kernel_util import DEVICES, computable_types, host_copy, make_shape
from graphops.registry.errors import InvalidArgumentError
from graphops.registry.kernel_registry import OpKernel, register_kernel
from graphops.registry.tensor_shape import shape_str

RNG_ALG_PHILOX = 1
RNG_ALG_AUTO_SELECT = 3


class PhiloxStream:
    """TF's GuardedPhiloxRandom: a Philox (key, counter) that runs reserve blocks from."""

    def __init__(self, seed, seed2):
        if seed == 0 and seed2 == 0:
            seed, seed2 = secrets.randbits(64), secrets.randbits(64)
        self._key, self._counter = philox.seeded(seed, seed2)
        self._lock = threading.Lock()

    def reserve(self, num_blocks):
        """(key, counter) of the next `num_blocks` blocks, which no other caller gets."""
        with self._lock:
            counter = self._counter
            self._counter = philox.skip(counter, num_blocks)
        return self._key, counter


def _scalar_bound(value, name):
    value = host_copy(value)
    if value.ndim != 0:
        raise InvalidArgumentError(f"{name} must be 0-D, got shape {shape_str(value.shape)}")
    return int(value)


def _int_bounds(ctx, first):
    """(lo, hi) from the minval/maxval inputs at `first`, `first + 1`, checked as TF does
    (the shape checks first, then lo < hi)."""
    lo = _scalar_bound(ctx.input(first), "minval")
    hi = _scalar_bound(ctx.input(first + 1), "maxval")
    return lo, hi


def _check_order(lo, hi):
    if not lo < hi:
        raise InvalidArgumentError(f"Need minval < maxval, got {lo} >= {hi}")


def _bound_params(ctx, bounds_at):
    """The integer ops' {lo, hi} from the minval input at `bounds_at` on (checked, lo < hi);
    none for the float ops (`bounds_at` None)."""
    if bounds_at is None:
        return {}
    lo, hi = _int_bounds(ctx, bounds_at)
    _check_order(lo, hi)
    return {"lo": lo, "hi": hi}


def _fill(ctx, distribution, key, counter, shape, **params):
    dtype = ctx.output_dtype(0).np_dtype
    flat = philox.fill(distribution, key, counter, math.prod(shape), dtype, ctx.xp, **params)
    ctx.set_output(0, flat.reshape(shape))


def _allocated_shape(ctx):
    """The output shape the shape input (input 0) asks for, checked as TF does (its element
    count by check_allocation)."""
    shape = tuple(make_shape(ctx.input(0)))
    ctx.check_allocation(shape, ctx.output_dtype(0))
    return shape


# ------------------------------------------------------------------------- stateful

class _StatefulRandomOp(OpKernel):
    """A (seed, seed2)-seeded op: each run continues the node's Philox stream. The checked
    shape is kept for the last shape input (and memory budget) seen."""

    distribution = None

    def __init__(self, ctx):
        super().__init__(ctx)
        self._stream = PhiloxStream(ctx.get_attr("seed"), ctx.get_attr("seed2"))

    def compute(self, ctx):
        shape_t = ctx.inputs[0]
        shape = self.checked_once((shape_t.shape, shape_t.tobytes()),
                                  lambda: _allocated_shape(ctx))
        key, counter = self._stream.reserve(
            math.prod(shape) * philox.RESERVED_SAMPLES_PER_OUTPUT)
        _fill(ctx, self.distribution, key, counter, shape)


def _register(op, base, distribution, host_memory, **extra):
    """A kernel class for `op`: `base` drawing from `distribution`, on every computable
    output type."""
    cls = type(f"{op}Op", (base,), {"distribution": staticmethod(distribution), **extra,
                                    "__doc__": f"{op}: `philox.{distribution.__name__}`."})
    return register_kernel(op, DEVICES, host_memory=host_memory,
                           type_constraints={"dtype": computable_types(op, "dtype")})(cls)


RandomUniformOp = _register("RandomUniform", _StatefulRandomOp, philox.uniform, ("shape",))
RandomStandardNormalOp = _register("RandomStandardNormal", _StatefulRandomOp, philox.normal,
                                   ("shape",))
TruncatedNormalOp = _register("TruncatedNormal", _StatefulRandomOp, philox.truncated_normal,
                              ("shape",))


@register_kernel("RandomUniformInt", DEVICES, host_memory=("shape", "minval", "maxval"))
class RandomUniformIntOp(_StatefulRandomOp):
    """Integers in [minval, maxval); an empty output reserves nothing and skips lo < hi."""

    def compute(self, ctx):
        lo, hi = _int_bounds(ctx, 1)
        shape = _allocated_shape(ctx)
        size = math.prod(shape)
        if size == 0:
            ctx.set_output(0, ctx.xp.zeros(shape, ctx.output_dtype(0).np_dtype))
            return
        _check_order(lo, hi)
        key, counter = self._stream.reserve(size * philox.RESERVED_SAMPLES_PER_OUTPUT)
        _fill(ctx, philox.uniform_int, key, counter, shape, lo=lo, hi=hi)


# ----------------------------------------------------------------- stateless, V1 (seed)

def seed_pair(seed):
    """The two seeds of a [2] seed tensor, TF's message otherwise."""
    seed = host_copy(seed)
    if seed.shape != (2,):
        raise InvalidArgumentError(f"seed must have shape [2], not {shape_str(seed.shape)}")
    return int(seed[0]), int(seed[1])


class _StatelessRandomOp(OpKernel):
    """A seed-tensor op: (key, counter) from philox.stateless_key_counter."""

    distribution = None
    bounds_at = None      # index of minval for the integer op

    def compute(self, ctx):
        shape = _allocated_shape(ctx)
        key, counter = philox.stateless_key_counter(*seed_pair(ctx.input(1)))
        if math.prod(shape) == 0:
            ctx.set_output(0, ctx.xp.zeros(shape, ctx.output_dtype(0).np_dtype))
            return
        _fill(ctx, self.distribution, key, counter, shape,
              **_bound_params(ctx, self.bounds_at))


# -------------------------------------------------------- stateless, V2 (key, counter, alg)

def key_counter_alg(key, counter, alg):
    """TF's GetKeyCounterAlgFromInputs: (key, counter) as Philox state and the algorithm."""
    alg = host_copy(alg)
    if alg.ndim != 0:
        raise InvalidArgumentError(f"input 3 (0-based) must have shape [], not "
                                   f"{shape_str(alg.shape)}")
    alg = int(alg)
    if alg == RNG_ALG_AUTO_SELECT:
        alg = RNG_ALG_PHILOX
    key, counter = host_copy(key), host_copy(counter)
    if key.shape != (1,):
        raise InvalidArgumentError(f"key must have shape [1], not {shape_str(key.shape)}. "
                                   "(Note that batched keys are not supported yet.)")
    # TF compares the counter length with the algorithm id (not its counter size): kept.
    if counter.ndim != 1 or counter.shape[0] < alg:
        raise InvalidArgumentError(
            f"counter must be a vector with length at least {alg}; got shape: "
            f"{shape_str(counter.shape)}. (Note that batched counters are not supported yet.)")
    words = [int(w) for w in counter.tolist()[:2]] + [0, 0]
    return int(key[0]), words[0] | words[1] << 64, alg


class _StatelessV2Op(OpKernel):
    """A key/counter/alg op; only Philox is implemented (as in TF)."""

    distribution = None
    bounds_at = None      # index of minval for the integer op

    def compute(self, ctx):
        key, counter, alg = key_counter_alg(ctx.input(1), ctx.input(2), ctx.input(3))
        shape = _allocated_shape(ctx)
        if math.prod(shape) == 0:
            ctx.set_output(0, ctx.xp.zeros(shape, ctx.output_dtype(0).np_dtype))
            return
        params = _bound_params(ctx, self.bounds_at)
        if alg != RNG_ALG_PHILOX:
            raise InvalidArgumentError(f"Unsupported algorithm id: {alg}")
        _fill(ctx, self.distribution, key, counter, shape, **params)


# Each stateless op in its V1 (shape, seed) and V2 (shape, key, counter, alg) form; the
# integer ops' minval and maxval follow those inputs.
for _suffix, _base, _host in (("", _StatelessRandomOp, ("shape", "seed")),
                              ("V2", _StatelessV2Op, ("shape", "key", "counter", "alg"))):
    for _name, _distribution in (("StatelessRandomUniform", philox.uniform),
                                 ("StatelessRandomNormal", philox.normal),
                                 ("StatelessTruncatedNormal", philox.truncated_normal)):
        _register(_name + _suffix, _base, _distribution, _host)
    _register("StatelessRandomUniformInt" + _suffix, _base, philox.uniform_int,
              _host + ("minval", "maxval"), bounds_at=len(_host))


# ------------------------------------------------------------------ seed -> key, counter

def _key_counter_arrays(seed):
    key, counter = philox.stateless_key_counter(*seed_pair(seed))
    mask = philox.MASK64
    return (np.array([key], np.uint64),
            np.array([counter & mask, (counter >> 64) & mask], np.uint64))


@register_kernel("StatelessRandomGetKeyCounter", DEVICES, host_memory=("seed", "key", "counter"))
class StatelessRandomGetKeyCounterOp(OpKernel):
    def compute(self, ctx):
        key, counter = _key_counter_arrays(ctx.input(0))
        ctx.set_output(0, key)
        ctx.set_output(1, counter)


@register_kernel("StatelessRandomGetKeyCounterAlg", DEVICES,
                 host_memory=("seed", "key", "counter", "alg"))
class StatelessRandomGetKeyCounterAlgOp(OpKernel):
    def compute(self, ctx):
        key, counter = _key_counter_arrays(ctx.input(0))
        ctx.set_output(0, key)
        ctx.set_output(1, counter)
        ctx.set_output(2, np.array(RNG_ALG_PHILOX, np.int32))


@register_kernel("StatelessRandomGetAlg", DEVICES, host_memory=("alg",))
class StatelessRandomGetAlgOp(OpKernel):
    def compute(self, ctx):
        ctx.set_output(0, np.array(RNG_ALG_PHILOX, np.int32))
