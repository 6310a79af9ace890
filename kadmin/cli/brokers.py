"""`kadmin brokers`: broker registrations, epochs and bounces."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kadmin import interrupts
from kadmin.cli import gates
from kadmin.cli.options import (
    INT64_MAX,
    BrokerIdArg,
    Invocation,
    MinIsrDefault,
    TopicPatterns,
    command,
    lazy_module,
    seconds,
    views,
)
from kadmin.errors import UsageError
from kadmin.exit_codes import ExitCode
from kadmin.results import Result

if TYPE_CHECKING:
    from kadmin.payloads import BrokerEvent
    from kadmin.services import brokers as svc
else:
    svc = lazy_module("kadmin.services.brokers")  # built when a command runs, not for --help

app = typer.Typer(name="brokers", help="Broker registrations, broker epochs (KIP-380) and bounces.",
                  no_args_is_help=True)

BrokerId = BrokerIdArg  # 0 to 2^31-1, else exit 2


MetadataDir = Annotated[Path | None, typer.Option(
    "--metadata-dir", metavar="DIR", show_default=False,
    help="Offline, on a KRaft controller host: read the registrations from this metadata.log.dir "
    "(its __cluster_metadata-0 snapshot and log), not from a cluster.")]


@command(app, "list")
def list_(inv: Invocation, metadata_dir: MetadataDir = None) -> int:
    """List live broker registrations with their epoch (the czxid of /brokers/ids/<id>).

    Exit 5 (partial) when a registration cannot be parsed; the row is shown with state `invalid`.

    With --bootstrap-server (KRaft) the registrations come from DescribeCluster v2 with
    IncludeFencedBrokers (`state` active or fenced; `epoch` null). The controllers describe only
    themselves (KIP-919): --bootstrap-controller exits 3, naming --bootstrap-server.

    --metadata-dir DIR (offline, on a controller host; no cluster is contacted): the registrations
    as the controller's newest snapshot plus its log after it replay them, with the broker epoch,
    `incarnation_id`, `fenced`, `in_controlled_shutdown`, endpoints, features and `offset` (of the
    RegisterBrokerRecord; null when it is in the snapshot). Exit 5 when part of the log is damaged.
    """
    if metadata_dir is not None:
        return inv.emit(svc.list_metadata_dir(metadata_dir), views.brokers_list)
    return inv.emit(svc.list_brokers(inv.backend().registrations), views.brokers_list)


@command(app, "show")
def show(inv: Invocation, broker_id: BrokerId) -> int:
    """Show one registration in full: decoded fields, raw znode data and its stat.

    Exit 1 when the broker is not registered. KRaft (--bootstrap-server) keeps registrations in the
    metadata log, not in znodes: exit 3, naming `brokers list` and `brokers list --metadata-dir`.
    """
    return inv.emit(svc.show_broker(inv.backend().epochs, broker_id), views.key_values)


@command(app, "max-epoch")
def max_epoch(inv: Invocation) -> int:
    """Print the max broker epoch over live brokers (KIP-380 epochs). Plain output is the bare integer.

    Exit 1 when no broker is registered. KRaft (--bootstrap-server): exit 3, as DescribeCluster carries
    no broker epoch (`brokers list --metadata-dir DIR` on a controller host shows each one).
    """
    return gates.max_epoch(inv)


@command(app, "diff")
def diff(
    inv: Invocation,
    since: Annotated[Path, typer.Option("--since", metavar="FILE",
                                        help="A saved `kadmin brokers list -o json` to compare with.")],
    exit_code: Annotated[bool, typer.Option("--exit-code", help="Exit 1 when any broker is new, dead or bounced.")]
    = False,
    metadata_dir: MetadataDir = None,
    to: Annotated[Path | None, typer.Option("--to", metavar="FILE", show_default=False,
                                            help="Compare with this saved listing instead of the live cluster.")]
    = None,
) -> int:
    """Compare live brokers with a saved listing: new, dead, bounced (epoch grew) and unchanged.

    KRaft, offline: --metadata-dir DIR compares with a controller's metadata log now, --to FILE with
    another saved `brokers list --metadata-dir -o json`. There a bounce is a new incarnation id or
    a larger broker epoch; Kafka's amended registration (same incarnation, same epoch) is unchanged.
    """
    if metadata_dir is not None and to is not None:
        raise UsageError("give at most one of --metadata-dir, --to")
    if to is not None:
        return inv.emit(svc.diff_saved(since, to, exit_code_on_change=exit_code), views.brokers_diff)
    if metadata_dir is not None:
        return inv.emit(svc.diff_metadata_dir(since, metadata_dir, exit_code_on_change=exit_code), views.brokers_diff)
    backend = inv.backend()
    backend.require("epochs")  # KRaft: exit 3 before the file is read
    before = svc.load_saved_epochs(since)
    return inv.emit(svc.diff(backend.epochs, before, exit_code_on_change=exit_code), views.brokers_diff)


@command(app, "watch")
def watch(
    inv: Invocation,
    count: Annotated[int | None, typer.Option("--count", metavar="N", min=1, max=INT64_MAX,
                                              help="Stop after N events (exit 1 if the timeout comes first).",
                                              show_default=False)] = None,
    timeout: Annotated[float | None, typer.Option("--timeout", metavar="SECONDS", parser=seconds,
                                                  help="Stop after this long "
                                                  "(default: run until Ctrl-C).", show_default=False)] = None,
    initial: Annotated[bool, typer.Option("--initial", help="First report every live broker as registered.")] = False,
) -> int:
    """Stream registration events (registered, deregistered, bounced, updated) as they happen.

    Driven by ZooKeeper watches. After a lost connection or an expired session every epoch is read
    again and each broker that re-registered meanwhile is reported as bounced. Ctrl-C exits 130.

    KRaft (--bootstrap-server): DescribeCluster with fenced brokers, polled with backoff (the
    interval is said on stderr); events registered, unregistered, fenced, unfenced and
    endpoint_changed, with `fenced` and `endpoint` (`epoch` is null: DescribeCluster has none). A
    change undone between two polls is not seen; a restart shows as fenced then unfenced.
    """
    deadline = None if timeout is None else time.monotonic() + timeout
    r = inv.renderer
    events: list[BrokerEvent] = []
    code = ExitCode.OK
    stream = svc.watch(inv.backend(deadline, open_ended=True).registrations, count=count,
                       timeout=gates.left(deadline), initial=initial, on_note=r.note, asked=timeout)
    try:
        for ev in stream:
            r.stream_item(ev, views.broker_events, first=not events)
            events.append(ev)
    except (KeyboardInterrupt, Exception) as e:  # noqa: BLE001 - Ctrl-C is how a watch without --timeout ends
        if not isinstance(e, KeyboardInterrupt) and not interrupts.interrupted():  # (one a library swallowed too)
            raise
        print("", file=sys.stderr)
        r.note("interrupted")
        code = ExitCode.INTERRUPTED
    if r.fmt == "json":
        return inv.emit(Result(data=events, exit_code=code), views.broker_events)
    return int(code)


@command(app, "wait")
def wait(
    inv: Invocation,
    broker_id: BrokerId,
    registered: Annotated[bool, typer.Option("--registered", help="Wait until the broker is registered.")] = False,
    gone: Annotated[bool, typer.Option("--gone", help="Wait until the broker's registration is gone.")] = False,
    fenced: Annotated[bool, typer.Option("--fenced", help="KRaft: wait until the broker is registered and "
                                         "fenced.")] = False,
    unfenced: Annotated[bool, typer.Option("--unfenced", help="KRaft: wait until the broker is registered and "
                                           "unfenced (active).")] = False,
    epoch_gt: Annotated[int | None, typer.Option("--epoch-gt", metavar="EPOCH", min=-1, max=INT64_MAX,
                                                 help="Wait until it re-registers with an epoch greater than EPOCH "
                                                 "(the restart receipt).", show_default=False)] = None,
    in_sync: Annotated[bool, typer.Option("--in-sync", help="Wait until the broker is in the ISR of every "
                                          "partition that lists it as a replica.")] = False,
    timeout: Annotated[float, typer.Option("--timeout", metavar="SECONDS", parser=seconds,
                                           help="Give up after this long (exit 1).")]
    = 300.0,
) -> int:
    """Block until a broker's registration condition holds (exit 0) or the timeout passes (exit 1).

    --in-sync waits for the broker to rejoin every ISR it belongs in, saying on stderr what still
    blocks; after one scan it watches only those partitions' state znodes (ZooKeeper mode), or polls
    them with DescribeTopicPartitions every 0.5 s doubling to 5 s (--bootstrap-server, KRaft). A
    partition the broker is back in is no longer read, so the polls shrink as it catches up.

    Rolling bounce: save `kadmin brokers show ID -o json | jq .data.epoch`, restart the broker, then
    `kadmin brokers wait ID --epoch-gt SAVED`. Watch-driven: returns as soon as ZooKeeper says so.

    KRaft (--bootstrap-server): --registered, --gone, --fenced and --unfenced poll DescribeCluster
    (v2, with fenced brokers) with backoff, the interval said on stderr. Rolling bounce: after the
    restart, --fenced (the old process's session ended) then --unfenced (the new one caught up).
    --epoch-gt exits 3 there (DescribeCluster has no broker epoch; `brokers list --metadata-dir`
    on a controller host shows it). Below DescribeCluster v2 (Kafka 3.x) fenced brokers are not
    listed: --fenced and --gone exit 3, --registered means registered and unfenced.
    """
    return gates.wait(inv, broker_id, registered=registered, gone=gone, fenced=fenced, unfenced=unfenced,
                      epoch_gt=epoch_gt, in_sync=in_sync, timeout=timeout)


@command(app, "can-stop")
def can_stop(
    inv: Invocation,
    broker_id: BrokerId,
    topics: TopicPatterns = None,
    min_isr_default: MinIsrDefault = None,
) -> int:
    """Exit 0 when stopping the broker leaves every partition it hosts with a leader and at least min ISR.

    Otherwise exit 1 listing the blocking partitions. The min ISR is what the leader after the stop
    enforces: its min.insync.replicas (topic, its dynamic broker value, the cluster default, then
    --min-isr-default) capped by the replica count (Kafka 3.7+). Topics queued for deletion are left out.
    With --bootstrap-server (KRaft) the partitions, live brokers and min ISR levels come from the brokers
    (DescribeTopicPartitions, DescribeCluster, DescribeConfigs, ListPartitionReassignments), and the
    broker's own log dirs (DescribeLogDirs) prove every partition it hosts was seen: a partition of a topic
    the principal may not Describe, log dirs that cannot be listed, or a leader-to-be whose min ISR cannot
    be read make the answer "cannot stop" (exit 1), naming what could not be seen and the ACL or address
    that would let kadmin see it. --topic limits the verdict to the topics named.
    """
    return gates.can_stop(inv, broker_id, topics, min_isr_default)


@command(app, "shutdown")
def shutdown(
    inv: Invocation,
    broker_id: BrokerId,
    epoch: Annotated[int | None, typer.Option("--epoch", metavar="EPOCH", min=0, max=INT64_MAX,
                                              help="Send this broker epoch instead of "
                                              "the registration's czxid.", show_default=False)] = None,
    wait_: Annotated[bool, typer.Option("--wait", help="Repeat until the broker leads no partition (or timeout).")]
    = False,
    timeout: Annotated[float, typer.Option("--timeout", metavar="SECONDS", parser=seconds,
                                           help="Give up after this long.")] = 60.0,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Say what would be sent and what can-stop says; "
                                          "send nothing.")] = False,
    force: Annotated[bool, typer.Option("--force", help="Send even when can-stop fails.")] = False,
    listener: Annotated[str | None, typer.Option("--listener", metavar="NAME", help="The controller listener to "
                                                 "use (default: the first one with our security protocol).",
                                                 show_default=False)] = None,
) -> int:
    """One-shot controlled shutdown (ControlledShutdown, API key 7), fenced by the broker epoch.

    Reads the broker's epoch (its czxid) and the active controller from ZooKeeper and asks the
    controller to move the broker's leaderships away. Refuses with exit 7 when `can-stop` fails
    unless --force. Exit 6 when the controller rejects it: STALE_BROKER_EPOCH means the broker has
    re-registered since that epoch. Exit 1 when partitions remain led by the broker. Exit 8 when the
    cluster does not serve it: /controller names a KRaft controller (a ZooKeeper to KRaft migration)
    or the controller lacks the API (Kafka 4.0 removed it). A KRaft cluster (--bootstrap-server or
    --bootstrap-controller, no --zookeeper): exit 3, naming `brokers drain` (KRaft has no such request).

    Once accepted, the broker stays in the controller's shutting-down set until it restarts (a new
    registration): it is dropped from every ISR it follows and is not elected leader, even if it
    keeps running. Stop the broker after this; it is no way to drain a broker that stays up. A
    partition whose whole ISR is that broker cannot move meanwhile (the controller refuses to grow an
    ISR naming a shutting-down broker): such partitions are named (`isr_only_this_broker`).

    The principal needs the CLUSTER_ACTION permission on the cluster resource. A controller that
    speaks only ControlledShutdown v1 (Kafka 2.0/2.1) gets no epoch: fencing does not apply (a warning
    says so). With --wait, a controller that dies is followed to its successor (re-reading /controller).
    """
    from kadmin.render.progress import ScanProgress
    from kadmin.services.shutdown import shutdown as run

    if timeout <= 0:
        raise UsageError("--timeout must be positive")
    deadline = time.monotonic() + timeout  # one deadline for the connections and the service's waits
    backend = inv.backend(deadline)
    links = backend.controller_links  # KRaft: exit 3 before anything is asked
    with ScanProgress() as progress:
        result = run(backend.epochs, links, broker_id, epoch=epoch, wait=wait_, timeout=timeout, dry_run=dry_run,
                     force=force, listener=listener, progress=progress, deadline=deadline)
    return inv.emit(result, views.shutdown)


@command(app, "unregister")
def unregister(
    inv: Invocation,
    broker_id: BrokerId,
    yes: Annotated[bool, typer.Option("--yes", "-y", hidden=True, help="Deprecated: nothing is asked.")] = False,
    force: Annotated[bool, typer.Option("--force", help="Unregister even a broker that is active now.")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Check that the broker may go; send nothing.")]
    = False,
) -> int:
    """KRaft: remove a broker's registration (UnregisterBroker, KIP-631), e.g. one that is gone for good.

    Refuses a broker that is currently active (unfenced) without --force (exit 7); nothing is asked
    (scripts run it). The controllers cannot say whether a broker is active (KIP-919): with
    --bootstrap-controller it exits 3 unless --force.
    """
    if yes:
        inv.deprecated("--yes", "unregister asks for no confirmation (an active broker is refused without --force)")
    return inv.emit(svc.unregister(inv.backend().unregistration, broker_id, force, dry_run), views.key_values)


# ---------------------------------------------------------------------------------------------------
# Leadership drain: `drain` / `undrain`, both modes (kadmin/services/drain.py)


DrainTimeout = Annotated[float, typer.Option("--timeout", metavar="SECONDS", parser=seconds,
                                             help="Give up waiting for the leaders to move after this long (exit 1).")]


@command(app, "drain")
def drain(
    inv: Invocation,
    broker_id: BrokerId,
    save: Annotated[Path | None, typer.Option("--save", metavar="FILE", help="Save the original replica order here "
                                              "(default: $XDG_STATE_HOME/kadmin/drain/broker-ID-TIME.json); never "
                                              "overwritten.", show_default=False)] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Say what would be reordered and elected; change "
                                          "nothing, write no file.")] = False,
    force: Annotated[bool, typer.Option("--force", help="Drain even when a reassignment is in flight for a partition "
                                        "the broker hosts (those partitions are left alone).")] = False,
    timeout: DrainTimeout = 120.0,
) -> int:
    """Move every leadership off a running broker without moving data (Cruise Control's demote).

    Reorders each partition's replicas, ID last and, where ID leads, the live in-sync replicas first so
    that the new preferred leader can be elected (the same replica set, so no data moves;
    AlterPartitionReassignments, or /admin/reassign_partitions with --zookeeper only), then asks for
    preferred-leader elections (ElectLeaders, or /admin/preferred_replica_election). The original
    order is saved first to a versioned JSON file whose path is printed: `undrain ID --from FILE`
    restores it. Then the leaders are read again, every 0.1 s growing to 1 s, until the broker leads
    nothing or --timeout passes. Plain output is the file's path (with --dry-run: one line per
    partition to reorder, `topic<TAB>partition<TAB>replicas<TAB>new replicas`).

    The file is written atomically (a killed drain leaves no file or a complete one) and records the
    cluster's id; the partitions are read again just before anything is sent. Exit 7 when a reassignment
    is in flight for a partition the broker hosts (unless --force), or the partitions changed since they
    were read (another drain or reassignment is running; nothing was sent, the file is removed). The
    verdict comes from a fresh reading: exit 1 naming what the broker still leads, e.g. a partition whose
    only in-sync replica it is (`only_isr`: no one else may lead it), or the partitions another
    reassignment changed during the drain (`changed_by_others`). Never "leads none" past what kadmin
    cannot see: on KRaft, a partition the broker hosts (its log dirs list it) in a topic the principal may
    not Describe, or a broker whose log dirs could not be listed, makes it exit 5 naming them. Ctrl-C
    after the reordering was sent stops before the election: exit 130 naming the undrain command that
    restores the order. The broker stays a preferred leader nowhere, so Kafka's automatic leader rebalance
    does not move leaders back; undrain does. Drains stack: a drain of another broker made after this one
    saves this one's order as its original, so undo stacked drains last first; the file records the order
    each drain set, and an undrain that is not the last one refuses (exit 7) naming the file to undo
    first. One at a time: drain and undrain take the cluster's leadership lease before they read
    (docs/brokers.md) and wait for another kadmin's until --timeout, then exit 7 (nothing sent); a
    principal that may not take it drains anyway, with a warning.
    """
    from kadmin.services.drain import drain as run

    if timeout <= 0:
        raise UsageError("--timeout must be positive")
    deadline = time.monotonic() + timeout  # one deadline for the connections and the service's waits
    backend = inv.backend(deadline)
    return inv.emit(run(backend.leadership, backend.identity, broker_id, save=save, dry_run=dry_run, force=force,
                        timeout=timeout, deadline=deadline), views.drain)


@command(app, "undrain")
def undrain(
    inv: Invocation,
    broker_id: BrokerId,
    source: Annotated[Path, typer.Option("--from", metavar="FILE", help="The file `brokers drain` saved.")],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Say what would be restored and elected; change "
                                          "nothing.")] = False,
    force: Annotated[bool, typer.Option("--force", help="Go on when a reassignment is in flight for a saved "
                                        "partition (that partition is left alone), or the file was saved on "
                                        "another cluster or for another broker.")] = False,
    timeout: DrainTimeout = 120.0,
) -> int:
    """Undo `brokers drain`: restore the saved replica order and elect the preferred leaders again.

    A partition whose replica set changed since the drain is left as it is (a warning names it).
    Then the leaders are read again, every 0.1 s growing to 1 s, until each saved partition is led
    by its preferred replica or --timeout passes (exit 1 naming the others: a preferred replica
    that is not in sync cannot be elected; run `kadmin brokers wait ID --in-sync` first). Exit 7 when a
    reassignment is in flight for a saved partition (unless --force), when the partitions changed since
    they were read (nothing sent), or when a later drain is stacked on this one (its file named: undo it
    first). The verdict holds the saved order, read after the election (exit 1 naming what another
    reassignment changed). A file saved on another cluster (exit 3) or for another broker (exit 2) is
    refused unless --force. Ctrl-C after the order was sent stops before the election (exit 130: run the
    same command again to finish); none is sent after a Ctrl-C. It holds the cluster's leadership lease
    as drain does (exit 7 when another kadmin keeps it past --timeout).
    """
    from kadmin.services.drain import read_file
    from kadmin.services.drain import undrain as run

    if timeout <= 0:
        raise UsageError("--timeout must be positive")
    read_file(source, broker_id, force)  # a bad file is exit 2 before anything is contacted
    deadline = time.monotonic() + timeout  # as drain's
    backend = inv.backend(deadline)
    return inv.emit(run(backend.leadership, backend.identity, broker_id, source, dry_run=dry_run, force=force,
                        timeout=timeout, deadline=deadline), views.key_values)
