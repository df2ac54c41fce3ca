"""float16 / bfloat16 <-> float32 conversions (numba) on the bits, in parallel: NumPy
converts half values one at a time (~1.3 ns an element); these loops vectorize. Results
are NumPy's (float16) and ml_dtypes' (bfloat16), bit for bit: round to nearest even,
overflow to infinity; float16 keeps subnormals and a NaN's sign and leading payload bits
(the lowest payload bit set where truncation would leave none, as NumPy does), bfloat16
turns a NaN into the quiet NaN of its sign."""

import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.extending import intrinsic

_MAGIC = np.uint32(113 << 23)        # 2**-14: float32 bits of the smallest normal half


@njit(cache=True, parallel=True, nogil=True)
def half_to_float(half_bits, out_bits):
    """out_bits (float32 bits, uint32) = half_bits (float16 bits, uint16) widened."""
    for i in prange(half_bits.size):
        out_bits[i] = _float_bits(half_value(half_bits[i]))


@njit(cache=True, parallel=True, nogil=True)
def float_to_half(float_bits, out_bits):
    """out_bits (float16 bits, uint16) = float_bits (float32 bits, uint32) rounded to
    nearest even."""
    for i in prange(float_bits.size):
        out_bits[i] = half_bits(float_from_bits(float_bits[i]))


@njit(cache=True, inline="always")
def half_value(half):
    """The float32 value of the float16 bits ``half`` (uint16)."""
    h = np.uint32(half)
    magnitude = (h & np.uint32(0x7FFF)) << np.uint32(13)
    exponent = magnitude & np.uint32(0x0F800000)
    bits = magnitude + np.uint32((127 - 15) << 23)
    if exponent == np.uint32(0x0F800000):          # Inf / NaN
        bits += np.uint32((128 - 16) << 23)
    elif exponent == 0:                              # zero / subnormal: renormalize
        value = np.float32(magnitude >> np.uint32(13)) * np.float32(2.0 ** -24)
        bits = _float_bits(value)
    return float_from_bits(bits | ((h & np.uint32(0x8000)) << np.uint32(16)))


@njit(cache=True, inline="always")
def half_bits(value):
    """The float16 bits (uint16) of float32 ``value`` rounded to nearest even."""
    f = _float_bits(value)
    sign = (f >> np.uint32(16)) & np.uint32(0x8000)
    f &= np.uint32(0x7FFFFFFF)
    if f >= np.uint32(0x7F800000):                   # Inf / NaN
        payload = (f & np.uint32(0x007FFFFF)) >> np.uint32(13)
        if f > np.uint32(0x7F800000) and payload == 0:
            payload = np.uint32(1)
        half = np.uint32(0x7C00) | payload
    elif f >= np.uint32((127 + 16) << 23):           # overflows the half range
        half = np.uint32(0x7C00)
    elif f < _MAGIC:                                 # subnormal half or zero
        half = np.uint32(_round_subnormal(f))
    else:
        odd = (f >> np.uint32(13)) & np.uint32(1)
        f += np.uint32(((15 - 127) << 23) + 0xFFF) + odd
        half = f >> np.uint32(13)
    return np.uint16(half | sign)


@intrinsic
def _float_bits(typingctx, value):
    """The bits of a float32 as a uint32."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(32))
    return types.uint32(types.float32), codegen


@intrinsic
def float_from_bits(typingctx, bits):
    """The float32 whose bits are the uint32 ``bits``."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.FloatType())
    return types.float32(types.uint32), codegen


@intrinsic
def converted_half_value(typingctx, half):
    """The float32 value of the float16 bits ``half`` (uint16) by the CPU's conversion
    (x86 F16C ``vcvtph2ps``, vectorized). Unlike ``half_value`` it quiets a signaling NaN,
    which arithmetic on the value does anyway."""
    def codegen(context, builder, signature, args):
        return builder.fpext(builder.bitcast(args[0], ir.HalfType()), ir.FloatType())
    return types.float32(types.uint16), codegen


@intrinsic
def converted_half_bits(typingctx, value):
    """The float16 bits (uint16) of float32 ``value`` by the CPU's conversion (F16C
    ``vcvtps2ph``, round to nearest even): ``half_bits``'s result for every value except a
    signaling NaN, which it quiets (arithmetic results are never signaling)."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(builder.fptrunc(args[0], ir.HalfType()), ir.IntType(16))
    return types.uint16(types.float32), codegen


@intrinsic
def double_from_bits(typingctx, bits):
    """The float64 whose bits are the int64 ``bits``."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())
    return types.float64(types.int64), codegen


@njit(cache=True, inline="always")
def _round_subnormal(bits):
    """Half bits of the float32 ``bits`` below 2**-14: adding 0.5 (2**-1) makes the FPU round
    the value at 2**-24 granularity (to nearest even); the low bits are then the half."""
    return _float_bits(float_from_bits(bits) + np.float32(0.5)) - np.uint32(126 << 23)


@njit(cache=True, parallel=True, nogil=True)
def bfloat16_to_float(half_bits, out_bits):
    """out_bits (float32 bits) = half_bits (bfloat16 bits, uint16): the upper half."""
    for i in prange(half_bits.size):
        out_bits[i] = np.uint32(half_bits[i]) << np.uint32(16)


@njit(cache=True, parallel=True, nogil=True)
def float_to_bfloat16(float_bits, out_bits):
    """out_bits (bfloat16 bits, uint16) = float_bits (float32 bits) rounded to nearest even,
    as ml_dtypes rounds: any NaN becomes the quiet NaN of its sign."""
    for i in prange(float_bits.size):
        out_bits[i] = bfloat16_bits(float_from_bits(float_bits[i]))


@njit(cache=True, inline="always")
def bfloat16_value(half):
    """The float32 value of the bfloat16 bits ``half`` (uint16)."""
    return float_from_bits(np.uint32(half) << np.uint32(16))


@njit(cache=True, inline="always")
def bfloat16_bits(value):
    """The bfloat16 bits (uint16) of float32 ``value`` rounded to nearest even."""
    f = _float_bits(value)
    if (f & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000):
        return np.uint16(((f >> np.uint32(16)) & np.uint32(0x8000)) | 0x7FC0)
    odd = (f >> np.uint32(16)) & np.uint32(1)
    return np.uint16((f + np.uint32(0x7FFF) + odd) >> np.uint32(16))
