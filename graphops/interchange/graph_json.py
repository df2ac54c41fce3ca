"""GraphDef dicts <-> TensorFlow's protobuf JSON (`json_format.MessageToJson` / `Parse`).

A GraphDef dict is `{"node": [NodeDef dict], "versions": {"producer", "min_consumer",
"bad_consumers"}}` (plus "library" / "debug_info", kept as raw JSON when present). A NodeDef
dict is what `Operation.node_def` returns: name, op, input ("x", "x:1", "^ctrl"), device and
attr, the attrs as canonical Python values (DType, int, float, bool, str or bytes,
TensorShape, np.ndarray, lists of those; `{"name", "attr"}` for a func; None for an empty
AttrValue). Writing follows the proto3 JSON mapping exactly: camelCase names, defaults
omitted, int64 as strings, floats at their shortest float32 form, bytes base64, tensors as TF's
`make_tensor_proto` lays them out. Reading accepts what `json_format.Parse` accepts and turns
every malformation into InvalidArgumentError. Nothing is evaluated or unpickled.
"""

import base64
import json
import math

import numpy as np

from registry import dtypes, memory
from registry.errors import InvalidArgumentError
from registry.tensor_shape import TensorShape

# message -> fields in field-number order: (proto name, kind, repeated, has presence).
# Kinds: scalar type names, "dtype" (the DataType enum), "map" (string -> AttrValue),
# "raw" (any JSON, kept as is) or another message name.
_R, _P = "repeated", "presence"
_SCHEMA = {
    "GraphDef": [("node", "NodeDef", _R), ("library", "raw", _P), ("version", "int32", None),
                 ("versions", "VersionDef", _P), ("debug_info", "raw", _P)],
    "NodeDef": [("name", "string", None), ("op", "string", None), ("input", "string", _R),
                ("device", "string", None), ("attr", "map", None),
                ("experimental_debug_info", "NodeDebugInfo", _P),
                ("experimental_type", "raw", _P)],
    "NodeDebugInfo": [("original_node_names", "string", _R),
                      ("original_func_names", "string", _R)],
    "VersionDef": [("producer", "int32", None), ("min_consumer", "int32", None),
                   ("bad_consumers", "int32", _R)],
    "AttrValue": [("list", "ListValue", _P), ("s", "bytes", _P), ("i", "int64", _P),
                  ("f", "float", _P), ("b", "bool", _P), ("type", "dtype", _P),
                  ("shape", "TensorShapeProto", _P), ("tensor", "TensorProto", _P),
                  ("placeholder", "string", _P), ("func", "NameAttrList", _P)],
    "ListValue": [("s", "bytes", _R), ("i", "int64", _R), ("f", "float", _R),
                  ("b", "bool", _R), ("type", "dtype", _R), ("shape", "TensorShapeProto", _R),
                  ("tensor", "TensorProto", _R), ("func", "NameAttrList", _R)],
    "NameAttrList": [("name", "string", None), ("attr", "map", None)],
    "TensorShapeProto": [("dim", "Dim", _R), ("unknown_rank", "bool", None)],
    "Dim": [("size", "int64", None), ("name", "string", None)],
    "TensorProto": [("dtype", "dtype", None), ("tensor_shape", "TensorShapeProto", _P),
                    ("version_number", "int32", None), ("tensor_content", "bytes", None),
                    ("float_val", "float", _R), ("double_val", "double", _R),
                    ("int_val", "int32", _R), ("string_val", "bytes", _R),
                    ("scomplex_val", "float", _R), ("int64_val", "int64", _R),
                    ("bool_val", "bool", _R), ("dcomplex_val", "double", _R),
                    ("half_val", "int32", _R), ("resource_handle_val", "raw", _R),
                    ("variant_val", "raw", _R), ("uint32_val", "uint32", _R),
                    ("uint64_val", "uint64", _R)],
}
_INT_RANGES = {"int32": (-2**31, 2**31 - 1), "int64": (-2**63, 2**63 - 1),
               "uint32": (0, 2**32 - 1), "uint64": (0, 2**64 - 1)}


def _json_name(name):
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def _fail(path, problem):
    return InvalidArgumentError(f"Invalid GraphDef JSON at {path}: {problem}")


# ----------------------------------------------------------------------------- proto JSON

def _shortest_float32(value):
    """protobuf's ToShortestFloat: the shortest decimal that reads back as the same float32."""
    target = np.float32(value)      # exact: `value` already is a float32
    for precision in range(6, 10):
        rounded = float(f"{float(target):.{precision}g}")
        if np.float32(rounded) == target:
            return rounded
    return float(target)


def _scalar_to_json(kind, value):
    if kind in ("float", "double"):
        value = float(value)
        if kind == "float":
            with np.errstate(over="ignore"):
                value = float(np.float32(value))    # a float field holds a float32
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return _shortest_float32(value) if kind == "float" else value
    if kind in ("int64", "uint64"):
        return str(int(value))
    if kind in ("int32", "uint32"):
        return int(value)
    if kind == "bytes":
        return base64.b64encode(value).decode("ascii")
    if kind == "dtype":
        return value.tf_name
    return value


def _message_to_json(message, name):
    out = {}
    for field, kind, mode in _SCHEMA[name]:
        if field not in message:
            continue
        value = message[field]
        if mode == _R:
            if len(value):
                out[_json_name(field)] = [_value_to_json(kind, v) for v in value]
        elif mode == _P or value:
            out[_json_name(field)] = _value_to_json(kind, value)
    return out


def _value_to_json(kind, value):
    if kind == "map":
        return {key: _message_to_json(v, "AttrValue") for key, v in value.items()}
    if kind in _SCHEMA:
        return _message_to_json(value, kind)
    return _scalar_to_json(kind, value)


def _parse_scalar(kind, value, path):
    if kind == "string":
        if not isinstance(value, str):
            raise _fail(path, f"expected a string, got {value!r}")
        return value
    if kind == "bool":
        if not isinstance(value, bool):
            raise _fail(path, f"expected true or false, got {value!r}")
        return value
    if kind in _INT_RANGES:
        return _parse_int(kind, value, path)
    if kind in ("float", "double"):
        return _parse_float(value, path)
    if kind == "bytes":
        return _parse_bytes(value, path)
    if kind == "dtype":
        return _parse_dtype(value, path)
    return value   # raw


def _parse_int(kind, value, path):
    number = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    elif isinstance(value, str) and value.strip() == value:
        try:
            number = int(value)
        except ValueError:
            pass
    if number is None:
        raise _fail(path, f"couldn't parse integer: {value!r}")
    low, high = _INT_RANGES[kind]
    if not low <= number <= high:
        raise _fail(path, f"value {number} out of range for {kind}")
    return number


def _parse_float(value, path):
    special = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
    if isinstance(value, str) and value in special:
        return special[value]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            pass
        else:
            if math.isfinite(number):
                return number
    raise _fail(path, f"couldn't parse float: {value!r}")


def _parse_bytes(value, path):
    if not isinstance(value, str):
        raise _fail(path, f"expected a base64 string, got {value!r}")
    text = value.replace("-", "+").replace("_", "/")
    text += "=" * (-len(text) % 4)
    try:
        return base64.b64decode(text, validate=True)
    except ValueError:
        raise _fail(path, f"invalid base64 data {value!r}") from None


def _parse_dtype(value, path):
    if isinstance(value, str) and value.startswith("DT_") or (
            isinstance(value, int) and not isinstance(value, bool)):
        try:
            return dtypes.as_dtype(value)
        except TypeError:
            pass
    raise _fail(path, f"invalid enum value {value!r} for enum type tensorflow.DataType")


def _parse_message(obj, name, path):
    if not isinstance(obj, dict):
        raise _fail(path, f"expected an object for {name}, got {type(obj).__name__}")
    fields = {}
    for field, kind, mode in _SCHEMA[name]:
        fields[field] = fields[_json_name(field)] = (field, kind, mode)
    message = {}
    for key, value in obj.items():
        if key not in fields:
            raise _fail(path, f'message type "tensorflow.{name}" has no field named "{key}"')
        field, kind, mode = fields[key]
        if field in message:
            raise _fail(path, f'message type "tensorflow.{name}" has the field "{field}" twice')
        if value is None:
            continue
        where = f"{path}.{field}"
        if mode == _R:
            if not isinstance(value, list):
                raise _fail(where, f"expected a list, got {type(value).__name__}")
            message[field] = [_parse_value(kind, v, f"{where}[{i}]") for i, v in enumerate(value)]
        else:
            message[field] = _parse_value(kind, value, where)
    if name == "AttrValue" and len(message) > 1:
        raise _fail(path, f"AttrValue sets more than one of {sorted(message)}")
    return message


def _parse_value(kind, value, path):
    if kind == "map":
        if not isinstance(value, dict):
            raise _fail(path, f"expected an object, got {type(value).__name__}")
        return {k: _parse_message(v, "AttrValue", f"{path}[{k}]") for k, v in value.items()}
    if kind in _SCHEMA:
        return _parse_message(value, kind, path)
    return _parse_scalar(kind, value, path)


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


def _shape_to_proto(shape):
    if shape.rank is None:
        return {"unknown_rank": True}
    return {"dim": [{"size": -1 if d is None else d} for d in shape.dims]}


def _shape_from_proto(proto, path):
    dims = proto.get("dim", [])
    if proto.get("unknown_rank"):
        if dims:
            raise _fail(path, "a shape with unknown rank cannot list dimensions")
        return TensorShape(None)
    sizes = [d.get("size", 0) for d in dims]
    if any(s < -1 for s in sizes):
        raise _fail(path, f"shape {sizes} has a dimension below -1")
    return TensorShape(sizes)


def tensor_to_proto(array):
    """An ndarray as the TensorProto dict TF's `make_tensor_proto` writes."""
    array = np.asarray(array)
    if not array.dtype.isnative:
        array = array.astype(array.dtype.newbyteorder("="))
    dtype = dtypes.as_dtype(array.dtype)
    proto = {"dtype": dtype, "tensor_shape": _shape_to_proto(TensorShape(array.shape))}
    if array.size > 1 and dtype.name not in _NO_CONTENT:
        proto["tensor_content"] = array.astype(array.dtype.newbyteorder("<")).tobytes()
        return proto
    flat = array.reshape(-1)
    if dtype.name in ("float16", "bfloat16"):
        values = [int(v) for v in flat.view(np.uint16)]
    elif dtype.is_complex:
        values = [float(p) for v in flat for p in (v.real, v.imag)]
    elif dtype.name == "string":
        values = [v if isinstance(v, bytes) else str(v).encode("utf-8") for v in flat]
    else:
        values = flat.tolist()
    proto[_VALUE_FIELD[dtype.name]] = values
    return proto


def tensor_from_proto(proto, path="TensorProto"):
    """The ndarray a TensorProto dict holds; typed errors for every inconsistency."""
    dtype = proto.get("dtype")
    if dtype is None or dtype.name not in _VALUE_FIELD:
        raise _fail(path, f"unsupported tensor dtype {dtype.tf_name if dtype else 'DT_INVALID'}")
    shape = _shape_from_proto(proto.get("tensor_shape", {}), f"{path}.tensor_shape")
    if not shape.is_fully_defined():
        raise _fail(path, f"tensor shape {shape.debug_string()} is not fully defined")
    memory.check_allocation(shape.as_list(), dtype.np_dtype, path)
    count = shape.num_elements()
    np_dtype = dtype.np_dtype
    for field in ("resource_handle_val", "variant_val"):
        if proto.get(field):
            raise _fail(path, f"{field} is not supported")
    if "tensor_content" in proto and proto["tensor_content"]:
        content = proto["tensor_content"]
        if dtype.name in ("string",) or len(content) != count * np_dtype.itemsize:
            raise _fail(path, f"tensor_content holds {len(content)} bytes, expected "
                              f"{count * np_dtype.itemsize} for a {dtype.short_name} tensor "
                              f"of shape {shape.debug_string()}")
        return np.frombuffer(content, np_dtype.newbyteorder("<")).astype(np_dtype).reshape(
            shape.as_list())
    field = _VALUE_FIELD[dtype.name]
    for other in set(_VALUE_FIELD.values()) - {field}:
        if proto.get(other):
            raise _fail(path, f"{other} given for a {dtype.short_name} tensor")
    values = _typed_values(dtype, proto.get(field, []), path)
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
    if dtype.name in ("float16", "bfloat16"):
        if any(not 0 <= v <= 0xFFFF for v in values):
            raise _fail(path, "half_val entries must fit in 16 bits")
        return np.array(values, np.uint16).view(np_dtype)
    if dtype.is_complex:
        if len(values) % 2:
            raise _fail(path, "complex values come in (real, imaginary) pairs")
        pairs = np.array(values, np.float64).reshape(-1, 2)
        out = np.empty(len(pairs), np_dtype)
        out.real, out.imag = pairs[:, 0], pairs[:, 1]     # keeps signed zeros
        return out
    if dtype.name == "string":
        out = np.empty(len(values), object)
        out[:] = list(values)
        return out
    if dtype.is_integer or dtype.is_quantized:
        info = np.iinfo(np_dtype)
        if any(not info.min <= v <= info.max for v in values):
            raise _fail(path, f"a value is out of range for {dtype.short_name}")
    with np.errstate(over="ignore"):
        return np.array(values, np_dtype)


# ----------------------------------------------------------------------------- attr values

def attr_to_proto(value):
    """A canonical attr value as an AttrValue dict."""
    if value is None:
        return {}
    if isinstance(value, (list, tuple)):
        kinds = {_attr_field(v) for v in value}
        if len(kinds) > 1:
            raise InvalidArgumentError(f"attr list mixes value kinds {sorted(kinds)}")
        if not kinds:
            return {"list": {}}
        field = kinds.pop()
        return {"list": {field: [_attr_item(field, v) for v in value]}}
    field = _attr_field(value)
    return {field: _attr_item(field, value)}


def _attr_field(value):
    if isinstance(value, (bool, np.bool_)):
        return "b"
    if isinstance(value, (int, np.integer)):
        return "i"
    if isinstance(value, (float, np.floating)):
        return "f"
    if isinstance(value, (str, bytes)):
        return "s"
    if isinstance(value, dtypes.DType):
        return "type"
    if isinstance(value, TensorShape):
        return "shape"
    if isinstance(value, np.ndarray):
        return "tensor"
    if isinstance(value, dict) and "name" in value:
        return "func"
    raise InvalidArgumentError(f"cannot write attr value {value!r} to a GraphDef")


def _attr_item(field, value):
    if field == "s":
        return value.encode("utf-8") if isinstance(value, str) else value
    if field == "shape":
        return _shape_to_proto(value)
    if field == "tensor":
        return tensor_to_proto(value)
    if field == "func":
        return {"name": value["name"],
                "attr": {k: attr_to_proto(v) for k, v in value.get("attr", {}).items()}}
    return value


def attr_from_proto(proto, path="AttrValue"):
    """An AttrValue dict as a canonical value (None when it holds no value)."""
    if not proto:
        return None
    (field, value), = proto.items()
    if field == "list":
        present = [(f, v) for f, v in value.items() if v]
        if len(present) > 1:
            raise _fail(path, f"list sets more than one of {sorted(f for f, _ in present)}")
        if not present:
            return []
        (field, items), = present
        return [_attr_item_from_proto(field, v, f"{path}.list.{field}[{i}]")
                for i, v in enumerate(items)]
    if field == "placeholder":
        raise _fail(path, "function placeholders cannot appear in a GraphDef")
    return _attr_item_from_proto(field, value, f"{path}.{field}")


def _attr_item_from_proto(field, value, path):
    if field == "s":
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return value
    if field == "shape":
        return _shape_from_proto(value, path)
    if field == "tensor":
        return tensor_from_proto(value, path)
    if field == "func":
        return {"name": value.get("name", ""),
                "attr": {k: attr_from_proto(v, f"{path}.attr[{k}]")
                         for k, v in value.get("attr", {}).items()}}
    return value


# ----------------------------------------------------------------------------- GraphDef

_NODE_KEYS = ("name", "op", "input", "device", "attr", "experimental_debug_info",
              "experimental_type")


def graph_def_to_proto(graph_def):
    """A GraphDef dict as the proto-shaped dict (AttrValue / TensorProto form)."""
    proto = {"node": [_node_to_proto(n) for n in graph_def.get("node", [])]}
    proto["versions"] = dict(graph_def.get("versions", {}))
    for key in ("library", "version", "debug_info"):
        if key in graph_def:
            proto[key] = graph_def[key]
    return proto


def _node_to_proto(node):
    unknown = set(node) - set(_NODE_KEYS)
    if unknown:
        raise InvalidArgumentError(f"NodeDef {node.get('name')!r} has unknown keys "
                                   f"{sorted(unknown)}")
    proto = {k: node[k] for k in _NODE_KEYS if k in node and k != "attr"}
    proto["attr"] = {k: attr_to_proto(v) for k, v in node.get("attr", {}).items()}
    return proto


def graph_def_from_proto(proto):
    """The proto-shaped dict as a GraphDef dict with canonical attr values."""
    versions = proto.get("versions", {})
    graph_def = {"node": [], "versions": {"producer": versions.get("producer", 0),
                                          "min_consumer": versions.get("min_consumer", 0)}}
    if versions.get("bad_consumers"):
        graph_def["versions"]["bad_consumers"] = list(versions["bad_consumers"])
    for i, node in enumerate(proto.get("node", [])):
        path = f"GraphDef.node[{i}]"
        out = {"name": node.get("name", ""), "op": node.get("op", ""),
               "input": list(node.get("input", [])), "device": node.get("device", ""),
               "attr": {k: attr_from_proto(v, f"{path}.attr[{k}]")
                        for k, v in node.get("attr", {}).items()}}
        for key in ("experimental_debug_info", "experimental_type"):
            if key in node:
                out[key] = node[key]
        graph_def["node"].append(out)
    for key in ("library", "version", "debug_info"):
        if key in proto:
            graph_def[key] = proto[key]
    return graph_def


def graph_def_to_json(graph_def, indent=2):
    """The GraphDef dict as the JSON text `json_format.MessageToJson` gives for it."""
    message = _message_to_json(graph_def_to_proto(graph_def), "GraphDef")
    return json.dumps(message, indent=indent)


def graph_def_from_json(text):
    """Parses GraphDef JSON (TF's own, or ours) into a GraphDef dict."""
    def no_duplicates(pairs):
        seen = {}
        for key, value in pairs:
            if key in seen:
                raise InvalidArgumentError(f"Failed to load JSON: duplicate key {key}.")
            seen[key] = value
        return seen

    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    if not isinstance(text, str):
        raise InvalidArgumentError(f"GraphDef JSON must be a string, got {type(text).__name__}")
    try:
        obj = json.loads(text, object_pairs_hook=no_duplicates)
    except (ValueError, RecursionError) as e:
        if isinstance(e, InvalidArgumentError):
            raise
        raise InvalidArgumentError(f"Failed to load JSON: {e}.") from None
    return graph_def_from_proto(_parse_message(obj, "GraphDef", "GraphDef"))
