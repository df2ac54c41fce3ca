"""The kernels of If / StatelessIf and While / StatelessWhile (TF 2's functional control flow).

Each branch, loop condition and loop body is a library function, instantiated and planned
once per (function, device, Session) as the function-call kernel does (function_call.py),
sharing the Session's resources, so variables read or assigned in a body are the Session's.
If runs only the branch its predicate selects (its side effects included); While runs the
condition, then the body, until the condition is false. A predicate must be a scalar.
"""

import numpy as np

from graphops.framework_kernels.function_call import (check_types, device_outputs, planned_function,
                                                set_outputs)
from graphops.runtime.devices import to_host
from graphops.kernels.support.kernel_util import DEVICES
from graphops.registry.errors import InvalidArgumentError
from graphops.registry.kernel_registry import OpKernel, register_kernel


def to_bool(value, what):
    """A scalar predicate as a Python bool (TF's ToBool: non-zero numbers, non-empty strings)."""
    if type(value) is np.ndarray and value.dtype == np.bool_ and value.shape == ():
        return bool(value)
    value = np.asarray(to_host(value))
    if value.ndim != 0:
        raise InvalidArgumentError(f"The {what} must be a scalar, but it has shape "
                                   f"[{','.join(map(str, value.shape))}]")
    item = value.item()
    return len(item) > 0 if isinstance(item, (bytes, str)) else bool(item)


def _plan(ctx, attr, input_types, output_types):
    name = ctx.get_attr(attr)
    planned = planned_function(name, ctx)
    check_types("Tin" if attr.endswith("branch") else "T", input_types, planned.input_types,
                name)
    if output_types is not None:
        check_types("Tout" if attr.endswith("branch") else "T", output_types,
                    planned.output_types, name)
    return planned


class IfOp(OpKernel):
    """Runs then_branch or else_branch on the inputs, as `cond` says."""

    def __init__(self, ctx):
        super().__init__(ctx)
        tin, tout = ctx.get_attr("Tin"), ctx.get_attr("Tout")
        self._branches = [_plan(ctx, attr, tin, tout).plan
                          for attr in ("then_branch", "else_branch")]
        self._to_device = device_outputs(ctx, len(tout))

    def compute(self, ctx):
        # (the wording of TF's Switch, which an If becomes in a TF1 Session)
        taken = to_bool(ctx.input(0), "second input")
        set_outputs(ctx, self._branches[0 if taken else 1].run_in_kernel(list(ctx.inputs[1:])),
                    self._to_device)


class WhileOp(OpKernel):
    """`while cond(values): values = body(values)`, starting from the inputs."""

    def __init__(self, ctx):
        super().__init__(ctx)
        types = ctx.get_attr("T")
        cond = _plan(ctx, "cond", types, None)
        if len(cond.output_types) != 1:
            raise InvalidArgumentError(f"Function {ctx.get_attr('cond')} must return one "
                                       f"value, got {len(cond.output_types)}")
        self._cond = cond.plan
        self._body = _plan(ctx, "body", types, types).plan
        self._to_device = device_outputs(ctx, len(types))

    def compute(self, ctx):
        values = list(ctx.inputs)
        while to_bool(self._cond.run_in_kernel(values)[0], "loop condition"):
            values = self._body.run_in_kernel(values)
        set_outputs(ctx, values, self._to_device)


for _op in ("If", "StatelessIf"):
    register_kernel(_op, device=DEVICES, host_memory=("cond",))(IfOp)
for _op in ("While", "StatelessWhile"):
    register_kernel(_op, device=DEVICES)(WhileOp)
