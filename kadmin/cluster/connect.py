"""Choose and open a cluster backend from the connection settings; say which and why with -v."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from kadmin.config import ConnectionSettings, parse_auth
from kadmin.errors import ConfigError, UsageError

if TYPE_CHECKING:
    from kadmin.cluster.base import Cluster


def split_connect_string(value: str) -> tuple[str, str]:
    """`h1:2181,h2:2181/kafka` → ("h1:2181,h2:2181", "/kafka"). Validates ports."""
    value = value.strip()
    if not value:
        raise UsageError("--zookeeper is empty")
    hosts, slash, chroot = value.partition("/")
    chroot = ("/" + chroot).rstrip("/") if slash else ""
    for hp in hosts.split(","):
        host, sep, port = hp.strip().rpartition(":")
        if not hp.strip() or (sep and not port.isdigit()) or (sep and not host):
            raise UsageError(f"--zookeeper: {hp!r} is not HOST:PORT (in {value!r})")
    if "//" in chroot:
        raise UsageError(f"--zookeeper: bad chroot {chroot!r}")
    return hosts, chroot


def open_cluster(settings: ConnectionSettings, log: Callable[[str], None] | None = None) -> Cluster:
    """Open the backend the settings name. ZooKeeper mode when a ZooKeeper is given."""
    zk = settings.get("zookeeper")
    if zk:
        from kadmin.cluster.zookeeper import ZkCluster, ZkConnection

        hosts, chroot = split_connect_string(str(zk))
        auth = settings.get("zk-auth")
        conn = ZkConnection(
            hosts=hosts,
            chroot=chroot,
            timeout=settings.timeout,
            auth=[parse_auth(str(auth))] if auth else [],
            use_tls=bool(settings.get("zk-tls")),
            tls_ca=settings.get("zk-tls-ca"),
            tls_cert=settings.get("zk-tls-cert"),
            tls_key=settings.get("zk-tls-key"),
        )
        if log:
            log(f"backend: ZooKeeper mode, {conn.where}, because zookeeper came from {settings.source('zookeeper')}")
        return ZkCluster(conn).start()
    if settings.get("bootstrap-server") or settings.get("bootstrap-controller"):
        raise ConfigError(
            "this command reads ZooKeeper-mode registrations; KRaft clusters (--bootstrap-server) "
            "are not supported by it yet: give --zookeeper"
        )
    raise ConfigError(
        "no cluster given: use --zookeeper/-z HOST:PORT[/chroot], KADMIN_ZOOKEEPER, or --context NAME"
    )
