"""Kernels of the TensorList ops, with TF's checks and messages (list_kernels.h/.cc).

A `variant` edge carries a 0-d object array holding a `TensorList`
(kernels/support/tensor_list.py): an immutable value (the element dtype, a partial element
shape, its elements where an unset element is None, the bound on its length). Every op
returns a new list and leaves its inputs alone, so a list may feed any number of consumers;
a push shares its input's element storage, appending in place when nothing lies past that
list's end (O(1), as TF's push onto a list only it holds).

Every kernel serves the CPU and the GPU, written against `ctx.xp`. The variant edge is in
host memory on every device (a list is a host object), as are the shape, index and length
args TF keeps there; the elements are in the memory of the device whose kernel made them,
and a kernel reading a list made elsewhere moves them (`on_device`) before it computes.
"""

import numpy as np

from graphops.kernels.support.kernel_util import DEVICES, zeros
from graphops.kernels.support.tensor_list import (as_variant, check_dtypes, describe, fits,
                                                   merge, new_list, on_device,
                                                   shape_from_tensor, TensorList)
from graphops.registry.errors import InvalidArgumentError
from graphops.registry.kernel_registry import OpKernel, register_kernel
from graphops.registry.op_defs.array import int_values
from graphops.registry.tensor_shape import TensorShape, shape_str


# ----------------------------------------------------------------------------- helpers

def input_list(ctx, i):
    """TF's GetInputList: input `i` must be a scalar variant holding a TensorList."""
    value = ctx.inputs[i]
    if np.ndim(value) != 0:
        raise InvalidArgumentError(f"Input list must be a scalar saw: {shape_str(value.shape)}")
    item = value[()] if isinstance(value, np.ndarray) else value
    if not isinstance(item, TensorList):
        raise InvalidArgumentError(f"Input handle is not a list. Saw: '{describe(item)}'")
    return item


def _scalar(ctx, i):
    value = ctx.input(i)
    if value.ndim != 0:
        shown = " ".join(str(v) for v in value.reshape(-1)[:3].tolist())
        more = "..." if value.size > 3 else ""
        raise InvalidArgumentError(
            f"Expected argument {i} to be a scalar. ReceivedTensor<type: "
            f"{ctx.construction.input_dtypes[i].short_name} shape: {shape_str(value.shape)} "
            f"values: {shown}{more}>")
    return int(value)


def _checked_length(ctx, n):
    """A list length, bounded by the memory budget (one pointer per element)."""
    ctx.check_allocation((n,), np.dtype(object))
    return n


def _shape_over_elements(shape, tensors):
    """`shape` merged with the shape of every set element (each distinct shape once, in
    order: merging again with a shape merged already changes nothing)."""
    for element_shape in dict.fromkeys(t.shape for t in tensors if t is not None):
        shape = merge(shape, element_shape)
    return shape


def _zeros(ctx, shape, dtype):
    """Zeros of `shape` and `dtype` in the kernel's memory, within the memory budget."""
    shape = tuple(shape)
    ctx.check_allocation(shape, dtype.np_dtype)
    return zeros(ctx.xp, shape, dtype.np_dtype)


def _stacked(ctx, tensors, shape, dtype, count):
    """The elements (unset ones as zeros of `shape`) stacked along a new first axis: in one
    step when they are all host arrays of that shape."""
    shape = tuple(shape)
    if (count and ctx.xp is np and dtype.np_dtype != object
            and all(type(t) is np.ndarray and t.shape == shape for t in tensors)):
        ctx.check_allocation((count,) + shape, dtype.np_dtype)
        return np.array(tensors, dtype=dtype.np_dtype)
    out = _zeros(ctx, (count,) + shape, dtype)
    for k, t in enumerate(tensors):
        if t is not None:
            out[k] = on_device(ctx.xp, t)
    return out


def _set_list(ctx, i, tensor_list):
    """Output `i` holds `tensor_list` (a variant: a 0-d object array, in host memory on
    every device, so set as it is)."""
    ctx.outputs[i] = as_variant(tensor_list)


_DTYPES = "Invalid data types; op elements {0} but list elements {1}"


class _ListKernel(OpKernel):
    """Reads `element_dtype` when the op has it, and the attrs its class names in `attrs`."""

    attrs = ()

    def __init__(self, ctx):
        super().__init__(ctx)
        self.element_dtype = ctx.get_attr("element_dtype") if ctx.has_attr(
            "element_dtype") else None
        for name in self.attrs:
            setattr(self, name, ctx.get_attr(name))

    def typed_list(self, ctx, i=0):
        """Input `i`'s list (GetInputList), whose element dtype must be the op's."""
        tensor_list = input_list(ctx, i)
        if tensor_list.element_dtype is not self.element_dtype:
            check_dtypes(self.element_dtype, tensor_list.element_dtype, _DTYPES)
        return tensor_list


def _kernel(op, host_memory=()):
    """Registers on the CPU and the GPU; `host_memory` as TF's GPU kernel has it."""
    return register_kernel(op, DEVICES, host_memory=host_memory)


# ----------------------------------------------------------------------------- makers

@_kernel("EmptyTensorList", ("element_shape", "max_num_elements"))
class EmptyTensorListOp(_ListKernel):
    def compute(self, ctx):
        bound = ctx.input(1)
        if bound.ndim != 0:
            raise InvalidArgumentError("max_num_elements expected to be a scalar but got "
                                       f"shape: {shape_str(bound.shape)}")
        shape = shape_from_tensor(ctx.input(0))
        _set_list(ctx, 0, new_list(self.element_dtype, shape, [], int(bound)))


@_kernel("TensorListReserve", ("element_shape", "num_elements"))
class TensorListReserveOp(_ListKernel):
    def compute(self, ctx):
        shape = shape_from_tensor(ctx.input(0))
        count = ctx.input(1)
        if count.ndim != 0:      # (TF's check is for a scalar; its message says size 1)
            raise InvalidArgumentError("The num_elements to reserve must be a tensor size 1, "
                                       f"but got {shape_str(count.shape)}")
        n = int(count)
        if n < 0:
            raise InvalidArgumentError("The num_elements to reserve must be a non negative "
                                       f"number, but got {n}")
        _checked_length(ctx, n)
        _set_list(ctx, 0, TensorList(self.element_dtype, shape, (None,) * n))


def _rows_of(tensor, element_shape):
    """`tensor`'s rows after TF's checks of a tensor that becomes list elements."""
    if tensor.ndim == 0:
        raise InvalidArgumentError(f"Tensor must be at least a vector, but saw shape: "
                                   f"{shape_str(tensor.shape)}")
    if not element_shape.is_compatible_with(tensor.shape[1:]):
        raise InvalidArgumentError(
            f"Specified a list with shape {element_shape.debug_string()} from a tensor with "
            f"shape {shape_str(tensor.shape[1:])}")
    return [tensor[k, ...] for k in range(tensor.shape[0])]


@_kernel("TensorListFromTensor", ("element_shape",))
class TensorListFromTensorOp(_ListKernel):
    def compute(self, ctx):
        shape = shape_from_tensor(ctx.input(1))
        rows = _rows_of(ctx.input(0), shape)
        _set_list(ctx, 0, TensorList(self.element_dtype, shape, rows))


class TensorListScatterOp(_ListKernel):
    """TensorListScatter and TensorListScatterV2 (with `num_elements`)."""

    def compute(self, ctx):
        tensor, indices = ctx.input(0), ctx.input(1)
        shape = shape_from_tensor(ctx.input(2))
        count = _scalar(ctx, 3) if len(ctx.inputs) > 3 else -1
        if count < -1:
            raise InvalidArgumentError(
                f"TensorListScatter expects num_elements >= -1, found: {count}")
        rows = _rows_of(tensor, shape)
        if indices.size != tensor.shape[0]:
            raise InvalidArgumentError(f"Invalid number of rows in input tensor. Expected: "
                                       f"{indices.size} Actual: {tensor.shape[0]}")
        positions = int_values(indices)
        for i in positions:
            if i < 0:
                raise InvalidArgumentError(
                    "Indices in TensorListScatter must all be non-negative.")
            if count != -1 and i >= count:
                raise InvalidArgumentError(f"TensorListScatter: Trying to scatter at index "
                                           f"{i} in list with size {count}")
        elements = [None] * _checked_length(ctx, max(max(positions, default=-1) + 1, count))
        for i, row in zip(positions, rows):
            elements[i] = row
        _set_list(ctx, 0, TensorList(self.element_dtype, shape, elements))


_kernel("TensorListScatter", ("element_shape", "indices"))(
    type("TensorListScatterOp", (TensorListScatterOp,), {}))
_kernel("TensorListScatterV2", ("element_shape", "num_elements", "indices"))(
    type("TensorListScatterV2Op", (TensorListScatterOp,), {}))


@_kernel("TensorListSplit", ("element_shape", "lengths"))
class TensorListSplitOp(_ListKernel):
    def compute(self, ctx):
        tensor, lengths = ctx.input(0), ctx.input(2)
        shape = shape_from_tensor(ctx.input(1))
        if shape.rank == 0:
            raise InvalidArgumentError("TensorListSplit requires element_shape to be at least "
                                       f"of rank 1, but saw: {shape.debug_string()}")
        if tensor.ndim == 0:
            raise InvalidArgumentError(f"Tensor must be at least a vector, but saw shape: "
                                       f"{shape_str(tensor.shape)}")
        if not shape[1:].is_compatible_with(tensor.shape[1:]):
            raise InvalidArgumentError(
                f"tensor shape {shape_str(tensor.shape)} is not compatible with element_shape "
                f"{shape.debug_string()}")
        if lengths.ndim != 1:
            raise InvalidArgumentError(f"Expected lengths to be a vector, received shape: "
                                       f"{shape_str(lengths.shape)}")
        pieces, start = [], 0
        for length in int_values(lengths):
            if length < 0:
                raise InvalidArgumentError(f"Invalid value in lengths: {length}")
            end = start + length
            if end > tensor.shape[0]:
                raise InvalidArgumentError(f"Attempting to slice [{start}, {end}] from tensor "
                                           f"with length {tensor.shape[0]}")
            pieces.append(tensor[start:end])
            start = end
        if start != tensor.shape[0]:
            raise InvalidArgumentError(f"Unused values in tensor. Length of tensor: "
                                       f"{tensor.shape[0]} Values used: {start}")
        _set_list(ctx, 0, TensorList(self.element_dtype, shape, pieces))


# ----------------------------------------------------------------------------- readers

@_kernel("TensorListLength", ("length",))
class TensorListLengthOp(_ListKernel):
    def compute(self, ctx):
        ctx.set_output(0, np.int32(len(input_list(ctx, 0))))


@_kernel("TensorListElementShape", ("element_shape",))
class TensorListElementShapeOp(_ListKernel):
    def compute(self, ctx):
        shape = input_list(ctx, 0).element_shape
        dtype = ctx.output_dtype(0).np_dtype
        if shape.rank is None:
            ctx.set_output(0, np.array(-1, dtype))
        else:
            ctx.set_output(0, np.array([-1 if d is None else d for d in shape.dims], dtype)
                           .reshape(shape.rank))


def _unset_shape(ctx, tensor_list, shape_input, infer):
    """The shape of an unset element: the `element_shape` input merged with the list's
    (and, when `infer`, with the set elements')."""
    shape = merge(shape_from_tensor(ctx.input(shape_input)), tensor_list.element_shape)
    if infer and not shape.is_fully_defined():
        shape = _shape_over_elements(shape, tensor_list.tensors)
    return shape


def _element(ctx, tensor_list, index, shape_input, infer, unknown):
    """Element `index` in the kernel's memory. An unset one reads as zeros of
    `_unset_shape`'s shape; where that is not fully defined, TF's error, its message ending
    in `unknown` (a format of the shape's string)."""
    item = tensor_list.item(index)
    if item is None:
        shape = _unset_shape(ctx, tensor_list, shape_input, infer)
        if not shape.is_fully_defined():
            raise InvalidArgumentError("Trying to read an uninitialized tensor but "
                                       "element_shape is not fully defined"
                                       + unknown.format(shape.debug_string()))
        return _zeros(ctx, shape.dims, tensor_list.element_dtype)
    if type(item) is ctx.xp.ndarray:
        return item
    return on_device(ctx.xp, item)


@_kernel("TensorListGetItem", ("index", "element_shape"))
class TensorListGetItemOp(_ListKernel):
    list_access = "get"

    def compute(self, ctx):
        tensor_list = self.typed_list(ctx)
        index = _scalar(ctx, 1)
        if not 0 <= index < len(tensor_list):
            raise InvalidArgumentError(f"Trying to access element {index} in a list with "
                                       f"{len(tensor_list)} elements.")
        ctx.set_output(0, _element(ctx, tensor_list, index, shape_input=2, infer=True,
                                   unknown=": {} and no list element is set."))


@_kernel("TensorListPopBack", ("element_shape",))
class TensorListPopBackOp(_ListKernel):
    def compute(self, ctx):
        tensor_list = self.typed_list(ctx)
        if not len(tensor_list):
            raise InvalidArgumentError("Trying to pop from an empty list.")
        item = _element(ctx, tensor_list, len(tensor_list) - 1, shape_input=1, infer=False,
                        unknown=".{}")
        _set_list(ctx, 0, tensor_list.popped())
        ctx.set_output(1, item)


@_kernel("TensorListStack", ("element_shape",))
class TensorListStackOp(_ListKernel):
    attrs = ("num_elements",)

    def compute(self, ctx):
        tensor_list = self.typed_list(ctx)
        if self.num_elements != -1 and len(tensor_list) != self.num_elements:
            raise InvalidArgumentError(
                f"Operation expected a list with {self.num_elements} elements but got a list "
                f"with {len(tensor_list)} elements.")
        shape = _unset_shape(ctx, tensor_list, 1, infer=False)
        if not shape.is_fully_defined() and not tensor_list.tensors:
            raise InvalidArgumentError("Tried to stack elements of an empty list with "
                                       f"non-fully-defined element_shape: "
                                       f"{shape.debug_string()}")
        shape = _shape_over_elements(shape, tensor_list.tensors)
        if not shape.is_fully_defined():
            raise InvalidArgumentError(
                "Tried to stack list which only contains uninitialized tensors and has a "
                f"non-fully-defined element_shape: {shape.debug_string()}")
        ctx.set_output(0, _stacked(ctx, tensor_list.tensors, shape.dims, self.element_dtype,
                                   len(tensor_list)))


@_kernel("TensorListGather", ("indices", "element_shape"))
class TensorListGatherOp(_ListKernel):
    def compute(self, ctx):
        tensor_list = self.typed_list(ctx)
        indices = int_values(ctx.input(1))
        shape = _unset_shape(ctx, tensor_list, 2, infer=False)
        if not shape.is_fully_defined() and not indices:
            raise InvalidArgumentError("Tried to gather 0-elements from a list with "
                                       f"non-fully-defined shape: {shape.debug_string()}")
        for i in indices:
            if not 0 <= i < len(tensor_list):
                raise InvalidArgumentError(f"Index {i} out o range; list only has "
                                           f"{len(tensor_list)} elements.")
        chosen = [tensor_list.tensors[i] for i in indices]
        shape = _shape_over_elements(shape, chosen)
        if not shape.is_fully_defined():
            raise InvalidArgumentError(
                "Tried to gather uninitialized tensors from a list with non-fully-defined "
                f"element_shape: {shape.debug_string()}")
        ctx.set_output(0, _stacked(ctx, chosen, shape.dims, self.element_dtype, len(chosen)))


# ----------------------------------------------------------------------------- concat

class TensorListConcatOp(_ListKernel):
    """TensorListConcat (its `element_shape` attr) and TensorListConcatV2 (its
    `element_shape` and `leading_dims` inputs)."""

    def __init__(self, ctx):
        super().__init__(ctx)
        attr = ctx.get_attr("element_shape") if ctx.has_attr("element_shape") else None
        self._attr_rest = None if attr is None or attr.rank is None else attr[1:]

    def _shape_parts(self, ctx, tensor_list):
        """(the first dim or -1, the shape past it, the leading_dims values or None)."""
        if len(ctx.inputs) == 1:
            return -1, TensorShape(self._attr_rest), None
        shape = merge(shape_from_tensor(ctx.input(1)), tensor_list.element_shape)
        if shape.rank == 0:
            raise InvalidArgumentError("Concat requires elements to be at least vectors, "
                                       "found scalars instead.")
        first = -1 if shape.rank is None or shape.dims[0] is None else shape.dims[0]
        return first, shape[1:], int_values(ctx.input(2))

    def compute(self, ctx):
        tensor_list = self.typed_list(ctx)
        first, rest, leading = self._shape_parts(ctx, tensor_list)
        if not tensor_list.tensors and not rest.is_fully_defined():
            raise InvalidArgumentError(
                "All except the first dimension must be fully defined when concating an empty "
                f"tensor list. element_shape: {rest.debug_string()}")
        inferred, check = first, first == -1
        for i, t in enumerate(tensor_list.tensors):
            if t is None:
                continue
            if t.ndim == 0:
                raise InvalidArgumentError(f"Concat saw a scalar shape at index {i} but "
                                           "requires at least vectors.")
            rest = merge(rest, t.shape[1:])
            if first != -1 and first != t.shape[0]:
                raise InvalidArgumentError(
                    "First entry of element_shape input does not match the first dim of list "
                    f"element at index: {i} Expected: {first} Actual: {t.shape[0]}")
            if check and inferred in (-1, t.shape[0]):
                inferred = t.shape[0]
            elif check:
                inferred, check = -1, False
        if not rest.is_fully_defined():
            raise InvalidArgumentError(
                "Trying to concat list with only uninitialized tensors but "
                f"element_shape_except_first_dim_ is not fully defined: {rest.debug_string()}")
        lengths = [self._length(i, t, inferred, leading) for i, t in
                   enumerate(tensor_list.tensors)]
        out = _zeros(ctx, (sum(lengths),) + tuple(rest.dims), self.element_dtype)
        start = 0
        for t, n in zip(tensor_list.tensors, lengths):
            if t is not None:
                out[start:start + n] = on_device(ctx.xp, t)
            start += n
        ctx.set_output(0, out)
        ctx.set_output(1, np.array(lengths, np.int64).reshape(len(lengths)))

    @staticmethod
    def _length(i, t, first, leading):
        if t is not None:
            return t.shape[0]
        if (leading is None or i >= len(leading)) and first != -1:
            return first
        if leading is None:
            raise InvalidArgumentError(
                "Concating lists with uninitialized tensors is not supported in this version "
                "of TensorListConcat. Consider updating your GraphDef to run the newer "
                "version.")
        if i >= len(leading):
            raise InvalidArgumentError(f"List contains uninitialized tensor at index {i} but "
                                       f"leading_dims has only {len(leading)} elements.")
        return leading[i]


_kernel("TensorListConcat", ("lengths",))(type("TensorListConcatOp", (TensorListConcatOp,), {}))
_kernel("TensorListConcatV2", ("leading_dims", "element_shape", "lengths"))(
    type("TensorListConcatV2Op", (TensorListConcatOp,), {}))


# ----------------------------------------------------------------------------- modifiers

def _check_item_shape(tensor_list, item, what):
    if not fits(tensor_list.element_shape, item.shape):
        raise InvalidArgumentError(
            f"Tried to {what}. Op element shape: {shape_str(item.shape)} list shape: "
            f"{tensor_list.element_shape.debug_string()}")


@_kernel("TensorListPushBack")
class TensorListPushBackOp(_ListKernel):
    list_access = "push"

    def compute(self, ctx):
        tensor_list, item = input_list(ctx, 0), ctx.inputs[1]
        _check_item_shape(tensor_list, item, "append a tensor with incompatible shape to a list")
        if tensor_list.element_dtype is not self.element_dtype:
            check_dtypes(self.element_dtype, tensor_list.element_dtype, _DTYPES)
        bound = tensor_list.max_num_elements
        if bound != -1 and len(tensor_list) >= bound:
            raise InvalidArgumentError(f"Tried to push item into a full list list size: "
                                       f"{len(tensor_list)} max_num_elements: {bound}")
        _set_list(ctx, 0, tensor_list.pushed(item))


@_kernel("TensorListPushBackBatch")
class TensorListPushBackBatchOp(_ListKernel):
    def compute(self, ctx):
        handles, tensor = ctx.input(0), ctx.input(1)
        if tensor.ndim == 0:
            raise InvalidArgumentError("Expected tensor to be at least a vector, but saw "
                                       f"shape: {shape_str(tensor.shape)}")
        if handles.ndim != 1:
            raise InvalidArgumentError("Expected input_handles to be a vector, but saw shape: "
                                       f"{shape_str(handles.shape)}")
        if tensor.shape[0] != handles.shape[0]:
            raise InvalidArgumentError(f"Expected tensor.shape[0] == input_handles.size, but "
                                       f"saw {tensor.shape[0]} vs. {handles.shape[0]}")
        lists = []
        for b, tensor_list in enumerate(handles):
            if not isinstance(tensor_list, TensorList):
                raise InvalidArgumentError(f"Input handle at index {b} is not a list. Saw: "
                                           f"'{describe(tensor_list)}'")
            row = tensor[b, ...]
            _check_item_shape(tensor_list, row, "append a tensor with incompatible shape to a "
                                                f"list at index {b}")
            check_dtypes(self.element_dtype, tensor_list.element_dtype, f"Invalid data type "
                         f"at index {b}; op elements {{0}} but list elements {{1}}")
            lists.append(tensor_list.pushed(row))
        out = np.empty((len(lists),), dtype=object)
        out[:] = lists
        ctx.set_output(0, out)


@_kernel("TensorListSetItem", ("index",))
class TensorListSetItemOp(_ListKernel):
    attrs = ("resize_if_index_out_of_bounds",)

    def __init__(self, ctx):
        super().__init__(ctx)
        self.list_access = None if self.resize_if_index_out_of_bounds else "set"

    def compute(self, ctx):
        tensor_list, item = self.typed_list(ctx), ctx.inputs[2]
        index = _scalar(ctx, 1)
        length = len(tensor_list)
        if self.resize_if_index_out_of_bounds and index >= length:
            length = _checked_length(ctx, index + 1)
        if not 0 <= index < length:
            raise InvalidArgumentError(f"Trying to modify element {index} in a list with "
                                       f"{length} elements.")
        if not fits(tensor_list.element_shape, item.shape):
            raise InvalidArgumentError(
                "Tried to set a tensor with incompatible shape at a list index. Item element "
                f"shape: {shape_str(item.shape)} list shape: "
                f"{tensor_list.element_shape.debug_string()}")
        _set_list(ctx, 0, tensor_list.with_item(index, item, length))


@_kernel("TensorListScatterIntoExistingList", ("indices",))
class TensorListScatterIntoExistingListOp(_ListKernel):
    def compute(self, ctx):
        tensor_list, tensor, indices = input_list(ctx, 0), ctx.input(1), ctx.input(2)
        check_dtypes(self.element_dtype, tensor_list.element_dtype,
                     "Invalid data types; input tensor type: {0} list element_type: {1}")
        if tensor.ndim == 0:
            raise InvalidArgumentError(f"Tensor must be at least a vector, but saw shape: "
                                       f"{shape_str(tensor.shape)}")
        if indices.ndim != 1:
            raise InvalidArgumentError("Expected indices to be a vector, but received shape: "
                                       f"{shape_str(indices.shape)}")
        if indices.size != tensor.shape[0]:
            raise InvalidArgumentError(f"Expected len(indices) == tensor.shape[0], but saw: "
                                       f"{indices.size} vs. {tensor.shape[0]}")
        positions = int_values(indices)
        if any(i < 0 for i in positions):
            raise InvalidArgumentError("Indices in TensorListScatter must all be non-negative.")
        tensors = list(tensor_list.tensors)
        size = _checked_length(ctx, max(max(positions, default=-1) + 1, len(tensors)))
        tensors += [None] * (size - len(tensors))
        for k, i in enumerate(positions):
            tensors[i] = tensor[k, ...]
        _set_list(ctx, 0, tensor_list.replace(tensors=tensors))


@_kernel("TensorListResize", ("size",))
class TensorListResizeOp(_ListKernel):
    def compute(self, ctx):
        tensor_list = input_list(ctx, 0)
        size = _scalar(ctx, 1)
        if size < 0:
            raise InvalidArgumentError(f"TensorListSlice expects size to be non-negative. Got: "
                                       f"{size}")
        tensors = tensor_list.tensors[:size]
        tensors += (None,) * (_checked_length(ctx, size) - len(tensors))
        _set_list(ctx, 0, tensor_list.replace(tensors=tensors))


@_kernel("TensorListConcatLists")
class TensorListConcatListsOp(_ListKernel):
    def compute(self, ctx):
        a, b = ctx.input(0), ctx.input(1)
        if a.shape != b.shape:
            raise InvalidArgumentError(f"Incompatible input TensorList tensor shapes: "
                                       f"{shape_str(a.shape)} vs. {shape_str(b.shape)}")
        out = np.empty(a.shape, dtype=object)
        for k, (la, lb) in enumerate(zip(a.reshape(-1), b.reshape(-1))):
            for name, item in (("input_a", la), ("input_b", lb)):
                if not isinstance(item, TensorList):
                    raise InvalidArgumentError(f"{name} is not a TensorList at index {k}.  "
                                               f"Saw: '{describe(item)}'")
                check_dtypes(item.element_dtype, self.element_dtype,
                             f"{name}[{k}].dtype != element_dtype.  Saw: {{0}} vs. {{1}}")
            if la.element_shape != lb.element_shape:
                raise InvalidArgumentError(
                    "input_a and input_b TensorList element shapes are not identical at index "
                    f"{k}.  Saw {la.element_shape.debug_string()} vs. "
                    f"{lb.element_shape.debug_string()}")
            out.reshape(-1)[k] = la.replace(tensors=la.tensors + lb.tensors)
        ctx.set_output(0, out)


