"""TF1 while loops run as straight-line code, one iteration at a time (LoopPlan), and a
whole plan whose root frame has loops alone as straight-line code (RootPlan).

The frame executor (frame_executor.py) runs a graph with TF1 control flow by dataflow, node
by node. Most loops (every lowered `tf.while_loop`, Keras' recurrent layers frozen by TF)
have a fixed shape, though: Enters feed Merges, which feed the condition and Switches on
its one predicate; a Switch's true side feeds the body, its false side an Exit; the body
ends in NextIterations that feed the Merges back; invariants come in through constant
Enters, and nothing else enters or leaves. Such a loop, without a nested loop or cond,
runs here once all its Enters have given live values: per iteration, the condition's nodes
in order, then (the predicate true) the body's nodes, else the Exits' values leave. No node
is ever dead in it (the last iteration's body, dead in the dataflow, is simply not run),
so the dataflow's results, errors (naming the node) and side effects are kept, in one of
the orders the dataflow could take. `LoopPlan.analyse` returns None for any other frame.

Identity nodes share their input's value, NoOps only order (the order is fixed), and a
Const gives the value computed when the frame plan was built. A stateless node computing on
values the same in every iteration (constant Enters, Consts, such nodes' values) and
waiting for no step of the iteration (a GRU's split bias) runs once, before its side first
runs. Values live in numbered slots; the steps are the executor's (`steps.KernelStep`s,
each reading its inputs' slots and writing its outputs'), and a loop's elementwise
clusters run as one `steps.ClusterStep` each (`loop_clusters`).
"""

import numpy as np

from graphops.runtime import devices, loop_clusters, loop_programs
from graphops.runtime.constant_folding import hoistable
from graphops.runtime.steps import kernel_step, raise_node_error
from graphops.runtime.straight_loops import StraightLoop, check_cancelled, run_steps

_COND, _BODY = 0, 1        # a node runs in every iteration / only when the predicate holds


class _NotStatic(Exception):
    """The frame is not of the fixed shape: the dataflow runs it."""


class _Slots:
    """Numbered slots for the values of a plan's nodes, and the steps that fill them."""

    def __init__(self, nodes, sources, controls):
        self.nodes, self.sources, self.controls = nodes, sources, controls
        self.slot, self.count = {}, 0      # (node, output) -> its slot
        self.initial = []                  # (slot, value) set before the run

    def _new_slot(self):
        self.count += 1
        return self.count - 1

    def _lay_out_kernel(self, i, node, ins, steps):
        """Node `i` of inputs in slots `ins`: its input's slot for an Identity, its values
        for a Const (none for a NoOp), else a kernel step appended to `steps` (what the
        frame executor's `_shortcut` found)."""
        if node.forwards:
            self.slot[(i, 0)] = ins[0]
            return
        outs = tuple((k, self._new_slot()) for k in range(len(node.consumers)))
        self.slot.update(((i, k), slot) for k, slot in outs)
        if node.outputs is not None:         # computed when the graph was planned
            self.initial.extend((slot, node.outputs[k]) for k, slot in outs)
            return
        steps.append(kernel_step(node.kernel, node.construction, node.op, node.device,
                                 tuple(ins), outs))


class LoopPlan(_Slots, StraightLoop):
    """One loop frame as slots and straight-line steps; `run(entered, cancelled)`."""

    def __init__(self, nodes, sources, controls, frame_name):
        super().__init__(nodes, sources, controls)
        self.enters = [i for i, node in enumerate(nodes)
                       if node.role == "enter" and node.frame_name == frame_name]
        self.members = self._members()
        self.side = {}
        self.constant_enters, self.merges, self.switches, self.exits = [], [], [], []
        self.steps = ([], [])              # the condition's steps, the body's
        self.hoisted = ([], [])            # the steps run once, before a side's first run
        self.invariant = set()             # nodes whose values are the same every iteration
        self.settled = set()               # nodes that wait for no step of the iteration
        self.pred = None                   # (node, output) the Switches all test

    @classmethod
    def analyse(cls, nodes, sources, controls, frame_name, fetched):
        """The plan of loop frame `frame_name`, or None when the dataflow must run it.
        `sources[i]`: per data input of node i its (node, output), None when fed;
        `controls[i]`: the nodes whose control edges node i waits for; `fetched`: the
        nodes with a fetched output (an Exit's is the parent frame's)."""
        try:
            plan = cls(nodes, sources, controls, frame_name)
            if not plan.enters or any(nodes[i].role != "exit" for i in plan.members & fetched):
                return None         # a value inside the loop is fetched
            plan._lay_out()
        except _NotStatic:
            return None
        return plan

    # -------------------------------------------------------------- analysis

    def _members(self):
        """The nodes of the frame: reached from its Enters, up to its Exits."""
        members, stack = set(), list(self.enters)
        while stack:
            node = self.nodes[stack.pop()]
            for dst in [d for edges in node.consumers for d, _ in edges] + \
                    list(node.control_consumers):
                if dst in members:
                    continue
                role = self.nodes[dst].role
                if role in ("enter", "control_trigger"):   # a nested loop; a trigger
                    raise _NotStatic
                members.add(dst)
                if role != "exit":
                    stack.append(dst)
        return members

    def _lay_out(self):
        """Walks the members in the graph's order: each node's side and slots, the steps;
        raises _NotStatic where the frame is not of the fixed shape."""
        inside = self.members | set(self.enters)
        self.settled.update(self.enters)
        for i in self.enters:
            node = self.nodes[i]
            targets = {self.nodes[d].role for edges in node.consumers for d, _ in edges}
            if node.is_constant:
                if "merge" in targets:
                    raise _NotStatic
                self.slot[(i, 0)] = self._new_slot()
                self.constant_enters.append((i, self.slot[(i, 0)]))
                self.invariant.add(i)
            elif targets != {"merge"} or node.control_consumers:
                raise _NotStatic         # a loop variable reaches its Merges alone
        for i in sorted(self.members):
            node = self.nodes[i]
            if (not node.on_host or node.deref_in or node.device.type.activate is not None
                    or any(s is None or s[0] not in inside for s in self.sources[i])
                    or any(c not in inside for c in self.controls[i])
                    or any(t.dtype.is_ref for t in node.op.inputs)
                    or any(t.dtype.is_ref for t in node.op.outputs)):
                raise _NotStatic
            getattr(self, "_lay_out_" + (node.role or "plain"))(i, node)
        if not self.merges or not self.switches or \
                len({n for _, _, n in self.merges}) != len(self.merges) or \
                self._reenters():
            raise _NotStatic
        self.merges = [(m, enter, self.slot[(n, 0)]) for m, enter, n in self.merges]
        self.steps = tuple(loop_clusters.clustered(self, steps) for steps in self.steps)
        self.predicate_slot = self.slot[self.pred]
        self.compiler = loop_programs.LoopCompiler.for_plan(self)

    def _reenters(self):
        """Whether a value that left the loop comes back in by one of its Enters (the
        dataflow then runs part of the loop before that Enter fires); not through an
        enclosing loop's next iteration, which enters a new instance of the loop."""
        seen, stack = set(), [i for i, _ in self.exits]
        while stack:
            node = self.nodes[stack.pop()]
            if node.role == "next_iteration":
                continue
            for dst in [d for edges in node.consumers for d, _ in edges] + \
                    list(node.control_consumers):
                if dst not in seen:
                    seen.add(dst)
                    stack.append(dst)
        return not seen.isdisjoint(self.enters)

    def _side_of(self, i, control=False):
        """The side a consumer of node `i` (by a control edge: `control`) is on."""
        node = self.nodes[i]
        if node.role == "switch":
            return _COND if control else None
        if node.role in ("next_iteration", "exit") or \
                (node.role == "enter" and not node.is_constant):
            raise _NotStatic
        return self.side.get(i, _COND)

    def _inputs_side(self, i):
        sides = [self._side_of(c, True) for c in self.controls[i]]
        for src, k in self.sources[i]:
            side = self._side_of(src)
            if side is None:             # a Switch's output: its true side is the body
                if k != 1:
                    raise _NotStatic
                side = _BODY
            sides.append(side)
        return max(sides, default=_COND)

    def _lay_out_plain(self, i, node):
        side = self.side[i] = self._inputs_side(i)
        invariant = all(s in self.invariant for s, _ in self.sources[i])
        settled = all(s in self.settled
                      for s in [s for s, _ in self.sources[i]] + list(self.controls[i]))
        step = not node.forwards and node.outputs is None
        hoisted = step and invariant and settled and hoistable(node.op)
        if hoisted or not step:          # its value is there before any step runs
            if invariant:
                self.invariant.add(i)
            if settled:
                self.settled.add(i)
        self._lay_out_kernel(i, node, [self.slot[s] for s in self.sources[i]],
                             (self.hoisted if hoisted else self.steps)[side])

    def _lay_out_merge(self, i, node):
        """A loop's Merge: its Enter at iteration 0, its NextIteration after."""
        sources = self.sources[i]
        roles = [self.nodes[src].role for src, _ in sources]
        if self.controls[i] or sorted(roles) != ["enter", "next_iteration"]:
            raise _NotStatic
        first = roles.index("enter")
        self.slot[(i, 0)], self.slot[(i, 1)] = self._new_slot(), self._new_slot()
        self.settled.add(i)
        self.merges.append(((self.slot[(i, 0)], self.slot[(i, 1)],
                             np.array(first, np.int32), np.array(1 - first, np.int32)),
                            sources[first][0], sources[1 - first][0]))

    def _lay_out_switch(self, i, node):
        (data, pred) = self.sources[i]
        if self.pred not in (None, pred) or self._inputs_side(i) != _COND:
            raise _NotStatic
        self.pred = pred
        self.settled.add(i)
        self.slot[(i, 0)] = self.slot[(i, 1)] = self.slot[data]
        self.switches.append((i, node))
        if any(self.nodes[d].role != "exit" for d, _ in node.consumers[0]):
            raise _NotStatic             # the false side leaves the loop, nothing else

    def _lay_out_exit(self, i, node):
        (src, k), = self.sources[i]
        if self.nodes[src].role != "switch" or k != 0 or self.controls[i]:
            raise _NotStatic
        self.exits.append((i, self.slot[(src, 0)]))

    def _lay_out_next_iteration(self, i, node):
        if self._inputs_side(i) != _BODY or node.control_consumers or \
                any(self.nodes[d].role != "merge" for d, _ in node.consumers[0]):
            raise _NotStatic
        self.slot[(i, 0)] = self.slot[self.sources[i][0]]

    # -------------------------------------------------------------- running

    def _taken(self, values):
        """Whether the predicate holds (as the first Switch reads it)."""
        i, switch = self.switches[0]
        pred = values[self.slot[self.pred]]
        try:
            return switch.kernel.taken(devices.to_host(pred)) == 1
        except Exception as exc:
            data = values[self.slot[self.sources[i][0]]]
            raise_node_error(exc, switch.op, switch.device, [data, pred])


class RootPlan(_Slots):
    """A whole frame plan as straight-line code, when its root frame has no control flow of
    its own (no Switch, Merge, NextIteration, control trigger) and every loop is a LoopPlan:
    no value is then ever dead, and the root's nodes run in the graph's order, each loop as
    one step after its Enters' inputs and before its Exits' readers. `feed_slots` and
    `fetch_slots` say where the feeds go and the fetches come from."""

    def __init__(self, nodes, sources, controls, loops):
        super().__init__(nodes, sources, controls)
        self.loop_of = {i: loop for loop in loops for i in loop.members}
        self.fed = {}          # (node, input) -> the slot of the feed it reads
        self.segments = []     # (kernel steps, then a LoopPlan or None, its Enters' slots,
        #                        its Exits' slots)
        self.feed_slots, self.fetch_slots = [], []

    @classmethod
    def analyse(cls, nodes, sources, controls, loops, feed_consumers, fetches):
        """The plan, or None when the dataflow must run it. `loops`: {frame name: LoopPlan
        or None}; `feed_consumers`: per feed its (node, input) pairs; `fetches`: (node,
        output) pairs (node None: a fed tensor)."""
        if any(loop is None for loop in loops.values()) or \
                not all(node.as_given for node in nodes):
            return None
        plan = cls(nodes, sources, controls, list(loops.values()))
        try:
            plan._lay_out(feed_consumers, fetches)
        except _NotStatic:
            return None
        return plan

    def _unit_of(self, i):
        """What node `i`'s readers in the root wait for: the node, or the loop it leaves."""
        loop = self.loop_of.get(i)
        if loop is None:
            return i
        if self.nodes[i].role != "exit":
            raise _NotStatic             # a value crosses out of a loop but by an Exit
        return loop

    def _order(self):
        """The root's nodes and the loops in a topological order (the graph's, where free)."""
        import networkx as nx   # lazily: `import graphops` stays fast

        units = [i for i in range(len(self.nodes)) if i not in self.loop_of]
        units += list(dict.fromkeys(self.loop_of.values()))
        key = {u: (min(u.members) if isinstance(u, LoopPlan) else u) for u in units}
        graph = nx.DiGraph()
        graph.add_nodes_from(units)
        for unit in units:
            if isinstance(unit, LoopPlan):
                needs = set(unit.enters)
            else:
                role = self.nodes[unit].role
                if role not in (None, "enter"):
                    raise _NotStatic
                needs = {self._unit_of(s[0]) for s in self.sources[unit] if s is not None}
                needs |= {self._unit_of(c) for c in self.controls[unit]}
            if not needs <= key.keys():
                raise _NotStatic
            graph.add_edges_from((need, unit) for need in needs)
        try:                                            # keys differ: no ties
            return list(nx.lexicographical_topological_sort(graph, key=key.get))
        except nx.NetworkXUnfeasible:
            raise _NotStatic from None     # an Exit's value feeds its own loop

    def _lay_out(self, feed_consumers, fetches):
        for consumers in feed_consumers:
            self.feed_slots.append(self._new_slot())
            self.fed.update((edge, self.feed_slots[-1]) for edge in consumers)
        steps = []
        for unit in self._order():
            if isinstance(unit, LoopPlan):
                exits = [self._new_slot() for _ in unit.exits]
                self.slot.update(((i, 0), slot) for (i, _), slot in zip(unit.exits, exits))
                self.segments.append((steps, unit, [(i, self.slot[(i, 0)])
                                                    for i in unit.enters], exits))
                steps = []
            else:
                self._lay_out_node(unit, steps)
        self.segments.append((steps, None, (), ()))
        for i, k in fetches:
            if i is not None and ((i, k) not in self.slot or self.nodes[i].role == "enter"):
                raise _NotStatic         # a fetch from inside a loop
            self.fetch_slots.append(None if i is None else self.slot[(i, k)])
        self._schedule_frees()

    def _schedule_frees(self):
        """Has each step drop the values it is the last to read (or that nothing reads),
        as the dataflow drops them, so that a run holds no more memory than it did; a
        loop's Enters' values are dropped with the loop's."""
        last = {}                        # slot -> (segment, step) that last needs it
        for n, (steps, _, enters, exits) in enumerate(self.segments):
            for j, step in enumerate(steps):
                last.update((slot, (n, j)) for _, slot in step.outs)
                last.update((slot, (n, j)) for slot in step.reads())
            last.update((slot, (n, len(steps))) for slot in exits)
            last.update((slot, (n, len(steps))) for _, slot in enters)
        kept = set(self.fetch_slots)
        frees = {}
        for slot, where in last.items():
            if slot not in kept:
                frees.setdefault(where, []).append(slot)
        for n, (steps, _, _, _) in enumerate(self.segments):
            for j, step in enumerate(steps):
                step.frees = tuple(frees.get((n, j), ()))
        self.segments = [(steps, loop, enters, exits, tuple(frees.get((n, len(steps)), ())))
                         for n, (steps, loop, enters, exits) in enumerate(self.segments)]

    def _lay_out_node(self, i, steps):
        ins = [self.fed[(i, j)] if s is None else self.slot[s]
               for j, s in enumerate(self.sources[i])]
        if self.nodes[i].role == "enter":      # its loop reads its input's slot
            self.slot[(i, 0)] = ins[0]
        else:
            self._lay_out_kernel(i, self.nodes[i], ins, steps)

    def run(self, feeds, cancelled):
        """The slots' values after a run from `feeds` [(slot, value)]."""
        values = [None] * self.count
        for slot, value in self.initial:
            values[slot] = value
        for slot, value in feeds:
            values[slot] = value
        for steps, loop, enters, exits, frees in self.segments:
            check_cancelled(cancelled)
            run_steps(steps, values)
            if loop is not None:
                results = loop.run({i: values[slot] for i, slot in enters}, cancelled)
                for (_, value), slot in zip(results, exits):
                    values[slot] = value
                for slot in frees:
                    values[slot] = None
        return values
