"""Differentiation: the gradient registry and `gp.gradients`, and the gradient rules of the
built-in ops (one module per op family in `rules/`, registered on import). Imports api,
framework_kernels and below."""

from graphops.autodiff import rules  # noqa: F401  (registers the built-in gradient functions)
