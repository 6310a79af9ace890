"""The completion scripts, the commands reference and the every-command test walk one command tree; the scripts
complete values (issue 35 §4): bash's is run by bash itself, as readline calls it."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kadmin.cli import docs
from kadmin.cli.app import app
from kadmin.cli.completion import command_tree
from kadmin.cli.help import leaves, option_names, root_command, walk


def test_one_walk_gives_every_consumer_the_same_commands():
    nodes = walk(root_command())
    assert [n.path for n in nodes][0] == ""  # the root first
    assert sorted(command_tree(app)) == sorted(n.path for n in nodes)
    assert docs.command_paths() == [n.path for n in nodes if n.leaf] == [p for p, _ in leaves(root_command())]
    groups = {n.path for n in nodes if n.group}
    assert {"", "brokers", "ids", "sandbox"} <= groups and "brokers list" not in groups


def test_the_walk_sees_what_click_sees():
    """Groups list their visible subcommands by name; a leaf's options are its visible options."""
    root = root_command()
    by_path = {n.path: n for n in walk(root)}
    assert by_path["brokers"].subcommands == tuple(sorted(root.commands["brokers"].commands))
    assert by_path["brokers list"].subcommands == () and by_path["brokers list"].leaf
    names = option_names(by_path["brokers wait"].command)
    assert {"--timeout", "--output", "-o", "--bootstrap-server"} <= set(names)
    assert "--help" not in names  # click adds it; it is no declared option
    tree = command_tree(app)
    assert {o for o, _ in tree["brokers wait"]["options"]} == {*names, "--help"}


def test_hidden_commands_are_left_out():
    import typer

    from kadmin.cli.help import HelpCommand, HelpGroup

    demo = typer.Typer(cls=HelpGroup)
    sub = typer.Typer(name="sub", cls=HelpGroup)
    sub.command("shown", cls=HelpCommand)(lambda: None)
    sub.command("secret", cls=HelpCommand, hidden=True)(lambda: None)
    demo.add_typer(sub)
    demo.command("top", cls=HelpCommand)(lambda: None)
    paths = [n.path for n in walk(typer.main.get_command(demo))]
    assert paths == ["", "sub", "sub shown", "top"]


# ----------------------------------------------------------------------------- completing values (issue 35 §4)
ROOT = Path(__file__).parents[2]
BASH = ROOT / "completions" / "kadmin.bash"


def kadmin_on_path(tmp_path: Path) -> Path:
    """A directory holding a `kadmin` that runs this checkout's, as an installed console script would."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    exe = bin_dir / "kadmin"
    exe.write_text(f'#!/bin/sh\nPYTHONPATH={ROOT} exec {sys.executable} -m kadmin "$@"\n')
    exe.chmod(0o755)
    return bin_dir


def bash_complete(tmp_path: Path, *words: str, env: dict[str, str] | None = None) -> tuple[list[str], str]:
    """bash's own completion of `words` (the last is the word being completed) by completions/kadmin.bash's
    function, as readline calls it: COMPREPLY, one value a line, and what went to stderr."""
    line = " ".join(words)
    script = ("source \"$1\"; shift; COMP_WORDS=(\"$@\"); COMP_CWORD=$(($# - 1)); COMP_LINE=\"$LINE\"; "
              "COMP_POINT=${#COMP_LINE}; _kadmin_complete; printf '%s\\n' \"${COMPREPLY[@]}\"")
    full_env = {**os.environ, "PATH": f"{kadmin_on_path(tmp_path)}:{os.environ['PATH']}", "LINE": line,
                **(env or {})}
    r = subprocess.run(["bash", "-c", script, "bash", str(BASH), *words], capture_output=True, text=True,
                       timeout=60, cwd=tmp_path, env=full_env)
    assert r.returncode == 0, r.stderr
    return [w for w in r.stdout.splitlines() if w], r.stderr


def test_bash_completes_output_choices(tmp_path):
    assert bash_complete(tmp_path, "kadmin", "brokers", "list", "-o", "")[0] == ["auto", "table", "plain", "json",
                                                                                "ndjson"]
    assert bash_complete(tmp_path, "kadmin", "partitions", "list", "--output", "nd")[0] == ["ndjson"]
    # bash splits `--output=j` at the `=` (COMP_WORDBREAKS): the value is still the option's
    assert bash_complete(tmp_path, "kadmin", "brokers", "list", "--output", "=", "j")[0] == ["json"]
    # an option's value is not taken for a command word: the command's options follow it
    assert "--verbose" in bash_complete(tmp_path, "kadmin", "brokers", "list", "-o", "json", "--")[0]


def test_bash_completes_controllers_and_other_choice_lists(tmp_path):
    assert bash_complete(tmp_path, "kadmin", "roll", "plan", "--controllers", "")[0] == ["first", "skip"]
    assert bash_complete(tmp_path, "kadmin", "roll", "plan", "--batch-rule", "m")[0] == ["min-isr"]
    assert bash_complete(tmp_path, "kadmin", "sandbox", "up", "--mode", "")[0] == ["zk", "kraft", "migration"]


def test_bash_completes_file_names_for_file_options(tmp_path):
    (tmp_path / "listing.json").write_text("{}")
    (tmp_path / "logs").mkdir()
    assert bash_complete(tmp_path, "kadmin", "brokers", "diff", "--since", "li")[0] == ["listing.json"]
    # compgen -f gives the directory's own order (a tmpfs lists the newest first); bash sorts what it shows
    assert sorted(bash_complete(tmp_path, "kadmin", "brokers", "list", "--command-config", "l")[0]) == [
        "listing.json", "logs"]
    assert bash_complete(tmp_path, "kadmin", "brokers", "list", "--metadata-dir", "l")[0] == ["logs"]  # a DIR
    assert bash_complete(tmp_path, "kadmin", "cluster", "check-id", "li")[0] == ["listing.json"]  # an argument


def test_bash_completes_the_shells_and_the_commands(tmp_path):
    assert bash_complete(tmp_path, "kadmin", "completion", "")[0] == ["bash", "zsh", "fish"]
    assert bash_complete(tmp_path, "kadmin", "help", "c")[0] == ["connection", "cluster"]
    assert bash_complete(tmp_path, "kadmin", "bro")[0] == ["brokers"]


def test_bash_completes_context_names_from_the_contexts_file(tmp_path):
    cfg = tmp_path / "config" / "kadmin"
    cfg.mkdir(parents=True)
    (cfg / "config.toml").write_text('current-context = "prod"\n[contexts.prod]\nzookeeper = "zk1:2181"\n'
                                     '[contexts.staging]\nbootstrap-server = "k1:9092"\n[contexts.perf]\n')
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config")}
    assert bash_complete(tmp_path, "kadmin", "brokers", "list", "--context", "", env=env)[0] == ["perf", "prod",
                                                                                                 "staging"]
    assert bash_complete(tmp_path, "kadmin", "brokers", "list", "--context", "p", env=env)[0] == ["perf", "prod"]
    # no contexts file, or one that is no TOML: nothing offered, nothing said
    (cfg / "config.toml").write_text("this is = = not toml")
    assert bash_complete(tmp_path, "kadmin", "brokers", "list", "--context", "", env=env) == ([], "")


def test_broker_ids_from_an_unreachable_cluster_are_nothing_soon_and_silent(tmp_path):
    """The cluster does not answer (a ZooKeeper port nothing listens on; a bootstrap address that drops packets):
    the ids' completion gives up within its bound, offers nothing and says nothing."""
    import socket
    import time

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    for words in (("-z", f"127.0.0.1:{port}"), ("--bootstrap-server", "192.0.2.1:9092")):
        start = time.monotonic()
        assert bash_complete(tmp_path, "kadmin", "brokers", "show", *words, "") == ([], "")
        assert time.monotonic() - start < 15  # its bound is 2 s (3 at most); a busy machine starts Python slowly
    # the current context names it
    cfg = tmp_path / "config" / "kadmin"
    cfg.mkdir(parents=True)
    (cfg / "config.toml").write_text(f'current-context = "x"\n[contexts.x]\nzookeeper = "127.0.0.1:{port}"\n')
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config")}
    assert bash_complete(tmp_path, "kadmin", "ids", "map", "host1", "", env=env) == ([], "")
    r = subprocess.run([sys.executable, "-m", "kadmin", "__complete", "ids", "-z", f"127.0.0.1:{port}"],
                       capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert (r.returncode, r.stdout, r.stderr) == (1, "", "")


def needs(shell: str) -> str:
    """The shell's path; CI installs zsh and fish (.ci/run), elsewhere a test of a shell not installed skips."""
    path = shutil.which(shell)
    if path is None:
        if os.environ.get("CI"):
            pytest.fail(f"{shell} is not installed: .ci/run installs it")
        pytest.skip(f"{shell} is not installed")
    return path


def zsh_complete(tmp_path: Path, *words: str, env: dict[str, str] | None = None) -> list[str]:
    """zsh running completions/kadmin.zsh's function `_kadmin` on `words` (the last is the word being completed)
    as compinit calls it (`words`, `CURRENT`), with zsh's completers stood in by functions that print what they
    were given: compadd's candidates one a line, `_files` and `_default` as `@files ARGS` and `@default`."""
    script = ("compadd() { while [[ $# -gt 0 && $1 != -- ]]; do shift; done; shift; print -rl -- \"$@\" }; "
              "_files() { print -r -- \"@files $*\" }; _default() { print -r -- @default }; compdef() { : }; "
              "source \"$1\"; shift; words=(\"$@\"); CURRENT=$#; _kadmin")
    full_env = {**os.environ, "PATH": f"{kadmin_on_path(tmp_path)}:{os.environ['PATH']}", **(env or {})}
    r = subprocess.run([needs("zsh"), "-f", "-c", script, "zsh", str(ROOT / "completions" / "kadmin.zsh"), *words],
                       capture_output=True, text=True, timeout=60, cwd=tmp_path, env=full_env)
    assert (r.returncode, r.stderr) == (0, ""), r.stderr
    return [w for w in r.stdout.splitlines() if w]


def fish_complete(tmp_path: Path, line: str, env: dict[str, str] | None = None) -> list[str]:
    """fish's own completion of the command line `line` (`complete -C`) with completions/kadmin.fish loaded: the
    candidates, without their descriptions."""
    full_env = {**os.environ, "PATH": f"{kadmin_on_path(tmp_path)}:{os.environ['PATH']}", **(env or {})}
    r = subprocess.run([needs("fish"), "--no-config", "-c", 'source $argv[1]; complete -C $argv[2]',
                        str(ROOT / "completions" / "kadmin.fish"), line],
                       capture_output=True, text=True, timeout=60, cwd=tmp_path, env=full_env)
    assert (r.returncode, r.stderr) == (0, ""), r.stderr
    return [w.split("\t")[0] for w in r.stdout.splitlines() if w]


def test_the_zsh_script_autoloads_from_fpath(tmp_path):
    text = (ROOT / "completions" / "kadmin.zsh").read_text()
    assert text.splitlines()[0] == "#compdef kadmin"
    assert "bashcompinit" not in text  # a native function: compinit loads it from the file _kadmin
    r = subprocess.run([needs("zsh"), "-n", str(ROOT / "completions" / "kadmin.zsh")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    # autoloaded from $fpath as compinit does (the file named _kadmin): the first call defines and runs it
    fpath = tmp_path / "fpath"
    fpath.mkdir()
    shutil.copy(ROOT / "completions" / "kadmin.zsh", fpath / "_kadmin")
    script = (f"fpath=({fpath} $fpath); autoload -Uz _kadmin; "
              "compadd() { while [[ $# -gt 0 && $1 != -- ]]; do shift; done; shift; print -rl -- \"$@\" }; "
              "words=(kadmin completion ''); CURRENT=3; _kadmin")
    r = subprocess.run([needs("zsh"), "-f", "-c", script], capture_output=True, text=True, timeout=60)
    assert (r.returncode, r.stderr, r.stdout.split()) == (0, "", ["bash", "zsh", "fish"]), r


def test_zsh_completes_values(tmp_path):
    assert zsh_complete(tmp_path, "kadmin", "brokers", "list", "-o", "") == ["auto", "table", "plain", "json",
                                                                              "ndjson"]
    assert zsh_complete(tmp_path, "kadmin", "roll", "plan", "--controllers", "") == ["first", "skip"]
    assert zsh_complete(tmp_path, "kadmin", "completion", "") == ["bash", "zsh", "fish"]
    assert zsh_complete(tmp_path, "kadmin", "roll", "run", "--state", "")[0].startswith("@files")
    assert "list" in zsh_complete(tmp_path, "kadmin", "brokers", "")
    cfg = tmp_path / "config" / "kadmin"
    cfg.mkdir(parents=True)
    (cfg / "config.toml").write_text('[contexts.prod]\nzookeeper = "zk1:2181"\n[contexts.perf]\n')
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config")}
    assert zsh_complete(tmp_path, "kadmin", "brokers", "list", "--context", "", env=env) == ["perf", "prod"]


def test_fish_completes_values(tmp_path):
    r = subprocess.run([needs("fish"), "-n", str(ROOT / "completions" / "kadmin.fish")], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    assert fish_complete(tmp_path, "kadmin brokers list -o ") == ["auto", "json", "ndjson", "plain", "table"]
    assert fish_complete(tmp_path, "kadmin roll plan --controllers ") == ["first", "skip"]
    assert fish_complete(tmp_path, "kadmin completion ") == ["bash", "fish", "zsh"]
    assert "list" in fish_complete(tmp_path, "kadmin brokers ")
    cfg = tmp_path / "config" / "kadmin"
    cfg.mkdir(parents=True)
    (cfg / "config.toml").write_text('[contexts.prod]\nzookeeper = "zk1:2181"\n[contexts.perf]\n')
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config")}
    assert fish_complete(tmp_path, "kadmin brokers list --context ", env=env) == ["perf", "prod"]


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_every_script_asks_kadmin_only_for_what_no_list_holds(shell):
    from kadmin.cli.completion import script

    text = script(shell, app)
    asks = sorted(set(re.findall(r"__complete (\w+)", text)))
    assert asks == ["contexts", "ids"]
    assert "2>/dev/null" in text
