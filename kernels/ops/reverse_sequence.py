"""ReverseSequence's kernel (CPU and GPU): TF's checks of the axes and lengths, then one
gather along the sequence axis with each batch entry's reversed prefix."""

from graphops.kernels.support.kernel_util import DEVICES, host_copy
from graphops.registry.errors import InvalidArgumentError
from graphops.registry.kernel_registry import OpKernel, register_kernel


@register_kernel("ReverseSequence", DEVICES)
class ReverseSequenceOp(OpKernel):
    def __init__(self, ctx):
        super().__init__(ctx)
        self._batch_dim, self._seq_dim = ctx.get_attr("batch_dim"), ctx.get_attr("seq_dim")
        for name, value in (("batch_dim", self._batch_dim), ("seq_dim", self._seq_dim)):
            if value < 0:
                raise InvalidArgumentError(f"Invalid {name} {value}")

    def _check(self, x, lengths):
        batch_dim, seq_dim = self._batch_dim, self._seq_dim
        if lengths.ndim != 1:
            raise InvalidArgumentError(f"seq_lengths must be 1-dim, not {lengths.ndim}")
        if batch_dim == seq_dim:
            raise InvalidArgumentError(f"batch_dim == seq_dim == {seq_dim}")
        for name, value in (("seq_dim", seq_dim), ("batch_dim", batch_dim)):
            if value >= x.ndim:
                raise InvalidArgumentError(f"{name} must be < input rank ( {value} vs. "
                                           f"{x.ndim})")
        if lengths.size != x.shape[batch_dim]:
            raise InvalidArgumentError(f"Length of seq_lengths != input.dims({batch_dim}), "
                                       f"({lengths.size} vs. {x.shape[batch_dim]})")
        for d, length in enumerate(host_copy(lengths).tolist()):
            if length < 0:
                raise InvalidArgumentError(f"seq_lens({d}) < 0")
            if length > x.shape[seq_dim]:
                raise InvalidArgumentError(f"seq_lens({d}) > input.dims({seq_dim})")

    def compute(self, ctx):
        x, lengths = ctx.inputs
        self._check(x, lengths)
        xp = ctx.xp
        moved = xp.moveaxis(x, (self._batch_dim, self._seq_dim), (0, 1))
        steps = xp.arange(moved.shape[1])[None, :]
        lengths = xp.asarray(lengths).astype(steps.dtype)[:, None]
        source = xp.where(steps < lengths, lengths - 1 - steps, steps)
        source = source.reshape(source.shape + (1,) * (moved.ndim - 2))
        gathered = xp.take_along_axis(moved, xp.broadcast_to(source, moved.shape), axis=1)
        ctx.set_output(0, xp.moveaxis(gathered, (0, 1), (self._batch_dim, self._seq_dim)))
