"""Gradients of the array ops (TF's array_grad.py): identity-like ops, shape changes,
Pack/ConcatV2/Slice/Tile, Fill."""

from graphops import raw_ops
from graphops.gradients import NotDifferentiable, RegisterGradient
from graphops.grad.util import (const, constant_ints, constant_value, known_rank, reduce_sum,
                                shape_of)
from registry.errors import UnimplementedError

for _op in ("Shape", "Size", "Rank", "ZerosLike", "OnesLike", "StopGradient",
            "BroadcastGradientArgs"):
    NotDifferentiable(_op)


@RegisterGradient("Identity")
def _identity_grad(op, grad):
    return [grad]


@RegisterGradient("PlaceholderWithDefault")
def _placeholder_with_default_grad(op, grad):
    return [grad]


def _reshape_like_input(op, grad):
    return raw_ops.Reshape(tensor=grad, shape=shape_of(op.inputs[0]))


@RegisterGradient("Reshape")
def _reshape_grad(op, grad):
    return [_reshape_like_input(op, grad), None]


@RegisterGradient("ExpandDims")
def _expand_dims_grad(op, grad):
    return [_reshape_like_input(op, grad), None]


@RegisterGradient("Squeeze")
def _squeeze_grad(op, grad):
    return [_reshape_like_input(op, grad)]


@RegisterGradient("Transpose")
def _transpose_grad(op, grad):
    perm = constant_ints(op.inputs[1], "The gradient of Transpose")
    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[p] = i
    return [raw_ops.Transpose(x=grad, perm=const(inverse)), None]


@RegisterGradient("Fill")
def _fill_grad(op, grad):
    return [None, reduce_sum(raw_ops.Reshape(tensor=grad, shape=const([-1])), [0])]


@RegisterGradient("Pack")
def _pack_grad(op, grad):
    rank = known_rank(op.outputs[0], "The gradient of Pack")
    axis = op.get_attr("axis") % rank
    grads = []
    for i in range(len(op.inputs)):
        begin = [i if d == axis else 0 for d in range(rank)]
        size = [1 if d == axis else -1 for d in range(rank)]
        piece = raw_ops.Slice(input=grad, begin=const(begin), size=const(size))
        grads.append(raw_ops.Squeeze(input=piece, axis=[axis]))
    return grads


def _concat_offset(values, axis, rank):
    """Start of each value along `axis` in the concatenation, as begin vectors for Slice."""
    begins, offset = [], 0
    for value in values:
        if isinstance(offset, int):
            begins.append(const([offset if d == axis else 0 for d in range(rank)]))
        else:
            pieces = [const([0] * axis), offset, const([0] * (rank - axis - 1))]
            pieces = [p for p in pieces if p.shape[0] != 0]
            begins.append(pieces[0] if len(pieces) == 1 else
                          raw_ops.ConcatV2(values=pieces, axis=const(0)))
        size = value.shape[axis]
        if isinstance(offset, int) and size is not None:
            offset += size
        else:
            dynamic = raw_ops.Slice(input=raw_ops.Shape(input=value), begin=const([axis]),
                                    size=const([1]))
            offset = raw_ops.AddV2(x=const([offset]) if isinstance(offset, int) else offset,
                                   y=dynamic)
    return begins


@RegisterGradient("ConcatV2")
def _concat_v2_grad(op, grad):
    values = op.inputs[:-1]
    rank = known_rank(op.outputs[0], "The gradient of ConcatV2")
    axis = constant_ints(op.inputs[-1], "The gradient of ConcatV2")[0] % rank
    grads = [raw_ops.Slice(input=grad, begin=begin, size=shape_of(value))
             for value, begin in zip(values, _concat_offset(values, axis, rank))]
    return grads + [None]


@RegisterGradient("Tile")
def _tile_grad(op, grad):
    x = op.inputs[0]
    rank = known_rank(x, "The gradient of Tile")
    multiples = op.inputs[1]
    known = constant_value(multiples)
    if x.shape.is_fully_defined() and known is not None:
        split = const([int(v) for pair in zip(known, x.shape.as_list()) for v in pair])
    else:
        shape = shape_of(x)
        pairs = raw_ops.Pack(values=[raw_ops.Cast(x=multiples, DstT=shape.dtype), shape], axis=1)
        split = raw_ops.Reshape(tensor=pairs, shape=const([-1]))
    tiled = raw_ops.Reshape(tensor=grad, shape=split)
    return [reduce_sum(tiled, list(range(0, 2 * rank, 2))), None]


@RegisterGradient("Slice")
def _slice_grad(op, grad):
    """Zero padding around the slice's gradient (needs shapes and begin known while building)."""
    x = op.inputs[0]
    if not x.shape.is_fully_defined():
        raise UnimplementedError(f"The gradient of Slice needs the input shape known while "
                                 f"building, got {x}")
    shape = x.shape.as_list()
    begin = constant_ints(op.inputs[1], "The gradient of Slice")
    size = [d if d != -1 else n - b
            for d, n, b in zip(constant_ints(op.inputs[2], "The gradient of Slice"), shape, begin)]
    current = list(size)
    for axis, (n, b, s) in enumerate(zip(shape, begin, size)):
        pieces = []
        for count in (b, n - b - s):
            block = current[:axis] + [count] + current[axis + 1:]
            pieces.append(raw_ops.Fill(dims=const(block), value=const(0, grad.dtype))
                          if count else None)
        if pieces != [None, None]:
            parts = [p for p in (pieces[0], grad, pieces[1]) if p is not None]
            grad = raw_ops.ConcatV2(values=parts, axis=const(axis))
        current[axis] = n
    return [grad, None, None]
