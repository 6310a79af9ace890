"""`kadmin quorum`: the metadata quorum (KIP-595): KRaft controllers, or the ZooKeeper ensemble."""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Annotated

import typer

from kadmin.cli.options import INT64_MAX, Invocation, command, views
from kadmin.errors import UsageError
from kadmin.render.quorum_text import DEFAULT_TOOL_FORMAT, TOOL_FORMATS

if TYPE_CHECKING:
    from kadmin.domain.quorum import QuorumState

ToolFormat = Enum("ToolFormat", {"v" + f.replace(".", "_"): f for f in TOOL_FORMATS}, type=str)  # type: ignore[misc]

app = typer.Typer(name="quorum", help="Metadata quorum status and replication lag (KRaft or ZooKeeper).",
                  no_args_is_help=True)


def load(inv: Invocation) -> tuple[QuorumState, int]:
    """(QuorumState, now in ms) from the ZooKeeper ensemble or the KRaft cluster the settings name."""
    return inv.backend().quorum.describe_quorum()


@command(app, "describe")
def describe(
    inv: Invocation,
    status: Annotated[bool, typer.Option("--status", help="Leader, epoch, high watermark, max follower lag, "
                                         "voters and observers.")] = False,
    replication: Annotated[bool, typer.Option("--replication", help="One row per replica: log end offset, lag, "
                                              "last fetch and last caught-up times.")] = False,
    human_readable: Annotated[bool, typer.Option("--human-readable", help="With --replication: times as "
                                                 "'N ms ago'. A time ahead of this machine's clock "
                                                 "(clock drift) fails with exit 1, as Kafka's tool does.")] = False,
    tool_format: Annotated[ToolFormat, typer.Option(
        "--tool-format", help="Print -o plain as this version of kafka-metadata-quorum does: 4.1 (4.1 and "
        "later), 3.9 (3.9 and 4.0: \"directoryId\": null for a replica without one), 3.8 (3.4 to 3.8: no "
        "DirectoryId column, voters and observers as a list of ids).")] = ToolFormat(DEFAULT_TOOL_FORMAT),
) -> int:
    """Describe the metadata quorum. `-o plain` is exactly what `kafka-metadata-quorum describe` prints.

    The text is Kafka 4.1+'s tool's; --tool-format 3.9 or 3.8 prints an older tool's.

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
    result = run(q)  # exit 4 without a leader
    # the text is made here, before anything is printed: clock drift under --human-readable is exit 1
    view = views.quorum_describe(result.data, "status" if status else "replication", human_readable, now_ms,
                                 tool_format.value)
    return inv.emit(result, view)


@command(app, "check")
def check(
    inv: Invocation,
    max_lag: Annotated[int, typer.Option("--max-lag", metavar="N", min=0, max=INT64_MAX,
                                         help="Warn when a replica is more than N offsets (transactions) behind.")]
    = 1000,
    max_lag_ms: Annotated[int, typer.Option("--max-lag-ms", metavar="MS", min=0, max=INT64_MAX,
                                            help="Warn when a replica last caught up more than MS ago "
                                            "(by the leader's clock).")] = 5000,
    fetch_timeout_ms: Annotated[int, typer.Option("--fetch-timeout-ms", metavar="MS", min=1, max=INT64_MAX,
                                                  help="The controllers' controller.quorum.fetch.timeout.ms: a "
                                                  "leader not fetched from by a majority (itself counted) within "
                                                  "1.5 x MS is critical, as Kafka's leader resigns then (a "
                                                  "zombie leader, KIP-595).")] = 2000,
    restart: Annotated[int | None, typer.Option("--restart", metavar="NODE", help="Also check that a majority of "
                                                "the other voters stays caught up if NODE restarts.",
                                                show_default=False)] = None,
) -> int:
    """Check the quorum. Exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN (no verdict), naming each finding.

    These are the monitoring-plugin (Nagios) codes: UNKNOWN is a usage or configuration error, an
    unreachable quorum or an internal error.

    CRITICAL: no leader; fewer than a majority of voters up; a leader not fetched from by a majority
    within 1.5 x --fetch-timeout-ms (3000 ms by default); with --restart, too few caught-up voters left.
    WARNING: a member down, a voter or observer lagging (or not fetching in this epoch), a ZooKeeper
    member on an older zxid epoch.

    Times are measured on the leader's clock, not this machine's: every DescribeQuorum timestamp is the
    leader's, and the leader stamps its own row with its current time when it answers, so "N ms ago" is
    that time minus the replica's LastFetchTimestamp / LastCaughtUpTimestamp (as kafka-metadata-quorum's
    MaxFollowerLagTimeMs). Clock skew between this machine and the controllers can neither raise nor
    hide a finding. The zombie rule is Kafka's check quorum (3.7+): the leader resigns when fewer than a
    majority of the voters, itself counted, fetched from it within 1.5 x controller.quorum.fetch.timeout.ms.
    Without timestamps (DescribeQuorum v0, ZooKeeper) the local clock is used; -o json says which.
    """
    from kadmin.domain.quorum import CheckLimits
    from kadmin.services.quorum import check as run

    q, now_ms = load(inv)
    return inv.emit(run(q, CheckLimits(max_lag, max_lag_ms, fetch_timeout_ms, restart), now_ms), views.quorum_check)
