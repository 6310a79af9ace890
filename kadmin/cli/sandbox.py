"""`kadmin sandbox`: a local real ZooKeeper with emulated brokers, to try kadmin and rehearse bounces."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from kadmin.cli.options import Invocation, command, seconds_or_zero
from kadmin.services.result import Result

app = typer.Typer(name="sandbox", help="A local ZooKeeper-mode playground: real ZooKeeper, emulated brokers.",
                  no_args_is_help=True)

DirOpt = Annotated[Path | None, typer.Option("--dir", metavar="DIR", envvar="KADMIN_SANDBOX_DIR",
                                             help="Sandbox state directory [default: $XDG_STATE_HOME/kadmin/sandbox].",
                                             show_default=False)]
BrokerId = Annotated[int, typer.Argument(help="Broker id.", metavar="ID")]


def _sandbox(directory: Path | None) -> Any:
    from kadmin.sandbox.manager import Sandbox

    return Sandbox(directory)


@command(app, "up", cluster=False)
def up(
    inv: Invocation,
    brokers: Annotated[int, typer.Option("--brokers", min=1, max=5000, help="How many brokers to emulate.")] = 3,
    ensemble: Annotated[int, typer.Option("--ensemble", min=1, max=3, help="ZooKeeper servers: 1 or 3.")] = 1,
    directory: DirOpt = None,
) -> int:
    """Start ZooKeeper and N brokers registered in Kafka's v5 format. Plain output: the connection string.

    Use it as: export KADMIN_ZOOKEEPER=$(kadmin sandbox up -o plain)
    """
    if ensemble not in (1, 3):
        from kadmin.errors import UsageError

        raise UsageError("--ensemble must be 1 or 3")
    data = _sandbox(directory).up(brokers=brokers, ensemble=ensemble)
    msg = ("already running: " if data["already_running"] else "up: ") + (
        f"{len(data['brokers'])} brokers on {data['zookeeper']}; export KADMIN_ZOOKEEPER={data['zookeeper']}"
    )
    return inv.emit(Result(command="sandbox up", data=data, message=msg))


@command(app, "status", cluster=False)
def status(inv: Invocation, directory: DirOpt = None) -> int:
    """Show the sandbox's ZooKeeper members and broker epochs. Exit 1 when something is down."""
    data = _sandbox(directory).status()
    healthy = data["daemon"]["alive"] and all(m["alive"] for m in data["ensemble"])
    from kadmin.exit_codes import ExitCode

    return inv.emit(Result(command="sandbox status", data=data,
                           exit_code=ExitCode.OK if healthy else ExitCode.CONDITION_NOT_MET,
                           message=None if healthy else "some sandbox processes are not running"))


@command(app, "bounce", cluster=False)
def bounce(
    inv: Invocation,
    broker_id: BrokerId,
    down: Annotated[float, typer.Option("--down", metavar="SECONDS", parser=seconds_or_zero,
                                        help="Stay deregistered this long.")] = 0.0,
    directory: DirOpt = None,
) -> int:
    """Restart a broker: close its session and register again from a new one (a new, larger epoch)."""
    data = _sandbox(directory).bounce(broker_id, down)
    return inv.emit(Result(command="sandbox bounce", data=data,
                           message=f"broker {broker_id} bounced: epoch {data['old_epoch']} -> {data['new_epoch']}"))


@command(app, "kill", cluster=False)
def kill(
    inv: Invocation,
    broker_id: BrokerId,
    hard: Annotated[bool, typer.Option("--hard", help="Crash instead: drop the connection and let the session "
                                       "expire.")] = False,
    directory: DirOpt = None,
) -> int:
    """Stop a broker (its registration goes). `kadmin sandbox start ID` brings it back."""
    data = _sandbox(directory).kill(broker_id, hard)
    return inv.emit(Result(command="sandbox kill", data=data, message=f"broker {broker_id} stopped"))


@command(app, "start", cluster=False)
def start(inv: Invocation, broker_id: BrokerId, directory: DirOpt = None) -> int:
    """Start a stopped broker (it registers with a new epoch)."""
    data = _sandbox(directory).start(broker_id)
    return inv.emit(Result(command="sandbox start", data=data,
                           message=f"broker {broker_id} started with epoch {data['new_epoch']}"))


@command(app, "down", cluster=False)
def down(inv: Invocation, directory: DirOpt = None) -> int:
    """Stop every process this sandbox started, by pid."""
    data = _sandbox(directory).down()
    msg = f"stopped {len(data['stopped'])} processes"
    if data["already_gone"]:
        msg += f"; {len(data['already_gone'])} already gone: " + ", ".join(
            f"{g['process']} (pid {g['pid']}: {g['reason']})" for g in data["already_gone"])
    return inv.emit(Result(command="sandbox down", data=data, message=msg))
