"""Elementwise chains fused into one step when a plan is built, as TF's grappler remapper
fuses a conv's BiasAdd and Relu, and a frozen model's batch-norm arithmetic.

A chain is a run of two or more host nodes, each the only reader of the one before (no
fetch or feed of a node inside it, and no node waiting on one by a control edge), that
computes ``activation(x op v op v ...)``: up to ``MAX_STAGES`` products, sums and
differences with constants, left to right, then optionally an activation:

* ``Mul`` by a constant, ``Add``/``AddV2`` of one, ``Sub`` of one (x first), or a
  channels-last ``BiasAdd``/``BiasAddV1`` with a constant bias;
* ``Relu`` or ``Relu6``, which ends the chain.

Constants (folded values, see ``constant_folding``) are scalars or vectors of at most
``CHAIN_CHUNK`` values along x's last dim, of x's dtype (float32 or float64), and x's
static shape must keep them from broadcasting it larger. The chain's last node then runs
as one step (``executor._ChainStep``) and the nodes before it get none. At run time the
step takes the fused path, ``kernel_util.channel_chain`` (one pass over memory instead of
two to four, each step rounded as the separate kernels round it, so the same values; a NaN
met with another may keep the other's sign), when x is what the plan expected (its last
dim, rank and dtype, and within the memory budget); otherwise it runs the nodes' own
kernels one after the other, with their own errors.
"""

import collections

import numpy as np

from kernels.kernel_util import CHAIN_CHUNK, chain_tiles, channel_chain
from registry import memory

FUSED_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
MAX_STAGES = 3
FUSED_ACTIVATIONS = ("Relu", "Relu6")


class Chain:
    """A fused chain: its ``source`` tensor and its ``parts``, one ``(op, x_index, constant,
    stage)`` per node in order (the last node stands for the chain; ``x_index`` the input
    the chain's value enters, ``constant`` the other input's value or None, ``stage``
    ``("mul" | "add" | "sub", constant)`` or ``("activation", op type)``)."""

    def __init__(self, source, parts):
        self.source, self.parts = source, parts
        self.ops = [op for op, *_ in parts]
        self.stages = [_vector(stage) for *_, stage in parts if stage[0] != "activation"]
        last = parts[-1][3]
        self.activation = last[1] if last[0] == "activation" else None
        self.dtype = source.dtype.np_dtype
        constants = [c for _, _, c, _ in parts if c is not None]
        biased = any(op.type.startswith("BiasAdd") for op in self.ops)
        sized = [c.size for op, _, c, _ in parts
                 if c is not None and (c.size > 1 or op.type.startswith("BiasAdd"))]
        self.cols = sized[0] if sized else None       # x's last dim, when a vector needs it
        self.min_rank = max([c.ndim for c in constants] + [2 if biased else 0])
        self.tiles = chain_tiles(self.stages, self.cols or 1, self.dtype)

    def accepts(self, x):
        """Whether the fused pass gives what the nodes' kernels give for ``x``: of the
        dtype, rank and last dim the plan saw (the constants do not broadcast it larger,
        and BiasAdd finds its channels), and (the binary ops check it) within the memory
        budget."""
        return (isinstance(x, np.ndarray) and x.dtype == self.dtype
                and x.ndim >= self.min_rank
                and (self.cols is None or x.shape[-1] == self.cols)
                and x.nbytes <= memory.get_memory_budget())

    def apply(self, x):
        """The chain's value for an accepted ``x``."""
        return channel_chain(x, self.stages, self.activation, self.tiles)


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
        """``_part`` for a host float node the plan leaves to run."""
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
        source, parts = first[0], [(op, *first[1:])]
        arithmetic = int(first[3][0] != "activation")
        while parts[-1][3][0] != "activation":
            after, read = only_reader(parts[-1][0].outputs[0])
            nxt = None if after is None else part(after, read)
            if nxt is None or (nxt[3][0] != "activation" and arithmetic == MAX_STAGES):
                break
            arithmetic += nxt[3][0] != "activation"
            parts.append((after, *nxt[1:]))
        if len(parts) < 2 or not _fits(source, [p[2] for p in parts if p[2] is not None]):
            continue
        taken.update(p[0]._id for p in parts)
        chains[parts[-1][0]._id] = Chain(source, parts)
    return chains


def _part(op, chained, constant):
    """``(x, x_index, constant, stage)`` when ``op`` is a chain part applied to its input
    ``x`` (which must be ``chained`` when given): stage ``("mul" | "add" | "sub",
    constant)``, or ``("activation", op type)`` with no constant; else None.
    ``constant(op, j)``: the constant op's input j stands for, or None."""
    if op.type in FUSED_ACTIVATIONS:
        x = op.inputs[0]
        return (x, 0, None, ("activation", op.type)) if chained in (None, x) else None
    if op.type in ("BiasAdd", "BiasAddV1"):
        x, bias = op.inputs[0], constant(op, 1)
        dims = x.shape.as_list() if x.shape.rank is not None else []
        if (op.type == "BiasAdd" and op.attrs.get("data_format", "NHWC") != "NHWC"
                or chained not in (None, x) or bias is None or bias.ndim != 1
                or len(dims) < 2 or dims[-1] != bias.size):
            return None                  # (the kernel's own checks stay where they apply)
        return x, 0, bias, ("add", bias)
    if op.type not in ("Mul", "Add", "AddV2", "Sub"):
        return None
    kind = {"Mul": "mul", "Sub": "sub"}.get(op.type, "add")
    for i, j in [(0, 1)] if op.type == "Sub" else [(0, 1), (1, 0)]:
        x, value = op.inputs[i], constant(op, j)
        if value is not None and constant(op, i) is None and chained in (None, x):
            return x, i, value, (kind, value)
    return None


def _fits(source, constants):
    """Whether the constants are scalars or vectors of at most ``CHAIN_CHUNK`` values along
    the source's last dim, of its dtype, and cannot broadcast it larger (its static rank
    and last dim say so)."""
    if source.shape.rank is None:
        return False
    dims = source.shape.as_list()
    for value in constants:
        if (value.dtype != source.dtype.np_dtype or value.ndim > len(dims)
                or any(d != 1 for d in value.shape[:-1])):
            return False
        if value.size != 1 and (dims[-1] != value.shape[-1] or value.size > CHAIN_CHUNK):
            return False
    return True


def _vector(stage):
    """A stage with its constant as channel_chain takes it: a scalar, or a contiguous
    vector."""
    kind, value = stage
    return kind, (value.reshape(()) if value.size == 1
                  else np.ascontiguousarray(value.reshape(-1)))
