"""DType objects with TensorFlow's names, enum values and type sets."""

import builtins

import ml_dtypes
import numpy as np


class DType:
    """A tensor element type: TF's enum and names plus the NumPy dtype that stores it."""

    __slots__ = ("enum", "name", "short_name", "_np", "kind", "_base", "_ref")

    def __init__(self, enum, name, short_name, np_type, kind, base=None):
        self.enum = enum
        self.name = name                  # "float32", as tf.float32.name
        self.short_name = short_name      # "float", as TF's DataTypeString
        self._np = np.dtype(np_type)
        self.kind = kind                  # "float", "int", "uint", "bool", "complex", ...
        self._base = self if base is None else base   # float32 for float32_ref
        self._ref = None

    @property
    def is_ref(self):
        """True for a reference type (`float32_ref`: a TF1 variable's mutable tensor)."""
        return self._base is not self

    _is_ref_dtype = is_ref              # TF's name

    @property
    def base_dtype(self):
        """The non-reference type (itself unless a reference type)."""
        return self._base

    @property
    def _as_ref(self):
        """The reference type of this type (`float32_ref` for float32 and float32_ref)."""
        return self._base._ref

    @property
    def as_numpy_dtype(self):
        return self._np.type

    @property
    def np_dtype(self):
        return self._np

    @property
    def tf_name(self):
        return "DT_" + self.short_name.upper()

    @property
    def as_datatype_enum(self):
        return self.enum

    is_floating = property(lambda self: self.kind == "float")
    is_integer = property(lambda self: self.kind in ("int", "uint"))
    is_unsigned = property(lambda self: self.kind == "uint")
    is_bool = property(lambda self: self.kind == "bool")
    is_complex = property(lambda self: self.kind == "complex")
    is_quantized = property(lambda self: self.kind == "quantized")
    is_numeric = property(lambda self: self.kind in ("float", "int", "uint", "complex", "quantized"))

    @property
    def size(self):
        return self._np.itemsize

    @property
    def min(self):
        return _limits(self)[0]

    @property
    def max(self):
        return _limits(self)[1]

    def is_compatible_with(self, other):
        """TF's rule: `other` is this type or the reference type of it."""
        other = as_dtype(other)
        return self is other or self is other.base_dtype

    def __repr__(self):
        return "gp." + self.name

    def __reduce__(self):
        return (as_dtype, (self.name,))


def _limits(dtype):
    if dtype.kind in ("int", "uint"):
        info = np.iinfo(dtype.np_dtype)
    elif dtype.kind == "float":
        info = ml_dtypes.finfo(dtype.np_dtype)
    elif dtype.kind == "bool":
        return False, True
    else:
        raise TypeError(f"Cannot find minimum/maximum value of {dtype.name}.")
    return info.min, info.max


_ALL = [
    DType(1, "float32", "float", np.float32, "float"),
    DType(2, "float64", "double", np.float64, "float"),
    DType(3, "int32", "int32", np.int32, "int"),
    DType(4, "uint8", "uint8", np.uint8, "uint"),
    DType(5, "int16", "int16", np.int16, "int"),
    DType(6, "int8", "int8", np.int8, "int"),
    DType(7, "string", "string", object, "string"),
    DType(8, "complex64", "complex64", np.complex64, "complex"),
    DType(9, "int64", "int64", np.int64, "int"),
    DType(10, "bool", "bool", np.bool_, "bool"),
    DType(11, "qint8", "qint8", np.int8, "quantized"),
    DType(12, "quint8", "quint8", np.uint8, "quantized"),
    DType(13, "qint32", "qint32", np.int32, "quantized"),
    DType(14, "bfloat16", "bfloat16", ml_dtypes.bfloat16, "float"),
    DType(15, "qint16", "qint16", np.int16, "quantized"),
    DType(16, "quint16", "quint16", np.uint16, "quantized"),
    DType(17, "uint16", "uint16", np.uint16, "uint"),
    DType(18, "complex128", "complex128", np.complex128, "complex"),
    DType(19, "float16", "half", np.float16, "float"),
    DType(20, "resource", "resource", object, "handle"),
    DType(21, "variant", "variant", object, "handle"),
    DType(22, "uint32", "uint32", np.uint32, "uint"),
    DType(23, "uint64", "uint64", np.uint64, "uint"),
]


def _make_ref(base):
    """TF's DT_*_REF: the base enum plus 100, the base name plus "_ref"."""
    ref = DType(base.enum + 100, base.name + "_ref", base.short_name + "_ref", base.np_dtype,
                base.kind, base)
    base._ref = ref
    return ref


_REFS = [_make_ref(_d) for _d in _ALL]

_BY_NAME = {}
for _d in _ALL + _REFS:
    _BY_NAME[_d.name] = _d
    _BY_NAME[_d.short_name] = _d
    _BY_NAME[_d.tf_name] = _d
    globals()[_d.name] = _d
_BY_ENUM = {d.enum: d for d in _ALL + _REFS}

half = float16              # noqa: F821 (defined through globals() above)
double = float64            # noqa: F821
bool_ = globals()["bool"]

# NumPy dtype -> DType (quantized and handle types are never inferred from NumPy)
_BY_NUMPY = {d.np_dtype: d for d in reversed(_ALL) if d.kind not in ("quantized", "handle", "string")}
_BY_NUMPY[np.dtype(object)] = string  # noqa: F821
_PYTHON_TYPES = {float: float64, int: int64, complex: complex128,  # noqa: F821
                 builtins.bool: bool_, str: string, bytes: string}  # noqa: F821


def as_dtype(type_value):
    """Converts a DType, NumPy dtype/type, Python type, enum or name to a DType."""
    if isinstance(type_value, DType):
        return type_value
    if isinstance(type_value, np.dtype):
        found = _BY_NUMPY.get(type_value)
        if found is not None:
            return found
    if isinstance(type_value, str):
        found = _BY_NAME.get(type_value)
        if found is not None:
            return found
    elif isinstance(type_value, int) and not isinstance(type_value, (builtins.bool, np.bool_)):
        found = _BY_ENUM.get(type_value)
        if found is not None:
            return found
    elif isinstance(type_value, type) and type_value in _PYTHON_TYPES:
        return _PYTHON_TYPES[type_value]
    elif type_value is not None:
        try:
            np_dtype = np.dtype(type_value)
        except (TypeError, ValueError):
            np_dtype = None
        if np_dtype is not None:
            if np_dtype.kind in "SUO":
                return string  # noqa: F821
            found = _BY_NUMPY.get(np_dtype)
            if found is not None:
                return found
    raise TypeError(f"Cannot convert value {type_value!r} to a TensorFlow DType.")


def _names(*names):
    return tuple(_BY_NAME[n] for n in names)


_REAL = _names("float", "double", "int32", "uint8", "int16", "int8", "int64", "bfloat16",
               "uint16", "half", "uint32", "uint64")
_QUANTIZED = _names("qint8", "quint8", "qint32", "qint16", "quint16")
_COMPLEX = _names("complex64", "complex128")


def _by_enum(types):
    return tuple(sorted(types, key=lambda d: d.enum))


# TF lists each set in enum order (types.cc); the order shows in "allowed values" errors.
_TYPE_SETS = {
    "numbertype": _by_enum(_REAL + _COMPLEX + _QUANTIZED),
    "numerictype": _by_enum(_REAL + _COMPLEX),
    "realnumbertype": _REAL,
    "realnumerictype": _REAL,
    "quantizedtype": _QUANTIZED,
}


def type_set(name):
    """The DTypes behind a compound type name of the spec grammar, or None."""
    return _TYPE_SETS.get(name)


FLOAT_TYPES = _names("half", "bfloat16", "float", "double")

# The types CuPy arrays can hold: what GPU kernels accept (no bfloat16, strings or handles).
GPU_TYPES = _by_enum(tuple(d for d in _REAL + _COMPLEX if d.name != "bfloat16")
                     + _names("bool"))
