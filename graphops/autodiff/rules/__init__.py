"""The built-in gradient functions, one module per op family; importing registers them."""

from graphops.autodiff.rules import array, conv, math, nn, state  # noqa: F401
