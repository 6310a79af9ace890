"""Values the shell completion scripts ask kadmin for, where no static list can hold them: `kadmin __complete
contexts` (the contexts file's context names) and `kadmin __complete ids WORD...` (the broker ids registered in
the cluster the command line being completed names: its -z / -b / --context words, else the KADMIN_* variables,
else the current context).

Run by kadmin/cli/main.py before anything else loads (no Typer), one value a line on stdout. Completing must never
hold up the shell nor write on its terminal: stderr goes to /dev/null from the start, the cluster is given
IDS_DEADLINE seconds (connecting included) and an alarm ends the process soon after whatever a client library does;
any failure prints nothing and exits 1. Hidden: no help, no docs, not in the completion scripts' command lists.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Mapping, Sequence
from typing import Any

COMMAND = "__complete"
IDS_DEADLINE = 2.0  # seconds for the cluster to answer, connecting included
CONNECT_TIMEOUT = 1.5  # one wait for an answer, at most (a smaller --connect-timeout on the line is kept)
_BACKSTOP = 3  # seconds: the alarm that ends the process whatever a library still waits for


def context_names(environ: Mapping[str, str]) -> list[str]:
    from kadmin.config import config_path, load_contexts

    contexts = load_contexts(config_path(environ)).get("contexts", {})
    return sorted(str(n) for n in contexts) if isinstance(contexts, dict) else []


def connection_words(words: Sequence[str]) -> dict[str, Any]:
    """The connection options among a command line's words (`-z HOST`, `--context=prod`), by parameter name, each
    converted as the gates' fast path converts it; a word that does not convert is left out."""
    from kadmin.cli.fastpath import CONNECTION, FLAG

    found: dict[str, Any] = {}
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        option, eq, attached = word.partition("=") if word.startswith("--") else (word, "", "")
        spec = CONNECTION.get(option)
        if spec is None:
            continue
        param, kind, convert = spec
        if kind == FLAG:
            found[param] = True
            continue
        if eq:
            raw = attached
        elif i < len(words) and words[i] != "=":
            raw, i = words[i], i + 1
        elif i + 1 < len(words):  # bash split `--context=prod` at the `=` (COMP_WORDBREAKS)
            raw, i = words[i + 1], i + 2
        else:
            continue
        try:
            found[param] = convert(raw)
        except Exception:  # noqa: BLE001 - a half-typed value: not used
            continue
    return found


def broker_ids(words: Sequence[str], environ: Mapping[str, str]) -> list[int]:
    """The ids of the brokers registered in the cluster `words` (or the environment, or the current context)
    names, read within IDS_DEADLINE."""
    import time

    from kadmin.cli.fastpath import ENVIRONMENT
    from kadmin.cli.invocation import CONNECTION_KEYS, Invocation, Output
    from kadmin.config import Sourced
    from kadmin.services.brokers import list_brokers

    connection = connection_words(words)
    sources = dict.fromkeys(connection, "flag")
    for param, envvar in ENVIRONMENT.items():
        if param not in connection and environ.get(envvar) and param != "zk_tls_no_hostname_check":
            connection[param], sources[param] = environ[envvar], f"env {envvar}"
    given: dict[str, Sourced | None] = {CONNECTION_KEYS[p]: Sourced(v, sources[p]) for p, v in connection.items()
                                        if p in CONNECTION_KEYS and p != "context" and v not in (None, False)}
    timeout = given.get("connect-timeout")
    if timeout is None or not isinstance(timeout.value, float) or timeout.value > CONNECT_TIMEOUT:
        given["connect-timeout"] = Sourced(CONNECT_TIMEOUT, "completion")
    inv = Invocation("brokers list", given, connection.get("context"), Output.plain, False, IDS_DEADLINE)
    try:
        rows = list_brokers(inv.backend(time.monotonic() + IDS_DEADLINE).registrations).data
    finally:
        inv.close()
    return sorted({row.id for row in rows})


def run(argv: Sequence[str], environ: Mapping[str, str] | None = None) -> int:
    """`kadmin __complete KIND WORD...`: the values, one a line; 1 (and nothing printed) when there are none to
    give or anything failed."""
    env = os.environ if environ is None else environ
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)  # nothing on the terminal the user is typing on, whatever a library says
    signal.signal(signal.SIGALRM, lambda *_: os._exit(1))
    signal.alarm(_BACKSTOP)
    try:
        kind, words = (argv[0], argv[1:]) if argv else ("", [])
        if kind == "contexts":
            values = context_names(env)
        elif kind == "ids":
            values = [str(i) for i in broker_ids(words, env)]
        else:
            return 1
    except BaseException:  # noqa: BLE001 - completing prints nothing on any failure, Ctrl-C included
        return 1
    if values:
        sys.stdout.write("".join(f"{v}\n" for v in values))
        sys.stdout.flush()
    return 0 if values else 1
