"""What runs a command once its words are parsed, with no CLI framework: the Invocation a command body gets,
`run_command` (the shared options become connection settings, the body runs guarded) and `run_guarded`, the one
place exceptions become exit codes.

Two parsers reach it: Typer (kadmin/cli/options.py, every command) and the gate fast path
(kadmin/cli/fastpath.py: `brokers max-epoch`, `can-stop`, `wait` and `partitions check`, which scripts and
monitoring call in loops, parsed without importing Typer). Neither this module nor the fast path imports typer or
click (an import contract says so).
"""

from __future__ import annotations

import contextlib
import importlib.util
import math
import sys
import time
import traceback
from collections.abc import Callable, Mapping
from enum import StrEnum
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar

from kadmin import interrupts
from kadmin.config import MAX_TIMEOUT, ConnectionSettings, Sourced, forget_secrets, resolve, scrub
from kadmin.errors import KadminError
from kadmin.exit_codes import CHECK_COMMANDS, GATE_COMMANDS, ExitCode, Verdict, verdict
from kadmin.results import Result

if TYPE_CHECKING:
    from kadmin.cluster.connect import Backend
    from kadmin.domain.partitions import TopicFilter
    from kadmin.render import views as views
    from kadmin.render.renderer import Renderer
    from kadmin.render.views import ViewFn


def lazy_module(name: str) -> ModuleType:
    """The module `name`, executed at its first attribute access (importlib's LazyLoader): a command group
    names its service module at the top, and `--help` or another command of the group never builds it."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ImportError(f"no module named {name!r}")
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, module)  # as an import does: `kadmin.services.brokers` names it
    return module


if not TYPE_CHECKING:
    views = lazy_module("kadmin.render.views")  # the commands' views: each module names them at the top, and
    # they load when a command renders its result, not for --help


class Output(StrEnum):
    auto = "auto"
    table = "table"
    plain = "plain"
    json = "json"
    ndjson = "ndjson"


MAX_SECONDS = MAX_TIMEOUT  # a year: more is a typo, and would overflow the clocks' and queues' limits
INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1


def seconds_value(value: Any, *, allow_zero: bool = False) -> float:
    """A duration in seconds: finite, positive (or zero when allowed), at most a year; else ValueError saying why.

    NaN compares false with everything, so a NaN deadline never passes and a wait would hang; inf
    and 1e308 overflow the clocks; 0 and negative values would only fail later, on the network.
    """
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{value!r} is not a number of seconds") from None
    if not math.isfinite(v):
        raise ValueError(f"{value!r} is not a finite number of seconds")
    if v < 0 or (v == 0 and not allow_zero):
        raise ValueError(f"{value!r}: must be {'zero or more' if allow_zero else 'more than zero'} seconds")
    if v > MAX_SECONDS:
        raise ValueError(f"{value!r}: must be at most {MAX_SECONDS:g} seconds (a year)")
    return v


def topic_filter(patterns: list[str] | None) -> TopicFilter | None:
    """The domain's TopicFilter for --topic (None: every topic). Imported here lazily: start-up stays light."""
    if not patterns:
        return None
    from kadmin.domain.partitions import TopicFilter

    return TopicFilter(tuple(patterns))


# The connection options' parameter names -> their settings keys (kadmin/config.py). `--timeout`, the command's
# deadline (a parameter named `timeout`), is not one of them: run_command hands it to the Invocation.
CONNECTION_KEYS: dict[str, str] = {
    "zookeeper": "zookeeper",
    "zk_auth": "zk-auth",
    "zk_tls": "zk-tls",
    "zk_tls_ca": "zk-tls-ca",
    "zk_tls_cert": "zk-tls-cert",
    "zk_tls_key": "zk-tls-key",
    "zk_tls_no_hostname_check": "zk-tls-no-hostname-check",
    "bootstrap_server": "bootstrap-server",
    "bootstrap_controller": "bootstrap-controller",
    "command_config": "command-config",
    "connect_timeout": "connect-timeout",
    "context": "context",
}
FLAGS = frozenset({"zk_tls", "zk_tls_no_hostname_check"})  # on/off options: off leaves the context's value in force


D = TypeVar("D")  # a result's data, and what its view reads


class Invocation:
    """What a command body gets: settings, a renderer, and a lazily opened cluster."""

    def __init__(self, command: str, given: dict[str, Sourced | None], context: str | None, output: Output,
                 verbose: bool, timeout: float | None = None) -> None:
        from kadmin.render.renderer import Renderer  # loaded by a command that runs, not for --help

        self.command = command
        self.renderer: Renderer = Renderer(output.value)
        self.verbose = verbose
        self._given = given
        self._context = context
        self._settings: ConnectionSettings | None = None
        self._backend: Backend | None = None
        self.started = time.monotonic()  # the command's deadline counts from here (overall_deadline)
        self.timeout = timeout  # --timeout, the command's deadline, on a command without one of its own

    @property
    def settings(self) -> ConnectionSettings:
        if self._settings is None:
            self._settings = resolve(self._given, self._context)
            auth = self._settings.values.get("zk-auth")
            if auth is not None and auth.source == "flag" and not str(auth.value).startswith("@"):
                self.renderer.warn("--zk-auth given on the command line is visible to every local user (ps, "
                                   "/proc) while kadmin runs: put it in a file and give --zk-auth @FILE, or set "
                                   "KADMIN_ZK_AUTH")
            for line in self._settings.warnings:
                self.renderer.warn(line)
            if self.verbose:
                for line in self._settings.describe() + list(self._settings.notes):
                    self.renderer.note(line)
        return self._settings

    def overall_deadline(self) -> float:
        """The deadline (time.monotonic()) of a command without a deadline of its own: its --timeout, else
        OVERALL × --connect-timeout, from when it started (docs/connecting.md, Deadlines)."""
        from kadmin.cluster.connect import OVERALL

        return self.started + (self.timeout if self.timeout is not None else OVERALL * self.settings.connect_timeout)

    def backend(self, deadline: float | None = None, *, open_ended: bool = False) -> Backend:
        """The cluster's capabilities, in the mode the settings name (kadmin/cluster/connect.py decides it),
        each opened on first use and closed with the invocation. `deadline` (time.monotonic()) bounds the
        command, connecting included: no wait for an answer outlasts it (a wait's --timeout covers reaching
        the cluster too); without one, overall_deadline(), unless `open_ended` (a watch without --timeout runs
        until Ctrl-C). Lost and regained connections are said on stderr."""
        if deadline is None and not open_ended:
            deadline = self.overall_deadline()
        if self._backend is None:
            from kadmin.cluster.connect import open_backend

            self._backend = open_backend(self.settings, self.command, log=self.renderer.note if self.verbose else None,
                                         deadline=deadline, on_connection=self.renderer.note)
        return self._backend

    def deprecated(self, option: str, instead: str) -> None:
        """One line on stderr: `option` still works for one more release; `instead` says what to do now."""
        self.renderer.warn(f"{option} is deprecated in `kadmin {self.command}` and goes in the next release: "
                           f"{instead}")

    def emit(self, result: Result[D], view: ViewFn[D], *, detail: str | None = None) -> int:
        """Print `result` as `view` shows it; its exit code. The JSON envelope's `command` is this command's
        full name, followed by `detail` when an argument names what was asked (`history report bounces`)."""
        result.command = self.command if detail is None else f"{self.command} {detail}"
        return int(self.renderer.emit(result, view))

    def close(self) -> None:
        if self._backend is not None:
            self._backend.close()  # each capability's close; never masks the result
            self._backend = None


def run_command(full: str, fn: Callable[..., int], kwargs: dict[str, Any], connection: Mapping[str, Any],
                source: Callable[[str], str], output: str, verbose: bool) -> int:
    """Run command `full` (`brokers max-epoch`): `fn(inv, **kwargs)` guarded (run_guarded), its exit code.

    `connection` holds the connection options given to it by parameter name (CONNECTION_KEYS; None or a flag
    that is off: not given) and `timeout` (the command's --timeout, where it has no deadline of its own),
    `source(name)` says where one came from ("flag", "env KADMIN_ZOOKEEPER")."""
    given: dict[str, Sourced | None] = {}
    for pname in CONNECTION_KEYS:
        value = connection.get(pname)
        if pname == "context" or value is None or (pname in FLAGS and not value):
            continue
        given[CONNECTION_KEYS[pname]] = Sourced(value, source(pname))
    inv = Invocation(full, given, connection.get("context"), Output(output), verbose, connection.get("timeout"))
    return run_guarded(inv, lambda: fn(inv, **kwargs), check=full in CHECK_COMMANDS)


def _interrupted(inv: Invocation) -> int:
    print("", file=sys.stderr)
    inv.renderer.note("interrupted")
    return int(ExitCode.INTERRUPTED)


def run_guarded(inv: Invocation, body: Callable[[], int], *, check: bool = False) -> int:
    """Run a command body; turn every failure into a one-line message and a documented exit code.

    The one place exceptions become exit codes: a KadminError its own, an unexpected exception 70
    (INTERNAL, one line naming it; the traceback only with -v), Ctrl-C 130. For a check verb (`check`)
    every exit that is not a verdict (0-2) or 130 is 3, UNKNOWN, and the JSON status says so.

    Error text is scrubbed of the secrets the settings held (kadmin.config.scrub) before it is printed.

    A Ctrl-C that came after the command's change was committed was deferred (kadmin/interrupts.py):
    the committed result is reported, with its own exit code, and a note says so.

    stdout's reader closing the pipe (`| head`) changes no gate's exit code (GATE_COMMANDS: the verdict stands);
    any other command that would have exited 0 exits OUTPUT_LOST (74), saying so on stderr.
    """
    from kadmin.render.renderer import OutputLost

    code: int
    try:
        with interrupts.deferring():
            code = body()
            if interrupts.pending():
                inv.renderer.note("interrupted after the change was committed: the result above is what happened")
    except KeyboardInterrupt:
        code = _interrupted(inv)
    except (BrokenPipeError, OutputLost) as e:  # the reader went away while the body still wrote
        if isinstance(e, BrokenPipeError):
            inv.renderer.lost()
        code = int(Verdict.UNKNOWN) if check else int(ExitCode.OUTPUT_LOST)  # no verdict was reached
    except Exception as e:  # noqa: BLE001 - never a traceback unless asked for
        if interrupts.interrupted():  # a library swallowed the Ctrl-C and failed instead: still an interrupt
            code = _interrupted(inv)
        elif isinstance(e, KadminError):
            message = scrub(e.message)  # the last resort: no message is built to quote a secret (kadmin.config)
            if message.startswith("this command "):  # a layer below the CLI that does not know the command's name
                message = f"{inv.command} {message.removeprefix('this command ')}"
            code = int(Verdict.UNKNOWN) if check else int(e.exit_code)
            code = inv.renderer.emit_error(inv.command, e.code, message, code, check=check)
        else:
            if inv.verbose:
                print(scrub(traceback.format_exc()), end="", file=sys.stderr, flush=True)
            code = int(Verdict.UNKNOWN) if check else int(ExitCode.INTERNAL)
            message = scrub(" ".join(f"{type(e).__name__}: {e}".split()).removesuffix(":"))  # one line
            code = inv.renderer.emit_error(inv.command, "internal", message, code, check=check,
                                           label="internal error",
                                           hint="" if inv.verbose else " (run with -v for the traceback)")
    finally:
        inv.close()
        forget_secrets()
    if inv.renderer.output_lost and inv.command not in GATE_COMMANDS and code in (0, ExitCode.OUTPUT_LOST):
        code = int(ExitCode.OUTPUT_LOST)
        with contextlib.suppress(OSError):
            inv.renderer.note("output lost: stdout's reader closed the pipe before all of it was written (exit 74)")
    return verdict(code) if check else code
