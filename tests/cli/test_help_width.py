"""Help at 80 and 120 columns (issue 35 §3): nothing split mid-word, the Connection panel one line per command.

Every help is rendered as a user's terminal of that width shows it (COLUMNS and TERMINAL_WIDTH, as rich and Typer
read them), and each word a user reads or copies (an option's names, its metavar or choice list, its environment
variable, each word of its help and of the command's description) must stand whole on one line.
"""

from __future__ import annotations

import re
import sys

import pytest
from typer.testing import CliRunner

from kadmin.cli.app import app
from kadmin.cli.help import (
    argument_name,
    connection_options,
    paragraphs,
    rich_help,
    root_command,
    value_name,
    walk,
)
from kadmin.cli.options import connection_params

WIDTHS = (80, 120)
BOX = re.compile(r"[│╭╮╰╯─]")


def _run(*args: str, columns: int) -> str:
    """The command's output on a terminal `columns` wide: Typer reads TERMINAL_WIDTH once, when its rich help is
    imported (typer.rich_utils.MAX_WIDTH), so the width is set there too, whatever imported it first."""
    rich_help()
    ru = sys.modules["typer.rich_utils"]
    saved, ru.MAX_WIDTH = ru.MAX_WIDTH, columns
    try:
        width = str(columns)
        r = CliRunner().invoke(app, list(args), env={"COLUMNS": width, "TERMINAL_WIDTH": width})
    finally:
        ru.MAX_WIDTH = saved
    assert r.exit_code == 0, (args, r.output)
    return r.output


def _lines(text: str) -> list[str]:
    return [BOX.sub(" ", ln) for ln in text.splitlines()]


def _words(p) -> list[str]:
    """What a user reads of one parameter: its names, value (metavar or choices), env var and help words."""
    if p.param_type_name == "argument":
        words = [argument_name(p).strip("[]").removesuffix("...")]
    else:
        words = [*p.opts, *getattr(p, "secondary_opts", [])]
    if p.param_type_name == "option" and value_name(p):
        words.append(value_name(p))
    if getattr(p, "envvar", None) and getattr(p, "show_envvar", True):
        words.append(p.envvar)
    words += (getattr(p, "help", None) or "").split()
    return words


def _split(text: str, words: list[str]) -> list[str]:
    """The words of `words` that no line of `text` holds whole."""
    lines = _lines(text)
    return sorted({w for w in words if not any(w in ln for ln in lines)})


NODES = walk(root_command())


@pytest.mark.parametrize("columns", WIDTHS)
def test_no_help_splits_a_name_metavar_choice_list_env_var_or_word(columns):
    split = []
    for node in NODES:
        text = _help = _run(*node.path.split(), "--help", columns=columns)
        assert max(len(ln) for ln in text.splitlines()) <= columns, node.path
        conn = {id(p) for p in connection_options(node.command.params)}
        words = [w for p in node.command.params if id(p) not in conn and not getattr(p, "hidden", False)
                 for w in _words(p)]
        for para in paragraphs(node.command.help or ""):
            words += para.split()
        for name in node.subcommands:
            words += node.command.commands[name].get_short_help_str(limit=10_000).split()
        split += [(node.path, w) for w in _split(_help, words)]
    assert split == [], "\n".join(map(str, split))


@pytest.mark.parametrize("columns", WIDTHS)
def test_output_choices_fit_on_one_line(columns):
    text = _run("brokers", "list", "--help", columns=columns)
    [row] = [ln for ln in _lines(text) if "--output" in ln]
    assert "-o" in row and "auto|table|plain|json|ndjson" in row


def test_every_command_sums_up_its_connection_options_in_one_line():
    """The dozen connection options were 60 of a help's 105-150 lines: now one line, naming the whole panel's
    place, on every command that takes them, and none of their rows."""
    conn_names = {n for p in connection_params() for n in p.opts}
    with_conn = []
    for node in NODES:
        text = _run(*node.path.split(), "--help", columns=80)
        lines = _lines(text)
        has = bool(connection_options(node.command.params))
        summary = [ln for ln in lines if "kadmin help connection" in ln and ln.strip().startswith("-")]
        if has:
            with_conn.append(node.path)
            assert len(summary) == 1, (node.path, summary)
            assert re.search(r"-z, -b, --context(, --timeout)? and \d+ more: kadmin help connection", summary[0])
        else:
            assert summary == [], node.path
        rows = [ln.split()[0] for ln in lines if re.match(r"^ {1,2}-\S+( {2,}|$)", ln)
                and ln.split()[0] in conn_names - {"--timeout"}]  # a row of an option panel, not a word of help
        assert rows == [], (node.path, rows)
    assert "brokers list" in with_conn and "roll run" in with_conn and "sandbox up" not in with_conn
    short = _run("brokers", "list", "--help", columns=80)
    assert len(short.splitlines()) < 50  # it was 105


@pytest.mark.parametrize("columns", WIDTHS)
def test_help_connection_shows_the_whole_panel_unsplit(columns):
    text = _run("help", "connection", columns=columns)
    assert max(len(ln) for ln in text.splitlines()) <= columns
    params = connection_params()
    assert {n for p in params for n in p.opts} >= {"--zookeeper", "-z", "--zk-tls-no-hostname-check",
                                                  "--bootstrap-server", "--context", "--connect-timeout"}
    words = [w for p in params for w in _words(p)]
    assert _split(text, words) == []
    # each option's names and value on a line of its own, as the panel used to show them
    lines = [ln.strip() for ln in _lines(text)]
    assert "-z, --zookeeper HOST:PORT[,HOST:PORT...][/chroot]" in lines
    assert "--zk-tls-no-hostname-check" in lines
    assert "KADMIN_ZK_TLS_NO_HOSTNAME_CHECK]" in " ".join(lines).split()


def test_help_names_a_command_or_the_connection_topic():
    assert "Usage: kadmin brokers list [OPTIONS]" in _run("help", "brokers", "list", columns=120)
    assert "Usage: kadmin [OPTIONS] COMMAND" in _run("help", columns=120)
    r = CliRunner().invoke(app, ["help", "brokers", "nosuch"])
    assert r.exit_code == 2
    [line] = r.stderr.strip().splitlines()
    assert "no such command or topic: brokers nosuch" in line and "connection" in line


def test_root_help_lists_every_exit_code():
    from kadmin.exit_codes import ExitCode

    text = " ".join(_run("--help", columns=250).split())
    listed = {int(n) for n in re.findall(r"(?:codes: |, )(\d+) ", text.split("the check verbs")[0])}
    assert listed == {int(c) for c in ExitCode}


def test_verbose_promises_cluster_details_only_where_there_is_a_cluster():
    for node in NODES:
        if not node.leaf or node.path in ("completion", "help"):
            continue
        [v] = [p for p in node.command.params if "--verbose" in p.opts]
        says_cluster = "cluster" in v.help
        assert says_cluster == bool(connection_options(node.command.params)), node.path


def test_roll_hook_options_name_their_placeholders_and_status_continues_nothing():
    root = root_command()
    for path, opt in (("roll run", "--start"), ("roll run", "--restart"), ("roll run", "--only-if"),
                      ("roll run", "--stop")):
        cmd = root.commands["roll"].commands[path.split()[1]]
        [p] = [p for p in cmd.params if opt in p.opts]
        assert "{id} {host} {port} {rack} {role}" in p.help, opt
    status = root.commands["roll"].commands["status"]
    [state] = [p for p in status.params if "--state" in p.opts]
    assert "continue" not in state.help and "run again" not in state.help
