"""Dilated stride-1 convs as undilated convs of their dilation phases (the space-to-batch
form of atrous convs), so that Winograd takes them.

With dilation ``d`` and padding ``before`` a multiple of ``d`` in a dim, output position
``r + d*m`` reads input positions ``r + d*(m - before/d + k)`` alone: the phase ``r`` of
the output is the undilated conv of the input's phase ``r`` (every ``d``-th position from
``r``) with padding ``before/d``. Each phase of every dim is an image of its own, all of
them one batch (``split``); the phases' outputs go back into place (``merge``). The
filter gradient sums over the phases' images as it sums over a batch. Every product of
the dilated conv is made once, with the same operands, so only the summation order of the
path that runs the phases can differ.
"""

import math

import numpy as np

from graphops.kernels.compiled import loops

COMPILED_MIN_SIZE = 1 << 16   # values from which the compiled moves take over from NumPy's


def applies(sizes, strides, dilations, pads):
    """Whether a conv over an input of spatial ``sizes`` (for the input gradient, dx's)
    runs as its phases: stride 1, a dilation above 1 in some dim, and in every dim the size
    and both paddings multiples of its dilation (the output's size then is one too)."""
    return (set(strides) == {1} and max(dilations) > 1
            and all(s % d == 0 and b % d == 0 and a % d == 0
                    for s, d, (b, a) in zip(sizes, dilations, pads)))


def phase_shape(shape, dilations):
    """``[N, *S, C]``'s phases' shape: ``[N * prod(D), *S/D, C]``."""
    return (shape[0] * math.prod(dilations),
            *(s // d for s, d in zip(shape[1:-1], dilations)), shape[-1])


def phase_pads(pads, dilations):
    """The phases' padding: ``pads`` over the dilations."""
    return tuple((b // d, a // d) for (b, a), d in zip(pads, dilations))


def split(x, dilations):
    """Channels-last ``x`` ``[N, *S, C]`` as its dilation phases ``[N * prod(D), *S/D, C]``:
    phase ``(r1, ...)`` of image n at ``(r1*D2 + r2)...*N + n``, holding ``x[n, r1 +
    D1*m1, ...]``."""
    out = np.empty(phase_shape(x.shape, dilations), x.dtype)
    _move(np.ascontiguousarray(x), out, dilations, True)
    return out


def merge(phased, dilations, n):
    """The inverse of ``split`` for ``n`` images: ``[n, *S, C]`` from its phases."""
    sizes = tuple(s * d for s, d in zip(phased.shape[1:-1], dilations))
    out = np.empty((n, *sizes, phased.shape[-1]), phased.dtype)
    _move(out, np.ascontiguousarray(phased), dilations, False)
    return out


def _move(full, phased, dilations, to_phases):
    """Copies ``full`` into ``phased`` (``to_phases``) or back, by the compiled loop over
    three spatial dims where the operands are large float32 or float64 arrays, else through
    a NumPy view of the phases as axes."""
    rank = full.ndim - 2
    if full.size >= COMPILED_MIN_SIZE and full.dtype in (np.float32, np.float64):
        lead = (1,) * (3 - rank)
        loops("conv", chunk=1).dilation_phases(
            full.reshape(full.shape[0], *lead, *full.shape[1:]),
            phased.reshape(phased.shape[0], *lead, *phased.shape[1:]),
            np.array(lead + tuple(dilations), np.int64), to_phases)
        return
    n, c = full.shape[0], full.shape[-1]
    grid = [size for s, d in zip(phased.shape[1:-1], dilations) for size in (s, d)]
    view = full.reshape(n, *grid, c)       # [n, m1, r1, m2, r2, ..., c]
    order = ([2 + 2 * i for i in range(rank)] + [0] + [1 + 2 * i for i in range(rank)]
             + [view.ndim - 1])             # to [r1, r2, ..., n, m1, m2, ..., c]
    as_phases = phased.reshape(*dilations, n, *phased.shape[1:-1], c)
    if to_phases:
        as_phases[...] = view.transpose(order)
    else:
        view[...] = as_phases.transpose(np.argsort(order))
