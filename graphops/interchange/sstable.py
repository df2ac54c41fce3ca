"""TF's table file format (LevelDB's SSTable), the container of a checkpoint's .index file.

A table is a run of blocks, then a 48-byte footer. A block holds sorted entries
`[shared varint32][unshared varint32][value length varint32][key suffix][value]`, each key
sharing `shared` leading bytes with the previous one except at restart points (every
`restart_interval` entries), then the restart offsets (uint32) and their count; a block is
followed by its compression type (1 byte, 0 = none) and the masked CRC-32C of contents and
type. The index block maps, for every data block, a key >= its last key to the block's
handle (offset varint64, size varint64); the metaindex block is empty. The footer holds the
metaindex and index handles padded to 40 bytes, then the magic number (fixed64).
"""

import struct

from graphops.interchange.crc32c import crc32c, mask, unmask
from graphops.registry.errors import DataLossError

MAGIC = 0xDB4775248B80FB57
FOOTER_SIZE = 48
_HANDLES_SIZE = 40           # two BlockHandles at their longest (2 x 2 x 10 bytes)
_NO_COMPRESSION = 0
BLOCK_SIZE = 262144          # TF's table::Options default
RESTART_INTERVAL = 16


# ------------------------------------------------------------------------------- writing

def build_table(items, block_size=BLOCK_SIZE, restart_interval=RESTART_INTERVAL):
    """The bytes of a table holding `items`, (key, value) byte strings in strictly
    increasing key order. Index keys are LevelDB's short separators, as TF writes them."""
    out = bytearray()
    index = _BlockBuilder(1)
    block = _BlockBuilder(restart_interval)
    last_key = None
    pending = None                 # the handle of a written block, awaiting its index key
    for key, value in items:
        key, value = bytes(key), bytes(value)
        if last_key is not None and key <= last_key:
            raise ValueError(f"table keys must be strictly increasing: {key!r} after {last_key!r}")
        if pending is not None:
            index.add(_separator(last_key, key), pending)
            pending = None
        block.add(key, value)
        last_key = key
        if block.size() >= block_size:
            pending = _write_block(out, block.finish())
            block = _BlockBuilder(restart_interval)
    if not block.empty():
        pending = _write_block(out, block.finish())
    if pending is not None:
        index.add(_successor(last_key), pending)
    metaindex_handle = _write_block(out, _BlockBuilder(restart_interval).finish())
    index_handle = _write_block(out, index.finish())
    handles = metaindex_handle + index_handle
    out += handles + bytes(_HANDLES_SIZE - len(handles)) + struct.pack("<Q", MAGIC)
    return bytes(out)


def _separator(start, limit):
    """A short key k with start <= k < limit (LevelDB's FindShortestSeparator)."""
    common = 0
    while common < min(len(start), len(limit)) and start[common] == limit[common]:
        common += 1
    if common < min(len(start), len(limit)):
        byte = start[common]
        if byte < 0xFF and byte + 1 < limit[common]:
            return start[:common] + bytes([byte + 1])
    return start


def _successor(key):
    """A short key >= `key` (LevelDB's FindShortSuccessor)."""
    for i, byte in enumerate(key):
        if byte != 0xFF:
            return key[:i] + bytes([byte + 1])
    return key


class _BlockBuilder:
    """Entries of one block with prefix-compressed keys and restart points."""

    def __init__(self, restart_interval):
        self._interval = restart_interval
        self._buffer = bytearray()
        self._restarts = [0]
        self._count = 0            # entries since the last restart
        self._last_key = b""

    def add(self, key, value):
        shared = 0
        if self._count < self._interval:
            limit = min(len(key), len(self._last_key))
            while shared < limit and key[shared] == self._last_key[shared]:
                shared += 1
        else:
            self._restarts.append(len(self._buffer))
            self._count = 0
        self._buffer += (varint(shared) + varint(len(key) - shared) + varint(len(value))
                         + key[shared:] + value)
        self._last_key = key
        self._count += 1

    def empty(self):
        return not self._buffer

    def size(self):
        return len(self._buffer) + 4 * len(self._restarts) + 4

    def finish(self):
        restarts = struct.pack(f"<{len(self._restarts)}I", *self._restarts)
        return bytes(self._buffer) + restarts + struct.pack("<I", len(self._restarts))


def _write_block(out, contents):
    """Appends a block and its trailer to `out`; returns its encoded handle."""
    handle = varint(len(out)) + varint(len(contents))
    typed = contents + bytes([_NO_COMPRESSION])
    out += typed + struct.pack("<I", mask(crc32c(typed)))
    return handle


def varint(value):
    """`value` as a little-endian base-128 varint (LevelDB's, protobuf's)."""
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


# ------------------------------------------------------------------------------- reading

def read_table(data, name="table"):
    """The (key, value) pairs of the table `data` in key order; DataLossError (naming
    `name`) when it is truncated or corrupted."""
    data = memoryview(data)
    if len(data) < FOOTER_SIZE:
        raise DataLossError(f"{name}: file is too short to be an sstable")
    footer = data[len(data) - FOOTER_SIZE:]
    if struct.unpack("<Q", footer[_HANDLES_SIZE:])[0] != MAGIC:
        raise DataLossError(f"{name}: not an sstable (bad magic number)")
    reader = Cursor(footer, name)
    reader.handle()                      # the metaindex block: no filters to read
    index_offset, index_size = reader.handle()
    items = []
    for _, handle in _block_entries(_block(data, index_offset, index_size, name), name):
        cursor = Cursor(handle, name)
        items.extend(_block_entries(_block(data, *cursor.handle(), name), name))
    return items


def _block(data, offset, size, name):
    """A block's contents, its trailer checked."""
    end = offset + size
    if end + 5 > len(data):
        raise DataLossError(f"{name}: truncated block read")
    typed = data[offset:end + 1]
    stored = struct.unpack("<I", data[end + 1:end + 5])[0]
    if crc32c(typed) != unmask(stored):
        raise DataLossError(f"{name}: block checksum mismatch")
    if typed[-1] != _NO_COMPRESSION:
        raise DataLossError(f"{name}: bad block type {typed[-1]} (only uncompressed blocks "
                            "are supported)")
    return typed[:-1]


def _block_entries(block, name):
    """The (key, value) pairs of one block's contents."""
    if len(block) < 4:
        raise DataLossError(f"{name}: bad block contents")
    num_restarts = struct.unpack("<I", block[-4:])[0]
    limit = len(block) - 4 * (num_restarts + 1)
    if limit < 0:
        raise DataLossError(f"{name}: bad block contents")
    cursor = Cursor(block[:limit], name)
    key = b""
    entries = []
    while not cursor.done():
        shared, unshared, value_length = cursor.varint(), cursor.varint(), cursor.varint()
        if shared > len(key):
            raise DataLossError(f"{name}: bad entry in block")
        key = key[:shared] + cursor.take(unshared)
        entries.append((key, cursor.take(value_length)))
    return entries


class Cursor:
    """Reads varints and byte runs from a buffer, DataLossError past its end."""

    def __init__(self, data, name):
        self._data = bytes(data)
        self._pos = 0
        self._name = name

    def done(self):
        return self._pos >= len(self._data)

    @property
    def position(self):
        return self._pos

    def varint(self):
        value = shift = 0
        while True:
            if self._pos >= len(self._data) or shift > 63:
                raise DataLossError(f"{self._name}: bad varint")
            byte = self._data[self._pos]
            self._pos += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                return value

    def handle(self):
        return self.varint(), self.varint()

    def take(self, count):
        if self._pos + count > len(self._data):
            raise DataLossError(f"{self._name}: bad entry in block")
        out = self._data[self._pos:self._pos + count]
        self._pos += count
        return out
