"""Elementwise loops and sums (numba) where NumPy is slow: selection by a mask (a blend of
the values' bits), Relu(6) and their masked-product gradients, a float32 Sigmoid and Swish
(x * sigmoid(x)) and the clusters' tanh computed in float32, erf and erfc, float64 sums
down the columns of a matrix, bias additions, and fused per-channel scale, shift and
Relu(6), and sums then Relu(6) (in parallel)."""

import math

import numpy as np
from numba import njit, prange

from graphops.kernels.compiled.casts import double_from_bits, float_from_bits
from graphops.kernels.compiled.ir import fused_multiply_add

_LOG2E = 1.4426950408889634
_LN2_HI, _LN2_LO = 6.93147180369123816490e-01, 1.90821492927058770002e-10   # fdlibm's split
_INV_FACTORIALS = tuple(1.0 / np.prod(np.arange(1.0, k + 1)) for k in range(12))
# float32 exp (Cephes' expf): ln 2 split so that k times its high part is exact, the
# polynomial's coefficients, and 1.5 * 2**23, which rounds a float32 below 2**22 to an
# integer when added and taken away
_LOG2E_F, _LN2_HI_F, _LN2_LO_F = np.float32(_LOG2E), np.float32(0.693359375), np.float32(
    -2.12194440e-4)
_EXPF_P0, _EXPF_P1, _EXPF_P2, _EXPF_P3, _EXPF_P4, _EXPF_P5 = (
    np.float32(c) for c in (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3,
                            4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1))
_ROUNDER, _EXPF_LOWEST, _ONE = np.float32(1.5 * 2 ** 23), np.float32(-104), np.float32(1)
# float32 tanh (Cephes' tanhf): its polynomial below _TANH_NEAR, the value itself below
# _TANH_TINY
_TANH_P0, _TANH_P1, _TANH_P2, _TANH_P3, _TANH_P4 = (
    np.float32(c) for c in (-5.70498872745e-3, 2.06390887954e-2, -5.37397155531e-2,
                            1.33314422036e-1, -3.33332819422e-1))
_TANH_NEAR, _TANH_TINY, _MINUS_TWO = np.float32(0.625), np.float32(2.0 ** -12), np.float32(-2)


@njit(cache=True, parallel=True, nogil=True)
def select(condition, a, b, zero, out):
    """out = a where condition else b: flat arrays of one size, ``condition`` as bytes 0 or
    1, the values as unsigned integers of their width (their bits; ``zero`` that type's 0).
    Each byte makes a mask of all ones or none that blends the two words: no branch, so
    every lane runs on full vectors (a select on the bytes themselves keeps AVX2 scalar)."""
    for i in prange(out.size):
        mask = zero - (zero | condition[i])
        out[i] = (a[i] & mask) | (b[i] & ~mask)


@njit(cache=True, parallel=True, nogil=True)
def select_scalar(condition, a, b, zero, out):
    """``select`` with ``b`` one value's bits."""
    for i in prange(out.size):
        mask = zero - (zero | condition[i])
        out[i] = (a[i] & mask) | (b & ~mask)


@njit(cache=True, parallel=True, nogil=True)
def error_function(x, complement, out):
    """out = erf(x), or erfc(x) with ``complement`` (flat arrays): the C library's, in
    float64, rounded once to out's dtype."""
    for i in prange(out.size):
        value = np.float64(x[i])
        out[i] = math.erfc(value) if complement else math.erf(value)


@njit(cache=True, parallel=True, nogil=True)
def relu(x, out):
    """out = max(x, 0) (flat arrays): NaN stays NaN and -0 stays -0, as TF and NumPy give
    (NumPy's maximum runs 4x slower than a copy)."""
    for i in prange(out.size):
        value = x[i]
        out[i] = 0 if value < 0 else value


@njit(cache=True, parallel=True, nogil=True)
def relu6(x, out):
    """out = min(max(x, 0), 6) (flat arrays): NaN stays NaN and -0 stays -0, as TF gives."""
    for i in prange(out.size):
        value = x[i]
        out[i] = 0 if value < 0 else (6 if value > 6 else value)


@njit(cache=True, parallel=True, nogil=True)
def sum_activation(a, b, bounded, zero, six, out):
    """out = relu(a + b), or relu6 with ``bounded`` (flat arrays of one size): the sum
    rounded in their dtype, NaN and -0 kept as ``relu`` keeps them (a residual block's
    Add + Relu). ``zero`` and ``six`` are those values in the arrays' dtype."""
    for i in prange(out.size):
        value = a[i] + b[i]
        out[i] = zero if value < zero else (six if bounded and value > six else value)


@njit(cache=True, parallel=True, nogil=True)
def channel_chain(x, tiled, kinds, activation, zero, six, out):
    """out = act(x op0 v0 op1 v1 ...) for flat arrays of whole rows of C channels, left to
    right: ``kinds[j]`` 1 multiplies, 2 adds, 3 subtracts; ``tiled[j]`` is ``v_j`` repeated
    along a chunk's length (a multiple of C), so that every chunk's loops run straight along
    it (``chain_pass``). Each step is rounded in x's dtype as the separate ops round it (no
    fused multiply-add). ``activation``: 0 (none), 1 (Relu) or 2 (Relu6), NaN and -0 kept
    as ``relu`` keeps them; ``zero`` and ``six`` are those values in x's dtype. ``out``
    is ``x`` itself or does not overlap it."""
    chunk = tiled.shape[1]
    in_place = out.ctypes.data == x.ctypes.data
    for part in prange((x.shape[0] + chunk - 1) // chunk):
        start = part * chunk
        stop = min(start + chunk, x.shape[0])
        if in_place:
            chain_chunk(out[start:stop], tiled, kinds, activation, zero, six)
        else:
            chain_pass(x[start:stop], out[start:stop], tiled, kinds, activation, zero, six)


@njit(cache=True, nogil=True)
def chain_rows(values, tiled, kinds, activation, zero, six):
    """``channel_chain`` in place on ``values``, a flat run of whole rows of C channels (a
    conv's output block, its epilogue applied while it is in the cache)."""
    chunk = tiled.shape[1]
    for start in range(0, values.shape[0], chunk):
        chain_chunk(values[start:start + chunk], tiled, kinds, activation, zero, six)


@njit(cache=True, nogil=True)
def chain_chunk(dst, tiled, kinds, activation, zero, six):
    """``channel_chain``'s stages and activation in place on one chunk ``dst`` (at most
    ``tiled``'s length, starting at channel 0): ``chain_pass`` inlined on one array, so
    that LLVM sees a single pointer (two that overlap fail its check for vector loops and
    run scalar)."""
    chain_pass(dst, dst, tiled, kinds, activation, zero, six)


@njit(cache=True, nogil=True, inline="always")
def chain_pass(src, dst, tiled, kinds, activation, zero, six):
    """dst = the chain of ``channel_chain`` on one chunk ``src`` (at most ``tiled``'s
    length, starting at channel 0; ``dst`` is ``src`` or apart from it). Where the first
    two stages multiply or add, one loop reads src and applies them, and the activation
    where no stage is left, each picked by a select rather than a branch, so that the loop
    runs on full vectors; the other stages (a subtraction among them: a select between it
    and an addition lets LLVM rewrite it as the addition of a negation, which turns a NaN's
    sign) go in passes of one kind each over dst, in the cache, then the activation."""
    count, stages = dst.shape[0], kinds.shape[0]
    fused = min(stages, 2)
    for j in range(fused - 1, -1, -1):
        if kinds[j] == 3:                  # up to the first subtraction
            fused = j
    last = activation if fused == stages else 0
    if fused == 0:
        for k in range(count):
            dst[k] = _activated(src[k], last, zero, six)
    elif fused == 1:
        first, multiply = tiled[0], kinds[0] == 1
        for k in range(count):
            dst[k] = _activated(_stage(src[k], first[k], multiply), last, zero, six)
    else:
        first, multiply, second, multiply_second = (tiled[0], kinds[0] == 1, tiled[1],
                                                     kinds[1] == 1)
        for k in range(count):
            dst[k] = _activated(_stage(_stage(src[k], first[k], multiply), second[k],
                                       multiply_second), last, zero, six)
    if fused < stages:
        for j in range(fused, stages):
            _stage_pass(dst, tiled[j], kinds[j])
        for k in range(count):
            dst[k] = _activated(dst[k], activation, zero, six)


@njit(cache=True, nogil=True, inline="always")
def _stage_pass(dst, vector, kind):
    """dst = dst times, plus or minus ``vector`` for ``kind`` 1, 2 or 3: a loop of one
    operation."""
    if kind == 1:
        for k in range(dst.shape[0]):
            dst[k] = dst[k] * vector[k]
    elif kind == 2:
        for k in range(dst.shape[0]):
            dst[k] = dst[k] + vector[k]
    else:
        for k in range(dst.shape[0]):
            dst[k] = dst[k] - vector[k]


@njit(cache=True, nogil=True, inline="always")
def _stage(value, v, multiply):
    """``value`` times ``v`` where ``multiply``, else plus: both made, one picked."""
    product, total = value * v, value + v
    return product if multiply else total


@njit(cache=True, nogil=True, inline="always")
def _activated(value, activation, zero, six):
    """``value`` through activation 0 (none), 1 (Relu) or 2 (Relu6), NaN and -0 kept."""
    if activation == 0:
        return value
    value = zero if value < zero else value
    return six if activation == 2 and value > six else value


@njit(cache=True, nogil=True, inline="always")
def exp_wide(t):
    """exp(t) in float64 for a widened float32 ``t``: range reduction t = k ln2 + r
    (|r| <= ln2/2), then a degree-11 polynomial (error ~1e-14), which vectorizes where the
    C library's exp does not. Beyond +-200 every float32 result is 0 or inf."""
    t = min(max(t, -200.0), 200.0)
    k = np.floor(t * _LOG2E + 0.5)
    r = (t - k * _LN2_HI) - k * _LN2_LO
    p = _INV_FACTORIALS[11]
    for j in range(10, -1, -1):
        p = p * r + _INV_FACTORIALS[j]
    return p * double_from_bits(np.int64(k + 1023) << np.int64(52))


@njit(cache=True, nogil=True, inline="always", error_model="numpy")
def exp_negative_narrow(t):
    """exp(t) in float32 for a float32 ``t`` <= 0 (Cephes' expf): t = k ln2 + r (|r| <=
    ln2/2, k*ln2's high part exact), a degree-7 polynomial in r, then 2**k in two factors,
    so that a subnormal result is rounded once. Every sum of a product is one explicit
    fused multiply-add or exact (k times ln 2's high part), so the bits do not depend on
    the caller's contraction flags; every step vectorizes, 8 lanes to a vector on AVX2.
    Below -104 every result is 0."""
    t = max(t, _EXPF_LOWEST)
    k = fused_multiply_add(t, _LOG2E_F, _ROUNDER) - _ROUNDER   # t / ln2 to an integer
    r = fused_multiply_add(-k, _LN2_LO_F, t - k * _LN2_HI_F)   # k ln2's high part exact
    p = _EXPF_P0
    for c in (_EXPF_P1, _EXPF_P2, _EXPF_P3, _EXPF_P4, _EXPF_P5):
        p = fused_multiply_add(p, r, c)
    p = fused_multiply_add(p, r * r, r) + _ONE
    power = np.int32(k)
    normal = max(power, np.int32(-126))
    return (p * _power_of_two(normal)) * _power_of_two(power - normal)


@njit(cache=True, nogil=True, inline="always")
def _power_of_two(k):
    """2**k as a float32, for an int32 k from -126 to 127."""
    return float_from_bits(np.uint32((k + np.int32(127)) << np.int32(23)))


@njit(cache=True, nogil=True, inline="always", error_model="numpy")
def sigmoid_narrow(value):
    """1 / (1 + exp(-value)) in float32 for a float32 ``value``: e = exp(-|value|)
    (``exp_negative_narrow``: nothing overflows), then 1 / (1 + e) for value >= 0 and
    e / (1 + e) below. Within 3 ulp of the exact value (2.3 the largest seen), as TF's
    Eigen approximation is; NaN stays NaN."""
    e = exp_negative_narrow(-abs(value))
    return value if value != value else (_ONE if value >= 0 else e) / (_ONE + e)


@njit(cache=True, nogil=True, inline="always", error_model="numpy")
def tanh_narrow(value):
    """tanh in float32 for a float32 ``value`` (Cephes' tanhf): the value itself below
    2**-12 (x^3/3 is below half an ulp there; -0 and subnormals kept), an odd polynomial
    below 0.625, else sign(x) (1 - e) / (1 + e) with e = exp(-2|x|)
    (``exp_negative_narrow``); its product-sums explicit fused multiply-adds.
    Within 2 ulp of the exact values (1.5 the largest seen); NaN stays NaN."""
    size = abs(value)
    z = value * value
    p = fused_multiply_add(fused_multiply_add(fused_multiply_add(fused_multiply_add(
        _TANH_P0, z, _TANH_P1), z, _TANH_P2), z, _TANH_P3), z, _TANH_P4)
    near = fused_multiply_add(p * z, value, value)
    e = exp_negative_narrow(_MINUS_TWO * size)
    far = (_ONE - e) / (_ONE + e)
    far = far if value >= 0 else -far
    return value if size < _TANH_TINY else (near if size < _TANH_NEAR else far)


@njit(cache=True, parallel=True, nogil=True, fastmath={"contract"}, error_model="numpy")
def sigmoid(x, out):
    """out = 1 / (1 + exp(-x)) for float32 x (flat arrays), in float32 (``sigmoid_narrow``):
    the Sigmoid kernel's, the fused swish's and the elementwise clusters' sigmoid, one
    formula with its own rounding steps, so their bits agree."""
    for i in prange(out.size):
        out[i] = sigmoid_narrow(x[i])


@njit(cache=True, parallel=True, nogil=True, fastmath={"contract"}, error_model="numpy")
def swish(x, beta, out):
    """out = x * sigmoid(beta * x) for float32 x (flat arrays) and beta: the float32
    product beta * x, ``sigmoid``'s value of it, then the float32 product, as Mul,
    Sigmoid and Mul round them, in one pass."""
    for i in prange(out.size):
        value = x[i]
        out[i] = value * sigmoid_narrow(value * beta)


@njit(cache=True, parallel=True, nogil=True)
def masked_product(gradients, features, low, high, bounded, one, zero, out):
    """out = gradients * (one if low < features (< high, when ``bounded``) else zero) (flat
    arrays): TF's ReluGrad and Relu6Grad, a product, so a NaN or infinite gradient gives
    NaN where the mask is 0."""
    for i in prange(out.size):
        value = features[i]
        inside = low < value and (not bounded or value < high)
        out[i] = gradients[i] * (one if inside else zero)


@njit(cache=True, parallel=True, nogil=True)
def column_sums(matrix, partials):
    """partials[p, c] += the sum of column c over row block p of `matrix` (float64 partials;
    the caller adds them up in block order, so the result depends only on the block count)."""
    rows, cols = matrix.shape
    blocks = partials.shape[0]
    for p in prange(blocks):
        total = np.zeros(cols)    # the thread's own: adjacent rows of partials share a line
        for r in range(p * rows // blocks, (p + 1) * rows // blocks):
            for c in range(cols):
                total[c] += matrix[r, c]
        partials[p] += total


@njit(cache=True, parallel=True, nogil=True)
def middle_sums(cube, totals):
    """totals[o, c] += the sum over r of cube[o, r, c], in order of r (float64 totals): a
    reduction over the axes between the outer and the kept ones."""
    outer, rows, cols = cube.shape
    for o in prange(outer):
        total = totals[o]
        for r in range(rows):
            for c in range(cols):
                total[c] += cube[o, r, c]


@njit(cache=True, parallel=True, nogil=True)
def add_row_vector(matrix, vector, out):
    """out[r, c] = matrix[r, c] + vector[c]."""
    rows, cols = matrix.shape
    for r in prange(rows):
        for c in range(cols):
            out[r, c] = matrix[r, c] + vector[c]


@njit(cache=True, parallel=True, nogil=True)
def add_per_row(matrix, values, out):
    """out[r, :] = matrix[r, :] + values[r % len(values)]."""
    rows, cols = matrix.shape
    for r in prange(rows):
        value = values[r % values.shape[0]]
        for c in range(cols):
            out[r, c] = matrix[r, c] + value
