"""The gate commands' fast path: `kadmin brokers max-epoch`, `brokers can-stop ID`, `brokers wait ID ...` and
`partitions check` parsed from a static option table, without importing Typer (issue 24 §2, issue 38 §2).

Scripts, monitoring (`partitions check` is a Nagios-style check) and rolling restarts call these gates hundreds of
times, and Typer's import and its conversion of a command cost more than the gate's own work (reading a few znodes).
Here the command line is read against the table below; when every word is one the table knows, in a form it reads
the way Typer (click) does, the command runs through the same body (kadmin/cli/gates.py) and the same `run_command`
as under Typer. Anything else (a help option, an unknown or repeated option, a bundle of short options, a value that
does not convert or validate, a deprecated option, shell completion) returns None, and the caller runs the full
Typer CLI, which parses the same words and says what is wrong in its own words. So this path never answers
differently; it only answers sooner. tests/cli/test_fastpath.py holds the table to the Typer commands' parameters
(names, environment variables, defaults, ranges) and compares what both parsers make of a grid of command lines.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kadmin.cli.invocation import CONNECTION_KEYS, INT32_MAX, INT64_MAX, Output, run_command, seconds_value

Convert = Callable[[str], Any]  # a word -> the parameter's value; ValueError (or any error): not for this path


def _int_in(low: int, high: int) -> Convert:
    def convert(word: str) -> int:
        value = int(word)  # what click's INT does (int(word): "+3", " 3", "1_0" included)
        if not low <= value <= high:
            raise ValueError(word)
        return value
    return convert


def _zookeeper(word: str) -> str:
    from kadmin.cluster.connect import split_connect_string  # the syntax check only; no kazoo

    split_connect_string(word)
    return word


def _bootstrap(flag: str) -> Convert:
    def convert(word: str) -> str:
        from kadmin.domain.addresses import split_bootstrap

        split_bootstrap(word, flag)
        return word
    return convert


def _text(word: str) -> str:
    return word


def _seconds(word: str) -> float:
    return seconds_value(word)


def _output(word: str) -> str:
    folded = word.casefold()  # click's Choice(case_sensitive=False) compares casefolded words
    for choice in Output:
        if choice.value.casefold() == folded:
            return choice.value
    raise ValueError(word)


FLAG, VALUE, MULTI = "flag", "value", "multi"

# option word -> (parameter, kind, convert); a flag's value is True
CONNECTION: dict[str, tuple[str, str, Convert]] = {
    "--zookeeper": ("zookeeper", VALUE, _zookeeper),
    "-z": ("zookeeper", VALUE, _zookeeper),
    "--zk-auth": ("zk_auth", VALUE, _text),
    "--zk-tls": ("zk_tls", FLAG, _text),
    "--zk-tls-ca": ("zk_tls_ca", VALUE, _text),
    "--zk-tls-cert": ("zk_tls_cert", VALUE, _text),
    "--zk-tls-key": ("zk_tls_key", VALUE, _text),
    "--zk-tls-no-hostname-check": ("zk_tls_no_hostname_check", FLAG, _text),
    "--bootstrap-server": ("bootstrap_server", VALUE, _bootstrap("--bootstrap-server")),
    "-b": ("bootstrap_server", VALUE, _bootstrap("--bootstrap-server")),
    "--bootstrap-controller": ("bootstrap_controller", VALUE, _bootstrap("--bootstrap-controller")),
    "--command-config": ("command_config", VALUE, _text),
    "--connect-timeout": ("connect_timeout", VALUE, _seconds),
    "--context": ("context", VALUE, _text),
    "--timeout": ("timeout", VALUE, _seconds),  # the command's deadline (wait's own, in its options, wins)
}
COMMON: dict[str, tuple[str, str, Convert]] = {
    "--output": ("output", VALUE, _output),
    "-o": ("output", VALUE, _output),
    "--verbose": ("verbose", FLAG, _text),
    "-v": ("verbose", FLAG, _text),
}
# the connection parameters an environment variable can give (when not given on the command line)
ENVIRONMENT: dict[str, str] = {
    "zookeeper": "KADMIN_ZOOKEEPER",
    "zk_auth": "KADMIN_ZK_AUTH",
    "zk_tls_no_hostname_check": "KADMIN_ZK_TLS_NO_HOSTNAME_CHECK",
    "bootstrap_server": "KADMIN_BOOTSTRAP_SERVER",
    "bootstrap_controller": "KADMIN_BOOTSTRAP_CONTROLLER",
    "command_config": "KADMIN_COMMAND_CONFIG",
    "connect_timeout": "KADMIN_CONNECT_TIMEOUT",
    "context": "KADMIN_CONTEXT",
}
# connection parameter -> (kind, convert), as CONNECTION says for its words
_BY_PARAM: dict[str, tuple[str, Convert]] = {param: (kind, convert) for param, kind, convert in CONNECTION.values()}

_BROKER_ID = _int_in(0, INT32_MAX)


class Gate:
    """One gate command: its positional arguments, its own options and their defaults, and its body."""

    def __init__(self, body: str, arguments: Sequence[tuple[str, Convert]],
                 options: Mapping[str, tuple[str, str, Convert]], defaults: Mapping[str, Any]) -> None:
        self.body = body  # the function's name in kadmin.cli.gates
        self.arguments = tuple(arguments)
        self.options = dict(options)
        self.defaults = dict(defaults)


_SCOPE: dict[str, tuple[str, str, Convert]] = {  # a partition scan's --topic and --min-isr-default
    "--topic": ("topics", MULTI, _text),
    "--min-isr-default": ("min_isr_default", VALUE, _int_in(1, INT32_MAX)),
}
_SCOPE_DEFAULTS: dict[str, Any] = {"topics": None, "min_isr_default": None}

# (group, command) -> its gate
GATES: dict[tuple[str, str], Gate] = {
    ("brokers", "max-epoch"): Gate("max_epoch", (), {}, {}),
    ("brokers", "can-stop"): Gate("can_stop", (("broker_id", _BROKER_ID),), _SCOPE, _SCOPE_DEFAULTS),
    ("partitions", "check"): Gate("partitions_check", (), _SCOPE, _SCOPE_DEFAULTS),
    ("brokers", "wait"): Gate("wait", (("broker_id", _BROKER_ID),), {
        "--registered": ("registered", FLAG, _text),
        "--gone": ("gone", FLAG, _text),
        "--fenced": ("fenced", FLAG, _text),
        "--unfenced": ("unfenced", FLAG, _text),
        "--epoch-gt": ("epoch_gt", VALUE, _int_in(-1, INT64_MAX)),
        "--in-sync": ("in_sync", FLAG, _text),
        "--timeout": ("timeout", VALUE, _seconds),
    }, {"registered": False, "gone": False, "fenced": False, "unfenced": False, "epoch_gt": None, "in_sync": False,
        "timeout": 300.0}),
}


class Parsed:
    """A gate's command line as Typer would have handed it to the command: the body's keyword arguments, the
    connection options given (by parameter name) and where each came from, the output format, -v."""

    def __init__(self, name: str, gate: Gate, kwargs: dict[str, Any], connection: dict[str, Any],
                 sources: dict[str, str], output: str, verbose: bool) -> None:
        self.name, self.gate, self.kwargs = name, gate, kwargs
        self.connection, self.sources, self.output, self.verbose = connection, sources, output, verbose


def parse(argv: Sequence[str], environ: Mapping[str, str]) -> Parsed | None:
    """`argv` (the words after `kadmin`) as a gate command, or None when it is not one this path reads."""
    if len(argv) < 2 or (argv[0], argv[1]) not in GATES or "_KADMIN_COMPLETE" in environ:
        return None
    key = (argv[0], argv[1])
    name = " ".join(key)
    gate = GATES[key]
    table = {**CONNECTION, **COMMON, **gate.options}
    seen: dict[str, Any] = {}
    positional: list[str] = []
    words = list(argv[2:])
    i = 0
    try:
        while i < len(words):
            word = words[i]
            i += 1
            if word == "-" or not word.startswith("-"):
                positional.append(word)
                continue
            option, eq, attached = word.partition("=") if word.startswith("--") else (word, "", "")
            spec = table.get(option)
            if spec is None:
                return None  # --help, --, an option of another command, a bundle (-vo), -zHOST, -1
            param, kind, convert = spec
            if kind != MULTI and param in seen:
                return None  # given twice (or as both -z and --zookeeper): Typer keeps the last
            if kind == FLAG:
                if eq:
                    return None
                seen[param] = True
                continue
            if eq:
                raw = attached
            elif i < len(words):
                raw = words[i]
                i += 1
            else:
                return None  # the value is missing
            value = convert(raw)
            if kind == MULTI:
                seen.setdefault(param, []).append(value)
            else:
                seen[param] = value
        if len(positional) != len(gate.arguments):
            return None
        kwargs = {param: convert(word) for (param, convert), word in zip(gate.arguments, positional, strict=True)}
        for param, default in gate.defaults.items():
            kwargs[param] = seen.get(param, default)
        connection: dict[str, Any] = {}
        sources: dict[str, str] = {}
        if "timeout" in seen and "timeout" not in gate.defaults:  # the deadline of a gate without its own
            connection["timeout"], sources["timeout"] = seen["timeout"], "flag"
        for param in CONNECTION_KEYS:
            if param in seen:
                connection[param], sources[param] = seen[param], "flag"
                continue
            envvar = ENVIRONMENT.get(param)
            raw_env = environ.get(envvar) if envvar else None
            if raw_env:  # click reads an empty variable as unset
                kind, convert = _BY_PARAM[param]
                if kind == FLAG:
                    return None  # a boolean from the environment (click's true/1/yes...): left to Typer
                connection[param], sources[param] = convert(raw_env), f"env {envvar}"
    except Exception:  # noqa: BLE001 - any word that does not convert: Typer says what is wrong with it
        return None
    return Parsed(name, gate, kwargs, connection, sources, seen.get("output", Output.auto.value),
                  bool(seen.get("verbose", False)))


def run(argv: Sequence[str], environ: Mapping[str, str] | None = None) -> int | None:
    """Run `argv` as a gate command: its exit code, or None when the full CLI must parse it."""
    parsed = parse(argv, os.environ if environ is None else environ)
    if parsed is None:
        return None
    from kadmin.cli import gates

    body = getattr(gates, parsed.gate.body)
    return run_command(parsed.name, body, parsed.kwargs, parsed.connection, parsed.sources.__getitem__,
                       parsed.output, parsed.verbose)
