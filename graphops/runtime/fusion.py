"""Elementwise chains fused into one step when a plan is built, as TF's grappler remapper
fuses a conv's BiasAdd and Relu, and a frozen model's batch-norm arithmetic.

A chain is a run of two or more host nodes, each the only reader of the one before (no
fetch or feed of a node inside it, and no node waiting on one by a control edge), that
computes ``activation(x op v op v ...)``: up to ``MAX_STAGES`` products, sums and
differences with per-channel operands (constants, or tensors of fully known static shape,
such as a variable's bias, read at run time), left to right, then optionally an activation:

* a node whose kernel declares a ``chain_stage`` (``OpKernel``): "mul" by an operand,
  "add" of one, "sub" of one (x first), or a channels-last "bias_add" (Mul, AddV2, Sub,
  BiasAdd/BiasAddV1);
* one whose kernel declares a ``chain_activation`` (Relu, Relu6), which ends the chain.

Operands (constants are folded values, see ``constant_folding``) are scalars or vectors
of at most ``CHAIN_CHUNK`` values along x's last dim, of x's dtype (float32 or float64),
and x's static shape must keep them from broadcasting it larger. The chain's last node
then runs as one step (``steps.ChainStep``) and the nodes before it get none. At run
time the step takes the fused path, ``kernel_util.channel_chain`` (one pass over memory
instead of two to four, each step rounded as the separate kernels round it, so the same
values; a NaN met with another may keep the other's sign), when x is what the plan
expected (its last dim, rank and dtype, and within the memory budget) and holds at least
``CHAIN_MIN_SIZE`` values; otherwise it runs the nodes' own kernels (their prepared calls)
one after the other, with their own errors.

Swish, ``x * sigmoid(x)`` (a "mul" and a ``swish_gate`` kernel, either order, the gate's
output read by the product alone; Keras's ``x * sigmoid(beta * x)`` too), fuses likewise
into one step (``Swish``), as TF's remapper fuses it for oneDNN: one compiled pass over a
float32 x giving the same bits as the kernels. So does a residual block's
``Relu(Add(a, b))`` of two run-time tensors (an "add" then an activation: ``SumActivation``,
as TF fuses a conv's Add + Relu), when a and b come with one shape; where a is a fused
conv's output that nothing else reads (a ``ConvChain`` below), the two join in one step
(``ConvSumActivation``) that adds b and applies the activation over the conv's fresh
output in place.

A chain on the output of a float32 conv whose kernel declares ``chain_epilogue`` (Conv2D,
Conv3D, DepthwiseConv2dNative, and their input gradients: a transposed conv's BiasAdd and
activation), channels last, that nothing else reads joins the conv in one step
(``ConvChain``, TF's _FusedConv2D/3D; one node is chain enough there): the conv's kernel
takes the chain as an epilogue and applies it while each block of its output is in the
cache (the few-channel and direct loops; the other paths apply it after, on every core),
with the same bits.

Squeeze-and-excite blocks, built of these fused steps and a few nodes, then run as one
step (``squeeze_excite``).

The runtime knows no op by name: it reads these declarations from each node's kernel.
"""

import collections
import math

import numpy as np

from graphops.kernels.support.kernel_util import (CHAIN_ACTIVATIONS, CHAIN_CHUNK,
                                                  PARALLEL_MIN_SIZE_COMPUTE,
                                                  PARALLEL_MIN_SIZE_FRESH, chain_tiles,
                                                  channel_chain, compiled_cpu,
                                                  compiled_elementwise)
from graphops.registry import memory
from graphops.registry.conv_family import CONV_OPS
from graphops.registry.conv_shapes import backprop_geometry, conv_params, forward_geometry
from graphops.runtime import elementwise_clusters, squeeze_excite

FUSED_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
MAX_STAGES = 3
# a Chain's x from which its fused pass runs: below it the nodes' prepared calls cost less
# than the pass's arguments (a run-time operand's tiles made anew each run among them)
CHAIN_MIN_SIZE = 1 << 12
ARITHMETIC = ("mul", "add", "sub")      # the chain_stage kinds channel_chain applies
CHECKED_SHAPES = 64    # operand shapes a ConvChain keeps its shape checks' answers for
# ConvSumActivation: values from which both cores add (the conv's threads left its output in
# both cores' caches; ResNet50 at batch 1, residual tensors of 8K-64K values: 12.46 ms with
# one thread for all of them, 12.07 from 4K)
RESIDUAL_PARALLEL_MIN_SIZE = 1 << 13


def _kept(table, key, check):
    """``check()``'s answer for ``key``, kept in ``table`` (emptied when it holds
    ``CHECKED_SHAPES``): a step sees the same operand shapes run after run."""
    if key not in table:
        if len(table) >= CHECKED_SHAPES:
            table.clear()
        table[key] = check()
    return table[key]


class Chain:
    """A fused chain: its ``inputs`` (the source tensor, then the tensors its stages read at
    run time) and its ``parts``, one ``(op, x_index, operand, stage)`` per node in order
    (the last node stands for the chain; ``x_index`` the input the chain's value enters;
    ``operand`` the other input: a constant array, the index of a run-time input, or None;
    ``stage`` ``(chain_stage, operand)`` or ``("activation", chain_activation)``)."""

    def __init__(self, source, parts):
        self.inputs, self.parts = [source], []
        for op, x_index, operand, stage in parts:       # run-time operands -> input indices
            if operand is not None and not isinstance(operand, np.ndarray):
                self.inputs.append(operand)
                operand = len(self.inputs) - 1
                stage = (stage[0], operand)
            self.parts.append((op, x_index, operand, stage))
        self.ops = [op for op, *_ in parts]
        self.expected = [tuple(t.shape.as_list()) for t in self.inputs[1:]]
        self.stages = [("add" if kind == "bias_add" else kind, value)  # channel_chain's
                       for *_, (kind, value) in self.parts if kind != "activation"]
        last = parts[-1][3]
        self.activation = last[1] if last[0] == "activation" else None
        self.dtype = source.dtype.np_dtype
        shapes = [(stage[0] == "bias_add", _shape(operand))
                  for _, _, operand, stage in parts if operand is not None]
        sized = [math.prod(shape) for bias, shape in shapes if bias or math.prod(shape) > 1]
        self.cols = sized[0] if sized else None       # x's last dim, when a vector needs it
        self.min_rank = max([2 if bias else len(shape) for bias, shape in shapes] + [0])
        # with constants alone, the stages and their tiles are the same every run
        self.fixed = self._stages(()) if len(self.inputs) == 1 else None
        self.tiles = (chain_tiles(self.fixed, self.cols or 1, self.dtype)
                      if self.fixed is not None else None)

    def accepts(self, values):
        """Whether the step runs the fused pass on the inputs' ``values``: they `fit` it,
        and x has at least ``CHAIN_MIN_SIZE`` values (below that the nodes' prepared calls
        cost less than the pass's arguments)."""
        x = values[0]
        return isinstance(x, np.ndarray) and x.size >= CHAIN_MIN_SIZE and self.fits(values)

    def fits(self, values):
        """Whether the fused pass gives what the nodes' kernels give for the inputs'
        ``values``: x of the dtype, rank and last dim the plan saw (the operands do not
        broadcast it larger, and BiasAdd finds its channels) and (the binary ops check it)
        within the memory budget; run-time operands of x's dtype and their static shapes."""
        for value in values:
            if not (isinstance(value, np.ndarray) and value.dtype == self.dtype):
                return False
        for value, shape in zip(values[1:], self.expected):
            if value.shape != shape:
                return False
        x = values[0]
        return (x.ndim >= self.min_rank and (self.cols is None or x.shape[-1] == self.cols)
                and x.nbytes <= memory.get_memory_budget())

    def apply(self, values, run=None):
        """The chain's value for accepted input ``values`` (``run``: see ``ConvChain``)."""
        stages = self.fixed if self.fixed is not None else self._stages(values)
        return channel_chain(values[0], stages, self.activation, self.tiles)

    def _stages(self, values):
        """The stages with their operands as channel_chain takes them: scalars, or
        contiguous vectors."""
        return [(kind, _vector(values[v] if isinstance(v, int) else v))
                for kind, v in self.stages]


class SumActivation:
    """A fused ``relu(a + b)`` (or Relu6): an "add" of two run-time tensors read only by
    the activation (a residual block's), with a Chain's ``inputs`` ([a, b]), ``ops`` and
    ``parts`` (for the nodes' own kernels); ``kind``: the activation kernel's
    ``chain_activation``, whose cap ``CHAIN_ACTIVATIONS`` gives."""

    def __init__(self, add, activation, kind):
        self.inputs, self.ops = list(add.inputs), [add, activation]
        self.parts = [(add, 0, 1, ("add", 1)), (activation, 0, None, ("activation", kind))]
        cap = CHAIN_ACTIVATIONS[kind]
        self.bounded, self.cap = cap is not None, 0 if cap is None else cap

    def accepts(self, values):
        """Whether the compiled pass takes a and b: arrays of one shape and float dtype,
        contiguous, large enough to gain; others (broadcasts) run the kernels."""
        a, b = values
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)
                and a.dtype == b.dtype and compiled_cpu(np, a, b, dtypes=FUSED_DTYPES))

    def apply(self, values, run=None):
        """act(a + b) for accepted values: on every core from ``PARALLEL_MIN_SIZE_FRESH``
        values, as a residual block's a is a conv's fresh result."""
        a, b = values
        return compiled_elementwise("sum_activation", a, a, b, self.bounded, a.dtype.type(0),
                                    a.dtype.type(self.cap),
                                    parallel_from=PARALLEL_MIN_SIZE_FRESH)


class Swish:
    """A fused ``x * sigmoid(beta * x)`` (Keras's swish; ``tf.nn.silu`` has no beta): the
    "mul" of x and the ``swish_gate`` of x, or of x times a scalar constant beta, with a
    Chain's ``inputs`` (x alone), ``ops`` and ``parts`` (for the nodes' own kernels).
    ``scaling``: None, or the beta product's ``(op, x_index, beta)``."""

    def __init__(self, x, scaling, sigmoid, mul, index):
        self.inputs, self.ops, self.parts = [x], [], []
        self.beta = np.float32(1)            # x * 1 is x, bit for bit (NaN, -0 included)
        if scaling is not None:
            op, x_index, beta = scaling
            self.ops.append(op)
            self.parts.append((op, x_index, beta, ("mul", beta)))
            self.beta = np.float32(beta.reshape(()))
        self.ops += [sigmoid, mul]
        self.parts += [(sigmoid, 0, None, ("swish_gate", None)), (mul, index, 0, ("mul", 0))]

    def accepts(self, values):
        """Whether the compiled pass takes x (float32, contiguous: the Sigmoid kernel's
        own pass at any size); others run the kernels (same shapes: none checks a budget
        or can fail)."""
        x = values[0]
        return isinstance(x, np.ndarray) and compiled_cpu(np, x, dtypes=(np.dtype(np.float32),),
                                                          min_size=0)

    def apply(self, values, run=None):
        """x * sigmoid(beta * x) for an accepted x."""
        return compiled_elementwise("swish", values[0], values[0], self.beta,
                                    parallel_from=PARALLEL_MIN_SIZE_COMPUTE)


class ConvChain:
    """A ``chain_epilogue`` conv (channels-last, float32) and the Chain after it as one
    step, as TF's remapper makes _FusedConv2D/3D of a conv, its BiasAdd and Relu: the
    conv's kernel applies the chain's stages and activation to its output as it writes it
    (the few-channel and direct loops while a block is in the cache, the other paths
    after), so the output is not read and written a second time. ``inputs``: the conv's
    (x, filter, or an input gradient's sizes, filter, dy), then the chain's run-time
    operands; ``parts``: the conv (its operands the indices of its other inputs), then the
    chain's parts, for the nodes' own kernels."""

    def __init__(self, conv, chain):
        self.conv, self.chain = conv, chain
        self.operands = len(conv.inputs)   # (x, filter), or (input sizes, filter, dy)
        self.sizes = CONV_OPS[conv.type].sizes_name is not None     # input 0 int sizes
        self.inputs = list(conv.inputs) + chain.inputs[1:]
        self.ops = [conv] + chain.ops
        shift = self.operands - 1       # the chain's run-time operands follow the conv's
        self.parts = [(conv, 0, tuple(range(1, self.operands)), ("conv", None))] + [
            (op, index, operand + shift if isinstance(operand, int) else operand, stage)
            for op, index, operand, stage in chain.parts]
        self.params = conv_params(conv.type, lambda name: conv.attrs[name])
        self.checked = {}      # the answers of ``accepts`` by operand shapes and budget

    def accepts(self, values):
        """Whether the conv's kernel would take x and the filter (float32 arrays its shape
        checks pass) and the chain its output and run-time operands; else the nodes'
        kernels run one after the other, with their own errors. The shape checks' answer
        is kept per operand shapes (and memory budget): a step sees the same ones."""
        if not all(isinstance(v, np.ndarray) and (v.dtype == np.float32 or self.sizes and i == 0)
                   for i, v in enumerate(values)):
            return False
        return _kept(self.checked, (tuple(v.shape for v in values),
                                    memory.get_memory_budget()), lambda: self._fits(values))

    def _fits(self, values):
        try:
            shape = self.output_shape(values[:self.operands])
        except Exception:       # the conv's kernel raises it, naming the conv
            return False
        if shape is None:
            return False
        output = np.broadcast_to(np.float32(0), shape)
        return self.chain.fits([output] + values[self.operands:])

    def output_shape(self, operands):
        """The conv's output shape for its ``operands`` after its shape checks, or None
        where a sizes vector does not give it whole (Conv2DBackpropInput's [H, W] form)."""
        if len(operands) == 2:
            x, w = operands
            return tuple(forward_geometry(self.conv.type, self.params, x.shape,
                                          w.shape).output_shape)
        sizes, w, dy = operands
        if not self.sizes:
            shape = sizes.shape
        elif sizes.ndim == 1 and sizes.size == dy.ndim:
            shape = tuple(int(v) for v in sizes)
        else:
            return None
        return tuple(backprop_geometry(self.conv.type, self.params, list(shape), w.shape,
                                       dy.shape).output_shape)

    def apply(self, values, run):
        """The chain's value of the conv's output: ``run(inputs, epilogue)`` runs the conv's
        kernel with the chain as its epilogue."""
        chain = self.chain
        stages = (chain.fixed if chain.fixed is not None
                  else chain._stages([None] + values[self.operands:]))
        tiles = chain.tiles if chain.fixed is not None else None
        return run(values[:self.operands], (stages, chain.activation, tiles))


class ConvSumActivation:
    """A ``ConvChain`` whose output a residual block's ``SumActivation`` alone reads, as one
    step: the conv's kernel applies the chain as it writes, then ``act(y + b)`` overwrites
    its fresh output y in one compiled pass, on every core from
    ``RESIDUAL_PARALLEL_MIN_SIZE`` values (y is still in their caches), with no step,
    allocation or pass over a new array between them. ``inputs``: the ConvChain's, then
    b; ``parts``: the ConvChain's, then the add (y entering as its input ``index``) and
    the activation, for the nodes' own kernels."""

    def __init__(self, conv_chain, residual, index):
        self.conv, self.conv_chain, self.residual = conv_chain.conv, conv_chain, residual
        self.index = index
        add, activation = residual.ops
        self.inputs = conv_chain.inputs + [add.inputs[1 - index]]
        self.ops = conv_chain.ops + residual.ops
        b = len(self.inputs) - 1
        self.parts = conv_chain.parts + [(add, index, b, ("add", b)), residual.parts[1]]
        self.matching = {}     # whether b has the conv's output shape, by operand shapes

    def accepts(self, values):
        """Whether the ConvChain accepts its values and b is a contiguous float32 array of
        the conv's output shape (else the nodes' kernels run, with their own errors)."""
        *conv_values, b = values
        if not (isinstance(b, np.ndarray) and b.dtype == np.float32 and b.flags.c_contiguous
                and self.conv_chain.accepts(conv_values)):
            return False
        chain = self.conv_chain
        return _kept(self.matching, tuple(v.shape for v in values),
                     lambda: chain.output_shape(conv_values[:chain.operands]) == b.shape)

    def apply(self, values, run):
        """act(conv chain's y + b), written over y (the conv kernel's own new array)."""
        y = np.ascontiguousarray(self.conv_chain.apply(values[:-1], run))
        terms = (y, values[-1]) if self.index == 0 else (values[-1], y)   # NaN signs: in order
        return compiled_elementwise("sum_activation", y, *terms, self.residual.bounded,
                                    np.float32(0), np.float32(self.residual.cap),
                                    parallel_from=RESIDUAL_PARALLEL_MIN_SIZE, out=y)


def fuse_chains(ops, placements, kernels, folded, fed, readers, aliases, replaced):
    """{op id of a chain's last node: its Chain} for the chains among ``ops`` (topologically
    ordered, with their placements and ``(construction, kernel)`` pairs, whose declarations
    say what fuses); ``folded``: the folded values by op id, ``fed``: fed tensor keys,
    ``readers``: ``constant_folding.reader_counts``; ``aliases`` and ``replaced``:
    ``constant_folding.fold_scales``' rewrites. A folded-away product is seen through (the
    chain reads on from the output it stands for) and a scaled bias stands for its
    constant. ``SumActivation``, ``Swish`` and ``ConvChain`` steps come in the same dict,
    then the ``squeeze_excite`` blocks (which take some of those in) and the
    ``elementwise_clusters`` of the nodes left."""
    return _Fusion(ops, placements, kernels, folded, fed, readers, aliases, replaced).run()


class _Fusion:
    """What ``fuse_chains`` reads of a plan (each node's kernel, its readers, the folds)
    and the fused steps claimed so far (``fused``; their nodes are ``taken``)."""

    def __init__(self, ops, placements, kernels, folded, fed, readers, aliases, replaced):
        self.ops, self.folded, self.fed, self.readers = ops, folded, fed, readers
        self.aliases, self.replaced = aliases, replaced
        self.on_host = {op._id: placed.device.type.is_host
                        for op, placed in zip(ops, placements)}
        self.kernels = {op._id: kernel for op, (_, kernel) in zip(ops, kernels)}
        self.consumers = collections.defaultdict(list)
        self.controlling = set()
        for op in ops:
            for t in op.inputs:
                self.consumers[(t.op._id, t.value_index)].append(op)
            self.controlling.update(c._id for c in op.control_inputs)
        self.fused, self.taken = {}, set()
        self.position = {op._id: i for i, op in enumerate(ops)}

    def run(self):
        for op in self.ops:     # residual sums and swishes first: the chains cannot take them
            self.claim(self.sum_activation(op) or self.swish(op))
        for op in self.ops:
            self.claim(self.chain_from(op))
        for block in squeeze_excite.find_blocks(self, ConvChain, Swish):
            self.claim(block)
        for fused in list(self.fused.values()):
            self.join_conv(fused)
        self.fused.update(elementwise_clusters.find_clusters(self))
        return self.fused

    def join_conv(self, fused):
        """A ``SumActivation`` with the ``ConvChain`` its add alone reads (the later one
        where both inputs have one) joined into one ``ConvSumActivation`` step, which
        stands for the activation."""
        if type(fused) is not SumActivation:
            return
        add = fused.ops[0]
        joins = [(self.position[chain.ops[-1]._id], index, chain)
                 for index, t in enumerate(add.inputs)
                 if type(chain := self.fused.get(t.op._id)) is ConvChain
                 and self.only_reader(t)[0] is add]
        if joins:
            _, index, chain = max(joins, key=lambda join: join[0])
            del self.fused[chain.ops[-1]._id]
            self.fused[fused.ops[-1]._id] = ConvSumActivation(chain, fused, index)

    def claim(self, fused):     # the fused step stands for its last node; its nodes are taken
        if fused is not None:
            self.taken.update(o._id for o in fused.ops)
            self.fused[fused.ops[-1]._id] = fused

    def declared(self, op, name):
        """The ``OpKernel`` attribute ``name`` of op's kernel (None for a node outside the
        plan, which has none)."""
        return getattr(self.kernels.get(op._id), name, None)

    def operand(self, op, j):
        """Input j of op as a stage takes it: the constant it stands for, else the tensor
        itself when its static shape is fully known (a run-time operand), else None."""
        t = op.inputs[j]
        value = self.replaced.get(op._id, {}).get(j)
        if value is None and t.op._id in self.folded:
            value = self.folded[t.op._id][t.value_index]
        if isinstance(value, np.ndarray):
            return value
        return t if t.shape.is_fully_defined() else None

    def runs_here(self, op):    # a host float node the plan leaves to run (none outside it)
        return (self.on_host.get(op._id, False) and op._id not in self.folded
                and op._id not in self.aliases and op._id not in self.taken
                and len(op.outputs) == 1 and (op._id, 0) not in self.fed
                and op.outputs[0].dtype.np_dtype in FUSED_DTYPES)

    def only_reader(self, t):   # the one node reading t, through a folded-away product
        key = (t.op._id, t.value_index)
        if (self.readers[key] != 1 or len(self.consumers[key]) != 1
                or t.op._id in self.controlling):
            return None, None
        after = self.consumers[key][0]
        return self.only_reader(after.outputs[0]) if after._id in self.aliases else (after, t)

    def sum_activation(self, add):  # relu(a + b) of run-time a and b of one static shape
        if not (self.declared(add, "chain_stage") == "add" and self.runs_here(add)
                and _same_shapes(*add.inputs)
                and not any(isinstance(self.operand(add, j), np.ndarray) for j in (0, 1))):
            return None
        act, read = self.only_reader(add.outputs[0])
        if (act is None or self.declared(act, "chain_activation") not in CHAIN_ACTIVATIONS
                or read.op._id != add._id or not self.runs_here(act)):
            return None
        return SumActivation(add, act, self.kernels[act._id].chain_activation)

    def swish(self, gate):      # x * sigmoid(x) or x * sigmoid(x * beta)
        if not (self.declared(gate, "swish_gate") and self.runs_here(gate)
                and gate.outputs[0].dtype.np_dtype == np.float32):
            return None
        mul, read = self.only_reader(gate.outputs[0])
        if (mul is None or self.declared(mul, "chain_stage") != "mul"
                or read.op._id != gate._id or not self.runs_here(mul)):
            return None
        index = next(i for i, t in enumerate(mul.inputs) if _same(t, read))
        for x, scaling in self.swish_sources(gate):
            if _same(mul.inputs[1 - index], x):
                return Swish(x, scaling, gate, mul, index)
        return None

    def swish_sources(self, gate):  # (x, scaling) pairs the gate may compute on, best first
        z = gate.inputs[0]
        scale = z.op
        if (self.declared(scale, "chain_stage") == "mul" and self.runs_here(scale)
                and self.only_reader(z)[0] is gate):
            for i in (0, 1):
                beta = self.operand(scale, 1 - i)
                if (isinstance(beta, np.ndarray) and beta.size == 1
                        and not isinstance(self.operand(scale, i), np.ndarray)
                        and _fits(scale.inputs[i], [beta])):
                    yield scale.inputs[i], (scale, i, beta)
        yield z, None

    def chain_from(self, op):
        """The Chain (a ConvChain after a conv that takes it) that starts at ``op``, or
        None: the parts that follow, each the one reader of the one before, up to
        ``MAX_STAGES`` arithmetic stages and an activation; two parts at least, but for a
        conv's epilogue (a BiasAdd, or a frozen batch norm's shift, read by a swish)."""
        first = self.part(op, None)
        if first is None:
            return None
        source, parts = first[0], [(op, *first[1:])]
        arithmetic = int(first[3][0] != "activation")
        while parts[-1][3][0] != "activation":
            after, read = self.only_reader(parts[-1][0].outputs[0])
            nxt = None if after is None else self.part(after, read)
            if nxt is None or (nxt[3][0] != "activation" and arithmetic == MAX_STAGES):
                break
            arithmetic += nxt[3][0] != "activation"
            parts.append((after, *nxt[1:]))
        conv = self.conv_source(source, op)
        if (len(parts) < 2 and conv is None) or \
                not _fits(source, [p[2] for p in parts if p[2] is not None], conv is not None):
            return None
        chain = Chain(source, parts)
        return chain if conv is None else ConvChain(conv, chain)

    def conv_source(self, source, first):
        """The float32 epilogue conv whose output ``source`` is (or stands for, through a
        product folded into its filter), read by the chain's ``first`` node alone; None
        where there is none."""
        conv = self.aliases.get(source.op._id, source.op)
        reader, _ = self.only_reader(conv.outputs[0])
        if (self.declared(conv, "chain_epilogue") and self.runs_here(conv)
                and source.dtype.np_dtype == np.float32 and reader is first):
            return conv
        return None

    def part(self, op, chained):
        """``(x, x_index, operand, stage)`` when ``op`` runs here and is a chain part applied
        to its input ``x`` (which must be ``chained`` when given): stage ``(chain_stage,
        operand)``, or ``("activation", chain_activation)`` with no operand; else None."""
        if not self.runs_here(op):
            return None
        kernel = self.kernels[op._id]
        if kernel.chain_activation in CHAIN_ACTIVATIONS:
            x = op.inputs[0]
            return (x, 0, None, ("activation", kernel.chain_activation)
                    ) if chained in (None, x) else None
        if kernel.chain_stage == "bias_add":
            return self.bias_part(op, chained)
        if kernel.chain_stage in ARITHMETIC:
            return self.arithmetic_part(op, chained, kernel.chain_stage)
        return None

    def bias_part(self, op, chained):
        """``part`` of a "bias_add": input 1 a vector along x's last dim, channels last (a
        conv's output's last dim may be unknown: ``Chain.accepts`` checks it at run time)."""
        x, bias = op.inputs[0], self.operand(op, 1)
        dims = x.shape.as_list() if x.shape.rank is not None else []
        unknown = bool(dims) and dims[-1] is None and self.declared(x.op, "chain_epilogue")
        if (chained not in (None, x) or bias is None or len(_shape(bias)) != 1
                or len(dims) < 2 or dims[-1] != _shape(bias)[0] and not unknown):
            return None                  # (the kernel's own checks stay where they apply)
        return x, 0, bias, ("bias_add", bias)

    def arithmetic_part(self, op, chained, kind):
        """``part`` of a "mul", "add" or "sub" (x first: not commutative)."""
        for i, j in [(0, 1)] if kind == "sub" else [(0, 1), (1, 0)]:
            x, value = op.inputs[i], self.operand(op, j)
            if (value is not None and not isinstance(self.operand(op, i), np.ndarray)
                    and chained in (None, x) and _fits(x, [value])
                    and not (chained is not None and _same(value, chained))):
                return x, i, value, (kind, value)
        return None


def _same_shapes(a, b):
    """Whether tensors a and b may have one shape (their static shapes say nothing else)."""
    return (a.shape.rank is not None and a.shape.rank == b.shape.rank
            and a.shape.is_compatible_with(b.shape))


def _same(operand, tensor):
    """Whether a run-time operand is ``tensor`` (x * x: the chain's own value)."""
    return (not isinstance(operand, np.ndarray) and operand.op._id == tensor.op._id
            and operand.value_index == tensor.value_index)


def _shape(operand):
    """A constant's shape, or a run-time operand's static one."""
    return operand.shape if isinstance(operand, np.ndarray) else tuple(operand.shape.as_list())


def _fits(source, operands, conv_output=False):
    """Whether the operands are scalars or vectors of at most ``CHAIN_CHUNK`` values along
    the source's last dim, of its dtype, and cannot broadcast it larger (its static rank
    and last dim say so; a conv's output's last dim only where known, as a transposed
    conv's sizes vector may give it at run time: ``ConvChain.accepts`` checks it then)."""
    if source.shape.rank is None:
        return False
    dims = source.shape.as_list()
    for value in operands:
        shape = _shape(value)
        dtype = value.dtype if isinstance(value, np.ndarray) else value.dtype.np_dtype
        if (dtype != source.dtype.np_dtype or len(shape) > len(dims)
                or any(d != 1 for d in shape[:-1])):
            return False
        if math.prod(shape) == 1:
            continue
        known = dims[-1] is not None or not conv_output
        if (known and dims[-1] != shape[-1]) or shape[-1] > CHAIN_CHUNK:
            return False
    return True


def _vector(value):
    """An operand's value as channel_chain takes it: a scalar, or a contiguous vector."""
    return value.reshape(()) if value.size == 1 else np.ascontiguousarray(value.reshape(-1))
