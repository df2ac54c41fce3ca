"""TF1's comparison and logical wrappers: equal, not_equal, less, less_equal, greater,
greater_equal, logical_and/or/not/xor (xor built from the others, as TF does) and the
float predicates is_nan, is_inf, is_finite."""

from graphops.api import raw_ops
from graphops.api.tensor_args import snake_case


def _binary(op_type, doc):
    def wrapper(x, y, name=None):
        return getattr(raw_ops, op_type)(x=x, y=y, name=name)
    wrapper.__doc__ = doc
    wrapper.__name__ = wrapper.__qualname__ = snake_case(op_type)
    return wrapper


def _unary(op_type, doc):
    def wrapper(x, name=None):
        return getattr(raw_ops, op_type)(x=x, name=name)
    wrapper.__doc__ = doc
    wrapper.__name__ = wrapper.__qualname__ = snake_case(op_type)
    return wrapper


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
