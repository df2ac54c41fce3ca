"""TF1's comparison and logical wrappers: equal, not_equal, less, less_equal, greater,
greater_equal, logical_and/or/not/xor (xor built from the others, as TF does) and the
float predicates is_nan, is_inf, is_finite."""

from graphops.api import raw_ops
from graphops.api.tensor_args import binary_wrapper, unary_wrapper


_binary, _unary = binary_wrapper, unary_wrapper


equal = _binary("Equal", "x == y element-wise, with broadcasting.")
not_equal = _binary("NotEqual", "x != y element-wise, with broadcasting.")
less = _binary("Less", "x < y element-wise, with broadcasting.")
less_equal = _binary("LessEqual", "x <= y element-wise, with broadcasting.")
greater = _binary("Greater", "x > y element-wise, with broadcasting.")
greater_equal = _binary("GreaterEqual", "x >= y element-wise, with broadcasting.")
logical_and = _binary("LogicalAnd", "x AND y element-wise (bool tensors).")
logical_or = _binary("LogicalOr", "x OR y element-wise (bool tensors).")
logical_not = _unary("LogicalNot", "NOT x element-wise (a bool tensor).")
is_nan = _unary("IsNan", "Which elements of x are NaN.")
is_inf = _unary("IsInf", "Which elements of x are +-Inf.")
is_finite = _unary("IsFinite", "Which elements of x are neither NaN nor Inf.")


def logical_xor(x, y, name="LogicalXor"):
    """x XOR y element-wise: (x OR y) AND NOT (x AND y)."""
    return raw_ops.LogicalAnd(x=raw_ops.LogicalOr(x=x, y=y),
                              y=raw_ops.LogicalNot(x=raw_ops.LogicalAnd(x=x, y=y)), name=name)
