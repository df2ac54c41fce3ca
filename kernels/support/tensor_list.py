"""The value a TensorList `variant` edge carries (TF's tensor_list.h) and what other op
families do with one: TF's element-shape merging and shape tensors, elements moved to the
memory a kernel computes in, and AddN and ZerosLike of lists, which TF's gradients of list
ops aggregate with."""

import numpy as np

from graphops.kernels.support.kernel_util import host_copy, zeros
from graphops.registry import dtypes
from graphops.registry.errors import InvalidArgumentError
from graphops.registry.op_defs.array import int_values
from graphops.registry.tensor_shape import TensorShape, shape_str


class TensorList:
    """What a `variant` edge of a TensorList op carries; never changed once made.

    Its elements are the first `len(list)` items of a Python list that lists made from it
    by `pushed` and `popped` may share: items past a list's length belong to others, and
    an item is never changed once it is there, so every list sharing one sees its own
    elements alone. A push appends to the shared list when nothing lies past this list's
    end (TF's in-place push onto a list only it holds), else it copies; pushing is O(1)
    either way after the first copy, as TF's. (So a list's storage may also hold the
    elements of lists pushed from it, and a popped element stays held, until every list
    sharing that storage goes.)"""

    __slots__ = ("element_dtype", "element_shape", "max_num_elements", "_items", "_length")

    def __init__(self, element_dtype, element_shape, tensors=(), max_num_elements=-1):
        items = list(tensors)
        _init(self, dtypes.as_dtype(element_dtype), TensorShape(element_shape),
              int(max_num_elements), items, len(items))

    def __setattr__(self, name, value):
        raise AttributeError("a TensorList cannot be changed; ops make new ones")

    @property
    def tensors(self):
        """The elements (None where unset), as a tuple."""
        return tuple(self._items[:self._length])    # one slice: a push elsewhere may append

    def item(self, index):
        """Element `index` (0 <= index < len(self)), None when unset."""
        return self._items[index]

    def replace(self, tensors):
        """A new list of this one's element dtype, shape and bound holding `tensors` (any
        iterable of elements)."""
        items = list(tensors)
        return _new(self.element_dtype, self.element_shape, self.max_num_elements, items,
                    len(items))

    def pushed(self, tensor):
        """This list with `tensor` appended."""
        items, length = self._items, self._length
        if len(items) == length:
            items.append(tensor)
            if items[length] is tensor:     # (another thread may have appended first)
                return _new(self.element_dtype, self.element_shape, self.max_num_elements,
                            items, length + 1)
        items = items[:length]
        items.append(tensor)
        return _new(self.element_dtype, self.element_shape, self.max_num_elements, items,
                    length + 1)

    def with_item(self, index, tensor, length):
        """A list of `length` elements (this one's, unset ones past its end) whose element
        `index` is `tensor`."""
        items = self._items[:min(self._length, length)]
        items.extend([None] * (length - len(items)))
        items[index] = tensor
        return _new(self.element_dtype, self.element_shape, self.max_num_elements, items,
                    length)

    def popped(self):
        """This list without its last element (it must have one)."""
        return _new(self.element_dtype, self.element_shape, self.max_num_elements,
                    self._items, self._length - 1)

    def __len__(self):
        return self._length

    def __repr__(self):
        return (f"TensorList(element_dtype={self.element_dtype.short_name}, element_shape="
                f"{self.element_shape.debug_string()}, length={self._length})")


def _init(tensor_list, element_dtype, element_shape, max_num_elements, items, length):
    setter = object.__setattr__
    setter(tensor_list, "element_dtype", element_dtype)
    setter(tensor_list, "element_shape", element_shape)
    setter(tensor_list, "max_num_elements", max_num_elements)
    setter(tensor_list, "_items", items)
    setter(tensor_list, "_length", length)


def _new(element_dtype, element_shape, max_num_elements, items, length):
    """A TensorList of fields already in their types (no conversions)."""
    tensor_list = object.__new__(TensorList)
    _init(tensor_list, element_dtype, element_shape, max_num_elements, items, length)
    return tensor_list


def new_list(element_dtype, element_shape, tensors, max_num_elements=-1):
    """A TensorList of a DType, a TensorShape and a Python list of elements that becomes
    the list's own (a kernel's fast path: no conversions)."""
    return _new(element_dtype, element_shape, max_num_elements, tensors, len(tensors))


def fits(element_shape, shape):
    """Whether an element of shape `shape` (a tuple) is compatible with the TensorShape
    `element_shape` (TensorShape.is_compatible_with without building a shape)."""
    dims = element_shape.as_tuple()
    if dims is None:
        return True
    if len(dims) != len(shape):
        return False
    for a, b in zip(dims, shape):
        if a is not None and a != b:
            return False
    return True


def as_variant(*lists):
    """A 0-d object array holding the list (or a vector of several)."""
    out = np.empty(() if len(lists) == 1 else (len(lists),), dtype=object)
    if len(lists) == 1:
        out[()] = lists[0]
    else:
        for i, item in enumerate(lists):
            out[i] = item
    return out


def describe(value):
    return "TensorList" if isinstance(value, TensorList) else repr(value)


def shape_from_tensor(value):
    """TF's TensorShapeFromTensor: a shape vector (-1 dims unknown) or the scalar -1. (A
    kernel's shape input is most often the same constant every run: the shapes of the
    last few values are kept.)"""
    value = np.asarray(value)
    key = (value.dtype.char, value.shape, value.tobytes()) if value.size <= 16 else None
    found = _SHAPES.get(key) if key is not None else None
    if found is None:
        found = _shape_from_tensor(value)
        if key is not None:
            if len(_SHAPES) >= 64:
                _SHAPES.clear()
            _SHAPES[key] = found
    return found


_SHAPES = {}     # (dtype, shape, bytes) of a shape tensor -> its TensorShape


def _shape_from_tensor(value):
    if value.ndim == 0:
        if int(value) == -1:
            return TensorShape(None)
        raise InvalidArgumentError("The only valid scalar shape tensor is the fully unknown "
                                   "shape specified as -1.")
    if value.ndim > 1:
        raise InvalidArgumentError(f"Shape must be at most rank 1 but is rank {value.ndim}")
    dims = int_values(value)
    for d in dims:
        if d < -1:
            raise InvalidArgumentError(f"Dimension {d} must be >= -1")
    return TensorShape([None if d == -1 else d for d in dims])


def merge(a, b):
    """TF's PartialTensorShape::MergeWith, with its messages. (The merge is
    TensorShape.merge_with; shape_inference.merge_shapes is the same merge with the
    messages of TF's shape functions, which kernels do not give.)"""
    a = a if type(a) is TensorShape else TensorShape(a)
    b = b if type(b) is TensorShape else TensorShape(b)
    dims_a, dims_b = a.as_tuple(), b.as_tuple()
    if dims_a is None or dims_a == dims_b:
        return b
    if dims_b is None:
        return a
    if a.is_compatible_with(b):
        return a.merge_with(b)
    if a.rank != b.rank:
        raise InvalidArgumentError(f"PartialTensorShape: Incompatible ranks during merge: "
                                   f"{a.rank} vs. {b.rank}")
    raise InvalidArgumentError(f"PartialTensorShape: Incompatible shapes during merge: "
                               f"{a.debug_string()} vs. {b.debug_string()}")


def check_dtypes(first, second, message):
    """InvalidArgumentError(`message` with the two dtypes' names for {0} and {1}) when the
    dtypes differ."""
    if first != second:
        raise InvalidArgumentError(message.format(first.short_name, second.short_name))


def on_device(xp, array):
    """A list element in the memory a kernel computing with `xp` works in: a list made on
    one device may be read on another, and its variant edge (host memory everywhere) moves
    no elements. A NumPy kernel gets a host copy of a device element, a device kernel a
    device copy of a host element (none where the element is there already); strings stay
    on the host. (A NumPy scalar, as some callers' values are, counts as a host array.)"""
    if isinstance(array, np.generic):
        array = np.asarray(array)
    if xp is np or array.dtype == object:
        return host_copy(array)
    return xp.asarray(array)


# ----------------------------------------------------------------------------- AddN, ZerosLike

def _add_elements(a, b, xp):
    if a is None or b is None:
        return None if a is None and b is None else on_device(xp, b if a is None else a)
    if a.shape != b.shape:
        raise InvalidArgumentError(
            f"Trying to add two tensors with incompatible element shapes. One is "
            f"{shape_str(a.shape)} and the other is {shape_str(b.shape)}")
    if a.dtype == object:
        raise InvalidArgumentError("Trying to add two lists of tensors whose elements cannot "
                                   "be added")
    return on_device(xp, a) + on_device(xp, b)


def add_lists(a, b, xp=np):
    """TF's TensorListBinaryAdd: element-wise sums (an unset element counts as zeros), made
    with the array module `xp` of the kernel adding."""
    check_dtypes(a.element_dtype, b.element_dtype, "Trying to add two lists of tensors of "
                 "different dtypes. One is {0} and the other is {1}")
    if not a.element_shape.is_compatible_with(b.element_shape):
        raise InvalidArgumentError(
            "Trying to add two lists of tensors with incompatible element shapes. One is "
            f"{a.element_shape.debug_string()} and the other is "
            f"{b.element_shape.debug_string()}")
    if len(a) != len(b):
        raise InvalidArgumentError(f"Trying to add two lists of tensors with different "
                                   f"lengths. One is {len(a)} and the other is {len(b)}")
    return TensorList(a.element_dtype, a.element_shape.merge_with(b.element_shape),
                      [_add_elements(x, y, xp) for x, y in zip(a.tensors, b.tensors)],
                      a.max_num_elements)


def zeros_like_list(tensor_list, xp=np):
    """TF's TensorListZerosLike: zeros (made with `xp`) for the set elements, the unset ones
    left unset."""
    return tensor_list.replace(tensors=[None if t is None else zeros(xp, t.shape, t.dtype)
                                        for t in tensor_list.tensors])


def _as_list(value, what):
    if not isinstance(value, TensorList):
        raise InvalidArgumentError(f"{what} of a variant that is not a TensorList: "
                                   f"'{describe(value)}'")
    return value


def add_variants(values, xp=np):
    """AddN of variant tensors of one shape: the lists at each position added, their sums
    made with `xp`, the array module of the kernel adding (AddN of variants has a CPU kernel
    only, so NumPy by default)."""
    out = np.empty(values[0].shape, dtype=object)
    for k in range(out.size):
        total = _as_list(values[0].reshape(-1)[k], "AddN")
        for value in values[1:]:
            total = add_lists(total, _as_list(value.reshape(-1)[k], "AddN"), xp)
        out.reshape(-1)[k] = total
    return out


def zeros_like_variant(value, xp=np):
    """ZerosLike of a variant tensor: each list's zeros_like_list (made with `xp`, as for
    add_variants)."""
    out = np.empty(value.shape, dtype=object)
    for k in range(out.size):
        out.reshape(-1)[k] = zeros_like_list(_as_list(value.reshape(-1)[k], "ZerosLike"), xp)
    return out
