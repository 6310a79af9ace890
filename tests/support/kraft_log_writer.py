"""Writes KRaft metadata logs and snapshots for tests, by hand.

Independent of what it tests: record values are built here with struct and this module's own
unsigned varints, compact strings and arrays and tagged-field sections, straight from the field
tables of kafka-formats.md §6 (never with kafka-python or kadmin). Record batches are written by
kio's record-batch writer (`kio.records.writers.write_new_batch`, CRC-32C from the `crc32c`
package); gzip batches, which kio does not compress, are framed here with the same two libraries.

Flexible-version rules followed: compact strings and arrays carry length+1 (0 = null), every struct
(array elements included) ends with a tagged-field section, tagged fields are written only when they
differ from their default, in ascending tag order.
"""

from __future__ import annotations

import base64
import datetime
import gzip
import io
import struct
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path

import crc32c
from kio.records.schema import NewRecordBatch, Record
from kio.records.writers import write_new_batch, write_record
from kio.static.primitive import i8, i16, i32, i64

# --------------------------------------------------------------------------------------------
# Primitives


def uvarint(n: int) -> bytes:
    assert n >= 0
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def int8(v: int) -> bytes:
    return struct.pack(">b", v)


def int16(v: int) -> bytes:
    return struct.pack(">h", v)


def uint16(v: int) -> bytes:
    return struct.pack(">H", v)


def int32(v: int) -> bytes:
    return struct.pack(">i", v)


def int64(v: int) -> bytes:
    return struct.pack(">q", v)


def boolean(v: bool) -> bytes:
    return b"\x01" if v else b"\x00"


def uuid_bytes(v: uuid.UUID) -> bytes:
    return v.bytes


def compact_string(s: str | None) -> bytes:
    if s is None:
        return uvarint(0)
    raw = s.encode()
    return uvarint(len(raw) + 1) + raw


def compact_array(items: Sequence[bytes] | None) -> bytes:
    if items is None:
        return uvarint(0)
    return uvarint(len(items) + 1) + b"".join(items)


def int32_array(values: Sequence[int] | None) -> bytes:
    return compact_array(None if values is None else [int32(v) for v in values])


def uuid_array(values: Sequence[uuid.UUID] | None) -> bytes:
    return compact_array(None if values is None else [uuid_bytes(v) for v in values])


def tagged(fields: dict[int, bytes] | None = None) -> bytes:
    """A tagged-field section: count, then (tag, size, data) in ascending tag order."""
    fields = fields or {}
    out = [uvarint(len(fields))]
    for tag in sorted(fields):
        out += [uvarint(tag), uvarint(len(fields[tag])), fields[tag]]
    return b"".join(out)


def frame(api_key: int, version: int, body: bytes, frame_version: int = 1) -> bytes:
    """A metadata record value: uvarint frameVersion, uvarint apiKey, uvarint version, body."""
    return uvarint(frame_version) + uvarint(api_key) + uvarint(version) + body


def kafka_uuid_text(v: uuid.UUID) -> str:
    """Kafka's Uuid.toString(), for expectations."""
    return base64.urlsafe_b64encode(v.bytes).rstrip(b"=").decode()


# --------------------------------------------------------------------------------------------
# Metadata records (kafka-formats.md §6 table). Each returns the framed record value.

REGISTER_BROKER, UNREGISTER_BROKER, TOPIC, PARTITION, CONFIG, PARTITION_CHANGE = 0, 1, 2, 3, 4, 5
FENCE_BROKER, UNFENCE_BROKER, REMOVE_TOPIC, FEATURE_LEVEL, BROKER_REGISTRATION_CHANGE, NO_OP = 7, 8, 9, 12, 17, 20
CLEAR_ELR = 28


def register_broker(version: int, broker_id: int, incarnation_id: uuid.UUID, broker_epoch: int,
                    endpoints: Sequence[tuple[str, str, int, int]], features: Sequence[tuple[str, int, int]],
                    rack: str | None, fenced: bool = True, in_controlled_shutdown: bool = False,
                    is_migrating_zk_broker: bool = False, log_dirs: Sequence[uuid.UUID] = ()) -> bytes:
    body = int32(broker_id)
    if version >= 2:
        body += boolean(is_migrating_zk_broker)
    body += uuid_bytes(incarnation_id) + int64(broker_epoch)
    body += compact_array([compact_string(n) + compact_string(h) + uint16(p) + int16(sp) + tagged()
                           for n, h, p, sp in endpoints])
    body += compact_array([compact_string(n) + int16(lo) + int16(hi) + tagged() for n, lo, hi in features])
    body += compact_string(rack) + boolean(fenced)
    if version >= 1:
        body += boolean(in_controlled_shutdown)
    tags = {}
    if version >= 3 and log_dirs:  # LogDirs: tag 0, default empty
        tags[0] = uuid_array(log_dirs)
    return frame(REGISTER_BROKER, version, body + tagged(tags))


def unregister_broker(broker_id: int, broker_epoch: int) -> bytes:
    return frame(UNREGISTER_BROKER, 0, int32(broker_id) + int64(broker_epoch) + tagged())


def topic(name: str, topic_id: uuid.UUID) -> bytes:
    return frame(TOPIC, 0, compact_string(name) + uuid_bytes(topic_id) + tagged())


def partition(version: int, partition_id: int, topic_id: uuid.UUID, replicas: Sequence[int], isr: Sequence[int],
              removing: Sequence[int], adding: Sequence[int], leader: int, leader_epoch: int, partition_epoch: int,
              leader_recovery_state: int = 0, directories: Sequence[uuid.UUID] = (),
              elr: Sequence[int] | None = None, last_known_elr: Sequence[int] | None = None) -> bytes:
    body = (int32(partition_id) + uuid_bytes(topic_id) + int32_array(replicas) + int32_array(isr)
            + int32_array(removing) + int32_array(adding) + int32(leader)
            + int32(leader_epoch) + int32(partition_epoch))
    if version >= 1:
        body += uuid_array(directories)
    tags = {}
    if leader_recovery_state != 0:  # tag 0, default 0
        tags[0] = int8(leader_recovery_state)
    if version >= 2 and elr is not None:  # tag 1, default null
        tags[1] = int32_array(elr)
    if version >= 2 and last_known_elr is not None:  # tag 2, default null
        tags[2] = int32_array(last_known_elr)
    return frame(PARTITION, version, body + tagged(tags))


def partition_change(version: int, partition_id: int, topic_id: uuid.UUID, isr: Sequence[int] | None = None,
                     leader: int = -2, replicas: Sequence[int] | None = None, removing: Sequence[int] | None = None,
                     adding: Sequence[int] | None = None, leader_recovery_state: int = -1,
                     elr: Sequence[int] | None = None, last_known_elr: Sequence[int] | None = None,
                     directories: Sequence[uuid.UUID] | None = None) -> bytes:
    tags = {}
    if isr is not None:
        tags[0] = int32_array(isr)
    if leader != -2:
        tags[1] = int32(leader)
    if replicas is not None:
        tags[2] = int32_array(replicas)
    if removing is not None:
        tags[3] = int32_array(removing)
    if adding is not None:
        tags[4] = int32_array(adding)
    if leader_recovery_state != -1:
        tags[5] = int8(leader_recovery_state)
    if version >= 2 and elr is not None:
        tags[6] = int32_array(elr)
    if version >= 2 and last_known_elr is not None:
        tags[7] = int32_array(last_known_elr)
    if version >= 1 and directories is not None:
        tags[8] = uuid_array(directories)
    return frame(PARTITION_CHANGE, version, int32(partition_id) + uuid_bytes(topic_id) + tagged(tags))


def fence_broker(broker_id: int, epoch: int) -> bytes:
    return frame(FENCE_BROKER, 0, int32(broker_id) + int64(epoch) + tagged())


def unfence_broker(broker_id: int, epoch: int) -> bytes:
    return frame(UNFENCE_BROKER, 0, int32(broker_id) + int64(epoch) + tagged())


def remove_topic(topic_id: uuid.UUID) -> bytes:
    return frame(REMOVE_TOPIC, 0, uuid_bytes(topic_id) + tagged())


def config(resource_type: int, resource_name: str, name: str, value: str | None) -> bytes:
    body = int8(resource_type) + compact_string(resource_name) + compact_string(name) + compact_string(value)
    return frame(CONFIG, 0, body + tagged())


def feature_level(name: str, level: int) -> bytes:
    return frame(FEATURE_LEVEL, 0, compact_string(name) + int16(level) + tagged())


def broker_registration_change(version: int, broker_id: int, broker_epoch: int, fenced: int = 0,
                               in_controlled_shutdown: int = 0,
                               log_dirs: Sequence[uuid.UUID] = ()) -> bytes:
    tags = {}
    if fenced != 0:  # tag 0: -1 unfenced, 0 no change, 1 fenced
        tags[0] = int8(fenced)
    if version >= 1 and in_controlled_shutdown != 0:  # tag 1
        tags[1] = int8(in_controlled_shutdown)
    if version >= 2 and log_dirs:  # tag 2
        tags[2] = uuid_array(log_dirs)
    return frame(BROKER_REGISTRATION_CHANGE, version, int32(broker_id) + int64(broker_epoch) + tagged(tags))


def clear_elr(topic_name: str) -> bytes:
    """ClearElrRecord v0 (Kafka 4.x, KIP-966): TopicName, a non-nullable compact string ("" = every topic)."""
    return frame(CLEAR_ELR, 0, compact_string(topic_name) + tagged())


def no_op() -> bytes:
    return frame(NO_OP, 0, tagged())


# --------------------------------------------------------------------------------------------
# Control record values (raw messages: no frame, no version prefix other than their Version field)

LEADER_CHANGE, SNAPSHOT_HEADER, SNAPSHOT_FOOTER, KRAFT_VERSION, KRAFT_VOTERS = 2, 3, 4, 5, 6


def leader_change(leader_id: int, voters: Sequence[int], granting: Sequence[int], version: int = 0,
                  directory_ids: dict[int, uuid.UUID] | None = None) -> bytes:
    def voter(vid: int) -> bytes:
        out = int32(vid)
        if version >= 1:
            out += uuid_bytes((directory_ids or {}).get(vid, uuid.UUID(int=0)))
        return out + tagged()

    return (int16(version) + int32(leader_id) + compact_array([voter(v) for v in voters])
            + compact_array([voter(v) for v in granting]) + tagged())


def snapshot_header(last_contained_log_timestamp: int) -> bytes:
    return int16(0) + int64(last_contained_log_timestamp) + tagged()


def snapshot_footer() -> bytes:
    return int16(0) + tagged()


def kraft_version(level: int) -> bytes:
    return int16(0) + int16(level) + tagged()


def voters_record(voters: Sequence[tuple[int, uuid.UUID, Sequence[tuple[str, str, int]], tuple[int, int]]]) -> bytes:
    items = []
    for vid, directory_id, endpoints, (lo, hi) in voters:
        eps = compact_array([compact_string(n) + compact_string(h) + uint16(p) + tagged() for n, h, p in endpoints])
        items.append(int32(vid) + uuid_bytes(directory_id) + eps + int16(lo) + int16(hi) + tagged() + tagged())
    return int16(0) + compact_array(items) + tagged()


def control_key(control_type: int) -> bytes:
    return int16(0) + int16(control_type)


# --------------------------------------------------------------------------------------------
# Batches

EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def _timestamp(ms: int) -> datetime.datetime:
    ts = EPOCH + datetime.timedelta(milliseconds=ms)
    # kio turns it back into milliseconds through a float: keep to values that survive that.
    assert int(ts.timestamp() * 1000) == ms, f"timestamp {ms} does not round-trip through kio; use quarter seconds"
    return ts


def batch(base_offset: int, leader_epoch: int, timestamp_ms: int, values: Sequence[bytes],
          control_type: int | None = None, step_ms: int = 250,
          keys: Sequence[bytes | None] | None = None) -> bytes:
    """One record batch v2 by kio: record i at offset base_offset+i, time timestamp_ms+i*step_ms.

    A control batch (control_type given) sets attribute bit 5 and gives every record the key
    {version 0, control_type}; otherwise keys are null (as raft writes them) unless `keys` says.
    """
    if keys is None:
        keys = [control_key(control_type) if control_type is not None else None] * len(values)
    records = tuple(
        Record(attributes=i8(0), timestamp=_timestamp(timestamp_ms + i * step_ms), offset=i64(base_offset + i),
               key=keys[i], value=v, headers=())
        for i, v in enumerate(values))
    out = io.BytesIO()
    write_new_batch(out, NewRecordBatch(producer_id=i64(-1), producer_epoch=i16(-1),
                                        partition_leader_epoch=i32(leader_epoch), base_sequence=i32(-1),
                                        records=records, attributes=i16(0x20 if control_type is not None else 0)))
    return out.getvalue()


def compressed_batch(base_offset: int, leader_epoch: int, timestamp_ms: int, values: Sequence[bytes],
                     codec: int = 1) -> bytes:
    """A batch whose records section is compressed: gzip (codec 1) really; any other codec id is
    written with the records left as they are (the reader must refuse it, not read it)."""
    records = io.BytesIO()
    for i, v in enumerate(values):
        write_record(records, Record(attributes=i8(0), timestamp=_timestamp(timestamp_ms), offset=i64(base_offset + i),
                                     key=None, value=v, headers=()), i64(timestamp_ms), i64(base_offset))
    payload = gzip.compress(records.getvalue()) if codec == 1 else records.getvalue()
    post_crc = (int16(codec) + int32(len(values) - 1) + int64(timestamp_ms) + int64(timestamp_ms)
                + int64(-1) + int16(-1) + int32(-1) + int32(len(values)) + payload)
    return (int64(base_offset) + int32(len(post_crc) + 9) + int32(leader_epoch) + int8(2)
            + struct.pack(">I", crc32c.crc32c(post_crc)) + post_crc)


def leader_change_batch(timestamp_ms: int) -> bytes:
    """The control batch a log opens with: offset 0, controller 3000 elected by itself of voters 3000 and 3001."""
    return batch(0, 1, timestamp_ms, [leader_change(3000, [3000, 3001], [3000])], control_type=LEADER_CHANGE)


def log_batches(values: Sequence[bytes], per_batch: int, timestamp_ms: int) -> tuple[list[bytes], int]:
    """A log's batches: `leader_change_batch`, then `values` in batches of `per_batch` from offset 1, each batch
    stamped 1 s per offset after `timestamp_ms`; and the next free offset."""
    batches = [leader_change_batch(timestamp_ms)]
    off = 1
    for i in range(0, len(values), per_batch):
        chunk = values[i:i + per_batch]
        batches.append(batch(off, 1, timestamp_ms + 1000 * off, chunk))
        off += len(chunk)
    return batches, off


def write_file(path: Path, batches: Iterable[bytes]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(batches))
    return path
