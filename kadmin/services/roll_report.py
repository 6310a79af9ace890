"""A roll's result as `roll run` ends it and `roll status` reads it: the journal replayed into one row per planned
node (kadmin/domain/roll_events.py), with the roll's status and, when it stopped, why."""

from __future__ import annotations

from pathlib import Path

from kadmin.domain.roll_events import NodeProgress, RollState
from kadmin.payloads_ops import RollFailure, RollNodeResult, RollReport, RollStepTime


def report(state: RollState, directory: Path, failure: RollFailure | None = None,
           running: bool = False) -> RollReport:
    head = state.head
    rows = []
    for n in head.nodes if head is not None else ():
        np = state.nodes.get(n.id) or NodeProgress(n.id, n.role)
        rows.append(node_row(n.id, n.role, np))
    fail = failure
    if fail is None and state.last_failure is not None and state.finished is None:
        f = state.last_failure
        fail = RollFailure(f.node, f.step, f.reason, f.message, f.exit_code, tuple(f.down), tuple(f.drained))
    status = ("done" if state.finished is not None else
              ("paused" if state.paused is not None else "running") if running else
              "refused" if fail is not None and fail.reason == "refused" else
              "interrupted" if fail is not None and fail.reason == "interrupted" else
              "window_closed" if fail is not None and fail.reason == "window_closed" else
              "failed" if fail is not None else "unfinished")
    return RollReport(str(directory), head.cluster_id if head else None, head.mode if head else None, status,
                      tuple(rows), fail, head.at if head else None,
                      state.finished.at if state.finished else None,
                      state.finished.elapsed_s if state.finished else None)


def node_row(node: int, role: str, np: NodeProgress) -> RollNodeResult:
    phase = np.phase
    status = {"done": "done", "skipped": "skipped", "untouched": "pending"}.get(phase, "in_progress")
    if np.failed and not np.finished:
        status = "failed"
    step = np.started[-1] if np.started and status in ("in_progress", "failed") else None
    steps = tuple(RollStepTime(s, round(sec, 3)) for s, sec in np.elapsed.items())
    total = round(sum(np.elapsed.values()), 3) if np.elapsed else None
    new_epoch = np.detail.get("new_epoch")
    return RollNodeResult(node, role, status, phase, step, steps, np.old_epoch,
                          new_epoch if isinstance(new_epoch, int) else None, np.first_at,
                          np.last_at if np.finished else None, total)


def down_and_drained(state: RollState) -> tuple[list[int], list[int]]:
    """The nodes the roll has left stopped (seen stopped, or its stop or restart hook begun, and no receipt since)
    and those left drained (a drain begun, no undrain done), as far as the journal shows: what a roll that stops
    names, so that nothing is left down or drained without saying so."""
    down, drained = [], []
    for i, np in sorted(state.nodes.items()):
        if np.finished:
            continue
        hook = "restart" if "restart" in np.started else "stop"
        # a stop (or restart) hook that failed while kadmin watched its node and never saw it go left it up
        up = not np.seen_stopped and np.last(hook) == "failed" and np.detail.get("watched") is True \
            and "start" not in np.started
        if np.phase in ("stopping", "stopped", "starting") and not up:
            down.append(i)
        if "drain" in np.started and "undrain" not in np.done:
            drained.append(i)
    return down, drained
