"""kadmin.pipeline.kraft_fast: the hand-read partition records equal kafka-python's schema codec, field for
field, and `history ingest`'s executor rows of a KRaft log are the ones the schema codec gave."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

import tests.support.kraft_log_writer as W
from kadmin.cluster.metadata_records import DECODER
from kadmin.formats import kraft_log as kl
from kadmin.pipeline import kraft_fast
from kadmin.pipeline.kraft_fast import FAST_DECODER

T1, T2, ZERO = uuid.UUID(int=77), uuid.UUID("5b2f6c2e-9d4a-4e0b-8f7a-1c2d3e4f5a6b"), uuid.UUID(int=0)
D1, D2 = uuid.UUID(int=(1 << 127) + 5), uuid.UUID(int=2)

# (writer, args, kwargs): the shapes Kafka 4.x writes, and the ones it writes rarely or never
PARTITIONS: list[tuple[Any, ...]] = [
    (W.partition, (2, 0, T1, [1, 2, 3], [1, 2, 3], [], [], 1, 0, 0), {"directories": [D1, D2, D2]}),
    (W.partition, (2, 7, T2, [3, 1], [3], [2], [4], -1, 17, 40), {"directories": [ZERO, D1]}),
    (W.partition, (2, 1, ZERO, [], [], [], [], 2, 1, 1), {}),
    (W.partition, (2, 2, T1, list(range(1, 200)), list(range(1, 70)), [], [], 5, 2**31 - 1, -1),
     {"directories": [D2] * 199}),  # multi-byte array lengths, extreme epochs
    (W.partition, (2, 3, T1, [1, 2], [1], [], [], 1, 0, 0), {"leader_recovery_state": 1}),  # tagged: DECODER
    (W.partition, (2, 4, T1, [1, 2], [1], [], [], 1, 0, 0), {"elr": [2], "last_known_elr": []}),
    (W.partition, (1, 5, T1, [1, 2], [1, 2], [], [], 1, 0, 0), {"directories": [D1, D1]}),  # v1: DECODER
    (W.partition, (0, 6, T1, [1, 2], [1, 2], [], [], 1, 0, 0), {}),
    (W.partition_change, (2, 0, T1), {"isr": [1, 2]}),
    (W.partition_change, (2, 1, T2), {"leader": 3}),
    (W.partition_change, (2, 2, T1), {"leader": -1, "isr": []}),
    (W.partition_change, (2, 3, ZERO), {}),
    (W.partition_change, (2, 4, T1), {"directories": [D1, ZERO, D2]}),
    (W.partition_change, (2, 5, T1), {"isr": [1, 2, 3], "leader": 2, "replicas": [1, 2, 3], "removing": [4],
                                      "adding": [], "leader_recovery_state": 0, "directories": [D1, D1, D1]}),
    (W.partition_change, (2, 6, T1), {"leader_recovery_state": 1, "isr": list(range(300))}),
    (W.partition_change, (2, 7, T1), {"elr": [1], "last_known_elr": [2]}),  # ELR tags: DECODER
    (W.partition_change, (1, 8, T1), {"isr": [1], "directories": [D1]}),  # v1: DECODER
    (W.partition_change, (0, 9, T1), {"leader": 1}),
]


def _body(value: bytes) -> tuple[int, int, bytes]:
    _, api_key, version, body = kl.parse_frame(value)
    return api_key, version, body


def _outcome(decoder: Any, api_key: int, version: int, body: bytes) -> Any:
    try:
        got = decoder.decode_record(api_key, version, body)
    except ValueError as e:
        return ("error", str(e))
    return None if got is None else (got.type_name, got.version, list(got.fields.items()))


@pytest.mark.parametrize("case", range(len(PARTITIONS)))
def test_fast_decoder_gives_the_schema_codecs_fields_key_for_key(case: int) -> None:
    writer, args, kwargs = PARTITIONS[case]
    api_key, version, body = _body(writer(*args, **kwargs))
    expected = _outcome(DECODER, api_key, version, body)
    assert expected is not None and expected[0] != "error"
    assert _outcome(FAST_DECODER, api_key, version, body) == expected


@pytest.mark.parametrize("case", range(len(PARTITIONS)))
def test_broken_bodies_fail_as_the_schema_codec_fails(case: int) -> None:
    """Every truncation and a byte of garbage: the same ValueError (message included) or the same fields."""
    writer, args, kwargs = PARTITIONS[case]
    api_key, version, body = _body(writer(*args, **kwargs))
    for broken in [body[:n] for n in range(len(body))] + [body + b"\x00", body + b"\x01\x02"]:
        assert _outcome(FAST_DECODER, api_key, version, broken) == _outcome(DECODER, api_key, version, broken)


def test_other_records_and_control_records_go_to_the_schema_codec() -> None:
    for value in (W.topic("orders", T1), W.remove_topic(T1), W.fence_broker(1, 5), W.no_op(), W.clear_elr("orders")):
        api_key, version, body = _body(value)
        assert _outcome(FAST_DECODER, api_key, version, body) == _outcome(DECODER, api_key, version, body)
    assert FAST_DECODER(*_body(W.clear_elr(""))) == kl.DecodedValue("ClearElrRecord", 0, {"topic_name": ""})
    assert FAST_DECODER.decode_control == DECODER.decode_control


def _log(d: Path) -> Path:
    """A metadata log with every case above, other records around them, and a damaged partition record."""
    t0 = 1_700_000_000_000
    values = [W.topic("orders", T1), W.topic("payments", T2)] + [w(*a, **k) for w, a, k in PARTITIONS]
    batches, off = W.log_batches(values, 5, t0)
    bad = W.partition(2, 9, T1, [1], [1], [], [], 1, 0, 0, directories=[D1])[:-3]  # cut: does not decode
    batches.append(W.batch(off, 2, t0 + 1000 * off, [bad, W.partition_change(2, 0, T1, isr=[1])]))
    return W.write_file(d / "__cluster_metadata-0" / "00000000000000000000.log", batches)


def test_ingest_rows_of_a_kraft_log_are_the_schema_codecs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`parse_range` (what every executor runs; the table is computed from these rows alone) with the fast
    decoder, then with the schema codec in its place: the same rows, damage rows included."""
    from kadmin.pipeline.ingest import parse_range

    work = ("kraft-log", str(_log(tmp_path)), 0, None)
    fast = list(parse_range(work, "c", None))
    monkeypatch.setattr(kraft_fast, "FAST_DECODER", DECODER)
    before = list(parse_range(work, "c", None))
    assert fast == before
    events = [r[4] for r in before]
    assert events.count("partition_state") == 8 and events.count("partition_change") >= 10
    assert "_damage" in events
