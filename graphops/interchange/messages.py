"""GraphDef dicts <-> protobuf messages: the one place where the two forms meet.

A GraphDef dict is `{"node": [NodeDef dict], "versions": {"producer", "min_consumer",
"bad_consumers" (when any)}}`, plus "library" when the GraphDef has a function library and
"version" / "debug_info" when set. A NodeDef dict is what `Operation.node_def` returns: name,
op, input ("x", "x:1", "^ctrl"), device and attr, the attrs as canonical Python values
(DType, int, float, bool, str or bytes, TensorShape, np.ndarray, lists of those;
`{"name", "attr"}` for a func; None for an empty AttrValue). A library is
`{"function": [FunctionDef dict], "gradient": [...], "registered_gradients": [...]}`; a
FunctionDef dict holds "signature" (the OpDef in protobuf's dict form), "attr" and
"arg_attr" (canonical attrs), "resource_arg_unique_id", "node_def" (NodeDef dicts, inputs in
the function-body form "node:out_arg:index"), "ret" and "control_ret". Parts graphops does
not interpret (debug info, full types, gradients) keep protobuf's dict form
(`json_format.MessageToDict` with the proto field names).

The messages are graphops' own generated classes (proto/, package `tensorflow`); anything
malformed inside a parsed message (unknown enum values, inconsistent tensors) is an
InvalidArgumentError naming the path to it.
"""

import numpy as np
from google.protobuf import json_format

from graphops.interchange.proto.attr_value_pb2 import AttrValue
from graphops.interchange.proto.function_pb2 import FunctionDef
from graphops.interchange.proto.graph_pb2 import GraphDef
from graphops.interchange.proto.node_def_pb2 import NodeDef
from graphops.interchange.proto.tensor_pb2 import TensorProto
from graphops.interchange.proto.versions_pb2 import VersionDef
from graphops.registry import dtypes, memory
from graphops.registry.errors import InvalidArgumentError
from graphops.registry.tensor_shape import TensorShape

__all__ = ["GraphDef", "NodeDef", "AttrValue", "VersionDef", "graph_def_to_proto",
           "graph_def_from_proto", "function_to_proto", "tensor_to_proto",
           "tensor_from_proto", "attr_to_proto", "attr_from_proto"]


def _fail(path, problem):
    return InvalidArgumentError(f"Invalid GraphDef at {path}: {problem}")


def _dtype(enum, path):
    try:
        return dtypes.as_dtype(enum)
    except TypeError:
        raise _fail(path, f"invalid enum value {enum} for enum type tensorflow.DataType") from None


def _raw_to_dict(message):
    return json_format.MessageToDict(message, preserving_proto_field_name=True)


def _raw_from_dict(value, message, path):
    try:
        json_format.ParseDict(value, message)
    except (json_format.ParseError, TypeError, ValueError, AttributeError) as e:
        raise InvalidArgumentError(f"Invalid GraphDef dict at {path}: {e}") from None


# ----------------------------------------------------------------------------- shapes

def shape_to_proto(shape, proto):
    """Fills TensorShapeProto `proto` from TensorShape `shape` (unknown sizes as -1)."""
    if shape.rank is None:
        proto.unknown_rank = True
    else:
        proto.SetInParent()
        for d in shape.dims:
            proto.dim.add(size=-1 if d is None else d)


def _shape_from_proto(proto, path):
    sizes = [d.size for d in proto.dim]
    if proto.unknown_rank:
        if sizes:
            raise _fail(path, "a shape with unknown rank cannot list dimensions")
        return TensorShape(None)
    if any(s < -1 for s in sizes):
        raise _fail(path, f"shape {sizes} has a dimension below -1")
    return TensorShape(sizes)


# ----------------------------------------------------------------------------- tensors

# dtype -> the typed value field make_tensor_proto fills when it does not use tensor_content
_VALUE_FIELD = {"float32": "float_val", "float64": "double_val", "float16": "half_val",
                "bfloat16": "half_val", "int32": "int_val", "int16": "int_val",
                "int8": "int_val", "uint8": "int_val", "uint16": "int_val",
                "qint8": "int_val", "quint8": "int_val", "qint16": "int_val",
                "quint16": "int_val", "qint32": "int_val", "int64": "int64_val",
                "uint32": "uint32_val", "uint64": "uint64_val", "bool": "bool_val",
                "string": "string_val", "complex64": "scomplex_val",
                "complex128": "dcomplex_val"}
_NO_CONTENT = ("bool", "string", "complex64", "complex128", "uint16")
_OTHER_FIELDS = sorted(set(_VALUE_FIELD.values()) | {"resource_handle_val", "variant_val",
                                                     "float8_val"})


def tensor_to_proto(array, proto=None):
    """An ndarray as the TensorProto TF's `make_tensor_proto` writes (filled into `proto`)."""
    proto = TensorProto() if proto is None else proto
    array = np.asarray(array)
    if not array.dtype.isnative:
        array = array.astype(array.dtype.newbyteorder("="))
    dtype = dtypes.as_dtype(array.dtype)
    proto.dtype = dtype.enum
    shape_to_proto(TensorShape(array.shape), proto.tensor_shape)
    if array.size > 1 and dtype.name not in _NO_CONTENT:
        proto.tensor_content = array.astype(array.dtype.newbyteorder("<")).tobytes()
        return proto
    flat = array.reshape(-1)
    if dtype.name in ("float16", "bfloat16"):
        values = flat.view(np.uint16).tolist()
    elif dtype.is_complex:
        values = [float(p) for v in flat for p in (v.real, v.imag)]
    elif dtype.name == "string":
        values = [v if isinstance(v, bytes) else str(v).encode("utf-8") for v in flat]
    else:
        values = flat.tolist()
    getattr(proto, _VALUE_FIELD[dtype.name]).extend(values)
    return proto


def tensor_from_proto(proto, path="TensorProto"):
    """The ndarray a TensorProto holds; typed errors for every inconsistency."""
    dtype = _dtype(proto.dtype, f"{path}.dtype")
    if dtype.name not in _VALUE_FIELD:
        raise _fail(path, f"unsupported tensor dtype {dtype.tf_name}")
    shape = _shape_from_proto(proto.tensor_shape, f"{path}.tensor_shape")
    if not shape.is_fully_defined():
        raise _fail(path, f"tensor shape {shape.debug_string()} is not fully defined")
    memory.check_allocation(shape.as_list(), dtype.np_dtype, path)
    count = shape.num_elements()
    np_dtype = dtype.np_dtype
    field = _VALUE_FIELD[dtype.name]
    for other in _OTHER_FIELDS:
        if other != field and len(getattr(proto, other)):
            raise _fail(path, f"{other} given for a {dtype.short_name} tensor")
    if proto.tensor_content:
        content = proto.tensor_content
        if dtype.name == "string" or len(content) != count * np_dtype.itemsize:
            raise _fail(path, f"tensor_content holds {len(content)} bytes, expected "
                              f"{count * np_dtype.itemsize} for a {dtype.short_name} tensor "
                              f"of shape {shape.debug_string()}")
        if len(getattr(proto, field)):
            raise _fail(path, f"both tensor_content and {field} given")
        return np.frombuffer(content, np_dtype.newbyteorder("<")).astype(np_dtype).reshape(
            shape.as_list())
    values = _typed_values(dtype, getattr(proto, field), path)
    if len(values) > count:
        raise _fail(path, f"{len(values)} values given for a tensor of shape "
                          f"{shape.debug_string()} ({count} elements)")
    if len(values) == 0:
        return np.zeros(shape.as_list(), np_dtype) if dtype.name != "string" else \
            np.full(shape.as_list(), b"", dtype=object)
    out = np.empty(count, np_dtype)
    out[:len(values)] = values
    out[len(values):] = values[-1]     # TF repeats the last value to fill the shape
    return out.reshape(shape.as_list())


def _typed_values(dtype, values, path):
    np_dtype = dtype.np_dtype
    if dtype.name == "string":
        out = np.empty(len(values), object)
        out[:] = list(values)
        return out
    if dtype.name in ("float16", "bfloat16"):
        bits = np.array(values, np.int64)
        if np.any((bits < 0) | (bits > 0xFFFF)):
            raise _fail(path, "half_val entries must fit in 16 bits")
        return bits.astype(np.uint16).view(np_dtype)
    if dtype.is_complex:
        if len(values) % 2:
            raise _fail(path, "complex values come in (real, imaginary) pairs")
        pairs = np.array(values, np.float64).reshape(-1, 2)
        out = np.empty(len(pairs), np_dtype)
        out.real, out.imag = pairs[:, 0], pairs[:, 1]     # keeps signed zeros
        return out
    if dtype.is_integer or dtype.is_quantized:
        wide = np.array(values, np.uint64 if dtype.name == "uint64" else np.int64)
        info = np.iinfo(np_dtype)
        if len(wide) and (wide.min() < info.min or wide.max() > info.max):
            raise _fail(path, f"a value is out of range for {dtype.short_name}")
        return wide.astype(np_dtype)
    with np.errstate(over="ignore"):
        return np.array(values, np_dtype)


# ----------------------------------------------------------------------------- attr values

def attr_to_proto(value, proto=None):
    """A canonical attr value as an AttrValue (filled into `proto`)."""
    proto = AttrValue() if proto is None else proto
    if value is None:
        return proto
    if isinstance(value, (list, tuple)):
        kinds = {_attr_field(v) for v in value}
        if len(kinds) > 1:
            raise InvalidArgumentError(f"attr list mixes value kinds {sorted(kinds)}")
        proto.list.SetInParent()
        if kinds:
            field = kinds.pop()
            items = getattr(proto.list, field)
            for v in value:
                if field in ("shape", "tensor", "func"):
                    _set_attr_item(field, v, items.add())
                else:
                    items.append(_scalar_item(field, v))
        return proto
    field = _attr_field(value)
    if field in ("shape", "tensor", "func"):
        _set_attr_item(field, value, getattr(proto, field))
    else:
        setattr(proto, field, _scalar_item(field, value))
    return proto


def _attr_field(value):
    for field, types in (("b", (bool, np.bool_)), ("i", (int, np.integer)),
                         ("f", (float, np.floating)), ("s", (str, bytes)),
                         ("type", dtypes.DType), ("shape", TensorShape),
                         ("tensor", np.ndarray)):
        if isinstance(value, types):
            return field
    if isinstance(value, dict) and "name" in value:
        return "func"
    raise InvalidArgumentError(f"cannot write attr value {value!r} to a GraphDef")


def _scalar_item(field, value):
    if field == "s":
        return value.encode("utf-8") if isinstance(value, str) else value
    if field == "type":
        return value.enum
    if field == "f":
        with np.errstate(over="ignore"):
            return float(np.float32(value))     # a float field holds a float32
    return {"b": bool, "i": int}[field](value)


def _set_attr_item(field, value, proto):
    if field == "shape":
        shape_to_proto(value, proto)
    elif field == "tensor":
        tensor_to_proto(value, proto)
    else:
        proto.name = value["name"]
        for key, item in value.get("attr", {}).items():
            attr_to_proto(item, proto.attr[key])


def attr_from_proto(proto, path="AttrValue"):
    """An AttrValue as a canonical value (None when it holds no value)."""
    field = proto.WhichOneof("value")
    if field is None:
        return None
    if field == "list":
        present = [f.name for f, _ in proto.list.ListFields()]
        if len(present) > 1:
            raise _fail(path, f"list sets more than one of {sorted(present)}")
        if not present:
            return []
        (field,) = present
        return [_attr_item_from_proto(field, v, f"{path}.list.{field}[{i}]")
                for i, v in enumerate(getattr(proto.list, field))]
    if field == "placeholder":
        raise _fail(path, "function placeholders cannot appear in a GraphDef")
    return _attr_item_from_proto(field, getattr(proto, field), f"{path}.{field}")


def _attr_item_from_proto(field, value, path):
    if field == "s":
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return value
    if field == "type":
        return _dtype(value, path)
    if field == "f":
        return _shortest_float32(value)
    if field == "shape":
        return _shape_from_proto(value, path)
    if field == "tensor":
        return tensor_from_proto(value, path)
    if field == "func":
        return {"name": value.name, "attr": _attrs_from_proto(value.attr, path)}
    return value


def _shortest_float32(value):
    """The shortest decimal that reads back as the same float32 (protobuf's JSON form), so
    that 0.1 written as a float attr reads back as 0.1."""
    target = np.float32(value)
    for precision in range(6, 10):
        rounded = float(f"{float(target):.{precision}g}")
        if np.float32(rounded) == target:
            return rounded
    return float(target)


def _attrs_to_proto(attrs, attr_map, path):
    """Fills a map<string, AttrValue> from canonical values."""
    for key, value in attrs.items():
        try:
            attr_to_proto(value, attr_map[key])
        except (TypeError, ValueError) as e:     # e.g. an int beyond int64
            if isinstance(e, InvalidArgumentError):
                raise
            raise InvalidArgumentError(f"Invalid GraphDef dict at {path}.attr[{key}]: "
                                       f"{e}") from None


def _attrs_from_proto(attr_map, path):
    return {k: attr_from_proto(v, f"{path}.attr[{k}]") for k, v in attr_map.items()}


# ----------------------------------------------------------------------------- nodes

_NODE_KEYS = ("name", "op", "input", "device", "attr", "experimental_debug_info",
              "experimental_type")


def _node_to_proto(node, proto, path):
    if not isinstance(node, dict):
        raise InvalidArgumentError(f"Invalid GraphDef dict at {path}: a NodeDef must be a "
                                   f"dict, got {type(node).__name__}")
    unknown = set(node) - set(_NODE_KEYS)
    if unknown:
        raise InvalidArgumentError(f"NodeDef {node.get('name')!r} has unknown keys "
                                   f"{sorted(unknown)}")
    try:
        proto.name, proto.op, proto.device = (node.get(k, "") for k in ("name", "op", "device"))
        proto.input.extend(node.get("input", ()))
    except (TypeError, ValueError) as e:
        raise InvalidArgumentError(f"Invalid GraphDef dict at {path}: {e}") from None
    _attrs_to_proto(node.get("attr", {}), proto.attr, path)
    for key in ("experimental_debug_info", "experimental_type"):
        if key in node:
            _raw_from_dict(node[key], getattr(proto, key), f"{path}.{key}")


def _node_from_proto(proto, path):
    node = {"name": proto.name, "op": proto.op, "input": list(proto.input),
            "device": proto.device, "attr": _attrs_from_proto(proto.attr, path)}
    for key in ("experimental_debug_info", "experimental_type"):
        if proto.HasField(key):
            node[key] = _raw_to_dict(getattr(proto, key))
    return node


# ----------------------------------------------------------------------------- library

def function_to_proto(function, path="FunctionDef"):
    """A FunctionDef dict as a FunctionDef message (InvalidArgumentError if malformed)."""
    proto = FunctionDef()
    _function_to_proto(function, proto, path)
    return proto


def _function_to_proto(function, proto, path):
    if not isinstance(function, dict):
        raise InvalidArgumentError(f"Invalid GraphDef dict at {path}: a FunctionDef must be "
                                   f"a dict, got {type(function).__name__}")
    _raw_from_dict(function.get("signature", {}), proto.signature, f"{path}.signature")
    _attrs_to_proto(function.get("attr", {}), proto.attr, path)
    for index, arg_attrs in function.get("arg_attr", {}).items():
        _attrs_to_proto(arg_attrs.get("attr", {}), proto.arg_attr[int(index)].attr,
                        f"{path}.arg_attr[{index}]")
    for i, node in enumerate(function.get("node_def", [])):
        _node_to_proto(node, proto.node_def.add(), f"{path}.node_def[{i}]")
    try:
        for key in ("resource_arg_unique_id", "ret", "control_ret"):
            getattr(proto, key).update(function.get(key, {}))
    except (TypeError, ValueError) as e:
        raise InvalidArgumentError(f"Invalid GraphDef dict at {path}: {e}") from None


def _function_from_proto(proto, path):
    return {"signature": _raw_to_dict(proto.signature),
            "attr": _attrs_from_proto(proto.attr, path),
            "arg_attr": {i: {"attr": _attrs_from_proto(a.attr, f"{path}.arg_attr[{i}]")}
                         for i, a in proto.arg_attr.items()},
            "resource_arg_unique_id": dict(proto.resource_arg_unique_id),
            "node_def": [_node_from_proto(n, f"{path}.node_def[{i}]")
                         for i, n in enumerate(proto.node_def)],
            "ret": dict(proto.ret), "control_ret": dict(proto.control_ret)}


def _library_to_proto(library, proto):
    proto.SetInParent()
    for i, function in enumerate(library.get("function", [])):
        _function_to_proto(function, proto.function.add(), f"GraphDef.library.function[{i}]")
    for key in ("gradient", "registered_gradients"):
        for i, item in enumerate(library.get(key, [])):
            _raw_from_dict(item, getattr(proto, key).add(), f"GraphDef.library.{key}[{i}]")


def _library_from_proto(proto):
    return {"function": [_function_from_proto(f, f"GraphDef.library.function[{i}]")
                         for i, f in enumerate(proto.function)],
            "gradient": [_raw_to_dict(g) for g in proto.gradient],
            "registered_gradients": [_raw_to_dict(g) for g in proto.registered_gradients]}


# ----------------------------------------------------------------------------- GraphDef

def _as_ours(message):
    """A GraphDef message of ours as is; TensorFlow's (same schema) re-read as ours."""
    if isinstance(message, GraphDef):
        return message
    if getattr(getattr(message, "DESCRIPTOR", None), "full_name", None) != "tensorflow.GraphDef":
        raise TypeError(f"expected a GraphDef dict or message, got {type(message).__name__}")
    return GraphDef.FromString(message.SerializeToString())


def graph_def_to_proto(graph_def):
    """A GraphDef dict (or message: ours as is, TensorFlow's converted) as our message."""
    if not isinstance(graph_def, dict):
        return _as_ours(graph_def)
    proto = GraphDef()
    for i, node in enumerate(graph_def.get("node", [])):
        _node_to_proto(node, proto.node.add(), f"GraphDef.node[{i}]")
    _raw_from_dict(graph_def.get("versions", {}), proto.versions, "GraphDef.versions")
    if graph_def.get("version"):
        proto.version = graph_def["version"]
    if "library" in graph_def:
        _library_to_proto(graph_def["library"], proto.library)
    if "debug_info" in graph_def:
        _raw_from_dict(graph_def["debug_info"], proto.debug_info, "GraphDef.debug_info")
    return proto


def graph_def_from_proto(proto):
    """A GraphDef message (graphops' or TensorFlow's) as a GraphDef dict."""
    proto = _as_ours(proto)
    versions = proto.versions
    graph_def = {"node": [_node_from_proto(n, f"GraphDef.node[{i}]")
                          for i, n in enumerate(proto.node)],
                 "versions": {"producer": versions.producer,
                              "min_consumer": versions.min_consumer}}
    if versions.bad_consumers:
        graph_def["versions"]["bad_consumers"] = list(versions.bad_consumers)
    if proto.version:
        graph_def["version"] = proto.version
    if proto.HasField("library"):
        graph_def["library"] = _library_from_proto(proto.library)
    if proto.HasField("debug_info"):
        graph_def["debug_info"] = _raw_to_dict(proto.debug_info)
    return graph_def
