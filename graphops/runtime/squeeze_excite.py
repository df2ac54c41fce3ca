"""Squeeze-and-excite blocks fused into one step when a plan is built.

A squeeze-and-excite block (SENet; EfficientNet, MobileNetV3 and RegNetY have one in most
stages) scales each channel of x ``[N, H, W, C]`` by a gate computed from x's channel
means: ``x * gate(conv2(act(conv1(mean(x)))))``, both convs 1x1 on the one position left.
Past the mean its tensors hold N*C values or fewer, so each of its eight or so steps
costs a plan far more in per-step work (a kernel's context, checks and dispatch, and the
caches they miss) than in math. The block runs as one step (``steps.BlockStep``): each
pointwise ConvChain as the one GEMM and epilogue its conv kernel runs on that route (the
same calls, so the same bits), a Swish as its compiled pass, and the other nodes (the
mean, a reshape, the gate, the product) by their own kernels. A fused part that does not
accept its values (another dtype or shape than the plan saw) runs its nodes' kernels one
after the other instead, with their own errors.

Where every part takes its values, a float32 block runs as one compiled pass instead
(``compiled.squeeze_excite.gated``, ``OnePass``): each part's call costs a plan tens of
microseconds on a slow core however few its values, the pass one call. It sums the
convs' products in its own order (float32, channel by channel) and the means as float64
sums in order of position, so its values are the nodes' within float32 rounding, not
their bits (nor a NaN's sign); the stages, swish, sigmoid and product round as the nodes'
kernels round them.

Found after the chains and swishes are claimed (``fusion._Fusion``), from declarations as
they are: the ``"mul"`` of x and a ``swish_gate`` of a pointwise ConvChain (a 1x1
channels-last filter, strides 1, no padding), whose input is (through nodes that forward
their input, such as a custom gradient's IdentityN) a Swish of, or directly, another such
ConvChain, whose input is (through one ``moves_data`` node, such as a reshape) an ``averages``
node's mean of the same x over dims 1 and 2. Every tensor inside is read inside alone.
"""

import numpy as np

from graphops.kernels.compiled import loops, usable
from graphops.kernels.conv_algorithms.gemm import gemm_forward
from graphops.kernels.support.kernel_util import (ACTIVATION_CODES,
                                                  PARALLEL_MIN_SIZE_COMPUTE, channel_chain)
from graphops.registry import memory
from graphops.runtime.elementwise_clusters import member_operands


class SqueezeExcite:
    """A fused block: ``ops`` (its nodes in plan order; the product, which stands for the
    block, last), ``inputs`` and ``operands`` (``elementwise_clusters.member_operands``)
    and ``parts`` in order, each ``(kind, members, fused, sources)``: "kernel" or
    "reshape" (a node run by its kernel; a reshape declares ``reshapes``), "forward" (a
    node whose output 0 is its input 0), "conv" (a pointwise
    ``fusion.ConvChain``) or "swish" (a ``fusion.Swish``), with its nodes' indices and the
    refs of the fused object's inputs."""

    def __init__(self, ops, parts):
        self.ops = ops
        self.inputs, self.operands, ref = member_operands(ops)
        index = {op._id: m for m, op in enumerate(ops)}
        self.parts = [(kind, [index[op._id] for op in members], fused,
                       [ref(t) for t in fused.inputs] if fused is not None else None)
                      for kind, members, fused in parts]
        self.outputs = [len(ops) - 1]
        self.one_pass = OnePass.of(self)

    def run(self, values, run_member):
        """The product's value for input ``values``; ``run_member(m, inputs)`` runs member
        m's kernel."""
        value = None if self.one_pass is None else self.one_pass.run(values)
        if value is not None:
            return value
        results = {}

        def read(ref):
            where, i = ref
            return values[i] if where == "input" else results[i]

        for kind, members, fused, sources in self.parts:
            last = members[-1]
            if kind == "forward":
                results[last] = read(self.operands[last][0])
                continue
            value = None if fused is None else _fused_value(kind, fused,
                                                            [read(r) for r in sources])
            if value is not None:
                results[last] = value
                continue
            for m in members:
                results[m] = run_member(m, [read(r) for r in self.operands[m]])
        return results[len(self.ops) - 1]


def _fused_value(kind, fused, inputs):
    """A fused part's value from its one pass, or None where it does not accept ``inputs``
    (a ConvChain: output within the memory budget too): a Swish's compiled pass, or a
    pointwise ConvChain's GEMM and epilogue (its conv kernel's calls on that route)."""
    if not fused.accepts(inputs):
        return None
    if kind == "swish":
        return fused.apply(inputs)
    chain = fused.chain
    return channel_chain(gemm_forward(*inputs), chain.fixed, chain.activation, chain.tiles,
                         in_place=True)


class OnePass:
    """A block whose parts are mean, a reshape or none, a pointwise conv, a swish or none,
    a pointwise conv, the gate and the product, run as one compiled pass
    (``compiled.squeeze_excite.gated``) where its parts take their values: a float32 x
    within the memory budget (the product's output), a reshape to ``[N, 1, 1, C]`` or
    ``[-1, 1, 1, C]`` (or a mean keeping its dims), filters ``[1, 1, C, R]`` and ``[1, 1,
    R, C]`` that the convs' checks pass (``ConvChain.accepts``). Elsewhere ``run`` gives
    None and the parts run one by one, with their own errors. The checks' answers are
    kept per operand shapes, dtypes and memory budget; the filters are read afresh on
    every run."""

    MAX_KEPT = 8           # operand signatures whose checks' answers are kept

    def __init__(self, block, parts):
        (_, (mean,), _, _), *rest = parts
        reshape = rest.pop(0)[1][0] if rest[0][0] == "reshape" else None
        self.first, self.second = [part[2] for part in rest if part[0] == "conv"]
        swish = [part[2] for part in rest if part[0] == "swish"]
        self.swish = (True, swish[0].beta) if swish else (False, np.float32(1))
        self.keeps_dims = bool(block.ops[mean].attrs.get("keep_dims", False))
        self.x = block.operands[mean][0]
        self.shape = block.operands[reshape][1] if reshape is not None else None
        self.filters = [sources[1] for kind, _, _, sources in rest if kind == "conv"]
        self.kept = {}

    @classmethod
    def of(cls, block):
        """The pass for ``block``, or None where its parts run in another order (a node
        between the mean and the first conv that does not declare ``reshapes`` is a
        "kernel" part there), or a part reads other
        tensors than x, the reshape's shape and the filters from outside (a chain's
        stages are constants: ``_Match.pointwise``)."""
        parts = [part for part in block.parts if part[0] != "forward"]
        kinds = [part[0] for part in parts]
        reshape, swish = "reshape" in kinds, "swish" in kinds
        if kinds != (["kernel"] + ["reshape"] * reshape + ["conv"] + ["swish"] * swish
                     + ["conv", "kernel", "kernel"]):
            return None
        if any(len(sources) != 2 for kind, _, _, sources in parts if kind == "conv"):
            return None
        one = cls(block, parts)
        refs = [one.x, *one.filters] + ([one.shape] if one.shape is not None else [])
        if (any(where != "input" for where, _ in refs)
                or one.x not in block.operands[len(block.ops) - 1]):
            return None
        return one

    def run(self, values):
        """The block's value for its input ``values`` by the compiled pass, or None where
        the parts do not take them."""
        x = values[self.x[1]]
        if not (type(x) is np.ndarray and x.dtype == np.float32 and x.ndim == 4 and x.size
                and usable()):
            return None
        n, c = x.shape[0], x.shape[3]
        if self.shape is None:
            if not self.keeps_dims:
                return None
        elif np.asarray(values[self.shape[1]]).tolist() not in ([n, 1, 1, c], [-1, 1, 1, c]):
            return None
        w1, w2 = values[self.filters[0][1]], values[self.filters[1][1]]
        if not (type(w1) is np.ndarray and type(w2) is np.ndarray):
            return None
        key = (x.shape, w1.shape, w2.shape, w1.dtype, w2.dtype, memory.get_memory_budget())
        checked = self.kept.get(key, False)
        if checked is False:
            if len(self.kept) >= self.MAX_KEPT:
                self.kept.clear()
            checked = self.kept[key] = self._checked(x, w1, w2)
        if checked is None:
            return None
        single, first, second = checked
        r = w1.shape[-1]
        x = np.ascontiguousarray(x)
        out = np.empty_like(x)
        loops("squeeze_excite", chunk=1, single=single).gated(
            x.reshape(n, -1, c), np.ascontiguousarray(w1).reshape(c, r), *first, *self.swish,
            np.ascontiguousarray(w2).reshape(r, c), *second, np.float32(0), np.float32(6),
            out.reshape(n, -1, c))
        return out

    def _checked(self, x, w1, w2):
        """``(single, first, second)`` for these operands' shapes: whether the pass runs on
        one thread, and each conv's chain as ``gated`` takes it; None where x exceeds the
        memory budget, a filter is not ``[1, 1, C, R]`` / ``[1, 1, R, C]`` or a conv's
        checks refuse it."""
        n, height, width, c = x.shape
        r = w1.shape[-1]
        if not (x.nbytes <= memory.get_memory_budget() and w1.shape == (1, 1, c, r)
                and w2.shape == (1, 1, r, c)
                and self.first.accepts([_stand_in((n, 1, 1, c)), w1])
                and self.second.accepts([_stand_in((n, 1, 1, r)), w2])):
            return None
        work = n * c * (height * width + 2 * r)
        return (n == 1 or work < PARALLEL_MIN_SIZE_COMPUTE, self._chain(self.first),
                self._chain(self.second))

    @staticmethod
    def _chain(conv):
        """A conv's chain of constant stages as ``gated`` takes it: the tiled stages, their
        kinds and the activation's code."""
        return (*conv.chain.tiles, ACTIVATION_CODES[conv.chain.activation])


def _stand_in(shape):
    """A float32 array of ``shape`` for shape checks (no memory of its own)."""
    return np.broadcast_to(np.float32(0), shape)


def find_blocks(fusion, conv_chain, swish):
    """[SqueezeExcite] among the nodes of ``fusion`` (a ``fusion._Fusion`` whose chains
    and swishes are claimed; ``conv_chain`` and ``swish`` its ConvChain and Swish
    classes). The fused parts a block takes leave ``fusion.fused``."""
    blocks = []
    for op in fusion.ops:
        block = _Match(fusion, conv_chain, swish).block(op)
        if block is not None:
            for kind, _, fused, _ in block.parts:
                if fused is not None:
                    del fusion.fused[fused.ops[-1]._id]
            blocks.append(block)
    return blocks


class _Match:
    """Matches one block backwards from its product (``block``), collecting its parts."""

    def __init__(self, fusion, conv_chain, swish):
        self.fusion, self.conv_chain, self.swish = fusion, conv_chain, swish
        self.parts = []

    def block(self, mul):
        f = self.fusion
        if not (f.declared(mul, "chain_stage") == "mul" and f.runs_here(mul)
                and mul.outputs[0].dtype.np_dtype == np.float32):
            return None
        found = _gate_and_x(mul)
        if found is None:
            return None
        gate, x = found
        if not (f.declared(gate, "swish_gate") and f.runs_here(gate)):
            return None
        second = self.pointwise(gate.inputs[0])
        source = None if second is None else self.forwarded(second.conv.inputs[0])
        first = None if source is None else self.activation(source)
        mean = None if first is None else self.mean(first.conv.inputs[0], x)
        if mean is None:
            return None
        self.parts += [("conv", second.ops, second), ("kernel", [gate], None),
                       ("kernel", [mul], None)]
        ops = sorted({op._id: op for _, members, _ in self.parts for op in members}.values(),
                     key=lambda op: f.position[op._id])
        if not self.closed(ops) or ops[-1] is not mul:
            return None
        order = {op._id: i for i, op in enumerate(ops)}
        parts = sorted(self.parts, key=lambda part: order[part[1][-1]._id])
        return SqueezeExcite(ops, parts)

    def pointwise(self, t):
        """The ConvChain of a forward conv ending at tensor t (output 0) with a 1x1
        channels-last filter, strides 1, no padding and constant stages; else None."""
        chain = self.fusion.fused.get(t.op._id)
        if not (isinstance(chain, self.conv_chain) and t.value_index == 0
                and chain.operands == 2 and chain.chain.fixed is not None
                and not self.fusion.declared(chain.conv, "depthwise_filter")):
            return None
        w = chain.conv.inputs[1].shape
        params = chain.params
        if not (params.channels_last and w.rank == 4 and w.as_list()[:2] == [1, 1]
                and all(s == 1 for s in params.strides)
                and not any(b or a for b, a in params.explicit_pads)
                and params.padding in ("VALID", "SAME", "EXPLICIT")):
            return None
        return chain

    def forwarded(self, t):
        """The tensor t stands for through host nodes forwarding their input (Identity,
        IdentityN: ``forwards_input(s)``), each joining the block."""
        f = self.fusion
        while f.declared(t.op, "forwards_input") or f.declared(t.op, "forwards_inputs"):
            op = t.op
            if not (f.on_host.get(op._id) and op._id not in f.taken
                    and op._id not in f.folded and not op.control_inputs):
                return None
            self.parts.append(("forward", [op], None))
            t = op.inputs[t.value_index]
        return t

    def activation(self, t):
        """The first pointwise ConvChain, read through a Swish or directly."""
        swish = self.fusion.fused.get(t.op._id)
        if isinstance(swish, self.swish) and t.value_index == 0:
            self.parts.append(("swish", swish.ops, swish))
            t = swish.inputs[0]
        first = self.pointwise(t)
        if first is not None:
            self.parts.append(("conv", first.ops, first))
        return first

    def mean(self, t, x):
        """The ``averages`` node of x over dims 1 and 2 that t is (or is read through one
        ``moves_data`` node, such as a reshape), joining the block; else None."""
        f = self.fusion
        op = t.op
        if f.declared(op, "moves_data") and f.runs_here(op):
            self.parts.append(("reshape" if f.declared(op, "reshapes") else "kernel", [op],
                               None))
            op = op.inputs[0].op
        axes = f.operand(op, 1) if len(op.inputs) == 2 else None
        if not (f.declared(op, "averages") and f.runs_here(op)
                and isinstance(axes, np.ndarray) and _same(op.inputs[0], x)
                and sorted(int(a) % 4 for a in axes.reshape(-1)) == [1, 2]):
            return None
        self.parts.append(("kernel", [op], None))
        return op

    def closed(self, ops):
        """Whether every tensor the block's nodes but the last make is read inside alone
        (or by a node folded for its shape, whose guard the block's kernels make good:
        each checks the shapes it is given): no fetch, feed, other reader or control edge."""
        f = self.fusion
        inside = {op._id for op in ops}
        if any(op._id in f.aliases or op._id in f.replaced or op._id in f.controlling
               for op in ops):
            return False
        for op in ops[:-1]:
            for t in op.outputs:
                key = (t.op._id, t.value_index)
                readers = [c for c in f.consumers[key] if c._id in inside]
                shape_readers = [c for c in f.consumers[key] if c._id in f.folded
                                 and f.declared(c, "reads_shape_only")]
                if key in f.fed or f.readers[key] != len(readers) + len(shape_readers) or (
                        readers and t.value_index != 0):
                    return False
        return True


def _gate_and_x(mul):
    """(the gate's node, x) of a product of x ``[N, H, W, C]`` (H, W and C known, H*W
    above 1) and a gate of rank 4 not known to be as large (``[N, 1, 1, C]`` at run time),
    either order; else None. Shapes decide which blocks are worth a step of their own, not
    what the block computes: each part computes its nodes' values whatever it is given."""
    shapes = [t.shape.as_list() if t.shape.rank == 4 else None for t in mul.inputs]
    for g in (0, 1):
        gate, x = shapes[g], shapes[1 - g]
        if (gate is not None and x is not None and None not in x[1:] and x[1] * x[2] > 1
                and gate[1] in (1, None) and gate[2] in (1, None) and gate[3] in (x[3], None)):
            return mul.inputs[g].op, mul.inputs[1 - g]
    return None


def _same(a, b):
    return a.op._id == b.op._id and a.value_index == b.value_index
