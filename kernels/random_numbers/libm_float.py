"""glibc's float32 `logf` and `sincosf`, vectorised, so Box-Muller normals match TF's bits.

TF's CPU random kernels call the C library's `logf` and `sincosf`; NumPy's float32 log, sin
and cos (SIMD code) differ from them in the last bit for about one value in ten. These are
glibc's algorithms (sysdeps/ieee754/flt-32: e_logf.c, s_sincosf.c, sincosf_poly.h; table
lookup and polynomials evaluated in double, rounded once to float), written against `xp`.
They cover the arguments the random kernels pass: logf of normal positive floats, sincosf
of finite floats below 120 in magnitude. Their double arithmetic is done without fused
multiply-adds, so a result can differ from an FMA build of glibc only when the double
result lies within a few units of the last place of a float rounding boundary.
The tables and polynomial coefficients are those of Arm's Optimized Routines (math/), the
origin of glibc's implementation, used under their MIT license.
"""

import numpy as np

_H = float.fromhex

# e_logf_data.c: 1/c and log(c) per subinterval, ln 2, log1p polynomial.
_LOGF_INVC = tuple(map(_H, (
    "0x1.661ec79f8f3bep+0", "0x1.571ed4aaf883dp+0", "0x1.49539f0f010bp+0",
    "0x1.3c995b0b80385p+0", "0x1.30d190c8864a5p+0", "0x1.25e227b0b8eap+0",
    "0x1.1bb4a4a1a343fp+0", "0x1.12358f08ae5bap+0", "0x1.0953f419900a7p+0", "0x1p+0",
    "0x1.e608cfd9a47acp-1", "0x1.ca4b31f026aap-1", "0x1.b2036576afce6p-1",
    "0x1.9c2d163a1aa2dp-1", "0x1.886e6037841edp-1", "0x1.767dcf5534862p-1")))
_LOGF_LOGC = tuple(map(_H, (
    "-0x1.57bf7808caadep-2", "-0x1.2bef0a7c06ddbp-2", "-0x1.01eae7f513a67p-2",
    "-0x1.b31d8a68224e9p-3", "-0x1.6574f0ac07758p-3", "-0x1.1aa2bc79c81p-3",
    "-0x1.a4e76ce8c0e5ep-4", "-0x1.1973c5a611cccp-4", "-0x1.252f438e10c1ep-5", "0x0p+0",
    "0x1.aa5aa5df25984p-5", "0x1.c5e53aa362eb4p-4", "0x1.526e57720db08p-3",
    "0x1.bc2860d22477p-3", "0x1.1058bc8a07ee1p-2", "0x1.4043057b6ee09p-2")))
_LN2 = _H("0x1.62e42fefa39efp-1")
_LOGF_A = tuple(map(_H, ("-0x1.00ea348b88334p-2", "0x1.5575b0be00b6ap-2",
                         "-0x1.ffffef20a4123p-2")))
_LOGF_OFF = 0x3F330000

# s_sincosf_data.c: 2/pi * 2^24, pi/2, cosine (c0..c4) and sine (s1..s3) polynomials.
_HPI_INV = _H("0x1.45F306DC9C883p+23")
_HPI = _H("0x1.921FB54442D18p0")
_COS = tuple(map(_H, ("0x1p0", "-0x1.ffffffd0c621cp-2", "0x1.55553e1068f19p-5",
                      "-0x1.6c087e89a359dp-10", "0x1.99343027bf8c3p-16")))
_SIN = tuple(map(_H, ("-0x1.555545995a603p-3", "0x1.1107605230bc4p-7",
                      "-0x1.994eb3774cf24p-13")))
_PIO4_TOP12 = (int(np.float32(_H("0x1.921FB54442D18p-1")).view(np.uint32)) >> 20) & 0x7FF
_TINY_TOP12 = (int(np.float32(2.0 ** -12).view(np.uint32)) >> 20) & 0x7FF


def logf(x, xp=np):
    """glibc logf of positive normal float32 values (as float32)."""
    ix = x.astype(xp.float32).view(xp.uint32)
    tmp = ix - xp.uint32(_LOGF_OFF)
    i = ((tmp >> xp.uint32(19)) % xp.uint32(16)).astype(xp.int64)
    k = tmp.view(xp.int32) >> xp.int32(23)
    z = (ix - (tmp & xp.uint32(0x1FF << 23))).view(xp.float32).astype(xp.float64)
    invc = xp.asarray(_LOGF_INVC, dtype=xp.float64)[i]
    logc = xp.asarray(_LOGF_LOGC, dtype=xp.float64)[i]
    r = z * invc - 1.0
    y0 = logc + k.astype(xp.float64) * _LN2
    r2 = r * r
    y = _LOGF_A[1] * r + _LOGF_A[2]
    y = _LOGF_A[0] * r2 + y
    y = y * r2 + (y0 + r)
    return xp.where(ix == xp.uint32(0x3F800000), xp.float32(0), y.astype(xp.float32))


def sincosf(y, xp=np):
    """glibc sincosf of float32 values with |y| < 120: (sin, cos) as float32."""
    y = y.astype(xp.float32)
    top12 = (y.view(xp.uint32) >> xp.uint32(20)) & xp.uint32(0x7FF)
    x = y.astype(xp.float64)
    small = top12 < xp.uint32(_PIO4_TOP12)
    n = ((x * _HPI_INV).astype(xp.int32) + xp.int32(0x800000)) >> xp.int32(24)
    n = xp.where(small, xp.int32(0), n)
    reduced = xp.where(small, x, x - n.astype(xp.float64) * _HPI)
    quadrant = n & xp.int32(3)
    sign = xp.where((quadrant == 1) | (quadrant == 2), -1.0, 1.0)
    cos_sign = xp.where((n & xp.int32(2)) != 0, -1.0, 1.0)    # the negated cosine table
    s_val, c_val = _sincos_poly(reduced * sign, reduced * reduced, cos_sign)
    odd = (n & xp.int32(1)) != 0
    sin_out = xp.where(odd, c_val, s_val).astype(xp.float32)
    cos_out = xp.where(odd, s_val, c_val).astype(xp.float32)
    tiny = top12 < xp.uint32(_TINY_TOP12)
    return xp.where(tiny, y, sin_out), xp.where(tiny, xp.float32(1), cos_out)


def _sincos_poly(x, x2, cos_sign):
    """sincosf_poly before the quadrant swap: (sine polynomial, cosine polynomial);
    the cosine coefficients are multiplied by `cos_sign` (TF's second table)."""
    c0, c1, c2, c3, c4 = (cos_sign * c for c in _COS)
    s1, s2, s3 = _SIN
    x4 = x2 * x2
    x3 = x2 * x
    cos_hi = c3 + x2 * c4
    sin_hi = s2 + x2 * s3
    cos_lo = c0 + x2 * c1
    x5 = x3 * x2
    x6 = x4 * x2
    s = x + x3 * s1
    c = cos_lo + x4 * c2
    return s + x5 * sin_hi, c + x6 * cos_hi
