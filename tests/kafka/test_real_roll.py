"""`kadmin roll run` on real Apache Kafka (issue 23 §4): a whole cluster restarted without one failed acks=all
write, resumable after a SIGKILL at any point without restarting a node twice, stopped by its gates and hooks.

Four clusters, each started once for its class of tests (class-scoped fixtures: one cluster runs at a time):

- ZooKeeper mode, Kafka 3.9.1, 3 brokers (kadmin's sandbox):
  - a whole roll under Kafka's VerifiableProducer (acks=all, idempotent, delivery.timeout.ms 30 s) on an RF-3,
    min.insync.replicas=2 topic of 6 partitions, `kadmin partitions check` polled all along: exit 0, no send
    error, every acknowledged record read back, the check never CRITICAL, every broker stopped and started once
    (the test's own hooks count what they did), each node through every step `roll plan` lists, the active
    controller last, larger epochs, the journal and the NDJSON stream the same documented events (`roll_done`
    last), `roll status` done, every partition led by its preferred (first) replica at the end;
  - one roll SIGKILLed five times and run again each time with the same --state, under the producer: before a
    stop (just after `drain done`), during the in-sync wait (`wait_in_sync started`), between stop and start
    (`wait_stopped done`), while a start hook runs (kadmin killed, its hook left running: the next run waits for
    the receipt and never runs it again), and just after `start started` was journaled, before the hook was
    spawned (the last run waits --step-timeout 30 for the receipt, then runs --start once). Each kill but the
    hook-running one lands exactly after that journal line (tests/support/roll_freeze.py: kadmin's own CLI,
    frozen right after the event is fsynced), so each phase is the one named, every time. The last run exits 0;
    every node was stopped and started exactly once (the hooks' count); no write lost; leaders restored;
  - one roll whose stop hook exits 3 (exit 9 at stop, nothing else touched, no process touched), run again with
    a start hook that starts nothing (exit 1 at wait_restarted, --step-timeout 20, naming the node; no other
    node touched), the node started by hand, and run again: it finishes without a hook for that node; a broker
    outside --nodes stopped just after the first node is done (the roll frozen after that node_done): the next
    node's gate stops the roll (exit 1, can_stop), that node's process untouched.
- KRaft, Kafka 4.3.1, 3 controllers + 3 brokers (kadmin's sandbox): the whole roll's guarantees, the
  controllers before the brokers, the quorum leader last of them, checked against the leader DescribeQuorum
  reported (polled every 0.25 s) before each controller was chosen, and `kadmin quorum describe --status`.
- ZooKeeper mode, 6 brokers in 3 racks (the sandbox, with broker.rack: tests/support/roll_clusters.py), two
  rack-aware RF-3 min-ISR-2 topics: `--parallel 2` under the producer: the batches that ran (from the journal)
  are `roll plan --parallel 2`'s, some of two brokers, and no two brokers down at once (overlapping stop ->
  wait_restarted windows) share a partition; the producer's guarantees.
- KRaft 4.3.1, 3 combined nodes (process.roles=broker,controller; tests/support/roll_clusters.py): the whole
  roll's guarantees, the quorum leader last, each node through wait_restarted and wait_caught_up.
- KRaft 4.3.1, 3 combined nodes with a dynamic quorum (KIP-853): a node whose start hook replaces its disk (its
  log directory formatted again: a new directory id) comes back as an observer, not the voter it was: the roll
  stops there (exit 1, `identity_changed`, naming the old directory id and add-controller), no other process
  touched, and stops again when run again; once Kafka's own tool replaces the voter, the same command finishes.

Nothing waits on time: on the journal, the NDJSON stream, the hooks' counter file, the producer's
acknowledgements, what the cluster says.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kadmin.domain import roll as dom
from kadmin.domain import roll_events
from kadmin.sandbox.manager import still_ours
from tests.support import roll_clusters
from tests.support.kafka import (
    KAFKA_3_9,
    KAFKA_4,
    TOPIC_COMMAND,
    every_topic_but_the_lease,
    kafka_home,
    tool,
    topic_lines,
    wait_for,
)
from tests.support.producer import Poller, Producer, assert_no_write_lost, read_back
from tests.support.roll import (
    Counter,
    Event,
    RollRun,
    at,
    batches_run,
    down_together,
    first,
    hook_args,
    journal,
    on,
    restart_order,
    steps_of,
    taken_together,
    write_hook,
)
from tests.support.sandbox import Sandbox, sandbox
from tests.support.terminal import Terminal

pytestmark = [pytest.mark.kafka, pytest.mark.integration, pytest.mark.slow]

WAIT = 300.0  # deadline on any observable fact: two busy cores shared with other real-Kafka suites
ROLL_WAIT = 900.0  # a whole roll, on such a machine
PARTITIONS = 6
OK, WARNING, CRITICAL, UNKNOWN = 0, 1, 2, 3  # `kadmin partitions check`
RACK_BROKERS, RACKS = 6, 3
EVENTS = {"roll_started", "roll_resumed", "step", "seen_stopped", "node_done", "roll_done", "roll_failed"}
STEP_KEYS = {"event", "at", "node", "role", "step", "status", "elapsed_s", "detail", "message"}
STATUSES = {"started", "done", "failed", "skipped"}
REASONS = {"gate_not_met", "cannot_tell", "hook_failed", "refused", "interrupted", "unreachable", "error",
           "identity_changed"}


# ------------------------------------------------------------------------------------------------ a cluster
@dataclass
class Cluster:
    """A cluster the tests roll: kadmin pointed at it (`env`), the test's hook, and how to see its processes."""

    kind: str  # zk | kraft | combined
    home: Path  # the Kafka whose tools write and read (3.9.1 or 4.3.1)
    work: Path
    env: dict[str, str]
    bootstrap: str
    controllers: str | None  # the controllers' bootstrap (KRaft)
    size: int  # nodes a roll restarts
    hook: Path
    node_pids: Callable[[], dict[int, int]]
    all_alive: Callable[[], bool]
    sb: Sandbox | None = None
    runs: int = 0

    def kadmin(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "kadmin", *args], capture_output=True, text=True, env=self.env,
                              timeout=timeout, stdin=subprocess.DEVNULL)

    def json(self, *args: str) -> tuple[int, Any, str]:
        r = self.kadmin(*args, "-o", "json")
        return r.returncode, json.loads(r.stdout)["data"] if r.stdout.strip() else None, r.stderr

    def roll(self, state: Path, counter: Path, *extra: str, skip_start: int | None = None, fail_stop: bool = False,
             freeze: Mapping[str, Any] | None = None, stop_op: str = "stop", start_op: str = "start",
             record: Path | None = None) -> RollRun:
        """`roll run` with the test's hooks, in the cluster's work directory (where a hook's stray file would land)."""
        self.runs += 1
        args = ["--state", str(state), *hook_args(self.hook, counter, skip_start, fail_stop, stop_op, start_op,
                                                  record), *extra]
        return RollRun(args, self.env, self.work / f"run-{self.runs}.stderr", freeze=freeze, cwd=self.work)

    def assignments(self) -> dict[tuple[str, int], tuple[int, list[int], set[int]]]:
        """Kafka's own TopicCommand --describe, every topic but kadmin's lease, by name (every_topic_but_the_lease):
        (leader, replicas in order, ISR) per partition; empty while the broker asked does not know a topic just
        created (topic_lines)."""
        lines = topic_lines(self.home, self.bootstrap, every_topic_but_the_lease(self.home, self.bootstrap))
        return {k: (int(f["Leader"]), [int(x) for x in f["Replicas"].split(",")],
                    {int(x) for x in f["Isr"].split(",") if x}) for k, f in lines.items()}

    def plan(self, *extra: str) -> dict[str, Any]:
        code, data, err = self.json("roll", "plan", *extra)
        assert code == 0 and data is not None, err
        return dict(data)

    def partitions(self) -> list[dict[str, Any]]:
        code, data, err = self.json("partitions", "list")
        assert code == 0, err
        return list(data)

    def check(self) -> Checked:
        """`kadmin partitions check` as an operator runs it: its exit code, carrying what it said."""
        r = self.kadmin("partitions", "check", "-o", "json", timeout=120)
        return Checked(r.returncode, f"{r.stderr.strip()[-1500:]} {r.stdout.strip()[-3000:]}")

    def quorum_leader(self) -> int:
        """The leader `kadmin quorum describe --status -o json` reports."""
        code, data, err = self.json("quorum", "describe", "--status")
        assert code == 0, err
        return int(data["leader_id"])

    def leader_now(self) -> tuple[float, int]:
        """(time.time(), the quorum leader) from DescribeQuorum through the controllers, in-process (cheap
        enough to poll every 0.25 s)."""
        from kadmin.sandbox.realkafka import quorum_view

        assert self.controllers is not None
        return time.time(), int(quorum_view(self.controllers, timeout=5.0).leader_id)

    def create_topic(self, name: str, partitions: int = PARTITIONS) -> str:
        tool(self.home, TOPIC_COMMAND, "--bootstrap-server", self.bootstrap, "--create", "--topic", name,
             "--partitions", str(partitions), "--replication-factor", "3", "--config", "min.insync.replicas=2")
        return name

    def healthy(self) -> None:
        """Every process running, and `roll plan` lists every node and says the cluster is healthy (kadmin's own
        preflight: partitions check OK, no reassignment, quorum OK)."""
        last: list[Any] = []

        def ready() -> bool:
            if not self.all_alive():
                last[:] = ["a process is not running"]
                return False
            code, data, err = self.json("roll", "plan")
            last[:] = [code, data and data.get("unhealthy"), data and len(data["nodes"]), err[-300:]]
            return code == 0 and bool(data) and data["healthy"] and len(data["nodes"]) == self.size

        try:
            wait_for(ready, WAIT, f"the {self.kind} cluster healthy", interval=1.0)
        except AssertionError as e:
            raise AssertionError(f"{e}; last: {last}") from None

    def registered(self, node: int) -> bool:
        assert self.sb is not None
        rows = self.sb.status()["processes"]
        return any(r["id"] == node and r["role"] == "broker" and r["registered"] for r in rows)


def sandbox_cluster(sb: Sandbox, kind: str, home: Path, work: Path) -> Cluster:
    st = sb.status()
    env = {**sb.env, "XDG_CONFIG_HOME": str(work / "config"), "XDG_STATE_HOME": str(work / "state")}
    if kind == "zk":
        env["KADMIN_ZOOKEEPER"] = str(st["zookeeper"])
    else:
        env["KADMIN_BOOTSTRAP_SERVER"] = str(st["bootstrap_servers"])
    kadmin = [sys.executable, "-m", "kadmin", "sandbox"]
    hook = write_hook(work / "hook.sh", [*kadmin, "kill", "--dir", str(sb.dir), "-o", "plain"],
                      [*kadmin, "start", "--dir", str(sb.dir), "-o", "plain"])

    def pids() -> dict[int, int]:
        return {int(p["id"]): int(p["pid"]) for p in sb.status()["processes"] if p["role"] in ("broker", "controller")}

    nodes = sum(1 for p in st["processes"] if p["role"] in ("broker", "controller"))
    return Cluster(kind, home, work, env, str(st["bootstrap_servers"]), st.get("bootstrap_controllers"), nodes, hook,
                   pids, lambda: sb.run("sandbox", "status", "-o", "json").returncode == 0, sb)


def kill_nodes(sb: Sandbox) -> None:
    """SIGKILL the sandbox's Kafka processes (those it started, by pid and identity) before its `sandbox down`:
    a whole cluster's controlled shutdowns only slow the teardown. Then any JVM still running one of this
    sandbox's server.properties (one the state file does not name, e.g. a hook's that a failed test left
    behind): ours, in this test's own directory."""
    if (sb.dir / "state.json").exists():
        st = json.loads((sb.dir / "state.json").read_text())
        sb.kill_leftovers([int(n["pid"]) for n in st.get("nodes", [])
                           if n.get("pid") and still_ours(n, [str(Path(n["dir"]) / "server.properties")])[0]])
    roll_clusters.kill_jvms_of(sb.dir)


@contextlib.contextmanager
def sandboxed(directory: Path, kind: str, home: Path, work: Path, *up_args: str) -> Iterator[Cluster]:
    with sandbox(directory, "--kafka-home", str(home), *up_args) as sb:
        try:
            yield sandbox_cluster(sb, kind, home, work)
        finally:
            kill_nodes(sb)


# ------------------------------------------------------------------------------------------------ verdicts
def assert_documented(events: Sequence[Event], plan: Mapping[str, Any], kind: str) -> None:
    """One uninterrupted run's journal: the documented events and fields, `roll_started` first and `roll_done`
    last, each node through every step `roll plan` lists for it (started, then done, in order), then node_done."""
    kinds = [e["event"] for e in events]
    assert kinds[0] == "roll_started" and kinds[-1] == "roll_done" and kinds.count("roll_done") == 1, kinds
    assert set(kinds) <= EVENTS - {"roll_failed", "roll_resumed"}, kinds
    head = events[0]
    assert head["journal_version"] == roll_events.JOURNAL_VERSION and head["cluster_id"] == plan["cluster_id"]
    assert head["mode"] == plan["mode"] == ("zookeeper" if kind == "zk" else "kraft")
    planned = {int(n["node"]): n for n in plan["nodes"]}
    assert sorted(head["order"]) == sorted(planned) and [n["id"] for n in head["nodes"]] == head["order"]
    for ev in events:
        at(ev)  # ISO 8601 UTC
        if ev["event"] == "step":
            assert set(ev) <= STEP_KEYS and STEP_KEYS - {"detail", "message"} <= set(ev), ev
            assert ev["step"] in dom.STEP_ORDER and ev["status"] in STATUSES, ev
            assert isinstance(ev["node"], int) and isinstance(ev["elapsed_s"], int | float) and ev["elapsed_s"] >= 0
            assert isinstance(ev.get("detail", {}), dict), ev
    for n, row in planned.items():
        seen = [e for e in events if e["event"] == "seen_stopped" and e["node"] == n]
        assert len(seen) == 1 and seen[0]["how"] in ("unregistered", "fenced", "new_epoch", "not_fetching"), seen
        assert steps_of(events, n, "started") == list(row["steps"]), (n, steps_of(events, n))
        assert steps_of(events, n, "done") == list(row["steps"]), (n, steps_of(events, n))
        done = [i for i, e in enumerate(events) if e["event"] == "node_done" and e["node"] == n]
        last_step = max(i for i, e in enumerate(events) if e["event"] == "step" and e["node"] == n)
        assert len(done) == 1 and done[0] > last_step and events[done[0]]["status"] == "done", (n, done)
        assert {e["role"] for e in events if e.get("node") == n} == {row["role"]}
        if kind == "zk":
            detail = events[done[0]]["detail"]
            assert detail["new_epoch"] > detail["old_epoch"], detail  # a new registration: it was restarted
    assert isinstance(events[-1]["elapsed_s"], int | float)


def assert_status_done(c: Cluster, state: Path, nodes: Sequence[int]) -> None:
    code, data, err = c.json("roll", "status", "--state", str(state))
    assert code == 0, err
    assert data["status"] == "done" and data["failure"] is None, data
    assert sorted(r["node"] for r in data["nodes"]) == sorted(nodes)
    assert {r["status"] for r in data["nodes"]} == {"done"}, data["nodes"]
    assert data["estimate_left_s"] is None  # nothing left


def assert_estimate(c: Cluster, state: Path, plan: Mapping[str, Any], events: Sequence[Event],
                    extra: Sequence[str]) -> None:
    """`roll plan --from` the finished roll: every node estimated from its role's measured mean, a batch counted
    once, so the total is within the roll's own time (which also holds what no step measures); in ZooKeeper mode
    the controller's failover named (the roll moved it), else null."""
    again = c.plan(*extra, "--from", str(state))
    e = again["estimate"]
    assert e["unestimated"] == [] and set(e["per_node"]) == {str(n["node"]) for n in plan["nodes"]}, e
    elapsed = float(events[-1]["elapsed_s"])
    assert 0.3 * elapsed < e["total_s"] <= 1.2 * elapsed + 5, (e, elapsed)
    f = again["controller_failover"]
    if c.kind == "zk":
        assert f["partitions"] > 0 and f["live_brokers"] == c.size and f["warning"] is None, f
        assert f["update_metadata_bytes"] == c.size * f["request_bytes"] > 30 * f["partitions"], f  # >= 32 B each
    else:
        assert f is None, f


def assert_preferred_leaders(c: Cluster) -> None:
    """Every partition (internal topics too) led by its first replica, as `kadmin partitions list -o json` says."""
    parts = c.partitions()
    astray = [(p["topic"], p["partition"], p["leader"], p["replicas"]) for p in parts
              if p["leader"] != p["replicas"][0]]
    assert parts and not astray, f"partitions not led by their preferred replica after the roll: {astray}"


class Checked(int):
    """An exit code of `partitions check` and what the check said (its stderr and JSON), for the failure message."""

    said: str

    def __new__(cls, code: int, said: str) -> Checked:
        c = super().__new__(cls, code)
        c.said = said
        return c


def assert_checks(checks: Poller[Checked], since: float, kind: str) -> list[int]:
    """Every `partitions check` since `since` answered OK or WARNING (under-replicated while a broker is down):
    never CRITICAL (offline, under min ISR), never an error. On KRaft also UNKNOWN (3): the check holds the
    partitions against every broker's log dirs, and a stopped broker's cannot be listed, which makes a check
    that is not CRITICAL UNKNOWN (kadmin/services/partitions.py `check`; CRITICAL still wins over it)."""
    allowed = (OK, WARNING) if kind == "zk" else (OK, WARNING, UNKNOWN)
    codes = [r for t, r in checks.results() if t >= since]
    assert codes, "no partitions check ran during the roll"
    said = "\n---\n".join(str(getattr(r, "said", r)) for r in codes if r not in allowed)
    assert all(r in allowed for r in codes), f"partitions check during the roll: {codes}; what it said:\n{said}"
    return codes


def assert_order_and_leader(events: Sequence[Event], controllers: set[int], leader_before: int,
                            readings: Sequence[tuple[float, int]]) -> dict[str, Any]:
    """The controllers (or combined nodes) first, one at a time, in the order their quorum_check started; each
    controller restarted while others remained was not the quorum leader when the roll chose it (the latest
    reading before its quorum_check); and when leadership never moved before the last one was chosen, that last
    one is the leader `quorum describe --status` reported before the roll. Also: the order in `roll_started`
    (kadmin's reading at the start) ends with that leader unless it moved before the roll started."""
    order = restart_order(events)
    k = len(controllers)
    assert set(order[:k]) == controllers, f"controllers not all before the brokers: {order}"
    checked = [e["node"] for e in events if e.get("step") == "quorum_check" and e.get("status") == "started"]
    assert checked == order[:k], (checked, order)
    started = at(events[0])
    head = [n for n in events[0]["order"] if n in controllers]
    if all(leader == leader_before for t, leader in readings if t <= started):
        assert head[-1] == leader_before, (head, leader_before)
    chosen = {}
    for n in order[:k]:
        ev = first(events, n, "quorum_check", "started")
        assert ev is not None, n
        chosen[n] = at(ev)
    for n in order[:k - 1]:
        before = [leader for t, leader in readings if t <= chosen[n]]
        assert before, f"no quorum reading before controller {n} was chosen"
        assert before[-1] != n, f"controller {n} was restarted while it led the quorum, before {order[:k]}'s last"
    last = order[k - 1]
    moved = any(leader != leader_before for t, leader in readings if t <= chosen[last])
    if not moved:
        assert last == leader_before, f"the leader {leader_before} was not restarted last of {order[:k]}"
    return {"order": order, "leader_before": leader_before, "moved": moved,
            "leaders_seen": sorted({leader for _, leader in readings})}


# ------------------------------------------------------------------------------------------------ a whole roll
@dataclass
class Rolled:
    plan: dict[str, Any]
    events: list[Event]
    partitions_before: list[dict[str, Any]]
    leader_before: int | None
    leaders: list[tuple[float, int]]
    checks: list[int]
    acked: int
    seconds: float
    watched: list[Any]


def whole_roll(c: Cluster, name: str, *extra: str, topic: str | None = None, quorum: bool = False,
               record: Path | None = None, watch: Callable[[], Any] | None = None) -> Rolled:
    """A whole `roll run EXTRA` (every node) under a VerifiableProducer writing `topic` (a new RF-3 min-ISR-2
    topic by default) and a `partitions check` poller, with the guarantees every whole roll must give. `watch`:
    polled every 0.5 s during the roll too (its readings in Rolled.watched)."""
    topic = topic or c.create_topic(f"roll-{name}")
    c.healthy()
    state, counter = c.work / f"{name}.state", c.work / f"{name}.counter"
    plan = c.plan(*extra)  # just before: what the run must do
    assert plan["healthy"], plan["unhealthy"]
    before = c.partitions()
    leader_before = c.quorum_leader() if quorum else None
    leaders: Any = Poller(c.leader_now, interval=0.25) if quorum else contextlib.nullcontext()
    watched: Any = Poller(watch, interval=0.5) if watch is not None else contextlib.nullcontext()
    with Poller(c.check, interval=2.0) as checks, leaders, watched, Producer(c.home, c.bootstrap, topic) as producer:
        producer.wait_acked_more_than(100, WAIT)  # writes flowing before the roll
        began = time.monotonic()
        run = c.roll(state, counter, *extra, record=record)
        code = run.wait(ROLL_WAIT)
        seconds = time.monotonic() - began
        back = producer.acked_count()
        producer.wait_acked_more_than(back + 100, WAIT)  # and acknowledged after it
        producer.stop()
    assert code == 0, f"`roll run` exited {code}\n{run.stderr()}"
    events = journal(state)
    assert run.events == events, "the NDJSON stream is not the journal"
    assert run.noise == [], run.noise  # nothing but events on stdout
    assert_documented(events, plan, c.kind)
    Counter(counter).assert_each_restarted_once(int(n["node"]) for n in plan["nodes"])
    codes = assert_checks(checks, began, c.kind)
    assert_status_done(c, state, [int(n["node"]) for n in plan["nodes"]])
    assert_estimate(c, state, plan, events, extra)
    assert_preferred_leaders(c)
    assert producer.errors() == [], producer.describe()
    assert_no_write_lost(producer, read_back(c.bootstrap, topic, c.home))
    readings = [r for _, r in leaders.results() if isinstance(r, tuple)] if quorum else []
    print(f"{name}: rolled {len(plan['nodes'])} nodes in {seconds:.1f} s (journal {events[-1]['elapsed_s']} s), "
          f"batches {plan['batches']}, {producer.acked_count()} writes acked, checks {sorted(set(codes))}")
    seen = [r for t, r in watched.results() if t >= began] if watch is not None else []
    return Rolled(plan, events, before, leader_before, readings, codes, producer.acked_count(), seconds, seen)


def order_of(plan: Mapping[str, Any]) -> list[int]:
    return [int(n) for batch in plan["batches"] for n in batch]


# ------------------------------------------------------------------------------------------------ the live view
LIVE_HEAD = "kadmin roll: "


def live_rows(frame: Sequence[str]) -> dict[int, dict[str, str]]:
    """The live view's table in one frame: each node's cells by column, a cell's folded lines joined by spaces.
    The boxed table, or the records the table rule falls back to when it does not fit (kadmin/render/tables.py)."""
    lines = [line for line in frame if line.startswith(("│", "┃"))]
    if not lines:
        return live_records(frame)
    headers = [h.strip() for h in lines[0].strip("┃").split("┃")]
    rows: dict[int, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for line in lines[1:]:
        cells = [c.strip() for c in line.strip("│").split("│")]
        if len(cells) != len(headers):
            continue
        if cells[0]:
            current = rows.setdefault(int(cells[0]), dict.fromkeys(headers, ""))
        if current is not None:
            for h, c in zip(headers, cells, strict=True):
                current[h] = f"{current[h]} {c}".strip() if c else current[h]
    return rows


def live_records(frame: Sequence[str]) -> dict[int, dict[str, str]]:
    rows: dict[int, dict[str, str]] = {}
    current: dict[str, str] | None = None
    key = ""
    for line in frame[1:]:
        m = re.match(r"([A-Z][A-Z ]*):(?: +(.*))?$", line)
        if m:
            key, value = m.group(1), (m.group(2) or "").strip()
            if key == "NODE":
                current = rows.setdefault(int(value), {})
            if current is not None:
                current[key] = value
        elif current is not None and key and line.startswith(" "):
            current[key] = f"{current[key]} {line.strip()}".strip()
    return rows


def frame_head(frame: Sequence[str]) -> str:
    """The summary line(s) above the table, joined."""
    head = itertools.takewhile(lambda x: not x.startswith(("┏", "NODE:")), frame)
    return " ".join(line.strip() for line in head)


def ticks(t: Terminal, node: int, step: str) -> list[float]:
    """The running step's SECONDS, frame by frame, while `node` was at `step`."""
    out = []
    for f in t.frames(LIVE_HEAD):
        r = live_rows(f).get(node)
        if r and r["STEP"] == step and r["STATUS"] == "running":
            with contextlib.suppress(ValueError):
                out.append(float(r["SECONDS"]))
    return out


# ------------------------------------------------------------------------------------------------ the clusters
# Class-scoped: each cluster runs for its class's tests only, so that one cluster runs at a time.
@pytest.fixture(scope="class")
def zk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    work = tmp_path_factory.mktemp("roll-zk")
    with sandboxed(work / "sandbox", "zk", kafka_home(KAFKA_3_9), work) as c:
        yield c


@pytest.fixture(scope="class")
def kraft(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    work = tmp_path_factory.mktemp("roll-kraft")
    with sandboxed(work / "sandbox", "kraft", kafka_home(KAFKA_4), work, "--mode", "kraft") as c:
        yield c


@pytest.fixture(scope="class")
def racks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    work = tmp_path_factory.mktemp("roll-racks")
    home = kafka_home(KAFKA_3_9)
    with roll_clusters.rack_sandbox(work / "sandbox", home, RACK_BROKERS, RACKS) as sb:
        try:
            yield sandbox_cluster(sb, "zk", home, work)
        finally:
            kill_nodes(sb)


@pytest.fixture(scope="class")
def combined(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    work = tmp_path_factory.mktemp("roll-combined")
    home = kafka_home(KAFKA_4)
    directory = work / "cluster"
    with roll_clusters.combined_cluster(directory, home) as st:
        hook = write_hook(work / "hook.sh", roll_clusters.hook_command("stop", directory),
                          roll_clusters.hook_command("start", directory))
        env = {**Sandbox(directory).env, "KADMIN_BOOTSTRAP_SERVER": roll_clusters.bootstrap(st),
               "XDG_CONFIG_HOME": str(work / "config"), "XDG_STATE_HOME": str(work / "state")}

        def pids() -> dict[int, int]:
            return {int(n["id"]): int(n["pid"]) for n in roll_clusters.read_state(directory)["nodes"]}

        yield Cluster("combined", home, work, env, roll_clusters.bootstrap(st),
                      roll_clusters.bootstrap_controllers(st), len(st["nodes"]), hook, pids,
                      lambda: all(roll_clusters.alive(roll_clusters.read_state(directory)).values()))


# ------------------------------------------------------------------------------------------------ ZooKeeper mode
class TestZooKeeperMode:
    @pytest.mark.timeout(1200)
    def test_a_whole_roll_loses_no_acks_all_write(self, zk: Cluster) -> None:
        r = whole_roll(zk, "whole")
        assert r.plan["leader"] in order_of(r.plan)
        assert restart_order(r.events) == order_of(r.plan) == r.events[0]["order"]
        assert restart_order(r.events)[-1] == r.plan["leader"]  # the active controller last: it moves once

    @pytest.mark.timeout(1200)
    def test_the_live_view_at_a_terminal(self, zk: Cluster) -> None:
        """A person at an 80-column terminal watches `roll run` restart two brokers (stdout a pipe of NDJSON, stderr
        the terminal). Each broker's stop hook leaves the kill to the background until the test says go, and its
        start hook says a line and waits for the test too: so the roll waits on the cluster (the broker still
        registered) and on a hook, each for as long as the test looks. The frames show: a row per planned node from
        the start (the second pending); the running step's seconds ticking while nothing is journaled; what it waits
        for in the cluster's words; the running hook's last line in its row, and no hook line printed above the view
        (it is in DIR/hooks); after a resize to 120 columns, frames drawn at the new width, never wider than the
        terminal; once a node is done, the time left estimated."""
        zk.healthy()
        a, b = order_of(zk.plan("--nodes", "1,2"))
        state, counter, go = zk.work / "live.state", zk.work / "live.counter", zk.work / "live-go"
        stop, start = hook_args(zk.hook, counter)[1], hook_args(zk.hook, counter)[3]
        gate = shlex.quote(str(go))
        stop = f"(while [ ! -e {gate}-stop-{{id}} ]; do sleep 0.1; done; {stop}) >/dev/null 2>&1 &"
        start = f"echo starting broker {{id}}; while [ ! -e {gate}-start-{{id}} ]; do sleep 0.1; done; {start}"
        argv = [sys.executable, "-m", "kadmin", "roll", "run", "--state", str(state), "--nodes", "1,2",
                "--stop", stop, "--start", start, "-o", "ndjson"]
        term = Terminal(argv, zk.env, cols=80, cwd=str(zk.work))
        try:
            def row(node: int, step: str | None = None, status: str = "running",
                    waiting: Callable[[str], bool] | None = None) -> Callable[[Terminal], bool]:
                def seen(t: Terminal) -> bool:
                    for f in t.frames(LIVE_HEAD):
                        r = live_rows(f).get(node)
                        if r and r["STATUS"] == status and (step is None or r["STEP"] == step) and \
                                (waiting is None or waiting(r["WAITING FOR"])):
                            return True
                    return False
                return seen

            # the cluster wait: the stop hook ended, the broker still registered; its seconds tick meanwhile
            term.wait_for(row(a, "wait_stopped", waiting=lambda w: f"broker {a} is still registered" in w), WAIT,
                          f"broker {a} waiting to be seen stopped")
            term.wait_for(lambda t: max(ticks(t, a, "wait_stopped"), default=0.0) >= 1.5, WAIT, "1.5 s ticked")
            secs = ticks(term, a, "wait_stopped")
            assert len(set(secs)) >= 3 and secs == sorted(secs), secs  # ticking, with no event to redraw it
            first = next(live_rows(f) for f in term.frames(LIVE_HEAD) if live_rows(f))
            assert {n: r["STATUS"] for n, r in first.items()} in (
                {a: "pending", b: "pending"}, {a: "running", b: "pending"}), first  # every planned node at once
            drawn_at_80 = len(term.chunks()) - 1
            term.resize(120)
            term.wait_for(lambda t: any(len(line) > 80 for f in t.frames(LIVE_HEAD)[-3:] for line in f), WAIT,
                          "a frame drawn wider than 80 columns after the resize")
            go.with_name(go.name + f"-stop-{a}").touch()
            # the hook wait: its row says so, and the hook's last line shows under the table
            term.wait_for(row(a, "start", waiting=lambda w: w == "its start hook"), WAIT, f"broker {a}'s start hook")
            term.wait_for(lambda t: any(f"node {a} start: starting broker {a}" in " ".join(f)
                                        for f in t.frames(LIVE_HEAD)[-3:]), WAIT, "the start hook's last line")
            go.with_name(go.name + f"-start-{a}").touch()
            term.wait_for(row(a, status="done"), WAIT, f"broker {a} done")
            term.wait_for(lambda t: any(" left (" in frame_head(f) for f in t.frames(LIVE_HEAD)), WAIT,
                          "the time left")
            for w in ("stop", "start"):
                go.with_name(go.name + f"-{w}-{b}").touch()
            code = term.wait(WAIT)
            assert code == 0, term.tail()
            widths = [max(map(len, c.split("\n"))) for c in term.chunks()[1:]]  # the last frame's bottom line first
            assert max(widths[:drawn_at_80]) <= 80 and max(widths) <= 120, widths
            # nothing cut: each frame's summary whole, however its lines were wrapped
            summary = re.compile(r"kadmin roll: \S+ so far; (reading the cluster|\d+ of 2 node\(s\) done(; time left: "
                                 r"after the first node|; about \S+ left \(\S+ per node so far\))?)")
            for f in term.frames(LIVE_HEAD):
                assert summary.fullmatch(frame_head(f)), f
            last = live_rows(term.frames(LIVE_HEAD)[-1])
            assert {n: r["STATUS"] for n, r in last.items()} == {a: "done", b: "done"}, last
            above = term.above(LIVE_HEAD)
            assert not [line for line in above if "starting broker" in line], above  # no hook line scrolled
            assert f"starting broker {a}" in (state / "hooks" / f"node-{a}.start.log").read_text()
            events = [json.loads(line) for line in term.stdout_lines()]
            assert events[-1]["event"] == "roll_done", events[-3:]
            Counter(counter).assert_each_restarted_once([a, b])
        finally:
            for n in (a, b):
                for w in ("stop", "start"):
                    go.with_name(go.name + f"-{w}-{n}").touch()
            term.close()
        zk.healthy()

    @pytest.mark.timeout(1200)
    def test_sigkill_at_any_point_then_the_same_command_finishes_restarting_no_node_twice(self, zk: Cluster) -> None:
        topic = zk.create_topic("roll-sigkill")
        zk.healthy()
        state, counter = zk.work / "sigkill.state", zk.work / "sigkill.counter"
        a, b, c = order_of(zk.plan())

        def point(node: int, step: str, status: str) -> dict[str, Any]:
            return {"event": "step", "node": node, "step": step, "status": status}

        before = zk.assignments()
        # (what, node, freeze after this journal line (None: kill while its start hook runs), the phase it leaves)
        kills: list[tuple[str, int, dict[str, Any] | None, str]] = [
            ("mid-drain: the reordering sent, not yet elected", a, {"call": "reassign"}, "before_stop"),
            ("during its in-sync wait", a, point(a, "wait_in_sync", "started"), "restarted"),
            ("between its stop and its start (wait_stopped done)", b, point(b, "wait_stopped", "done"), "stopped"),
            ("while its start hook runs", b, None, "starting"),
            ("just after start started, its hook not spawned", c, point(c, "start", "started"), "starting"),
        ]
        hit = []
        with Poller(zk.check, interval=2.0) as checks, Producer(zk.home, zk.bootstrap, topic) as producer:
            producer.wait_acked_more_than(100, WAIT)
            began = time.monotonic()
            for what, node, freeze, phase in kills:
                if freeze is not None:
                    run = zk.roll(state, counter, freeze=freeze)
                    frozen = run.wait_frozen(WAIT)
                    assert frozen == (freeze if "call" in freeze else journal(state)[-1])  # right after that line
                else:
                    run = zk.roll(state, counter)
                    run.wait_event(on(node, "start", "started"), WAIT, f"node {node}'s start")
                    wait_for(lambda n=node: ("start-begin", n) in Counter(counter).lines(), WAIT,
                             f"node {node}'s start hook running")
                assert run.kill() == -9
                events = journal(state)
                progress = roll_events.replay(roll_events.parse(e) for e in events).progress(node)
                hit.append((what, node, progress.phase, steps_of(events, node)[-2:]))
                assert progress.phase == phase, hit[-1]
                assert events[-1]["event"] == "step" and events[-1]["node"] == node, events[-1]
                if freeze is not None and "call" in freeze:  # frozen inside the drain: its file's path journaled
                    assert on(node, "drain", "started")(events[-1]) and events[-1]["detail"]["drain_file"], events[-1]
                elif freeze is not None:
                    assert on(node, freeze["step"], freeze["status"])(events[-1]), events[-1]
            # the start hook kadmin left running for b: it ends (its node started) with nobody to journal it
            wait_for(lambda: ("start", b) in Counter(counter).lines(), WAIT, f"node {b}'s orphaned start hook done")
            # c's start hook never began (its status file says so): this run starts it at once
            final = zk.roll(state, counter)
            code = final.wait(ROLL_WAIT)
            seconds = time.monotonic() - began
            back = producer.acked_count()
            producer.wait_acked_more_than(back + 100, WAIT)
            producer.stop()
        assert code == 0, f"the resumed `roll run` exited {code}\n{final.stderr()}"
        events = journal(state)
        kinds = [e["event"] for e in events]
        assert kinds.count("roll_started") == 1 and kinds.count("roll_resumed") == len(kills), kinds
        assert kinds[-1] == "roll_done" and "roll_failed" not in kinds
        assert final.events == events[-len(final.events):]
        # every node stopped once and started once, by the hooks' own count
        Counter(counter).assert_each_restarted_once([a, b, c])
        for n in (a, b, c):
            assert steps_of(events, n, "started").count("stop") == 1, (n, steps_of(events, n))
            assert [e for e in events if e["event"] == "node_done" and e["node"] == n][0]["status"] == "done"
        # a: killed mid-drain, drained again by the next run (saving the reordered assignment as drain-A-2.json);
        # undrain restored the FIRST file, the original order: Kafka's TopicCommand shows every partition's
        # replicas in the order of before the roll, each led by its first replica
        assert steps_of(events, a, "started").count("drain") == 2 and steps_of(events, a, "done").count("drain") == 1
        undrained = [e for e in events if on(a, "undrain", "done")(e)]
        assert undrained[0]["detail"]["drain_file"] == str(state / f"drain-{a}.json"), undrained
        assert (state / f"drain-{a}-2.json").exists()
        after = zk.assignments()
        assert {k: v[1] for k, v in after.items() if k in before} == {k: v[1] for k, v in before.items()}
        assert all(leader == replicas[0] for leader, replicas, _ in after.values()), after
        # b: the start hook the kill left running did the start; its status file told the next run so
        assert steps_of(events, b, "started").count("start") == 1 and steps_of(events, b, "done").count("start") == 1
        assert [e for e in events if on(b, "start", "done")(e)][0]["detail"]["recovered"] is True
        # c: its start hook never began: the next run ran it at once (no wait for a receipt first)
        assert steps_of(events, c, "started").count("start") == 2 and steps_of(events, c, "done").count("start") == 1
        assert_checks(checks, began, zk.kind)
        assert_status_done(zk, state, [a, b, c])
        assert_preferred_leaders(zk)
        assert_no_write_lost(producer, read_back(zk.bootstrap, topic, zk.home))
        print(f"sigkill: {len(kills)} kills, then done in {seconds:.1f} s; {producer.acked_count()} writes acked; "
              f"phases hit: {hit}")

    @pytest.mark.timeout(900)
    def test_a_failing_stop_hook_then_a_node_not_back_each_stop_the_roll_at_that_node(self, zk: Cluster) -> None:
        """One roll, three runs: a stop hook exiting 3 (exit 9 at stop), then a start hook that starts nothing
        (exit 1 at wait_restarted, --step-timeout 20), each touching nothing else; the node started by hand, the
        same command finishes the roll."""
        zk.create_topic("roll-failing")  # its own partitions to lead: the module's earlier tests' may not be there
        zk.healthy()
        state, counter = zk.work / "failing.state", zk.work / "failing.counter"
        order = order_of(zk.plan())
        victim, others = order[0], order[1:]
        pids = zk.node_pids()

        def failed(run: RollRun, code: int, step: str, reason: str) -> Event:
            got = run.wait(WAIT)
            events = journal(state)
            assert got == code, f"exit {got}\n{run.stderr()}"
            fail = events[-1]
            assert set(fail) - {"down", "drained"} == {"event", "at", "node", "step", "reason", "message",
                                                        "exit_code"}, fail
            assert fail["drained"] == [victim], fail  # said: left drained
            assert fail["event"] == "roll_failed" and fail["node"] == victim and fail["step"] == step, fail
            assert fail["reason"] == reason in REASONS and fail["exit_code"] == code, fail
            assert run.events == events[-len(run.events):]  # this run's stream: its part of the journal
            assert f"node {victim}" in run.stderr() and step in run.stderr()
            assert {e["node"] for e in events if e["event"] == "step"} == {victim}  # no other node touched
            code_, data, err = zk.json("roll", "status", "--state", str(state))
            assert data["status"] == "failed" and data["failure"]["node"] == victim, data
            assert data["failure"]["step"] == step and data["failure"]["exit_code"] == code, data
            return dict(fail)

        # 1. the stop hook exits 3: exit 9 naming the node and `stop`; no process touched
        fail = failed(zk.roll(state, counter, fail_stop=True), 9, "stop", "hook_failed")
        assert "exited 3" in fail["message"] and f"refusing to stop node {victim}" in fail["message"]  # its last line
        assert "down" not in fail  # kadmin watched the whole hook and never saw the node go: it is up
        assert Counter(counter).lines() == [("stop-refused", victim)]
        assert zk.node_pids() == pids
        # 2. the same command with a working stop and a start that starts nothing: exit 1 at wait_restarted
        fail = failed(zk.roll(state, counter, "--step-timeout", "10", skip_start=victim), 1, "wait_restarted",
                      "gate_not_met")
        assert f"node {victim}" in fail["message"] and "not met within 10 s" in fail["message"], fail
        assert fail["down"] == [victim], fail  # said: left stopped
        touched = [("stop-refused", victim), ("stop-begin", victim), ("stop", victim), ("start-skipped", victim)]
        assert Counter(counter).lines() == touched
        now = zk.node_pids()
        assert {n: now[n] for n in others} == {n: pids[n] for n in others}
        # 3. started by hand, the same command goes on from that node's receipt, then the others
        assert zk.kadmin("sandbox", "start", str(victim)).returncode == 0
        resumed = zk.roll(state, counter)
        assert resumed.wait(ROLL_WAIT) == 0, resumed.stderr()
        assert [x for x in Counter(counter).lines() if x[1] == victim] == touched  # no hook ran for it again
        Counter(counter).assert_each_restarted_once(others, besides=touched)
        events = journal(state)
        assert steps_of(events, victim, "started").count("stop") == 2  # the failed hook and the working one
        assert steps_of(events, victim, "started").count("start") == 1
        assert_status_done(zk, state, order)
        assert_preferred_leaders(zk)

    @pytest.mark.timeout(900)
    def test_a_broker_outside_the_roll_dying_mid_roll_stops_it_at_the_next_gate(self, zk: Cluster) -> None:
        zk.create_topic("roll-outside")  # min.insync.replicas=2: broker 3 gone, 1 and 2 cannot both stop
        zk.healthy()
        state, counter = zk.work / "outside.state", zk.work / "outside.counter"
        pids = zk.node_pids()
        inside, outside = [1, 2], 3
        # frozen right after the first node's node_done: broker 3 is stopped (and deregistered) before the roll
        # goes on to the second node
        run = zk.roll(state, counter, "--nodes", "1,2", freeze={"event": "node_done"})
        done = run.wait_frozen(WAIT)
        first_node = int(done["node"])
        second = next(n for n in inside if n != first_node)
        try:
            assert zk.kadmin("sandbox", "kill", str(outside)).returncode == 0
            wait_for(lambda: not zk.registered(outside), WAIT, f"broker {outside} deregistered")
            run.thaw()
            code = run.wait(WAIT)
            events = journal(state)
            assert code == 1, f"exit {code}\n{run.stderr()}"
            fail = events[-1]
            assert fail["event"] == "roll_failed" and fail["node"] == second, fail
            assert fail["step"] in ("can_stop", "others_healthy", "wait_healthy"), fail
            assert fail["reason"] == "gate_not_met", fail
            assert fail["exit_code"] == 1
            # the second node: its gate only, never drained, stopped or started
            assert steps_of(events, second) == [f"{fail['step']}:started", f"{fail['step']}:failed"], events[-4:]
            lines = Counter(counter).lines()
            assert {n for _, n in lines} == {first_node}, lines
            Counter(counter).assert_each_restarted_once([first_node])
            assert zk.node_pids()[second] == pids[second]
            assert outside not in {e.get("node") for e in events}
            print(f"outside: node {first_node} done, broker {outside} stopped, roll stopped at {fail}")
        finally:
            run.thaw()
            if not zk.registered(outside):
                zk.kadmin("sandbox", "start", str(outside))
        zk.healthy()


# ------------------------------------------------------------------------------------------------ KRaft
class TestKraft:
    @pytest.mark.timeout(1500)
    def test_a_whole_roll_controllers_first_the_quorum_leader_last(self, kraft: Cluster) -> None:
        r = whole_roll(kraft, "kraft", quorum=True)
        controllers = {int(n["node"]) for n in r.plan["nodes"] if n["role"] == "controller"}
        assert controllers == {3001, 3002, 3003}
        assert r.leader_before is not None
        facts = assert_order_and_leader(r.events, controllers, r.leader_before, r.leaders)
        assert facts["order"][3:] == [1, 2, 3]  # then the brokers, by id
        print(f"kraft: {facts}")

    @pytest.mark.timeout(900)
    def test_a_controller_killed_after_start_started_is_started_again_at_once(self, kraft: Cluster) -> None:
        """kadmin SIGKILLed right after journaling a controller's `start started`, before its hook began: the
        controller is down, the quorum at N-1. The same command finds the hook's status file without `began`,
        and starts it at once (before: it waited --step-timeout for the controller to catch up, every rerun)."""
        kraft.healthy()
        leader = kraft.quorum_leader()
        victim = next(n for n in (3001, 3002, 3003) if n != leader)
        state, counter = kraft.work / "ctl-start.state", kraft.work / "ctl-start.counter"
        run = kraft.roll(state, counter, "--nodes", str(victim),
                         freeze={"event": "step", "node": victim, "step": "start", "status": "started"})
        run.wait_frozen(WAIT)
        assert run.kill() == -9
        assert Counter(counter).lines() == [("stop-begin", victim), ("stop", victim)]  # down, its start not run
        began = time.monotonic()
        resumed = kraft.roll(state, counter, "--nodes", str(victim), "--step-timeout", "120")
        assert resumed.wait(ROLL_WAIT) == 0, resumed.stderr()
        took = time.monotonic() - began
        Counter(counter).assert_each_restarted_once([victim])
        events = journal(state)
        assert steps_of(events, victim, "started").count("start") == 2
        assert steps_of(events, victim, "done").count("wait_caught_up") == 1
        code, _, err = kraft.json("quorum", "check")
        assert code == 0, err
        print(f"controller {victim} killed after start started, started at once: {took:.1f} s")

    @pytest.mark.timeout(900)
    def test_a_self_restarting_stop_hook_is_never_run_again(self, kraft: Cluster) -> None:
        """A stop hook that brings the broker back by itself (as `kubectl delete pod`), kadmin SIGKILLed right after
        `stop done`: the same command never runs the stop again (a second restart, with no gate); kadmin saw the
        broker fenced while the hook ran (`seen_stopped`, journaled), so its receipt completes the roll."""
        kraft.healthy()
        state, counter = kraft.work / "selfrestart.state", kraft.work / "selfrestart.counter"
        ops = {"stop_op": "selfrestart", "start_op": "startnoop"}
        run = kraft.roll(state, counter, "--nodes", "2", **ops,  # type: ignore[arg-type]
                         freeze={"event": "step", "node": 2, "step": "stop", "status": "done"})
        run.wait_frozen(WAIT)
        assert run.kill() == -9
        assert [e["event"] for e in journal(state)].count("seen_stopped") == 1
        resumed = kraft.roll(state, counter, "--nodes", "2", **ops)  # type: ignore[arg-type]
        assert resumed.wait(ROLL_WAIT) == 0, resumed.stderr()
        lines = Counter(counter).lines()
        assert [x for x in lines if x[0] != "start-noop"] == \
            [("stop-begin", 2), ("stop", 2), ("start-begin", 2), ("start", 2)], lines  # one restart, its own
        events = journal(state)
        assert steps_of(events, 2, "started").count("stop") == 1
        assert [e for e in events if e["event"] == "node_done"][0]["status"] == "done"


# ------------------------------------------------------------------------------------------------ racks, --parallel
class TestRacks:
    @pytest.mark.timeout(1200)
    def test_parallel_batches_never_stop_two_replicas_of_a_partition(self, racks: Cluster) -> None:
        """6 brokers in 3 racks whose names are shell code (`r0;touch PWNED0;#`, `r1$(touch PWNED1)|x`, ...), two
        rack-aware RF-3 min-ISR-2 topics, and `shared`, RF 3 with Kafka's default min ISR 1, assigned to brokers
        1 and 4 (one rack) and 2: `--parallel 2` batches rack-mates first, and min ISR 1 alone would let 1 and
        4 stop together. The default batch rule never stops two replicas of one partition: from the journal
        (no batch holds two), and from the brokers' own ISRs (TopicCommand, polled all along: `shared`'s ISR never
        lost two replicas at once). Each stop hook received its node's rack as one argument, untouched."""
        topics = [racks.create_topic("roll-racks-a"), racks.create_topic("roll-racks-b", 12)]
        tool(racks.home, TOPIC_COMMAND, "--bootstrap-server", racks.bootstrap, "--create", "--topic", "shared",
             "--replica-assignment", "1:4:2")
        wait_for(lambda: ("shared", 0) in racks.assignments(), WAIT, "topic shared created")
        record = racks.work / "rack"

        def shared_isr() -> set[int]:
            return racks.assignments()[("shared", 0)][2]

        r = whole_roll(racks, "racks", "--parallel", "2", topic=topics[0], record=record, watch=shared_isr)
        rack = {int(n["node"]): n["rack"] for n in r.plan["nodes"]}
        assert rack == {i: roll_clusters.rack_of(i, RACKS) for i in range(1, RACK_BROKERS + 1)}
        for i in range(1, RACK_BROKERS + 1):  # {rack}, {host} and $KADMIN_ROLL_RACK, each one line, as they are
            got = Path(f"{record}-{i}").read_text().split("\n")
            assert got[0] == rack[i] == got[2] and got[1] == "127.0.0.1", (i, got)
        assert not list(racks.work.rglob("PWNED*")), "a rack's name ran as shell code"
        isrs = [x for x in r.watched if isinstance(x, set)]
        assert isrs and all(len(isr) >= 2 for isr in isrs), f"shared-0 lost two replicas at once: {isrs}"
        ours = [p for p in r.partitions_before if p["topic"] in topics]
        assert len(ours) == 18 and all(len({rack[i] for i in p["replicas"]}) == 3 for p in ours), ours
        ran = batches_run(r.events)
        assert ran == [list(b) for b in r.plan["batches"]], (ran, r.plan["batches"])
        assert any(len(b) == 2 for b in ran), f"no two brokers restarted together: {ran}"
        for b in ran:  # a batch drains and undrains as one (one reordering, one election each)
            assert taken_together(r.events, b, "drain") and taken_together(r.events, b, "undrain"), b
        groups = down_together(r.events)
        assert sorted(sorted(g) for g in groups) == sorted(sorted(b) for b in ran), (groups, ran)
        for g in groups:
            for p in r.partitions_before:
                left = set(p["replicas"]) - g
                assert len(left) >= p["effective_min_isr"], (sorted(g), p["topic"], p["partition"], p["replicas"])
                assert len(set(p["replicas"]) & g) <= 1, (sorted(g), p["topic"], p["partition"], p["replicas"])
        assert not any({1, 4} <= set(b) for b in ran), ran
        print(f"racks: batches {ran}, racks {rack}")


# ------------------------------------------------------------------------------------------------ combined nodes
class TestCombinedNodes:
    @pytest.mark.timeout(1500)
    def test_a_whole_roll_of_combined_nodes(self, combined: Cluster) -> None:
        r = whole_roll(combined, "combined", quorum=True)
        assert {n["role"] for n in r.plan["nodes"]} == {"combined"}
        for n in r.plan["nodes"]:  # a broker's receipt and a controller's catching up (assert_documented ran them)
            assert {"wait_restarted", "wait_caught_up", "quorum_check", "drain"} <= set(n["steps"]), n
        assert r.leader_before is not None
        facts = assert_order_and_leader(r.events, {1, 2, 3}, r.leader_before, r.leaders)
        print(f"combined: {facts}")


# ------------------------------------------------------------------------------------------------ identity
@pytest.fixture(scope="class")
def dynamic(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, Any], dict[str, str]]]:
    work = tmp_path_factory.mktemp("roll-dynamic")
    directory = work / "cluster"
    with roll_clusters.combined_cluster(directory, kafka_home(KAFKA_4), dynamic=True) as st:
        env = {**Sandbox(directory).env, "KADMIN_BOOTSTRAP_SERVER": roll_clusters.bootstrap(st),
               "XDG_CONFIG_HOME": str(work / "config"), "XDG_STATE_HOME": str(work / "state")}
        yield directory, st, env


class TestIdentity:
    @pytest.mark.timeout(600)
    def test_a_controller_back_with_a_new_disk_stops_the_roll_until_its_voter_is_replaced(
            self, dynamic: tuple[Path, dict[str, Any], dict[str, str]]) -> None:
        directory, st, env = dynamic
        node, old = 2, next(n["directory_id"] for n in st["nodes"] if n["id"] == 2)
        state = directory.parent / "identity.state"
        hooks = ["--stop", shlex.join(roll_clusters.hook_command("stop", directory)) + " {id}",
                 "--start", shlex.join(roll_clusters.hook_command("reformat", directory)) + " {id}"]

        def roll() -> tuple[int, list[Event]]:
            r = subprocess.run([sys.executable, "-m", "kadmin", "roll", "run", "--nodes", str(node), "--state",
                                str(state), *hooks, "--step-timeout", "120", "-o", "ndjson"], capture_output=True,
                               text=True, env=env, timeout=600, stdin=subprocess.DEVNULL)
            events, out = journal(state), [json.loads(line) for line in r.stdout.splitlines()]
            assert out and out == events[-len(out):], r.stderr[-2000:]  # this run's events: the journal's last
            return r.returncode, events

        def pids() -> dict[int, int]:
            return {int(n["id"]): int(n["pid"]) for n in roll_clusters.read_state(directory)["nodes"]}

        others = {i: p for i, p in pids().items() if i != node}
        code, events = roll()
        failed = events[-1]
        assert (code, failed["event"], failed["reason"], failed["node"]) == (1, "roll_failed", "identity_changed",
                                                                            node), failed
        assert f"remove-controller --controller-id {node} --controller-directory-id {old}" in failed["message"]
        assert "add-controller" in failed["message"]
        stop = next(e for e in events if on(node, "stop", "started")(e))
        assert stop["detail"]["old_directory_id"] == old
        assert {i: p for i, p in pids().items() if i != node} == others  # no other process touched
        restarted = pids()[node]

        code, events = roll()  # the same command: stops again, no hook run
        assert (code, events[-1]["reason"]) == (1, "identity_changed"), events[-1]
        assert pids() == {**others, node: restarted}

        controllers = roll_clusters.bootstrap_controllers(st)
        quorum_tool = "org.apache.kafka.tools.MetadataQuorumCommand"
        tool(Path(st["home"]), quorum_tool, "--bootstrap-controller", controllers, "remove-controller",
             "--controller-id", str(node), "--controller-directory-id", old)
        tool(Path(st["home"]), quorum_tool, "--command-config", str(directory / f"node-{node}" / "server.properties"),
             "--bootstrap-controller", controllers, "add-controller")
        code, events = roll()
        assert (code, events[-1]["event"]) == (0, "roll_done"), events[-3:]
        assert pids() == {**others, node: restarted}  # finished without running a hook again

