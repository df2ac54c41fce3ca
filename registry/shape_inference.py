"""Build-time shape inference: the context handed to an op's shape function."""

from graphops.registry.errors import InvalidArgumentError
from graphops.registry.tensor_shape import TensorShape, as_shape, unknown_shape

_UNKNOWN = unknown_shape()     # TensorShapes are immutable: one object serves every output


class InferenceContext:
    """What a shape function sees: input shapes, constant input values, attrs; sets outputs.

    A resource input may carry a handle shape (TF's handle data): the shape of the value its
    resource holds, as the op making the handle declares it (a VarHandleOp's ``shape``);
    ``input_handle_shape`` reads it and ``set_output_handle_shape`` declares one."""

    __slots__ = ("op_def", "op_type", "node_name", "_inputs", "_values", "_attrs", "_outputs",
                 "_input_handles", "output_handle_shapes")

    def __init__(self, op_def, node_name, input_shapes, input_values, attrs, num_outputs,
                 input_handle_shapes=None):
        self.op_def = op_def
        self.op_type = op_def.name
        self.node_name = node_name
        self._inputs = [s if type(s) is TensorShape else as_shape(s) for s in input_shapes]
        self._values = input_values if input_values is not None else [None] * len(self._inputs)
        self._attrs = attrs
        self._outputs = [_UNKNOWN] * num_outputs
        self._input_handles = input_handle_shapes
        self.output_handle_shapes = [None] * num_outputs

    @property
    def num_inputs(self):
        return len(self._inputs)

    @property
    def num_outputs(self):
        return len(self._outputs)

    def input(self, i):
        return self._inputs[i]

    def input_value(self, i):
        """The input's value as a NumPy array when it is known while building, else None."""
        return self._values[i]

    def get_attr(self, name):
        try:
            return self._attrs[name]
        except KeyError:
            raise InvalidArgumentError(
                f"No attr named '{name}' in NodeDef {self.node_name} ({self.op_type})") from None

    def has_attr(self, name):
        return name in self._attrs

    def set_output(self, i, shape):
        self._outputs[i] = as_shape(shape)

    def output(self, i):
        return self._outputs[i]

    def input_handle_shape(self, i):
        """The handle shape resource input ``i`` carries; unknown when it carries none."""
        shape = self._input_handles[i] if self._input_handles is not None else None
        return _UNKNOWN if shape is None else shape

    def set_output_handle_shape(self, i, shape):
        """Declares the shape of the value resource output ``i``'s resource holds."""
        self.output_handle_shapes[i] = as_shape(shape)

    def with_rank(self, shape, rank):
        """`shape` merged with an unknown shape of `rank`; TF's message when it cannot be."""
        shape = as_shape(shape)
        if shape.rank is not None and shape.rank != rank:
            raise InvalidArgumentError(f"Shape must be rank {rank} but is rank {shape.rank}")
        return shape if shape.rank is not None else unknown_shape(rank)

    def with_rank_at_least(self, shape, rank):
        shape = as_shape(shape)
        if shape.rank is not None and shape.rank < rank:
            raise InvalidArgumentError(
                f"Shape must be at least rank {rank} but is rank {shape.rank}")
        return shape

    def merge(self, a, b):
        """The merge of two shapes, with TF's messages when they are incompatible."""
        return merge_shapes(a, b)

    def merge_dim(self, a, b):
        """The merge of two dimensions (None = unknown), with TF's message."""
        return merge_dim(a, b)


def unchanged_shape(c):
    """TF's UnchangedShape: output 0 has input 0's shape (and its handle shape: an Identity
    of a handle names the same resource)."""
    c.set_output(0, c.input(0))
    handle = c.input_handle_shape(0)
    if handle.rank is not None:
        c.set_output_handle_shape(0, handle)


def scalar_shape(c):
    """TF's ScalarShape: output 0 is a scalar."""
    c.set_output(0, TensorShape([]))


def merge_dim(a, b):
    """TF's Merge(DimensionHandle): None merges with anything."""
    if a is None:
        return b
    if b is None or a == b:
        return a
    raise InvalidArgumentError(f"Dimensions must be equal, but are {a} and {b}")


def merge_shapes(a, b):
    """TF's Merge(ShapeHandle), with its messages."""
    a, b = as_shape(a), as_shape(b)
    if a.rank is None:
        return b
    if b.rank is None:
        return a
    if a.rank != b.rank:
        raise InvalidArgumentError(f"Shapes must be equal rank, but are {a.rank} and {b.rank}")
    dims = []
    for i, (x, y) in enumerate(zip(a.dims, b.dims)):
        if x is not None and y is not None and x != y:
            raise InvalidArgumentError(
                f"Dimension {i} in both shapes must be equal, but are {x} and {y}. "
                f"Shapes are {a.debug_string()} and {b.debug_string()}.")
        dims.append(x if x is not None else y)
    return TensorShape(dims)


def merge_prefix(shape, prefix):
    """TF's MergePrefix: `shape` (rank at least `prefix`'s) with its leading dims merged with
    `prefix`; returns (merged shape, merged prefix), TF's messages on a mismatch."""
    shape, prefix = as_shape(shape), as_shape(prefix)
    if shape.rank is None or prefix.rank is None:
        return shape, prefix
    if shape.rank < prefix.rank:
        raise InvalidArgumentError(
            f"Shape must be at least rank {prefix.rank} but is rank {shape.rank}")
    head = [merge_dim(a, b) for a, b in zip(shape.dims, prefix.dims)]
    return TensorShape(head + shape.dims[prefix.rank:]), TensorShape(head)


def with_rank_at_most(shape, rank):
    """`shape`, or TF's error when its known rank exceeds `rank`."""
    shape = as_shape(shape)
    if shape.rank is not None and shape.rank > rank:
        raise InvalidArgumentError(f"Shape must be at most rank {rank} but is rank {shape.rank}")
    return shape


def with_value(dim, value):
    """TF's InferenceContext::WithValue: an unknown or equal dim becomes `value`."""
    if dim is not None and dim != value:
        raise InvalidArgumentError(f"Dimension must be {value} but is {dim}")
    return value


def divide_evenly(value, divisor):
    """TF's InferenceContext::Divide with evenly_divisible: a known dim `value` / `divisor`,
    or TF's error when it does not divide evenly."""
    if value % divisor:
        raise InvalidArgumentError(
            f"Dimension size must be evenly divisible by {divisor} but is {value}")
    return value // divisor


def infer_shapes(op_def, node_name, input_shapes, input_values, attrs, num_outputs,
                 input_handle_shapes=None):
    """(output shapes, output handle shapes: None where none) of a node; unknown shapes
    for ops without a shape function."""
    ctx = InferenceContext(op_def, node_name, input_shapes, input_values, attrs, num_outputs,
                           input_handle_shapes)
    if op_def.shape_fn is not None:
        op_def.shape_fn(ctx)
    return ctx._outputs, ctx.output_handle_shapes


def run_shape_fn(op_def, node_name, input_shapes, input_values, attrs, num_outputs):
    """Output shapes of a node; unknown shapes for ops without a shape function."""
    return infer_shapes(op_def, node_name, input_shapes, input_values, attrs, num_outputs)[0]


__all__ = ["InferenceContext", "infer_shapes", "run_shape_fn", "merge_dim", "merge_shapes",
           "with_rank_at_most"]
