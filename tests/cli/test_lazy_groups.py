"""Start-up (issue 13 §2): each command group is imported only when it runs, the root's help lists the groups
from app.GROUPS (drift-tested here against each group's own help), and no pydantic while no value needs it."""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
from hypothesis import given, settings
from hypothesis import strategies as st
from typer._coercion import build_runtime_param

from kadmin.cli import app as app_module
from kadmin.cli.app import GROUPS, CommandGroup, KadminGroup, LazyCommands, app
from kadmin.cli.help import HelpGroup, _Adapter, _NoAdapterYet, walk

CLI_DIR = Path(app_module.__file__).parent
GROUP_MODULES = {module for module, _ in GROUPS.values()}

# Run kadmin in a fresh interpreter; stderr's last line is what it imported (JSON).
PROBE = """\
import json, sys
from kadmin.cli.app import app
try:
    app(args=sys.argv[1:], prog_name="kadmin")
except SystemExit:
    pass
sys.stdout.flush()
# a module importlib's LazyLoader made (kadmin.cli.invocation.lazy_module) counts once it has run
print(json.dumps(sorted(n for n, m in sys.modules.items() if type(m).__name__ != "_LazyModule")), file=sys.stderr)
"""


ENV = {"COLUMNS": "100", "PATH": "/usr/bin:/bin", "XDG_CONFIG_HOME": "/nonexistent"}  # no contexts file


def imported(*args: str) -> tuple[str, set[str]]:
    r = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=120,
                       stdin=subprocess.DEVNULL, env=ENV)
    return r.stdout, set(json.loads(r.stderr.splitlines()[-1]))


def test_every_group_module_is_in_the_table() -> None:
    """A new kadmin/cli/NOUN.py with its own Typer app must be named in GROUPS, or the root never finds it."""
    defining = {f"kadmin.cli.{p.stem}" for p in CLI_DIR.glob("*.py")
                if re.search(r"^app = typer\.Typer\(", p.read_text(), re.M) and p.stem != "app"}
    assert defining == GROUP_MODULES


@pytest.mark.parametrize("name", list(GROUPS))
def test_the_tables_help_is_the_groups_own(name: str) -> None:
    """Drift: what `kadmin --help` lists for a group (from GROUPS) is what the group itself says."""
    root = typer.main.get_command(app)
    assert isinstance(root, KadminGroup)
    listed = root.listed(name)
    real = root.commands[name]  # imports the module and builds the group
    module = sys.modules[GROUPS[name][0]]
    assert isinstance(real, HelpGroup) and real.name == name == module.app.info.name
    for attr in ("name", "help", "short_help", "hidden", "deprecated", "rich_help_panel"):
        assert getattr(listed, attr) == getattr(real, attr), (name, attr)


def test_root_help_is_the_same_listed_from_the_table_or_from_the_groups() -> None:
    root = typer.main.get_command(app)
    assert isinstance(root, KadminGroup) and isinstance(root.commands, LazyCommands)
    ctx = root.make_context("kadmin", [], resilient_parsing=True)
    from_table = root.get_help(ctx)
    assert not any(root.commands.loaded(n) for n in GROUPS)  # listing imported nothing
    for n in GROUPS:
        root.commands[n]
    assert root.get_help(ctx) == from_table
    assert list(root.commands) == ["completion", "help", *GROUPS]  # as app.add_typer added them before


def test_root_help_and_version_import_no_group() -> None:
    for args in (["--help"], ["--version"], []):
        out, mods = imported(*args)
        assert "brokers" in out or "kadmin 0." in out
        assert not mods & GROUP_MODULES, args
        assert not {"pydantic", "kazoo", "kafka", "pyspark"} & mods, args
        if args == ["--version"]:
            assert "rich" not in mods  # Typer's rich help is for --help only


def test_a_commands_help_imports_its_group_only() -> None:
    out, mods = imported("brokers", "max-epoch", "--help")
    assert "Usage: kadmin brokers max-epoch" in out
    assert mods & GROUP_MODULES == {"kadmin.cli.brokers"}
    assert not {"pydantic", "kazoo", "kafka", "pyspark", "tabulate"} & mods
    # Typer's rich help, without the markdown and traceback parts kadmin does not use
    assert "typer.rich_utils" in mods
    assert not {"rich.markdown", "rich.traceback", "rich.syntax", "markdown_it", "pygments"} & mods


def test_a_groups_help_builds_no_service_and_no_payload() -> None:
    """Issue 24 §2: `brokers --help` loads neither the service nor the ~80 payload dataclasses (a third of a
    gate's start-up); a command that runs still gets its service."""
    for args in (["brokers", "--help"], ["brokers", "max-epoch", "--help"]):
        out, mods = imported(*args)
        assert "Usage: kadmin brokers" in out
        assert not {"kadmin.payloads", "kadmin.payloads_ops", "kadmin.cluster.base", "kadmin.domain.models",
                    "kadmin.services.brokers"} & mods
        # issue 38 §4: nor the views and the renderer (a help renders no result), nor rich's emoji table
        assert not {"kadmin.render.views", "kadmin.render.renderer", "rich._emoji_codes"} & mods
    out, mods = imported("brokers", "max-epoch", "-z", "127.0.0.1:1", "--timeout", "1")
    assert {"kadmin.payloads", "kadmin.cluster.base", "kadmin.services.brokers"} <= mods  # it ran its service
    assert {"kadmin.render.views", "kadmin.render.renderer"} <= mods  # and rendered its result
    assert "kadmin.payloads_ops" not in mods  # history's, sandbox's and roll's payloads: not a gate's
    # issue 38 §4: nor the rarer capabilities' value types, nor the lease's
    assert not {"kadmin.cluster.values", "kadmin.domain.lease"} & mods


def test_the_seams_rarer_value_types_are_named_through_it() -> None:
    """kadmin.cluster.base names the value types of kadmin/cluster/values.py (created on first use): each of
    them, and nothing else."""
    import dataclasses

    from kadmin.cluster import base, values

    defined = {n for n, v in vars(values).items() if isinstance(v, type) and dataclasses.is_dataclass(v)
               and v.__module__ == values.__name__}
    assert defined == set(base.VALUES)
    for name in base.VALUES:
        assert getattr(base, name) is getattr(values, name)
    with pytest.raises(AttributeError):
        base.NoSuchThing  # noqa: B018


def test_the_rich_help_stand_ins_are_the_real_classes_when_used() -> None:
    code = """\
import sys
from kadmin.cli.help import rich_help
rich_help()
assert "rich.markdown" not in sys.modules and "rich.traceback" not in sys.modules
import typer.rich_utils as r
from rich.markdown import Markdown
from rich.traceback import Traceback
assert type(r.Markdown("*x*")) is Markdown
try:
    1 / 0
except ZeroDivisionError as e:
    assert type(r.Traceback.from_exception(type(e), e, e.__traceback__)) is Traceback
print("ok")
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.stdout == "ok\n", r.stderr


@settings(max_examples=300, deadline=None)
@given(st.text(st.sampled_from(":-_ abcdeijklmnorstvwxy\u2764\n"), max_size=30))
def test_rich_replaces_emoji_codes_in_help_as_before(text: str) -> None:
    """kadmin's help runs rich's emoji replacement only on a text with two colons (a code is `:name:`, or
    `:name-emoji:`/`:name-text:`), so rich's emoji table is imported only for such a text: the same text out."""
    from rich._emoji_replace import _emoji_replace

    from kadmin.cli.help import _emoji_replace_where_coded

    where_coded = _emoji_replace_where_coded(_emoji_replace)
    for variant in (None, "text", "emoji"):
        assert where_coded(text, variant) == _emoji_replace(text, variant)
    assert where_coded("a :warning: b :red_heart-emoji:") == _emoji_replace("a :warning: b :red_heart-emoji:")
    assert where_coded("a :warning: b") != "a :warning: b"  # a code is still replaced


def test_a_command_imports_its_group_and_no_pydantic() -> None:
    """Every option parsed (-z and --context str, -o a choice), then exit 3 on the unknown context."""
    out, mods = imported("brokers", "max-epoch", "-z", "127.0.0.1:1", "--context", "nope", "-o", "json")
    assert json.loads(out)["exit_code"] == 3
    assert mods & GROUP_MODULES == {"kadmin.cli.brokers"}
    assert not {"pydantic", "rich", "tabulate", "kazoo", "kafka", "pyspark"} & mods
    # a plain number, a path, a flag and an id need no adapter either (the sandbox commands rolls run)
    out, mods = imported("brokers", "max-epoch", "-z", "127.0.0.1:1", "--context", "nope", "--connect-timeout",
                         "1.5", "-o", "json")
    assert json.loads(out)["exit_code"] == 3 and "pydantic" not in mods
    out, mods = imported("sandbox", "kill", "1", "--hard", "--dir", "/nonexistent/kadmin-sandbox", "-o", "json")
    assert json.loads(out)["command"] == "sandbox kill" and "pydantic" not in mods
    # a number written otherwise still goes through Typer's own adapter
    out, mods = imported("sandbox", "kill", "+1", "--dir", "/nonexistent/kadmin-sandbox", "-o", "json")
    assert json.loads(out)["command"] == "sandbox kill" and "pydantic" in mods


def test_a_parse_error_names_a_lazy_group() -> None:
    out, mods = imported("brokers", "max-epoch", "--bogus", "-o", "json")
    assert json.loads(out)["command"] == "brokers max-epoch"
    assert mods & GROUP_MODULES == {"kadmin.cli.brokers"}
    out, mods = imported("brokrs")
    assert not mods & GROUP_MODULES


def test_a_group_converts_only_the_command_that_runs() -> None:
    """Typer converts one command (its signature, every option) when it runs, not the group's dozen; the
    group's help converts none (issue 38 §4), and what it prints equals a group built the eager way."""
    root = typer.main.get_command(app)
    assert isinstance(root, KadminGroup)
    group = root.commands["brokers"]
    assert isinstance(group.commands, LazyCommands)
    names = list(group.commands)
    eager = typer.main.get_group_from_info(typer.models.TyperInfo(sys.modules["kadmin.cli.brokers"].app,
                                                                  cls=HelpGroup),
                                           pretty_exceptions_short=True, suggest_commands=True,
                                           rich_markup_mode=root.rich_markup_mode)
    assert names == list(eager.commands) and "max-epoch" in names
    assert not any(group.commands.loaded(n) for n in names)
    ctx = root.make_context("kadmin", ["brokers", "max-epoch"], resilient_parsing=True)
    assert group.get_command(ctx, "max-epoch").name == "max-epoch"
    assert [n for n in names if group.commands.loaded(n)] == ["max-epoch"]
    gctx = group.make_context("brokers", [], resilient_parsing=True, parent=ctx)
    assert group.get_help(gctx) == eager.get_help(eager.make_context("brokers", [], resilient_parsing=True,
                                                                     parent=ctx))
    assert [n for n in names if group.commands.loaded(n)] == ["max-epoch"]


@pytest.mark.parametrize("name", list(GROUPS))
def test_what_a_groups_help_lists_is_each_commands_own(name: str) -> None:
    """Drift: a group's help lists each command from its CommandInfo (CommandGroup.listed), not converted;
    each attribute the listing reads is the converted command's."""
    group = typer.main.get_command(app).commands[name]  # type: ignore[attr-defined]
    assert isinstance(group, CommandGroup)
    for cmd in group.commands:
        listed, real = group.listed(cmd), group.commands[cmd]
        assert type(listed) is type(real), (name, cmd)
        for attr in ("name", "help", "short_help", "hidden", "deprecated", "rich_help_panel"):
            assert getattr(listed, attr) == getattr(real, attr), (name, cmd, attr)


def test_the_walk_loads_every_group() -> None:
    paths = {n.path for n in walk(typer.main.get_command(app))}
    assert set(GROUPS) <= paths and "brokers max-epoch" in paths and "sandbox up" in paths


def _param(path: str, name: str) -> tuple[Any, Any]:
    root = typer.main.get_command(app)
    cmd = root
    for word in path.split():
        cmd = cmd.commands[word]  # type: ignore[attr-defined]
    ctx = cmd.make_context(path, ["--help"], resilient_parsing=True)
    return next(p for p in cmd.get_params(ctx) if p.name == name), ctx


NUMBERS = ["0", "-0", "1", "-1", "3", "42", "5000", "5001", "007", "+3", " 3", "3 ", "1_0", "3.0", "1.5", "-2.5",
           "0.25", "1e3", "inf", "nan", "", "x", "9" * 19, "9223372036854775807", "2147483648", "1.", ".5", "١"]


@pytest.mark.parametrize(("path", "name", "values"), [
    ("brokers max-epoch", "output", [None, "json", "JSON", "plain", "auto", "xml"]),
    ("brokers max-epoch", "zookeeper", [None, "h:2181/kafka", ""]),
    ("brokers max-epoch", "help", [None, True, False]),
    ("brokers max-epoch", "connect_timeout", [None, *NUMBERS, "10s", "1m"]),  # a parser of its own
    ("ids missing", "output", ["ndjson", "Table"]),
    ("sandbox up", "brokers", NUMBERS),  # 1..5000
    ("sandbox up", "directory", ["/tmp/x", "rel/dir", "", "-", "~/x", "/"]),
    ("sandbox up", "kafka_home", ["/nonexistent/kafka"]),
    ("sandbox kill", "broker_id", NUMBERS),  # unbounded
    ("sandbox kill", "hard", [True, False]),
    ("roll run", "pause_after", NUMBERS),  # 0..int32
    ("brokers wait", "epoch_gt", NUMBERS),  # -1..int64
    ("history ingest", "wait_lock", NUMBERS),  # a float, >= 0
])
def test_values_coerce_as_typers_adapter_does(path: str, name: str, values: list[Any]) -> None:
    """Each value: the same value and type as Typer's adapter gives, or the same error in the same words; the
    plain ones without building the adapter (no pydantic)."""
    param, ctx = _param(path, name)
    adapter = build_runtime_param(param.type_descriptor)
    plain = 0
    for v in values:
        try:
            theirs = adapter.coerce(v, param=param, ctx=ctx)
        except typer.BadParameter as e:
            with pytest.raises(typer.BadParameter) as ours_error:
                _NoAdapterYet().coerce(v, param, ctx)
            assert ours_error.value.format_message() == e.format_message(), (path, name, v)
            continue
        ours = _NoAdapterYet().coerce(v, param, ctx)
        assert ours == theirs or ours != ours and theirs != theirs, (path, name, v, ours, theirs)  # nan
        assert type(ours) is type(theirs), (path, name, v)
        with contextlib.suppress(_Adapter):
            assert _NoAdapterYet._plain(v, param, ctx) == ours  # given without the adapter
            plain += 1
    assert plain, "no value took the path without the adapter"


def test_a_value_that_is_no_choice_is_worded_by_typer() -> None:
    param, ctx = _param("brokers max-epoch", "output")
    with pytest.raises(typer.BadParameter) as ours:
        _NoAdapterYet().coerce("xml", param, ctx)
    with pytest.raises(typer.BadParameter) as theirs:
        build_runtime_param(param.type_descriptor).coerce("xml", param=param, ctx=ctx)
    assert ours.value.format_message() == theirs.value.format_message()
