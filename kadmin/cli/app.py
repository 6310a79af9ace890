"""The `kadmin` command. Each command group's module (kadmin/cli/brokers.py, ...) is imported only when that
group runs: the root knows the groups from GROUPS (name -> module, help), so `kadmin --version`, `kadmin
--help` and `kadmin brokers ...` import no other group, nor its services and renderers (issue 13 §2)."""

from __future__ import annotations

import importlib
import inspect
import sys
from collections.abc import Callable, Iterable, Iterator, MutableMapping, Sequence
from typing import Annotated, Any

try:  # Ctrl-C while Python loads kadmin (the console script imports this module first): exit 130, quietly
    import typer
    from typer.core import TyperCommand
    from typer.models import CommandInfo, TyperInfo

    from kadmin import __version__
    from kadmin.cli.help import HelpCommand, HelpGroup
    from kadmin.exit_codes import CHECK_COMMANDS, ExitCode, Verdict
except KeyboardInterrupt:
    raise SystemExit(130) from None

# The root's command groups, in the order `kadmin --help` lists them: name -> (module, help). The module's
# `app` (a typer.Typer) is imported when the group is looked up by name (it runs, a parse error names it,
# or a walk of the whole tree visits it); `kadmin --help` shows the help strings from here, and
# tests/cli/test_lazy_groups.py fails when one differs from its group's own.
GROUPS: dict[str, tuple[str, str]] = {
    "brokers": ("kadmin.cli.brokers", "Broker registrations, broker epochs (KIP-380) and bounces."),
    "partitions": ("kadmin.cli.partitions",
                   "Partition leaders, ISRs and health (under-replicated, offline, min ISR)."),
    "quorum": ("kadmin.cli.quorum", "Metadata quorum status and replication lag (KRaft or ZooKeeper)."),
    "features": ("kadmin.cli.features", "KRaft feature flags: finalized levels, each node's support, upgrades."),
    "migration": ("kadmin.cli.migration",
                  "ZooKeeper to KRaft migration: where it stands, each phase a roll."),
    "cluster": ("kadmin.cli.cluster", "Cluster identity: the cluster id and meta.properties checks."),
    "ids": ("kadmin.cli.ids", "Broker-id assignment: host -> id mappings, missing ids, repair."),
    "history": ("kadmin.cli.history", "Cluster history on Spark: ingest ZooKeeper/KRaft logs, report bounces."),
    "roll": ("kadmin.cli.roll", "Rolling restarts: plan, run (resumable), pause and continue, status and confirm."),
    "sandbox": ("kadmin.cli.sandbox",
                "A local playground: real ZooKeeper with emulated brokers, or real Kafka (--kafka-home)."),
}


def _stdout_id() -> tuple[int, int, int] | None:
    import os

    try:
        st = os.fstat(1)
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_rdev


def _null_id() -> tuple[int, int, int] | None:
    import os

    try:
        st = os.stat(os.devnull)
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_rdev


def _help_lost_stdout(before: tuple[int, int, int] | None) -> bool:
    """Help (or a usage text) met a reader that closed the pipe: Click and Typer then wrap stdout in
    PacifyFlushWrapper and exit 1, rich's console points fd 1 at /dev/null and exits 1. How either is told."""
    if type(sys.stdout).__name__ == "PacifyFlushWrapper":  # click's, or the copy Typer vendors
        return True
    now = _stdout_id()
    return before is not None and now != before and now == _null_id()


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
    from kadmin.render.renderer import Renderer

    # the words after the program's name; an error raised without a context (an option missing its value)
    # is placed by the command line's words
    path = e.ctx.command_path.split()[1:] if e.ctx is not None else command_words(root, argv)
    cmd = " ".join(path)
    check = cmd in CHECK_COMMANDS
    exit_code = int(Verdict.UNKNOWN) if check else e.exit_code
    renderer = Renderer("json" if json_asked(argv) else "plain")
    hint = f" (see: kadmin {cmd + ' ' if cmd else ''}--help)"
    message = plain_words(" ".join(e.format_message().split()))
    return renderer.emit_error(cmd or None, "usage", message, exit_code, check=check, hint=hint)


# Typer converts values with pydantic, whose wording is not kadmin's: said again in plain words
_PYDANTIC = [
    (r"Input should be a valid integer(, [^()]*?)?(?=$| \(|\))", "not a whole number"),
    (r"Input should be a valid number(, [^()]*?)?(?=$| \(|\))", "not a number"),
    (r"Input should be a valid boolean(, [^()]*?)?(?=$| \(|\))", "not true or false"),
    (r"Input should be greater than or equal to (\S+)", r"must be at least \1"),
    (r"Input should be less than or equal to (\S+)", r"must be at most \1"),
    (r"Input should be greater than (\S+)", r"must be more than \1"),
    (r"Input should be less than (\S+)", r"must be less than \1"),
    (r"Input should be ", "must be "),
    (r"Value error, ", ""),
]


def plain_words(message: str) -> str:
    """A usage error's message without pydantic's phrasing ("Input should be ...", "Value error, ...")."""
    import re

    for pattern, words in _PYDANTIC:
        message = re.sub(pattern, words, message)
    return message


class LazyCommands(MutableMapping[str, Any]):
    """Subcommands by name: those already built, then `names`, each built by `load(name)` on its first
    lookup (`[name]`, `.get(name)`). Names, `in` and iteration load nothing, so parsing, click's "Did you
    mean" and the help listing see every subcommand. The root's are the groups of GROUPS (a group's module
    is imported on lookup); a group's are its commands (Typer's conversion of a command runs on lookup)."""

    def __init__(self, built: MutableMapping[str, Any], names: Iterable[str], load: Callable[[str], Any]) -> None:
        self._built: dict[str, Any] = dict(built)
        self._names = [*self._built, *(n for n in names if n not in self._built)]
        self._load = load

    def loaded(self, name: str) -> bool:
        return name in self._built

    def __getitem__(self, name: str) -> Any:
        if name not in self._built:
            if name not in self._names:
                raise KeyError(name)
            self._built[name] = self._load(name)
        return self._built[name]

    def __setitem__(self, name: str, cmd: Any) -> None:
        if name not in self._names:
            self._names.append(name)
        self._built[name] = cmd

    def __delitem__(self, name: str) -> None:
        self._names.remove(name)
        self._built.pop(name, None)

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._names))

    def __len__(self) -> int:
        return len(self._names)


class ListingGroup(HelpGroup):
    """A group whose subcommands are LazyCommands: its help lists each one not built yet as `listed(name)` gives
    it (its name, help, panel, hidden and deprecated marks: all the listing reads), so the help builds none."""

    _listing = False

    def listed(self, name: str) -> Any:
        return self.commands.get(name)

    def list_commands(self, ctx: Any) -> list[str]:
        return list(self.commands)  # names only: TyperGroup's would build every command for its values

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        commands = self.commands
        if self._listing and isinstance(commands, LazyCommands) and cmd_name in commands \
                and not commands.loaded(cmd_name):
            return self.listed(cmd_name)
        return commands.get(cmd_name)

    def format_help(self, ctx: Any, formatter: Any) -> None:
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False


class CommandGroup(ListingGroup):
    """A group of GROUPS once imported: each command is converted by Typer when it is looked up (the one that
    runs), and its help lists the commands from their CommandInfo, as Typer's conversion would name them."""

    infos: dict[str, CommandInfo]  # set by KadminGroup._load_group, with the commands

    def listed(self, name: str) -> Any:
        """The command as the group's help lists it: what typer.main.get_command_from_info makes of its
        CommandInfo, without its parameters and callback (tests/cli/test_lazy_groups.py compares the two)."""
        info = self.infos[name]
        doc = inspect.getdoc(info.callback) if info.help is None else inspect.cleandoc(info.help)
        return (info.cls or TyperCommand)(
            name=name, help=doc, short_help=info.short_help, hidden=info.hidden, deprecated=info.deprecated,
            rich_markup_mode=self.rich_markup_mode, rich_help_panel=info.rich_help_panel)


class KadminGroup(ListingGroup):
    """The root command: parse errors become one line (and the envelope under -o json) instead of Typer's
    rich boxes. Typer formats them only in standalone mode (typer.core._main), so the parse runs without it
    and this method exits instead; --help, --version and every command's exit code pass through unchanged.
    An override of TyperGroup.main, a public click method, the tested Typer range is pinned in pyproject.

    Its groups are lazy (LazyCommands): a group's module is imported when the group is looked up, and the
    root's help lists the groups not yet imported from GROUPS (`listed`) instead of importing them."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands = LazyCommands(self.commands, GROUPS, self._load_group)

    def _load_group(self, name: str) -> Any:
        """The click group of GROUPS[name], as `app.add_typer(module.app, cls=HelpGroup)` would build it,
        except that each of its commands is converted by Typer when it is looked up (the one that runs),
        not all of them up front, and its help lists them unconverted (CommandGroup)."""
        sub = importlib.import_module(GROUPS[name][0]).app
        infos = {i.name or typer.main.get_command_name(i.callback.__name__): i  # type: ignore[union-attr]
                 for i in sub.registered_commands}
        assert not sub.registered_groups, f"kadmin {name}: nested groups are not lazily built"
        kept, sub.registered_commands = sub.registered_commands, []
        try:  # the group itself (its callback, help, settings), without commands
            group = typer.main.get_group_from_info(
                TyperInfo(sub, cls=CommandGroup),
                pretty_exceptions_short=app.pretty_exceptions_short,
                suggest_commands=self.suggest_commands,
                rich_markup_mode=self.rich_markup_mode,
            )
        finally:
            sub.registered_commands = kept
        assert isinstance(group, CommandGroup)

        def convert(cmd: str) -> Any:
            return typer.main.get_command_from_info(infos[cmd], pretty_exceptions_short=app.pretty_exceptions_short,
                                                    rich_markup_mode=self.rich_markup_mode)

        group.commands = LazyCommands({}, infos, convert)
        group.infos = infos
        return group

    def listed(self, name: str) -> Any:
        """The group as the root's help lists it, from GROUPS: its name and help, nothing imported."""
        return HelpGroup(name=name, help=GROUPS[name][1], rich_markup_mode=self.rich_markup_mode)

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
    "as unsafe, 8 unsupported by the cluster, 9 a command kadmin ran failed (a roll hook), 10 a roll's --until "
    "window closed, 70 internal error, 74 output lost (stdout's reader closed the pipe), 130 interrupted; the "
    "check verbs (partitions "
    "check, quorum check) exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN (no verdict), as monitoring plugins do.",
    no_args_is_help=True,
    add_completion=False,  # `kadmin completion SHELL` prints static, generated scripts instead
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


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


@app.command("help", cls=HelpCommand)
def help_(
    ctx: typer.Context,
    words: Annotated[list[str] | None, typer.Argument(
        metavar="[connection|COMMAND...]", show_default=False,
        help="connection: every connection option in full (each command's help sums them up in one line); a "
             "command (`brokers list`): its help, as `kadmin brokers list --help` prints it.")] = None,
) -> None:
    """Show help: kadmin's, a command's, or the connection options' (`kadmin help connection`)."""
    words = list(words or [])
    if words == ["connection"]:
        from kadmin.cli.help import print_connection_help
        from kadmin.cli.options import connection_params

        print_connection_help(connection_params())
        raise typer.Exit(0)
    root = ctx.find_root()
    cmd, parent = root.command, root
    for i, w in enumerate(words):
        sub = cmd.get_command(parent, w) if isinstance(cmd, HelpGroup) else None
        if sub is None or getattr(sub, "hidden", False):
            raise typer.BadParameter(f"no such command or topic: {' '.join(words[:i + 1])} (the topics: connection)",
                                     param_hint="'[connection|COMMAND...]'")
        parent = sub.make_context(w, [], parent=parent, resilient_parsing=True)
        cmd = sub
    typer.echo(cmd.get_help(parent), nl=False)
    raise typer.Exit(0)


def main() -> None:
    before = _stdout_id()
    try:
        app(prog_name="kadmin")  # Typer turns a Ctrl-C inside a command into exit 130
    except KeyboardInterrupt:  # one outside it (between start-up and parsing, or while exiting)
        sys.exit(130)
    except SystemExit as e:  # the command is done: end the process without the interpreter's teardown
        code = e.code
    else:
        return
    if code == 1 and _help_lost_stdout(before):  # help (or a usage text) to a reader that closed the pipe
        import os

        os.write(2, b"kadmin: output lost: stdout's reader closed the pipe before all of it was written (exit 74)\n")
        code = int(ExitCode.OUTPUT_LOST)
    from kadmin.cli.process_exit import exit_now

    exit_now(code)  # outside the handler: a fallback to sys.exit holds no traceback of this one
