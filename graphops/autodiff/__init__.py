"""Differentiation and training: the gradient registry and `gp.gradients`, the gradient rules
of the built-in ops (registered here, on import), resource variables and optimizers.
Imports api, client, building and runtime."""

from graphops.autodiff import rules  # noqa: F401  (registers the built-in gradient functions)
