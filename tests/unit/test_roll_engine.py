"""The roll's engine (kadmin/services/roll_engine.py) on a fake cluster (tests/support/fake_roll.py) with real
shell hooks, kadmin's own hook runner and a real journal: the windows of docs/roll.md's promise, and the
crash-window table, each a kill (`Killed`: a SIGKILL of kadmin, nothing catches it) right after a chosen journal
line followed by the same command again.

The promise asserted everywhere: every node restarted exactly once (the fake counts each down -> up), none
journaled done without evidence that it went down and came back, the original preferred leaders back at the end,
and what a stopped roll leaves down or drained named in its journal."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from kadmin import interrupts
from kadmin.domain.roll import Request
from kadmin.errors import ConfigError, KadminError, UsageError
from kadmin.payloads_ops import RollNodeResult
from kadmin.services import roll as svc
from kadmin.services import roll_hooks as hooks
from kadmin.services.roll_engine import Options
from kadmin.services.roll_hooks import Hooks
from kadmin.services.roll_journal import Journal, JournalUnwritable
from tests.support.fake_roll import FakeCluster, Killed, KillingJournal, journal, on

pytestmark = pytest.mark.timeout(120)


class Watching:
    """What a live view hears besides the events: the plan, what each step waits for, the hooks' lines."""

    def __init__(self) -> None:
        self.plans: list[list[tuple[int, str]]] = []
        self.waits: list[tuple[int, str]] = []
        self.hooks: list[tuple[int, str, str]] = []

    def plan(self, nodes: Sequence[RollNodeResult]) -> None:
        self.plans.append([(n.node, n.status) for n in nodes])

    def waiting(self, node: int, text: str) -> None:
        self.waits.append((node, text))

    def hook_started(self, node: int, hook: str, cmd: str) -> None:
        self.hooks.append((node, hook, f"$ {cmd}"))

    def hook_output(self, node: int, hook: str, line: str) -> None:
        self.hooks.append((node, hook, line))


class Roll:
    """`roll run` in-process on a fake cluster: the same directory run after run, each possibly killed."""

    def __init__(self, fc: FakeCluster, d: Path, **opts: Any) -> None:
        self.fc, self.d, self.opts = fc, d, opts
        self.said: list[str] = []
        self.events: list[dict[str, Any]] = []
        self.watching = Watching()

    def options(self, **over: Any) -> Options:
        o = {**self.opts, **over}
        stop = o.pop("stop", self.fc.ops_hook("stop"))
        start = o.pop("start", self.fc.ops_hook("start"))
        restart = o.pop("restart", None)
        if restart is not None:
            stop = start = None
        req = Request(o.pop("nodes", None), "first", o.pop("parallel", 1), o.pop("rule", "distinct"))
        hookset = Hooks(stop, start, restart, o.pop("only_if", None), o.pop("before_node", None),
                        o.pop("after_node", None))
        return Options(req, hookset, o.pop("step_timeout", 5.0), 0.0, tuple(o.pop("allow", ())), None,
                       patience=o.pop("patience", 0.5), unseen_grace=o.pop("grace", 0.5), **o)

    def __call__(self, kill: Callable[[dict[str, Any]], bool] | None = None, **over: Any) -> Any:
        j = KillingJournal(self.d, kill)
        try:
            return svc.run(self.fc, self.d, self.options(**over), self.events.append, self.said.append,
                           sleep=lambda s: time.sleep(min(s, 0.01)), journal=j, watcher=self.watching)
        except Killed:
            j.close()
            return None

    def journal(self) -> list[dict[str, Any]]:
        return journal(self.d)

    def last_failure(self) -> dict[str, Any]:
        return [e for e in self.journal() if e["event"] == "roll_failed"][-1]


def ops(fc: FakeCluster) -> list[tuple[str, int]]:
    fc.sync()
    return list(fc.log)


def each_once(fc: FakeCluster, nodes: Sequence[int]) -> None:
    fc.sync()
    assert {n: fc.restarts[n] for n in nodes} == {n: 1 for n in nodes}, (fc.restarts, fc.log)
    assert all(n.up and not n.fenced for n in fc.nodes.values()), fc.nodes


def zk(tmp_path: Path, brokers: Sequence[int] = (1, 2, 3), **kw: Any) -> FakeCluster:
    fc = FakeCluster.zookeeper(tmp_path / "ops", brokers, **kw)
    return fc.topic("t", *[[b, *[x for x in brokers if x != b][:2]] for b in brokers])


def kraft(tmp_path: Path, **kw: Any) -> FakeCluster:
    fc = FakeCluster.kraft(tmp_path / "ops", **kw)
    brokers = sorted(n.id for n in fc.nodes.values() if n.role != "controller")
    return fc.topic("t", *[[b, *[x for x in brokers if x != b][:2]] for b in brokers])


# ------------------------------------------------------------------------------------------------ the straight path
@pytest.mark.parametrize("mode", ["zookeeper", "kraft"])
@pytest.mark.parametrize("hookset", ["stop_start", "restart"])
def test_a_whole_roll(tmp_path: Path, mode: str, hookset: str) -> None:
    fc = zk(tmp_path) if mode == "zookeeper" else kraft(tmp_path)
    before = fc.preferred()
    r = Roll(fc, tmp_path / "roll", **({"restart": fc.ops_hook("restart")} if hookset == "restart" else {}))
    res = r()
    assert int(res.exit_code) == 0, (res.message, r.said)
    each_once(fc, list(fc.nodes))
    assert fc.preferred() == before
    kinds = [e["event"] for e in r.journal()]
    assert kinds[0] == "roll_started" and kinds[-1] == "roll_done"
    assert kinds.count("seen_stopped") == len(fc.nodes)  # each node's evidence, journaled
    assert r.events == r.journal()  # the NDJSON stream is the journal


# ------------------------------------------------------------------------------------------------ 1: hooks are data
def test_1_a_rack_or_host_with_shell_metacharacters_reaches_the_hook_as_one_argument(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    evil = "x;touch PWNED;$(touch PWNED2)`touch PWNED3`'\"{host}"
    fc = zk(tmp_path, racks={1: evil, 2: "r2", 3: "r3"})
    args = tmp_path / "args"
    # the stop hook records its arguments and environment, one line each, then stops the node
    record = f"printf '%s\\n' {{rack}} \"{{rack}}\" \"$KADMIN_ROLL_RACK\" >> {args}; "
    r = Roll(fc, tmp_path / "roll", nodes=(1,), stop=record + fc.ops_hook("stop"))
    monkeypatch.chdir(tmp_path)
    res = r()
    assert int(res.exit_code) == 0, res.message
    assert args.read_text().splitlines() == [evil, evil, evil]
    assert not list(tmp_path.glob("PWNED*"))


# ----------------------------------------------------------------------------------------- 2: the first drain file
@pytest.mark.parametrize("where", ["drain_started", "drain_sent", "drain_done", "shutdown_started"])
def test_2_a_drain_interrupted_then_resumed_restores_the_original_order(tmp_path: Path, where: str) -> None:
    fc = zk(tmp_path)
    before = fc.preferred()
    r = Roll(fc, tmp_path / "roll", nodes=(1,))
    if where == "drain_sent":  # the reordering sent, kadmin dies before `drain done`
        fc.inject["drain_sent"] = [Killed("after the reordering")]
        assert r() is None
    else:
        step, status = where.rsplit("_", 1)
        assert r(kill=on(1, step, status)) is None
    res = r()
    assert int(res.exit_code) == 0, res.message
    assert fc.preferred() == before  # broker 1 preferred leader again where it was
    each_once(fc, [1])
    undrained = [e for e in r.journal() if on(1, "undrain", "done")(e)]
    assert undrained[-1]["detail"]["drain_file"] == str(tmp_path / "roll" / "drain-1.json")


# ------------------------------------------------------------------------------------------------ 3: controllers
def test_3_a_controller_killed_after_start_started_is_started_at_once(tmp_path: Path) -> None:
    fc = kraft(tmp_path)
    r = Roll(fc, tmp_path / "roll", nodes=(3001,))
    assert r(kill=on(3001, "start", "started")) is None
    assert not fc.nodes[3001].up
    t0 = time.monotonic()
    res = r(step_timeout=60.0)
    assert int(res.exit_code) == 0, res.message
    assert time.monotonic() - t0 < 30  # its start hook never began: run now, not after --step-timeout
    each_once(fc, [3001])


def test_3_a_controller_whose_start_hook_failed_is_started_once_more(tmp_path: Path) -> None:
    fc = kraft(tmp_path)
    r = Roll(fc, tmp_path / "roll", nodes=(3001,))
    res = r(start="exit 3")
    assert int(res.exit_code) == 9 and r.last_failure()["down"] == [3001], res.message
    res = r(step_timeout=1.0)
    assert int(res.exit_code) == 0, res.message
    assert "starting it again" in " ".join(r.said)
    each_once(fc, [3001])


def test_3_a_controller_back_with_another_directory_stops_the_roll_until_its_voter_is_replaced(tmp_path: Path) -> None:
    """Its start hook wipes its metadata log directory (a replaced disk): it comes back as an observer under a new
    directory id, never as the voter it was (KIP-853). The roll stops there, exit 1, `identity_changed`, saying
    what to do; nothing else touched; the same command stops again; once the voter is replaced it goes on."""
    fc = kraft(tmp_path)
    start = f"if [ {{id}} = 3001 ]; then {fc.ops_hook('wipe')}; else {fc.ops_hook('start')}; fi"
    r = Roll(fc, tmp_path / "roll", start=start)
    res = r()
    failure = r.last_failure()
    assert int(res.exit_code) == 1 and (failure["reason"], failure["node"], failure["step"]) == \
        ("identity_changed", 3001, "wait_caught_up"), res.message
    assert "remove-controller --controller-id 3001 --controller-directory-id dir-3001-a" in res.message
    assert "add-controller" in res.message and fc.nodes[3001].directory in res.message
    assert ops(fc) == [("stop", 3001), ("wipe", 3001)]  # nothing else touched
    stop = next(e for e in r.journal() if on(3001, "stop", "started")(e))
    assert stop["detail"] == {"old_directory_id": "dir-3001-a"}  # journaled before the stop
    assert not any(e["event"] == "node_done" for e in r.journal())
    res = r()  # the same command: stops again, runs no hook
    assert int(res.exit_code) == 1 and r.last_failure()["reason"] == "identity_changed", res.message
    assert ops(fc) == [("stop", 3001), ("wipe", 3001)]
    fc.voter_dirs[3001] = fc.nodes[3001].directory  # remove-controller, add-controller
    res = r()
    assert int(res.exit_code) == 0, res.message
    each_once(fc, list(fc.nodes))


@pytest.mark.parametrize("hook", ["restart", "stop"])
def test_3_a_hook_its_dead_kadmin_started_too_late_to_begin_never_runs_after_the_next_run(tmp_path: Path,
                                                                                         hook: str) -> None:
    """The window between journaling a hook `started` and its wrapper's first line: the kadmin that started it dies,
    and the wrapper (in a session of its own) begins only after the next kadmin found no status file and ran the
    hook itself (run 15 of the suite saw a node restarted twice so). The next kadmin takes that attempt over
    first: the late wrapper then runs nothing, and every node is restarted once."""
    fc = zk(tmp_path)
    more = {"restart": fc.ops_hook("restart")} if hook == "restart" else {}
    r = Roll(fc, tmp_path / "roll", nodes=(1,), **more)
    assert r(kill=on(1, hook, "started")) is None  # killed before the wrapper was started
    res = r()
    assert int(res.exit_code) == 0, res.message
    assert f"node 1: its --{hook} hook never began" in " ".join(r.said)
    each_once(fc, [1])
    first = hooks.status_path(tmp_path / "roll", 1, hook, 1)
    assert hooks.read_status(first) == hooks.HookStatus("void", os.getpid())
    late = subprocess.run(["/bin/sh", "-c", hooks.WRAPPER, "kadmin-hook", fc.ops_hook(hook).replace("{id}", "1"),
                           str(first)], capture_output=True, text=True, timeout=60)  # the dead kadmin's wrapper
    assert late.returncode == 125 and "not run" in late.stderr, late
    assert hooks.read_status(first).state == "void"
    each_once(fc, [1])  # not stopped or restarted again


# ------------------------------------------------------------------------------------------------ 4: --restart
@pytest.mark.parametrize("node", [1, 3001])
def test_4_a_restart_hook_that_restarts_nothing_is_never_done(tmp_path: Path, node: int) -> None:
    fc = kraft(tmp_path)
    r = Roll(fc, tmp_path / "roll", nodes=(node,), restart=fc.ops_hook("noop"))
    res = r()
    assert int(res.exit_code) == 1 and r.last_failure()["reason"] == "cannot_tell", res.message
    assert "roll confirm" in res.message
    assert not any(e["event"] == "node_done" for e in r.journal())
    # the error's own advice of before (switch to --stop/--start) does not mark it done either
    res = r(restart=None)
    assert int(res.exit_code) == 1 and not any(e["event"] == "node_done" for e in r.journal()), res.message
    # the operator says it never went down: its restart runs again (its first real one)
    svc.confirm(tmp_path / "roll", node, went_down=False)
    res = r(restart=fc.ops_hook("restart"))
    assert int(res.exit_code) == 0, res.message
    each_once(fc, [node])


def test_4_seen_stopped_is_journaled_so_a_rerun_after_an_interruption_finishes(tmp_path: Path) -> None:
    fc = kraft(tmp_path)
    r = Roll(fc, tmp_path / "roll", nodes=(1,), restart=f"{fc.ops_hook('restart')}; sleep 0.3")
    assert r(kill=lambda e: e["event"] == "seen_stopped") is None  # kadmin dies while the hook runs
    res = r()
    assert int(res.exit_code) == 0, res.message
    each_once(fc, [1])
    assert [o for o in ops(fc) if o[0] == "restart"] == [("restart", 1)]


def test_4_a_restart_hook_that_restarted_the_node_then_failed(tmp_path: Path) -> None:
    fc = kraft(tmp_path)
    r = Roll(fc, tmp_path / "roll", nodes=(1,))
    res = r(restart=f"{fc.ops_hook('restart')}; exit 7")
    assert int(res.exit_code) == 9, res.message
    res = r(restart=fc.ops_hook("restart"))
    assert int(res.exit_code) == 0, res.message
    each_once(fc, [1])  # never restarted a second time: it was seen stopped


def test_4_an_unseen_restart_needs_the_operators_word(tmp_path: Path) -> None:
    fc = kraft(tmp_path)
    r = Roll(fc, tmp_path / "roll", nodes=(1,), restart=fc.ops_hook("bounce"))
    res = r()
    assert int(res.exit_code) == 1 and r.last_failure()["reason"] == "cannot_tell", res.message
    with pytest.raises(UsageError, match="--node 7: not a node"):
        svc.confirm(tmp_path / "roll", 7, went_down=True)
    done = svc.confirm(tmp_path / "roll", 1, went_down=True)
    assert done.data.phase_after == "starting"  # its restart hook ran; the receipt is what is left
    res = r()
    assert int(res.exit_code) == 0, res.message
    each_once(fc, [1])


# ----------------------------------------------------------------------------------------- 5: a stop that restarts
def test_5_a_self_restarting_stop_hook_killed_after_stop_done_is_never_run_again(tmp_path: Path) -> None:
    fc = kraft(tmp_path)
    r = Roll(fc, tmp_path / "roll", nodes=(1,), stop=fc.ops_hook("restart"), start=fc.ops_hook("noop"))
    assert r(kill=on(1, "stop", "done")) is None
    res = r()
    assert int(res.exit_code) == 0, res.message
    each_once(fc, [1])
    assert [o for o in ops(fc) if o[0] == "restart"] == [("restart", 1)]


def test_5_where_the_cluster_cannot_tell_the_roll_stops_and_says_so(tmp_path: Path) -> None:
    fc = kraft(tmp_path)
    r = Roll(fc, tmp_path / "roll", nodes=(1,), stop=fc.ops_hook("bounce"), start=fc.ops_hook("noop"))
    assert r(kill=on(1, "stop", "done")) is None
    for _ in range(2):  # asked again, it says so again: never a second stop
        res = r()
        assert int(res.exit_code) == 1 and r.last_failure()["reason"] == "cannot_tell", res.message
    assert [o for o in ops(fc) if o[0] == "bounce"] == [("bounce", 1)]
    svc.confirm(tmp_path / "roll", 1, went_down=True)
    res = r()
    assert int(res.exit_code) == 0, res.message
    each_once(fc, [1])


# ------------------------------------------------------------------------------------------------ 6: --only-if
def test_6_only_if_is_decided_once_and_never_skips_a_node_past_its_first_change(tmp_path: Path) -> None:
    fc = zk(tmp_path)
    asked = tmp_path / "asked"
    r = Roll(fc, tmp_path / "roll", nodes=(1, 2), only_if=f"echo {{id}} >> {asked}; [ {{id}} = 1 ]")
    assert r(kill=on(1, "shutdown", "done")) is None
    res = r()
    assert int(res.exit_code) == 0, res.message
    assert asked.read_text().split() == ["1", "2"]  # node 1 asked once, not again on resume
    assert fc.restarts[1] == 1 and fc.restarts[2] == 0
    rows = {n.node: n.status for n in res.data.nodes}
    assert rows == {1: "done", 2: "skipped"}
    # the live view hears each --only-if as it begins and its output, as it does the stop and start hooks'
    assert (2, "only-if", f"$ echo 2 >> {asked}; [ 2 = 1 ]") in r.watching.hooks


@pytest.mark.parametrize("code", [2, 127, 255])
def test_6_only_if_exiting_other_than_0_or_1_is_a_failed_hook(tmp_path: Path, code: int) -> None:
    fc = zk(tmp_path)
    r = Roll(fc, tmp_path / "roll", nodes=(1,), only_if=f"exit {code}")
    res = r()
    assert int(res.exit_code) == 9 and fc.restarts[1] == 0, res.message
    assert "0 restarts the node, 1 skips it" in res.message


def test_6_only_if_added_on_resume_does_not_skip_a_drained_node(tmp_path: Path) -> None:
    fc = zk(tmp_path)
    r = Roll(fc, tmp_path / "roll", nodes=(1,))
    assert r(kill=on(1, "drain", "done")) is None
    res = r(only_if="exit 1")
    assert int(res.exit_code) == 0, res.message
    each_once(fc, [1])


# ------------------------------------------------------------------------------------------------ 7, 8: batches
def batch_cluster(tmp_path: Path) -> FakeCluster:
    fc = FakeCluster.zookeeper(tmp_path / "ops", (1, 2, 3, 4), controller=4)
    return fc.topic("a", [1, 3], [3, 1]).topic("b", [2, 4], [4, 2])


def test_7_a_batch_whose_stop_fails_for_one_broker_brings_the_others_back(tmp_path: Path) -> None:
    fc = batch_cluster(tmp_path)
    before = fc.preferred()
    fail2 = f"[ {{id}} = 2 ] && exit 4; {fc.ops_hook('stop')}"
    r = Roll(fc, tmp_path / "roll", parallel=2, nodes=(1, 2))
    res = r(stop=fail2)
    assert int(res.exit_code) == 9, res.message
    fc.sync()
    assert fc.nodes[1].up and fc.restarts[1] == 1  # brought back before the roll stopped
    failed = r.last_failure()
    assert failed["node"] == 2 and failed["drained"] == [2] and "down" not in failed
    assert "left drained: node(s) 2" in res.message
    res = r()
    assert int(res.exit_code) == 0, res.message
    each_once(fc, [1, 2])
    assert fc.preferred() == before


def test_8_start_again_in_a_batch_only_for_the_node_not_back(tmp_path: Path) -> None:
    fc = batch_cluster(tmp_path)
    r = Roll(fc, tmp_path / "roll", parallel=2, nodes=(1, 2))
    res = r(start=f"[ {{id}} = 2 ] && exit 5; {fc.ops_hook('start')}")
    assert int(res.exit_code) == 9 and r.last_failure()["down"] == [2], res.message
    res = r(step_timeout=1.0)
    assert int(res.exit_code) == 0, res.message
    assert [o for o in ops(fc) if o[0] == "start"] == [("start", 1), ("start", 2)]
    each_once(fc, [1, 2])


# ------------------------------------------------------------------------------------------------ 9: placeholders first
@pytest.mark.parametrize(("hook", "err"), [("start", UsageError), ("stop", UsageError)])
def test_9_an_unknown_placeholder_is_found_before_the_first_change(tmp_path: Path, hook: str,
                                                                   err: type[Exception]) -> None:
    fc = zk(tmp_path)
    r = Roll(fc, tmp_path / "roll")
    with pytest.raises(err, match="hots"):
        r(**{hook: "echo {hots}"})
    assert not (tmp_path / "roll" / "journal.ndjson").exists() and ops(fc) == []


def test_9_a_controller_whose_host_is_unknown_is_found_before_the_first_change(tmp_path: Path) -> None:
    fc = kraft(tmp_path)
    real = fc.topology

    def no_controller_host(known: Any = ()) -> Any:
        import dataclasses

        t = real(known)
        return dataclasses.replace(t, nodes=tuple(dataclasses.replace(n, host=None) if n.role == "controller" else n
                                                  for n in t.nodes))

    fc.topology = no_controller_host  # type: ignore[method-assign]
    r = Roll(fc, tmp_path / "roll")
    with pytest.raises(ConfigError, match="host"):
        r(start="ssh {host} start")
    assert ops(fc) == []


# ------------------------------------------------------------------------------------------------ 10, 11: batch rules
def test_10_a_batch_never_holds_two_replicas_of_a_partition(tmp_path: Path) -> None:
    fc = FakeCluster.zookeeper(tmp_path / "ops", (1, 2, 3, 4), controller=4).topic("t", [1, 2, 3], min_isr=1)
    r = Roll(fc, tmp_path / "roll", parallel=2)
    res = r()
    assert int(res.exit_code) == 0, res.message
    batches = [s for s in r.said if "stopping together" in s]
    assert not batches
    down = together(r.journal())
    assert all(len(g & {1, 2, 3}) <= 1 for g in down), down
    # the min-ISR rule, asked for, lets two of the three go at once (min ISR 1)
    fc2 = FakeCluster.zookeeper(tmp_path / "ops2", (1, 2, 3, 4), controller=4).topic("t", [1, 2, 3], min_isr=1)
    r2 = Roll(fc2, tmp_path / "roll2", parallel=2, rule="min-isr")
    assert int(r2().exit_code) == 0
    assert any(len(g & {1, 2, 3}) == 2 for g in together(r2.journal()))


def together(events: list[dict[str, Any]]) -> list[set[int]]:
    """The groups of nodes whose stop hooks were started one after the other (a batch)."""
    groups: list[set[int]] = []
    prev = None
    for i, e in enumerate(events):
        if e["event"] == "step" and e["step"] == "stop" and e["status"] == "started":
            if prev is not None and prev == i - 1:
                groups[-1].add(e["node"])
            else:
                groups.append({e["node"]})
            prev = i
    return groups


def test_11_an_rf1_partition_blocks_until_allowed_then_it_is_named(tmp_path: Path) -> None:
    fc = zk(tmp_path).topic("scratch", [1])
    r = Roll(fc, tmp_path / "roll", nodes=(1,))
    res = r()
    assert int(res.exit_code) == 1 and r.last_failure()["step"] == "can_stop", res.message
    assert fc.restarts[1] == 0
    res = r(allow=("scratch*",))
    assert int(res.exit_code) == 0, res.message
    stop_ok = [e for e in r.journal() if on(1, "can_stop", "done")(e)][-1]
    assert stop_ok["detail"]["unavailable"] == ["scratch-0: would go offline or under min ISR"]
    assert any("scratch-0" in s for s in r.said)
    resumed = [e for e in r.journal() if e["event"] == "roll_resumed"][-1]
    assert resumed["allow_unavailable"] == ["scratch*"]


# ------------------------------------------------------------------------------------------------ 12: exit codes
def test_12_a_refused_preflight_is_7_touches_and_binds_nothing(tmp_path: Path) -> None:
    fc = zk(tmp_path)
    fc.nodes[3].up = False  # an unhealthy cluster: broker 3 down
    fc.parts[0].isr.discard(3)
    r = Roll(fc, tmp_path / "roll")
    res = r()
    assert int(res.exit_code) == 7 and res.data.status == "refused", res.message
    assert not (tmp_path / "roll" / "journal.ndjson").exists()
    fc.nodes[3].up = True
    fc.parts[0].isr.add(3)
    res = r(nodes=(1,))  # asked differently now: no roll_differs, nothing was bound
    assert int(res.exit_code) == 0, res.message


@pytest.mark.parametrize(("method", "code"), [("drain", 1), ("controlled_shutdown", 1), ("undrain", 1)])
def test_12_a_refusal_mid_roll_is_1_never_7_or_6(tmp_path: Path, method: str, code: int) -> None:
    fc = zk(tmp_path)
    real = getattr(fc, method)

    def refuse(*a: Any, **kw: Any) -> str:
        real(*a, **kw) if method == "undrain" else None
        return "refused: a reassignment is in flight" if method != "controlled_shutdown" else "STALE_BROKER_EPOCH"

    setattr(fc, method, refuse)
    r = Roll(fc, tmp_path / "roll", nodes=(1,))
    res = r()
    assert int(res.exit_code) == code and r.last_failure()["exit_code"] == code, res.message


def test_12_an_unreachable_cluster_mid_roll_is_4(tmp_path: Path) -> None:
    from kadmin.errors import ClusterUnreachable

    fc = zk(tmp_path)
    fc.inject["controlled_shutdown"] = [ClusterUnreachable("no broker answered")]
    r = Roll(fc, tmp_path / "roll", nodes=(1,))
    res = r()
    assert int(res.exit_code) == 4 and r.last_failure()["reason"] == "unreachable", res.message


# ----------------------------------------------------------------------------------------- 13: hook output in files
def test_13_the_hooks_output_is_in_files_under_the_state_directory(tmp_path: Path) -> None:
    fc = zk(tmp_path)
    r = Roll(fc, tmp_path / "roll", nodes=(1,), stop=f"echo stopping {{id}}; {fc.ops_hook('stop')}")
    assert int(r().exit_code) == 0
    log = (tmp_path / "roll" / "hooks" / "node-1.stop.log").read_text()
    assert "stopping 1" in log
    # the live view hears each line (it shows the last); nothing of the hook's is said line by line on stderr
    assert (1, "stop", "stopping 1") in r.watching.hooks
    assert (1, "stop", "$ echo stopping 1; " + fc.ops_hook("stop").replace("{id}", "1")) in r.watching.hooks
    assert not any("stopping 1" in s for s in r.said)


def test_13_the_watcher_hears_the_plan_and_what_each_step_waits_for(tmp_path: Path) -> None:
    """Every planned node from the start, as the journal stands (a resumed run: those done already say so), and
    the running step's wait in words, as the cluster answers it."""
    fc = kraft(tmp_path)
    brokers = sorted(n.id for n in fc.nodes.values() if n.role != "controller")[:2]
    r = Roll(fc, tmp_path / "roll", nodes=tuple(brokers))
    assert r(kill=lambda e: e.get("event") == "node_done" and e.get("node") == brokers[0]) is None
    assert r.watching.plans == [[(b, "pending") for b in brokers]]
    assert int(r().exit_code) == 0
    assert r.watching.plans[1] == [(brokers[0], "done"), (brokers[1], "pending")]
    # back registered but fenced for a few looks: the receipt's wait said so, in the cluster's words
    assert (brokers[1], f"broker {brokers[1]} is fenced") in r.watching.waits, r.watching.waits


# ------------------------------------------------------------------------------------------------ 14: SIGTERM, SIGHUP
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_14_sigterm_and_sighup_act_as_ctrl_c(tmp_path: Path, sig: int) -> None:
    """The stop hook itself sends kadmin the signal while it runs (a `timeout`, a dropped ssh session): the hook is
    let end, its outcome journaled, and the roll stops resumably (exit 130), naming the node left stopped."""
    fc = zk(tmp_path)
    name = signal.Signals(sig).name.removeprefix("SIG")
    stop = f"kill -{name} {os.getpid()}; sleep 0.3; {fc.ops_hook('stop')}"
    r = Roll(fc, tmp_path / "roll", nodes=(1,), stop=stop)
    with interrupts.deferring(), interrupts.like_ctrl_c(signal.SIGTERM, signal.SIGHUP):
        res = r()
    assert int(res.exit_code) == 130, res.message
    steps = [(e.get("step"), e.get("status")) for e in r.journal() if e.get("node") == 1]
    assert ("stop", "done") in steps  # the running hook was let end and its outcome journaled
    assert r.last_failure()["reason"] == "interrupted" and r.last_failure()["down"] == [1]
    assert int(r(stop=fc.ops_hook("stop")).exit_code) == 0
    each_once(fc, [1])


# ------------------------------------------------------------------------------------------------ 15: a full disk
def test_15_a_journal_write_that_fails_stops_the_roll_and_leaves_the_journal_readable(
        tmp_path: Path, mocker: Any) -> None:
    fc = zk(tmp_path)
    r = Roll(fc, tmp_path / "roll", nodes=(1,))
    real = os.write
    calls = {"n": 0}

    def short_then_full(fd: int, data: Any) -> int:
        if b'"step":"stop","status":"done"' in bytes(data):
            calls["n"] += 1
            if calls["n"] == 1:
                return real(fd, bytes(data)[:7])  # a short write, then the disk is full
            raise OSError(28, "No space left on device")
        return real(fd, data)

    mocker.patch("kadmin.services.roll_journal.os.write", side_effect=short_then_full)
    with pytest.raises(JournalUnwritable, match="No space left on device"):
        r()
    mocker.stopall()
    assert Journal(tmp_path / "roll").read()  # every line whole: no torn event glued to the next
    assert (tmp_path / "roll" / "journal.ndjson").read_bytes().endswith(b"\n")
    res = r()
    assert int(res.exit_code) == 0, res.message
    each_once(fc, [1])


# ------------------------------------------------------------------------------------------------ 16: two rolls
def test_16_a_second_roll_of_the_cluster_stops_the_first_before_its_next_stop(tmp_path: Path) -> None:
    fc = zk(tmp_path)
    # the other roll stops broker 3 while this one's broker 1 passes its gates
    fc.inject["controlled_shutdown"] = [lambda: fc.down(3)]
    r = Roll(fc, tmp_path / "roll", nodes=(1,))
    res = r()
    assert int(res.exit_code) == 1 and r.last_failure()["step"] == "others_healthy", res.message
    assert fc.restarts[1] == 0 and fc.nodes[1].up and ("stop", 1) not in ops(fc)


# ------------------------------------------------------------------------------------------------ 17: the fetch timeout
def test_17_the_controllers_fetch_timeout_is_read_and_said(tmp_path: Path) -> None:
    fc = kraft(tmp_path)
    fc.fetch_ms = 1750
    r = Roll(fc, tmp_path / "roll", nodes=(3001,))
    assert int(r().exit_code) == 0
    head = r.journal()[0]
    assert (head["fetch_timeout_ms"], head["fetch_timeout_source"]) == (1750, "controller 3001 (fake)")
    assert any("controller.quorum.fetch.timeout.ms = 1750 (controller 3001 (fake))" in s for s in r.said)


# ------------------------------------------------------------------------------------------------ the crash windows
def sweep_cluster(tmp_path: Path, mode: str) -> tuple[FakeCluster, tuple[int, ...], dict[str, Any]]:
    """(the cluster, the nodes rolled, other options) of each kind the crash-window sweep covers."""
    if mode == "zookeeper":
        return zk(tmp_path), (1,), {}
    if mode == "zookeeper-batch":
        return batch_cluster(tmp_path), (1, 2), {"parallel": 2}
    if mode == "kraft-combined":
        fc = FakeCluster.kraft(tmp_path / "ops", brokers=(1, 2), controllers=(), combined=(4, 5, 6))
        return fc.topic("t", [1, 4, 5], [4, 5, 6]), (4,), {}
    if mode.endswith("-node-hooks"):  # --before-node, --after-node and --soak: their steps' windows too
        fc, nodes, more = sweep_cluster(tmp_path, mode.removesuffix("-node-hooks"))
        return fc, nodes, {**more, "before_node": fc.ops_hook("before"), "after_node": fc.ops_hook("after"),
                           "soak": 0.05}
    return kraft(tmp_path), (1, 3001), {}


@pytest.mark.parametrize("mode", ["zookeeper", "kraft", "zookeeper-batch", "kraft-combined",
                                  "zookeeper-node-hooks", "kraft-node-hooks"])
@pytest.mark.parametrize("hookset", ["stop_start", "restart"])
def test_killed_after_any_journal_line_the_same_command_finishes_each_node_restarted_once(
        tmp_path: Path, mode: str, hookset: str) -> None:
    """docs/roll.md's crash-window table, every row: kadmin dies right after each journal line in turn, the same
    command runs again, and the roll finishes with every node restarted exactly once and the preferred leaders
    of before."""
    fc, nodes, more = sweep_cluster(tmp_path / "base", mode)
    restart = {"restart": fc.ops_hook("restart")} if hookset == "restart" else {}
    base = Roll(fc, tmp_path / "base" / "roll", nodes=nodes, **restart, **more)
    assert int(base().exit_code) == 0
    lines = base.journal()
    hook = "restart" if hookset == "restart" else "stop"
    seen_boundaries = set()
    for k in range(1, len(lines) + 1):
        d = tmp_path / f"k{k}"
        fc, _, _ = sweep_cluster(d, mode)
        before = fc.preferred()
        restart = {"restart": fc.ops_hook("restart")} if hookset == "restart" else {}
        r = Roll(fc, d / "roll", nodes=nodes, **restart, **more)
        def kth(e: dict[str, Any], k: int = k, count: list[int] = [0]) -> bool:  # noqa: B006 - one per k
            count[0] += 1
            return count[0] == k

        assert r(kill=kth) is None, f"not killed at line {k}"
        hit = r.journal()[-1]
        seen_boundaries.add(boundary(hit))
        res = r()
        assert int(res.exit_code) == 0, (k, hit, res.message, r.said[-5:])
        each_once(fc, nodes)
        assert fc.preferred() == before, (k, hit)
        stops = [o for o in ops(fc) if o[0] in ("stop", "restart")]
        assert len(stops) == len(nodes), (k, hit, stops)  # never a second stop
    assert len(lines) > 20, lines
    assert seen_boundaries >= {f"step {hook} started", "seen_stopped", f"step {hook} done", "step drain started",
                               "step undrain done", "node_done"}, seen_boundaries


def boundary(e: dict[str, Any]) -> str:
    return e["event"] if e["event"] != "step" else f"step {e['step']} {e['status']}"


def test_the_docs_crash_window_table_names_every_boundary_a_roll_journals() -> None:
    from kadmin.domain import roll as dom

    text = (Path(__file__).resolve().parents[2] / "docs" / "roll.md").read_text()
    table = text.split("## Crash windows", 1)[1].split("\n## ", 1)[0]
    for s in dom.STEPS:
        assert f"`{s.name}`" in table, s.name
    for e in ("seen_stopped", "confirmed", "node_done", "roll_started", "roll_resumed"):
        assert f"`{e}`" in table, e


# ------------------------------------------------------------------------------------------------ more windows
def test_a_stop_hook_that_failed_and_a_broker_still_registered_with_its_epoch_runs_again(tmp_path: Path) -> None:
    fc = zk(tmp_path)
    r = Roll(fc, tmp_path / "roll", nodes=(1,))
    assert int(r(stop="exit 3").exit_code) == 9
    res = r()
    assert int(res.exit_code) == 0, res.message
    each_once(fc, [1])
    started = [e["step"] for e in r.journal() if e["event"] == "step" and e["status"] == "started"]
    assert started.count("can_stop") == 2 and started.count("others_healthy") == 2  # its gates again first


def test_a_stop_hook_an_earlier_run_left_running_is_waited_for(tmp_path: Path) -> None:
    fc = kraft(tmp_path)
    r = Roll(fc, tmp_path / "roll", nodes=(1,), stop=f"sleep 1; {fc.ops_hook('stop')}")

    def die_once_it_began() -> None:
        _wait_began(tmp_path)
        raise Killed("while the stop hook runs")

    # the look just before the hook begins, then kadmin dies at its first look while the hook runs
    fc.inject["observe"] = [lambda: None, die_once_it_began]
    assert r() is None
    res = r()
    assert int(res.exit_code) == 0, res.message
    assert any("still running: waiting for it to end" in s for s in r.said)
    each_once(fc, [1])


def _wait_began(tmp_path: Path) -> bool:
    """Wait until the hook's status file says it began (the kill lands while it runs)."""
    status = tmp_path / "roll" / "hooks" / "node-1.stop.1.status"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if status.exists() and status.read_text().startswith("began"):
            return True
        time.sleep(0.01)
    return True


def test_confirm_refuses_what_contradicts_the_journal(tmp_path: Path) -> None:
    fc = zk(tmp_path)
    r = Roll(fc, tmp_path / "roll", nodes=(1,))
    assert r(kill=on(1, "wait_stopped", "done")) is None
    with pytest.raises(UsageError, match="it did go down"):
        svc.confirm(tmp_path / "roll", 1, went_down=False)
    with pytest.raises(UsageError, match="saw it stopped already"):
        svc.confirm(tmp_path / "roll", 1, went_down=True)
    assert int(r().exit_code) == 0
    with pytest.raises(UsageError, match="finished"):
        svc.confirm(tmp_path / "roll", 1, went_down=True)


def test_a_cluster_read_that_fails_is_asked_again(tmp_path: Path) -> None:
    fc = zk(tmp_path)
    fc.inject["observe"] = [KadminError("a registration could not be read")] * 3
    r = Roll(fc, tmp_path / "roll", nodes=(1,))
    assert int(r().exit_code) == 0
    each_once(fc, [1])


def test_journal_lines_are_json_objects_with_event_and_at(tmp_path: Path) -> None:
    fc = zk(tmp_path)
    r = Roll(fc, tmp_path / "roll", nodes=(1,))
    assert int(r().exit_code) == 0
    for line in (tmp_path / "roll" / "journal.ndjson").read_text().splitlines():
        obj = json.loads(line)
        assert list(obj)[:2] == ["event", "at"]


def test_the_engine_returns_only_the_codes_docs_roll_md_lists() -> None:
    from kadmin.cli import exit_docs
    from kadmin.exit_codes import ExitCode
    from kadmin.services.roll_engine import REASONS

    listed = set(exit_docs.COMMANDS["roll run"]) | {ExitCode.INTERRUPTED}
    assert set(REASONS.values()) <= listed
    assert ExitCode.UNSAFE in listed and REASONS["refused"] == ExitCode.UNSAFE  # 7: before the first node only


def test_a_batch_with_a_node_it_cannot_tell_about_brings_the_others_back_and_stops_no_other(tmp_path: Path) -> None:
    """kadmin dies while a batch's stop hooks run: node 1's fails, node 2's stops it; no kadmin watched either end.
    The next run brings node 2 back (its stop's outcome and its node seen down) and stops at node 1, which is up
    and may or may not have restarted (KRaft): `cannot_tell`, no hook run again, nothing else touched."""
    fc = FakeCluster.kraft(tmp_path / "ops", brokers=(1, 2, 3, 4), controllers=(3001, 3002, 3003))
    fc.topic("a", [1, 3], [3, 1]).topic("b", [2, 4], [4, 2])
    stop = f"sleep 0.3; [ {{id}} = 1 ] && exit 4; {fc.ops_hook('stop')}"
    r = Roll(fc, tmp_path / "roll", parallel=2, nodes=(1, 2), stop=stop)

    def die_once_both_began() -> None:
        for i in (1, 2):
            status = tmp_path / "roll" / "hooks" / f"node-{i}.stop.1.status"
            deadline = time.monotonic() + 10
            while not (status.exists() and status.read_text().startswith("began")) and time.monotonic() < deadline:
                time.sleep(0.01)
        raise Killed("while the stop hooks run")

    fc.inject["observe"] = [lambda: None, die_once_both_began]
    assert r() is None
    for i in (1, 2):  # the orphaned hooks end (node 2 stopped) while no kadmin runs
        st = hooks.wait_ended(tmp_path / "roll" / "hooks" / f"node-{i}.stop.1.status", 10)
        assert st.state == "ended", st
    res = r()
    assert int(res.exit_code) == 1 and r.last_failure()["reason"] == "cannot_tell", res.message
    fc.sync()
    assert fc.nodes[2].up and fc.restarts[2] == 1 and fc.restarts[1] == 0
    assert [o for o in ops(fc) if o[0] == "stop"] == [("stop", 2)]
    assert r.last_failure()["drained"] == [1]


# ------------------------------------------------------------------------------------------------ issue 37
class Trigger(list):  # type: ignore[type-arg]
    """An event list that acts when an event it is given arrives (the NDJSON stream, as a test sees it)."""

    def __init__(self, *pairs: tuple[Callable[[dict[str, Any]], bool], Callable[[], None]]) -> None:
        super().__init__()
        self.pairs = list(pairs)

    def append(self, e: Any) -> None:
        super().append(e)
        for when, do in list(self.pairs):
            if when(e):
                self.pairs.remove((when, do))
                do()


def is_(kind: str, node: int | None = None, step: str | None = None, status: str | None = None
        ) -> Callable[[dict[str, Any]], bool]:
    return lambda e: e["event"] == kind and (node is None or e.get("node") == node) \
        and (step is None or e.get("step") == step) and (status is None or e.get("status") == status)


def bounce(fc: FakeCluster, nid: int) -> Callable[[], None]:
    """What a supervisor does to a crashing node: it goes, and comes back (a new registration)."""
    return lambda: (fc.down(nid), fc.up(nid))


@pytest.mark.parametrize("mode", ["zookeeper", "kraft"])
def test_soak_a_node_that_restarts_after_it_came_back_stops_the_roll_and_nothing_else_is_touched(
        tmp_path: Path, mode: str) -> None:
    fc = zk(tmp_path) if mode == "zookeeper" else kraft(tmp_path)
    r = Roll(fc, tmp_path / "roll", nodes=(1, 2), soak=20.0)
    # the soak's first look sees it up; before its second one, it crashes and its supervisor starts it again
    r.events = Trigger((is_("step", 1, "soak", "started"),
                        lambda: fc.inject.__setitem__("observe", [lambda: None, bounce(fc, 1)])))
    res = r()
    assert int(res.exit_code) == 1, res.message
    failed = r.last_failure()
    assert (failed["reason"], failed["node"], failed["step"]) == ("crash_loop", 1, "soak")
    assert "crash-looping" in failed["message"] and "No other node was touched" in failed["message"]
    assert [o for o in ops(fc) if o[1] == 2] == [] and fc.restarts[2] == 0
    assert r.events[-1]["event"] == "roll_failed" and r.events[-1]["reason"] == "crash_loop"


@pytest.mark.parametrize("mode", ["zookeeper", "kraft"])
def test_soak_a_node_that_stays_up_is_soaked_the_whole_time_then_the_next(tmp_path: Path, mode: str) -> None:
    fc = zk(tmp_path) if mode == "zookeeper" else kraft(tmp_path)
    r = Roll(fc, tmp_path / "roll", nodes=(1, 2), soak=0.3)
    res = r()
    assert int(res.exit_code) == 0, res.message
    each_once(fc, [1, 2])
    soaked = [e for e in r.journal() if e["event"] == "step" and e["step"] == "soak" and e["status"] == "done"]
    assert [e["node"] for e in soaked] == [1, 2]
    assert all(e["detail"]["soaked_s"] >= 0.3 and e["elapsed_s"] >= 0.3 for e in soaked)
    steps = [e["step"] for e in r.journal() if e["event"] == "step" and e["node"] == 1 and e["status"] == "done"]
    assert steps.index("wait_healthy") < steps.index("soak") < steps.index("settle")


def test_soak_killed_during_it_soaks_again_and_never_restarts_the_node_twice(tmp_path: Path) -> None:
    fc = zk(tmp_path)
    r = Roll(fc, tmp_path / "roll", nodes=(1,), soak=0.2)
    assert r(kill=on(1, "soak", "started")) is None
    res = r()
    assert int(res.exit_code) == 0, res.message
    each_once(fc, [1])
    soak = [e["status"] for e in r.journal() if e["event"] == "step" and e["step"] == "soak"]
    assert soak == ["started", "started", "done"]


def test_pause_after_1_holds_the_next_node_until_roll_continue(tmp_path: Path) -> None:
    from kadmin.services import roll as roll_svc

    fc = zk(tmp_path)
    d = tmp_path / "roll"
    seen: dict[str, Any] = {}

    def on_pause() -> None:  # while paused: nothing of node 2 journaled, the marker there, then `roll continue`
        seen["node2"] = [e for e in journal(d) if e.get("node") == 2]
        seen["marker"] = (d / "pause").exists()
        seen["continue"] = roll_svc.pause(d, False)

    r = Roll(fc, d, nodes=(1, 2), pause_after=1)
    r.events = Trigger((is_("paused"), on_pause))
    res = r()
    assert int(res.exit_code) == 0, res.message
    each_once(fc, [1, 2])
    assert seen["node2"] == [] and seen["marker"] and seen["continue"].data.changed
    kinds = [(e["event"], e.get("node")) for e in r.journal() if e["event"] in ("node_done", "paused", "continued")]
    assert kinds == [("node_done", 1), ("paused", None), ("continued", None), ("node_done", 2)]
    paused = next(e for e in r.journal() if e["event"] == "paused")
    assert (paused["by"], paused["done"]) == ("--pause-after", [1])


def test_roll_pause_while_running_holds_the_next_node_and_ctrl_c_while_paused_is_130_and_resumable(
        tmp_path: Path) -> None:
    from kadmin.services import roll as roll_svc

    fc = zk(tmp_path)
    d = tmp_path / "roll"
    r = Roll(fc, d, nodes=(1, 2, 3))

    def ctrl_c() -> None:
        raise KeyboardInterrupt

    r.events = Trigger((is_("node_done", 1), lambda: roll_svc.pause(d, True)), (is_("paused"), ctrl_c))
    res = r()
    assert int(res.exit_code) == 130, res.message
    assert fc.restarts[2] == 0 and (d / "pause").exists()
    assert next(e for e in r.journal() if e["event"] == "paused")["by"] == "roll pause"
    # run again: still paused (no second `paused` line); `roll continue` lets it finish
    r.said = Trigger((lambda s: "paused (roll pause)" in s, lambda: roll_svc.pause(d, False)))  # type: ignore[arg-type]
    res = r()
    assert int(res.exit_code) == 0, res.message
    each_once(fc, [1, 2, 3])
    assert [e["event"] for e in r.journal()].count("paused") == 1
    assert roll_svc.status(d).data.status == "done"


def test_roll_pause_during_the_last_node_ends_the_roll_and_leaves_no_pause_behind(tmp_path: Path) -> None:
    from kadmin.services import roll as roll_svc

    fc = zk(tmp_path)
    d = tmp_path / "roll"
    r = Roll(fc, d, nodes=(1,))
    r.events = Trigger((is_("step", 1), lambda: roll_svc.pause(d, True)))
    res = r()
    assert int(res.exit_code) == 0, res.message
    each_once(fc, [1])
    assert not (d / "pause").exists()  # a later roll in DIR is not held by it
    assert "paused" not in [e["event"] for e in r.journal()]
    assert any("came after the last node or batch had begun" in line for line in r.said), r.said


def test_roll_pause_and_continue_refuse_a_directory_without_a_roll(tmp_path: Path) -> None:
    from kadmin.errors import UsageError
    from kadmin.services import roll as roll_svc

    with pytest.raises(UsageError, match="no roll there"):
        roll_svc.pause(tmp_path, True)


def test_before_and_after_node_hooks_run_in_order_around_each_node(tmp_path: Path) -> None:
    fc = zk(tmp_path)
    r = Roll(fc, tmp_path / "roll", nodes=(1, 2), before_node=fc.ops_hook("before"), after_node=fc.ops_hook("after"),
             soak=0.1)
    res = r()
    assert int(res.exit_code) == 0, res.message
    assert ops(fc) == [("before", 1), ("stop", 1), ("start", 1), ("after", 1),
                       ("before", 2), ("stop", 2), ("start", 2), ("after", 2)]
    steps = [e["step"] for e in r.journal() if e["event"] == "step" and e["node"] == 1 and e["status"] == "done"]
    assert steps.index("can_stop") < steps.index("before_node") < steps.index("drain")
    assert steps.index("wait_healthy") < steps.index("soak") < steps.index("after_node") < steps.index("settle")
    assert (tmp_path / "roll" / "hooks" / "node-1.before_node.log").exists()


def test_a_failing_before_node_hook_stops_the_roll_with_the_node_untouched(tmp_path: Path) -> None:
    fc = zk(tmp_path)
    r = Roll(fc, tmp_path / "roll", nodes=(1, 2), before_node="exit 3")
    res = r()
    assert int(res.exit_code) == 9, res.message
    failed = r.last_failure()
    assert (failed["reason"], failed["node"], failed["step"]) == ("hook_failed", 1, "before_node")
    assert not failed.get("down") and not failed.get("drained")
    assert ops(fc) == [] and not any(e.get("step") == "drain" for e in r.journal())


def test_a_failing_after_node_hook_stops_after_that_node_and_a_rerun_runs_it_again_then_goes_on(
        tmp_path: Path) -> None:
    fc = zk(tmp_path)
    flag = tmp_path / "fail"
    flag.write_text("")
    after = f"[ ! -e {flag} ] && " + fc.ops_hook("after")
    r = Roll(fc, tmp_path / "roll", nodes=(1, 2), after_node=after)
    res = r()
    assert int(res.exit_code) == 9 and r.last_failure()["step"] == "after_node", res.message
    assert fc.restarts[1] == 1 and fc.restarts[2] == 0
    flag.unlink()
    res = r()
    assert int(res.exit_code) == 0, res.message
    each_once(fc, [1, 2])
    assert [o for o in ops(fc) if o[0] == "after"] == [("after", 1), ("after", 2)]


def test_until_stops_before_the_next_node_with_exit_10_and_a_rerun_without_it_finishes(
        tmp_path: Path, mocker: Any) -> None:
    from kadmin.services import roll as roll_svc

    fc = zk(tmp_path)
    now = [1000.0]
    mocker.patch("kadmin.services.roll_engine.wall", lambda: now[0])
    r = Roll(fc, tmp_path / "roll", nodes=(1, 2, 3), until=1500.0)
    r.events = Trigger((is_("node_done", 1), lambda: now.__setitem__(0, 2000.0)))
    res = r()
    assert int(res.exit_code) == 10, res.message
    failed = r.last_failure()
    assert failed["reason"] == "window_closed" and failed["exit_code"] == 10
    assert "node 2" in failed["message"] and not failed.get("down") and not failed.get("drained")
    assert fc.restarts[1] == 1 and fc.restarts[2] == 0
    assert roll_svc.status(tmp_path / "roll").data.status == "window_closed"
    res = r(until=None)
    assert int(res.exit_code) == 0, res.message
    each_once(fc, [1, 2, 3])


def test_gate_waiting_names_the_partitions_and_the_broker_outside_the_roll_then_goes_on(tmp_path: Path) -> None:
    fc = FakeCluster.zookeeper(tmp_path / "ops", (1, 2, 3)).topic("t", [1, 2, 3], [2, 3, 1], min_isr=2)
    r = Roll(fc, tmp_path / "roll", nodes=(1, 2), patience=20.0)
    r.events = Trigger((is_("node_done", 1), lambda: fc.down(3)), (is_("gate_waiting"), lambda: fc.up(3)))
    res = r()
    assert int(res.exit_code) == 0, res.message
    waiting = [e for e in r.events if e["event"] == "gate_waiting"]
    assert len(waiting) == 1, waiting  # once: again only when what holds it changes
    w = waiting[0]
    assert (w["node"], w["role"], w["step"]) == (2, "broker", "can_stop")
    assert {(b["topic"], b["partition"]) for b in w["blockers"]} == {("t", 0), ("t", 1)}
    assert "broker 3" in w["cause"]
    assert not any(e["event"] == "gate_waiting" for e in r.journal())  # the stream's, never the journal's


def test_soak_catches_a_restart_between_the_receipt_and_the_soak(tmp_path: Path) -> None:
    """ZooKeeper mode: the soak holds a broker to the registration its receipt saw, so a supervisor's restart
    while the roll waited for the ISR (before the soak's first look) is caught too."""
    fc = zk(tmp_path)
    r = Roll(fc, tmp_path / "roll", nodes=(1, 2), soak=5.0)
    r.events = Trigger((is_("step", 1, "wait_in_sync", "started"), bounce(fc, 1)))
    res = r()
    assert int(res.exit_code) == 1 and r.last_failure()["reason"] == "crash_loop", res.message
    assert "registered again" in r.last_failure()["message"] and fc.restarts[2] == 0
