"""KRaft metadata records and raft control records, declared through kafka-python's JSON schemas.

Each class loads `<ClassName>.json` from this package: Kafka's own schema text for
`metadata/src/main/resources/common/metadata/*.json` (`"type": "metadata"`) and for the raft
control messages in `clients/src/main/resources/common/message/` (`"type": "data"`). kafka-python
ships neither. Two things in kafka-python 3.0.12 need a patch applied at class creation (the
JSON files stay as Kafka wrote them):

- `ApiData` accepts only `"type": "data"`; a metadata record has no header either, so the patch
  reads it as `"data"` (bodies are decoded with `header=False`).
- A top-level field named `Version` (every control message has one) becomes the attribute
  `version`, which collides with the `version=` keyword kafka-python's decoder passes to the
  data class. The patch renames it `RecordVersion`; `kadmin.cluster.metadata_records` reports it
  as `version` again.
- Kafka writes some tags as strings (`"tag": "0"` for RegisterBrokerRecord's LogDirs); kafka-python
  would then look up the integer tag read from the wire in vain and file the field as unknown. The
  patch makes every tag an int.

`NoOpRecord` and `EndTransactionRecord` have no fields, which kafka-python's struct codec cannot
declare: they are listed in `EMPTY_RECORDS` (the schema still comes from its JSON file) and decoded
as a bare tagged-field section by `kadmin.cluster.metadata_records`.

Kafka 4.3.1 writes RegisterBrokerRecord v4 and BrokerRegistrationChangeRecord v3 (CordonedLogDirs),
RegisterControllerRecord and, around the bootstrap records, Begin/EndTransactionRecord; their
schemas here were checked against the generated classes of kafka-metadata-4.3.1.jar. Kafka 3.9.1
also writes a ZkMigrationStateRecord. Kafka 4.x writes ClearElrRecord (apiKey 28, KIP-966) when
min.insync.replicas is set (a topic's, or a default: TopicName ""); its schema is the JSON
kafka-metadata-4.3.1.jar ships.
"""

from __future__ import annotations

from typing import Any

# kafka-python internals: ApiData and load_json, its schema-driven codec, reused for Kafka's metadata
# and control record schemas (patched as the module docstring says).
# Tested with kafka-python 3.0.12; the range is pinned in pyproject.toml.
from kafka.protocol.api_data import ApiData
from kafka.protocol.schemas import load_json

RENAMED_VERSION_FIELD = "RecordVersion"


def _int_tags(fields: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for f in fields:
        f = dict(f)
        if "tag" in f:
            f["tag"] = int(f["tag"])
        if "fields" in f:
            f["fields"] = _int_tags(f["fields"])
        out.append(f)
    return out


def _patch(metacls: type, schema: dict[str, Any]) -> dict[str, Any]:
    fields = _int_tags(schema["fields"])
    fields = [dict(f, name=RENAMED_VERSION_FIELD) if f["name"] == "Version" else f for f in fields]
    return dict(schema, type="data", fields=fields)


_json_patch: Any = classmethod(_patch)


# Metadata records (the value of every non-control record in __cluster_metadata), by apiKey.

class RegisterBrokerRecord(ApiData, load_json=__name__):  # type: ignore[call-arg,misc]
    json_patch = _json_patch


class UnregisterBrokerRecord(ApiData, load_json=__name__):  # type: ignore[call-arg,misc]
    json_patch = _json_patch


class TopicRecord(ApiData, load_json=__name__):  # type: ignore[call-arg,misc]
    json_patch = _json_patch


class PartitionRecord(ApiData, load_json=__name__):  # type: ignore[call-arg,misc]
    json_patch = _json_patch


class ConfigRecord(ApiData, load_json=__name__):  # type: ignore[call-arg,misc]
    json_patch = _json_patch


class PartitionChangeRecord(ApiData, load_json=__name__):  # type: ignore[call-arg,misc]
    json_patch = _json_patch


class FenceBrokerRecord(ApiData, load_json=__name__):  # type: ignore[call-arg,misc]
    json_patch = _json_patch


class UnfenceBrokerRecord(ApiData, load_json=__name__):  # type: ignore[call-arg,misc]
    json_patch = _json_patch


class RemoveTopicRecord(ApiData, load_json=__name__):  # type: ignore[call-arg,misc]
    json_patch = _json_patch


class FeatureLevelRecord(ApiData, load_json=__name__):  # type: ignore[call-arg,misc]
    json_patch = _json_patch


class ProducerIdsRecord(ApiData, load_json=__name__):  # type: ignore[call-arg,misc]
    json_patch = _json_patch


class BrokerRegistrationChangeRecord(ApiData, load_json=__name__):  # type: ignore[call-arg,misc]
    json_patch = _json_patch


class BeginTransactionRecord(ApiData, load_json=__name__):  # type: ignore[call-arg,misc]
    json_patch = _json_patch


class AbortTransactionRecord(ApiData, load_json=__name__):  # type: ignore[call-arg,misc]
    json_patch = _json_patch


class RegisterControllerRecord(ApiData, load_json=__name__):  # type: ignore[call-arg,misc]
    json_patch = _json_patch


class ZkMigrationStateRecord(ApiData, load_json=__name__):  # type: ignore[call-arg,misc]
    json_patch = _json_patch


class ClearElrRecord(ApiData, load_json=__name__):  # type: ignore[call-arg,misc]
    json_patch = _json_patch


# Raft control records (the value of a record in a control batch), by ControlRecordType.

class LeaderChangeMessage(ApiData, load_json=__name__):  # type: ignore[call-arg,misc]
    json_patch = _json_patch


class SnapshotHeaderRecord(ApiData, load_json=__name__):  # type: ignore[call-arg,misc]
    json_patch = _json_patch


class SnapshotFooterRecord(ApiData, load_json=__name__):  # type: ignore[call-arg,misc]
    json_patch = _json_patch


class KRaftVersionRecord(ApiData, load_json=__name__):  # type: ignore[call-arg,misc]
    json_patch = _json_patch


class VotersRecord(ApiData, load_json=__name__):  # type: ignore[call-arg,misc]
    json_patch = _json_patch


METADATA_RECORDS: tuple[type[ApiData], ...] = (
    RegisterBrokerRecord, UnregisterBrokerRecord, TopicRecord, PartitionRecord, ConfigRecord,
    PartitionChangeRecord, FenceBrokerRecord, UnfenceBrokerRecord, RemoveTopicRecord, FeatureLevelRecord,
    ProducerIdsRecord, BrokerRegistrationChangeRecord, BeginTransactionRecord, AbortTransactionRecord,
    RegisterControllerRecord, ZkMigrationStateRecord, ClearElrRecord,
)

# Schemas with no fields at all: (the JSON, as kafka-python loads it).
EMPTY_RECORDS: tuple[dict[str, Any], ...] = (
    load_json("NoOpRecord", package=__name__), load_json("EndTransactionRecord", package=__name__),
)

# ControlRecordType (clients/.../record/ControlRecordType.java) -> the message its value holds.
# 0 ABORT and 1 COMMIT (transaction markers) never occur in the metadata log.
CONTROL_RECORDS: dict[int, type[ApiData]] = {
    2: LeaderChangeMessage,
    3: SnapshotHeaderRecord,
    4: SnapshotFooterRecord,
    5: KRaftVersionRecord,
    6: VotersRecord,
}
