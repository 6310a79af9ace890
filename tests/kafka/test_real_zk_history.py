"""`kadmin history` over the transaction logs and snapshots of a ZooKeeper that ran three real Kafka 3.9.1 brokers.

The module starts its own ZooKeeper (a small snapCount, so that it rolls its log and snapshots several
times), runs three real brokers under a chroot, creates topics, and restarts known brokers a known
number of times, gracefully (SIGTERM: Kafka's controlled shutdown) and by SIGKILL (the registration
goes when the session expires), the controller last (a real controller failover). Meanwhile it
records what ZooKeeper showed live: each registration's czxid (the broker epoch; also in each broker's
own log), and, once the cluster settled (every ISR full again, no leader rebalance), every partition
state znode. Then ZooKeeper is stopped (nothing is written after it) and the brokers killed.

The ground truth of what the controller wrote is ZooKeeper's own TxnLogToolkit on every log file (no
purge: they hold every txn since the server started): each create and setData of a partition state
znode (inside the controller's `multi`s), hence every version of every state, in zxid order. It must be
whole (the zxids run without a gap, versions 0, 1, 2, ... as logged, every partition there), plausible
(each restart takes the broker out of every ISR and back after its new registration) and hold what the
live reads returned. (Live watches cannot give this: a watch fires once, and a version written before the
re-read that sets it again is missed on a loaded machine.) Then `kadmin history ingest` reads the data
directory (logs and snapshots) on a real local Spark: its reports must equal what was done and logged.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from kadmin.formats.zk_txnlog import log_files, log_zxid
from kadmin.sandbox.zkserver import Ensemble, zookeeper_classpath
from tests.conftest import Run
from tests.support.kafka import (
    TOPIC_COMMAND,
    RealCluster,
    crash_restart,
    logged_epochs,
    tool,
    wait_for,
    zk_mode_cluster,
)
from tests.support.zk_tools import run_toolkit, toolkit_records, toolkit_writes

pytestmark = [pytest.mark.kafka, pytest.mark.integration, pytest.mark.slow]

IDS = (1, 2, 3)
TOPICS = {"hist-a": 3, "hist-b": 2}  # name: partitions, all RF 3
SNAP_COUNT = 100  # ZooKeeper rolls its log (and snapshots) every 51-100 txns
WAIT = 240.0


States = dict[str, list[tuple[int, list[int], int]]]  # state znode path: [(version, isr, leader)]


class StateVersion(NamedTuple):
    zxid: int
    version: int
    doc: dict[str, Any]  # the state znode's JSON


def state_path(topic: str, partition: int) -> str:
    return f"/brokers/topics/{topic}/partitions/{partition}/state"


def logged_states(datadir: Path, chroot: str) -> dict[str, list[StateVersion]]:
    """Every version of every partition state znode under `chroot` (keyed without it), in zxid order, from
    TxnLogToolkit on each log of the stopped server's `datadir`: version 0 at the create, +1 per setData
    (a failed multi holds only error sub-txns: it wrote nothing). Asserts the logs whole: every log read
    to its end, the zxids without a gap from the first log's on, and each setData's logged version (when
    the toolkit prints it legibly) the count."""
    version2 = datadir / "version-2"
    logs = [version2 / n for n in log_files([p.name for p in version2.iterdir()])]
    assert logs, f"no transaction log in {version2}"
    texts = run_toolkit(zookeeper_classpath(), logs)
    pattern = re.compile(rf"{re.escape(chroot)}(/brokers/topics/[^/]+/partitions/\d+/state)")
    zxids: list[int] = []
    out: dict[str, list[StateVersion]] = {}
    for log in logs:
        count, records = toolkit_records(texts[log])
        assert count == len(records), f"{log.name}: {count} txns, {len(records)} records parsed"
        zxids += [zxid for _, _, zxid, _, _ in records]
        for w in toolkit_writes(texts[log], pattern):
            path = w.path[len(chroot):]
            seq = out.setdefault(path, [])
            if w.type == "create":
                assert not seq, f"{path} created again at zxid {w.zxid:#x}: {seq}"
                version = 0
            else:
                assert seq, f"{path} set at zxid {w.zxid:#x} before it was created"
                version = seq[-1].version + 1
            assert w.version in (version, None), f"{path} at zxid {w.zxid:#x}: logged version {w.version}, " \
                f"counted {version}"
            seq.append(StateVersion(w.zxid, version, w.doc))
    # from the server's first txn (zxid 1 of its epoch; the first log is named after it) on, none missing
    assert zxids and zxids[0] & 0xFFFFFFFF == 1 and zxids[0] == log_zxid(logs[0].name), (logs[0].name, zxids[:3])
    assert zxids == list(range(zxids[0], zxids[0] + len(zxids))), "the logs miss txns (a gap in the zxids)"
    return out


def as_states(logged: dict[str, list[StateVersion]]) -> States:
    return {p: [(v.version, list(v.doc["isr"]), v.doc["leader"]) for v in seq] for p, seq in logged.items()}


def isr_churn(states: States) -> dict[int, dict[str, int]]:
    """Per broker, how often a write took it out of an ISR (shrink) or put it back (expand)."""
    out: dict[int, dict[str, int]] = {}
    for seq in states.values():
        for (_, before, _), (_, after, _) in zip(seq, seq[1:], strict=False):
            for b in set(before) - set(after):
                out.setdefault(b, {"isr_shrinks": 0, "isr_expands": 0})["isr_shrinks"] += 1
            for b in set(after) - set(before):
                out.setdefault(b, {"isr_shrinks": 0, "isr_expands": 0})["isr_expands"] += 1
    return out


def check_plausible(logged: dict[str, list[StateVersion]], restarts: list[tuple[int, str, int, int]],
                    live: dict[str, tuple[int, int, dict[str, Any]]]) -> None:
    """The logged states are every partition's, start with a full ISR, name a leader in the ISR (or none),
    never go back in controller or leader epoch, show each restart (its broker out of the ISR after its
    old registration, back in after its new one), and hold what the live reads of the settled cluster
    returned (version, mzxid and JSON)."""
    assert sorted(logged) == sorted(state_path(t, p) for t, n in TOPICS.items() for p in range(n)), sorted(logged)
    for path, seq in logged.items():
        assert sorted(seq[0].doc["isr"]) == list(IDS), (path, seq[0])
        for v in seq:
            isr = v.doc["isr"]
            # no leader (-1) for a moment: a new controller takes a dead leader out of the ISR first
            assert len(set(isr)) == len(isr) and set(isr) <= set(IDS) and v.doc["leader"] in (*isr, -1), (path, v)
        epochs = [(v.doc["controller_epoch"], v.doc["leader_epoch"]) for v in seq]
        assert all(a <= b for a, b in zip(epochs, epochs[1:], strict=False)), f"{path}: epochs went back: {seq}"
        for bid in IDS:
            episodes: list[tuple[int, int]] = []  # (zxid of the write taking bid out of the ISR, of the one back)
            out_at: int | None = None
            for v in seq:
                if bid not in v.doc["isr"] and out_at is None:
                    out_at = v.zxid
                elif bid in v.doc["isr"] and out_at is not None:
                    episodes.append((out_at, v.zxid))
                    out_at = None
            assert out_at is None, f"{path}: broker {bid} not back in the ISR at the end: {seq[-1]}"
            i = 0
            for b, how, old, new in restarts:
                if b != bid:
                    continue
                while i < len(episodes) and not (episodes[i][0] > old and episodes[i][1] > new):
                    i += 1
                assert i < len(episodes), f"{path}: no ISR shrink and expand of broker {bid} for its {how} " \
                    f"restart (epoch {old} -> {new}); out of the ISR: {episodes}"
                i += 1
        # what a live read of the settled cluster returned is in the logs (and is, unless a write came after
        # the read, e.g. a follower dropping out of an ISR on a loaded machine, the last version)
        version, mzxid, doc = live[path]
        same = [v for v in seq if v.version == version]
        assert [(v.zxid, v.doc) for v in same] == [(mzxid, doc)], \
            f"{path}: logged {same}, read live (settled) version {version} mzxid {mzxid:#x} {doc}"


@dataclass
class History:
    datadir: Path  # ZooKeeper's dataDir (version-2/log.*, snapshot.*)
    chroot: str
    epochs: dict[int, list[int]]  # per broker, the czxid of each of its registrations, oldest first
    restarts: list[tuple[int, str, int, int]]  # (broker, "graceful" | "sigkill", old epoch, new epoch)
    churn: dict[int, dict[str, int]]  # from the logged state znode versions
    hosted: int  # partitions per broker (all RF 3 on 3 brokers: every partition)
    controllers: list[int]  # the controller before and after the controller's crash
    controller_epoch: int
    logged: dict[int, list[int]] = field(default_factory=dict)  # epochs in each broker's server.log
    states: States = field(default_factory=dict)  # every state version, from ZooKeeper's logs



def full_isrs(cluster: RealCluster) -> bool:
    s = cluster.partition_states(TOPICS)
    return len(s) == sum(TOPICS.values()) and all(
        st["leader"] in IDS and sorted(st["isr"]) == sorted(st["replicas"]) == list(IDS) for st in s.values())


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Iterator[History]:
    base = tmp_path_factory.mktemp("kafka39-history")
    zk = Ensemble(base / "zk", size=1, tick_ms=250)
    zk.servers[0].extra_cfg = {"snapCount": str(SNAP_COUNT)}
    zk.start(timeout=60)
    try:
        with zk_mode_cluster(zk, base / "kafka", IDS, chroot_prefix="khist",
                             extra={"auto.leader.rebalance.enable": "false"}) as cluster:
            for topic, n in TOPICS.items():
                tool(cluster.home, TOPIC_COMMAND, "--bootstrap-server", cluster.bootstrap, "--create",
                     "--topic", topic, "--partitions", str(n), "--replication-factor", "3")
            wait_for(lambda: full_isrs(cluster), WAIT, "every partition led with a full ISR", interval=0.25)
            epochs = {b: [int(s.czxid)] for b, (_, s) in cluster.registrations().items()}
            assert sorted(epochs) == list(IDS)
            controller = cluster.controller()
            assert controller in IDS
            a, b = sorted(x for x in IDS if x != controller)
            restarts = []
            for bid, how in ((a, "graceful"), (b, "sigkill"), (a, "sigkill"), (controller, "sigkill")):
                br = cluster.brokers[bid]
                old, new = (br.restart(cluster.kz, timeout=WAIT) if how == "graceful"
                            else crash_restart(br, cluster.kz, timeout=WAIT))
                assert old == epochs[bid][-1] and new > old
                epochs[bid].append(new)
                restarts.append((bid, how, old, new))
                # back in every ISR before the next restart: each restart is one shrink and one expand
                wait_for(lambda: full_isrs(cluster), WAIT, f"broker {bid} back in every ISR", interval=0.25)
            successor = cluster.controller()
            assert successor in (a, b)  # elected when the crashed controller's session expired
            controller_epoch = int(cluster.kz.get("/controller_epoch")[0])
            assert sorted(cluster.kz.get_children("/brokers/topics")) == sorted(TOPICS)  # nothing else wrote ISRs
            assert {b: int(s.czxid) for b, (_, s) in cluster.registrations().items()} == \
                {b: e[-1] for b, e in epochs.items()}
            # the settled cluster (full ISRs, no rebalance): what the logs must hold
            live: dict[str, tuple[int, int, dict[str, Any]]] = {}  # path: (version, mzxid, JSON)
            for topic, n in TOPICS.items():
                for p in range(n):
                    data, stat = cluster.kz.get(state_path(topic, p))
                    live[state_path(topic, p)] = (stat.version, stat.mzxid, json.loads(data))
            cluster.kz.stop()
            zk.stop()  # ZooKeeper first: its logs end with every broker registered, nothing written after
            logged = {bid: logged_epochs(br) for bid, br in cluster.brokers.items()}
        datadir = zk.servers[0].data_dir / "data"
        truth = logged_states(datadir, cluster.chroot)
        check_plausible(truth, restarts, live)
        states = as_states(truth)
        yield History(datadir, cluster.chroot, epochs, restarts, isr_churn(states), sum(TOPICS.values()),
                      [controller, successor], controller_epoch, logged, states)
    finally:
        zk.stop()


@pytest.fixture(scope="module")
def spark(history: History) -> Iterator[Any]:
    """One local[2] Spark session for the module (after the brokers are gone); kadmin's commands use it.
    No skip without PySpark: `make test` installs it, and the pipeline tests fail without it too."""
    from kadmin.pipeline.spark import session

    s = session("local[2]")
    yield s
    s.stop()


def expected_changes(states: States) -> dict[str, list[tuple[str, int, list[int]]]]:
    """What kadmin must classify from these state versions: the first is a leader change; later, a new
    leader is a leader change and a different ISR (as a list) an ISR change."""
    out: dict[str, list[tuple[str, int, list[int]]]] = {}
    for path, seq in states.items():
        for i, (_, isr, leader) in enumerate(seq):
            if i == 0 or leader != seq[i - 1][2]:
                out.setdefault(path, []).append(("leader_changed", leader, isr))
            if i > 0 and isr != seq[i - 1][1]:
                out.setdefault(path, []).append(("isr_changed", leader, isr))
    return out


def report(run: Run, out: Path, kind: str) -> list[dict[str, Any]]:
    r = run("history", "report", str(out), kind, "-o", "json")
    assert r.exit_code == 0, r.stderr
    return list(json.loads(r.stdout)["data"])


@pytest.mark.timeout(1500)
def test_history_of_real_kafka_restarts_from_zookeepers_logs_and_snapshots(history: History, spark: Any,
                                                                          tmp_path: Path) -> None:
    h = history
    logs = sorted((h.datadir / "version-2").glob("log.*"))
    snaps = sorted((h.datadir / "version-2").glob("snapshot.*"))
    assert len(logs) >= 2 and len(snaps) >= 2, (logs, snaps)  # rolled logs and snapshots, not one file
    # the brokers' own word: each registration logged the epoch ZooKeeper showed
    assert h.logged == h.epochs

    run = Run(None)
    out = tmp_path / "events"
    r = run("history", "ingest", str(h.datadir), "--cluster", "real39", "--chroot", h.chroot, "--out", str(out),
            "-o", "json")
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)["data"]
    assert doc["files"] == len(logs) + len(snaps) and doc["damage"] == [] and doc["skipped"] == []
    assert doc["events_added"] > 0

    # generations: per broker, exactly the registrations seen live, epoch = czxid; the last still open
    gens = report(run, out, "generations")
    got: dict[int, list[int]] = {}
    for g in gens:
        got.setdefault(g["broker_id"], []).append(g["epoch"])
    assert got == h.epochs
    for bid in IDS:
        mine = [g for g in gens if g["broker_id"] == bid]
        assert mine[-1]["end"] is None and mine[-1]["gap_ms"] is None
        assert all(g["end"] is not None and g["gap_ms"] is not None and g["gap_ms"] >= 0 for g in mine[:-1]), mine

    # bounces: exactly the restarts performed, per broker
    restarted = {bid: sum(1 for b, *_ in h.restarts if b == bid) for bid in IDS}
    bounces = {x["broker_id"]: x for x in report(run, out, "bounces")}
    assert {b: (x["generations"], x["bounces"]) for b, x in bounces.items()} == \
        {b: (n + 1, n) for b, n in restarted.items()}
    assert all((x["downtime_max_ms"] is not None) == (restarted[b] > 0) for b, x in bounces.items())

    # the max broker epoch at the end is the newest registration's
    ep = report(run, out, "epochs")
    assert ep[-1]["max_broker_epoch"] == max(e[-1] for e in h.epochs.values())

    # controllers: the first election, the crashed controller's /controller going with its session, and
    # the successor's election; each election bumped /controller_epoch (1, then 2)
    ctl = [(c["event"], c["controller_id"], c["controller_epoch"]) for c in report(run, out, "controllers")]
    assert ctl == [("elected", h.controllers[0], 1), ("resigned", None, None), ("elected", h.controllers[1], 2)]
    assert h.controller_epoch == 2

    # ISR churn: what the controller wrote, version by version, as TxnLogToolkit showed it
    churn = {x["broker_id"]: x for x in report(run, out, "isr-churn")}
    assert {b: {k: x[k] for k in ("isr_shrinks", "isr_expands")} for b, x in churn.items()} == h.churn
    for bid, n in restarted.items():
        if n:
            assert churn[bid]["isr_shrinks"] >= n * h.hosted and churn[bid]["isr_expands"] >= n * h.hosted
            assert churn[bid]["rejoins"] == n and churn[bid]["rejoin_max_ms"] is not None

    # ...and write by write: each partition's leader changes and ISR changes, in the order ZooKeeper took them
    rows = (spark.read.parquet(str(out)).filter("event in ('leader_changed', 'isr_changed')")
            .select("topic", "partition", "position", "event", "leader", "isr").collect())
    table: dict[str, list[tuple[str, int, list[int]]]] = {}
    for row in sorted(rows, key=lambda x: (x.position, x.event != "leader_changed")):
        path = f"/brokers/topics/{row.topic}/partitions/{row.partition}/state"
        table.setdefault(path, []).append((row.event, row.leader, list(row.isr)))
    assert table == expected_changes(h.states)
    print(f"history: {len(logs)} logs, {len(snaps)} snapshots, {doc['events_added']} events; restarts {h.restarts}; "
          f"ISR churn {h.churn}; {sum(len(v) for v in h.states.values())} state versions")

    # the snapshots hold registrations the logs hold too: each event is in the table once
    zk_only = tmp_path / "logs-only"
    r = run("history", "ingest", *map(str, logs), "--cluster", "real39", "--chroot", h.chroot, "--out",
            str(zk_only), "-o", "json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["data"]["events_added"] == doc["events_added"]
