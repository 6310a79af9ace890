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
from kadmin.domain import roll_events as ev
from kadmin.errors import UsageError
from kadmin.exit_codes import ExitCode
from kadmin.payloads_ops import RollConfirm, RollPause, RollPlan, RollPlanNode, RollReport
from kadmin.results import Result
from kadmin.services import roll_hooks as hooks
from kadmin.services.roll_cluster import BackendRollCluster, RollCluster
from kadmin.services.roll_engine import PAUSE_FILE, Emit, Options, Roller, Watcher, select
from kadmin.services.roll_journal import Journal, now_iso
from kadmin.services.roll_report import report

Opener = Callable[[], Backend]

__all__ = ["Options", "confirm", "pause", "plan", "run", "status"]


# ------------------------------------------------------------------------------------------------ plan
def plan(cluster: RollCluster, opts: Options, only_if: Callable[[dom.RollNode], bool] | None = None
         ) -> Result[RollPlan]:
    try:
        traits = cluster.traits()
        t = cluster.topology()
        nodes = dom.order(t, select(t, opts.request))
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
    data = RollPlan(t.mode, cluster_id, t.leader, opts.request.controllers, opts.request.parallel,
                    opts.request.batch_rule, opts.allow_unavailable,
                    tuple(tuple(n.id for n in batch) for batch in batches), rows, not why, tuple(why))
    msg = (f"{len(rows)} node(s) in {len(batches)} batch(es): " + " | ".join(",".join(map(str, bt))
                                                                            for bt in data.batches))
    unavailable = sorted({p for r in rows for p in r.unavailable})
    if unavailable:
        msg += f"; --allow-unavailable lets {len(unavailable)} partition(s) become unavailable: " + \
               "; ".join(unavailable[:8]) + (f" (+{len(unavailable) - 8} more)" if len(unavailable) > 8 else "")
    if why:
        msg += "; a run would refuse to begin now: " + "; ".join(why)
    return Result(data=data, message=msg, warnings=[])


def plan_backend(open_backend: Opener, opts: Options, only_if: Callable[[dom.RollNode], bool] | None = None
                 ) -> Result[RollPlan]:
    return plan(BackendRollCluster(open_backend), opts, only_if)


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
