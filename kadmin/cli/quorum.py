"""`kadmin quorum`: the metadata quorum (seed 004): KRaft controllers, or the ZooKeeper ensemble."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from kadmin.cli.options import INT64_MAX, Invocation, command
from kadmin.errors import ConfigError, UsageError

app = typer.Typer(name="quorum", help="Metadata quorum status and replication lag (KRaft or ZooKeeper).",
                  no_args_is_help=True)


def load(inv: Invocation) -> tuple[Any, int]:
    """(QuorumState, now in ms) from the ZooKeeper ensemble or the KRaft cluster the settings name."""
    from kadmin.cluster import connect

    log = inv.renderer.note if inv.verbose else None
    if inv.settings.get("zookeeper"):
        return connect.zookeeper_quorum(inv.settings, log)
    if inv.settings.get("bootstrap-server") or inv.settings.get("bootstrap-controller"):
        return inv.kraft().describe_quorum()  # type: ignore[no-any-return]
    raise ConfigError("You must specify either --bootstrap-controller or --bootstrap-server "
                      "(or --zookeeper for a ZooKeeper ensemble)")


@command(app, "describe")
def describe(
    inv: Invocation,
    status: Annotated[bool, typer.Option("--status", help="Leader, epoch, high watermark, max follower lag, "
                                         "voters and observers.")] = False,
    replication: Annotated[bool, typer.Option("--replication", help="One row per replica: log end offset, lag, "
                                              "last fetch and last caught-up times.")] = False,
    human_readable: Annotated[bool, typer.Option("--human-readable", help="With --replication: times as "
                                                 "'N ms ago'.")] = False,
) -> int:
    """Describe the metadata quorum. `-o plain` is exactly what `kafka-metadata-quorum describe` prints.

    With --zookeeper the ZooKeeper ensemble is the quorum: NodeId is the server id, LogEndOffset the
    zxid counter, Lag the leader's zxid minus the member's, LeaderEpoch the zxid epoch.
    """
    from kadmin.services.quorum import describe as run

    if status == replication:
        raise UsageError("Only one of --status or --replication should be specified with describe sub-command"
                         if status else "One of --status or --replication must be specified with describe sub-command")
    if human_readable and status:
        raise UsageError("The option --human-readable is only supported along with --replication")
    q, now_ms = load(inv)
    return inv.emit(run(q, "status" if status else "replication", human_readable, now_ms))


@command(app, "check")
def check(
    inv: Invocation,
    max_lag: Annotated[int, typer.Option("--max-lag", metavar="N", min=0, max=INT64_MAX,
                                         help="Warn when a replica is more than N offsets (transactions) behind.")]
    = 1000,
    max_lag_ms: Annotated[int, typer.Option("--max-lag-ms", metavar="MS", min=0, max=INT64_MAX,
                                            help="Warn when a replica last caught up more than MS ago.")] = 5000,
    fetch_timeout_ms: Annotated[int, typer.Option("--fetch-timeout-ms", metavar="MS", min=1, max=INT64_MAX,
                                                  help="A leader not fetched from by a majority within MS is "
                                                  "critical (seed 004's zombie leader).")] = 2000,
    restart: Annotated[int | None, typer.Option("--restart", metavar="NODE", help="Also check that a majority of "
                                                "the other voters stays caught up if NODE restarts.",
                                                show_default=False)] = None,
) -> int:
    """Check the quorum. Exit 0 OK, 1 WARNING, 2 CRITICAL (the monitoring convention), naming each finding.

    CRITICAL: no leader; fewer than a majority of voters up; a leader not fetched from by a majority
    within --fetch-timeout-ms; with --restart, too few caught-up voters left. WARNING: a member
    down, a voter or observer lagging, a ZooKeeper member on an older zxid epoch.
    """
    from kadmin.domain.quorum import CheckLimits
    from kadmin.services.quorum import check as run

    q, now_ms = load(inv)
    return inv.emit(run(q, CheckLimits(max_lag, max_lag_ms, fetch_timeout_ms, restart), now_ms))
