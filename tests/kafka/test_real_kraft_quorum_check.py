"""`kadmin quorum check` on a real Kafka 4.3.1 KRaft quorum (issue 11 §3): three controllers (3001-3003) and
one broker started once by kadmin's own sandbox. Controllers are frozen (SIGSTOP), resumed (SIGCONT), stopped
(SIGTERM) and restarted; what is checked is kadmin's answer (exit code, findings, -o json) and the leader's own
DescribeQuorum timestamps in the same answer. Nothing waits on a sleep: every wait polls `quorum check` until
the fact it asserts shows (e.g. the frozen voter's last fetch is older than the leader's check-quorum window,
measured on the leader's clock).

A controller is stopped with `kadmin sandbox kill NODE` (SIGTERM, waits for the exit). In the rolling bounce it
is started again from the command line and node recorded in the sandbox state (realkafka.launch, its new pid
written back so `sandbox down` stops it) rather than by `sandbox start`, which would return only once it caught
up: the test watches `quorum check` while it is still behind. `sandbox bounce NODE` has a test of its own.
Teardown resumes every frozen process and kills whatever is left.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kadmin.sandbox import realkafka
from kadmin.sandbox.manager import identity_after_exec, process_identity
from tests.support.hung import signalled
from tests.support.kafka import KAFKA_4, kafka_home
from tests.support.sandbox import Sandbox

pytestmark = [pytest.mark.kafka, pytest.mark.integration, pytest.mark.slow]

CONTROLLERS = (3001, 3002, 3003)
WINDOW_MS = 3000  # 1.5 x controller.quorum.fetch.timeout.ms (2000, the sandbox leaves Kafka's default)
DEADLINE = 300.0  # a deadline on facts, sized for two cores shared with other JVMs


class Quorum(Sandbox):
    """The sandbox, and `kadmin quorum check` against its controllers."""

    def __init__(self, directory: Path) -> None:
        super().__init__(directory)
        self.controllers = ""
        self.frozen: set[int] = set()  # pids we SIGSTOPped and have not resumed
        self.started: set[int] = set()  # every pid of the sandbox, and those we launched

    def state(self) -> dict[str, Any]:
        return dict(json.loads((self.dir / "state.json").read_text()))

    def node(self, node_id: int) -> dict[str, Any]:
        return next(n for n in self.state()["nodes"] if n["role"] == "controller" and n["id"] == node_id)

    def pid(self, node_id: int) -> int:
        """The controller's pid, as `kadmin sandbox status -o json` lists it."""
        r = self.run("sandbox", "status", "-o", "json")
        procs = json.loads(r.stdout)["data"]["processes"]
        return int(next(p["pid"] for p in procs if p["role"] == "controller" and p["id"] == node_id))

    def check(self, *args: str) -> tuple[int, dict[str, Any]]:
        """`kadmin quorum check` (exit code, -o json data); a failure to answer is (code, {})."""
        # --connect-timeout 5: a frozen controller still accepts TCP connections; do not wait 10 s on it per poll
        r = self.run("quorum", "check", "--bootstrap-controller", self.controllers, "--connect-timeout", "5", *args,
                     "-o", "json")
        assert "Traceback" not in r.stderr, r.stderr
        if r.returncode in (0, 1, 2) and r.stdout.strip():
            return r.returncode, dict(json.loads(r.stdout)["data"])
        return r.returncode, {}

    def wait_check(self, what: str, ok: Callable[[int, dict[str, Any]], bool], *args: str,
                   seen: list[tuple[int, dict[str, Any]]] | None = None) -> tuple[int, dict[str, Any]]:
        """Poll `quorum check ARGS` until `ok(code, data)`; every answer on the way goes to `seen`."""
        deadline = time.monotonic() + DEADLINE
        last: tuple[int, dict[str, Any]] = (-1, {})
        while time.monotonic() < deadline:
            last = self.check(*args)
            if seen is not None:
                seen.append(last)
            if last[1] and ok(*last):
                return last
            time.sleep(0.2)  # between polls only: the condition is the answer, not the time
        raise AssertionError(f"timed out after {DEADLINE:g}s waiting for {what}; last answer: {last}")

    def freeze(self, pid: int) -> None:
        self.frozen.add(pid)
        signalled(pid, signal.SIGSTOP)

    def thaw(self, pid: int) -> None:
        os.kill(pid, signal.SIGCONT)
        self.frozen.discard(pid)

    def stop(self, node_id: int) -> None:
        """`kadmin sandbox kill NODE`: SIGTERM the controller (Kafka's graceful shutdown), wait for its exit."""
        pid = self.pid(node_id)
        r = self.run("sandbox", "kill", str(node_id), "-o", "json")
        assert r.returncode == 0, r.stderr
        data = json.loads(r.stdout)["data"]
        assert (data["role"], data["id"], data["pid"], data["hard"]) == ("controller", node_id, pid, False)
        assert process_identity(pid) is None, f"controller {node_id} (pid {pid}) still runs after sandbox kill"

    def restart(self, node_id: int) -> int:
        """Start the stopped controller again from its recorded node (same config, dir and port)."""
        st = self.state()
        node = next(n for n in st["nodes"] if n["role"] == "controller" and n["id"] == node_id)
        assert process_identity(int(node["pid"])) is None, f"controller {node_id} is still running"
        pid, argv = realkafka.launch(st["kafka_home"], st["kafka_version"], self.dir, node)
        self.started.add(pid)
        assert argv == node["identity"]["cmdline"]  # the very command line the sandbox ran
        node["pid"], node["identity"] = pid, identity_after_exec(pid, argv)
        (self.dir / "state.json").write_text(json.dumps(st, indent=2))  # so that `sandbox down` stops it
        return pid


@pytest.fixture(scope="module")
def quorum(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Quorum]:
    qu = Quorum(tmp_path_factory.mktemp("kraft-check") / "sb")
    try:
        up = qu.run("sandbox", "up", "--kafka-home", str(kafka_home(KAFKA_4)), "--mode", "kraft", "--brokers", "1",
                    "-o", "json")
        if (qu.dir / "state.json").exists():
            qu.started |= {int(n["pid"]) for n in qu.state()["nodes"] if n.get("pid")}
        assert up.returncode == 0, up.stderr
        qu.controllers = json.loads(up.stdout)["data"]["bootstrap_controllers"]
        yield qu
    finally:
        for pid in list(qu.frozen):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
        if (qu.dir / "state.json").exists():
            qu.started |= {int(n["pid"]) for n in qu.state()["nodes"] if n.get("pid")}
            qu.run("sandbox", "down")
        for pid in qu.started:
            if process_identity(pid) is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        for child in realkafka._children:  # reap what this process launched
            with contextlib.suppress(Exception):
                child.wait(timeout=30)


# ------------------------------------------------------------------------------------------------ helpers
def voter(data: dict[str, Any], node_id: int) -> dict[str, Any]:
    return next(v for v in data["quorum"]["voters"] if v["id"] == node_id)


def codes(data: dict[str, Any]) -> list[str]:
    return [f["code"] for f in data["findings"]]


def messages(data: dict[str, Any], code: str) -> list[str]:
    return [f["message"] for f in data["findings"] if f["code"] == code]


def leader_age(data: dict[str, Any], node_id: int, field: str) -> int | None:
    """How long ago (ms, on the leader's clock: its own row's timestamp) the voter's `field` was."""
    ts = voter(data, node_id)[field]
    return None if ts is None else data["clock"]["now_ms"] - ts


def healthy(code: int, data: dict[str, Any]) -> bool:
    return code == 0 and data["status"] == "ok"


def all_ok(quorum: Quorum) -> dict[str, Any]:
    """Wait until the whole quorum checks OK (after a start, or another test); the answer."""
    return quorum.wait_check("quorum check OK", healthy)[1]


# ------------------------------------------------------------------------------------------------ tests
def test_healthy_quorum_is_ok_on_the_leaders_clock(quorum: Quorum) -> None:
    data = all_ok(quorum)
    clock = data["clock"]
    leader = voter(data, data["quorum"]["leader_id"])
    # the leader stamps its own row with its current time: that is the clock kadmin measured on
    assert clock["source"] == "leader" and clock["now_ms"] == leader["last_fetch_timestamp"]
    assert clock["check_quorum_ms"] == WINDOW_MS
    assert sorted(v["id"] for v in data["quorum"]["voters"]) == list(CONTROLLERS)
    for c in CONTROLLERS:  # every voter fetched within the window: no zombie, nothing lagging
        assert 0 <= leader_age(data, c, "last_fetch_timestamp") < WINDOW_MS
    assert quorum.check("--restart", "3001")[0] == 0  # all caught up: any one may restart


def test_a_frozen_follower_is_reported_until_it_catches_up(quorum: Quorum) -> None:
    data = all_ok(quorum)
    leader = data["quorum"]["leader_id"]
    follower, other = [c for c in CONTROLLERS if c != leader]
    pid = quorum.pid(follower)
    quorum.freeze(pid)

    # frozen until the leader's clock says its last fetch and catch-up are past the window and --max-lag-ms
    def stale(code: int, d: dict[str, Any]) -> bool:
        age = leader_age(d, follower, "last_caught_up_timestamp")
        return d["quorum"]["leader_id"] == leader and age is not None and age > 5000
    code, data = quorum.wait_check(f"follower {follower}'s last catch-up > 5000 ms ago", stale)
    assert leader_age(data, follower, "last_fetch_timestamp") > WINDOW_MS
    assert code == 1 and data["status"] == "warning" and codes(data) == ["voter_lagging"]
    [msg] = messages(data, "voter_lagging")
    assert msg.startswith(f"voter {follower} last caught up ") and "by the leader's clock (limit 5000 ms)" in msg
    assert "; last fetched " in msg
    # the leader is still fetched from by a majority (itself and `other`): not a zombie
    assert leader_age(data, other, "last_fetch_timestamp") < WINDOW_MS
    # restarting the other follower now would leave only the leader caught up; restarting the frozen one is fine
    code, d = quorum.check("--restart", str(other))
    assert code == 2 and "restart_unsafe" in codes(d)
    assert messages(d, "restart_unsafe") == [f"restarting node {other} would leave 1 caught-up voters ({leader}), "
                                             "fewer than the majority of 2"]
    code, d = quorum.check("--restart", str(follower))
    assert code == 1 and codes(d) == ["voter_lagging"]

    quorum.thaw(pid)
    seen: list[tuple[int, dict[str, Any]]] = []
    quorum.wait_check(f"follower {follower} caught up", healthy, seen=seen)
    # every answer on the way agrees with the leader's own timestamps in the same answer
    for code, d in seen:
        if d and d["quorum"]["leader_id"] == leader:
            age = leader_age(d, follower, "last_caught_up_timestamp")
            behind = voter(d, follower)["lag"] > 1000 or (age is not None and age > 5000)
            assert ("voter_lagging" in codes(d)) == behind, d
            assert (code == 0) == (not behind), d


def test_a_frozen_leader_is_replaced_and_reported_until_it_catches_up(quorum: Quorum) -> None:
    data = all_ok(quorum)
    old, epoch = data["quorum"]["leader_id"], data["quorum"]["leader_epoch"]
    pid = quorum.pid(old)
    quorum.freeze(pid)
    try:
        def reelected(code: int, d: dict[str, Any]) -> bool:
            q = d["quorum"]
            if q["leader_id"] in (old, -1) or q["leader_epoch"] <= epoch:
                return False
            # the third voter fetches from the new leader within a fetch interval; until it has, it is (truly)
            # lagging too, which a loaded machine shows for a while
            return all(v["log_end_offset"] >= 0 for v in q["voters"] if v["id"] != old)
        code, data = quorum.wait_check(f"a new leader after freezing leader {old}", reelected)
        new, new_epoch = data["quorum"]["leader_id"], data["quorum"]["leader_epoch"]
        # the new leader never had a fetch from the frozen one in its epoch: it is behind, and said so
        assert voter(data, old)["log_end_offset"] == -1 and voter(data, old)["last_fetch_timestamp"] is None
        assert code == 1 and codes(data) == ["voter_lagging"]
        said = f"voter {old} has not fetched from leader {new} in epoch {new_epoch}"
        assert messages(data, "voter_lagging") == [said]
        third = next(c for c in CONTROLLERS if c not in (old, new))
        code, d = quorum.check("--restart", str(third))  # the old leader does not count as caught up
        assert code == 2 and "restart_unsafe" in codes(d)
    finally:
        quorum.thaw(pid)  # also when an assertion failed: the module's other tests share this quorum
    code, data = quorum.wait_check(f"old leader {old} caught up", healthy)
    assert data["quorum"]["leader_epoch"] >= new_epoch and voter(data, old)["log_end_offset"] >= 0
    assert quorum.check("--restart", str(old))[0] == 0


def test_restart_answers_before_each_step_of_a_rolling_bounce(quorum: Quorum) -> None:
    """Stop each controller in turn (SIGTERM) and start it again: before each step `--restart NEXT` is safe
    (the other two caught up); while the restarted one is behind it is not; once it caught up it is again."""
    all_ok(quorum)
    order = list(CONTROLLERS)
    for i, node in enumerate(order):
        nxt = order[(i + 1) % len(order)]
        code, data = quorum.check("--restart", str(node))
        assert code == 0, data  # safe: the other two are caught up
        was_leader = data["quorum"]["leader_id"] == node
        quorum.stop(node)

        # behind: the leader's clock says its last catch-up is older than --max-lag-ms, or (it was the
        # leader) the new leader has no fetch from it in its epoch
        def unsafe(code: int, d: dict[str, Any], node: int = node) -> bool:
            return code == 2 and "restart_unsafe" in codes(d) and d["quorum"]["leader_id"] not in (node, -1)
        code, data = quorum.wait_check(f"--restart {nxt} unsafe while {node} is down", unsafe, "--restart", str(nxt))
        [msg] = messages(data, "restart_unsafe")
        assert msg.startswith(f"restarting node {nxt} would leave 1 caught-up voters")
        [lagging] = messages(data, "voter_lagging")
        if was_leader:
            assert lagging.startswith(f"voter {node} has not fetched from leader ")
        else:
            assert lagging.startswith(f"voter {node} last caught up ")
            assert leader_age(data, node, "last_caught_up_timestamp") > 5000

        quorum.restart(node)
        seen: list[tuple[int, dict[str, Any]]] = []
        quorum.wait_check(f"--restart {nxt} safe once {node} caught up", lambda c, d: c == 0, "--restart", str(nxt),
                          seen=seen)
        for code, d in seen:  # never called safe while the restarted controller was still behind
            if code == 0:
                assert "voter_lagging" not in codes(d)
    assert healthy(*quorum.check())


def test_sandbox_bounce_restarts_a_controller_and_returns_once_it_caught_up(quorum: Quorum) -> None:
    data = all_ok(quorum)
    node = next(c for c in CONTROLLERS if c != data["quorum"]["leader_id"])
    old_pid = quorum.pid(node)
    started_ms = int(time.time() * 1000)
    r = quorum.run("sandbox", "bounce", str(node), "-o", "json")
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)["data"]
    assert (got["role"], got["id"], got["old_pid"]) == ("controller", node, old_pid)
    assert got["pid"] != old_pid and process_identity(old_pid) is None and quorum.pid(node) == got["pid"]
    # it returned once the leader had it caught up after the restart: the leader's own timestamp says so
    _, data = quorum.check()
    caught_up = voter(data, node)["last_caught_up_timestamp"]
    assert caught_up is not None and caught_up >= started_ms
    quorum.wait_check(f"the quorum healthy after bouncing {node}", healthy)
    r = quorum.run("sandbox", "kill", "42")
    assert r.returncode != 0 and "controllers: 3001, 3002, 3003" in r.stderr
