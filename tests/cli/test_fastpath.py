"""The gates' fast path (kadmin/cli/fastpath.py, issue 24 §2): `brokers max-epoch`, `can-stop`, `wait` and
`partitions check` read from a static option table without importing Typer.

The table is held to the Typer commands (every option word, its parameter, flag or value, repeatable or not,
environment variable, default and range), every command line of a grid is read by both parsers and must give
the same values where the fast path reads it (and the fast path must leave to Typer each line Typer refuses),
and the same commands run by both, as processes against real ZooKeeper, print the same bytes and exit alike.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import typer

from kadmin.cli import fastpath
from kadmin.cli.app import app
from kadmin.cli.fastpath import COMMON, CONNECTION, ENVIRONMENT, FLAG, GATES, MULTI, parse
from kadmin.sandbox.fleet import ThreadedFleet


def typer_command(key: tuple[str, str]) -> Any:
    group, name = key
    return typer.main.get_command(app).commands[group].commands[name]  # type: ignore[attr-defined]


def option_words(cmd: Any) -> dict[str, Any]:
    return {w: p for p in cmd.params if p.param_type_name == "option" for w in (*p.opts, *p.secondary_opts)}


@pytest.mark.parametrize("key", sorted(GATES), ids=" ".join)
def test_the_table_is_the_typer_commands_own(key: tuple[str, str]) -> None:
    cmd = typer_command(key)
    gate = GATES[key]
    words = option_words(cmd)
    table = {**CONNECTION, **COMMON, **gate.options}
    assert set(words) == set(table)  # the fast path reads every option (not --help)
    assert set(table) <= set(words)
    for word, (param, kind, _convert) in table.items():
        p = words[word]
        assert p.name == param, word
        assert p.is_flag == (kind == FLAG), word
        assert p.multiple == (kind == MULTI), word
        assert p.envvar == ENVIRONMENT.get(param), word
        if param in gate.defaults:
            assert p.default == gate.defaults[param] or (p.default in ((), None) and gate.defaults[param] is None), word
    assert set(gate.defaults) == {param for param, _kind, _convert in gate.options.values()}  # each has one
    arguments = [p.name for p in cmd.params if p.param_type_name == "argument"]
    assert arguments == [a for a, _ in gate.arguments]


ZK = "127.0.0.1:2181/kafka"
LINES = [
    # max-epoch: the connection and output options, in the forms scripts write them
    ["brokers", "max-epoch"],
    ["brokers", "max-epoch", "-z", ZK],
    ["brokers", "max-epoch", "--zookeeper", ZK, "-o", "json"],
    ["brokers", "max-epoch", f"--zookeeper={ZK}", "--output=plain", "-v"],
    ["brokers", "max-epoch", "-o", "JSON", "-z", ZK],
    ["brokers", "max-epoch", "-z", ZK, "--connect-timeout", "2.5", "--verbose"],
    ["brokers", "max-epoch", "-z", ZK, "--timeout", "3", "--connect-timeout", "1"],
    ["brokers", "max-epoch", "-z", ZK, "--zk-tls", "--zk-tls-ca", "ca.pem", "--zk-tls-cert", "c.pem",
     "--zk-tls-key", "k.pem", "--zk-tls-no-hostname-check", "--zk-auth", "@auth"],
    ["brokers", "max-epoch", "-b", "h1:9092,h2:9092", "--command-config", "client.properties"],
    ["brokers", "max-epoch", "--bootstrap-controller", "[::1]:9093"],
    ["brokers", "max-epoch", "--context", "prod"],
    # lines Typer refuses or reads differently: the fast path must leave them to it
    ["brokers", "max-epoch", "-z", "h:x"],
    ["brokers", "max-epoch", "-z", ""],
    ["brokers", "max-epoch", "-b", "h"],
    ["brokers", "max-epoch", "--connect-timeout", "0"],
    ["brokers", "max-epoch", "--connect-timeout", "nan"],
    ["brokers", "max-epoch", "-o", "yaml"],
    ["brokers", "max-epoch", "-z"],
    ["brokers", "max-epoch", "--zk-tls=yes"],
    ["brokers", "max-epoch", "extra"],
    ["brokers", "max-epoch", "-z", ZK, "-z", ZK],
    ["brokers", "max-epoch", "-vo", "json"],
    ["brokers", "max-epoch", f"-z{ZK}"],
    ["brokers", "max-epoch", "--help"],
    ["brokers", "max-epoch", "--", "-z"],
    ["brokers", "max-epoch", "--nope"],
    # can-stop
    ["brokers", "can-stop", "3"],
    ["brokers", "can-stop", "3", "-z", ZK, "--topic", "orders", "--topic", "pay*", "--min-isr-default", "2"],
    ["brokers", "can-stop", "-o", "json", "2147483647"],
    ["brokers", "can-stop", "+7"],
    ["brokers", "can-stop"],
    ["brokers", "can-stop", "-1"],
    ["brokers", "can-stop", "2147483648"],
    ["brokers", "can-stop", "x"],
    ["brokers", "can-stop", "1", "2"],
    ["brokers", "can-stop", "1", "--min-isr-default", "0"],
    # wait
    ["brokers", "wait", "3", "--epoch-gt", "17", "--timeout", "60"],
    ["brokers", "wait", "3", "--epoch-gt", "-1"],
    ["brokers", "wait", "--registered", "3"],
    ["brokers", "wait", "3", "--gone", "-o", "json", "--timeout=0.5"],
    ["brokers", "wait", "3", "--fenced", "-b", "h:9092"],
    ["brokers", "wait", "3", "--unfenced"],
    ["brokers", "wait", "3", "--in-sync", "--timeout", "120"],
    ["brokers", "wait", "3", "--registered", "--gone"],  # both parse; the body refuses (exit 2) on either path
    ["brokers", "wait", "3", "--epoch-gt", "-2"],
    ["brokers", "wait", "3", "--epoch-gt", "9223372036854775808"],
    ["brokers", "wait", "3", "--epoch-gt", "1.5"],
    ["brokers", "wait", "3", "--timeout", "inf"],
    ["brokers", "wait", "3", "--timeout", "-1"],
    ["brokers", "wait", "3", "--connect-timeout", "5", "--registered"],
    # partitions check
    ["partitions", "check"],
    ["partitions", "check", "-b", "h1:9092,h2:9092", "-o", "json", "--topic", "orders*", "--topic", "pay"],
    ["partitions", "check", "-z", ZK, "--min-isr-default", "2", "--timeout", "20"],
    ["partitions", "check", "--min-isr-default", "0"],
    ["partitions", "check", "3"],
    ["partitions", "check", "--topic"],
    ["partitions", "check", "--broker", "1"],  # partitions list's, not check's
    # not a gate
    ["brokers", "list"],
    ["partitions", "list"],
    ["partitions"],
    ["--version"],
    [],
]
ENVS: list[dict[str, str]] = [
    {},
    {"KADMIN_ZOOKEEPER": ZK, "KADMIN_CONNECT_TIMEOUT": "3", "KADMIN_ZK_AUTH": "@auth"},
    {"KADMIN_BOOTSTRAP_SERVER": "h:9092", "KADMIN_COMMAND_CONFIG": "c.properties", "KADMIN_CONTEXT": "prod"},
    {"KADMIN_ZOOKEEPER": "", "KADMIN_CONNECT_TIMEOUT": ""},  # empty: unset, for click too
    {"KADMIN_CONNECT_TIMEOUT": "soon"},
    {"KADMIN_ZK_TLS_NO_HOSTNAME_CHECK": "true"},
]


def typer_reads(argv: list[str]) -> tuple[Any, Any] | None:
    """What Typer hands the command for `argv` (its context), or None when it refuses the line."""
    if len(argv) < 2 or (argv[0], argv[1]) not in GATES:
        return None
    cmd = typer_command((argv[0], argv[1]))
    try:
        ctx = cmd.make_context(f"kadmin {argv[0]} {argv[1]}", list(argv[2:]))
    except Exception:  # noqa: BLE001 - a usage error, --help's exit
        return None
    return cmd, ctx


@pytest.mark.parametrize("env", ENVS, ids=lambda e: ",".join(f"{k}={v}" for k, v in e.items()) or "no-env")
def test_both_parsers_read_every_line_alike(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    fast_read = 0
    for argv in LINES:
        fast = parse(argv, env)
        typer_read = typer_reads(argv)
        if typer_read is None:
            assert fast is None, f"{argv} {env}: Typer refuses it; the fast path must leave it to Typer"
            continue
        if fast is None:
            continue  # read by Typer only: slower, never different
        fast_read += 1
        _cmd, ctx = typer_read
        params = dict(ctx.params)
        assert params.pop("output").value == fast.output, argv
        assert params.pop("verbose") == fast.verbose, argv
        for name, value in fast.kwargs.items():
            assert params.pop(name) == value or (value is None and params.get(name) is None), (argv, name)
        params.pop("topics", None)
        for name, value in params.items():  # the connection options (a flag that is off: not given)
            assert fast.connection.get(name) == (None if value is False else value), (argv, env, name)
            if fast.connection.get(name) is not None:
                source = ctx.get_parameter_source(name).name
                assert fast.sources[name] == ("flag" if source == "COMMANDLINE" else f"env {ENVIRONMENT[name]}")
    if env.get("KADMIN_CONNECT_TIMEOUT") != "soon" and "KADMIN_ZK_TLS_NO_HOSTNAME_CHECK" not in env:
        assert fast_read >= 20  # the usual lines are read here, not left to Typer


def test_the_usual_gate_lines_take_the_fast_path() -> None:
    for argv in (["brokers", "max-epoch", "-z", ZK], ["brokers", "can-stop", "3", "-o", "json"],
                 ["brokers", "wait", "3", "--epoch-gt", "41", "--timeout", "60"],
                 ["partitions", "check", "-b", "h:9092", "-o", "json"]):
        assert parse(argv, {}) is not None, argv
    assert parse(["brokers", "max-epoch"], {"_KADMIN_COMPLETE": "bash_complete"}) is None  # shell completion


# --------------------------------------------------------------------- both paths, as processes, alike
TYPER_MAIN = "import sys; sys.argv[0] = 'kadmin'; from kadmin.cli.app import main; main()"
FAST_MAIN = """\
import atexit, sys
sys.argv[0] = 'kadmin'
atexit.register(lambda: print("TYPER=" + str(any(m == "typer" or m.startswith(("typer.", "click"))
                                               for m in sys.modules)), file=sys.stderr))
from kadmin.cli.main import main
main()
"""


def run(code: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    import os

    e = {k: v for k, v in os.environ.items() if not k.startswith("KADMIN_")}
    e.update(env or {})
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120, env=e)


def timeless(text: str) -> str:
    """`text` without what differs from one run to the next (a wait's waited_ms, the ZooKeeper session id)."""
    return re.sub(r"session 0x[0-9a-f]+", "session 0xN", re.sub(r'("waited_ms": )\d+', r"\1N", text))


def both(*args: str, env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess[str], bool]:
    """The same command line run by the full CLI and by the entry point; asserted alike. Whether the entry
    point loaded Typer."""
    full = run(TYPER_MAIN, *args, env=env)
    entry = run(FAST_MAIN, *args, env=env)
    lines = entry.stderr.splitlines()
    assert lines and lines[-1].startswith("TYPER="), entry.stderr
    typer_loaded = lines[-1] == "TYPER=True"
    stderr = "\n".join(lines[:-1]) + ("\n" if len(lines) > 1 else "")
    assert (entry.returncode, timeless(entry.stdout), timeless(stderr)) == \
        (full.returncode, timeless(full.stdout), timeless(full.stderr)), args
    return full, typer_loaded


@pytest.fixture
def registered(fleet: ThreadedFleet) -> Iterator[ThreadedFleet]:
    for b in (1, 2, 3):
        fleet.register(b)
    fleet.create_topic("orders", {0: [1, 2, 3], 1: [2, 3, 1]})
    yield fleet


def test_the_gates_answer_alike_without_typer(zk: str, registered: ThreadedFleet) -> None:
    out, typer_loaded = both("brokers", "max-epoch", "-z", zk, "-o", "json")
    assert not typer_loaded
    data = json.loads(out.stdout)["data"]
    assert data["brokers"] == 3 and data["max_broker_epoch"] > 0
    epoch = data["max_broker_epoch"]

    out, typer_loaded = both("brokers", "max-epoch", env={"KADMIN_ZOOKEEPER": zk})
    assert not typer_loaded and out.stdout == f"{epoch}\n" and out.returncode == 0

    # the receipt a rolling bounce waits for: met at once for an epoch below the broker's
    out, typer_loaded = both("brokers", "wait", "1", "--epoch-gt", "0", "-z", zk, "--timeout", "30", "-o", "json")
    assert not typer_loaded and out.returncode == 0
    # not met within the timeout: exit 1 on both paths
    out, typer_loaded = both("brokers", "wait", "1", "--epoch-gt", str(2**62), "-z", zk, "--timeout", "3")
    assert not typer_loaded and out.returncode == 1

    out, typer_loaded = both("brokers", "can-stop", "2", "-z", zk, "-o", "json")
    assert not typer_loaded and out.returncode == 0
    assert json.loads(out.stdout)["command"] == "brokers can-stop"

    # the health check monitoring calls: the same verdict, JSON and exit code without Typer
    out, typer_loaded = both("partitions", "check", "-z", zk, "-o", "json", "--topic", "ord*")
    assert not typer_loaded and out.returncode == 0
    data = json.loads(out.stdout)
    assert data["command"] == "partitions check" and data["data"]["partitions"] == 2
    out, typer_loaded = both("partitions", "check", env={"KADMIN_ZOOKEEPER": zk})
    assert not typer_loaded and out.returncode == 0

    # -v says which cluster and settings were used, with each setting's source, on both paths
    out, typer_loaded = both("brokers", "max-epoch", "-v", "--connect-timeout", "7", env={"KADMIN_ZOOKEEPER": zk})
    assert not typer_loaded and "env KADMIN_ZOOKEEPER" in out.stderr and "flag" in out.stderr


def test_errors_read_alike_and_bad_lines_go_to_typer(zk: str, registered: ThreadedFleet) -> None:
    from kadmin.sandbox.ports import free_port

    # unreachable: the connection error (exit 4) without Typer
    out, typer_loaded = both("brokers", "max-epoch", "-z", f"127.0.0.1:{free_port()}", "--connect-timeout", "1")
    assert not typer_loaded and out.returncode == 4 and out.stderr.startswith("kadmin: error:")
    # the body's own usage error (two conditions) is the same exit 2 and line on both paths
    out, typer_loaded = both("brokers", "wait", "1", "--registered", "--gone", "-z", zk)
    assert not typer_loaded and out.returncode == 2
    # a value Typer refuses: Typer says so (its words, exit 2)
    out, typer_loaded = both("brokers", "wait", "1", "--epoch-gt", "-5", "-z", zk)
    assert typer_loaded and out.returncode == 2 and "--epoch-gt" in out.stderr
    out, typer_loaded = both("brokers", "max-epoch", "--help")
    assert typer_loaded and "Usage: kadmin brokers max-epoch" in out.stdout


def test_fast_run_leaves_other_lines_alone() -> None:
    assert fastpath.run(["brokers", "list"], {}) is None
    assert fastpath.run(["brokers", "max-epoch", "--help"], {}) is None
