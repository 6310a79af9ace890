"""The Arrow executor path of `history ingest` against the row path it replaced (kept as the reference:
`kadmin.pipeline.ingest.parse_range` and `ingest(..., executor="rows")`): the same events, value for
value, range by range and in the written table; and which CRC-32C implementation runs."""

from __future__ import annotations

import json
import struct
import sys
import uuid
import zlib
from pathlib import Path
from typing import Any

import pytest

import tests.support.kraft_log_writer as W
from kadmin.pipeline import events as ev

pytestmark = pytest.mark.integration


# ---------------------------------------------------------------------------- inputs
def _s(text: str | None) -> bytes:
    if text is None:
        return struct.pack(">i", -1)
    b = text.encode()
    return struct.pack(">i", len(b)) + b


def _buf(data: bytes | None) -> bytes:
    return struct.pack(">i", -1) if data is None else struct.pack(">i", len(data)) + data


def zk_log(records: list[tuple[int, bytes]], t0: int = 1_700_000_000_000) -> bytes:
    """A ZooKeeper txn log of (type, body) records: zxids 1.., sessions 0x100 + i."""
    out = bytearray(struct.pack(">4siq", b"ZKLG", 2, 0))
    for i, (code, body) in enumerate(records, 1):
        txn = struct.pack(">qiqqi", 0x100 + i, i, i, t0 + i * 10, code) + body
        out += struct.pack(">qi", zlib.adler32(txn), len(txn)) + txn + b"B"
    return bytes(out)


def set_data(path: str, data: bytes | None, version: int = 1) -> tuple[int, bytes]:
    return 5, _s(path) + _buf(data) + struct.pack(">i", version)


def create(path: str, data: bytes | None, ephemeral: bool = False) -> tuple[int, bytes]:
    acl = struct.pack(">ii", 1, 31) + _s("world") + _s("anyone")
    return 1, _s(path) + _buf(data) + acl + bytes([1 if ephemeral else 0]) + struct.pack(">i", 0)


def state(leader: Any, isr: Any, epoch: int = 1, **extra: Any) -> bytes:
    return json.dumps({"controller_epoch": 3, "leader": leader, "version": 1, "leader_epoch": epoch, "isr": isr,
                       **extra}).encode()


def edge_log() -> bytes:
    """State writes of every shape the Arrow fast path sees, among the other events."""
    st = "/kafka/brokers/topics/t{}/partitions/{}/state"
    recs = [create("/kafka/brokers/ids/1", b'{"port":9092}', ephemeral=True),
            create("/kafka/controller", b'{"brokerid":1}', ephemeral=True),
            create("/kafka/brokers/topics/t0", b"{}"),
            create(st.format(0, 0), state(1, [1, 2])),
            set_data(st.format(0, 0), state(2, [2])),
            set_data(st.format(0, 0), state(2, [2, 1], 2)),
            set_data(st.format(0, 1), state(None, None)),  # nulls
            set_data(st.format(0, 1), b"{}"),  # no fields at all
            set_data(st.format(0, 1), state(3, "not a list")),
            set_data(st.format(0, 1), b"not json"),
            set_data(st.format(0, 1), b"[1, 2]"),  # JSON, not an object
            set_data(st.format(0, 1), b"\xff\xfe"),  # not UTF-8
            set_data(st.format(0, 1), b"[" * 100_000 + b"]" * 100_000),  # too deep to parse
            set_data(st.format(0, 1), b'{"leader":' + b"9" * 5000 + b"}"),  # beyond the int-conversion limit
            set_data(st.format(0, 1), None),  # a null buffer
            set_data(st.format(0, 2), state(1, [1, 2, 3], 7, extra="x")),
            set_data("/other/brokers/topics/t1/partitions/0/state", state(5, [5])),  # another chroot
            set_data("/brokers/topics/t2/partitions/3/state", state(6, [6, 7])),  # no chroot
            set_data("/kafka/brokers/topics/t0/partitions/x/state", state(1, [1])),  # not a partition number
            set_data("/kafka/controller_epoch", b"4"),
            set_data("/kafka/brokers/ids/1", b'{"port":9093}', version=2),
            (2, _s("/kafka/brokers/ids/1")),  # delete
            (-11, struct.pack(">i", 1) + _s("/kafka/controller"))]  # closeSession
    return zk_log(recs)


def kraft_log(d: Path) -> Path:
    d.mkdir(parents=True)
    tid = uuid.UUID(int=77)
    t0 = 1_700_000_000_000
    batches = [
        W.leader_change_batch(t0),
        W.batch(1, 1, t0 + 1000, [W.register_broker(2, 1, uuid.UUID(int=11), 1, [("PLAINTEXT", "b1", 9092, 0)],
                                                    [], None)]),
        W.batch(2, 1, t0 + 2000, [W.topic("orders", tid), W.partition(0, 0, tid, [1, 2], [1, 2], [], [], 1, 0, 0)]),
        W.batch(4, 1, t0 + 3000, [W.partition_change(0, 0, tid, isr=[1]), W.partition_change(0, 0, tid, leader=2)]),
    ]
    W.write_file(d / "00000000000000000000.log", batches)
    return d


@pytest.fixture(scope="module")
def inputs(zk_history: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One directory: the real ZooKeeper log, the edge-case log, a torn copy of the real log, a KRaft
    log and kadmin NDJSON."""
    logs, _, _ = zk_history
    base = tmp_path_factory.mktemp("arrow-inputs")
    (log,) = sorted(logs.glob("log.*"))
    (base / "zk").mkdir()
    (base / "zk" / log.name).write_bytes(log.read_bytes())
    (base / "edge").mkdir()
    (base / "edge" / "log.1").write_bytes(edge_log())
    (base / "torn").mkdir()
    from kadmin.formats import zk_txnlog

    data = log.read_bytes()
    txns = list(zk_txnlog.iter_txns(data))
    cut = txns[len(txns) * 2 // 3].offset
    (base / "torn" / "log.2").write_bytes(data[: cut + 20])  # a record torn in the middle
    kraft_log(base / "__cluster_metadata-0")
    (base / "watch.ndjson").write_text(
        '{"event": "registered", "id": 4, "epoch": 100, "old_epoch": null, "at": "2026-11-22T01:00:00.000Z"}\n'
        '{"event": "bounced", "id": 4, "epoch": 140, "old_epoch": 100, "at": "2026-11-22T01:05:00.000Z"}\n')
    return base


def work_items(inputs: Path, split: int) -> list[tuple[str, str, int, int | None]]:
    from kadmin.pipeline.ingest import discover, split_source

    return [w for s in discover([str(inputs)]).sources for w in split_source(s, split)]


# ---------------------------------------------------------------------------- range by range, no Spark
@pytest.mark.parametrize("chroot", [None, "/kafka"])
def test_arrow_batches_hold_the_row_paths_events_value_for_value(inputs, chroot):
    from kadmin.pipeline.arrow import parse_range_batches
    from kadmin.pipeline.ingest import parse_range

    items = work_items(inputs, 4096)  # small ranges: the real log is cut into several
    assert sum(1 for k, *_ in items if k == "zk-txnlog") > 4
    total = 0
    for w in items:
        expected = list(parse_range(w, "c", chroot))
        got = [tuple(r[c] for c in ev.COLUMNS) for b in parse_range_batches(w, "c", chroot) for r in b.to_pylist()]
        assert got == expected, w
        total += len(expected)
    kinds = {r[4] for w in items for r in parse_range(w, "c", chroot)}
    assert {"partition_state", "partition_change", "broker_registered", "_damage", "controller_epoch_changed",
            "topic_created"} <= kinds
    assert total > 50


def test_arrow_batches_are_cut_at_the_batch_size(inputs):
    from kadmin.pipeline.arrow import zk_txnlog_batches
    from kadmin.pipeline.ingest import parse_range

    path = str(inputs / "edge" / "log.1")
    expected = [r for r in parse_range(("zk-txnlog", path, 0, None), "c", None) if r[4] != "_damage"]
    batches = list(zk_txnlog_batches(path, 0, None, "c", None, lambda d: None, rows=3))
    assert [b.num_rows for b in batches[:-1]] == [3] * (len(batches) - 1) and 0 < batches[-1].num_rows <= 3
    assert [tuple(r[c] for c in ev.COLUMNS) for b in batches for r in b.to_pylist()] == expected


# ---------------------------------------------------------------------------- the whole job
def _table(spark: Any, out: Path) -> list[dict[str, Any]]:
    from kadmin.pipeline.table import Table

    return sorted((r.asDict() for r in Table(out).read(spark).collect()), key=lambda d: d["event_id"])


def _run(spark: Any, inputs: Path, out: Path, executor: str, chroot: str | None) -> Any:
    from kadmin.pipeline.ingest import discover, ingest
    from kadmin.pipeline.table import Table, new_run_id

    table = Table(str(out))
    table.prepare()
    run_id = new_run_id()
    with table.lock(run_id):
        table.recover()
        return ingest(spark, discover([str(inputs)]), "c", table, run_id, chroot, split_bytes=4096, executor=executor)


@pytest.mark.timeout(1800)  # two whole ingests of a dozen ranges: slow on a loaded 2-core machine
def test_arrow_ingest_writes_the_row_paths_table(spark, inputs, tmp_path, chroot=None):
    rows_summary = _run(spark, inputs, tmp_path / "rows", "rows", chroot)
    arrow_summary = _run(spark, inputs, tmp_path / "arrow", "arrow", chroot)
    expected, got = _table(spark, tmp_path / "rows"), _table(spark, tmp_path / "arrow")
    assert len(expected) > 40
    assert {r["event"] for r in expected} >= {"leader_changed", "isr_changed", "broker_registered", "topic_created"}
    diffs = [(a, b) for a, b in zip(expected, got, strict=False) if a != b]
    assert len(got) == len(expected) and not diffs, diffs[:3]
    for f in ("ranges", "events_parsed", "events_added", "damage"):
        assert getattr(arrow_summary, f) == getattr(rows_summary, f), f


# ---------------------------------------------------------------------------- CRC-32C
def test_crc32c_is_the_c_one_when_installed_and_the_pure_one_otherwise(monkeypatch):
    import crc32c  # noqa: F401 - in the spark extra the tests install: missing, this fails rather than skips

    from kadmin.formats import kraft_log
    from kadmin.pipeline.ingest import crc32c_impl

    name, fn = crc32c_impl()
    assert name.startswith("C ") and fn is not None
    data = bytes(range(256)) * 40
    assert fn(data) == kraft_log.crc32c(data)
    monkeypatch.setitem(sys.modules, "crc32c", None)  # as if not installed: import raises ImportError
    name, fn = crc32c_impl()
    assert name.startswith("pure Python") and fn is None


@pytest.mark.parametrize("installed", [True, False])
def test_history_ingest_v_says_which_crc32c_runs_and_both_read_kraft_logs(spark, run_nozk, inputs, tmp_path,
                                                                          monkeypatch, installed):
    import crc32c  # noqa: F401 - in the spark extra the tests install: missing, this fails rather than skips

    if not installed:
        monkeypatch.setitem(sys.modules, "crc32c", None)
    r = run_nozk("history", "ingest", str(inputs / "__cluster_metadata-0"), "--cluster", "k", "--out",
                 str(tmp_path / "events"), "-v", "-o", "json")
    assert r.exit_code == 0, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if "CRC-32C" in ln]
    want = "C (the crc32c package)" if installed else "pure Python"
    assert len(lines) == 1 and want in lines[0], r.stderr
    assert json.loads(r.stdout)["data"]["events_added"] == 6
    quiet = run_nozk("history", "ingest", str(inputs / "__cluster_metadata-0"), "--cluster", "k", "--out",
                     str(tmp_path / "events2"), "-o", "json")
    assert "CRC-32C" not in quiet.stderr


# ---------------------------------------------------------------------------- classification
def _two_pass_classify(df: Any, prior: Any = None) -> Any:
    """The events as they were shaped before issue 13 (two filtered copies of the windowed states, one per
    event kind), kept as the reference the one-pass `classify_partitions` must equal."""
    from pyspark.sql import functions as F

    from kadmin.pipeline.ingest import windowed_states

    others = df.filter(~F.col("event").isin("partition_state", "partition_change"))
    filled = windowed_states(df, prior)
    base = [c for c in df.columns if c not in ("event", "leader", "isr", "leader_epoch", "sub", "detail")]

    def shaped(event: str, cond: Any, sub_offset: int, detail: Any) -> Any:
        return filled.filter(cond).select(
            *base, F.lit(event).alias("event"), F.col("leader_f").alias("leader"), F.col("isr_f").alias("isr"),
            F.col("epoch_f").alias("leader_epoch"), (F.col("sub") * 2 + sub_offset).alias("sub"),
            detail.alias("detail"))

    prev = F.to_json(F.struct(F.col("prev_leader").alias("previous_leader"), F.col("prev_isr").alias("previous_isr")))
    lc = shaped("leader_changed", F.col("first") | (F.col("leader_f") != F.col("prev_leader")), 0, prev)
    ic = shaped("isr_changed", ~F.col("first") & (F.col("isr_f") != F.col("prev_isr")), 1, prev)
    cols = df.columns
    return others.select(*cols).unionByName(lc.select(*cols)).unionByName(ic.select(*cols))


@pytest.mark.timeout(1800)
def test_one_pass_classification_equals_the_two_pass_one(spark, inputs, tmp_path):
    """ZooKeeper states and KRaft changes (carried forward, topic ids joined), alone and after a prior
    ingest of part of the inputs (its last states seed the previous state)."""
    from pyspark.sql import functions as F

    from kadmin.pipeline.ingest import DAMAGE, classify_partitions, parse_range, spark_schema
    from kadmin.pipeline.table import Table

    rows = [r for w in work_items(inputs, 4096) for r in parse_range(w, "c", None)]
    raw = spark.createDataFrame(rows, spark_schema()).filter(F.col("event") != DAMAGE)
    assert raw.filter(F.col("event") == "partition_change").count() > 0  # KRaft carry-forward is covered
    half = next(p for p in sorted(inputs.rglob("*")) if p.is_file())  # one input file ingested before
    _run(spark, half, tmp_path / "prior", "arrow", None)
    prior = Table(str(tmp_path / "prior")).read(spark)
    for before in (None, prior):
        expected = _two_pass_classify(raw, before).collect()
        got = classify_partitions(raw, before).collect()
        assert len(expected) > 40 and sorted(map(tuple, got)) == sorted(map(tuple, expected))


@pytest.mark.timeout(1800)
def test_exact_duplicate_states_are_dropped_before_the_windows_and_add_no_event(spark, inputs):
    """The inputs twice (one log ingested from two controllers or ZooKeeper members): the windows see each
    state once, and the states' events are those of the inputs once (the other events come twice: the
    ingest's dropDuplicates on event_id takes them); a state that differs from another of the same
    position in one value is no duplicate."""
    from pyspark.sql import functions as F

    from kadmin.pipeline.ingest import DAMAGE, classify_partitions, parse_range, spark_schema, windowed_states

    rows = [r for w in work_items(inputs, 4096) for r in parse_range(w, "c", None)]
    raw = spark.createDataFrame(rows, spark_schema()).filter(F.col("event") != DAMAGE)
    twice = raw.unionByName(raw)
    n = windowed_states(raw).count()
    assert n > 10 and windowed_states(twice).count() == n
    once = [tuple(r) for r in classify_partitions(raw).collect()]
    changes = ("leader_changed", "isr_changed")
    expected = once + [r for r in once if r[4] not in changes]
    assert sorted(map(tuple, classify_partitions(twice).collect()), key=repr) == sorted(expected, key=repr)
    other = raw.filter(F.col("event") == "partition_state").withColumn("ts_ms", F.col("ts_ms") + 1)
    assert windowed_states(raw.unionByName(other)).count() == n + other.count()


# ---------------------------------------------------------------------------- the local JVM
def test_a_local_session_runs_in_a_small_jvm(spark):
    """local[N] (the executors inside the driver JVM): a 512 MiB heap and the serial collector, so a
    history job's JVM stays near 1 GiB instead of growing towards a quarter of the machine's memory."""
    jvm = spark.sparkContext._jvm
    assert jvm.java.lang.Runtime.getRuntime().maxMemory() <= 512 * 1024 * 1024
    collectors = {b.getName() for b in jvm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()}
    assert collectors == {"Copy", "MarkSweepCompact"}  # the serial collector's two generations
    assert jvm.java.lang.System.getenv("MALLOC_ARENA_MAX") == "2"  # glibc's arenas bounded outside the heap
