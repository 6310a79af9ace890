"""The ZooKeeper -> KRaft migration on real Kafka 3.9.1 (3 ZooKeeper-mode brokers, 3 controllers: `kadmin sandbox up
--mode migration`): `migration roll` phase by phase and onto 4.3.1, `migration status` at every step, and a rollback.

Two module-scoped sandboxes, each started once through kadmin's CLI; the tests of a sandbox run in order, each
continuing from the state the previous one left; the last of each stops its sandbox.

Forward: a phase asked in the wrong state exits 7 and runs no hook. Then, with Kafka's VerifiableProducer writing
acks=all (idempotent, RF 3, min ISR 2) all along: brokers-migrating (kadmin SIGKILLed between a broker's stop and
its start, and the same command run again finishes the phase), brokers-kraft and controllers-finalize, each with
the sandbox's own commands as hooks (`sandbox kill`; `sandbox phase ID P && sandbox start ID`, counted by
tests/support/roll.py's hook script); then onto Kafka 4.3.1 as Kafka's upgrade notes have it (a plain `roll run`
starting each node from 4.3.1's installation, then `features upgrade --release-version 4.3`). Referees: the
controllers' own log lines (tests/support/migration.py names them), ZooKeeper's /controller and /migration,
DescribeQuorum and DescribeCluster, the hooks' counters (each node stopped and started exactly once per phase),
and every acknowledged record read back with its value. (What `migration status` says part-way through a phase,
one broker at a time, is tested on the recorded observations of docs/migration-observed.json:
tests/unit/test_migration.py.)

Rollback: from MIGRATION, by Kafka's guide, `migration status` telling the truth at each step.
"""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.kafka import KAFKA_3_9, KAFKA_4, TOPIC_COMMAND, kafka_home, tool, wait_for
from tests.support.migration import (
    COPY_DONE,
    DUAL_WRITE,
    FINALIZED,
    PRE_MIGRATION,
    Migration,
    delete_znodes,
    describe_cluster,
    describe_quorum,
    znodes,
)
from tests.support.producer import Producer, assert_no_write_lost, read_back
from tests.support.roll import Counter, RollRun, hook_args, journal, on, write_hook
from tests.support.sandbox import Sandbox, alive, sandbox

pytestmark = [pytest.mark.kafka, pytest.mark.integration, pytest.mark.slow]

CONTROLLERS = [3001, 3002, 3003]
BROKERS = [1, 2, 3]
WAIT = 300.0
NODE_PHASE = {"brokers-migrating": "migrating", "brokers-kraft": "kraft", "controllers-finalize": "finalized"}


def props(sb: Sandbox, role: str, node_id: int) -> dict[str, str]:
    text = (sb.dir / f"{role}-{node_id}" / "server.properties").read_text()
    return dict(ln.split("=", 1) for ln in text.splitlines() if "=" in ln)


def migration_status(m: Migration, *sources: str) -> tuple[int, dict[str, Any]]:
    """`kadmin migration status -o json` with -z, --bootstrap-controller and -b (every broker) unless `sources` names
    which: its exit code (a verdict) and data."""
    st = m.status()
    brokers = ",".join(f"127.0.0.1:{p['port']}" for p in st["processes"] if p["role"] == "broker")
    given = {"zk": ["-z", st["zookeeper"]], "ctl": ["--bootstrap-controller", st["bootstrap_controllers"]],
             "b": ["-b", brokers]}
    args = [a for name in (sources or ("zk", "ctl", "b")) for a in given[name]]
    code, data, err = m.sb.json("migration", "status", "--timeout", "60", *args)
    assert data is not None, err
    return code, data


def modes(data: dict[str, Any]) -> dict[int, str | None]:
    return {b["id"]: b["mode"] for b in data["brokers"]}


def phases(m: Migration) -> dict[int, tuple[str, bool, bool]]:
    """{id: (phase, alive, registered)} as `sandbox status` shows them."""
    return {p["id"]: (p["phase"], p["alive"], p["registered"]) for p in m.status()["processes"]
            if p["role"] in ("broker", "controller")}


@pytest.fixture(scope="module")
def forward(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Migration]:
    home = kafka_home(KAFKA_3_9)
    with sandbox(tmp_path_factory.mktemp("migration") / "sb", "--kafka-home", str(home), "--mode", "migration",
                 "--brokers", "3") as sb:
        yield Migration(sb)


def test_up_runs_zk_brokers_and_controllers_formatted_with_the_zk_cluster_id(forward: Migration) -> None:
    sb = forward.sb
    st = forward.status()
    assert (st["engine"], st["mode"], st["kafka_version"]) == ("kafka", "migration", "3.9.1")
    assert sb.up_stdout.strip() == st["zookeeper"]  # plain output: the ZooKeeper connect string
    assert phases(forward) == {**{b: ("zk", True, True) for b in BROKERS},
                               **{c: ("migrating", True, True) for c in CONTROLLERS}}
    ctrl_ports = {p["id"]: p["port"] for p in st["processes"] if p["role"] == "controller"}
    assert st["bootstrap_controllers"] == ",".join(f"127.0.0.1:{ctrl_ports[c]}" for c in CONTROLLERS)
    # the controllers carry the ZooKeeper cluster's id (StorageTool format), the migration flag and the chroot
    zk = znodes(st["zookeeper"])
    from kazoo.client import KazooClient

    k = KazooClient(hosts=st["zookeeper"])
    k.start(timeout=30)
    try:
        cluster_id = json.loads(k.get("/cluster/id")[0])["id"]
    finally:
        k.stop()
        k.close()
    assert st["cluster_id"] == cluster_id
    for c in CONTROLLERS:
        meta = (sb.dir / f"controller-{c}" / "data" / "meta.properties").read_text()
        assert f"cluster.id={cluster_id}" in meta and f"node.id={c}" in meta
        p = props(sb, "controller", c)
        assert (p["zookeeper.metadata.migration.enable"], p["zookeeper.connect"]) == ("true", st["zookeeper"])
        assert p["process.roles"] == "controller" and p["controller.quorum.voters"].count("@") == 3
    # Kafka's own word: the controllers are in PRE_MIGRATION, waiting for the ZooKeeper brokers
    forward.wait_log(PRE_MIGRATION)
    q = describe_quorum(st["bootstrap_controllers"])
    assert q["leader"] in CONTROLLERS and q["voters"] == CONTROLLERS
    assert zk["/controller"]["data"]["brokerid"] in BROKERS  # still the ZooKeeper-mode controller
    assert zk["/migration"]["data"]["kraft_controller_id"] == -1  # created, no KRaft controller yet
    code, data = migration_status(forward)
    assert (code, data["state"], data["status"]) == (0, "PRE_MIGRATION", "ok"), data
    assert modes(data) == {b: "zk" for b in BROKERS} and data["rollback_possible"] is True
    assert data["controllers"]["leader"] == q["leader"] and data["controllers"]["active_is_kraft"] is False
    assert data["controllers"]["active"] in BROKERS and "roll brokers 1, 2, 3" in data["next_step"]
    assert all(n["migration_enabled"] for n in data["controllers"]["nodes"])


def test_phase_refuses_what_is_not_a_phase_of_that_node(forward: Migration) -> None:
    assert forward.sb.run("sandbox", "phase", "1", "finalized").returncode == 2  # a controller's phase
    assert forward.sb.run("sandbox", "phase", "3001", "kraft").returncode == 2  # a broker's phase
    assert forward.sb.run("sandbox", "phase", "42", "zk").returncode == 1  # no such node
    code, data, err = forward.sb.json("sandbox", "phase", "1", "zk")  # a running node: from its next start
    assert code == 0, err
    assert (data["phase"], data["old_phase"], data["running"]) == ("zk", "zk", True)


@dataclass
class Journey:
    m: Migration
    home: Path
    work: Path
    connection: list[str]
    bootstrap: str

    def status(self) -> tuple[int, dict[str, Any]]:
        code, data, err = self.m.sb.json("migration", "status", "--timeout", "60", *self.connection)
        assert data is not None, err
        return code, data

    def hooks(self, phase: str) -> tuple[list[str], Counter]:
        """--stop/--start through the counting hook script: `sandbox kill ID`; `sandbox phase ID P && sandbox
        start ID` (a script of its own, the id appended)."""
        kadmin = [sys.executable, "-m", "kadmin", "sandbox"]
        d = ["--dir", str(self.m.sb.dir), "-o", "plain"]
        starter = self.work / f"start-{phase}.sh"
        starter.write_text("#!/bin/sh\nset -e\n"
                           f'{shlex.join([*kadmin, "phase"])} "$1" {NODE_PHASE[phase]} {shlex.join(d)}\n'
                           f'{shlex.join([*kadmin, "start"])} "$1" {shlex.join(d)}\n')
        starter.chmod(0o755)
        hook = write_hook(self.work / f"hook-{phase}.sh", [*kadmin, "kill", *d], [str(starter)])
        counter = self.work / f"{phase}.counter"
        return hook_args(hook, counter), Counter(counter)

    def upgrade_hooks(self, home: Path) -> tuple[list[str], Counter]:
        """--stop/--start that move each node onto the Kafka installation `home` (`sandbox start --kafka-home`)."""
        kadmin = [sys.executable, "-m", "kadmin", "sandbox"]
        d = ["--dir", str(self.m.sb.dir), "-o", "plain"]
        hook = write_hook(self.work / "hook-upgrade.sh", [*kadmin, "kill", *d],
                          [*kadmin, "start", "--kafka-home", str(home), *d])
        counter = self.work / "upgrade.counter"
        return hook_args(hook, counter), Counter(counter)

    def roll(self, phase: str, state: Path, hook: list[str], **kw: Any) -> RollRun:
        return RollRun(["--phase", phase, "--state", str(state), "--step-timeout", "240", *hook, *self.connection],
                       self.m.sb.env, self.work / f"{phase}.stderr", verb=("migration", "roll"), **kw)


@pytest.fixture(scope="module")
def journey(forward: Migration, tmp_path_factory: pytest.TempPathFactory) -> Journey:
    st = forward.status()
    brokers = ",".join(f"127.0.0.1:{p['port']}" for p in st["processes"] if p["role"] == "broker")
    connection = ["-z", st["zookeeper"], "--bootstrap-controller", st["bootstrap_controllers"], "-b", brokers]
    return Journey(forward, kafka_home(KAFKA_3_9), tmp_path_factory.mktemp("migration-roll"), connection, brokers)


def test_a_phase_asked_in_the_wrong_state_is_refused_and_touches_nothing(journey: Journey) -> None:
    code, data = journey.status()
    assert (code, data["state"]) == (0, "PRE_MIGRATION"), data
    for phase in ("brokers-kraft", "controllers-finalize"):
        hook, counter = journey.hooks(phase)
        state = journey.work / f"refused-{phase}"
        run = journey.roll(phase, state, hook)
        assert run.wait(WAIT) == 7, run.stderr()
        err = run.stderr()
        assert "nothing touched" in err and "PRE_MIGRATION" in err and "brokers-migrating" in err, err
        assert counter.lines() == [] and not (state / "journal.ndjson").exists()


def test_the_whole_journey_phase_by_phase_loses_no_acknowledged_write(journey: Journey) -> None:
    topic = "migration-roll"
    tool(journey.home, TOPIC_COMMAND, "--bootstrap-server", journey.bootstrap, "--create", "--topic", topic,
         "--partitions", "6", "--replication-factor", "3", "--config", "min.insync.replicas=2")
    with Producer(journey.home, journey.bootstrap, topic, delivery_timeout_ms=30000,
                  work_dir=journey.work) as producer:
        producer.wait_acked_more_than(100, WAIT)

        # brokers-migrating, kadmin SIGKILLed between the second broker's stop and its start, then run again
        hook, counter = journey.hooks("brokers-migrating")
        state = journey.work / "phase-1"
        first = journey.roll("brokers-migrating", state, hook)
        second = first.wait_event(on(2, "wait_stopped", "done"), WAIT, "broker 2 seen stopped")
        assert first.kill() == -9 and second["node"] == 2
        resumed = journey.roll("brokers-migrating", state, hook)
        assert resumed.wait(WAIT) == 0, resumed.stderr()
        assert "the cluster is in MIGRATION" in resumed.stderr()
        counter.assert_each_restarted_once(BROKERS)
        kinds = [e["event"] for e in journal(state)]
        assert kinds.count("roll_started") == 1 and kinds.count("roll_resumed") == 1 and kinds[-1] == "roll_done"
        journey.m.wait_log(COPY_DONE)  # Kafka's own word: the controller copied the metadata
        journey.m.wait_log(DUAL_WRITE)
        code, data = journey.status()
        assert (code, data["state"], data["rollback_possible"]) == (0, "MIGRATION", True), data
        assert modes(data) == {b: "zk_migrating" for b in BROKERS}
        st = journey.m.status()
        zk = znodes(st["zookeeper"])
        leader = describe_quorum(st["bootstrap_controllers"])["leader"]
        assert zk["/controller"]["data"]["brokerid"] == leader and zk["/controller"]["data"]["kraftControllerEpoch"] > 0
        assert zk["/migration"]["data"]["kraft_controller_id"] == leader
        assert st["controller"] == leader  # the sandbox reads /controller too
        assert (data["controllers"]["active"], data["controllers"]["active_is_kraft"]) == (leader, True)
        assert "into KRaft" in data["next_step"]
        for b in BROKERS:
            p = props(journey.m.sb, "broker", b)
            assert p["zookeeper.metadata.migration.enable"] == "true" and p["inter.broker.protocol.version"] == "3.9"
        # ZooKeeper alone cannot tell MIGRATION from POST_MIGRATION: UNKNOWN, naming what would tell
        code, data = migration_status(journey.m, "zk", "b")
        assert (code, data["state"], data["possible_states"]) == (3, None, ["MIGRATION", "POST_MIGRATION"]), data
        assert any("--bootstrap-controller" in u["needs"] for u in data["unread"])
        producer.wait_acked_more_than(producer.acked_count() + 100, WAIT)

        # brokers-kraft
        hook, counter = journey.hooks("brokers-kraft")
        run = journey.roll("brokers-kraft", journey.work / "phase-2", hook)
        assert run.wait(WAIT * 2) == 0, run.stderr()
        counter.assert_each_restarted_once(BROKERS)
        code, data = journey.status()
        assert (code, data["state"]) == (0, "MIGRATION"), data
        assert modes(data) == {b: "kraft" for b in BROKERS}
        assert FINALIZED not in journey.m.log_text()  # still MIGRATION (dual write) while the controllers migrate
        leader = journey.m.quorum_leader()
        pending = [c for c in CONTROLLERS if c != leader] + [leader]  # the quorum leader named last
        assert data["next_step"].startswith(f"finalize the controllers: roll {', '.join(map(str, pending))} "), data
        st = journey.m.status()
        zk = znodes(st["zookeeper"])
        assert not any(k.startswith("/brokers/ids/") for k, v in zk.items() if v is not None)  # none in ZooKeeper
        port = next(p["port"] for p in st["processes"] if p["id"] == 1)
        assert {i: n["fenced"] for i, n in describe_cluster(f"127.0.0.1:{port}")["nodes"].items()} == {
            b: False for b in BROKERS}
        for b in BROKERS:
            p = props(journey.m.sb, "broker", b)
            assert (p["process.roles"], p["node.id"]) == ("broker", str(b))
            assert not any(k.startswith("zookeeper.") or k == "broker.id" for k in p)
        producer.wait_acked_more_than(producer.acked_count() + 100, WAIT)

        # controllers-finalize: the point of no return, said before the first controller
        hook, counter = journey.hooks("controllers-finalize")
        run = journey.roll("controllers-finalize", journey.work / "phase-3", hook)
        assert run.wait(WAIT * 2) == 0, run.stderr()
        assert "point of no return" in run.stderr()
        counter.assert_each_restarted_once(CONTROLLERS)
        journey.m.wait_log(FINALIZED)
        code, data = journey.status()
        assert (code, data["state"], data["rollback_possible"]) == (0, "POST_MIGRATION", False), data
        assert modes(data) == {b: "kraft" for b in BROKERS} and data["rollback"].startswith("not possible")
        assert data["controllers"]["active"] == journey.m.quorum_leader() and data["controllers"]["active_is_kraft"]
        assert not any(n["migration_enabled"] for n in data["controllers"]["nodes"])
        for c in CONTROLLERS:
            p = props(journey.m.sb, "controller", c)
            assert "zookeeper.metadata.migration.enable" not in p and "zookeeper.connect" not in p
        # the Kafka protocol alone cannot tell a finalized migration from a cluster that never migrated
        code, data = migration_status(journey.m, "ctl", "b")
        assert (code, data["possible_states"]) == (3, ["POST_MIGRATION", "NONE"]), data
        assert phases(journey.m) == {**{b: ("kraft", True, True) for b in BROKERS},
                                     **{c: ("finalized", True, True) for c in CONTROLLERS}}
        producer.wait_acked_more_than(producer.acked_count() + 100, WAIT)

        # onto Kafka 4.3.1: a plain `roll run` (controllers first, the quorum leader last), then features upgrade
        new = kafka_home(KAFKA_4)
        hook, counter = journey.upgrade_hooks(new)
        upgrade = RollRun(["--state", str(journey.work / "upgrade"), "--step-timeout", "240", *hook,
                           "-b", journey.bootstrap], journey.m.sb.env, journey.work / "upgrade.stderr")
        assert upgrade.wait(WAIT * 3) == 0, upgrade.stderr()
        counter.assert_each_restarted_once(BROKERS + CONTROLLERS)
        pids = journey.m.sb.pids()
        assert all(f"{new}/libs/*" in Path(f"/proc/{p}/cmdline").read_bytes().decode().split("\0") for p in pids
                   if Path(f"/proc/{p}/cmdline").exists() and b"kafka.Kafka" in Path(f"/proc/{p}/cmdline").read_bytes())
        code, feats, err = journey.m.sb.json("features", "upgrade", "--release-version", "4.3", "-b", journey.bootstrap)
        assert code == 0, err
        code, feats, err = journey.m.sb.json("features", "describe", "-b", journey.bootstrap)
        assert code == 0, err
        levels = {f["name"]: f["finalized_level"] for f in feats["features"]}
        assert levels["metadata.version"] == 30, feats  # 4.3-IV0
        producer.wait_acked_more_than(producer.acked_count() + 100, WAIT)
        producer.stop()
    wait_for(lambda: journey.m.sb.run("sandbox", "status").returncode == 0, WAIT, "every node up")
    assert_no_write_lost(producer, read_back(journey.bootstrap, topic, journey.home))
    # the finished phase asked again with its state: done, nothing restarted; with a new state: refused
    hook, counter = journey.hooks("controllers-finalize")
    again = journey.roll("controllers-finalize", journey.work / "phase-3", hook)
    assert again.wait(WAIT) == 0, again.stderr()
    assert "nothing to restart" in again.stderr()
    fresh = journey.roll("controllers-finalize", journey.work / "phase-3-again", hook)
    assert fresh.wait(WAIT) == 7, fresh.stderr()  # POST_MIGRATION: no phase begins there
    counter.assert_each_restarted_once(CONTROLLERS)


def test_forward_down(forward: Migration) -> None:
    pids = forward.sb.pids()
    assert forward.sb.run("sandbox", "down").returncode == 0
    assert not any(alive(p) for p in pids)


# ------------------------------------------------------------------------------------ rollback from MIGRATION
@pytest.fixture(scope="module")
def rollback(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Migration]:
    home = kafka_home(KAFKA_3_9)
    with sandbox(tmp_path_factory.mktemp("migration-rollback") / "sb", "--kafka-home", str(home), "--mode",
                 "migration", "--brokers", "3") as sb:
        yield Migration(sb)


def test_rollback_from_migration_brings_the_brokers_back_to_zookeeper_mode(rollback: Migration) -> None:
    for b in BROKERS:
        rollback.roll(b, "migrating")
    rollback.wait_log(DUAL_WRITE)
    st = rollback.status()
    # Kafka's guide: deprovision the controllers, delete /controller and /migration, roll the brokers to ZK mode
    code, data = migration_status(rollback)
    assert (code, data["state"]) == (0, "MIGRATION") and modes(data) == {b: "zk_migrating" for b in BROKERS}, data
    assert "delete /controller" in data["rollback"]
    for c in CONTROLLERS:
        assert rollback.sb.run("sandbox", "kill", str(c)).returncode == 0
    # the controllers gone, /migration still filled: MIGRATION or POST_MIGRATION, not a guess
    code, data = migration_status(rollback)
    assert (code, data["state"], data["possible_states"]) == (3, None, ["MIGRATION", "POST_MIGRATION"]), data
    held = delete_znodes(st["zookeeper"], "/controller", "/migration")
    assert held["/controller"]["brokerid"] in CONTROLLERS and "kraft_controller_id" in held["/migration"]
    code, data = migration_status(rollback, "zk", "b")  # half-way back: migration on, no KRaft controller
    assert (code, data["state"], [f["code"] for f in data["findings"]]) == (
        1, "ZK", ["migrating_without_controller"]), data
    for b in BROKERS:
        rollback.roll(b, "zk")
        p = props(rollback.sb, "broker", b)
        assert "zookeeper.metadata.migration.enable" not in p and "controller.quorum.voters" not in p
        code, data = migration_status(rollback, "zk", "b")
        assert (data["state"], modes(data)) == ("ZK", {i: "zk" if i <= b else "zk_migrating" for i in BROKERS}), data
        assert code == (0 if b == BROKERS[-1] else 1)
    zk = znodes(st["zookeeper"])
    assert zk["/controller"]["data"]["brokerid"] in BROKERS and zk["/controller"]["data"]["kraftControllerEpoch"] == -1
    assert zk["/migration"] is None
    assert sorted(int(k.rsplit("/", 1)[1]) for k, v in zk.items() if k.startswith("/brokers/ids/") and v) == BROKERS
    assert {b: v[:2] for b, v in phases(rollback).items() if b in BROKERS} == {b: ("zk", True) for b in BROKERS}
    assert rollback.status()["controller"] in BROKERS


def test_rollback_down(rollback: Migration) -> None:
    assert rollback.sb.run("sandbox", "down").returncode == 0
    assert not Path(rollback.sb.dir / "state.json").exists()
