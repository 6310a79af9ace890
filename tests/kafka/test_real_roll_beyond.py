"""`kadmin roll run` beyond the plain roll, on real Apache Kafka (issue 37): `--soak` catching a crash loop,
`roll pause` / `roll continue` and `--pause-after`, the `--before-node` / `--after-node` hooks, the `--until`
window, and `gate_waiting` naming what holds a gate.

One sandbox per mode, started once for the module and shared by its tests (module-scoped, parametrized: one runs
at a time): Kafka 3.9.1 in ZooKeeper mode (3 brokers) and Kafka 4.3.1 in KRaft mode (3 controllers, 3 brokers).
Each test begins and ends with every node up and the cluster healthy (`roll plan`
says so). Kafka's own VerifiableProducer (acks=all, idempotent, delivery.timeout.ms 30 s) writes the module's
topic (RF 3, min ISR 2) through every test of a mode: each test sees writes acknowledged before and after it and no
send failed; at the mode's end every acknowledged record is read back.

- soak: the victim's `--start` hook starts it and leaves a supervisor behind (a detached process, as systemd's
  Restart=): once the roll journals the victim's `soak started`, it stops the broker and starts it again, once.
  The roll stops: exit 1, `roll_failed` `crash_loop` at `soak`; no other node touched (its pid, the hooks' count).
- pause: three brokers, `--pause-after 1`: paused after the first (by `--pause-after`, the pause file written),
  no step of the second until `roll continue` (`continued`); `roll pause` while the second runs: it finishes
  that one, then pauses (by `roll pause`); Ctrl-C while paused exits 130; the same command is still paused until
  `roll continue`, then finishes. Each broker restarted once.
- window and node hooks: `--until` 30 s ahead, the run frozen after the first node's `node_done` until the
  window closed: exit 10, `roll_failed` `window_closed`, `roll status` `window_closed`; the same command without
  `--until` finishes, each node restarted once (the hooks' count, one stop each in the journal; ZooKeeper mode: a
  greater broker epoch each). Both runs with `--before-node` / `--after-node` appending to the stop and start
  hooks' counter: in order around each node, each once; in the journal `before_node` right after the gates and
  before `drain`, `after_node` right after `wait_healthy`; each hook's log (DIR/hooks/node-ID.before_node.log)
  with KADMIN_ROLL_HOOK.
- gate_waiting: the run frozen after `roll_started` (its preflight passed), a broker outside `--nodes` stopped:
  the first node's `can_stop` emits `gate_waiting` on stdout (never journaled) naming real partitions it would
  take under min ISR, and a `cause` naming the stopped broker; nothing touched.

Nothing waits on time but the window test, whose fact under test is the clock.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import re
import shlex
import signal
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.kafka.test_real_roll import WAIT, Cluster, order_of, sandboxed
from tests.support.kafka import KAFKA_3_9, KAFKA_4, kafka_home, wait_for
from tests.support.producer import Producer, assert_no_write_lost, read_back
from tests.support.roll import Counter, Event, RollRun, hook_args, journal, on, steps_of

pytestmark = [pytest.mark.kafka, pytest.mark.integration, pytest.mark.slow]

ROLL_WAIT = 600.0  # a roll of two or three brokers, beside a CPU hog
TIMEOUTS = ("--step-timeout", "180")  # each wait of a roll: short, but a busy machine's restart fits
SOAK = 120  # seconds: the supervisor's restart lands well inside it (it begins at the soak's first journal line)
WINDOW = 30  # seconds from the launch to --until: the first node starts well before it (checked before its gates)
PAIR = "1,2"  # the brokers most tests roll; broker 3 stays out

MODES = {"zk": (KAFKA_3_9, ()), "kraft": (KAFKA_4, ("--mode", "kraft"))}

# The supervisor a start hook leaves behind: JOURNAL NODE COUNTER SANDBOX. It waits (polling the journal, as a
# supervisor polls its unit) for NODE's `soak started`, then stops the broker and starts it again through the
# sandbox, once, appending `crash-begin`, `crash` and `restarted` lines to the hooks' counter.
SUPERVISOR = r'''
import json, subprocess, sys, time
journal, node, counter, sandbox = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]

def soaking():
    try:
        with open(journal) as f:
            lines = f.read().splitlines()
    except OSError:
        return False
    for line in lines:
        try:
            ev = json.loads(line)
        except ValueError:
            continue  # a line being written
        if (ev.get("event"), ev.get("node"), ev.get("step"), ev.get("status")) == ("step", node, "soak", "started"):
            return True
    return False

def note(what):
    with open(counter, "a") as f:
        f.write(f"{what} {node}\n")

def sandbox_op(op):
    subprocess.run([sys.executable, "-m", "kadmin", "sandbox", op, "--dir", sandbox, "-o", "plain", str(node)],
                   check=True, stdin=subprocess.DEVNULL)

deadline = time.monotonic() + 900
while not soaking():
    if time.monotonic() > deadline:
        note("supervisor-gave-up")
        sys.exit(1)
    time.sleep(0.1)
note("crash-begin")
sandbox_op("kill")
note("crash")
sandbox_op("start")
note("restarted")
'''


# ------------------------------------------------------------------------------------------------ the clusters
@pytest.fixture(scope="module", params=sorted(MODES), ids=lambda k: f"{k}-{MODES[k][0]}")
def cluster(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    kind = str(request.param)
    version, up_args = MODES[kind]
    work = tmp_path_factory.mktemp(f"roll-beyond-{kind}")
    with sandboxed(work / "sandbox", kind, kafka_home(version), work, *up_args) as c:
        yield c


@pytest.fixture(scope="module")
def producer(cluster: Cluster) -> Iterator[Producer]:
    """Kafka's VerifiableProducer writing the module's RF-3 min-ISR-2 topic through every test of the mode; at the
    end no send error, and every acknowledged record read back (each test also checks its part: `writing`)."""
    topic = cluster.create_topic("beyond")
    cluster.healthy()
    with Producer(cluster.home, cluster.bootstrap, topic) as p:
        yield p
        p.wait_acked_more_than(p.acked_count() + 100, WAIT)
        p.stop()
    assert p.errors() == [], p.describe()
    assert_no_write_lost(p, read_back(cluster.bootstrap, topic, cluster.home))


@pytest.fixture
def c(cluster: Cluster, producer: Producer) -> Iterator[Cluster]:
    """The module's cluster, healthy before the test and again after it (a node a test left stopped started),
    its producer writing."""
    restore(cluster)
    yield cluster
    restore(cluster)


def restore(c: Cluster) -> None:
    assert c.sb is not None
    for p in c.sb.status()["processes"]:
        if p["role"] in ("broker", "controller") and not p["alive"]:
            r = c.kadmin("sandbox", "start", str(p["id"]))
            assert r.returncode == 0, r.stderr
    c.healthy()


# ------------------------------------------------------------------------------------------------ helpers
def roll(c: Cluster, state: Path, counter: Path, *extra: str, start: str | None = None,
         freeze: Mapping[str, Any] | None = None) -> RollRun:
    """`roll run --state STATE` with the test's stop and start hooks (`start`: another --start command), the
    module's timeouts, then `extra`; in the cluster's work directory."""
    c.runs += 1
    hooks = hook_args(c.hook, counter)
    if start is not None:
        hooks[3] = start
    return RollRun(["--state", str(state), *hooks, *TIMEOUTS, *extra], c.env, c.work / f"run-{c.runs}.stderr",
                   freeze=freeze, cwd=c.work)


@contextlib.contextmanager
def writing(p: Producer) -> Iterator[None]:
    """The module's producer acknowledging writes before the body and after it, no send error so far (the record
    read back at the module's end)."""
    p.wait_acked_more_than(p.acked_count() + 100, WAIT)
    yield
    p.wait_acked_more_than(p.acked_count() + 100, WAIT)
    assert p.errors() == [], p.describe()


def index(events: Sequence[Event], pred: Callable[[Event], bool], what: str) -> int:
    found = [i for i, e in enumerate(events) if pred(e)]
    assert len(found) == 1, f"{what}: {len(found)} such events in {events}"
    return found[0]


def event(kind: str, **fields: Any) -> Callable[[Event], bool]:
    return lambda e: e.get("event") == kind and all(e.get(k) == v for k, v in fields.items())


def stepped(events: Sequence[Event]) -> set[int]:
    """The nodes with any step journaled or streamed."""
    return {int(e["node"]) for e in events if e.get("event") == "step"}


def status(c: Cluster, state: Path) -> dict[str, Any]:
    code, data, err = c.json("roll", "status", "--state", str(state))
    assert data is not None, err
    return dict(data)


# ------------------------------------------------------------------------------------------------ the tests
@pytest.mark.timeout(900)
def test_soak_catches_a_broker_its_supervisor_restarts_and_touches_nothing_else(c: Cluster, producer: Producer) -> None:
    assert c.sb is not None
    victim, other = order_of(c.plan("--nodes", PAIR))
    state, counter = c.work / "soak.state", c.work / "soak.counter"
    supervisor = c.work / "supervisor.py"
    supervisor.write_text(SUPERVISOR)
    start = hook_args(c.hook, counter)[3]
    spawn = shlex.join([sys.executable, str(supervisor), str(state / "journal.ndjson"), str(victim), str(counter),
                        str(c.sb.dir)])
    log = shlex.quote(str(c.work / "supervisor.log"))
    start = f"{start} && if [ {{id}} = {victim} ]; then setsid {spawn} >> {log} 2>&1 </dev/null & fi"
    pids = c.node_pids()
    with writing(producer):
        run = roll(c, state, counter, "--nodes", PAIR, "--soak", str(SOAK), start=start)
        try:
            code = run.wait(ROLL_WAIT)
        finally:  # the supervisor's restart done (or never begun) before anything looks at the cluster
            wait_for(lambda: ("restarted", victim) in Counter(counter).lines()
                     or ("crash-begin", victim) not in Counter(counter).lines(), WAIT, "the supervisor's restart")
        events = journal(state)
        assert code == 1, f"exit {code}\n{run.stderr()}\n{events[-4:]}"
        fail = events[-1]
        assert fail["event"] == "roll_failed" and fail["reason"] == "crash_loop", fail
        assert fail["node"] == victim and fail["step"] == "soak" and fail["exit_code"] == 1, fail
        assert str(victim) in fail["message"], fail
        assert steps_of(events, victim)[-2:] == ["soak:started", "soak:failed"], steps_of(events, victim)
        assert run.events[-1] == fail
        # the supervisor restarted it inside the soak, and the roll's own hooks restarted it once
        lines = Counter(counter).lines()
        assert lines[-3:] == [("crash-begin", victim), ("crash", victim), ("restarted", victim)], lines
        Counter(counter).assert_each_restarted_once([victim], besides=lines[-3:])
        # nothing else touched: no other node's step, every other process the same
        assert stepped(events) == {victim}, events
        now = c.node_pids()
        assert {n: p for n, p in now.items() if n != victim} == {n: p for n, p in pids.items() if n != victim}
        assert other not in {n for _, n in lines}
        st = status(c, state)
        assert st["status"] == "failed" and st["failure"]["node"] == victim, st
        assert st["failure"]["step"] == "soak" and st["failure"]["exit_code"] == 1, st
    print(f"soak {c.kind}: node {victim} caught at {fail['message']!r}")


@pytest.mark.timeout(900)
def test_pause_continue_and_pause_after_hold_the_next_node(c: Cluster, producer: Producer) -> None:
    a, b, z = order_of(c.plan("--nodes", "1,2,3"))
    state, counter = c.work / "pause.state", c.work / "pause.counter"
    pause_file = state / "pause"
    args = ("--nodes", "1,2,3", "--pause-after", "1")

    def control(verb: str) -> None:
        r = c.kadmin("roll", verb, "--state", str(state))
        assert r.returncode == 0, f"roll {verb}: exit {r.returncode}\n{r.stderr}"

    # node b's start hook waits for the pause file (at most 300 s), so `roll pause` lands while b runs however slowly
    # the command starts on a busy machine (else b, and then z, could be done before it)
    held = (f"i=0; if [ {{id}} = {b} ]; then until [ -e {shlex.quote(str(pause_file))} ] || [ $i -ge 3000 ]; "
            f"do sleep 0.1; i=$((i+1)); done; fi; {hook_args(c.hook, counter)[3]}")
    with writing(producer):
        # --pause-after 1: paused once the first node is done, the pause file written
        run = roll(c, state, counter, *args, start=held)
        p1 = run.wait_event(event("paused"), WAIT, "the --pause-after pause")
        assert p1["by"] == "--pause-after" and p1["done"] == [a], p1
        assert pause_file.exists()
        assert stepped(journal(state)) == {a}  # the next node not begun
        control("continue")
        assert not pause_file.exists()
        run.wait_event(event("continued"), WAIT, "continued")
        # `roll pause` while the second node runs: it is finished, then the roll pauses
        run.wait_event(lambda e: e.get("event") == "step" and e.get("node") == b, WAIT, f"node {b} begun")
        control("pause")
        assert pause_file.exists()
        p2 = run.wait_event(event("paused", by="roll pause"), WAIT, "the roll pause")
        assert sorted(p2["done"]) == sorted([a, b]), p2
        # Ctrl-C while paused: 130, nothing of the third node
        os.kill(run.proc.pid, signal.SIGINT)
        assert run.wait(WAIT) == 130, run.stderr()
        assert z not in stepped(journal(state))
        # the same command: still paused until `roll continue`
        again = roll(c, state, counter, *args)
        wait_for(lambda: any(e.get("event") == "paused" for e in again.events) or "paused" in again.stderr(), WAIT,
                 "the resumed run saying it is paused")  # a pause already journaled need not be journaled again
        assert again.proc.poll() is None and z not in stepped(journal(state)) and pause_file.exists()
        control("continue")
        again.wait_event(event("continued"), WAIT, "continued again")
        assert again.wait(ROLL_WAIT) == 0, again.stderr()
    events = journal(state)
    kinds = [e["event"] for e in events]
    assert kinds[-1] == "roll_done" and kinds.count("continued") == 2, kinds
    cont = [i for i, e in enumerate(events) if e["event"] == "continued"]
    paused = [i for i, e in enumerate(events) if e["event"] == "paused"]
    steps_at = {n: [i for i, e in enumerate(events) if e.get("event") == "step" and e.get("node") == n]
                for n in (a, b, z)}
    done_at = {n: index(events, event("node_done", node=n), f"node_done {n}") for n in (a, b, z)}
    assert done_at[a] < paused[0] < cont[0] < min(steps_at[b]), kinds  # held until continued
    assert done_at[b] < paused[1] < cont[1] < min(steps_at[z]), kinds
    assert all(paused[1] < p < cont[1] for p in paused[2:]), kinds  # the resumed run's pause: the same one
    assert [e["by"] for e in events if e["event"] == "paused"][:2] == ["--pause-after", "roll pause"]
    Counter(counter).assert_each_restarted_once([a, b, z])
    assert status(c, state)["status"] == "done"


HOOKED = ("before-node", "stop-begin", "stop", "start-begin", "start", "after-node")  # a node's lines, in order


@pytest.mark.timeout(900)
def test_until_stops_at_the_window_and_node_hooks_run_around_each_node_once(c: Cluster, producer: Producer) -> None:
    """`--until` 30 s ahead, the run frozen after the first node's node_done until the window closed: exit 10;
    the same command without --until finishes. Both runs with --before-node and --after-node hooks appending to
    the stop and start hooks' counter: around each node, in order, each once."""
    a, b = order_of(c.plan("--nodes", PAIR))
    state, counter = c.work / "window.state", c.work / "window.counter"
    q = shlex.quote(str(counter))
    hooks = ("--before-node", f'echo "hook=$KADMIN_ROLL_HOOK node={{id}}"; echo before-node {{id}} >> {q}',
             "--after-node", f'echo "hook=$KADMIN_ROLL_HOOK node={{id}}"; echo after-node {{id}} >> {q}')
    with writing(producer):
        closes = datetime.datetime.now().astimezone().replace(microsecond=0) + datetime.timedelta(seconds=WINDOW)
        run = roll(c, state, counter, "--nodes", PAIR, *hooks, "--until", closes.isoformat(),
                   freeze={"event": "node_done"})
        done = run.wait_frozen(WAIT)
        assert done["node"] == a, done
        # the first node done within the window; the window closes before the roll goes on
        wait_for(lambda: time.time() > closes.timestamp() + 1, WINDOW + 5, "the window closed")
        run.thaw()
        code = run.wait(WAIT)
        events = journal(state)
        assert code == 10, f"exit {code}\n{run.stderr()}\n{events[-3:]}"
        fail = events[-1]
        assert fail["event"] == "roll_failed" and fail["reason"] == "window_closed" and fail["exit_code"] == 10, fail
        assert run.events == events
        assert stepped(events) == {a}, events  # the next node not begun, its before-node hook not run
        assert Counter(counter).lines() == [(w, a) for w in HOOKED]
        assert status(c, state)["status"] == "window_closed"
        # the same command without --until goes on
        rerun = roll(c, state, counter, "--nodes", PAIR, *hooks)
        assert rerun.wait(ROLL_WAIT) == 0, rerun.stderr()
    events = journal(state)
    assert rerun.events == events[len(run.events):]
    kinds = [e["event"] for e in events]
    assert kinds.count("roll_started") == 1 and kinds.count("roll_resumed") == 1 and kinds[-1] == "roll_done", kinds
    # what the hooks did, in the order they did it: each node restarted once, between its two hooks
    assert Counter(counter).lines() == [(w, n) for n in (a, b) for w in HOOKED]
    for n in (a, b):
        assert steps_of(events, n, "started").count("stop") == 1, steps_of(events, n)
        nd = events[index(events, event("node_done", node=n), f"node_done {n}")]
        assert nd["status"] == "done", nd
        if c.kind == "zk":
            assert nd["detail"]["new_epoch"] > nd["detail"]["old_epoch"], nd  # a new registration, once
        # the journal: before_node right after the gates, before the first change; after_node once it is healthy
        started = steps_of(events, n, "started")
        assert started.count("before_node") == 1 and started.count("after_node") == 1, started
        i, j = started.index("before_node"), started.index("after_node")
        assert started[i - 1] == "can_stop" and started[i + 1] == "drain", started
        assert started[j - 1] == "wait_healthy", started
        assert index(events, on(n, "before_node", "done"), "before_node done") < \
            index(events, on(n, "drain", "started"), "drain started")
        assert index(events, on(n, "wait_healthy", "done"), "wait_healthy done") < \
            index(events, on(n, "after_node", "started"), "after_node started") < \
            index(events, on(n, "after_node", "done"), "after_node done") < \
            index(events, event("node_done", node=n), "node_done")
        for hook in ("before-node", "after-node"):
            log = (state / "hooks" / f"node-{n}.{hook.replace('-', '_')}.log").read_text()
            assert f"hook={hook} node={n}" in log, log
    assert status(c, state)["status"] == "done"


@pytest.mark.timeout(900)
def test_a_gate_held_by_a_broker_outside_the_roll_says_which_partitions_and_why(c: Cluster, producer: Producer) -> None:
    outside = 3
    state, counter = c.work / "gate.state", c.work / "gate.counter"
    pids = c.node_pids()
    with writing(producer):
        before = c.partitions()
        # the preflight passed (roll_started), then broker 3 stops: the first node's can_stop cannot pass
        run = roll(c, state, counter, "--nodes", PAIR, freeze={"event": "roll_started"})
        try:
            run.wait_frozen(WAIT)
            assert c.kadmin("sandbox", "kill", str(outside)).returncode == 0
            wait_for(lambda: not c.registered(outside), WAIT, f"broker {outside} gone")
            run.thaw()
            ev = run.wait_event(event("gate_waiting"), WAIT, "gate_waiting")
        finally:
            run.thaw()
            if run.proc.poll() is None:
                os.kill(run.proc.pid, signal.SIGINT)  # Ctrl-C: the gate's wait ends, nothing was touched
            run.wait(WAIT)
            assert c.kadmin("sandbox", "start", str(outside)).returncode == 0
    a = ev["node"]  # the first node of the order recomputed then (ZooKeeper mode: 3 may have been the controller)
    assert a in (1, 2) and ev["role"] == "broker" and ev["step"] == "can_stop", ev
    assert isinstance(ev["why"], str) and ev["why"], ev
    # real partitions, each one stopping `a` would take under its min ISR with broker 3 down
    blocked = {(p["topic"], p["partition"]) for p in before
               if {a, outside} <= set(p["replicas"]) and len(p["replicas"]) - 2 < p["effective_min_isr"]}
    named = {(b["topic"], b["partition"]) for b in ev["blockers"] if "topic" in b}
    assert named and named <= blocked, (named, blocked)
    assert all(isinstance(b["why"], str) and b["why"] for b in ev["blockers"]), ev["blockers"]
    assert ev["cause"] and re.search(rf"\bbroker {outside}\b", ev["cause"]), ev  # one the roll cannot fix
    # streamed, never journaled; the node untouched
    events = journal(state)
    assert "gate_waiting" not in {e["event"] for e in events}
    assert stepped(events) <= {a} and set(steps_of(events, a, "started")) <= {"can_stop"}, events
    assert Counter(counter).lines() == []
    assert {n: p for n, p in c.node_pids().items() if n != outside} == \
        {n: p for n, p in pids.items() if n != outside}
    print(f"gate {c.kind}: {ev}")
