"""Elementwise chains fused into one step when a plan is built, as TF's grappler remapper
fuses a conv's BiasAdd and Relu, and a frozen model's batch-norm arithmetic.

A chain is a run of two or more host nodes, each the only reader of the one before (no
fetch, feed or control edge on the nodes inside it), that computes
``activation(x op v op v ...)``: up to ``MAX_STAGES`` products and sums with constants,
left to right, then optionally an activation:

* ``Mul`` by a constant;
* ``Add``/``AddV2`` of a constant, ``Sub`` of one (the sum of its negation: the same
  bits), or a channels-last ``BiasAdd``/``BiasAddV1`` with a constant bias;
* ``Relu`` or ``Relu6``, which ends the chain.

Constants (folded values, see ``constant_folding``) are scalars or vectors along x's last
dim, of x's dtype (float32 or float64), and x's static shape must keep them from
broadcasting it larger. The chain's last node runs ``kernel_util.channel_chain`` on x,
which rounds each step as the separate kernels round it (the results are the same bits),
and the nodes before it are never run: one pass over memory instead of two to four.
"""

import collections

import numpy as np

from kernels.kernel_util import channel_chain

FUSED_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
MAX_STAGES = 3
ACTIVATIONS = ("Relu", "Relu6")


class Chain:
    """A fused chain: its ``source`` tensor, its ``ops`` in order (the last one stands for
    the chain), its ``stages`` (``("mul" | "add", constant)`` pairs) and ``activation`` (an
    op type or None). Its ``compute(ctx)`` is the fused kernel."""

    def __init__(self, source, ops, stages, activation):
        self.source, self.ops, self.stages, self.activation = source, ops, stages, activation

    def compute(self, ctx):
        ctx.set_output(0, channel_chain(ctx.input(0), self.stages, self.activation))


def fuse_chains(ops, placements, folded, fed, readers, aliases, replaced):
    """{op id of a chain's last node: its Chain} for the chains among ``ops`` (topologically
    ordered, with their placements); ``folded``: the folded values by op id, ``fed``: fed
    tensor keys, ``readers``: ``constant_folding.reader_counts``; ``aliases`` and
    ``replaced``: ``constant_folding.fold_scales``' rewrites. A folded-away Mul is seen
    through (the chain reads on from the output it stands for) and a scaled bias stands for
    its BiasAdd's constant."""
    on_host = {op._id: placed.device.type.is_host for op, placed in zip(ops, placements)}
    consumers = collections.defaultdict(list)
    controlling = set()
    for op in ops:
        for t in op.inputs:
            consumers[(t.op._id, t.value_index)].append(op)
        controlling.update(c._id for c in op.control_inputs)

    def constant(op, j):
        t = op.inputs[j]
        value = replaced.get(op._id, {}).get(j)
        if value is None and t.op._id in folded:
            value = folded[t.op._id][t.value_index]
        return value if isinstance(value, np.ndarray) else None

    def part(op, chained):
        if (not on_host[op._id] or op._id in folded or op._id in aliases
                or len(op.outputs) != 1 or (op._id, 0) in fed
                or op.outputs[0].dtype.np_dtype not in FUSED_DTYPES):
            return None
        return _part(op, chained, constant)

    def only_reader(t):        # the one node reading t, through a folded-away Mul
        key = (t.op._id, t.value_index)
        if readers[key] != 1 or len(consumers[key]) != 1 or t.op._id in controlling:
            return None, None
        after = consumers[key][0]
        return (only_reader(after.outputs[0]) if after._id in aliases else (after, t))

    chains, taken = {}, set()
    for op in ops:
        first = None if op._id in taken else part(op, None)
        if first is None:
            continue
        source, stage = first
        stages, activation, members = [], None, [op]
        while True:
            if stage[0] == "activation":
                activation = stage[1]
                break
            stages.append(stage)
            after, read = only_reader(members[-1].outputs[0])
            nxt = None if after is None or len(stages) == MAX_STAGES else part(after, read)
            if nxt is None:
                break
            stage = nxt[1]
            members.append(after)
        if len(members) < 2 or not _fits(source, stages):
            continue
        taken.update(m._id for m in members)
        chains[members[-1]._id] = Chain(source, members, _vectors(stages), activation)
    return chains


def _part(op, chained, constant):
    """``(x, stage)`` when ``op`` is a chain part applied to its input x (which must be
    ``chained`` when given): stage ``("mul" | "add", constant)``, or ``("activation", op
    type)``; else None. ``constant(op, j)``: the constant op's input j stands for, or None."""
    if op.type in ACTIVATIONS:
        x = op.inputs[0]
        return (x, ("activation", op.type)) if chained in (None, x) else None
    if op.type in ("BiasAdd", "BiasAddV1"):
        x, bias = op.inputs[0], constant(op, 1)
        if (op.type == "BiasAdd" and op.attrs.get("data_format", "NHWC") != "NHWC"
                or chained not in (None, x) or bias is None or bias.ndim != 1
                or (x.shape.rank or 0) < 2):
            return None                  # (the kernel's own checks stay where they apply)
        return x, ("add", bias)
    if op.type not in ("Mul", "Add", "AddV2", "Sub"):
        return None
    for i, j in [(0, 1)] if op.type == "Sub" else [(0, 1), (1, 0)]:
        x, value = op.inputs[i], constant(op, j)
        if value is not None and constant(op, i) is None and chained in (None, x):
            if op.type == "Mul":
                return x, ("mul", value)
            return x, ("add", -value if op.type == "Sub" else value)
    return None


def _fits(source, stages):
    """Whether the constants are scalars or vectors along the source's last dim, of its
    dtype, and cannot broadcast it larger (its static rank and last dim say so)."""
    dims = source.shape.as_list() if source.shape.rank is not None else None
    for _, value in stages:
        if value.dtype != source.dtype.np_dtype or dims is None or value.ndim > len(dims):
            return False
        if any(d != 1 for d in value.shape[:-1]):
            return False
        if value.size != 1 and (not dims or dims[-1] != value.shape[-1]):
            return False
    return True


def _vectors(stages):
    """The stages with their constants as channel_chain takes them: scalars, or
    contiguous vectors."""
    return tuple((kind, value.reshape(()) if value.size == 1
                  else np.ascontiguousarray(value.reshape(-1))) for kind, value in stages)
