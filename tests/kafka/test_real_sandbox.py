"""`kadmin sandbox --kafka-home`: real Apache Kafka started, bounced, killed and stopped by the sandbox.

Two module-scoped sandboxes, each started once through kadmin's own CLI (a subprocess, as a user runs it):
three Kafka 3.9.1 brokers in ZooKeeper mode, and a KRaft cluster of Kafka 4.3.1 (3 controllers + 3 brokers).
What is checked is what the real processes and the cluster show: pids alive or gone, the registrations in
ZooKeeper (epochs are czxids), DescribeCluster/DescribeQuorum answers, and Kafka's own log lines.
The last test of each module stops the sandbox; the fixture's teardown kills whatever is left.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from kadmin.sandbox.manager import process_identity
from tests.support.kafka import KAFKA_3_9, KAFKA_4, kafka_home
from tests.support.sandbox import Sandbox, alive, sandbox

pytestmark = [pytest.mark.kafka, pytest.mark.integration, pytest.mark.slow]

CONTROLLERS = {3001, 3002, 3003}


# --------------------------------------------------------------------------------------- ZooKeeper mode, 3.9.1
@pytest.fixture(scope="module")
def zk_sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    home = kafka_home(KAFKA_3_9)
    with sandbox(tmp_path_factory.mktemp("sandbox-zk") / "sb", "--kafka-home", str(home), "--brokers", "3",
                 plain=True) as sb:
        yield sb


def zk_brokers(sb: Sandbox, zk: str) -> dict[int, dict[str, Any]]:
    code, rows, err = sb.json("brokers", "list", "--zookeeper", zk)
    assert code == 0, err
    return {r["id"]: r for r in rows}


def test_zk_up_runs_real_brokers_that_kadmin_lists_with_their_ports(zk_sandbox: Sandbox) -> None:
    st = zk_sandbox.status()
    assert (st["engine"], st["mode"], st["kafka_version"]) == ("kafka", "zk", "3.9.1")
    assert zk_sandbox.up_stdout.strip() == st["zookeeper"] and st["zookeeper"].endswith("/kafka")
    procs = {(p["role"], p["id"]): p for p in st["processes"]}
    assert sorted(k for k in procs if k[0] == "broker") == [("broker", 1), ("broker", 2), ("broker", 3)]
    assert [p["role"] for p in st["processes"]].count("zookeeper") == 1
    for p in st["processes"]:
        assert p["alive"] and alive(p["pid"]), p
        # the pid is a real Kafka JVM started from this sandbox's config
        ident = process_identity(p["pid"])
        assert ident is not None
        if p["role"] == "broker":
            assert "kafka.Kafka" in ident["cmdline"] and p["registered"] is True
    rows = zk_brokers(zk_sandbox, st["zookeeper"])
    assert sorted(rows) == [1, 2, 3]
    for bid, row in rows.items():
        assert (row["host"], row["port"]) == ("127.0.0.1", procs[("broker", bid)]["port"])
        assert row["version"] == 5 and row["epoch"] == st["brokers"][str(bid)]
    assert st["controller"] in (1, 2, 3) and sum(r["is_controller"] for r in rows.values()) == 1
    assert zk_sandbox.run("sandbox", "status").returncode == 0


def test_zk_bounce_is_a_graceful_restart_with_a_new_epoch(zk_sandbox: Sandbox) -> None:
    zk = zk_sandbox.status()["zookeeper"]
    before = zk_brokers(zk_sandbox, zk)[2]
    old_pid = next(p["pid"] for p in zk_sandbox.status()["processes"] if p["role"] == "broker" and p["id"] == 2)
    code, data, err = zk_sandbox.json("sandbox", "bounce", "2")
    assert code == 0, err
    assert data["old_epoch"] == before["epoch"] and data["new_epoch"] > before["epoch"]
    assert data["old_pid"] == old_pid != data["pid"] and not alive(old_pid) and alive(data["pid"])
    after = zk_brokers(zk_sandbox, zk)[2]
    assert after["epoch"] == data["new_epoch"] and after["port"] == before["port"]  # same config and port
    wait = zk_sandbox.run("brokers", "wait", "2", "--epoch-gt", str(before["epoch"]), "--timeout", "5",
                          "--zookeeper", zk)
    assert wait.returncode == 0, wait.stderr
    # SIGTERM ran Kafka's own controlled shutdown, and it succeeded
    log = (zk_sandbox.dir / "broker-2" / "logs" / "server.log").read_text(errors="replace")
    assert "Controlled shutdown request returned successfully" in log


def test_zk_kill_hard_then_start(zk_sandbox: Sandbox) -> None:
    zk = zk_sandbox.status()["zookeeper"]
    before = zk_brokers(zk_sandbox, zk)[3]
    code, data, err = zk_sandbox.json("sandbox", "kill", "3", "--hard")
    assert code == 0, err
    assert data["hard"] is True and not alive(data["pid"])
    st = zk_sandbox.status()
    assert st["stopped_brokers"] == [3]
    assert zk_sandbox.run("sandbox", "status").returncode == 1  # a process is down
    assert zk_sandbox.run("sandbox", "kill", "3").returncode == 1  # already stopped
    code, started, err = zk_sandbox.json("sandbox", "start", "3")
    assert code == 0, err
    # a crash leaves the old session until it expires; the new process registered after it, with a new epoch
    assert started["new_epoch"] > before["epoch"] and alive(started["pid"])
    assert zk_brokers(zk_sandbox, zk)[3]["epoch"] == started["new_epoch"]
    assert zk_sandbox.run("sandbox", "start", "3").returncode == 1  # already running


def test_zk_down_stops_every_process(zk_sandbox: Sandbox) -> None:
    pids = zk_sandbox.pids()
    assert len(pids) == 4 and all(alive(p) for p in pids)
    code, data, err = zk_sandbox.json("sandbox", "down")
    assert code == 0, err
    assert sorted(s["pid"] for s in data["stopped"]) == sorted(pids) and data["already_gone"] == []
    assert not any(alive(p) for p in pids)
    assert zk_sandbox.run("sandbox", "status").returncode == 3  # no sandbox any more


# --------------------------------------------------------------------------------------------- KRaft, 4.3.1
@pytest.fixture(scope="module")
def kraft_sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    home = kafka_home(KAFKA_4)
    with sandbox(tmp_path_factory.mktemp("sandbox-kraft") / "sb", "--kafka-home", str(home), "--mode", "kraft",
                 "--brokers", "3", plain=True) as sb:
        yield sb


def test_kraft_up_status_and_quorum(kraft_sandbox: Sandbox) -> None:
    st = kraft_sandbox.status()
    assert (st["engine"], st["mode"], st["kafka_version"], st["zookeeper"]) == ("kafka", "kraft", "4.3.1", None)
    assert kraft_sandbox.up_stdout.strip() == st["bootstrap_servers"]
    roles = sorted((p["role"], p["id"]) for p in st["processes"])
    assert roles == [("broker", 1), ("broker", 2), ("broker", 3), *(("controller", c) for c in sorted(CONTROLLERS))]
    assert all(p["alive"] and alive(p["pid"]) and p["registered"] for p in st["processes"])
    assert st["controller"] in CONTROLLERS  # the active controller, as the controllers say

    code, quorum, err = kraft_sandbox.json("quorum", "describe", "--status", "--bootstrap-server",
                                           st["bootstrap_servers"])
    assert code == 0, err
    assert quorum["leader_id"] in CONTROLLERS
    assert {v["id"] for v in quorum["voters"]} == CONTROLLERS
    assert {o["id"] for o in quorum["observers"]} == {1, 2, 3}
    assert quorum["cluster_id"] == st["cluster_id"]

    code, rows, err = kraft_sandbox.json("brokers", "list", "--bootstrap-server", st["bootstrap_servers"])
    assert code == 0, err
    ports = {p["id"]: p["port"] for p in st["processes"] if p["role"] == "broker"}
    assert {r["id"]: (r["port"], r["state"]) for r in rows} == {b: (ports[b], "active") for b in (1, 2, 3)}

    # another controller count than the running sandbox's is refused, and nothing is stopped
    r = kraft_sandbox.run("sandbox", "up", "--kafka-home", str(kafka_home(KAFKA_4)), "--mode", "kraft",
                          "--controllers", "1")
    assert r.returncode == 3 and r.stderr.strip() == (
        f"kadmin: error: --controllers 1: the sandbox running in {kraft_sandbox.dir} has 3 controllers; "
        "`kadmin sandbox down` first to start one of another size")
    assert all(alive(p["pid"]) for p in st["processes"])


def replication_rows(text: str) -> tuple[list[str], dict[int, tuple[str, str]]]:
    """kafka-metadata-quorum describe --replication text: the header's columns, and per node id the
    columns that do not move between two calls (DirectoryId, Status); offsets and times do."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    header = lines[0].split()
    rows = {}
    for ln in lines[1:]:
        cols = ln.split()
        rows[int(cols[0])] = (cols[1], cols[-1])
    return header, rows


def test_kraft_quorum_replication_and_cluster_id_agree_with_kafkas_own_tools(kraft_sandbox: Sandbox) -> None:
    """On a real 4.3.1 quorum: `quorum describe --replication` has the shape and the nodes of Kafka's
    MetadataQuorumCommand (its NodeId, DirectoryId and Status columns equal; offsets and timestamps move
    between two calls), its JSON the contract's keys; `cluster id` equals what the controllers hold."""
    from tests.integration.test_quorum_kraft import QUORUM_KEYS, REPLICA_KEYS
    from tests.support.kafka import tool

    st = kraft_sandbox.status()
    ctl = st["bootstrap_controllers"]
    ours = kraft_sandbox.run("quorum", "describe", "--replication", "--bootstrap-controller", ctl, "-o", "plain")
    assert ours.returncode == 0, ours.stderr
    theirs = tool(kafka_home(KAFKA_4), "org.apache.kafka.tools.MetadataQuorumCommand", "--bootstrap-controller", ctl,
                  "describe", "--replication").stdout
    assert replication_rows(ours.stdout) == replication_rows(theirs)
    assert {n for n in replication_rows(theirs)[1]} == CONTROLLERS | {1, 2, 3}

    code, data, err = kraft_sandbox.json("quorum", "describe", "--replication", "--bootstrap-server",
                                         st["bootstrap_servers"])
    assert code == 0, err
    assert set(data) == QUORUM_KEYS and data["leader_id"] in CONTROLLERS
    assert all(set(r) == REPLICA_KEYS for r in data["voters"] + data["observers"])
    code, cid, err = kraft_sandbox.json("cluster", "id", "--bootstrap-server", st["bootstrap_servers"])
    assert code == 0, err
    assert cid["cluster_id"] == st["cluster_id"], cid  # the id StorageTool formatted every node with


def test_kraft_bounce_restarts_a_broker_that_registers_unfenced(kraft_sandbox: Sandbox) -> None:
    st = kraft_sandbox.status()
    old_pid = next(p["pid"] for p in st["processes"] if p["role"] == "broker" and p["id"] == 2)
    code, data, err = kraft_sandbox.json("sandbox", "bounce", "2")
    assert code == 0, err
    assert data["old_pid"] == old_pid != data["pid"] and not alive(old_pid) and alive(data["pid"])
    code, rows, err = kraft_sandbox.json("brokers", "list", "--bootstrap-server", st["bootstrap_servers"])
    assert code == 0, err
    assert {r["id"]: r["state"] for r in rows} == {1: "active", 2: "active", 3: "active"}
    log = (kraft_sandbox.dir / "broker-2" / "logs" / "server.log").read_text(errors="replace")
    # SIGTERM ran the broker's controlled shutdown (KRaft: through its heartbeats); then a second start
    assert "Beginning controlled shutdown." in log and log.count("Kafka Server started") == 2


def test_kraft_down_stops_every_process(kraft_sandbox: Sandbox) -> None:
    pids = kraft_sandbox.pids()
    assert len(pids) == 6 and all(alive(p) for p in pids)
    code, data, err = kraft_sandbox.json("sandbox", "down")
    assert code == 0, err
    assert sorted(s["pid"] for s in data["stopped"]) == sorted(pids)
    assert not any(alive(p) for p in pids)
