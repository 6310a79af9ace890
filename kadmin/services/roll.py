"""`kadmin roll`: a resumable, receipt-driven rolling restart of a whole cluster (issue 23; docs/roll.md).

`plan` reads the cluster and says what a run would do; `run` does it, one batch at a time, journaling every step
(kadmin/services/roll_journal.py) before going on, so that running it again continues where it stopped;
`status` reads the journal. The rules (order, batches, steps, what a resumed run may do) are in
kadmin/domain/roll.py; the gates are kadmin's own services (can-stop, drain, shutdown, wait, undrain, check).

Connections: each batch opens the cluster afresh (`open_backend`), and a gate whose cluster stops answering
(the broker it asked is the one restarting) opens it again and asks again until the step's time is up: a roll
outlives any one broker.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from kadmin import interrupts
from kadmin.cluster.base import Backend
from kadmin.domain import partitions as prules
from kadmin.domain import roll as dom
from kadmin.domain.quorum import CheckLimits, QuorumState, leader_clock
from kadmin.errors import ClusterUnreachable, ConfigError, KadminError, UsageError
from kadmin.exit_codes import ExitCode
from kadmin.payloads import QuorumCheck
from kadmin.payloads_ops import RollFailure, RollNodeResult, RollPlan, RollPlanNode, RollReport, RollStepTime
from kadmin.results import Result
from kadmin.services import roll_hooks as hooks_mod
from kadmin.services.roll_hooks import Hooks
from kadmin.services.roll_journal import Journal, now_iso

T = TypeVar("T")
Opener = Callable[[], Backend]
Emit = Callable[[dict[str, Any]], None]
POLL = 0.1  # s: how often a gate looks again (the gate latency goal: act within 0.5 s of the fact)
POLL_MAX = 0.25  # s: a read of the registrations costs ~5 ms; the receipt is seen within a quarter second
PREFLIGHT_PATIENCE = 30.0  # s: how long an unhealthy cluster is asked again before a roll refuses to begin

REASON_CODES = {"gate_not_met": ExitCode.CONDITION_NOT_MET, "hook_failed": ExitCode.HOOK_FAILED,
                "refused": ExitCode.UNSAFE, "interrupted": ExitCode.INTERRUPTED}


class StepFailed(Exception):
    def __init__(self, reason: str, message: str, exit_code: int | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.exit_code = int(REASON_CODES.get(reason, ExitCode.CONDITION_NOT_MET) if exit_code is None else exit_code)


@dataclass(frozen=True)
class Options:
    request: dom.Request
    hooks: Hooks
    step_timeout: float = 600.0
    settle: float = 0.0
    fetch_timeout_ms: int = 2000  # the controllers' controller.quorum.fetch.timeout.ms


# ------------------------------------------------------------------------------------------------ topology
def endpoint_host_port(endpoints: Sequence[str]) -> tuple[str | None, int | None]:
    """`CONTROLLER://host:port` (or `[v6]:port`) -> (host, port); (None, None) when there is none."""
    for e in endpoints:
        hp = e.split("://", 1)[-1]
        host, _, port = hp.rpartition(":")
        if host and port.isdigit():
            return host.strip("[]"), int(port)
    return None, None


def read_topology(b: Backend, known: Iterable[dom.RollNode] = ()) -> dom.Topology:
    """The nodes now (ZooKeeper: the registered brokers and /controller; KRaft: DescribeCluster's brokers and
    DescribeQuorum's voters, a voter that is a broker too being `combined`), plus the `known` ones (a roll's
    nodes, from its journal) that are not registered now: a node the roll stopped is still one of its nodes."""
    tick = b.registrations.registrations()
    regs = tick.brokers
    found: dict[int, dom.RollNode] = {}
    leader: int | None
    if b.mode == "zookeeper":
        ctl, _ = b.epochs.controller()
        leader = ctl.broker_id if ctl is not None else None
        for r in regs.values():
            found[r.id] = dom.RollNode(r.id, "broker", r.host, r.port, r.rack)
    else:
        q, _ = b.quorum.describe_quorum()
        leader = q.leader_id if q.leader_id >= 0 else None
        voters = {v.id: v for v in q.voters}
        for i in set(regs) | set(voters):
            reg, v = regs.get(i), voters.get(i)
            if reg is not None:
                found[i] = dom.RollNode(i, "combined" if v is not None else "broker", reg.host, reg.port, reg.rack)
            elif v is not None:
                host, port = endpoint_host_port(v.endpoints)
                found[i] = dom.RollNode(i, "controller", host, port)
    for n in known:
        found.setdefault(n.id, n)
    return dom.Topology(b.mode, tuple(sorted(found.values(), key=lambda n: n.id)), leader)


def node_json(n: dom.RollNode) -> dict[str, Any]:
    return {"id": n.id, "role": n.role, "host": n.host, "port": n.port, "rack": n.rack}


def node_from_json(d: Mapping[str, Any]) -> dom.RollNode:
    return dom.RollNode(int(d["id"]), d.get("role", "broker"), d.get("host"), d.get("port"), d.get("rack"))


def select(t: dom.Topology, req: dom.Request) -> tuple[dom.RollNode, ...]:
    """The nodes the request names, checked: an unknown id in --nodes is a usage error."""
    if req.nodes is not None:
        unknown = sorted(set(req.nodes) - {n.id for n in t.nodes})
        if unknown:
            raise UsageError(f"--nodes: {', '.join(map(str, unknown))}: no such node (the cluster has "
                             f"{', '.join(str(n.id) for n in t.nodes)})")
    return dom.chosen(t, req.nodes, req.controllers)


# ------------------------------------------------------------------------------------------------ health
def unhealthy(b: Backend, fetch_timeout_ms: int = 2000) -> list[str]:
    """Why the cluster is not healthy enough to begin a roll (empty: it is): an offline, under-min-ISR or
    under-replicated partition, a reassignment in flight, an unhealthy quorum, or what could not be read."""
    from kadmin.services import partitions as psvc
    from kadmin.services import quorum as qsvc

    tick = b.registrations.registrations()
    why: list[str] = [f"a registration could not be read: {p.message}" for p in tick.problems]
    check = psvc.check(b.partitions)
    if int(check.exit_code) != 0:
        why.append(f"partitions check: {check.message or check.status}")
    moving = [p.key for p in b.leadership.partitions() if p.reassigning]
    if moving:
        why.append(f"a reassignment is in flight for {psvc.describe_keys(moving)}")
    q, now_ms = b.quorum.describe_quorum()
    qc = qsvc.check(q, CheckLimits(fetch_timeout_ms=fetch_timeout_ms), now_ms)
    if int(qc.exit_code) >= 2 or (int(qc.exit_code) == 1 and b.mode == "kraft" and _lagging_voter(qc.data)):
        why.append(f"quorum check: {qc.message or qc.status}")
    return why


def _lagging_voter(data: QuorumCheck) -> bool:
    """A WARNING about a voter (down, lagging): a KRaft roll must not begin then (an observer's is no reason)."""
    return any(f.level == "WARNING" and "observer" not in f.message for f in data.findings)


# ------------------------------------------------------------------------------------------------ plan
def plan(open_backend: Opener, req: Options, only_if: Callable[[dom.RollNode], bool] | None = None
         ) -> Result[RollPlan]:
    b = open_backend()
    try:
        t = read_topology(b)
        nodes = dom.order(t, select(t, req.request))
        batches = dom.plan_batches(nodes, req.request.parallel, _safe_together(b), t.leader if t.mode ==
                                   "zookeeper" else None)
        why = unhealthy(b, req.fetch_timeout_ms)
        cluster_id = b.identity.cluster_id()
    finally:
        b.close()
    batch_of = {n.id: i for i, batch in enumerate(batches, start=1) for n in batch}
    rows = tuple(RollPlanNode(n.id, n.role, n.host, n.port, n.rack, batch_of[n.id],
                              dom.steps(n, t.mode, req.hooks.restart is not None, req.hooks.only_if is not None),
                              None if only_if is None else not only_if(n))
                 for batch in batches for n in batch)
    data = RollPlan(t.mode, cluster_id, t.leader, req.request.controllers, req.request.parallel,
                    tuple(tuple(n.id for n in batch) for batch in batches), rows, not why, tuple(why))
    n_batches = len(batches)
    msg = (f"{len(rows)} node(s) in {n_batches} batch(es): " + " | ".join(",".join(map(str, bt))
                                                                          for bt in data.batches))
    if why:
        msg += "; a run would refuse to begin now: " + "; ".join(why)
    return Result(data=data, message=msg, warnings=[])


def _safe_together(b: Backend) -> Callable[[Sequence[int]], bool]:
    """May these brokers stop at once? Read once (a plan's answer, or a batch's as it starts)."""
    scan = b.partitions.scan_partitions()

    def safe(ids: Sequence[int]) -> bool:
        return not prules.stop_together_blockers(scan.partitions, set(ids), scan.live)

    return safe


# ------------------------------------------------------------------------------------------------ status
def report(state: dom.RollState, directory: Path, failure: RollFailure | None = None,
           running: bool = False) -> RollReport:
    head = state.head or {}
    planned = [node_from_json(d) for d in head.get("nodes", []) if isinstance(d, Mapping)]
    rows = []
    for n in planned:
        np = state.nodes.get(n.id) or dom.NodeProgress(n.id, n.role)
        rows.append(_node_row(n, np))
    fail = failure
    if fail is None and state.last_failure is not None and state.finished is None:
        f = state.last_failure
        fail = RollFailure(f.get("node"), f.get("step"), str(f.get("reason", "error")), str(f.get("message", "")),
                           int(f.get("exit_code", 1)))
    status = ("done" if state.finished is not None else "running" if running else
              "refused" if fail is not None and fail.reason == "refused" else
              "interrupted" if fail is not None and fail.reason == "interrupted" else
              "failed" if fail is not None else "unfinished")
    started = head.get("at")
    finished = state.finished.get("at") if state.finished else None
    elapsed = state.finished.get("elapsed_s") if state.finished else None
    return RollReport(str(directory), head.get("cluster_id"), head.get("mode"), status, tuple(rows), fail,
                      started, finished, elapsed)


def _node_row(n: dom.RollNode, np: dom.NodeProgress) -> RollNodeResult:
    phase = np.phase
    status = {"done": "done", "skipped": "skipped", "untouched": "pending"}.get(phase, "in_progress")
    if np.failed and not np.finished:
        status = "failed"
    step = np.started[-1] if np.started and status in ("in_progress", "failed") else None
    steps = tuple(RollStepTime(s, round(sec, 3)) for s, sec in np.elapsed.items())
    total = round(sum(np.elapsed.values()), 3) if np.elapsed else None
    return RollNodeResult(n.id, n.role, status, phase, step, steps, np.detail.get("old_epoch"),
                          np.detail.get("new_epoch"), np.first_at, np.last_at if np.finished else None, total)


def status(directory: Path) -> Result[RollReport]:
    j = Journal(directory)
    if not j.exists():
        raise UsageError(f"--state {directory}: no roll there (no {j.path.name})")
    st = dom.replay(j.read())
    running = j.locked_by_other() is not None
    data = report(st, directory, running=running)
    done = sum(1 for r in data.nodes if r.status in ("done", "skipped"))
    msg = f"roll in {directory}: {data.status}; {done} of {len(data.nodes)} node(s) done"
    if data.failure is not None:
        msg += f"; stopped at node {data.failure.node} ({data.failure.step}): {data.failure.message}"
    return Result(data=data, message=msg)


# ------------------------------------------------------------------------------------------------ run
def run(open_backend: Opener, directory: Path, opts: Options, emit: Emit,
        say: Callable[[str], None], clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep) -> Result[RollReport]:
    """Run (or continue) the roll in `directory`. `emit` hears each event once it is journaled (the NDJSON
    stream and the progress view); `say` takes progress lines for stderr."""
    hooks_mod.check_templates(opts.hooks)
    journal = Journal(directory)
    journal.lock()
    try:
        roller = _Roller(open_backend, journal, opts, emit, say, clock, sleep)
        return roller.go()
    finally:
        journal.close()


class _Roller:
    def __init__(self, open_backend: Opener, journal: Journal, opts: Options, emit: Emit,
                 say: Callable[[str], None], clock: Callable[[], float], sleep: Callable[[float], None]) -> None:
        self.open_backend, self.journal, self.opts = open_backend, journal, opts
        self.emit_out, self.say, self.clock, self.sleep = emit, say, clock, sleep
        self.began = clock()
        self.state = dom.RollState()
        self.mode: dom.Mode = "zookeeper"
        self._backend: Backend | None = None

    # ---------------------------------------------------------------- events
    def event(self, kind: str, **fields: Any) -> dict[str, Any]:
        ev = {"event": kind, "at": now_iso(), **fields}
        self.journal.append(ev)  # fsynced before anything goes on
        self.state.apply(ev)
        self.emit_out(ev)
        return ev

    def step_event(self, node: dom.RollNode, step: str, status: str, elapsed: float = 0.0,
                   detail: Mapping[str, Any] | None = None, message: str | None = None) -> None:
        fields: dict[str, Any] = {"node": node.id, "role": node.role, "step": step, "status": status,
                                  "elapsed_s": round(elapsed, 3)}
        if detail:
            fields["detail"] = dict(detail)
        if message:
            fields["message"] = message
        self.event("step", **fields)

    # ---------------------------------------------------------------- the backend
    @property
    def b(self) -> Backend:
        if self._backend is None:
            self._backend = self.open_backend()
        return self._backend

    def reopen(self) -> None:
        if self._backend is not None:
            self._backend.close()
            self._backend = None

    def asking(self, what: Callable[[Backend], T], until: float) -> T:
        """`what(backend)`, asked again on a fresh connection while the cluster does not answer (the broker
        asked may be the one restarting), until `until` (then its last error)."""
        pause = POLL
        while True:
            try:
                return what(self.b)
            except ClusterUnreachable:
                self.reopen()
                if self.clock() + pause >= until:
                    raise
                self.sleep(pause)
                pause = min(pause * 2, POLL_MAX)

    # ---------------------------------------------------------------- the roll
    def go(self) -> Result[RollReport]:
        events = self.journal.read()
        self.state = dom.replay(events)
        try:
            t = self.asking(read_topology, self.clock() + self.opts.step_timeout)
            cluster_id = self.asking(lambda b: b.identity.cluster_id(), self.clock() + self.opts.step_timeout)
            self.mode = t.mode
            if self.state.head is not None:
                done = self.resume_checks(cluster_id)
                if done is not None:
                    return done
                self.event("roll_resumed", pid=_pid())
            else:
                self.start(t, cluster_id)
            return self.loop()
        finally:
            self.reopen()

    def resume_checks(self, cluster_id: str | None) -> Result[RollReport] | None:
        head = self.state.head or {}
        if head.get("cluster_id") != cluster_id:
            raise ConfigError(f"--state {self.journal.dir} holds a roll of cluster {head.get('cluster_id')}, and "
                              f"this is cluster {cluster_id}: give another --state directory",
                              code="other_cluster")
        if self.state.finished is not None:
            data = report(self.state, self.journal.dir)
            return Result(data=data, message=f"the roll in {self.journal.dir} finished at {data.finished_at}: "
                          "nothing to do (give another --state directory for a new roll)")
        diff = dom.differences(head, self.opts.request)
        if diff:
            raise ConfigError(f"--state {self.journal.dir} holds an unfinished roll asked differently: "
                              + "; ".join(diff) + ": run it as it was asked, or give another --state directory",
                              code="roll_differs")
        return None

    def start(self, t: dom.Topology, cluster_id: str | None) -> None:
        nodes = dom.order(t, select(t, self.opts.request))
        if not nodes:
            raise UsageError("no node to restart (--nodes and --controllers leave none)")
        req = self.opts.request
        self.event("roll_started", journal_version=dom.JOURNAL_VERSION, cluster_id=cluster_id, mode=t.mode,
                   nodes_asked=None if req.nodes is None else list(req.nodes), controllers=req.controllers,
                   parallel=req.parallel, nodes=[node_json(n) for n in nodes], order=[n.id for n in nodes],
                   step_timeout=self.opts.step_timeout, pid=_pid())
        self.say(f"{t.mode} cluster {cluster_id}: {len(nodes)} node(s) to restart, in this order (recomputed before "
                 f"each: the leader moves): {', '.join(f'{n.id} ({n.role})' for n in nodes)}")

    def loop(self) -> Result[RollReport]:
        try:
            if not any(np.started for np in self.state.nodes.values()):
                self.preflight()
            while True:
                batch = self.next_batch()
                if not batch:
                    break
                self.run_batch(batch)
                self.reopen()  # a fresh connection for the next batch
        except StepFailed as e:
            return self.stopped(e)
        except KeyboardInterrupt:
            return self.stopped(StepFailed("interrupted", "interrupted (Ctrl-C)"))
        except KadminError as e:
            if interrupts.interrupted():  # a Ctrl-C a library swallowed (kadmin.interrupts.interrupted)
                return self.stopped(StepFailed("interrupted", "interrupted (Ctrl-C)"))
            return self.stopped(StepFailed("error", e.message, int(e.exit_code)))
        self.event("roll_done", elapsed_s=round(self.clock() - self.began, 3))
        data = report(self.state, self.journal.dir)
        return Result(data=data, message=f"rolled {sum(1 for r in data.nodes if r.status == 'done')} node(s)"
                      + _skipped_text(data))

    def stopped(self, e: StepFailed) -> Result[RollReport]:
        node, step = getattr(e, "node", None), getattr(e, "step", None)
        self.event("roll_failed", node=node, step=step, reason=e.reason, message=e.message, exit_code=e.exit_code)
        failure = RollFailure(node, step, e.reason, e.message, e.exit_code)
        data = report(self.state, self.journal.dir, failure)
        again = "run the same command again to continue" if e.reason != "refused" else "nothing was touched"
        return Result(data=data, exit_code=ExitCode(e.exit_code), message=f"{e.message}; {again}")

    def preflight(self) -> None:
        """The cluster is healthy before the first node, else refuse (exit 7, nothing touched). Asked again for
        up to PREFLIGHT_PATIENCE: a quorum lag warning on a busy machine passes; an unhealthy cluster stays so."""
        until = self.clock() + min(PREFLIGHT_PATIENCE, self.opts.step_timeout)
        pause = POLL
        while True:
            why = self.asking(lambda b: unhealthy(b, self.opts.fetch_timeout_ms), until)
            if not why:
                return
            if self.clock() + pause >= until:
                raise StepFailed("refused", "refused to begin: the cluster is not healthy: " + "; ".join(why))
            self.sleep(pause)
            pause = min(pause * 2, POLL_MAX)

    def next_batch(self) -> tuple[dom.RollNode, ...]:
        head = self.state.head or {}
        planned = [node_from_json(d) for d in head.get("nodes", [])]
        left = [n for n in planned if self.state.progress(n.id).phase not in ("done", "skipped")]
        if not left:
            return ()
        busy = [n for n in left if self.state.progress(n.id).phase != "untouched"]
        if busy:  # a node (or batch) an earlier run left part-way: finish it first, as it was
            return tuple(busy[:1]) if busy[0].is_controller else tuple(b for b in busy if not b.is_controller)
        until = self.clock() + self.opts.step_timeout
        t = self.asking(lambda b: read_topology(b, planned), until)
        ordered = dom.order(t, [t.node(n.id) or n for n in left])  # the order now: the leader moves
        if self.opts.request.parallel <= 1 or ordered[0].is_controller:
            return ordered[:1]
        safe = self.asking(_safe_together, until)
        return dom.next_batch(ordered, self.opts.request.parallel, safe,
                              t.leader if t.mode == "zookeeper" else None)

    # ---------------------------------------------------------------- a batch
    def run_batch(self, batch: Sequence[dom.RollNode]) -> None:
        from kadmin.services.roll_steps import Steps

        Steps(self, tuple(batch)).run()


def _skipped_text(data: RollReport) -> str:
    skipped = [r.node for r in data.nodes if r.status == "skipped"]
    return f"; skipped (--only-if): {', '.join(map(str, skipped))}" if skipped else ""


def _pid() -> int:
    import os

    return os.getpid()


def quorum_age_ms(q: QuorumState, node: int, now_ms: int) -> tuple[int | None, int | None]:
    """(ms since the leader last heard a fetch from `node`, ms since it was last caught up), by the leader's
    clock; None where DescribeQuorum has no timestamp. The leader itself: (0, 0)."""
    if q.leader_id == node:
        return 0, 0
    now = leader_clock(q, now_ms).now_ms
    v = next((r for r in q.voters if r.id == node), None)
    if v is None:
        return None, None
    fetch = None if v.last_fetch_timestamp is None else now - v.last_fetch_timestamp
    caught = None if v.last_caught_up_timestamp is None else now - v.last_caught_up_timestamp
    return fetch, caught


def interrupted_meanwhile() -> bool:
    """A Ctrl-C held back while a committed step (drain, shutdown, undrain) finished: consumed here."""
    return interrupts.settle()
