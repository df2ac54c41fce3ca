"""The Gauss error function and its complement on `xp` arrays (NumPy and CuPy have neither),
accurate to float64 rounding: on the CPU one compiled pass of the C library's erf / erfc
(`compiled.elementwise.error_function`); elsewhere (CuPy) a positive-term power series
below |x| = 1, Laplace's continued fraction for erfc from there on, some 500 array
operations a call."""

import numpy as np

from graphops.kernels.support.kernel_util import (PARALLEL_MIN_SIZE_COMPUTE, compiled_cpu,
                                                  compiled_elementwise)

_SWITCH = 1.0
_SERIES_TERMS = 40          # the last term at |x| = 1 is below 1e-17 of the sum
_FRACTION_DEPTH = 200       # the continued fraction has converged to 1e-16 for |x| >= 1


def _series(xp, a):
    """erf(a) for 0 <= a <= _SWITCH: 2/sqrt(pi) exp(-a^2) sum_n 2^n a^(2n+1) / (2n+1)!!."""
    term = total = a
    square = a * a
    for n in range(1, _SERIES_TERMS):
        term = term * (2.0 * square / (2 * n + 1))
        total = total + term
    return 2.0 / np.sqrt(np.pi) * xp.exp(-square) * total


def _tail(xp, a):
    """erfc(a) for a >= _SWITCH: exp(-a^2)/sqrt(pi) / (a + (1/2)/(a + 1/(a + (3/2)/...)))."""
    fraction = a
    for k in range(_FRACTION_DEPTH, 0, -1):
        fraction = a + (k / 2.0) / fraction
    return xp.exp(-a * a) / np.sqrt(np.pi) / fraction


def _parts(xp, x):
    """(x as float64, |x| < _SWITCH, erf(|x|) there, erfc(|x|) elsewhere)."""
    x = x.astype(np.float64)
    a = xp.abs(x)
    small = a < _SWITCH
    return x, small, _series(xp, xp.minimum(a, _SWITCH)), _tail(xp, xp.maximum(a, _SWITCH))


def _compiled(xp, x, complement):
    """erf (erfc with `complement`) of a float32/float64 CPU array in one compiled pass,
    in x's dtype; None where no compiled loop takes `x`."""
    if not compiled_cpu(xp, x, min_size=1):
        return None
    return compiled_elementwise("error_function", x, x, complement,
                                parallel_from=PARALLEL_MIN_SIZE_COMPUTE)


def erf(xp, x):
    """erf(x) for a real floating array `x`, computed in float64."""
    compiled = _compiled(xp, x, False)
    if compiled is not None:
        return compiled
    x, small, series, tail = _parts(xp, x)
    magnitude = xp.where(small, series, 1.0 - tail)
    return xp.where(xp.isnan(x), x, xp.where(x < 0, -magnitude, magnitude))


def erfc(xp, x):
    """erfc(x) = 1 - erf(x) for a real floating array `x`, computed in float64."""
    compiled = _compiled(xp, x, True)
    if compiled is not None:
        return compiled
    x, small, series, tail = _parts(xp, x)
    signed = xp.where(x < 0, -series, series)
    return xp.where(xp.isnan(x), x, xp.where(small, 1.0 - signed,
                                              xp.where(x < 0, 2.0 - tail, tail)))
