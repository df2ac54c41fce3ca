"""Which path a conv takes where more than one fits it, chosen on the host by timing them.

How fast the direct micro-kernels run against Winograd depends on the CPU, not only on the
conv: on the AVX-512 machine the fixed rules were set on, the direct kernels ran
x[4,28,28,128] f[3,3,128,128] 2.5x faster than Winograd; on a Zen 4, whose AVX-512 runs in
two 256-bit halves, Winograd ran x[4,56,56,64] f[3,3,64,64] 1.4x faster than them, and
was 3x slower on x[8,16,16,128] f[3,3,128,32]. No fixed size threshold chooses well on
every host.

So where several paths fit a conv of ``TUNE_MIN_MACS`` multiply-adds or more, its first
calls with one signature (the op, operand shapes, padding, dtype) take the candidates in
turn, each for ``WARM_UPS`` untimed calls (its code, buffers and the memory kept for reuse
are still cold: a path of large temporaries ran its first calls 1.5x slower than its later
ones) and then ``TRIALS`` timed ones. In turn, not one candidate's calls after the other's:
a plan's first run maps its memory as it goes (a page first touched costs microseconds on
a virtual machine), and six convs of one signature in that run would time the first
candidate there and the second in warm runs (the direct kernels 3 ms a call, Winograd
1.5, where warm they run 0.5 and 1.2). From then on the fixed rules' choice
runs unless another candidate's best trial was ``MARGIN`` times faster than its best
(noise alone does not move a choice). Every call's result comes from one path, each exact
to the numerics contract, so the trials cost only the slower paths' time. The first calls
take the path the fixed rules would take.

Paths sum in different orders, so with tuning a signature's results can differ in their
last bits between its first calls and between processes. With ``TF_DETERMINISTIC_OPS``
set (TF's switch, "1" or "true") or ``set_enabled(False)``, the fixed rules decide every
call, as they do below ``TUNE_MIN_MACS``.
"""

import os
import threading
import time

TUNE_MIN_MACS = 1 << 24   # multiply-adds below which the fixed rules decide (under ~0.3 ms)
WARM_UPS = 2              # untimed first calls of each candidate
TRIALS = 3                # timed calls of each candidate before the choice is made
MARGIN = 1.2              # how many times faster another candidate must be to be chosen
MAX_SIGNATURES = 4096     # signatures remembered at most (then forgotten, all at once)

_clock = time.perf_counter
_lock = threading.Lock()
_chosen = {}              # signature -> the chosen candidate's name
_timings = {}             # signature -> {candidate name: [seconds of each call]}
_enabled = None           # None: not yet read from the environment


def enabled():
    """Whether tuning is on: unless ``set_enabled(False)`` or ``TF_DETERMINISTIC_OPS``."""
    global _enabled
    if _enabled is None:
        _enabled = os.environ.get("TF_DETERMINISTIC_OPS", "").lower() not in ("1", "true")
    return _enabled


def set_enabled(on):
    """Turns tuning on or off for the process; off forgets what was chosen."""
    global _enabled
    _enabled = bool(on)
    if not _enabled:
        forget()


def forget():
    """Drops every choice and timing made so far."""
    with _lock:
        _chosen.clear()
        _timings.clear()


def choice(signature):
    """The candidate chosen for ``signature`` (None while it is being tuned or never was)."""
    return _chosen.get(_hashable(signature))


def run(signature, macs, candidates):
    """The result of one candidate, a ``(name, compute)`` pair of ``candidates`` (those that
    fit, the fixed rules' own choice first; ``compute()`` returns the result, or None where
    that path gives way to the general ones, as Winograd does on non-finite values): the
    fixed rules' choice when tuning is off, the conv is small or one candidate fits; else
    the chosen one, or while ``signature`` is being tuned the next to try, timed (a None
    counts as never fastest). ``signature``: what the choice is remembered by (the op,
    shapes, window, dtype; lists are read as tuples), made into a key only here, past the
    checks every small conv takes."""
    if len(candidates) == 1 or macs < TUNE_MIN_MACS or not enabled():
        return candidates[0][1]()
    signature = _hashable(signature)
    computes = dict(candidates)
    chosen = _chosen.get(signature)
    if chosen in computes:
        return computes[chosen]()
    names = [name for name, _ in candidates]
    trial = _next_trial(signature, names)
    start = _clock()
    result = computes[trial]()
    _record(signature, trial, float("inf") if result is None else _clock() - start, names)
    return result


def _hashable(part):
    """``part`` with every list or tuple in it (nested) a tuple."""
    return tuple(_hashable(p) for p in part) if isinstance(part, (list, tuple)) else part


def _next_trial(signature, names):
    """The candidate of ``names`` with the fewest calls made for ``signature`` (the first
    of them on a tie), so that they take turns."""
    with _lock:
        tried = _timings.get(signature, {})
        return min(names, key=lambda name: len(tried.get(name, ())))


def _record(signature, name, seconds, names):
    """Adds a call's time; once every candidate of ``names`` (the fixed rules' choice first)
    has its ``WARM_UPS + TRIALS`` calls, chooses by their best trials (other work on the
    machine only ever adds time): the first candidate unless another's is ``MARGIN`` times
    faster."""
    with _lock:
        if signature in _chosen:          # chosen meanwhile, on another thread's trials
            return
        if len(_timings) >= MAX_SIGNATURES and signature not in _timings:
            _chosen.clear()
            _timings.clear()
        tried = _timings.setdefault(signature, {})
        tried.setdefault(name, []).append(seconds)
        if all(len(tried.get(n, ())) >= WARM_UPS + TRIALS for n in names):
            best = {n: min(tried[n][WARM_UPS:]) for n in names}
            fastest = min(names, key=best.get)
            _chosen[signature] = (fastest if best[fastest] * MARGIN < best[names[0]]
                                  else names[0])
