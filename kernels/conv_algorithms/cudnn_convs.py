"""The conv family on NVIDIA's cuDNN, through its Python frontend, where a GPU has it.

TF's GPU conv kernels call cuDNN; graphops does too when CuPy runs on a CUDA GPU and
``cudnn`` (the ``nvidia-cudnn-frontend`` package, with ``nvidia-cudnn``'s library) loads.
Each conv (op, dtype, shapes, geometry, layout) is one cuDNN graph, built once and kept:
operands keep their layout (cuDNN reads channels-last and channels-first data through its
tensors' strides), the filter is transposed from TF's ``[*K, C, O]`` to cuDNN's
``[O, *K, C]`` (or ``[O, C, *K]`` beside channels-first data), and a depthwise conv is the
grouped conv of ``C`` groups with ``M`` outputs each. 1-D convs get a size-1 spatial dim.

Numbers as on graphops' other paths: float32 and float64 compute in their own precision
(engines that round inputs to TF32, or any lower precision, are left out), float16 reads
and writes half and accumulates in float32, as TF's cuDNN calls do; engines whose results
vary from run to run are left out, and engines that compile at run time (seconds to build).
The first run of a conv checks, on random operands of its shapes, the first plans cuDNN's
heuristics offer against graphops' own CUDA kernels (the caller's ``own``): a plan whose
results differ is never run on a user's data (cuDNN 9.19 offered, first, plans that return
other numbers for a filter gradient whose output is taller than its input). It times the
own kernels and the plans that agree, and keeps the fastest, as TF autotunes its cuDNN
calls (``TF_CUDNN_USE_AUTOTUNE=0``, or ``TF_DETERMINISTIC_OPS`` as for the CPU convs'
tuning: the first plan that agrees, untimed, the same in every process), so results repeat
exactly within a process. A conv no engine takes runs on the own kernels;
``GRAPHOPS_USE_CUDNN=0`` sends every conv there.
"""

import math
import os
import threading
from collections import OrderedDict

import numpy as np

from graphops.kernels.conv_algorithms import tuning as conv_tuning
from graphops.kernels.conv_algorithms.cuda_build import on_cuda
from graphops.kernels.conv_algorithms.layout import conv_output_shape

MAX_GRAPHS = 512          # built cuDNN graphs kept (least recently used dropped first)
MAX_CANDIDATES = 8        # plans autotuning tries: the heuristics' first that build
MAX_WORKSPACE_BYTES = 1 << 30   # plans needing more scratch memory are left out
# Autotuning checks each plan on random operands against the own kernels, within this many
# times (the output's rounding + the accumulation's, sqrt(terms) units of its precision)
# of the result's largest value: summation orders differ by that; a plan's wrong sums would
# not.
AGREEMENT_FACTOR = 8

_IO_TYPES = {np.dtype(np.float16): ("HALF", "FLOAT"), np.dtype(np.float32): ("FLOAT", "FLOAT"),
             np.dtype(np.float64): ("DOUBLE", "DOUBLE")}
_ACCUMULATES_IN = {np.dtype(np.float16): np.float32, np.dtype(np.float32): np.float32,
                   np.dtype(np.float64): np.float64}
_UNSUPPORTED = object()
OWN = -1                  # the plan that is graphops' own CUDA kernels
_lock = threading.Lock()
_graphs = OrderedDict()
_state = {}


def forward(x, w, strides, dilations, pads, channels_last, xp, own, depthwise=False):
    """The conv of ``x`` by ``w`` in ``x``'s layout and dtype: on cuDNN, or by ``own(x, w)``
    (graphops' own kernels) where cuDNN does not take it or they are faster."""
    if not available(xp, x.dtype):
        return own(x, w)
    out_shape = conv_output_shape(x.shape, w.shape, strides, dilations, pads, channels_last,
                              depthwise)
    return _run("forward", x, w, out_shape, w.shape, (strides, dilations, pads),
                channels_last, xp, own, depthwise)


def backprop_input(dy, w, input_shape, strides, dilations, pads, channels_last, xp, own,
                   depthwise=False):
    """The conv's gradient with respect to an input of ``input_shape``, as ``forward``
    (``own(dy, w)``)."""
    if not available(xp, dy.dtype):
        return own(dy, w)
    return _run("input", dy, w, tuple(int(d) for d in input_shape), w.shape,
                (strides, dilations, pads), channels_last, xp, own, depthwise)


def backprop_filter(x, dy, filter_shape, strides, dilations, pads, channels_last, xp, own,
                    depthwise=False):
    """The conv's gradient with respect to a filter of ``filter_shape``, as ``forward``
    (``own(x, dy)``)."""
    if not available(xp, x.dtype):
        return own(x, dy)
    filter_shape = tuple(int(d) for d in filter_shape)
    return _run("filter", x, dy, filter_shape, filter_shape, (strides, dilations, pads),
                channels_last, xp, own, depthwise)


def available(xp, dtype):
    """Whether cuDNN takes convs of ``dtype`` on array module ``xp``."""
    return on_cuda(xp) and np.dtype(dtype) in _IO_TYPES and _session(xp) is not None


def _run(kind, a, b, out_shape, filter_shape, geometry, channels_last, xp, own, depthwise):
    """``kind``'s conv of operands ``a`` and ``b`` (``a``'s dtype ``available``) on the path
    autotuning keeps for it."""
    if a.dtype != b.dtype or 0 in (*a.shape, *b.shape, *out_shape):
        return own(a, b)
    strides, dilations, pads = geometry
    key = (kind, a.dtype.str, a.shape, b.shape, out_shape, tuple(strides), tuple(dilations),
           tuple(map(tuple, pads)), channels_last, depthwise, xp.cuda.Device().id)
    built = _graph(key, lambda: _Problem(kind, a.shape, b.shape, out_shape, filter_shape,
                                         geometry, channels_last, depthwise), a.dtype, xp)
    if built is None:
        return own(a, b)
    if built.plan is None:
        built.plan = _chosen_plan(built, own, a, b, out_shape, xp)
    if built.plan == OWN:
        return own(a, b)
    try:
        return _on_cudnn(built, built.plan, a, b, out_shape, xp)
    except MemoryError:                   # no room for the plan's workspace just now
        return own(a, b)


def _on_cudnn(built, plan, a, b, out_shape, xp):
    """The conv on cuDNN with ``plan``: operands laid out as the graph reads them."""
    problem = built.problem
    a = xp.ascontiguousarray(a)
    b = xp.ascontiguousarray(b)
    if problem.kind != "filter":
        b = xp.ascontiguousarray(b.reshape(problem.grouped).transpose(problem.axes))
    out = xp.empty(problem.memory if problem.kind == "filter" else out_shape, a.dtype)
    _execute(built, plan, (a, b, out), xp)
    if problem.kind == "filter":
        out = xp.ascontiguousarray(out.transpose(problem.inverse)).reshape(out_shape)
    return out


def _chosen_plan(built, own, a, b, out_shape, xp):
    """The plan a conv keeps, among the own kernels and the cuDNN plans that run on random
    operands of ``a``'s and ``b``'s shapes and agree with them there (a plan that gives
    other numbers, fails or finds no memory is never kept): the fastest when
    ``built.autotune``, else the first that agrees in the heuristics' order."""
    cudnn = _session(xp)[0]
    a, b = (xp.random.standard_normal(v.shape).astype(v.dtype) for v in (a, b))
    reference = own(a, b)
    times = {OWN: _milliseconds(xp, lambda: own(a, b))} if built.autotune else {}
    for plan in built.plans:
        try:
            if not _agree(_on_cudnn(built, plan, a, b, out_shape, xp), reference,
                          built.problem.terms, xp):
                continue
            if not built.autotune:
                return plan
            times[plan] = _milliseconds(
                xp, lambda plan=plan: _on_cudnn(built, plan, a, b, out_shape, xp))
        except (MemoryError, RuntimeError, cudnn.cudnnGraphNotSupportedError):
            continue
    return min(times, key=times.get) if times else OWN


def _agree(result, reference, terms, xp):
    """Whether ``result`` is ``reference`` to within ``AGREEMENT_FACTOR`` times the rounding
    of a sum of ``terms`` products in the output's type, relative to its largest value."""
    dtype = np.dtype(reference.dtype)
    units = np.finfo(dtype).eps + np.finfo(_ACCUMULATES_IN[dtype]).eps * math.sqrt(terms)
    scale = float(xp.abs(reference).max())
    return bool(xp.allclose(result, reference, rtol=0,
                            atol=AGREEMENT_FACTOR * units * scale))


def _milliseconds(xp, run):
    """GPU milliseconds ``run()`` takes (its second run: the first warms it up)."""
    run()
    start, stop = xp.cuda.Event(), xp.cuda.Event()
    start.record()
    run()
    stop.record()
    stop.synchronize()
    return xp.cuda.get_elapsed_time(start, stop)


class _Problem:
    """One conv as cuDNN sees it: dims and strides of its three tensors (``[N, C, *S]``
    data, ``[O, C/groups, *K]`` filter, at least two spatial dims) and the conv's
    geometry; and the filter's memory: TF's filter as cuDNN groups it (``grouped``: a
    depthwise ``[*K, C, M]`` as ``[*K, C*M]``), transposed by ``axes`` to ``memory``."""

    def __init__(self, kind, a_shape, b_shape, out_shape, filter_shape, geometry,
                 channels_last, depthwise):
        strides, dilations, pads = geometry
        rank = len(filter_shape) - 2
        *kernel, c, o = filter_shape
        if depthwise:
            self.grouped = (*kernel, c * o)
            self.axes = (rank, *range(rank))
        else:
            self.grouped = tuple(filter_shape)
            self.axes = (rank + 1, *range(rank), rank) if channels_last else (
                rank + 1, rank, *range(rank))
        self.memory = tuple(self.grouped[i] for i in self.axes)
        self.inverse = tuple(int(i) for i in np.argsort(self.axes))
        if depthwise:
            filter_dims, filter_strides = _data((c * o, 1, *kernel), False)
        else:
            filter_dims, filter_strides = _data(self.memory, channels_last)
        filters = (filter_dims, filter_strides)
        x_or_dy = _data(a_shape, channels_last)
        self.tensors = {"forward": (x_or_dy, filters, _data(out_shape, channels_last)),
                        "input": (x_or_dy, filters, _data(out_shape, channels_last)),
                        "filter": (x_or_dy, _data(b_shape, channels_last), filters)}[kind]
        self.kind = kind
        self.terms = {"forward": math.prod(kernel) * (1 if depthwise else c),
                      "input": math.prod(kernel) * o,
                      "filter": math.prod(b_shape) // b_shape[-1 if channels_last else 1]}[kind]
        unit = [0] * (rank < 2)
        self.geometry = (unit + [b for b, _ in pads], unit + [a for _, a in pads],
                         [1] * (rank < 2) + list(strides), [1] * (rank < 2) + list(dilations))
        if rank < 2:
            self.tensors = tuple(_with_unit_dim(d, s) for d, s in self.tensors)


def _data(shape, channels_last):
    """cuDNN dims ``[N, C, *S]`` and element strides of a C-contiguous array of
    ``shape``, in channels-last or channels-first order."""
    strides = [math.prod(shape[i + 1:]) for i in range(len(shape))]
    if not channels_last:
        return list(shape), strides
    return ([shape[0], shape[-1], *shape[1:-1]], [strides[0], strides[-1], *strides[1:-1]])


def _with_unit_dim(dims, strides):
    """A 1-D conv's tensor with a size-1 spatial dim before its one spatial dim."""
    return ([*dims[:2], 1, dims[2]], [*strides[:2], strides[2] * dims[2], strides[2]])


def _session(xp):
    """(cudnn module, {device id: handle}), or None where the frontend or its library does
    not load, or ``GRAPHOPS_USE_CUDNN=0``."""
    if "session" not in _state:
        _state["session"] = _open(xp) if _switched_on("GRAPHOPS_USE_CUDNN") else None
    return _state["session"]


def _switched_on(variable):
    """An on-by-default switch from the environment: "0" or "false" turns it off."""
    return os.environ.get(variable, "1").strip().lower() not in ("0", "false")


def _open(xp):
    """The frontend and a handle on the current device, or None where either fails."""
    try:
        import cudnn
        return cudnn, {xp.cuda.Device().id: cudnn.create_handle()}
    except (ImportError, OSError, RuntimeError):
        return None


def _handle(xp):
    """The cuDNN handle of the current device: one per device, as a handle works on the
    device it was made on."""
    cudnn, handles = _session(xp)
    device = xp.cuda.Device().id
    if device not in handles:
        handles[device] = cudnn.create_handle()
    return handles[device]


def _graph(key, problem, dtype, xp):
    """The built cuDNN graph of ``problem()`` (cached by ``key``), or None."""
    with _lock:
        built = _graphs.get(key)
        if built is None:
            built = _build(problem(), dtype, xp)
            _graphs[key] = built
            if len(_graphs) > MAX_GRAPHS:
                _graphs.popitem(last=False)
        _graphs.move_to_end(key)
    return None if built is _UNSUPPORTED else built


def _build(problem, dtype, xp):
    """``problem``'s cuDNN graph with its plans built, or ``_UNSUPPORTED``."""
    cudnn, handle = _session(xp)[0], _handle(xp)
    io, compute = (getattr(cudnn.data_type, t) for t in _IO_TYPES[np.dtype(dtype)])
    graph = cudnn.pygraph(io_data_type=io, intermediate_data_type=compute,
                          compute_data_type=compute, handle=handle)
    (a_dims, a_strides), (b_dims, b_strides), (out_dims, out_strides) = problem.tensors
    a = graph.tensor(name="a", dim=a_dims, stride=a_strides, data_type=io)
    b = graph.tensor(name="b", dim=b_dims, stride=b_strides, data_type=io)
    pre, post, strides, dilations = problem.geometry
    geometry = dict(pre_padding=pre, post_padding=post, stride=strides, dilation=dilations,
                    compute_data_type=compute)
    if problem.kind == "forward":
        out = graph.conv_fprop(image=a, weight=b, **geometry)
    elif problem.kind == "input":
        out = graph.conv_dgrad(loss=a, filter=b, **geometry)
    else:
        out = graph.conv_wgrad(image=a, loss=b, **geometry)
    out.set_output(True).set_data_type(io).set_dim(out_dims).set_stride(out_strides)
    try:
        graph.validate()
        graph.build_operation_graph()
        graph.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
        _deselect(cudnn, graph, dtype)
        graph.check_support()
    except (cudnn.cudnnGraphNotSupportedError, RuntimeError, ValueError):
        return _UNSUPPORTED
    plans = []
    for index in range(graph.get_execution_plan_count()):
        if len(plans) < MAX_CANDIDATES and _built_plan(cudnn, graph, index):
            plans.append(index)
    return _Built(graph, (a, b, out), problem, plans) if plans else _UNSUPPORTED


def _deselect(cudnn, graph, dtype):
    """Leave out the plans (once created) that vary from run to run, compile at run time,
    need over ``MAX_WORKSPACE_BYTES``, reduce in a lower precision or round their inputs to
    one (and for float32 the tensor cores' TF32)."""
    notes = [cudnn.numerical_note.NONDETERMINISTIC, cudnn.numerical_note.DOWN_CONVERT_INPUTS,
             cudnn.numerical_note.REDUCED_PRECISION_REDUCTION]
    if dtype == np.float32:
        notes.append(cudnn.numerical_note.TENSOR_CORE)
    graph.deselect_numeric_notes(notes)
    graph.deselect_behavior_notes([cudnn.behavior_note.RUNTIME_COMPILATION])
    graph.deselect_workspace_greater_than(MAX_WORKSPACE_BYTES)


def _built_plan(cudnn, graph, index):
    """Whether plan ``index`` builds (one the notes left out does not)."""
    try:
        graph.build_plan_at_index(index)
        return True
    except (cudnn.cudnnGraphNotSupportedError, RuntimeError):
        return False


class _Built:
    """A built graph, its tensors and problem, its plans in the heuristics' order with their
    workspace sizes, and the plan it runs (``OWN``: graphops' own kernels; None until the
    first run chooses it): the fastest of all when ``autotune`` (``TF_CUDNN_USE_AUTOTUNE``,
    as in TF), else the first that agrees, as the CPU convs' tuning is off
    (``tuning.enabled``: off under ``TF_DETERMINISTIC_OPS``), so that the same plan runs in
    every process."""

    def __init__(self, graph, tensors, problem, plans):
        self.graph, self.tensors, self.problem, self.plans = graph, tensors, problem, plans
        self.workspace = {plan: graph.get_workspace_size_plan_at_index(plan) for plan in plans}
        self.autotune = _switched_on("TF_CUDNN_USE_AUTOTUNE") and conv_tuning.enabled()
        self.plan = None


def _execute(built, plan, arrays, xp):
    """Run ``plan`` of a built graph on ``arrays`` (its a, b and output tensors' memory)."""
    cudnn, handle = _session(xp)[0], _handle(xp)
    pack = {t: device_pointer(a) for t, a in zip(built.tensors, arrays)}
    workspace = xp.empty(max(1, built.workspace[plan]), xp.uint8)
    with _lock:
        cudnn.set_stream(handle, xp.cuda.get_current_stream().ptr)
        built.graph.execute_plan_at_index(pack, device_pointer(workspace), plan, handle=handle)


def device_pointer(array):
    """The device address of a CuPy array's first element."""
    return array.data.ptr
