"""Strided input gradients as stride-1 convs, one per phase of dx (the polyphase split
of a transposed conv).

The input gradient of a conv with stride ``s`` adds ``dy[q] @ w[k].T`` into
``dx[q*s + k*d - before]``. The positions of dx with ``p % s == r`` (phase ``r``) are
reached by the kernel offsets ``k`` with ``(r + before - k*d) % s == 0`` alone, each from
``dy[m + (r + before - k*d) // s]`` for ``p = r + s*m``: per phase, a stride-1 forward conv
of dy with those offsets of the filter, flipped and transposed. No term of the direct sum
is skipped or added twice, and every position of dx is written once, so the phases are
small dense convs that the stride-1 paths (the few-channel direct loops above all) run at
full speed, where the scatter paths move a few channels at a time. The phases' windows
reach into dy's zero padding, so a non-finite filter would meet zeros there (the caller
keeps those filters off this path).
"""

import itertools
import math

import numpy as np


def phase_plans(k, s, d, before):
    """Per phase ``r`` of one spatial dim of dx: ``(r, taps, dilation, lo)``, ``taps`` the
    kernel offsets reaching it (a ``range``, maybe empty) and the phase's stride-1 conv
    reading ``dy[m + lo + j*dilation]`` with offset ``taps[-1 - j]`` for its output ``m``."""
    g = math.gcd(d, s)
    plans = []
    for r in range(s):
        first = next((t for t in range(min(k, s // g)) if (r + before - t * d) % s == 0), k)
        taps = range(first, k, s // g)
        lo = (r + before - taps[-1] * d) // s if taps else 0
        plans.append((r, taps, d // g, lo))
    return plans


def backprop_input_by_phases(dyc, w, in_shape, strides, dilations, pads, forward_into):
    """The input gradient ``[N, *I, C]`` of channels-last ``dyc`` ``[N, *Q, O]`` and the
    filter ``w`` ``[*K, C, O]``: per phase of dx, ``forward_into(dx_phase, dy_window,
    w_phase, dilations, pads)`` (a stride-1 channels-last forward conv written into the
    phase's strided view of dx, see ``dense._forward_into``). Phases that no offset
    reaches, or that read padding alone, are zero."""
    kernel = w.shape[:-2]
    dx = np.empty(in_shape, dyc.dtype)
    dims = [phase_plans(k, s, d, b) for k, s, d, (b, _) in zip(kernel, strides, dilations, pads)]
    for plan in itertools.product(*dims):
        target = dx[(slice(None),) + tuple(slice(r, None, s) for (r, *_), s
                                           in zip(plan, strides))]
        if 0 in target.shape:
            continue
        window, sub_pads = [slice(None)], []
        for (_, taps, dil, lo), count, q in zip(plan, target.shape[1:-1], dyc.shape[1:-1]):
            hi = lo + count - 1 + (len(taps) - 1) * dil        # last dy position read
            window.append(slice(max(lo, 0), min(hi, q - 1) + 1))
            sub_pads.append((max(-lo, 0), max(hi - (q - 1), 0)))
        if not all(taps for _, taps, _, _ in plan) or any(
                part.stop <= part.start for part in window[1:]):
            target[...] = 0                  # no offset reaches it, or it reads padding alone
            continue
        flip = tuple(slice(t.start + (len(t) - 1) * t.step, None if t.start == 0
                           else t.start - 1, -t.step) for _, t, _, _ in plan)
        w_phase = np.ascontiguousarray(np.swapaxes(w[flip], -1, -2))   # [*J, O, C]
        forward_into(target, dyc[tuple(window)], w_phase, [p[2] for p in plan], sub_pads)
    return dx
