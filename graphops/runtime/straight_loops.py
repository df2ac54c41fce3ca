"""A loop run as straight-line code, one iteration at a time: a TF1 loop frame
(frame_loops.LoopPlan) or a functional While's condition and body (function_loops).

A StraightLoop holds numbered slots (``count``; ``initial``: (slot, value) set before a
run), its steps per side (``steps``: the condition's, the body's; ``hoisted``: those run
once, before a side first runs), its loop variables (``merges``: ((slot, index slot, first,
later), key of the entered value, slot of the next iteration's value)), its invariants
(``constant_enters``: (key, slot)), ``exits`` ((key, slot) of the values it gives),
``predicate_slot`` and ``compiler`` (``loop_programs.LoopCompiler`` or None), and says by
``_taken(values)`` whether an iteration's predicate holds.
"""

from graphops.registry.errors import CancelledError
from graphops.runtime import loop_programs

CANCELLED = "The Session was closed while this run was in progress."


class StraightLoop:
    """Runs a loop laid out as the module docstring says: `run(entered, cancelled)`."""

    def run(self, entered, cancelled, compiled=True):
        """Runs the loop to its end from the entered values ({key: value}) and returns its
        exits' [(key, value)]; from its first body on in one compiled program where the
        loop has one (``compiler.program``), unless not `compiled`."""
        values = self._start(entered)
        condition, body = self.steps
        run_steps(self.hoisted[0], values)
        first = True
        while True:
            check_cancelled(cancelled)
            run_steps(condition, values)
            if not self._taken(values):
                return [(i, values[slot]) for i, slot in self.exits]
            if first:
                first = False
                run_steps(self.hoisted[1], values)
                program = (self.compiler.program(values, self._taken)
                           if compiled and self.compiler is not None else None)
                if program is not None:
                    results = program.run(values, lambda: check_cancelled(cancelled))
                    return results if results is not None else \
                        self.run(entered, cancelled, compiled=False)
            run_steps(body, values)
            loop_programs.advance(self.merges, values)

    def _start(self, entered):
        """The slots' values before the loop's first condition."""
        values = [None] * self.count
        for slot, value in self.initial:
            values[slot] = value
        for i, slot in self.constant_enters:
            values[slot] = entered[i]
        for (slot, index_slot, first, _), enter, _ in self.merges:
            values[slot], values[index_slot] = entered[enter], first
        return values


def run_steps(steps, values):
    """Runs steps in order on `values` (the slots)."""
    for step in steps:
        step(values)


def check_cancelled(cancelled):
    if cancelled is not None and cancelled():
        raise CancelledError(CANCELLED)
