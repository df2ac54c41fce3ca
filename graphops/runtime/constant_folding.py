"""Constant folding, as TF's grappler does before a graph runs: the nodes of a plan whose
inputs all come from constants are computed once, when the plan is built, and their values
stand in for them on every run (a frozen model's batch-norm arithmetic on its weights, the
Identity nodes of its constants, shape arithmetic on constants); and a constant
per-channel scale after a conv is folded into the conv's filter (``fold_scales``).

What may fold is declared by each node's kernel (``OpKernel``): no node whose kernel is
not ``foldable`` (a placeholder) folds. A node whose kernel is ``invariant`` (a Const, a
handle op: its outputs never change) folds unless an output is fed, off the host only when
its outputs are handles. Any other node folds when it runs on the host, is not stateful,
takes and gives no handles (resources, variants) nor references (a TF1 variable's
``float32_ref`` tensor), has no function attrs (calls, If, While), has outputs that
something reads, none of them fed, and inputs that all fold too: a node without inputs
folds only if its kernel is invariant. Its control
inputs need not fold: they stay steps, and a plan runs its steps in the graph's order, so
whatever reads a folded value still runs after them. As in TF, an op with side effects must
be registered stateful to run every time.
A node whose kernel raises, or whose new outputs exceed FOLD_MAX_BYTES (or would take the
plan's folded values past PLAN_FOLD_MAX_BYTES), stays a step: its error comes at run time,
as it would have. Folded values are made read-only: kernels never write their inputs, and
a fetched read-only value is copied for the caller.
"""

import collections

import numpy as np

from graphops.registry import dtypes
from graphops.registry.kernel_registry import control_flow_role, registered_kernels
from graphops.runtime import host_memory
from graphops.runtime.kernel_call import compute
from graphops.runtime.shape_folding import shape_only_foldable, stand_ins

FOLD_MAX_BYTES = 10 << 20     # TF grappler's cap on a folded constant
PLAN_FOLD_MAX_BYTES = 256 << 20   # new bytes all of a plan's folded values may hold


def reader_counts(ops, fetched):
    """{tensor key ``(op id, output index)``: how many inputs of ``ops`` and fetches read it}."""
    counts = collections.Counter(fetched)
    counts.update((t.op._id, t.value_index) for op in ops for t in op.inputs)
    return counts


def fold(ops, placements, kernels, fed, readers, facts, known, held):
    """``(folded, guards, held)``: {op id: output values} of the foldable nodes among ``ops``
    (topologically ordered, with their placements and ``(construction, kernel)`` pairs)
    whose values are read (by another node or a fetch: a node run as a target alone keeps
    running), and {op id: [(input tensor, shape)]} of the nodes folded for their inputs'
    shapes (``shape_folding``); ``fed``: the fed tensor keys, ``readers``:
    ``reader_counts``, ``facts``: the ``shape_folding.ShapeFacts`` the plan assumes,
    ``known``: ``(folded, guards)`` of the same nodes for fewer known shapes (the generic
    plan of a specialisation; None for the generic plan), reused as they are; ``held``: the new
    bytes folded values already hold (a plan's other specialisations: all of them share
    PLAN_FOLD_MAX_BYTES), and the total returned."""
    folded, guards = {}, {}
    known, known_guards = known or ({}, {})
    shape_readers = [i for i, (_, kernel) in enumerate(kernels) if kernel.reads_shape_only]
    last_shape_reader = shape_readers[-1] if shape_readers else -1
    host_memory.kernels_starting()
    with np.errstate(all="ignore"):
        for i, (op, placed, (construction, kernel)) in enumerate(zip(ops, placements,
                                                                     kernels)):
            read = any(readers[(op._id, k)] for k in range(len(op.outputs)))
            if read and op._id in known:
                folded[op._id] = known[op._id]
                if op._id in known_guards:
                    guards[op._id] = known_guards[op._id]
            elif read and _foldable(op, placed, kernel, folded, fed):
                held = _fold_node(op, placed, construction, kernel, folded, held,
                                  [folded[t.op._id][t.value_index] for t in op.inputs])
            elif read and shape_only_foldable(op, placed, kernel, fed):
                shapes = facts.known_input_shapes(op)
                if shapes is not None:
                    held = _fold_node(op, placed, construction, kernel, folded, held,
                                      stand_ins(op, shapes))
                if op._id in folded:
                    guards[op._id] = [(t, shape) for t, shape in zip(op.inputs, shapes)
                                      if t.op._id not in folded]
            if i < last_shape_reader:      # the shapes no shape node reads are not needed
                facts.record(op, folded)
    return folded, guards, held


def _fold_node(op, placed, construction, kernel, folded, held, inputs):
    """Computes ``op`` on ``inputs`` into ``folded``; returns the bytes the plan's folded
    values then hold (``held`` and nothing folded when the kernel raises or its outputs are
    too big)."""
    try:
        outputs = compute(kernel, construction, inputs, placed.device)
    except Exception:       # noqa: BLE001 - the node runs, and raises, at run time
        return held
    new = _new_bytes(outputs, inputs) if op.inputs else 0   # else invariant: a Const's
    #                                  attr or a handle, no new bytes worth counting
    if new > FOLD_MAX_BYTES or held + new > PLAN_FOLD_MAX_BYTES:
        return held
    folded[op._id] = [_read_only(v) if isinstance(v, np.ndarray) else v for v in outputs]
    return held + new


def _foldable(op, placed, kernel, folded, fed):
    """Whether ``op`` may be computed once by its ``kernel``, given the nodes folded so
    far."""
    if not kernel.foldable or not _unfed(op, fed):
        return False
    if kernel.invariant and (placed.device.type.is_host
                             or all(t.dtype.kind == "handle" for t in op.outputs)):
        return True
    if (not placed.device.type.is_host or op.op_def.is_stateful or not op.outputs
            or not op.inputs):
        return False
    if any(t.dtype.kind == "handle" or t.dtype.is_ref for t in (*op.inputs, *op.outputs)):
        return False     # a handle or a reference names state: reading it is no constant
    if any(a.base_type == "func" for a in op.op_def.attr):
        return False
    return all((t.op._id, t.value_index) not in fed and t.op._id in folded for t in op.inputs)


def _unfed(op, fed):
    """Whether none of ``op``'s outputs is fed."""
    return not any((op._id, k) in fed for k in range(len(op.outputs)))


def _new_bytes(outputs, inputs):
    """Bytes of the outputs that are not (views of) the inputs."""
    return sum(v.nbytes for v in outputs if isinstance(v, np.ndarray)
               and not any(isinstance(i, np.ndarray) and np.may_share_memory(v, i)
                           for i in inputs))


def fold_scales(ops, placements, kernels, folded, fed, readers, memo):
    """Products folded into the conv before them, as TF's grappler folds a frozen model's
    batch-norm scale (rounding once where it rounded twice): a float conv whose kernel
    declares its ``channels_last_format`` (Conv2D, Conv3D, DepthwiseConv2dNative), in that
    format, with a constant filter, optionally followed by a "bias_add" with a constant
    bias, times (a "mul" ``chain_stage``) a constant per-output-channel vector (or scalar),
    where nothing else reads the conv's (and the bias add's) output. Returns ``(aliases,
    inputs)``: {product op id: the op whose output stands for its}, and {op id: {input
    index: the scaled constant it reads instead}} (the filter, and the bias); ``kernels``:
    the ops' ``(construction, kernel)`` pairs, ``readers``: ``reader_counts``; ``memo``: a
    dict kept across a plan's specialisations, which then share each scaled constant."""

    def scaled(value, factor, source):     # value * factor, once per (value, source)
        key = (id(value), id(source), value.shape)
        if key not in memo:          # the entry holds both: their ids stay theirs
            memo[key] = (value, source, _read_only(value * factor))
        return memo[key][2]

    on_host = {op._id: placed.device.type.is_host for op, placed in zip(ops, placements)}
    kernel_of = {op._id: kernel for op, (_, kernel) in zip(ops, kernels)}

    def declared(op, name):     # None for a node outside the plan
        return getattr(kernel_of.get(op._id), name, None)

    def constant(t):
        value = folded[t.op._id][t.value_index] if t.op._id in folded else None
        return value if isinstance(value, np.ndarray) else None

    def only_reader(t):      # a computed node's output (not fed) one node reads
        return (on_host.get(t.op._id, False) and t.op._id not in folded
                and (t.op._id, t.value_index) not in fed
                and readers[(t.op._id, t.value_index)] == 1)

    aliases, inputs = {}, {}
    for op in ops:
        if (declared(op, "chain_stage") != "mul" or op._id in folded or not on_host[op._id]
                or (op._id, 0) in fed):
            continue
        for scaled_in, scale_in in (op.inputs, reversed(op.inputs)):
            bias_add, conv = None, scaled_in.op
            if declared(conv, "chain_stage") == "bias_add" and only_reader(conv.inputs[0]):
                bias_add, conv = conv, conv.inputs[0].op
            if declared(conv, "channels_last_format") is None or not only_reader(scaled_in):
                continue
            w, factor_source = constant(conv.inputs[1]), constant(scale_in)
            factor = _channel_factor(conv, kernel_of[conv._id], w, factor_source)
            if factor is None:
                continue
            if bias_add is not None:
                bias = constant(bias_add.inputs[1])
                if bias is None or bias.dtype != w.dtype or bias.size != factor.size:
                    continue
                inputs[bias_add._id] = {1: scaled(bias, factor.reshape(-1), factor_source)}
            inputs[conv._id] = {1: scaled(w, factor, factor_source)}
            aliases[op._id] = scaled_in.op
            break
    return aliases, inputs


def _channel_factor(conv, kernel, w, scale):
    """``scale`` shaped to multiply ``conv``'s filter ``w`` when it scales the output
    channels (a vector of them, or a scalar) of the conv in its ``kernel``'s
    ``channels_last_format``, else None."""
    layout = kernel.channels_last_format
    if (w is None or scale is None or w.dtype != scale.dtype
            or w.dtype not in (np.float32, np.float64)
            or scale.ndim > len(layout)
            or any(d != 1 for d in scale.shape[:-1])):
        return None
    depthwise = kernel.depthwise_filter
    channels = w.shape[-2] * w.shape[-1] if depthwise else w.shape[-1]
    if scale.size == 1:
        return np.full(w.shape[-2:] if depthwise else w.shape[-1:], scale.reshape(()))
    if scale.size != channels:
        return None
    # output channel c*M + m of a depthwise conv is filtered by w[..., c, m]
    return scale.reshape(w.shape[-2:]) if depthwise else scale.reshape(-1)


def _read_only(value):
    value.flags.writeable = False
    return value


def hoistable(op):
    """Whether `op` computes the same values from the same inputs and does nothing else:
    stateless, no function attrs, no control-flow role, no resource or reference edges,
    and kernels a plan may compute ahead (`OpKernel.foldable`): what a loop may compute
    once, in its first iteration, when its inputs are the same in every one."""
    if op.op_def.is_stateful or control_flow_role(op.type) is not None:
        return False
    if any(a.base_type == "func" for a in op.op_def.attr):
        return False
    if any(t.dtype.base_dtype is dtypes.resource or t.dtype.is_ref
           for t in (*op.inputs, *op.outputs)):
        return False
    return _declared_by_every_kernel(op, "foldable")


def reads_variable(op):
    """Whether `op` reads a resource variable's value and does nothing else (its kernels
    declare `reads_variable`): in a loop whose ops write no state, its value is the same in
    every iteration."""
    return _declared_by_every_kernel(op, "reads_variable")


def writes_no_state(ops):
    """Whether none of `ops` may change state: each is stateless or only reads a
    variable (a stateful op of any other kind, a call among them, may assign one)."""
    return all(not op.op_def.is_stateful or reads_variable(op) for op in ops)


def _declared_by_every_kernel(op, declaration):
    """Whether `op` has kernels and every one of them declares `declaration`."""
    kernels = registered_kernels(op.type)
    return bool(kernels) and all(getattr(k.kernel_class, declaration) for k in kernels)
