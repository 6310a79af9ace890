"""`kadmin partitions`: partition state and health, from ZooKeeper (--zookeeper) or, on KRaft, over the
Kafka protocol (--bootstrap-server); the backend is chosen by kadmin/cluster/connect.py."""

from __future__ import annotations

from typing import Annotated

import typer

from kadmin.cli import gates
from kadmin.cli.options import Invocation, MinIsrDefault, TopicPatterns, check_broker_id, command, views
from kadmin.render.progress import ScanProgress
from kadmin.services import partitions as svc

app = typer.Typer(name="partitions", help="Partition leaders, ISRs and health (under-replicated, offline, min ISR).",
                  no_args_is_help=True)

@command(app, "list")
def list_(
    inv: Invocation,
    topic: Annotated[str | None, typer.Option("--topic", metavar="TOPIC", help="Only this topic.",
                                              show_default=False)] = None,
    broker: Annotated[int | None, typer.Option("--broker", metavar="ID", help="Only partitions with a replica on ID.",
                                               show_default=False, callback=check_broker_id)] = None,
    under_replicated: Annotated[bool, typer.Option(
        "--under-replicated", help="ISR smaller than the replicas (replicas a reassignment is adding do not count).")]
    = False,
    offline: Annotated[bool, typer.Option("--offline", "--unavailable", help="No live leader.")] = False,
    under_min_isr: Annotated[bool, typer.Option(
        "--under-min-isr", help="No live leader, or ISR below the effective min ISR: min(min.insync.replicas, "
        "replicas), what the leader enforces since Kafka 3.7.")] = False,
    at_min_isr: Annotated[bool, typer.Option("--at-min-isr", help="ISR exactly at the effective min ISR.")] = False,
    min_isr_default: MinIsrDefault = None,
) -> int:
    """List partitions: leader, epochs, replicas, ISR, reassignments and min ISR.

    Health filters combine with OR, as kafka-topics' --under-replicated-partitions,
    --unavailable-partitions, --under-min-isr-partitions and --at-min-isr-partitions do; --topic and
    --broker narrow the set. The partition epoch is the state znode's version. Topics queued for
    deletion are listed, marked "deleting". With --bootstrap-server (KRaft) the partitions come from
    DescribeTopicPartitions (paged), min ISR and its source from DescribeConfigs; the partition epoch
    is not served there (null). In ZooKeeper mode, --bootstrap-server given too makes min ISR and its
    source come from DescribeConfigs (the brokers' static server.properties value included).

    JSON keys elr and last_known_elr: KIP-966's eligible leader replicas and last known ELR, as
    DescribeTopicPartitions serves them (Kafka 4.x, feature eligible.leader.replicas.version >= 1;
    lists, empty while ELR is off or unused); null where the backend does not have them (ZooKeeper
    mode, brokers that answer only Metadata).
    """
    f = svc.Filters(topic, broker, under_replicated, offline, under_min_isr, at_min_isr)
    with ScanProgress() as progress:
        result = svc.list_partitions(inv.backend().partitions, f, progress=progress, min_isr_default=min_isr_default)
    return inv.emit(result, views.partitions_list)


@command(app, "check")
def check(inv: Invocation, topics: TopicPatterns = None, min_isr_default: MinIsrDefault = None) -> int:
    """Check every partition. Exit 0 healthy, 1 some under-replicated, 2 some offline or under min ISR.

    These are the monitoring-plugin (Nagios) codes; each finding names the partition and why. Exit 3
    (UNKNOWN) when no verdict could be reached: a usage or configuration error, an unreachable
    cluster, an internal error, or (KRaft) a broker whose log dirs could not be listed, so the check
    cannot show it saw every partition. A partition of a topic the principal may not Describe, found in
    a broker's log dirs, is a finding (exit 2), and so is a partition whose leader's min.insync.replicas
    could not be read. Topics queued for deletion are left out, as Kafka's controller leaves them out.
    """
    return gates.partitions_check(inv, topics, min_isr_default)
