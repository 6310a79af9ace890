"""One batch of a roll, step by step (kadmin/services/roll.py runs the batches; docs/roll.md lists the steps).

The batch's nodes go through the steps together: the gates of every node before any is drained, the drains
before any stop, the stop hooks at once (threads), then each wait, the start hooks at once, the receipts, and
the way back (in sync, undrain, healthy, settle). Each step is journaled when it starts and when it ends; a
node's phase in the journal (kadmin/domain/roll.py `NodeProgress.phase`) says which steps a resumed run skips.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kadmin import interrupts
from kadmin.domain import partitions as prules
from kadmin.domain import roll as dom
from kadmin.domain.quorum import CheckLimits
from kadmin.errors import KadminError
from kadmin.services import roll_hooks as hooks
from kadmin.services.roll import POLL, POLL_MAX, StepFailed, interrupted_meanwhile, quorum_age_ms

if TYPE_CHECKING:
    from kadmin.cluster.base import Backend
    from kadmin.services.roll import _Roller

GATE_PATIENCE = 30.0  # s: how long a gate before the stop (can-stop, quorum check) may take to be met
# how far each step is from the start: a resumed node skips the steps before its phase. wait_caught_up ranks with
# the steps after the receipt: a combined node's receipt is wait_restarted (phase `restarted`), and its controller
# must still catch up; a controller-only node is `restarted` only once it has caught up (then it is in `done`).
RANK = {**{s: 0 for s in dom.BEFORE_STOP}, "stop": 1, "wait_stopped": 1, "start": 2, "restart": 2,
        "wait_restarted": 3, "wait_caught_up": 4, "wait_in_sync": 4, "undrain": 4, "wait_healthy": 4, "settle": 4}
PHASE_RANK = {"untouched": 0, "before_stop": 0, "stopping": 1, "stopped": 2, "starting": 3, "restarted": 4}


class Steps:
    def __init__(self, roller: _Roller, batch: tuple[dom.RollNode, ...]) -> None:
        self.r = roller
        self.opts = roller.opts
        self.mode = roller.mode
        self.nodes = list(batch)
        self.restart_hook = self.opts.hooks.restart is not None

    # ---------------------------------------------------------------- plumbing
    def progress(self, n: dom.RollNode) -> dom.NodeProgress:
        return self.r.state.progress(n.id)

    def wants(self, n: dom.RollNode, step: str) -> bool:
        """Does `n` run `step` now: one of its steps, not before its phase, not done already after its receipt."""
        if step not in dom.steps(n, self.mode, self.restart_hook, self.opts.hooks.only_if is not None):
            return False
        np = self.progress(n)
        if np.finished:
            return False
        rank = PHASE_RANK[np.phase]
        if RANK[step] < rank:
            return False
        return not (rank == 4 and step in np.done)

    def step(self, n: dom.RollNode, name: str, body: Callable[[], Mapping[str, Any] | None]) -> None:
        """Journal `name` started, run it, journal done (with what it returned) or failed."""
        self.steps([n], name, lambda: {n.id: body()})

    def steps(self, ns: list[dom.RollNode], name: str,
              body: Callable[[], Mapping[int, Mapping[str, Any] | None]]) -> None:
        """`step` for several nodes that take it as one (a batch's joint drain): each node's step is journaled
        started, then done with its own detail (body returns them by node id) or failed with the same message."""
        who = f"node {ns[0].id}" if len(ns) == 1 else f"nodes {', '.join(str(n.id) for n in ns)}"
        for n in ns:
            self.r.step_event(n, name, "started", detail=self._started_detail(n, name))
        start = self.r.clock()

        def failed(message: str) -> None:
            took = self.r.clock() - start
            for n in ns:
                self.r.step_event(n, name, "failed", took, message=message)

        try:
            details = body()
        except StepFailed as e:
            failed(e.message)
            e.node, e.step = ns[0].id, name  # type: ignore[attr-defined]
            raise
        except (KadminError, KeyboardInterrupt) as e:
            if isinstance(e, KadminError) and not interrupts.interrupted():  # (else a Ctrl-C a library swallowed)
                failed(e.message)
                raise _failed("error", f"{who} {name}: {e.message}", ns[0], name, int(e.exit_code)) from e
            failed("interrupted (Ctrl-C)")
            raise _failed("interrupted", f"interrupted (Ctrl-C) during {who}'s {name}", ns[0], name) from None
        took = self.r.clock() - start
        for n in ns:
            self.r.step_event(n, name, "done", took, detail=details.get(n.id))
        if interrupted_meanwhile():
            raise _failed("interrupted", f"interrupted (Ctrl-C) after {who}'s {name}", ns[0], name)

    def _started_detail(self, n: dom.RollNode, name: str) -> dict[str, Any] | None:
        if name in ("stop", "restart") and self.mode == "zookeeper" and n.is_broker:
            return {"old_epoch": self.progress(n).detail.get("old_epoch")}
        return None

    def until(self, patience: float | None = None) -> float:
        return self.r.clock() + (self.opts.step_timeout if patience is None else min(patience, self.opts.step_timeout))

    def poll(self, check: Callable[[Backend], str | None], until: float, what: str) -> None:
        """Ask `check` (None: met; else what is missing now) until it is met or `until` passes (gate_not_met,
        saying what it waited for and what it saw last). A cluster that does not answer is asked again."""
        pause = POLL
        last = "no answer yet"
        window = round(until - self.r.clock())  # what it waits (a gate before the stop: GATE_PATIENCE at most)
        while True:
            try:
                missing = check(self.r.b)
            except KadminError as e:
                self.r.reopen()
                missing = e.message
            if missing is None:
                return
            last = missing
            if self.r.clock() + pause >= until:
                raise StepFailed("gate_not_met", f"{what}: not met within {window:g} s: {last}")
            self.r.sleep(pause)
            pause = min(pause * 1.5, POLL_MAX)

    # ---------------------------------------------------------------- the batch
    def run(self) -> None:
        for n in list(self.nodes):
            if self.wants(n, "only_if"):
                self.only_if(n)
        self.each("quorum_check", self.quorum_check)
        self.each("can_stop", self.can_stop)
        self.together()
        self.together_step("drain", self.drain)
        self.each("shutdown", self.shutdown)
        if self.restart_hook:
            self.hooks_at_once("restart")
        else:
            self.hooks_at_once("stop")
            self.each("wait_stopped", self.wait_stopped)
            self.hooks_at_once("start")
        self.each("wait_restarted", self.wait_restarted)
        self.each("wait_caught_up", self.wait_caught_up)
        self.each("wait_in_sync", self.wait_in_sync)
        self.together_step("undrain", self.undrain)
        self.each("wait_healthy", self.wait_healthy)
        self.each("settle", self.settle)
        for n in self.nodes:
            np = self.progress(n)
            if not np.finished:
                total = sum(np.elapsed.values())
                self.r.event("node_done", node=n.id, role=n.role, status="done", elapsed_s=round(total, 3),
                             detail={k: np.detail[k] for k in ("old_epoch", "new_epoch") if k in np.detail})

    def each(self, name: str, fn: Callable[[dom.RollNode], Mapping[str, Any] | None]) -> None:
        for n in list(self.nodes):
            if self.wants(n, name):
                self.step(n, name, functools.partial(fn, n))

    def together_step(self, name: str,
                      fn: Callable[[list[dom.RollNode]], Mapping[int, Mapping[str, Any] | None]]) -> None:
        """One step for every node of the batch that wants it, taken as one (`steps`)."""
        todo = [n for n in self.nodes if self.wants(n, name)]
        if todo:
            self.steps(todo, name, functools.partial(fn, todo))

    # ---------------------------------------------------------------- before the stop
    def only_if(self, n: dom.RollNode) -> None:
        cmd = hooks.render(str(self.opts.hooks.only_if), n)
        self.r.step_event(n, "only_if", "started")
        out = hooks.run(cmd, n, "only-if", self.opts.step_timeout, self.r.say, directory=self.r.journal.dir,
                        attempt=_attempt(self.r.journal.dir, n, "only_if"))
        if out.code is None:
            self.r.step_event(n, "only_if", "failed", out.seconds, message=hooks.describe(out, "--only-if", cmd,
                                                                                          self.opts.step_timeout))
            raise _failed("hook_failed", hooks.describe(out, "--only-if", cmd, self.opts.step_timeout), n, "only_if")
        restart = out.code == 0
        self.r.step_event(n, "only_if", "done", out.seconds, detail={"restart": restart, "exit_code": out.code})
        if not restart:
            self.r.say(f"node {n.id}: --only-if exited {out.code}: skipped")
            self.r.event("node_done", node=n.id, role=n.role, status="skipped", elapsed_s=round(out.seconds, 3))
            self.nodes.remove(n)
        if out.interrupted:
            raise _failed("interrupted", f"interrupted (Ctrl-C) during node {n.id}'s --only-if", n, "only_if")

    def quorum_check(self, n: dom.RollNode) -> None:
        from kadmin.services import quorum as qsvc

        def check(b: Backend) -> str | None:
            q, now_ms = b.quorum.describe_quorum()
            res = qsvc.check(q, CheckLimits(fetch_timeout_ms=self.opts.fetch_timeout_ms, restart=n.id), now_ms)
            return None if int(res.exit_code) < 2 else (res.message or res.status)

        self.poll(check, self.until(GATE_PATIENCE), f"quorum check --restart {n.id}")

    def can_stop(self, n: dom.RollNode) -> None:
        from kadmin.services import partitions as psvc

        def check(b: Backend) -> str | None:
            res = psvc.can_stop(b.partitions, n.id)
            return None if int(res.exit_code) == 0 else (res.message or res.status)

        self.poll(check, self.until(GATE_PATIENCE), f"can-stop {n.id}")

    def together(self) -> None:
        """A batch of several brokers: they may stop at once (live ISRs and min ISR now), else gate_not_met."""
        ids = [n.id for n in self.nodes if self.wants(n, "drain")]
        if len(ids) < 2:
            return

        def check(b: Backend) -> str | None:
            scan = b.partitions.scan_partitions()
            blocked = prules.stop_together_blockers(scan.partitions, set(ids), scan.live)
            if not blocked:
                return None
            first = blocked[0]
            return f"{len(blocked)} partition(s) would lose their leader or min ISR, e.g. {first.topic}-" \
                   f"{first.partition}: {first.reason}"

        self.poll(check, self.until(GATE_PATIENCE), f"brokers {','.join(map(str, ids))} stopping together")

    def drain(self, todo: list[dom.RollNode]) -> dict[int, dict[str, Any]]:
        """The batch's brokers drained as one (one reordering with all of them last, one election: in ZooKeeper
        mode two drains cannot be in flight at once, and each costs a reassignment and an election), each with
        its own drain file."""
        from kadmin.services import drain as dsvc

        paths = {n.id: self._drain_path(n) for n in todo}
        b = self.r.b  # a mutation is asked once: a failure stops the roll, and a resumed run drains again
        res = dsvc.drain_together(b.leadership, b.identity, paths, timeout=self.opts.step_timeout)
        if int(res.exit_code) != 0:
            raise StepFailed("gate_not_met", f"drain {','.join(map(str, paths))}: {res.message}", int(res.exit_code))
        # undrain restores the order saved by the first drain (a resumed run's drain saved the drained order)
        return {n.id: {"drain_file": self.progress(n).detail.get("drain_file")
                       or (str(paths[n.id]) if paths[n.id].exists() else None)} for n in todo}

    def _drain_path(self, n: dom.RollNode) -> Path:
        d = self.r.journal.dir
        for i in range(1, 1000):
            p = d / (f"drain-{n.id}.json" if i == 1 else f"drain-{n.id}-{i}.json")
            if not p.exists():
                return p
        raise StepFailed("error", f"{d}: too many drain files for node {n.id}")

    def shutdown(self, n: dom.RollNode) -> dict[str, Any]:
        from kadmin.services import shutdown as ssvc

        epoch = self._epoch(n)
        if epoch is None:
            raise StepFailed("gate_not_met", f"broker {n.id} is not registered: it has no epoch to shut down")
        b = self.r.b
        res = ssvc.shutdown(b.epochs, b.controller_links, n.id, epoch=epoch, wait=True, timeout=self.opts.step_timeout,
                            dry_run=False, force=False)
        if int(res.exit_code) != 0:
            raise StepFailed("gate_not_met", f"shutdown {n.id}: {res.message}", int(res.exit_code))
        return {"old_epoch": epoch}

    def _epoch(self, n: dom.RollNode) -> int | None:
        regs = self.r.asking(lambda b: b.registrations.registrations(), self.until()).brokers
        r = regs.get(n.id)
        return None if r is None else r.epoch

    # ---------------------------------------------------------------- the hooks
    def hooks_at_once(self, name: str, again: bool = False) -> None:
        """Run the `name` hook of every node of the batch that needs it, at once; journal each outcome. `again`:
        the start hook of the nodes whose start an interruption cut short (start_again)."""
        if again:
            todo = [n for n in self.nodes if "start" not in self.progress(n).done]
        else:
            todo = [n for n in self.nodes if self.wants(n, name) and not (name == "stop" and self.already_down(n))]
        if not todo:
            return
        template = {"stop": self.opts.hooks.stop, "start": self.opts.hooks.start,
                    "restart": self.opts.hooks.restart}[name]
        assert template is not None
        cmds = {n.id: hooks.render(template, n) for n in todo}
        if self.mode == "zookeeper" and name in ("stop", "restart"):
            for n in todo:  # the epoch the receipt must beat, read just before the stop
                if "old_epoch" not in self.progress(n).detail:
                    self.progress(n).detail["old_epoch"] = self._epoch(n)
        for wave in self.waves(name, todo):  # a failed hook stops the roll before the next wave
            self.run_hooks(name, wave, cmds)

    def run_hooks(self, name: str, todo: list[dom.RollNode], cmds: Mapping[int, str]) -> None:
        for n in todo:
            self.r.say(f"node {n.id} ({n.role}): {name}: {cmds[n.id]}")
            self.r.step_event(n, name, "started", detail=self._started_detail(n, name))
        outcomes: dict[int, hooks.HookOutcome] = {}
        seen: dict[int, bool] = {}
        attempts = {n.id: _attempt(self.r.journal.dir, n, name) for n in todo}
        threads = [threading.Thread(target=lambda n=n: outcomes.__setitem__(
            n.id, hooks.run(cmds[n.id], n, name, self.opts.step_timeout, self.r.say, directory=self.r.journal.dir,
                            attempt=attempts[n.id])), daemon=True) for n in todo]
        for t in threads:
            t.start()
        if name == "restart":
            self.watch_stops(todo, threads, seen)
        interrupted = self.join(threads, name)
        self.journal_hooks(name, todo, cmds, outcomes, seen)
        if interrupted:
            raise _failed("interrupted", f"interrupted (Ctrl-C) during the {name} hooks", todo[0], name)

    def waves(self, name: str, todo: list[dom.RollNode]) -> list[list[dom.RollNode]]:
        """ZooKeeper mode: a batch's stop (or restart) hooks run at once, except the active controller's, which
        runs once the others' have returned. A broker's own controlled shutdown asks the controller to move its
        leaders; with the controller going down at the same moment it fails and is retried only after
        controlled.shutdown.retry.backoff.ms (5 s by default; bench/roll.py saw exactly that), or, after its
        retries, the broker stops uncontrolled. Start hooks always run at once."""
        if self.mode != "zookeeper" or name not in ("stop", "restart") or len(todo) < 2:
            return [todo]
        ctl, _ = self.r.asking(lambda b: b.epochs.controller(), self.until())
        active = ctl.broker_id if ctl is not None else None
        rest = [n for n in todo if n.id != active]
        return [todo] if len(rest) == len(todo) else [rest, [n for n in todo if n.id == active]]

    def join(self, threads: list[threading.Thread], name: str) -> bool:
        """Wait for the hooks' threads. A first Ctrl-C lets them end (True: stop after journaling them); a second
        one stops now, leaving them running (a resumed run works out from the cluster what they did)."""
        interrupted = False
        for t in threads:
            while t.is_alive():
                try:
                    t.join(0.2)
                except KeyboardInterrupt:
                    if interrupted:
                        raise
                    interrupted = True
                    self.r.say(f"interrupted: letting the running {name} hooks end first (Ctrl-C again to leave "
                               "them running and stop now)")
        return interrupted

    def journal_hooks(self, name: str, todo: list[dom.RollNode], cmds: Mapping[int, str],
                      outcomes: Mapping[int, hooks.HookOutcome], seen: Mapping[int, bool]) -> None:
        failed = None
        interrupted = False
        for n in todo:
            out = outcomes[n.id]
            interrupted = interrupted or out.interrupted
            if out.ok:
                detail = {"seen_stopped": True} if seen.get(n.id) else None
                self.r.step_event(n, name, "done", out.seconds, detail=detail)
            else:
                why = hooks.describe(out, f"--{name}", cmds[n.id], self.opts.step_timeout)
                self.r.step_event(n, name, "failed", out.seconds, message=why)
                failed = failed or _failed("hook_failed", f"node {n.id}: {why}", n, name)
        if failed is not None:
            raise failed
        if interrupted:
            raise _failed("interrupted", f"interrupted (Ctrl-C) during the {name} hooks", todo[0], name)

    def watch_stops(self, todo: list[dom.RollNode], threads: list[threading.Thread], seen: dict[int, bool]) -> None:
        """While restart hooks run: look for each node stopped (the receipt needs to have seen it go)."""
        while any(t.is_alive() for t in threads) and not all(seen.get(n.id) for n in todo):
            for n in todo:
                if not seen.get(n.id):
                    try:
                        seen[n.id] = self.stopped(self.r.b, n) is None
                    except KadminError:
                        self.r.reopen()
            time.sleep(POLL)

    def already_down(self, n: dom.RollNode) -> bool:
        """A resumed run finds its stop hook may have run: is the node down already (then it is not run again)?"""
        if self.progress(n).phase != "stopping":
            return False
        try:
            down = self.stopped(self.r.b, n) is None
        except KadminError:
            self.r.reopen()
            return False
        if down:
            self.r.say(f"node {n.id}: stopped already (its stop hook ran before the interruption)")
            self.r.step_event(n, "stop", "done", 0.0, detail={"resumed": True})
        return down

    # ---------------------------------------------------------------- the waits
    def stopped(self, b: Backend, n: dom.RollNode) -> str | None:
        """None when `n` is seen stopped, else what it is now."""
        if n.is_broker:
            r = b.registrations.registrations().brokers.get(n.id)
            if self.mode == "zookeeper":
                old = self.progress(n).detail.get("old_epoch")
                if r is None or (old is not None and r.epoch != old):
                    return None
                return f"broker {n.id} is still registered (epoch {r.epoch})"
            if r is None or r.fenced:
                return None
            return f"broker {n.id} is registered and unfenced"
        q, now_ms = b.quorum.describe_quorum()
        fetch, _ = quorum_age_ms(q, n.id, now_ms)
        if q.leader_id != n.id and (fetch is None or fetch > self.opts.fetch_timeout_ms):
            return None
        return (f"controller {n.id} leads the quorum" if q.leader_id == n.id
                else f"controller {n.id} fetched from the leader {fetch} ms ago")

    def wait_stopped(self, n: dom.RollNode) -> None:
        self.poll(lambda b: self.stopped(b, n), self.until(), f"node {n.id} stopped")

    def wait_restarted(self, n: dom.RollNode) -> dict[str, Any] | None:
        np = self.progress(n)
        if self.mode == "kraft" and self.restart_hook and not np.detail.get("seen_stopped"):
            raise StepFailed("gate_not_met", f"node {n.id}: its restart hook returned and kadmin never saw it "
                             "stopped (fenced or gone), so a restart cannot be told from no restart: use --stop and "
                             "--start, or check the node and run again")
        got: dict[str, Any] = {}

        def check(b: Backend) -> str | None:
            r = b.registrations.registrations().brokers.get(n.id)
            if self.mode == "zookeeper":
                old = np.detail.get("old_epoch")
                if r is not None and r.epoch is not None and (old is None or r.epoch > old):
                    got["new_epoch"] = r.epoch
                    return None
                return f"broker {n.id} is not registered" if r is None else \
                    f"broker {n.id} is registered with epoch {r.epoch}, not greater than {old}"
            if r is not None and r.fenced is False:
                return None
            return f"broker {n.id} is not registered" if r is None else f"broker {n.id} is fenced"

        try:
            self.poll(check, self.until(), f"node {n.id} back (its restart receipt)")
        except StepFailed:
            if not self.start_again(n):
                raise
            self.poll(check, self.until(), f"node {n.id} back (its restart receipt, after its --start again)")
        return got or None

    def start_again(self, n: dom.RollNode) -> bool:
        """An earlier run was stopped while `n`'s start hook ran (journaled started, never ended) and `n` has not
        come back within --step-timeout since: it is not running, so starting it is no second restart. Run the
        start hook once more (True), unless it ended (it did start it) or this has been done already."""
        np = self.progress(n)
        if self.restart_hook or "start" in np.done or np.started.count("start") != 1:
            return False
        self.r.say(f"node {n.id}: its --start hook was cut short by the interruption and it is not back: "
                   "starting it again")
        self.hooks_at_once("start", again=True)
        return True

    def wait_caught_up(self, n: dom.RollNode) -> None:
        def check(b: Backend) -> str | None:
            q, now_ms = b.quorum.describe_quorum()
            if q.leader_id < 0:
                return "the quorum has no leader"
            fetch, caught = quorum_age_ms(q, n.id, now_ms)
            limit = self.opts.fetch_timeout_ms
            if fetch is not None and caught is not None and fetch <= limit and caught <= limit:
                return None
            return f"controller {n.id}: last fetch {fetch} ms ago, caught up {caught} ms ago (limit {limit} ms)"

        self.poll(check, self.until(), f"controller {n.id} caught up with the leader")

    def wait_in_sync(self, n: dom.RollNode) -> None:
        from kadmin.services import partitions as psvc

        def check(b: Backend) -> str | None:
            left = max(1.0, self.until() - self.r.clock())
            res = psvc.wait_in_sync(b.partitions, n.id, min(left, 30.0))
            return None if int(res.exit_code) == 0 else (res.message or res.status)

        self.poll(check, self.until(), f"broker {n.id} in every ISR")

    def undrain(self, todo: list[dom.RollNode]) -> dict[int, dict[str, Any] | None]:
        """The batch's saved orders put back as one (one reordering, one election)."""
        from kadmin.services import drain as dsvc

        saved = {n.id: Path(f) for n in todo if (f := self.progress(n).detail.get("drain_file")) and Path(f).exists()}
        out: dict[int, dict[str, Any] | None] = {n.id: None if n.id in saved else {"restored": 0} for n in todo}
        if not saved:
            return out
        b = self.r.b
        res = dsvc.undrain_together(b.leadership, b.identity, saved, timeout=self.opts.step_timeout)
        if int(res.exit_code) != 0:
            raise StepFailed("gate_not_met", f"undrain {','.join(map(str, saved))}: {res.message}", int(res.exit_code))
        return out

    def wait_healthy(self, n: dom.RollNode) -> None:
        from kadmin.services import partitions as psvc

        def check(b: Backend) -> str | None:
            res = psvc.check(b.partitions)
            return None if int(res.exit_code) == 0 else (res.message or res.status)

        self.poll(check, self.until(), "partitions check OK (no under-replicated partition)")

    def settle(self, n: dom.RollNode) -> None:
        if self.opts.settle > 0 and n is self.nodes[-1]:
            self.r.sleep(self.opts.settle)


def _failed(reason: str, message: str, n: dom.RollNode, step: str, exit_code: int | None = None) -> StepFailed:
    e = StepFailed(reason, message, exit_code)
    e.node, e.step = n.id, step  # type: ignore[attr-defined]
    return e


def _attempt(directory: Path, n: dom.RollNode, hook: str) -> int:
    """The first attempt of `n`'s `hook` without a status file in `directory` (the engine's rewrite counts them
    from the journal)."""
    attempt = 1
    while hooks.status_path(directory, n.id, hook, attempt).exists():
        attempt += 1
    return attempt
