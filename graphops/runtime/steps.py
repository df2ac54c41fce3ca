"""The steps a Plan runs, each over the plan's buffer of numbered slots: a node's kernel
(`KernelStep`; `HostKernelStep` calls a host kernel with no device to activate), a fused
chain (`ChainStep`), an elementwise cluster (`ClusterStep`), a fused block of small
tensors (`BlockStep`), a copy between host and device memory (`CopyStep`), a read off a
TF1 variable reference (`DerefStep`) and the check that a tensor has the shape its plan
was specialised to (`ShapeGuardStep`). A step frees the slots it read last (``frees``).
"""

import numpy as np

from graphops.runtime import devices
from graphops.runtime.kernel_call import (compute, dereference, error_cause, node_error,
                                          unexpected_error_class, unset_output)
from graphops.registry.errors import InternalError, OpError
from graphops.registry.kernel_registry import OpKernelContext, prepares
from graphops.registry.memory import get_memory_budget
from graphops.registry.tensor_shape import shape_str


def raise_node_error(exc, op, device, inputs):
    """Raises `exc` as the error of graph node `op` (see `kernel_call.node_error`)."""
    raise node_error(exc, op.name, op.type, device.name, inputs, getattr(op, "traceback", ()),
                     op=op, node_def=getattr(op, "node_def", None)) from error_cause(exc)


def _checked(outputs, construction):
    """A prepared call's outputs, refused (InternalError) unless they are NumPy arrays of
    the node's output types, as many: what `set_output` would otherwise have made sure
    of."""
    expected = construction.np_output_dtypes
    if len(outputs) != len(expected) or any(
            type(value) is not np.ndarray or value.dtype != dtype
            for value, dtype in zip(outputs, expected)):
        got = [(type(value).__name__, str(getattr(value, "dtype", None))) for value in outputs]
        raise InternalError(f"The prepared call of the {construction.op_type} kernel gave "
                            f"{got}, not arrays of {[str(d) for d in expected]}")
    return outputs


def _signature(inputs, values):
    """What a prepared call depends on: the inputs' shapes, the bytes of inputs ``values``
    (indices) and the memory budget; None where an input is no array (a handle, a list)."""
    try:
        count = len(inputs)
        if count == 2:                  # the common counts without a list comprehension
            shapes = (inputs[0].shape, inputs[1].shape)
        elif count == 1:
            shapes = (inputs[0].shape,)
        else:
            shapes = tuple([x.shape for x in inputs])
        return (shapes, [inputs[k].tobytes() for k in values] if values else None,
                get_memory_budget())
    except AttributeError:
        return None


def kernel_step(kernel, construction, op, device, ins, outs):
    """The step running one node's kernel: the lean `HostKernelStep` where the device needs
    no activation (the CPU)."""
    if device.type.activate is not None:
        return KernelStep(kernel, construction, op, device, ins, outs)
    return HostKernelStep(kernel, construction, op, device, ins, outs)


class KernelStep:
    """Runs one node: gather inputs, compute, scatter the outputs read later, free slots."""

    __slots__ = ("kernel", "construction", "op", "device", "ins", "outs", "frees")

    def __init__(self, kernel, construction, op, device, ins, outs):
        self.kernel, self.construction, self.op, self.device = kernel, construction, op, device
        self.ins, self.outs, self.frees = ins, outs, ()

    def reads(self):
        return self.ins

    def __call__(self, buf):
        outputs = self.run([buf[i] for i in self.ins])
        for k, slot in self.outs:
            buf[slot] = outputs[k]
        for slot in self.frees:
            buf[slot] = None

    def run(self, inputs):
        """The node's outputs for ``inputs``; an error names the node."""
        try:
            return compute(self.kernel, self.construction, inputs, self.device)
        except Exception as exc:
            raise_node_error(exc, self.op, self.device, inputs)


class HostKernelStep(KernelStep):
    """`KernelStep` for a kernel on the host: `kernel_call.compute` inlined (the same
    context, the same refusal of an unset output), as most steps of a CPU plan are these.
    A kernel that prepares (``OpKernel.prepare``) runs its prepared call for the last
    signature seen: the inputs' shapes, the bytes of its `prepared_values` inputs and the
    memory budget."""

    __slots__ = ("prepares", "prepared")

    def __init__(self, kernel, construction, op, device, ins, outs):
        super().__init__(kernel, construction, op, device, ins, outs)
        self.prepares = prepares(type(kernel))
        self.prepared = None     # (signature, the prepared call or None) of the last run

    def __call__(self, buf):
        inputs = [buf[i] for i in self.ins]
        last = self.prepared
        if last is not None and last[1] is not None and last[0] == _signature(
                inputs, self.kernel.prepared_values):          # the hot path, inlined
            try:
                outputs = last[1](inputs)
            except Exception as exc:
                raise_node_error(exc, self.op, self.device, inputs)
        else:
            outputs = self.run(inputs)
        for k, slot in self.outs:
            buf[slot] = outputs[k]
        for slot in self.frees:
            buf[slot] = None

    def run(self, inputs):
        """The node's outputs for ``inputs``: by the call prepared for their signature,
        else by compute; an error names the node."""
        outputs = self._prepared_outputs(inputs) if self.prepares else None
        if outputs is None:
            ctx = OpKernelContext(self.construction, inputs)
            try:
                self.kernel.compute(ctx)
            except Exception as exc:
                raise_node_error(exc, self.op, self.device, inputs)
            outputs = ctx.outputs
            for value in outputs:
                if value is None:
                    self._unset(outputs, inputs)
        return outputs

    def _prepared_outputs(self, inputs):
        """The outputs of the kernel's call prepared for the inputs' signature; None where
        compute runs. A new signature prepares, and its first outputs are checked (arrays
        of the declared types); a prepare or first call that raises keeps nothing."""
        key = _signature(inputs, self.kernel.prepared_values)
        if key is None:
            return None
        last = self.prepared
        try:
            if last is not None and last[0] == key:
                call = last[1]
                return None if call is None else call(inputs)
            call = self.kernel.prepare(OpKernelContext(self.construction, inputs))
            outputs = None if call is None else _checked(call(inputs), self.construction)
        except Exception as exc:
            raise_node_error(exc, self.op, self.device, inputs)
        self.prepared = (key, call)
        return outputs

    def _unset(self, outputs, inputs):
        k = next(k for k, value in enumerate(outputs) if value is None)
        raise_node_error(unset_output(k), self.op,
                         self.device, inputs)


class FusedStep(KernelStep):
    """A step running fused nodes (its kernel: a chain, cluster or block, whose ``ops``
    they are) in place of the last, with each node's own step at hand to run where the
    fused pass does not (``members``, made from their ``(construction, kernel)``: on the
    host, steps whose kernels run their prepared calls)."""

    __slots__ = ("members",)

    def __init__(self, fused, members, construction, op, device, ins, outs):
        super().__init__(fused, construction, op, device, ins, outs)
        self.members = [kernel_step(kernel, member_construction, member, device, (), ())
                        for (member_construction, kernel), member in zip(members, fused.ops)]

    def _run_member(self, m, inputs):
        """Output 0 of member m's kernel on ``inputs``; an error names the member."""
        return self.members[m].run(inputs)[0]


class ChainStep(FusedStep):
    """Runs a fused chain (``fusion.Chain``, its kernel) in place of its last node: one pass
    where the chain accepts its source's value, else the nodes' own kernels one after the
    other, each failure naming its node."""

    __slots__ = ()

    def __call__(self, buf):
        chain, values = self.kernel, [buf[i] for i in self.ins]
        if chain.accepts(values):
            try:
                value = chain.apply(values, self._run_first)
            except Exception as exc:
                raise_node_error(exc, self.op, self.device, values)
        else:
            value = values[0]
            for (_, index, operand, _), member in zip(chain.parts, self.members):
                if isinstance(operand, tuple):          # a fused conv's other inputs
                    inputs = [value] + [values[i] for i in operand]
                else:
                    operand = values[operand] if isinstance(operand, int) else operand
                    inputs = ([value] if operand is None
                              else [operand, value] if index else [value, operand])
                value = member.run(inputs)[0]
        for _, slot in self.outs:
            buf[slot] = value
        for slot in self.frees:
            buf[slot] = None

    def _run_first(self, inputs, epilogue):
        """Output 0 of the chain's first node's kernel on ``inputs``, given ``epilogue``
        (``fusion.ConvChain``: the conv applies the rest of the chain as it writes)."""
        first = self.members[0]
        return compute(first.kernel, first.construction, inputs, self.device, epilogue)[0]


class ClusterStep(FusedStep):
    """Runs an elementwise cluster (``elementwise_clusters.Cluster``, its kernel) in place
    of its last node: its recipe for the inputs' shapes where there is one (the program,
    or the members' kernels where they are faster), else the members' own kernels one
    after the other; each failure names its node."""

    __slots__ = ()

    def __call__(self, buf):
        cluster, values = self.kernel, [buf[i] for i in self.ins]
        recipe = cluster.recipe(values)
        if recipe is not None:
            try:
                outputs = recipe.run(cluster, values, self._run_member, self._run_members)
            except OpError:              # a member's kernel failed, naming its node
                raise
            except Exception as exc:
                raise_node_error(exc, self.op, self.device, values)
        else:
            outputs = self._run_members(values)
        for k, slot in self.outs:
            buf[slot] = outputs[k]
        for slot in self.frees:
            buf[slot] = None

    def _run_members(self, values, recipe=None):
        """The cluster's outputs from the members' kernels, one after the other: by their
        steps, or for a ``recipe``'s signature by the calls they prepared for it (every
        member's input shapes follow from the signature), kept in the recipe after its
        first run of them."""
        cluster = self.kernel
        calls = None if recipe is None else recipe.calls
        if calls is not None:
            return self._called(calls, values)
        if recipe is None:
            results = cluster.run_members(range(len(cluster.ops)), values, self._run_member)
            return [results[m] for m in cluster.outputs]
        kept = []

        def run_member(m, inputs):
            value = self._run_member(m, inputs)
            kept.append(self._prepared_call(m, inputs))
            return value
        results = cluster.run_members(range(len(cluster.ops)), values, run_member)
        if None not in kept:
            recipe.calls = kept
        return [results[m] for m in cluster.outputs]

    def _prepared_call(self, m, inputs):
        """Member m's call prepared for ``inputs`` (its key checked: a run of another
        signature in another thread may have replaced it since); None where it has none,
        or where its call depends on values, which a recipe's signature does not hold."""
        member = self.members[m]
        last = getattr(member, "prepared", None)      # (a device step keeps none)
        if last is None or last[1] is None or member.kernel.prepared_values:
            return None
        return last[1] if last[0] == _signature(inputs, ()) else None

    def _called(self, calls, values):
        """The cluster's outputs by the members' prepared ``calls``; an error names the
        member."""
        cluster, results = self.kernel, []
        for m, refs in enumerate(cluster.operands):
            inputs = [values[i] if where == "input" else results[i] for where, i in refs]
            try:
                results.append(calls[m](inputs)[0])
            except Exception as exc:
                raise_node_error(exc, cluster.ops[m], self.device, inputs)
        return [results[m] for m in cluster.outputs]


class BlockStep(FusedStep):
    """Runs a fused block of small tensors (``squeeze_excite.SqueezeExcite``, its kernel)
    in place of its last node: its parts one after the other, each fused part's one pass
    where it accepts its values, else that part's nodes' kernels; each failure names its
    node."""

    __slots__ = ()

    def __call__(self, buf):
        values = [buf[i] for i in self.ins]
        try:
            value = self.kernel.run(values, self._run_member)
        except OpError:              # a member's kernel failed, naming its node
            raise
        except Exception as exc:
            raise_node_error(exc, self.op, self.device, values)
        for _, slot in self.outs:
            buf[slot] = value
        for slot in self.frees:
            buf[slot] = None


class CopyStep:
    """Copies one tensor between host and device memory (once per destination)."""

    __slots__ = ("tensor", "src_slot", "dst_slot", "src", "dst", "frees")

    def __init__(self, tensor, src_slot, dst_slot, src, dst):
        self.tensor, self.src_slot, self.dst_slot = tensor, src_slot, dst_slot
        self.src, self.dst, self.frees = src, dst, ()

    def reads(self):
        return (self.src_slot,)

    def __call__(self, buf):
        try:
            buf[self.dst_slot] = devices.transfer(buf[self.src_slot], self.src, self.dst)
        except Exception as exc:
            where = [d.name if d is not None else "host memory" for d in (self.src, self.dst)]
            op = self.tensor.op
            raise unexpected_error_class(exc)(
                f"Copying tensor '{self.tensor.name}' from {where[0]} to {where[1]} failed: "
                f"{type(exc).__name__}: {exc}", op=op, node_def=op.node_def) from exc
        for slot in self.frees:
            buf[slot] = None


class DerefStep:
    """Reads a TF1 variable's current value off a reference edge for a plain input (of
    `op`, or a fetch when None), as TF's executor does when a ref output feeds a non-ref
    input; an uninitialized variable fails naming the reader."""

    __slots__ = ("tensor", "src_slot", "dst_slot", "op", "device", "frees")

    def __init__(self, tensor, src_slot, dst_slot, op, device):
        self.tensor, self.src_slot, self.dst_slot = tensor, src_slot, dst_slot
        self.op, self.device, self.frees = op, device, ()

    def reads(self):
        return (self.src_slot,)

    def __call__(self, buf):
        value = buf[self.src_slot]
        try:
            buf[self.dst_slot] = dereference(value)
        except Exception as exc:
            op = self.op if self.op is not None else self.tensor.op
            raise_node_error(exc, op, self.device, [value])
        for slot in self.frees:
            buf[slot] = None


class ShapeGuardStep:
    """Stands where a node that reads only its inputs' shapes (a Shape, Size, ...) was
    folded for the shapes a plan is specialised to: checks, at that point of the run, that
    each input has the shape the folded value was computed from (``checks``: (slot, shape
    tuple, tensor)). A mismatch means a shape function promised what its kernel did not
    give: an InternalError naming the node, never a wrong value."""

    __slots__ = ("op", "checks", "frees")

    def __init__(self, op, checks):
        self.op, self.checks, self.frees = op, tuple(checks), ()

    def reads(self):
        return tuple(slot for slot, _, _ in self.checks)

    def __call__(self, buf):
        for slot, shape, tensor in self.checks:
            actual = buf[slot].shape
            if actual != shape:
                raise InternalError(
                    f"Node '{self.op.name}' ({self.op.type}) was folded for input "
                    f"'{tensor.name}' of shape {shape_str(shape)}, but that tensor has shape "
                    f"{shape_str(actual)}: the shape function of '{tensor.op.type}' "
                    "disagrees with its kernel.", op=self.op, node_def=self.op.node_def)
        for slot in self.frees:
            buf[slot] = None
