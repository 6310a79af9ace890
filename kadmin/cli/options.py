"""Options shared by every command, and the one place exceptions become exit codes.

`@command(app, "name")` adds the connection options (-z, --zk-auth, --zk-tls..., --connect-timeout,
--context), `-o/--output` and `-v/--verbose` to a command, and hands the command an Invocation.

Two timeouts, both settable together: `--connect-timeout` (env KADMIN_CONNECT_TIMEOUT, context key
connect-timeout; 10 s) is how long one wait for an answer may take, on every command; `--timeout` is the
command's deadline, connecting included (docs/connecting.md, Deadlines). Brokers wait, watch, shutdown,
drain and undrain define their own `--timeout` (with its default and help); every other command that
reaches the cluster gets DeadlineOpt, and without it ends within 3 × --connect-timeout (`roll run`, whose
steps have their own timeouts, has none).

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
import inspect
from collections.abc import Callable
from typing import Annotated, Any

import typer

from kadmin.cli.help import CONNECTION_PANEL, HelpCommand
from kadmin.cli.invocation import (  # noqa: F401 - the command modules import these from here
    CONNECTION_KEYS,
    FLAGS,
    INT32_MAX,
    INT64_MAX,
    MAX_SECONDS,
    Invocation,
    Output,
    lazy_module,
    run_command,
    run_guarded,
    seconds_value,
    topic_filter,
    views,
)
from kadmin.errors import KadminError


# ---------------------------------------------------------------- parse-time validation (exit 2)
def seconds(value: Any, *, allow_zero: bool = False) -> float:
    """A duration in seconds (kadmin.cli.invocation.seconds_value), else a usage error saying why (exit 2)."""
    try:
        return seconds_value(value, allow_zero=allow_zero)
    except ValueError as e:
        raise typer.BadParameter(str(e)) from None


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


CONN = CONNECTION_PANEL
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
                                                         help="Give up on an answer after this long (10 "
                                                         "seconds unless set); a command without a deadline "
                                                         "of its own ends within 3 times this.",
                                                         rich_help_panel=CONN, show_default=False)]
# The command's deadline, on every command that reaches the cluster; brokers wait/watch/shutdown/drain/undrain
# define their own `--timeout` (with its own default and help).
DeadlineOpt = Annotated[float | None, typer.Option("--timeout", metavar="SECONDS", parser=seconds,
                                                   help="End within this long, connecting included (3 times "
                                                   "--connect-timeout unless set).",
                                                   rich_help_panel=CONN, show_default=False)]
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
# -v of a command that reaches no cluster (cluster=False): it has no cluster or settings to say
LocalVerboseOpt = Annotated[bool, typer.Option("--verbose", "-v", help="Show tracebacks of internal errors, and "
                                               "more detail on stderr where the command has any.")]

_CONNECTION_OPTS: dict[str, tuple[Any, Any]] = {
    "zookeeper": (ZkOpt, None),
    "zk_auth": (ZkAuthOpt, None),
    "zk_tls": (ZkTlsOpt, False),
    "zk_tls_ca": (ZkTlsCaOpt, None),
    "zk_tls_cert": (ZkTlsCertOpt, None),
    "zk_tls_key": (ZkTlsKeyOpt, None),
    "zk_tls_no_hostname_check": (ZkTlsNoHostnameCheckOpt, False),
    "bootstrap_server": (BootstrapOpt, None),
    "bootstrap_controller": (BootstrapCtlOpt, None),
    "command_config": (CommandConfigOpt, None),
    "connect_timeout": (ConnectTimeoutOpt, None),
    "context": (ContextOpt, None),
}
# parameter name -> (settings key, annotation, default), in the order kadmin.cli.invocation takes them
CONNECTION_PARAMS: dict[str, tuple[str, Any, Any]] = {p: (CONNECTION_KEYS[p], *_CONNECTION_OPTS[p])
                                                      for p in CONNECTION_KEYS}
COMMON_PARAMS: dict[str, tuple[Any, Any]] = {"output": (OutputOpt, Output.auto), "verbose": (VerboseOpt, False)}


def connection_params() -> list[Any]:
    """The connection options (and --timeout, the deadline) as every command that reaches a cluster takes them:
    the parameters of a command made by `command()`, for `kadmin help connection`."""
    demo = typer.Typer()

    @command(demo, "connection")
    def connection(inv: Invocation) -> int:
        return 0

    cmd = typer.main.get_command(demo)
    return [p for p in cmd.params if getattr(p, "rich_help_panel", None) == CONN]


def _source(ctx: typer.Context, name: str) -> str:
    src = ctx.get_parameter_source(name)
    if getattr(src, "name", "") == "ENVIRONMENT":
        param = next((p for p in ctx.command.params if p.name == name), None)
        envvar = getattr(param, "envvar", None) or "environment"
        return f"env {envvar}"
    return "flag"


def command(
    app: typer.Typer, name: str, *, cluster: bool = True, deadline: bool = True, **typer_kw: Any
) -> Callable[[Callable[..., int]], Any]:
    """Register `fn(inv, **own_params) -> exit code` as a command with the shared options: with `cluster`, the
    connection options and (with `deadline`, unless the command defines its own) `--timeout`, its deadline.

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
            if deadline and "timeout" not in own_names:  # those that have their own: wait/watch/drain...
                conn_names.append("timeout")
                extra.append(inspect.Parameter("timeout", inspect.Parameter.KEYWORD_ONLY, default=None,
                                               annotation=DeadlineOpt))
                annotations["timeout"] = DeadlineOpt
        for pname, (ann, default) in COMMON_PARAMS.items():
            if pname == "verbose" and not cluster:
                ann = LocalVerboseOpt
            extra.append(inspect.Parameter(pname, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=ann))
            annotations[pname] = ann
        full = f"{app.info.name} {name}" if app.info.name else name

        @functools.wraps(fn)
        def wrapper(_kadmin_ctx: typer.Context, **kwargs: Any) -> None:
            ctx = _kadmin_ctx
            output = kwargs.pop("output")
            verbose = kwargs.pop("verbose")
            connection = {pname: kwargs.pop(pname) for pname in conn_names}
            code = run_command(full, fn, kwargs, connection, lambda pname: _source(ctx, pname), output.value, verbose)
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
