"""CPU and GPU kernel of Pad, written once against `ctx.xp`, with TF's checks. The paddings
are host memory, as in TF's GPU registration."""

from kernels.kernel_util import DEVICES
from registry import dtypes
from registry.errors import InvalidArgumentError, UnimplementedError
from registry.kernel_registry import OpKernel, register_kernel
from registry.tensor_shape import shape_str


@register_kernel("Pad", DEVICES, host_memory=("paddings",))
class PadOp(OpKernel):
    """Zeros (empty strings) around the input; the input itself when nothing is added."""

    def compute(self, ctx):
        x, paddings = ctx.input(0), ctx.input(1)
        if x.ndim > 8:
            raise UnimplementedError(f"inputs rank not in [0,8]: {x.ndim}")
        if paddings.ndim != 2 or paddings.shape[1] != 2:
            raise InvalidArgumentError(
                f"paddings must be a matrix with 2 columns: {shape_str(paddings.shape)}")
        if paddings.shape[0] != x.ndim:
            raise InvalidArgumentError(
                "The first dimension of paddings must be the rank of inputs"
                f"{shape_str(paddings.shape)} {shape_str(x.shape)}")
        pads = [(int(before), int(after)) for before, after in paddings.tolist()]
        for before, after in pads:
            if before < 0 or after < 0:
                raise InvalidArgumentError(f"Paddings must be non-negative: {before} {after}")
        if not any(before or after for before, after in pads):
            ctx.set_output(0, x)
            return
        ctx.check_allocation([d + b + a for d, (b, a) in zip(x.shape, pads)], x.dtype)
        fill = b"" if ctx.output_dtype(0) == dtypes.string else 0
        ctx.set_output(0, ctx.xp.pad(x, pads, mode="constant", constant_values=fill))
