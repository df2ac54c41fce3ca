"""The plan of a graph with TF1 control flow (Switch, Merge, Enter, Exit, NextIteration),
run as TF's executor runs it: by dataflow, in frames and iterations, with dead tensors.

Such a graph is cyclic (a loop's NextIteration feeds its Merge) and decides at run time
which nodes run, so it cannot be a flat list of steps. Every value is tagged with the frame
instance and iteration it belongs to; a node runs once per (frame, iteration) in which all
its inputs (data and control) have arrived. The roles, declared by the kernels
(`OpKernel.control_flow`), follow TF's executor:

- a node with a dead input is not computed: all its outputs are dead (a control trigger
  excepted, which runs anyway);
- switch: forwards its data to the output its predicate selects, the other output dead;
- merge: fires on its first live data input (once its control inputs arrived), giving the
  value and the input's index; dead once every data input is dead, or when a dead value
  comes from an Enter (a loop in a branch not taken);
- enter: moves its value into the child frame `frame_name` (one instance per parent frame
  instance and iteration): to iteration 0, or, when `is_constant`, to every iteration;
- next_iteration: moves a live value to the next iteration (a dead one ends the loop);
- exit: moves a live value to the parent frame; when a frame instance finishes, each Exit
  that never gave a live value sends a dead one (a loop in a branch not taken).

A frame instance finishes when all its Enters have fired and no node of it or of a child
frame is queued. Nodes run one at a time, first come first served.

A loop of the usual fixed shape (frame_loops.LoopPlan: no nested loop or cond, all on the
host) runs as straight-line code once all its Enters have fired, and when every loop does
and the root frame has no control flow of its own, the whole plan runs so
(frame_loops.RootPlan): a frozen Keras LSTM or GRU is two straight-line programs. Nodes
whose kernels say so need no kernel call: a NoOp gives nothing, an Identity its input,
and a Const the value computed when the plan is built.
"""

import collections

import numpy as np

from graphops.kernels.support.blas_threads import blas_jobs_on_compiled_threads
from graphops.runtime import devices, host_memory
from graphops.runtime.frame_loops import LoopPlan, RootPlan
from graphops.runtime.kernel_call import (compute, dereference, host_memory_indices,
                                          ref_indices)
from graphops.runtime.steps import raise_node_error
from graphops.runtime.straight_loops import check_cancelled
from graphops.registry.errors import InternalError, InvalidArgumentError
from graphops.registry.kernel_registry import cancellation

DEAD = object()     # the value of a dead tensor
_LIVE = object()    # what a control edge from a live node carries
_FORWARDING = ("switch", "enter", "exit", "next_iteration")    # forward their input 0


class _Node:
    """What the run needs of one node: its kernel, role and edges (by node index)."""

    __slots__ = ("op", "device", "construction", "kernel", "role", "num_inputs",
                 "pending", "consumers", "control_consumers", "host_in", "deref_in",
                 "on_host", "as_given", "frame_name", "is_constant", "loop_merge", "outputs",
                 "forwards", "ready_at_once", "trigger", "deref_forwarded")

    def __init__(self, op, placed, kernel):
        self.op, self.device = op, placed.device
        self.construction, self.kernel = kernel
        self.role = kernel[1].control_flow
        self.num_inputs = len(op.inputs)
        self.pending = 0               # data inputs + control inputs to wait for
        self.consumers = [[] for _ in op.outputs]   # per output: (node index, input slot)
        self.control_consumers = []
        self.host_in = host_memory_indices(placed.kernel_def, op.op_def.input_arg, op.attrs)
        self.deref_in = frozenset(j for j, t in enumerate(op.inputs) if t.dtype.is_ref) - \
            ref_indices(op.op_def.input_arg, op.attrs)
        self.on_host = self.device.type.is_host
        self.as_given = False          # inputs need no reading off refs nor moving
        self.frame_name = op.attrs.get("frame_name") if self.role == "enter" else None
        self.is_constant = bool(op.attrs.get("is_constant")) if self.role == "enter" else False
        self.loop_merge = False        # a merge fed by a next_iteration node
        self.outputs = None            # outputs known without a kernel call (a Const, NoOp)
        self.forwards = False          # output 0 is input 0, no kernel call (an Identity)
        self.ready_at_once = False     # one input to wait for (not a merge): no record
        self.trigger = self.role == "control_trigger"      # runs even with dead inputs
        self.deref_forwarded = self.role in _FORWARDING and 0 in self.deref_in


def _shortcut(node):
    """Sets what a plain node gives without a kernel call, as its kernel declares: a NoOp
    nothing, an Identity its input (when inputs come as given), a Const (an invariant
    kernel without inputs, on the host) the outputs computed now, once."""
    kernel = node.kernel
    if node.role is not None:
        return
    if kernel.does_nothing:
        node.outputs = []
    elif kernel.forwards_input:
        node.forwards = node.as_given and node.num_inputs > 0 and len(node.consumers) == 1
    elif kernel.invariant and kernel.foldable and node.num_inputs == 0 and node.on_host:
        try:
            node.outputs = compute(kernel, node.construction, [], node.device)
        except Exception:       # noqa: BLE001 - it runs, and raises, when the graph runs
            pass


class _Frame:
    """One instance of a frame: the root, or a loop entered in some parent iteration."""

    __slots__ = ("parent", "parent_iter", "key", "pending_enters", "outstanding",
                 "children", "iteration_count", "invariants", "records", "exits_live",
                 "exits_dead", "loop", "entered")

    def __init__(self, parent, parent_iter, key, pending_enters, loop=None):
        self.parent, self.parent_iter, self.key = parent, parent_iter, key
        self.pending_enters = pending_enters   # Enters into it that have not fired yet
        self.outstanding = 0                   # its queued nodes
        self.children = 0                      # its unfinished child frame instances
        self.iteration_count = 0
        self.invariants = []                   # (constant Enter's index, value)
        self.records = {}      # (iteration, node index) -> a merge's _MergeRecord, else
        #                        [inputs left, any dead, the inputs received]
        self.exits_live, self.exits_dead = set(), set()
        self.loop = loop           # its LoopPlan, until its Enters have all fired
        self.entered = {}          # for a LoopPlan: Enter's index -> (value, dead)


class _MergeRecord:
    """What a merge has received so far in one frame iteration."""

    __slots__ = ("control_left", "dead_count", "live", "enter_dead", "arrived", "fired")

    def __init__(self, node):
        self.control_left = node.pending - node.num_inputs
        self.dead_count, self.live, self.enter_dead = 0, None, False
        self.arrived, self.fired = 0, False


class FramePlan:
    """A pruned, placed graph with TF1 control flow: `run(feed_values)` -> fetched values."""

    def __init__(self, ops, placements, kernels, feeds, fetches, fetch_to_host, fed_keys,
                 waits_for):
        self.ops, self.placements = ops, placements
        self.fetch_to_host = fetch_to_host
        index = {op._id: i for i, op in enumerate(ops)}
        self.nodes = [_Node(op, placed, kernel)
                      for op, placed, kernel in zip(ops, placements, kernels)]
        self._link(index, fed_keys, waits_for)
        self.feed_consumers = [self._consumers_of(t, index) for t in feeds]
        self.fetches = [(index.get(t.op._id), t.value_index, t) for t in fetches]
        self.fed_fetch = [next((i for i, f in enumerate(feeds) if f is t), None)
                          for t in fetches]
        self.roots = [i for i, node in enumerate(self.nodes) if node.pending == 0]
        if all(node.on_host for node in self.nodes):    # every value stays in host memory
            for node in self.nodes:
                node.as_given = not node.deref_in
        for node in self.nodes:
            _shortcut(node)
            node.ready_at_once = node.pending == 1 and node.role != "merge"
        self.fetched_nodes = frozenset(i for i, _, _ in self.fetches if i is not None)
        self.enters_per_frame = collections.Counter(
            node.frame_name for node in self.nodes if node.role == "enter")
        self.loops = {name: LoopPlan.analyse(self.nodes, self.sources, self.controls, name,
                                             self.fetched_nodes)
                      for name in self.enters_per_frame} \
            if all(node.on_host for node in self.nodes) else {}   # {frame name: LoopPlan}
        self.root_plan = RootPlan.analyse(self.nodes, self.sources, self.controls,
                                          self.loops, self.feed_consumers,
                                          [(i, k) for i, k, _ in self.fetches])
        if self.root_plan is not None:      # where each feed goes, each fetch comes from
            self.feed_slots = self.root_plan.feed_slots
            self.fetch_slots = self.root_plan.fetch_slots

    def _link(self, index, fed_keys, waits_for):
        """Fills every node's consumers and pending count (fed inputs count: the feeds
        arrive first; control edges from fed Placeholders do not), and its `sources` (per
        input: (node, output), None when fed) and `controls` (the nodes it waits for)."""
        self.sources = [[] for _ in self.ops]
        self.controls = [[] for _ in self.ops]
        for i, (op, node) in enumerate(zip(self.ops, self.nodes)):
            for slot, t in enumerate(op.inputs):
                if (t.op._id, t.value_index) in fed_keys:
                    self.sources[i].append(None)
                else:
                    self.sources[i].append((index[t.op._id], t.value_index))
                    source = self.nodes[index[t.op._id]]
                    source.consumers[t.value_index].append((i, slot))
                    node.loop_merge |= node.role == "merge" and \
                        source.role == "next_iteration"
            controls = [c for c in op.control_inputs if c._id in waits_for]
            for c in controls:
                self.nodes[index[c._id]].control_consumers.append(i)
                self.controls[i].append(index[c._id])
            node.pending = node.num_inputs + len(controls)

    @staticmethod
    def _consumers_of(t, index):
        readers = {op._id: op for op in t.consumers() if op._id in index}   # once each
        return [(index[i], slot) for i, op in readers.items()
                for slot, x in enumerate(op.inputs) if x is t]

    def run(self, feed_values, cancelled=None):
        host_memory.kernels_starting()
        with np.errstate(all="ignore"), cancellation(cancelled), blas_jobs_on_compiled_threads():
            return self._run(feed_values, cancelled)

    def run_in_kernel(self, feed_values):
        return self._run(feed_values, None)

    def _run(self, feed_values, cancelled):
        if self.root_plan is None:
            fetched = _Execution(self, cancelled).run(feed_values)
        else:
            values = self.root_plan.run(zip(self.feed_slots, feed_values), cancelled)
            fetched = {k: values[slot] for k, slot in enumerate(self.fetch_slots)
                       if slot is not None}
        return [self._fetched_value(k, fetched, feed_values) for k in range(len(self.fetches))]

    def _fetched_value(self, k, fetched, feed_values):
        if self.fed_fetch[k] is not None:
            value = feed_values[self.fed_fetch[k]]
        else:
            value = fetched.get(k)
            tensor = self.fetches[k][2]
            if value is None:
                raise InternalError(f"The run ended before '{tensor.name}' was computed: "
                                    "some node it needs never received all its inputs.")
            if value is DEAD:
                raise InvalidArgumentError(f"Retval[{k}] does not have value")
            if tensor.dtype.is_ref:
                value = dereference(value)
        return devices.to_host(value) if self.fetch_to_host else value

    def reordered(self, feed_order, fetch_order):
        """The same plan taking feeds and returning fetches in another order."""
        plan = object.__new__(FramePlan)
        plan.__dict__.update(self.__dict__)
        plan.feed_consumers = [self.feed_consumers[i] for i in feed_order]
        plan.fetches = [self.fetches[i] for i in fetch_order]
        if self.root_plan is not None:
            plan.feed_slots = [self.feed_slots[i] for i in feed_order]
            plan.fetch_slots = [self.fetch_slots[i] for i in fetch_order]
        fed_fetch = [self.fed_fetch[i] for i in fetch_order]
        position = {old: new for new, old in enumerate(feed_order)}
        plan.fed_fetch = [None if f is None else position[f] for f in fed_fetch]
        return plan

    def device_of(self, op_name):
        for op, placed in zip(self.ops, self.placements):
            if op.name == op_name:
                return placed.device
        raise KeyError(op_name)


class _Execution:
    """The state of one run: frame instances, the ready queue, fetched values."""

    def __init__(self, plan, cancelled):
        self.plan, self.nodes, self.cancelled = plan, plan.nodes, cancelled
        self.root = _Frame(None, 0, (), 0)
        self.frames = {(): self.root}
        self.queue = collections.deque()
        self.fetch_index = {(i, k): n for n, (i, k, _) in enumerate(plan.fetches)
                            if i is not None}
        self.fetched = {}

    def run(self, feed_values):
        for consumers, value in zip(self.plan.feed_consumers, feed_values):
            for dst, slot in consumers:
                self.deliver(self.root, 0, dst, slot, value, False)
        for i in self.plan.roots:
            self.enqueue(i, self.root, 0, [], False)
        queue, cancelled = self.queue, self.cancelled
        while queue:
            check_cancelled(cancelled)
            self.process(*queue.popleft())
        self.check_nothing_waits(self.root)
        return self.fetched

    def enqueue(self, i, frame, it, inputs, dead):
        frame.outstanding += 1
        self.queue.append((i, frame, it, inputs, dead))

    # -------------------------------------------------------------- delivering values

    def deliver(self, frame, it, dst, slot, value, from_enter):
        """One input (`slot`; None: a control edge) of node `dst` arrives in (frame, it)."""
        node = self.nodes[dst]
        if node.ready_at_once:                # nothing to wait for
            self.enqueue(dst, frame, it, [] if slot is None else [value],
                         value is DEAD and not node.trigger)
            return
        records, key = frame.records, (it, dst)
        record = records.get(key)
        if node.role == "merge":
            if record is None:
                record = records[key] = _MergeRecord(node)
            self._deliver_to_merge(frame, it, dst, node, record, slot, value, from_enter)
            return
        if record is None:
            record = records[key] = [node.pending, False, [None] * node.num_inputs]
        if slot is not None:
            record[2][slot] = value
        if value is DEAD:
            record[1] = True
        if record[0] == 1:
            del records[key]
            self.enqueue(dst, frame, it, record[2], record[1] and not node.trigger)
        else:
            record[0] -= 1

    def _deliver_to_merge(self, frame, it, dst, node, record, slot, value, from_enter):
        record.arrived += 1
        if slot is None:
            record.control_left -= 1
        elif value is DEAD:
            record.dead_count += 1
            record.enter_dead |= from_enter
        elif record.live is None:
            record.live = (dereference(value) if slot in node.deref_in else value, slot)
        if not record.fired and record.control_left == 0:
            if record.live is not None:
                record.fired = True
                self.enqueue(dst, frame, it, [record.live[0], np.array(record.live[1], np.int32)],
                             False)
            elif record.dead_count == node.num_inputs or record.enter_dead:
                record.fired = True
                self.enqueue(dst, frame, it, [DEAD, DEAD], True)
        if record.fired and (node.loop_merge or record.arrived == node.pending):
            del frame.records[(it, dst)]

    def propagate(self, i, frame, it, outputs, dead, from_enter=False):
        """Sends node `i`'s outputs (and its control edges) to its consumers in (frame, it)
        and keeps the fetched ones of the root frame."""
        nodes, queue = self.nodes, self.queue
        node = nodes[i]
        for value, consumers in zip(outputs, node.consumers):
            for dst, slot in consumers:
                consumer = nodes[dst]
                if consumer.ready_at_once:        # deliver's first case, inline
                    frame.outstanding += 1
                    queue.append((dst, frame, it, [value],
                                  value is DEAD and not consumer.trigger))
                else:
                    self.deliver(frame, it, dst, slot, value, from_enter)
        control = DEAD if dead else _LIVE
        for dst in node.control_consumers:
            self.deliver(frame, it, dst, None, control, from_enter)
        if frame is self.root and i in self.plan.fetched_nodes:
            for k, value in enumerate(outputs):
                n = self.fetch_index.get((i, k))
                if n is not None:
                    self.fetched[n] = value

    # -------------------------------------------------------------- running nodes

    def process(self, i, frame, it, inputs, dead):
        node = self.nodes[i]
        role = node.role
        if node.deref_forwarded and not dead:
            inputs = [dereference(inputs[0])] + inputs[1:]
        if role is None or node.trigger:
            if dead:
                outputs = [DEAD] * len(node.consumers)
            elif node.outputs is not None:
                outputs = node.outputs
            else:
                outputs = inputs[:1] if node.forwards else self.compute(node, inputs)
            self.propagate(i, frame, it, outputs, dead)
        elif role == "switch":
            self.propagate(i, frame, it, self.switch(node, inputs, dead), dead)
        elif role == "merge":
            self.propagate(i, frame, it, inputs, dead)
        elif role == "enter":
            self.enter(i, node, frame, it, DEAD if dead else inputs[0], dead)
        elif role == "exit":
            self.exit(i, node, frame, DEAD if dead else inputs[0], dead)
        elif not dead:                                  # next_iteration
            self.next_iteration(i, node, frame, it, inputs[0])
        frame.outstanding -= 1
        if not frame.outstanding and frame.parent is not None:
            self.finish_frames(frame)

    def compute(self, node, inputs):
        values = inputs if node.as_given else [self.prepared(node, j, value)
                                               for j, value in enumerate(inputs)]
        try:
            return compute(node.kernel, node.construction, values, node.device)
        except Exception as exc:
            raise_node_error(exc, node.op, node.device, values)

    @staticmethod
    def prepared(node, j, value):
        """Input `j` as the kernel takes it: read off a reference where the arg is not
        one, and in the memory the kernel wants it."""
        if j in node.deref_in:
            value = dereference(value)
        if node.on_host or j in node.host_in:
            return value if type(value) is np.ndarray else devices.to_host(value)
        where = devices.location_of(value)
        return value if where == node.device else devices.transfer(value, where, node.device)

    def switch(self, node, inputs, dead):
        if dead:
            return [DEAD, DEAD]
        data, pred = inputs
        try:
            taken = node.kernel.taken(devices.to_host(dereference(pred)))
        except Exception as exc:
            raise_node_error(exc, node.op, node.device, inputs)
        return [data, DEAD] if taken == 0 else [DEAD, data]

    def enter(self, i, node, frame, it, value, dead):
        child = self.child_frame(frame, it, node)
        if child.loop is not None:        # run as a LoopPlan once all its Enters fired
            child.entered[i] = (value, dead)
            if child.pending_enters == 1:
                self.run_loop(child)
        else:
            self.enter_values(i, node, child, value, dead)
        child.pending_enters -= 1
        self.finish_frames(child)

    def run_loop(self, child):
        """Runs a loop frame instance by its LoopPlan and sends its Exits' values to the
        parent; with a dead value among its Enters (a loop in a branch not taken), by
        dataflow instead."""
        loop, entered, child.loop = child.loop, child.entered, None
        if any(dead for _, dead in entered.values()):
            for j, (value, dead) in entered.items():
                self.enter_values(j, self.nodes[j], child, value, dead)
            return
        exits = loop.run({j: value for j, (value, _) in entered.items()}, self.cancelled)
        for j, value in exits:
            child.exits_live.add(j)
            self.propagate(j, child.parent, child.parent_iter, [value], False)

    def enter_values(self, i, node, child, value, dead):
        """Enter `i` gives `value` to the child frame instance: to its iteration 0, or,
        when constant, to every iteration."""
        if node.is_constant:
            child.invariants.append((i, value))
            for k in range(child.iteration_count + 1):
                self.propagate(i, child, k, [value], dead, from_enter=True)
        else:
            self.propagate(i, child, 0, [value], dead, from_enter=True)

    def child_frame(self, frame, it, node):
        key = (frame.key, it, node.frame_name)
        child = self.frames.get(key)
        if child is None:
            name = node.frame_name
            child = self.frames[key] = _Frame(frame, it, key, self.plan.enters_per_frame[name],
                                              self.plan.loops.get(name))
            frame.children += 1
        return child

    def exit(self, i, node, frame, value, dead):
        if frame.parent is None:
            raise self.misplaced(node, "an Exit outside any while loop")
        if dead:
            frame.exits_dead.add(i)
        else:
            frame.exits_live.add(i)
            self.propagate(i, frame.parent, frame.parent_iter, [value], False)

    def next_iteration(self, i, node, frame, it, value):
        if frame.parent is None:
            raise self.misplaced(node, "a NextIteration outside any while loop")
        if it == frame.iteration_count:
            frame.iteration_count += 1
            for enter, invariant in frame.invariants:
                self.propagate(enter, frame, it + 1, [invariant], invariant is DEAD,
                               from_enter=True)
        self.propagate(i, frame, it + 1, [value], False)

    def check_nothing_waits(self, frame):
        """Refuses a finished frame instance in which a node still waits for an input: one
        from another frame that no Enter or Exit brings in (a malformed graph)."""
        for (_, i), record in frame.records.items():
            node = self.nodes[i]
            if node.role != "merge":
                op = node.op
                missing = [t.name for t, value in zip(op.inputs, record[2]) if value is None]
                where = f"while loop frame '{frame.key[-1]}'" if frame.key else "the root frame"
                raise InvalidArgumentError(
                    f"Node '{op.name}' (op: {op.type}) in {where} never received "
                    f"{', '.join(missing) or 'its control inputs'}: a value crosses into or "
                    "out of a while loop only through Enter and Exit nodes.", op=op)

    @staticmethod
    def misplaced(node, what):
        op = node.op
        return InvalidArgumentError(f"Node '{op.name}' (op: {op.type}) is {what}: the graph's "
                                    "control flow is malformed.", op=op)

    def finish_frames(self, frame):
        """Ends every frame instance, from `frame` up, that has nothing left to run: its
        Exits that gave no live value send a dead one to the parent."""
        while (frame.parent is not None and frame.outstanding == 0 and frame.children == 0
               and frame.pending_enters == 0):
            parent = frame.parent
            self.check_nothing_waits(frame)
            del self.frames[frame.key]
            for i in sorted(frame.exits_dead - frame.exits_live):
                self.propagate(i, parent, frame.parent_iter, [DEAD], True)
            parent.children -= 1
            frame = parent
