"""`Tensor.__getitem__` as TF's `_slice_helper`: an index expression (ints, slices with any
step, Ellipsis, None/newaxis, scalar int tensors) becomes one StridedSlice node named
"strided_slice" whose begin/end/strides are stacked constants (a Pack where tensors are
among them), int32 unless one of them is int64. Installed on Tensor by tensor_operators.
"""

import numbers

from graphops.building.constant_op import constant
from graphops.building.op_builder import apply_op
from graphops.building.tensor import Tensor
from graphops.registry import dtypes

_SLICE_TYPE_ERROR = ("Only integers, slices (`:`), ellipsis (`...`), tf.newaxis (`None`) and "
                     "scalar tf.int32/tf.int64 tensors are valid indices")
_INDEX_TYPES = (dtypes.int16, dtypes.int32, dtypes.int64)


def _check_index(index):
    """TF's _check_index: a Python/NumPy integer or a non-vector int16/32/64 tensor."""
    if isinstance(index, numbers.Integral):
        return
    dtype = getattr(index, "dtype", None)
    try:
        dtype = dtypes.as_dtype(dtype) if dtype is not None else None
    except TypeError:
        dtype = None
    shape = getattr(index, "shape", None)
    rank = len(shape) if shape is not None and getattr(shape, "rank", 0) is not None else None
    if dtype not in _INDEX_TYPES or rank == 1:
        raise TypeError(f"{_SLICE_TYPE_ERROR}, got {index!r}")


def _slice_dtype(piece):
    """TF's choice of dtype for a slice's implicit begin/end/stride: its widest tensor's."""
    dtype = None
    for t in (piece.start, piece.stop, piece.step):
        if isinstance(t, Tensor):
            if t.dtype == dtypes.int64:
                dtype = dtypes.int64
            elif t.dtype == dtypes.int32 and dtype != dtypes.int64:
                dtype = dtypes.int32
            elif t.dtype == dtypes.int16 and dtype is None:
                dtype = dtypes.int16
    return dtype


def _default(value, dtype):
    return value if dtype is None else constant(value, dtype=dtype)


def _slice_spec(spec):
    """TF's _slice_helper: (begin, end, strides lists, masks) of an index expression."""
    begin, end, strides = [], [], []
    masks = dict(begin_mask=0, end_mask=0, ellipsis_mask=0, new_axis_mask=0,
                 shrink_axis_mask=0)
    for i, s in enumerate(spec if isinstance(spec, (list, tuple)) else [spec]):
        bit = 1 << i
        if isinstance(s, slice):
            dtype = _slice_dtype(s)
            for value, default, out, mask in ((s.start, 0, begin, "begin_mask"),
                                              (s.stop, 0, end, "end_mask"),
                                              (s.step, 1, strides, None)):
                if value is not None:
                    _check_index(value)
                    out.append(value)
                else:
                    out.append(_default(default, dtype))
                    if mask:
                        masks[mask] |= bit
        elif s is Ellipsis or s is None:
            begin.append(0)
            end.append(0)
            strides.append(1)
            masks["ellipsis_mask" if s is Ellipsis else "new_axis_mask"] |= bit
        else:
            _check_index(s)
            begin.append(s)
            end.append(s + 1)
            wide = isinstance(s, Tensor) and s.dtype in (dtypes.int16, dtypes.int64)
            strides.append(constant(1, dtype=s.dtype) if wide else 1)
            masks["shrink_axis_mask"] |= bit
    return begin, end, strides, masks


def _stack(values, name):
    """TF's stack of slice bounds: a Const when all are numbers, else a Pack."""
    tensors = [v for v in values if isinstance(v, Tensor)]
    if not tensors:
        return constant(values, name=name)
    dtype = tensors[0].dtype
    return apply_op("Pack", name=name, values=[
        v if isinstance(v, Tensor) else constant(v, dtype=dtype) for v in values])


def getitem(self, spec):
    """`tensor[spec]` as TF's `_slice_helper` builds it: one StridedSlice named
    "strided_slice", its bounds stacked into int32 vectors (int64 if any is)."""
    if isinstance(spec, bool) or getattr(spec, "dtype", None) in (dtypes.bool_, bool):
        raise TypeError(f"Boolean masks are not supported as indices (TF turns them into "
                        f"tf.boolean_mask), got {spec!r}")
    with self.graph.as_default(), self.graph.name_scope("strided_slice") as scope:
        begin, end, strides, masks = _slice_spec(spec)
        if begin:
            packed = [_stack(values, name) for values, name in
                      ((begin, "stack"), (end, "stack_1"), (strides, "stack_2"))]
            if any(t.dtype == dtypes.int64 for t in packed):
                packed = [t if t.dtype == dtypes.int64 else
                          apply_op("Cast", x=t, DstT=dtypes.int64) for t in packed]
        else:
            packed = [constant([], dtype=dtypes.int32)] * 3
        return apply_op("StridedSlice", name=scope, input=self, begin=packed[0],
                        end=packed[1], strides=packed[2], **masks)


def iterate(self):
    raise TypeError("Tensor objects are only iterable when eager execution is enabled. To "
                    "iterate over this tensor use tf.map_fn.")
