"""TF's tensor bundle (the V2 checkpoint format): `<prefix>.index` and `<prefix>.data-*`.

The index is a table (sstable.py) whose entry "" holds a BundleHeaderProto and whose other
entries, keyed by tensor name, hold BundleEntryProtos: dtype, shape, the data file
(shard_id), offset and size of the tensor's bytes and their masked CRC-32C. A data file
holds the raw little-endian bytes of each tensor; a string tensor is written as the varint64
lengths of its elements, the masked CRC-32C of those lengths (as uint32s), then the bytes.
Files are written under a temporary name and renamed, so a reader never sees half a file.
"""

import os
import struct
import uuid

import numpy as np

from graphops.interchange import sstable
from graphops.interchange.crc32c import crc32c, mask, unmask
from graphops.interchange.proto import tensor_bundle_pb2
from graphops.registry import dtypes
from graphops.registry.errors import (DataLossError, InvalidArgumentError, NotFoundError,
                                      UnimplementedError)

_HEADER_KEY = b""
_VERSION = 1                  # TF's kTensorBundleVersion


def index_filename(prefix):
    return f"{prefix}.index"


def data_filename(prefix, shard_id, num_shards):
    return f"{prefix}.data-{shard_id:05d}-of-{num_shards:05d}"


def not_found_message(prefix):
    """TF's message for a prefix with no checkpoint behind it."""
    return ("Unsuccessful TensorSliceReader constructor: Failed to find any matching files "
            f"for {prefix}")


# ------------------------------------------------------------------------------- writing

def write_bundle(prefix, tensors):
    """Writes the (name, array, DType) triples as a one-shard bundle at `prefix`; the data
    file keeps their order, the index their names' order."""
    entries = {}
    os.makedirs(os.path.dirname(prefix) or ".", exist_ok=True)
    with AtomicFile(data_filename(prefix, 0, 1)) as out:
        offset = 0
        for name, array, dtype in tensors:
            key = _key(name)
            if key in entries:
                raise InvalidArgumentError(f"Adding duplicate key: {name}")
            size, checksum = _write_tensor(out, array, dtype)
            entry = tensor_bundle_pb2.BundleEntryProto(
                dtype=dtype.enum, offset=offset, size=size, crc32c=mask(checksum))
            entry.shape.dim.extend(entry.shape.Dim(size=d) for d in np.shape(array))
            entries[key] = entry
            offset += size
    _write_index(prefix, entries, num_shards=1)


def _key(name):
    key = name.encode(errors="surrogateescape") if isinstance(name, str) else bytes(name)
    if key == _HEADER_KEY:
        raise InvalidArgumentError("A tensor name in a checkpoint must not be empty")
    return key


def _write_tensor(out, array, dtype):
    """Writes one tensor's bytes; returns (size, unmasked CRC-32C)."""
    if dtype.kind == "handle":
        raise UnimplementedError(f"Saving tensors of type {dtype.name} is not supported")
    if dtype is dtypes.string:
        return _write_strings(out, array)
    data = np.ascontiguousarray(array, dtype=dtype.np_dtype)
    if data.dtype.byteorder == ">":
        data = data.astype(data.dtype.newbyteorder("<"))
    raw = data.reshape(-1).view(np.uint8)
    out.write(memoryview(raw))
    return raw.size, crc32c(raw)


def _write_strings(out, array):
    items = [s.encode() if isinstance(s, str) else bytes(s)
             for s in np.asarray(array, dtype=object).reshape(-1)]
    lengths = b"".join(sstable.varint(len(s)) for s in items)
    checksum = 0
    for s in items:
        width = "<I" if len(s) <= 0xFFFFFFFF else "<Q"
        checksum = crc32c(struct.pack(width, len(s)), checksum)
    length_checksum = struct.pack("<I", mask(checksum))
    checksum = crc32c(length_checksum, checksum)
    out.write(lengths + length_checksum)
    for s in items:
        out.write(s)
        checksum = crc32c(s, checksum)
    return len(lengths) + 4 + sum(len(s) for s in items), checksum


def _write_index(prefix, entries, num_shards):
    header = tensor_bundle_pb2.BundleHeaderProto(num_shards=num_shards)
    header.version.producer = _VERSION
    items = [(_HEADER_KEY, header.SerializeToString())]
    items += [(key, entries[key].SerializeToString()) for key in sorted(entries)]
    with AtomicFile(index_filename(prefix)) as out:
        out.write(sstable.build_table(items))


class AtomicFile:
    """A binary file written under a temporary name and renamed into place when complete
    (removed instead when the block fails): a reader never sees half a file."""

    def __init__(self, path):
        self._path = path
        self._temp = f"{path}.tempstate{uuid.uuid4().int % 10**19}"

    def __enter__(self):
        self._file = open(self._temp, "wb")
        return self._file

    def __exit__(self, kind, value, traceback):
        self._file.close()
        if kind is None:
            os.replace(self._temp, self._path)
        else:
            os.remove(self._temp)


# ------------------------------------------------------------------------------- reading

class BundleReader:
    """The entries of the bundle at `prefix`; `read(name)` gives a tensor as a NumPy array."""

    def __init__(self, prefix):
        self.prefix = prefix
        path = index_filename(prefix)
        if not os.path.isfile(path):
            raise NotFoundError(not_found_message(prefix))
        with open(path, "rb") as f:
            items = sstable.read_table(f.read(), name=path)
        if not items or items[0][0] != _HEADER_KEY:
            raise DataLossError(f"{path}: the bundle header entry is missing")
        self.header = tensor_bundle_pb2.BundleHeaderProto.FromString(items[0][1])
        if self.header.endianness != tensor_bundle_pb2.BundleHeaderProto.LITTLE:
            raise UnimplementedError(f"{path}: big-endian checkpoints are not supported")
        if self.header.version.min_consumer > _VERSION:
            raise InvalidArgumentError(
                f"{path}: checkpoint needs a reader of version >= "
                f"{self.header.version.min_consumer}, this one is {_VERSION}")
        self.entries = {key.decode(errors="surrogateescape"):
                        tensor_bundle_pb2.BundleEntryProto.FromString(value)
                        for key, value in items[1:]}

    def __contains__(self, name):
        return name in self.entries

    def entry(self, name):
        """The BundleEntryProto of `name`; NotFoundError as TF's when there is none."""
        found = self.entries.get(name)
        if found is None:
            raise NotFoundError(f"Key {name} not found in checkpoint")
        return found

    def dtype(self, name):
        return dtypes.as_dtype(self.entry(name).dtype)

    def shape(self, name):
        return [d.size for d in self.entry(name).shape.dim]

    def read(self, name):
        """The tensor `name`, its checksum verified."""
        entry = self.entry(name)
        if entry.slices:
            raise UnimplementedError(f"Tensor {name} is stored in slices (a partitioned "
                                     "variable); reading sliced checkpoint entries is not "
                                     "supported")
        dtype, shape = self.dtype(name), self.shape(name)
        path = data_filename(self.prefix, entry.shard_id, self.header.num_shards)
        try:
            with open(path, "rb") as f:
                f.seek(entry.offset)
                raw = f.read(entry.size)
        except FileNotFoundError:
            raise NotFoundError(f"{path}; No such file or directory") from None
        if len(raw) != entry.size:
            raise DataLossError(f"{path}: truncated data file reading {name}")
        if dtype.kind == "handle":
            raise UnimplementedError(f"Reading tensors of type {dtype.name} is not supported")
        if dtype is dtypes.string:
            value, actual = _read_strings(raw, shape, name)
        else:
            value, actual = _read_numbers(raw, shape, dtype, name), crc32c(raw)
        if actual != unmask(entry.crc32c):
            raise DataLossError(f"Checksum does not match: stored {unmask(entry.crc32c)} vs. "
                                f"calculated on the restored bytes {actual}")
        return value


def _read_numbers(raw, shape, dtype, name):
    count = int(np.prod(shape, dtype=np.int64))
    if count * dtype.size != len(raw):
        raise DataLossError(f"Entry {name} holds {len(raw)} bytes, its shape {shape} and "
                            f"dtype {dtype.name} need {count * dtype.size}")
    return np.frombuffer(raw, dtype=dtype.np_dtype.newbyteorder("<")).astype(
        dtype.np_dtype).reshape(shape)


def _read_strings(raw, shape, name):
    """A string tensor's elements and the checksum of its bytes (computed as when written:
    over the lengths as fixed-width integers, their masked checksum, then the bytes)."""
    count = int(np.prod(shape, dtype=np.int64))
    cursor = sstable.Cursor(raw, f"Entry {name}")
    lengths, checksum = [], 0
    for _ in range(count):
        lengths.append(cursor.varint())
        width = "<I" if lengths[-1] <= 0xFFFFFFFF else "<Q"
        checksum = crc32c(struct.pack(width, lengths[-1]), checksum)
    if cursor.position + 4 + sum(lengths) != len(raw):
        raise DataLossError(f"Entry {name}: string lengths do not match its size")
    checksum = crc32c(cursor.take(4), checksum)
    out = np.empty(count, dtype=object)
    for i, length in enumerate(lengths):
        out[i] = cursor.take(length)
        checksum = crc32c(out[i], checksum)
    return out.reshape(shape), checksum


# ------------------------------------------------------------------------------- merging

def merge_bundles(prefixes, destination, delete_old_dirs=True, allow_missing_files=False):
    """Merges bundles into one at `destination`: their data files renamed to its shards,
    one index; the old index files are deleted (and, with `delete_old_dirs`, their now
    empty directories)."""
    readers = []
    for prefix in prefixes:
        if os.path.isfile(index_filename(prefix)):
            readers.append(BundleReader(prefix))
        elif not allow_missing_files:
            raise InvalidArgumentError(f"allow_missing_files was set to false and {prefix} did "
                                       f"not exist.NOT_FOUND: {prefix} not found")
    if not readers:
        raise InvalidArgumentError("None of the prefixes to merge exist: "
                                   f"{', '.join(map(str, prefixes))}")
    num_shards = sum(r.header.num_shards for r in readers)
    entries, first_shard = {}, 0
    for reader in readers:
        for name, entry in reader.entries.items():
            key = name.encode(errors="surrogateescape")
            if key in entries:
                raise InvalidArgumentError(f"Duplicate tensor keyed by {name} encountered, "
                                           f"when merging prefix: {reader.prefix}")
            moved = tensor_bundle_pb2.BundleEntryProto()
            moved.CopyFrom(entry)
            moved.shard_id = first_shard + entry.shard_id
            entries[key] = moved
        first_shard += reader.header.num_shards
    os.makedirs(os.path.dirname(destination) or ".", exist_ok=True)
    first_shard = 0
    for reader in readers:
        for shard in range(reader.header.num_shards):
            os.replace(data_filename(reader.prefix, shard, reader.header.num_shards),
                       data_filename(destination, first_shard + shard, num_shards))
        first_shard += reader.header.num_shards
    _write_index(destination, entries, num_shards)
    for reader in readers:
        if os.path.abspath(reader.prefix) != os.path.abspath(destination):
            os.remove(index_filename(reader.prefix))
        if delete_old_dirs:
            try:
                os.rmdir(os.path.dirname(reader.prefix) or ".")
            except OSError:
                pass                          # not empty, or already gone: TF ignores it too
