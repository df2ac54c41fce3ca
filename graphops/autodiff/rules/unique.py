"""Unique picks values: it has no gradient (as in TF)."""

from graphops.autodiff.gradients import NotDifferentiable

NotDifferentiable("Unique")
