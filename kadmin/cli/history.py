"""`kadmin history`: post-mortems and fleet statistics from ZooKeeper and KRaft logs, on Spark."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer

from kadmin.cli.options import Invocation, command, views
from kadmin.errors import UsageError

app = typer.Typer(name="history", help="Cluster history on Spark: ingest ZooKeeper/KRaft logs, report bounces.",
                  no_args_is_help=True)

MasterOpt = Annotated[str, typer.Option("--master", metavar="URL", envvar="KADMIN_SPARK_MASTER",
                                        help="Spark master: local[N], spark://host:port, yarn, k8s://...")]


def _time(value: str | None, name: str) -> int | None:
    if value is None:
        return None
    try:
        dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as e:
        raise UsageError(f"{name} {value!r}: give an ISO 8601 time, e.g. 2026-11-21T22:00:00Z") from e
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return int(dt.timestamp() * 1000)


@command(app, "ingest", cluster=False)
def ingest(
    inv: Invocation,
    paths: Annotated[list[str], typer.Argument(metavar="PATH...", help="ZooKeeper data directories or log.* files, "
                                               "KRaft __cluster_metadata-0 directories, kadmin NDJSON files.")],
    cluster: Annotated[str, typer.Option("--cluster", metavar="NAME", help="The cluster these logs belong to: "
                                         "letters, digits, '.', '_', '-'.")],
    out: Annotated[Path, typer.Option("--out", metavar="DIR", help="The Parquet event table.")],
    master: MasterOpt = "local[2]",
    chroot: Annotated[str | None, typer.Option("--chroot", metavar="PATH", help="Only this Kafka chroot of a "
                                               "shared ZooKeeper (default: any).", show_default=False)] = None,
    wait_lock: Annotated[float, typer.Option("--wait-lock", metavar="SECONDS", min=0,
                                             help="When another ingest is writing the table, wait this long for "
                                             "it to finish instead of exiting 7.")] = 0.0,
) -> int:
    """Turn logs into one Parquet event table partitioned by cluster and date (re-ingesting adds nothing twice).

    Each run commits atomically: a killed run leaves the table as it was; the next run cleans up after it.

    Logs may be ingested in parts, oldest first: the result equals one ingest of them all.

    One ingest writes a table at a time (lock: DIR/_kadmin.lock); another one exits 7 unless --wait-lock.

    A damaged file keeps every valid record before the damage, is named on stderr, and exits 5.

    So does a directory that cannot be read. A bad --cluster name or an --out that cannot be written exits 2.
    """
    from kadmin.render.progress import ScanProgress
    from kadmin.services.history import ingest as run

    with ScanProgress() as progress:
        return inv.emit(run(paths, cluster, str(out), master, chroot, progress if progress.enabled else None,
                            wait_lock=wait_lock, note=inv.renderer.note,
                            log=inv.renderer.note if inv.verbose else None), views.key_values)


@command(app, "report", cluster=False)
def report(
    inv: Invocation,
    directory: Annotated[Path, typer.Argument(metavar="DIR", help="The event table written by ingest.")],
    kind: Annotated[str, typer.Argument(metavar="KIND", help="One of: bounces, generations, controllers, "
                                        "isr-churn, epochs.")],
    cluster: Annotated[str | None, typer.Option("--cluster", metavar="NAME", help="Only this cluster's events "
                                                "(the --cluster name given to ingest); default: every cluster.",
                                                show_default=False)] = None,
    since: Annotated[str | None, typer.Option("--since", metavar="TIME", help="ISO 8601.", show_default=False)]
    = None,
    until: Annotated[str | None, typer.Option("--until", metavar="TIME", help="ISO 8601.", show_default=False)]
    = None,
    png: Annotated[Path | None, typer.Option("--png", metavar="FILE", help="Also draw the report as a PNG chart "
                                             "(generations: a timeline of broker generations).",
                                             show_default=False)] = None,
    master: MasterOpt = "local[2]",
) -> int:
    """Reports: broker generations, bounce counts and downtime percentiles, controller failovers,
    ISR shrinks/expands and rejoin times after bounces, and the max broker epoch over time.

    Reads only what ingests committed (needs no write access). Exit 2 when DIR is no event table.
    """
    from kadmin.pipeline.reports import KINDS
    from kadmin.services.history import report as run

    if kind not in KINDS:
        raise UsageError(f"unknown report {kind!r}: choose from {', '.join(KINDS)}")
    return inv.emit(run(str(directory), kind, cluster, _time(since, "--since"), _time(until, "--until"), master,
                        str(png) if png else None), views.records, detail=kind)
