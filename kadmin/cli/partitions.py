"""`kadmin partitions`: partition state and health, read from ZooKeeper at scale."""

from __future__ import annotations

from typing import Annotated

import typer

from kadmin.cli.options import INT32_MAX, Invocation, check_broker_id, command
from kadmin.render.progress import ScanProgress
from kadmin.services import partitions as svc

app = typer.Typer(name="partitions", help="Partition leaders, ISRs and health (under-replicated, offline, min ISR).",
                  no_args_is_help=True)

MinIsrDefault = Annotated[int, typer.Option("--min-isr-default", min=1, max=INT32_MAX, metavar="N",
                                            help="min.insync.replicas for topics without their own.")]


@command(app, "list")
def list_(
    inv: Invocation,
    topic: Annotated[str | None, typer.Option("--topic", metavar="TOPIC", help="Only this topic.",
                                              show_default=False)] = None,
    broker: Annotated[int | None, typer.Option("--broker", metavar="ID", help="Only partitions with a replica on ID.",
                                               show_default=False, callback=check_broker_id)] = None,
    under_replicated: Annotated[bool, typer.Option("--under-replicated", help="ISR smaller than the replicas.")]
    = False,
    offline: Annotated[bool, typer.Option("--offline", help="No live leader.")] = False,
    under_min_isr: Annotated[bool, typer.Option("--under-min-isr", help="ISR below min.insync.replicas.")] = False,
    at_min_isr: Annotated[bool, typer.Option("--at-min-isr", help="ISR exactly at min.insync.replicas.")] = False,
    min_isr_default: MinIsrDefault = 1,
) -> int:
    """List partitions: leader, epochs, replicas, ISR, reassignments and min ISR.

    Health filters combine with OR; --topic and --broker narrow the set. The partition epoch is
    the state znode's version.
    """
    f = svc.Filters(topic, broker, under_replicated, offline, under_min_isr, at_min_isr)
    with ScanProgress() as progress:
        result = svc.list_partitions(inv.cluster(), f, progress=progress, min_isr_default=min_isr_default)
    return inv.emit(result)


@command(app, "check")
def check(inv: Invocation, min_isr_default: MinIsrDefault = 1) -> int:
    """Check every partition. Exit 0 healthy, 1 some under-replicated, 2 some offline or under min ISR.

    These are the monitoring (Nagios) codes; each finding names the partition and why.
    """
    with ScanProgress() as progress:
        result = svc.check(inv.cluster(), progress=progress, min_isr_default=min_isr_default)
    return inv.emit(result)
