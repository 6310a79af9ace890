"""The `kadmin` command. Sub-apps are imported here; heavy libraries load only when a command runs."""

from __future__ import annotations

import sys
from typing import Annotated

try:  # Ctrl-C while Python loads kadmin (the console script imports this module first): exit 130, quietly
    import typer

    from kadmin import __version__
    from kadmin.cli import brokers, cluster, history, ids, partitions, quorum, sandbox
except KeyboardInterrupt:
    raise SystemExit(130) from None

app = typer.Typer(
    name="kadmin",
    help="An operator's toolkit for Apache Kafka: broker registrations and epochs, bounces, quorum status.\n\n"
    "Data goes to stdout, diagnostics to stderr. Every command takes -o json. Exit codes: 0 ok, 1 condition "
    "not met, 2 usage, 3 configuration, 4 unreachable/auth, 5 partial, 6 rejected by the cluster, 7 refused "
    "as unsafe, 130 interrupted.",
    no_args_is_help=True,
    add_completion=False,  # `kadmin completion SHELL` prints static, generated scripts instead
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(brokers.app)
app.add_typer(partitions.app)
app.add_typer(quorum.app)
app.add_typer(cluster.app)
app.add_typer(ids.app)
app.add_typer(history.app)
app.add_typer(sandbox.app)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"kadmin {__version__}")
        raise typer.Exit(0)


@app.callback()
def root(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    """kadmin"""


@app.command("completion")
def completion(
    shell: Annotated[str, typer.Argument(help="bash, zsh or fish.", metavar="SHELL")],
) -> None:
    """Print a shell completion script, e.g. `kadmin completion bash > /etc/bash_completion.d/kadmin`."""
    from kadmin.cli.completion import SHELLS, script

    if shell not in SHELLS:
        typer.echo(f"kadmin: error: unknown shell {shell!r} (choose from {', '.join(SHELLS)})", err=True)
        raise typer.Exit(2)
    typer.echo(script(shell, app), nl=False)


def main() -> None:
    try:
        app(prog_name="kadmin")  # Typer turns a Ctrl-C inside a command into exit 130
    except KeyboardInterrupt:  # one outside it (between start-up and parsing, or while exiting)
        sys.exit(130)
