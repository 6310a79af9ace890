"""KRaft metadata log framing (KIP-631, KIP-630 snapshots): segments, snapshots, record batches, records.

Pure stdlib, like the rest of `kadmin.formats`. This module knows the *framing* only:

- record batches v2 (`DefaultRecordBatch`): the 61-byte header, CRC-32C over Attributes..end,
  compression (none and gzip; snappy, lz4 and zstd are reported as damage), control batches;
- records (`DefaultRecord`): zigzag varints, null key, value, headers;
- control records: the key `{version i16, type i16}` (`ControlRecordType`);
- metadata record values: the frame `uvarint frameVersion (=1), uvarint apiKey, uvarint version,
  body` (`AbstractApiMessageSerde`).

The *bodies* (a RegisterBrokerRecord, a LeaderChangeMessage, ...) are decoded by a pluggable
`ValueDecoder` that the cluster layer supplies from Kafka's JSON schemas through kafka-python
(`kadmin.cluster.metadata_records.decode_value`, alias `DECODER`). A bare callable
`(api_key, version, body) -> DecodedValue | None` is accepted too (control records then come out
"unknown"), and `decoder=None` reads the framing alone.
CRC-32C is a table-driven implementation here (slicing-by-8, about 15 MB/s); a faster callable
(`kadmin.cluster.metadata_records.CRC32C`, the C `crc32c` package when installed) can be injected.

Damage (a bad CRC, a truncated or malformed batch, an unsupported compression, a record whose value
does not decode) goes to `on_damage` as a `Damage(offset, reason, position)`, or, when no callback
is given, raises `KraftLogError`. A bad CRC, a truncated batch, an invalid length or magic stop the
iteration (nothing after them can be framed); an undecodable batch is skipped and iteration goes on;
an undecodable record value is yielded as type "unknown" (with an "error" field) after the report.
A record of an api key, control type or version the decoder does not know is *not* damage: it is
yielded with type_name "unknown" and `fields == {"size": <body bytes>}`.

Buffers may be bytes, bytearray, memoryview or mmap; `iter_segment` and `iter_checkpoint` mmap
their file (the one place this module touches a file). Entry points: `iter_batches`,
`iter_records`, `iter_segment`, `iter_checkpoint` (and, for a reader of its own over the batches,
`batch_tuples` and `decode_one`); file names: `segment_base_offset`,
`snapshot_id`, `segment_file_name`, `snapshot_file_name`.
"""

from __future__ import annotations

import contextlib
import errno
import gzip
import mmap
import os
import re
import stat
import struct
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, cast

# --------------------------------------------------------------------------------------------
# Constants (DefaultRecordBatch, ControlRecordType, AbstractApiMessageSerde)

LOG_OVERHEAD = 12  # BaseOffset i64 + Length i32: the bytes Length does not count
BATCH_HEADER_SIZE = 61
CRC_START = 21  # Attributes: the first byte the CRC covers
MAGIC_V2 = 2
FRAME_VERSION = 1

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_BIT = 0x08  # set: LOG_APPEND_TIME (records take the batch's MaxTimestamp)
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20
DELETE_HORIZON_BIT = 0x40

COMPRESSION_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}

CONTROL_TYPES = {
    0: "ABORT",
    1: "COMMIT",
    2: "LEADER_CHANGE",
    3: "SNAPSHOT_HEADER",
    4: "SNAPSHOT_FOOTER",
    5: "KRAFT_VERSION",
    6: "KRAFT_VOTERS",
}
LEADER_CHANGE, SNAPSHOT_HEADER, SNAPSHOT_FOOTER = 2, 3, 4

UNKNOWN = "unknown"

Buffer = Any  # bytes | bytearray | memoryview | mmap.mmap (anything with the buffer protocol)

_BATCH_HEADER = struct.Struct(">qiibIhiqqqhii")
assert _BATCH_HEADER.size == BATCH_HEADER_SIZE
_CONTROL_KEY = struct.Struct(">hh")

# --------------------------------------------------------------------------------------------
# Models


@dataclass(frozen=True)
class Damage:
    """Something in the file that cannot be read as Kafka wrote it.

    `offset` is the base offset of the damaged batch (or the record's offset for a record value;
    when not even a base offset is readable, the offset expected next, or -1 at the start).
    `position` is the byte position in the buffer or file.
    """

    offset: int
    reason: str
    position: int = -1


class KraftLogError(ValueError):
    """Damage met with no `on_damage` callback to report it to."""

    def __init__(self, damage: Damage) -> None:
        super().__init__(f"offset {damage.offset} (byte {damage.position}): {damage.reason}")
        self.damage = damage


OnDamage = Callable[[Damage], None]
Crc32c = Callable[[bytes], int]


@dataclass(frozen=True)
class Batch:
    """One record batch v2, CRC verified. `payload` is the records section as stored (compressed
    when `compression` is not 0)."""

    position: int
    base_offset: int
    length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int
    payload: bytes

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def compression_name(self) -> str:
        return COMPRESSION_NAMES.get(self.compression, f"codec {self.compression}")

    @property
    def control(self) -> bool:
        return bool(self.attributes & CONTROL_BIT)

    @property
    def transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_BIT)

    @property
    def log_append_time(self) -> bool:
        return bool(self.attributes & TIMESTAMP_TYPE_BIT)

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def size(self) -> int:
        return LOG_OVERHEAD + self.length


@dataclass(frozen=True)
class LogRecord:
    """One record of a batch (`DefaultRecord`), offsets and timestamps made absolute."""

    offset: int
    timestamp_ms: int
    attributes: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]


@dataclass(frozen=True)
class DecodedValue:
    """What a `ValueDecoder` makes of a record value: the schema name, the version it was decoded
    at, and the fields (snake_case names)."""

    type_name: str
    version: int
    fields: Mapping[str, Any]


class ValueDecoder(Protocol):
    """Decodes record values; supplied by the cluster layer (`kadmin.cluster.metadata_records`).

    Both methods return None for an api key, control type or version they do not know, and raise
    ValueError for a body that does not decode (truncated, trailing garbage, ...).
    """

    def decode_record(self, api_key: int, version: int, body: bytes) -> DecodedValue | None:
        """A metadata record body (the frame header already read)."""
        ...

    def decode_control(self, control_type: int, body: bytes) -> DecodedValue | None:
        """A control record value (a raw message: no frame, no version prefix)."""
        ...


DecodeValue = Callable[[int, int, bytes], DecodedValue | None]
DecodeControl = Callable[[int, bytes], DecodedValue | None]
Decoder = ValueDecoder | DecodeValue | None


@dataclass(frozen=True)
class MetadataRecord:
    """A record of the metadata log or a snapshot, its value decoded.

    `leader_epoch` is the batch's PartitionLeaderEpoch (the raft epoch). Metadata records carry
    `api_key` and `version` from their frame; control records have `control=True`,
    `api_key=None`, `control_type` (`CONTROL_TYPES`) and the version their value was decoded at.
    `type_name` is the schema name ("RegisterBrokerRecord", "LeaderChangeMessage") or "unknown".
    """

    offset: int
    timestamp_ms: int
    leader_epoch: int
    control: bool
    api_key: int | None
    version: int | None
    type_name: str
    fields: Mapping[str, Any]
    control_type: int | None = None


# --------------------------------------------------------------------------------------------
# CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), slicing-by-8


def _crc_tables() -> tuple[tuple[int, ...], ...]:
    first = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        first.append(c)
    tables = [first]
    for _ in range(7):
        prev = tables[-1]
        tables.append([(prev[i] >> 8) ^ first[prev[i] & 0xFF] for i in range(256)])
    return tuple(tuple(t) for t in tables)


_CRC_TABLES = _crc_tables()
_WORDS = struct.Struct("<II")


def crc32c(data: bytes | bytearray | memoryview, crc: int = 0) -> int:
    """CRC-32C of `data` (continuing from `crc`), as Kafka's `Crc32C.compute`."""
    t0, t1, t2, t3, t4, t5, t6, t7 = _CRC_TABLES
    crc ^= 0xFFFFFFFF
    view = memoryview(data).cast("B")
    whole = len(view) - len(view) % 8
    for lo, hi in _WORDS.iter_unpack(view[:whole]):
        lo ^= crc
        crc = (t7[lo & 0xFF] ^ t6[(lo >> 8) & 0xFF] ^ t5[(lo >> 16) & 0xFF] ^ t4[lo >> 24]
               ^ t3[hi & 0xFF] ^ t2[(hi >> 8) & 0xFF] ^ t1[(hi >> 16) & 0xFF] ^ t0[hi >> 24])
    for b in view[whole:]:
        crc = t0[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


# --------------------------------------------------------------------------------------------
# Varints (ByteUtils)


def read_uvarint(buf: Buffer, pos: int, max_bytes: int = 5) -> tuple[int, int]:
    """An unsigned varint at `pos`: (value, position after it)."""
    if pos < len(buf):  # most varints of a metadata log are one byte
        b = buf[pos]
        if b < 0x80:
            return b, pos + 1
    value = shift = 0
    for i in range(max_bytes):
        if pos + i >= len(buf):
            raise ValueError("truncated varint")
        b = buf[pos + i]
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos + i + 1
        shift += 7
    raise ValueError(f"varint longer than {max_bytes} bytes")


def read_varint(buf: Buffer, pos: int) -> tuple[int, int]:
    """A zigzag-encoded signed 32-bit varint."""
    raw, pos = read_uvarint(buf, pos, 5)
    return (raw >> 1) ^ -(raw & 1), pos


def read_varlong(buf: Buffer, pos: int) -> tuple[int, int]:
    """A zigzag-encoded signed 64-bit varint."""
    raw, pos = read_uvarint(buf, pos, 10)
    return (raw >> 1) ^ -(raw & 1), pos


def parse_frame(value: bytes) -> tuple[int, int, int, bytes]:
    """A metadata record value: (frameVersion, apiKey, version, body). Raises ValueError."""
    frame_version, pos = read_uvarint(value, 0)
    api_key, pos = read_uvarint(value, pos)
    version, pos = read_uvarint(value, pos)
    return frame_version, api_key, version, bytes(value[pos:])


# --------------------------------------------------------------------------------------------
# Batches


def _report(on_damage: OnDamage | None, damage: Damage) -> None:
    if on_damage is None:
        raise KraftLogError(damage)
    on_damage(damage)


def _source(buf: Buffer) -> Any:
    # bytes and mmap slice to bytes; anything else goes through a byte view.
    if isinstance(buf, (bytes, mmap.mmap)):
        return buf
    view = memoryview(buf)
    return view if view.format == "B" and view.ndim == 1 else view.cast("B")


def iter_batches(buf: Buffer, start: int = 0, on_damage: OnDamage | None = None,
                 crc: Crc32c | None = None) -> Iterator[Batch]:
    """The record batches in `buf` from byte `start`, each CRC-verified.

    A truncated batch, an invalid Length, a magic other than 2 or a CRC mismatch is reported and
    ends the iteration (the batches before it were yielded). So is a zero-filled tail (a
    preallocated segment, or a write the filesystem never completed).
    """
    compute = crc or crc32c
    data = _source(buf)
    end = len(data)
    pos = start
    next_offset = -1
    while pos < end:
        remaining = end - pos
        if remaining < LOG_OVERHEAD:
            offset = struct.unpack_from(">q", data, pos)[0] if remaining >= 8 else next_offset
            _report(on_damage, Damage(offset, f"truncated batch: {remaining} byte(s) left, "
                                              f"a batch header needs {BATCH_HEADER_SIZE}", pos))
            return
        base_offset, length = struct.unpack_from(">qi", data, pos)
        if base_offset == 0 and length == 0 and not any(data[pos:end]):
            _report(on_damage, Damage(next_offset, f"zero-filled tail of {remaining} bytes", pos))
            return
        if length < BATCH_HEADER_SIZE - LOG_OVERHEAD:
            _report(on_damage, Damage(base_offset, f"invalid batch Length {length} "
                                                   f"(at least {BATCH_HEADER_SIZE - LOG_OVERHEAD})", pos))
            return
        if remaining < LOG_OVERHEAD + length:
            _report(on_damage, Damage(base_offset, f"truncated batch: {LOG_OVERHEAD + length} bytes "
                                                   f"by its Length, {remaining} left", pos))
            return
        (_, _, leader_epoch, magic, stored_crc, attributes, last_offset_delta, base_timestamp, max_timestamp,
         producer_id, producer_epoch, base_sequence, records_count) = _BATCH_HEADER.unpack_from(data, pos)
        if magic != MAGIC_V2:
            _report(on_damage, Damage(base_offset, f"unsupported magic {magic} (KRaft writes 2)", pos))
            return
        batch_end = pos + LOG_OVERHEAD + length
        computed = compute(data[pos + CRC_START:batch_end]) & 0xFFFFFFFF
        if computed != stored_crc:
            _report(on_damage, Damage(base_offset, f"CRC-32C mismatch: stored 0x{stored_crc:08x}, "
                                                   f"computed 0x{computed:08x}", pos))
            return
        yield Batch(position=pos, base_offset=base_offset, length=length, partition_leader_epoch=leader_epoch,
                    magic=magic, crc=stored_crc, attributes=attributes, last_offset_delta=last_offset_delta,
                    base_timestamp=base_timestamp, max_timestamp=max_timestamp, producer_id=producer_id,
                    producer_epoch=producer_epoch, base_sequence=base_sequence, records_count=records_count,
                    payload=bytes(data[pos + BATCH_HEADER_SIZE:batch_end]))
        next_offset = base_offset + last_offset_delta + 1
        pos = batch_end


class UnsupportedCompression(ValueError):
    pass


def _records_section(batch: Batch) -> bytes:
    if batch.compression == 0:
        return batch.payload
    if batch.compression == 1:
        try:
            return gzip.decompress(batch.payload)
        except (OSError, EOFError, zlib.error) as e:
            raise ValueError(f"gzip: {e}") from e
    raise UnsupportedCompression(f"unsupported compression {batch.compression_name}")


def _read_bytes(buf: bytes, pos: int, what: str) -> tuple[bytes | None, int]:
    length, pos = read_varint(buf, pos)
    if length < 0:
        return None, pos
    if pos + length > len(buf):
        raise ValueError(f"{what} of {length} bytes runs past the record")
    return buf[pos:pos + length], pos + length


def batch_records(batch: Batch) -> list[LogRecord]:
    """The records of a batch (decompressed). Raises ValueError (`UnsupportedCompression` for
    snappy, lz4, zstd) when they cannot be read."""
    return [LogRecord(*r) for r in batch_tuples(batch)]


RecordTuple = tuple[int, int, int, bytes | None, bytes | None, tuple[tuple[str, bytes | None], ...]]


def batch_tuples(batch: Batch) -> list[RecordTuple]:
    """`batch_records` as plain tuples (LogRecord's fields in order): a reader that makes events of most
    records straight from their values (`kadmin.pipeline.arrow.kraft_log_batches`) builds no object
    per record. The whole batch is read before any record is returned, so a damaged batch yields none.

    The record KRaft writes is read by `_plain_record`; any other goes through `_record` (the varint readers
    and their errors)."""
    data = _records_section(batch)
    n = len(data)
    records: list[RecordTuple] = []
    pos = 0
    base_offset, base_ts = batch.base_offset, batch.base_timestamp
    append_time = batch.max_timestamp if batch.log_append_time else None
    for _ in range(batch.records_count):
        if pos >= n:
            raise ValueError(f"RecordsCount is {batch.records_count} but the batch holds {len(records)}")
        raw = data[pos]
        if raw < 0x80:
            pos += 1
        elif pos + 1 < n and data[pos + 1] < 0x80:  # a record of 64 bytes to 8 KiB
            raw, pos = (raw & 0x7F) | (data[pos + 1] << 7), pos + 2
        else:
            raw, pos = read_uvarint(data, pos, 5)
        size = (raw >> 1) ^ -(raw & 1)
        end = pos + size
        if size < 1 or end > n:
            raise ValueError(f"record {len(records)}: invalid length {size}")
        body = data[pos:end]
        plain = _plain_record(body, size)
        record = (body[0], plain[0], plain[1], None, plain[2], ()) if plain is not None else _record(body, len(records))
        timestamp = base_ts + record[1] if append_time is None else append_time
        records.append((base_offset + record[2], timestamp, record[0], record[3], record[4], record[5]))
        pos = end
    if pos != n:
        raise ValueError(f"{n - pos} byte(s) after the last of {batch.records_count} records")
    return records


def _plain_record(body: bytes, size: int) -> tuple[int, int, bytes] | None:
    """(timestamp delta, offset delta, value) of a record as KRaft writes it, read without the varint readers:
    a one-byte timestamp delta, an offset delta of one or two bytes, a null key, a value whose length takes
    one or two bytes, no header, nothing after. None for anything else (`_record` reads it)."""
    try:
        t = body[1]
        o = body[2]
        if t >= 0x80:
            return None
        if o < 0x80:
            p = 3
        else:
            o2 = body[3]
            if o2 >= 0x80:
                return None
            o, p = (o & 0x7F) | (o2 << 7), 4
        if body[p] != 1:  # the key's length, zigzag -1: null
            return None
        v = body[p + 1]
        if v < 0x80:
            p += 2
        else:
            v2 = body[p + 2]
            if v2 >= 0x80:
                return None
            v, p = (v & 0x7F) | (v2 << 7), p + 3
        n = (v >> 1) ^ -(v & 1)
        if n < 0 or p + n + 1 != size or body[p + n] != 0:  # the value, then a header count of 0, the end
            return None
    except IndexError:
        return None
    return (t >> 1) ^ -(t & 1), (o >> 1) ^ -(o & 1), body[p:p + n]


def _record(body: bytes, index: int) -> tuple[int, int, int, bytes | None, bytes | None,
                                              tuple[tuple[str, bytes | None], ...]]:
    """One record's fields after its length: attributes, timestamp delta, offset delta, key, value, headers."""
    attributes = body[0]
    timestamp_delta, p = read_varlong(body, 1)
    offset_delta, p = read_varint(body, p)
    key, p = _read_bytes(body, p, "key")
    value, p = _read_bytes(body, p, "value")
    header_count, p = read_varint(body, p)
    if header_count < 0:
        raise ValueError(f"record {index}: invalid header count {header_count}")
    headers = []
    for _ in range(header_count):
        hkey, p = _read_bytes(body, p, "header key")
        if hkey is None:
            raise ValueError(f"record {index}: null header key")
        hvalue, p = _read_bytes(body, p, "header value")
        headers.append((hkey.decode("utf-8", "replace"), hvalue))
    if p != len(body):
        raise ValueError(f"record {index}: {len(body) - p} byte(s) left over in the record")
    return attributes, timestamp_delta, offset_delta, key, value, tuple(headers)


# --------------------------------------------------------------------------------------------
# Records


def _unknown(size: int, error: str | None = None) -> dict[str, Any]:
    return {"size": size} if error is None else {"size": size, "error": error}


def _decode(batch: Batch, rec: LogRecord, decode_record: DecodeValue | None,
            decode_control: DecodeControl | None,
            on_damage: OnDamage | None) -> MetadataRecord:
    def make(api_key: int | None, version: int | None, type_name: str, fields: Mapping[str, Any],
             control_type: int | None = None) -> MetadataRecord:
        return MetadataRecord(rec.offset, rec.timestamp_ms, batch.partition_leader_epoch, batch.control,
                              api_key, version, type_name, fields, control_type)

    def damaged(reason: str, size: int, api_key: int | None = None, version: int | None = None,
                control_type: int | None = None) -> MetadataRecord:
        _report(on_damage, Damage(rec.offset, reason, batch.position))
        return make(api_key, version, UNKNOWN, _unknown(size, reason), control_type)

    if batch.control:
        if rec.key is None or len(rec.key) < _CONTROL_KEY.size:
            return damaged("control record without a {version, type} key", len(rec.value or b""))
        key_version, control_type = _CONTROL_KEY.unpack_from(rec.key)
        value = rec.value or b""
        if key_version < 0:
            return damaged(f"invalid control record key version {key_version}", len(value),
                           control_type=control_type)
        decoded = None
        if decode_control is not None and rec.value is not None:
            try:
                decoded = decode_control(control_type, value)
            except ValueError as e:
                name = CONTROL_TYPES.get(control_type, f"type {control_type}")
                return damaged(f"control record {name}: {e}", len(value), control_type=control_type)
        if decoded is None:
            return make(None, None, UNKNOWN, _unknown(len(value)), control_type)
        return make(None, decoded.version, decoded.type_name, decoded.fields, control_type)

    if rec.value is None:
        return damaged("metadata record without a value", 0)
    try:
        frame_version, api_key, version, body = parse_frame(rec.value)
    except ValueError as e:
        return damaged(f"record frame: {e}", len(rec.value))
    if frame_version != FRAME_VERSION:
        return damaged(f"unsupported frame version {frame_version}", len(body), api_key, version)
    decoded = None
    if decode_record is not None:
        try:
            decoded = decode_record(api_key, version, body)
        except ValueError as e:
            return damaged(f"apiKey {api_key} v{version}: {e}", len(body), api_key, version)
    if decoded is None:
        return make(api_key, version, UNKNOWN, _unknown(len(body)))
    return make(api_key, version, decoded.type_name, decoded.fields)


def _decoder_parts(decoder: Decoder) -> tuple[DecodeValue | None, DecodeControl | None]:
    if decoder is None:
        return None, None
    decode_record = getattr(decoder, "decode_record", None)
    if decode_record is None:  # a bare `decode_value` callable: no control records
        return cast(DecodeValue, decoder), None
    return decode_record, getattr(decoder, "decode_control", None)


def decode_one(batch: Batch, rec: LogRecord, decoder: Decoder, on_damage: OnDamage | None = None) -> MetadataRecord:
    """One record of `batch` decoded as `iter_records` decodes it (its damage reported the same way): for a
    reader that walks `batch_tuples` and decodes only some records itself."""
    decode_record, decode_control = _decoder_parts(decoder)
    return _decode(batch, rec, decode_record, decode_control, on_damage)


def iter_records(buf: Buffer, decoder: Decoder, start: int = 0, on_damage: OnDamage | None = None,
                 crc: Crc32c | None = None) -> Iterator[MetadataRecord]:
    """Every record of every batch in `buf`, values decoded by `decoder` (see the module doc)."""
    decode_record, decode_control = _decoder_parts(decoder)
    for batch in iter_batches(buf, start, on_damage, crc):
        try:
            records = batch_records(batch)
        except ValueError as e:
            _report(on_damage, Damage(batch.base_offset, f"batch of {batch.records_count} record(s) "
                                                         f"skipped: {e}", batch.position))
            continue
        for rec in records:
            yield _decode(batch, rec, decode_record, decode_control, on_damage)


def _iter_file(path: str | os.PathLike[str], decoder: Decoder, on_damage: OnDamage | None,
               crc: Crc32c | None) -> Iterator[MetadataRecord]:
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))  # a FIFO never blocks the open
    with open(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", os.fspath(path))
        if st.st_size == 0:
            return
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        yield from iter_records(mm, decoder, 0, on_damage, crc)
    finally:
        with contextlib.suppress(BufferError):  # a consumer still holds a view: the mmap goes with it
            mm.close()


def iter_segment(path: str | os.PathLike[str], decoder: Decoder, on_damage: OnDamage | None = None,
                 crc: Crc32c | None = None) -> Iterator[MetadataRecord]:
    """The records of a log segment (`__cluster_metadata-0/<20-digit offset>.log`, mmapped)."""
    yield from _iter_file(path, decoder, on_damage, crc)


def iter_checkpoint(path: str | os.PathLike[str], decoder: Decoder, on_damage: OnDamage | None = None,
                    crc: Crc32c | None = None) -> Iterator[MetadataRecord]:
    """The records of a snapshot (`<offset>-<epoch>.checkpoint`, also `bootstrap.checkpoint`).

    Also reported as damage: a snapshot that does not start with a SnapshotHeaderRecord control
    record or does not end with a SnapshotFooterRecord one (an incomplete snapshot).
    """
    first = last = None
    for record in _iter_file(path, decoder, on_damage, crc):
        if first is None:
            first = record
            if not (record.control and record.control_type == SNAPSHOT_HEADER):
                _report(on_damage, Damage(record.offset, "snapshot does not start with a SnapshotHeaderRecord"))
        last = record
        yield record
    if first is None:
        _report(on_damage, Damage(-1, "snapshot holds no records"))
    elif last is not None and not (last.control and last.control_type == SNAPSHOT_FOOTER):
        _report(on_damage, Damage(last.offset + 1, "snapshot does not end with a SnapshotFooterRecord"))


# --------------------------------------------------------------------------------------------
# File names (UnifiedLog, raft Snapshots)

_SEGMENT_NAME = re.compile(r"(\d{20})\.log")
_SNAPSHOT_NAME = re.compile(r"(\d{20})-(\d{10})\.checkpoint")


def segment_file_name(base_offset: int) -> str:
    return f"{base_offset:020d}.log"


def snapshot_file_name(end_offset: int, epoch: int) -> str:
    return f"{end_offset:020d}-{epoch:010d}.checkpoint"


def segment_base_offset(name: str) -> int | None:
    """`00000000000000000042.log` -> 42; None for any other name."""
    m = _SEGMENT_NAME.fullmatch(name)
    return int(m.group(1)) if m else None


def snapshot_id(name: str) -> tuple[int, int] | None:
    """`<end offset %020d>-<epoch %010d>.checkpoint` -> (end offset, epoch); None for any other
    name (`.checkpoint.part` and `.checkpoint.deleted` included)."""
    m = _SNAPSHOT_NAME.fullmatch(name)
    return (int(m.group(1)), int(m.group(2))) if m else None
