"""Dense convs that the direct micro-kernels (``direct``) or Winograd (``winograd``) take,
and the choice between them: the fixed rule (``_fits``: the direct kernels for
strided and small convs, and at any size for those Winograd does not take), and, where both
take a conv, the candidates that ``tuning.run`` times on the host (the fixed rule's first).
Winograd takes a dilated stride-1 conv as the undilated conv of its dilation phases
(``dilation_phases``) where their geometry allows, and the rule treats it as that conv.

Each op returns None where no path takes the conv, or where Winograd, chosen, meets
non-finite values (its transforms would turn an infinity into NaN): the caller's general
paths follow.
"""

import math

import numpy as np

from graphops.kernels.conv_algorithms import dilation_phases
from graphops.kernels.conv_algorithms import direct as conv_direct
from graphops.kernels.conv_algorithms import tuning as conv_tuning
from graphops.kernels.conv_algorithms import winograd as conv_winograd
from graphops.kernels.conv_algorithms.layout import flipped_filter, flipped_pads
from graphops.kernels.support.kernel_util import channel_chain
from graphops.kernels.support.parallelism import intra_op_threads


def forward(xc, wc, strides, dilations, pads, out_sp, ct, epilogue):
    """The forward conv of channels-last ``xc`` by ``wc`` with ``epilogue`` applied
    (``kernel_util.channel_chain``'s stages, or None), or None. Both paths apply it before
    they return, so their trials time the same work."""
    kernel, (c, o) = wc.shape[:-2], wc.shape[-2:]
    out_shape = (xc.shape[0], *out_sp)
    phases = dilation_phases.applies(xc.shape[1:-1], strides, dilations, pads)

    def winograd():
        y = _on_phases(conv_winograd.winograd_forward, xc, wc, out_sp, pads, dilations)
        return y if y is None or epilogue is None else channel_chain(y, *epilogue, in_place=True)

    return _run(("forward", xc.shape, wc.shape, strides, dilations, pads, np.dtype(ct).str),
                math.prod(out_shape) * math.prod(wc.shape),
                _fits(ct, kernel, strides, dilations, c, o, out_shape, streamed=True,
                      phases=phases),
                lambda: conv_direct.forward(xc, wc, strides, dilations, pads, out_sp,
                                            epilogue=epilogue), winograd)


def fixed_direct(ct, kernel, strides, dilations, in_channels, out_channels, out_shape,
                 phases=False):
    """Whether ``forward`` takes the direct kernels by the fixed rule alone on any host: they
    fit first, and nothing is timed against them (no other path fits, or the conv is below
    ``tuning.TUNE_MIN_MACS``). ``phases``: ``dilation_phases.applies`` to the conv."""
    fits = _fits(ct, kernel, strides, dilations, in_channels, out_channels, out_shape,
                 streamed=True, phases=phases)
    macs = math.prod(out_shape) * math.prod(kernel) * in_channels * out_channels
    return fits[:1] == ["direct"] and (len(fits) == 1 or macs < conv_tuning.TUNE_MIN_MACS)


def backprop_filter(xc, dyc, filter_shape, strides, dilations, pads, ct, winograd_allowed):
    """The filter gradient of channels-last ``xc`` and ``dyc``, or None: the direct kernels
    only with an output plane for every thread; Winograd only where ``winograd_allowed``
    (not where the few-channel loops take the gradient, which come before it)."""
    kernel, (c, o) = filter_shape[:-2], filter_shape[-2:]
    out_shape = dyc.shape[:-1]
    phases = dilation_phases.applies(xc.shape[1:-1], strides, dilations, pads)
    fits = _fits(ct, kernel, strides, dilations, c, o, out_shape, winograd_allowed,
                 phases=phases)
    threads = intra_op_threads()
    if conv_direct.planes(dyc.shape) < threads:
        fits = [path for path in fits if path == "winograd"]
    return _run(("filter", xc.shape, dyc.shape, filter_shape, strides, dilations, pads,
                 np.dtype(ct).str, threads), math.prod(out_shape) * math.prod(filter_shape),
                fits,
                lambda: conv_direct.backprop_filter(xc, dyc, filter_shape, strides,
                                                    dilations, pads),
                lambda: _filter_on_phases(xc, dyc, pads, dilations))


def input_paths(w_shape, in_shape, strides, dilations, pads, ct):
    """The paths that take a stride-1 input gradient ``in_shape`` (none where strided): the
    direct kernels run it as the forward conv of dy with the filter flipped, so only where
    that conv's padding (``layout.flipped_pads``) is not negative."""
    kernel, (c, o) = w_shape[:-2], w_shape[-2:]
    if any(s != 1 for s in strides):
        return []
    fits = _fits(ct, kernel, strides, dilations, o, c, in_shape[:-1],
                 phases=dilation_phases.applies(in_shape[1:-1], strides, dilations, pads))
    if min(min(p) for p in flipped_pads(kernel, dilations, pads)) < 0:
        fits = [path for path in fits if path == "winograd"]
    return fits


def backprop_input(dyc, wc, in_shape, dilations, pads, ct, paths):
    """The stride-1 input gradient ``in_shape`` of channels-last ``dyc`` on one of
    ``paths`` (``input_paths``), or None."""
    kernel = wc.shape[:-2]
    ones = (1,) * len(kernel)
    return _run(("input", dyc.shape, wc.shape, in_shape, dilations, pads, np.dtype(ct).str),
                math.prod(dyc.shape[:-1]) * math.prod(wc.shape), paths,
                lambda: conv_direct.forward(dyc, flipped_filter(wc), ones, dilations,
                                            flipped_pads(kernel, dilations, pads),
                                            in_shape[1:-1]),
                lambda: _on_phases(conv_winograd.winograd_backprop_input, dyc, wc,
                                   in_shape[1:-1], pads, dilations))


def _fits(ct, kernel, strides, dilations, in_channels, out_channels, out_shape,
          winograd_allowed=True, streamed=False, phases=False):
    """The paths that take a conv of ``out_shape`` ``(N, *out_sp)``, in the fixed rule's
    order. The fixed rule takes the direct kernels (``direct.applies``) for strided and
    small convs, and at any size for those Winograd does not take (5x5 stride-1 convs,
    dilated ones whose sizes do not split into phases: 2x faster there than on the scatter
    GEMMs): "direct" first where it does, else after "winograd" where the kernels fit at
    any size (only while Winograd is allowed: without it, the fixed rule alone decides).
    ``streamed``: for the forward conv, whose direct kernels take a filter of any size
    (``direct.applies``). ``phases``: a dilated conv that ``dilation_phases`` splits,
    which Winograd takes as its phases' conv."""
    undilated, tile_grid = dilations, out_shape
    if phases:
        undilated = (1,) * len(dilations)
        tile_grid = dilation_phases.phase_shape((*out_shape, 1), dilations)[:-1]
    winograd = conv_winograd.applies(np, ct, kernel, strides, undilated, in_channels,
                                     out_channels, tile_grid)

    def direct(any_size):
        return conv_direct.applies(np, ct, kernel, strides, out_channels, out_shape,
                                   in_channels, any_size=any_size, streamed=streamed)

    fixed_direct = direct(not winograd)
    fits = ["direct"] if fixed_direct else []
    if winograd and winograd_allowed:
        fits.append("winograd")
        if not fixed_direct and direct(True):
            fits.append("direct")
    return fits


def _run(signature, macs, fits, direct, winograd):
    """The result of the fitting path ``tuning.run`` picks (None where none fits)."""
    computes = {"direct": direct, "winograd": winograd}
    candidates = [(path, computes[path]) for path in fits]
    return conv_tuning.run(signature, macs, candidates) if candidates else None


def _on_phases(conv, x, w, out_sp, pads, dilations):
    """``conv(x, w, out_sp, pads)``, a Winograd forward conv or input gradient (None where
    it gives way); where dilated, that of the dilation phases (``dilation_phases``), merged
    back."""
    if max(dilations) == 1:
        return conv(x, w, out_sp, pads)
    y = conv(dilation_phases.split(x, dilations), w,
             tuple(q // d for q, d in zip(out_sp, dilations)),
             dilation_phases.phase_pads(pads, dilations))
    return None if y is None else dilation_phases.merge(y, dilations, x.shape[0])


def _filter_on_phases(xc, dyc, pads, dilations):
    """Winograd's filter gradient; where dilated, summed over the dilation phases of x and
    dy as over a batch."""
    if max(dilations) == 1:
        return conv_winograd.winograd_backprop_filter(xc, dyc, pads)
    return conv_winograd.winograd_backprop_filter(
        dilation_phases.split(xc, dilations), dilation_phases.split(dyc, dilations),
        dilation_phases.phase_pads(pads, dilations))
