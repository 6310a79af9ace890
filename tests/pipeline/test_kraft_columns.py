"""kadmin.pipeline.arrow.kraft_log_batches (KRaft partition records straight into Arrow columns) against the
row path (`kadmin.pipeline.ingest.parse_range`: kraft_log.iter_records, the fields dict, ev.kraft_events), event
for event, damage rows included, over metadata logs of every shape the hand reader takes or leaves: the
partition records Kafka writes and the ones it writes rarely, records that do not decode, a batch whose records
do not frame, a gzip batch, control batches, a CRC mismatch, a torn tail, and byte-by-byte corruption.
A real cluster's log is compared in tests/kafka/test_real_kraft_history.py."""

from __future__ import annotations

import random
import uuid
from pathlib import Path

import pytest

import tests.support.kraft_log_writer as W
from kadmin.pipeline import events as ev
from tests.unit.test_kraft_fast import PARTITIONS, T1, T2

T0 = 1_700_000_000_000


def _values() -> list[bytes]:
    values = [W.topic("orders", T1), W.topic("payments", T2)] + [w(*a, **k) for w, a, k in PARTITIONS]
    values += [W.register_broker(2, 1, uuid.UUID(int=11), 1, [("PLAINTEXT", "b1", 9092, 0)], [], None),
               W.fence_broker(1, 5), W.unfence_broker(1, 5), W.broker_registration_change(2, 1, 5, fenced=1),
               W.remove_topic(T2), W.no_op(), W.clear_elr("orders"),
               W.partition(2, 9, T1, [1], [1], [], [], 1, 0, 0)[:-3],  # cut: does not decode
               W.partition_change(2, 0, T1, isr=[1])[:-1] + b"\x07",  # a wrong last byte
               W.frame(3, 2, b""), W.frame(5, 2, b"\x00" * 19),  # bodies too short
               W.frame(3, 2, b"", frame_version=2),  # another frame version
               W.frame(200, 2, b"\x00"),  # an apiKey of two bytes
               W.frame(3, 200, b"\x00")]  # a version of two bytes
    return values


def kraft_log(path: Path) -> Path:
    """Every value above in batches of 4, control batches around them, a gzip batch and a batch whose
    RecordsCount says one more record than it holds."""
    values = _values()
    batches, off = W.log_batches(values, 4, T0)
    batches.append(W.compressed_batch(off, 2, T0 + 1000 * off, [W.partition_change(2, 3, T1, leader=1),
                                                                W.topic("gz", T2)]))
    off += 2
    bad = bytearray(W.batch(off, 2, T0 + 1000 * off, [W.partition_change(2, 4, T1, isr=[2])]))
    bad[57:61] = (2).to_bytes(4, "big")  # RecordsCount 2 of 1 (after the CRC: fixed below)
    batches.append(_recrc(bytes(bad)))
    off += 1
    batches.append(W.batch(off, 2, T0 + 1000 * off, [W.partition_change(2, 5, T1, leader=2)]))
    return W.write_file(path, batches)


def _recrc(b: bytes) -> bytes:
    import crc32c

    return b[:17] + crc32c.crc32c(b[21:]).to_bytes(4, "big") + b[21:]


def _both(path: Path, start: int = 0) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    from kadmin.pipeline.arrow import parse_range_batches
    from kadmin.pipeline.ingest import crc32c_impl, parse_range

    work = ("kraft-log", str(path), start, None)
    crc = crc32c_impl()[1]
    expected = list(parse_range(work, "c", None, crc))
    got = [tuple(r[c] for c in ev.COLUMNS) for b in parse_range_batches(work, "c", None, crc) for r in b.to_pylist()]
    return expected, got


def test_the_columns_hold_the_row_paths_events_on_every_shape(tmp_path: Path) -> None:
    path = kraft_log(tmp_path / "00000000000000000000.log")
    expected, got = _both(path)
    assert got == expected
    events = [r[4] for r in expected]
    assert events.count("partition_state") >= 8 and events.count("partition_change") >= 10
    assert {"topic_created", "topic_deleted", "broker_registered", "broker_fenced", "quorum_leader_changed",
            "unknown", "_damage"} <= set(events)
    damage = [r[14] for r in expected if r[4] == "_damage"]
    assert any("skipped" in d for d in damage) and any("does not" in d or "apiKey" in d for d in damage)


def test_the_columns_hold_the_row_paths_events_on_a_torn_and_a_corrupted_log(tmp_path: Path) -> None:
    """Every cut of the log's tail, and single bytes flipped all over it (most fail the CRC, which ends the
    read; the ones before it and the ones after the batch headers' CRC range do not)."""
    data = kraft_log(tmp_path / "whole.log").read_bytes()
    path = tmp_path / "00000000000000000000.log"
    rng = random.Random(24)
    cuts = sorted({*range(len(data) - 200, len(data)), *rng.sample(range(len(data)), 60)})
    flips = sorted(rng.sample(range(len(data)), 150))
    for cut in cuts:
        path.write_bytes(data[:cut])
        expected, got = _both(path)
        assert got == expected, cut
    for at in flips:
        broken = bytearray(data)
        broken[at] ^= 0x5A
        path.write_bytes(bytes(broken))
        expected, got = _both(path)
        assert got == expected, at


def test_the_columns_start_where_the_range_starts_and_are_cut_at_the_batch_size(tmp_path: Path) -> None:
    from kadmin.pipeline.arrow import kraft_log_batches
    from kadmin.pipeline.ingest import parse_range

    path = kraft_log(tmp_path / "00000000000000000000.log")
    second = len(W.leader_change_batch(T0))
    expected, got = _both(path, second)
    assert got == expected and expected[0][2] == 1
    rows = [r for r in parse_range(("kraft-log", str(path), 0, None), "c", None) if r[4] != "_damage"]
    batches = list(kraft_log_batches(str(path), 0, "c", lambda d: None, rows=3))
    assert [b.num_rows for b in batches[:-1]] == [3] * (len(batches) - 1) and 0 < batches[-1].num_rows <= 3
    assert [tuple(r[c] for c in ev.COLUMNS) for b in batches for r in b.to_pylist()] == rows


@pytest.mark.parametrize("empty", [True, False])
def test_an_empty_or_zero_filled_log(tmp_path: Path, empty: bool) -> None:
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"" if empty else bytes(4096))
    expected, got = _both(path)
    assert got == expected and len(expected) == (0 if empty else 1)


def test_the_inline_record_reader_agrees_with_the_varint_readers() -> None:
    """kraft_log._plain_record (the record as KRaft writes it, read inline) against _record (the varint readers)
    on every record body of the log above, each cut short, grown and with every byte changed: whenever the inline
    reader takes a body, the varint readers read the same fields from it (and take it without error)."""
    from kadmin.formats import kraft_log as kl

    bodies: list[bytes] = []
    data = b"".join(W.batch(i * 4, 1, T0, _values()[i * 4:i * 4 + 4]) for i in range(len(_values()) // 4))
    for batch in kl.iter_batches(data):
        section, pos = batch.payload, 0
        while pos < len(section):
            size, pos = kl.read_varint(section, pos)
            bodies.append(section[pos:pos + size])
            pos += size
    big = W.batch(0, 1, T0, [W.partition_change(2, i, T1, isr=[1]) for i in range(200)])  # offset deltas of 2 bytes
    section, pos = next(kl.iter_batches(big)).payload, 0
    while pos < len(section):
        size, pos = kl.read_varint(section, pos)
        bodies.append(section[pos:pos + size])
        pos += size
    rng = random.Random(13)
    taken = 0
    for body in bodies:
        changed = [body[:i] + bytes([b]) + body[i + 1:] for i in range(min(8, len(body)))
                   for b in (0x00, 0x01, 0x7F, 0x80, 0xFF, rng.randrange(256))]
        variants = [body, body[:-1], body + b"\x00", *changed]
        for v in variants:
            plain = kl._plain_record(v, len(v))
            if plain is None:
                continue
            taken += 1
            attributes, ts_delta, offset_delta, key, value, headers = kl._record(v, 0)
            assert (ts_delta, offset_delta, value) == plain and key is None and headers == (), v
    assert taken > len(bodies)
