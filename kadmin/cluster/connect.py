"""Open a cluster backend from the connection settings (the one place the mode is decided); say which with -v."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from kadmin.cluster.base import Backend, Maker, Missing
from kadmin.cluster.deadlines import OVERALL as OVERALL  # the CLI's overall deadline: × --connect-timeout
from kadmin.config import ConnectionSettings, parse_auth
from kadmin.errors import ConfigError, KadminError, UsageError, WrongChroot
from kadmin.inputs import check_input

if TYPE_CHECKING:
    from kadmin.cluster.base import ControllerLink, Partitions, QuorumSetting
    from kadmin.cluster.drain import AdminDrain, ZkDrain
    from kadmin.cluster.features import KraftFeatures
    from kadmin.cluster.kraft import KraftClient
    from kadmin.cluster.kraft_cluster import KraftCluster, KraftRegistrations
    from kadmin.cluster.migration import MigrationReads
    from kadmin.cluster.zookeeper import ZkCluster, ZkConnection
    from kadmin.domain.quorum import QuorumState


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
    for flag in ("zk-tls-ca", "zk-tls-cert", "zk-tls-key"):
        if settings.get(flag):
            check_input(Path(str(settings.get(flag))).expanduser(), f"--{flag}")
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


T = TypeVar("T")
ZK_ONLY = "needs ZooKeeper mode (--zookeeper): "
# What a KRaft cluster lacks, said per command where the command has its own reason (else per capability)
EPOCHS_BY_COMMAND = {
    "brokers show": Missing(ZK_ONLY + "it shows the registration znode /brokers/ids/ID (its JSON, raw data and "
                            "stat), and KRaft keeps registrations in the metadata log, not in znodes",
                            "use `kadmin brokers list` (DescribeCluster: endpoint, rack, fenced) or, on a controller "
                            "host, `kadmin brokers list --metadata-dir DIR` (epoch, incarnation id)"),
    "brokers max-epoch": Missing(ZK_ONLY + "the broker epoch is the czxid of /brokers/ids/ID, and KRaft serves no "
                                 "broker epoch over the Kafka protocol (DescribeCluster has none)",
                                 "on a controller host `kadmin brokers list --metadata-dir DIR` shows each broker's "
                                 "epoch"),
    "brokers diff": Missing("needs broker epochs to tell a bounce, and DescribeCluster (KRaft) carries none: on "
                            "KRaft, diff offline listings (`brokers list --metadata-dir DIR -o json`) with "
                            "--metadata-dir DIR or --to FILE", code="config"),
    "brokers wait": Missing("--epoch-gt needs the broker epoch, which DescribeCluster does not carry (KRaft): on "
                            "KRaft wait --fenced then --unfenced after a restart (or read epochs offline with "
                            "`brokers list --metadata-dir`)", code="no_broker_epoch"),
    "brokers shutdown": Missing(ZK_ONLY + "it sends the epoch-fenced ControlledShutdown request to a ZooKeeper-mode "
                                "controller, and KRaft has no such request (a KRaft broker shuts down through its own "
                                "heartbeats to the controller quorum)",
                                "move its leaderships with `kadmin brokers drain ID`, then stop the broker itself "
                                "(SIGTERM runs Kafka's own controlled shutdown)"),
}
EPOCHS_MISSING = Missing(ZK_ONLY + "it reads the registration znodes /brokers/ids/* (with their epochs), which KRaft "
                         "does not keep (registrations live in the controllers' metadata log)",
                         "use `kadmin brokers list` (DescribeCluster) or `brokers list --metadata-dir DIR`")
IDS_MISSING = Missing(ZK_ONLY + "broker-id assignment keeps host-to-id mappings (/brokers/hosts) and /brokers/seqid in "
                      "ZooKeeper, and KRaft has neither: node ids are static in KRaft mode (KIP-631 drops automatic "
                      "broker-id assignment)", "set node.id in each node's configuration", code="config")
BROKERS_ONLY = Missing("reads partitions, topic configs and live brokers, which only brokers serve: the controllers "
                       "(--bootstrap-controller) do not answer for them (KIP-919); give --bootstrap-server",
                       code="needs_bootstrap_server")
DRAIN_BROKERS_ONLY = Missing("talks to brokers (Metadata, AlterPartitionReassignments, ElectLeaders), which the "
                             "controllers (--bootstrap-controller) do not serve: give --bootstrap-server, not "
                             "--bootstrap-controller", code="needs_bootstrap_server")
NO_DESCRIBE = Missing("cannot list the brokers through the controllers: the controllers (--bootstrap-controller) do "
                      "not describe the brokers (KIP-919: a controller answers DescribeCluster for brokers with "
                      "MISMATCHED_ENDPOINT_TYPE and lists only the controllers); use --bootstrap-server",
                      code="controllers_list_no_brokers")
UNREGISTER_KRAFT_ONLY = Missing("is a KRaft operation (UnregisterBroker): give --bootstrap-server; in ZooKeeper mode "
                                "a registration goes when the broker's session ends", code="config")
FEATURES_KRAFT_ONLY = Missing("reads and finalizes a KRaft cluster's feature flags: give --bootstrap-server and/or "
                              "--bootstrap-controller", code="kraft_only")
NO_FENCING = Missing("--fenced and --unfenced wait for a KRaft broker state: give --bootstrap-server (in ZooKeeper "
                     "mode a broker is registered or not)", code="kraft_only")
ZK_HOLDS = {  # what a capability a ZooKeeper-mode cluster serves only from ZooKeeper reads there
    "epochs": "the broker epochs (the czxid of /brokers/ids/ID)",
    "controller_links": "the controller (/controller) and the broker's epoch",
    "broker_ids": "the host-to-id mappings (/brokers/hosts) and /brokers/seqid",
}
NO_CLUSTER = ("no cluster given: use --bootstrap-server/-b HOST:PORT[,...] or KADMIN_BOOTSTRAP_SERVER (KRaft), "
              "--zookeeper/-z HOST:PORT[/chroot] or KADMIN_ZOOKEEPER (ZooKeeper mode), or --context NAME")


def open_backend(settings: ConnectionSettings, command: str, log: Callable[[str], None] | None = None,
                 deadline: float | None = None, on_connection: Callable[[str], None] | None = None) -> Backend:
    """The backend the settings name: THE one place the mode is decided. ZooKeeper mode when a ZooKeeper is
    given, else KRaft over the Kafka protocol (--bootstrap-server, or --bootstrap-controller for what the
    controllers serve). The settings hold the address of one source only (kadmin.config resolve: a
    flag-given --bootstrap-server is not overruled by KADMIN_ZOOKEEPER), so "a ZooKeeper is given" means
    given where it takes precedence. Nothing is contacted until a capability is first used.

    `deadline` (time.monotonic(); a command's own): no wait for an answer outlasts it, connecting included;
    each one lasts at most --connect-timeout anyway (docs/connecting.md, Deadlines: ZkSession.bound(),
    KraftClient.bound()). `on_connection` hears, in one line each, that a ZooKeeper connection was lost and that
    it is back, while a watch loop runs. `command` names the command in the exit-3 error of a capability the
    mode lacks.
    """
    o = _Opener(settings, log, deadline, on_connection)
    missing: dict[str, Missing] = {"epochs": EPOCHS_BY_COMMAND.get(command, EPOCHS_MISSING),
                                   "controller_links": EPOCHS_BY_COMMAND.get(command, EPOCHS_MISSING),
                                   "broker_ids": IDS_MISSING}
    if settings.get("zookeeper"):
        makers: dict[str, Maker] = {
            "partitions": o.zk, "registrations": o.zk, "epochs": o.zk, "broker_ids": o.zk, "identity": o.zk,
            "leadership": o.admin_drain if o.server else o.zk_drain,
            "controller_links": o.controller_links, "quorum": o.ensemble, "migration": o.migration,
        }
        if o.server or o.controller:
            makers["unregistration"] = o.unregistration
        else:
            missing["unregistration"] = UNREGISTER_KRAFT_ONLY
        missing["fencing"] = NO_FENCING
        missing["features"] = FEATURES_KRAFT_ONLY
        return Backend("zookeeper", command, makers, missing, o.close)
    if o.server:
        makers = {"partitions": o.kraft_cluster, "registrations": o.kraft_registrations,
                  "fencing": o.kraft_registrations, "leadership": o.admin_drain, "quorum": o.kraft,
                  "unregistration": o.unregistration, "identity": o.kraft, "features": o.features,
                  "migration": o.migration}
        return Backend("kraft", command, makers, missing, o.close, explain=lambda name: o.zookeeper_mode(command, name))
    if o.controller:
        missing.update(partitions=BROKERS_ONLY, registrations=NO_DESCRIBE, fencing=NO_DESCRIBE,
                       leadership=DRAIN_BROKERS_ONLY)
        return Backend("kraft", command, {"quorum": o.kraft, "unregistration": o.kraft, "identity": o.kraft,
                                          "features": o.features, "migration": o.migration},
                       missing, o.close)
    raise ConfigError(NO_CLUSTER)


class _Opener:
    """What open_backend's capabilities are made from, each client made once (on first use) and shared."""

    def __init__(self, settings: ConnectionSettings, log: Callable[[str], None] | None, deadline: float | None,
                 on_connection: Callable[[str], None] | None) -> None:
        self.settings, self.log, self.deadline, self.on_connection = settings, log, deadline, on_connection
        self.server = settings.get("bootstrap-server")
        self.controller = settings.get("bootstrap-controller")
        self._made: dict[str, object] = {}

    def left(self) -> float | None:
        import time

        return None if self.deadline is None else max(self.deadline - time.monotonic(), 0.001)

    def capped(self) -> float:
        t = self.left()
        return self.settings.connect_timeout if t is None else min(self.settings.connect_timeout, t)

    def _once(self, name: str, make: Callable[[], T]) -> T:
        if name not in self._made:
            self._made[name] = make()
        return self._made[name]  # type: ignore[return-value]

    def zookeeper_mode(self, command: str, capability: str) -> ConfigError | None:
        """When --bootstrap-server reached brokers of a ZooKeeper-mode cluster: the exit-3 error for a capability
        that such a cluster serves from ZooKeeper only, naming --zookeeper (None: a KRaft cluster, or no answer)."""
        from kadmin.cluster.kraft import GIVE_ZOOKEEPER

        what = ZK_HOLDS.get(capability, "the cluster's ZooKeeper")
        return self.kraft().zookeeper_mode_error(f"{command} reads {what} from ZooKeeper", GIVE_ZOOKEEPER)

    def unregistration(self) -> KraftClient:
        """UnregisterBroker's client, once the brokers given are known not to be a ZooKeeper-mode cluster's (which
        has no such request: its checks would answer about the wrong kind of cluster)."""
        from kadmin.cluster.kraft import ZK_UNREGISTER

        client = self.kraft()
        wrong = client.zookeeper_mode_error("UnregisterBroker is KRaft's", ZK_UNREGISTER)
        if wrong is not None:
            raise wrong
        return client

    def features(self) -> KraftFeatures:
        """Feature flags: through the brokers (--bootstrap-server), the controllers (--bootstrap-controller), or both
        (this capability alone takes both: the brokers through one, the controllers through the other)."""
        from kadmin.cluster.features import KraftFeatures
        from kadmin.cluster.kraft import KraftClient

        def make() -> KraftFeatures:
            cfg = _client_config(self.settings)
            clients = [KraftClient(str(address), cfg, self.settings.connect_timeout, controllers=controllers,
                                   deadline=self.deadline) if address else None
                       for address, controllers in ((self.server, False), (self.controller, True))]
            found = KraftFeatures(*clients)
            if self.log:
                self.log("backend: KRaft feature flags via " + " and ".join(
                    f"{flag} {address} (from {self.settings.source(flag)})" for flag, address in
                    (("bootstrap-server", self.server), ("bootstrap-controller", self.controller)) if address))
            if found.brokers is not None:
                wrong = found.brokers.zookeeper_mode_error(
                    "kadmin features reads a KRaft cluster's feature flags",
                    "Kafka's kafka-features describes a ZooKeeper-mode cluster's")
                if wrong is not None:
                    found.close()
                    raise wrong
            return found

        return self._once("features", make)

    def migration(self) -> MigrationReads:
        """A migration's sources: ZooKeeper (-z), the controllers (--bootstrap-controller) and the brokers
        (--bootstrap-server), each as given (this capability takes all three at once), and a client for brokers
        known only from their registrations."""
        from kadmin.cluster.kraft import KraftClient
        from kadmin.cluster.migration import MigrationReads

        def make() -> MigrationReads:
            cfg = _client_config(self.settings)

            def client(address: str, controllers: bool = False) -> KraftClient:
                return KraftClient(address, cfg, self.settings.connect_timeout, controllers=controllers,
                                   deadline=self.deadline)

            if self.log:
                self.log("backend: migration status via " + ", ".join(
                    f"{flag} {self.settings.get(flag)} (from {self.settings.source(flag)})" for flag in
                    ("zookeeper", "bootstrap-controller", "bootstrap-server") if self.settings.get(flag)))
            return MigrationReads(self.zk if self.settings.get("zookeeper") else None,
                                  client(str(self.controller), True) if self.controller else None,
                                  client(str(self.server)) if self.server else None, client,
                                  str(cfg["security_protocol"]))

        return self._once("migration", make)

    def zk(self) -> ZkCluster:
        return self._once("zk", lambda: _zk_cluster(self.settings, self.log, self.deadline, self.on_connection))

    def kraft(self) -> KraftClient:
        return self._once("kraft", lambda: kraft_client(self.settings, log=self.log, deadline=self.deadline))

    def kraft_cluster(self) -> KraftCluster:
        from kadmin.cluster.kraft_cluster import KraftCluster

        return self._once("kraft_cluster", lambda: KraftCluster(self.kraft()))

    def kraft_registrations(self) -> KraftRegistrations:
        from kadmin.cluster.kraft_cluster import KraftRegistrations

        return self._once("kraft_registrations", lambda: KraftRegistrations(self.kraft()))

    def admin_drain(self) -> AdminDrain:
        from kadmin.cluster.drain import AdminDrain
        from kadmin.cluster.kraft import KraftClient

        return self._once("admin_drain", lambda: AdminDrain(KraftClient(
            str(self.server), _client_config(self.settings), self.capped(), controllers=False,
            deadline=self.deadline)))

    def zk_drain(self) -> ZkDrain:
        from kadmin.cluster.drain import ZkDrain

        return self._once("zk_drain", lambda: ZkDrain(self.zk()))

    def controller_links(self) -> KafkaControllerLinks:
        return self._once("links", lambda: KafkaControllerLinks(_client_config(self.settings), self.capped(),
                                                                self.deadline))

    def ensemble(self) -> ZkEnsemble:
        return self._once("ensemble", lambda: ZkEnsemble(self.settings, self.log))

    def close(self) -> None:
        """Close every client made, each once, the last made first; closing never masks the result."""
        import contextlib

        seen: set[int] = set()
        for made in reversed(list(self._made.values())):
            close = getattr(made, "close", None)
            if close is not None and id(made) not in seen:
                seen.add(id(made))
                with contextlib.suppress(Exception):
                    close()
        self._made.clear()


def open_cluster(settings: ConnectionSettings, log: Callable[[str], None] | None = None,
                 timeout: float | None = None, on_connection: Callable[[str], None] | None = None) -> Partitions:
    """The partitions capability alone, for library use and tests: `open_backend(...).partitions`, opened
    now (closing it closes its connections)."""
    import time

    deadline = None if timeout is None else time.monotonic() + timeout
    return open_backend(settings, "this command", log, deadline, on_connection).partitions


def _client_config(settings: ConnectionSettings) -> dict[str, Any]:
    """kafka-python's configuration from --command-config (Kafka's client properties)."""
    from kadmin.cluster.kafka import client_config
    from kadmin.config import read_properties

    path = settings.get("command-config")
    return client_config(read_properties(path) if path else {})


def _zk_cluster(settings: ConnectionSettings, log: Callable[[str], None] | None, deadline: float | None,
                on_connection: Callable[[str], None] | None) -> ZkCluster:
    """The ZooKeeper-mode cluster, connected: within --connect-timeout and the command's `deadline`, which every
    later read is bounded by too (ZkSession.bound())."""
    import time

    from kadmin.cluster.zookeeper import ZkCluster

    left = None if deadline is None else max(deadline - time.monotonic(), 0.001)
    conn = zk_connection(settings, left)
    if log:
        log(f"backend: ZooKeeper mode, {conn.where}, because zookeeper came from {settings.source('zookeeper')}")
    # With --bootstrap-server too, min.insync.replicas comes from the brokers (DescribeConfigs: their
    # static server.properties value included), ZooKeeper and --min-isr-default when none answers.
    kafka = None
    if settings.get("bootstrap-server"):
        import dataclasses

        brokers_only = {k: v for k, v in settings.values.items() if k != "bootstrap-controller"}
        kafka = kraft_client(dataclasses.replace(settings, values=brokers_only), deadline=deadline)
        if log:
            log(f"min.insync.replicas: DescribeConfigs via --bootstrap-server {settings.get('bootstrap-server')} "
                f"(from {settings.source('bootstrap-server')}), else ZooKeeper and --min-isr-default")
    try:
        cluster = ZkCluster(conn, on_connection=on_connection, kafka=kafka, deadline=deadline).start()
    except BaseException:
        if kafka is not None:
            kafka.close()
        raise
    if log:
        log(f"connected to ZooKeeper {cluster.connected_server() or conn.hosts} (session "
            f"0x{cluster.zk.client_id[0]:x}); each read waits at most {conn.timeout:g}s"
            + ("" if deadline is None else ", and never past the command's deadline"))
    return cluster


class KafkaControllerLinks:
    """ControlledShutdown connections to the active controller, configured by --command-config; each request
    waits at most `timeout` (--connect-timeout), never past `deadline` (the command's)."""

    def __init__(self, config: dict[str, Any], timeout: float, deadline: float | None = None) -> None:
        self.config = config
        self.timeout = timeout
        self.deadline = deadline
        self.security_protocol = str(config["security_protocol"])

    def connect(self, address: str, node_id: int) -> ControllerLink:
        from kadmin.cluster.kraft import ControllerConnection

        return ControllerConnection(address, node_id, self.config, self.timeout, self.deadline)


class ZkEnsemble:
    """The ZooKeeper ensemble as a metadata quorum (QuorumSource): each member's four-letter words."""

    voters_are_nodes = False  # the voters are ZooKeeper servers, which a roll of the cluster never touches

    def __init__(self, settings: ConnectionSettings, log: Callable[[str], None] | None) -> None:
        self.settings = settings
        self.log = log

    def describe_quorum(self) -> tuple[QuorumState, int]:
        return zookeeper_quorum(self.settings, self.log)

    def quorum_fetch_timeout(self) -> QuorumSetting:
        from kadmin.cluster.base import QUORUM_FETCH_TIMEOUT, QuorumSetting

        return QuorumSetting(QUORUM_FETCH_TIMEOUT, None, "a ZooKeeper ensemble has no KRaft quorum")


def zookeeper_quorum(settings: ConnectionSettings, log: Callable[[str], None] | None = None,
                     ) -> tuple[QuorumState, int]:
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


def kraft_client(settings: ConnectionSettings, log: Callable[[str], None] | None = None,
                 deadline: float | None = None) -> KraftClient:
    """A KRaftClient for --bootstrap-server or --bootstrap-controller (exactly one): each request waits at most
    --connect-timeout, never past `deadline` (the command's, time.monotonic())."""
    from kadmin.cluster.kraft import KraftClient

    server, controller = settings.get("bootstrap-server"), settings.get("bootstrap-controller")
    if server and controller:
        raise UsageError("give only one of --bootstrap-server and --bootstrap-controller")
    if not server and not controller:
        raise ConfigError(NO_CLUSTER)
    cfg = _client_config(settings)
    if log:
        which = "bootstrap-controller" if controller else "bootstrap-server"
        log(f"backend: KRaft via {which} {server or controller} (from {settings.source(which)})")
    return KraftClient(str(server or controller), cfg, settings.connect_timeout, controllers=bool(controller),
                       deadline=deadline)



if TYPE_CHECKING:  # mypy proves each implementation has the capability the backend hands it out as
    from kadmin.cluster.base import (
        BrokerIds,
        ClusterIdentity,
        EpochsAndPartitions,
        FeatureFlags,
        LeadershipMoves,
        MigrationSource,
        QuorumSource,
        Registrations,
        Unregistration,
    )
    from kadmin.cluster.base import ControllerLinks as _Links

    def _conforms(zk: ZkCluster, kraft: KraftClient, kc: KraftCluster, kr: KraftRegistrations, admin: AdminDrain,
                  zkd: ZkDrain, links: KafkaControllerLinks, ensemble: ZkEnsemble, features: KraftFeatures,
                  migration: MigrationReads) -> None:
        _zk: tuple[Partitions, Registrations, EpochsAndPartitions, BrokerIds, ClusterIdentity] = (zk, zk, zk, zk, zk)
        _kraft: tuple[Partitions, Registrations, QuorumSource, Unregistration, ClusterIdentity] = (
            kc, kr, kraft, kraft, kraft)
        _moves: tuple[LeadershipMoves, LeadershipMoves] = (admin, zkd)
        _other: tuple[_Links, QuorumSource, FeatureFlags, MigrationSource] = (links, ensemble, features, migration)
