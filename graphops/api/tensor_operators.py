"""Tensor's Python operators (arithmetic, comparisons, logic, abs, indexing), installed on
`Tensor` from
here, as TF's math_ops installs them: the building layer below knows nothing of which ops
they build. `==` and `!=` stay Python's identity tests, as in TF1, so tensors can be dict keys.

Binary operators follow TF1's wrappers: the non-Tensor side is converted to the Tensor's
dtype inside a name scope ("add/y"); integer true division casts to float32 (8/16-bit) or
float64 first, as TF's truediv does.
"""

from graphops.api.comparison_ops import logical_xor
from graphops.api.tensor_indexing import getitem, iterate
from graphops.building.constant_op import convert_to_tensor
from graphops.building.op_builder import apply_op
from graphops.building.tensor import Operation, Tensor, as_graph_element
from graphops.registry import dtypes

# Python method -> (op type, name scope, keyword names of the operands, reflected?)
_BINARY = {
    "__add__": ("AddV2", "add", ("x", "y"), False),
    "__radd__": ("AddV2", "add", ("x", "y"), True),
    "__sub__": ("Sub", "sub", ("x", "y"), False),
    "__rsub__": ("Sub", "sub", ("x", "y"), True),
    "__mul__": ("Mul", "mul", ("x", "y"), False),
    "__rmul__": ("Mul", "mul", ("x", "y"), True),
    "__truediv__": ("RealDiv", "truediv", ("x", "y"), False),
    "__rtruediv__": ("RealDiv", "truediv", ("x", "y"), True),
    "__floordiv__": ("FloorDiv", "floordiv", ("x", "y"), False),
    "__rfloordiv__": ("FloorDiv", "floordiv", ("x", "y"), True),
    "__mod__": ("FloorMod", "mod", ("x", "y"), False),
    "__rmod__": ("FloorMod", "mod", ("x", "y"), True),
    "__pow__": ("Pow", "pow", ("x", "y"), False),
    "__rpow__": ("Pow", "pow", ("x", "y"), True),
    "__matmul__": ("MatMul", "MatMul", ("a", "b"), False),
    "__rmatmul__": ("MatMul", "MatMul", ("a", "b"), True),
    "__and__": ("LogicalAnd", "and", ("x", "y"), False),
    "__rand__": ("LogicalAnd", "and", ("x", "y"), True),
    "__or__": ("LogicalOr", "or", ("x", "y"), False),
    "__ror__": ("LogicalOr", "or", ("x", "y"), True),
}

# comparisons build their op directly, named after it (TF binds gen_math_ops.less & co.)
_COMPARISONS = {"__lt__": "Less", "__le__": "LessEqual", "__gt__": "Greater",
                "__ge__": "GreaterEqual"}


def _binary(op_type, scope_name, x, y, names):
    """x <op> y as TF1's operator wrappers: the non-Tensor side gets the Tensor's dtype."""
    x_element, y_element = as_graph_element(x), as_graph_element(y)
    tensor = x_element if isinstance(x_element, Tensor) else y_element
    with tensor.graph.as_default(), tensor.graph.name_scope(scope_name) as scope:
        x, y = (v if isinstance(v, (Tensor, Operation)) else
                convert_to_tensor(v, dtype=tensor.dtype, name=n) for v, n in zip((x, y), names))
        if op_type == "RealDiv" and x.dtype.is_integer:
            target = dtypes.float32 if x.dtype.size <= 2 else dtypes.float64
            x, y = (apply_op("Cast", x=v, DstT=target) for v in (x, y))
        return apply_op(op_type, name=scope, **{names[0]: x, names[1]: y})


def _operator(op_type, scope_name, names, reflected):
    if reflected:
        def method(self, other):
            return _binary(op_type, scope_name, other, self, names)
    else:
        def method(self, other):
            return _binary(op_type, scope_name, self, other, names)
    return method


def _comparison(op_type):
    def method(self, other):
        return apply_op(op_type, x=self, y=other)
    return method


def _xor(self, other):
    return logical_xor(self, other)


def _rxor(self, other):
    return logical_xor(other, self)


def _neg(self):
    return apply_op("Neg", x=self, name="Neg")


def _abs(self):
    return apply_op("Abs", x=self)


def _invert(self):
    return apply_op("LogicalNot", x=self)


for _name, _spec in _BINARY.items():
    setattr(Tensor, _name, _operator(*_spec))
for _name, _op_type in _COMPARISONS.items():
    setattr(Tensor, _name, _comparison(_op_type))
Tensor.__neg__ = _neg
Tensor.__abs__ = _abs
Tensor.__invert__ = _invert
Tensor.__xor__ = _xor
Tensor.__rxor__ = _rxor
Tensor.__getitem__ = getitem
Tensor.__iter__ = iterate
