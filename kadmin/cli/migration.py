"""`kadmin migration`: a ZooKeeper -> KRaft migration (KIP-866) seen from outside."""

from __future__ import annotations

from typing import Annotated

import typer

from kadmin.cli.options import Invocation, command, seconds
from kadmin.render import views

app = typer.Typer(name="migration", help="ZooKeeper to KRaft migration: which phase, each broker's mode, rollback.",
                  no_args_is_help=True)


@command(app, "status")
def status(
    inv: Invocation,
    stuck_after: Annotated[float, typer.Option(
        "--stuck-after", metavar="SECONDS", parser=seconds,
        help="PRE_MIGRATION for longer than this (since /migration was created) is stuck: WARNING while brokers "
        "lack migration settings, CRITICAL when every broker has them but the metadata is not copied.")] = 1800.0,
) -> int:
    """Where the migration stands: ZK, PRE_MIGRATION, MIGRATION, POST_MIGRATION or NONE (Kafka's ZkMigrationState).

    Reads what Kafka writes and answers: /migration, /controller and /brokers/ids (-z), the quorum and each
    controller's ApiVersions (--bootstrap-controller), each broker's ApiVersions (ZooKeeper mode serves
    ControlledShutdown; migration enabled sets ZkMigrationReady) at the addresses --bootstrap-server lists, else
    at their registrations. Give -z, --bootstrap-controller and -b together; what could not be read is named with
    what would let kadmin read it, never guessed. Says each broker's mode (zk, zk_migrating, kraft), the
    active controller, the next step and what a rollback takes from here (docs/migration.md).

    Exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN (the state, or a node's mode, could not be read).
    """
    from kadmin.services.migration import status as run

    return inv.emit(run(inv.backend().migration, stuck_after), views.migration_status)
