"""A loop run as straight-line code (``straight_loops``: a TF1 loop frame, a functional
While's plans) whose body and condition are all steps the compiled loop machine can run
(``compiled.loop_program``; an LSTM or GRU cell: products, Splits and slices, elementwise
clusters, TensorList reads and writes, integer counters) runs from its first body on in
one compiled call.

Per signature of the values the program reads from outside (their dtypes and shapes, a
list's length, a static operand's value), the first run records one iteration step by
step on a copy of the slots (the body, then the next condition), checks that the loop
variables kept their shapes, and builds the program from what each step read and gave
(``loop_program_builder``); runs with that signature then load those values into the
arena, run the program, and unload the Exits' values. A signature that cannot compile is
remembered, and its loop runs step by step. The program stops every ``ITERATIONS``
iterations so that a closed Session stops the loop. Where a list index is out of range or
an unset element is read, the whole loop runs again step by step, whose kernels then raise
the error or give TF's value.
"""

import collections

import numpy as np

from graphops.kernels.compiled import loops, usable
from graphops.kernels.compiled.constants import (LOOP_DONE, LOOP_LIST_PUSH, LOOP_MORE,
                                                 LOOP_WIDTH as WIDTH)
from graphops.kernels.support.tensor_list import TensorList, as_variant, new_list
from graphops.registry import memory
from graphops.runtime.loop_program_builder import (Block, Builder, NotCompilable, Register,
                                                   integer_arithmetic)
from graphops.runtime.fusion import Chain
from graphops.runtime.steps import ClusterStep

ITERATIONS = 256          # iterations a compiled call runs before the loop checks for
#                           cancellation
SIGNATURES = 8            # shape signatures a loop keeps its programs (or refusals) for
ROOM, GROWTH = 16, 4      # a list's room for pushes at first, and its growth where short
_UNSEEN = object()


def _declares(step):
    """Whether the builder compiles the step: a cluster, a fused chain, a kernel that
    declares what the builder reads, or shape arithmetic."""
    kernel = getattr(step, "kernel", None)
    return isinstance(step, ClusterStep) or isinstance(kernel, Chain) or any(
        getattr(kernel, name, None)
        for name in ("matmul", "list_access", "moves_data", "scalar_op", "elementwise",
                     "reduction", "reads_shape_only")) or (
        kernel is not None and integer_arithmetic(step))


class LoopCompiler:
    """The programs of one LoopPlan, per signature; ``for_plan`` gives None where some
    step of the loop never compiles (no kernel declaration the builder reads)."""

    def __init__(self, plan):
        condition, body = plan.steps
        self.plan, self.body, self.condition = plan, list(body), list(condition)
        self.written = {slot for step in self.body + self.condition for _, slot in step.outs}
        read = {slot for step in self.body + self.condition for slot in step.reads()}
        for (slot, _, _, _), _, following in plan.merges:
            read.update((slot, following))
        self.inputs = sorted(read - self.written)
        self.varying = self.written | {slot for (slot, _, _, _), _, _ in plan.merges}
        self.pushes = any(getattr(step.kernel, "list_access", None) == "push"
                          for step in self.body + self.condition)
        self.programs = {}

    @classmethod
    def for_plan(cls, plan):
        steps = plan.steps[0] + plan.steps[1]
        index_slots = {index for (_, index, _, _), _, _ in plan.merges}
        if not all(_declares(step) for step in steps) or \
                any(index_slots.intersection(step.reads()) for step in steps):
            return None
        return cls(plan)

    def readers(self):
        """How many times the program reads each slot (steps, the loop variables' update,
        the exits, the predicate)."""
        readers = collections.Counter(slot for step in self.body + self.condition
                                      for slot in step.ins)
        readers.update(following for _, _, following in self.plan.merges)
        readers.update(slot for _, slot in self.plan.exits)
        readers[self.plan.predicate_slot] += 1
        return readers

    def signature(self, values, lengths=True):
        """What a program depends on in ``values`` (a list's length only for ``lengths``:
        pushes change it from one iteration to the next)."""
        return tuple(_signature(values[slot], lengths) for slot in self.inputs)

    def program(self, values, taken, fits=None):
        """The program for ``values`` (the slots at a body's start), or None: the loop
        runs step by step. On a signature's first sight one iteration is recorded on a
        copy of the slots (the body, the loop variables' update, the next condition; every
        step is stateless), and the program built from it where the condition holds again
        (``taken(slots)``; a loop that ended after one iteration builds nothing yet), the
        signature held (but for lists' lengths) and ``fits(slots)``."""
        key = self.signature(values)
        program = self.programs.get(key, _UNSEEN)
        if program is not _UNSEEN:
            while program is not None and type(program.larger) is Program:
                program = self.programs[key] = program.larger
            return program
        seen, slots = {}, list(values)
        record(self.body, slots, seen)
        advance(self.plan.merges, slots)
        record(self.condition, slots, seen)
        if not taken(slots):
            return None
        if usable() and self.signature(slots, False) == self.signature(values, False) \
                and (fits is None or fits(slots)):
            for slot in self.inputs:              # a loop variable no step reads, say
                seen.setdefault(slot, slots[slot])
            try:
                program = Program(self, seen)
            except NotCompilable:
                program = None
        else:
            program = None
        if len(self.programs) >= SIGNATURES:
            self.programs.clear()
        self.programs[key] = program
        return program


def advance(merges, values):
    """Puts each loop variable's next value (its NextIteration's) in its slot, and 1 in
    its Merge's index slot (``merges`` as a StraightLoop holds them)."""
    following = [values[slot] for _, _, slot in merges]
    for ((slot, index_slot, _, later), _, _), value in zip(merges, following):
        values[slot], values[index_slot] = value, later


def record(steps, values, seen):
    """Runs ``steps`` on ``values``, noting in ``seen`` each slot's value as read or given."""
    for step in steps:
        for slot in step.reads():
            seen.setdefault(slot, values[slot])
        step(values)
        for _, slot in step.outs:
            seen.setdefault(slot, values[slot])


def _signature(value, lengths):
    if type(value) is not np.ndarray:
        return (type(value),)
    if value.dtype == object:
        item = value[()] if value.ndim == 0 else None
        if isinstance(item, TensorList):
            return ("list", len(item) if lengths else None, item.element_dtype)
        return (object,)
    if value.ndim and value.dtype.kind in "iub":
        return (value.dtype, value.shape, value.tobytes())
    return (value.dtype, value.shape)


class Program:
    """One loop's compiled iteration for one signature: ``run(values, cancelled)``."""

    def __init__(self, compiler, seen, room=ROOM):
        dtypes = {v.dtype for v in seen.values()
                  if type(v) is np.ndarray and v.dtype.kind == "f"}
        if len(dtypes) > 1 or not dtypes <= {np.dtype(np.float32), np.dtype(np.float64)}:
            raise NotCompilable
        plan = compiler.plan
        builder = Builder(seen, compiler.written, compiler.varying, compiler.readers(),
                          dtypes.pop() if dtypes else np.float32,
                          room if compiler.pushes else 0)
        builder.lower(compiler.body)
        builder.update(plan.merges)
        builder.lower(compiler.condition)
        predicate = builder.value(plan.predicate_slot)
        if type(predicate) is not Register:
            raise NotCompilable
        if builder.arena * builder.dtype.itemsize > memory.get_memory_budget():
            raise NotCompilable
        self.exits = [(i, builder.layout.get(slot, slot)) for i, slot in plan.exits]
        self.loads, self.predicate, self.dtype = builder.loads, predicate.index, builder.dtype
        self.statics, self.constants = builder.statics, builder.constants
        self.code = np.array(builder.code, np.int64).reshape(-1, WIDTH)
        self.plans = (np.concatenate(builder.plans) if builder.plans
                      else np.zeros(1, np.int64))
        self.arena, self.ints, self.registers = builder.arena, builder.ints, builder.registers
        self.compiler, self.seen, self.room, self.full = compiler, seen, room, builder.full
        self.larger = _UNSEEN            # the program with more room for pushes, or None

    def run(self, values, check_cancelled):
        """The Exits' [(node, value)] after the loop runs to its end from ``values`` (at
        the start of a body); None where the loop must run step by step instead: a scalar
        static operand fed anew, a list element of another shape, a list index out of
        range, an unset element read, a push past a list's bound, a process forked after
        numba was loaded. ``check_cancelled()`` raises when the run was cancelled."""
        if not usable() or not all(np.array_equal(values[slot], value)
                                   for slot, value in self.statics):
            return None
        arena = np.zeros(max(self.arena, 1), self.dtype)
        ints = np.zeros(max(self.ints, 1), np.int64)
        for where, value in self.constants:
            _load(value, where, arena, ints)
        for slot, where in self.loads:
            if not _load(values[slot], where, arena, ints):
                return None
        machine = loops("loop_program", single=True)
        while True:
            status = machine.run(self.code, self.predicate, ITERATIONS, arena, ints,
                                 self.plans, self.registers)
            if status == LOOP_DONE:
                break
            if status != LOOP_MORE:
                return self._with_more_room(status, values, check_cancelled)
            check_cancelled()
        return [(i, values[where] if type(where) is int else _unload(where, arena, ints))
                for i, where in self.exits]

    def _with_more_room(self, status, values, check_cancelled):
        """The run again, by a program with ``GROWTH`` times the room for pushes where
        instruction ``status`` was a push that found none left; else None."""
        if self.code[status, 0] != LOOP_LIST_PUSH or status in self.full:
            return None
        if self.larger is _UNSEEN:
            try:
                self.larger = Program(self.compiler, self.seen, self.room * GROWTH)
            except NotCompilable:
                self.larger = None
        return None if self.larger is None else self.larger.run(values, check_cancelled)


def _load(value, where, arena, ints):
    """Puts ``value`` where the program reads it; False where a list holds an element
    the program cannot hold."""
    if type(where) is Block:
        arena[where.offset:where.offset + where.rows * where.cols] = value.reshape(-1)
    elif type(where) is Register:
        ints[where.index] = value
    else:
        tensors = value[()].tensors
        items = arena[where.offset:where.offset + where.capacity * where.size].reshape(
            where.capacity, where.size)
        ints[where.count] = len(tensors)
        for i, item in enumerate(tensors):
            if item is None:
                continue
            if type(item) is not np.ndarray or item.shape != where.shape or \
                    item.dtype != arena.dtype:
                return False
            items[i] = item.reshape(-1)
            ints[where.mask + i] = 1
    return True


def _unload(where, arena, ints):
    """The value the program left ``where``, as the kernels would give it."""
    if type(where) is Register:
        return np.array(ints[where.index], where.dtype)
    if type(where) is Block:
        start = where.offset
        rows = np.lib.stride_tricks.as_strided(
            arena[start:], (where.rows, where.cols),
            (where.stride * arena.itemsize, arena.itemsize))
        return rows.reshape(where.shape).copy()
    length = int(ints[where.count])
    items = arena[where.offset:where.offset + length * where.size].reshape(
        (length,) + where.shape).copy()
    mask = ints[where.mask:where.mask + length]
    element_dtype, element_shape, bound = where.fields
    return as_variant(new_list(element_dtype, element_shape,
                               [items[i] if mask[i] else None for i in range(length)], bound))
