"""`kadmin roll` end to end in ZooKeeper mode, through the real Typer app: emulated brokers (kadmin/sandbox/fleet.py)
registered from their own sessions in the real ZooKeeper, each answering the Kafka protocol (its controller serves
ControlledShutdown), and hooks that really stop and start them: the hook is a small client that asks this test's
control socket to close a broker's session (`stop`) or register it again from a new one (`start`: a new epoch).

The brokers host no partition unless a test creates a topic (the emulated controller executes no reassignment, so
a drain with something to move cannot finish: `roll run` is only run on brokers without partitions here; the
real-Kafka tests, tests/kafka, roll brokers with data)."""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import sys
import tempfile
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from kadmin.sandbox.fleet import BrokerSpec, ThreadedFleet
from kadmin.sandbox.zkserver import Ensemble
from tests.conftest import Run
from tests.support.roll import taken_together

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

CLUSTER_ID = "roll-test-cluster"

CLIENT = textwrap.dedent("""
    import socket, sys
    s = socket.socket(socket.AF_UNIX)
    s.connect(sys.argv[1])
    s.sendall((" ".join(sys.argv[2:]) + "\\n").encode())
    reply = s.makefile().readline().strip()
    print(reply)
    sys.exit(0 if reply == "ok" else 1)
""")


class Control:
    """The hooks' other end: `stop ID` closes broker ID's session, `start ID` registers it again, `restart ID`
    both; an (op, id) in `fail` answers `failed` (the hook exits 1) and does nothing."""

    def __init__(self, fleet: ThreadedFleet) -> None:
        self.fleet = fleet
        self.calls: list[tuple[str, int]] = []
        self.fail: set[tuple[str, int]] = set()
        self.dir = Path(tempfile.mkdtemp(prefix="kroll-"))  # short: an AF_UNIX path has ~100 bytes
        self.path = self.dir / "ctl.sock"
        (self.dir / "client.py").write_text(CLIENT)
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.bind(str(self.path))
        self.sock.listen(8)
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def hook(self, op: str) -> str:
        return f"{sys.executable} {self.dir / 'client.py'} {self.path} {op} {{id}}"

    def serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                op, bid = conn.makefile().readline().split()
                self.calls.append((op, int(bid)))
                try:
                    if (op, int(bid)) in self.fail:
                        reply = "failed"
                    else:
                        if op in ("stop", "restart"):
                            self.fleet.stop(int(bid))
                        if op in ("start", "restart"):
                            self.fleet.register(self.fleet.specs[int(bid)])
                        reply = "ok"
                except Exception as e:  # noqa: BLE001 - the hook says what went wrong
                    reply = f"error {e!r}"
                conn.sendall(f"{reply}\n".encode())

    def close(self) -> None:
        self.sock.close()
        shutil.rmtree(self.dir, ignore_errors=True)


class Cluster:
    def __init__(self, zk_server: Ensemble, chroot: str, brokers: tuple[int, ...]) -> None:
        self.fleet = ThreadedFleet(zk_server.hosts, chroot=chroot, session_timeout_ms=4000, serve_kafka=True)
        self.fleet.setup_cluster(CLUSTER_ID)
        for b in brokers:
            self.fleet.register(BrokerSpec(b))
        self.kz = KazooClient(hosts=zk_server.connect_string + chroot)
        self.kz.start(timeout=10)
        self.ctl = Control(self.fleet)

    def epoch(self, broker: int) -> int:
        return int(self.kz.get(f"/brokers/ids/{broker}")[1].czxid)

    def controller(self) -> int:
        return int(json.loads(self.kz.get("/controller")[0])["brokerid"])

    def close(self) -> None:
        self.ctl.close()
        with contextlib.suppress(Exception):
            self.kz.stop()
            self.kz.close()
        self.fleet.shutdown()


@pytest.fixture
def cluster(zk_server: Ensemble, chroot: str) -> Iterator[Cluster]:
    c = Cluster(zk_server, chroot, (1, 2, 3))
    yield c
    c.close()


def hooks(c: Cluster) -> tuple[str, ...]:
    return ("--stop", c.ctl.hook("stop"), "--start", c.ctl.hook("start"))


def journal(d: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (d / "journal.ndjson").read_text().splitlines()]


def one_line_error(r: Any, code: int, *says: str) -> str:
    assert r.exit_code == code, (r.exit_code, r.stdout, r.stderr)
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("kadmin: error: ")]
    assert len(errors) == 1, r.stderr
    assert "Traceback" not in r.stderr + r.stdout
    for s in says:
        assert s in errors[0], (s, errors[0])
    return errors[0]


ZK_STEPS = ["can_stop", "drain", "shutdown", "others_healthy", "stop", "wait_stopped", "start", "wait_restarted",
            "wait_in_sync", "undrain", "wait_healthy", "settle"]


# ------------------------------------------------------------------------------------------------ plan
def test_plan_the_active_controller_last(run: Run, cluster: Cluster) -> None:
    assert cluster.controller() == 1
    r = run("roll", "plan", "-o", "plain")
    assert r.exit_code == 0, r.stderr
    assert r.stdout == "BATCH\tNODE\tROLE\n1\t2\tbroker\n2\t3\tbroker\n3\t1\tbroker\n"
    assert "3 node(s) in 3 batch(es): 2 | 3 | 1" in r.stderr
    code, doc, err = run.json("roll", "plan")
    assert code == 0, err
    d = doc["data"]
    assert (d["mode"], d["cluster_id"], d["leader"], d["controllers"], d["parallel"]) == \
        ("zookeeper", CLUSTER_ID, 1, "first", 1)
    assert (d["batches"], d["healthy"], d["unhealthy"]) == ([[2], [3], [1]], True, [])
    assert [(n["node"], n["role"], n["batch"], n["skip"]) for n in d["nodes"]] == \
        [(2, "broker", 1, None), (3, "broker", 2, None), (1, "broker", 3, None)]
    assert all(n["steps"] == ZK_STEPS and n["host"] == "127.0.0.1" and n["port"] for n in d["nodes"])
    # the controller (1) moves at the end: the new one sends each of the 3 brokers every partition (none here)
    f = d["controller_failover"]
    assert (f["partitions"], f["live_brokers"], f["warning"]) == (0, 3, None)
    assert f["update_metadata_bytes"] == 3 * f["request_bytes"] > 0 and f["threshold_bytes"] == 1 << 30
    assert d["estimate"] is None  # no --from
    assert "the controller moves at the end: 3 UpdateMetadata request(s) of 0 partition(s)" in err
    code, doc, err = run.json("roll", "plan", "--nodes", "2,3")
    assert doc["data"]["controller_failover"] is None  # the controller is not restarted: it does not move


@pytest.mark.parametrize(("args", "batches"), [
    (("--parallel", "2"), [[2, 3], [1]]),
    (("--parallel", "3"), [[2, 3, 1]]),  # the active controller joins the batch that takes every other node
    (("--nodes", "3,1"), [[3], [1]]),
    (("--nodes", "2"), [[2]]),
    (("--controllers", "skip"), [[2], [3], [1]]),  # ZooKeeper-mode brokers are no KRaft controllers
])
def test_plan_batches(run: Run, cluster: Cluster, args: tuple[str, ...], batches: list[list[int]]) -> None:
    code, doc, err = run.json("roll", "plan", *args)
    assert code == 0, err
    assert doc["data"]["batches"] == batches


def test_plan_steps_with_restart_and_only_if(run: Run, cluster: Cluster) -> None:
    code, doc, err = run.json("roll", "plan", "--restart", "true", "--only-if", "test {id} != 3")
    assert code == 0, err
    nodes = {n["node"]: n for n in doc["data"]["nodes"]}
    assert nodes[2]["steps"] == ["only_if", "can_stop", "drain", "shutdown", "others_healthy", "restart",
                                 "wait_restarted", "wait_in_sync", "undrain", "wait_healthy", "settle"]
    assert {i: n["skip"] for i, n in nodes.items()} == {1: False, 2: False, 3: True}


def test_plan_of_an_unknown_node_is_a_usage_error(run: Run, cluster: Cluster) -> None:
    one_line_error(run("roll", "plan", "--nodes", "2,99"), 2, "--nodes: 99: no such node (the cluster has 1, 2, 3)")


def test_plan_batches_keep_min_isr(run: Run, zk_server: Ensemble, chroot: str) -> None:
    """With partitions: brokers that share a partition whose ISR would fall below its min ISR are never in one
    batch (the live ISRs read from the state znodes, min.insync.replicas from the topic's config)."""
    c = Cluster(zk_server, chroot, (1, 2, 3, 4))
    try:
        c.fleet.create_topic("t", {0: [1, 2, 3], 1: [2, 3, 1]}, configs={"min.insync.replicas": "2"})
        code, doc, err = run.json("roll", "plan", "--parallel", "4")
        assert code == 0, err
        # 2 and 3 share t's partitions (RF 3, min ISR 2): never together; 4 hosts nothing; 1 (the controller)
        # only in the last batch, and not with 3
        assert doc["data"]["batches"] == [[2, 4], [3], [1]]
        assert doc["data"]["healthy"] is True
        f = doc["data"]["controller_failover"]
        assert (f["partitions"], f["live_brokers"]) == (2, 4) and f["update_metadata_bytes"] == 4 * f["request_bytes"]
    finally:
        c.close()


# ------------------------------------------------------------------------------------------------ run
def test_a_roll_that_completes(run: Run, cluster: Cluster, tmp_path: Path) -> None:
    state = tmp_path / "roll"
    before = {b: cluster.epoch(b) for b in (1, 2, 3)}
    code, doc, err = run.json("roll", "run", "--state", str(state), *hooks(cluster), "--step-timeout", "60")
    assert code == 0, err
    d = doc["data"]
    assert (d["status"], d["cluster_id"], d["mode"], d["failure"]) == ("done", CLUSTER_ID, "zookeeper", None)
    assert [n["node"] for n in d["nodes"]] == [2, 3, 1]
    for n in d["nodes"]:
        assert (n["status"], n["phase"]) == ("done", "done")
        assert n["old_epoch"] == before[n["node"]] and n["new_epoch"] == cluster.epoch(n["node"])
        assert n["new_epoch"] > n["old_epoch"]
        assert [s["step"] for s in n["steps"]] == ZK_STEPS
    # each node stopped and started once, one after the other, the active controller last
    assert cluster.ctl.calls == [("stop", 2), ("start", 2), ("stop", 3), ("start", 3), ("stop", 1), ("start", 1)]
    assert cluster.controller() != 1  # it moved once, when 1 stopped
    events = journal(state)
    assert events[0]["event"] == "roll_started" and events[-1]["event"] == "roll_done"
    assert [e["node"] for e in events if e["event"] == "node_done"] == [2, 3, 1]
    assert "rolled 3 node(s)" in err

    # the same command again: the roll had finished, nothing to do (nothing journaled)
    r = run("roll", "run", "--state", str(state), *hooks(cluster), "--step-timeout", "60")
    assert r.exit_code == 0, r.stderr
    assert "nothing to do" in r.stderr
    assert journal(state) == events and len(cluster.ctl.calls) == 6

    # status reads the same
    code, doc, _ = run.json("roll", "status", "--state", str(state))
    assert code == 0 and doc["data"]["status"] == "done"
    assert [(n["node"], n["status"]) for n in doc["data"]["nodes"]] == [(2, "done"), (3, "done"), (1, "done")]
    assert doc["data"]["estimate_left_s"] is None  # nothing left

    # the time of another such roll, from this one's journal: each broker as long as this roll's mean one
    took = [n["elapsed_s"] for n in doc["data"]["nodes"]]
    code, doc, err = run.json("roll", "plan", "--from", str(state))
    assert code == 0, err
    e = doc["data"]["estimate"]
    mean = sum(took) / 3
    assert e["from"] == str(state) and e["unestimated"] == []
    assert e["per_node"] == {str(i): pytest.approx(mean, abs=1e-3) for i in (1, 2, 3)}
    assert e["total_s"] == pytest.approx(sum(took), abs=1e-2)
    (basis,) = e["basis"]
    assert (basis["role"], basis["nodes"]) == ("broker", 3) and basis["hooks_s"] > 0 and basis["kadmin_s"] > 0
    assert basis["mean_s"] == pytest.approx(basis["hooks_s"] + basis["kadmin_s"], abs=1e-2)
    assert "about " in err and f"(from {state}: broker " in err
    r = run("roll", "plan", "--from", str(state), "-o", "plain")
    assert r.exit_code == 0, r.stderr
    lines = [ln.split("\t") for ln in r.stdout.splitlines()]
    assert lines[0] == ["BATCH", "NODE", "ROLE", "EST_SECONDS"]
    assert {row[1]: float(row[3]) for row in lines[1:]} == {str(i): pytest.approx(mean, abs=0.051) for i in (1, 2, 3)}


def test_a_roll_in_parallel_batches_and_ndjson(run: Run, cluster: Cluster, tmp_path: Path) -> None:
    state = tmp_path / "roll"
    r = run("roll", "run", "--state", str(state), *hooks(cluster), "--parallel", "2", "--step-timeout", "60",
            "-o", "ndjson")
    assert r.exit_code == 0, r.stderr
    events = [json.loads(line) for line in r.stdout.splitlines()]
    assert events == journal(state)  # the stream is the journal
    assert events[0]["event"] == "roll_started" and events[0]["parallel"] == 2 and events[-1]["event"] == "roll_done"
    # 2 and 3 together (their stop hooks at once), then 1
    assert sorted(cluster.ctl.calls[:4]) == [("start", 2), ("start", 3), ("stop", 2), ("stop", 3)]
    assert [op for op, _ in cluster.ctl.calls[:4]] == ["stop", "stop", "start", "start"]
    assert cluster.ctl.calls[4:] == [("stop", 1), ("start", 1)]
    assert taken_together(events, [2, 3], "drain") and taken_together(events, [2, 3], "undrain")


def test_the_active_controller_stops_after_the_rest_of_its_batch(run: Run, cluster: Cluster,
                                                                 tmp_path: Path) -> None:
    """A batch with the active controller: the others' stop hooks first (their own controlled shutdowns need a
    controller), then its own; then every start at once."""
    state = tmp_path / "roll"
    r = run("roll", "run", "--state", str(state), *hooks(cluster), "--parallel", "3", "--step-timeout", "60",
            "-o", "ndjson")
    assert r.exit_code == 0, r.stderr
    stops = [e for e in journal(state) if e["event"] == "step" and e["step"] == "stop"]
    assert [(e["node"], e["status"]) for e in stops][-2:] == [(1, "started"), (1, "done")]
    assert {(e["node"], e["status"]) for e in stops[:4]} == {(2, "started"), (3, "started"), (2, "done"),
                                                              (3, "done")}
    assert sorted(cluster.ctl.calls[:2]) == [("stop", 2), ("stop", 3)] and cluster.ctl.calls[2] == ("stop", 1)
    assert sorted(cluster.ctl.calls[3:]) == [("start", 1), ("start", 2), ("start", 3)]


def test_a_roll_with_a_restart_hook_and_only_if(run: Run, cluster: Cluster, tmp_path: Path) -> None:
    state = tmp_path / "roll"
    before = {b: cluster.epoch(b) for b in (1, 2, 3)}
    code, doc, err = run.json("roll", "run", "--state", str(state), "--restart", cluster.ctl.hook("restart"),
                              "--only-if", "test {id} != 3", "--step-timeout", "60")
    assert code == 0, err
    assert [(n["node"], n["status"]) for n in doc["data"]["nodes"]] == [(2, "done"), (3, "skipped"), (1, "done")]
    assert cluster.ctl.calls == [("restart", 2), ("restart", 1)]
    assert cluster.epoch(3) == before[3] and cluster.epoch(2) > before[2] and cluster.epoch(1) > before[1]
    assert "skipped (--only-if): 3" in err


def test_a_stop_hook_that_fails_then_the_roll_continues(run: Run, cluster: Cluster, tmp_path: Path) -> None:
    state = tmp_path / "roll"
    before = {b: cluster.epoch(b) for b in (1, 2, 3)}
    cluster.ctl.fail.add(("stop", 2))
    r = run("roll", "run", "--state", str(state), *hooks(cluster), "--step-timeout", "60")
    assert r.exit_code == 9, r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert "node 2" in last and "--stop hook" in last and "exited 1" in last, last
    assert "run the same command again to continue" in last
    failed = [e for e in journal(state) if e["event"] == "roll_failed"]
    assert len(failed) == 1
    assert {k: failed[0][k] for k in ("node", "step", "reason", "exit_code")} == \
        {"node": 2, "step": "stop", "reason": "hook_failed", "exit_code": 9}
    assert {b: cluster.epoch(b) for b in (1, 2, 3)} == before  # no node restarted, none other touched
    assert cluster.ctl.calls == [("stop", 2)]
    code, doc, _ = run.json("roll", "status", "--state", str(state))
    assert doc["data"]["status"] == "failed"
    assert [(n["node"], n["status"], n["step"]) for n in doc["data"]["nodes"]] == \
        [(2, "failed", "stop"), (3, "pending", None), (1, "pending", None)]

    # asked differently: refused, naming what differs (nothing touched)
    for args, says in [(("--parallel", "2"), "--parallel 2 (it has 1)"),
                       (("--nodes", "2,1"), "--nodes 1,2 (the roll in the state directory has every node)")]:
        r = run("roll", "run", "--state", str(state), *hooks(cluster), *args, "-o", "json")
        one_line_error(r, 3, says, "asked differently")
        assert json.loads(r.stdout)["errors"][0]["code"] == "roll_differs"
    assert cluster.ctl.calls == [("stop", 2)]

    # the same command again, the hook fixed: it continues at node 2's stop and finishes
    cluster.ctl.fail.clear()
    code, doc, err = run.json("roll", "run", "--state", str(state), *hooks(cluster), "--step-timeout", "60")
    assert code == 0, err
    assert [(n["node"], n["status"]) for n in doc["data"]["nodes"]] == [(2, "done"), (3, "done"), (1, "done")]
    assert cluster.ctl.calls == [("stop", 2), ("stop", 2), ("start", 2), ("stop", 3), ("start", 3), ("stop", 1),
                                 ("start", 1)]
    assert all(cluster.epoch(b) > before[b] for b in (1, 2, 3))
    kinds = [e["event"] for e in journal(state)]
    assert kinds.count("roll_started") == 1 and kinds.count("roll_resumed") == 1 and kinds[-1] == "roll_done"


def test_a_start_hook_that_fails_is_exit_9_and_the_node_is_started_once_more(run: Run, cluster: Cluster,
                                                                            tmp_path: Path) -> None:
    """The start hook failed (it started nothing): a resumed run waits for the node's receipt first (never a
    second restart of a node that may be coming up), and only when it does not come back within --step-timeout
    runs the start hook once more."""
    state = tmp_path / "roll"
    cluster.ctl.fail.add(("start", 2))
    r = run("roll", "run", "--state", str(state), *hooks(cluster), "--step-timeout", "60")
    assert r.exit_code == 9, r.stderr
    assert "node 2" in r.stderr and "--start hook" in r.stderr
    assert cluster.ctl.calls == [("stop", 2), ("start", 2)]
    cluster.ctl.fail.clear()
    code, doc, err = run.json("roll", "run", "--state", str(state), *hooks(cluster), "--step-timeout", "2")
    assert code == 0, err
    assert cluster.ctl.calls == [("stop", 2), ("start", 2), ("start", 2), ("stop", 3), ("start", 3), ("stop", 1),
                                 ("start", 1)]
    assert "starting it again" in err


def test_a_roll_of_another_cluster_is_refused(run: Run, cluster: Cluster, tmp_path: Path) -> None:
    state = tmp_path / "roll"
    cluster.ctl.fail.add(("stop", 2))
    assert run("roll", "run", "--state", str(state), *hooks(cluster)).exit_code == 9
    text = (state / "journal.ndjson").read_text()
    (state / "journal.ndjson").write_text(text.replace(f'"cluster_id":"{CLUSTER_ID}"', '"cluster_id":"another"', 1))
    r = run("roll", "run", "--state", str(state), *hooks(cluster), "-o", "json")
    one_line_error(r, 3, "holds a roll of cluster another", f"this is cluster {CLUSTER_ID}", "another --state")
    assert json.loads(r.stdout)["errors"][0]["code"] == "other_cluster"
    assert cluster.ctl.calls == [("stop", 2)]


def test_a_run_naming_an_unknown_node_begins_nothing(run: Run, cluster: Cluster, tmp_path: Path) -> None:
    state = tmp_path / "roll"
    one_line_error(run("roll", "run", "--state", str(state), *hooks(cluster), "--nodes", "99"), 2,
                   "--nodes: 99: no such node")
    assert not (state / "journal.ndjson").exists() and cluster.ctl.calls == []


def test_a_roll_refuses_to_begin_on_an_unhealthy_cluster(run: Run, cluster: Cluster, tmp_path: Path) -> None:
    """An under-replicated partition that stays so (a replica on broker 9, which never registers): exit 7 before
    the first node, nothing touched, once the preflight's patience (at most --step-timeout) has passed."""
    cluster.fleet.create_topic("t", {0: [1, 2, 9]})
    state = cluster.kz.get("/brokers/topics/t/partitions/0/state")[0]
    doc = json.loads(state)
    doc["isr"] = [1, 2]
    cluster.kz.set("/brokers/topics/t/partitions/0/state", json.dumps(doc).encode())
    r = run("roll", "run", "--state", str(tmp_path / "roll"), *hooks(cluster), "--step-timeout", "3", "-o", "json")
    assert r.exit_code == 7, r.stderr
    assert "refused to begin: the cluster is not healthy" in r.stderr and "nothing was touched" in r.stderr
    out = json.loads(r.stdout)
    assert out["data"]["status"] == "refused" and out["data"]["failure"]["reason"] == "refused"
    assert cluster.ctl.calls == []
    code, doc2, _ = run.json("roll", "plan")
    assert code == 0 and doc2["data"]["healthy"] is False and doc2["data"]["unhealthy"]


# ------------------------------------------------------------------------------------------------ Ctrl-C
def test_a_ctrl_c_kazoo_swallowed_in_a_gate_poll_stops_the_roll(run: Run, cluster: Cluster, tmp_path: Path,
                                                                 mocker: Any) -> None:
    """Ctrl-C while node 2's receipt gate (wait_restarted) polls, landing where kazoo swallows it (the bare
    `except:` around waking its connection thread) and fails the read with ConnectionClosedError instead. The
    gate's poll asks again after a lost connection, so unless kadmin gives the interrupt back (`_Kazoo` in
    kadmin/cluster/zookeeper/session.py) the roll goes on. It stops: exit 130, the step journaled as interrupted,
    no hook for any other node; the same command again continues and restarts every node exactly once."""
    from kazoo.protocol.serialization import GetChildren

    from kadmin.services.roll_engine import Roller
    from tests.support.ctrl_c import ctrl_c_inside_kazoo

    state = tmp_path / "roll"
    before = {b: cluster.epoch(b) for b in (1, 2, 3)}
    real_poll = Roller.poll
    injected: list[list[Any]] = []

    def poll(self: Roller, *a: Any, **kw: Any) -> Any:
        last = journal(state)[-1]
        if not injected and (last.get("node"), last.get("step"), last.get("status")) == \
                (2, "wait_restarted", "started"):
            # the gate's first read lists /brokers/ids (its registrations): the Ctrl-C comes with that request
            injected.append(ctrl_c_inside_kazoo(mocker, GetChildren))
        return real_poll(self, *a, **kw)

    mocker.patch.object(Roller, "poll", poll)
    args = ("roll", "run", "--state", str(state), *hooks(cluster), "--step-timeout", "60")
    r = run(*args)
    assert injected and len(injected[0]) == 1 and injected[0][0].path.endswith("/brokers/ids"), injected
    assert r.exit_code == 130, (r.exit_code, r.stdout, r.stderr, cluster.ctl.calls)
    assert "interrupted" in r.stderr
    assert "Traceback" not in r.stderr + r.stdout and "internal error" not in r.stderr
    events = journal(state)
    steps = [e for e in events if e["event"] == "step"]
    assert {e["node"] for e in steps} == {2}  # no other node was touched, not even its gates
    assert {k: steps[-1].get(k) for k in ("node", "step", "status", "message")} == \
        {"node": 2, "step": "wait_restarted", "status": "failed",
         "message": "interrupted (Ctrl-C, SIGTERM or SIGHUP)"}
    assert {k: events[-1].get(k) for k in ("event", "node", "step", "reason", "exit_code")} == \
        {"event": "roll_failed", "node": 2, "step": "wait_restarted", "reason": "interrupted", "exit_code": 130}
    assert cluster.ctl.calls == [("stop", 2), ("start", 2)]
    assert cluster.epoch(1) == before[1] and cluster.epoch(3) == before[3]

    # the same command again: it continues at node 2's receipt and finishes, each node restarted exactly once
    code, doc, err = run.json(*args)
    assert code == 0, err
    assert [(n["node"], n["status"]) for n in doc["data"]["nodes"]] == [(2, "done"), (3, "done"), (1, "done")]
    assert cluster.ctl.calls == [("stop", 2), ("start", 2), ("stop", 3), ("start", 3), ("stop", 1), ("start", 1)]
    assert all(cluster.epoch(b) > before[b] for b in (1, 2, 3))
    kinds = [e["event"] for e in journal(state)]
    assert kinds.count("roll_resumed") == 1 and kinds[-1] == "roll_done"
    assert [e["node"] for e in journal(state) if e["event"] == "node_done"] == [2, 3, 1]
