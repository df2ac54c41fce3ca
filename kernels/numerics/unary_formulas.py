"""The formulas of the unary element-wise ops (`UNARY`: op name -> ``fn(xp, x)``), written
once against ``xp`` (NumPy or CuPy), as ``kernels/ops/math.py``'s UnaryOp kernels apply
them."""

import numpy as np

from graphops.kernels.numerics.erf import erf, erfc
from graphops.kernels.support.kernel_util import (compiled_cpu, compiled_elementwise,
                                                  PARALLEL_MIN_SIZE_COMPUTE)
from graphops.registry.errors import InvalidArgumentError


def sigmoid(xp, x):
    """1 / (1 + exp(-x)) without overflow; CPU float32 of any size and layout in one compiled
    pass (``compiled.elementwise.sigmoid``, correctly rounded in tests, as fused swishes)."""
    if x.dtype.kind == "c":
        return 1 / (1 + xp.exp(-x))
    if xp is np and x.dtype == np.float32 and not (type(x) is np.ndarray and x.flags.c_contiguous):
        x = np.array(x, order="C")
    if compiled_cpu(xp, x, dtypes=(np.dtype(np.float32),), min_size=0):
        return compiled_elementwise("sigmoid", x, x, parallel_from=PARALLEL_MIN_SIZE_COMPUTE)
    # e = exp(-|x|) (no overflow); the numerator max(e, sign(x)): 1 for x > 0, e elsewhere
    e = xp.abs(x, out=xp.empty(x.shape, x.dtype))      # an array even when x is 0-d
    xp.exp(xp.negative(e, out=e), out=e)
    d = xp.add(e, x.dtype.type(1))
    return xp.divide(xp.maximum(e, xp.sign(x), out=e), d, out=e)


def _sign(xp, x):
    if x.dtype.kind == "c":                        # x / |x|, 0 at 0
        size = xp.abs(x)
        return xp.where(size == 0, 0, x / xp.where(size == 0, 1, size))
    return xp.sign(x)


def _reciprocal(xp, x):
    """1 / x; integers divide as C++ does (truncating): 1 and -1 keep their value, every
    other nonzero value gives 0, and 0 is an error."""
    if x.dtype.kind in "iu":
        if x.size and bool(xp.any(x == 0)):
            raise InvalidArgumentError("Integer division by zero")
        return xp.where(xp.abs(x) == 1, x, 0)
    return 1 / x


def _round(xp, x):
    """Half to even (NumPy's `round`); integers are already round (TF 2.21's CPU kernel
    returns 0 for every integer instead)."""
    return x if x.dtype.kind in "iu" else xp.round(x)


def _xp_function(name):
    """The formula that calls ``xp.<name>(x)``."""
    return lambda xp, x: getattr(xp, name)(x)


# the ops that are one xp function of the same meaning
_XP_FUNCTIONS = {
    "Neg": "negative", "Sqrt": "sqrt", "Exp": "exp", "Log": "log", "Tanh": "tanh",
    "Abs": "abs", "Floor": "floor", "Ceil": "ceil", "Sin": "sin", "Cos": "cos",
    "Tan": "tan", "Asin": "arcsin", "Acos": "arccos", "Atan": "arctan", "Sinh": "sinh",
    "Cosh": "cosh", "Asinh": "arcsinh", "Acosh": "arccosh", "Atanh": "arctanh",
    "Log1p": "log1p", "Expm1": "expm1"}

UNARY = {
    **{op: _xp_function(name) for op, name in _XP_FUNCTIONS.items()},
    "Square": lambda xp, x: xp.multiply(x, x),
    "Rsqrt": lambda xp, x: 1 / xp.sqrt(x),
    "Sigmoid": sigmoid,
    "Sign": _sign,
    "Reciprocal": _reciprocal,
    "Inv": _reciprocal,
    "Round": _round,
    "Erf": erf,
    "Erfc": erfc,
}
