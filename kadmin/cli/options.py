"""Options shared by every command, and the one place exceptions become exit codes.

`@command(app, "name")` adds the connection options (-z, --zk-auth, --zk-tls..., --connect-timeout,
--context), `-o/--output` and `-v/--verbose` to a command, and hands the command an Invocation.

Two timeouts, both settable together: `--connect-timeout` (env KADMIN_CONNECT_TIMEOUT, context key
connect-timeout; 10 s) is how long reaching the cluster may take, on every command; `--timeout` is a
command's own deadline where it has one (brokers wait, watch, shutdown, drain, undrain), which
covers connecting too and so can only shorten the first. On the other commands `--timeout` is the
connection timeout's deprecated old name (hidden; it warns) until the next release.

The safety idiom of every command that changes the cluster (ids map/unmap/claim/gc, brokers
shutdown/unregister/drain/undrain): it acts when run, with no confirmation prompt (scripts run
it); `--dry-run` says what it would do and changes nothing; a change kadmin judges unsafe (an id
registered from another host, a broker that cannot stop safely or is active, a reassignment in
flight) is refused with exit 7 (UNSAFE) and done only with `--force`. There is no `--apply` and no
`--yes`: `ids gc --apply` and `brokers unregister --yes/-y` are accepted, hidden, with a warning,
until the next release, and change nothing.
"""

from __future__ import annotations

import functools
import importlib.util
import inspect
import math
import sys
import traceback
from collections.abc import Callable
from enum import StrEnum
from types import ModuleType
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from kadmin import interrupts
from kadmin.cli.help import HelpCommand
from kadmin.config import MAX_TIMEOUT, ConnectionSettings, Sourced, forget_secrets, resolve, scrub
from kadmin.errors import KadminError, UsageError
from kadmin.exit_codes import CHECK_COMMANDS, ExitCode, Verdict, verdict
from kadmin.results import Result

if TYPE_CHECKING:
    from kadmin.cluster.connect import Backend
    from kadmin.domain.partitions import TopicFilter
    from kadmin.render import Renderer
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
    return module


class Output(StrEnum):
    auto = "auto"
    table = "table"
    plain = "plain"
    json = "json"
    ndjson = "ndjson"


# ---------------------------------------------------------------- parse-time validation (exit 2)
MAX_SECONDS = MAX_TIMEOUT  # a year: more is a typo, and would overflow the clocks' and queues' limits
INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1


def seconds(value: Any, *, allow_zero: bool = False) -> float:
    """A duration in seconds: finite, positive (or zero when allowed), at most a year.

    NaN compares false with everything, so a NaN deadline never passes and a wait would hang; inf
    and 1e308 overflow the clocks; 0 and negative values would only fail later, on the network.
    """
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise typer.BadParameter(f"{value!r} is not a number of seconds") from None
    if not math.isfinite(v):
        raise typer.BadParameter(f"{value!r} is not a finite number of seconds")
    if v < 0 or (v == 0 and not allow_zero):
        raise typer.BadParameter(f"{value!r}: must be {'zero or more' if allow_zero else 'more than zero'} seconds")
    if v > MAX_SECONDS:
        raise typer.BadParameter(f"{value!r}: must be at most {MAX_SECONDS:g} seconds (a year)")
    return v


def seconds_or_zero(value: Any) -> float:
    return seconds(value, allow_zero=True)


def _check_zookeeper(value: str | None) -> str | None:
    """`-z`/KADMIN_ZOOKEEPER: HOST:PORT[,HOST:PORT...][/chroot] with every port in 1-65535."""
    if value is not None:
        from kadmin.cluster.connect import split_connect_string  # no kazoo: the syntax check only

        try:
            split_connect_string(value)
        except KadminError as e:
            raise typer.BadParameter(e.message.removeprefix("--zookeeper: ")) from None
    return value


def _check_bootstrap(flag: str) -> Callable[[str | None], str | None]:
    """--bootstrap-server / --bootstrap-controller (and their env vars): HOST:PORT[,...], ports in 1-65535,
    IPv6 in brackets, checked as -z is: exit 2 in one line, before anything connects."""
    def check(value: str | None) -> str | None:
        if value is not None:
            from kadmin.domain.addresses import split_bootstrap

            try:
                split_bootstrap(value, flag)
            except ValueError as e:
                raise typer.BadParameter(str(e).removeprefix(f"{flag}: ")) from None
        return value
    return check


def check_broker_id(value: int | None) -> int | None:
    """A broker id argument or option: Kafka's broker ids are non-negative 32-bit ints (else exit 2)."""
    if value is not None and not 0 <= value <= 2**31 - 1:
        raise typer.BadParameter(f"{value} is not a broker id (0 to {2**31 - 1})")
    return value


BrokerIdArg = Annotated[int, typer.Argument(help="Broker id.", metavar="ID", callback=check_broker_id)]

MinIsrDefault = Annotated[int | None, typer.Option(
    "--min-isr-default", min=1, max=INT32_MAX, metavar="N", show_default=False,
    help="State min.insync.replicas (source \"default\") where the brokers' own cannot be read. ZooKeeper mode "
         "does not keep the brokers' static server.properties value: there this stands for it (else 1), for "
         "partitions without a topic value, a dynamic value of their leader (/config/brokers/<id>) or a dynamic "
         "cluster default (/config/brokers/<default>). With --bootstrap-server (KRaft) the brokers report every "
         "level (DescribeConfigs; their static value is source \"static\"); this stands in only for a broker "
         "whose DescribeConfigs failed, which without it makes a verdict over the partitions it may lead unsafe.")]

TopicPatterns = Annotated[list[str] | None, typer.Option(
    "--topic", metavar="TOPIC", show_default=False,
    help="Only these topics (repeatable; shell patterns * ? [..]). A name is asked for by name, so a topic the "
         "principal may not Describe is an error; a pattern is matched against every topic seen or listed in "
         "the brokers' log dirs.")]


def topic_filter(patterns: list[str] | None) -> TopicFilter | None:
    """The domain's TopicFilter for --topic (None: every topic). Imported here lazily: start-up stays light."""
    if not patterns:
        return None
    from kadmin.domain.partitions import TopicFilter

    return TopicFilter(tuple(patterns))


CONN = "Connection"
ZkOpt = Annotated[
    str | None,
    typer.Option("--zookeeper", "-z", envvar="KADMIN_ZOOKEEPER", metavar="HOST:PORT[,HOST:PORT...][/chroot]",
                 help="ZooKeeper connection string of a ZooKeeper-mode cluster.", rich_help_panel=CONN,
                 show_default=False, callback=_check_zookeeper),
]
ZkAuthOpt = Annotated[
    str | None,
    typer.Option("--zk-auth", envvar="KADMIN_ZK_AUTH", metavar="SCHEME:CREDENTIALS|@FILE",
                 help="ZooKeeper auth, e.g. digest:user:password; @FILE reads it from FILE.", rich_help_panel=CONN,
                 show_default=False),
]
ZkTlsOpt = Annotated[bool, typer.Option("--zk-tls", help="Connect to ZooKeeper over TLS.", rich_help_panel=CONN)]
ZkTlsCaOpt = Annotated[str | None, typer.Option("--zk-tls-ca", metavar="FILE", help="CA bundle for --zk-tls.",
                                                rich_help_panel=CONN, show_default=False)]
ZkTlsCertOpt = Annotated[str | None, typer.Option("--zk-tls-cert", metavar="FILE",
                                                  help="Client certificate for --zk-tls.", rich_help_panel=CONN,
                                                  show_default=False)]
ZkTlsKeyOpt = Annotated[str | None, typer.Option("--zk-tls-key", metavar="FILE", help="Client key for --zk-tls.",
                                                 rich_help_panel=CONN, show_default=False)]
ZkTlsNoHostnameCheckOpt = Annotated[
    bool,
    typer.Option("--zk-tls-no-hostname-check", envvar="KADMIN_ZK_TLS_NO_HOSTNAME_CHECK",
                 help="With --zk-tls: accept a server certificate that does not name the host connected to "
                 "(as Kafka's zookeeper.ssl.endpoint.identification.algorithm= empty). The CA is still checked.",
                 rich_help_panel=CONN, show_default=False),
]
ConnectTimeoutOpt = Annotated[float | None, typer.Option("--connect-timeout", envvar="KADMIN_CONNECT_TIMEOUT",
                                                         metavar="SECONDS", parser=seconds,
                                                         help="Give up reaching the cluster after this long "
                                                         "(10 seconds unless set).",
                                                         rich_help_panel=CONN, show_default=False)]
# Until 1.0 `--timeout` is still accepted, with a warning, as --connect-timeout on the commands that
# have no deadline of their own; on brokers wait/watch/shutdown/drain/undrain it is that deadline.
OldTimeoutOpt = Annotated[float | None, typer.Option("--timeout", metavar="SECONDS", parser=seconds, hidden=True,
                                                     help="Deprecated: --connect-timeout.", show_default=False)]
BootstrapOpt = Annotated[str | None, typer.Option("--bootstrap-server", "-b", envvar="KADMIN_BOOTSTRAP_SERVER",
                                                  metavar="HOST:PORT[,...]", help="Brokers of a KRaft cluster.",
                                                  rich_help_panel=CONN, show_default=False,
                                                  callback=_check_bootstrap("--bootstrap-server"))]
BootstrapCtlOpt = Annotated[str | None, typer.Option("--bootstrap-controller", envvar="KADMIN_BOOTSTRAP_CONTROLLER",
                                                     metavar="HOST:PORT[,...]",
                                                     help="Controllers of a KRaft cluster.", rich_help_panel=CONN,
                                                     show_default=False,
                                                     callback=_check_bootstrap("--bootstrap-controller"))]
CommandConfigOpt = Annotated[str | None, typer.Option("--command-config", envvar="KADMIN_COMMAND_CONFIG",
                                                      metavar="FILE", help="Kafka's Java client properties: "
                                                      "ssl.* (JKS, PKCS12, PEM), sasl.* (PLAIN, SCRAM, GSSAPI, "
                                                      "OAUTHBEARER).",
                                                      rich_help_panel=CONN, show_default=False)]
ContextOpt = Annotated[str | None, typer.Option("--context", envvar="KADMIN_CONTEXT", metavar="NAME",
                                                help="Use a context from $XDG_CONFIG_HOME/kadmin/config.toml.",
                                                rich_help_panel=CONN, show_default=False)]
OutputOpt = Annotated[Output, typer.Option("--output", "-o", case_sensitive=False,
                                           help="auto: a table on a terminal, plain columns on a pipe.")]
VerboseOpt = Annotated[bool, typer.Option("--verbose", "-v", help="Say which cluster and settings are used; "
                                          "show tracebacks of internal errors.")]

# parameter name -> (settings key, annotation, default)
CONNECTION_PARAMS: dict[str, tuple[str, Any, Any]] = {
    "zookeeper": ("zookeeper", ZkOpt, None),
    "zk_auth": ("zk-auth", ZkAuthOpt, None),
    "zk_tls": ("zk-tls", ZkTlsOpt, False),
    "zk_tls_ca": ("zk-tls-ca", ZkTlsCaOpt, None),
    "zk_tls_cert": ("zk-tls-cert", ZkTlsCertOpt, None),
    "zk_tls_key": ("zk-tls-key", ZkTlsKeyOpt, None),
    "zk_tls_no_hostname_check": ("zk-tls-no-hostname-check", ZkTlsNoHostnameCheckOpt, False),
    "bootstrap_server": ("bootstrap-server", BootstrapOpt, None),
    "bootstrap_controller": ("bootstrap-controller", BootstrapCtlOpt, None),
    "command_config": ("command-config", CommandConfigOpt, None),
    "connect_timeout": ("connect-timeout", ConnectTimeoutOpt, None),
    "timeout": ("connect-timeout", OldTimeoutOpt, None),  # deprecated; left out where the command has its own
    "context": ("context", ContextOpt, None),
}
FLAGS = {"zk_tls", "zk_tls_no_hostname_check"}  # on/off options: off leaves the context's value in force
COMMON_PARAMS: dict[str, tuple[Any, Any]] = {"output": (OutputOpt, Output.auto), "verbose": (VerboseOpt, False)}


D = TypeVar("D")  # a result's data, and what its view reads


class Invocation:
    """What a command body gets: settings, a renderer, and a lazily opened cluster."""

    def __init__(self, command: str, given: dict[str, Sourced | None], context: str | None, output: Output,
                 verbose: bool) -> None:
        from kadmin.render import Renderer  # the views and payloads load with a command that runs, not with --help

        self.command = command
        self.renderer: Renderer = Renderer(output.value)
        self.verbose = verbose
        self._given = given
        self._context = context
        self._settings: ConnectionSettings | None = None
        self._backend: Backend | None = None

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

    def backend(self, deadline: float | None = None) -> Backend:
        """The cluster's capabilities, in the mode the settings name (kadmin/cluster/connect.py decides it),
        each opened on first use and closed with the invocation. `deadline` (time.monotonic()) bounds
        connecting: a wait's --timeout covers reaching the cluster too. Lost and regained connections are
        said on stderr."""
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


def _old_timeout(inv: Invocation, both: bool) -> None:
    """`--timeout` on a command without a deadline of its own: the connection timeout's old name."""
    if both:
        raise UsageError("give --connect-timeout only: --timeout is its deprecated old name here")
    inv.deprecated("--timeout", "use --connect-timeout (it is the time allowed to reach the cluster)")


def _source(ctx: typer.Context, name: str) -> str:
    src = ctx.get_parameter_source(name)
    if getattr(src, "name", "") == "ENVIRONMENT":
        param = next((p for p in ctx.command.params if p.name == name), None)
        envvar = getattr(param, "envvar", None) or "environment"
        return f"env {envvar}"
    return "flag"


def command(
    app: typer.Typer, name: str, *, cluster: bool = True, **typer_kw: Any
) -> Callable[[Callable[..., int]], Any]:
    """Register `fn(inv, **own_params) -> exit code` as a command with the shared options.

    A command named in exit_codes.CHECK_COMMANDS is a check verb: run_guarded gives it the monitoring
    codes (every exit that is no verdict becomes 3, UNKNOWN), and so does a parse error (app.py)."""

    def decorate(fn: Callable[..., int]) -> Any:
        sig = inspect.signature(fn, eval_str=True)
        own = [p for p in list(sig.parameters.values())[1:]]
        own_names = {p.name for p in own}
        extra: list[inspect.Parameter] = []
        annotations = {p.name: p.annotation for p in own}
        conn_names = []
        if cluster:
            for pname, (_key, ann, default) in CONNECTION_PARAMS.items():
                if pname in own_names:
                    continue  # the command defines it itself (wait/watch --timeout: its deadline)
                conn_names.append(pname)
                extra.append(inspect.Parameter(pname, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=ann))
                annotations[pname] = ann
        for pname, (ann, default) in COMMON_PARAMS.items():
            extra.append(inspect.Parameter(pname, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=ann))
            annotations[pname] = ann
        full = f"{app.info.name} {name}" if app.info.name else name

        @functools.wraps(fn)
        def wrapper(_kadmin_ctx: typer.Context, **kwargs: Any) -> None:
            ctx = _kadmin_ctx
            output = kwargs.pop("output")
            verbose = kwargs.pop("verbose")
            given: dict[str, Sourced | None] = {}
            old_timeout: list[bool] = []  # --timeout given as the connection timeout; [True] with --connect-timeout
            for pname in conn_names:
                value = kwargs.pop(pname)
                key = CONNECTION_PARAMS[pname][0]
                if pname == "context" or value is None or (pname in FLAGS and not value):
                    continue
                if pname == "timeout":  # after connect_timeout: a flag, it beats KADMIN_CONNECT_TIMEOUT
                    old_timeout.append(getattr(given.get(key), "source", None) == "flag")
                given[key] = Sourced(value, _source(ctx, pname))
            context = None
            if cluster:
                context = ctx.params.get("context")
            inv = Invocation(full, given, context, output, verbose)

            def body() -> int:
                if old_timeout:
                    _old_timeout(inv, both=old_timeout[0])
                return fn(inv, **kwargs)

            code = run_guarded(inv, body, check=full in CHECK_COMMANDS)
            raise typer.Exit(code)

        # Typer reads a command's parameters from its signature: the wrapper's signature is rewritten to be
        # the command's own parameters plus the shared ones, and `__wrapped__` (set by functools.wraps) is
        # deleted so that inspect.signature does not follow it back to `fn`. Typer has no public way to add
        # parameters to every command; this is tested with typer>=0.29,<0.30, the range pyproject.toml pins.
        ctx_param = inspect.Parameter("_kadmin_ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=typer.Context)
        wrapper.__signature__ = sig.replace(parameters=[ctx_param, *own, *extra])  # type: ignore[attr-defined]
        wrapper.__annotations__ = {"_kadmin_ctx": typer.Context, **annotations, "return": None}
        del wrapper.__wrapped__
        return app.command(name, cls=HelpCommand, **typer_kw)(wrapper)  # help that reads as click's

    return decorate


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
    """
    code: int
    try:
        with interrupts.deferring():
            code = body()
            if interrupts.pending():
                inv.renderer.note("interrupted after the change was committed: the result above is what happened")
    except KeyboardInterrupt:
        code = _interrupted(inv)
    except BrokenPipeError:  # the reader went away: nothing more to say (a check's verdict was not delivered)
        from kadmin.render import reader_gone

        reader_gone(inv.renderer.out)
        code = int(Verdict.UNKNOWN) if check else 0
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
    return verdict(code) if check else code
