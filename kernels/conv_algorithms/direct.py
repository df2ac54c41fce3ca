"""The dense forward conv, its filter gradient and its input gradient computed directly on
register-blocked micro-kernels (``compiled.direct``): no patch matrix, every input value read
in place through per-tap offsets into the zero-padded input (which the forward conv and the
filter gradient pad slab by slab inside their parallel loops), or, for a forward conv whose
windows read much padding, into the input itself, each class of positions summing only the
taps that read it (``inner_taps``; a streamed filter over few positions whose windows read
no padding runs there as one class).

On this 2-core AVX-512 machine the micro-kernel runs at 220-245 GFLOP/s a core, where
OpenBLAS's SGEMM (on its AVX2 kernels) runs at about 120 and the patch-matrix GEMMs of a
conv with 16 output channels at 80-95, plus the copy (it runs Winograd's products too,
``compiled.direct.batched_gemm``). Measured against the other paths (with one vector of
output channels a call; two made the direct path 1.2-1.4x faster still where the channels
allow):

* strided convs: 1.4-2.6x faster (2-D and 3-D, forward and filter gradient);
* stride 1: 1.1-3.3x faster than Winograd and the patch matrices up to 462M
  multiply-adds (x[4,28,28,128] f[3,3,128,128] 3.3 ms, Winograd 8.4; filter gradients
  1.0-1.5x); slower than Winograd on larger convs (``MAX_UNIT_STRIDE_MACS``), but twice as
  fast as the scatter GEMMs at any size on the convs Winograd does not take (dilated,
  5x5);
* the stride-1 input gradient (the forward of dy with the filter flipped): 1.3-2.1x
  faster than Winograd and the scatter GEMMs on small layers;
* the strided input gradient, phase by phase of dx (``backprop_input_strided``): 1.3-2.8x
  faster than the scatter GEMMs;
* a conv over few output positions (``gemm.on_few_positions``) of up to
  ``FEW_POSITIONS_MAX_OUTPUTS`` output values, against its one patch-matrix GEMM, on one
  thread: 1.1-2x faster with 32-64 output channels on a Zen 4 (a DenseNet's 3x3 128 -> 32
  convs on 2x2-8x8 outputs: 1.6-3.7x) and 1.1-4x at AVX2, 1.1-1.5x with 128 channels on
  up to 32 positions; with more outputs the GEMM is as fast or up to 1.25x faster;
* a filter past ``MAX_FILTER_BYTES`` no longer stays in the cache while the rows pass (a
  2.4 MB one read whole for each block of rows: 2.3x slower than the patch matrices), and
  planes of fewer than ``MIN_PLANE_POSITIONS`` output positions leave the kernel waiting on
  filter loads (a call's rows span the rows of a plane, not planes).

The forward conv streams a larger filter instead (``streams``): each thread takes a run of
output channels and sums a run of filter rows over all its positions while those rows stay
in the L2 cache, a constant filter packed once in blocks of strips that it reads front to
back (``packed_filters.strips``), the input padded once. On the Intel Xeon, six convs in a row
(a model's filters come from memory), 3x3 convs took 0.69 ms each for x[8,4,4,256] 256 ->
256 (the patch matrices 0.92, TF 0.68), 0.14 for x[1,4,4,256] (0.24-0.27, TF 0.21) and
0.24 for x[1,2,2,512] 512 -> 512 (0.37 on the packed strips, TF 0.35).
"""

import functools
import itertools
import math

import numpy as np

from graphops.kernels.conv_algorithms import inner_taps
from graphops.kernels.conv_algorithms import packed_filters
from graphops.kernels.conv_algorithms import phases as conv_phases
from graphops.kernels.compiled import host_isa, loops, usable
from graphops.kernels.conv_algorithms.layout import pad_spatial, tap_offsets
from graphops.kernels.support.kernel_util import epilogue_arguments
from graphops.kernels.support.parallelism import intra_op_threads, share_count

VECTOR_CHANNELS = 8         # output channels come in groups of this (whole HALF_LANES vectors)
MIN_PLANE_POSITIONS = 4     # output positions of a plane (last two spatial dims), at least
FEW_POSITIONS_MAX_OUTPUTS = 4096   # output values up to which few-position convs run here
MAX_FILTER_BYTES = 1 << 20  # float32 filters up to this size stay in the cache
STREAMED_FILTER_BYTES = 1 << 18   # forward: filters past this size stream (``streams``)
STREAMED_MAX_POSITIONS = 128   # ... over at most this many output positions
STREAMED_MAX_INPUT_BYTES = 1 << 20   # ... and an input of at most this size
RUN_BYTES = 1 << 20         # a streamed filter's rows summed at a time, unpacked
POINTWISE_MAX_POSITIONS = 16   # output positions up to which pointwise convs run here
POINTWISE_MIN_MACS = 1 << 20   # ... and from which they do at any size (``takes_pointwise``)
MAX_UNIT_STRIDE_MACS = 1 << 29   # multiply-adds up to which stride-1 convs run here
FOLD_MAX_CHANNELS = 8       # strided input gradients fold the last dim's phases up to this
PHASE_RUN_BYTES = 1 << 20   # ... and sum a phase's filter in runs of about this size
MIN_ITEMS_PER_THREAD = 4    # forward: (plane, band) items a thread gets at least
PARTS_PER_SHARE = 4         # forward: runs of items (each with its slab) per pool share


def applies(xp, ct, kernel, strides, out_channels, out_shape, in_channels,
            any_size=False, streamed=False):
    """Whether the forward conv of ``out_shape`` ``(N, *out_sp)`` runs here: NumPy with
    compiled loops, float32 arithmetic, 1-3 spatial dims, output channels in groups of
    ``VECTOR_CHANNELS``, at least ``MIN_PLANE_POSITIONS`` output positions a plane, a
    filter within ``MAX_FILTER_BYTES`` (any filter where ``streamed``, a forward conv's,
    which ``forward`` streams, over an input of up to ``STREAMED_MAX_INPUT_BYTES``, which
    each run of its rows reads again), and strided or at most ``MAX_UNIT_STRIDE_MACS``
    multiply-adds (unless ``any_size``: the stride-1 input gradient, which the other paths
    run no faster at any size)."""
    taps = math.prod(kernel) * in_channels * out_channels
    return (xp is np and usable() and np.dtype(ct) == np.float32 and 1 <= len(kernel) <= 3
            and out_channels % VECTOR_CHANNELS == 0
            and math.prod(out_shape[1:][-2:]) >= MIN_PLANE_POSITIONS
            and (4 * taps <= MAX_FILTER_BYTES
                 or streamed and _input_bytes(out_shape, strides, in_channels)
                 <= STREAMED_MAX_INPUT_BYTES)
            and (any_size or any(s > 1 for s in strides)
                 or math.prod(out_shape) * taps <= MAX_UNIT_STRIDE_MACS))


def _input_bytes(out_shape, strides, in_channels):
    """About the float32 input's bytes a forward conv of ``out_shape`` reads."""
    return 4 * math.prod(out_shape) * math.prod(strides) * in_channels


def takes_few_positions(xp, ct, kernel, strides, out_channels, out_shape, in_channels):
    """Whether a forward conv on few output positions (``gemm.on_few_positions``) runs here
    rather than as one patch-matrix GEMM: where ``applies``, with at most
    ``FEW_POSITIONS_MAX_OUTPUTS`` output values or a filter it ``streams`` (OpenBLAS packs
    the filter again on every call)."""
    positions = math.prod(out_shape)
    x_bytes = _input_bytes(out_shape, strides, in_channels)
    filter_bytes = 4 * math.prod(kernel) * in_channels * out_channels
    return ((positions * out_channels <= FEW_POSITIONS_MAX_OUTPUTS
             or streams(positions, x_bytes, filter_bytes))
            and applies(xp, ct, kernel, strides, out_channels, out_shape, in_channels,
                        streamed=True))


def takes_pointwise(xp, ct, strides, out_channels, out_shape, in_channels):
    """Whether a pointwise conv (a 1x1 filter, no padding) runs here rather than as one GEMM
    of its positions: where ``applies``, from ``POINTWISE_MIN_MACS`` multiply-adds, or with
    a filter it ``streams`` over at most ``POINTWISE_MAX_POSITIONS`` positions. OpenBLAS
    packs the filter again on every call and runs the bias and activation as a pass of
    their own; here a constant filter is packed once and the epilogue applied as the
    output is written, which from that size is level with the GEMM or faster at both x86
    levels but over the fewest positions (``docs/performance.md``)."""
    positions = math.prod(out_shape)
    x_bytes = _input_bytes(out_shape, strides, in_channels)
    many = positions * in_channels * out_channels >= POINTWISE_MIN_MACS
    return ((many or positions <= POINTWISE_MAX_POSITIONS
             and streams(positions, x_bytes, 4 * in_channels * out_channels))
            and applies(xp, ct, (1,) * len(strides), strides, out_channels, out_shape,
                        in_channels, streamed=True))


def forward(xc, w, strides, dilations, pads, out_sp, epilogue=None, layout=None):
    """The forward conv of channels-last float32 ``xc`` by ``w`` ``[*K, C, O]``: ``[N,
    *out_sp, O]``, through ``epilogue`` (``kernel_util.epilogue_arguments``) as it is
    written. Each output element is one sum of its taps in row-major order, channels
    fastest, with fused multiply-adds (a filter it ``streams``: in runs of its rows, each
    going on from the last); where ``inner_taps`` finds classes, of only the taps that read
    the input. The padding's taps add zeros, so both give the same bits for a finite
    filter; an infinite or NaN filter value makes NaN through the padding only on the
    padded windows (the classes, like TF's oneDNN convs, skip those products).
    The threads' tasks as ``_tasks`` cuts them. ``layout``: what ``forward_layout`` gives
    for these operands' shapes, where the caller keeps it."""
    module = loops("direct", chunk=1)
    streamed, padding, offsets, geometry, source, classes = layout or forward_layout(
        xc, w, strides, dilations, pads, out_sp)
    filter_rows, depth, width = _filter_rows(w, module, streamed)
    arguments = (depth, width, *epilogue_arguments(epilogue, np.float32, w.shape[-1]))
    y = np.empty((xc.shape[0], *out_sp, w.shape[-1]), np.float32)
    if classes is not None:
        offsets, rows_x, rows_y, blocks, runs, run_starts = classes
        parts, splits = _task_runs(w.shape[-1], streamed)
        parts = max(1, min(parts, len(blocks)))
        loops("inner_taps", chunk=1).forward(
            np.ascontiguousarray(xc, np.float32).reshape(-1), offsets, filter_rows,
            y.reshape(-1), rows_x, rows_y, blocks, runs, run_starts, w.shape[-1], parts,
            splits, *arguments)
        return y
    if padding is not None:
        xc = pad_spatial(xc, padding[0], np.float32, min_shape=padding[1])
    tasks = _tasks(geometry, w.shape[-1], module.ROWS, streamed)
    module.forward(np.ascontiguousarray(xc, np.float32).reshape(-1), offsets, filter_rows,
                   y.reshape(-1), geometry, source, *tasks, *arguments)
    return y


def forward_layout(xc, w, strides, dilations, pads, out_sp):
    """``(streamed, padding, offsets, geometry, source, classes)`` for ``forward`` of
    operands of ``xc``'s and ``w``'s shapes: whether the filter ``streams``, then
    ``_forward_layout``'s."""
    streamed = streams(xc.shape[0] * math.prod(out_sp), xc.nbytes, w.nbytes)
    module = loops("direct", chunk=1)
    return (streamed, *_forward_layout(tuple(xc.shape), tuple(w.shape), tuple(strides),
                                       tuple(dilations), tuple(map(tuple, pads)),
                                       tuple(out_sp), streamed,
                                       (module.BLOCK, module.ROWS)))


@functools.lru_cache(maxsize=256)
def _forward_layout(x_shape, filter_shape, strides, dilations, pads, out_sp, streamed,
                    blocking):
    """``(padding, offsets, geometry, source, classes)`` for ``forward``, kept per shape: a
    ``streamed`` filter's runs of rows each read the input again, so it is padded whole
    first where its windows read past it (``padding``: ``pad_spatial``'s pads and
    min_shape, to every extent the windows read; else None: the loops read it as it lies,
    or pad slab by slab), then ``_window_layout`` of the input the loops read; last the
    classes of ``inner_taps.layout`` for the input as it is, on the micro-kernels'
    ``blocking`` (positions a block, rows a call), or None: the padded windows. A streamed
    filter over at most ``STREAMED_MAX_POSITIONS`` positions whose windows read no padding
    takes the classes' loops too, as one class: its blocks span images, where the plane
    loops would make a block of each plane (at 2x2 outputs, calls of 4 rows of ``ROWS``)."""
    whole = streamed and x_shape[0] * math.prod(out_sp) <= STREAMED_MAX_POSITIONS
    classes = inner_taps.layout(x_shape, filter_shape, strides, dilations, pads, out_sp,
                                *blocking, whole=whole)
    padding = None
    if streamed:
        extents = _window_layout(x_shape, filter_shape, strides, dilations, pads,
                                 out_sp)[1][5:8][3 - len(out_sp):]
        padded = (x_shape[0], *(max(size + before + after, extent) for size, (before, after),
                                extent in zip(x_shape[1:-1], pads, extents)), x_shape[-1])
        if padded != x_shape:            # (else the loops read the input as it lies)
            padding, x_shape = (pads, extents), padded
        pads = ((0, 0),) * len(out_sp)
    return (padding, *_window_layout(x_shape, filter_shape, strides, dilations, pads,
                                     out_sp), classes)


def streams(positions, x_bytes, filter_bytes):
    """Whether the forward conv over ``positions`` output positions streams its filter
    (``forward``): one past ``MAX_FILTER_BYTES`` always (``applies`` bounds its input), one
    past ``STREAMED_FILTER_BYTES`` over at most ``STREAMED_MAX_POSITIONS`` positions and an
    input of at most ``STREAMED_MAX_INPUT_BYTES``. A model's filters come from memory,
    where rows a vector wide and the output channels apart load slowly; over few positions
    that is most of a conv's time, over many the runs' passes cost more than they save (six
    x[8,8,8,128] 3x3 128 -> 128 convs: 3.7 ms, streamed 4.3; over x[1,8,8,128] 1.06 and
    0.77-0.93)."""
    return filter_bytes > STREAMED_FILTER_BYTES and (
        filter_bytes > MAX_FILTER_BYTES
        or positions <= STREAMED_MAX_POSITIONS and x_bytes <= STREAMED_MAX_INPUT_BYTES)


def _filter_rows(w, module, streamed):
    """The filter as ``compiled.direct.forward`` reads it, flat, with the (tap, channel)
    pairs it sums at a time and the width of its strips. Unless ``streamed``: all pairs at
    once, as one block of strips (``_strip_width``, ``packed_filters.one_block``), or as it
    lies where a strip is a whole row. A ``streamed`` filter: a constant
    one packed in blocks of strips (each block read front to back), another in runs of rows
    of ``RUN_BYTES``."""
    w2 = np.ascontiguousarray(w, np.float32).reshape(-1, w.shape[-1])
    if not streamed:
        width = _strip_width(w2.shape[1], module.CALL_CHANNELS)
        if width == w2.shape[1]:
            return w2.reshape(-1), w2.shape[0], width
        return packed_filters.one_block(w2, width), w2.shape[0], width
    width = 2 * module.LANES
    packed = packed_filters.strips(w2, width)
    if packed is not None:
        return packed, packed_filters.BLOCK_ROWS, width
    return w2.reshape(-1), max(1, RUN_BYTES // w2[0].nbytes), w2.shape[1]


def _tasks(geometry, out_channels, rows, streamed):
    """``(bands, parts, splits)``: the bands each output plane is cut into and the runs of
    (plane, band) items and of output channels the threads take (``parts * splits``
    tasks). A filter that stays in the cache: runs of items only, ``PARTS_PER_SHARE`` a pool
    share, the planes cut until there are ``MIN_ITEMS_PER_THREAD`` items a thread (each
    band at least ``rows`` positions). A ``streamed`` filter: a run of channels a thread,
    so that each thread streams its share of the filter once."""
    planes, plane_size = geometry[0] * geometry[1], geometry[2] * geometry[3]
    parts, splits = _task_runs(out_channels, streamed)
    item_threads = intra_op_threads() // splits
    wanted = MIN_ITEMS_PER_THREAD * item_threads if item_threads > 1 else 1
    bands = max(1, min(-(-wanted // max(planes, 1)), plane_size // rows))
    return bands, max(1, min(parts, planes * bands)), splits


def _task_runs(out_channels, streamed):
    """``(parts, splits)``: the runs of items and of output channels ``_tasks`` wants
    before the items' count bounds them."""
    threads = intra_op_threads()
    if not streamed:
        return PARTS_PER_SHARE * share_count(), 1
    splits = max(1, min(threads, out_channels // VECTOR_CHANNELS))
    return threads // splits, splits


def backprop_filter(xc, dyc, filter_shape, strides, dilations, pads):
    """The filter gradient ``filter_shape`` ``[*K, C, O]`` of channels-last float32 ``xc``
    and ``dyc``: float32 sums per pool share (each over its output planes in order, fused
    multiply-adds), the shares added in float64 in order."""
    x, offsets, geometry, source = _layout(xc, filter_shape, strides, dilations, pads,
                                           dyc.shape[1:-1])
    partials = np.empty((max(1, min(share_count(), planes(dyc.shape))),
                         math.prod(filter_shape)), np.float32)
    loops("direct", chunk=1).filter_grad(x, offsets, np.ascontiguousarray(dyc).reshape(-1),
                                               partials, geometry, source)
    return partials.sum(axis=0, dtype=np.float64).astype(np.float32).reshape(filter_shape)


def phases_win(in_channels):
    """Whether a strided input gradient with ``in_channels`` dx channels goes by phases
    (``backprop_input_strided``) before the scatter GEMMs, for the vector unit numba
    compiles for (``compiled.host_isa``): with 32 vector registers (AVX-512) the phases
    win (1.1-1.8x); with 16 (AVX2, 8-lane tiles of 12 accumulators) they run level with
    OpenBLAS's AVX2 GEMMs and the scatter on wide gradients (0.85-1.08x), so there only
    gradients of up to ``FOLD_MAX_CHANNELS`` channels, whose phases fold into full
    vectors, go by phases first; the host's timing moves others where the phases are
    faster (narrow ones: 1.6-2.1x with 32 channels)."""
    return in_channels <= FOLD_MAX_CHANNELS or host_isa.isa().registers >= 32


def backprop_input_strided(dyc, w, in_shape, strides, dilations, pads):
    """The input gradient ``in_shape`` ``[N, *I, C]`` of a strided conv from channels-last
    float32 ``dyc`` ``[N, *Q, O]`` and ``w`` ``[*K, C, O]``, phase by phase of dx
    (``phases.phase_plans``: each phase a stride-1 conv of dy with its taps of the
    filter, flipped and transposed), all phases in one parallel pass over dy padded once,
    every dx position written where it lies. Each element sums its (tap, dy channel) pairs
    in order with fused multiply-adds. With few channels, the last dim's phases are folded
    into channels first (``last_dim_folded``)."""
    folded = last_dim_folded(dyc, w, in_shape, strides, dilations, pads)
    if folded is not None:
        return _phases(dyc, *folded).reshape(in_shape)
    return _phases(dyc, w, in_shape, strides, dilations, pads)


def last_dim_folded(dyc, w, in_shape, strides, dilations, pads):
    """The input gradient as one whose last dim has stride 1, where that is faster: ``(w',
    in_shape', strides', dilations', pads')``, or None. Its ``s`` phases ``r`` become
    channels: dx viewed as ``[N, ..., I/s, s*C]`` is the input gradient of a conv whose last
    dim has stride 1, no dilation, padding ``before'`` and the taps ``w'[t, r*C + c] = w[k,
    c]`` for the ``k`` with ``k*d - before - r = s*(t - before')`` (zero where no ``k``
    has). With ``FOLD_MAX_CHANNELS`` channels the phases leave half of the
    micro-kernels' vectors empty, and folding fills them: 1.3-1.5x faster (stride-2 3-D,
    5x5 and stride-3 2-D input gradients); with 16 channels no faster, with 32 1.2x
    slower. Taken when ``s`` divides I and dy is finite (the zero taps would turn an
    infinite dy into NaN where it does not reach)."""
    *kernel, c, o = w.shape
    size, k, s, d, before = in_shape[-2], kernel[-1], strides[-1], dilations[-1], pads[-1][0]
    if s == 1 or c > FOLD_MAX_CHANNELS or size % s:
        return None
    taps = [(j, r, (j * d - before - r) // s) for j in range(k) for r in range(s)
            if (j * d - before - r) % s == 0]
    lowest = min(t for _, _, t in taps)
    width = max(t for _, _, t in taps) - lowest + 1
    with np.errstate(over="ignore", invalid="ignore"):
        if not np.isfinite(dyc.sum(dtype=np.float32)):    # or a finite sum past float32
            return None
    folded = np.zeros((*kernel[:-1], width, s, c, o), np.float32)
    for j, r, t in taps:
        folded[..., t - lowest, r, :, :] = w[..., j, :, :]
    return (folded.reshape(*kernel[:-1], width, s * c, o),
            (*in_shape[:-2], size // s, s * c), (*strides[:-1], 1), (*dilations[:-1], 1),
            (*pads[:-1], (-lowest, dyc.shape[-2] + width - 1 - size // s + lowest)))


def _phases(dyc, w, in_shape, strides, dilations, pads):
    """``backprop_input_strided`` on the phases of every dim: dy padded once, the filter's
    taps gathered for each phase as strips (``_phase_layout``, kept per shape; a call reads
    its strip front to back), one compiled pass summing a phase's pairs in runs of about
    ``PHASE_RUN_BYTES`` of its filter (all strips), which stay in the L2 cache while all
    its positions read them (all the pairs at once but for the largest filters)."""
    module = loops("direct", chunk=1)
    width = _strip_width(w.shape[-2], module.CALL_CHANNELS)
    layout = _phase_layout(tuple(dyc.shape), tuple(w.shape), tuple(in_shape), tuple(strides),
                           tuple(dilations), tuple(tuple(p) for p in pads), width)
    dy_shape, dy_pads, steps, step_starts, gather, filter_starts, phases, geometry = layout
    padded = pad_spatial(dyc.reshape(dy_shape), dy_pads, np.float32)
    filters = np.asarray(w, np.float32).reshape(-1)[gather]
    dx = np.empty(in_shape, np.float32)
    module.input_grad_phases(padded.reshape(-1), dx.reshape(-1), steps, step_starts, filters,
                             filter_starts, phases, geometry,
                             max(module.ROWS, PHASE_RUN_BYTES // (4 * w.shape[-2])), width)
    return dx


def _strip_width(channels, call_channels):
    """The width of the strips a filter of rows of ``channels`` is read in: a call's
    channels where the rows are a whole number of calls, more than one (so that a call
    reads its strip front to back, not a slice of every row, which falls in a fraction of
    the L1 cache's sets), else the whole row."""
    if channels > call_channels and channels % call_channels == 0:
        return call_channels
    return channels


@functools.lru_cache(maxsize=256)
def _phase_layout(dy_shape, w_shape, in_shape, strides, dilations, pads, width):
    """What ``_phases`` needs for these shapes, as ``compiled.direct.input_grad_phases``
    takes it: dy's shape with 3 spatial dims and its padding (every phase's windows inside
    it), each phase's (tap, dy channel) offsets and where they start, the indices of the
    filter's values each phase reads (its taps flipped, transposed to ``[O, C]``, as
    strips of ``width`` of the C channels) and where they start, the phases
    (``phase_plans``) and the geometry. Kept per shape, as a model's gradients repeat
    theirs every step."""
    lead = 3 - len(strides)
    kernel3 = (1,) * lead + w_shape[:-2]
    strides3, dilations3 = (1,) * lead + strides, (1,) * lead + dilations
    before3 = (0,) * lead + tuple(b for b, _ in pads)
    in3, out3 = (1,) * lead + in_shape[1:-1], (1,) * lead + dy_shape[1:-1]
    plans = [conv_phases.phase_plans(k, s, d, b)
             for k, s, d, b in zip(kernel3, strides3, dilations3, before3)]
    counts = [[-(-(size - r) // s) for r, *_ in plan]
              for plan, size, s in zip(plans, in3, strides3)]
    dy_pads = []
    for plan, count, q in zip(plans, counts, out3):
        spans = [(lo, lo + m - 1 + (len(taps) - 1) * dil)
                 for (_, taps, dil, lo), m in zip(plan, count) if taps and m]
        dy_pads.append((max([-lo for lo, _ in spans] + [0]),
                        max([hi - (q - 1) for _, hi in spans] + [0])))
    extents = [q + b + a for q, (b, a) in zip(out3, dy_pads)]
    c, o = w_shape[-2:]
    values = np.arange(math.prod(w_shape)).reshape(*kernel3, c, o)
    phases, steps, gathers = [], [], []
    for plan in itertools.product(*plans):
        taps = [t for _, t, _, _ in plan]
        dils = [p[2] for p in plan]
        phases.append((*(p[0] for p in plan), *(count[p[0]] for count, p in zip(counts, plan)),
                       *(p[3] + before for p, (before, _) in zip(plan, dy_pads)),
                       len(taps[0]), dils[0]))
        if not all(taps):
            steps.append(np.zeros(0, np.int64))
            gathers.append(np.zeros(0, np.int64))
            continue
        js = list(itertools.product(*(range(len(t)) for t in taps)))
        starts = np.array([((j1 * dils[0] * extents[1] + j2 * dils[1]) * extents[2]
                            + j3 * dils[2]) * o for j1, j2, j3 in js], np.int64)
        steps.append((starts[:, None] + np.arange(o)).reshape(-1))
        flipped = values[np.ix_(*(list(t[::-1]) for t in taps))]     # pair j: tap t[-1 - j]
        rows = np.swapaxes(flipped, -1, -2).reshape(-1, c // width, width)
        gathers.append(rows.transpose(1, 0, 2).reshape(-1).astype(np.int64))
    return ((dy_shape[0], *out3, o), dy_pads, np.concatenate(steps),
            np.cumsum([0] + [len(a) for a in steps]).astype(np.int64), np.concatenate(gathers),
            np.cumsum([0] + [len(a) for a in gathers])[:-1].astype(np.int64),
            np.array(phases, np.int64),
            tuple(int(v) for v in (dy_shape[0], *extents, o, *in3, c, *strides3,
                                   dy_pads[0][0], dy_pads[0][0] + out3[0])))


def planes(out_shape):
    """The output planes of ``out_shape`` ``[N, *out_sp, O]`` that the filter gradient's
    threads share: images, times the first of 3 spatial dims."""
    return out_shape[0] * (out_shape[1] if len(out_shape) == 5 else 1)


def _layout(xc, filter_shape, strides, dilations, pads, out_sp):
    """What the loops take: the input (flat, unpadded), then ``_window_layout``'s offsets,
    geometry and source for its shape."""
    return (np.ascontiguousarray(xc, np.float32).reshape(-1),
            *_window_layout(tuple(xc.shape), tuple(filter_shape), tuple(strides),
                            tuple(dilations), tuple(tuple(p) for p in pads), tuple(out_sp)))


@functools.lru_cache(maxsize=256)
def _window_layout(x_shape, filter_shape, strides, dilations, pads, out_sp):
    """Each (tap, channel)'s offset from a window's origin in the zero-padded input, the
    geometry (N, Q1, Q2, Q3, O, P1, P2, P3, C, s1, s2, s3) and the source (S1, S2, S3, b1,
    b2, b3, span1, span2, span3: the input's sizes, the padding before, and the padded
    positions a window spans), all padded to 3 spatial dims with leading 1s. The padded
    extents hold every window. Kept per shape, as a model's convs repeat theirs every run;
    the loops only read the offsets."""
    kernel, (c, o) = filter_shape[:-2], filter_shape[-2:]
    lead = 3 - len(kernel)
    spans = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
    extents = (1,) * lead + tuple(max(s + b + a, (q - 1) * st + span) for s, (b, a), q, st, span
                                  in zip(x_shape[1:-1], pads, out_sp, strides, spans))
    kernel3, dilations3 = (1,) * lead + tuple(kernel), (1,) * lead + tuple(dilations)
    offsets = tap_offsets(kernel3, dilations3, (extents[1] * extents[2] * c, extents[2] * c, c),
                          c)
    geometry = (x_shape[0], *((1,) * lead + tuple(out_sp)), o, *extents, c,
                *((1,) * lead + tuple(strides)))
    source = ((1,) * lead + tuple(x_shape[1:-1]) + (0,) * lead + tuple(b for b, _ in pads)
              + (1,) * lead + tuple(spans))
    return offsets, tuple(int(v) for v in geometry), tuple(int(v) for v in source)
