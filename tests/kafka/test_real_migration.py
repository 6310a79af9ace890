"""`kadmin sandbox up --mode migration` and `sandbox phase`: the ZooKeeper -> KRaft migration rehearsed on real
Kafka 3.9.1 (3 ZooKeeper-mode brokers, 3 controllers), with the sandbox's own commands only.

Two module-scoped sandboxes, each started once through kadmin's CLI: one goes forward through every phase
(PRE_MIGRATION -> MIGRATION -> brokers in KRaft -> POST_MIGRATION), the other rolls back from MIGRATION. Each
step is checked against what Kafka itself says: the controllers' log lines (tests/support/migration.py names
them), ZooKeeper's /controller and /migration, DescribeQuorum and DescribeCluster. The tests of a sandbox run in
order, each continuing from the state the previous one left; the last of each stops its sandbox.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.kafka import KAFKA_3_9, kafka_home
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
from tests.support.sandbox import Sandbox, alive, sandbox

pytestmark = [pytest.mark.kafka, pytest.mark.integration, pytest.mark.slow]

CONTROLLERS = [3001, 3002, 3003]
BROKERS = [1, 2, 3]


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


def test_brokers_rolled_into_migrating_start_the_migration(forward: Migration) -> None:
    sb = forward.sb
    for b in BROKERS:
        old = phases(forward)
        forward.roll(b, "migrating")
        assert phases(forward)[b] == ("migrating", True, True) and old[b][0] == "zk"
        if b < BROKERS[-1]:  # the last one starts the copy: its state is checked once Kafka logged it
            code, data = migration_status(forward)
            assert (code, data["state"]) == (0, "PRE_MIGRATION"), data
            assert modes(data) == {i: "zk_migrating" if i <= b else "zk" for i in BROKERS}
        p = props(sb, "broker", b)
        assert p["zookeeper.metadata.migration.enable"] == "true" and p["inter.broker.protocol.version"] == "3.9"
        assert p["broker.id"] == str(b) and "process.roles" not in p
    # once the last ZooKeeper broker is migrating, the KRaft controller copies the metadata and goes dual-write
    forward.wait_log(COPY_DONE)
    forward.wait_log(DUAL_WRITE)
    st = forward.status()
    zk = znodes(st["zookeeper"])
    leader = describe_quorum(st["bootstrap_controllers"])["leader"]
    assert zk["/controller"]["data"]["brokerid"] == leader and zk["/controller"]["data"]["kraftControllerEpoch"] > 0
    assert zk["/migration"]["data"]["kraft_controller_id"] == leader
    assert st["controller"] == leader  # the sandbox reads /controller too
    code, data = migration_status(forward)
    assert (code, data["state"], data["rollback_possible"]) == (0, "MIGRATION", True), data
    assert modes(data) == {b: "zk_migrating" for b in BROKERS}
    assert (data["controllers"]["active"], data["controllers"]["active_is_kraft"]) == (leader, True)
    assert "into KRaft" in data["next_step"]
    # ZooKeeper alone cannot tell MIGRATION from POST_MIGRATION: UNKNOWN, naming what would tell
    code, data = migration_status(forward, "zk", "b")
    assert (code, data["state"], data["possible_states"]) == (3, None, ["MIGRATION", "POST_MIGRATION"]), data
    assert any("--bootstrap-controller" in u["needs"] for u in data["unread"])


def test_brokers_rolled_into_kraft_keep_their_ids(forward: Migration) -> None:
    sb = forward.sb
    for b in BROKERS:
        forward.roll(b, "kraft")
        assert phases(forward)[b] == ("kraft", True, True)
        code, data = migration_status(forward)
        assert (code, data["state"]) == (0, "MIGRATION"), data
        assert modes(data) == {i: "kraft" if i <= b else "zk_migrating" for i in BROKERS}
        assert "rollback" not in data or "process.roles" in data["rollback"]  # KRaft brokers go back first
        p = props(sb, "broker", b)
        assert (p["process.roles"], p["node.id"]) == ("broker", str(b))
        assert not any(k.startswith("zookeeper.") or k == "broker.id" for k in p)
    st = forward.status()
    zk = znodes(st["zookeeper"])
    assert not any(k.startswith("/brokers/ids/") for k, v in zk.items() if v is not None)  # none in ZooKeeper
    port = next(p["port"] for p in st["processes"] if p["id"] == 1)
    assert {i: n["fenced"] for i, n in describe_cluster(f"127.0.0.1:{port}")["nodes"].items()} == {
        b: False for b in BROKERS}
    assert FINALIZED not in forward.log_text()  # still MIGRATION (dual write) while the controllers migrate


def test_controllers_finalized_leader_last_reach_post_migration(forward: Migration) -> None:
    sb = forward.sb
    leader = forward.quorum_leader()
    for c in [c for c in CONTROLLERS if c != leader] + [leader]:
        if c == leader:  # the others finalized, the leader not yet: still MIGRATION, the leader named last
            code, data = migration_status(forward)
            assert (code, data["state"]) == (0, "MIGRATION"), data
            assert data["next_step"].startswith(f"finalize the controllers: roll {leader} ")
        forward.roll(c, "finalized")
        p = props(sb, "controller", c)
        assert "zookeeper.metadata.migration.enable" not in p and "zookeeper.connect" not in p
    forward.wait_log(FINALIZED)
    code, data = migration_status(forward)
    assert (code, data["state"], data["rollback_possible"]) == (0, "POST_MIGRATION", False), data
    assert modes(data) == {b: "kraft" for b in BROKERS} and data["rollback"].startswith("not possible")
    assert data["controllers"]["active"] == forward.quorum_leader() and data["controllers"]["active_is_kraft"]
    assert not any(n["migration_enabled"] for n in data["controllers"]["nodes"])
    # the Kafka protocol alone cannot tell a finalized migration from a cluster that never migrated
    code, data = migration_status(forward, "ctl", "b")
    assert (code, data["possible_states"]) == (3, ["POST_MIGRATION", "NONE"]), data
    assert phases(forward) == {**{b: ("kraft", True, True) for b in BROKERS},
                               **{c: ("finalized", True, True) for c in CONTROLLERS}}


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
