"""Gradients of the reductions (TF's math_grad.py): Sum, Mean, Max/Min (the gradient split
evenly between tied extrema), Prod (two exclusive cumulative products, so zeros are no
special case), EuclideanNorm, Cumsum and Cumprod. Any, All, ArgMax and ArgMin have none."""

import numpy as np

from graphops.api import raw_ops
from graphops.autodiff.gradients import NotDifferentiable, RegisterGradient
from graphops.autodiff.rules.util import (conj, const, constant_list, reduced_shape, scalar_like,
                                          shape_of)
from graphops.registry import dtypes


for _op in ("Any", "All", "ArgMax", "ArgMin"):
    NotDifferentiable(_op)


def _reduced_axes(op):
    """The reduced axes, wrapped and sorted, when the rank and axes are known while building;
    else None."""
    rank, axes = op.inputs[0].shape.rank, constant_list(op.inputs[1])
    if rank is None or axes is None:
        return None
    return sorted({a % rank for a in axes}) if rank else []


def _broadcast_back(op, grad, axes):
    """The reduction's output gradient spread back over the reduced axes of its input
    (`axes` None: reshaped to the kept-dims shape computed at run time)."""
    x = op.inputs[0]
    if axes is None:
        if not op.get_attr("keep_dims"):
            kept = reduced_shape(raw_ops.Shape(input=x), op.inputs[1])
            grad = raw_ops.Reshape(tensor=grad, shape=kept)
        return raw_ops.Mul(x=grad, y=raw_ops.OnesLike(x=x))
    if not op.get_attr("keep_dims"):
        for axis in axes:
            grad = raw_ops.ExpandDims(input=grad, axis=const(axis))
    if x.shape.is_fully_defined():
        multiples = [d if i in axes else 1 for i, d in enumerate(x.shape.as_list())]
        return raw_ops.Tile(input=grad, multiples=const(multiples)) if axes else grad
    return raw_ops.Mul(x=grad, y=raw_ops.OnesLike(x=x))


@RegisterGradient("Sum")
def _sum_grad(op, grad):
    return [_broadcast_back(op, grad, _reduced_axes(op)), None]


@RegisterGradient("Mean")
def _mean_grad(op, grad):
    x, axes = op.inputs[0], _reduced_axes(op)
    dims = None if axes is None else [x.shape[i] for i in axes]
    if dims is not None and None not in dims:
        count = 1
        for d in dims:
            count *= d
        count = scalar_like(max(count, 1), grad)
    else:
        count = raw_ops.RealDiv(x=raw_ops.Cast(x=raw_ops.Size(input=x), DstT=grad.dtype),
                                y=raw_ops.Cast(x=raw_ops.Size(input=op.outputs[0]),
                                               DstT=grad.dtype))
    return [raw_ops.RealDiv(x=_broadcast_back(op, grad, axes), y=count), None]


def _kept_dims_shape(op):
    """The input's shape with 1 at each reduced axis: a constant when known while building."""
    x, axes = op.inputs[0], _reduced_axes(op)
    if axes is not None and x.shape.is_fully_defined():
        return const([1 if i in axes else d for i, d in enumerate(x.shape.as_list())])
    return reduced_shape(raw_ops.Shape(input=x), op.inputs[1])


@RegisterGradient("Max")
@RegisterGradient("Min")
def _extremum_grad(op, grad):
    """The gradient goes to the elements equal to the extremum, split evenly among ties."""
    x, y = op.inputs[0], op.outputs[0]
    kept = _kept_dims_shape(op)
    if not op.get_attr("keep_dims"):
        y = raw_ops.Reshape(tensor=y, shape=kept)
        grad = raw_ops.Reshape(tensor=grad, shape=kept)
    indicators = raw_ops.Cast(x=raw_ops.Equal(x=y, y=x), DstT=grad.dtype)
    selected = raw_ops.Reshape(tensor=raw_ops.Sum(input=indicators, axis=op.inputs[1]),
                               shape=kept)
    return [raw_ops.Mul(x=raw_ops.RealDiv(x=indicators, y=selected), y=grad), None]


def _reduced_first(op):
    """(perm moving the reduced axes of Prod's input to the front, its inverse, the shape
    [reduced elements, other elements]): constants when the rank and axes are known while
    building; else nodes (TF takes the other axes from ListDiff, here from Where)."""
    x, axes = op.inputs[0], _reduced_axes(op)
    if axes is not None:
        rank = x.shape.rank
        reduced = [a % rank for a in constant_list(op.inputs[1])] if rank else []
        perm = reduced + [i for i in range(rank) if i not in reduced]
        inverse = const([perm.index(i) for i in range(rank)])
        if x.shape.is_fully_defined():
            dims = x.shape.as_list()
            counts = [int(np.prod([dims[i] for i in group], dtype=np.int64))
                      for group in (perm[:len(reduced)], perm[len(reduced):])]
            return const(perm), inverse, const(counts)
        perm, reduced, other = const(perm), const(reduced), const(perm[len(reduced):])
    else:
        rank = raw_ops.Rank(input=x)
        reduced = raw_ops.Reshape(tensor=op.inputs[1], shape=const([-1]))
        if reduced.dtype != dtypes.int32:
            reduced = raw_ops.Cast(x=reduced, DstT=dtypes.int32)
        reduced = raw_ops.FloorMod(x=raw_ops.AddV2(x=reduced, y=rank), y=rank)
        indices = raw_ops.Range(start=const(0), limit=rank, delta=const(1))
        hit = raw_ops.Equal(x=raw_ops.ExpandDims(input=indices, axis=const(-1)),
                            y=raw_ops.ExpandDims(input=reduced, axis=const(0)))
        is_other = raw_ops.Equal(x=raw_ops.Any(input=hit, axis=const(1)),
                                 y=const(False, dtypes.bool_))
        other = raw_ops.Reshape(tensor=raw_ops.Cast(x=raw_ops.Where(condition=is_other),
                                                    DstT=dtypes.int32), shape=const([-1]))
        perm = raw_ops.ConcatV2(values=[reduced, other], axis=const(0))
        inverse = raw_ops.InvertPermutation(x=perm)
    input_shape = raw_ops.Shape(input=x)
    counts = [raw_ops.Prod(input=raw_ops.GatherV2(params=input_shape, indices=group,
                                                  axis=const(0)), axis=const(0))
              for group in (reduced, other)]
    return perm, inverse, raw_ops.Pack(values=counts)


@RegisterGradient("Prod")
def _prod_grad(op, grad):
    """Each element's gradient is the product of all the others in its reduction group:
    the reduced axes are moved to the front and flattened, and the exclusive cumulative
    products from the left and from the right are multiplied."""
    x = op.inputs[0]
    input_shape = shape_of(x)
    if not op.get_attr("keep_dims"):
        grad = raw_ops.Reshape(tensor=grad, shape=_kept_dims_shape(op))
    grad = raw_ops.BroadcastTo(input=grad, shape=input_shape)
    perm, inverse, matrix_shape = _reduced_first(op)
    permuted = raw_ops.Transpose(x=x, perm=perm)
    matrix = raw_ops.Reshape(tensor=permuted, shape=matrix_shape)
    left = raw_ops.Cumprod(x=matrix, axis=const(0), exclusive=True)
    right = raw_ops.Cumprod(x=matrix, axis=const(0), exclusive=True, reverse=True)
    others = raw_ops.Reshape(tensor=raw_ops.Mul(x=conj(left), y=conj(right)),
                             shape=shape_of(permuted))
    out = raw_ops.Mul(x=grad, y=raw_ops.Transpose(x=others, perm=inverse))
    return [raw_ops.Reshape(tensor=out, shape=input_shape), None]


@RegisterGradient("Cumprod")
def _cumprod_grad(op, grad):
    x, axis = op.inputs
    exclusive, reverse = op.get_attr("exclusive"), op.get_attr("reverse")
    prod = raw_ops.Cumprod(x=x, axis=axis, exclusive=exclusive, reverse=reverse)
    out = raw_ops.Cumsum(x=raw_ops.Mul(x=prod, y=grad), axis=axis, exclusive=exclusive,
                         reverse=not reverse)
    return [raw_ops.DivNoNan(x=out, y=x), None]


@RegisterGradient("Cumsum")
def _cumsum_grad(op, grad):
    return [raw_ops.Cumsum(x=grad, axis=op.inputs[1], exclusive=op.get_attr("exclusive"),
                           reverse=not op.get_attr("reverse")), None]


# -----------------------------------------------------------------------------
# EuclideanNorm
#
# Gradient of EuclideanNorm (TF's math_grad.py): x / (norm / grad), the norm and the
# gradient first given the input's rank (kept dims) when the reduction dropped them.
@RegisterGradient("EuclideanNorm")
def _euclidean_norm_grad(op, grad):
    x, axes = op.inputs
    norm = op.outputs[0]
    if not op.get_attr("keep_dims"):
        kept = reduced_shape(shape_of(x), axes)
        norm = raw_ops.Reshape(tensor=norm, shape=kept)
        grad = raw_ops.Reshape(tensor=grad, shape=kept)
    return [raw_ops.RealDiv(x=x, y=raw_ops.RealDiv(x=norm, y=grad)), None]
