"""docs/commands.md and docs/exit-codes.md are generated from the code (`make docs`) and drift-tested here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kadmin.cli import docs, exit_docs
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
    for path, cmd in docs._commands(docs._root()):
        assert f"\n## kadmin {path}\n" in text
        for para in docs._paragraphs(cmd.help or ""):
            assert " ".join(para.split()) in flat, (path, para)


def test_summaries_are_whole_first_paragraphs():
    """A docstring wrapped mid-sentence keeps its whole first paragraph (the old generator cut its first line)."""

    class Cmd:
        help = "Reports: broker generations, bounce counts,\ncontroller failovers and epochs.\n\nKIND is one of them."

    assert docs.summary(Cmd()) == "Reports: broker generations, bounce counts, controller failovers and epochs."
    for _path, cmd in docs._commands(docs._root()):
        assert not docs.summary(cmd).endswith((",", ";", ":")), _path


def test_markdown_escapes_what_would_vanish():
    assert docs._escape("the czxid of /brokers/ids/<id>") == "the czxid of /brokers/ids/&lt;id&gt;"
    assert docs._escape("ssl.* and sasl.*") == r"ssl.\* and sasl.\*"
    assert docs._escape("keep `a <b> *c*` as code") == "keep `a <b> *c*` as code"
    assert docs._escape("a|b", table=True) == r"a\|b"


def test_every_option_of_every_command_is_documented():
    text = docs.commands_md()
    common_tables = text.split("\n## kadmin ", 1)[0]
    for path, cmd in docs._commands(docs._root()):
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
    for path, cmd in docs._commands(docs._root()):
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
    commands = dict(docs._commands(docs._root()))
    for path in docs.MUTATING:
        assert any("--dry-run" in p.opts for p in commands[path].params), path
