"""`kadmin history` over a real Kafka 4.3.1 KRaft cluster's metadata log, with Kafka's DumpLogSegments as the referee.

One module fixture: a sandbox (3 controllers + 3 brokers, kadmin's own CLI in a subprocess), a topic with
replicas on every broker (so a graceful stop goes through controlled shutdown), broker 1 paused (SIGSTOP) until the
controllers fence it (its heartbeats lapse past broker.session.timeout.ms) and resumed (SIGCONT) until they unfence
it at the same broker epoch, a graceful `sandbox bounce 2`, a `sandbox kill 3 --hard` + `sandbox start 3`, then
`sandbox down` so the files are final. Then:
- every record kadmin decodes from one controller's `__cluster_metadata-0` segments and snapshots (and its
  `bootstrap.checkpoint`) equals what `DumpLogSegments --cluster-metadata-decoder` prints for the same files:
  offsets, timestamps, record types and versions, broker ids, epochs, incarnation ids, fenced and
  controlled-shutdown flags;
- `history ingest` of that directory, then `report generations|bounces` (one Spark session), show exactly the
  restarts performed, each generation starting at a RegisterBrokerRecord Kafka wrote, with downtime > 0;
- the pause is one fence episode of broker 1's only generation, no bounce and no downtime: up to the end of
  the clean bounce, exactly one bounce (broker 2) and one fence episode (broker 1).
"""

from __future__ import annotations

import json
import os
import re
import signal
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from kadmin.cluster.metadata_records import CRC32C, DECODER
from kadmin.formats import kraft_log as kl
from tests.kafka import test_real_sandbox as rs
from tests.support.kafka import KAFKA_4, kafka_home, tool, wait_for
from tests.support.sandbox import Sandbox

pytestmark = [pytest.mark.kafka, pytest.mark.integration, pytest.mark.slow]

DUMP = "org.apache.kafka.tools.DumpLogSegments"  # 4.x: moved from kafka.tools (3.x) to the tools module
CONTROLLER = 3001
CLEAR_ELR = 28  # ClearElrRecord's apiKey (the framing says it, whatever the decoder knows)
TOPIC = "kraft-history"

# DumpLogSegments names control records by their ControlRecordType's message
CONTROL_NAMES = {"LeaderChangeMessage": "LeaderChange", "SnapshotHeaderRecord": "SnapshotHeader",
                 "SnapshotFooterRecord": "SnapshotFooter", "KRaftVersionRecord": "KRaftVersion",
                 "VotersRecord": "KRaftVoters"}


def live_records(metadata_dir: Path) -> list[kl.MetadataRecord]:
    """The records of the live log (a partly written tail batch is ignored)."""
    return [r for seg in sorted(metadata_dir.glob("*.log"))
            for r in kl.iter_segment(seg, DECODER, on_damage=lambda d: None, crc=CRC32C)]


def set_min_isr(bootstrap: str, topic: str, value: str) -> None:
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=60000)
    try:
        admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic, configs={"min.insync.replicas": value})])
    finally:
        admin.close()


def fencing(metadata_dir: Path, broker_id: int) -> list[tuple[int, int, str, int]]:
    """(offset, timestamp, "fenced"|"unfenced"|"registered", epoch) of the broker's fence, unfence and
    registration records in the live log."""
    out = []
    for r in live_records(metadata_dir):
        f = r.fields
        if r.type_name == "RegisterBrokerRecord" and f.get("broker_id") == broker_id:
            out.append((r.offset, r.timestamp_ms, "registered", f["broker_epoch"]))
        elif r.type_name == "BrokerRegistrationChangeRecord" and f.get("broker_id") == broker_id \
                and f.get("fenced", 0) != 0:
            out.append((r.offset, r.timestamp_ms, "fenced" if f["fenced"] == 1 else "unfenced", f["broker_epoch"]))
        elif r.type_name in ("FenceBrokerRecord", "UnfenceBrokerRecord") and f.get("id") == broker_id:
            out.append((r.offset, r.timestamp_ms, "fenced" if r.type_name == "FenceBrokerRecord" else "unfenced",
                        f["epoch"]))
    return out


def pause_until_fenced_and_resume(sb: Sandbox, mdir: Path, broker_id: int) -> dict[str, Any]:
    """SIGSTOP the broker; wait until the controllers fence it; SIGCONT it; wait until they unfence it. Returns the
    fence and unfence records (offset, ts, kind, epoch) and the broker's state as `brokers list` showed it while
    fenced."""
    pid = next(p["pid"] for p in sb.status()["processes"] if p["role"] == "broker" and p["id"] == broker_id)
    other = next(p["port"] for p in sb.status()["processes"] if p["role"] == "broker" and p["id"] != broker_id)
    start = len(fencing(mdir, broker_id))
    os.kill(pid, signal.SIGSTOP)
    try:
        fence = wait_for(lambda: next((x for x in fencing(mdir, broker_id)[start:] if x[2] == "fenced"), None), 120,
                         f"the controllers to fence broker {broker_id}", interval=0.5)
        code, rows, err = sb.json("brokers", "list", "--bootstrap-server", f"127.0.0.1:{other}")
        seen = {r["id"]: r["state"] for r in rows or []}
    finally:
        os.kill(pid, signal.SIGCONT)
    unfence = wait_for(lambda: next((x for x in fencing(mdir, broker_id)[start:] if x[2] == "unfenced"), None), 120,
                       f"the controllers to unfence broker {broker_id}", interval=0.5)
    return {"fence": fence, "unfence": unfence, "seen": seen, "after": fencing(mdir, broker_id)[start:]}


def back_in_service(metadata_dir: Path, broker_id: int, after: int) -> int | None:
    """The timestamp of the unfencing of the broker's last registration if it is later than offset `after`, else
    None."""
    records = fencing(metadata_dir, broker_id)
    last = max((x for x in records if x[2] == "registered" and x[0] > after), default=None)
    return next((ts for off, ts, kind, epoch in records if last is not None and off > last[0] and kind == "unfenced"
                 and epoch == last[3]), None)


def registrations(metadata_dir: Path, broker_id: int) -> list[tuple[int, str]]:
    """(offset, incarnation id) of the broker's RegisterBrokerRecords in the live log (a partly written
    tail batch is ignored)."""
    out = []
    for seg in sorted(metadata_dir.glob("*.log")):
        for r in kl.iter_segment(seg, DECODER, on_damage=lambda d: None, crc=CRC32C):
            if r.type_name == "RegisterBrokerRecord" and r.fields.get("broker_id") == broker_id:
                out.append((r.offset, r.fields["incarnation_id"]))
    return out


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    home = kafka_home(KAFKA_4)
    base = tmp_path_factory.mktemp("kraft-history")
    with rs.sandbox(base / "sb", "--kafka-home", str(home), "--mode", "kraft", "--brokers", "3") as sb:
        st = sb.status()
        mdir = sb.dir / f"controller-{CONTROLLER}" / "data" / "__cluster_metadata-0"
        assert mdir.is_dir(), sorted(p.name for p in sb.dir.iterdir())
        tool(home, "org.apache.kafka.tools.TopicCommand", "--bootstrap-server", st["bootstrap_servers"], "--create",
             "--topic", TOPIC, "--partitions", "3", "--replication-factor", "3")
        # setting a topic's min.insync.replicas (here to its default, 1) makes a 4.x controller clear the
        # topic's ELRs: a ClearElrRecord (KIP-966) for the referee test
        set_min_isr(st["bootstrap_servers"], TOPIC, "1")
        wait_for(lambda: [r for r in live_records(mdir) if r.api_key == CLEAR_ELR and not r.control], 60,
                 "the controllers to write a ClearElrRecord", interval=0.5)
        paused = pause_until_fenced_and_resume(sb, mdir, 1)
        mark = fencing(mdir, 2)[-1][0]
        r = sb.run("sandbox", "bounce", "2")
        assert r.returncode == 0, r.stderr
        # the pause and the clean bounce are over when broker 2's new registration is unfenced: `--until` just
        # after that record ends the history before the hard kill of broker 3
        bounced_at = wait_for(lambda: back_in_service(mdir, 2, mark), 120,
                              "broker 2's new registration to be unfenced") + 1
        before = registrations(mdir, 3)
        r = sb.run("sandbox", "kill", "3", "--hard")
        assert r.returncode == 0, r.stderr
        r = sb.run("sandbox", "start", "3")
        assert r.returncode == 0, r.stderr
        # `start` may see the old registration still unfenced: wait for the new process's own registration
        wait_for(lambda: len({inc for _, inc in registrations(mdir, 3)}) > len({inc for _, inc in before}), 180,
                 "broker 3 to register a new incarnation")
        r = sb.run("sandbox", "down")
        assert r.returncode == 0, r.stderr
        yield {"home": home, "dir": mdir, "bootstrap": mdir.parent / "bootstrap.checkpoint", "base": base,
               "paused": paused, "bounced_at": bounced_at}


# ------------------------------------------------------------------------------------------- the referee
_BATCH = re.compile(r"^baseOffset: (\d+) lastOffset: (\d+) .* partitionLeaderEpoch: (-?\d+) .* isControl: (\w+)")
_RECORD = re.compile(r"^\| offset: (\d+) CreateTime: (-?\d+) .*? headerKeys: \[[^]]*\] (.*)$")


def dump(home: Path, files: list[Path]) -> dict[str, list[dict[str, Any]]]:
    """DumpLogSegments --cluster-metadata-decoder: per file, each record's offset, CreateTime, the batch's
    leader epoch and whether it is a control record, its type, version and data."""
    out = tool(home, DUMP, "--cluster-metadata-decoder", "--files", ",".join(map(str, files)), timeout=300).stdout
    files_out: dict[str, list[dict[str, Any]]] = {}
    current: list[dict[str, Any]] = []
    batch: tuple[int, bool] = (0, False)
    for line in out.splitlines():
        if line.startswith("Dumping "):
            current = files_out.setdefault(line[len("Dumping "):].strip(), [])
        elif m := _BATCH.match(line):
            batch = (int(m[3]), m[4] == "true")
        elif m := _RECORD.match(line):
            rest = m[3]
            rec: dict[str, Any] = {"offset": int(m[1]), "ts": int(m[2]), "leader_epoch": batch[0], "control": batch[1]}
            if rest.startswith("payload: "):
                doc = json.loads(rest[len("payload: "):])
                rec.update(type=doc["type"], version=doc["version"], data=doc["data"])
            elif rest.startswith("controlType: "):  # 3.9.1 prints only the type of a LeaderChange
                rec.update(type=rest, version=None, data={})
            else:  # a control record: `LeaderChange: {...}`, `SnapshotHeader {...}`
                name, _, body = rest.partition("{")
                data = json.loads("{" + body)
                rec.update(type=name.rstrip(": "), version=data.get("version"), data=data)
            current.append(rec)
        else:
            assert not line.startswith("|"), f"a record line the test cannot read: {line}"
    return files_out


def upper_snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).upper()


def kadmin_view(r: kl.MetadataRecord) -> dict[str, Any]:
    """kadmin's decoded record in the referee's terms (broker fields only where the record has them)."""
    f = r.fields
    view: dict[str, Any] = {"offset": r.offset, "ts": r.timestamp_ms, "leader_epoch": r.leader_epoch,
                            "control": r.control, "version": r.version,
                            "type": CONTROL_NAMES.get(r.type_name, r.type_name) if r.control
                            else upper_snake(r.type_name)}
    if r.type_name in ("RegisterBrokerRecord", "BrokerRegistrationChangeRecord", "UnregisterBrokerRecord"):
        view["broker"] = (f["broker_id"], f["broker_epoch"])
    if r.type_name in ("FenceBrokerRecord", "UnfenceBrokerRecord"):
        view["broker"] = (f["id"], f["epoch"])
    if r.type_name == "RegisterBrokerRecord":
        view.update(incarnation=f["incarnation_id"], fenced=f["fenced"], shutdown=f.get("in_controlled_shutdown"))
    if r.type_name == "BrokerRegistrationChangeRecord":
        view.update(fenced=f.get("fenced", 0), shutdown=f.get("in_controlled_shutdown", 0))
    if r.type_name == "RegisterControllerRecord":
        view["incarnation"] = f["incarnation_id"]
    if r.type_name == "LeaderChangeMessage":
        view["leader"] = f["leader_id"]
    return view


def referee_view(d: dict[str, Any]) -> dict[str, Any]:
    data = d["data"]
    view = {k: d[k] for k in ("offset", "ts", "leader_epoch", "control", "version", "type")}
    t = d["type"]
    if t in ("REGISTER_BROKER_RECORD", "BROKER_REGISTRATION_CHANGE_RECORD", "UNREGISTER_BROKER_RECORD"):
        view["broker"] = (data["brokerId"], data["brokerEpoch"])
    if t in ("FENCE_BROKER_RECORD", "UNFENCE_BROKER_RECORD"):
        view["broker"] = (data["id"], data["epoch"])
    if t == "REGISTER_BROKER_RECORD":
        view.update(incarnation=data["incarnationId"], fenced=data.get("fenced", True),
                    shutdown=data.get("inControlledShutdown", False) if d["version"] >= 1 else None)
    if t == "BROKER_REGISTRATION_CHANGE_RECORD":
        view.update(fenced=data.get("fenced", 0), shutdown=data.get("inControlledShutdown", 0))
    if t == "REGISTER_CONTROLLER_RECORD":
        view["incarnation"] = data["incarnationId"]
    if t == "LeaderChange":
        view["leader"] = data["leaderId"]
    return view


def metadata_files(h: dict[str, Any]) -> list[Path]:
    files = sorted(h["dir"].glob("*.log")) + sorted(h["dir"].glob("*.checkpoint"))
    return files + ([h["bootstrap"]] if h["bootstrap"].exists() else [])


def test_kadmin_decodes_every_record_as_dump_log_segments_does(history: dict[str, Any]) -> None:
    files = metadata_files(history)
    referee = dump(history["home"], files)
    assert sorted(referee) == sorted(map(str, files))
    types: set[str] = set()
    for path in files:
        damage: list[kl.Damage] = []
        read = kl.iter_segment if path.suffix == ".log" else kl.iter_checkpoint
        mine = list(read(path, DECODER, on_damage=damage.append, crc=CRC32C))
        assert damage == [], path
        assert [r.type_name for r in mine if r.type_name == kl.UNKNOWN] == [], path
        assert [kadmin_view(r) for r in mine] == [referee_view(d) for d in referee[str(path)]], path
        types |= {r.type_name for r in mine}
    # what this sequence made the controllers write, every kind of it decoded
    assert {"RegisterBrokerRecord", "BrokerRegistrationChangeRecord", "RegisterControllerRecord", "TopicRecord",
            "PartitionRecord", "LeaderChangeMessage", "FeatureLevelRecord", "ConfigRecord", "ClearElrRecord"} <= types


@pytest.fixture(scope="module")
def reports(history: dict[str, Any]) -> dict[str, Any]:
    """`history ingest` of the controller's log directory, then every report kind over the whole history and
    `generations`, `bounces` up to the end of the clean bounce (`--until`), in one Spark session."""
    from kadmin.pipeline.spark import session
    from tests.conftest import Run

    run = Run(None)
    spark = session("local[2]")
    try:
        out = history["base"] / "events"
        res = run("history", "ingest", str(history["dir"]), "--cluster", "kraft", "--out", str(out), "-o", "json")
        assert res.exit_code == 0, res.stderr
        assert json.loads(res.stdout)["data"]["damage"] == []
        until = datetime.fromtimestamp(history["bounced_at"] / 1000, UTC).isoformat(timespec="milliseconds")
        got: dict[str, Any] = {}
        for name, args in [(k, (k,)) for k in ("generations", "bounces", "epochs", "isr-churn")] + [
                (f"{k} --until", (k, "--until", until)) for k in ("generations", "bounces")]:
            res = run("history", "report", str(out), *args, "-o", "json")
            assert res.exit_code == 0, res.stderr
            got[name] = json.loads(res.stdout)["data"]
        return got
    finally:
        spark.stop()


def ms(text: str) -> int:
    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


def test_history_reports_exactly_the_restarts_with_downtime(history: dict[str, Any],
                                                            reports: dict[str, Any]) -> None:
    log = [r for p in sorted(history["dir"].glob("*.log")) for r in kl.iter_segment(p, DECODER, crc=CRC32C)]
    regs: dict[int, list[tuple[int, int, str]]] = {}
    for r in log:
        if r.type_name == "RegisterBrokerRecord":
            regs.setdefault(r.fields["broker_id"], []).append(
                (r.offset, r.fields["broker_epoch"], r.fields["incarnation_id"]))
    # one incarnation per process started: 1 once, 2 twice (bounce), 3 twice (kill --hard + start)
    assert {b: len({inc for _, _, inc in v}) for b, v in regs.items()} == {1: 1, 2: 2, 3: 2}
    # broker 2's graceful stop went through controlled shutdown (it led partitions of TOPIC)
    assert any(r.type_name == "BrokerRegistrationChangeRecord" and r.fields.get("broker_id") == 2
               and r.fields.get("in_controlled_shutdown") == 1 for r in log)

    gens = reports["generations"]
    bounces = {b["broker_id"]: b for b in reports["bounces"]}
    # a generation per new incarnation, at the epoch Kafka assigned it (amended registrations are none)
    first_epochs = {b: [e for n, (_, e, inc) in enumerate(v) if inc not in {x[2] for x in v[:n]}]
                    for b, v in regs.items()}
    assert {b: [g["epoch"] for g in gens if g["broker_id"] == b] for b in regs} == first_epochs
    assert {b: s["bounces"] for b, s in bounces.items()} == {1: 0, 2: 1, 3: 1}
    for b in (2, 3):
        assert bounces[b]["downtime_p50_ms"] > 0 and bounces[b]["downtime_max_ms"] > 0, bounces[b]
    assert bounces[1]["downtime_max_ms"] is None
    # `sandbox down` stopped every broker: each last generation ended (fenced or controlled shutdown)
    assert all(g["end"] is not None for g in gens), gens


def test_a_broker_fenced_and_unfenced_at_the_same_epoch_is_a_fence_episode_not_a_bounce(
        history: dict[str, Any], reports: dict[str, Any]) -> None:
    paused = history["paused"]
    (_, fenced_at, _, epoch), (_, unfenced_at, _, unfence_epoch) = paused["fence"], paused["unfence"]
    # what Kafka did: fenced while stopped (and DescribeCluster said so), unfenced at the same epoch, and no
    # new registration in between
    assert unfence_epoch == epoch and paused["seen"].get(1) == "fenced", paused
    assert [kind for _, _, kind, _ in paused["after"]] == ["fenced", "unfenced"], paused["after"]

    # up to the end of the clean bounce of broker 2: exactly that bounce, and broker 1's one fence episode
    (g1,) = [g for g in reports["generations --until"] if g["broker_id"] == 1]
    assert (g1["epoch"], g1["end"], g1["gap_ms"]) == (epoch, None, None), g1  # its generation goes on
    until = {b["broker_id"]: b for b in reports["bounces --until"]}
    assert {b: s["bounces"] for b, s in until.items()} == {1: 0, 2: 1, 3: 0}
    assert {b: s["fence_episodes"] for b, s in until.items()} == {1: 1, 2: 0, 3: 0}
    assert until[1]["fenced_ms"] == unfenced_at - fenced_at and until[1]["downtime_max_ms"] is None
    assert g1["fence_episodes"] == 1 and g1["fenced_ms"] == unfenced_at - fenced_at

    # the whole history: broker 1's one generation went on after the fence, until `sandbox down`; the hard kill
    # of broker 3 (fenced, then a new registration) is a bounce with downtime, not a fence episode
    (g1,) = [g for g in reports["generations"] if g["broker_id"] == 1]
    assert ms(g1["end"]) > unfenced_at, (g1, unfenced_at)
    assert g1["fenced_ms"] == unfenced_at - fenced_at and g1["fence_episodes"] == 1
    full = {b["broker_id"]: b for b in reports["bounces"]}
    assert {b: (s["bounces"], s["fence_episodes"]) for b, s in full.items()} == {1: (0, 1), 2: (1, 0), 3: (1, 0)}
    # the max broker epoch did not move while broker 1 was fenced
    assert not [p for p in reports["epochs"] if fenced_at <= ms(p["at"]) <= unfenced_at]
    # its ISRs shrank and grew back, and that is no rejoin after a bounce; broker 2's rejoin is one
    churn = {c["broker_id"]: c for c in reports["isr-churn"]}
    assert churn[1]["isr_shrinks"] >= 1 and churn[1]["isr_expands"] >= 1 and churn[1]["rejoins"] == 0, churn[1]
    assert churn[2]["rejoins"] == 1, churn[2]


def test_history_ingests_fast_decoder_reads_every_record_as_the_schema_codec(history: dict[str, Any]) -> None:
    """kadmin.pipeline.kraft_fast (what `history ingest` decodes with) on what a real cluster wrote: every
    record equal to the schema codec's, fields key for key."""
    from kadmin.pipeline.kraft_fast import FAST_DECODER

    for path in metadata_files(history):
        read = kl.iter_segment if path.suffix == ".log" else kl.iter_checkpoint
        slow = list(read(path, DECODER, crc=CRC32C))
        fast = list(read(path, FAST_DECODER, crc=CRC32C))
        assert fast == slow, path
        assert [list(r.fields.items()) for r in fast] == [list(r.fields.items()) for r in slow], path
        assert sum(r.type_name in ("PartitionRecord", "PartitionChangeRecord") for r in slow) > 0 or \
            path.suffix != ".log", path


def test_history_ingests_arrow_columns_hold_the_row_paths_events_of_a_real_log(history: dict[str, Any]) -> None:
    """kadmin.pipeline.arrow.kraft_log_batches (partition records straight into Arrow columns, what the ingest
    runs) on every segment a real cluster wrote: the row path's events (`parse_range`), value for value."""
    from kadmin.pipeline import events as ev
    from kadmin.pipeline.arrow import parse_range_batches
    from kadmin.pipeline.ingest import parse_range

    kinds: set[str] = set()
    for path in metadata_files(history):
        if path.suffix != ".log":
            continue
        work = ("kraft-log", str(path), 0, None)
        expected = list(parse_range(work, "c", None, CRC32C))
        got = [tuple(r[c] for c in ev.COLUMNS) for b in parse_range_batches(work, "c", None, CRC32C)
               for r in b.to_pylist()]
        assert got == expected, path
        kinds |= {r[4] for r in expected}
    assert {"partition_state", "partition_change", "broker_registered", "topic_created"} <= kinds
