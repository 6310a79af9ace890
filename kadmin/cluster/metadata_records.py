"""Record values of the KRaft metadata log, decoded with kafka-python's schema codec.

`decode_value` (alias `DECODER`) is the `kadmin.formats.kraft_log.ValueDecoder` to hand to
`iter_records`, `iter_segment` and `iter_checkpoint`. The framing is read by
`kadmin.formats.kraft_log` (stdlib only), the bodies here, from Kafka's JSON schemas
(`kadmin.cluster.messages.metadata`):

    from kadmin.cluster.metadata_records import CRC32C, decode_value
    from kadmin.formats.kraft_log import iter_segment
    for record in iter_segment(path, decode_value, on_damage=damage.append, crc=CRC32C): ...

`decode_value(api_key, version, body)` also works as a plain function: one metadata record body
(after its frame header) -> `DecodedValue(type_name, version, fields)`, or None for an api key or
version it does not know; ValueError for a body that does not decode exactly. Control record
values go through `decode_value.decode_control(control_type, value)`.

Fields come out as kafka-python names them (snake_case of Kafka's field names: `broker_epoch`,
`end_points`, `k_raft_version`), nested structs as dicts, with two conversions so the result is
plain data: a Uuid is Kafka's text form (URL-safe base64 without padding, `Uuid.toString()`), and the
zero Uuid is None (kafka-python's reading of it). Control messages report their `Version` field as
`version`. Tagged fields the schema does not know are listed under `_unknown_tags` as
`{tag: hex bytes}`.
"""

from __future__ import annotations

import io
import uuid
from collections.abc import Callable, Mapping
from typing import Any

# kafka-python internals: its schema-driven codec (ApiData, TaggedFields) decodes the record values
# from Kafka's own JSON schemas, so kadmin does not hand-write a second decoder for ~30 record types;
# kafka.record.util exposes the C CRC-32C it found.
# Tested with kafka-python 3.0.12; the range is pinned in pyproject.toml.
from kafka.protocol.api_data import ApiData
from kafka.protocol.schemas.fields.codecs.tagged_fields import TaggedFields
from kafka.record import util as _record_util

from kadmin.cluster.kraft import uuid_text
from kadmin.cluster.messages.metadata import CONTROL_RECORDS, EMPTY_RECORDS, METADATA_RECORDS
from kadmin.errors import in_words
from kadmin.formats.kraft_log import DecodedValue

# The C implementation of the `crc32c` package when kafka-python found it installed, else None
# (kadmin.formats.kraft_log's own table-driven CRC-32C is then used).
CRC32C: Callable[[bytes], int] | None = getattr(_record_util, "crc32c_c", None)

# kafka-python's name for the `Version` field of control messages (renamed `RecordVersion` by the
# schema patch in kadmin.cluster.messages.metadata)
_VERSION_KEY = "record_version"


def _plain(value: Any) -> Any:
    if isinstance(value, uuid.UUID):
        return uuid_text(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _versions(schema: Mapping[str, Any]) -> tuple[int, int]:
    text = str(schema["validVersions"])
    low, _, high = text.partition("-")
    return int(low), int(high or low)


def _decode_struct(cls: type[ApiData], version: int, body: bytes) -> dict[str, Any]:
    stream = io.BytesIO(body)
    try:
        message = cls.decode(stream, version=version, header=False)
    except Exception as e:  # kafka-python raises struct.error, ValueError, AssertionError, ...
        raise ValueError(f"{cls.__name__} v{version} does not decode: {in_words(e)}") from e
    garbage = len(body) - stream.tell()
    if garbage:
        raise ValueError(f"Found {garbage} byte(s) of garbage after {cls.__name__} v{version}")
    fields = _plain(message.to_dict(json=False))
    if _VERSION_KEY in fields:
        fields = {("version" if k == _VERSION_KEY else k): v for k, v in fields.items()}
    if message.unknown_tags:
        fields["_unknown_tags"] = {int(k.lstrip("_")): bytes(v).hex() for k, v in message.unknown_tags.items()}
    return fields


def _decode_empty(name: str, version: int, body: bytes) -> dict[str, Any]:
    stream = io.BytesIO(body)
    try:
        tags = TaggedFields([]).decode(stream, version=version)
    except Exception as e:
        raise ValueError(f"{name} v{version} does not decode: {in_words(e)}") from e
    garbage = len(body) - stream.tell()
    if garbage:
        raise ValueError(f"Found {garbage} byte(s) of garbage after {name} v{version}")
    if tags:
        return {"_unknown_tags": {int(k.lstrip("_")): bytes(v).hex() for k, v in tags.items()}}
    return {}


class MetadataRecordDecoder:
    """`ValueDecoder` over the schemas declared in `kadmin.cluster.messages.metadata`; calling it
    is `decode_record`."""

    def __init__(self) -> None:
        self.records: dict[int, type[ApiData]] = {int(c.json["apiKey"]): c for c in METADATA_RECORDS}
        self.empty: dict[int, Mapping[str, Any]] = {int(s["apiKey"]): s for s in EMPTY_RECORDS}
        self.controls: dict[int, type[ApiData]] = dict(CONTROL_RECORDS)

    def __call__(self, api_key: int, version: int, body: bytes) -> DecodedValue | None:
        return self.decode_record(api_key, version, body)

    def decode_record(self, api_key: int, version: int, body: bytes) -> DecodedValue | None:
        cls = self.records.get(api_key)
        if cls is not None:
            low, high = cls.valid_versions
            if not low <= version <= high:
                return None
            return DecodedValue(cls.__name__, version, _decode_struct(cls, version, body))
        schema = self.empty.get(api_key)
        if schema is not None:
            low, high = _versions(schema)
            if not low <= version <= high:
                return None
            return DecodedValue(str(schema["name"]), version, _decode_empty(str(schema["name"]), version, body))
        return None

    def decode_control(self, control_type: int, body: bytes) -> DecodedValue | None:
        """Control values carry no version prefix: their first field, `Version` (int16), says it."""
        cls = self.controls.get(control_type)
        if cls is None:
            return None
        if len(body) < 2:
            raise ValueError(f"{cls.__name__}: {len(body)} byte(s), too short for its Version")
        version = int.from_bytes(body[:2], "big", signed=True)
        low, high = cls.valid_versions
        if not low <= version <= high:
            return None
        return DecodedValue(cls.__name__, version, _decode_struct(cls, version, body))


DECODER = MetadataRecordDecoder()
decode_value = DECODER
