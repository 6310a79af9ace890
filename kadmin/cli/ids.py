"""`kadmin ids`: broker-id assignment that survives lost disks (host -> id mappings, missing ids)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kadmin.cli.options import Invocation, check_broker_id, command, views

app = typer.Typer(name="ids", help="Broker-id assignment: host -> id mappings, missing ids, repair.",
                  no_args_is_help=True)

HostOpt = Annotated[str, typer.Option("--host", metavar="HOST", help="The host asking for an id.")]
ConfigId = Annotated[int | None, typer.Option("--config-id", metavar="N", help="broker.id from server.properties.",
                                              show_default=False, callback=check_broker_id)]
MetaOpt = Annotated[Path | None, typer.Option("--meta-properties", metavar="FILE",
                                              help="The broker's meta.properties (v0 broker.id, v1 node.id).",
                                              show_default=False)]
ReservedOpt = Annotated[int, typer.Option("--reserved-max", metavar="N", min=0,
                                          help="reserved.broker.max.id (new ids are seqid version + N).")]


def _progress():  # type: ignore[no-untyped-def]
    from kadmin.render.progress import ScanProgress

    return ScanProgress()


@command(app, "resolve")
def resolve(inv: Invocation, host: HostOpt, config_id: ConfigId = None, meta_properties: MetaOpt = None,
            reserved_max: ReservedOpt = 1000) -> int:
    """Resolve the broker id this host should use, read-only: print the id and the rule that decided it.

    Rules in order: --config-id (must agree with meta.properties), meta.properties, the host
    mapping /brokers/hosts/HOST (unless its id is registered from another host), exactly one
    missing id (more than one: exit 1, human intervention needed), else a new id from
    /brokers/seqid + reserved.broker.max.id.
    """
    from kadmin.services import ids as svc

    with _progress() as progress:
        return inv.emit(svc.resolve(inv.backend().broker_ids, host, config_id, meta_properties, reserved_max, progress),
                        views.ids_decision)


@command(app, "claim")
def claim(inv: Invocation, host: HostOpt, config_id: ConfigId = None, meta_properties: MetaOpt = None,
          reserved_max: ReservedOpt = 1000,
          dry_run: Annotated[bool, typer.Option("--dry-run", help="Show the writes; make none.")] = False) -> int:
    """Resolve the host's broker id (as `ids resolve`) and make it durable atomically (one ZooKeeper multi with
    version checks).

    A new id consumes a /brokers/seqid version; the host mapping is written. Concurrent claims
    never give one id to two hosts; two claims for the same host give the same id.
    """
    from kadmin.services import ids as svc

    with _progress() as progress:
        return inv.emit(svc.claim(inv.backend().broker_ids, host, config_id, meta_properties, reserved_max, dry_run,
                                  progress), views.ids_decision)


@command(app, "missing")
def missing(inv: Invocation) -> int:
    """Ids assigned in some topic's replicas but not registered now, with how many partitions name each."""
    from kadmin.services import ids as svc

    with _progress() as progress:
        return inv.emit(svc.missing(inv.backend().broker_ids, progress), views.ids_missing)


@command(app, "hosts")
def hosts(inv: Invocation) -> int:
    """Every host mapping: its id, whether that id is registered now, and from which host."""
    from kadmin.services import ids as svc

    return inv.emit(svc.hosts(inv.backend().broker_ids), views.ids_hosts)


@command(app, "map")
def map_(inv: Invocation, host: Annotated[str, typer.Argument(metavar="HOST")],
         broker_id: Annotated[int, typer.Argument(metavar="ID", callback=check_broker_id)],
         force: Annotated[bool, typer.Option("--force", help="Map even to an id registered from another host.")]
         = False,
         dry_run: Annotated[bool, typer.Option("--dry-run", help="Say what would change.")] = False) -> int:
    """Point HOST at broker ID. Refuses (exit 7) an id registered from another host unless --force."""
    from kadmin.services import ids as svc

    return inv.emit(svc.map_host(inv.backend().broker_ids, host, broker_id, force, dry_run), views.key_values)


@command(app, "unmap")
def unmap(inv: Invocation, host: Annotated[str, typer.Argument(metavar="HOST")],
          dry_run: Annotated[bool, typer.Option("--dry-run", help="Say what would change.")] = False) -> int:
    """Delete HOST's mapping (version-checked)."""
    from kadmin.services import ids as svc

    return inv.emit(svc.unmap_host(inv.backend().broker_ids, host, dry_run), views.key_values)


@command(app, "gc")
def gc(inv: Invocation,
       dry_run: Annotated[bool, typer.Option("--dry-run", help="List the stale mappings; delete none.")] = False,
       apply: Annotated[bool, typer.Option("--apply", hidden=True, help="Deprecated: gc deletes by default.")]
       = False) -> int:
    """Delete stale host mappings: g -> N while broker N is registered from another host h.

    Each deletion is version-checked, and a mapping that stopped being stale meanwhile is kept.
    --dry-run lists them and deletes nothing.
    """
    from kadmin.services import ids as svc

    if apply:
        inv.deprecated("--apply", "gc deletes by default now (--dry-run lists without deleting)")
        if dry_run:
            from kadmin.errors import UsageError

            raise UsageError("give --dry-run or --apply, not both (--apply is the default now)")
    return inv.emit(svc.gc(inv.backend().broker_ids, not dry_run), views.ids_gc)
