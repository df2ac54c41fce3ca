"""Lays a TF1 loop's steps out as one program of ``compiled.loop_program``'s machine, from
the values one iteration of them read and gave (the shapes every iteration keeps).

Each step becomes instructions by what its kernel declares (``OpKernel``'s compiled-loop
declarations), never by its op's name: an elementwise node or cluster a program over the
arena, a 2-D product a MATMUL, a TensorList read or write a LIST_GET or LIST_SET, integer
and bool scalars SCALAR instructions on registers, and a node that moves data (a Split, a
StridedSlice, a Squeeze) no instruction at all: its outputs are views of its input's
block, found by running its kernel on the block's element numbers. Anything else, or a
layout the machine cannot express, raises ``NotCompilable``; the loop then runs step by
step.
"""

from types import SimpleNamespace

import numpy as np

from graphops.kernels.compiled.constants import (
    FUSED_MAX_INPUTS, LOOP_COPY as COPY, LOOP_ELEMENTWISE as ELEMENTWISE, LOOP_LIST_GET as LIST_GET,
    LOOP_LIST_PUSH as LIST_PUSH, LOOP_LIST_SET as LIST_SET, LOOP_MATMUL as MATMUL,
    LOOP_SCALAR as SCALAR, LOOP_SCALAR_OPS as SCALAR_OPS, LOOP_SUM_ROWS as SUM_ROWS,
    LOOP_WIDTH as WIDTH)
from graphops.kernels.support.kernel_util import COMPILED_MIN_SIZE
from graphops.kernels.support.tensor_list import TensorList
from graphops.runtime import elementwise_clusters
from graphops.runtime.fusion import Chain
from graphops.runtime.kernel_call import compute
from graphops.runtime.steps import ClusterStep

_INT_BITS = {np.dtype(np.int32): 32, np.dtype(np.int64): 0, np.dtype(np.bool_): 0}
_EXACT_INDICES = 1 << 24          # element numbers a float32 probe holds exactly


class NotCompilable(Exception):
    """The loop's steps, for these values, are not one program of the machine."""


class Block:
    """A float value: ``rows`` x ``cols`` elements at ``offset``, rows ``stride`` apart, of
    ``shape``; ``root``: the allocation it lies in."""

    __slots__ = ("offset", "rows", "cols", "stride", "shape", "root")

    def __init__(self, offset, rows, cols, stride, shape, root):
        self.offset, self.rows, self.cols, self.stride = offset, rows, cols, stride
        self.shape, self.root = tuple(shape), root


class Register:
    """An integer or bool scalar in register ``index``, of NumPy ``dtype``."""

    __slots__ = ("index", "dtype")

    def __init__(self, index, dtype):
        self.index, self.dtype = index, np.dtype(dtype)


class ListBlock:
    """A TensorList: room for ``capacity`` elements of ``shape`` end to end at ``offset``,
    its length in register ``count``, register ``mask + i`` saying whether element i is
    set; ``fields``: the (element dtype, element shape, bound) of the list it was loaded
    from; ``current``: the slot holding its latest version."""

    __slots__ = ("offset", "capacity", "count", "shape", "size", "mask", "fields", "current")

    def __init__(self, capacity, count, shape, mask, tensor_list, current):
        self.capacity, self.count, self.shape, self.mask = capacity, count, tuple(shape), mask
        self.offset, self.size = 0, int(np.prod(self.shape))
        self.fields = (tensor_list.element_dtype, tensor_list.element_shape,
                       tensor_list.max_num_elements)
        self.current = current


def _rows_cols(shape):
    if len(shape) > 2:
        raise NotCompilable
    padded = (1,) * (2 - len(shape)) + tuple(shape)
    return padded[0], padded[1]


class Builder:
    """Builds the program: ``code`` (rows of WIDTH words), ``plans`` (the elementwise
    programs), ``loads`` ((slot, Block/Register/ListBlock) filled from the values before
    the first iteration) and ``layout`` (slot -> where its value lives). ``written``: the
    slots the steps write; ``varying``: those and the loop variables'; ``readers``: per
    slot, how many times the program reads it."""

    def __init__(self, seen, written, varying, readers, dtype, room=0):
        self.seen, self.written, self.varying, self.readers = seen, written, varying, readers
        self.room, self.full = room, set()       # room for pushes per list; see _list_push
        self.dtype = np.dtype(dtype)
        self.arena, self.ints, self.registers = 0, 0, 0
        self.code, self.plans, self.loads, self.layout = [], [], [], {}
        self.statics = []                        # (slot, value) of the scalar static operands
        self.written_lists = set()               # the ListBlocks a step writes
        self.products = {}                       # id(a MATMUL's block) -> (row, block)
        self.constants = []                      # (Block/Register, value) filled each run
        self.fixed = {}                          # slot -> its value, the same every iteration

    # -- storage
    def _alloc(self, size):
        self.arena += size
        return self.arena - size

    def _register(self, count=1):
        self.ints += count
        return self.ints - count

    def new_block(self, shape):
        rows, cols = _rows_cols(shape)
        offset = self._alloc(rows * cols)
        return Block(offset, rows, cols, cols, shape, offset)

    def emit(self, *words):
        row = [int(w) for w in words]
        self.code.append(row + [0] * (WIDTH - len(row)))

    # -- values
    def value(self, slot):
        """Where slot's value lives: an input of the program (loaded before it starts) the
        first time a step reads a slot no step writes."""
        where = self.layout.get(slot)
        if where is not None:
            return where
        if slot in self.fixed:
            where = self.layout[slot] = self._loaded(self.fixed[slot], slot)
            self.constants.append((where, self.fixed[slot]))
            return where
        if slot in self.written:
            raise NotCompilable              # read before its step, or across sides
        where = self._loaded(self.seen[slot], slot)
        self.layout[slot] = where
        self.loads.append((slot, where))
        return where

    def _loaded(self, value, slot):
        if type(value) is not np.ndarray:
            raise NotCompilable
        if value.dtype == object:
            tensor_list = value[()] if value.ndim == 0 else None
            if not isinstance(tensor_list, TensorList):
                raise NotCompilable
            return self._loaded_list(tensor_list, slot)
        if value.dtype == self.dtype:
            return self.new_block(value.shape)
        if value.ndim == 0 and value.dtype in _INT_BITS:
            return Register(self._register(), value.dtype)
        raise NotCompilable

    def _loaded_list(self, tensor_list, slot):
        """The list's elements with ``room`` more (up to its bound) for pushes."""
        shapes = {item.shape for item in tensor_list.tensors if item is not None}
        if tensor_list.element_dtype.np_dtype != self.dtype or len(shapes) > 1:
            raise NotCompilable
        if shapes:
            shape = shapes.pop()
        elif tensor_list.element_shape.is_fully_defined():
            shape = tuple(tensor_list.element_shape.as_list())
        else:
            shape = self._element_shape(slot)
        capacity, bound = len(tensor_list) + self.room, tensor_list.max_num_elements
        if bound != -1:
            capacity = max(len(tensor_list), min(capacity, bound))
        if not capacity:
            raise NotCompilable
        block = ListBlock(capacity, self._register(), shape, self._register(capacity),
                          tensor_list, slot)
        block.offset = self._alloc(capacity * block.size)
        return block

    def _element_shape(self, slot):
        """The shape of what the recorded iteration set or pushed into the list in
        ``slot``."""
        for step in self.steps:
            access = getattr(step.kernel, "list_access", None)
            if access in ("set", "push") and step.ins[0] == slot:
                return self.seen[step.ins[2 if access == "set" else 1]].shape
        raise NotCompilable

    def block(self, slot):
        where = self.value(slot)
        if type(where) is not Block:
            raise NotCompilable
        return where

    def register(self, slot):
        where = self.value(slot)
        if type(where) is not Register:
            raise NotCompilable
        return where

    def static(self, slot):
        """The value of an operand the same in every iteration (a split's axis, a slice's
        bounds); a scalar one is checked again before each run (the signature holds the
        values of the others, and the shapes that decide a ``fixed`` one)."""
        if slot in self.fixed:
            return self.fixed[slot]
        if slot in self.varying:
            raise NotCompilable
        value = self.seen[slot]
        if value.ndim == 0:
            self.statics.append((slot, value))
        return value

    def bind(self, slot, where):
        if slot in self.layout:
            raise NotCompilable
        self.layout[slot] = where

    # -- steps
    def lower(self, steps):
        self.steps = steps
        for step in steps:
            self._lower_step(step)

    def _lower_step(self, step):
        kernel = step.kernel
        if isinstance(step, ClusterStep):
            return self._elementwise(step, kernel)
        if isinstance(kernel, Chain):
            return self._chain(step, kernel)
        if self._folds(step):
            return None
        declared = {name: getattr(kernel, name, None)
                    for name in ("matmul", "list_access", "moves_data", "scalar_op",
                                 "elementwise", "reduction")}
        if declared["matmul"]:
            return self._matmul(step, *declared["matmul"])
        if declared["list_access"] == "get":
            return self._list_get(step)
        if declared["list_access"] == "set":
            return self._list_set(step)
        if declared["list_access"] == "push":
            return self._list_push(step)
        if declared["moves_data"]:
            return self._moves_data(step)
        if declared["reduction"] == "sum":
            return self._sum(step)
        outputs = [self.seen[slot] for _, slot in step.outs]
        if declared["scalar_op"] or (declared["elementwise"] and outputs
                                     and outputs[0].dtype in _INT_BITS):
            return self._scalar(step, declared["scalar_op"] or declared["elementwise"])
        if declared["elementwise"] in ("add", "bias_add") and (
                self._sum_of_products(step) or self._biased_product(step)):
            return None
        if declared["elementwise"]:
            return self._elementwise(step, _single(step, declared["elementwise"], self.dtype))
        raise NotCompilable

    def _folds(self, step):
        """Whether the step's outputs are the same in every iteration of the signature and
        became values of the build (``fixed``), with no instruction: a node reading only
        its inputs' shapes (a gradient's Shape), or integer arithmetic on such values and
        static operands (its BroadcastGradientArgs)."""
        if step.kernel.reads_shape_only:
            if any(slot in self.written and slot not in self.layout
                   or type(self.seen[slot]) is not np.ndarray
                   or self.seen[slot].dtype == object for slot in step.ins):
                return False             # (a list's length changes with its pushes)
        elif integer_arithmetic(step) and all(
                slot in self.fixed or slot not in self.varying for slot in step.ins):
            for slot in step.ins:
                self.static(slot)
        else:
            return False
        for _, slot in step.outs:
            self.fixed[slot] = self.seen[slot]
        return True

    def _sum_of_products(self, step):
        """Whether an add of two products read by nothing else became the second product
        accumulating into the first's block (its MATMUL's accumulate word): an LSTM's
        x w + h u."""
        if len(step.ins) != 2 or len(step.outs) != 1 or \
                any(self.readers[slot] != 1 for slot in step.ins):
            return False
        found = [self.products.get(id(self.layout.get(slot))) for slot in step.ins]
        if None in found or found[0][1].shape != found[1][1].shape:
            return False
        (_, first), (row, _) = sorted(found, key=lambda pair: pair[0])
        (_, slot), = step.outs
        self._expect(slot, first.shape)
        self.code[row][1], self.code[row][4], self.code[row][13] = first.offset, first.stride, 1
        self.bind(slot, first)
        return True

    def _biased_product(self, step):
        """Whether a product (or sum of products) read by nothing else, plus a bias row
        loaded before the loop, became the bias copied into the product's rows (the COPY
        kept free before every first MATMUL) and the product accumulating onto it."""
        if len(step.ins) != 2 or len(step.outs) != 1:
            return False
        for k in (0, 1):
            product, bias = step.ins[k], step.ins[1 - k]
            found = self.products.get(id(self.layout.get(product)))
            if found is None or self.readers[product] != 1 or bias in self.written:
                continue
            row, block = found
            where = self.value(bias)
            if type(where) is not Block or where.shape not in ((block.cols,),
                                                              (1, block.cols)):
                continue
            (_, slot), = step.outs
            self._expect(slot, block.shape)
            self.code[row - 1][:7] = [COPY, block.offset, block.stride, where.offset, 0,
                                      block.rows, block.cols]
            self.code[row][13] = 1
            del self.products[id(block)]
            self.bind(slot, block)
            return True
        return False

    def _chain(self, step, chain):
        """A fused chain (``fusion.Chain``: x, then per stage ``op v`` with a constant or
        run-time v, or an activation) as the elementwise program of its stages."""
        inputs = [self.block(slot) for slot in step.ins]
        kinds, operands = [], []
        for m, (_, _, operand, (kind, name)) in enumerate(chain.parts):
            value = ("input", 0) if m == 0 else ("member", m - 1)
            if kind == "activation":
                kinds.append(name.lower())
                operands.append([value])
                continue
            if isinstance(operand, np.ndarray):
                inputs.append(self.constant(operand))
                operand = len(inputs) - 1
            kinds.append(kind)
            operands.append([value, ("input", operand)])
        if len(inputs) > FUSED_MAX_INPUTS:
            raise NotCompilable
        cluster = SimpleNamespace(kinds=kinds, operands=operands, dtype=chain.dtype,
                                  outputs=[len(kinds) - 1])
        self._elementwise(step, cluster, inputs)

    def constant(self, value):
        """A Block holding ``value`` (a chain's constant), filled before every run."""
        if value.dtype != self.dtype:
            raise NotCompilable
        block = self.new_block(value.shape)
        self.constants.append((block, value))
        return block

    def _elementwise(self, step, cluster, inputs=None):
        inputs = inputs or [self.block(slot) for slot in step.ins]
        if np.dtype(cluster.dtype) != self.dtype:
            raise NotCompilable
        full = np.broadcast_shapes(*(b.shape for b in inputs))
        rows, cols = _rows_cols(full)
        strides = []
        for b in inputs:
            in_rows, in_cols = _rows_cols(b.shape)
            strides.append((b.stride if in_rows == rows and rows > 1 else 0,
                            1 if in_cols == cols and cols > 1 else 0))
        plan = elementwise_clusters.grid_plan(cluster, [b.shape for b in inputs], rows, cols,
                                              strides)
        if plan is None:
            raise NotCompilable
        outputs = self._alloc(len(cluster.outputs) * rows * cols)
        for k, slot in step.outs:
            self._expect(slot, full)
            offset = outputs + k * rows * cols
            self.bind(slot, Block(offset, rows, cols, cols, full, outputs))
        offsets = [b.offset for b in inputs]
        self.emit(ELEMENTWISE, sum(len(p) for p in self.plans), outputs, len(inputs),
                  *(offsets + [offsets[0]] * (FUSED_MAX_INPUTS - len(offsets))))
        self.plans.append(plan)
        self.registers = max(self.registers, int(plan[4]))

    def _expect(self, slot, shape):
        value = self.seen[slot]
        if value.dtype != self.dtype or value.shape != tuple(shape):
            raise NotCompilable

    def _matmul(self, step, transpose_a, transpose_b):
        a, b = (self.block(slot) for slot in step.ins)
        if len(a.shape) != 2 or len(b.shape) != 2:
            raise NotCompilable
        a_rows, a_cols = (1, a.stride) if transpose_a else (a.stride, 1)
        b_rows, b_cols = (1, b.stride) if transpose_b else (b.stride, 1)
        depth = a.shape[0] if transpose_a else a.shape[1]
        rows = a.shape[1] if transpose_a else a.shape[0]
        cols = b.shape[0] if transpose_b else b.shape[1]
        out = self.new_block((rows, cols))
        scratch = self._alloc(cols) if b_cols != 1 else 0
        for _, slot in step.outs:
            self._expect(slot, (rows, cols))
            self.bind(slot, out)
        self.emit(COPY, 0, 0, 0, 0, 0, 0)           # room for a bias (_biased_product)
        self.products[id(out)] = (len(self.code), out)
        self.emit(MATMUL, out.offset, rows, cols, cols, a.offset, a_rows, a_cols, b.offset,
                  b_rows, b_cols, depth, scratch, 0)

    def _current_list(self, slot):
        where = self.value(slot)
        if type(where) is not ListBlock or where.current != slot:
            raise NotCompilable              # an older version of a list written since
        return where

    def _list_get(self, step):
        tensor_list = self._current_list(step.ins[0])
        index = self.register(step.ins[1])
        out = self.new_block(tensor_list.shape)
        for _, slot in step.outs:
            self._expect(slot, tensor_list.shape)
            self.bind(slot, out)
        self.emit(LIST_GET, out.offset, tensor_list.offset, tensor_list.count,
                  tensor_list.size, index.index, tensor_list.mask)

    def _written_list(self, step, item_slot):
        """The list a set or push writes in place (its latest version, whose new version
        the step's output is) and the item it writes, of the list's element shape."""
        tensor_list, item = self._current_list(step.ins[0]), self.block(item_slot)
        if item.shape != tensor_list.shape:
            raise NotCompilable
        self.written_lists.add(tensor_list)
        for _, slot in step.outs:
            tensor_list.current = slot
            self.bind(slot, tensor_list)
        return tensor_list, item

    def _list_set(self, step):
        index = self.register(step.ins[1])
        tensor_list, item = self._written_list(step, step.ins[2])
        self.emit(LIST_SET, tensor_list.offset, tensor_list.count, index.index,
                  tensor_list.mask, item.offset, item.rows, item.cols, item.stride)

    def _list_push(self, step):
        """A push into the list's room; where none is left the program answers its row
        (``full``: the rows whose list is at its bound, where the kernel refuses)."""
        tensor_list, item = self._written_list(step, step.ins[1])
        if tensor_list.fields[2] != -1 and tensor_list.capacity >= tensor_list.fields[2]:
            self.full.add(len(self.code))
        self.emit(LIST_PUSH, tensor_list.offset, tensor_list.count, tensor_list.capacity,
                  tensor_list.mask, item.offset, item.rows, item.cols, item.stride)

    def _scalar(self, step, name):
        if name not in SCALAR_OPS:
            raise NotCompilable
        operands = [self.register(slot) for slot in step.ins]
        if len(operands) not in (1, 2):
            raise NotCompilable
        (_, slot), = step.outs
        dtype = self.seen[slot].dtype
        out = Register(self._register(), dtype)
        self.bind(slot, out)
        a = operands[0].index
        b = operands[-1].index
        self.emit(SCALAR, SCALAR_OPS.index(name), out.index, a, b, _INT_BITS[dtype])

    def _moves_data(self, step):
        """Views of the one float input's block, from the kernel run on its element
        numbers; an integer scalar's register shared, for an Identity-like node."""
        values = [self.seen[slot] for slot in step.ins]
        data = [k for k, v in enumerate(values) if v.dtype == self.dtype]
        if not data:
            (source,) = [self.register(slot) for slot in step.ins]
            for _, slot in step.outs:
                if self.seen[slot].dtype != source.dtype or self.seen[slot].ndim:
                    raise NotCompilable
                self.bind(slot, source)
            return
        (k,) = data
        source = self.block(step.ins[k])
        for j, slot in enumerate(step.ins):
            if j != k:
                values[j] = self.static(slot)
        size = source.rows * source.cols
        if size >= _EXACT_INDICES:
            raise NotCompilable
        values[k] = np.arange(size, dtype=np.float64).reshape(source.shape).astype(self.dtype)
        try:
            outputs = compute(step.kernel, step.construction, values, step.device)
        except Exception as exc:
            raise NotCompilable from exc
        for j, slot in step.outs:
            self._expect(slot, outputs[j].shape)
            self.bind(slot, _view(source, outputs[j]))

    def _sum(self, step):
        """A float Sum: over axes of length 1 (or none) a view of its input; over the rows
        of a 2-D block into 2 or more columns (a bias's gradient) a SUM_ROWS, in the
        kernel's order (below the size from which the kernel sums in parallel)."""
        source = self.block(step.ins[0])
        shape = self.seen[step.ins[0]].shape
        axes = {int(axis) % len(shape) for axis in np.ravel(self.static(step.ins[1]))} \
            if shape else set()
        (_, slot), = step.outs
        result = self.seen[slot].shape
        self._expect(slot, result)
        if all(shape[axis] == 1 for axis in axes):
            numbers = np.arange(source.rows * source.cols, dtype=np.float64)
            return self.bind(slot, _view(source, numbers.reshape(result).astype(self.dtype)))
        if axes != {0} or len(shape) != 2 or shape[1] < 2 or \
                source.rows * source.cols >= COMPILED_MIN_SIZE:
            raise NotCompilable
        out = self.new_block(result)
        self.bind(slot, out)
        return self.emit(SUM_ROWS, out.offset, source.offset, source.rows, source.cols,
                         source.stride)

    # -- the loop's update
    def update(self, merges):
        """Copies each NextIteration's value into its Merge's place; through a staging
        copy where the value lies in another loop variable's place. A loop variable passed
        on unchanged (a variable's handle) needs no place."""
        merges = [merge for merge in merges if merge[2] != merge[0][0]]
        places = [(self.value(slot), self.value(following)) for (slot, _, _, _), _, following
                  in merges]
        taken = {_root(target) for target, _ in places}
        staged = []
        for target, source in places:
            if type(target) is not type(source):
                raise NotCompilable
            if type(target) is ListBlock:
                if target is not source:
                    raise NotCompilable
                continue
            if type(target) is Block and target.shape != source.shape:
                raise NotCompilable
            if type(target) is Register and target.dtype != source.dtype:
                raise NotCompilable
            if source is target:
                continue
            if _root(source) in taken:
                stage = (self.new_block(source.shape) if type(source) is Block
                         else Register(self._register(), source.dtype))
                self._copy(stage, source)
                staged.append((target, stage))
            else:
                staged.append((target, source))
        for target, source in staged:
            self._copy(target, source)
        if self.written_lists - {target for target, _ in places}:
            raise NotCompilable        # a list not a loop variable's, written in place
        for ((slot, _, _, _), _, _), (target, _) in zip(merges, places):
            if type(target) is ListBlock:
                target.current = slot

    def _copy(self, target, source):
        if type(target) is Register:
            self.emit(SCALAR, SCALAR_OPS.index("copy"), target.index, source.index,
                      source.index, 0)
        else:
            self.emit(COPY, target.offset, target.stride, source.offset, source.stride,
                      source.rows, source.cols)


def _root(where):
    """What a loop variable's place is part of: a register, an allocation, a list."""
    if type(where) is Register:
        return ("int", where.index)
    return ("float", where.root) if type(where) is Block else ("list", id(where))


def integer_arithmetic(step):
    """Whether a step computes integer tensors from integer tensors and nothing else
    (stateless, its kernel foldable): shape arithmetic."""
    op = step.op
    return (step.kernel.foldable and not op.op_def.is_stateful and bool(op.inputs)
            and all(t.dtype.is_integer for t in list(op.inputs) + list(op.outputs)))


def _single(step, kind, dtype):
    """A one-member cluster of an elementwise kernel step, as ``grid_plan`` reads it."""
    return SimpleNamespace(kinds=[kind], dtype=np.dtype(dtype), outputs=[0],
                           operands=[[("input", k) for k in range(len(step.ins))]])


def _view(source, numbers):
    """The Block where ``numbers`` (element numbers of ``source``, in an output's shape)
    lie, when they form one: rows a fixed stride apart, each row contiguous."""
    index = numbers.astype(np.int64)
    if not np.array_equal(index, numbers) or index.size == 0:
        raise NotCompilable
    places = source.offset + (index // source.cols) * source.stride + index % source.cols
    rows, cols = _rows_cols(numbers.shape)
    places = places.reshape(rows, cols)
    stride = int(places[1, 0] - places[0, 0]) if rows > 1 else cols
    expected = places[0, 0] + stride * np.arange(rows)[:, None] + np.arange(cols)[None, :]
    if not np.array_equal(places, expected) or stride < cols:
        raise NotCompilable
    return Block(int(places[0, 0]), rows, cols, stride, numbers.shape, source.root)
