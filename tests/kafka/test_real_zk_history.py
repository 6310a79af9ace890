"""`kadmin history` over the transaction logs and snapshots of a ZooKeeper that ran three real Kafka 3.9.1 brokers.

The module starts its own ZooKeeper (a small snapCount, so that it rolls its log and snapshots several
times), runs three real brokers under a chroot, creates topics, and restarts known brokers a known
number of times, gracefully (SIGTERM: Kafka's controlled shutdown) and by SIGKILL (the registration
goes when the session expires), the controller last (a real controller failover). Meanwhile it
records what ZooKeeper showed live: each registration's czxid (the broker epoch; also in each broker's
own log), and every version of every partition state znode (a watch per znode; the versions prove
none was missed). Then ZooKeeper is stopped (nothing
is written after it) and the brokers killed, and `kadmin history ingest` reads the data directory
(logs and snapshots) on a real local Spark. The reports must equal what was done and seen.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from kadmin.sandbox.zkserver import Ensemble
from tests.conftest import Run
from tests.support.kafka import TOPIC_COMMAND, RealCluster, ZkModeBroker, crash_restart, tool, wait_for, zk_mode_cluster

pytestmark = [pytest.mark.kafka, pytest.mark.integration, pytest.mark.slow]

IDS = (1, 2, 3)
TOPICS = {"hist-a": 3, "hist-b": 2}  # name: partitions, all RF 3
SNAP_COUNT = 100  # ZooKeeper rolls its log (and snapshots) every 51-100 txns
WAIT = 240.0


class StateRecorder:
    """Every version of the partition state znodes, as a watch per znode saw them live.

    A watch fires once per change and is set again by the read that follows, so a version written
    between the two would be skipped: `complete()` checks that none was (versions 0, 1, 2, ...)."""

    def __init__(self, hosts: str) -> None:
        from kazoo.client import KazooClient

        self.kz = KazooClient(hosts=hosts)
        self.kz.start(timeout=30)
        self.lock = threading.Lock()
        self.seen: dict[str, list[tuple[int, list[int], int]]] = {}  # path: [(version, isr, leader)]

    def watch(self, topic: str, partitions: int) -> None:
        from kazoo.recipe.watchers import DataWatch

        for p in range(partitions):
            path = f"/brokers/topics/{topic}/partitions/{p}/state"
            self.seen[path] = []
            DataWatch(self.kz, path, self._recorder(path))

    def _recorder(self, path: str) -> Any:
        def record(data: bytes | None, stat: Any) -> None:  # called once per new mzxid
            if data is None:
                return
            doc = json.loads(data)
            with self.lock:
                self.seen[path].append((stat.version, list(doc["isr"]), doc["leader"]))

        return record

    def versions(self) -> dict[str, list[int]]:
        with self.lock:
            return {p: [v for v, _, _ in s] for p, s in self.seen.items()}

    def caught_up(self, kz: Any) -> bool:
        """Whether the recorder has seen the current version of every state znode."""
        got = self.versions()
        return all(got[p] and got[p][-1] == kz.get(p)[1].version for p in got)

    def churn(self) -> dict[int, dict[str, int]]:
        """Per broker, how often a write took it out of an ISR (shrink) or put it back (expand)."""
        out: dict[int, dict[str, int]] = {}
        with self.lock:
            for states in self.seen.values():
                for (_, before, _), (_, after, _) in zip(states, states[1:], strict=False):
                    for b in set(before) - set(after):
                        out.setdefault(b, {"isr_shrinks": 0, "isr_expands": 0})["isr_shrinks"] += 1
                    for b in set(after) - set(before):
                        out.setdefault(b, {"isr_shrinks": 0, "isr_expands": 0})["isr_expands"] += 1
        return out

    def stop(self) -> None:
        self.kz.stop()
        self.kz.close()


@dataclass
class History:
    datadir: Path  # ZooKeeper's dataDir (version-2/log.*, snapshot.*)
    chroot: str
    epochs: dict[int, list[int]]  # per broker, the czxid of each of its registrations, oldest first
    restarts: list[tuple[int, str, int, int]]  # (broker, "graceful" | "sigkill", old epoch, new epoch)
    churn: dict[int, dict[str, int]]  # from the recorded state znode versions
    hosted: int  # partitions per broker (all RF 3 on 3 brokers: every partition)
    controllers: list[int]  # the controller before and after the controller's crash
    controller_epoch: int
    logged: dict[int, list[int]] = field(default_factory=dict)  # epochs in each broker's server.log
    states: dict[str, list[tuple[int, list[int], int]]] = field(default_factory=dict)  # every state version seen


def logged_epochs(b: ZkModeBroker) -> list[int]:
    return [int(m) for m in re.findall(r"czxid \(broker epoch\): (\d+)", b.server_log.read_text(errors="replace"))]


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
            recorder = StateRecorder(zk.connect_string + cluster.chroot)
            try:
                for topic, n in TOPICS.items():
                    recorder.watch(topic, n)  # before the topic exists: its first state is version 0
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
                wait_for(lambda: recorder.caught_up(cluster.kz), WAIT, "the recorder to see every state version")
                successor = cluster.controller()
                assert successor in (a, b)  # elected when the crashed controller's session expired
                controller_epoch = int(cluster.kz.get("/controller_epoch")[0])
                assert sorted(cluster.kz.get_children("/brokers/topics")) == sorted(TOPICS)  # nothing else wrote ISRs
                assert {b: int(s.czxid) for b, (_, s) in cluster.registrations().items()} == \
                    {b: e[-1] for b, e in epochs.items()}
                versions = recorder.versions()
                assert all(v == list(range(len(v))) for v in versions.values()), f"a state version was missed: " \
                    f"{versions}"
                churn = recorder.churn()
                with recorder.lock:
                    states = {p: list(v) for p, v in recorder.seen.items()}
            finally:
                recorder.stop()
            cluster.kz.stop()
            zk.stop()  # ZooKeeper first: its logs end with every broker registered, nothing written after
            logged = {bid: logged_epochs(br) for bid, br in cluster.brokers.items()}
        yield History(zk.servers[0].data_dir / "data", cluster.chroot, epochs, restarts, churn,
                      sum(TOPICS.values()), [controller, successor], controller_epoch, logged, states)
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


States = dict[str, list[tuple[int, list[int], int]]]  # state znode path: [(version, isr, leader)]


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

    # ISR churn: what the controller wrote, as the state znodes showed it live, version by version
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
