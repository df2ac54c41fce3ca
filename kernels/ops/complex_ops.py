"""Kernels of the complex-number ops (CPU and GPU, written once against `ctx.xp`): Complex
(broadcasting, TF's "Incompatible shapes" check; the parts are stored, never multiplied by
1j, so infinities stay where they were put), Real, Imag, Angle and ComplexAbs (hypot: no
overflow for large parts). As in TF, only float/complex64 and double/complex128 pairs
have kernels: a node mixing precisions finds none."""

from graphops.kernels.support.kernel_util import DEVICES, broadcast_shape
from graphops.registry import dtypes
from graphops.registry.errors import InvalidArgumentError
from graphops.registry.kernel_registry import OpKernel, register_kernel
from graphops.registry.tensor_shape import shape_str

_PAIRS = ((dtypes.float32, dtypes.complex64), (dtypes.float64, dtypes.complex128))


class ComplexOp(OpKernel):
    """real + imag * 1j, the two parts broadcast against each other."""

    def compute(self, ctx):
        real, imag = ctx.inputs
        shape = broadcast_shape(real.shape, imag.shape)
        if shape is None:
            raise InvalidArgumentError(
                f"Incompatible shapes: {shape_str(real.shape)} vs. {shape_str(imag.shape)}")
        out_dtype = ctx.output_dtype(0).np_dtype
        ctx.check_allocation(shape, out_dtype)
        out = ctx.xp.empty(shape, out_dtype)
        out.real[...] = real
        out.imag[...] = imag
        ctx.set_output(0, out)


_PARTS = {
    "Real": lambda xp, z: xp.ascontiguousarray(z.real),
    "Imag": lambda xp, z: xp.ascontiguousarray(z.imag),
    "Angle": lambda xp, z: xp.angle(z),
    "ComplexAbs": lambda xp, z: xp.abs(z),
}


class ComplexPartOp(OpKernel):
    """A real function of a complex tensor, element-wise (`part(xp, z)` from `_PARTS`)."""

    part = None

    def compute(self, ctx):
        y = type(self).part(ctx.xp, ctx.input(0))
        ctx.set_output(0, y.astype(ctx.output_dtype(0).np_dtype, copy=False))


_PART_KERNELS = {name: type(name + "Op", (ComplexPartOp,), {"part": staticmethod(part)})
                 for name, part in _PARTS.items()}

for _real, _complex in _PAIRS:
    register_kernel("Complex", DEVICES, type_constraints={"T": [_real], "Tout": [_complex]})(
        ComplexOp)
    for _name, _kernel in _PART_KERNELS.items():
        register_kernel(_name, DEVICES, type_constraints={"T": [_complex], "Tout": [_real]})(
            _kernel)
