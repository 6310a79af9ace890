"""`kadmin roll`: a resumable, receipt-driven rolling restart of a whole cluster (docs/roll.md).

`plan` reads the cluster and says what a run would do; `run` does it (the engine: kadmin/services/roll_engine.py),
journaling every step (kadmin/services/roll_journal.py) before going on, so that running it again continues
where it stopped; `status` reads the journal; `confirm` records the operator's word about a node when the cluster
could not tell whether it went down. The rules (order, batches, the table of steps, what a node shows) are in
kadmin/domain/roll.py, the journal's events in kadmin/domain/roll_events.py; the cluster is seen through one typed
port (kadmin/services/roll_cluster.py).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from kadmin.cluster.base import Backend
from kadmin.domain import roll as dom
from kadmin.domain import roll_estimate as est
from kadmin.domain import roll_events as ev
from kadmin.errors import KadminError, UsageError
from kadmin.exit_codes import ExitCode
from kadmin.payloads_ops import (
    ControllerFailover,
    RollConfirm,
    RollEstimate,
    RollPause,
    RollPlan,
    RollPlanNode,
    RollReport,
    RollRoleTime,
)
from kadmin.results import Result
from kadmin.services import roll_hooks as hooks
from kadmin.services.roll_cluster import BackendRollCluster, RollCluster
from kadmin.services.roll_engine import PAUSE_FILE, Emit, Options, Roller, Watcher, select
from kadmin.services.roll_journal import Journal, now_iso
from kadmin.services.roll_report import report

Opener = Callable[[], Backend]

__all__ = ["Options", "confirm", "pause", "plan", "run", "status"]


# ------------------------------------------------------------------------------------------------ plan
def plan(cluster: RollCluster, opts: Options, only_if: Callable[[dom.RollNode], bool] | None = None,
         estimate_from: Path | None = None) -> Result[RollPlan]:
    """What a run would do now. `estimate_from`: a roll's state directory whose journal's measured times estimate
    this plan's (read first: a bad one is an error before the cluster is asked anything). ZooKeeper mode, when the
    active controller is one of the roll's nodes: what its failover at the end costs (the full UpdateMetadata
    fan-out), with a warning above est.FAILOVER_WARN_BYTES."""
    basis = measured(estimate_from) if estimate_from is not None else None
    try:
        traits = cluster.traits()
        t = cluster.topology()
        nodes = dom.order(t, select(t, opts.request))
        moves = t.leading_broker is not None and any(n.id == t.leading_broker for n in nodes)
        fanout = cluster.update_metadata() if moves else None
        hooks.render_all(opts.hooks, nodes)
        batches = dom.plan_batches(nodes, opts.request.parallel,
                                   cluster.safe_together(opts.request.batch_rule, opts.allow), t.leading_broker)
        fetch = cluster.fetch_timeout() if traits.quorum_nodes else None
        fetch_ms = fetch.value if fetch is not None and fetch.value is not None else dom.DEFAULT_FETCH_TIMEOUT_MS
        why = cluster.unhealthy(fetch_ms)
        cluster_id = cluster.cluster_id()
        allowed = {n.id: cluster.can_stop(n.id, opts.allow).allowed for n in nodes if n.is_broker} \
            if opts.allow is not None else {}
    finally:
        cluster.close()
    batch_of = {n.id: i for i, batch in enumerate(batches, start=1) for n in batch}
    rows = tuple(RollPlanNode(n.id, n.role, n.host, n.port, n.rack, batch_of[n.id],
                              dom.steps(n, traits, opts.asked),
                              None if only_if is None else not only_if(n), allowed.get(n.id, ()))
                 for batch in batches for n in batch)
    failover = None if fanout is None else est.failover_cost(*fanout)
    estimate = None
    if basis is not None and estimate_from is not None:
        skip = {r.node: bool(r.skip) for r in rows}
        pe = est.plan_estimate([[est.PlannedNode(n.id, n.role, skip[n.id]) for n in batch] for batch in batches],
                               basis)
        estimate = RollEstimate(pe.total_s, pe.per_node, pe.unestimated,
                                tuple(RollRoleTime(b.role, b.nodes, b.mean_s, b.kadmin_s, b.hooks_s)
                                      for b in basis.values()), str(estimate_from))
    data = RollPlan(t.mode, cluster_id, t.leader, opts.request.controllers, opts.request.parallel,
                    opts.request.batch_rule, opts.allow_unavailable,
                    tuple(tuple(n.id for n in batch) for batch in batches), rows, not why, tuple(why),
                    None if failover is None else ControllerFailover(
                        failover.partitions, failover.live_brokers, failover.request_bytes,
                        failover.update_metadata_bytes, failover.threshold_bytes, failover.warning),
                    estimate)
    msg = (f"{len(rows)} node(s) in {len(batches)} batch(es): " + " | ".join(",".join(map(str, bt))
                                                                            for bt in data.batches))
    if estimate is not None:
        msg += f"; {estimate_text(estimate)}"
    if failover is not None:
        msg += (f"; the controller moves at the end: {failover.live_brokers} UpdateMetadata request(s) of "
                f"{failover.partitions} partition(s), {est.size_text(failover.update_metadata_bytes)} in all")
    unavailable = sorted({p for r in rows for p in r.unavailable})
    if unavailable:
        msg += f"; --allow-unavailable lets {len(unavailable)} partition(s) become unavailable: " + \
               "; ".join(unavailable[:8]) + (f" (+{len(unavailable) - 8} more)" if len(unavailable) > 8 else "")
    if why:
        msg += "; a run would refuse to begin now: " + "; ".join(why)
    return Result(data=data, message=msg, warnings=[failover.warning] if failover and failover.warning else [])


def measured(directory: Path) -> dict[str, est.RoleTimes]:
    """The mean times per role of the nodes done in the roll in `directory` (`roll plan --from`): exit 2 when there
    is no roll there or no node done in it, exit 3 when its journal is not kadmin's (as `roll status`)."""
    j = Journal(directory)
    if not j.exists():
        raise UsageError(f"--from {directory}: no roll there (no {j.path.name}): give the --state DIR of a roll")
    try:
        st = ev.replay(j.read())
    except KadminError as e:
        e.message = e.message.replace(f"--state {directory}", f"--from {directory}", 1)
        e.args = (e.message,)
        raise
    basis = est.role_times(st)
    if not basis:
        raise UsageError(f"--from {directory}: no node of the roll there is done yet: no time measured to estimate "
                         "from (give the --state DIR of a roll that restarted at least one node)")
    return basis


def estimate_text(e: RollEstimate) -> str:
    """`about 12m30s (from DIR: broker 2m30s per node)`, naming the nodes it cannot estimate."""
    per = ", ".join(f"{b.role} {est.clock_text(b.mean_s)} per node" for b in e.basis)
    text = f"{'at least' if e.unestimated else 'about'} {est.clock_text(e.total_s)} (from {e.from_}: {per})"
    if e.unestimated:
        text += f"; no estimate for node(s) {', '.join(map(str, e.unestimated))}: no node of their role is done there"
    return text


def plan_backend(open_backend: Opener, opts: Options, only_if: Callable[[dom.RollNode], bool] | None = None,
                 estimate_from: Path | None = None) -> Result[RollPlan]:
    return plan(BackendRollCluster(open_backend), opts, only_if, estimate_from)


# ------------------------------------------------------------------------------------------------ status
def status(directory: Path) -> Result[RollReport]:
    j = Journal(directory)
    if not j.exists():
        raise UsageError(f"--state {directory}: no roll there (no {j.path.name})")
    st = ev.replay(j.read())
    running = j.locked_by_other() is not None
    data = report(st, directory, running=running)
    done = sum(1 for r in data.nodes if r.status in ("done", "skipped"))
    msg = f"roll in {directory}: {data.status}; {done} of {len(data.nodes)} node(s) done"
    if data.estimate_left_s is not None:
        msg += f"; about {est.clock_text(data.estimate_left_s)} left"
    if data.failure is not None:
        msg += f"; stopped at node {data.failure.node} ({data.failure.step}): {data.failure.message}"
    return Result(data=data, message=msg)


# ------------------------------------------------------------------------------------------------ run
def run(cluster: RollCluster, directory: Path, opts: Options, emit: Emit, say: Callable[[str], None],
        clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
        journal: Journal | None = None, watcher: Watcher | None = None) -> Result[RollReport]:
    """Run (or continue) the roll in `directory`. `emit` hears each event once it is journaled (the NDJSON
    stream and the progress view); `say` takes progress lines for stderr; `watcher` (the live view) hears what
    the events do not carry: the plan, what a step waits for, the hooks' output."""
    hooks.check_templates(opts.hooks)
    journal = journal or Journal(directory)
    journal.lock()
    try:
        return Roller(cluster, journal, opts, emit, say, clock, sleep, watcher).go()
    finally:
        journal.close()


def run_backend(open_backend: Opener, directory: Path, opts: Options, emit: Emit,
                say: Callable[[str], None], watcher: Watcher | None = None) -> Result[RollReport]:
    return run(BackendRollCluster(open_backend), directory, opts, emit, say, watcher=watcher)


# ------------------------------------------------------------------------------------------------ pause, continue
def pause(directory: Path, paused: bool) -> Result[RollPause]:
    """`roll pause` (`paused`) writes DIR/pause, `roll continue` removes it: the `roll run` holding DIR (or the
    next one) starts no new node or batch while it is there (it finishes the one in progress). No lock: the
    running roll holds it; the file is the message."""
    j = Journal(directory)
    if not j.exists():
        raise UsageError(f"--state {directory}: no roll there (no {j.path.name}); `roll run --pause-after 0` "
                         "begins a roll paused")
    st = ev.replay(j.read())
    if st.finished is not None:
        raise UsageError(f"--state {directory}: the roll there has finished: nothing to "
                         f"{'pause' if paused else 'continue'}")
    marker = directory / PAUSE_FILE
    was = marker.exists()
    if paused and not was:
        tmp = marker.with_name(f".{PAUSE_FILE}.{os.getpid()}")
        tmp.write_text(f"paused by `kadmin roll pause` (pid {os.getpid()}) at {now_iso()}\n")
        os.replace(tmp, marker)
    elif not paused and was:
        marker.unlink(missing_ok=True)
    changed = was != paused
    if paused:
        msg = ("paused: the running roll starts no new node or batch (it finishes the one in progress); "
               f"`kadmin roll continue --state {directory}` lets it go on") if changed else "paused already"
    else:
        msg = "continued: the running roll goes on (a stopped one: run the same command again)" if changed \
            else "not paused: nothing to continue"
    return Result(data=RollPause(str(directory), paused, changed), message=msg)


# ------------------------------------------------------------------------------------------------ confirm
def confirm(directory: Path, node: int, went_down: bool) -> Result[RollConfirm]:
    """The operator's word about a node the cluster could not tell about: it went down since its stop (or
    restart) hook began (`went_down`: counts as seen stopped), or it never did (its stop is forgotten: its hook
    runs again, which restarts it once). Journaled; refused (exit 2) where it contradicts the journal or says
    nothing the roll needs (a node done, untouched, or already seen stopped and told it never went down)."""
    j = Journal(directory)
    if not j.exists():
        raise UsageError(f"--state {directory}: no roll there (no {j.path.name})")
    j.lock()
    try:
        st = ev.replay(j.read())
        head = st.head
        if head is None or st.finished is not None:
            raise UsageError(f"--state {directory}: the roll there has {'finished' if head else 'not begun'}: "
                             "nothing to confirm")
        if node not in {n.id for n in head.nodes}:
            raise UsageError(f"--node {node}: not a node of the roll in {directory} "
                             f"({', '.join(str(n.id) for n in head.nodes)})")
        np = st.progress(node)
        phase = np.phase
        if phase not in ("stopping", "stopped", "starting"):
            raise UsageError(f"--node {node}: it is {phase}: there is nothing to confirm (only a node whose stop or "
                             "restart hook began and whose receipt was not seen)")
        if went_down and np.seen_stopped:
            raise UsageError(f"--node {node}: kadmin saw it stopped already ({np.seen_stopped}): nothing to confirm")
        if not went_down and np.seen_stopped and np.seen_stopped != "confirmed":
            raise UsageError(f"--node {node}: kadmin saw it stopped ({np.seen_stopped}): it did go down; "
                             "--never-went-down would restart it twice")
        e = ev.Confirmed(now_iso(), node, went_down, os.getpid())
        j.append(e)
        st.apply(e)
    finally:
        j.close()
    after = st.progress(node).phase
    said = ("went down: its receipt is the rest of its proof" if went_down else
            "never went down: its stop is forgotten, and its hook runs again when the roll continues")
    return Result(data=RollConfirm(str(directory), node, went_down, phase, after),
                  exit_code=ExitCode.OK, message=f"node {node} {said}; run the same `roll run` again to continue")
