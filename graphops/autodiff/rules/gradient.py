"""The gradient-support ops (BroadcastGradientArgs, InvertPermutation, ConcatOffset) compute
shapes and indices: they have no gradient."""

from graphops.autodiff.gradients import NotDifferentiable

for _op in ("BroadcastGradientArgs", "InvertPermutation", "ConcatOffset"):
    NotDifferentiable(_op)
