"""A functional While (TF2's loops: Keras' recurrent layers kept as While over TensorLists)
run as one compiled loop program (``loop_programs``) where its condition and body allow.

A While runs its condition and body functions as plans, one call each per iteration.
``FunctionLoop`` lays one pair of them (specialised to the loop variables' shapes) out as
a LoopPlan is laid out: one slot space (the body's slots after the condition's, the
condition reading each loop variable in the body's slot for it), the body's results as the
next iteration's values, and the condition's result as the predicate, so the same
compiler builds its program. Only when every step of both declares what the compiler
compiles (no shape guards: shapes are fixed per signature) does it run; otherwise, and
for a signature that does not compile, the While runs its plans as before.
"""

import copy

import numpy as np

from graphops.runtime import loop_programs
from graphops.runtime.steps import ShapeGuardStep
from graphops.runtime.straight_loops import check_cancelled


class FunctionLoop:
    """The condition plan ``condition`` and body plan ``body`` of a While of ``count``
    loop variables (the body's feeds after them: its hoisted values) as one loop."""

    def __init__(self, condition, body, count):
        self.condition, self.body, self.variables = condition, body, count
        offset = condition.num_slots
        self.places = [slot + offset for slot in body.feed_slots]   # vars, then hoisted
        renamed = dict(zip(condition.feed_slots, self.places))
        self.count = offset + body.num_slots + 1                   # + the merges' index slot
        self.initial = list(condition.constants) + [(slot + offset, value)
                                                    for slot, value in body.constants]
        following = [slot + offset for slot in body.fetch_slots]
        self.merges = [((self.places[k], self.count - 1, 0, 0), k, following[k])
                       for k in range(count)]
        self.exits = [(k, self.places[k]) for k in range(count)]
        self.predicate_slot = renamed.get(condition.fetch_slots[0], condition.fetch_slots[0])
        steps = (_renamed(condition.steps, lambda s: renamed.get(s, s)),
                 _renamed(body.steps, lambda s: s + offset))
        self.steps = tuple(side or [] for side in steps)
        self.compiler = (None if None in steps
                         else loop_programs.LoopCompiler.for_plan(self))

    def start(self, values, hoisted):
        """The slots at a body's start, from the loop variables' and hoisted values."""
        buffer = [None] * self.count
        for slot, value in self.initial:
            buffer[slot] = value
        for slot, value in zip(self.places, list(values) + list(hoisted)):
            buffer[slot] = value
        return buffer

    def run(self, values, hoisted, taken, cancelled):
        """The loop variables' final values from ``values`` at a body's start (the
        condition held), or None where the While must run its plans instead: no program
        for this signature (``LoopCompiler.program``), or the next iteration would run
        other plans than these."""
        if self.compiler is None:
            return None
        buffer = self.start(values, hoisted)     # (recording works on a copy of it)
        program = self.compiler.program(
            buffer, lambda slots: taken(slots[self.predicate_slot]),
            lambda slots: self._same_plans([slots[p] for p in self.places[:self.variables]],
                                           hoisted))
        if program is None:
            return None
        results = program.run(buffer, lambda: check_cancelled(cancelled))
        return None if results is None else [value for _, value in results]

    def _same_plans(self, values, hoisted):
        """Whether loop variables ``values`` run this loop's plans."""
        return (self.condition.for_shapes(values) is self.condition and
                self.body.for_shapes(values + list(hoisted)) is self.body)


def _renamed(steps, rename):
    """Copies of a plan's steps over renamed slots, without their frees (a loop keeps
    its values to the next iteration) or shape guards; None if a step is of another
    kind than a kernel's."""
    renamed = []
    for step in steps:
        if isinstance(step, ShapeGuardStep):
            continue
        if not hasattr(step, "ins"):
            return None
        clone = copy.copy(step)
        clone.ins = tuple(rename(s) for s in step.ins)
        clone.outs = tuple((k, rename(s)) for k, s in step.outs)
        clone.frees = ()
        renamed.append(clone)
    return renamed


def numpy_values(values):
    """Whether every value is a host (NumPy) array, as a compiled loop reads them."""
    return all(type(value) is np.ndarray for value in values)
