"""`kadmin migration`: a ZooKeeper -> KRaft migration (KIP-866) seen from outside."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from kadmin.cli.options import Invocation, command, seconds, views
from kadmin.cli.roll import (
    AllowOpt,
    BatchRuleOpt,
    NodesOpt,
    OnlyIfOpt,
    ParallelOpt,
    RestartOpt,
    SettleOpt,
    StartOpt,
    StateOpt,
    StepTimeoutOpt,
    StopOpt,
    _allow,
    _hooks,
    _request,
    running,
)
from kadmin.errors import UsageError

app = typer.Typer(name="migration", help="ZooKeeper to KRaft migration: where it stands, each phase a roll.",
                  no_args_is_help=True)

PHASES = ("brokers-migrating", "brokers-kraft", "controllers-finalize")
# What each phase's gates and mutations see the cluster through (kadmin/services/migration_roll.py): brokers-migrating
# through ZooKeeper alone (a migrating broker forwards an admin request, a drain's included, to the KRaft controller,
# which does not serve it before the metadata is copied), the others through the brokers alone (a KRaft broker has no
# /brokers/ids znode: ZooKeeper would show it dead). The quorum: through the controllers while some brokers are still
# ZooKeeper-mode ones (they serve no DescribeQuorum), through the brokers once all are KRaft (as `roll run -b`).
BASE_WITHOUT = {"brokers-migrating": ("bootstrap-server", "bootstrap-controller"),
                "brokers-kraft": ("zookeeper", "bootstrap-controller"),
                "controllers-finalize": ("zookeeper", "bootstrap-controller")}


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


def _opener(inv: Invocation, without: tuple[str, ...] = ()) -> Any:
    """A fresh backend each call, from the settings as given, or `without` some addresses: open_backend decides
    the mode from what it is given, as everywhere."""
    from dataclasses import replace

    from kadmin.cluster.connect import open_backend

    settings = replace(inv.settings, values={k: v for k, v in inv.settings.values.items() if k not in without})

    def open_() -> Any:
        return open_backend(settings, inv.command, log=inv.renderer.note if inv.verbose else None,
                            on_connection=inv.renderer.note)

    return open_


@command(app, "roll", deadline=False)
def roll(
    inv: Invocation,
    phase: Annotated[str, typer.Option("--phase", metavar="|".join(PHASES), help="The phase to roll: "
                                       "brokers-migrating (from PRE_MIGRATION), brokers-kraft (from MIGRATION), "
                                       "controllers-finalize (from MIGRATION, every broker KRaft).")],
    state: StateOpt,
    stop: StopOpt = None,
    start: StartOpt = None,
    restart: RestartOpt = None,
    nodes: NodesOpt = None,
    only_if: OnlyIfOpt = None,
    parallel: ParallelOpt = 1,
    batch_rule: BatchRuleOpt = "distinct",
    allow_unavailable: AllowOpt = None,
    step_timeout: StepTimeoutOpt = 600.0,
    settle: SettleOpt = 0.0,
) -> int:
    """Roll one phase of the ZooKeeper to KRaft migration: `roll run`'s engine, hooks, journal and resume, with
    the phase's gates. Give -z, --bootstrap-controller and -b (every broker).

    Entry: the state the phase begins in (else exit 7, nothing touched, naming the state and the phase that fits).
    Each node not yet in the phase's mode is restarted by the hooks, which install the phase's configuration
    (docs/migration.md has it for Kafka 3.9), behind can-stop, the drain and (controllers) the quorum check; its
    receipt is answering in the phase's mode (ApiVersions): brokers-migrating zk_migrating, brokers-kraft kraft,
    controllers-finalize no migration flag (and caught up). Exit: MIGRATION (the controller copied the metadata),
    MIGRATION with every broker KRaft, POST_MIGRATION (not awaited when --nodes or --only-if leaves some of the
    phase's nodes for later). controllers-finalize is the point of no return.

    Exit codes as `roll run`'s: 0 done, 1 a gate or the end state not met, 4, 7 the wrong state, 9, 130.
    """
    from kadmin.services import migration_roll as svc
    from kadmin.services import roll as roll_svc

    if phase not in PHASES:
        raise UsageError(f"--phase: {phase!r} is not one of {', '.join(PHASES)}")
    if not inv.settings.get("zookeeper") or not inv.settings.get("bootstrap-controller"):
        raise UsageError("give -z (the cluster's ZooKeeper) and --bootstrap-controller (the KRaft controllers): a "
                         "migration's state is read from both")
    if not inv.settings.get("bootstrap-server"):
        raise UsageError(f"--phase {phase} needs -b (the brokers' addresses): a KRaft broker has no ZooKeeper "
                         "registration to find it by, and once the KRaft controller is active leaderships move "
                         "through the brokers")
    req = _request(nodes, "skip", parallel, batch_rule)
    hooks = _hooks(stop, start, restart, only_if, need=True)
    opts = roll_svc.Options(req, hooks, step_timeout, settle, _allow(allow_unavailable))
    quorum = _opener(inv, ("zookeeper", "bootstrap-server")) if phase == "brokers-kraft" else None
    admin = _opener(inv, ("zookeeper", "bootstrap-controller")) if phase == "brokers-migrating" else None
    return running(inv, lambda emit, progress: svc.run(phase, _opener(inv, BASE_WITHOUT[phase]), _opener(inv), state,
                                                       opts, emit, progress.say, progress, open_quorum=quorum,
                                                       open_admin=admin))
