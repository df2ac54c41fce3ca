"""The built-in gradient functions, one module per op family; importing registers them."""

from graphops.grad import array_grad, conv_grad, math_grad, nn_grad, state_grad  # noqa: F401
