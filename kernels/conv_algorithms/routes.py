"""The paths a forward-conv kernel calls itself, decided once per shape: where
``dense.conv_forward`` would take one GEMM or the direct micro-kernels by a fixed rule,
the kernel keeps that choice with its checked window and calls the path directly, without
the general path's checks and setup on every run (tens of microseconds, the time of a
small conv's arithmetic)."""

import numpy as np

from graphops.kernels.conv_algorithms import dilation_phases
from graphops.kernels.conv_algorithms import direct as conv_direct
from graphops.kernels.conv_algorithms import direct_or_winograd
from graphops.kernels.conv_algorithms import gemm as conv_gemm
from graphops.kernels.conv_algorithms import matrix_tiles
from graphops.kernels.compiled import usable
from graphops.kernels.conv_algorithms.dense import conv_forward, few_channel_loops
from graphops.kernels.support.parallelism import one_thread


def kernel_route(x_shape, w_shape, strides, dilations, pads, out_sp, dtype, xp=np):
    """The path ``conv_forward`` takes for a channels-last conv (checked operands of a float
    ``dtype``), decided as it decides: "pointwise" (``gemm.plain_gemm``), "few"
    (``gemm.few_positions``: no pointwise or few-channel path first), "direct" (float32 on
    the direct kernels by the fixed rule, ``direct_or_winograd.fixed_direct``, or a
    pointwise conv they take, ``direct.takes_pointwise``; ``direct_forward``), or None
    (``conv_forward`` itself: bfloat16 on AMX tiles among them)."""
    kernel, (c, o) = w_shape[:-2], w_shape[-2:]
    if matrix_tiles.applies(xp, dtype, kernel, c, o, pads):
        return None
    if conv_gemm.pointwise(kernel, pads) and conv_direct.takes_pointwise(
            xp, dtype, strides, o, (x_shape[0], *out_sp), c):
        return "direct"
    if conv_gemm.plain_gemm(kernel, strides, pads, True, dtype):
        return "pointwise"
    if (0 in (*x_shape, *w_shape, *out_sp) or conv_gemm.pointwise(kernel, pads)
            or few_channel_loops(xp, dtype, kernel, strides, dilations, c, o, out_sp)):
        return None
    if conv_gemm.on_few_positions(xp, dtype, x_shape[0], out_sp, kernel, strides, c, o):
        return "few" if np.dtype(dtype) in (np.float32, np.float64) else None
    direct = xp is np and np.dtype(dtype) == np.float32 and direct_or_winograd.fixed_direct(
        np.float32, kernel, strides, dilations, c, o, (x_shape[0], *out_sp),
        dilation_phases.applies(x_shape[1:-1], strides, dilations, pads))
    return "direct" if direct else None


def direct_forward(x, w, strides, dilations, pads, out_sp, serial, layout=None,
                   epilogue=None):
    """``conv_forward`` of a "direct" route: the same loops with the epilogue applied as they
    write, on one thread where ``conv_forward`` would run it so (``serial``: the shape's
    ``dense.serial_forward``), with the shapes' ``direct.forward_layout`` where the caller
    keeps it (``layout``); in a child forked after numba loaded (``compiled.usable``),
    ``conv_forward`` itself."""
    if not usable():
        return conv_forward(x, w, strides, dilations, pads, epilogue=epilogue)
    if not serial:           # (no context manager: it costs microseconds a step)
        return conv_direct.forward(x, w, strides, dilations, pads, out_sp, epilogue, layout)
    with one_thread():
        return conv_direct.forward(x, w, strides, dilations, pads, out_sp, epilogue, layout)
