"""Kernels of the sampling ops, drawing from TF's Philox streams as TF's CPU kernels do.

Multinomial reserves `batch * ceil4(num_samples) * 2 * 256` blocks per run and reads one
double (two uint32) per sample; each range of rows TF's sharder hands a thread restarts
the stream at block `first_row * (num_samples + 3) // 4` (`random_numbers.tf_shards`).
RandomShuffle reserves `ceil((n - 1) / 4)` blocks and swaps element i with
`i + bits[i] % (n - i)`. RandomGamma reserves 256 blocks per output and runs each output's
Marsaglia-Tsang rejection loop in its own stretch, in float (half, float) or double.
"""

import math

import numpy as np

from graphops.kernels.numerics.gamma_sample_grad import gamma_sample_der_alpha, libm_function
from graphops.kernels.ops.random import (RNG_ALG_PHILOX, PhiloxStream, key_counter_alg,
                                         seed_pair)
from graphops.kernels.random_numbers import libm_double, philox, tf_shards
from graphops.kernels.support.kernel_util import (DEVICES, broadcast_shape, host_copy,
                                                  make_shape)
from graphops.registry import dtypes
from graphops.registry.errors import InvalidArgumentError
from graphops.registry.kernel_registry import OpKernel, register_kernel
from graphops.registry.tensor_shape import shape_str

_FLOATS = [dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64]
_GAMMA_RESERVED_BLOCKS = 256
_MAX_ROUNDS = 1000        # rejection rounds (each accepts most draws) before giving up


# ---------------------------------------------------------------------- Multinomial

def _check_multinomial(logits, num_samples):
    """TF's checks, in its order; (batch, classes, num_samples)."""
    if logits.ndim != 2:
        raise InvalidArgumentError(f"logits should be a matrix, got shape "
                                   f"{shape_str(logits.shape)}")
    num_samples = host_copy(num_samples)
    if num_samples.ndim != 0:
        raise InvalidArgumentError(f"num_samples should be a scalar, got shape "
                                   f"{shape_str(num_samples.shape)}")
    count = int(num_samples)
    if count < 0:
        raise InvalidArgumentError(f"num_samples should be non-negative, got {count}")
    batch, classes = logits.shape
    if batch > 2**31 - 1:
        raise InvalidArgumentError("batch_size cannot exceed max int")
    if classes > 2**31 - 1:
        raise InvalidArgumentError("num_classes cannot exceed max int")
    if classes <= 0:
        raise InvalidArgumentError(f"num_classes should be positive, got {classes}")
    return batch, classes, count


def _unnormalized_cdf(logits, xp):
    """Each row's running sum of exp(logit - max finite logit) over its finite logits."""
    finite = xp.isfinite(logits)
    lowest = np.finfo(logits.dtype).min
    top = xp.where(finite, logits, logits.dtype.type(lowest)).max(axis=1)
    shifted = logits.astype(xp.float64) - top.astype(xp.float64)[:, None]
    return xp.cumsum(xp.where(finite, xp.exp(shifted), 0.0), axis=1)


def multinomial(logits, num_samples, key, counter, xp, threads=None):
    """Class indices [batch, num_samples] (int64) from the stream at (key, counter)."""
    batch, classes = logits.shape
    cdf = _unnormalized_cdf(logits, xp)
    out = xp.empty((batch, num_samples), xp.int64)
    cost = int(50 * (num_samples * math.log(classes) / math.log(2) + classes))
    for start, limit in tf_shards.shard_ranges(batch, cost, threads):
        shard_counter = philox.skip(counter, start * (num_samples + 3) // 4)
        u = philox.uniform(key, shard_counter, (limit - start) * num_samples, np.float64, xp)
        u = u.reshape(limit - start, num_samples)
        for row in range(start, limit):
            to_find = u[row - start] * cdf[row, -1]
            out[row] = xp.searchsorted(cdf[row], to_find, side="right")
    return out


class _MultinomialBase(OpKernel):
    """The draws of `compute_with`, shared by the stateful and stateless forms."""

    def compute_with(self, ctx, reserve):
        logits = ctx.input(0)
        batch, _, num_samples = _check_multinomial(logits, ctx.input(1))
        out_dtype = ctx.output_dtype(0).np_dtype
        if batch * num_samples == 0:
            ctx.set_output(0, ctx.xp.zeros((batch, num_samples), out_dtype))
            return
        ceil4 = -(-num_samples // 4) * 4 * 2
        key, counter = reserve(batch * ceil4 * philox.RESERVED_SAMPLES_PER_OUTPUT)
        draws = multinomial(logits, num_samples, key, counter, ctx.xp)
        ctx.set_output(0, draws.astype(out_dtype))


@register_kernel("Multinomial", DEVICES, host_memory=("num_samples",),
                 type_constraints={"T": _FLOATS})
class MultinomialOp(_MultinomialBase):
    def __init__(self, ctx):
        super().__init__(ctx)
        self._stream = PhiloxStream(ctx.get_attr("seed"), ctx.get_attr("seed2"))

    def compute(self, ctx):
        self.compute_with(ctx, self._stream.reserve)


@register_kernel("StatelessMultinomial", DEVICES, host_memory=("num_samples", "seed"),
                 type_constraints={"T": _FLOATS})
class StatelessMultinomialOp(_MultinomialBase):
    def compute(self, ctx):
        key, counter = philox.stateless_key_counter(*seed_pair(ctx.input(2)))
        self.compute_with(ctx, lambda num_blocks: (key, counter))


# -------------------------------------------------------------------- RandomShuffle

def shuffle_permutation(size, key, counter):
    """TF's ShuffleRange over 0..size-1: swap i with i + bits[i] % (size - i)."""
    words = philox.stream(key, counter, -(-(size - 1) // 4)).reshape(-1)[:size - 1].tolist()
    perm = list(range(size))
    for i, bits in enumerate(words):
        j = i + bits % ((size - i) & philox.MASK32)
        perm[i], perm[j] = perm[j], perm[i]
    return perm


@register_kernel("RandomShuffle", DEVICES)
class RandomShuffleOp(OpKernel):
    """A permutation of the first axis; one element or a first axis of 1 is kept as is."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self._stream = PhiloxStream(ctx.get_attr("seed"), ctx.get_attr("seed2"))

    def compute(self, ctx):
        value = ctx.input(0)
        if value.size <= 1 or value.shape[0] <= 1:
            ctx.set_output(0, value)
            return
        size = value.shape[0]
        key, counter = self._stream.reserve(-(-(size - 1) // 4))
        perm = np.asarray(shuffle_permutation(size, key, counter), np.int64)
        ctx.set_output(0, value[ctx.xp.asarray(perm)])


# ---------------------------------------------------------------------- RandomGamma

# The C library's pow and log1p, elementwise (TF's kernel calls them; NumPy's own may be
# SIMD code with other last bits).
_POW = np.frompyfunc(math.pow, 2, 1)
_LOG1P = np.frompyfunc(math.log1p, 1, 1)


def _log(x):
    """The C library's log of float64 values, -inf at 0."""
    return np.where(x > 0, libm_double.log(np.where(x > 0, x, 1.0)), -np.inf)


def _normal_pairs(b):
    """NormalDistribution<double>: two normals per block (Box-Muller)."""
    return np.stack(philox.box_muller_double(b[:, 0], b[:, 1], b[:, 2], b[:, 3], np), -1)


def _uniform_pairs(b):
    """UniformDistribution<double>: [0, 1) from each pair of words (20 + 32 bits)."""
    high, low = b[:, 0::2].astype(np.uint64), b[:, 1::2].astype(np.uint64)
    man = ((high & np.uint64(0xFFFFF)) << np.uint64(32)) | low
    return (man | np.uint64(1023 << 52)).view(np.float64) - 1.0


def _to_output(draws, num_params, out_dtype, out_shape, xp):
    """TF's double draws [num_params * per_param] (parameter major) in the output's layout
    and type: half rounded through float as TF's cast does, and subnormal float and double
    results zero (TF's CPU threads flush denormals)."""
    draws = draws.reshape(num_params, -1).T
    if out_dtype.kind == "f":
        wide = np.float64 if out_dtype == np.float64 else np.float32
        draws = draws.astype(wide)
        draws = np.where(np.abs(draws) < np.finfo(wide).tiny, wide(0), draws)
    return xp.asarray(draws.astype(out_dtype).reshape(out_shape))


class _Draws:
    """Per-output buffers of a two-per-block distribution, consumed from the end as TF's
    kernel does; each output reads its own stretch of 256 blocks."""

    def __init__(self, n, make):
        self.buffer = np.zeros((n, 2))
        self.left = np.zeros(n, np.int64)
        self.make = make

    def take(self, rows, key, base, position):
        """The next value for `rows`, refilling empty buffers from their next block."""
        empty = rows[self.left[rows] == 0]
        if empty.size:
            offsets = empty.astype(np.uint64) * np.uint64(_GAMMA_RESERVED_BLOCKS)
            self.buffer[empty] = self.make(philox.blocks(
                key, base, offsets + position[empty].astype(np.uint64)))
            self.left[empty] = 2
            position[empty] += 1
        self.left[rows] -= 1
        return self.buffer[rows, self.left[rows]]


def gamma(alpha, num_samples, key, counter):
    """Gamma(alpha_i, 1) draws in float64, [num_alphas * num_samples] in TF's output
    order (alpha major): -log1p(-u) for alpha 1, else Marsaglia-Tsang rejection (alpha
    below 1 boosted by one and scaled by u ** (1 / alpha))."""
    n = alpha.size * num_samples
    a = np.repeat(alpha.astype(np.float64), num_samples)
    small = a < 1
    d = a + np.where(small, 2.0 / 3, -1.0 / 3)
    unsampleable = np.isnan(d) | (d <= 0)
    if unsampleable.any():     # TF's loop never ends there
        raise InvalidArgumentError(f"Gamma sampling does not terminate for alpha "
                                   f"{a[unsampleable][0]}")
    c = 1.0 / 3 / np.sqrt(d)
    normals, uniforms = _Draws(n, _normal_pairs), _Draws(n, _uniform_pairs)
    position = np.zeros(n, np.int64)
    out = np.zeros(n)
    exponential = np.nonzero(a == 1)[0]
    if exponential.size:
        u = uniforms.take(exponential, key, counter, position)
        out[exponential] = -_LOG1P(-u).astype(np.float64)
    active = np.nonzero(a != 1)[0]
    for _ in range(_MAX_ROUNDS):
        if not active.size:
            return out
        x = normals.take(active, key, counter, position)
        v = 1 + c[active] * x
        rows, x, v = active[v > 0], x[v > 0], v[v > 0]
        v = v * v * v
        u = uniforms.take(rows, key, counter, position)
        accept = (u < 1 - 0.0331 * (x * x) * (x * x)) | (
            _log(u) < 0.5 * x * x + d[rows] * (1 - v + _log(v)))
        done = rows[accept]
        res = d[done] * v[accept]
        boost = small[done]
        if boost.any():
            b = uniforms.take(done[boost], key, counter, position)
            res[boost] *= _POW(b, 1 / a[done[boost]]).astype(np.float64)
        out[done] = res
        finished = np.zeros(n, bool)
        finished[done] = True
        active = active[~finished[active]]
    if active.size:
        raise InvalidArgumentError(f"Gamma sampling does not terminate for alpha "
                                   f"{a[active[0]]}")
    return out


@register_kernel("RandomGamma", DEVICES, host_memory=("shape",))
class RandomGammaOp(OpKernel):
    """Samples [*shape, *alpha.shape], computed in double whatever the type, as TF does."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self._stream = PhiloxStream(ctx.get_attr("seed"), ctx.get_attr("seed2"))

    def compute(self, ctx):
        shape_t, alpha = host_copy(ctx.input(0)), host_copy(ctx.input(1))
        if shape_t.ndim != 1:
            raise InvalidArgumentError("shape must be a vector of {int32,int64}, got shape: "
                                       f"{shape_str(shape_t.shape)}")
        samples_shape = tuple(make_shape(shape_t))
        out_shape = samples_shape + alpha.shape
        out_dtype = ctx.output_dtype(0).np_dtype
        ctx.check_allocation(out_shape, ctx.output_dtype(0))
        if math.prod(out_shape) == 0:
            ctx.set_output(0, ctx.xp.zeros(out_shape, out_dtype))
            return
        num_samples = math.prod(samples_shape)
        key, counter = self._stream.reserve(num_samples * alpha.size * _GAMMA_RESERVED_BLOCKS)
        draws = gamma(alpha.reshape(-1), num_samples, key, counter)
        ctx.set_output(0, _to_output(draws, alpha.size, out_dtype, out_shape, ctx.xp))


# -------------------------------------------------------------------- RandomPoisson

_EXP = np.frompyfunc(math.exp, 1, 1)


def _poisson_knuth(rows, rate, uniforms, key, counter, position, out):
    """Rate < 10: the number of uniforms whose running product stays above exp(-rate)."""
    limit = _EXP(-rate[rows]).astype(np.float64)
    prod, count = np.ones(rows.size), np.zeros(rows.size)
    pending = np.arange(rows.size)
    while pending.size:
        prod[pending] *= uniforms.take(rows[pending], key, counter, position)
        stop = prod[pending] <= limit[pending]
        out[rows[pending[stop]]] = count[pending[stop]]
        count[pending[~stop]] += 1
        pending = pending[~stop]


def _poisson_hormann(rows, rate, highest, uniforms, key, counter, position, out):
    """Rate >= 10: Hormann's transformed rejection (PTRS); raises for rates it never
    accepts (NaN, infinite, or beyond the output type)."""
    r = rate[rows]
    if not np.isfinite(r).all():
        raise InvalidArgumentError(f"Poisson sampling does not terminate for rate "
                                   f"{r[~np.isfinite(r)][0]}")
    log_rate = libm_double.log(r)
    b = 0.931 + 2.53 * np.sqrt(r)
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    pending = np.arange(rows.size)
    for _ in range(_MAX_ROUNDS):
        if not pending.size:
            return
        u = uniforms.take(rows[pending], key, counter, position) - 0.5
        v = uniforms.take(rows[pending], key, counter, position)
        ap, bp = a[pending], b[pending]
        u_shifted = 0.5 - np.abs(u)
        with np.errstate(all="ignore"):
            k = np.floor((2 * ap / u_shifted + bp) * u + r[pending] + 0.43)
            fits = ~(k > highest)
            quick = fits & (u_shifted >= 0.07) & (v <= 0.9277 - 3.6224 / (bp - 2))
            tried = fits & ~quick & ~((k < 0) | ((u_shifted < 0.013) & (v > u_shifted)))
            s = _log(v * inv_alpha[pending] / (ap / (u_shifted * u_shifted) + bp))
            t = -r[pending] + k * log_rate[pending] - np.where(
                tried, libm_function("lgamma", np.float64)(np.where(tried, k + 1, 1.0))
                .astype(np.float64), 0.0)
        accept = quick | (tried & (s <= t))
        out[rows[pending[accept]]] = k[accept]
        pending = pending[~accept]
    raise InvalidArgumentError(f"Poisson sampling does not terminate for rate "
                               f"{rate[rows[pending[0]]]}")


def poisson(rate, num_samples, key, counter, highest):
    """Poisson(rate_i) draws in float64, [num_rates * num_samples] in TF's output order;
    `highest`: the output type's largest value (larger draws are redrawn)."""
    r = np.repeat(rate.astype(np.float64), num_samples)
    uniforms = _Draws(r.size, _uniform_pairs)
    position = np.zeros(r.size, np.int64)
    out = np.zeros(r.size)
    _poisson_knuth(np.nonzero(r < 10)[0], r, uniforms, key, counter, position, out)
    _poisson_hormann(np.nonzero(~(r < 10))[0], r, float(highest), uniforms, key, counter,
                     position, out)
    return out


class _RandomPoissonOp(OpKernel):
    """Samples [*shape, *rate.shape] of type dtype, computed in double, as TF does."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self._stream = PhiloxStream(ctx.get_attr("seed"), ctx.get_attr("seed2"))

    def compute(self, ctx):
        samples_shape = tuple(make_shape(host_copy(ctx.input(0))))
        rate = host_copy(ctx.input(1))
        out_shape = samples_shape + rate.shape
        out_dtype = ctx.output_dtype(0).np_dtype
        ctx.check_allocation(out_shape, ctx.output_dtype(0))
        if math.prod(out_shape) == 0:
            ctx.set_output(0, ctx.xp.zeros(out_shape, out_dtype))
            return
        num_samples = math.prod(samples_shape)
        key, counter = self._stream.reserve(num_samples * rate.size * _GAMMA_RESERVED_BLOCKS)
        limits = np.iinfo(out_dtype) if out_dtype.kind == "i" else np.finfo(out_dtype)
        draws = poisson(rate.reshape(-1), num_samples, key, counter, limits.max)
        ctx.set_output(0, _to_output(draws, rate.size, out_dtype, out_shape, ctx.xp))


register_kernel("RandomPoisson", DEVICES, host_memory=("shape",))(
    type("RandomPoissonOp", (_RandomPoissonOp,), {"__doc__": _RandomPoissonOp.__doc__}))
register_kernel("RandomPoissonV2", DEVICES, host_memory=("shape",))(
    type("RandomPoissonV2Op", (_RandomPoissonOp,), {"__doc__": _RandomPoissonOp.__doc__}))


# ------------------------------------------------- stateless gamma and Poisson (seed)

class _StatelessParamOp(OpKernel):
    """A (shape, seed, parameter) op: the full output shape ends with the parameter's."""

    param_at = 2

    def key_counter(self, ctx):
        """(key, counter, alg) of the stream; alg None for a seed."""
        return (*philox.stateless_key_counter(*seed_pair(ctx.input(1))), None)

    def compute(self, ctx):
        out_shape = tuple(make_shape(host_copy(ctx.input(0))))
        key, counter, alg = self.key_counter(ctx)
        out_dtype = ctx.output_dtype(0).np_dtype
        ctx.check_allocation(out_shape, ctx.output_dtype(0))
        if math.prod(out_shape) == 0:
            ctx.set_output(0, ctx.xp.zeros(out_shape, out_dtype))
            return
        if alg not in (None, RNG_ALG_PHILOX):
            raise InvalidArgumentError(f"Unsupported algorithm id: {alg}")
        param = host_copy(ctx.input(self.param_at))
        if param.ndim > len(out_shape) or out_shape[len(out_shape) - param.ndim:] != \
                param.shape:
            raise InvalidArgumentError("Shape passed in must end with broadcasted shape.")
        draws = self.sample(param.reshape(-1), math.prod(out_shape) // param.size, key,
                            counter, out_dtype)
        ctx.set_output(0, _to_output(draws, param.size, out_dtype, out_shape, ctx.xp))


@register_kernel("StatelessRandomGammaV2", DEVICES, host_memory=("shape", "seed"))
class StatelessRandomGammaV2Op(_StatelessParamOp):
    """RandomGamma's draws from the stream a [2] seed names, without reservation."""

    def sample(self, alpha, per_alpha, key, counter, out_dtype):
        return gamma(alpha, per_alpha, key, counter)


@register_kernel("StatelessRandomPoisson", DEVICES, host_memory=("shape", "seed"))
class StatelessRandomPoissonOp(_StatelessParamOp):
    """RandomPoissonV2's draws from the stream a [2] seed names."""

    def sample(self, lam, per_rate, key, counter, out_dtype):
        limits = np.iinfo(out_dtype) if out_dtype.kind == "i" else np.finfo(out_dtype)
        return poisson(lam, per_rate, key, counter, float(limits.max))


@register_kernel("RandomGammaGrad", DEVICES)
class RandomGammaGradOp(OpKernel):
    """d sample / d alpha (Eigen's gamma_sample_der_alpha), alpha and sample broadcast."""

    def compute(self, ctx):
        alpha, sample = host_copy(ctx.input(0)), host_copy(ctx.input(1))
        shape = broadcast_shape(alpha.shape, sample.shape)
        if shape is None:
            raise InvalidArgumentError(f"Incompatible shapes: {shape_str(alpha.shape)} vs. "
                                       f"{shape_str(sample.shape)}")
        ctx.check_allocation(shape, ctx.output_dtype(0))
        alpha, sample = np.broadcast_arrays(alpha, sample)
        ctx.set_output(0, ctx.xp.asarray(gamma_sample_der_alpha(alpha, sample)))


@register_kernel("StatelessRandomGammaV3", DEVICES,
                 host_memory=("shape", "key", "counter", "alg"))
class StatelessRandomGammaV3Op(StatelessRandomGammaV2Op):
    """StatelessRandomGammaV2 from a key, counter and algorithm (Philox only, as TF)."""

    param_at = 4

    def key_counter(self, ctx):
        return key_counter_alg(ctx.input(1), ctx.input(2), ctx.input(3))
