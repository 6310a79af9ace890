"""`kadmin sandbox`: a local playground to try kadmin and rehearse bounces: a real ZooKeeper with emulated
brokers, or real Apache Kafka (`--kafka-home`: ZooKeeper mode, KRaft, or a ZooKeeper-mode cluster ready to migrate
to KRaft)."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from kadmin.cli.options import Invocation, command, seconds_or_zero, views
from kadmin.domain.text import plural
from kadmin.payloads_ops import (
    SandboxControllerBounce,
    SandboxControllerKill,
    SandboxControllerStart,
    SandboxDown,
    SandboxKafkaBounce,
    SandboxKafkaStart,
    SandboxPhase,
    SandboxProcess,
    SandboxStatus,
    SandboxUp,
    sandbox_bounce,
    sandbox_kill,
    sandbox_start,
)
from kadmin.results import Result

app = typer.Typer(name="sandbox", help="A local playground: real ZooKeeper with emulated brokers, or real Kafka "
                  "(--kafka-home).",
                  no_args_is_help=True)

DirOpt = Annotated[Path | None, typer.Option("--dir", metavar="DIR", envvar="KADMIN_SANDBOX_DIR",
                                             help="Sandbox state directory (default: $XDG_STATE_HOME/kadmin/sandbox).",
                                             show_default=False)]


class Mode(StrEnum):
    zk = "zk"
    kraft = "kraft"
    migration = "migration"


BrokerId = Annotated[int, typer.Argument(help="Broker id, or (real KRaft sandbox) a controller's node id (3001...).",
                                         metavar="ID")]


def _not_running(down: list[SandboxProcess]) -> str:
    """`not running: broker 2 (pid 4242), zookeeper 1 (pid 4200)`: which of the sandbox's processes are down."""
    def name(p: SandboxProcess) -> str:
        return p.role + ("" if p.id is None else f" {p.id}") + (f" (pid {p.pid})" if p.pid else "")

    return "not running: " + ", ".join(name(p) for p in down)


def _sandbox(directory: Path | None) -> Any:
    from kadmin.sandbox.manager import Sandbox

    return Sandbox(directory)


@command(app, "up", cluster=False)
def up(
    inv: Invocation,
    brokers: Annotated[int | None, typer.Option(
        "--brokers", metavar="N", min=1, max=5000, show_default=False,
        help="How many brokers to emulate (default 3). A running sandbox must have this many.")] = None,
    ensemble: Annotated[int | None, typer.Option(
        "--ensemble", metavar="N", min=1, max=3, show_default=False,
        help="ZooKeeper servers: 1 or 3 (default 1). A running sandbox must have this many.")] = None,
    controllers: Annotated[int | None, typer.Option(
        "--controllers", metavar="N", min=1, max=3, show_default=False,
        help="With --mode kraft: KRaft controllers, 1 or 3 (default 3). 1 is lighter; with one voter the "
        "metadata quorum is down whenever it is. A running sandbox must have this many.")] = None,
    kafka_home: Annotated[Path | None, typer.Option(
        "--kafka-home", metavar="DIR", envvar="KADMIN_KAFKA_HOME", show_default=False,
        help="Run real Apache Kafka from this installation (DIR/libs/*.jar) instead of emulated brokers.")] = None,
    mode: Annotated[Mode, typer.Option("--mode", metavar="zk|kraft|migration", case_sensitive=False,
                                       help="With --kafka-home: ZooKeeper mode (Kafka 3.x), KRaft "
                                      "(--controllers, default 3, + the brokers), or migration (ZooKeeper mode + 3 "
                                      "controllers ready to migrate it; `sandbox phase`).")] = Mode.zk,
    release_version: Annotated[str | None, typer.Option(
        "--release-version", metavar="X.Y", show_default=False,
        help="With --mode kraft: format the storage at this release's feature levels (kafka-storage format "
        "--release-version), e.g. 3.9 on 4.x binaries, to try `kadmin features upgrade`.")] = None,
    directory: DirOpt = None,
) -> int:
    """Start ZooKeeper and N brokers (emulated, or real Kafka with --kafka-home). Plain output: the connect string.

    Use it as: export KADMIN_ZOOKEEPER=$(kadmin sandbox up -o plain)

    When the sandbox is running already, this reports it; another --brokers, --ensemble or --controllers than it
    has exits 3 (`kadmin sandbox down` first).

    The emulated brokers register in Kafka's v5 format. With --kafka-home DIR, N real Kafka brokers (returns
    once each is registered). With --mode kraft there is no ZooKeeper: plain output is the bootstrap servers
    (export KADMIN_BOOTSTRAP_SERVER=$(...)); -o json also has bootstrap_controllers.

    With --mode migration (Kafka 3.5+ 3.x): the ZooKeeper-mode cluster, then 3 controller-only KRaft nodes
    (3001-3003) formatted with its cluster id, zookeeper.metadata.migration.enable=true and a fixed
    controller.quorum.voters; returns once the brokers are registered and the quorum has a leader (the
    controllers then wait in PRE_MIGRATION for migrating brokers). Plain output is the ZooKeeper connect
    string; `sandbox phase` moves each node through the migration.
    """
    if ensemble not in (None, 1, 3):
        from kadmin.errors import UsageError

        raise UsageError("--ensemble must be 1 or 3")
    if controllers is not None and (controllers not in (1, 3) or mode is not Mode.kraft):
        from kadmin.errors import UsageError

        raise UsageError("--controllers must be 1 or 3, with --mode kraft (a migration sandbox has 3)")
    if mode is not Mode.zk and kafka_home is None:
        from kadmin.errors import UsageError

        raise UsageError(f"--mode {mode.value} needs real Kafka: give --kafka-home DIR (or KADMIN_KAFKA_HOME)")
    if release_version is not None and mode is not Mode.kraft:
        from kadmin.errors import UsageError

        raise UsageError("--release-version needs --mode kraft (it sets the feature levels KRaft storage is "
                         "formatted with)")
    data = SandboxUp.from_json(_sandbox(directory).up(brokers=brokers, ensemble=ensemble, kafka_home=kafka_home,
                                                      mode=mode.value, release_version=release_version,
                                                      controllers=controllers))
    state = "already running: " if data.already_running else "up: "
    kind = f"Kafka {data.kafka_version} " if data.engine == "kafka" else ""
    count = plural(len(data.brokers), f"{kind}broker")
    if data.mode == "kraft":
        msg = (f"{state}{count} (KRaft); export KADMIN_BOOTSTRAP_SERVER="
               f"{data.bootstrap_servers} (controllers: KADMIN_BOOTSTRAP_CONTROLLER="
               f"{data.bootstrap_controllers})")
    else:
        msg = (f"{state}{count} on {data.zookeeper}; "
               f"export KADMIN_ZOOKEEPER={data.zookeeper}")
        if data.engine == "kafka":
            msg += f" (bootstrap servers {data.bootstrap_servers})"
        if data.mode == "migration":
            msg += (f"; migration controllers {', '.join(str(p.id) for p in data.processes if p.role == 'controller')}"
                    f" (KADMIN_BOOTSTRAP_CONTROLLER={data.bootstrap_controllers})")
    return inv.emit(Result(data=data, message=msg), views.sandbox)


@command(app, "status", cluster=False)
def status(inv: Invocation, directory: DirOpt = None) -> int:
    """Show the sandbox's ZooKeeper members and broker epochs. Exit 1 when something is down.

    -o json has one row per process (`processes`: role, id, pid, port, alive, registered) and the engine
    (`engine` emulated or kafka, `mode`, `kafka_version`, `kafka_home`, `bootstrap_servers`).
    """
    data = SandboxStatus.from_json(_sandbox(directory).status())
    down = [p for p in data.processes if not p.alive]  # every engine lists its processes
    from kadmin.exit_codes import ExitCode

    return inv.emit(Result(data=data, exit_code=ExitCode.CONDITION_NOT_MET if down else ExitCode.OK,
                           message=_not_running(down) if down else None), views.sandbox)


@command(app, "bounce", cluster=False)
def bounce(
    inv: Invocation,
    broker_id: BrokerId,
    down: Annotated[float, typer.Option("--down", metavar="SECONDS", parser=seconds_or_zero,
                                        help="Stay deregistered this long.")] = 0.0,
    directory: DirOpt = None,
) -> int:
    """Restart a broker: close its session and register again from a new one (a new, larger epoch).

    On real Kafka: SIGTERM (the broker runs its controlled shutdown), wait for the exit, start it again with
    the same config and port; returns once it is registered again (KRaft: registered and unfenced). A KRaft
    controller (3001...) returns once the quorum leader reports it caught up.
    """
    data = sandbox_bounce(_sandbox(directory).bounce(broker_id, down))
    if isinstance(data, SandboxControllerBounce):
        msg = (f"controller {broker_id} restarted: pid {data.old_pid} -> {data.pid}, caught up with "
               f"leader {data.controller}")
    elif data.old_epoch is None and data.new_epoch is None:  # KRaft: DescribeCluster has no epochs
        pids = (data.old_pid, data.pid) if isinstance(data, SandboxKafkaBounce) else (None, None)
        msg = f"broker {broker_id} restarted: pid {pids[0]} -> {pids[1]}, registered and unfenced"
    else:
        msg = f"broker {broker_id} bounced: epoch {data.old_epoch} -> {data.new_epoch}"
    return inv.emit(Result(data=data, message=msg), views.key_values)


@command(app, "kill", cluster=False)
def kill(
    inv: Invocation,
    broker_id: BrokerId,
    hard: Annotated[bool, typer.Option("--hard", help="Crash instead: drop the connection and let the session "
                                       "expire.")] = False,
    directory: DirOpt = None,
) -> int:
    """Stop a broker (its registration goes). `kadmin sandbox start ID` brings it back.

    On real Kafka: SIGTERM and wait for the exit (a controlled shutdown), or SIGKILL with --hard (a crash).
    In a KRaft sandbox ID may be a controller (3001...): it leaves the quorum until started again.
    """
    data = sandbox_kill(_sandbox(directory).kill(broker_id, hard))
    what = "controller" if isinstance(data, SandboxControllerKill) else "broker"
    return inv.emit(Result(data=data, message=f"{what} {broker_id} stopped"), views.key_values)


@command(app, "start", cluster=False)
def start(
    inv: Invocation,
    broker_id: BrokerId,
    directory: DirOpt = None,
    kafka_home: Annotated[Path | None, typer.Option(
        "--kafka-home", metavar="DIR", help="Run the node from this Kafka installation from now on (an upgrade "
        "rehearsed node by node, e.g. onto 4.x after a migration); refused for a ZooKeeper-mode node on 4.x.",
        show_default=False)] = None,
) -> int:
    """Start a stopped broker (it registers with a new epoch).

    A KRaft controller (3001...) is started again with the same config and directory; this returns once
    the quorum leader reports it caught up (its LastCaughtUpTimestamp after the start)."""
    data = sandbox_start(_sandbox(directory).start(broker_id, kafka_home=kafka_home))
    if isinstance(data, SandboxControllerStart):  # no epoch
        msg = f"controller {broker_id} started with pid {data.pid}, caught up with leader {data.controller}"
    else:
        pid = data.pid if isinstance(data, SandboxKafkaStart) else None
        msg = f"broker {broker_id} started with " + (f"epoch {data.new_epoch}" if data.new_epoch is not None
                                                     else f"pid {pid}")
    return inv.emit(Result(data=data, message=msg), views.key_values)


PhaseArg = Annotated[str, typer.Argument(
    metavar="PHASE", help="A broker's: zk, migrating or kraft; a controller's: migrating or finalized.")]


@command(app, "phase", cluster=False)
def phase(inv: Invocation, node_id: BrokerId, phase: PhaseArg, directory: DirOpt = None) -> int:
    """Configure a node of a migration sandbox (`up --mode migration`) for a phase of the ZooKeeper to KRaft
    migration: rewrites its server.properties; the node runs with it from its next `sandbox start`.

    A broker: zk (ZooKeeper mode), migrating (ZooKeeper mode plus the migration flag, the controllers'
    quorum and inter.broker.protocol.version), kraft (process.roles=broker, node.id = its broker.id, no
    ZooKeeper). A controller (3001...): migrating, or finalized (no migration flag, no ZooKeeper; Kafka writes
    POST_MIGRATION when such a controller becomes the leader). A roll's hooks move the brokers:
    --stop 'kadmin sandbox kill {id}' --start 'kadmin sandbox phase {id} migrating && kadmin sandbox start {id}'.

    Rolling back from MIGRATION (brokers migrating, back to zk): Kafka's guide also has the controllers stopped
    and /controller and /migration deleted in ZooKeeper; this command changes configuration only.
    """
    data = SandboxPhase.from_json(_sandbox(directory).phase(node_id, phase.lower()))
    when = "from its next start (it is running)" if data.running else "when started"
    msg = f"{data.role} {data.id}: phase {data.old_phase} -> {data.phase} {when}"
    return inv.emit(Result(data=data, message=msg), views.key_values)


@command(app, "down", cluster=False)
def down(inv: Invocation, directory: DirOpt = None) -> int:
    """Stop every process this sandbox started, by pid."""
    data = SandboxDown.from_json(_sandbox(directory).down())
    msg = "stopped " + plural(len(data.stopped), "process", "processes")
    if data.already_gone:
        msg += f"; {len(data.already_gone)} already gone: " + ", ".join(
            f"{g.process} (pid {g.pid}: {g.reason})" for g in data.already_gone)
    return inv.emit(Result(data=data, message=msg), views.sandbox_down)
