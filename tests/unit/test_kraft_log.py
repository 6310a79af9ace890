"""KRaft metadata logs and snapshots (kafka-formats.md §6).

The framing is read by `kadmin.formats.kraft_log`, the record values by
`kadmin.cluster.metadata_records` (Kafka's JSON schemas through kafka-python); the files are written
by `tests/support/kraft_log_writer.py`, which builds every value by hand from the §6 field tables and frames
batches with kio, so neither side of a check shares code with the other.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

import crc32c as crc32c_package
import pytest

from kadmin.cluster.metadata_records import CRC32C, DECODER, decode_value
from kadmin.formats import kraft_log as kl
from kadmin.formats.kraft_log import Damage, MetadataRecord
from tests.support import kraft_log_writer as w

TS0 = 1_700_000_000_000
T1 = uuid.UUID("0b7a4d2e-9c1f-4e5a-8d3b-6f2e1a9c7b55")
INC = {b: uuid.UUID(int=0x1000 + b) for b in (1, 2, 3)}
INC_2B = uuid.UUID("5d1c0ffe-0000-4000-8000-00000000002b")
DIR_A, DIR_B = uuid.UUID("a0a0a0a0-0000-4000-8000-0000000000aa"), uuid.UUID("b0b0b0b0-0000-4000-8000-0000000000bb")
DIR_X, DIR_Y, DIR_Z = (uuid.UUID(f"{c * 8}-0000-4000-8000-000000000000") for c in "cde")
MIGRATING = uuid.UUID(int=1)  # Kafka's DirectoryId.MIGRATING, "AAAAAAAAAAAAAAAAAAAAAQ"
ZERO = uuid.UUID(int=0)  # DirectoryId.UNASSIGNED: kafka-python reads the zero Uuid as None
MV = ("metadata.version", 1, 21)


def t(u: uuid.UUID) -> str:
    return w.kafka_uuid_text(u)


def lc_fields(leader: int, voters: list[int], granting: list[int]) -> dict[str, Any]:
    return {"version": 0, "leader_id": leader, "voters": [{"voter_id": v} for v in voters],
            "granting_voters": [{"voter_id": v} for v in granting]}


def endpoint(name: str, host: str, port: int, protocol: int) -> dict[str, Any]:
    return {"name": name, "host": host, "port": port, "security_protocol": protocol}


FEATURES = [{"name": "metadata.version", "min_supported_version": 1, "max_supported_version": 21}]

# (value bytes, api_key, version, type name, expected fields): one entry per record; control records
# have api_key None and give their control type in place of the version.
Entry = tuple[bytes, int | None, int, str, dict[str, Any]]
# A batch: (leader epoch, control type or None, entries).
Spec = tuple[int, int | None, list[Entry]]

SEGMENT_0: list[Spec] = [
    (1, w.LEADER_CHANGE, [  # offset 0
        (w.leader_change(3000, [3000, 3001, 3002], [3000, 3001]), None, w.LEADER_CHANGE, "LeaderChangeMessage",
         lc_fields(3000, [3000, 3001, 3002], [3000, 3001])),
    ]),
    (1, None, [  # 1-2
        (w.feature_level("metadata.version", 21), 12, 0, "FeatureLevelRecord",
         {"name": "metadata.version", "feature_level": 21}),
        (w.no_op(), 20, 0, "NoOpRecord", {}),
    ]),
    (1, None, [  # 3-4: broker epoch = the offset of the RegisterBrokerRecord
        (w.register_broker(1, 1, INC[1], 3, [("PLAINTEXT", "b1.example", 9092, 0)], [MV], None),
         0, 1, "RegisterBrokerRecord",
         {"broker_id": 1, "incarnation_id": t(INC[1]), "broker_epoch": 3,
          "end_points": [endpoint("PLAINTEXT", "b1.example", 9092, 0)], "features": FEATURES, "rack": None,
          "fenced": True, "in_controlled_shutdown": False}),
        (w.register_broker(2, 2, INC[2], 4, [("PLAINTEXT", "b2.example", 9092, 0), ("SASL_SSL", "b2.example", 9094, 3)],
                           [MV], "rack-b"),
         0, 2, "RegisterBrokerRecord",
         {"broker_id": 2, "is_migrating_zk_broker": False, "incarnation_id": t(INC[2]), "broker_epoch": 4,
          "end_points": [endpoint("PLAINTEXT", "b2.example", 9092, 0), endpoint("SASL_SSL", "b2.example", 9094, 3)],
          "features": FEATURES, "rack": "rack-b", "fenced": True, "in_controlled_shutdown": False}),
    ]),
    (1, None, [  # 5
        (w.register_broker(3, 3, INC[3], 5, [("BROKER", "b3.example", 65000, 1)], [MV], "rack-c",
                           is_migrating_zk_broker=True, log_dirs=[DIR_A, DIR_B]),
         0, 3, "RegisterBrokerRecord",
         {"broker_id": 3, "is_migrating_zk_broker": True, "incarnation_id": t(INC[3]), "broker_epoch": 5,
          "end_points": [endpoint("BROKER", "b3.example", 65000, 1)], "features": FEATURES, "rack": "rack-c",
          "fenced": True, "in_controlled_shutdown": False, "log_dirs": [t(DIR_A), t(DIR_B)]}),
    ]),
    (1, None, [  # 6-8
        (w.unfence_broker(1, 3), 8, 0, "UnfenceBrokerRecord", {"id": 1, "epoch": 3}),
        (w.broker_registration_change(0, 2, 4, fenced=-1), 17, 0, "BrokerRegistrationChangeRecord",
         {"broker_id": 2, "broker_epoch": 4, "fenced": -1}),
        (w.broker_registration_change(2, 3, 5, fenced=-1, log_dirs=[DIR_A]), 17, 2, "BrokerRegistrationChangeRecord",
         {"broker_id": 3, "broker_epoch": 5, "fenced": -1, "in_controlled_shutdown": 0, "log_dirs": [t(DIR_A)]}),
    ]),
    (1, None, [  # 9-13
        (w.topic("orders", T1), 2, 0, "TopicRecord", {"name": "orders", "topic_id": t(T1)}),
        (w.config(2, "orders", "min.insync.replicas", "2"), 4, 0, "ConfigRecord",
         {"resource_type": 2, "resource_name": "orders", "name": "min.insync.replicas", "value": "2"}),
        (w.partition(0, 0, T1, [1, 2, 3], [1, 2, 3], [], [], 1, 0, 0), 3, 0, "PartitionRecord",
         {"partition_id": 0, "topic_id": t(T1), "replicas": [1, 2, 3], "isr": [1, 2, 3], "removing_replicas": [],
          "adding_replicas": [], "leader": 1, "leader_recovery_state": 0, "leader_epoch": 0, "partition_epoch": 0}),
        (w.partition(1, 1, T1, [2, 3, 1, 4], [2, 3], [1], [4], 2, 3, 4, directories=[DIR_X, DIR_Y, DIR_Z, DIR_A]),
         3, 1, "PartitionRecord",
         {"partition_id": 1, "topic_id": t(T1), "replicas": [2, 3, 1, 4], "isr": [2, 3], "removing_replicas": [1],
          "adding_replicas": [4], "leader": 2, "leader_recovery_state": 0, "leader_epoch": 3, "partition_epoch": 4,
          "directories": [t(DIR_X), t(DIR_Y), t(DIR_Z), t(DIR_A)]}),
        (w.partition(2, 2, T1, [3, 1, 2], [3], [], [], 3, 5, 7, leader_recovery_state=1,
                     directories=[DIR_Z, MIGRATING, ZERO], elr=[1], last_known_elr=[2]),
         3, 2, "PartitionRecord",
         {"partition_id": 2, "topic_id": t(T1), "replicas": [3, 1, 2], "isr": [3], "removing_replicas": [],
          "adding_replicas": [], "leader": 3, "leader_recovery_state": 1, "leader_epoch": 5, "partition_epoch": 7,
          "directories": [t(DIR_Z), "AAAAAAAAAAAAAAAAAAAAAQ", None], "eligible_leader_replicas": [1],
          "last_known_elr": [2]}),
    ]),
    (1, None, [  # 14-17
        # ISR shrink, leader unchanged (-2: not written)
        (w.partition_change(0, 0, T1, isr=[1, 2]), 5, 0, "PartitionChangeRecord",
         {"partition_id": 0, "topic_id": t(T1), "isr": [1, 2], "leader": -2, "replicas": None,
          "removing_replicas": None, "adding_replicas": None, "leader_recovery_state": -1}),
        # leader change
        (w.partition_change(0, 1, T1, isr=[3, 1], leader=3), 5, 0, "PartitionChangeRecord",
         {"partition_id": 1, "topic_id": t(T1), "isr": [3, 1], "leader": 3, "replicas": None,
          "removing_replicas": None, "adding_replicas": None, "leader_recovery_state": -1}),
        # ISR null (unchanged), leader -2 (unchanged): only the directories move
        (w.partition_change(1, 2, T1, directories=[DIR_X, DIR_Y, DIR_Z]), 5, 1, "PartitionChangeRecord",
         {"partition_id": 2, "topic_id": t(T1), "isr": None, "leader": -2, "replicas": None,
          "removing_replicas": None, "adding_replicas": None, "leader_recovery_state": -1,
          "directories": [t(DIR_X), t(DIR_Y), t(DIR_Z)]}),
        # no leader (-1), an empty ISR (not null), ELR, reassignment fields, recovery state
        (w.partition_change(2, 0, T1, isr=[], leader=-1, replicas=[1, 2, 4], removing=[3], adding=[4],
                            leader_recovery_state=1, elr=[2], last_known_elr=[1]),
         5, 2, "PartitionChangeRecord",
         {"partition_id": 0, "topic_id": t(T1), "isr": [], "leader": -1, "replicas": [1, 2, 4],
          "removing_replicas": [3], "adding_replicas": [4], "leader_recovery_state": 1, "directories": None,
          "eligible_leader_replicas": [2], "last_known_elr": [1]}),
    ]),
    (1, None, [  # 18-19
        (w.broker_registration_change(1, 1, 3, in_controlled_shutdown=1), 17, 1, "BrokerRegistrationChangeRecord",
         {"broker_id": 1, "broker_epoch": 3, "fenced": 0, "in_controlled_shutdown": 1}),
        (w.broker_registration_change(1, 1, 3, fenced=1), 17, 1, "BrokerRegistrationChangeRecord",
         {"broker_id": 1, "broker_epoch": 3, "fenced": 1, "in_controlled_shutdown": 0}),
    ]),
    (1, None, [  # 20
        (w.fence_broker(2, 4), 7, 0, "FenceBrokerRecord", {"id": 2, "epoch": 4}),
    ]),
    (1, None, [  # 21-22
        (w.unregister_broker(2, 4), 1, 0, "UnregisterBrokerRecord", {"broker_id": 2, "broker_epoch": 4}),
        (w.remove_topic(T1), 9, 0, "RemoveTopicRecord", {"topic_id": t(T1)}),
    ]),
]

SEGMENT_23: list[Spec] = [
    (2, w.LEADER_CHANGE, [  # 23: a new raft epoch, a new leader
        (w.leader_change(3001, [3000, 3001, 3002], [3001, 3002]), None, w.LEADER_CHANGE, "LeaderChangeMessage",
         lc_fields(3001, [3000, 3001, 3002], [3001, 3002])),
    ]),
    (2, None, [  # 24: broker 2 registers again; its new epoch is this offset
        (w.register_broker(3, 2, INC_2B, 24, [("PLAINTEXT", "b2.example", 9092, 0)], [MV], "rack-b"),
         0, 3, "RegisterBrokerRecord",
         {"broker_id": 2, "is_migrating_zk_broker": False, "incarnation_id": t(INC_2B), "broker_epoch": 24,
          "end_points": [endpoint("PLAINTEXT", "b2.example", 9092, 0)], "features": FEATURES, "rack": "rack-b",
          "fenced": True, "in_controlled_shutdown": False, "log_dirs": []}),
    ]),
]


def build(specs: list[Spec], first_offset: int = 0) -> tuple[list[bytes], list[MetadataRecord]]:
    """The batches of `specs` (offsets from first_offset) and the records they must read back as."""
    batches, expected = [], []
    offset = first_offset
    for epoch, control_type, entries in specs:
        batch_ts = TS0 + offset * 1000
        batches.append(w.batch(offset, epoch, batch_ts, [e[0] for e in entries], control_type=control_type))
        for i, (_, api_key, version, name, fields) in enumerate(entries):
            expected.append(MetadataRecord(
                offset=offset + i, timestamp_ms=batch_ts + i * 250, leader_epoch=epoch,
                control=control_type is not None, api_key=api_key,
                version=0 if control_type is not None else version, type_name=name, fields=fields,
                control_type=control_type))
        offset += len(entries)
    return batches, expected


@pytest.fixture
def metadata_dir(tmp_path: Path) -> Path:
    d = tmp_path / "__cluster_metadata-0"
    w.write_file(d / "00000000000000000000.log", build(SEGMENT_0)[0])
    w.write_file(d / "00000000000000000023.log", build(SEGMENT_23, 23)[0])
    return d


def read(path: Path, **kw: Any) -> tuple[list[MetadataRecord], list[Damage]]:
    damage: list[Damage] = []
    return list(kl.iter_segment(path, DECODER, on_damage=damage.append, **kw)), damage


# ------------------------------------------------------------------------------------------------
# A whole log, every field


@pytest.mark.parametrize("crc", [None, CRC32C], ids=["stdlib-crc", "injected-crc"])
def test_segments_decode_every_field(metadata_dir: Path, crc: Any) -> None:
    expected = build(SEGMENT_0)[1] + build(SEGMENT_23, 23)[1]
    got, damage = [], []
    for name in sorted(os.listdir(metadata_dir)):
        records, d = read(metadata_dir / name, crc=crc)
        got += records
        damage += d
    assert damage == []
    assert [r.offset for r in got] == list(range(25))
    for g, e in zip(got, expected, strict=False):
        assert g == e, f"offset {e.offset}"
    assert len(got) == len(expected)


def test_broker_epochs_are_register_offsets(metadata_dir: Path) -> None:
    records, _ = read(metadata_dir / "00000000000000000000.log")
    registrations = [r for r in records if r.type_name == "RegisterBrokerRecord"]
    assert [(r.fields["broker_id"], r.fields["broker_epoch"], r.offset, r.version) for r in registrations] == [
        (1, 3, 3, 1), (2, 4, 4, 2), (3, 5, 5, 3)]
    leader_changes = [r for r in records if r.control]
    assert [(r.control_type, r.leader_epoch, r.api_key, r.fields["leader_id"]) for r in leader_changes] == [
        (kl.LEADER_CHANGE, 1, None, 3000)]


def test_batches(metadata_dir: Path) -> None:
    data = (metadata_dir / "00000000000000000000.log").read_bytes()
    batches = list(kl.iter_batches(data))
    assert [b.base_offset for b in batches] == [0, 1, 3, 5, 6, 9, 14, 18, 20, 21]
    assert [b.last_offset for b in batches] == [0, 2, 4, 5, 8, 13, 17, 19, 20, 22]
    assert [b.control for b in batches] == [True] + [False] * 9
    first = batches[0]
    assert (first.magic, first.partition_leader_epoch, first.producer_id, first.producer_epoch,
            first.base_sequence, first.records_count, first.compression_name, first.transactional) == (
        2, 1, -1, -1, -1, 1, "none", False)
    assert first.position == 0 and batches[1].position == first.size
    assert sum(b.size for b in batches) == len(data)
    for b in batches:
        assert b.crc == crc32c_package.crc32c(data[b.position + 21:b.position + b.size])


def test_crc32c_matches_the_crc32c_package() -> None:
    assert kl.crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value
    assert kl.crc32c(b"") == 0
    for n in list(range(0, 40)) + [1000, 4099]:
        data = os.urandom(n)
        assert kl.crc32c(data) == crc32c_package.crc32c(data), n
    data = os.urandom(100)
    assert kl.crc32c(data[50:], kl.crc32c(data[:50])) == crc32c_package.crc32c(data)


def test_file_names() -> None:
    assert kl.segment_base_offset("00000000000000000023.log") == 23
    assert kl.segment_base_offset("00000000000000000023.index") is None
    assert kl.segment_base_offset("23.log") is None
    assert kl.snapshot_id("00000000000000000024-0000000002.checkpoint") == (24, 2)
    assert kl.snapshot_id("00000000000000000024-0000000002.checkpoint.part") is None
    assert kl.snapshot_id("00000000000000000024-0000000002.checkpoint.deleted") is None
    assert kl.segment_file_name(23) == "00000000000000000023.log"
    assert kl.snapshot_file_name(24, 2) == "00000000000000000024-0000000002.checkpoint"


# ------------------------------------------------------------------------------------------------
# Damage


def test_flipped_byte_is_crc_damage_at_that_batch(tmp_path: Path) -> None:
    batches, expected = build(SEGMENT_0)
    position = sum(len(b) for b in batches[:5])  # the batch at offset 9
    data = bytearray(b"".join(batches))
    data[position + 70] ^= 0x01
    path = w.write_file(tmp_path / "00000000000000000000.log", [bytes(data)])
    records, damage = read(path)
    assert records == expected[:9]  # offsets 0-8: everything before the damaged batch
    assert len(damage) == 1
    assert (damage[0].offset, damage[0].position) == (9, position)
    assert "CRC-32C mismatch" in damage[0].reason

    # Without a callback, the damage raises, after the good records were yielded.
    seen = []
    with pytest.raises(kl.KraftLogError, match="offset 9 .*CRC-32C mismatch") as info:
        for r in kl.iter_segment(path, DECODER):
            seen.append(r.offset)
    assert seen == list(range(9)) and info.value.damage == damage[0]


def test_truncated_file(tmp_path: Path) -> None:
    batches, expected = build(SEGMENT_0)
    data = b"".join(batches)
    cut = w.write_file(tmp_path / "a.log", [data[:-10]])  # inside the last batch (offsets 21-22)
    records, damage = read(cut)
    assert records == expected[:21]
    assert [(d.offset, d.position) for d in damage] == [(21, len(data) - len(batches[-1]))]
    assert "truncated batch" in damage[0].reason

    short = w.write_file(tmp_path / "b.log", [data[:len(data) - len(batches[-1]) + 5]])  # 5 bytes of a header
    records, damage = read(short)
    assert records == expected[:21]
    assert [d.offset for d in damage] == [21]  # the offset that should have come next
    assert "5 byte(s) left" in damage[0].reason


def test_zero_filled_tail_is_damage(tmp_path: Path) -> None:
    batches, expected = build(SEGMENT_0[:2])
    path = w.write_file(tmp_path / "a.log", batches + [bytes(64)])
    records, damage = read(path)
    assert records == expected
    assert damage == [Damage(3, "zero-filled tail of 64 bytes", sum(map(len, batches)))]


def test_unknown_api_key_version_and_control_type_are_unknown_not_damage(tmp_path: Path) -> None:
    future_leader_change = w.leader_change(3002, [3002], [3002], version=5)
    path = w.write_file(tmp_path / "a.log", [
        w.batch(0, 4, TS0, [
            w.frame(99, 0, b"\x01\x02\x03\x00"),  # an api key from the future
            w.frame(0, 9, b"\x00" * 40),  # RegisterBrokerRecord v9
            w.topic("payments", T1),  # and life goes on
        ]),
        w.batch(3, 4, TS0, [b"\x00\x07"], control_type=7),  # a control type from the future
        w.batch(4, 4, TS0, [future_leader_change], control_type=w.LEADER_CHANGE),  # LeaderChangeMessage v5
    ])
    records, damage = read(path)
    assert damage == []
    assert [(r.offset, r.type_name, r.api_key, r.version, r.control_type, dict(r.fields)) for r in records] == [
        (0, "unknown", 99, 0, None, {"size": 4}),
        (1, "unknown", 0, 9, None, {"size": 40}),
        (2, "TopicRecord", 2, 0, None, {"name": "payments", "topic_id": t(T1)}),
        (3, "unknown", None, None, 7, {"size": 2}),
        (4, "unknown", None, None, 2, {"size": len(future_leader_change)}),
    ]


def test_undecodable_values_are_damage_and_unknown(tmp_path: Path) -> None:
    path = w.write_file(tmp_path / "a.log", [
        w.batch(0, 1, TS0, [
            w.topic("orders", T1) + b"\xff",  # trailing garbage
            w.frame(2, 0, b"\x07ord"),  # a TopicRecord cut short
            w.frame(2, 0, w.compact_string("x") + T1.bytes + w.tagged(), frame_version=0),
            w.no_op(),
        ]),
    ])
    records, damage = read(path)
    assert [(d.offset, d.reason) for d in damage] == [
        (0, "apiKey 2 v0: Found 1 byte(s) of garbage after TopicRecord v0"),
        (1, damage[1].reason),
        (2, "unsupported frame version 0"),
    ]
    assert damage[1].reason.startswith("apiKey 2 v0: TopicRecord v0 does not decode")
    assert [(r.type_name, r.api_key, r.fields.get("size")) for r in records] == [
        ("unknown", 2, 25), ("unknown", 2, 4), ("unknown", 2, 19), ("NoOpRecord", 20, None)]
    assert records[0].fields["error"] == damage[0].reason


def test_gzip_batches_read_and_other_codecs_are_damage(tmp_path: Path) -> None:
    path = w.write_file(tmp_path / "a.log", [
        w.compressed_batch(0, 1, TS0, [w.fence_broker(1, 3), w.unfence_broker(1, 3)], codec=1),
        w.compressed_batch(2, 1, TS0, [w.no_op()], codec=2),  # snappy: not read, reported, skipped
        w.batch(3, 1, TS0, [w.remove_topic(T1)]),
    ])
    records, damage = read(path)
    assert [(r.offset, r.type_name, dict(r.fields)) for r in records] == [
        (0, "FenceBrokerRecord", {"id": 1, "epoch": 3}),
        (1, "UnfenceBrokerRecord", {"id": 1, "epoch": 3}),
        (3, "RemoveTopicRecord", {"topic_id": t(T1)}),
    ]
    assert [(d.offset, d.reason) for d in damage] == [
        (2, "batch of 1 record(s) skipped: unsupported compression snappy")]


def test_framing_without_a_decoder(metadata_dir: Path) -> None:
    records = list(kl.iter_segment(metadata_dir / "00000000000000000000.log", None))
    assert {r.type_name for r in records} == {"unknown"}
    assert [r.api_key for r in records[:6]] == [None, 12, 20, 0, 0, 0]
    assert [r.version for r in records[3:6]] == [1, 2, 3]
    assert records[0].control_type == kl.LEADER_CHANGE


def test_leader_change_v1_and_decode_value() -> None:
    dir_id = uuid.UUID("12345678-1234-4321-8765-123456789abc")
    v1 = DECODER.decode_control(2, w.leader_change(1, [1, 2], [1], version=1, directory_ids={1: dir_id}))
    assert v1 is not None and (v1.type_name, v1.version) == ("LeaderChangeMessage", 1)
    assert v1.fields == {"version": 1, "leader_id": 1,
                         "voters": [{"voter_id": 1, "voter_directory_id": t(dir_id)},
                                    {"voter_id": 2, "voter_directory_id": None}],
                         "granting_voters": [{"voter_id": 1, "voter_directory_id": t(dir_id)}]}
    _, api_key, version, body = kl.parse_frame(w.unregister_broker(7, 42))
    decoded = decode_value(api_key, version, body)
    assert decoded is not None
    assert (decoded.type_name, decoded.version, decoded.fields) == (
        "UnregisterBrokerRecord", 0, {"broker_id": 7, "broker_epoch": 42})
    assert decode_value(6, 0, b"\x00") is None  # api key 6 is unused
    assert decode_value(1, 1, body) is None  # UnregisterBrokerRecord has only v0
    # an unknown tagged field is kept, not dropped
    _, _, _, body = kl.parse_frame(w.frame(8, 0, w.int32(1) + w.int64(3) + w.tagged({9: b"\xca\xfe"})))
    assert decode_value(8, 0, body).fields == {"id": 1, "epoch": 3, "_unknown_tags": {9: "cafe"}}  # type: ignore[union-attr]


# ------------------------------------------------------------------------------------------------
# Snapshots

VOTER_DIRS = {v: uuid.UUID(int=0xD000 + v) for v in (3000, 3001, 3002)}


def snapshot_batches(with_footer: bool = True) -> list[bytes]:
    voters = [(v, VOTER_DIRS[v], [("CONTROLLER", f"c{v}.example", 9093)], (0, 1)) for v in (3000, 3001, 3002)]
    out = [
        w.batch(0, 2, TS0, [w.snapshot_header(TS0 - 500)], control_type=w.SNAPSHOT_HEADER),
        w.batch(1, 2, TS0, [w.kraft_version(1), w.voters_record(voters)], control_type=w.KRAFT_VOTERS,
                keys=[w.control_key(w.KRAFT_VERSION), w.control_key(w.KRAFT_VOTERS)]),
        w.batch(3, 2, TS0, [w.feature_level("metadata.version", 21),
                            w.register_broker(3, 1, INC[1], 3, [("PLAINTEXT", "b1.example", 9092, 0)], [MV], None,
                                              fenced=False),
                            w.topic("orders", T1),
                            w.partition(0, 0, T1, [1], [1], [], [], 1, 0, 0)]),
    ]
    if with_footer:
        out.append(w.batch(7, 2, TS0, [w.snapshot_footer()], control_type=w.SNAPSHOT_FOOTER))
    return out


def test_checkpoint(tmp_path: Path) -> None:
    path = w.write_file(tmp_path / kl.snapshot_file_name(25, 2), snapshot_batches())
    damage: list[Damage] = []
    records = list(kl.iter_checkpoint(path, DECODER, on_damage=damage.append))
    assert damage == []
    assert [(r.offset, r.control, r.control_type, r.type_name) for r in records] == [
        (0, True, 3, "SnapshotHeaderRecord"), (1, True, 5, "KRaftVersionRecord"), (2, True, 6, "VotersRecord"),
        (3, False, None, "FeatureLevelRecord"), (4, False, None, "RegisterBrokerRecord"),
        (5, False, None, "TopicRecord"), (6, False, None, "PartitionRecord"), (7, True, 4, "SnapshotFooterRecord")]
    assert records[0].fields == {"version": 0, "last_contained_log_timestamp": TS0 - 500}
    assert records[1].fields == {"version": 0, "k_raft_version": 1}
    assert records[2].fields == {"version": 0, "voters": [
        {"voter_id": v, "voter_directory_id": t(VOTER_DIRS[v]),
         "endpoints": [{"name": "CONTROLLER", "host": f"c{v}.example", "port": 9093}],
         "k_raft_version_feature": {"min_supported_version": 0, "max_supported_version": 1}}
        for v in (3000, 3001, 3002)]}
    assert records[4].fields["fenced"] is False and records[4].fields["log_dirs"] == []
    assert records[7].fields == {"version": 0}
    assert {r.leader_epoch for r in records} == {2}


def test_checkpoint_without_footer_is_damage(tmp_path: Path) -> None:
    path = w.write_file(tmp_path / "00000000000000000025-0000000002.checkpoint", snapshot_batches(with_footer=False))
    damage: list[Damage] = []
    records = list(kl.iter_checkpoint(path, DECODER, on_damage=damage.append))
    assert len(records) == 7
    assert damage == [Damage(7, "snapshot does not end with a SnapshotFooterRecord")]


def test_checkpoint_without_header_is_damage(tmp_path: Path) -> None:
    path = w.write_file(tmp_path / "x.checkpoint", snapshot_batches()[2:])
    damage: list[Damage] = []
    records = list(kl.iter_checkpoint(path, DECODER, on_damage=damage.append))
    assert len(records) == 5
    assert damage == [Damage(3, "snapshot does not start with a SnapshotHeaderRecord")]


# ------------------------------------------------------------------------------------------------
# Buffers and decoders as callers hand them over


def test_mmap_memoryview_and_bytearray_buffers(metadata_dir: Path) -> None:
    import mmap

    path = metadata_dir / "00000000000000000000.log"
    expected = build(SEGMENT_0)[1]
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        assert list(kl.iter_records(mm, decode_value, start=0, on_damage=pytest.fail)) == expected
    data = path.read_bytes()
    assert list(kl.iter_records(bytearray(data), DECODER)) == expected
    assert list(kl.iter_records(memoryview(data), DECODER)) == expected
    # `start` is a byte position: begin at the third batch
    third = sum(b.size for b in list(kl.iter_batches(data))[:2])
    assert [r.offset for r in kl.iter_records(data, DECODER, start=third)] == list(range(3, 23))


def test_a_bare_callable_decodes_metadata_records_only(metadata_dir: Path) -> None:
    def decode(api_key: int, version: int, body: bytes) -> kl.DecodedValue | None:
        return DECODER.decode_record(api_key, version, body)

    records = list(kl.iter_segment(metadata_dir / "00000000000000000000.log", decode))
    assert records[0].type_name == "unknown" and records[0].control_type == kl.LEADER_CHANGE
    assert records[1:] == build(SEGMENT_0)[1][1:]


def test_record_damage_without_a_callback_raises(tmp_path: Path) -> None:
    path = w.write_file(tmp_path / "a.log", [w.batch(0, 1, TS0, [w.no_op(), w.topic("x", T1) + b"\x00"])])
    seen = []
    with pytest.raises(kl.KraftLogError, match="garbage after TopicRecord") as info:
        for r in kl.iter_segment(path, DECODER):
            seen.append(r.type_name)
    assert seen == ["NoOpRecord"] and info.value.damage.offset == 1


def test_empty_files(tmp_path: Path) -> None:
    empty = w.write_file(tmp_path / "00000000000000000000.log", [])
    assert list(kl.iter_segment(empty, DECODER)) == []
    damage: list[Damage] = []
    assert list(kl.iter_checkpoint(empty, DECODER, on_damage=damage.append)) == []
    assert damage == [Damage(-1, "snapshot holds no records")]


# Record values exactly as a real Kafka 4.3.1 controller wrote them (a sandbox's __cluster_metadata-0,
# offsets 1, 9, 11, 14, 19, 21, 34), with what `DumpLogSegments --cluster-metadata-decoder` printed for them.
REAL_4_3_1: dict[str, tuple[str, int, int, dict[str, Any]]] = {
    "BeginTransactionRecord": ("01170001001212426f6f747374726170207265636f726473", 23, 0,
                               {"name": "Bootstrap records"}),
    "EndTransactionRecord": ("01180000", 24, 0, {}),
    "RegisterControllerRecord": (
        "011b0000000bbb1ef5dc7cab8843b6a7335b5e07206b2200020b434f4e54524f4c4c45520a3132372e302e302e31d1b7000000080e67"
        "726f75702e76657273696f6e00000001000e6b726166742e76657273696f6e0000000100116d657461646174612e76657273696f6e"
        "0007001e000e73686172652e76657273696f6e00000001001073747265616d732e76657273696f6e0000000100147472616e736163"
        "74696f6e2e76657273696f6e000000020021656c696769626c652e6c65616465722e7265706c696361732e76657273696f6e000000"
        "010000", 27, 0,
        {"controller_id": 3003, "incarnation_id": "HvXcfKuIQ7anM1teByBrIg", "zk_migration_ready": False}),
    "RegisterBrokerRecord": (
        "01000400000001002c8e64cd2665473ab4cc31efdbd9f705000000000000000e020a504c41494e544558540a3132372e302e302e31"
        "d58f000000081073747265616d732e76657273696f6e00000001000e67726f75702e76657273696f6e00000001000e6b726166742e"
        "76657273696f6e00000001000e73686172652e76657273696f6e0000000100116d657461646174612e76657273696f6e0007001e00"
        "21656c696769626c652e6c65616465722e7265706c696361732e76657273696f6e0000000100147472616e73616374696f6e2e7665"
        "7273696f6e0000000200000100010011028b635b249bb7036badef8418612b4ee2", 0, 4,
        {"broker_id": 1, "incarnation_id": "LI5kzSZlRzq0zDHv29n3BQ", "broker_epoch": 14, "fenced": True,
         "in_controlled_shutdown": False, "rack": None, "log_dirs": ["i2NbJJu3A2ut74QYYStO4g"]}),
    "BrokerRegistrationChangeRecord v3": ("01110300000001000000000000000e01030101", 17, 3,
                                          {"broker_id": 1, "broker_epoch": 14, "cordoned_log_dirs": []}),
    "BrokerRegistrationChangeRecord unfence": ("01110000000001000000000000000e010001ff", 17, 0,
                                               {"broker_id": 1, "broker_epoch": 14, "fenced": -1}),
    "BrokerRegistrationChangeRecord fence": ("01110000000002000000000000000f01000101", 17, 0,
                                             {"broker_id": 2, "broker_epoch": 15, "fenced": 1}),
    # Kafka 3.9.1 (KRaft) writes this one at offset 3 of a new cluster; 4.3.1 no longer does
    "ZkMigrationStateRecord": ("0115000000", 21, 0, {"zk_migration_state": 0}),
}


@pytest.mark.parametrize("name", sorted(REAL_4_3_1))
def test_record_types_and_versions_kafka_4_3_1_writes(name: str) -> None:
    value, api_key, version, expected = REAL_4_3_1[name]
    frame_version, key, ver, body = kl.parse_frame(bytes.fromhex(value))
    assert (frame_version, key, ver) == (1, api_key, version)
    decoded = decode_value(key, ver, body)
    assert decoded is not None and decoded.type_name == name.split()[0] and decoded.version == version
    assert {k: decoded.fields[k] for k in expected} == expected
    assert "_unknown_tags" not in decoded.fields
    if name == "RegisterBrokerRecord":
        assert [e["port"] for e in decoded.fields["end_points"]] == [54671]
        assert decoded.fields["cordoned_log_dirs"] is None  # tag 1 absent: Kafka's default, null


# ClearElrRecord v0 values as Kafka 4.3.1's own serializer writes them (MetadataRecordSerde.INSTANCE.write of
# `new ClearElrRecord().setTopicName(...)`, run against kafka-metadata-4.3.1.jar): one topic, and "" for all.
CLEAR_ELR_4_3_1 = {"orders": "011c00076f726465727300", "": "011c000100"}


@pytest.mark.parametrize("topic", sorted(CLEAR_ELR_4_3_1))
def test_clear_elr_record_is_decoded_not_unknown(topic: str, tmp_path: Path) -> None:
    value = bytes.fromhex(CLEAR_ELR_4_3_1[topic])
    assert w.clear_elr(topic) == value  # the test writer agrees with Kafka byte for byte
    frame_version, key, ver, body = kl.parse_frame(value)
    assert (frame_version, key, ver) == (1, 28, 0)
    assert decode_value(key, ver, body) == kl.DecodedValue("ClearElrRecord", 0, {"topic_name": topic})
    # in a segment, between other records: decoded, no damage, nothing unknown
    path = w.write_file(tmp_path / "00000000000000000000.log", [
        w.batch(0, 1, TS0, [w.topic("orders", T1), w.clear_elr(topic), w.no_op()])])
    records, damage = read(path)
    assert damage == []
    assert [(r.type_name, r.api_key, r.version, dict(r.fields)) for r in records] == [
        ("TopicRecord", 2, 0, {"name": "orders", "topic_id": t(T1)}),
        ("ClearElrRecord", 28, 0, {"topic_name": topic}),
        ("NoOpRecord", 20, 0, {}),
    ]
