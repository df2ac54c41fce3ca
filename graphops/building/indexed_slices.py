"""`IndexedSlices`: a sparse representation of a dense tensor by some of its rows (TF's
tf.IndexedSlices), what the gradient of a gather along axis 0 is. Row `indices[i]` of
the dense tensor of shape `dense_shape` is `values[i]`; repeated indices add up.

Wherever a plain tensor is expected (an op input, `convert_to_tensor`), it becomes dense
as TF's `_indexed_slices_to_tensor` makes it: an UnsortedSegmentSum of the values by the
indices into `dense_shape[0]` rows, with TF's warning for a very large known shape.
"""

import collections
import warnings

import numpy as np

from graphops.building.constant_op import constant_value
from graphops.building.op_builder import build_op
from graphops.registry import dtypes
from graphops.registry.tensor_shape import TensorShape, unknown_shape

LARGE_SPARSE_NUM_ELEMENTS = 100000000     # TF's _LARGE_SPARSE_NUM_ELEMENTS


IndexedSlicesValue = collections.namedtuple("IndexedSlicesValue",
                                            ["values", "indices", "dense_shape"])
IndexedSlicesValue.__doc__ = "What `Session.run` returns for a fetched IndexedSlices (TF's)."


class IndexedSlices:
    """Rows `values` of a dense tensor of shape `dense_shape` at rows `indices`."""

    def __init__(self, values, indices, dense_shape=None):
        self._values = values
        self._indices = indices
        self._dense_shape = dense_shape

    @property
    def values(self):
        """A Tensor holding the slices."""
        return self._values

    @property
    def indices(self):
        """A 1-D Tensor of the slices' row indices."""
        return self._indices

    @property
    def dense_shape(self):
        """A 1-D Tensor: the shape of the dense tensor (or None)."""
        return self._dense_shape

    @property
    def shape(self):
        """The dense tensor's TensorShape, as far as `dense_shape` is known while building."""
        if self._dense_shape is None:
            return unknown_shape()
        known = constant_value(self._dense_shape)
        if known is not None:
            return TensorShape([int(d) for d in known])
        rank = self._dense_shape.shape[0] if self._dense_shape.shape.rank == 1 else None
        return unknown_shape(rank) if rank is not None else unknown_shape()

    @property
    def name(self):
        return self._values.name

    @property
    def device(self):
        return self._values.device

    @property
    def op(self):
        """The Operation producing `values`."""
        return self._values.op

    @property
    def dtype(self):
        return self._values.dtype

    @property
    def graph(self):
        return self._values.graph

    def consumers(self):
        """The Operations reading any of the three tensors."""
        tensors = [self._values, self._indices] + (
            [self._dense_shape] if self._dense_shape is not None else [])
        return list(dict.fromkeys(op for t in tensors for op in t.consumers()))

    def __str__(self):
        shape = (f", dense_shape={self._dense_shape}" if self._dense_shape is not None else "")
        return f"IndexedSlices(indices={self._indices}, values={self._values}{shape})"

    __repr__ = __str__

    def __neg__(self):
        negated = build_op(self.graph, "Neg", x=self._values)
        return IndexedSlices(negated, self._indices, self._dense_shape)

    def _as_input_tensor(self):
        """The dense tensor (the conversion protocol of `values.convert_value`)."""
        return to_dense(self)


def to_dense(value, dtype=None, name=None):
    """TF's `_indexed_slices_to_tensor`: an UnsortedSegmentSum of `value`'s values by its
    indices into `dense_shape[0]` rows."""
    if dtype is not None and dtypes.as_dtype(dtype) != value.dtype:
        raise ValueError(
            f"Incompatible tensor conversion requested to `dtype` {dtypes.as_dtype(dtype).name}"
            f" for IndexedSlices ({value}) with dtype {value.dtype.name}")
    if value.dense_shape is None:
        raise ValueError("Tensor conversion requested for IndexedSlices for argument `value` "
                         f"without dense_shape: {value!s}")
    known = constant_value(value.dense_shape)
    if known is not None:
        num_elements = int(np.prod(known, dtype=np.int64))
        if num_elements >= LARGE_SPARSE_NUM_ELEMENTS:
            warnings.warn(f"Converting sparse IndexedSlices to a dense Tensor with "
                          f"{num_elements} elements. This may consume a large amount of "
                          f"memory.", stacklevel=3)
    graph = value.graph
    with graph.as_default():
        rows = first_item(value.dense_shape)
        return build_op(graph, "UnsortedSegmentSum", name=name, data=value.values,
                        segment_ids=value.indices, num_segments=rows)


def first_item(vector, name="strided_slice"):
    """`vector[0]` as TF's `__getitem__` builds it: a StridedSlice "strided_slice" of the
    Consts "strided_slice/stack", "stack_1", "stack_2"."""
    graph = vector.graph
    with graph.as_default(), graph.name_scope(name) as scope:
        bounds = [build_op(graph, "Const", name=const_name, dtype=dtypes.int32,
                           value=np.asarray([value], np.int32))
                  for const_name, value in (("stack", 0), ("stack_1", 1), ("stack_2", 1))]
        return build_op(graph, "StridedSlice", name=scope, input=vector, begin=bounds[0],
                        end=bounds[1], strides=bounds[2], shrink_axis_mask=1)

