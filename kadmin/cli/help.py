"""How kadmin's help reads, and the one walk of its command tree.

`walk(root)` is the only walk of the command tree: the commands reference (kadmin/cli/docs.py), the
shell completion scripts (kadmin/cli/completion.py) and the tests that cover every command
(tests/kafka/test_real_kraft_every_command.py) all use it, so they list the same commands.

The help reads as click's (and so most tools a Kafka operator knows): `Usage: kadmin ids map [OPTIONS]
HOST ID`, `kadmin history ingest [OPTIONS] PATH...`, a flag without a value, an option's value by its
metavar (N, SECONDS, HOST:PORT, FILE, ...) or its choices. Typer 0.29 instead prints required
arguments as `{HOST} {ID}` and `{PATH...}...`, and a type column of `<bool>`, `<int>`, `<str>`,
`<list[str]>`, `<auto|table|...>`. Typer builds its TyperArgument and TyperOption objects itself
(typer.main._get_param) with no hook for another parameter class, so kadmin's command classes
(ReadableHelp: HelpCommand, HelpGroup, and app.py's KadminGroup) re-class each parameter, the help
option too, on first use to a subclass that overrides only how it is displayed (`get_usage_pieces`,
click's public API; `display_type_rich` and `_get_number_range_help_str`, Typer's). The subclasses add
no state, so the objects stay the ones Typer parses with. Tested with the Typer range pinned in
pyproject.toml (>=0.29,<0.30); tests/cli/test_docs.py renders every command's help and fails on
Typer's notation. The same two classes put off Typer's pydantic adapter until a value needs it
(_NoAdapterYet): start-up, issue 13 §2.
"""

from __future__ import annotations

import contextlib
import enum
import inspect
import re
import sys
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from typer._param_types import coerce_cli_choice, coerce_cli_path
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption, _TyperParameter

# ----------------------------------------------------------------------------- the command tree


@dataclass(frozen=True)
class Node:
    """One command of the tree: `path` is "" for the root, "brokers" for a group, "brokers list" for a leaf."""

    path: str
    command: Any
    subcommands: tuple[str, ...]  # the visible subcommands' names, sorted; () for a leaf
    group: bool

    @property
    def leaf(self) -> bool:
        return not self.group


def walk(root: Any) -> list[Node]:
    """Every visible command under `root` (a click command), the root first, each group before its
    subcommands, subcommands by name. Hidden commands (and what is under them) are left out."""
    out: list[Node] = []

    def visit(cmd: Any, path: str) -> None:
        group = getattr(cmd, "commands", None) is not None
        subs: dict[str, Any] = getattr(cmd, "commands", None) or {}
        names = tuple(n for n in sorted(subs) if not getattr(subs[n], "hidden", False))
        out.append(Node(path, cmd, names, group))
        for name in names:
            visit(subs[name], f"{path} {name}".strip())

    visit(root, "")
    return out


def leaves(root: Any) -> list[tuple[str, Any]]:
    """(path, command) for every visible leaf command, by path."""
    return [(n.path, n.command) for n in walk(root) if n.leaf]


def root_command() -> Any:
    """kadmin's root click command, built from the Typer app."""
    import typer

    from kadmin.cli.app import app

    return typer.main.get_command(app)


def options(cmd: Any) -> list[Any]:
    """A command's visible options, as declared (the help option is not declared: it is added by click)."""
    return [p for p in cmd.params if p.param_type_name == "option" and not getattr(p, "hidden", False)]


def option_names(cmd: Any) -> list[str]:
    """Every name of every visible option of a command (`--output`, `-o`, ...), in declaration order."""
    return [name for p in options(cmd) for name in [*p.opts, *getattr(p, "secondary_opts", [])]]


# ----------------------------------------------------------------------------- what help says


_TYPE_NAMES: dict[Any, str] = {int: "N", float: "NUMBER", str: "TEXT", Path: "PATH"}


def value_name(p: Any) -> str:
    """What an option takes, as --help and the reference say it: "" for a flag, else its metavar, else
    its choices (`auto|table|plain`), else a word for its type (N, NUMBER, TEXT, PATH)."""
    if getattr(p, "is_flag", False) or getattr(p, "count", False):
        return ""
    if p.metavar:
        return str(p.metavar)
    td = getattr(p, "type_descriptor", None)
    ann = td.annotation if td is not None else None
    if typing.get_origin(ann) is list:
        ann = typing.get_args(ann)[0]
    if isinstance(ann, type) and issubclass(ann, enum.Enum):
        return "|".join(str(m.value) for m in ann)
    choices = getattr(td, "choices", None) or getattr(getattr(p, "type", None), "choices", None)
    if choices:
        return "|".join(str(getattr(c, "value", c)) for c in choices)
    return _TYPE_NAMES.get(ann, "VALUE")


def argument_name(p: Any) -> str:
    """An argument as a usage line shows it: `HOST`, `PATH...` (takes many), `[NAME]` (optional)."""
    name = str(p.metavar or (p.name or "").upper())
    many = p.nargs != 1
    base = name.removesuffix("...")
    shown = base if p.required else f"[{base}]"
    return shown + "..." if many or name.endswith("...") else shown


def usage(path: str, cmd: Any) -> str:
    """`kadmin PATH [OPTIONS] ARGS`, as `kadmin PATH --help` prints it (COMMAND [ARGS]... for a group)."""
    args = [argument_name(p) for p in cmd.params if p.param_type_name == "argument" and not p.hidden]
    if getattr(cmd, "commands", None) is not None:
        args.append(getattr(cmd, "subcommand_metavar", None) or "COMMAND [ARGS]...")
    return " ".join(["kadmin", *path.split(), "[OPTIONS]", *args])


_LIST_ITEM = re.compile(r"^\s*(?:[-*]\s|\d+[.)]\s)")


def paragraphs(help_text: str) -> list[str]:
    """A help text's paragraphs, each on one line: docstrings are wrapped at the source's width, and rich
    keeps those line breaks, so an 80-column terminal showed ragged lines. A list (`- item`, `1. item`)
    keeps its lines. The commands reference (docs.py) shows the same paragraphs."""
    out = []
    for para in re.split(r"\n\s*\n", inspect.cleandoc((help_text or "").replace("\b\n", ""))):
        lines = [ln.rstrip() for ln in para.splitlines() if ln.strip()]
        if not lines:
            continue
        if any(_LIST_ITEM.match(ln) for ln in lines):
            out.append("\n".join(ln if _LIST_ITEM.match(ln) else ln.strip() for ln in lines))
        else:
            out.append(" ".join(ln.strip() for ln in lines))
    return out


# Bounds that are only what the value's type can hold (a broker id is an int32, an epoch an int64): --help
# and the reference leave them out, `[x>=1]` rather than `[1<=x<=9223372036854775807]`. The check stays.
STORAGE_LIMITS = (2**31 - 1, 2**63 - 1)


def number_range(p: Any) -> tuple[Any, Any]:
    """(min, max) a number must be within, None for an open side; a storage limit is no bound to say."""
    lo, hi = getattr(p, "min", None), getattr(p, "max", None)
    return lo, (None if hi in STORAGE_LIMITS else hi)


def range_text(p: Any) -> str | None:
    """`x>=1`, `1<=x<=5000`, `x<=9`, as click says a range; None when the number is unbounded."""
    lo, hi = number_range(p)
    if lo is not None and hi is not None:
        return f"{lo}<=x<={hi}"
    if lo is not None:
        return f"x>={lo}"
    return f"x<={hi}" if hi is not None else None


# a word int() and pydantic read alike (no "+", "_", " "); patterns compiled (and cached by re) on a value's first
# use, not for --help
_PLAIN_INT = r"-?(?:0|[1-9][0-9]{0,17})"
_PLAIN_FLOAT = r"-?(?:0|[1-9][0-9]{0,17})(?:\.[0-9]{1,17})?"


class _NoAdapterYet:
    """A parameter's coercion until a value needs Typer's pydantic TypeAdapter (typer._coercion.RuntimeParam's
    `coerce`). Typer 0.29 builds the adapter on a parameter's first value, importing pydantic (~80 ms, as much
    as Typer itself), even for a value it then returns as it is. Here the values whose adapter answer is plain are
    given as the adapter gives them: None (an option not given; the help option on every command), a str for a
    plain `str` parameter, a flag's bool, an enum's choice (`-o json`, through the adapter's own parser,
    typer._param_types.coerce_cli_choice), a path (Path(word), then the adapter's own path checks,
    typer._param_types.coerce_cli_path), a parameter's own parser's result (what the adapter returns when the
    parser raises nothing), and a plain decimal number within the parameter's range. Any other value (a number
    written otherwise or out of range, a parser's error, a choice that is none) builds the adapter (cached by
    Typer on the parameter, as before) and is coerced, or worded, by it. So `--help` and the commands scripts
    and rolls run import no pydantic (issue 13 §2, issue 38 §4); tests/cli/test_lazy_groups.py compares the
    values with the adapter's and checks the imports."""

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        multi = param.multiple or param.nargs == -1
        if value is None:
            return () if multi else None
        if not multi:
            with contextlib.suppress(_Adapter):
                return self._plain(value, param, ctx)
        built = _TyperParameter.get_runtime_param(param)  # Typer's: builds the adapter, cached on the param
        return built.coerce(value, param=param, ctx=ctx)

    @staticmethod
    def _plain(value: Any, param: Any, ctx: Any) -> Any:
        """The adapter's answer for a value whose answer is plain; _Adapter: ask the adapter."""
        desc = param.type_descriptor
        ann, info = desc.annotation, desc.parameter_info
        if info.parser is not None:
            try:
                return info.parser(value)
            except Exception:  # the adapter words it (calling the parser again: parsers are pure)
                raise _Adapter from None
        if desc.file_annotation is not None:
            raise _Adapter
        if ann is str and type(value) is str:
            return value
        if ann is bool and type(value) is bool:
            return value
        if isinstance(ann, type) and issubclass(ann, enum.Enum):  # the adapter's own choice parser
            try:
                return coerce_cli_choice(value, choices=tuple(ann), case_sensitive=info.case_sensitive, ctx=ctx)
            except ValueError:  # not a choice: the adapter words the error, as before
                raise _Adapter from None
        if ann is Path and info.path_type is None and type(value) is str:  # Typer's route to the path adapter
            return coerce_cli_path(Path(value), info, path_type=Path, param=param, ctx=ctx)
        if (ann is int or ann is float) and type(value) is str and not info.clamp \
                and re.fullmatch(_PLAIN_INT if ann is int else _PLAIN_FLOAT, value):
            number = ann(value)
            if (info.min is None or number >= info.min) and (info.max is None or number <= info.max):
                return number
        raise _Adapter


class _Adapter(Exception):
    """_NoAdapterYet: this value goes through Typer's adapter."""


_NO_ADAPTER_YET = _NoAdapterYet()


def lazy_runtime_param(p: Any) -> Any:
    """HelpArgument's and HelpOption's get_runtime_param: no pydantic adapter while no value needs one."""
    return _NO_ADAPTER_YET if p._runtime_param is None else p._runtime_param


class HelpArgument(TyperArgument):
    """A TyperArgument that shows as click's: its name alone, without Typer's `{...}` and type column."""

    def get_usage_pieces(self, ctx: Any) -> list[str]:
        return [argument_name(self)]

    get_runtime_param = lazy_runtime_param

    def display_type_rich(self, ctx: Any) -> str | None:
        return None

    def _get_number_range_help_str(self) -> str | None:
        return range_text(self)


class HelpOption(TyperOption):
    """A TyperOption whose value column is its value_name: nothing for a flag, no `<int>` or `<bool>`."""

    def display_type_rich(self, ctx: Any) -> str | None:
        return value_name(self) or None

    get_runtime_param = lazy_runtime_param

    def _get_number_range_help_str(self) -> str | None:
        return range_text(self)


def readable(p: Any) -> Any:
    """The same parameter object, displayed as click's (see the module's docstring)."""
    if type(p) is TyperArgument:
        p.__class__ = HelpArgument
    elif type(p) is TyperOption:
        p.__class__ = HelpOption
    return p


class _MarkdownOnUse:
    """typer.rich_utils' `Markdown` while it is imported by rich_help: the real rich.markdown.Markdown on use."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        from rich.markdown import Markdown

        return Markdown(*args, **kwargs)


class _TracebackOnUse:
    """typer.rich_utils' `Traceback` while it is imported by rich_help: the real one's from_exception on use."""

    @classmethod
    def from_exception(cls, *args: Any, **kwargs: Any) -> Any:
        from rich.traceback import Traceback

        return Traceback.from_exception(*args, **kwargs)


def rich_help() -> None:
    """Import typer.rich_utils (Typer's rich help) without rich.markdown and rich.traceback, which it imports
    for the "markdown" markup mode and for pretty tracebacks, neither of which kadmin uses: they and what
    they import (markdown_it, pygments) are half of its import time (~55 ms, issue 13 §2). Stand-ins are in
    sys.modules only while it is imported; each imports the real class when used. Tested with the pinned
    Typer range (tests/cli/test_lazy_groups.py: the help is the same, the stand-ins work)."""
    import types

    if "typer.rich_utils" in sys.modules:
        return
    stand_ins = {"rich.markdown": ("Markdown", _MarkdownOnUse), "rich.traceback": ("Traceback", _TracebackOnUse)}
    placed = []
    for name, (attr, cls) in stand_ins.items():
        if name not in sys.modules:
            module = types.ModuleType(name)
            setattr(module, attr, cls)
            sys.modules[name] = module
            placed.append(name)
    try:
        import typer.rich_utils
    finally:
        for name in placed:
            del sys.modules[name]
    typer.rich_utils.Table = _uncut_table()  # type: ignore[attr-defined,misc,assignment]
    import rich.markup

    rich.markup._emoji_replace = _emoji_replace_where_coded(rich.markup._emoji_replace)


def _emoji_replace_where_coded(replace: Any) -> Any:
    """rich's emoji replacement, run only on a text that could hold an emoji code (`:name:`, two colons): the
    replacement imports rich's table of 4,000 emoji names (~11 M instructions, 3 % of a `--help`) even for a text
    with no code in it, and Typer renders every help text through it."""

    def replace_where_coded(text: str, default_variant: str | None = None) -> str:
        return replace(text, default_variant) if text.count(":") > 1 else text

    return replace_where_coded


def _uncut_table() -> type:
    """Typer's help tables with no name ever cut: rich's columns end an over-long cell with "…" (at 80 columns,
    `--zk-tls-no-hostname-…`, `KADMIN_BOOTSTRAP_SER…`), and folding them split them mid-word. Here the name,
    metavar and choice columns never wrap (rich narrows the help column instead, which wraps between words) and
    only a word longer than the whole help column would fold. Typer builds its option and
    command tables with `rich_utils.Table` (the pinned Typer range; tests/cli/test_front_door.py reads the help
    at 80 columns)."""
    from rich.columns import Columns
    from rich.table import Table
    from rich.text import Text

    def fold(cell: Any) -> None:
        if isinstance(cell, Text):
            cell.overflow = "fold"
        elif isinstance(cell, Columns):  # a parameter's help: its text, env var and default, each a Text
            for part in cell.renderables:
                fold(part)

    class UncutTable(Table):
        def add_row(self, *renderables: Any, **kwargs: Any) -> None:
            for cell in renderables:
                fold(cell)
            super().add_row(*renderables, **kwargs)
            for column in self.columns:
                column.overflow = "fold"
            for column in self.columns[:-1]:  # names, metavars and choices whole: the help column wraps
                column.no_wrap = True

        def __rich_console__(self, console: Any, options: Any) -> Any:
            if self.row_count == 0 or len(self.columns) < 2 or _fits(self, console, options):
                yield from super().__rich_console__(console, options)
                return
            yield _stacked(self)

    return UncutTable


def _cell_widths(console: Any, options: Any, cell: Any) -> tuple[int, int]:
    """(longest word, whole width) of a table cell: a Text's or str's words, a Columns' parts' (a parameter's
    help, env var and default); anything else as rich measures it."""
    from rich.columns import Columns
    from rich.measure import Measurement
    from rich.text import Text

    if isinstance(cell, Columns):
        parts = [_cell_widths(console, options, part) for part in cell.renderables]
        return max((w for w, _ in parts), default=0), sum(whole + 1 for _, whole in parts)
    if isinstance(cell, (Text, str)):
        plain = cell.plain if isinstance(cell, Text) else cell
        return max((len(w) for w in plain.split()), default=0), max((len(ln) for ln in plain.splitlines()), default=0)
    m = Measurement.get(console, options, cell)
    return m.minimum, m.maximum


def _fits(table: Any, console: Any, options: Any) -> bool:
    """Whether `table` fits `options.max_width` with its name, metavar and choice columns whole and its last (help)
    column at least as wide as its longest word: then no name and no word is split."""
    *names, help_column = table.columns
    widths = [max((_cell_widths(console, options, c)[1] for c in col._cells), default=0) for col in names]
    longest_word = max((_cell_widths(console, options, c)[0] for c in help_column._cells), default=0)
    used = sum(w + 2 for w in widths)  # each column's padding (0, 1), an empty one (the required mark) too
    return used + longest_word + 1 <= options.max_width


def _stacked(table: Any) -> Any:
    """A table too narrow for its longest words, laid out as click lays out help on a narrow terminal: each row's
    names, metavar and choices on one line, its help on the lines below, indented and wrapped between words."""
    from rich.padding import Padding
    from rich.table import Table
    from rich.text import Text

    grid = Table.grid()
    grid.add_column()
    *names, help_column = table.columns
    for i in range(table.row_count):
        head = Text("  ").join(c if isinstance(c, Text) else Text(str(c))
                               for c in (col._cells[i] for col in names) if str(c).strip())
        grid.add_row(head)
        cell = help_column._cells[i]
        if str(cell).strip() if isinstance(cell, (Text, str)) else True:
            grid.add_row(Padding(cell, (0, 0, 0, 4)))
    return grid


# ----------------------------------------------------------------------------- the Connection panel

CONNECTION_PANEL = "Connection"
HELP_TOPIC = "kadmin help connection"
# the connection options a command's help names in its one-line summary, when it has them
_SUMMARY_NAMES = ("-z", "-b", "--context", "--timeout")


def connection_options(params: list[Any]) -> list[Any]:
    """The options of the Connection panel among `params` (options.py's connection options and --timeout)."""
    return [p for p in params if getattr(p, "rich_help_panel", None) == CONNECTION_PANEL
            and not getattr(p, "hidden", False)]


def connection_summary(params: list[Any]) -> str:
    """The one line a command's help says about its connection options: `-z, -b, --context, --timeout and 9
    more: kadmin help connection`. The whole panel is the same on every command, so it is shown once, there."""
    conn = connection_options(params)
    names = [n for n in _SUMMARY_NAMES if any(n in p.opts for p in conn)]
    rest = len(conn) - len(names)
    listed = ", ".join(names) + (f" and {rest} more" if rest else "")
    return f"{listed}: {HELP_TOPIC}"


def _panel(title: str, body: Any) -> Any:
    """A panel as Typer draws its option panels (border, title), around `body`."""
    from rich.panel import Panel

    ru = sys.modules["typer.rich_utils"]
    return Panel(body, border_style=ru.STYLE_OPTIONS_PANEL_BORDER, title=title, title_align=ru.ALIGN_OPTIONS_PANEL)


def print_connection_help(params: list[Any]) -> None:
    """`kadmin help connection`: every connection option, its value, env var and help, in a layout that keeps
    each name, metavar and env var on one line at 80 columns (the help on its own indented lines)."""
    from rich.padding import Padding
    from rich.table import Table
    from rich.text import Text

    rich_help()
    ru = sys.modules["typer.rich_utils"]
    console = ru._get_rich_console()
    console.print(Padding(Text("Usage: kadmin help connection"), 1))
    intro = ("The connection options of every command that reaches a cluster (each command's help lists them in "
             "one line). A flag wins over its environment variable, which wins over the context (--context, "
             "KADMIN_CONTEXT or the contexts file's current-context); docs/connecting.md says more.")
    console.print(Padding(Text(intro), (0, 1, 1, 1)))
    grid = Table.grid(padding=(0, 0))
    grid.add_column()
    for p in connection_options(params):
        names = ", ".join(sorted([*p.opts, *getattr(p, "secondary_opts", [])], key=len))
        value = value_name(p)
        grid.add_row(Text(f"{names} {value}".rstrip(), style="bold cyan"))
        words = " ".join((p.help or "").split())
        if getattr(p, "envvar", None):
            words += f" [env var: {p.envvar}]"
        grid.add_row(Padding(Text(words), (0, 0, 0, 4)))
    console.print(_panel(CONNECTION_PANEL, grid))


class ReadableHelp:
    """Mixed into kadmin's command classes: every parameter a command parses and shows (the help option,
    made by click on first use, too) reads as click's does, and the help text is wrapped to the terminal.

    The Connection panel (a dozen options, the same on every command that reaches a cluster) is one line in
    a command's help, naming the common ones and `kadmin help connection`, which shows the whole panel."""

    help: str | None
    _summarising = False

    def format_help(self, ctx: Any, formatter: Any) -> None:
        rich_help()
        conn = connection_options(self.get_params(ctx))
        self._summarising = True
        try:
            super().format_help(ctx, formatter)  # type: ignore[misc]
        finally:
            self._summarising = False
        if conn:
            from rich.text import Text

            ru = sys.modules["typer.rich_utils"]
            ru._get_rich_console().print(_panel(CONNECTION_PANEL, Text(connection_summary(conn))))

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.help:
            self.help = "\n\n".join(paragraphs(self.help))

    def get_params(self, ctx: Any) -> list[Any]:
        params = [readable(p) for p in super().get_params(ctx)]  # type: ignore[misc]
        if self._summarising:  # the help's panels: the connection options are the one-line summary instead
            conn = set(map(id, connection_options(params)))
            params = [p for p in params if id(p) not in conn]
        return params


class HelpCommand(ReadableHelp, TyperCommand):
    """Every kadmin leaf command's class (`@command` in options.py, `completion` in app.py)."""


class HelpGroup(ReadableHelp, TyperGroup):
    """Every kadmin group's class (built from app.py's GROUPS); the root's, KadminGroup, derives from it."""
