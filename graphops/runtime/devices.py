"""Devices: the table of device types that run kernels, and TF's device-spec strings.

"CPU" (NumPy, host memory) is always present; "GPU" appears when CuPy imports and reports
CUDA devices (any import or driver failure simply means no GPU). The table is pluggable:
`register_device_type` adds a type (tests add a fake accelerator), `unregister_device_type`
removes it. GPU discovery runs lazily, on the first question about the table, so that
`import graphops` never imports CuPy.
"""

import contextlib
import threading
from dataclasses import dataclass
from typing import Callable, NamedTuple, Optional

import numpy as np

# Device types the short spec form ("/gpu:0") recognises, besides registered ones.
_SPEC_TYPES = {"CPU", "GPU", "TPU"}
LOCAL_PREFIX = "/job:localhost/replica:0/task:0"


@dataclass(frozen=True)
class DeviceType:
    """One kind of device. Host types (CPU) hold NumPy arrays and need no copies.

    `to_device(np_array, index)` and `to_host(array)` move values across the host boundary;
    `owns(array)` tells whether an array lives on this type (used by eager execution);
    `activate(index)`, when given, is a context manager making that device current (kernels
    run and allocate inside it).
    Unpinned nodes go to the available type with the highest `preference` that has a kernel.
    """

    name: str
    count: int
    xp: object
    preference: int = 0
    to_device: Optional[Callable] = None
    to_host: Optional[Callable] = None
    owns: Optional[Callable] = None
    activate: Optional[Callable] = None

    @property
    def is_host(self):
        return self.to_device is None


@dataclass(frozen=True)
class Device:
    """A device instance, e.g. GPU:0; `.name` is TF's full name."""

    type: DeviceType
    index: int

    @property
    def name(self):
        return f"{LOCAL_PREFIX}/device:{self.type.name}:{self.index}"

    @property
    def device_type(self):
        return self.type.name

    @property
    def short_name(self):
        return f"{self.type.name}:{self.index}"

    def __repr__(self):
        return f"Device({self.short_name})"


class PhysicalDevice(NamedTuple):
    """What `list_physical_devices` returns, as tf.config.PhysicalDevice."""

    name: str
    device_type: str


CPU = DeviceType("CPU", 1, np, preference=0)

_lock = threading.Lock()
_table = None          # name -> DeviceType, built on first use
_registered = []       # types added with register_device_type before discovery ran
_version = [0]         # bumps whenever the table changes


def _discover_gpu():
    """The GPU device type, or None when CuPy is missing or sees no CUDA device."""
    try:
        import cupy
        count = int(cupy.cuda.runtime.getDeviceCount())
    except Exception:   # ImportError, CUDA driver/runtime errors: no GPU, never a crash
        return None
    if count <= 0:
        return None

    def to_device(array, index):
        if isinstance(array, cupy.ndarray) and array.device.id != index:
            array = cupy.asnumpy(array)         # another GPU's array: through the host
        with cupy.cuda.Device(index):
            return cupy.asarray(array)

    return DeviceType("GPU", count, cupy, preference=100, to_device=to_device,
                      to_host=cupy.asnumpy, owns=lambda a: isinstance(a, cupy.ndarray),
                      activate=cupy.cuda.Device)


def _get_table():
    global _table
    if _table is None:
        with _lock:
            if _table is None:
                table = {"CPU": CPU}
                gpu = _discover_gpu()
                if gpu is not None:
                    table["GPU"] = gpu
                for dtype in _registered:
                    table[dtype.name] = dtype
                _table = table
    return _table


def register_device_type(device_type):
    """Adds (or replaces) a device type in the table."""
    _get_table()
    with _lock:
        _table[device_type.name] = device_type
        _registered.append(device_type)
        _SPEC_TYPES.add(device_type.name)
        _version[0] += 1


def unregister_device_type(name):
    """Removes a device type added with `register_device_type`."""
    _get_table()
    with _lock:
        _table.pop(name, None)
        _registered[:] = [d for d in _registered if d.name != name]
        _version[0] += 1


def table_version():
    """A counter that changes whenever device types are registered or removed."""
    return _version[0]


def device_types():
    """Available device types, most preferred first."""
    return sorted(_get_table().values(), key=lambda d: -d.preference)


def get_device_type(name):
    """The DeviceType called `name` ("CPU", "GPU", ...), or None when not available."""
    return _get_table().get(name)


def local_devices():
    """Every device instance, most preferred type first."""
    return [Device(t, i) for t in device_types() for i in range(t.count)]


def activated(device):
    """A context manager under which `device` is the current one (a no-op for most types)."""
    activate = device.type.activate
    return contextlib.nullcontext() if activate is None else activate(device.index)


def location_of(array):
    """The non-host Device an array lives on (a CuPy array: its GPU), or None for host data."""
    if type(array) is np.ndarray:
        return None
    for dtype in device_types():
        if dtype.owns is not None and dtype.owns(array):
            return Device(dtype, int(getattr(getattr(array, "device", None), "id", 0) or 0))
    return None


def to_host(value):
    """A device array (CuPy) copied to a NumPy array; host values unchanged (`gp.to_numpy`:
    eager ops on a GPU return CuPy arrays)."""
    place = location_of(value)
    return value if place is None else place.type.to_host(value)


def transfer(value, src, dst):
    """Moves an array from location `src` to `dst` (None = host memory, else a Device)."""
    if src is not None:
        value = src.type.to_host(value)
    if dst is not None:
        value = dst.type.to_device(value, dst.index)
    return value


def list_physical_devices(device_type=None):
    """As tf.config.list_physical_devices: CPU first, then the others."""
    types = sorted(_get_table().values(), key=lambda d: (d.name != "CPU", d.name))
    return [PhysicalDevice(f"/physical_device:{t.name}:{i}", t.name)
            for t in types for i in range(t.count)
            if device_type is None or t.name == device_type.upper()]


@dataclass(frozen=True)
class DeviceSpec:
    """A parsed device string; every field may be unspecified (None)."""

    job: Optional[str] = None
    replica: Optional[int] = None
    task: Optional[int] = None
    device_type: Optional[str] = None
    device_index: Optional[int] = None

    @classmethod
    def from_string(cls, spec):
        """Parses "/job:x/replica:0/task:0/device:GPU:0", "/gpu:0", "GPU:1", "/cpu:*", ""."""
        if isinstance(spec, DeviceSpec):
            return spec
        if spec is None:
            return cls()
        if not isinstance(spec, str):
            raise TypeError(f"Device spec must be a string, got {type(spec).__name__}")
        fields = {}
        for part in spec.split("/"):
            if not part:
                continue
            items = part.split(":")
            key = items[0]
            if len(items) == 2 and key in ("job", "replica", "task"):
                fields[key] = items[1] if key == "job" else _index(items[1], spec)
            elif len(items) in (1, 2) and key.upper() in _SPEC_TYPES:
                _set_type(fields, key.upper(), items[1] if len(items) == 2 else "*", spec)
            elif len(items) == 3 and key == "device":
                _set_type(fields, items[1].upper(), items[2], spec)
            else:
                raise ValueError(f"Unknown attribute '{key}' is encountered while parsing "
                                 f"the device spec: '{spec}'.")
        return cls(**fields)

    def to_string(self):
        """TF's canonical form: only the specified fields, e.g. "/device:GPU:0"."""
        out = ""
        if self.job is not None:
            out += f"/job:{self.job}"
        if self.replica is not None:
            out += f"/replica:{self.replica}"
        if self.task is not None:
            out += f"/task:{self.task}"
        if self.device_type is not None:
            index = "*" if self.device_index is None else self.device_index
            out += f"/device:{self.device_type}:{index}"
        return out

    def make_merged_spec(self, other):
        """This spec with every field that `other` specifies taken from `other`."""
        other = DeviceSpec.from_string(other)
        merged = {k: getattr(other, k) if getattr(other, k) is not None else getattr(self, k)
                  for k in ("job", "replica", "task", "device_type", "device_index")}
        if other.device_type is not None and other.device_type != self.device_type:
            merged["device_index"] = other.device_index
        return DeviceSpec(**merged)

    def __str__(self):
        return self.to_string()


def canonical_device(spec):
    """Normalises a device string ("/gpu:0" -> "/device:GPU:0"; "" stays "")."""
    return DeviceSpec.from_string(spec).to_string() if spec else ""


def _index(text, spec):
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"Invalid index '{text}' in the device spec: '{spec}'.") from None


def _set_type(fields, device_type, index, spec):
    if "device_type" in fields:
        raise ValueError("Multiple device types are not allowed while parsing the device "
                         f"spec: {spec}.")
    fields["device_type"] = device_type
    fields["device_index"] = None if index == "*" else _index(index, spec)
