"""Execution plans and the run loop.

`build_plan` prunes the graph to what the fetches and targets need (stopping at fed tensors,
following data and control edges), orders it topologically, places every node,
instantiates its kernel, folds the constant nodes (`constant_folding`: computed once, their
values placed in their slots at the start of every run, and a constant per-channel Mul
after a conv folded into its filter), fuses elementwise chains (`fusion`: a per-channel
scale, shift and Relu(6) in one step) and clusters (`elementwise_clusters`: one compiled
pass) and lays out a flat list of steps over numbered
buffer slots: one kernel step per other node, plus one copy step per tensor and
destination whenever a value crosses between host and device memory. Each slot is released
right after its last reader. `Plan.run` is then a short loop: `for step in steps: step(buf)`.
"""

import numpy as np

from graphops.runtime import (constant_folding, devices, elementwise_clusters, fusion,
                              host_memory, placement, shape_folding, squeeze_excite)
from graphops.kernels.support.blas_threads import blas_jobs_on_compiled_threads
from graphops.runtime.frame_executor import FramePlan
from graphops.runtime.kernel_call import host_memory_indices, instantiate, ref_indices
from graphops.runtime.steps import (BlockStep, ChainStep, ClusterStep, CopyStep, DerefStep,
                                    KernelStep, ShapeGuardStep, kernel_step, raise_node_error)
from graphops.registry.errors import CancelledError, InvalidArgumentError
from graphops.registry.kernel_registry import (cancellation, control_flow_role,
                                               registered_kernels)


def _instantiate(op, placed, resources):
    """(construction, kernel) of a graph node; constructor errors name the node. Call
    kernels see the graph's function library."""
    try:
        return instantiate(op.op_def, op.name, op.attrs,
                           [t.dtype.base_dtype for t in op.inputs],
                           [t.dtype for t in op.outputs], placed, resources,
                           op.graph._functions)
    except Exception as exc:
        raise_node_error(exc, op, placed.device, list(op.inputs))


# ------------------------------------------------------------------------------- plan

MAX_SHAPE_SIGNATURES = 8   # specialisations a plan keeps; other shapes run the generic one


class Plan:
    """A pruned, placed, ordered graph: `run(feed_values)` -> fetched NumPy arrays.

    A plan whose shape nodes (Shape, Size, ...) read shapes its feeds decide specialises to
    the feeds' shapes (``specialize(shapes)``: the plan for them, built on first sight of a
    signature, at most MAX_SHAPE_SIGNATURES of them): each folds those nodes and the shape
    arithmetic behind them (``shape_folding``). A run calls the steps' ``__call__`` bound
    when the plan was made (``calls``): a step class patched later changes later plans."""

    __slots__ = ("steps", "calls", "num_slots", "feed_slots", "fetch_slots", "ops",
                 "placements", "device_feeds", "constants", "specialize", "by_shapes",
                 "initial")

    def __init__(self, steps, num_slots, feed_slots, fetch_slots, ops, placements,
                 device_feeds, constants, specialize=None):
        self.steps, self.num_slots = steps, num_slots
        self.calls = [step.__call__ for step in steps]   # bound: no lookup per step and run
        self.feed_slots, self.fetch_slots = feed_slots, fetch_slots
        self.ops, self.placements = ops, placements
        self.device_feeds = device_feeds   # per feed: its readers all copy it to one device
        self.constants = constants         # (slot, value) of the folded nodes' outputs
        self.initial = [None] * num_slots  # a run's buffer before its feeds: the constants
        for slot, value in constants:
            self.initial[slot] = value
        self.specialize, self.by_shapes = specialize, {}

    def run(self, feed_values, cancelled=None):
        """Runs every step; `cancelled()` true before a step stops it with CancelledError
        (kernels that wait ask it too, as `ctx.cancelled()`).

        A fed device array (CuPy) goes straight to device readers; it is copied to the host
        only when a host reader needs it."""
        plan = self.for_shapes(feed_values)
        host_memory.kernels_starting()
        with np.errstate(all="ignore"), cancellation(cancelled), blas_jobs_on_compiled_threads():
            return plan._run(feed_values, cancelled)

    def run_in_kernel(self, feed_values):
        """`run` from inside a kernel's compute (a function's body, a loop's condition): the
        run or eager op around it has already set up what `run` sets up."""
        plan = self.for_shapes(feed_values)
        return plan._run(feed_values, None)

    def for_shapes(self, feed_values):
        """The plan specialised to the feeds' shapes (see `for_signature`); this one
        where it does not specialise."""
        if self.specialize is None:
            return self
        return self.for_signature(tuple([getattr(value, "shape", None)
                                         for value in feed_values]))

    def for_signature(self, shapes):
        """The plan specialised to feeds of ``shapes`` (this one past the cap, or when the
        shapes decide nothing more)."""
        plan = self.by_shapes.get(shapes)
        if plan is None:
            if len(self.by_shapes) >= MAX_SHAPE_SIGNATURES:
                return self
            plan = self.by_shapes[shapes] = self.specialize(shapes)
        return plan

    def _run(self, feed_values, cancelled):
        buf = self.initial.copy()
        for slot, value, direct in zip(self.feed_slots, feed_values, self.device_feeds):
            if not direct and type(value) is not np.ndarray:
                value = devices.to_host(value)
            buf[slot] = value
        if cancelled is None:
            for call in self.calls:
                call(buf)
        else:
            for call in self.calls:
                if cancelled():
                    raise CancelledError("The Session was closed while this run was in progress.")
                call(buf)
        return [buf[slot] for slot in self.fetch_slots]

    def reordered(self, feed_order, fetch_order):
        """The same plan taking feeds and returning fetches in another order (index lists);
        its specialisations are this plan's, reordered."""
        specialize = None
        if self.specialize is not None:
            def specialize(shapes):
                base_shapes = [None] * len(shapes)
                for position, index in enumerate(feed_order):
                    base_shapes[index] = shapes[position]
                plan = self.for_signature(tuple(base_shapes))
                return reordered if plan is self else plan.reordered(feed_order, fetch_order)
        reordered = Plan(self.steps, self.num_slots, [self.feed_slots[i] for i in feed_order],
                         [self.fetch_slots[i] for i in fetch_order], self.ops, self.placements,
                         [self.device_feeds[i] for i in feed_order], self.constants,
                         specialize)
        return reordered

    def device_of(self, op_name):
        """The Device a node of this plan runs on."""
        for op, placed in zip(self.ops, self.placements):
            if op.name == op_name:
                return placed.device
        raise KeyError(op_name)


def tensor_key(t):
    return (t.op._id, t.value_index)


def fed_placeholder_ids(feeds):
    """The ids of the fed tensors' producers whose kernels declare that a feed satisfies
    their control edges (``OpKernel.feed_satisfies_control``: a Placeholder). Pruning
    precedes placement, so every kernel registered for the op must declare it."""
    declared = {op_type: _feed_satisfies_control(op_type)
                for op_type in {t.op.type for t in feeds}}
    return {t.op._id for t in feeds if declared[t.op.type]}


def _feed_satisfies_control(op_type):
    kernel_defs = registered_kernels(op_type)
    return bool(kernel_defs) and all(k.kernel_class.feed_satisfies_control for k in kernel_defs)


def producers(op, fed, fed_placeholders):
    """The ops `op` waits for: the producers of its unfed inputs (`fed`: fed tensor keys),
    then its control inputs, except fed Placeholders (the feed satisfies their control edge,
    as in TF)."""
    return ([t.op for t in op.inputs if tensor_key(t) not in fed]
            + [c for c in op.control_inputs if c._id not in fed_placeholders])


def prune_and_sort(feeds, fetches, targets):
    """The ops fetches/targets need, stopping at fed tensors, in topological order. A
    control edge from a fed Placeholder is satisfied by the feed, as in TF. The edges out
    of a TF1 loop's NextIteration nodes (declared by their kernels' `control_flow` role)
    close the loop and take no part in the order; any other cycle is an error."""
    import networkx as nx

    fed = {tensor_key(t) for t in feeds}
    fed_placeholders = fed_placeholder_ids(feeds)
    dag = nx.DiGraph()
    ops = {}
    stack = [t.op for t in fetches if tensor_key(t) not in fed] + list(targets)
    while stack:
        op = stack.pop()
        if op._id in ops:
            continue
        ops[op._id] = op
        dag.add_node(op._id)
        for producer in producers(op, fed, fed_placeholders):
            dag.add_edge(producer._id, op._id)
            stack.append(producer)
    roles = {op_type: control_flow_role(op_type) for op_type in {op.type for op in ops.values()}}
    dag.remove_edges_from([edge for i in ops if roles[ops[i].type] == "next_iteration"
                           for edge in list(dag.out_edges(i))])
    try:
        order = list(nx.lexicographical_topological_sort(dag))
    except nx.NetworkXUnfeasible:
        cycle = nx.find_cycle(dag)
        names = " -> ".join(ops[a].name for a, _ in cycle) + " -> " + ops[cycle[0][0]].name
        raise InvalidArgumentError(f"Graph has a cycle: {names}") from None
    return [ops[i] for i in order], any(roles.values())


def build_plan(feeds, fetches, targets, allow_soft_placement=True,
               log_device_placement=False, kernel_cache=None, resources=None,
               fetch_to_host=True):
    """Builds the Plan for feed tensors, fetch tensors and target operations.

    `kernel_cache` (a dict the caller keeps) shares kernel instances between plans;
    `resources` is the Session's ResourceMgr, handed to every kernel; with `fetch_to_host`
    false, fetches produced in device memory are returned where they are.
    """
    kernel_cache = {} if kernel_cache is None else kernel_cache
    ops, control_flow = prune_and_sort(feeds, fetches, targets)
    placements = placement.place(ops, allow_soft_placement, log_device_placement)
    kernels = [_cached_kernel(op, placed, kernel_cache, resources)
               for op, placed in zip(ops, placements)]
    fed = {tensor_key(t) for t in feeds}
    if control_flow:      # TF1 control flow: run by dataflow, in frames
        waits_for = {op._id for op in ops} - fed_placeholder_ids(feeds)
        return FramePlan(ops, placements, kernels, feeds, fetches, fetch_to_host, fed,
                         waits_for)
    return _PlanMaker(ops, placements, kernels, feeds, fetches, fetch_to_host, fed).generic()


class _PlanMaker:
    """Lays out a pruned, placed graph's plans: the generic one, and one per signature of
    feed shapes when its shape nodes read shapes the feeds decide."""

    def __init__(self, ops, placements, kernels, feeds, fetches, fetch_to_host, fed):
        self.ops, self.placements, self.kernels = ops, placements, kernels
        self.feeds, self.fetches, self.fetch_to_host, self.fed = feeds, fetches, fetch_to_host, fed
        self.readers = constant_folding.reader_counts(ops, [tensor_key(t) for t in fetches])
        self.scaled = {}      # fold_scales' products, shared by every specialisation
        self.generic_plan = self.generic_folding = None
        self.held = 0         # new bytes the folded values of all these plans hold

    def generic(self):
        """The plan for any feed shapes the graph allows; it specialises (``Plan.
        specialize``) when shape nodes a specialisation could fold remain steps."""
        plan, folding = self.lay_out([None] * len(self.feeds), None)
        if self.feeds and any(
                op._id not in folding[0]
                and shape_folding.shape_only_foldable(op, placed, kernel, self.fed)
                for op, placed, (_, kernel) in zip(self.ops, self.placements, self.kernels)):
            plan.specialize = self.specialized
        self.generic_plan, self.generic_folding = plan, folding
        return plan

    def specialized(self, shapes):
        """The plan for feeds of ``shapes`` (the generic one when they fold nothing more)."""
        plan, (folded, _) = self.lay_out(shapes, self.generic_folding)
        return self.generic_plan if folded.keys() == self.generic_folding[0].keys() else plan

    def lay_out(self, shapes, known):
        """(Plan, (folded values, shape guards)) for feeds of ``shapes`` (None where
        unknown); ``known``: the generic plan's, reused."""
        ops, placements, kernels, fed = self.ops, self.placements, self.kernels, self.fed
        facts = shape_folding.ShapeFacts(self.feeds, shapes)
        folded, guards, self.held = constant_folding.fold(
            ops, placements, kernels, fed, self.readers, facts, known, self.held)
        aliases, replaced = constant_folding.fold_scales(ops, placements, kernels, folded, fed,
                                                         self.readers, self.scaled)
        chains = fusion.fuse_chains(ops, placements, kernels, folded, fed, self.readers,
                                    aliases, replaced)
        layout = _Layout(ops, kernels, chains, replaced)
        feed_slots = [layout.feed(t) for t in self.feeds]
        inside = {m._id for chain in chains.values() for m in chain.ops[:-1]}   # never run
        inside |= {mul for mul, scaled in aliases.items() if scaled._id in inside}
        placed_kernel = {op._id: pair for op, *pair in zip(ops, placements, kernels)}
        for op in elementwise_clusters.contracted_order(ops, chains):
            placed, kernel = placed_kernel[op._id]
            if op._id in folded:
                layout.constants_of(op, folded[op._id])
                if guards.get(op._id):
                    layout.guard(op, guards[op._id])
            elif op._id in inside:
                continue
            elif op._id in aliases:        # the conv before it wrote the scaled values
                layout.alias(op, aliases[op._id])
            elif not layout.left_out(op, placed, kernel[1]):
                layout.step(op, placed, kernel)
        fetch_slots = [layout.fetch_slot(t, self.fetch_to_host) for t in self.fetches]
        steps = layout.steps
        read = _schedule_frees(steps, set(fetch_slots))
        plan = Plan(steps, layout.count, feed_slots, fetch_slots, ops, placements,
                    _device_feeds(steps, feed_slots, set(fetch_slots)),
                    tuple((slot, value) for slot, value in layout.constants if slot in read))
        return plan, (folded, guards)


def _cached_kernel(op, placed, kernel_cache, resources):
    """(construction, kernel) of a placed node, made once per node and device."""
    cache_key = (op._id, placed.device)
    if cache_key not in kernel_cache:
        kernel_cache[cache_key] = _instantiate(op, placed, resources)
    return kernel_cache[cache_key]


class _Layout:
    """A plan's steps over numbered buffer slots, laid out node by node: ``slots``
    {(tensor key, location): slot} (location None: host memory), ``where`` {tensor key:
    the location of its primary value}, ``constants`` (slot, folded value)."""

    def __init__(self, ops, kernels, chains, replaced):
        self.kernel_of = {op._id: kernel for op, kernel in zip(ops, kernels)}
        self.chains, self.replaced = chains, replaced
        self.slots, self.where, self.steps, self.constants, self.count = {}, {}, [], [], 0
        self.device_of = {}     # op id -> the Device of its step
        # tensor keys whose shape a ShapeGuardStep checks, or that a fused block keeps to
        # itself (its kernels check the shapes they are given)
        self.guarded = {tensor_key(t) for block in chains.values()
                        if isinstance(block, squeeze_excite.SqueezeExcite)
                        for op in block.ops[:-1] for t in op.outputs}

    def new_slot(self, key, loc):
        self.slots[(key, loc)] = self.count
        self.count += 1
        return self.slots[(key, loc)]

    def slot_at(self, t, loc):
        """t's slot at ``loc``; its first crossing there adds a copy step."""
        key = tensor_key(t)
        src = self.where[key]
        if (key, loc) not in self.slots:
            self.steps.append(CopyStep(t, self.slots[(key, src)], self.new_slot(key, loc),
                                        src, loc))
        return self.slots[(key, loc)]

    def deref_slot(self, t, loc, op, device):
        """A new slot holding, at ``loc``, the value read off reference ``t`` when ``op``
        runs (a dereference step, then a copy when ``loc`` is not where ``t`` is)."""
        key, src = tensor_key(t), self.where[tensor_key(t)]
        slot = self.count
        self.count += 1
        self.steps.append(DerefStep(t, self.slots[(key, src)], slot, op, device))
        if loc == src:
            return slot
        self.steps.append(CopyStep(t, slot, self.count, src, loc))
        self.count += 1
        return self.count - 1

    def fetch_slot(self, t, to_host):
        """The slot a fetch of ``t`` reads (a reference: the variable's value, read last)."""
        loc = None if to_host else self.where[tensor_key(t)]
        if t.dtype.is_ref:
            return self.deref_slot(t, loc, None, self.device_of.get(t.op._id))
        return self.slot_at(t, loc)

    def feed(self, t):
        self.where[tensor_key(t)] = None
        return self.new_slot(tensor_key(t), None)

    def constants_of(self, op, values):
        """Slots for a folded node's values, set at the start of every run."""
        for t, value in zip(op.outputs, values):
            self.where[tensor_key(t)] = None
            self.constants.append((self.new_slot(tensor_key(t), None), value))

    def guard(self, op, checks):
        """A step checking, where ``op`` would have run, that its inputs have the shapes
        its folded values were computed for (``checks``: (tensor, shape) pairs)."""
        checks = [(t, shape) for t, shape in checks if tensor_key(t) not in self.guarded]
        if checks:         # a tensor's shape is checked once, where it is first read
            self.guarded.update(tensor_key(t) for t, _ in checks)
            self.steps.append(ShapeGuardStep(op, [
                (self.slots[(tensor_key(t), self.where[tensor_key(t)])], shape, t)
                for t, shape in checks]))

    def alias(self, op, scaled):
        """Op's output is ``scaled``'s (a product folded into the conv before it)."""
        source = tensor_key(scaled.outputs[0])
        key, loc = tensor_key(op.outputs[0]), self.where[source]
        self.where[key] = loc
        self.slots[(key, loc)] = self.slots[(source, loc)]

    def left_out(self, op, placed, instance):
        """Whether the node needs no step: a NoOp (the steps run in order), or an Identity
        (an IdentityN) whose outputs then share their inputs' slots (at the node's device)."""
        if op._id in self.chains or op._id in self.replaced:
            return False
        if instance.does_nothing:
            return True
        forwarded = op.inputs[:1] if instance.forwards_input else (
            op.inputs if instance.forwards_inputs else [])
        if not forwarded or any(t.dtype.is_ref for t in forwarded):
            return False
        keys = [tensor_key(t) for t in op.outputs[:len(forwarded)]]
        if any(key in self.where for key in keys):        # fed: keeps its fed value
            return False
        device = placed.device
        host = () if device.type.is_host else host_memory_indices(
            placed.kernel_def, op.op_def.input_arg, op.attrs)
        for k, (t, key) in enumerate(zip(forwarded, keys)):
            loc = None if device.type.is_host or k in host else device
            self.where[key] = loc
            self.slots[(key, loc)] = self.slot_at(t, loc)
        return True

    def step(self, op, placed, kernel):
        """The node's kernel step (its fused chain's, when it ends one)."""
        construction, instance = kernel
        device = placed.device
        self.device_of[op._id] = device
        loc = None if device.type.is_host else device
        chain = self.chains.get(op._id)
        if isinstance(chain, elementwise_clusters.Cluster):
            return self.cluster_step(chain, op, device, ClusterStep)
        if isinstance(chain, squeeze_excite.SqueezeExcite):
            return self.cluster_step(chain, op, device, BlockStep)
        if chain is not None:        # the fused chain's one step reads its inputs alone
            sources, host_in, ref_in = chain.inputs, (), ()
        else:
            sources = op.inputs
            host_in = host_memory_indices(placed.kernel_def, op.op_def.input_arg, op.attrs)
            ref_in = ref_indices(op.op_def.input_arg, op.attrs)
        ins = [self.deref_slot(t, None if j in host_in else loc, op, device)
               if t.dtype.is_ref and j not in ref_in
               else self.slot_at(t, None if j in host_in else loc)
               for j, t in enumerate(sources)]
        for j, value in self.scaled_inputs(op, chain).items():   # a scaled filter or bias
            ins[j] = self.new_slot(("scaled", op._id, j), None)
            self.constants.append((ins[j], value))
        host_out = host_memory_indices(placed.kernel_def, op.op_def.output_arg, op.attrs)
        outs = []
        for k, t in enumerate(op.outputs):
            key = tensor_key(t)
            if key not in self.where:   # a fed output keeps its fed value
                self.where[key] = None if k in host_out else loc
                outs.append((k, self.new_slot(key, self.where[key])))
        if chain is None:
            self.steps.append(kernel_step(instance, construction, op, device, ins, outs))
        else:
            members = [self.kernel_of[member._id] for member in chain.ops]
            self.steps.append(ChainStep(chain, members, construction, op, device, ins, outs))

    def scaled_inputs(self, op, chain):
        """{input index: value} of the step's inputs a folded scale replaced: op's own, or a
        fused conv's (its inputs come first in its chain's; the chain holds its stages'
        scaled constants itself)."""
        if chain is None:
            return self.replaced.get(op._id, {})
        if isinstance(chain, (fusion.ConvChain, fusion.ConvSumActivation)):
            return self.replaced.get(chain.conv._id, {})
        return {}

    def cluster_step(self, cluster, op, device, step):
        """The ``step`` (class) of an elementwise cluster or a fused block, on the host, in
        place of its last node."""
        ins = [self.slot_at(t, None) for t in cluster.inputs]
        outs = []
        for k, m in enumerate(cluster.outputs):
            key = tensor_key(cluster.ops[m].outputs[0])
            self.where[key] = None
            outs.append((k, self.new_slot(key, None)))
        members = [self.kernel_of[member._id] for member in cluster.ops]
        self.steps.append(step(cluster, members, self.kernel_of[op._id][0], op, device, ins,
                               outs))


def _device_feeds(steps, feed_slots, fetched):
    """Per feed slot: True when only copies to a device read it (a fed device array may
    then skip the host)."""
    readers = {slot: [] for slot in feed_slots}
    for step in steps:
        for slot in step.reads():
            if slot in readers:
                readers[slot].append(step)
    return [slot not in fetched and bool(readers[slot])
            and all(isinstance(r, CopyStep) and r.dst is not None for r in readers[slot])
            for slot in feed_slots]


def _schedule_frees(steps, keep):
    """Frees each slot after its last reader; drops outputs nobody reads. Returns the slots
    a step reads or ``keep`` holds."""
    last = {}
    for i, step in enumerate(steps):
        for slot in step.reads():
            last[slot] = i
    frees = [[] for _ in steps]
    for slot, i in last.items():
        if slot not in keep:
            frees[i].append(slot)
    for step, free in zip(steps, frees):
        step.frees = tuple(free)
        if isinstance(step, KernelStep):
            step.outs = tuple((k, s) for k, s in step.outs if s in last or s in keep)
            step.ins = tuple(step.ins)
    return last.keys() | keep
