"""CPU and GPU kernels of the math ops, written once against `ctx.xp`, with TF's checks: the
cwise arithmetic (TF1's string-concatenating Add, the truncating divisions and remainders
Div, TruncateDiv, TruncateMod, Mod, Atan2 too), comparisons, unary functions (trigonometric
and hyperbolic, with their inverses) and their gradient ops, Cast, MatMul, AddN, L2Loss,
Range, and TF1's extras (FloorDiv, Rint, the logical ops, IsNan/IsInf/IsFinite,
ClipByValue). Reductions and scans are in ``reduction.py``, the special functions in
``math_special.py``.

float16/bfloat16 transcendental functions and matmuls run in float32 and are
rounded once. Integer arithmetic wraps, as in TF. Kernels run under `np.errstate(all="ignore")`
(set once per run by the executor and by eager execution): NaN/Inf follow IEEE rules silently.
"""

import functools

import numpy as np

from graphops.kernels.numerics.unary_formulas import sigmoid, UNARY
from graphops.kernels.support.parallelism import matmul
from graphops.kernels.support.kernel_util import (astype, broadcast_shape, computable_types,
                                                  DEVICES, object_scalar, UINT_OF_SIZE)
from graphops.kernels.support.tensor_list import add_variants
from graphops.registry import dtypes, errors
from graphops.registry.errors import InvalidArgumentError, UnimplementedError
from graphops.registry.kernel_registry import OpKernel, register_kernel
from graphops.registry.op_defs.math import range_size
from graphops.registry.tensor_shape import shape_str


HALF_TYPES = (dtypes.float16, dtypes.bfloat16)


def float32_if_half(x, dtype):
    """`x` as float32 (a new array) when `dtype` is a half type, else `x` itself; large CPU
    arrays through the compiled casts (`kernel_util.astype`)."""
    if dtype not in HALF_TYPES:
        return x
    return astype(np if isinstance(x, np.ndarray) else None, x, np.float32, copy=True)


# -----------------------------------------------------------------------------
# unary

class UnaryOp(OpKernel):
    """y = f(x) element-wise; `fn(xp, x)` comes from `unary_formulas.UNARY`."""

    fn = None

    def compute(self, ctx):
        x, dtype = ctx.input(0), ctx.output_dtype(0)
        if dtype in HALF_TYPES:
            x = float32_if_half(x, dtype)
        y = type(self).fn(ctx.xp, x)
        ctx.set_output(0, y.astype(dtype.np_dtype, copy=False))

    def prepare(self, ctx):
        """`fn` and the cast, for inputs of no half type (a 0-d result, which NumPy gives
        as a scalar, made an array as `set_output` makes it)."""
        dtype = ctx.output_dtype(0)
        if ctx.xp is not np or dtype in HALF_TYPES:
            return None
        fn, np_dtype = type(self).fn, dtype.np_dtype
        if ctx.input(0).ndim == 0:
            return lambda inputs: [np.asarray(fn(np, inputs[0]).astype(np_dtype, copy=False))]
        return lambda inputs: [fn(np, inputs[0]).astype(np_dtype, copy=False)]


_FUSED_UNARY = {"Neg": "neg", "Abs": "abs", "Square": "square", "Sqrt": "sqrt",
                "Rsqrt": "rsqrt", "Reciprocal": "reciprocal", "Inv": "reciprocal",
                "Exp": "exp", "Log": "log", "Tanh": "tanh", "Sigmoid": "sigmoid"}

for _name, _fn in UNARY.items():
    register_kernel(_name, DEVICES, type_constraints={"T": computable_types(_name)})(
        type(_name + "Op", (UnaryOp,),
             {"fn": staticmethod(_fn), "swish_gate": _fn is sigmoid,
              "elementwise": _FUSED_UNARY.get(_name)}))


# -----------------------------------------------------------------------------
# binary

_BINARY = {
    "AddV2": "add", "Add": "add", "Sub": "subtract", "Mul": "multiply", "RealDiv": "true_divide",
    "Maximum": "maximum", "Minimum": "minimum", "Less": "less", "LessEqual": "less_equal",
    "Greater": "greater", "GreaterEqual": "greater_equal", "Equal": "equal",
    "NotEqual": "not_equal",
}
_REAL_DIV_TYPES = [t for t in computable_types("RealDiv") if t.is_floating or t.is_complex]
_CHAIN_STAGES = {"AddV2": "add", "Sub": "sub", "Mul": "mul"}   # OpKernel.chain_stage
_FUSED_BINARY = {"AddV2": "add", "Add": "add", "Sub": "sub", "Mul": "mul", "RealDiv": "div",
                 "Maximum": "max", "Minimum": "min", "TanhGrad": "tanh_grad",
                 "SigmoidGrad": "sigmoid_grad"}                 # OpKernel.elementwise
_SCALARS = {"Less": "less", "LessEqual": "less_equal", "Greater": "greater",  # .scalar_op
            "GreaterEqual": "greater_equal", "Equal": "equal", "NotEqual": "not_equal",
            "LogicalAnd": "logical_and", "LogicalOr": "logical_or", "LogicalNot": "logical_not"}


class BinaryOp(OpKernel):
    """z = f(x, y) element-wise with broadcasting; `ufunc` names the xp function (none for a
    ComputedBinaryOp, which sets its formula instead)."""

    ufunc = None

    def __init__(self, ctx):
        super().__init__(ctx)
        self._shape_error = (ctx.get_attr("incompatible_shape_error")
                             if ctx.has_attr("incompatible_shape_error") else True)
        self._fn = getattr(ctx.xp, self.ufunc) if self.ufunc else None
        self.scalar_op = _SCALARS.get(self.op_type)
        self._out_dtype = ctx.output_dtypes[0].np_dtype

    def compute(self, ctx):
        x, y = ctx.inputs
        # Only broadcasting two non-scalars can outgrow both inputs ([n, 1] + [1, n]).
        if x.shape != y.shape and x.size != 1 and y.size != 1 and not self.checked_once(
                (x.shape, y.shape),
                lambda: self._broadcasts(ctx, x.shape, y.shape)):
            ctx.set_output(0, ctx.xp.asarray(self.op_type == "NotEqual"))
            return
        z = self._fn(x, y)
        if type(z) is not np.ndarray and self._out_dtype == object:    # 0-d strings' sum
            z = object_scalar(z)
        elif z.dtype != self._out_dtype:
            z = z.astype(self._out_dtype)
        ctx.set_output(0, z)

    def prepare(self, ctx):
        """compute's call, once the shapes broadcast (a 0-d result, which NumPy gives as a
        scalar, made an array as `set_output` makes it)."""
        x, y = ctx.inputs
        if ctx.xp is not np:
            return None
        if x.shape != y.shape and x.size != 1 and y.size != 1 and not self._broadcasts(
                ctx, x.shape, y.shape):
            return None
        fn, out_dtype, scalar = self._fn, self._out_dtype, x.ndim == y.ndim == 0
        if scalar and out_dtype == object:
            return None

        def call(inputs):
            z = np.asarray(fn(*inputs)) if scalar else fn(*inputs)
            return [z if z.dtype == out_dtype else z.astype(out_dtype)]
        return call

    def _broadcasts(self, ctx, x_shape, y_shape):
        """Whether the shapes broadcast (within the memory budget); False where they do not
        and the op gives a scalar verdict instead (Equal/NotEqual), else TF's error."""
        shape = broadcast_shape(x_shape, y_shape)
        if shape is None:
            if not self._shape_error:
                return False
            raise InvalidArgumentError(
                f"Incompatible shapes: {shape_str(x_shape)} vs. {shape_str(y_shape)}")
        ctx.check_allocation(shape, self._out_dtype)
        return True


for _name, _ufunc in _BINARY.items():
    if _name != "RealDiv":       # registered below, once `divide` is defined
        _types = computable_types(_name)
        register_kernel(_name, DEVICES, type_constraints={"T": _types} if _types else None)(
            type(_name + "Op", (BinaryOp,),
                 {"ufunc": _ufunc, "chain_stage": _CHAIN_STAGES.get(_name),
                  "elementwise": _FUSED_BINARY.get(_name)}))


class ComputedBinaryOp(BinaryOp):
    """A broadcasting binary op whose `formula(xp, x, y)` runs on half types in float32."""

    formula = None

    def __init__(self, ctx):
        super().__init__(ctx)
        xp, dtype = ctx.xp, ctx.output_dtypes[0]
        formula = type(self).formula
        self._fn = (functools.partial(formula, xp) if dtype not in HALF_TYPES else
                    lambda x, y: formula(xp, float32_if_half(x, dtype), float32_if_half(y, dtype)))


def _floor_mod(xp, x, y):
    """TF's floor_mod: the remainder takes the sign of y (C++'s fmod, then y added when the
    signs differ); an integer y of 0 is an error (when there is a result to compute), a
    float one gives NaN."""
    if x.dtype.kind in "iu":
        if x.size and y.size and bool(xp.any(y == 0)):
            raise InvalidArgumentError("Integer division by zero")
        return xp.remainder(x, y)
    mod = xp.fmod(x, y)
    return xp.where((mod != 0) & ((y < 0) != (mod < 0)), mod + y, mod)


register_kernel("FloorMod", DEVICES, type_constraints={"T": computable_types("FloorMod")})(
    type("FloorModOp", (ComputedBinaryOp,), {"formula": staticmethod(_floor_mod)}))

_TRUNCATE_ERROR = ("Unexpected error in binary operator (only integer div and mod should have "
                   "errors)")


def _check_integer_divisor(xp, x, y, error=InvalidArgumentError,
                           message="Integer division by zero"):
    """TF's safe division: an integer y of 0 is an error when there is a result to compute."""
    if x.dtype.kind in "iu" and x.size and y.size and bool(xp.any(y == 0)):
        raise error(message)


def _truncating_divide(xp, x, y):
    """x / y rounded towards zero: integers as C++'s `/` (INT_MIN / -1 wraps), floats as
    trunc(x / y), complex numbers divided."""
    if x.dtype.kind not in "iu":
        quotient = x / y
        return quotient if quotient.dtype.kind == "c" else xp.trunc(quotient)
    quotient = xp.floor_divide(x, y)
    if x.dtype.kind == "i":       # floor -> towards zero where the division was inexact
        quotient = quotient + ((x - quotient * y != 0) & ((x < 0) != (y < 0))).astype(x.dtype)
    return quotient


def divide(xp, x, y):
    """x / y of floats or complex numbers; a complex x / 0 is NaN + NaN i, as TF's."""
    quotient = x / y
    if quotient.dtype.kind != "c":
        return quotient
    return xp.where(y == 0, quotient.dtype.type(complex(np.nan, np.nan)), quotient)


@register_kernel("RealDiv", DEVICES, type_constraints={"T": _REAL_DIV_TYPES})
class RealDivOp(BinaryOp):
    """x / y; a complex x / 0 is NaN + NaN i, as TF's (Div's `divide`)."""

    ufunc = "true_divide"
    elementwise = "div"

    def __init__(self, ctx):
        super().__init__(ctx)
        if ctx.output_dtypes[0].is_complex:
            xp = ctx.xp
            self._fn = lambda x, y: divide(xp, x, y)


def _div(xp, x, y):
    _check_integer_divisor(xp, x, y)
    return _truncating_divide(xp, x, y) if x.dtype.kind in "iu" else divide(xp, x, y)


def _truncate_div(xp, x, y):
    _check_integer_divisor(xp, x, y, errors.InternalError, _TRUNCATE_ERROR)
    return _truncating_divide(xp, x, y)


def _truncate_mod(xp, x, y):
    """C++'s `%` and std::fmod: the remainder takes the sign of x."""
    _check_integer_divisor(xp, x, y, errors.InternalError, _TRUNCATE_ERROR)
    return xp.fmod(x, y)


def _mod(xp, x, y):
    _check_integer_divisor(xp, x, y)
    return xp.fmod(x, y)


for _name, _formula, _types in (
        ("Div", _div, computable_types("Div")),
        ("TruncateDiv", _truncate_div,
         [t for t in computable_types("TruncateDiv") if not t.is_complex]),
        ("TruncateMod", _truncate_mod, computable_types("TruncateMod")),
        ("Mod", _mod, list(dict.fromkeys(computable_types("Mod")))),
        ("Atan2", lambda xp, y, x: xp.arctan2(y, x), computable_types("Atan2"))):
    register_kernel(_name, DEVICES, type_constraints={"T": _types})(
        type(_name + "Op", (ComputedBinaryOp,), {"formula": staticmethod(_formula)}))


# -----------------------------------------------------------------------------
# MatMul

@register_kernel("MatMul", DEVICES, type_constraints={"T": computable_types("MatMul")})
class MatMulOp(OpKernel):
    """The checks run once per (shapes, memory budget) in a row; other types than the half
    ones multiply in their own."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.matmul = self._ta, self._tb = (ctx.get_attr("transpose_a"),
                                            ctx.get_attr("transpose_b"))
        self._dtype = ctx.output_dtypes[0]

    def compute(self, ctx):
        a, b = ctx.inputs
        self.checked_once((a.shape, b.shape),
                          lambda: self._check(ctx, a, b))
        a, b = (a.T if self._ta else a), (b.T if self._tb else b)
        dtype = self._dtype
        if dtype in HALF_TYPES:
            a, b = float32_if_half(a, dtype), float32_if_half(b, dtype)
        ctx.set_output(0, matmul(ctx.xp, a, b).astype(dtype.np_dtype, copy=False))

    def prepare(self, ctx):
        """The product of the (transposed) operands, cast as compute casts it."""
        a, b = ctx.inputs
        self._check(ctx, a, b)
        if ctx.xp is not np or self._dtype in HALF_TYPES:
            return None
        ta, tb, np_dtype = self._ta, self._tb, self._dtype.np_dtype
        return lambda inputs: [matmul(np, inputs[0].T if ta else inputs[0],
                                      inputs[1].T if tb else inputs[1]
                                      ).astype(np_dtype, copy=False)]

    def _check(self, ctx, a, b):
        for i, m in enumerate((a, b)):
            if m.ndim != 2:
                raise InvalidArgumentError(
                    f"In[{i}] is not a matrix. Instead it has shape {shape_str(m.shape)}")
        if a.shape[0 if self._ta else 1] != b.shape[1 if self._tb else 0]:
            raise InvalidArgumentError(
                f"Matrix size-incompatible: In[0]: {shape_str(a.shape)}, In[1]: "
                f"{shape_str(b.shape)}")
        ctx.check_allocation((a.shape[1 if self._ta else 0], b.shape[0 if self._tb else 1]),
                             self._dtype.np_dtype)


# -----------------------------------------------------------------------------
# Cast

_MANTISSA_BITS = {dtypes.float64: 52, dtypes.float32: 23, dtypes.float16: 10, dtypes.bfloat16: 7}
_NOT_CASTABLE = ("string", "handle")


@register_kernel("Cast", DEVICES)
class CastOp(OpKernel):
    """C++ static_cast semantics (NumPy's astype); complex to real keeps the real part.

    With `Truncate`, a float narrowed to a float with fewer mantissa bits is truncated
    (TF zeroes the low mantissa bits that would be lost) instead of rounded.
    """

    def __init__(self, ctx):
        super().__init__(ctx)
        self._src, self._dst = ctx.get_attr("SrcT"), ctx.get_attr("DstT")
        if self._src != self._dst and (self._src.kind in _NOT_CASTABLE
                                       or self._dst.kind in _NOT_CASTABLE):
            raise UnimplementedError(
                f"Cast {self._src.short_name} to {self._dst.short_name} is not supported")
        lost = _MANTISSA_BITS.get(self._src, 0) - _MANTISSA_BITS.get(self._dst, 99)
        self._truncate_bits = lost if ctx.get_attr("Truncate") and lost > 0 else 0

    def compute(self, ctx):
        x, xp = ctx.input(0), ctx.xp
        if self._src == self._dst:
            ctx.set_output(0, x)
            return
        if self._src == dtypes.bool_:    # 0 and 1 fit every type: nothing to warn of
            ctx.set_output(0, astype(xp, x, self._dst.np_dtype, copy=True))
            return
        if self._src.is_complex and not self._dst.is_complex:
            x = x.real
        if self._truncate_bits:
            view = UINT_OF_SIZE[x.dtype.itemsize]
            mask = view(~((1 << self._truncate_bits) - 1) & np.iinfo(view).max)
            x = xp.where(xp.isnan(x), x, (x.view(view) & mask).view(x.dtype))
        with np.errstate(all="ignore"):
            ctx.set_output(0, astype(xp, x, self._dst.np_dtype, copy=True))

    def prepare(self, ctx):
        """The cast itself (steps run with NumPy's warnings off), but a truncating one."""
        if ctx.xp is not np or self._truncate_bits:
            return None
        if self._src == self._dst:
            return lambda inputs: [inputs[0]]
        real = self._src.is_complex and not self._dst.is_complex
        dtype = self._dst.np_dtype
        return lambda inputs: [astype(np, inputs[0].real if real else inputs[0], dtype,
                                      copy=True)]


# -----------------------------------------------------------------------------
# Range

_RANGE_TYPES = [dtypes.bfloat16, dtypes.float16, dtypes.float32, dtypes.float64, dtypes.int32,
                dtypes.int64]       # TF's CPU kernels


@register_kernel("Range", "CPU", type_constraints={"Tidx": _RANGE_TYPES},
                 host_memory=("start", "limit", "delta"))
@register_kernel("Range", "GPU", type_constraints={
    "Tidx": [t for t in _RANGE_TYPES if t != dtypes.int32]},
    host_memory=("start", "limit", "delta"))
@register_kernel("Range", "GPU", type_constraints={"Tidx": [dtypes.int32]},
                 host_memory=("start", "limit", "delta", "output"))
class RangeOp(OpKernel):
    """start + i * delta for i in [0, size), computed in the op's type (as TF does). An int32
    range on a GPU is host memory (TF's choice: such ranges are mostly axes)."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self._xp = np if 0 in ctx.host_outputs else ctx.xp

    def compute(self, ctx):
        scalars = []
        for name, value in zip(("start", "limit", "delta"), ctx.inputs):
            if not (value.ndim == 0 or (value.ndim == 1 and value.size == 1)):
                raise InvalidArgumentError(
                    f"{name} must be a scalar, not shape {shape_str(value.shape)}")
            scalars.append(value.reshape(())[()])
        start, limit, delta = scalars
        size = range_size(start, limit, delta)
        dtype = ctx.output_dtype(0).np_dtype
        ctx.check_allocation([size], np.int64)          # the steps, then the result
        steps = self._xp.arange(size).astype(dtype)
        ctx.set_output(0, (start + steps * delta).astype(dtype, copy=False))


# -----------------------------------------------------------------------------
# the unary-gradient ops (y, dy -> z), Pow, SquaredDifference, DivNoNan, Conj, AddN, L2Loss
#
# float16/bfloat16 are computed in float32 and rounded once; integers wrap.
def _kernel(op):
    types = computable_types(op)
    return register_kernel(op, DEVICES, type_constraints={"T": types} if types else None)


def _zero_where_dy_is(formula):
    """TF's sqrt/rsqrt/inverse gradient functors: exactly 0 wherever dy is 0 (so a masked-off
    sqrt(0) or 1/0 passes no NaN back), the formula elsewhere."""
    def gradient(xp, y, dy):
        z = formula(xp, xp.conj(y) if y.dtype.kind == "c" else y, dy)
        return xp.where(dy == 0, z.dtype.type(0), z)
    return gradient


_RECIPROCAL_GRAD = _zero_where_dy_is(lambda xp, y, dy: -y * y * dy)
_UNARY_GRADIENTS = {
    "SigmoidGrad": lambda xp, y, dy: dy * y * (1 - y),
    "TanhGrad": lambda xp, y, dy: dy * (1 - y * y),
    "SqrtGrad": _zero_where_dy_is(lambda xp, y, dy: 0.5 * dy / y),
    "RsqrtGrad": _zero_where_dy_is(lambda xp, y, dy: -0.5 * (dy * y) * (y * y)),
    "ReciprocalGrad": _RECIPROCAL_GRAD,
    "InvGrad": _RECIPROCAL_GRAD,
}


class UnaryGradientOp(OpKernel):
    """z = f(y, dy) element-wise on two inputs of the same size (not broadcast), shaped
    like y; `fn(xp, y, dy)` comes from the `_UNARY_GRADIENTS` table."""

    fn = None

    def compute(self, ctx):
        y, dy = ctx.inputs
        self._check_sizes(y, dy)
        dtype = ctx.output_dtype(0)
        if dy.shape != y.shape:
            dy = dy.reshape(y.shape)
        if dtype in HALF_TYPES:
            y, dy = float32_if_half(y, dtype), float32_if_half(dy, dtype)
        z = type(self).fn(ctx.xp, y, dy)
        ctx.set_output(0, z.astype(dtype.np_dtype, copy=False))

    def prepare(self, ctx):
        y, dy = ctx.inputs
        self._check_sizes(y, dy)
        dtype = ctx.output_dtype(0)
        if ctx.xp is not np or dtype in HALF_TYPES:
            return None
        fn, shape, np_dtype = type(self).fn, y.shape, dtype.np_dtype
        if y.ndim == 0:                  # (NumPy's scalar made an array, as set_output does)
            return lambda inputs: [np.asarray(fn(np, inputs[0], inputs[1].reshape(shape)
                                                 ).astype(np_dtype, copy=False))]
        if dy.shape != shape:
            return lambda inputs: [fn(np, inputs[0], inputs[1].reshape(shape)
                                      ).astype(np_dtype, copy=False)]
        return lambda inputs: [fn(np, *inputs).astype(np_dtype, copy=False)]

    @staticmethod
    def _check_sizes(y, dy):
        if y.size != dy.size:
            raise InvalidArgumentError("The two arguments to a cwise op must have same number "
                                       f"of elements, got {y.size} and {dy.size}")


for _name, _fn in _UNARY_GRADIENTS.items():
    _kernel(_name)(type(_name + "Op", (UnaryGradientOp,),
                        {"fn": staticmethod(_fn), "elementwise": _FUSED_BINARY.get(_name)}))


# -----------------------------------------------------------------------------
# binary

def _pow(xp, x, y):
    """x ** y; an integer to a negative integer power is an error (for the whole op)."""
    if x.dtype.kind in "iu" and y.size and bool(xp.any(y < 0)):
        raise InvalidArgumentError("Integers to negative integer powers are not allowed")
    return xp.power(x, y)


def _squared_difference(xp, x, y):
    difference = x - y
    return difference * xp.conj(difference) if difference.dtype.kind == "c" \
        else difference * difference


def _div_no_nan(xp, x, y):
    zero = y == 0
    return xp.where(zero, 0, x / xp.where(zero, 1, y))


for _name, _formula in (("Pow", _pow), ("SquaredDifference", _squared_difference),
                        ("DivNoNan", _div_no_nan)):
    _kernel(_name)(type(_name + "Op", (ComputedBinaryOp,), {"formula": staticmethod(_formula)}))


# -----------------------------------------------------------------------------
# the rest

@_kernel("Conj")
class ConjOp(OpKernel):
    def compute(self, ctx):
        ctx.set_output(0, ctx.xp.conj(ctx.input(0)))


@_kernel("AddN")
class AddNOp(OpKernel):
    """The sum of N same-shaped tensors, added left to right."""

    def compute(self, ctx):
        first, dtype = ctx.input(0), ctx.output_dtype(0)
        if dtype == dtypes.variant:     # TensorLists: element-wise sums, as TF's
            ctx.set_output(0, add_variants(list(ctx.inputs)))
            return
        for i, x in enumerate(ctx.inputs[1:], 1):
            if x.shape != first.shape:
                raise InvalidArgumentError(
                    "Inputs to operation AddN of type AddN must have the same size and shape.  "
                    f"Input 0: {shape_str(first.shape)} != input {i}: {shape_str(x.shape)}")
        total = float32_if_half(first, dtype)
        for x in ctx.inputs[1:]:
            total = total + float32_if_half(x, dtype)
        ctx.set_output(0, total.astype(dtype.np_dtype))


@_kernel("L2Loss")
class L2LossOp(OpKernel):
    """sum(t * t) / 2 over every element."""

    def compute(self, ctx):
        dtype = ctx.output_dtype(0)
        t = float32_if_half(ctx.input(0), dtype)
        ctx.set_output(0, (ctx.xp.sum(t * t) / 2).astype(dtype.np_dtype))


# -----------------------------------------------------------------------------
# TF1's extras: FloorDiv, Rint, the logical ops, IsNan/IsInf/IsFinite, ClipByValue
def _floor_div(xp, x, y):
    """Floor of x / y; an integer y of 0 is an error (as TF's), a float one gives +-inf."""
    if x.dtype.kind in "iu":
        if x.size and y.size and bool(xp.any(y == 0)):
            raise InvalidArgumentError("Integer division by zero")
        return xp.floor_divide(x, y)
    return xp.floor(x / y)


register_kernel("FloorDiv", DEVICES, type_constraints={
    "T": [t for t in computable_types("FloorDiv") if not t.is_complex]})(
    type("FloorDivOp", (ComputedBinaryOp,), {"formula": staticmethod(_floor_div)}))

for _name, _ufunc in (("LogicalAnd", "logical_and"), ("LogicalOr", "logical_or")):
    register_kernel(_name, DEVICES)(type(_name + "Op", (BinaryOp,), {"ufunc": _ufunc}))

for _name, _fn in (("LogicalNot", lambda xp, x: xp.logical_not(x)),
                   ("Rint", lambda xp, x: xp.rint(x)),
                   ("IsNan", lambda xp, x: xp.isnan(x)),
                   ("IsInf", lambda xp, x: xp.isinf(x)),
                   ("IsFinite", lambda xp, x: xp.isfinite(x))):
    types = None if _name == "LogicalNot" else {"T": computable_types(_name)}
    register_kernel(_name, DEVICES, type_constraints=types)(
        type(_name + "Op", (UnaryOp,), {"fn": staticmethod(_fn), "scalar_op": _SCALARS.get(_name)}))


@register_kernel("ClipByValue", DEVICES, type_constraints={"T": computable_types("ClipByValue")})
class ClipByValueOp(OpKernel):
    """max(min(t, clip_value_max), clip_value_min), as TF's (the lower bound wins when the
    bounds cross), of complex numbers part by part; each bound a scalar or of t's shape."""

    def compute(self, ctx):
        t, low, high = ctx.inputs
        if any(b.shape != t.shape and b.ndim != 0 for b in (low, high)):
            raise InvalidArgumentError(
                "clip_value_min and clip_value_max must be either of the same shape as input, "
                f"or a scalar. input shape: {shape_str(t.shape)}clip_value_min shape: "
                f"{shape_str(low.shape)}clip_value_max shape: {shape_str(high.shape)}")
        dtype = ctx.output_dtype(0)
        xp = ctx.xp
        if t.dtype.kind == "c":      # TF clips the real and imaginary parts apart
            real = xp.maximum(xp.minimum(t.real, high.real), low.real)
            imag = xp.maximum(xp.minimum(t.imag, high.imag), low.imag)
            clipped = real + 1j * imag
        else:
            t, low, high = (float32_if_half(v, dtype) for v in (t, low, high))
            clipped = xp.maximum(xp.minimum(t, high), low)
        ctx.set_output(0, xp.asarray(clipped).astype(dtype.np_dtype, copy=False))
