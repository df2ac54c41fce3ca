"""Attr values: conversion of Python values to canonical form, and constraint checks."""

import operator

import numpy as np

from graphops.registry import dtypes
from graphops.registry.errors import InvalidArgumentError
from graphops.registry.op_def import format_attr_value
from graphops.registry.tensor_shape import as_shape


def _make_int(value, arg_name):
    if isinstance(value, (str, bytes)):
        raise TypeError(f"Expected int for argument '{arg_name}' not {value!r}.")
    try:
        return operator.index(value)
    except TypeError:
        pass
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return int(value)
    raise TypeError(f"Expected int for argument '{arg_name}' not {value!r}.")


def _make_float(value, arg_name):
    if isinstance(value, (str, bytes, bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
        raise TypeError(f"Expected float for argument '{arg_name}' not {value!r}.")
    return float(value)


def _make_bool(value, arg_name):
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"Expected bool for argument '{arg_name}' not {value!r}.")
    return bool(value)


def _make_str(value, arg_name):
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            pass
    if not isinstance(value, str):
        raise TypeError(f"Expected string for argument '{arg_name}' not {value!r}.")
    return value


def _make_type(value, arg_name):
    try:
        return dtypes.as_dtype(value)
    except TypeError:
        raise TypeError(f"Expected DataType for argument '{arg_name}' not {value!r}.") from None


def _make_shape(value, arg_name):
    try:
        return as_shape(value)
    except (TypeError, ValueError) as e:
        raise TypeError(f"Error converting {value!r} to a TensorShape: {e}.") from None


def _make_tensor(value, arg_name):
    if isinstance(value, np.ndarray):
        return value
    try:
        return np.asarray(value)
    except (TypeError, ValueError) as e:
        raise TypeError(f"Expected tensor for argument '{arg_name}' not {value!r}: {e}") from None


_CONVERTERS = {"int": _make_int, "float": _make_float, "bool": _make_bool, "string": _make_str,
               "type": _make_type, "shape": _make_shape, "tensor": _make_tensor, "func": _make_str}


def normalize_attr_value(attr_def, value, op_name):
    """Converts `value` for `attr_def` and checks the OpDef's constraints.

    TypeError for a value of the wrong kind, InvalidArgumentError (a ValueError) for one that
    breaks a constraint, both with the messages of TF's `_apply_op_helper`.
    """
    if value is None and attr_def.has_default:
        return attr_def.default_value
    base_type = attr_def.base_type
    convert = _CONVERTERS[base_type]
    if base_type != attr_def.type:     # a list(...) attr
        if not isinstance(value, (list, tuple)):
            raise TypeError(f"Expected list for attr {attr_def.name}, obtained "
                            f"{type(value).__name__} instead.")
        value = [convert(v, attr_def.name) for v in value]
        if attr_def.has_minimum and len(value) < attr_def.minimum:
            raise InvalidArgumentError(
                f"Attr '{attr_def.name}' of '{op_name}' Op passed list of length {len(value)} "
                f"less than minimum {attr_def.minimum}.")
        items = value
    else:
        value = convert(value, attr_def.name)
        if attr_def.type == "int" and attr_def.has_minimum and value < attr_def.minimum:
            raise InvalidArgumentError(
                f"Attr '{attr_def.name}' of '{op_name}' Op passed {value} less than minimum "
                f"{attr_def.minimum}.")
        items = [value]
    if attr_def.allowed_values is not None:
        for item in items:
            if item in attr_def.allowed_values:
                continue
            if base_type == "string":
                allowed = '", "'.join(attr_def.allowed_values)
                raise InvalidArgumentError(
                    f"Attr '{attr_def.name}' of '{op_name}' Op passed string '{item}' not in: "
                    f'"{allowed}".')
            raise TypeError(
                f"Value passed to parameter '{attr_def.name}' has DataType {item.name} not in "
                f"list of allowed values: {', '.join(t.name for t in attr_def.allowed_values)}")
    return value


def validate_attr_value(attr_def, value):
    """Checks a canonical value against the AttrDef with the messages of TF's C++ validation."""
    items = value if attr_def.is_list else [value]
    if attr_def.has_minimum:
        if attr_def.is_list and len(value) < attr_def.minimum:
            raise InvalidArgumentError(
                f"Length for attr '{attr_def.name}' of {len(value)} must be at least minimum "
                f"{attr_def.minimum}")
        if attr_def.type == "int" and value < attr_def.minimum:
            raise InvalidArgumentError(
                f"Value for attr '{attr_def.name}' of {value} must be at least minimum "
                f"{attr_def.minimum}")
    if attr_def.allowed_values is not None:
        for item in items:
            if item not in attr_def.allowed_values:
                shown = item.short_name if isinstance(item, dtypes.DType) else f'"{item}"'
                allowed = ", ".join(
                    v.short_name if isinstance(v, dtypes.DType) else f'"{v}"'
                    for v in attr_def.allowed_values)
                raise InvalidArgumentError(
                    f"Value for attr '{attr_def.name}' of {shown} is not in the list of allowed "
                    f"values: {allowed}")


def attr_value_string(value):
    """Short text of an attr value for node descriptions (`T=DT_FLOAT`)."""
    if isinstance(value, np.ndarray):
        return f"Tensor<type: {dtypes.as_dtype(value.dtype).short_name} shape: {list(value.shape)}>"
    return format_attr_value(value)


def int32_attr(name, value):
    """`value` (an int or a list of ints) as a kernel reading attr `name` into int32 sees it;
    TF's error when an entry does not fit."""
    for v in value if isinstance(value, (list, tuple)) else [value]:
        if not -2**31 <= v < 2**31:
            raise InvalidArgumentError(f"Attr {name} has value {v} out of range for an int32")
    return value
