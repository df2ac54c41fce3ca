"""CPU and GPU kernels of the element-wise ops in `registry/op_defs/elementwise.py`:
FloorDiv, the logical ops, Rint, IsNan/IsInf/IsFinite and ClipByValue; and ConjugateTranspose
(the transpose of the element-wise conjugate)."""

from graphops.kernels.ops.array import TransposeOp
from graphops.kernels.support.kernel_util import DEVICES, computable_types
from graphops.kernels.ops.math import BinaryOp, ComputedBinaryOp, UnaryOp, float32_if_half
from graphops.registry.errors import InvalidArgumentError
from graphops.registry.kernel_registry import OpKernel, register_kernel
from graphops.registry.tensor_shape import shape_str


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
        type(_name + "Op", (UnaryOp,), {"fn": staticmethod(_fn)}))


@register_kernel("ClipByValue", DEVICES, type_constraints={"T": computable_types("ClipByValue")})
class ClipByValueOp(OpKernel):
    """min(max(t, clip_value_min), clip_value_max); each bound a scalar or of t's shape."""

    def compute(self, ctx):
        t, low, high = ctx.inputs
        if any(b.shape != t.shape and b.ndim != 0 for b in (low, high)):
            raise InvalidArgumentError(
                "clip_value_min and clip_value_max must be either of the same shape as input, "
                f"or a scalar. input shape: {shape_str(t.shape)}clip_value_min shape: "
                f"{shape_str(low.shape)}clip_value_max shape: {shape_str(high.shape)}")
        dtype = ctx.output_dtype(0)
        xp = ctx.xp
        if t.dtype.kind == "c":      # TF orders complex numbers by their real parts
            clipped = xp.where(t.real < low.real, low, t)
            clipped = xp.where(clipped.real > high.real, high, clipped)
        else:
            t, low, high = (float32_if_half(v, dtype) for v in (t, low, high))
            clipped = xp.minimum(xp.maximum(t, low), high)
        ctx.set_output(0, xp.asarray(clipped).astype(dtype.np_dtype, copy=False))


@register_kernel("ConjugateTranspose", DEVICES, host_memory=("perm",))
class ConjugateTransposeOp(TransposeOp):
    def compute(self, ctx):
        super().compute(ctx)
        y = ctx.outputs[0]
        if y.dtype.kind == "c":
            ctx.set_output(0, ctx.xp.conj(y))
