"""Kernels of TF1's control-flow ops. Each declares its role (`OpKernel.control_flow`);
the frame executor (graphops/runtime/frame_executor.py) gives a role its meaning: which
output of a Switch is live, which input a Merge forwards, the frame an Enter, Exit or
NextIteration moves its value to. `compute` is what the op does on live inputs outside
the executor's bookkeeping (the value it forwards), as in TF's kernels."""

import numpy as np

from graphops.kernels.support.kernel_util import DEVICES
from graphops.registry.errors import InvalidArgumentError
from graphops.registry.kernel_registry import OpKernel, register_kernel


class _Forward(OpKernel):
    """Output 0 is input 0 (a value, or a variable reference for the Ref forms)."""

    def compute(self, ctx):
        ctx.outputs[0] = ctx.input(0)


@register_kernel("Switch", DEVICES, host_memory=("pred",))
@register_kernel("RefSwitch", DEVICES, host_memory=("pred",))
class SwitchOp(OpKernel):
    """Forwards `data` to output 1 when `pred` is true, else to output 0 (`taken`); the
    executor marks the other output dead."""

    control_flow = "switch"

    @staticmethod
    def taken(pred):
        """The output index `pred` selects; a non-scalar pred is refused as TF does."""
        if getattr(pred, "ndim", 1) != 0:
            raise InvalidArgumentError(
                f"The second input must be a scalar, but it has shape "
                f"{list(np.shape(pred))}")
        return int(bool(pred))

    def compute(self, ctx):
        raise InvalidArgumentError(f"{self.op_type} runs only in a graph, where its untaken "
                                   "output is dead.")


@register_kernel("Merge", DEVICES, host_memory=("value_index",))
@register_kernel("RefMerge", DEVICES, host_memory=("value_index",))
class MergeOp(OpKernel):
    """Forwards the first input that becomes available and its index; the executor calls
    it with the live input alone."""

    control_flow = "merge"

    def compute(self, ctx):
        ctx.outputs[0] = ctx.input(0)
        ctx.set_output(1, np.int32(0))


@register_kernel("Enter", DEVICES)
@register_kernel("RefEnter", DEVICES)
class EnterOp(_Forward):
    control_flow = "enter"


@register_kernel("Exit", DEVICES)
@register_kernel("RefExit", DEVICES)
class ExitOp(_Forward):
    control_flow = "exit"


@register_kernel("NextIteration", DEVICES)
@register_kernel("RefNextIteration", DEVICES)
class NextIterationOp(_Forward):
    control_flow = "next_iteration"


@register_kernel("LoopCond", DEVICES, host_memory=("input", "output"))
class LoopCondOp(OpKernel):
    """Forwards the loop condition (a bool scalar)."""

    moves_data = True

    def compute(self, ctx):
        pred = ctx.input(0)
        if getattr(pred, "ndim", 1) != 0:
            raise InvalidArgumentError(f"LoopCond's input must be a scalar, but it has shape "
                                       f"{list(np.shape(pred))}")
        ctx.set_output(0, pred)


@register_kernel("ControlTrigger", DEVICES)
class ControlTriggerOp(OpKernel):
    control_flow = "control_trigger"

    def compute(self, ctx):
        pass
