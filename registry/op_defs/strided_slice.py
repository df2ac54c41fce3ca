"""StridedSlice and StridedSliceGrad: OpDefs, shape functions and TF's ValidateStridedSliceOp.

`strided_slice_spec` is TF's validation and canonicalisation of a (sparse) slice spec against
an input shape, written once for the shape functions (partially known shapes, unknown begin
or end) and the kernels (everything known). It turns the masks into one dense spec per input
dimension, checks bounds with TF's messages, and gives the processing shape (the strided
slice before shrinking/new axes) and the final shape.
"""

from dataclasses import dataclass

from graphops.registry.attr_values import int32_attr
from graphops.registry.errors import InvalidArgumentError
from graphops.registry.op_defs.array import int_values, shape_from_shape_tensor
from graphops.registry.op_registry import register_op
from graphops.registry.shape_inference import merge_shapes
from graphops.registry.tensor_shape import TensorShape, shape_str, unknown_shape

_NEW_AXIS, _SHRINK_AXIS = -1, -2
MASK_ATTRS = ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")


@dataclass
class StridedSliceSpec:
    """A validated slice: per input dim the canonical begin/end/stride (None where begin or
    end is unknown), which dims shrink, and the processing and final shapes (None dims are
    unknown)."""
    begin: list
    end: list
    strides: list
    shrink: list
    processing_shape: list
    final_shape: list

    def slices(self):
        """The slice as a NumPy index of slices only (a shrunk dim is a length-1 slice, so
        indexing always gives an array view, strings included); known begin and end only."""
        return tuple(slice(b, b + 1) if shrink else slice(0, 0) if size == 0 else
                     slice(b, e if e >= 0 else None, s)
                     for b, e, s, shrink, size in zip(self.begin, self.end, self.strides,
                                                      self.shrink, self.processing_shape))


def _check_vectors(begin, end, strides):
    """TF's checks that begin, end and strides are equal-length vectors (NumPy arrays or
    None for unknown begin/end)."""
    n = strides.size

    def wrong(t):
        return t is not None and not (t.ndim == 1 and t.size == n and t.size < 32)
    if wrong(begin) or wrong(end) or strides.ndim != 1:
        if begin is not None and end is not None:
            raise InvalidArgumentError(
                f"Expected begin, end, and strides to be 1D equal size tensors, but got shapes "
                f"{shape_str(begin.shape)}, {shape_str(end.shape)}, and "
                f"{shape_str(strides.shape)} instead.")
        raise InvalidArgumentError(
            f"Expected begin, end, and strides to be 1D equal size tensors, but got shape "
            f"{shape_str(strides.shape)} for strides.")


def _dense_spec(begin, end, strides, rank, masks):
    """TF's BuildDenseSpec: the sparse spec (with ellipsis and new axes) as one entry per
    input dim, and for each final dim where its size comes from."""
    begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_mask = masks
    sparse_dims = len(strides)
    after_ellipsis, seen = 0, False
    for i in range(sparse_dims):
        if seen and (1 << i) & new_axis_mask:
            after_ellipsis += 1
        if (1 << i) & ellipsis_mask:
            seen = True
    if not seen:
        ellipsis_mask |= 1 << sparse_dims
        sparse_dims += 1
    dense = {"begin": [0] * rank, "end": [0] * rank, "strides": [1] * rank,
             "begin_mask": 0, "end_mask": 0, "shrink": 0, "gather": []}
    full = 0
    for i in range(sparse_dims):
        bit = 1 << i
        if bit & ellipsis_mask:
            stop = min(rank - (sparse_dims - i) + 1 + after_ellipsis, rank)
            while full < stop:
                dense["begin_mask"] |= 1 << full
                dense["end_mask"] |= 1 << full
                dense["gather"].append(full)
                full += 1
        elif bit & new_axis_mask:
            dense["gather"].append(_NEW_AXIS)
        else:
            if full == rank:
                if rank == 0:
                    raise InvalidArgumentError("Attempting to slice scalar input.")
                raise InvalidArgumentError(
                    f"Index out of range using input dim {full}; input has only {rank} dims")
            if begin is not None:
                dense["begin"][full] = begin[i]
            if end is not None:
                dense["end"][full] = end[i]
            dense["strides"][full] = strides[i]
            if begin_mask & bit:
                dense["begin_mask"] |= 1 << full
            if end_mask & bit:
                dense["end_mask"] |= 1 << full
            if shrink_mask & bit:
                dense["gather"].append(_SHRINK_AXIS)
                dense["shrink"] |= 1 << full
            else:
                dense["gather"].append(full)
            full += 1
    return dense


def _canonical(x, which, stride, dim, masked):
    """TF's canonical begin (which=0) or end (which=1): masks pick the whole range, other
    values wrap once and are clamped into the valid range for the stride's direction."""
    valid = (0, dim) if stride > 0 else (-1, dim - 1)
    if masked:
        return valid[which] if stride > 0 else valid[1 - which]
    x = dim + x if x < 0 else x
    return min(max(x, valid[0]), valid[1])


def strided_slice_spec(begin, end, strides, input_shape, masks):
    """TF's ValidateStridedSliceOp. `begin`/`end`: NumPy int vectors or None (unknown);
    `strides`: a NumPy int vector; `input_shape`: dims (None unknown), rank known; `masks`:
    the five mask attrs in order. Raises InvalidArgumentError with TF's messages."""
    _check_vectors(begin, end, strides)
    ellipsis_mask = masks[2]
    if ellipsis_mask & (ellipsis_mask - 1):
        raise InvalidArgumentError("Multiple ellipses in slice spec not allowed")
    rank = len(input_shape)
    dense = _dense_spec(None if begin is None else int_values(begin),
                        None if end is None else int_values(end), int_values(strides), rank,
                        masks)
    known = begin is not None and end is not None
    out_begin, out_end, processing, shrinks = [], [], [], []
    for i in range(rank):
        b, e, s, dim = dense["begin"][i], dense["end"][i], dense["strides"][i], input_shape[i]
        if s == 0:
            raise InvalidArgumentError(f"strides[{i}] must be non-zero")
        shrink = bool(dense["shrink"] & (1 << i))
        shrinks.append(shrink)
        begin_masked = bool(dense["begin_mask"] & (1 << i))
        end_masked = bool(dense["end_mask"] & (1 << i))
        if dim is None:
            processing.append(1 if shrink else None)
            out_begin.append(None)
            out_end.append(None)
            continue
        if shrink and s <= 0:
            raise InvalidArgumentError("only stride 1 allowed on non-range indexing.")
        if known:
            if shrink:
                forward = dim + b if b < 0 else b
                if not 0 <= forward < dim:
                    raise InvalidArgumentError(
                        f"slice index {forward} of dimension {i} out of bounds.")
                b, e = forward, forward + 1
            else:
                b = _canonical(b, 0, s, dim, begin_masked)
                e = _canonical(e, 1, s, dim, end_masked)
            length = e - b
        else:
            length = 1 if shrink else (
                (-dim if s < 0 else dim) if begin_masked and end_masked else None)
        out_begin.append(b if known else None)
        out_end.append(e if known else None)
        if length is None:
            processing.append(None)
        elif length == 0 or (length < 0) != (s < 0):
            processing.append(0)
        else:
            processing.append(-(-abs(length) // abs(s)))
    final = [processing[g] if g >= 0 else 1 for g in dense["gather"] if g != _SHRINK_AXIS]
    return StridedSliceSpec(out_begin, out_end, dense["strides"], shrinks, processing, final)


def masks(get_attr):
    """The five mask attrs in MASK_ATTRS order, read with `get_attr(name)` (as int32s)."""
    return tuple(int32_attr(name, get_attr(name)) for name in MASK_ATTRS)


def _strided_slice_shape(c):
    """TF's StridedSlice shape fn: unknown unless the input rank, the spec length and the
    strides are known; begin/end may be unknown."""
    spec_shape = c.with_rank(c.input(1), 1)
    spec_shape = merge_shapes(spec_shape, c.with_rank(c.input(2), 1))
    spec_shape = merge_shapes(spec_shape, c.with_rank(c.input(3), 1))
    strides = c.input_value(3)
    src = c.input(0)
    if src.rank is None or spec_shape[0] is None or strides is None:
        c.set_output(0, unknown_shape())
        return
    mask_values = masks(c.get_attr)
    # TF runs shape fns first without constant inputs: that pass's errors come first.
    strided_slice_spec(None, None, strides, src.dims, mask_values)
    spec = strided_slice_spec(c.input_value(1), c.input_value(2), strides, src.dims,
                              mask_values)
    c.set_output(0, TensorShape(spec.final_shape))


def _strided_slice_grad_shape(c):
    c.set_output(0, shape_from_shape_tensor(c, 0))


def _with_masks(builder):
    for name in MASK_ATTRS:
        builder.attr(f"{name}: int = 0")
    return builder


_with_masks(register_op("StridedSlice")
            .input("input: T")
            .input("begin: Index")
            .input("end: Index")
            .input("strides: Index")
            .output("output: T")
            .attr("T: type")
            .attr("Index: {int16, int32, int64}")) \
    .set_shape_fn(_strided_slice_shape) \
    .doc("Return a strided slice from `input`.")

_with_masks(register_op("StridedSliceGrad")
            .input("shape: Index")
            .input("begin: Index")
            .input("end: Index")
            .input("strides: Index")
            .input("dy: T")
            .output("output: T")
            .attr("T: type")
            .attr("Index: {int32, int64}")) \
    .set_shape_fn(_strided_slice_grad_shape) \
    .doc("Returns the gradient of `StridedSlice`: `dy` placed into zeros of `shape`.")
