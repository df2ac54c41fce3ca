"""The kernels of the functional ops: PartitionedCall and StatefulPartitionedCall run a
library function; If, StatelessIf, While and StatelessWhile run their branch and body
functions the same way.

When a call node's kernel is built, the function named by `f` is looked up in the graph's
library (`ctx.function_library`), instantiated as a sub-graph (functions.py) and planned
with the executor, sharing the Session's resources; each run feeds the inputs and returns
the fetched outputs. As in TF's function library runtime, an instantiation is made once per
(function, device, Session) and shared by every node calling it, so a library whose
functions call each other many times over costs one plan per function, not one per path.
A function that calls itself, directly or not, is refused.

A While's body is planned in two parts (`LoopBody`): what it computes the same in every
iteration (stateless ops of constants and of the loop vars it passes on unchanged, such as
a layer's split bias, and, where neither the condition nor the body may write state, the
variable reads of handles it passes on) runs once per loop, in its first iteration; the
rest each iteration.
"""

import threading
import weakref

import numpy as np

from graphops.kernels.support.kernel_util import DEVICES
from graphops.registry import dtypes
from graphops.registry.errors import InvalidArgumentError, NotFoundError
from graphops.registry.kernel_registry import OpKernel, register_kernel
from graphops.runtime.constant_folding import hoistable, reads_variable, writes_no_state
from graphops.runtime.devices import to_host
from graphops.runtime.executor import MAX_SHAPE_SIGNATURES, build_plan
from graphops.runtime.function_loops import FunctionLoop, numpy_values


_instantiating = threading.local()     # names of the functions being planned, per thread
_instances = weakref.WeakKeyDictionary()   # ResourceMgr -> {(function, device): Planned}


class Planned:
    """A function instantiated and planned: its arg types and the plan that runs it."""

    def __init__(self, function, ctx):
        from graphops.interchange import functions   # loads GraphDef import on first use

        instance = functions.instantiate(function, ctx.function_library)
        self.input_types = instance.body.input_types
        self.output_types = instance.body.output_types
        self.plan = build_plan(instance.inputs, instance.outputs, instance.control_outputs,
                               resources=ctx.resources,
                               fetch_to_host=ctx.device_type == "CPU")


class LoopBody:
    """A loop body planned in two parts: `invariant` computes the values that are the same
    in every iteration (what stateless ops make of constants and of the loop vars the body
    passes on unchanged, and the variables' values read through such handles where the
    loop writes no state), once per loop; `plan` runs the rest, those values fed after the
    loop vars. (`invariant` None: nothing to hoist, `plan` is the whole body.)"""

    reads_hoisted = True      # a condition that may write state plans a `LoopBodyReading`

    def __init__(self, function, ctx):
        from graphops.interchange import functions   # loads GraphDef import on first use

        instance = functions.instantiate(function, ctx.function_library)
        self.input_types = instance.body.input_types
        self.output_types = instance.body.output_types
        hoisted = _invariant_values(instance, self.reads_hoisted)
        self.invariant = build_plan(instance.inputs, hoisted, [], resources=ctx.resources,
                                    fetch_to_host=False) if hoisted else None
        once = {t.op._id for t in hoisted}       # (a hoisted read runs in `invariant`)
        self.plan = build_plan(instance.inputs + hoisted, instance.outputs,
                               [op for op in instance.control_outputs if op._id not in once],
                               resources=ctx.resources, fetch_to_host=ctx.device_type == "CPU")


class LoopBodyReading(LoopBody):
    """A LoopBody whose variable reads stay in every iteration."""

    reads_hoisted = False


def _invariant_values(instance, reads_hoisted):
    """The tensors of a loop body's ops whose values are the same in every iteration and
    which the rest of a run of the body reads (or returns): made by ops `hoistable` from
    constants and from the args the body returns unchanged (through Identity ops), and
    by variable reads of such args where `reads_hoisted` and the body writes no state."""
    args = {t.op._id: i for i, t in enumerate(instance.inputs)}
    invariant = set()
    for arg, out in zip(instance.inputs, instance.outputs):
        while out.op.type == "Identity" and out.op._id not in args:
            out = out.op.inputs[0]
        if (out.op._id, out.value_index) == (arg.op._id, arg.value_index):
            invariant.add(arg.op._id)
    operations = instance.graph.get_operations()     # (made in dependency order)
    reads = reads_hoisted and writes_no_state(operations)
    for op in operations:
        if op._id not in args and (hoistable(op) or _passes_handle(op)
                                   or reads and reads_variable(op)) \
                and all(t.op._id in invariant for t in op.inputs) \
                and all(c._id in invariant for c in op.control_inputs):
            invariant.add(op._id)
    read = [t for op in _needed(instance) if op._id not in invariant for t in op.inputs]
    return list(dict.fromkeys(
        t for t in read + list(instance.outputs) if t.op._id in invariant
        and t.op._id not in args and t.op.inputs and not _forwards_arg(t.op, args)))


def _passes_handle(op):
    """An Identity of a resource handle: the same handle in every iteration."""
    return op.type == "Identity" and op.inputs[0].dtype.base_dtype is dtypes.resource


def _forwards_arg(op, args):
    """An Identity of an arg: nothing to gain (a plan forwards it without a kernel)."""
    return op.type == "Identity" and op.inputs[0].op._id in args


def _needed(instance):
    """The ops a body's run runs: those its outputs and control outputs depend on."""
    seen, stack = {}, [t.op for t in instance.outputs] + list(instance.control_outputs)
    while stack:
        op = stack.pop()
        if op._id not in seen:
            seen[op._id] = op
            stack.extend(t.op for t in op.inputs)
            stack.extend(op.control_inputs)
    return seen.values()


def _planned(function, ctx, kind=Planned):
    """The shared instantiation (a `kind`: Planned, LoopBody) of `function` for this
    node's device and Session."""
    if ctx.resources is None:
        return kind(function, ctx)
    cache = _instances.setdefault(ctx.resources, {})
    key = (kind, id(function), ctx.device_type, ctx.device_name)
    if key not in cache:
        cache[key] = kind(function, ctx)
    return cache[key]


def library_function(library, name):
    """The FunctionDef `name` of `library` (a graph's {name: FunctionDef});
    NotFoundError when there is none."""
    function = library.get(name)
    if function is None:
        raise NotFoundError(f"Function {name} is not defined in the graph's function "
                            "library.")
    return function


def planned_function(name, ctx, kind=Planned):
    """The shared instantiation (a `kind`: Planned, LoopBody) of library function `name`
    for the kernel being built (`ctx`: its OpKernelConstruction); NotFoundError for an
    unknown name, InvalidArgumentError for a function that calls itself."""
    function = library_function(ctx.function_library, name)
    active = getattr(_instantiating, "names", ())
    if name in active:
        raise InvalidArgumentError(f"Function {name} calls itself (through "
                                   f"{' -> '.join(active + (name,))}); recursive "
                                   "functions are not supported.")
    _instantiating.names = active + (name,)
    try:
        return _planned(function, ctx, kind)
    finally:
        _instantiating.names = active


def device_outputs(ctx, count):
    """Indices of the outputs a node keeps in device memory (a plan may compute them on
    the host)."""
    if ctx.device_type == "CPU":
        return frozenset()
    return frozenset(i for i in range(count) if i not in ctx.host_outputs)


def set_outputs(ctx, values, to_device):
    """Sets a plan's results as the node's outputs, those in `to_device` moved there."""
    for i, value in enumerate(values):
        ctx.set_output(i, ctx.xp.asarray(value) if i in to_device else value)


class FunctionCallOp(OpKernel):
    """Runs function `f` on the node's inputs through its shared planned sub-graph."""

    def __init__(self, ctx):
        super().__init__(ctx)
        name = ctx.get_attr("f")
        planned = planned_function(name, ctx)
        check_types("Tin", ctx.get_attr("Tin"), planned.input_types, name)
        check_types("Tout", ctx.get_attr("Tout"), planned.output_types, name)
        self._plan = planned.plan
        self._to_device = device_outputs(ctx, len(planned.output_types))

    def compute(self, ctx):
        set_outputs(ctx, self._plan.run_in_kernel(list(ctx.inputs)), self._to_device)


def check_types(attr, given, expected, name):
    if list(given) != list(expected):
        raise InvalidArgumentError(
            f"{attr} [{', '.join(t.short_name for t in given)}] does not match function "
            f"{name}'s arg types [{', '.join(t.short_name for t in expected)}]")


for _op in ("PartitionedCall", "StatefulPartitionedCall"):
    register_kernel(_op, device=DEVICES)(FunctionCallOp)


# -----------------------------------------------------------------------------
# If, StatelessIf, While, StatelessWhile
#
# The kernels of If / StatelessIf and While / StatelessWhile (TF 2's functional control flow).
#
# Each branch, loop condition and loop body is a library function, instantiated and planned
# once per (function, device, Session) as the function-call kernel above does,
# sharing the Session's resources, so variables read or assigned in a body are the Session's.
# If runs only the branch its predicate selects (its side effects included); While runs the
# condition, then the body, until the condition is false. A predicate must be a scalar.
_BOOL = np.dtype(np.bool_)


def to_bool(value, what):
    """A scalar predicate as a Python bool (TF's ToBool: non-zero numbers, non-empty strings)."""
    if type(value) is np.ndarray and value.dtype is _BOOL and not value.shape:
        return bool(value)
    value = np.asarray(to_host(value))
    if value.ndim != 0:
        raise InvalidArgumentError(f"The {what} must be a scalar, but it has shape "
                                   f"[{','.join(map(str, value.shape))}]")
    item = value.item()
    return len(item) > 0 if isinstance(item, (bytes, str)) else bool(item)


def _plan(ctx, attr, input_types, output_types, kind=Planned):
    name = ctx.get_attr(attr)
    planned = planned_function(name, ctx, kind)
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
        self._body = _plan(ctx, "body", types, types,
                           LoopBody if writes_no_state(cond.plan.ops) else LoopBodyReading)
        self._to_device = device_outputs(ctx, len(types))
        self._loops = {}          # (condition plan, body plan) -> their FunctionLoop

    def compute(self, ctx):
        values, body, invariant = list(ctx.inputs), self._body.plan, self._body.invariant
        hoisted = None
        while to_bool(self._cond.run_in_kernel(values)[0], "loop condition"):
            if hoisted is None:       # (in the first iteration: as the body would)
                hoisted = [] if invariant is None else invariant.run_in_kernel(values)
                compiled = self._compiled(ctx, values, hoisted)
                if compiled is not None:
                    values = compiled
                    break
            values = body.run_in_kernel(values + hoisted)
        set_outputs(ctx, values, self._to_device)

    def _compiled(self, ctx, values, hoisted):
        """The loop variables' final values from one compiled program (function_loops)
        run from the first body on, or None."""
        if ctx.device_type != "CPU" or not numpy_values(values + hoisted):
            return None
        condition = self._cond.for_shapes(values)
        body = self._body.plan.for_shapes(values + hoisted)
        loop = self._loops.get((condition, body))
        if loop is None:
            if len(self._loops) >= MAX_SHAPE_SIGNATURES:
                self._loops = {}
            loop = self._loops[(condition, body)] = FunctionLoop(condition, body, len(values))
        return loop.run(values, hoisted, lambda pred: to_bool(pred, "loop condition"),
                        ctx.cancelled)


for _op in ("If", "StatelessIf"):
    register_kernel(_op, device=DEVICES, host_memory=("cond",))(IfOp)
for _op in ("While", "StatelessWhile"):
    register_kernel(_op, device=DEVICES)(WhileOp)
