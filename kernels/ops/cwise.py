"""Element-wise kernels beyond the basic arithmetic of math_kernels: the unary-gradient ops
(SigmoidGrad, TanhGrad, ...), Pow, SquaredDifference, DivNoNan, Conj, AddN and L2Loss, for
the CPU and the GPU, written once against `ctx.xp`. float16/bfloat16 are computed in float32
and rounded once; integers wrap."""

from graphops.kernels.support.kernel_util import DEVICES, computable_types
from graphops.kernels.ops.math import ComputedBinaryOp, float32_if_half
from graphops.registry.errors import InvalidArgumentError
from graphops.registry.kernel_registry import OpKernel, register_kernel
from graphops.registry.tensor_shape import shape_str


def _kernel(op):
    types = computable_types(op)
    return register_kernel(op, DEVICES, type_constraints={"T": types} if types else None)


# ----------------------------------------------------------------------------- y, dy -> z

_UNARY_GRADIENTS = {
    "SigmoidGrad": lambda xp, y, dy: dy * (y * (1 - y)),
    "TanhGrad": lambda xp, y, dy: dy * (1 - y * y),
    "SqrtGrad": lambda xp, y, dy: dy * 0.5 / xp.conj(y),
    "RsqrtGrad": lambda xp, y, dy: dy * -0.5 * (xp.conj(y) * xp.conj(y) * xp.conj(y)),
    "ReciprocalGrad": lambda xp, y, dy: -dy * (xp.conj(y) * xp.conj(y)),
    "InvGrad": lambda xp, y, dy: -dy * (xp.conj(y) * xp.conj(y)),
}


class UnaryGradientOp(OpKernel):
    """z = f(y, dy) element-wise on two inputs of the same size (not broadcast), shaped
    like y; `fn(xp, y, dy)` comes from the `_UNARY_GRADIENTS` table."""

    fn = None

    def compute(self, ctx):
        y, dy = ctx.inputs
        if y.size != dy.size:
            raise InvalidArgumentError("The two arguments to a cwise op must have same number "
                                       f"of elements, got {y.size} and {dy.size}")
        dtype = ctx.output_dtype(0)
        z = type(self).fn(ctx.xp, float32_if_half(y, dtype),
                          float32_if_half(dy, dtype).reshape(y.shape))
        ctx.set_output(0, z.astype(dtype.np_dtype, copy=False))


for _name, _fn in _UNARY_GRADIENTS.items():
    _kernel(_name)(type(_name + "Op", (UnaryGradientOp,), {"fn": staticmethod(_fn)}))


# ----------------------------------------------------------------------------- binary

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


# ----------------------------------------------------------------------------- the rest

@_kernel("Conj")
class ConjOp(OpKernel):
    def compute(self, ctx):
        ctx.set_output(0, ctx.xp.conj(ctx.input(0)))


@_kernel("AddN")
class AddNOp(OpKernel):
    """The sum of N same-shaped tensors, added left to right."""

    def compute(self, ctx):
        first, dtype = ctx.input(0), ctx.output_dtype(0)
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
