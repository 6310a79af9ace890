"""The emulated broker's Kafka wire codec: primitive types, headers, the requests it serves.

Written from Kafka's JSON message schemas with `struct`, on purpose independent of kafka-python
and kio: a mistake in kadmin's client encoding must not be cancelled out by the same library
decoding it on the other end. It is also stricter than Kafka: a request with trailing bytes is
rejected (the server closes the connection), so an encoding slip surfaces at once.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import Any, NamedTuple

# API keys served.
METADATA = 3
CONTROLLED_SHUTDOWN = 7
API_VERSIONS = 18

# Error codes (org.apache.kafka.common.protocol.Errors).
NONE = 0
UNKNOWN_SERVER_ERROR = -1
UNKNOWN_TOPIC_OR_PARTITION = 3
LEADER_NOT_AVAILABLE = 5
BROKER_NOT_AVAILABLE = 8
REPLICA_NOT_AVAILABLE = 9
STALE_CONTROLLER_EPOCH = 11
UNSUPPORTED_VERSION = 35
STALE_BROKER_EPOCH = 77

UNKNOWN_BROKER_EPOCH = -1  # AbstractControlRequest.UNKNOWN_BROKER_EPOCH: skips the epoch check
MAX_FRAME = 100 * 1024 * 1024  # socket.request.max.bytes

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


class DecodeError(ValueError):
    """The request bytes do not match the schema."""


class Reader:
    """Reads Kafka protocol primitive types from a frame, front to back."""

    def __init__(self, buf: bytes, pos: int = 0) -> None:
        self.buf = buf
        self.pos = pos

    def _unpack(self, s: struct.Struct) -> int:
        if self.pos + s.size > len(self.buf):
            raise DecodeError(f"frame ends at byte {len(self.buf)}, reading {s.size} bytes at {self.pos}")
        (value,) = s.unpack_from(self.buf, self.pos)
        self.pos += s.size
        return int(value)

    def _bytes(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.buf):
            raise DecodeError(f"frame ends at byte {len(self.buf)}, reading {n} bytes at {self.pos}")
        out = self.buf[self.pos : self.pos + n]
        self.pos += n
        return out

    def int8(self) -> int:
        return self._unpack(_I8)

    def boolean(self) -> bool:
        return self.int8() != 0

    def int16(self) -> int:
        return self._unpack(_I16)

    def int32(self) -> int:
        return self._unpack(_I32)

    def int64(self) -> int:
        return self._unpack(_I64)

    def uvarint(self) -> int:
        value = shift = 0
        while True:
            b = self._bytes(1)[0]
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
            if shift > 28:
                raise DecodeError("unsigned varint longer than 5 bytes")

    def _text(self, n: int) -> str:
        try:
            return self._bytes(n).decode("utf-8")
        except UnicodeDecodeError as e:
            raise DecodeError(f"string is not UTF-8: {e}") from e

    def nullable_string(self) -> str | None:
        n = self.int16()
        return None if n == -1 else self._text(n)

    def string(self) -> str:
        s = self.nullable_string()
        if s is None:
            raise DecodeError("null in a non-nullable string")
        return s

    def compact_nullable_string(self) -> str | None:
        n = self.uvarint()
        return None if n == 0 else self._text(n - 1)

    def compact_string(self) -> str:
        s = self.compact_nullable_string()
        if s is None:
            raise DecodeError("null in a non-nullable compact string")
        return s

    def array_length(self) -> int | None:
        """int32 count; -1 is a null array."""
        n = self.int32()
        if n < -1:
            raise DecodeError(f"array length {n}")
        return None if n == -1 else n

    def tagged_fields(self) -> dict[int, bytes]:
        fields: dict[int, bytes] = {}
        for _ in range(self.uvarint()):
            tag = self.uvarint()
            fields[tag] = self._bytes(self.uvarint())
        return fields

    def expect_end(self) -> None:
        if self.pos != len(self.buf):
            raise DecodeError(f"{len(self.buf) - self.pos} trailing bytes after the request")


class Writer:
    """Appends Kafka protocol primitive types to a buffer."""

    def __init__(self) -> None:
        self.buf = bytearray()

    def int8(self, v: int) -> Writer:
        self.buf += _I8.pack(v)
        return self

    def boolean(self, v: bool) -> Writer:
        return self.int8(1 if v else 0)

    def int16(self, v: int) -> Writer:
        self.buf += _I16.pack(v)
        return self

    def int32(self, v: int) -> Writer:
        self.buf += _I32.pack(v)
        return self

    def int64(self, v: int) -> Writer:
        self.buf += _I64.pack(v)
        return self

    def uvarint(self, v: int) -> Writer:
        while v >= 0x80:
            self.buf.append((v & 0x7F) | 0x80)
            v >>= 7
        self.buf.append(v)
        return self

    def nullable_string(self, s: str | None) -> Writer:
        if s is None:
            return self.int16(-1)
        data = s.encode()
        self.int16(len(data))
        self.buf += data
        return self

    def compact_string(self, s: str) -> Writer:
        data = s.encode()
        self.uvarint(len(data) + 1)
        self.buf += data
        return self

    def array_length(self, n: int) -> Writer:
        return self.int32(n)

    def compact_array_length(self, n: int) -> Writer:
        return self.uvarint(n + 1)

    def int32_array(self, values: Iterable[int]) -> Writer:
        vs = list(values)
        self.int32(len(vs))
        for v in vs:
            self.int32(v)
        return self

    def empty_tagged_fields(self) -> Writer:
        return self.uvarint(0)

    def getvalue(self) -> bytes:
        return bytes(self.buf)


def is_flexible(api_key: int, api_version: int) -> bool:
    """`flexibleVersions` of the served messages: ApiVersions 3+, ControlledShutdown 3+, Metadata 9+."""
    first = {API_VERSIONS: 3, CONTROLLED_SHUTDOWN: 3, METADATA: 9}.get(api_key)
    return first is not None and api_version >= first


def request_header_version(api_key: int, api_version: int) -> int:
    """ControlledShutdown v0 alone uses header v0 (no client_id); flexible versions use v2."""
    if api_key == CONTROLLED_SHUTDOWN and api_version == 0:
        return 0
    return 2 if is_flexible(api_key, api_version) else 1


def response_header_version(api_key: int, api_version: int) -> int:
    """ApiVersions always answers with header v0, even when flexible (clients parse it before
    they know the broker's versions); other flexible responses use v1 (with tagged fields)."""
    if api_key == API_VERSIONS:
        return 0
    return 1 if is_flexible(api_key, api_version) else 0


class RecordedRequest(NamedTuple):
    """A decoded request, kept in `EmulatedBroker.requests` for assertions."""

    api_key: int
    api_version: int
    header: dict[str, Any]
    body: dict[str, Any]


def read_header(r: Reader, api_key: int, api_version: int, correlation_id: int, version: int) -> dict[str, Any]:
    header: dict[str, Any] = {
        "api_key": api_key,
        "api_version": api_version,
        "correlation_id": correlation_id,
        "header_version": version,
    }
    if version >= 1:
        header["client_id"] = r.nullable_string()  # a legacy (int16) string even in header v2
    if version >= 2:
        header["tagged_fields"] = r.tagged_fields()
    return header

def read_body(r: Reader, api_key: int, api_version: int) -> dict[str, Any]:
    if api_key == API_VERSIONS:
        if api_version < 3:
            return {}
        body: dict[str, Any] = {
            "client_software_name": r.compact_string(),
            "client_software_version": r.compact_string(),
        }
        r.tagged_fields()
        return body
    if api_key == METADATA:
        n = r.array_length()
        if n is None and api_version == 0:
            raise DecodeError("null topics array in Metadata v0")
        topics = None if n is None else [r.string() for _ in range(n)]
        if api_version == 0 and topics == []:
            topics = None  # v0: an empty list means all topics
        body = {"topics": topics, "allow_auto_topic_creation": True}
        if api_version >= 4:
            body["allow_auto_topic_creation"] = r.boolean()
        if api_version >= 8:
            body["include_cluster_authorized_operations"] = r.boolean()
            body["include_topic_authorized_operations"] = r.boolean()
        return body
    # ControlledShutdown: BrokerId int32 0+, BrokerEpoch int64 2+ (default -1), tags from 3.
    body = {"broker_id": r.int32(), "broker_epoch": r.int64() if api_version >= 2 else UNKNOWN_BROKER_EPOCH}
    if api_version >= 3:
        r.tagged_fields()
    return body


def api_versions_body(version: int, error: int, ranges: dict[int, tuple[int, int]]) -> bytes:
    w = Writer().int16(error)
    keys = sorted(ranges.items())
    if version >= 3:
        w.compact_array_length(len(keys))
        for key, (lo, hi) in keys:
            w.int16(key).int16(lo).int16(hi).empty_tagged_fields()
        # throttle_time_ms, then the top-level tags (SupportedFeatures & co. are all tagged: none sent)
        return w.int32(0).empty_tagged_fields().getvalue()
    w.array_length(len(keys))
    for key, (lo, hi) in keys:
        w.int16(key).int16(lo).int16(hi)
    if version >= 1:
        w.int32(0)  # throttle_time_ms
    return w.getvalue()


def controlled_shutdown_body(version: int, error: int, remaining: list[tuple[str, int]]) -> bytes:
    """ControlledShutdownResponse: ErrorCode, RemainingPartitions (compact with tagged fields from v3)."""
    w = Writer().int16(error)
    if version >= 3:
        w.compact_array_length(len(remaining))
        for topic, index in remaining:
            w.compact_string(topic).int32(index).empty_tagged_fields()
        w.empty_tagged_fields()
    else:
        w.array_length(len(remaining))
        for topic, index in remaining:
            w.nullable_string(topic).int32(index)
    return w.getvalue()
