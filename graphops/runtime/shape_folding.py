"""What the shapes of a plan's tensors decide, folded as constants (TF grappler's shape
materialisation): once the shapes a plan's feeds will have are known, the shape functions
give many of its tensors a fully known shape, and a node that reads nothing but its inputs'
shapes and dtypes (its kernel declares ``reads_shape_only``: Shape, ShapeN, Size, Rank,
ZerosLike, OnesLike) computes the same value on every run. Folding it lets constant folding
carry on through the shape arithmetic behind it (a gradient's BroadcastGradientArgs, its
reshapes' target shapes, Fill's dims), so a run does the math and little else.

A folded shape node leaves a guard in its place (``steps.ShapeGuardStep``) that checks its
inputs' shapes as the run reaches it: a shape function promising a shape its kernel does
not produce is an InternalError naming the node, never a wrong value.
"""

import numpy as np

from graphops.registry.shape_inference import infer_shapes, merge_shapes
from graphops.registry.tensor_shape import TensorShape, unknown_shape

_UNKNOWN = unknown_shape()


class ShapeFacts:
    """The shapes of a plan's tensors as far as its feeds decide them: the fed shapes
    (``fed_shapes``, per feed a shape tuple, or None where not given: then the fed tensor's
    static shape, which a feed must match), then each node's shape function over its inputs'
    shapes, the folded values and the inputs' handle shapes (a variable's declared shape),
    merged with the shape inferred when the graph was built
    (a user's ``set_shape`` is no promise a kernel keeps). A
    conflict leaves the tensor's shape unknown."""

    def __init__(self, feeds, fed_shapes):
        self._shapes = {}
        for t, shape in zip(feeds, fed_shapes):
            key = (t.op._id, t.value_index)
            self._shapes[key] = t.shape if shape is None else _merged(t.shape, shape)

    def of(self, t):
        shape = self._shapes.get((t.op._id, t.value_index))
        return _built(t) if shape is None else shape

    def record(self, op, folded):
        """Records ``op``'s output shapes: its folded values' when it folded, else what its
        shape function gives (``folded``: {op id: values} so far)."""
        values = folded.get(op._id)
        if values is not None:
            for k, value in enumerate(values):
                if isinstance(value, np.ndarray):
                    self._shapes.setdefault((op._id, k), TensorShape(value.shape))
            return
        inferred = self._inferred(op, folded)
        for k, t in enumerate(op.outputs):
            key = (op._id, k)
            if key not in self._shapes:      # a fed output keeps its fed shape
                self._shapes[key] = _built(t) if inferred is None else _merged(_built(t),
                                                                               inferred[k])

    def _inferred(self, op, folded):
        """``op``'s output shapes by its shape function, None when it fails."""
        values = [_folded_value(t, folded) for t in op.inputs]
        try:
            return infer_shapes(op.op_def, op.name, [self.of(t) for t in op.inputs], values,
                                op.attrs, len(op.outputs),
                                [t._handle_shape for t in op.inputs])[0]
        except Exception:       # noqa: BLE001 - the node's kernel reports it at run time
            return None

    def known_input_shapes(self, op):
        """The full shapes of ``op``'s inputs as tuples, or None unless all are known."""
        shapes = [self.of(t) for t in op.inputs]
        if not all(s.is_fully_defined() for s in shapes):
            return None
        return [s.as_tuple() for s in shapes]


def shape_only_foldable(op, placed, kernel, fed):
    """Whether ``op`` is a node on the host reading only its inputs' shapes (its kernel
    declares ``reads_shape_only``), with inputs that are plain tensors and outputs no feed
    replaces."""
    return (kernel.reads_shape_only and placed.device.type.is_host and bool(op.inputs)
            and not any((op._id, k) in fed for k in range(len(op.outputs)))
            and not any(t.dtype.kind in ("handle", "string") or t.dtype.is_ref
                        for t in op.inputs))


def stand_ins(op, shapes):
    """Inputs of ``op``'s dtypes and ``shapes`` that cost no memory (a broadcast zero):
    what a ``reads_shape_only`` kernel needs to compute its folded value."""
    return [np.broadcast_to(np.zeros((), t.dtype.base_dtype.np_dtype), shape)
            for t, shape in zip(op.inputs, shapes)]


def _folded_value(t, folded):
    values = folded.get(t.op._id)
    value = None if values is None else values[t.value_index]
    return value if isinstance(value, np.ndarray) else None


def _built(t):
    """The shape ``t``'s op inferred when the graph was built (its static shape for tensors
    that do not say)."""
    return getattr(t, "_inferred_shape", t.shape)


def _merged(static, shape):
    try:
        return merge_shapes(static, shape)
    except Exception:       # noqa: BLE001 - disagreeing sources: trust neither
        return _UNKNOWN
