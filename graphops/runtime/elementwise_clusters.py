"""Clusters of elementwise nodes run as one step, as XLA's loop fusion runs them: an LSTM
cell's gates, a batch norm's arithmetic, an attention block's scaling and masking.

When a plan is built (after ``fusion``'s named chains have taken their nodes), host
nodes whose kernels declare ``elementwise`` (an instruction of
``constants.FUSED_OPCODES``, or "bias_add" for a channels-last BiasAdd), of one float
dtype, with no control edges, group with the elementwise nodes they read. Two groups merge
only where no path leaves one and re-enters the other through a node outside them (the
step would wait on itself). A cluster with ``MIN_MEMBERS`` nodes of its full shape,
reading at most ``FUSED_MAX_INPUTS`` tensors and giving at most ``FUSED_MAX_OUTPUTS``
read elsewhere (or fetched), becomes one step (``steps.ClusterStep``) in place of its
last node.

At run time its inputs' shapes pick a ``Recipe`` (kept per shape signature): the members
whose output has the cluster's full shape run as one compiled program
(``compiled.fused_elementwise``) over a rows x cols grid every input broadcasts onto with
two strides; members of smaller shapes (a batch norm's per-channel factors) run their own
kernels first and enter the program as inputs, unless the program computing them at the
full shape costs less (``_lifting_pays``: a layer norm's per-row factors over a short
sequence; the same values, broadcast). Whether the program or the members' kernels run a
signature is the cost estimate's choice where it is clear (``CONFIDENT``), else timed:
the signature's first runs take the two in turn (``WARM_UPS`` untimed, then ``TRIALS``
timed each) and the faster runs from then on, the estimate's choice unless the other is
``MARGIN`` times faster. Either gives the kernels' bits, so the choice moves only time.
Shapes the kernels would refuse (or that break the budget, or no grid fits) give no
recipe: the members' own kernels run one after the other, each error naming its node. The
runtime knows no op by name: it reads the declarations of each node's kernel.
"""

import collections
import math
import time

import numpy as np

from graphops.kernels.compiled import loops, usable
from graphops.kernels.compiled.constants import (FUSED_BINARY, FUSED_MAX_INPUTS,
                                                 FUSED_MAX_OUTPUTS, FUSED_OPCODES,
                                                 FUSED_SAME_SHAPE, FUSED_UNARY)
from graphops.kernels.support.kernel_util import PARALLEL_MIN_SIZE_COMPUTE, broadcast_shape
from graphops.registry import memory

MIN_MEMBERS = 3       # fewer: the program's call and loads cost what it saves
MAX_MEMBERS = 64
SIGNATURES = 16       # shape signatures a cluster keeps its recipes for
BIAS_ADD = "bias_add"
WIDE = frozenset(("exp", "log", "tanh", "sigmoid"))   # transcendentals: dearer per value
# Rough costs (ns) inside a plan's run on the 2-core reference machine (docs/performance.md),
# operands in the cache: the cluster step's own (its recipe's lookup, the flat sources, the
# compiled call's ten arguments, the outputs) and a kernel step's; per element, the
# program's load of an input or store of an output, its instruction, its float32
# transcendental (exp through float64), a NumPy kernel's pass and a transcendental kernel's.
CALL_NS, STEP_NS = 11000, 2300
TRANSFER_NS, INSTRUCTION_NS, WIDE_NS = 0.17, 0.05, 1.0
KERNEL_NS, WIDE_KERNEL_NS = 0.27, 0.7
CONFIDENT = 2.0       # how many times cheaper one estimate must be to decide untimed
WARM_UPS, TRIALS = 2, 3   # a timed signature's untimed and timed runs of each way
MARGIN = 1.2          # how many times faster the other way must be to beat the estimate's
_clock = time.perf_counter


def member_operands(ops):
    """(inputs, operands, ref) of fused nodes ``ops``: the tensors they read from outside;
    per node, its inputs as ``("input", k)`` into those or ``("member", m)`` (output 0 of
    node m); and ``ref(tensor)``, such a pair for any tensor the nodes read."""
    index = {op._id: m for m, op in enumerate(ops)}
    inputs, where = [], {}

    def ref(t):
        if t.op._id in index:
            return "member", index[t.op._id]
        key = (t.op._id, t.value_index)
        if key not in where:
            where[key] = len(inputs)
            inputs.append(t)
        return "input", where[key]

    return inputs, [[ref(t) for t in op.inputs] for op in ops], ref


class Cluster:
    """Fused elementwise nodes: ``ops`` (topologically ordered; the last stands for the
    cluster), ``kinds`` (each one's declared instruction), ``operands`` (per member, its
    inputs as ``("input", k)`` into ``inputs`` or ``("member", m)``), ``inputs`` (the
    tensors read from outside) and ``outputs`` (the member indices whose values are read
    outside or fetched, in that order)."""

    def __init__(self, ops, kinds, dtype, outputs_read):
        self.ops, self.kinds, self.dtype = ops, kinds, dtype
        self.inputs, self.operands, _ = member_operands(ops)
        self.outputs = [m for m, op in enumerate(ops) if outputs_read(op)]
        self.recipes = {}

    def run_members(self, members, values, run_member):
        """{m: value} of ``members`` (in order, each reading only inputs and earlier ones)
        computed by their kernels (``run_member(m, inputs)``) on input ``values``."""
        results = {}
        for m in members:
            results[m] = run_member(m, [values[i] if where == "input" else results[i]
                                        for where, i in self.operands[m]])
        return results

    def recipe(self, values):
        """The Recipe for input ``values`` (None: the members' kernels run instead)."""
        if not usable():
            return None
        dtype = self.dtype
        for v in values:
            if type(v) is not np.ndarray or v.dtype != dtype:
                return None
        key = (*[v.shape for v in values], memory.get_memory_budget())
        recipe = self.recipes.get(key, False)
        if recipe is False:
            if len(self.recipes) >= SIGNATURES:
                self.recipes.clear()
            recipe = self.recipes[key] = Recipe.make(self, [v.shape for v in values], key[-1])
        return recipe


class Recipe:
    """How one shape signature runs: ``small`` (member indices of a smaller shape than
    the cluster's, run by their kernels first; none where the program computes them
    too, see ``_lifting_pays``), ``sources`` (the program's inputs: ``("input", k)`` or
    ``("member", m)``), ``shape`` and ``size`` (the full shape's), ``plan`` (the grid and
    the program, as ``compiled.fused_elementwise.run`` takes them), ``function`` (the
    one-thread compiled function for sizes under ``PARALLEL_MIN_SIZE_COMPUTE``, which needs
    no thread settings; None: the parallel one), ``outputs`` (per cluster output:
    ``("program", k)`` or ``("member", m)``), ``prior`` (the estimate's way: "program" or
    "kernels"), ``path`` (the way chosen; None while the two are timed), ``times``
    (seconds of each way's runs while timed) and ``calls`` (the members' calls prepared
    for this signature, once their kernels have run it; None before, or where one has
    none)."""

    @staticmethod
    def make(cluster, input_shapes, budget):
        shapes = _member_shapes(cluster, input_shapes, budget)
        if shapes is None:
            return None
        full = _broadcast(shapes)
        if full is None or full not in shapes:
            return None
        small = [m for m, shape in enumerate(shapes) if shape != full]
        if small and _lifting_pays(cluster, small, math.prod(full)):
            recipe = Recipe._build(cluster, input_shapes, shapes, full, [])
            if recipe is not None and recipe.prior == "program":
                return recipe
        return Recipe._build(cluster, input_shapes, shapes, full, small)

    @staticmethod
    def _build(cluster, input_shapes, shapes, full, small):
        """The recipe whose kernels run members ``small`` and whose program the rest
        (members of a smaller shape among them computed at the full shape: the same
        values, broadcast), its way chosen by ``_prior`` or left to be timed; None where
        no grid fits or the program has fewer than ``MIN_MEMBERS`` instructions."""
        recipe = Recipe()
        recipe.shape, recipe.size, recipe.small = full, math.prod(full), small
        big = [m for m in range(len(shapes)) if m not in small]
        recipe.sources = _sources(cluster, big, set(small))
        exported = [m for m in cluster.outputs if m not in small]
        if len(recipe.sources) > FUSED_MAX_INPUTS or len(exported) > FUSED_MAX_OUTPUTS:
            return None
        source_shapes = [input_shapes[i] if kind == "input" else shapes[i]
                         for kind, i in recipe.sources]
        grid = _grid(full, source_shapes)
        if grid is None or len(big) < MIN_MEMBERS:
            return None
        recipe.prior, recipe.path = _prior(cluster, big, len(recipe.sources) + len(exported),
                                           recipe.size)
        recipe.times = {"program": [], "kernels": []}
        recipe.plan = _plan(grid, _program(cluster, big, recipe.sources, exported),
                            cluster.dtype, len(recipe.sources), len(exported))
        single = recipe.size < PARALLEL_MIN_SIZE_COMPUTE
        recipe.function = loops("fused_elementwise", single=True).run if single else None
        recipe.outputs = [("program", exported.index(m)) if m in exported else ("member", m)
                          for m in cluster.outputs]
        recipe.out_shape = (len(exported),) + full
        recipe.padding = FUSED_MAX_INPUTS - len(recipe.sources)
        recipe.calls = None
        return recipe

    def run(self, cluster, values, run_member, run_members):
        """The cluster's output values for input ``values`` the way chosen, or while the
        ways are timed the next to time; ``run_member(m, inputs)`` runs member m's kernel,
        ``run_members(values, recipe)`` the cluster's outputs by every member's (keeping
        in ``calls`` what it may reuse for this signature)."""
        if self.path == "program":
            return self._program(cluster, values, run_member)
        if self.path == "kernels":
            return run_members(values, self)
        times = self.times                  # the two in turn, the estimate's way first
        way = "program" if len(times["program"]) < len(times["kernels"]) + (
            self.prior == "program") else "kernels"
        start = _clock()
        outputs = (self._program(cluster, values, run_member) if way == "program"
                   else run_members(values, self))
        times[way].append(_clock() - start)
        if min(len(t) for t in times.values()) >= WARM_UPS + TRIALS:
            self.path = _faster(times, self.prior)
        return outputs

    def _program(self, cluster, values, run_member):
        """The outputs by the program (members ``small`` by their kernels first)."""
        member_values = cluster.run_members(self.small, values, run_member) if self.small \
            else None
        out = np.empty(self.out_shape, cluster.dtype)
        if self.size:
            sources = [_flat(values[i] if kind == "input" else member_values[i])
                       for kind, i in self.sources]
            sources += [sources[0]] * self.padding
            function = self.function
            if function is None:
                function = loops("fused_elementwise").run_parallel
            function(self.plan, out.reshape(len(out), self.size), *sources)
        return [out[i] if kind == "program" else member_values[i] for kind, i in self.outputs]


def grid_plan(cluster, input_shapes, rows, cols, strides):
    """The plan computing every member of ``cluster`` (a Cluster, or what gives its
    ``kinds``, ``operands``, ``outputs`` and ``dtype``) in one program over a ``rows`` x
    ``cols`` grid, input k read at ``strides[k]`` (row, column), where every member has the
    shape the inputs broadcast to (a loop program's cluster); None where one has not, or
    the kernels would refuse these shapes."""
    shapes = _member_shapes(cluster, input_shapes, memory.get_memory_budget())
    if shapes is None or len(set(shapes)) != 1 or shapes[0] != _broadcast(input_shapes):
        return None
    members = list(range(len(cluster.kinds)))
    sources = [("input", k) for k in range(len(input_shapes))]
    return _plan((rows, cols, strides), _program(cluster, members, sources, cluster.outputs),
                 cluster.dtype, len(sources), len(cluster.outputs))


def _prior(cluster, big, transfers, size):
    """``(prior, path)``: the way the estimates choose between the program and the kernels
    of members ``big`` ("program" or "kernels"), and that way again where one estimate is
    ``CONFIDENT`` times the other, else None (the two are timed). The program costs a step
    of its own (about five kernel steps) and a load per input and a store per output, and
    saves a kernel step per member and, per element, the difference between a
    NumPy pass and an instruction (about five instructions to a pass). One over at least
    ``PARALLEL_MIN_SIZE_COMPUTE`` elements always pays (passes over memory then cost more
    than these estimates, which hold in the cache)."""
    if size >= PARALLEL_MIN_SIZE_COMPUTE:
        return "program", "program"
    wide = sum(cluster.kinds[m] in WIDE for m in big)
    cheap = len(big) - wide
    program = CALL_NS + size * (TRANSFER_NS * transfers + INSTRUCTION_NS * cheap
                                + WIDE_NS * wide)
    kernels = STEP_NS * len(big) + size * (KERNEL_NS * cheap + WIDE_KERNEL_NS * wide)
    prior = "program" if program < kernels else "kernels"
    clear = max(program, kernels) > CONFIDENT * min(program, kernels)
    return prior, prior if clear else None


def _faster(times, prior):
    """The way a timed signature takes from now on: the other than ``prior`` where its
    best timed run was ``MARGIN`` times faster (other work on the machine only ever adds
    time), else ``prior``."""
    best = {way: min(runs[WARM_UPS:]) for way, runs in times.items()}
    other = "kernels" if prior == "program" else "program"
    return other if best[other] * MARGIN < best[prior] else prior


def _lifting_pays(cluster, small, size):
    """Whether members ``small`` (of shapes smaller than the cluster's, none read
    outside it) are cheaper computed by the program at the full ``size`` than by their
    kernels: a layer norm's per-row statistics on a short sequence, not a batch norm's
    per-channel factors on an image."""
    if set(small) & set(cluster.outputs):
        return False
    passes = sum(WIDE_NS if cluster.kinds[m] in WIDE else INSTRUCTION_NS for m in small)
    return size * passes < STEP_NS * len(small)


def _member_shapes(cluster, input_shapes, budget):
    """Each member's output shape for these input shapes; None where a kernel would
    refuse them (incompatible shapes, a BiasAdd's bias, the memory budget) or reshape
    them (a gradient's operands of one size and two shapes)."""
    shapes, itemsize = [], cluster.dtype.itemsize
    for kind, refs in zip(cluster.kinds, cluster.operands):
        operand_shapes = [input_shapes[i] if where == "input" else shapes[i]
                          for where, i in refs]
        if kind == BIAS_ADD:
            value, bias = operand_shapes
            if len(bias) != 1 or len(value) < 2 or bias[0] != value[-1]:
                return None
        if kind in FUSED_SAME_SHAPE and len(set(operand_shapes)) != 1:
            return None
        shape = _broadcast(operand_shapes)
        if shape is None or math.prod(shape) * itemsize > budget:
            return None
        shapes.append(shape)
    return shapes


def _broadcast(shapes):
    shape = broadcast_shape(*shapes)
    return None if shape is None else tuple(shape)


def _sources(cluster, big, small):
    """The program's inputs: what its members read from outside it or from small
    members, each once, in order of first use."""
    sources = []
    for m in big:
        for ref in cluster.operands[m]:
            if (ref[0] == "input" or ref[1] in small) and ref not in sources:
                sources.append(ref)
    return sources


def _grid(full, source_shapes):
    """(rows, cols, strides): the split of ``full`` into leading dims (rows) and trailing
    ones (cols), with as many trailing dims as every source allows (each one either has
    those dims or is 1 along all of them, and the same of the leading dims), and each
    source's (row stride, column stride) in elements; None when no split fits."""
    rank = len(full)
    padded = [(1,) * (rank - len(s)) + tuple(s) for s in source_shapes]
    for split in range(rank + 1):
        strides = []
        rows, cols = math.prod(full[:split]), math.prod(full[split:])
        for shape in padded:
            has_rows = shape[:split] == full[:split]
            has_cols = shape[split:] == full[split:]
            if not (has_rows or all(d == 1 for d in shape[:split])):
                break
            if not (has_cols or all(d == 1 for d in shape[split:])):
                break
            col_stride = 1 if has_cols else 0
            strides.append(((cols if has_cols else 1) if has_rows else 0, col_stride))
        else:
            return rows, cols, strides
    return None


def _program(cluster, big, sources, exported):
    """(instructions, output registers, register count) computing members ``big`` in
    order, sources in registers 0.., a register reused by the instructions after the one
    that reads its value last (the outputs' stay to the end)."""
    last_use = {}
    for step, m in enumerate(big):
        for ref in cluster.operands[m]:
            last_use[ref] = step
    register = {ref: r for r, ref in enumerate(sources)}
    free, count = [], len(sources)
    instructions = []
    for step, m in enumerate(big):
        refs = cluster.operands[m]
        args = [register[ref] for ref in refs]
        if free:               # never an operand's register: in place, loops run unvectorized
            target = free.pop()
        else:
            target, count = count, count + 1
        for ref in dict.fromkeys(refs):
            if last_use[ref] == step and not (ref[0] == "member" and ref[1] in exported):
                free.append(register[ref])
        register[("member", m)] = target
        kind = "add" if cluster.kinds[m] == BIAS_ADD else cluster.kinds[m]
        instructions += [FUSED_OPCODES[kind], target, args[0], args[-1]]
    return instructions, [register[("member", m)] for m in exported], count


def _plan(grid, program, dtype, n_in, n_out):
    """The compiled function's ``plan`` (see ``fused_elementwise.run``)."""
    (rows, cols, strides), (instructions, out_regs, registers) = grid, program
    header = [rows, cols, n_in, n_out, registers, int(dtype == np.float32),
              len(instructions) // 4]
    strides = [x for pair in strides for x in pair] + [0] * 2 * (FUSED_MAX_INPUTS - n_in)
    out_regs = out_regs + [0] * (FUSED_MAX_OUTPUTS - n_out)
    return np.array(header + strides + out_regs + instructions, np.int64)


def _flat(value):
    """A writable C-contiguous flat view of ``value``: a copy when it is strided (ravel's),
    or read-only (a folded constant), so that the compiled program sees one type."""
    flat = value.ravel()
    return flat if flat.flags.writeable else flat.copy()


# -- finding clusters when a plan is built

def find_clusters(fusion):
    """{op id of each cluster's last node: its Cluster} among the nodes ``fusion`` (a
    ``fusion._Fusion`` whose chains are claimed) leaves to run."""
    finder = _Finder(fusion)
    for op in fusion.ops:
        finder.visit(op)
    return finder.clusters()


class _Finder:
    """Grows clusters in topological order, each up to ``MAX_MEMBERS`` nodes and
    ``FUSED_MAX_INPUTS`` tensors read: ``parent`` (union-find over cluster ids),
    ``upstream`` (per node: the clusters it depends on), ``entry`` (per cluster: the
    clusters that reach it through nodes outside it)."""

    def __init__(self, fusion):
        self.fusion = fusion
        self.cluster_of, self.parent, self.upstream, self.entry = {}, {}, {}, {}
        self.inputs = {}      # per cluster: the tensor keys it reads from outside
        self.members = collections.defaultdict(list)

    def find(self, c):
        while self.parent[c] != c:
            self.parent[c] = self.parent[self.parent[c]]
            c = self.parent[c]
        return c

    def kind(self, op):
        """The node's elementwise instruction when it may join a cluster, else None."""
        fusion = self.fusion
        kind = fusion.declared(op, "elementwise")
        if (kind is None or not fusion.runs_here(op) or op.control_inputs
                or op._id in fusion.controlling or op._id in fusion.replaced):
            return None
        dtype = op.outputs[0].dtype
        arity = 1 if kind in FUSED_UNARY else 2
        if len(op.inputs) != arity or any(t.dtype != dtype for t in op.inputs):
            return None
        return kind if kind in FUSED_UNARY + FUSED_BINARY + (BIAS_ADD,) else None

    def reach(self, op_id):
        """The clusters a path through node ``op_id`` comes from (its own, if any)."""
        found = set(self.upstream.get(op_id, ()))
        if op_id in self.cluster_of:
            found.add(self.cluster_of[op_id])
        return found

    def visit(self, op):
        sources = [t.op._id for t in op.inputs] + [c._id for c in op.control_inputs]
        self.upstream[op._id] = set().union(*(self.reach(s) for s in sources))
        kind = self.kind(op)
        if kind is None:
            return
        near = {self.find(self.cluster_of[s]) for s in sources if s in self.cluster_of}
        biggest_first = sorted(near, key=lambda c: -len(self.members[c]))
        for joined in [near] + [{c} for c in biggest_first] + [set()]:
            outside = self.outside(sources, joined)
            reads = self.reads(op, joined)
            if (not joined & outside         # else the step would wait on itself
                    and len(reads) <= FUSED_MAX_INPUTS
                    and sum(len(self.members[c]) for c in joined) < MAX_MEMBERS):
                self.place(op, kind, joined, outside, reads)
                return

    def reads(self, op, joined):
        """The tensors (keys) the merge of ``joined`` and ``op`` would read from outside."""
        members = {m._id for c in joined for m, _ in self.members[c]}
        found = set().union(*(self.inputs[c] for c in joined))
        found.update((t.op._id, t.value_index) for t in op.inputs)
        return {key for key in found if key[0] not in members}

    def outside(self, sources, joined):
        """The clusters (roots) that reach a node reading ``sources`` through nodes outside
        the clusters ``joined``, or that reach those clusters so."""
        found = set()
        for s in sources:
            if s not in self.cluster_of or self.find(self.cluster_of[s]) not in joined:
                found |= self.reach(s)
        for c in joined:
            found |= self.entry[c]
        return {self.find(c) for c in found}

    def place(self, op, kind, joined, outside, reads):
        """Puts ``op`` into the merge of clusters ``joined`` (a new cluster if none)."""
        if joined:
            root = min(joined)
            for c in joined - {root}:
                self.parent[c] = root
                self.members[root] += self.members.pop(c)
                self.entry[root] |= self.entry.pop(c)
                del self.inputs[c]
        else:
            root = op._id
            self.parent[root], self.entry[root] = root, set()
        self.entry[root] |= outside - {root}
        self.inputs[root] = reads
        self.members[root].append((op, kind))
        self.cluster_of[op._id] = root

    def clusters(self):
        found = {}
        for members in self.members.values():
            if not _enough_full([op for op, _ in members]):
                continue
            members.sort(key=lambda pair: self.fusion.position[pair[0]._id])
            ops = [op for op, _ in members]
            ids = {op._id for op in ops}
            cluster = Cluster(ops, [kind for _, kind in members],
                              ops[-1].outputs[0].dtype.np_dtype,
                              lambda op: self.read_outside(op, ids))
            if 0 < len(cluster.outputs) <= FUSED_MAX_OUTPUTS:
                found[ops[-1]._id] = cluster
        return found

    def read_outside(self, op, ids):
        """Whether op's output is fetched or read by a node outside the cluster ``ids``."""
        key = (op._id, 0)
        inside = sum(1 for reader in self.fusion.consumers[key] if reader._id in ids)
        return self.fusion.readers[key] > inside


def _enough_full(ops):
    """Whether ``MIN_MEMBERS`` of the nodes may have the cluster's full shape: their static
    shapes equal the last node's (unknown ranks: the run decides). A squeeze-and-excite
    gate (a bias and a sigmoid on [N, 1, 1, C], then a product on [N, H, W, C]) has one."""
    shapes = [op.outputs[0].shape for op in ops]
    if any(shape.rank is None for shape in shapes):
        return len(ops) >= MIN_MEMBERS
    last = shapes[-1].as_list()
    return sum(shape.as_list() == last for shape in shapes) >= MIN_MEMBERS


def _graph_inputs(op):
    return [t.op for t in op.inputs] + list(op.control_inputs)


def contracted_order(ops, fused, needs=_graph_inputs):
    """``ops`` reordered so that each cluster's outside readers come after its last node
    (where its step runs): a topological order of the graph with each cluster one node,
    keeping the given order wherever it can. ``needs(op)``: the nodes op waits for (by
    default its inputs' and control inputs'; those not in ``ops`` are ignored)."""
    clusters = [c for c in fused.values() if isinstance(c, Cluster)]
    if not clusters:
        return ops
    import networkx as nx       # lazily: `import graphops` stays fast

    unit = {op._id: op._id for op in ops}       # a node, or its cluster's last node
    for cluster in clusters:
        for op in cluster.ops:
            unit[op._id] = cluster.ops[-1]._id
    position = {op._id: i for i, op in enumerate(ops)}
    members = collections.defaultdict(list)
    graph = nx.DiGraph()
    for op in ops:
        me = unit[op._id]
        members[me].append(op)
        graph.add_node(me)
        graph.add_edges_from((unit[source._id], me) for source in needs(op)
                             if source._id in unit and unit[source._id] != me)
    order = nx.lexicographical_topological_sort(graph, key=position.get)
    return [op for u in order for op in members[u]]
