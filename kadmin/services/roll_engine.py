"""The roll's engine: the batches one after the other, each node through the table of steps
(kadmin/domain/roll.py STEPS), every step journaled before the roll goes on (kadmin/services/roll_journal.py).

The promise (docs/roll.md): no node restarted twice; none journaled done without evidence that it went down
(`seen_stopped`, or a new broker epoch) and came back; nothing left drained or down without saying so. For each
boundary between two journal lines, docs/roll.md's crash-window table says what the boundary leaves and what the
same command does when run again; tests/unit/test_roll_engine.py holds each row to it on a fake cluster.

Where the journal stops short, three sources finish the story, in this order:
- the hooks' status files (DIR/hooks, kadmin/services/roll_hooks.py): whether an earlier run's hook began, is
  still running, or ended and how, even if no kadmin watched it;
- what the cluster shows now (the `RollCluster` port, kadmin/services/roll_cluster.py);
- the operator, where neither can tell (`kadmin roll confirm`): the roll stops and says so, it never guesses.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

from kadmin import interrupts
from kadmin.domain import partitions as prules
from kadmin.domain import roll as dom
from kadmin.domain import roll_events as ev
from kadmin.domain.roll import STEP, RollNode
from kadmin.domain.roll_events import NodeProgress, RollState
from kadmin.errors import ClusterUnreachable, ConfigError, KadminError, UsageError
from kadmin.exit_codes import ExitCode
from kadmin.payloads_ops import RollFailure, RollNodeResult, RollReport
from kadmin.results import Result
from kadmin.services import roll_hooks as hooks
from kadmin.services.roll_cluster import RollCluster
from kadmin.services.roll_hooks import Hooks
from kadmin.services.roll_journal import Journal, JournalUnwritable, now_iso
from kadmin.services.roll_report import down_and_drained, report

T = TypeVar("T")
Emit = Callable[[dict[str, Any]], None]
POLL = 0.1  # s: how often a wait looks again (the gate latency goal: act within 0.5 s of the fact)
POLL_MAX = 0.25  # s: a read of the registrations costs ~5 ms; the receipt is seen within a quarter second
GATE_PATIENCE = 30.0  # s: how long a gate before the stop may take to be met (a passing flap does not fail a roll)
# s: a node whose stop (or restart) hook ended while no kadmin was watching, or that kadmin watched and never
# saw go, is looked at this long for a sign it went down before the roll says it cannot tell
UNSEEN_GRACE = 30.0
WATCH_GAP = 1.0  # s: a hook is "watched" when no two looks at its node while it ran were further apart
INTERRUPTED = "interrupted (Ctrl-C, SIGTERM or SIGHUP)"

# reason -> exit code: the only codes a roll returns once it began (docs/roll.md, "Exit codes")
REASONS: dict[str, ExitCode] = {
    "gate_not_met": ExitCode.CONDITION_NOT_MET,
    "cannot_tell": ExitCode.CONDITION_NOT_MET,
    "error": ExitCode.CONDITION_NOT_MET,
    "unreachable": ExitCode.UNREACHABLE,
    "hook_failed": ExitCode.HOOK_FAILED,
    "refused": ExitCode.UNSAFE,
    "identity_changed": ExitCode.CONDITION_NOT_MET,
    "interrupted": ExitCode.INTERRUPTED,
    "crash_loop": ExitCode.CONDITION_NOT_MET,
    "window_closed": ExitCode.WINDOW_CLOSED,
}
PAUSE_FILE = "pause"  # DIR/pause: `roll pause` writes it, `roll continue` removes it
SOAK_GAP = 5.0  # s: a soak's looks at its nodes are never further apart than this, else its time starts over


def wall() -> float:
    """The wall clock --until is read against (one place: a test sets it)."""
    return time.time()


class StepFailed(Exception):
    def __init__(self, reason: str, message: str, node: int | None = None, step: str | None = None) -> None:
        super().__init__(message)
        self.reason, self.message, self.node, self.step = reason, message, node, step
        self.exit_code = int(REASONS[reason])


@dataclass(frozen=True)
class Options:
    request: dom.Request
    hooks: Hooks
    step_timeout: float = 600.0
    settle: float = 0.0
    allow_unavailable: tuple[str, ...] = ()
    fetch_timeout_ms: int | None = None  # None: read from the controllers (RollCluster.fetch_timeout)
    patience: float = GATE_PATIENCE  # how long a gate before the stop (and the health before the first) is asked
    unseen_grace: float = UNSEEN_GRACE
    soak: float = 0.0  # --soak: s each node (or batch) must stay up once healthy before the next
    pause_after: int | None = None  # --pause-after: pause by itself once this many nodes are done (a canary)
    until: float | None = None  # --until: no node or batch starts after this wall-clock time (time.time())

    @property
    def asked(self) -> frozenset[str]:
        """The optional steps this roll takes (kadmin/domain/roll.py `applies`)."""
        return self.hooks.asked() | ({"soak"} if self.soak > 0 else frozenset())

    @property
    def allow(self) -> prules.TopicFilter | None:
        return prules.TopicFilter(self.allow_unavailable) if self.allow_unavailable else None


def select(t: dom.Topology, req: dom.Request) -> tuple[RollNode, ...]:
    """The nodes the request names, checked: an unknown id in --nodes is a usage error."""
    if req.nodes is not None:
        unknown = sorted(set(req.nodes) - {n.id for n in t.nodes})
        if unknown:
            raise UsageError(f"--nodes: {', '.join(map(str, unknown))}: no such node (the cluster has "
                             f"{', '.join(str(n.id) for n in t.nodes)})")
    return dom.chosen(t, req.nodes, req.controllers)


class Watcher(Protocol):
    """Who shows the roll as it goes (the live view, kadmin/render/roll_progress.py): what the journal's events
    do not carry. Nothing here is journaled; the roll goes on whatever the watcher does with it."""

    def plan(self, nodes: Sequence[RollNodeResult]) -> None:
        """Every planned node, as the journal stands when the run begins (pending, done, skipped...)."""

    def waiting(self, node: int, text: str) -> None:
        """What `node`'s running step waits for now, in words."""

    def hook_started(self, node: int, hook: str, cmd: str) -> None:
        """`node`'s `hook` (stop, start, restart, only-if) begins: `cmd` as rendered."""

    def hook_output(self, node: int, hook: str, line: str) -> None:
        """A line `node`'s running hook wrote (the whole output is in DIR/hooks)."""


class Unwatched:
    """No one watches: a roll run from code or a test."""

    def plan(self, nodes: Sequence[RollNodeResult]) -> None:
        pass

    def waiting(self, node: int, text: str) -> None:
        pass

    def hook_started(self, node: int, hook: str, cmd: str) -> None:
        pass

    def hook_output(self, node: int, hook: str, line: str) -> None:
        pass


class Roller:
    """One `roll run` on one state directory (locked by the caller)."""

    def __init__(self, cluster: RollCluster, journal: Journal, opts: Options, emit: Emit,
                 say: Callable[[str], None], clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep, watcher: Watcher | None = None) -> None:
        self.c, self.journal, self.opts = cluster, journal, opts
        self.emit_out, self.say, self.clock, self.sleep = emit, say, clock, sleep
        self.watcher: Watcher = watcher or Unwatched()
        self.began = clock()
        self.state = RollState()
        self.traits = dom.Traits("epoch", False, False)
        self.fetch_ms = dom.DEFAULT_FETCH_TIMEOUT_MS

    # ---------------------------------------------------------------- the journal
    def event(self, e: ev.Event) -> None:
        self.journal.append(e)  # fsynced before anything goes on
        self.state.apply(e)
        self.emit_out(ev.to_json(e))

    def step_event(self, n: RollNode, step: str, status: str, elapsed: float = 0.0,
                   detail: Mapping[str, Any] | None = None, message: str | None = None) -> None:
        self.event(ev.StepEvent(now_iso(), n.id, n.role, step, status, round(elapsed, 3), dict(detail or {}),
                                message))

    def progress(self, n: RollNode) -> NodeProgress:
        return self.state.progress(n.id)

    # ---------------------------------------------------------------- asking the cluster
    def ask(self, what: Callable[[], T], until: float) -> T:
        """`what()`, asked again on a fresh connection while the cluster does not answer (the broker asked may
        be the one restarting), until `until` (then its last error)."""
        pause = POLL
        while True:
            try:
                return what()
            except ClusterUnreachable:
                self.c.reopen()
                if self.clock() + pause >= until:
                    raise
                self.sleep(pause)
                pause = min(pause * 2, POLL_MAX)

    def until(self, patience: float | None = None) -> float:
        t = self.opts.step_timeout if patience is None else min(patience, self.opts.step_timeout)
        return self.clock() + t

    def poll(self, check: Callable[[], str | dom.Held | None], until: float, what: str,
             reason: str = "gate_not_met", n: RollNode | None = None, step: str | None = None) -> None:
        """Ask `check` (None: met; else what is missing now, or what holds it: dom.Held) until it is met or `until`
        passes (then `reason`, saying what it waited for and what it saw last). What the cluster does not answer
        is asked again. While a gate is held, a `gate_waiting` event names what holds it, again as that changes."""
        pause = POLL
        window = round(until - self.clock())
        said: tuple[Any, ...] | None = None
        while True:
            try:
                got = check()
            except KadminError as e:
                self.c.reopen()
                got = e.message
            if got is None:
                return
            missing = got.text if isinstance(got, dom.Held) else got
            if n is not None and step is not None and STEP[step].again:  # a gate (not a wait for the node)
                held = got if isinstance(got, dom.Held) else dom.Held(got)
                if (held.blockers, held.cause) != said:
                    said = (held.blockers, held.cause)
                    self.emit_out(ev.to_json(ev.GateWaiting(now_iso(), n.id, n.role, step, held.why,
                                                            [b.to_json() for b in held.blockers], held.cause)))
            if n is not None:
                self.watcher.waiting(n.id, missing)
            if self.clock() + pause >= until:
                raise StepFailed(reason, f"{what}: not met within {window:g} s: {missing}", None if n is None else n.id,
                                 step)
            self.sleep(pause)
            pause = min(pause * 1.5, POLL_MAX)

    # ---------------------------------------------------------------- the roll
    def go(self) -> Result[RollReport]:
        self.state = ev.replay(self.journal.read())
        try:
            self.traits = self.ask(self.c.traits, self.until())
            if self.state.head is None:
                return self.begin()
            return self.resume()
        except KadminError as e:  # before the roll goes on (the loop names its own): only the codes it documents
            if int(e.exit_code) in (ExitCode.PARTIAL, ExitCode.REJECTED, ExitCode.UNSUPPORTED):
                raise ConfigError(f"this cluster cannot serve a roll: {e.message}", code=e.code) from e
            raise
        finally:
            self.c.close()

    def read_fetch_timeout(self) -> tuple[int, str]:
        if self.opts.fetch_timeout_ms is not None:
            return self.opts.fetch_timeout_ms, "--fetch-timeout-ms"
        if not self.traits.quorum_nodes:
            return dom.DEFAULT_FETCH_TIMEOUT_MS, "not used: the quorum's voters are no nodes of the roll"
        got = self.ask(self.c.fetch_timeout, self.until())
        if got.value is None:
            return dom.DEFAULT_FETCH_TIMEOUT_MS, f"Kafka's default: {got.source}"
        return got.value, got.source

    def begin(self) -> Result[RollReport]:
        """A new roll: everything checked before the first line is journaled (a refusal binds nothing)."""
        req = self.opts.request
        t = self.ask(self.c.topology, self.until())
        nodes = dom.order(t, select(t, req))
        if not nodes:
            raise UsageError("no node to restart (--nodes and --controllers leave none)")
        hooks.render_all(self.opts.hooks, nodes)
        cluster_id = self.ask(self.c.cluster_id, self.until())
        self.fetch_ms, source = self.read_fetch_timeout()
        refused = self.preflight()
        if refused is not None:
            return refused
        self.event(ev.RollStarted(now_iso(), ev.JOURNAL_VERSION, cluster_id, t.mode, None if req.nodes is None
                                  else list(req.nodes), req.controllers, req.parallel, nodes, [n.id for n in nodes],
                                  self.opts.step_timeout, os.getpid(), req.batch_rule,
                                  list(self.opts.allow_unavailable), self.fetch_ms, source))
        self.watcher.plan(report(self.state, self.journal.dir).nodes)
        self.say(f"{t.mode} cluster {cluster_id}: {len(nodes)} node(s) to restart, in this order (recomputed before "
                 f"each: the leader moves): {', '.join(f'{n.id} ({n.role})' for n in nodes)}")
        self.say_settings(source)
        return self.loop()

    def resume(self) -> Result[RollReport]:
        head = self.state.head
        assert head is not None
        cluster_id = self.ask(self.c.cluster_id, self.until())
        if head.cluster_id != cluster_id:
            raise ConfigError(f"--state {self.journal.dir} holds a roll of cluster {head.cluster_id}, and this is "
                              f"cluster {cluster_id}: give another --state directory", code="other_cluster")
        if self.state.finished is not None:
            data = report(self.state, self.journal.dir)
            return Result(data=data, message=f"the roll in {self.journal.dir} finished at {data.finished_at}: "
                          "nothing to do (give another --state directory for a new roll)")
        diff = dom.differences(ev.to_json(head), self.opts.request)
        if diff:
            raise ConfigError(f"--state {self.journal.dir} holds an unfinished roll asked differently: "
                              + "; ".join(diff) + ": run it as it was asked, or give another --state directory",
                              code="roll_differs")
        hooks.render_all(self.opts.hooks, head.nodes)
        self.fetch_ms, source = self.read_fetch_timeout()
        if not any(np.started for np in self.state.nodes.values()):
            refused = self.preflight()
            if refused is not None:
                return refused
        self.event(ev.RollResumed(now_iso(), os.getpid(), list(self.opts.allow_unavailable), self.fetch_ms, source))
        self.watcher.plan(report(self.state, self.journal.dir).nodes)
        self.say_settings(source)
        return self.loop()

    def say_settings(self, source: str) -> None:
        if self.traits.quorum_nodes:
            self.say(f"controller.quorum.fetch.timeout.ms = {self.fetch_ms} ({source})")
        if self.opts.allow_unavailable:
            self.say("--allow-unavailable: partitions of topics " + ", ".join(self.opts.allow_unavailable)
                     + " may go offline or under min ISR while their broker restarts")

    def preflight(self) -> Result[RollReport] | None:
        """The cluster is healthy before the first node, else a refusal (exit 7, nothing touched, nothing
        journaled). Asked again for up to PREFLIGHT_PATIENCE: a quorum lag warning on a busy machine passes."""
        until = self.until(self.opts.patience)
        pause = POLL
        while True:
            why = self.ask(lambda: self.c.unhealthy(self.fetch_ms), until)
            if not why:
                return None
            if self.clock() + pause >= until:
                msg = "refused to begin: the cluster is not healthy: " + "; ".join(why)
                data = report(self.state, self.journal.dir, RollFailure(None, None, "refused", msg, 7))
                return Result(data=data, exit_code=ExitCode.UNSAFE, message=f"{msg}; nothing was touched")
            self.sleep(pause)
            pause = min(pause * 2, POLL_MAX)

    def loop(self) -> Result[RollReport]:
        try:
            while True:
                batch = self.next_batch()
                if not batch:
                    break
                if all(self.progress(n).phase == "untouched" for n in batch) and self.hold(batch):
                    continue  # paused, and continued: the next batch is computed again (the cluster moved)
                Batch(self, batch).run()
                self.c.reopen()  # a fresh connection for the next batch
        except JournalUnwritable:
            raise
        except StepFailed as e:
            return self.stopped(e)
        except KeyboardInterrupt:
            return self.stopped(StepFailed("interrupted", INTERRUPTED))
        except KadminError as e:
            if interrupts.interrupted():  # a Ctrl-C a library swallowed (kadmin.interrupts.interrupted)
                return self.stopped(StepFailed("interrupted", INTERRUPTED))
            reason = "unreachable" if int(e.exit_code) == ExitCode.UNREACHABLE else "error"
            return self.stopped(StepFailed(reason, e.message))
        self.event(ev.RollDone(now_iso(), round(self.clock() - self.began, 3)))
        late = self.journal.dir / PAUSE_FILE
        if late.exists():  # else it would hold the next roll in DIR, and `roll continue` refuses a finished one
            late.unlink(missing_ok=True)
            self.say("a `roll pause` came after the last node or batch had begun: nothing was left to hold "
                     "(its pause file is removed)")
        data = report(self.state, self.journal.dir)
        skipped = [r.node for r in data.nodes if r.status == "skipped"]
        return Result(data=data, message=f"rolled {sum(1 for r in data.nodes if r.status == 'done')} node(s)"
                      + (f"; skipped (--only-if): {', '.join(map(str, skipped))}" if skipped else ""))

    # ---------------------------------------------------------------- the window and the pauses
    def hold(self, batch: Sequence[RollNode]) -> bool:
        """Before a new node or batch: stop when --until has passed; pause (`roll pause`, or --pause-after N once N
        nodes are done) until `roll continue`. True when it paused (then continued)."""
        self.window(batch)
        marker = self.journal.dir / PAUSE_FILE
        done = [i for i, np in sorted(self.state.nodes.items()) if np.finished and not np.skipped]
        after = self.opts.pause_after
        if after is not None and not self.state.paused_after and self.state.paused is None and len(done) >= after:
            marker.write_text(f"paused by --pause-after {after} at {now_iso()}\n")
            self.event(ev.Paused(now_iso(), "--pause-after", done))
        if not marker.exists():
            if self.state.paused is not None:  # continued while no kadmin watched
                self.event(ev.Continued(now_iso(), 0.0))
            return False
        if self.state.paused is None:
            self.event(ev.Paused(now_iso(), "roll pause", done))
        paused = self.state.paused
        assert paused is not None
        self.say(f"paused ({paused.by}) after {len(done)} node(s) done: no node starts until `kadmin roll continue "
                 f"--state {self.journal.dir}` (Ctrl-C stops here: run the same command again, still paused)")
        began = self.clock()
        while marker.exists():
            self.window(batch)  # a window can close while paused
            self.sleep(POLL_MAX)
        self.event(ev.Continued(now_iso(), round(self.clock() - began, 3)))
        self.say("continued")
        return True

    def window(self, batch: Sequence[RollNode]) -> None:
        until = self.opts.until
        if until is not None and wall() >= until:
            when = time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(until))
            raise StepFailed("window_closed", f"--until {when} has passed: no node starts after it (next: "
                             f"{', '.join(f'node {n.id}' for n in batch)}); run the same command again without "
                             "--until, or with a new window, to continue")

    def stopped(self, e: StepFailed) -> Result[RollReport]:
        down, drained = down_and_drained(self.state)
        msg = e.message
        if down:
            msg += f"; left stopped (or possibly stopped): node(s) {', '.join(map(str, down))}"
        if drained:
            msg += f"; left drained: node(s) {', '.join(map(str, drained))}"
        self.event(ev.RollFailed(now_iso(), e.node, e.step, e.reason, msg, e.exit_code, down, drained))
        failure = RollFailure(e.node, e.step, e.reason, msg, e.exit_code, tuple(down), tuple(drained))
        data = report(self.state, self.journal.dir, failure)
        return Result(data=data, exit_code=ExitCode(e.exit_code),
                      message=f"{msg}; run the same command again to continue")

    def next_batch(self) -> tuple[RollNode, ...]:
        head = self.state.head
        assert head is not None
        planned = list(head.nodes)
        left = [n for n in planned if self.state.progress(n.id).phase not in ("done", "skipped")]
        if not left:
            return ()
        busy = [n for n in left if self.state.progress(n.id).phase != "untouched"]
        if busy:  # a node (or batch) an earlier run left part-way: finish it first, as it was
            return tuple(busy[:1]) if busy[0].is_controller else tuple(b for b in busy if not b.is_controller)
        until = self.until()
        t = self.ask(lambda: self.c.topology(planned), until)
        ordered = dom.order(t, [t.node(n.id) or n for n in left])  # the order now: the leader moves
        if self.opts.request.parallel <= 1 or ordered[0].is_controller:
            return ordered[:1]
        safe = self.ask(lambda: self.c.safe_together(self.opts.request.batch_rule, self.opts.allow), until)
        return dom.next_batch(ordered, self.opts.request.parallel, safe, t.leading_broker)


@dataclass
class Watch:
    """What kadmin saw of one node while its stop or restart hook ran: `watched` while no two looks were more than
    WATCH_GAP apart from the hook's start to after its end."""

    last: float
    watched: bool = True
    errors: list[str] = field(default_factory=list)


class Batch:
    """One batch through the table of steps: the gates of every node before any is drained, one drain, the stop
    hooks at once (kadmin watching the nodes), each stop seen, the start hooks at once, each receipt, the way
    back. A node whose stop fails and that is still up leaves the batch (drained: said); the others, and any node
    seen stopped, are brought back before the roll stops."""

    def __init__(self, r: Roller, nodes: Sequence[RollNode]) -> None:
        self.r = r
        self.opts = r.opts
        self.nodes = list(nodes)
        self.restart_hook = self.opts.hooks.restart is not None
        self.failures: list[StepFailed] = []
        self.started_here: set[tuple[int, str]] = set()  # (node, hook) whose hook this run ran
        self.stop_again: set[int] = set()  # nodes whose failed stop (or restart) hook left them untouched
        self.cmds: dict[tuple[int, str], str] = hooks.render_all(self.opts.hooks, self.nodes)  # before any mutation

    # ---------------------------------------------------------------- plumbing
    def p(self, n: RollNode) -> NodeProgress:
        return self.r.progress(n)

    def takes(self, n: RollNode, step: str) -> bool:
        return step in dom.steps(n, self.r.traits, self.opts.asked)

    def stage(self, n: RollNode) -> int:
        """The stage `n` resumes at: the journal's (NodeProgress.stage), except that a node whose stop (or restart)
        hook never began (its status file says so), or failed leaving it untouched (`stop_again`), is before its
        stop: its gates run again, then its hook."""
        np = self.p(n)
        hook = "restart" if self.restart_hook else "stop"
        if np.stage in (dom.STOPPING, dom.STARTING) and not np.seen_stopped and np.last("start") is None \
                and (self.never_begun(n, hook) or n.id in self.stop_again):
            return dom.BEFORE
        return np.stage

    def wants(self, n: RollNode, step: str) -> bool:
        """Does `n` run `step` now: one of its steps, not of a stage it is past, and not done already unless it is
        one a node whose process is untouched runs again (the gates, the drain)."""
        np = self.p(n)
        if np.finished or not self.takes(n, step):
            return False
        spec, stage = STEP[step], self.stage(n)
        if spec.stage < stage:
            return False
        return (spec.again and stage == dom.BEFORE) or step not in np.done

    def fail(self, n: RollNode, step: str, reason: str, message: str) -> StepFailed:
        return StepFailed(reason, f"node {n.id}: {message}", n.id, step)

    def journaled(self, ns: Sequence[RollNode], name: str,
                  body: Callable[[], Mapping[int, Mapping[str, Any] | None] | None],
                  started: Mapping[int, Mapping[str, Any]] | None = None) -> None:
        """Journal `name` started for each of `ns`, run `body` (one step for all of them: a batch's drain), journal
        each done (with its own detail, by node id) or failed with the same message."""
        who = f"node {ns[0].id}" if len(ns) == 1 else f"nodes {', '.join(str(n.id) for n in ns)}"
        for n in ns:
            self.r.step_event(n, name, "started", detail=(started or {}).get(n.id))
        begun = self.r.clock()

        def failed(message: str) -> None:
            for n in ns:
                self.r.step_event(n, name, "failed", self.r.clock() - begun, message=message)

        try:
            details = body() or {}
        except StepFailed as e:
            failed(e.message)
            e.node, e.step = e.node if e.node is not None else ns[0].id, name
            raise
        except JournalUnwritable:
            raise
        except (KadminError, KeyboardInterrupt) as e:
            if isinstance(e, KadminError) and not interrupts.interrupted():
                failed(e.message)
                reason = "unreachable" if int(e.exit_code) == ExitCode.UNREACHABLE else "error"
                raise StepFailed(reason, f"{who} {name}: {e.message}", ns[0].id, name) from e
            failed(INTERRUPTED)
            raise StepFailed("interrupted", f"{INTERRUPTED} during {who}'s {name}", ns[0].id, name) from None
        took = self.r.clock() - begun
        for n in ns:
            self.r.step_event(n, name, "done", took, detail=details.get(n.id))
        if interrupts.settle():  # a Ctrl-C held back while a committed step finished
            raise StepFailed("interrupted", f"{INTERRUPTED} after {who}'s {name}", ns[0].id, name)

    def each(self, name: str, fn: Callable[[RollNode], Mapping[str, Any] | None],
             ns: Sequence[RollNode] | None = None) -> None:
        for n in list(self.nodes if ns is None else ns):
            if self.wants(n, name):
                self.journaled([n], name, lambda n=n: {n.id: fn(n)})  # type: ignore[misc]

    # ---------------------------------------------------------------- the batch
    def run(self) -> None:
        for n in list(self.nodes):
            self.recover(n)
        self.decide_only_if()
        hook = "restart" if self.restart_hook else "stop"
        for n in list(self.nodes):  # a stop (or restart) hook that failed: may it run again?
            np = self.p(n)
            if np.last(hook) == "failed" and not np.seen_stopped and not np.finished \
                    and self.after_failure(n, hook) == "run":
                self.stop_again.add(n.id)
        if not self.nodes:
            return
        if self.failures:  # a node of the batch stops the roll: none other is touched now (those down come back)
            self.nodes = [n for n in self.nodes if self.stage(n) != dom.BEFORE]
        elif any(self.stage(n) == dom.BEFORE for n in self.nodes):
            self.before_stop()
        if self.restart_hook:
            self.hook_stage("restart")
        else:
            self.hook_stage("stop")
            self.wait_stopped()
            self.start_stage()
        self.receipts()
        if self.failures:
            self.way_back(healthy=False)  # the nodes brought back: in sync and undrained, then the roll stops
            raise self.failures[0]
        self.way_back(healthy=True)
        for n in self.nodes:
            np = self.p(n)
            if not np.finished:
                epochs: dict[str, Any] = {k: np.detail[k] for k in ("old_epoch", "new_epoch") if k in np.detail}
                self.r.event(ev.NodeDone(now_iso(), n.id, n.role, "done", round(sum(np.elapsed.values()), 3),
                                         epochs))

    def drop(self, n: RollNode, failure: StepFailed) -> None:
        """`n` leaves the batch for this run (it failed and is not down); the roll stops once the rest are back."""
        self.failures.append(failure)
        self.nodes.remove(n)

    # ---------------------------------------------------------------- what an earlier run left
    def recover(self, n: RollNode) -> None:
        """A hook an earlier run journaled started and never ended: its status file says what became of it (it
        may have ended while no kadmin watched). Its outcome is journaled now, as it was; a hook that never began
        is run by its stage as if for the first time; one still running is waited for."""
        np = self.p(n)
        for step in dom.HOOK_STEPS:
            if np.last(step) != "started":
                continue
            path = hooks.status_path(self.r.journal.dir, n.id, step, np.attempts(step))
            st = hooks.read_status(path)
            if st.state == "absent" and not hooks.take_over(path):
                st = hooks.read_status(path)  # the wrapper the run before started came first: it runs
            if st.state == "running":
                self.r.say(f"node {n.id}: the {step} hook an earlier run started (pid {st.pid}) is still running: "
                           "waiting for it to end")
                st = hooks.wait_ended(path, self.opts.step_timeout, self.r.sleep, self.r.clock)
                if st.state == "running":
                    raise self.fail(n, step, "gate_not_met", f"the {step} hook an earlier run started (pid {st.pid}) "
                                    f"is still running after {self.opts.step_timeout:g} s: let it end or kill it, "
                                    "then run the same command again")
            if st.state in ("absent", "void", "not_begun"):  # it never ran: its stage runs it (a stop: after its gates)
                self.r.say(f"node {n.id}: its --{step.replace('_', '-')} hook never began (the run before ended "
                           "first, its status file says): it runs now, as for the first time")
                continue
            said = hooks.describe_status(st, f"--{step.replace('_', '-')}")
            detail: dict[str, Any] = {"recovered": True, "watched": False}
            if st.state == "ended" and st.code == 0:
                if step == "only_if":
                    detail.update(restart=True, exit_code=0)
                self.r.step_event(n, step, "done", detail=detail, message=said)
            elif step == "only_if" and st.state == "ended" and st.code == 1:
                self.r.step_event(n, step, "done", detail={**detail, "restart": False, "exit_code": 1}, message=said)
            else:
                self.r.step_event(n, step, "failed", detail=detail, message=said)

    def never_begun(self, n: RollNode, step: str) -> bool:
        np = self.p(n)
        return np.last(step) == "started"  # recover() left it: its hook never began

    # ---------------------------------------------------------------- --only-if: decided once
    def decide_only_if(self) -> None:
        for n in list(self.nodes):
            np = self.p(n)
            if not self.takes(n, "only_if") or np.finished:
                continue
            if np.only_if is None and any(STEP[s].mutates for s in np.started):
                self.r.say(f"node {n.id}: past its first change (drained or stopped): --only-if is not asked, it is "
                           "restarted")
                continue
            if np.only_if is None:
                self.only_if(n)
            if self.p(n).only_if is False:
                took = self.p(n).elapsed.get("only_if", 0.0)
                self.r.say(f"node {n.id}: --only-if exited 1: skipped")
                self.r.event(ev.NodeDone(now_iso(), n.id, n.role, "skipped", round(took, 3)))
                self.nodes.remove(n)

    def only_if(self, n: RollNode) -> None:
        cmd = self.cmds[(n.id, "only_if")]
        self.r.watcher.hook_started(n.id, "only-if", cmd)
        self.r.step_event(n, "only_if", "started")
        out = self.run_hook(n, "only_if", cmd)
        if out.code in (0, 1):
            self.r.step_event(n, "only_if", "done", out.seconds, detail={"restart": out.code == 0,
                                                                         "exit_code": out.code})
        else:
            why = hooks.describe(out, "--only-if", cmd, self.opts.step_timeout) + " (0 restarts the node, 1 skips it)"
            self.r.step_event(n, "only_if", "failed", out.seconds, message=why)
            raise self.fail(n, "only_if", "hook_failed", why)
        if out.interrupted:
            raise StepFailed("interrupted", f"{INTERRUPTED} during node {n.id}'s --only-if", n.id, "only_if")

    # ---------------------------------------------------------------- before the stop
    def before_stop(self) -> None:
        allow = self.opts.allow
        self.each("quorum_check", self.quorum_check)
        self.each("can_stop", lambda n: self.can_stop(n, allow))
        self.together()
        self.node_hooks("before_node")
        todo = [n for n in self.nodes if self.wants(n, "drain")]
        if todo:
            files = {n.id: self.drain_file(n) for n in todo}
            first = {n.id: self.p(n).drain_file or str(files[n.id]) for n in todo}
            started = {n.id: {"drain_file": first[n.id], "saved_to": str(files[n.id])} for n in todo}
            self.journaled(todo, "drain", lambda: self.drain(files, first), started)
        self.each("shutdown", self.shutdown)
        todo = [n for n in self.nodes if self.wants(n, "others_healthy")]
        if todo:
            self.journaled(todo, "others_healthy", self.others_healthy)

    def quorum_check(self, n: RollNode) -> None:
        self.r.poll(lambda: self.r.c.quorum_check(n.id, self.r.fetch_ms), self.r.until(self.opts.patience),
                    f"quorum check --restart {n.id}", n=n, step="quorum_check")

    def can_stop(self, n: RollNode, allow: prules.TopicFilter | None) -> dict[str, Any] | None:
        got: list[tuple[str, ...]] = []

        def check() -> dom.Held | None:
            gate = self.r.c.can_stop(n.id, allow)
            got[:] = [gate.allowed]
            return None if gate.why is None else dom.Held(gate.why, gate.blockers, gate.cause)

        self.r.poll(check, self.r.until(self.opts.patience), f"can-stop {n.id}", n=n, step="can_stop")
        if got and got[0]:
            self.r.say(f"node {n.id}: --allow-unavailable lets these become unavailable while it restarts: "
                       + "; ".join(got[0]))
            return {"unavailable": list(got[0])}
        return None

    def together(self) -> None:
        """A batch of several brokers: the batch rule holds now (else gate_not_met)."""
        ids = [n.id for n in self.nodes if self.wants(n, "drain")]
        if len(ids) < 2:
            return
        rule = self.opts.request.batch_rule
        self.r.poll(lambda: self.r.c.together(ids, rule, self.opts.allow), self.r.until(self.opts.patience),
                    f"brokers {','.join(map(str, ids))} stopping together ({rule})")

    def drain_file(self, n: RollNode) -> Path:
        """Where this drain saves the order it finds: the roll's first file for the node while that does not exist
        yet (nothing was sent: the file is written before the reordering), else the next free drain-ID-K.json."""
        first = self.p(n).drain_file
        if first is not None and not Path(first).exists():
            return Path(first)
        d = self.r.journal.dir
        for i in range(1, 1000):
            p = d / (f"drain-{n.id}.json" if i == 1 else f"drain-{n.id}-{i}.json")
            if not p.exists() and str(p) != first:
                return p
        raise StepFailed("error", f"{d}: too many drain files for node {n.id}", n.id, "drain")

    def drain(self, files: Mapping[int, Path], first: Mapping[int, str]) -> dict[int, dict[str, Any]]:
        """The batch's brokers drained as one (one reordering with all of them last, one election), each with its
        own file. A mutation is asked once: a failure stops the roll, and a resumed run drains again."""
        why = self.r.c.drain(files, self.opts.step_timeout)
        if why is not None:
            raise StepFailed("gate_not_met", f"drain {','.join(map(str, files))}: {why}")
        return {i: {"drain_file": first[i], "saved_to": str(files[i])} for i in files}

    def shutdown(self, n: RollNode) -> dict[str, Any]:
        epoch = self.r.ask(lambda: self.r.c.broker_epoch(n.id), self.r.until())
        if epoch is None:
            raise StepFailed("gate_not_met", f"broker {n.id} is not registered: it has no epoch to shut down")
        why = self.r.c.controlled_shutdown(n.id, epoch, self.opts.step_timeout)
        if why is not None:
            raise StepFailed("gate_not_met", f"shutdown {n.id}: {why}")
        return {"old_epoch": epoch}

    def others_healthy(self) -> None:
        ids = [n.id for n in self.nodes]
        planned = list(self.r.state.head.nodes) if self.r.state.head else []
        self.r.poll(lambda: self.r.c.others_healthy(ids, planned, self.r.fetch_ms), self.r.until(self.opts.patience),
                    "nothing else down or under-replicated", n=self.nodes[0], step="others_healthy")

    # ---------------------------------------------------------------- the stop (or restart) hooks
    def hook_stage(self, step: str) -> None:
        """Decide for each node whether its stop (or restart) hook runs now, then run those at once, kadmin
        watching the nodes. A hook journaled done never runs again; one that failed runs again only on evidence
        that its node never went down (the same broker epoch, or kadmin watched the whole hook and never saw it
        go); where nothing can tell, the node stops the roll (`roll confirm`)."""
        todo: list[RollNode] = []
        for n in list(self.nodes):
            np = self.p(n)
            if not self.takes(n, step) or np.stage > STEP[step].stage or np.seen_stopped or np.finished:
                continue
            last = np.last(step)
            if last is None or self.never_begun(n, step) or n.id in self.stop_again:
                todo.append(n)
        if todo:
            self.run_stop_hooks(step, todo)

    def after_failure(self, n: RollNode, step: str) -> str:
        """A stop (or restart) hook that failed: "down" (seen stopped now: go on, bring it back), "run" (it never
        went down: run it again, no restart happened), or the node leaves the batch ("cannot tell")."""
        seen = self.observe([n])[n.id]
        np = self.p(n)
        if dom.stopped(n, self.r.traits, seen, np.old_epoch, self.r.fetch_ms) is None:
            self.seen(n, seen, step)
            return "down"
        if n.is_broker and self.r.traits.receipt == "epoch" and np.old_epoch is not None:
            return "run"  # still registered with the epoch of before: it never went down
        if np.detail.get("watched") is True:
            return "run"  # kadmin watched the whole hook and never saw it go
        self.drop(n, self.cannot_tell(n, step, f"its --{step} hook failed while no kadmin watched it, and it is up "
                                      "now"))
        return "dropped"

    def cannot_tell(self, n: RollNode, step: str, what: str) -> StepFailed:
        d = self.r.journal.dir
        return self.fail(n, step, "cannot_tell",
                         f"{what}: kadmin cannot tell whether it went down (and came back) or never stopped. Check the "
                         f"node (its process start time); if it went down, run `kadmin roll confirm --state {d} "
                         f"--node {n.id} --went-down`, if it never did, `kadmin roll confirm --state {d} --node "
                         f"{n.id} --never-went-down` (its hook runs again); then run the same command again")

    def run_stop_hooks(self, step: str, todo: list[RollNode]) -> None:
        """Run the stop (or restart) hooks, watched. A node whose hook failed stays in the batch when it was seen
        stopped (it is brought back), else it leaves it (its failure stops the roll once the others are back)."""
        if self.r.traits.receipt == "epoch":
            for n in todo:  # the epoch the receipt must beat, read just before the stop
                if n.is_broker and self.p(n).old_epoch is None:
                    self.p(n).detail["old_epoch"] = self.r.ask(lambda n=n: self.r.c.broker_epoch(n.id),  # type: ignore[misc]
                                                               self.r.until())
        ctl = [n for n in todo if n.is_controller and self.p(n).old_directory_id is None]
        if ctl and self.r.traits.quorum_nodes:  # the directory id a controller must come back with
            for i, s in self.observe(ctl).items():
                if s.directory_id is not None:
                    self.r.state.progress(i).detail["old_directory_id"] = s.directory_id
        for wave in self.waves(todo):  # a failed hook stops the roll before the next wave
            for i, failure in self.run_hooks(step, wave, watch=True).items():
                n = next(m for m in wave if m.id == i)
                if self.p(n).seen_stopped:
                    self.failures.append(failure)
                else:
                    self.drop(n, failure)
            if self.failures:
                return

    def waves(self, todo: list[RollNode]) -> list[list[RollNode]]:
        """A batch's stop (or restart) hooks run at once, except the active controller's when it is a broker of
        the batch (ZooKeeper mode), which runs once the others' have returned: a broker's own controlled shutdown
        needs a live controller (with the controller going down at the same moment it waits out
        controlled.shutdown.retry.backoff.ms, 5 s, or stops uncontrolled)."""
        if len(todo) < 2:
            return [todo]
        active = self.r.ask(self.r.c.active_controller, self.r.until())
        rest = [n for n in todo if n.id != active]
        return [todo] if len(rest) == len(todo) else [rest, [n for n in todo if n.id == active]]

    def run_hooks(self, step: str, todo: list[RollNode], watch: bool) -> dict[int, StepFailed]:
        """Run `step`'s hook of each of `todo` at once, journal each outcome, and return the failures by node. With
        `watch`, kadmin looks at the nodes while the hooks run and journals `seen_stopped` as it sees each go."""
        for n in todo:
            self.r.watcher.hook_started(n.id, step.replace("_", "-"), self.cmds[(n.id, step)])
            before = {"old_epoch": self.p(n).old_epoch, "old_directory_id": self.p(n).old_directory_id}
            started = {k: v for k, v in before.items() if v is not None and step in ("stop", "restart")} or None
            self.r.step_event(n, step, "started", detail=started)
            self.started_here.add((n.id, step))
            self.stop_again.discard(n.id)
        outcomes: dict[int, hooks.HookOutcome] = {}
        attempts = {n.id: self.p(n).attempts(step) for n in todo}
        ended = {n.id: threading.Event() for n in todo}

        def go(n: RollNode) -> None:
            try:
                outcomes[n.id] = self.run_hook(n, step, self.cmds[(n.id, step)], attempts[n.id])
            finally:
                ended[n.id].set()

        watches = {n.id: Watch(self.r.clock()) for n in todo}
        if watch:
            self.look(todo, watches)
        # A Ctrl-C (or the hook's own SIGTERM/SIGHUP to kadmin) while the hooks start is held back until every one
        # has started: it then counts as join's first one (the hooks are let end and journaled), never as an
        # exception that would leave a started hook unjournaled.
        interrupts.arm()
        try:
            for n in todo:
                threading.Thread(target=go, args=(n,), daemon=True, name=f"kadmin-hook-{n.id}").start()
        finally:
            early = interrupts.settle()
        interrupted = self.join(list(ended.values()), step, todo if watch else [], watches, early)
        if watch:
            self.look(todo, watches)  # after the end too: a hook's last moment is seen
        failures: dict[int, StepFailed] = {}
        for n in todo:
            out = outcomes.get(n.id) or hooks.HookOutcome(None, ("kadmin could not run it",), 0.0, False)
            interrupted = interrupted or out.interrupted
            cmd = self.cmds[(n.id, step)]
            detail = {"watched": watches[n.id].watched} if watch else {}
            if out.ok:
                self.r.step_event(n, step, "done", out.seconds, detail=detail)
                continue
            why = hooks.describe(out, f"--{step.replace('_', '-')}", cmd, self.opts.step_timeout)
            self.r.step_event(n, step, "failed", out.seconds, detail=detail, message=why)
            failures[n.id] = self.fail(n, step, "hook_failed", why)
        if interrupted:
            raise StepFailed("interrupted", f"{INTERRUPTED} during the {step} hooks", todo[0].id, step)
        return failures

    def run_hook(self, n: RollNode, step: str, cmd: str, attempt: int | None = None) -> hooks.HookOutcome:
        name = step.replace("_", "-")
        return hooks.run(cmd, n, name, self.opts.step_timeout, self.r.say,
                         directory=self.r.journal.dir, attempt=attempt or self.p(n).attempts(step),
                         line=lambda text: self.r.watcher.hook_output(n.id, name, text))

    def join(self, ended: list[threading.Event], step: str, watched: list[RollNode],
             watches: dict[int, Watch], interrupted: bool = False) -> bool:
        """Wait for the hooks (each sets its event when it ends: Thread.join interrupted by a Ctrl-C can leave a
        running thread looking dead), looking at the `watched` nodes meanwhile. A first Ctrl-C (`interrupted`: one
        came while they started) lets them end (True: stop after journaling them); a second one stops now, leaving
        them running (a resumed run reads their status files)."""
        if interrupted:
            self.r.say(f"interrupted: letting the running {step} hooks end first (Ctrl-C again to leave them "
                       "running and stop now)")
        while not all(e.is_set() for e in ended):
            try:
                if watched:
                    self.look(watched, watches)
                next(e for e in ended if not e.is_set()).wait(POLL)
            except StopIteration:
                break
            except KeyboardInterrupt:
                if interrupted:
                    raise
                interrupted = True
                self.r.say(f"interrupted: letting the running {step} hooks end first (Ctrl-C again to leave them "
                           "running and stop now)")
        return interrupted

    def look(self, nodes: list[RollNode], watches: dict[int, Watch]) -> None:
        """One look at `nodes` while their hooks run: journal `seen_stopped` for each seen going."""
        now = self.r.clock()
        try:
            seen = self.r.c.observe(nodes)
        except KadminError as e:
            self.r.c.reopen()
            for n in nodes:
                watches[n.id].errors.append(e.message)
            return
        for n in nodes:
            w = watches[n.id]
            if now - w.last > WATCH_GAP:
                w.watched = False
            w.last = self.r.clock()
            np = self.p(n)
            if not np.seen_stopped and dom.stopped(n, self.r.traits, seen[n.id], np.old_epoch,
                                                   self.r.fetch_ms) is None:
                self.seen(n, seen[n.id], "restart" if self.restart_hook else "stop")

    def seen(self, n: RollNode, s: dom.NodeSeen, step: str) -> None:
        how = dom.stop_evidence(n, self.r.traits, s, self.p(n).old_epoch, self.r.fetch_ms)
        self.r.event(ev.SeenStopped(now_iso(), n.id, n.role, how, step))

    def observe(self, nodes: list[RollNode]) -> dict[int, dom.NodeSeen]:
        return self.r.ask(lambda: self.r.c.observe(nodes), self.r.until())

    # ---------------------------------------------------------------- the waits
    def wait_stopped(self) -> None:
        """Each node seen stopped. A stop hook that ended while no kadmin watched (an earlier run's), or that kadmin
        watched and never saw its node go, and the node is up: looked at for UNSEEN_GRACE, then it cannot tell."""
        for n in list(self.nodes):
            if not self.wants(n, "wait_stopped"):
                continue
            np = self.p(n)
            if np.seen_stopped:
                self.r.step_event(n, "wait_stopped", "started")
                self.r.step_event(n, "wait_stopped", "done", detail={"seen_stopped": np.seen_stopped})
                continue
            unwatched = (n.id, "stop") not in self.started_here or np.detail.get("watched") is False
            patience = self.opts.unseen_grace if unwatched else None
            try:
                self.journaled([n], "wait_stopped", lambda n=n, pt=patience: {n.id: self.see_stopped(n, pt)})  # type: ignore[misc]
            except StepFailed as e:
                if e.reason == "interrupted":
                    raise
                if unwatched and not (n.is_broker and self.r.traits.receipt == "epoch"):
                    e = self.cannot_tell(n, "wait_stopped", "its --stop hook ended 0, kadmin did not see it go, "
                                         "and it is up")
                else:
                    e = self.fail(n, "wait_stopped", "gate_not_met", e.message + " (its --stop hook ended 0 and it did "
                                  "not stop: if it never went down, `kadmin roll confirm --state "
                                  f"{self.r.journal.dir} --node {n.id} --never-went-down` lets its hook run again)")
                self.drop(n, e)

    def see_stopped(self, n: RollNode, patience: float | None) -> dict[str, Any] | None:
        def check() -> str | None:
            np = self.p(n)
            if np.seen_stopped:
                return None
            s = self.r.c.observe([n])[n.id]
            why = dom.stopped(n, self.r.traits, s, np.old_epoch, self.r.fetch_ms)
            if why is None:
                self.seen(n, s, "wait_stopped")
            return why

        self.r.poll(check, self.r.until(patience), f"node {n.id} stopped", n=n, step="wait_stopped")
        return {"seen_stopped": self.p(n).seen_stopped}

    def start_stage(self) -> None:
        """The start hooks of the nodes seen stopped whose start never ran (or never began), at once."""
        todo = []
        for n in self.nodes:
            np = self.p(n)
            if not self.takes(n, "start") or np.finished or np.stage > dom.STARTING or not np.seen_stopped:
                continue
            if np.last("start") is None or self.never_begun(n, "start"):
                todo.append(n)
        for i, failure in (self.run_hooks("start", todo, watch=False) if todo else {}).items():
            self.drop(next(m for m in todo if m.id == i), failure)  # not started: named as left down

    def receipts(self) -> None:
        """Each node's receipt (a broker's registration back, a controller caught up), never without evidence that
        it went down. A node not back within --step-timeout whose own start hook never ended 0 is started once
        more (starting a stopped node is no second restart); else the roll stops, naming it."""
        for step in dom.RECEIPTS:
            for n in list(self.nodes):
                if self.wants(n, step):
                    try:
                        self.journaled([n], step, lambda n=n, s=step: {n.id: self.receipt(n, s)})  # type: ignore[misc]
                    except StepFailed as e:
                        if e.reason == "interrupted":
                            raise
                        self.failures.append(e)
                        self.nodes.remove(n)

    def receipt(self, n: RollNode, step: str) -> dict[str, Any] | None:
        np = self.p(n)
        traits = self.r.traits
        epoch_receipt = n.is_broker and traits.receipt == "epoch" and step == "wait_restarted"
        if not np.seen_stopped and not epoch_receipt:
            hook = "restart" if self.restart_hook else "stop"
            try:
                self.r.poll(lambda: self.look_for_stop(n), self.r.until(self.opts.unseen_grace),
                            f"node {n.id} seen stopped", n=n, step=step)
            except StepFailed:
                raise self.cannot_tell(n, step, f"its --{hook} hook ended and kadmin never saw it stopped") from None
        got: dict[str, Any] = {}

        def check() -> str | None:
            s = self.r.c.observe([n])[n.id]
            changed = dom.identity_changed(n, np.old_directory_id, s)
            if changed is not None:
                raise self.fail(n, step, "identity_changed", changed)
            if not self.p(n).seen_stopped and dom.stopped(n, traits, s, np.old_epoch, self.r.fetch_ms) is None:
                self.seen(n, s, step)
            why = dom.back(n, step, traits, s, old_epoch=np.old_epoch, seen_stopped=bool(self.p(n).seen_stopped),
                           fetch_timeout_ms=self.r.fetch_ms)
            if why is None and s.epoch is not None and step == "wait_restarted":
                got["new_epoch"] = s.epoch
            return why

        what = f"node {n.id} back ({'its restart receipt' if step == 'wait_restarted' else 'caught up'})"
        try:
            self.r.poll(check, self.r.until(), what, n=n, step=step)
        except StepFailed as e:
            if e.reason in ("interrupted", "identity_changed") or not self.start_again(n):
                if epoch_receipt:
                    e.message += (f" (if it never went down, `kadmin roll confirm --state {self.r.journal.dir} --node "
                                  f"{n.id} --never-went-down` lets its hook run again)")
                raise
            self.r.poll(check, self.r.until(), what + ", after its --start again", n=n, step=step)
        return got or None

    def look_for_stop(self, n: RollNode) -> str | None:
        s = self.r.c.observe([n])[n.id]
        why = dom.stopped(n, self.r.traits, s, self.p(n).old_epoch, self.r.fetch_ms)
        if why is None:
            self.seen(n, s, "wait_restarted")
        return why

    def start_again(self, n: RollNode) -> bool:
        """`n` is not back within --step-timeout and its latest start hook never ended 0 (it failed, or an
        interruption cut it short): it is not running, so starting it is no second restart. Its start hook runs
        once more (True), for this node alone; not when it ended 0 or ran in this run already."""
        np = self.p(n)
        if self.restart_hook or np.last("start") != "failed" or (n.id, "start") in self.started_here:
            return False
        self.r.say(f"node {n.id}: its --start hook did not end 0 and it is not back: starting it again")
        failed = self.run_hooks("start", [n], watch=False)
        if failed:
            raise failed[n.id]
        return True

    # ---------------------------------------------------------------- the way back
    def way_back(self, healthy: bool) -> None:
        self.each("wait_in_sync", self.wait_in_sync)
        todo = [n for n in self.nodes if self.wants(n, "undrain")]
        if todo:
            self.journaled(todo, "undrain", lambda: self.undrain(todo))
        if not healthy:
            return
        self.each("wait_healthy", self.wait_healthy)
        todo = [n for n in self.nodes if self.wants(n, "soak")]
        if todo:
            self.journaled(todo, "soak", lambda: self.soak(todo))
        self.node_hooks("after_node")
        self.each("settle", self.settle)

    def wait_in_sync(self, n: RollNode) -> None:
        def check() -> str | None:
            left = max(1.0, self.r.until() - self.r.clock())
            return self.r.c.in_sync(n.id, min(left, 30.0), lambda text: self.r.watcher.waiting(n.id, text))

        self.r.poll(check, self.r.until(), f"broker {n.id} in every ISR", n=n, step="wait_in_sync")

    def undrain(self, todo: list[RollNode]) -> dict[int, dict[str, Any]]:
        """The batch's FIRST drain files (the original order) put back as one (one reordering, one election)."""
        saved = {n.id: Path(f) for n in todo if (f := self.p(n).drain_file) and Path(f).exists()}
        out: dict[int, dict[str, Any]] = {n.id: {"drain_file": str(saved[n.id])} if n.id in saved else {"restored": 0}
                                          for n in todo}
        if saved:
            why = self.r.c.undrain(saved, self.opts.step_timeout)
            if why is not None:
                raise StepFailed("gate_not_met", f"undrain {','.join(map(str, saved))}: {why}")
        return out

    def soak(self, todo: list[RollNode]) -> dict[int, dict[str, Any]]:
        """--soak: each of `todo` up as it is now, the whole time (dom.soak_broken), looked at every POLL_MAX; a
        gap of more than SOAK_GAP between two looks (the cluster did not answer) starts the time over, up to
        --step-timeout beyond the soak. A node that restarts or goes away stops the roll (crash_loop)."""
        seconds, traits, fetch_ms = self.opts.soak, self.r.traits, self.r.fetch_ms
        give_up = self.r.until() + seconds
        before = self.observe(todo)
        for n in todo:  # an epoch broker is held to the registration its receipt saw: a restart since is caught too
            got = self.p(n).detail.get("new_epoch")
            if n.is_broker and traits.receipt == "epoch" and isinstance(got, int):
                before[n.id] = dataclasses.replace(before[n.id], epoch=got)
        began = last = self.r.clock()
        while True:
            try:
                now = self.r.c.observe(todo)
            except KadminError as e:
                self.r.c.reopen()
                if self.r.clock() >= give_up:
                    raise StepFailed("gate_not_met", f"--soak: the cluster did not answer: {e.message}") from e
                self.r.sleep(POLL_MAX)
                continue
            t = self.r.clock()
            if t - last > SOAK_GAP:
                self.r.say(f"--soak: no look at the cluster for {t - last:.0f} s: the soak starts over")
                began, before = t, now
            last = t
            for n in todo:
                why = dom.soak_broken(n, traits, before[n.id], now[n.id], fetch_ms)
                if why is not None:
                    raise StepFailed("crash_loop", f"node {n.id}: {why} {t - began:.0f} s into its {seconds:g} s "
                                     "soak, after it came back healthy: it may be crash-looping. No other node was "
                                     "touched. Look at its logs; once it stays up, run the same command again (the "
                                     "soak starts over)", n.id, "soak")
                self.r.watcher.waiting(n.id, f"up for {t - began:.0f} s of its {seconds:g} s soak")
            if t - began >= seconds:
                return {n.id: {"soaked_s": round(t - began, 3)} | ({"epoch": now[n.id].epoch}
                                                                   if now[n.id].epoch is not None else {})
                        for n in todo}
            if t >= give_up:
                raise StepFailed("gate_not_met", f"--soak: not {seconds:g} s of looks without a gap within "
                                 "--step-timeout")
            self.r.sleep(min(POLL_MAX, max(0.0, seconds - (t - began))))

    def node_hooks(self, step: str) -> None:
        """--before-node / --after-node for the batch's nodes that take it now, at once; a failure stops the roll
        (before: with its node untouched; after: once its node is back and healthy)."""
        todo = [n for n in self.nodes if self.wants(n, step)]
        failures = self.run_hooks(step, todo, watch=False) if todo else {}
        if failures:
            raise next(iter(failures.values()))

    def wait_healthy(self, n: RollNode) -> None:
        self.r.poll(self.r.c.healthy, self.r.until(), "partitions check OK (no under-replicated partition)", n=n,
                    step="wait_healthy")

    def settle(self, n: RollNode) -> None:
        if self.opts.settle > 0 and n is self.nodes[-1]:
            self.r.sleep(self.opts.settle)
