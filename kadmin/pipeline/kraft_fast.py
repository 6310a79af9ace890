"""A faster `ValueDecoder` for `history ingest`: the partition records of a KRaft metadata log by hand.

A real metadata log is mostly PartitionRecord and PartitionChangeRecord (a replica's directory
assignment, an ISR change, a leader move: one each); kafka-python's schema-driven codec
(`kadmin.cluster.metadata_records.DECODER`) spends ~40 µs on each. `FAST_DECODER` reads the common
shapes of these two records with `struct` and gives the very fields dict `DECODER` gives (same keys,
same order, same values: Uuids as Kafka's text, the zero Uuid as None). Anything else — another record
type, another version, a tag it does not expect, a null where it reads none, a body it does not end
exactly at — goes to `DECODER` whole, so damage reports and unknown tags stay what they were.
`tests/unit/test_kraft_fast.py` checks the two agree on every record of a metadata log a real cluster wrote
and on crafted edge cases.
"""

from __future__ import annotations

import base64
import functools
import struct
from collections.abc import Callable
from typing import Any

from kadmin.cluster.metadata_records import DECODER
from kadmin.formats.kraft_log import DecodedValue

PARTITION_RECORD = 3
PARTITION_CHANGE_RECORD = 5
_I32 = struct.Struct(">i")
_HEAD = struct.Struct(">i16s")  # PartitionId, TopicId
_TAIL = struct.Struct(">ii")  # LeaderEpoch, PartitionEpoch
_ZERO = bytes(16)
_INTS = [struct.Struct(f">{n}i") for n in range(64)]  # int32 arrays of up to 63 (replicas, ISRs): compiled once
_b64 = base64.urlsafe_b64encode


class _Fallback(Exception):
    pass


FAST_ERRORS = (_Fallback, IndexError, struct.error)  # what the hand reader raises for a record DECODER must read


@functools.lru_cache(maxsize=1 << 16)  # topic ids and directory ids repeat record after record
def uuid_text(raw: bytes) -> str | None:
    """A Uuid as Kafka prints it (base64url, no padding); the zero Uuid as None (as `DECODER` gives it)."""
    return None if raw == _ZERO else _b64(raw).rstrip(b"=").decode()


def _uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    b = buf[pos]
    if b < 0x80:
        return b, pos + 1
    value, shift = b & 0x7F, 7
    for i in range(1, 5):
        b = buf[pos + i]
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos + i + 1
        shift += 7
    raise _Fallback


def _ints(buf: bytes, pos: int) -> tuple[list[int] | None, int]:
    """A compact nullable int32 array."""
    n = buf[pos]
    if n < 0x80:
        pos += 1
        if n == 1:  # empty (removing, adding): the usual case
            return [], pos
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        return None, pos
    end = pos + 4 * (n - 1)
    if end > len(buf):
        raise _Fallback
    return list((_INTS[n - 1] if n <= len(_INTS) else struct.Struct(f">{n - 1}i")).unpack_from(buf, pos)), end


def _uuids(buf: bytes, pos: int) -> tuple[list[str | None] | None, int]:
    """A compact nullable uuid array."""
    n, pos = _uvarint(buf, pos)
    if n == 0:
        return None, pos
    end = pos + 16 * (n - 1)
    if end > len(buf):
        raise _Fallback
    return [uuid_text(buf[p:p + 16]) for p in range(pos, end, 16)], end


PartitionParts = tuple[int, bytes, list[int], list[int], list[int], list[int], int, int, int, list[str | None]]
ChangeParts = tuple[int, bytes, list[int] | None, int, list[int] | None, list[int] | None, list[int] | None, int,
                    list[str | None] | None]


def partition_record_parts(version: int, body: bytes) -> PartitionParts:
    """A PartitionRecord v2 without tagged fields, as a tuple: (partition_id, the raw topic id, replicas, isr,
    removing, adding, leader, leader_epoch, partition_epoch, directories). Raises one of `FAST_ERRORS`
    for anything `DECODER` must read (`kadmin.pipeline.arrow` makes events of it with no fields dict)."""
    if version != 2 or len(body) < 20:
        raise _Fallback
    pid, tid = _HEAD.unpack_from(body, 0)
    replicas, p = _ints(body, 20)
    isr, p = _ints(body, p)
    removing, p = _ints(body, p)
    adding, p = _ints(body, p)
    if replicas is None or isr is None or removing is None or adding is None:  # not nullable: as DECODER says
        raise _Fallback
    if p + 12 > len(body):
        raise _Fallback
    leader = _I32.unpack_from(body, p)[0]
    epoch, pepoch = _TAIL.unpack_from(body, p + 4)
    dirs, p = _uuids(body, p + 12)
    if dirs is None:
        raise _Fallback
    ntags, p = _uvarint(body, p)
    if ntags or p != len(body):  # a tagged field (recovery state, ELR): the schema codec reads it
        raise _Fallback
    return pid, tid, replicas, isr, removing, adding, leader, epoch, pepoch, dirs


def _partition_record(version: int, body: bytes) -> dict[str, Any]:
    pid, tid, replicas, isr, removing, adding, leader, epoch, pepoch, dirs = partition_record_parts(version, body)
    return {"partition_id": pid, "topic_id": uuid_text(tid), "replicas": replicas, "isr": isr,
            "removing_replicas": removing, "adding_replicas": adding, "leader": leader, "leader_recovery_state": 0,
            "leader_epoch": epoch, "partition_epoch": pepoch, "directories": dirs, "eligible_leader_replicas": None,
            "last_known_elr": None}


# PartitionChangeRecord v2 tags this decoder reads: 0 isr, 1 leader, 2 replicas, 3 removing, 4 adding,
# 5 leader recovery state, 8 directories (6 and 7, the ELR fields, go to DECODER)
def partition_change_parts(version: int, body: bytes) -> ChangeParts:
    """A PartitionChangeRecord v2 of the tags above, as a tuple: (partition_id, the raw topic id, isr, leader
    (-2: unchanged), replicas, removing, adding, leader_recovery_state, directories). Raises one of
    `FAST_ERRORS` for anything `DECODER` must read."""
    if version != 2 or len(body) < 20:
        raise _Fallback
    pid, tid = _HEAD.unpack_from(body, 0)
    isr = replicas = removing = adding = dirs = None
    leader, recovery = -2, -1
    ntags, p = _uvarint(body, 20)
    last = -1
    for _ in range(ntags):
        tag, p = _uvarint(body, p)
        size, p = _uvarint(body, p)
        end = p + size
        if tag <= last or end > len(body):
            raise _Fallback
        last = tag
        if tag == 0:
            isr, q = _ints(body, p)
        elif tag == 1:
            if size != 4:
                raise _Fallback
            leader, q = _I32.unpack_from(body, p)[0], end
        elif tag == 2:
            replicas, q = _ints(body, p)
        elif tag == 3:
            removing, q = _ints(body, p)
        elif tag == 4:
            adding, q = _ints(body, p)
        elif tag == 5:
            if size != 1:
                raise _Fallback
            recovery, q = struct.unpack_from(">b", body, p)[0], end
        elif tag == 8:
            dirs, q = _uuids(body, p)
        else:
            raise _Fallback
        if q != end:
            raise _Fallback
        p = end
    if p != len(body):
        raise _Fallback
    return pid, tid, isr, leader, replicas, removing, adding, recovery, dirs


def _partition_change(version: int, body: bytes) -> dict[str, Any]:
    pid, tid, isr, leader, replicas, removing, adding, recovery, dirs = partition_change_parts(version, body)
    return {"partition_id": pid, "topic_id": uuid_text(tid), "isr": isr, "leader": leader, "replicas": replicas,
            "removing_replicas": removing, "adding_replicas": adding, "leader_recovery_state": recovery,
            "directories": dirs, "eligible_leader_replicas": None, "last_known_elr": None}


_FAST: dict[int, tuple[str, Callable[[int, bytes], dict[str, Any]]]] = {
    PARTITION_RECORD: ("PartitionRecord", _partition_record),
    PARTITION_CHANGE_RECORD: ("PartitionChangeRecord", _partition_change),
}


class FastDecoder:
    """`DECODER` with PartitionRecord and PartitionChangeRecord v2 read by hand (see the module doc)."""

    def __init__(self) -> None:
        self.decode_control = DECODER.decode_control

    def __call__(self, api_key: int, version: int, body: bytes) -> DecodedValue | None:
        return self.decode_record(api_key, version, body)

    def decode_record(self, api_key: int, version: int, body: bytes) -> DecodedValue | None:
        fast = _FAST.get(api_key)
        if fast is not None:
            try:
                return DecodedValue(fast[0], version, fast[1](version, body))
            except FAST_ERRORS:
                pass
        return DECODER.decode_record(api_key, version, body)


FAST_DECODER = FastDecoder()
