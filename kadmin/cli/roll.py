"""`kadmin roll`: a resumable, receipt-driven rolling restart of a whole cluster (docs/roll.md)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from kadmin.cli.options import Invocation, command, seconds, seconds_or_zero, views
from kadmin.errors import UsageError

if TYPE_CHECKING:
    from kadmin.domain.roll import Request

app = typer.Typer(name="roll", help="Rolling restarts: plan, run (resumable), pause and continue, status "
                  "and confirm.",
                  no_args_is_help=True)

NodesOpt = Annotated[str | None, typer.Option("--nodes", metavar="IDS", help="Comma-separated node ids to restart "
                                              "(default: every node).", show_default=False)]
ControllersOpt = Annotated[str, typer.Option("--controllers", metavar="first|skip", help="KRaft: restart the "
                                             "controllers first (the quorum leader last), or skip them.")]
ParallelOpt = Annotated[int, typer.Option("--parallel", metavar="N", min=1, max=1000, help="Restart up to N "
                                          "brokers at once where the live ISRs and min ISR allow it (controllers "
                                          "one at a time).")]
StopOpt = Annotated[str | None, typer.Option("--stop", metavar="CMD", help="Shell command that stops a node and "
                                             "returns once it is stopped. Placeholders {id} {host} {port} {rack} "
                                             "{role}, each quoted for the shell; output in DIR/hooks/.",
                                             show_default=False)]
StartOpt = Annotated[str | None, typer.Option("--start", metavar="CMD", help="Shell command that starts a node "
                                              "and returns once it was started. Placeholders as --stop's: {id} "
                                              "{host} {port} {rack} {role}.", show_default=False)]
RestartOpt = Annotated[str | None, typer.Option("--restart", metavar="CMD", help="One shell command that restarts "
                                                "a node (instead of --stop and --start). Placeholders as --stop's: "
                                                "{id} {host} {port} {rack} {role}.", show_default=False)]
OnlyIfOpt = Annotated[str | None, typer.Option("--only-if", metavar="CMD", help="Shell command run per node before "
                                               "touching it: exit 0 restarts it, 1 skips it, another code fails it. "
                                               "Placeholders as --stop's: {id} {host} {port} {rack} {role}.",
                                               show_default=False)]
SoakOpt = Annotated[float, typer.Option("--soak", metavar="SECONDS", parser=seconds_or_zero, help="Once a node (or "
                                        "batch) is healthy, it must stay up this long (the same registration; "
                                        "KRaft: unfenced; a controller: heard from) before the next; a node that "
                                        "restarts or goes away meanwhile stops the roll (crash_loop, exit 1).")]
PauseAfterOpt = Annotated[int | None, typer.Option("--pause-after", metavar="N", min=0, max=2**31 - 1, help="Pause "
                                                   "by itself once N nodes are done (a canary), until `roll "
                                                   "continue`; 0 pauses before the first.", show_default=False)]
BeforeNodeOpt = Annotated[str | None, typer.Option("--before-node", metavar="CMD", help="Shell command run for each "
                                                   "node after its gates, before its first change (silence its "
                                                   "alerts); failing stops the roll, the node untouched. "
                                                   "Placeholders as --stop's.", show_default=False)]
AfterNodeOpt = Annotated[str | None, typer.Option("--after-node", metavar="CMD", help="Shell command run for each "
                                                  "node once it is healthy (and soaked); failing stops the roll "
                                                  "after that node. Placeholders as --stop's.", show_default=False)]
UntilOpt = Annotated[str | None, typer.Option("--until", metavar="TIME", help="Start no node or batch after TIME "
                                             "(ISO 8601 with an offset, or HH:MM local time); then stop, exit 10, "
                                             "resumable.", show_default=False)]
StateOpt = Annotated[Path, typer.Option("--state", metavar="DIR", help="The roll's journal, drain files and hook "
                                        "logs; run again with the same DIR to continue an unfinished roll.")]
# `roll status` and `roll confirm` read (confirm: and journal to) the state a `roll run` keeps; they continue nothing
RollStateOpt = Annotated[Path, typer.Option("--state", metavar="DIR", help="The --state DIR of the roll: its journal "
                                            "(`roll run` keeps it there).")]
FromOpt = Annotated[Path | None, typer.Option("--from", metavar="DIR", help="Estimate the roll's time from the "
                                              "times measured in this earlier roll's state directory (its "
                                              "journal).", show_default=False)]
StepTimeoutOpt = Annotated[float, typer.Option("--step-timeout", metavar="SECONDS", parser=seconds,
                                               help="The longest any one step may take (a hook, a node coming back, "
                                               "catching up).")]
SettleOpt = Annotated[float, typer.Option("--settle", metavar="SECONDS", parser=seconds_or_zero,
                                          help="Wait this long after each node (or batch) before the next.")]
BatchRuleOpt = Annotated[str, typer.Option("--batch-rule", metavar="distinct|min-isr", help="With --parallel: "
                                           "'distinct' (default) never stops two replicas of one partition at once; "
                                           "'min-isr' lets a batch share partitions where each keeps its min ISR.")]
AllowOpt = Annotated[list[str] | None, typer.Option("--allow-unavailable", metavar="TOPIC-GLOB", help="Let "
                                                    "partitions of these topics go offline or under min ISR while "
                                                    "their broker restarts (RF 1, min ISR >= RF); repeatable; named "
                                                    "in the plan, the journal and the output.", show_default=False)]


def _nodes(value: str | None) -> tuple[int, ...] | None:
    if value is None:
        return None
    ids = []
    for part in value.split(","):
        part = part.strip()
        if not (part.isascii() and part.isdigit()) or int(part) > 2**31 - 1:
            raise UsageError(f"--nodes: {part!r} is not a node id (give ids separated by commas: 1,2,3)")
        ids.append(int(part))
    if not ids:
        raise UsageError("--nodes is empty")
    return tuple(sorted(set(ids)))


def _request(nodes: str | None, controllers: str, parallel: int, batch_rule: str) -> Request:
    from kadmin.domain.roll import BATCH_RULES, Request

    if controllers not in ("first", "skip"):
        raise UsageError(f"--controllers: {controllers!r} is not first or skip")
    if batch_rule not in BATCH_RULES:
        raise UsageError(f"--batch-rule: {batch_rule!r} is not {' or '.join(BATCH_RULES)}")
    return Request(_nodes(nodes), controllers, parallel, batch_rule)  # type: ignore[arg-type]


def _allow(globs: list[str] | None) -> tuple[str, ...]:
    out = []
    for g in globs or ():
        if not g.strip():
            raise UsageError("--allow-unavailable is empty (give a topic name or a glob such as 'scratch-*')")
        out.append(g)
    return tuple(out)


def _hooks(stop: str | None, start: str | None, restart: str | None, only_if: str | None, need: bool,
           before_node: str | None = None, after_node: str | None = None) -> Any:
    from kadmin.services.roll_hooks import Hooks

    if restart is not None and (stop is not None or start is not None):
        raise UsageError("give --restart CMD, or --stop CMD and --start CMD, not both")
    if need and restart is None and (stop is None or start is None):
        raise UsageError("give --stop CMD and --start CMD (or --restart CMD): how kadmin stops and starts a node")
    return Hooks(stop, start, restart, only_if, before_node, after_node)


def _until(value: str | None) -> float | None:
    import datetime

    from kadmin.domain.roll import until_time

    if value is None:
        return None
    try:
        return until_time(value, datetime.datetime.now().astimezone())
    except ValueError as e:
        raise UsageError(f"--until: {e}") from None


def _opener(inv: Invocation, deadline: float | None) -> Any:
    """A fresh backend each time it is called (a roll opens the cluster again for each batch), its waits bounded
    by `deadline` (`roll plan`'s overall one; `roll run` has --step-timeout for each step instead)."""
    from kadmin.cluster.connect import open_backend

    def open_() -> Any:
        return open_backend(inv.settings, inv.command, log=inv.renderer.note if inv.verbose else None,
                            deadline=deadline, on_connection=inv.renderer.note)

    return open_


@command(app, "plan")
def plan(
    inv: Invocation,
    nodes: NodesOpt = None,
    controllers: ControllersOpt = "first",
    parallel: ParallelOpt = 1,
    batch_rule: BatchRuleOpt = "distinct",
    allow_unavailable: AllowOpt = None,
    only_if: OnlyIfOpt = None,
    restart: RestartOpt = None,
    from_dir: FromOpt = None,
) -> int:
    """Print, touching nothing, the order and batches in which a roll would restart the nodes, each node's
    steps (the gates it waits on), and whether the cluster is healthy enough to begin.

    The order: KRaft controllers first, one at a time, the quorum leader last; then the brokers. ZooKeeper mode:
    the brokers, the active controller last. With --parallel N, brokers are batched where no partition would
    lose its leader or min ISR and (--batch-rule distinct, the default) no two share a partition (from the
    assignments and live ISRs now; a run recomputes each batch when it starts). With --only-if CMD, the command
    runs per node (it should only look) and the plan says which would be skipped. With --allow-unavailable, the
    partitions it lets become unavailable are named per node. With --from DIR (an earlier roll's state
    directory), each node's time and the total are estimated from the times measured there, per role (a batch
    counts once); a node of a role none of whose nodes is done there gets no estimate. ZooKeeper mode: what the
    controller's move at the end costs the new controller (the full UpdateMetadata fan-out), with a warning above
    1 GiB.
    """
    from kadmin.services import roll as svc
    from kadmin.services import roll_hooks

    req = _request(nodes, controllers, parallel, batch_rule)
    hooks = _hooks(None, None, restart, only_if, need=False)

    def skip_check(node: Any) -> bool:
        out = roll_hooks.run(roll_hooks.render(str(only_if), node), node, "only-if", 600.0, inv.renderer.note,
                             directory=None)
        return out.code == 0

    opts = svc.Options(req, hooks, allow_unavailable=_allow(allow_unavailable))
    result = svc.plan_backend(_opener(inv, inv.overall_deadline()), opts, skip_check if only_if else None, from_dir)
    return inv.emit(result, views.roll_plan)


@command(app, "run", deadline=False)
def run(
    inv: Invocation,
    state: StateOpt,
    stop: StopOpt = None,
    start: StartOpt = None,
    restart: RestartOpt = None,
    nodes: NodesOpt = None,
    controllers: ControllersOpt = "first",
    parallel: ParallelOpt = 1,
    batch_rule: BatchRuleOpt = "distinct",
    allow_unavailable: AllowOpt = None,
    only_if: OnlyIfOpt = None,
    step_timeout: StepTimeoutOpt = 600.0,
    settle: SettleOpt = 0.0,
    soak: SoakOpt = 0.0,
    pause_after: PauseAfterOpt = None,
    before_node: BeforeNodeOpt = None,
    after_node: AfterNodeOpt = None,
    until: UntilOpt = None,
) -> int:
    """Restart every node (or --nodes), one at a time or in safe batches, each behind kadmin's gates, and put
    the leaderships back; journaled in --state DIR, so running the same command again continues.

    Per broker: can-stop; drain; ControlledShutdown (ZooKeeper mode); --stop; wait stopped; --start; the restart
    receipt (ZooKeeper: a larger epoch; KRaft: unfenced again); in every ISR; undrain; partitions check OK;
    --settle. Per KRaft controller: quorum check --restart ID; --stop; wait stopped; --start; caught up with the
    leader. Before the first node the cluster must be healthy (else exit 7, nothing touched).

    A step that fails stops the roll there (no other node is touched; a batch's nodes already stopped are
    brought back first): exit 1 (a gate not met, a node not back within --step-timeout, one kadmin cannot tell
    stopped: see `roll confirm`, or one that restarted during --soak), 4 (the cluster unreachable), 9 (a hook
    failed), 10 (--until passed), 130 (Ctrl-C, SIGTERM or SIGHUP). `roll pause` / `roll continue` hold and
    release the next node.
    No node is journaled done without evidence that it went down and came back, and none is restarted twice.
    -o ndjson streams one event per line. The hooks' output is in DIR/hooks.
    """
    from kadmin.services import roll as svc

    req = _request(nodes, controllers, parallel, batch_rule)
    hooks = _hooks(stop, start, restart, only_if, True, before_node, after_node)
    opts = svc.Options(req, hooks, step_timeout, settle, _allow(allow_unavailable), soak=soak,
                       pause_after=pause_after, until=_until(until))
    return running(inv, lambda emit, progress: svc.run_backend(_opener(inv, None), state, opts, emit, progress.say,
                                                               progress))


def running(inv: Invocation, go: Callable[[Callable[[dict[str, Any]], None], Any], Any]) -> int:
    """Run a roll (`roll run`, `migration roll`): `go(emit, progress)` under the live view, its events streamed
    with -o ndjson, SIGTERM and SIGHUP taken as Ctrl-C; then its result printed (the roll table, or with -o ndjson
    only the closing line on stderr) and its exit code."""
    import signal

    from kadmin import interrupts
    from kadmin.render.renderer import OutputLost
    from kadmin.render.roll_progress import RollProgress

    r = inv.renderer
    progress = RollProgress(r, sys.stderr)

    def emit(ev: dict[str, Any]) -> None:
        if r.fmt == "ndjson" and not r.output_lost:
            try:
                r.stream_event(ev)
            except OutputLost:  # the NDJSON reader went away: the roll goes on (the journal holds every event)
                progress.say("the NDJSON stream's reader went away: the roll goes on; DIR/journal.ndjson has it all")
        progress.update(ev)

    with interrupts.like_ctrl_c(signal.SIGTERM, signal.SIGHUP), progress:
        result = go(emit, progress)
    if r.fmt == "ndjson":
        if result.message:
            r.note(result.message)
        return int(result.exit_code)
    return inv.emit(result, views.roll_report)


@command(app, "confirm", cluster=False)
def confirm(
    inv: Invocation,
    state: RollStateOpt,
    node: Annotated[int, typer.Option("--node", metavar="ID", min=0, max=2**31 - 1, help="The node to confirm.")],
    went_down: Annotated[bool, typer.Option("--went-down", help="It went down since its stop (or restart) hook "
                                            "began (it may be back already).")] = False,
    never_went_down: Annotated[bool, typer.Option("--never-went-down", help="It never went down: its stop (or "
                                                  "restart) hook runs again when the roll continues.")] = False,
) -> int:
    """Tell a stopped roll what the cluster could not: whether a node went down since its stop (or restart) hook
    began. The roll asks for it (exit 1, `cannot_tell`) rather than guess: a hook that brings the node back by
    itself, or one that ended while no kadmin watched, leaves a node that is up and may or may not have
    restarted. Check the node (its process start time), then say which; run the same `roll run` again after.
    Journaled; needs no cluster; refused while a `roll run` holds DIR."""
    from kadmin.services import roll as svc

    if went_down == never_went_down:
        raise UsageError("give --went-down or --never-went-down (one of them)")
    return inv.emit(svc.confirm(state, node, went_down), views.roll_confirm)


@command(app, "pause", cluster=False)
def pause(inv: Invocation, state: RollStateOpt) -> int:
    """Hold the roll in --state DIR: the running `roll run` finishes the node (or batch) in progress, journals
    `paused`, and starts no other until `roll continue`. Needs no cluster; a stopped roll stays paused when it
    is run again."""
    from kadmin.services import roll as svc

    return inv.emit(svc.pause(state, True), views.roll_pause)


@command(app, "continue", cluster=False)
def continue_(inv: Invocation, state: RollStateOpt) -> int:
    """Let the roll in --state DIR go on after `roll pause` or `--pause-after`: the running `roll run` journals
    `continued` and starts its next node. Needs no cluster."""
    from kadmin.services import roll as svc

    return inv.emit(svc.pause(state, False), views.roll_pause)


@command(app, "status", cluster=False)
def status(inv: Invocation, state: RollStateOpt) -> int:
    """What the roll in --state DIR has done, is doing and has left, per node, with timings and the time left
    estimated from the nodes done (reads the journal only: no cluster needed)."""
    from kadmin.services import roll as svc

    return inv.emit(svc.status(state), views.roll_report)

