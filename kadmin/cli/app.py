"""The `kadmin` command. Sub-apps are imported here; heavy libraries load only when a command runs."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Annotated, Any

try:  # Ctrl-C while Python loads kadmin (the console script imports this module first): exit 130, quietly
    import typer

    from kadmin import __version__
    from kadmin.cli import brokers, cluster, history, ids, partitions, quorum, sandbox
    from kadmin.cli.help import HelpCommand, HelpGroup
    from kadmin.exit_codes import CHECK_COMMANDS, Verdict
except KeyboardInterrupt:
    raise SystemExit(130) from None


def json_asked(argv: Sequence[str]) -> bool:
    """Whether the command line asks for -o json (`-o json`, `-ojson`, `-vo json`, `--output json`,
    `--output=json`; the last one given wins). Read from the words themselves: when parsing failed, the
    option's value may not have been parsed."""
    fmt = None
    words = list(argv)
    i = 0
    while i < len(words):
        w = words[i]
        i += 1
        if w == "--":
            break
        if w == "--output":
            fmt = words[i] if i < len(words) else None
            i += 1
        elif w.startswith("--output="):
            fmt = w.removeprefix("--output=")
        elif w.startswith("-") and not w.startswith("--"):
            for j, c in enumerate(w[1:], start=1):  # a bundle of short options: -v, -h, then -o or -z VALUE
                if c in "oz":
                    value = w[j + 1:]
                    if not value:
                        value = words[i] if i < len(words) else ""
                        i += 1
                    if c == "o":
                        fmt = value
                    break
                if c not in "vh":
                    break
    return fmt is not None and fmt.lower() == "json"


# The CLI framework's exception classes, found from the public typer.BadParameter: Typer 0.12-0.15 raise
# click's, newer Typer its vendored copy (typer._click), and this works with both.
_UsageError: Any = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError")
_ClickException: Any = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")


def command_words(root: Any, argv: Sequence[str]) -> list[str]:
    """The command named by the leading words of `argv` (`partitions check`), as far as it exists."""
    words: list[str] = []
    node = root
    for w in argv:
        sub = getattr(node, "commands", {}).get(w)
        if sub is None:
            break
        words.append(w)
        node = sub
    return words


def usage_error(e: Any, argv: Sequence[str], root: Any) -> int:
    """A parse error from the CLI framework as one line, `kadmin: error: MESSAGE (see: kadmin CMD --help)`,
    with the JSON envelope when -o json was asked for. Exit 2, or 3 (UNKNOWN) for a check verb."""
    from kadmin.render import Renderer

    # the words after the program's name; an error raised without a context (an option missing its value)
    # is placed by the command line's words
    path = e.ctx.command_path.split()[1:] if e.ctx is not None else command_words(root, argv)
    cmd = " ".join(path)
    check = cmd in CHECK_COMMANDS
    exit_code = int(Verdict.UNKNOWN) if check else e.exit_code
    renderer = Renderer("json" if json_asked(argv) else "plain")
    hint = f" (see: kadmin {cmd + ' ' if cmd else ''}--help)"
    message = " ".join(e.format_message().split())
    return renderer.emit_error(cmd or None, "usage", message, exit_code, check=check, hint=hint)


class KadminGroup(HelpGroup):
    """The root command: parse errors become one line (and the envelope under -o json) instead of Typer's
    rich boxes. Typer formats them only in standalone mode (typer.core._main), so the parse runs without it
    and this method exits instead; --help, --version and every command's exit code pass through unchanged.
    An override of TyperGroup.main, a public click method, the tested Typer range is pinned in pyproject."""

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,  # type: ignore[override]
             complete_var: str | None = None, standalone_mode: bool = True, **extra: Any) -> Any:
        argv = list(sys.argv[1:] if args is None else args)
        try:
            rv = super().main(argv, prog_name, complete_var, standalone_mode=False, **extra)
        except _UsageError as e:
            no_args = type(e).__name__ == "NoArgsIsHelpError"  # the help was printed: exit 2 as before
            rv = e.exit_code if no_args else usage_error(e, argv, self)
        except _ClickException as e:  # not a usage error (a file that cannot be opened): one line too
            print(f"kadmin: error: {' '.join(e.format_message().split())}", file=sys.stderr)
            rv = e.exit_code
        except typer.Abort:  # EOF or Ctrl-C at a prompt: as Typer says it
            print("Aborted!", file=sys.stderr)
            rv = 1
        if not standalone_mode:
            return rv
        sys.exit(rv if isinstance(rv, int) else 0)


app = typer.Typer(
    cls=KadminGroup,
    name="kadmin",
    help="An operator's toolkit for Apache Kafka: broker registrations and epochs, bounces, quorum status.\n\n"
    "Data goes to stdout, diagnostics to stderr. Every command takes -o json. Exit codes: 0 ok, 1 condition "
    "not met, 2 usage, 3 configuration, 4 unreachable/auth, 5 partial, 6 rejected by the cluster, 7 refused "
    "as unsafe, 8 unsupported by the cluster, 70 internal error, 130 interrupted; the check verbs (partitions "
    "check, quorum check) exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN (no verdict), as monitoring plugins do.",
    no_args_is_help=True,
    add_completion=False,  # `kadmin completion SHELL` prints static, generated scripts instead
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(brokers.app, cls=HelpGroup)
app.add_typer(partitions.app, cls=HelpGroup)
app.add_typer(quorum.app, cls=HelpGroup)
app.add_typer(cluster.app, cls=HelpGroup)
app.add_typer(ids.app, cls=HelpGroup)
app.add_typer(history.app, cls=HelpGroup)
app.add_typer(sandbox.app, cls=HelpGroup)


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


@app.command("completion", cls=HelpCommand)
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
