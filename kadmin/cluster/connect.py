"""Choose and open a cluster backend from the connection settings; say which and why with -v."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kadmin.config import ConnectionSettings, parse_auth
from kadmin.errors import ConfigError, KadminError, UsageError, WrongChroot

if TYPE_CHECKING:
    from kadmin.cluster.base import Cluster
    from kadmin.cluster.zookeeper import ZkConnection


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
        if sep and not 1 <= int(port) <= 65535:
            raise UsageError(f"--zookeeper: port {port} of {hp.strip()!r} is not in 1-65535 (in {value!r})")
    if "//" in chroot:
        raise UsageError(f"--zookeeper: bad chroot {chroot!r}")
    return hosts, chroot


def zk_connection(settings: ConnectionSettings, timeout: float | None = None) -> ZkConnection:
    """THE way to describe a ZooKeeper connection: hosts, chroot, auth and TLS from the settings.

    Every kadmin connection to ZooKeeper (commands, the quorum's /cluster/id read) is built here, so
    none can leave TLS or auth out. `timeout` (a command's deadline) can only shorten --connect-timeout.
    TLS checks the server's certificate against the CA and, unless zk-tls-no-hostname-check, that it
    names the host connected to (Kafka's zookeeper.ssl.endpoint.identification.algorithm=HTTPS).
    """
    from kadmin.cluster.zookeeper import ZkConnection

    hosts, chroot = split_connect_string(str(settings.get("zookeeper")))
    auth_value = settings.get("zk-auth")
    auth = [parse_auth(str(auth_value))] if auth_value else []
    if any(scheme == "sasl" for scheme, _ in auth) and not _sasl_available():
        raise ConfigError("--zk-auth sasl: needs SASL support, which is not installed: "
                          "pip install pure-sasl (the `puresasl` module)")
    return ZkConnection(
        hosts=hosts,
        chroot=chroot,
        timeout=settings.connect_timeout if timeout is None else min(settings.connect_timeout, timeout),
        auth=auth,
        use_tls=settings.flag("zk-tls"),
        tls_ca=settings.get("zk-tls-ca"),
        tls_cert=settings.get("zk-tls-cert"),
        tls_key=settings.get("zk-tls-key"),
        tls_check_hostname=not settings.flag("zk-tls-no-hostname-check"),
    )


def _sasl_available() -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec("puresasl") is not None
    except (ImportError, ValueError):
        return False


def open_cluster(settings: ConnectionSettings, log: Callable[[str], None] | None = None,
                 timeout: float | None = None, on_connection: Callable[[str], None] | None = None) -> Cluster:
    """Open the backend the settings name: THE one place the mode is chosen. ZooKeeper mode when a
    ZooKeeper is given, else the Kafka protocol (KraftCluster) with --bootstrap-server; commands the
    Kafka-protocol backend does not serve yet fail there with exit 3, naming themselves. The settings
    hold the address of one source only (kadmin.config resolve: a flag-given --bootstrap-server is not
    overruled by KADMIN_ZOOKEEPER), so "a ZooKeeper is given" means given where it takes precedence.

    `timeout` (a command's own deadline) caps the connection timeout; `on_connection` hears, in one
    line each, that the connection was lost and that it is back.
    """
    zk = settings.get("zookeeper")
    if zk:
        from kadmin.cluster.zookeeper import ZkCluster

        conn = zk_connection(settings, timeout)
        if log:
            log(f"backend: ZooKeeper mode, {conn.where}, because zookeeper came from {settings.source('zookeeper')}")
        # With --bootstrap-server too, min.insync.replicas comes from the brokers (DescribeConfigs: their
        # static server.properties value included), ZooKeeper and --min-isr-default when none answers.
        kafka = None
        if settings.get("bootstrap-server"):
            import dataclasses

            brokers_only = {k: v for k, v in settings.values.items() if k != "bootstrap-controller"}
            kafka = kraft_client(dataclasses.replace(settings, values=brokers_only))
            if log:
                log(f"min.insync.replicas: DescribeConfigs via --bootstrap-server {settings.get('bootstrap-server')} "
                    f"(from {settings.source('bootstrap-server')}), else ZooKeeper and --min-isr-default")
        try:
            return ZkCluster(conn, on_connection=on_connection, kafka=kafka).start()
        except BaseException:
            if kafka is not None:
                kafka.close()
            raise
    if settings.get("bootstrap-server"):
        # KRaft (or any cluster reached over the Kafka protocol): partition state from the brokers.
        from kadmin.cluster.kraft_cluster import KraftCluster

        return KraftCluster(kraft_client(settings, log=log))
    if settings.get("bootstrap-controller"):
        raise ConfigError(
            "this command reads what the brokers serve (partitions, configs, live brokers); controllers "
            "(--bootstrap-controller) do not answer it: give --bootstrap-server", code="needs_bootstrap_server"
        )
    raise ConfigError(
        "no cluster given: use --bootstrap-server/-b HOST:PORT[,...] or KADMIN_BOOTSTRAP_SERVER (KRaft), "
        "--zookeeper/-z HOST:PORT[/chroot] or KADMIN_ZOOKEEPER (ZooKeeper mode), or --context NAME"
    )


def zookeeper_quorum(settings: ConnectionSettings, log: Callable[[str], None] | None = None) -> tuple[Any, int]:
    """The ZooKeeper ensemble named by --zookeeper as a metadata quorum, and the time it was read (ms).

    Every member of the connection string is asked `srvr` and `conf` (and `mntr`) on its own
    connection; the cluster id comes from /cluster/id when the ensemble serves.
    """
    import time

    from kadmin.cluster.bulk import client_ssl_context, parse_hosts
    from kadmin.cluster.ensemble import probe_ensemble, whitelist_message
    from kadmin.domain.quorum import from_zookeeper

    conn = zk_connection(settings, timeout=5.0)  # checked before anything is sent
    hosts = conn.hosts
    tls = client_ssl_context(conn.tls_ca, conn.tls_cert, conn.tls_key, conn.tls_check_hostname) \
        if conn.use_tls else None
    probes = probe_ensemble(parse_hosts(hosts), timeout=conn.timeout, tls=tls)
    now_ms = int(time.time() * 1000)
    blocked = [p for p in probes if p.reachable and {"srvr", "conf"} & set(p.not_whitelisted)]
    if blocked:
        msg = whitelist_message(blocked[0].address, blocked[0].not_whitelisted, ("srvr", "conf"))
        raise ConfigError(msg or f"{blocked[0].address} does not allow the four-letter words kadmin needs")
    if not any(p.reachable for p in probes):
        from kadmin.errors import ClusterUnreachable

        reasons = "; ".join(f"{p.address}: {p.error}" for p in probes)
        raise ClusterUnreachable(f"no ZooKeeper member answered ({reasons})")
    q = from_zookeeper(probes)
    cluster_id = None
    if q.leader_id >= 0:
        try:
            from kadmin.cluster.zookeeper import ZkCluster

            zc = ZkCluster(conn).start()
            try:
                cluster_id = zc.cluster_id()
            finally:
                zc.close()
        except WrongChroot:
            if conn.chroot:  # a chroot was asked for and is wrong: exit 3 as every other command does
                raise
            if log:  # no chroot: an ensemble that serves no Kafka at its root is still a quorum to describe
                log("no cluster id: no Kafka cluster at the root of this ensemble")
        except KadminError as e:
            if log:
                log(f"no cluster id: {e.message}")
    if log:
        log(f"quorum: ZooKeeper ensemble {hosts} ({len(probes)} members)")
    import dataclasses

    return dataclasses.replace(q, cluster_id=cluster_id), now_ms


def kraft_client(settings: ConnectionSettings, log: Callable[[str], None] | None = None) -> Any:
    """A KRaftClient for --bootstrap-server or --bootstrap-controller (exactly one)."""
    from kadmin.cluster.kafka import client_config
    from kadmin.cluster.kraft import KraftClient
    from kadmin.config import read_properties

    server, controller = settings.get("bootstrap-server"), settings.get("bootstrap-controller")
    if server and controller:
        raise UsageError("give only one of --bootstrap-server and --bootstrap-controller")
    if not server and not controller:
        raise ConfigError("You must specify either --bootstrap-controller or --bootstrap-server.")
    path = settings.get("command-config")
    cfg = client_config(read_properties(path) if path else {})
    if log:
        which = "bootstrap-controller" if controller else "bootstrap-server"
        log(f"backend: KRaft via {which} {server or controller} (from {settings.source(which)})")
    return KraftClient(str(server or controller), cfg, settings.connect_timeout, controllers=bool(controller))

