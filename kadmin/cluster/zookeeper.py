"""ZooKeeper-mode clusters through kazoo: Kafka's znodes, pipelined reads, watches."""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import (
    AuthFailedError,
    ConnectionLoss,
    KazooException,
    NoAuthError,
    NoNodeError,
    SessionExpiredError,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import KazooState
from kazoo.retry import KazooRetry

from kadmin import interrupts
from kadmin.cluster.base import BrokerListing, Contention, IdState, PartitionScan, WatchTick, Znode
from kadmin.cluster.bulk import BulkReader, client_ssl_context, parse_hosts
from kadmin.cluster.min_isr import FALLBACK, STATIC_SOURCE, BrokerMinIsr, read_min_isr
from kadmin.domain import znodes
from kadmin.domain.addresses import host_port
from kadmin.domain.models import Broker, Controller, Generation, MinIsrConfig, PartitionState, Stat
from kadmin.domain.partitions import STATIC, current_min_isr
from kadmin.errors import AuthFailed, ClusterUnreachable, KadminError, WrongChroot
from kadmin.results import Problem, Progress

IDS = "/brokers/ids"
TOPICS = "/brokers/topics"
CONFIG_TOPICS = "/config/topics"
CONFIG_BROKERS = "/config/brokers"
DEFAULT_ENTITY = "<default>"  # ZooKeeper's name of the cluster-wide default entity (ZooKeeperInternals.DEFAULT_STRING)
DELETE_TOPICS = "/admin/delete_topics"
RESYNC = "\0resync"
HOSTS = "/brokers/hosts"
SEQID = "/brokers/seqid"
WINDOW = 1000

_log = logging.getLogger("kazoo")
_log.addHandler(logging.NullHandler())
_log.propagate = False


@dataclass(frozen=True)
class ZkConnection:
    hosts: str  # "h1:p1,h2:p2" (no chroot)
    chroot: str  # "" or "/kafka"
    timeout: float = 10.0
    auth: Sequence[tuple[str, str]] = ()
    use_tls: bool = False
    tls_ca: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None
    tls_check_hostname: bool = True  # the server's certificate must name the host (IP SAN for an address)

    @property
    def connect_string(self) -> str:
        return self.hosts + self.chroot

    @property
    def where(self) -> str:
        return f"ZooKeeper {self.hosts}" + (f" (chroot {self.chroot})" if self.chroot else "")


def _stat(s: Any) -> Stat:
    return Stat(*s)


def _broker(bid: int, data: bytes | None, stat: Stat, controller_id: int | None) -> Broker:
    try:
        reg = znodes.decode_registration(data)
        err = None
    except znodes.ZnodeFormatError as e:
        reg, err = None, str(e)
    return Broker(
        id=bid, stat=stat, raw=data or b"", registration=reg, error=err, is_controller=(bid == controller_id)
    )


class ZkCluster:
    mode = "zookeeper"

    def __init__(self, conn: ZkConnection, sleep: Callable[[float], None] = time.sleep,
                 on_connection: Callable[[str], None] | None = None, kafka: Any = None) -> None:
        self.conn = conn
        # a KraftClient for --bootstrap-server, when also given: min.insync.replicas from DescribeConfigs
        self.kafka = kafka
        self.description = conn.where
        self._sleep = sleep
        self._on_connection = on_connection
        self._down = False
        kw: dict[str, Any] = {}
        if conn.use_tls:
            kw.update(use_ssl=True, ca=conn.tls_ca, certfile=conn.tls_cert, keyfile=conn.tls_key, verify_certs=True,
                      check_hostname=conn.tls_check_hostname)
        self.zk = KazooClient(
            hosts=conn.connect_string,
            # The session timeout: at least 4 s (a short one expires on a blip), at most what servers
            # grant (maxSessionTimeout defaults to 40 s) and what fits the int32 milliseconds on the wire.
            timeout=min(max(conn.timeout, 4.0), 60.0),
            connection_retry=KazooRetry(max_tries=-1, delay=0.1, max_delay=1.0, sleep_func=sleep),
            command_retry=KazooRetry(max_tries=3, delay=0.1, max_delay=1.0, sleep_func=sleep, ignore_expire=False),
            auth_data=list(conn.auth) or None,
            logger=_log,
            **kw,
        )
        self._started = False
        self._bulk_reader: BulkReader | None = None

    def _bulk(self) -> BulkReader:
        """The pipelined reader every scan without a watch goes through (kadmin/cluster/bulk.py)."""
        if self._bulk_reader is None:
            c = self.conn
            ctx = client_ssl_context(c.tls_ca, c.tls_cert, c.tls_key, c.tls_check_hostname) if c.use_tls else None
            self._bulk_reader = BulkReader(parse_hosts(c.hosts), chroot=c.chroot, auth=c.auth,
                                           ssl_context=ctx, timeout=c.timeout, window=WINDOW)
        return self._bulk_reader

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> ZkCluster:
        try:
            with warnings.catch_warnings():
                # kazoo warns when the chroot does not exist; kadmin says so itself, as an error
                warnings.filterwarnings("ignore", message="No chroot path exists")
                # kazoo's start() = start_async + wait + (on a time-out) a stop that blocks; see below
                self.zk.start_async().wait(timeout=self.conn.timeout)
                if not self.zk.connected:
                    raise KazooTimeoutError("Connection time-out")
                if self.zk.chroot:
                    self.zk.exists("/")  # what kazoo's start() does too: an auth failure shows here
        except KazooTimeoutError as e:
            # Stopping waits for kazoo's connection thread, which may sit in a connect attempt to a
            # hung server for the whole session timeout: stop it in the background (its threads are
            # daemons), so --timeout is the time this takes.
            threading.Thread(target=self._quiet_stop, name="kadmin-zk-stop", daemon=True).start()
            refused = self._tls_refusal() if self.conn.use_tls else None
            if refused:
                raise ClusterUnreachable(f"cannot connect to {self.conn.where}: {refused}") from e
            raise ClusterUnreachable(
                f"cannot reach {self.conn.where} within {self.conn.timeout:g}s"
            ) from e
        except AuthFailedError as e:
            self.zk.stop()
            raise AuthFailed(f"authentication with {self.conn.where} failed: check --zk-auth") from e
        except KazooException as e:
            self.zk.stop()
            raise ClusterUnreachable(f"cannot connect to {self.conn.where}: {e or type(e).__name__}") from e
        self._started = True
        self.zk.add_listener(self._report_state)
        return self

    def _tls_refusal(self, timeout: float = 2.0) -> str | None:
        """Why TLS failed, when kazoo gave up without saying: kazoo retries a certificate it refuses
        (host name mismatch, unknown CA) until the time-out. One handshake per member says why."""
        import socket
        import ssl

        c = self.conn
        try:
            ctx = client_ssl_context(c.tls_ca, c.tls_cert, c.tls_key, c.tls_check_hostname)
        except (OSError, ValueError) as e:
            return f"TLS settings: {e}"
        for host, port in parse_hosts(c.hosts)[:3]:
            try:
                with socket.create_connection((host, port), timeout=timeout) as raw, \
                        ctx.wrap_socket(raw, server_hostname=host):
                    pass
            except ssl.SSLCertVerificationError as e:
                why = " ".join(str(e.verify_message or e.reason or e).split())
                hint = (" (the certificate must name the host connected to; --zk-tls-no-hostname-check skips that "
                        "check)") if "mismatch" in why.lower() or "match" in why.lower() else ""
                return f"TLS: {host_port(host, port)} presented a certificate kadmin refuses: {why}{hint}"
            except ssl.SSLError as e:
                return f"TLS: {host_port(host, port)}: {e.reason or e}"
            except OSError:
                continue
        return None

    def _quiet_stop(self) -> None:
        with contextlib.suppress(Exception):
            self.zk.stop()
            self.zk.close()

    def _report_state(self, state: str) -> None:
        """Tell `on_connection` (stderr) when the connection goes and comes back: a watch must not go quiet."""
        if self._on_connection is None or not self._started:
            return
        if state == KazooState.SUSPENDED and not self._down:
            self._down = True
            self._on_connection(f"lost the connection to {self.conn.where}; reconnecting")
        elif state == KazooState.LOST:
            self._down = True
            self._on_connection(f"the session with {self.conn.where} expired; reconnecting with a new session")
        elif state == KazooState.CONNECTED and self._down:
            self._down = False
            where = self.connected_server()
            self._on_connection(f"reconnected to {where or self.conn.where}")

    def connected_server(self) -> str | None:
        """The ensemble member this client is connected to now (host:port), if connected."""
        sock = getattr(getattr(self.zk, "_connection", None), "_socket", None)
        try:
            host, port = sock.getpeername()[:2]  # type: ignore[union-attr]
        except (AttributeError, OSError):
            return None
        return host_port(host, port)

    def close(self) -> None:
        if self.kafka is not None:
            with contextlib.suppress(Exception):  # closing must never mask the result
                self.kafka.close()
            self.kafka = None
        if self._bulk_reader is not None:
            self._bulk_reader.close()
            self._bulk_reader = None
        if self._started:
            self._on_connection = None  # stopping is not losing the connection
            try:
                self.zk.stop()
                self.zk.close()
            finally:
                self._started = False

    def _translate(self, path: str, e: Exception) -> KadminError:
        if isinstance(e, NoAuthError):
            return AuthFailed(f"not authorized to read {path} on {self.conn.where}: check --zk-auth")
        if isinstance(e, (ConnectionLoss, SessionExpiredError, KazooTimeoutError)):
            return ClusterUnreachable(f"lost the connection to {self.conn.where} while reading {path}")
        return KadminError(f"reading {path} failed: {type(e).__name__} {e}")

    # ------------------------------------------------------------------ reads
    def _children(self, path: str, watch: Callable[[Any], None] | None = None) -> list[str]:
        try:
            return list(self.zk.retry(self.zk.get_children, path, watch=watch))
        except NoNodeError:
            if path == IDS:
                raise self._wrong_chroot() from None
            raise
        except Exception as e:  # noqa: BLE001 - translated at the layer's edge
            raise self._translate(path, e) from e

    def _wrong_chroot(self) -> WrongChroot:
        where = f"chroot {self.conn.chroot!r}" if self.conn.chroot else "the root (no chroot)"
        hint = ""
        try:
            if not self.conn.chroot:
                roots = [c for c in self.zk.get_children("/") if c != "zookeeper"]
                if roots:
                    hint = f"; top-level znodes here: {', '.join('/' + r for r in sorted(roots)[:5])}"
        except Exception:  # noqa: BLE001 - a hint only
            pass
        return WrongChroot(
            f"{IDS} does not exist under {where} on {self.conn.hosts}: the chroot is probably wrong{hint}"
        )

    def get(self, path: str, watch: Callable[[Any], None] | None = None) -> Znode | None:
        try:
            data, stat = self.zk.retry(self.zk.get, path, watch=watch)
        except NoNodeError:
            return None
        except Exception as e:  # noqa: BLE001
            raise self._translate(path, e) from e
        return Znode(path, data, _stat(stat))

    def get_many(
        self, paths: Iterable[str], watch: Callable[[Any], None] | None = None
    ) -> Iterator[tuple[str, Znode | None]]:
        """Pipelined getData with a bounded in-flight window; reads lost to a reconnect are re-issued.

        Without a watch this is the bulk reader (tens of thousands of reads/s); a watch belongs to
        the kazoo session, so watched reads go through kazoo.
        """
        if watch is None:
            for p, data, stat in self._bulk().get_many(paths):
                yield p, (Znode(p, data, stat) if stat is not None else None)
            return
        batch: list[str] = []
        for p in paths:
            batch.append(p)
            if len(batch) >= WINDOW:
                yield from self._get_batch(batch, watch)
                batch = []
        if batch:
            yield from self._get_batch(batch, watch)

    def _get_batch(
        self, paths: list[str], watch: Callable[[Any], None] | None
    ) -> Iterator[tuple[str, Znode | None]]:
        asyncs = [(p, self.zk.get_async(p, watch=watch)) for p in paths]
        for p, a in asyncs:
            try:
                data, stat = a.get(timeout=self.conn.timeout)
            except NoNodeError:
                yield p, None
                continue
            except (ConnectionLoss, KazooTimeoutError):
                yield p, self.get(p, watch=watch)  # re-issued through the retrying path
                continue
            except Exception as e:  # noqa: BLE001
                raise self._translate(p, e) from e
            yield p, Znode(p, data, _stat(stat))

    def cluster_id(self) -> str | None:
        """/cluster/id's id, or None when the znode is absent (a cluster that never had a 0.10.1+ broker)."""
        node = self.get("/cluster/id")
        if node is None:
            self._children(IDS)  # absent because the chroot is wrong? say so
            return None
        try:
            return znodes.decode_cluster_id(node.data)
        except znodes.ZnodeFormatError as e:
            raise KadminError(f"/cluster/id: {e}", code="invalid_znode") from e

    def controller(self) -> tuple[Controller | None, list[Problem]]:
        node = self.get("/controller")
        if node is None:
            return None, []
        try:
            return znodes.decode_controller(node.data), []
        except znodes.ZnodeFormatError as e:
            return None, [Problem("invalid_znode", f"/controller: {e}")]

    # ------------------------------------------------------------------ brokers
    def _ids(self, children: Iterable[str]) -> tuple[list[int], list[Problem]]:
        """The broker ids among /brokers/ids' children: canonical decimal only, as Kafka names them.

        `02`, `1_0` or non-ASCII digits are not ids (int() would read them as 2, 10, ...: listed twice
        next to a real `2`, or read from a znode that does not exist): each is reported as invalid.
        """
        ids, problems = [], []
        for c in children:
            try:
                ids.append(znodes.broker_id_from_name(c))
            except znodes.ZnodeFormatError:
                name = c if c.isprintable() and len(c) <= 60 else znodes.show_value(c)
                problems.append(Problem("invalid_znode", f"{IDS}/{name}: not a broker id "
                                        "(expected a decimal integer from 0 to 2147483647, without leading zeros)"))
        return sorted(ids), problems

    def list_brokers(self) -> BrokerListing:
        ids, problems = self._ids(self._children(IDS))
        controller, cproblems = self.controller()
        problems += cproblems
        cid = controller.broker_id if controller else None
        brokers = []
        for path, node in self.get_many(f"{IDS}/{i}" for i in ids):
            if node is None:  # deregistered between the two reads, as Kafka's controller skips it
                continue
            b = _broker(int(path.rsplit("/", 1)[1]), node.data, node.stat, cid)
            if b.error:
                problems.append(Problem("invalid_znode", f"{path}: {b.error}"))
            brokers.append(b)
        return BrokerListing(brokers, controller, problems)

    def get_broker(self, broker_id: int) -> tuple[Broker | None, list[Problem]]:
        self._children(IDS)  # distinguishes "not registered" from "wrong chroot"
        node = self.get(f"{IDS}/{broker_id}")
        if node is None:
            return None, []
        controller, problems = self.controller()
        b = _broker(broker_id, node.data, node.stat, controller.broker_id if controller else None)
        if b.error:
            problems.append(Problem("invalid_znode", f"{IDS}/{broker_id}: {b.error}"))
        return b, problems

    # ------------------------------------------------------------------ partitions
    def scan_partitions(
        self, topics: Sequence[str] | None = None, progress: Progress | None = None, min_isr_default: int = 1
    ) -> PartitionScan:
        """Every partition's assignment, state and min.insync.replicas, read with pipelined reads.

        min.insync.replicas as Kafka resolves it: the topic's own value, else the dynamic config of the
        partition's leader (/config/brokers/<id>), else the dynamic cluster default
        (/config/brokers/<default>), else the static value (`min_isr_default`, not in ZooKeeper).
        Topics queued in /admin/delete_topics are marked `deleting`.

        What cannot be read is never dropped: an unparsable topic znode makes the topic `unreadable`;
        an unparsable /config/topics/<t> or min.insync.replicas gives each of t's partitions a
        `problem` (its min ISR is unknown, so verdicts must not assume the default), and so does an
        unparsable broker-level value a partition without its own value could use (the cluster
        default, or the per-broker value of any of its replicas: any of them may lead it).
        """
        ids, problems = self._ids(self._children(IDS))
        live = frozenset(ids)
        names = sorted(self._children(TOPICS)) if topics is None else list(topics)
        assignments: dict[str, znodes.TopicAssignment] = {}
        unreadable: dict[str, str] = {}
        min_isr: dict[str, int | None] = {}
        config_problem: dict[str, str] = {}
        broker_min_isr, bad_default, bad_brokers = self._broker_min_isr(problems)
        static_source = STATIC
        deleting = self._queued_for_deletion()
        if progress:
            progress("topics", len(names), 0)
        for path, node in self.get_many(f"{TOPICS}/{t}" for t in names):
            name = path.rsplit("/", 1)[1]
            if progress:
                progress("topics", len(names), 1)
            if node is None:
                if topics is not None:
                    problems.append(Problem("not_found", f"topic {name} does not exist"))
                continue
            try:
                assignments[name] = znodes.decode_topic(node.data)
            except znodes.ZnodeFormatError as e:
                problems.append(Problem("invalid_znode", f"{path}: {e}", topic=name))
                unreadable[name] = f"unreadable topic znode {path}: {e}"
        for path, node in self.get_many(f"{CONFIG_TOPICS}/{t}" for t in assignments):
            name = path.rsplit("/", 1)[1]
            min_isr[name] = None
            if node is None:
                continue
            try:
                value = znodes.decode_config(node.data).get("min.insync.replicas")
                if value is not None:
                    min_isr[name] = znodes.parse_min_isr(value)
            except znodes.ZnodeFormatError as e:
                problems.append(Problem("invalid_znode", f"{path}: {e}", topic=name))
                config_problem[name] = f"min.insync.replicas unknown: {path}: {e}"
        from_brokers = self._min_isr_from_brokers(sorted(assignments), live, min_isr_default, problems) \
            if self.kafka is not None and assignments else None
        if from_brokers is not None:  # what the brokers use (their static value included) wins over ZooKeeper
            min_isr.update(from_brokers.topics)
            # a broker that reported no dynamic value (it did not answer) keeps ZooKeeper's, where Kafka keeps it
            reported = {b for b, _ in from_brokers.config.brokers}
            broker_min_isr = tuple(sorted([*from_brokers.config.brokers,
                                           *((b, v) for b, v in broker_min_isr if b not in reported)]))
            bad_default = (from_brokers.config.cluster_default, None)
            bad_brokers = {}
            min_isr_default = from_brokers.config.static
            static_source = STATIC_SOURCE
        wanted = [(t, p) for t, a in assignments.items() for p in sorted(a["partitions"])]
        if progress:
            progress("partitions", len(wanted), 0)
        out: list[PartitionState] = []
        configs: dict[str, MinIsrConfig] = {}  # one per topic
        paths = (f"{TOPICS}/{t}/partitions/{p}/state" for t, p in wanted)
        for (t, p), (path, node) in zip(wanted, self.get_many(paths), strict=True):
            a = assignments[t]
            replicas = a["partitions"][p]
            cfg = configs.get(t)
            if cfg is None:
                cfg = configs[t] = MinIsrConfig(topic=min_isr[t], brokers=broker_min_isr,
                                                cluster_default=bad_default[0], static=min_isr_default)
            problem = config_problem.get(t)
            if problem is None and cfg.topic is None:  # a broker-level value it may use is unreadable
                why = [bad_default[1]] if bad_default[1] else []
                why += [bad_brokers[r] for r in replicas if r in bad_brokers]
                problem = f"min.insync.replicas unknown: {why[0]}" if why else None
            base = dict(
                topic=t, partition=p, replicas=replicas, adding_replicas=a["adding"].get(p, ()),
                removing_replicas=a["removing"].get(p, ()), topic_id=a["topic_id"], min_isr_config=cfg,
                deleting=t in deleting,
            )
            if progress:
                progress("partitions", len(wanted), 1)
            if node is None:
                problems.append(Problem("missing_state", f"{path}: no state znode (the partition has no leader)",
                                        topic=t, partition=p))
                mi, mi_source = self._min_isr(cfg, None, replicas, static_source)
                out.append(PartitionState(**base, min_isr=mi, min_isr_source=mi_source,  # type: ignore[arg-type]
                                          problem="no state znode"))
                continue
            try:
                st = znodes.decode_partition_state(node.data)
            except znodes.ZnodeFormatError as e:
                problems.append(Problem("invalid_znode", f"{path}: {e}", topic=t, partition=p))
                mi, mi_source = self._min_isr(cfg, None, replicas, static_source)
                out.append(PartitionState(**base, min_isr=mi, min_isr_source=mi_source,  # type: ignore[arg-type]
                                          problem=f"invalid state: {e}"))
                continue
            mi, mi_source = self._min_isr(cfg, st["leader"], replicas, static_source)
            out.append(PartitionState(
                **base,  # type: ignore[arg-type]
                isr=st["isr"], leader=st["leader"], leader_epoch=st["leader_epoch"],
                partition_epoch=node.stat.version, controller_epoch=st["controller_epoch"],
                leader_recovery_state=st["leader_recovery_state"], problem=problem,
                min_isr=mi, min_isr_source=mi_source,
            ))
        return PartitionScan(out, live, problems, unreadable)

    @staticmethod
    def _min_isr(cfg: MinIsrConfig, leader: int | None, replicas: Sequence[int], static: str) -> tuple[int, str]:
        value, source = current_min_isr(cfg, leader, replicas)
        return value, static if source == STATIC else source

    def _min_isr_from_brokers(self, topics: list[str], live: frozenset[int], default: int,
                              problems: list[Problem]) -> BrokerMinIsr | None:
        """min.insync.replicas as the brokers report it (DescribeConfigs over --bootstrap-server), or None
        when no broker answered: then ZooKeeper and `default` (--min-isr-default) stand, and a FALLBACK
        problem says so. ZooKeeper keeps every level but the static one, so what a broker cannot answer
        is a warning (FALLBACK), never a read error."""
        said: list[Problem] = []
        got: BrokerMinIsr | None = None
        try:
            desc = self.kafka.describe_brokers()
            addresses = {b.id: (b.host, b.port) for b in desc.brokers}
            got = read_min_isr(self.kafka, topics, sorted(live), addresses, default, said)
        except KadminError as e:
            said.append(Problem("describe_configs", e.message))
        if got is not None and got.answered == 0:
            got = None
            said.insert(0, Problem("describe_configs", "no live broker answered DescribeConfigs"))
        for said_one in said:
            problems.append(Problem(FALLBACK, f"--bootstrap-server: {said_one.message}"
                                    + ("" if got is not None else f"; min.insync.replicas from ZooKeeper and "
                                       f"--min-isr-default ({default})")))
        return got

    def _broker_min_isr(
        self, problems: list[Problem]
    ) -> tuple[tuple[tuple[int, int], ...], tuple[int | None, str | None], dict[int, str]]:
        """The dynamic broker-level min.insync.replicas: ((id, value), ...) per broker, (the cluster
        default or None, why it is unreadable or None), and {id: why} for unreadable per-broker values.
        Children of /config/brokers that are neither <default> nor a broker id are not Kafka's: skipped."""
        try:
            children = self._children(CONFIG_BROKERS)
        except NoNodeError:
            return (), (None, None), {}
        entities: dict[str, int | None] = {}
        for c in children:
            if c == DEFAULT_ENTITY:
                entities[c] = None
            else:
                try:
                    entities[c] = znodes.broker_id_from_name(c)
                except znodes.ZnodeFormatError:
                    continue
        per_broker: list[tuple[int, int]] = []
        default: int | None = None
        bad_default: str | None = None
        bad: dict[int, str] = {}
        for path, node in self.get_many(f"{CONFIG_BROKERS}/{c}" for c in sorted(entities)):
            broker = entities[path.rsplit("/", 1)[1]]
            if node is None:
                continue
            try:
                raw = znodes.decode_config(node.data).get("min.insync.replicas")
                value = znodes.parse_min_isr(raw) if raw is not None else None
            except znodes.ZnodeFormatError as e:
                problems.append(Problem("invalid_znode", f"{path}: {e}"))
                if broker is None:
                    bad_default = f"{path}: {e}"
                else:
                    bad[broker] = f"{path}: {e}"
                continue
            if value is None:
                continue
            if broker is None:
                default = value
            else:
                per_broker.append((broker, value))
        return tuple(sorted(per_broker)), (default, bad_default), bad

    def _queued_for_deletion(self) -> frozenset[str]:
        """The topics queued in /admin/delete_topics (none when the znode does not exist)."""
        try:
            return frozenset(self._children(DELETE_TOPICS))
        except NoNodeError:
            return frozenset()

    def watch_states(
        self, keys: Sequence[tuple[str, int]], timeout: float | None
    ) -> Iterator[list[tuple[tuple[str, int], tuple[int, ...] | None]]]:
        """Watch some partition state znodes: yield every key's ISR now, then each change as it comes.

        Costs one read per change (a data watch per znode), never a rescan; after a reconnect or a
        new session every key is read again. An unreadable or missing state yields ISR None.
        """
        events: queue.Queue[str | None] = queue.Queue()
        by_path = {f"{TOPICS}/{t}/partitions/{p}/state": (t, p) for t, p in keys}

        def on_data(event: Any) -> None:
            events.put(getattr(event, "path", None))

        resync = self._resync_listener(lambda: events.put(RESYNC))
        deadline = None if timeout is None else time.monotonic() + timeout

        def read(paths: Iterable[str]) -> list[tuple[tuple[str, int], tuple[int, ...] | None]]:
            out = []
            for path, node in self.get_many(paths, watch=on_data):
                isr = None
                if node is not None:
                    try:
                        isr = znodes.decode_partition_state(node.data)["isr"]
                    except znodes.ZnodeFormatError:
                        isr = None
                out.append((by_path[path], isr))
            return out

        try:
            yield read(sorted(by_path))
            while True:
                wait = None if deadline is None else deadline - time.monotonic()
                if wait is not None and wait <= 0:
                    return
                try:
                    first = events.get(timeout=1.0 if wait is None else min(wait, 1.0))
                except queue.Empty:
                    continue
                batch = {first}
                while not events.empty():
                    batch.add(events.get_nowait())
                try:
                    if RESYNC in batch:
                        yield read(sorted(by_path))
                    else:
                        yield read(sorted(p for p in batch if p in by_path))
                except ClusterUnreachable:
                    events.put(RESYNC)  # re-read everything once connected again
                    self._sleep(min(0.1, max(deadline - time.monotonic(), 0.0)) if deadline is not None else 0.1)
        finally:
            self.zk.remove_listener(resync)

    def _resync_listener(self, on_reconnect: Callable[[], None]) -> Callable[[str], None]:
        """Call `on_reconnect` whenever the client is connected again after a drop or a new session."""
        last = [KazooState.CONNECTED]

        def on_state(state: str) -> None:
            if state == KazooState.CONNECTED and last[0] != KazooState.CONNECTED:
                on_reconnect()
            last[0] = state

        self.zk.add_listener(on_state)
        return on_state

    # ------------------------------------------------------------------ broker ids (host -> id mappings)
    def id_state(self, with_assignments: bool = True, progress: Progress | None = None) -> IdState:
        from kadmin.domain.ids import decode_mapping

        listing = self.list_brokers()
        registered: dict[int, str | None] = {}
        for b in listing.brokers:
            r = b.registration
            host = r.host if r is not None else None
            if host is None and r is not None and r.endpoints:
                host = znodes.parse_endpoint(r.endpoints[0])[1]
            registered[b.id] = host
        problems = list(listing.problems)
        mappings: dict[str, tuple[int, int]] = {}
        invalid: dict[str, tuple[str, int]] = {}
        # The version of /brokers/hosts and the mappings are read through ONE session (kazoo's), so
        # ZooKeeper's per-session ordering makes the mappings at least as new as the version: a claim
        # that wrote meanwhile makes our version-checked multi fail, and we read again. (The bulk
        # reader's session may sit on another, lagging ensemble member.)
        hosts_node = self.get(HOSTS)
        if hosts_node is not None:
            children = self._children(HOSTS)
            for path, node in self._get_batch([f"{HOSTS}/{h}" for h in sorted(children)], None):
                if node is None:
                    continue
                host = path.rsplit("/", 1)[1]
                try:
                    mappings[host] = (decode_mapping(node.data), node.stat.version)
                except ValueError as e:
                    problems.append(Problem("invalid_znode", f"{path}: {e}"))
                    invalid[host] = (str(e), node.stat.version)
        seqid = self.get(SEQID)
        assigned: dict[int, list[tuple[str, int]]] = {}
        if with_assignments:
            names = sorted(self._children(TOPICS))
            if progress:
                progress("topics", len(names), 0)
            for path, node in self.get_many(f"{TOPICS}/{t}" for t in names):
                if progress:
                    progress("topics", len(names), 1)
                if node is None:
                    continue
                topic = path.rsplit("/", 1)[1]
                try:
                    a = znodes.decode_topic(node.data)
                except znodes.ZnodeFormatError as e:
                    problems.append(Problem("invalid_znode", f"{path}: {e}"))
                    continue
                for p, replicas in a["partitions"].items():
                    for rid in set(replicas) | set(a["adding"].get(p, ())):
                        assigned.setdefault(rid, []).append((topic, p))
        return IdState(registered, mappings, seqid.stat.version if seqid else -1,
                       hosts_node.stat.version if hosts_node else -1, assigned, problems, invalid)

    def write_mapping(
        self, host: str, broker_id: int | None, *, hosts_version: int, mapping_version: int | None,
        seqid_version: int | None = None, seqid_steps: int = 1,
    ) -> None:
        """One ZooKeeper multi: bump /brokers/hosts (version-checked, so concurrent writers serialize),
        optionally consume a /brokers/seqid version (version-checked), then create, update or (with
        broker_id None) delete /brokers/hosts/<host>. Raises Contention when any check fails."""
        from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

        from kadmin.domain.ids import encode_mapping

        # A version of -1 would make ZooKeeper skip the check: when the caller saw either znode
        # missing, create it and make the caller read again (with real versions this time).
        if hosts_version < 0 or (seqid_version is not None and seqid_version < 0):
            for path in (HOSTS, SEQID):
                with contextlib.suppress(NodeExistsError):
                    self.zk.create(path, b"", makepath=True)
            raise Contention("created /brokers/hosts or /brokers/seqid")
        t = self.zk.transaction()
        t.set_data(HOSTS, b"", version=hosts_version)
        if seqid_version is not None:
            for step in range(seqid_steps):  # each setData bumps the version the next one checks
                t.set_data(SEQID, b"", version=seqid_version + step)
        path = f"{HOSTS}/{host}"
        if broker_id is None:
            t.delete(path, version=mapping_version if mapping_version is not None else -1)
        elif mapping_version is None:
            t.create(path, encode_mapping(broker_id))
        else:
            t.set_data(path, encode_mapping(broker_id), version=mapping_version)
        interrupts.arm()  # from here a Ctrl-C waits until the outcome is reported (kadmin/interrupts.py)
        try:
            results = t.commit()
        except Exception as e:  # noqa: BLE001
            interrupts.disarm()
            raise self._translate(HOSTS, e) from e
        errors = [r for r in results if isinstance(r, Exception)]
        if errors:
            interrupts.disarm()  # the multi failed as a whole: nothing was written
        if any(isinstance(r, (BadVersionError, NodeExistsError, NoNodeError)) for r in errors):
            raise Contention(", ".join(type(r).__name__ for r in errors))
        if errors:
            raise self._translate(HOSTS, next(e for e in errors if type(e).__name__ != "RolledBackError"))

    # ------------------------------------------------------------------ watch
    def watch_brokers(self, timeout: float | None) -> Iterator[WatchTick]:
        """Yield the broker generations now, then after every change, driven by ZooKeeper watches.

        After a reconnect (same session) or a new session, every registration is read again and
        the tick is marked `resynced`, so a broker that bounced while we were away is not missed.
        """
        events: queue.Queue[tuple[str, str | None]] = queue.Queue()

        def on_children(_event: Any) -> None:
            events.put(("children", None))

        def on_data(event: Any) -> None:
            events.put(("data", event.path if event is not None else None))

        on_state = self._resync_listener(lambda: events.put(("resync", None)))
        deadline = None if timeout is None else time.monotonic() + timeout
        gens: dict[int, Generation] = {}

        def full_read() -> dict[int, Generation]:
            ids, _ = self._ids(self._children(IDS, watch=on_children))
            out: dict[int, Generation] = {}
            for path, node in self.get_many((f"{IDS}/{i}" for i in ids), watch=on_data):
                if node is not None:
                    out[int(path.rsplit("/", 1)[1])] = Generation(node.stat.czxid, node.stat.mzxid)
            return out

        try:
            gens = full_read()
            yield WatchTick(dict(gens), reason="initial")
            need_resync = False
            while True:
                wait = None if deadline is None else deadline - time.monotonic()
                if wait is not None and wait <= 0:
                    return
                try:
                    kind, path = events.get(timeout=wait if wait is not None else 1.0)
                except queue.Empty:
                    continue
                batch = [(kind, path)]
                while True:
                    try:
                        batch.append(events.get_nowait())
                    except queue.Empty:
                        break
                try:
                    if need_resync or any(k == "resync" for k, _ in batch):
                        new = full_read()
                        need_resync = False
                        resynced = True
                    else:
                        new = dict(gens)
                        resynced = False
                        if any(k == "children" for k, _ in batch):
                            ids, _ = self._ids(self._children(IDS, watch=on_children))
                            for gone in set(new) - set(ids):
                                # re-read below: it may already be back (a fast bounce)
                                batch.append(("data", f"{IDS}/{gone}"))
                            for added in set(ids) - set(new):
                                batch.append(("data", f"{IDS}/{added}"))
                        paths = sorted({p for k, p in batch if k == "data" and p})
                        for p, node in self.get_many(paths, watch=on_data):
                            try:
                                bid = int(p.rsplit("/", 1)[1])
                            except ValueError:
                                continue
                            if node is None:
                                new.pop(bid, None)
                            else:
                                new[bid] = Generation(node.stat.czxid, node.stat.mzxid)
                except ClusterUnreachable:
                    need_resync = True  # the reconnect will queue a resync
                    continue
                if new != gens or resynced:
                    gens = new
                    yield WatchTick(dict(gens), resynced=resynced, reason="resync" if resynced else "change")
        finally:
            self.zk.remove_listener(on_state)
