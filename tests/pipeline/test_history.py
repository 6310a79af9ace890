"""`kadmin history` on real Spark (local[2]) over logs a real ZooKeeper wrote while the sandbox's
brokers registered, bounced, moved the controller and changed ISRs; and over KRaft metadata logs
written with kio's record-batch writer and hand-encoded values."""

from __future__ import annotations

import json
import shutil
import uuid

import pytest

import tests.support.kraft_log_writer as W

pytestmark = pytest.mark.integration

COLUMNS = {"event_id", "cluster", "source", "position", "ts", "event", "broker_id", "epoch", "session", "topic",
           "partition", "leader", "leader_epoch", "isr", "controller_id", "detail", "date"}


def ingest(run_nozk, paths, out, cluster="prod"):
    r = run_nozk("history", "ingest", *map(str, paths), "--cluster", cluster, "--out", str(out), "-o", "json")
    return r.exit_code, json.loads(r.stdout), r.stderr


def report(run_nozk, out, kind, *extra):
    r = run_nozk("history", "report", str(out), kind, *extra, "-o", "json")
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)["data"]


def test_zookeeper_history_shows_exactly_the_bounces_with_live_czxids(spark, zk_history, run_nozk, tmp_path):
    logs, live, controller = zk_history
    out = tmp_path / "events"
    code, doc, err = ingest(run_nozk, [logs], out)
    assert code == 0, err
    added = doc["data"]["events_added"]
    assert added > 0 and doc["data"]["damage"] == []
    table = spark.read.parquet(str(out))
    assert set(table.columns) == COLUMNS
    assert {p.name for p in out.iterdir() if p.is_dir()} == {"cluster=prod"}

    gens = report(run_nozk, out, "generations")
    epochs = {}
    for g in gens:
        epochs.setdefault(g["broker_id"], []).append(g["epoch"])
    assert epochs == live  # KIP-380: the epoch derived from the log is the czxid a live read returned
    bounces = {b["broker_id"]: b["bounces"] for b in report(run_nozk, out, "bounces")}
    assert bounces == {1: 0, 2: 1, 3: 2}
    b2 = next(b for b in report(run_nozk, out, "bounces") if b["broker_id"] == 2)
    assert b2["downtime_max_ms"] >= 300
    ctl = [c for c in report(run_nozk, out, "controllers") if c["event"] == "elected"]
    assert [c["controller_id"] for c in ctl] == [1, controller] and ctl[-1]["controller_epoch"] == 2
    churn = {c["broker_id"]: c for c in report(run_nozk, out, "isr-churn")}
    assert churn[3]["isr_shrinks"] == 1 and churn[3]["isr_expands"] == 1
    ep = report(run_nozk, out, "epochs")
    assert max(p["max_broker_epoch"] or 0 for p in ep) == max(live[3])

    # re-ingesting the same files adds nothing twice
    code, doc, _ = ingest(run_nozk, [logs], out)
    assert code == 0 and doc["data"]["events_added"] == 0 and doc["data"]["events_parsed"] == added
    assert spark.read.parquet(str(out)).count() == added

    png = tmp_path / "timeline.png"
    r = run_nozk("history", "report", str(out), "generations", "--png", str(png))
    assert r.exit_code == 0 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_since_until_and_cluster_filters(spark, zk_history, run_nozk, tmp_path):
    logs, live, _ = zk_history
    out = tmp_path / "events"
    ingest(run_nozk, [logs], out, cluster="a")
    ingest(run_nozk, [logs], out, cluster="b")
    assert {p.name for p in out.iterdir() if p.is_dir()} == {"cluster=a", "cluster=b"}
    gens = report(run_nozk, out, "generations", "--cluster", "a")
    assert len(gens) == sum(len(v) for v in live.values())
    assert report(run_nozk, out, "generations", "--cluster", "a", "--until", "2000-01-01T00:00:00Z") == []


def test_damaged_log_keeps_what_came_before_and_exits_5(spark, zk_history, run_nozk, tmp_path):
    logs, live, _ = zk_history
    log = sorted(logs.glob("log.*"))[0]
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    copy = damaged / log.name
    data = bytearray(log.read_bytes())
    from kadmin.formats import zk_txnlog

    txns = list(zk_txnlog.iter_txns(bytes(data)))
    cut = txns[int(len(txns) * 0.9)].offset  # after the registrations
    copy.write_bytes(bytes(data[: cut + 20]))  # a record torn in the middle
    code, doc, err = ingest(run_nozk, [damaged], tmp_path / "events")
    assert code == 5
    d = doc["data"]["damage"]
    assert len(d) == 1 and d[0]["offset"] == cut and d[0]["file"].endswith(log.name)
    assert f"damaged at offset {cut}" in err
    assert doc["data"]["events_added"] > 0


def test_kraft_metadata_log(spark, run_nozk, tmp_path):
    d = tmp_path / "__cluster_metadata-0"
    tid = uuid.UUID(int=77)
    inc = [uuid.UUID(int=i) for i in (11, 12, 13)]
    t0 = 1_700_000_000_000
    batches = [
        W.batch(0, 1, t0, [W.leader_change(3000, [3000, 3001, 3002], [3000, 3001])], control_type=W.LEADER_CHANGE),
        W.batch(1, 1, t0 + 1000, [W.register_broker(2, b, inc[b - 1], 1 + b - 1, [("PLAINTEXT", f"b{b}", 9092, 0)],
                                                    [], None) for b in (1, 2, 3)]),
        W.batch(4, 1, t0 + 2000, [W.unfence_broker(b, 1 + b - 1) for b in (1, 2, 3)]),
        W.batch(7, 1, t0 + 3000, [W.topic("orders", tid),
                                  W.partition(0, 0, tid, [1, 2, 3], [1, 2, 3], [], [], 1, 0, 0)]),
        W.batch(9, 1, t0 + 4000, [W.broker_registration_change(1, 2, 2, fenced=1),
                                  W.partition_change(0, 0, tid, isr=[1, 3]),
                                  W.partition_change(0, 0, tid, leader=3)]),
        W.batch(12, 2, t0 + 6000, [W.leader_change(3001, [3000, 3001, 3002], [3001, 3002])],
                control_type=W.LEADER_CHANGE),
        W.batch(13, 2, t0 + 7000, [W.register_broker(2, 2, uuid.UUID(int=99), 13, [("PLAINTEXT", "b2", 9092, 0)],
                                                     [], None),
                                   W.partition_change(0, 0, tid, isr=[1, 3, 2])]),
    ]
    W.write_file(d / "00000000000000000000.log", batches)
    code, doc, err = ingest(run_nozk, [d], tmp_path / "events", cluster="kraft")
    assert code == 0, err
    out = tmp_path / "events"
    gens = report(run_nozk, out, "generations")
    assert [(g["broker_id"], g["epoch"]) for g in gens] == [(1, 1), (2, 2), (2, 13), (3, 3)]
    ctl = [(c["controller_id"], c["controller_epoch"]) for c in report(run_nozk, out, "controllers")]
    assert ctl == [(3000, 1), (3001, 2)]
    rows = spark.read.parquet(str(out)).filter("event in ('isr_changed', 'leader_changed')").orderBy("position")
    got = [(r.event, r.topic, r.partition, r.leader, list(r.isr)) for r in rows.collect()]
    assert got == [("leader_changed", "orders", 0, 1, [1, 2, 3]), ("isr_changed", "orders", 0, 1, [1, 3]),
                   ("leader_changed", "orders", 0, 3, [1, 3]), ("isr_changed", "orders", 0, 3, [1, 3, 2])]
    fenced = spark.read.parquet(str(out)).filter("event = 'broker_fenced'").collect()
    assert [(r.broker_id, r.epoch) for r in fenced] == [(2, 2)]


def iso_ms(text):
    from datetime import datetime

    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


def kraft_log(path, t0, steps):
    """A metadata log of one record batch per step: (seconds after t0, [record values])."""
    batches, offset = [], 0
    for sec, values in steps:
        batches.append(W.batch(offset, 1, t0 + int(sec * 1000), values, step_ms=0))
        offset += len(values)
    return W.write_file(path / "00000000000000000000.log", batches)


def test_kraft_fence_episodes_are_no_bounce_and_no_downtime(spark, run_nozk, tmp_path):
    """Fenced and unfenced again at the same broker epoch (heartbeats lapsed, then resumed): the generation goes on,
    with a fence episode; a controlled shutdown or a fence followed by a new registration stays a bounce."""
    d = tmp_path / "__cluster_metadata-0"
    tid = uuid.UUID(int=78)
    t0 = 1_700_000_000_000
    inc = {b: uuid.UUID(int=100 + b) for b in (1, 2, 3)}

    def reg(b, epoch, incarnation):
        return W.register_broker(2, b, incarnation, epoch, [("PLAINTEXT", f"b{b}", 9092, 0)], [], None)

    def isr(*replicas):
        return W.partition_change(0, 0, tid, isr=list(replicas))

    kraft_log(d, t0, [
        (1, [reg(b, b, inc[b]) for b in (1, 2, 3)]),
        (2, [W.broker_registration_change(1, b, b, fenced=-1) for b in (1, 2, 3)]),
        (3, [W.topic("orders", tid), W.partition(0, 0, tid, [1, 2, 3], [1, 2, 3], [], [], 1, 0, 0)]),
        # broker 2 paused past its session: fenced (out of the ISR), then unfenced at the same epoch (back in)
        (4, [W.broker_registration_change(1, 2, 2, fenced=1), isr(1, 3)]),
        (9, [W.broker_registration_change(1, 2, 2, fenced=-1)]),
        (10, [isr(1, 3, 2)]),
        # broker 3 restarted cleanly: controlled shutdown, fenced, a new registration (epoch 20) 3 s later
        (12, [W.broker_registration_change(1, 3, 3, in_controlled_shutdown=1), isr(1, 2)]),
        (13, [W.broker_registration_change(1, 3, 3, fenced=1)]),
        (15, [reg(3, 20, uuid.UUID(int=203)), W.broker_registration_change(1, 3, 20, fenced=-1)]),
        (16.5, [isr(1, 2, 3)]),
        # broker 1, older metadata versions' records: FenceBrokerRecord then UnfenceBrokerRecord, same epoch
        (20, [W.fence_broker(1, 1), isr(2, 3)]),
        (20.5, [W.unfence_broker(1, 1)]),
        (21, [isr(2, 3, 1)]),
        # broker 2 restarted cleanly later: its downtime runs from the controlled shutdown, not from the old fence
        (25, [W.broker_registration_change(1, 2, 2, in_controlled_shutdown=1)]),
        (26, [W.broker_registration_change(1, 2, 2, fenced=1)]),
        (27, [reg(2, 40, uuid.UUID(int=202))]),
    ])
    out = tmp_path / "events"
    code, _, err = ingest(run_nozk, [d], out, cluster="kraft")
    assert code == 0, err

    gens = report(run_nozk, out, "generations")
    # broker 1 and 2's first generations go on through their fences; broker 2's downtime is 2 s, not 23 s
    assert [(g["broker_id"], g["epoch"], g["end"] and iso_ms(g["end"]) - t0, g["gap_ms"]) for g in gens] == [
        (1, 1, None, None), (2, 2, 25_000, 2_000), (2, 40, None, None), (3, 3, 12_000, 3_000), (3, 20, None, None)]
    assert [(g["fence_episodes"], g["fenced_ms"]) for g in gens] == [(1, 500), (1, 5_000), (0, 0), (0, 0), (0, 0)]
    bounces = {b["broker_id"]: b for b in report(run_nozk, out, "bounces")}
    assert {b: (s["bounces"], s["downtime_p50_ms"], s["downtime_max_ms"]) for b, s in bounces.items()} == {
        1: (0, None, None), 2: (1, 2_000, 2_000), 3: (1, 3_000, 3_000)}
    assert {b: (s["fence_episodes"], s["fenced_ms"], s["fenced_max_ms"]) for b, s in bounces.items()} == {
        1: (1, 500, 500), 2: (1, 5_000, 5_000), 3: (0, 0, None)}
    # the max broker epoch does not move at a fence episode, only when a generation ends or starts
    epochs = [(iso_ms(p["at"]) - t0, p["max_broker_epoch"], p["broker_id"]) for p in report(run_nozk, out, "epochs")]
    assert epochs == [(1_000, 1, 1), (1_000, 2, 2), (1_000, 3, 3), (12_000, 2, 2), (15_000, 20, 3),
                      (27_000, 40, 2)]
    churn = {c["broker_id"]: c for c in report(run_nozk, out, "isr-churn")}
    assert {b: (c["isr_shrinks"], c["isr_expands"], c["rejoins"], c["rejoin_p50_ms"]) for b, c in churn.items()} == {
        1: (1, 1, 0, None), 2: (1, 1, 0, None), 3: (1, 1, 1, 1_500)}
    png = tmp_path / "timeline.png"
    r = run_nozk("history", "report", str(out), "generations", "--png", str(png))
    assert r.exit_code == 0 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_history_report_keys_are_the_versioned_contract(spark, run_nozk, tmp_path):
    """The keys of each report's rows: keys may be added, never renamed or removed (docs/json.md)."""
    d = tmp_path / "__cluster_metadata-0"
    t0 = 1_700_000_000_000
    tid = uuid.UUID(int=79)
    W.write_file(d / "00000000000000000000.log", [
        W.batch(0, 1, t0, [W.register_broker(2, 1, uuid.UUID(int=5), 7, [("PLAINTEXT", "b1", 9092, 0)], [], None),
                           W.topic("t", tid), W.partition(0, 0, tid, [1], [1], [], [], 1, 0, 0),
                           W.partition_change(0, 0, tid, isr=[])]),
        W.batch(4, 1, t0 + 1000, [W.leader_change(3000, [3000], [3000])], control_type=W.LEADER_CHANGE)])
    out = tmp_path / "events"
    assert ingest(run_nozk, [d], out, cluster="k")[0] == 0
    keys = {kind: list(report(run_nozk, out, kind)[0]) for kind in ("generations", "bounces", "epochs", "controllers",
                                                                     "isr-churn")}
    assert keys == {
        "generations": ["broker_id", "epoch", "start", "end", "gap_ms", "fence_episodes", "fenced_ms"],
        "bounces": ["broker_id", "generations", "bounces", "downtime_p50_ms", "downtime_p90_ms", "downtime_max_ms",
                    "fence_episodes", "fenced_ms", "fenced_max_ms"],
        "epochs": ["at", "max_broker_epoch", "broker_id"],
        "controllers": ["at", "event", "controller_id", "controller_epoch"],
        "isr-churn": ["broker_id", "isr_shrinks", "isr_expands", "rejoins", "rejoin_p50_ms", "rejoin_max_ms"],
    }


def test_kadmin_ndjson_source(spark, run_nozk, tmp_path):
    f = tmp_path / "watch.ndjson"
    f.write_text('{"event": "registered", "id": 4, "epoch": 100, "old_epoch": null, "at": "2026-11-22T01:00:00.000Z"}\n'
                 '{"event": "bounced", "id": 4, "epoch": 140, "old_epoch": 100, "at": "2026-11-22T01:05:00.000Z"}\n')
    code, doc, err = ingest(run_nozk, [f], tmp_path / "events", cluster="nd")
    assert code == 0, err
    gens = report(run_nozk, tmp_path / "events", "generations")
    assert [(g["broker_id"], g["epoch"]) for g in gens] == [(4, 100), (4, 140)]


def job_descriptions(spark):
    """The descriptions of the session's jobs, as the Spark UI lists them (its status store)."""
    jobs = spark.sparkContext._jsc.sc().statusStore().jobsList(None)
    described = (jobs.apply(i).description() for i in range(jobs.size()))
    return {d.get() for d in described if d.isDefined()}


def test_ingest_names_its_spark_jobs_by_step(spark, run_nozk, tmp_path):
    """An operator watching the Spark UI (or reading its event log) sees which step of the ingest each job is."""
    from kadmin.pipeline import ingest as steps

    f = tmp_path / "watch.ndjson"
    f.write_text('{"event": "registered", "id": 4, "epoch": 100, "old_epoch": null, "at": "2026-11-22T01:00:00Z"}\n')
    assert ingest(run_nozk, [f], tmp_path / "events", cluster="steps")[0] == 0
    assert {steps.PARSE, steps.CLASSIFY, steps.AGAINST_TABLE, steps.WRITE} <= job_descriptions(spark)
    assert spark.sparkContext.getLocalProperty("spark.job.description") is None  # later jobs are not named so


def test_nothing_to_ingest_and_missing_paths(spark, run_nozk, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert ingest(run_nozk, [empty], tmp_path / "o")[0] == 1
    r = run_nozk("history", "ingest", str(tmp_path / "nope"), "--cluster", "x", "--out", str(tmp_path / "o"))
    assert r.exit_code == 2 and "no such file" in r.stderr
    r = run_nozk("history", "report", str(tmp_path / "nope"), "bounces")
    assert r.exit_code == 2


def test_spark_is_not_loaded_for_help():
    import subprocess
    import sys

    code = ("import atexit, sys\nfrom kadmin.cli.app import main\nsys.argv=['kadmin','history','--help']\n"
            "atexit.register(lambda: print('pyspark' in sys.modules, file=sys.stderr))  # main() ends the process\n"
            "main()")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert p.stderr.strip().endswith("False")
    shutil.which("java")
