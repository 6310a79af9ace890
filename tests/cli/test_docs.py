"""docs/commands.md and docs/exit-codes.md are generated from the code (`make docs`) and drift-tested here."""

from __future__ import annotations

import dataclasses
import re
import sys
from pathlib import Path

import pytest

from kadmin.cli import docs, exit_docs
from kadmin.cli.help import leaves, root_command, walk
from kadmin.exit_codes import CHECK_COMMANDS, ExitCode

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def test_generated_docs_are_current():
    """Run the generator in memory and compare with the checked-in files: `make docs` when this fails."""
    for path, text in docs.generate(ROOT).items():
        assert path.exists(), f"{path} is missing: run `make docs`"
        assert path.read_text() == text, f"{path.relative_to(ROOT)} is stale: run `make docs`"


def test_check_mode_names_a_stale_file(tmp_path, capsys):
    assert docs.main([str(tmp_path), "--check"]) == 1
    assert "commands.md is stale" in capsys.readouterr().err
    assert docs.main([str(tmp_path)]) == 0
    assert docs.main([str(tmp_path), "--check"]) == 0
    assert (tmp_path / "docs" / "commands.md").read_text() == docs.commands_md()


def test_every_command_has_its_whole_help_in_the_reference():
    """The reference has each command's full help text, not its first line (which may end mid-sentence)."""
    text = docs.commands_md()
    flat = " ".join(text.split())
    for path, cmd in leaves(root_command()):
        assert f"\n## kadmin {path}\n" in text
        for para in docs._paragraphs(cmd.help or ""):
            assert " ".join(para.split()) in flat, (path, para)


def test_summaries_are_whole_first_paragraphs():
    """A docstring wrapped mid-sentence keeps its whole first paragraph (the old generator cut its first line)."""

    class Cmd:
        help = "Reports: broker generations, bounce counts,\ncontroller failovers and epochs.\n\nKIND is one of them."

    assert docs.summary(Cmd()) == "Reports: broker generations, bounce counts, controller failovers and epochs."
    for _path, cmd in leaves(root_command()):
        assert not docs.summary(cmd).endswith((",", ";", ":")), _path


def test_markdown_escapes_what_would_vanish():
    assert docs._escape("the czxid of /brokers/ids/<id>") == "the czxid of /brokers/ids/&lt;id&gt;"
    assert docs._escape("ssl.* and sasl.*") == r"ssl.\* and sasl.\*"
    assert docs._escape("keep `a <b> *c*` as code") == "keep `a <b> *c*` as code"
    assert docs._escape("a|b", table=True) == r"a\|b"


def test_every_option_of_every_command_is_documented():
    text = docs.commands_md()
    common_tables = text.split("\n## kadmin ", 1)[0]
    for path, cmd in leaves(root_command()):
        section = text.split(f"\n## kadmin {path}\n", 1)[1].split("\n## kadmin ", 1)[0]
        for p in cmd.params:
            if not docs._is_option(p) or p.opts[0] == "--help":
                continue
            panel = getattr(p, "rich_help_panel", None) or "Options"
            by_panel = f"[all the {panel.lower()} options](#{docs._anchor(panel)})"
            if f"`{p.opts[0]}`" not in section:  # described once, in the common options' table
                assert by_panel in section and f"| `{p.opts[0]}`" in common_tables, (path, p.opts[0])


def test_no_help_text_is_eaten_as_rich_markup():
    """`kadmin CMD --help` renders help with rich markup: a bracketed `[default: x]` or `[id,id]` in a help
    string would vanish from the terminal (it did: "Stop after this long ."). Every help text, as rich
    renders it, must read as written."""
    from rich.text import Text

    eaten = []
    for path, cmd in leaves(root_command()):
        texts = [cmd.help or ""] + [getattr(p, "help", None) or "" for p in cmd.params]
        for t in texts:
            if Text.from_markup(t).plain != t:
                eaten.append((path, t))
    assert eaten == []


def test_every_command_has_declared_exit_codes():
    """A new command fails here until kadmin/cli/exit_docs.py says which exit codes it can return."""
    paths = set(docs.command_paths())
    declared = set(exit_docs.COMMANDS) | set(CHECK_COMMANDS)
    assert paths - declared == set(), "add these to kadmin/cli/exit_docs.py"
    assert declared - paths == set(), "these are not commands"
    assert set(exit_docs.CHECKS) == set(CHECK_COMMANDS)
    assert not set(exit_docs.COMMANDS) & set(CHECK_COMMANDS)
    for path, codes in exit_docs.COMMANDS.items():
        assert ExitCode.OK in codes, path


def test_exit_code_doc_lists_every_command_and_the_codes_every_command_shares():
    text = docs.exit_codes_md()
    for path in docs.command_paths():
        assert re.search(rf"^\| `kadmin {re.escape(path)}` \| [^|]*\*\*0\*\*", text, re.M), path
    shared = text.split("can also return", 1)[1].split("\n", 1)[0]
    for code in (ExitCode.USAGE, ExitCode.INTERRUPTED):
        assert f"**{int(code)}**" in shared
    internal = getattr(ExitCode, "INTERNAL", None)  # a code no row names is shared by every command
    if internal is not None:
        assert f"**{int(internal)}**" in shared


@pytest.mark.parametrize("doc", ["README.md", *sorted(str(p.relative_to(ROOT)) for p in DOCS.glob("*.md"))])
def test_no_internal_jargon_in_user_documentation(doc):
    """Users see KIPs and Kafka's own names, not documents that are not in the repository."""
    text = (ROOT / doc).read_text()
    for word in ("seed 0", "the seed's", "kafka-formats", "zookeeper-notes", "protocol-notes", "peers.md",
                 "design.md", "issue 1"):
        assert word not in text.lower(), (doc, word)


def test_readme_is_a_front_door():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.encode()) <= 11_000
    assert readme.index("make demo") < readme.index("make test") < readme.index("```console")
    for link in re.findall(r"\]\(((?:docs|bench)/[^)#]+)", readme):
        assert (ROOT / link).exists(), link


def test_doc_links_resolve():
    for doc in DOCS.glob("*.md"):
        for link in re.findall(r"\]\(([^)#:]+\.md)", doc.read_text()):
            assert (doc.parent / link).resolve().exists(), (doc.name, link)


def test_the_safety_idiom_names_real_commands_that_take_dry_run():
    commands = dict(leaves(root_command()))
    for path in docs.MUTATING:
        assert any("--dry-run" in p.opts for p in commands[path].params), path


# ----------------------------------------------------------------------------- every help line reads as click's

# Typer 0.29's notation, which no kadmin help shows: `{HOST}` and `{PATH...}...` in usage lines, and a type
# column of `<bool>`, `<int>`, `<str>`, `<float>`, `<path>`, `<list[str]>` or `<a|b|c>` in the panels. The
# `roll` hooks' placeholders ({id} {host} {port} {rack} {role}, kadmin/services/roll_hooks.py) are help text.
TYPER_NOTATION = re.compile(r"<(?:bool|int|str|float|path|datetime|uuid|list\[)[^>]*>|<[^<>\s]*\|[^<>\s]*>"
                            r"|\{(?!(?:id|host|port|rack|role)\})[^}]*\}")


def _help(path: str, columns: int = 250) -> str:
    from typer.testing import CliRunner

    from kadmin.cli.app import app
    from kadmin.cli.help import rich_help

    rich_help()  # Typer reads TERMINAL_WIDTH once, on import: the width is set where it keeps it, too
    ru = sys.modules["typer.rich_utils"]
    saved, ru.MAX_WIDTH = ru.MAX_WIDTH, columns
    width = str(columns)
    args = path.split() if path.startswith("help ") else [*path.split(), "--help"]
    try:
        r = CliRunner().invoke(app, args, env={"COLUMNS": width, "TERMINAL_WIDTH": width})
    finally:
        ru.MAX_WIDTH = saved
    assert r.exit_code == 0, (path, r.output)
    return r.output


def _usage_line(text: str) -> str:
    """The `Usage: ...` line of a help text, joined if rich wrapped it."""
    lines = text.splitlines()
    i = next(i for i, ln in enumerate(lines) if ln.strip().startswith("Usage:"))
    out = [lines[i].strip()]
    for ln in lines[i + 1:]:
        if not ln.strip():
            break
        out.append(ln.strip())
    return " ".join(out)


def test_every_help_reads_as_click_does():
    """`kadmin --help`, every group's and every command's: no Typer type notation in the usage line or the
    panels; a flag shows no value; an option's value shows its metavar or its choices."""
    bad = []
    for node in walk(root_command()):
        text = _help(node.path)
        bad += [(node.path, m.group()) for m in TYPER_NOTATION.finditer(text)]
        # the reference's usage line is --help's (click wraps a long one at 80 columns, even inside a word)
        assert "".join(_usage_line(text).split()) == "".join(f"Usage: {docs.usage(node.path, node.command)}".split())
    assert bad == []


def test_usage_lines_name_arguments_as_click_does():
    assert _usage_line(_help("ids map")) == "Usage: kadmin ids map [OPTIONS] HOST ID"
    assert _usage_line(_help("history ingest")) == "Usage: kadmin history ingest [OPTIONS] PATH..."
    assert _usage_line(_help("cluster check-id")) == "Usage: kadmin cluster check-id [OPTIONS] META_PROPERTIES..."
    assert _usage_line(_help("")) == "Usage: kadmin [OPTIONS] COMMAND [ARGS]..."
    assert _usage_line(_help("brokers")) == "Usage: kadmin brokers [OPTIONS] COMMAND [ARGS]..."


def _row(text: str, option: str) -> str:
    rows = (" ".join(ln.strip("│ ").split()) for ln in text.splitlines())
    return next(r for r in rows if r.startswith(f"{option} "))


def test_flags_show_no_value_and_options_their_metavar():
    text = _help("ids map")
    assert _row(text, "--dry-run") == "--dry-run Say what would change."
    assert _row(text, "--help").startswith("--help -h Show this message")
    assert _row(text, "--output").startswith("--output -o auto|table|plain|json|ndjson auto:")
    conn = [" ".join(ln.strip("│ ").split()) for ln in _help("help connection").splitlines()]
    assert conn[conn.index("--zk-tls") + 1] == "Connect to ZooKeeper over TLS."  # a flag: no value
    assert _row(_help(""), "--version") == "--version Print the version and exit."
    assert _row(_help("brokers watch"), "--count").startswith("--count N [x>=1] Stop after N events")
    assert _row(_help("sandbox up"), "--brokers").startswith("--brokers N [1<=x<=5000] How many brokers")


def test_a_bound_that_is_only_the_types_limit_is_not_shown():
    """`[1<=x<=9223372036854775807]` says nothing to an operator: the range reads `[x>=1]`; the check stays."""
    for path in ("brokers watch", "brokers wait", "brokers shutdown", "quorum check", "partitions check"):
        text = _help(path)
        assert "2147483647" not in text and "9223372036854775807" not in text, path
    assert "9223372036854775807" not in docs.commands_md() and "2147483647" not in docs.commands_md()


def test_every_value_is_named():
    """Every option that takes a value and every argument has a metavar or choices (N, SECONDS, HOST, ...):
    none falls back to a word for its type."""
    from kadmin.cli.help import value_name

    unnamed = []
    for path, cmd in leaves(root_command()):
        for p in cmd.params:
            if getattr(p, "hidden", False):
                continue
            if p.param_type_name == "argument" and not p.metavar:
                unnamed.append((path, p.name))
            if p.param_type_name == "option" and value_name(p) in {"N", "NUMBER", "TEXT", "PATH", "VALUE"} \
                    and not p.metavar:
                unnamed.append((path, p.opts[0]))
    assert unnamed == []


def test_every_command_and_group_displays_its_parameters_as_click_does():
    """A command registered without kadmin's classes (app.command(...) instead of @command) fails here."""
    from kadmin.cli.help import ReadableHelp

    assert [n.path for n in walk(root_command()) if not isinstance(n.command, ReadableHelp)] == []


def test_the_reference_shows_values_as_help_does():
    text = docs.commands_md()
    assert "kadmin ids map [OPTIONS] HOST ID\n" in text
    assert "kadmin history ingest [OPTIONS] PATH...\n" in text
    for word in ("INTEGER", "<bool>", "<int>", "{ID}"):
        assert word not in text, word


def test_help_text_is_wrapped_to_the_terminal():
    """Docstrings are wrapped at the source's width and rich kept those breaks: on an 80-column terminal
    `brokers wait --help` read "saying on / stderr what still / blocks;". Now a description line ends only
    where the next word would not fit, or where its paragraph ends."""
    ragged = []
    for node in walk(root_command()):
        lines = _help(node.path, columns=80).split("╭", 1)[0].splitlines()
        start = next(i for i, ln in enumerate(lines) if ln.strip().startswith("Usage:"))
        start += next(i for i, ln in enumerate(lines[start:]) if not ln.strip())  # after the usage line(s)
        desc = [ln.rstrip() for ln in lines[start:]]
        for a, b in zip(desc, desc[1:], strict=False):
            if a.strip() and b.strip() and len(a.strip()) + 1 + len(b.split()[0]) <= 78:
                ragged.append((node.path, a.strip(), b.split()[0]))
    assert ragged == []


def test_help_paragraphs_keep_lists():
    from kadmin.cli.help import paragraphs

    text = "First line\n    goes on.\n\n    - one\n    - two\n      wrapped\n\n    Last."
    assert paragraphs(text) == ["First line goes on.", "- one\n- two\nwrapped", "Last."]


def test_no_name_or_env_var_is_ever_cut_at_80_columns():
    """Issue 21 §2: rich ended an over-long cell with "…" (`--zk-tls-no-hostname-…`, `KADMIN_BOOTSTRAP_SER…`).
    Nothing is cut at 80 columns; nor split mid-word (issue 35 §3: tests/cli/test_help_width.py)."""
    cut = []
    for node in walk(root_command()):
        text = _help(node.path, columns=80)
        cut += [(node.path, ln) for ln in text.splitlines() if "…" in ln]
    assert cut == []
    text = _help("help connection", columns=80)  # the longest name and env var, each whole on one line
    assert "--zk-tls-no-hostname-check" in text and "KADMIN_ZK_TLS_NO_HOSTNAME_CHECK" in text


# ----------------------------------------------------------------------------------------- docs/json.md
def _json_blocks(text: str) -> list[list[str]]:
    return [block.strip("\n").split("\n") for block in re.findall(r"```json\n(.*?)```", text, re.S)]


def test_json_md_shows_the_envelope_kadmin_prints():
    """docs/json.md's envelopes are the version and key set `kadmin -o json` prints (it showed version 1)."""
    import json

    from kadmin.render.renderer import RESULT_VERSION

    text = (DOCS / "json.md").read_text()
    envelopes = [json.loads("\n".join(b)) for b in _json_blocks(text) if b[0] == "{" and len(b) > 1]
    assert envelopes, "no envelope example"
    for doc in envelopes:
        assert list(doc) == ["kadmin_result_version", "command", "status", "exit_code", "data", "errors"], doc
        assert doc["kadmin_result_version"] == RESULT_VERSION
    assert {d["command"] for d in envelopes} >= {"roll plan", "roll run", "roll status"}
    assert re.findall(r'"kadmin_result_version": (\d+)', text) == [str(RESULT_VERSION)] * len(envelopes)


def test_json_md_roll_stream_is_a_journal_the_roll_reads_back(tmp_path):
    """The `roll run -o ndjson` lines docs/json.md shows parse with the journal's own parser, cover every kind of
    event, and replay (through a real journal file) into the `roll status` result the page shows next."""
    import json

    from kadmin.domain import roll_events as ev
    from kadmin.services import roll as svc

    text = (DOCS / "json.md").read_text()
    streams = [b for b in _json_blocks(text) if all(ln.startswith('{"event": ') for ln in b)]
    shown_lines = [json.loads(ln) for b in streams for ln in b]
    lines = [d for d in shown_lines if d["event"] != ev.GateWaiting.event]  # the stream's only, never journaled
    waiting = [d for d in shown_lines if d["event"] == ev.GateWaiting.event]
    assert waiting and all(list(d) == ["event", *(f.name for f in dataclasses.fields(ev.GateWaiting))]
                           for d in waiting)
    events = [ev.parse(d) for d in lines]
    assert all(e is not None for e in events) and {e.event for e in events} == set(ev.KINDS)  # type: ignore[union-attr]
    state = tmp_path / "roll"
    state.mkdir()
    (state / "journal.ndjson").write_text("".join(json.dumps(d) + "\n" for d in lines))
    shown = [json.loads("\n".join(b)) for b in _json_blocks(text) if b[0] == "{" and len(b) > 1]
    final = next(d for d in shown if d["command"] == "roll run")["data"]
    got = svc.status(state).data.to_json()
    assert got == {**final, "state_dir": str(state)}, got
    assert got["status"] == "done" and all(n["status"] == "done" for n in got["nodes"])


def test_json_md_is_in_the_generated_files(tmp_path, capsys):
    assert docs.main([str(tmp_path), "--check"]) == 1
    assert "json.md is stale" in capsys.readouterr().err
