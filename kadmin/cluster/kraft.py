"""KRaft clusters through kafka-python 3.x: DescribeCluster, DescribeQuorum, UnregisterBroker.

kafka-python's admin client bootstraps with Metadata, which KRaft controllers do not answer, and
its `describe_metadata_quorum()` mis-decodes DescribeQuorum v1 (KeyError 'error_message'). So
kadmin drives kafka-python's connection manager directly: one connection per address, ApiVersions
negotiated by kafka-python, each request sent at the highest version both sides speak.
"""

from __future__ import annotations

import base64
import contextlib
import queue
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from kadmin.cluster.base import ClusterDescription, KraftBroker, QuorumSetting, ShutdownReply
from kadmin.cluster.deadlines import after_deadline, wait_bound
from kadmin.cluster.kafka import ERROR_NAMES, bootstrap_reason, error_name, translate
from kadmin.domain.addresses import host_port
from kadmin.domain.quorum import QuorumState, ReplicaState
from kadmin.errors import AuthFailed, ClusterUnreachable, ConfigError, KadminError, NotFound, Rejected, Unsupported

METADATA_TOPIC = "__cluster_metadata"
NOT_LEADER_OR_FOLLOWER = 6
NOT_CONTROLLER = 41
BROKER_ID_NOT_REGISTERED = 102
MISMATCHED_ENDPOINT_TYPE = 114
ENDPOINT_BROKERS, ENDPOINT_CONTROLLERS = 1, 2
AUTH_ERRORS = {29, 30, 31, 58}  # topic/group/cluster authorization, SASL authentication


NOT_READY_RETRY = 0.1  # s: the longest kafka-python reconnect backoff a request waits out once (its first is ~50 ms)
ZERO_UUID_TEXT = "AAAAAAAAAAAAAAAAAAAAAA"  # Uuid.ZERO_UUID.toString(): Kafka's "unknown"/"unassigned"

CONTROLLED_SHUTDOWN, DESCRIBE_QUORUM = 7, 55  # API keys that tell a ZooKeeper-mode broker (zookeeper_mode)
GIVE_ZOOKEEPER = "give --zookeeper HOST:PORT[/chroot] (the brokers' zookeeper.connect)"
ZK_QUORUM = GIVE_ZOOKEEPER + " to describe its ZooKeeper ensemble"
ZK_UNREGISTER = "in ZooKeeper mode a registration goes when the broker's ZooKeeper session ends"
STAGGER_MAX = 2.0  # s: a read a bootstrap address has not answered by then goes to the next address too
# Requests that only read: a request to "any bootstrap address" is sent to the next one too when the first is
# slow to answer (the first answer wins). Any other request goes to one address at a time: a write is never in
# flight twice.
READS = frozenset({"ApiVersions", "Metadata", "DescribeCluster", "DescribeTopicPartitions", "DescribeConfigs",
                   "ListPartitionReassignments", "DescribeQuorum", "DescribeLogDirs", "ListConfigResources"})


T = TypeVar("T")


def all_at_once(calls: Sequence[Callable[[], T]]) -> list[T]:
    """Each call's result, in order, the calls made at once: the first on this thread, the others on threads of
    their own (requests to different brokers, each waiting on its own answer). Once all have ended: the first
    error in order, raised, else the results. Each request ends by its own deadline (KraftClient.bound())."""
    got: list[Any] = [None] * len(calls)
    failed: list[BaseException | None] = [None] * len(calls)

    def run(i: int) -> None:
        try:
            got[i] = calls[i]()
        except BaseException as e:  # noqa: BLE001 - raised on the caller's thread
            failed[i] = e

    threads = [threading.Thread(target=run, args=(i,), name="kadmin-kafka-reads", daemon=True)
               for i in range(1, len(calls))]
    for t in threads:
        t.start()
    if calls:
        run(0)
    for t in threads:
        t.join()
    for e in failed:
        if e is not None:
            raise e
    return got


def api_name(request: Any) -> str:
    """A request's API name, as Kafka names it: `DescribeCluster`."""
    return type(request).__name__.removesuffix("Request")


def seconds_text(value: float) -> str:
    """A duration as messages say it: `5`, `2.5`, `0.3` (seconds, to a tenth)."""
    return f"{round(value, 1):g}"


class NoAnswer(ClusterUnreachable):
    """A node that did not answer a request within the time it had (frozen, black-holed, or too slow)."""


def uuid_text(value: Any) -> str | None:
    """Kafka's `Uuid.toString()` (URL-safe base64 without padding) of a UUID, its 16 bytes or its
    text; text already in Kafka's form is kept. The zero Uuid prints as Kafka prints it,
    `AAAAAAAAAAAAAAAAAAAAAA`; None (kafka-python reads a zero Uuid off the wire as None) stays
    None. A caller whose contract says null for the zero Uuid checks for ZERO_UUID_TEXT itself.
    Metadata records use it too; the history pipeline's columnar reader (kraft_fast.py) formats the
    same text inline, for speed."""
    if value is None:
        return None
    if isinstance(value, uuid.UUID):
        raw = value.bytes
    elif isinstance(value, (bytes, bytearray)):
        raw = bytes(value)
    else:
        text = str(value)
        try:
            raw = uuid.UUID(text).bytes
        except ValueError:
            return text or None  # already Kafka's base64 form
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def endpoint_text(name: str, host: str, port: int) -> str:
    return f"{name}://[{host}]:{port}" if ":" in host else f"{name}://{host}:{port}"


class _Connection:
    """One kafka-python connection to one address, with no Metadata bootstrap.

    kafka-python internal: `kafka.net.manager.KafkaConnectionManager` and `kafka.net.selector.NetworkSelector`
    (not the documented KafkaAdminClient API), because KRaft controllers do not answer Metadata, so the
    admin client cannot bootstrap against `--bootstrap-controller`, and it ships no DescribeQuorum or
    UnregisterBroker. This keeps its TLS, SASL and ApiVersions negotiation. Tested with kafka-python
    3.0.12; the range is pinned in pyproject.toml.
    """

    def __init__(self, address: str, config: Mapping[str, Any], timeout: float, peer: str = "") -> None:
        from kafka.net.manager import KafkaConnectionManager
        from kafka.net.selector import NetworkSelector

        self.address = address
        self.peer = peer
        self.sasl = str(config.get("security_protocol", "")).startswith("SASL")
        self.timeout_ms = int(timeout * 1000)
        self.net = NetworkSelector(client_id="kadmin")
        self.manager = KafkaConnectionManager(self.net, bootstrap_servers=address, client_id="kadmin",
                                              request_timeout_ms=self.timeout_ms, **config)
        self.node_id = self.manager.cluster.bootstrap_brokers()[0].node_id
        self.net.start()

    def send(self, request: Any, timeout: float | None = None, who: str = "", since: float | None = None) -> Any:
        """Send `request` and return the answer, all of it (connecting, ApiVersions, SASL, the request) within
        `timeout` seconds (default: the connection's own): no answer by then is NoAnswer, naming `who` (the node:
        `broker 127.0.0.1:9092`), the request and how long the node has been silent (since `since`, when it had
        left an earlier request unanswered, else since this one was sent)."""
        from kafka import errors as ke

        budget = self.timeout_ms / 1000 if timeout is None else max(timeout, 0.001)
        ms = max(int(budget * 1000), 1)
        start = time.monotonic()
        end = start + budget

        async def go(req: Any) -> Any:
            try:
                conn = self.manager.get_connection(self.node_id, timeout_ms=ms, refresh_metadata_on_err=False)
            except ke.NodeNotReadyError:
                # Requests made at once on threads share this connection: another one's attempt failed a moment
                # ago, and kafka-python holds the next back for its first backoff (~50 ms). Once, after that, try
                # again, so this request fails with its own reason ("it refused the connection"), not "not ready".
                # A longer backoff is an address failing again and again: said at once, as before (a poll of a
                # broker that is down must not wait out kafka-python's growing backoff, up to 30 s).
                delay = self.manager.connection_delay(self.node_id)
                if delay > NOT_READY_RETRY or time.monotonic() + delay >= end:
                    raise
                await self.net.sleep(delay)
                conn = self.manager.get_connection(self.node_id, timeout_ms=ms, refresh_metadata_on_err=False)
            await conn  # TCP, ApiVersions (with the KIP-511 fallback), SASL
            left = max(int((end - time.monotonic()) * 1000), 1)
            return await conn.send_request(req, request_timeout_ms=left)

        async def bounded(req: Any) -> Any:  # the whole of it, whatever part waits: connecting or the answer
            return await self.manager.wait_for(self.manager.call_soon(go, req), ms)

        api = api_name(request)
        try:
            return self.manager.run(bounded, request)
        except (ke.KafkaError, OSError) as e:
            # why the connection failed (TLS verification, refused SASL credentials) before "cannot reach"
            why = bootstrap_reason([e], self.sasl)
            at = f"{self.peer} at {self.address}" if self.peer else self.address
            if why:
                raise why(at) from e
            if time.monotonic() >= end - 0.05 or isinstance(e, (ke.KafkaTimeoutError, ke.RequestTimedOutError)):
                silent = end - (start if since is None else min(since, start))
                raise NoAnswer(f"{who or at} did not answer {api} within {seconds_text(silent)} s") from e
            raise translate(e, self.address, api, peer=self.peer) from e

    def close(self) -> None:
        try:
            self.manager.close()
        finally:
            self.net.stop()
            self.net.close()


class KraftClient:
    """A KRaft cluster reached through brokers (`--bootstrap-server`) or controllers
    (`--bootstrap-controller`).

    Deadlines (docs/connecting.md): every request waits at most `timeout` (--connect-timeout) for its answer, and
    never past `deadline` (the command's own, on time.monotonic; None: it has none): once that has passed, a
    request gets LAST_LOOK. An address that has left a request unanswered for `timeout` is not waited on again by
    this client (the command): a request to it fails at once, saying so.

    A request to any bootstrap address (`send_any`) goes first to the current one (the address that answered the
    last such request; at first the first one given: a command reads one broker's metadata while it answers), then
    to the others in the order given, those with a request unanswered and those given up on last; all of them
    within one `timeout`. A read goes to the first; when it has not answered within a share of the time (at most
    STAGGER_MAX), to the next one too, and so on: the first answer wins and becomes the current address, and the
    others are left to end by themselves. A write goes to one address at a time: the current one gets all the time
    left, any other an equal share of it."""

    source = "DescribeCluster"  # where cluster_id() reads the id (ClusterIdentity)
    voters_are_nodes = True  # the quorum's voters are the cluster's controllers (QuorumSource)

    def __init__(self, bootstrap: str, config: Mapping[str, Any], timeout: float, controllers: bool,
                 peer: str = "", deadline: float | None = None) -> None:
        # kafka-python's network layer, and with it every protocol module kadmin sends (kafka.protocol.admin's
        # __init__ imports all of its modules), imported here, on the thread that makes the client: a read's first
        # import, taken on several threads at once (the log dirs of several brokers, a scan's pages from several
        # brokers), can deadlock on the package's module locks (_DeadlockError)
        import kafka.net.manager  # noqa: F401

        from kadmin.cluster.kafka_package import serialize_decoder_codegen

        serialize_decoder_codegen()  # the connections' I/O threads decode at once: see there

        self.addresses = [a.strip() for a in bootstrap.split(",") if a.strip()]
        self.config = dict(config)
        self.timeout = timeout
        self.deadline = deadline
        self.controllers = controllers
        self.peer = peer  # who is at the addresses, for messages ("the controller")
        self._conns: dict[str, _Connection] = {}
        self._lock = threading.Lock()  # reads race on threads: the state below is shared
        self._asked: dict[str, float] = {}  # address -> since when it has a request unanswered (none: absent)
        self._gave_up: dict[str, str] = {}  # address -> why it is not waited on again (it did not answer in time)
        self._current: str | None = None  # the bootstrap address that answered send_any's last request

    # ------------------------------------------------------------------ deadlines and the request path
    def bound(self) -> float:
        """How long one request may wait for its answer now (kadmin/cluster/deadlines.py): `timeout`, never past the
        deadline (then LAST_LOOK, and OutOfTime once the last look's time is up)."""
        return wait_bound(self.timeout, self.deadline, time.monotonic())

    def _who(self, address: str) -> str:
        if self.peer:
            return f"{self.peer} at {address}"
        return f"{'controller' if self.controllers else 'broker'} {address}"

    def _conn(self, address: str) -> _Connection:  # one connection per address, reused
        with self._lock:
            if address not in self._conns:
                self._conns[address] = _Connection(address, self.config, self.timeout, self.peer)
            return self._conns[address]

    def _send(self, address: str, request: Any, until: float | None = None) -> Any:
        """Send to `address` within bound() (and `until`, time.monotonic()), minding what it did before: an
        address that did not answer in time is not asked again, and one with a request unanswered since t has
        until t + timeout, whatever this request's own time."""
        now = time.monotonic()
        api = api_name(request)
        budget = self.bound() if until is None else min(self.bound(), until - now)
        with self._lock:
            why = self._gave_up.get(address)
            since = self._asked.get(address)
            if why is None and since is not None and since + self.timeout <= now:
                why = f"it has not answered for {seconds_text(now - since)} s"
            if why is None and since is not None:
                budget = min(budget, since + self.timeout - now)
            if why is None:
                self._asked.setdefault(address, now)
        if why is not None:
            raise NoAnswer(f"{self._who(address)} was not asked {api}: {why}")
        conn = self._conn(address)
        try:
            resp = conn.send(request, budget, self._who(address), since)
        except NoAnswer as e:
            with self._lock:
                if self._asked.get(address, now) + self.timeout <= time.monotonic() + 0.05:
                    # "broker X did not answer DescribeLogDirs within 5 s" -> "it did not answer ..."
                    self._gave_up.setdefault(address, "it" + e.message.removeprefix(self._who(address)))
            raise
        except BaseException:
            with self._lock:  # it answered, if only with an error (refused, reset, TLS): not silent
                if self._asked.get(address) == now:
                    del self._asked[address]
            raise
        with self._lock:
            self._asked.pop(address, None)
            self._gave_up.pop(address, None)
        return resp

    def send_to(self, address: str, request: Any, until: float | None = None) -> Any:
        """Send `request` to the node at `address` (not a bootstrap address: a broker's advertised one), within
        bound() and `until` (time.monotonic())."""
        try:
            return self._send(address, request, until)
        except NoAnswer as e:
            raise self._late(e) from None

    def _late(self, e: ClusterUnreachable) -> ClusterUnreachable:
        """`e` (no answer in time), saying so when the wait was cut short by the command's deadline."""
        said = after_deadline(self.deadline, time.monotonic())
        return e if not said or said in e.message else NoAnswer(e.message + said)

    def send_each(self, requests: Mapping[str, Any]) -> dict[str, Any]:
        """Send each request to its node's address, all at once (a thread each), within one bound(): {address: the
        answer, or the KadminError it failed with}. Nodes that do not answer cost one wait together, not one each
        (DescribeLogDirs and DescribeConfigs at every broker)."""
        end = time.monotonic() + self.bound()
        out: dict[str, Any] = {}

        def ask(address: str, request: Any) -> None:
            try:
                out[address] = self._send(address, request, end)
            except BaseException as e:  # noqa: BLE001 - handed to the caller's thread
                out[address] = e

        if len(requests) == 1:
            ((address, request),) = requests.items()
            ask(address, request)
        else:
            threads = [threading.Thread(target=ask, args=item, name="kadmin-kafka-request", daemon=True)
                       for item in requests.items()]
            for t in threads:
                t.start()
            for t in threads:  # each request ends by `end` by itself: the margin is thread scheduling only
                t.join(max(end - time.monotonic(), 0.0) + 0.5)
        for address, request in requests.items():
            got = out.get(address)
            if got is None:
                out[address] = self._late(NoAnswer(f"{self._who(address)} did not answer {api_name(request)} in time"))
            elif isinstance(got, NoAnswer):
                out[address] = self._late(got)
            elif isinstance(got, BaseException) and not isinstance(got, KadminError):
                raise got
        return out

    def preferred(self, addresses: list[str] | None = None) -> list[str]:
        """`addresses` (default: the bootstrap addresses) in the order to ask them: the current one, the others in
        the order given, those with a request unanswered, those given up on."""
        addresses = self.addresses if addresses is None else addresses
        with self._lock:
            rank = {a: 0 if a == self._current else 3 if a in self._gave_up else 2 if a in self._asked else 1
                    for a in addresses}
        return sorted(addresses, key=lambda a: rank[a])  # stable: the order given within a rank

    def send_any(self, make: Any, prefer: str | None = None) -> tuple[str, Any]:
        """Send to the bootstrap addresses until one answers (a new request object each time), all within one
        bound(): a read to the next address too when the one before has not answered within a share of the time,
        a write to one address at a time. A node that answers with an error (not an unreachable one) is the
        answer. `prefer`: the bootstrap address to ask first (reads spread over the brokers), else preferred()'s
        order."""
        first = make()
        order = self.preferred()
        if prefer is not None:
            order = [prefer, *(a for a in order if a != prefer)]
        end = time.monotonic() + self.bound()
        if api_name(first) in READS and len(order) > 1:
            return self._race(order, first, make, end)
        failures: list[ClusterUnreachable] = []
        for i, address in enumerate(order):
            left = end - time.monotonic()
            if left <= 0:
                break
            share = left if address == self._current else left / (len(order) - i)
            try:
                resp = self._send(address, first if i == 0 else make(), time.monotonic() + share)
            except ClusterUnreachable as e:
                failures.append(e)
                continue
            self._current = address
            return address, resp
        raise self._none_answered(failures)

    def _race(self, order: list[str], first: Any, make: Any, end: float) -> tuple[str, Any]:
        """A read to the addresses in `order`, the next one started when those started have all failed or none
        has answered within `stagger`; the first answer wins (the others end by themselves, on daemon threads)."""
        answers: queue.Queue[tuple[str, Any, BaseException | None]] = queue.Queue()
        budget = end - time.monotonic()
        stagger = min(STAGGER_MAX, budget / len(order))

        def ask(address: str, request: Any) -> None:
            try:
                answers.put((address, self._send(address, request, end), None))
            except BaseException as e:  # noqa: BLE001 - handed to the caller's thread
                answers.put((address, None, e))

        failures: list[ClusterUnreachable] = []
        done: set[str] = set()
        started = pending = 0
        next_at = time.monotonic()
        while True:
            now = time.monotonic()
            if started < len(order) and (pending == 0 or now >= next_at):
                request = first if started == 0 else make()
                threading.Thread(target=ask, args=(order[started], request), name="kadmin-kafka-request",
                                 daemon=True).start()
                started += 1
                pending += 1
                next_at = now + stagger
                continue
            if pending == 0:
                raise self._none_answered(failures)
            until = end if started == len(order) else min(end, next_at)
            try:
                address, resp, error = answers.get(timeout=max(until - now, 0.0))
            except queue.Empty:
                if time.monotonic() >= end:  # those still in flight end by themselves
                    failures += [NoAnswer(f"{self._who(a)} did not answer {api_name(first)} within "
                                          f"{seconds_text(budget)} s") for a in order[:started] if a not in done]
                    raise self._none_answered(failures) from None
                continue
            pending -= 1
            done.add(address)
            if error is None:
                self._current = address
                return address, resp
            if not isinstance(error, ClusterUnreachable):
                raise error
            failures.append(error)

    def _none_answered(self, failures: list[ClusterUnreachable]) -> ClusterUnreachable:
        said = "; ".join(dict.fromkeys(f.message for f in failures)) or "no address left to ask"
        return ClusterUnreachable(f"no bootstrap {'controller' if self.controllers else 'server'} answered "
                                  f"({', '.join(self.addresses)}): {said}"
                                  f"{after_deadline(self.deadline, time.monotonic())}")

    def send_to_controller(self, make: Any, not_controller: Callable[[Any], bool] | None = None) -> tuple[str, Any]:
        """Send a request only the controller serves (ListPartitionReassignments, ...) where Kafka takes it: a
        KRaft broker forwards it to the quorum, a ZooKeeper-mode broker that is not the controller answers
        NOT_CONTROLLER. So it goes to the first bootstrap address, and on NOT_CONTROLLER to the controller that
        Metadata names (as Kafka's admin client does), once. `not_controller` tells a NOT_CONTROLLER answer
        (default: the answer's own error code; ZooKeeper-mode ElectLeaders says it per partition)."""
        address, resp = self.send_any(make)
        refused = not_controller or (lambda r: getattr(r, "error_code", 0) == NOT_CONTROLLER)
        if not refused(resp):
            return address, resp
        from kafka.protocol.metadata.metadata import MetadataRequest

        _, meta = self.send_any(lambda: MetadataRequest(topics=[], allow_auto_topic_creation=False))
        nodes = {int(b.node_id): host_port(str(b.host), int(b.port)) for b in meta.brokers}
        controller = nodes.get(int(meta.controller_id))
        if controller is None:
            return address, resp  # no controller now: NOT_CONTROLLER stands
        return controller, self.send_to(controller, make())

    def close(self) -> None:
        """Close every connection (what the addresses did is kept: a later request of this command minds it)."""
        with self._lock:
            conns, self._conns = list(self._conns.values()), {}
        for c in conns:
            with contextlib.suppress(Exception):  # closing must never mask the result
                c.close()

    # ------------------------------------------------------------------ DescribeCluster
    def describe_cluster(self) -> ClusterDescription:
        from kafka.protocol.admin.cluster import DescribeClusterRequest

        def make() -> Any:
            kw: dict[str, Any] = {"include_cluster_authorized_operations": False}
            if self.controllers:
                kw["endpoint_type"] = ENDPOINT_CONTROLLERS
                return DescribeClusterRequest(min_version=1, **kw)
            return DescribeClusterRequest(include_fenced_brokers=True, **kw)

        address, resp = self.send_any(make)
        if resp.error_code == MISMATCHED_ENDPOINT_TYPE and not self.controllers:
            raise ConfigError(f"--bootstrap-server {address} is a controller (it answered DescribeCluster with "
                              "MISMATCHED_ENDPOINT_TYPE): give the brokers' addresses, or --bootstrap-controller for "
                              "what the controllers serve (quorum, cluster id, unregister)",
                              code="bootstrap_server_is_a_controller")
        if resp.error_code == MISMATCHED_ENDPOINT_TYPE:
            raise ConfigError(f"--bootstrap-controller {address} is a broker (it answered DescribeCluster with "
                              "MISMATCHED_ENDPOINT_TYPE): give the controllers' addresses (their CONTROLLER "
                              "listeners, controller.quorum.bootstrap.servers), or --bootstrap-server",
                              code="bootstrap_controller_is_a_broker")
        if resp.error_code:
            raise self.rejected(resp.error_code, getattr(resp, "error_message", None), address, "DescribeCluster")
        version = int(resp.version)
        # Below v2 (Kafka 3.x) a broker lists only the brokers that are alive, i.e. unfenced (KRaft
        # metadata cache's getAliveBrokerNodes), and controllers list themselves: a listed node is
        # unfenced. A fenced broker is simply absent there.
        brokers = [
            KraftBroker(int(b.broker_id), str(b.host), int(b.port), b.rack,
                        bool(b.is_fenced) if version >= 2 else False)
            for b in resp.brokers
        ]
        return ClusterDescription(resp.cluster_id, int(resp.controller_id), brokers, version)

    def cluster_id(self) -> str | None:
        return self.describe_cluster().cluster_id

    def describe_brokers(self) -> ClusterDescription:
        """The brokers' registrations (with fenced ones from DescribeCluster v2). Through controllers it
        asks for the BROKER endpoint type; the controllers refuse (MISMATCHED_ENDPOINT_TYPE, KIP-919: they
        describe only themselves), and that is a ConfigError naming --bootstrap-server."""
        if not self.controllers:
            return self.describe_cluster()
        from kafka.protocol.admin.cluster import DescribeClusterRequest

        address, resp = self.send_any(lambda: DescribeClusterRequest(
            min_version=1, include_cluster_authorized_operations=False, endpoint_type=ENDPOINT_BROKERS,
            include_fenced_brokers=True))
        if resp.error_code == MISMATCHED_ENDPOINT_TYPE:
            raise ConfigError(f"the controllers (--bootstrap-controller) do not describe the brokers: {address} "
                              "answered DescribeCluster with MISMATCHED_ENDPOINT_TYPE (KIP-919: a controller lists "
                              "only the controllers); use --bootstrap-server", code="controllers_list_no_brokers")
        if resp.error_code:
            raise self.rejected(resp.error_code, getattr(resp, "error_message", None), address, "DescribeCluster")
        version = int(resp.version)
        brokers = [KraftBroker(int(b.broker_id), str(b.host), int(b.port), b.rack,
                               bool(b.is_fenced) if version >= 2 else False) for b in resp.brokers]
        return ClusterDescription(resp.cluster_id, int(resp.controller_id), brokers, version)

    # ------------------------------------------------------------------ the kind of cluster
    def zookeeper_mode(self) -> str | None:
        """The bootstrap address that answered as a broker of a ZooKeeper-mode cluster, or None (a KRaft cluster,
        or none answered in time). ApiVersions tells: a ZooKeeper-mode broker serves ControlledShutdown (key 7,
        listener zkBroker) and not DescribeQuorum (key 55); a KRaft broker the opposite, and a Kafka 3.x KRaft
        controller, which also lists ControlledShutdown (for the migration), serves DescribeQuorum."""
        from kafka.protocol.metadata.api_versions import ApiVersionsRequest

        if self.controllers:
            return None
        try:
            address, resp = self.send_any(lambda: ApiVersionsRequest(client_software_name="kadmin",
                                                                     client_software_version="0"))
        except KadminError:
            return None
        keys = {int(k.api_key) for k in getattr(resp, "api_keys", None) or []}
        return address if CONTROLLED_SHUTDOWN in keys and DESCRIBE_QUORUM not in keys else None

    def zookeeper_mode_error(self, needs: str, instead: str) -> ConfigError | None:
        """The exit-3 error when the bootstrap servers are brokers of a ZooKeeper-mode cluster, else None: what
        the command `needs` that such a cluster serves only through ZooKeeper, and what to pass `instead`."""
        address = self.zookeeper_mode()
        if address is None:
            return None
        return ConfigError(f"{address} is a broker of a ZooKeeper-mode cluster (it serves ControlledShutdown, not "
                           f"DescribeQuorum), and {needs}; {instead}", code="zookeeper_mode")

    def _unless_zookeeper_mode(self, e: KadminError, needs: str, instead: str) -> None:
        """Raise zookeeper_mode_error instead of `e` when `e` says the request is not served and the cluster is a
        ZooKeeper-mode one; else return (the caller raises `e`)."""
        better = self.zookeeper_mode_error(needs, instead) if e.code == "unsupported_version" else None
        if better is not None:
            raise better from e

    # ------------------------------------------------------------------ DescribeQuorum
    def describe_quorum(self) -> tuple[QuorumState, int]:
        try:
            return self._describe_quorum()
        except KadminError as e:
            self._unless_zookeeper_mode(e, "such a cluster has no KRaft metadata quorum", ZK_QUORUM)
            raise

    def _describe_quorum(self) -> tuple[QuorumState, int]:
        cluster = self.describe_cluster()
        addresses = self.preferred()  # those that answered first, those that did not last
        if self.controllers:
            # Only the raft leader answers DescribeQuorum; DescribeCluster named it.
            leader = next((b for b in cluster.brokers if b.id == cluster.controller_id), None)
            if leader is not None:
                at = host_port(leader.host, leader.port)
                addresses = [at] + [a for a in addresses if a != at]
        last_error: KadminError | None = None
        end = time.monotonic() + self.bound()  # all of them within one bound, as send_any
        for address in addresses:
            try:
                resp = self.send_to(address, _quorum_request(), end)
            except ClusterUnreachable as e:
                last_error = e
                continue
            now_ms = int(time.time() * 1000)
            try:
                return self._quorum_state(resp, cluster.cluster_id, address), now_ms
            except Rejected as e:
                if e.code != "not_leader_or_follower":
                    raise
                last_error = e
        assert last_error is not None
        raise last_error

    def quorum_fetch_timeout(self) -> QuorumSetting:
        """The controllers' controller.quorum.fetch.timeout.ms (else a broker's), with where it was read or why it
        could not be (kadmin/cluster/quorum_config.py)."""
        from kadmin.cluster.quorum_config import read_fetch_timeout

        return read_fetch_timeout(self)

    def _quorum_state(self, resp: Any, cluster_id: str | None, address: str) -> QuorumState:
        version = int(resp.version)
        if resp.error_code:
            raise self.rejected(resp.error_code, getattr(resp, "error_message", None) if version >= 2 else None,
                              address, "DescribeQuorum")
        topics = [t for t in resp.topics if t.topic_name == METADATA_TOPIC]
        parts = [p for t in topics for p in t.partitions if p.partition_index == 0]
        if len(topics) != 1 or len(parts) != 1:
            raise KadminError(f"{address}: DescribeQuorum answered without {METADATA_TOPIC}-0")
        p = parts[0]
        if p.error_code:
            msg = getattr(p, "error_message", None) if version >= 2 else None
            raise self.rejected(p.error_code, msg, address, "DescribeQuorum")
        endpoints: dict[int, tuple[str, ...]] = {}
        if version >= 2:
            for n in resp.nodes:
                endpoints[int(n.node_id)] = tuple(endpoint_text(ls.name, ls.host, int(ls.port)) for ls in n.listeners)

        def replica(r: Any) -> ReplicaState:
            def ts(name: str) -> int | None:
                if version < 1:
                    return None
                v = int(getattr(r, name))
                return None if v < 0 else v

            rid = int(r.replica_id)
            # JSON's directory_id is null for a replica without one (the zero Uuid), as in
            # kafka-metadata-quorum 3.9's "directoryId": null; the text renderer prints Kafka's zeros.
            directory_id = uuid_text(r.replica_directory_id) if version >= 2 else None
            return ReplicaState(
                id=rid,
                log_end_offset=int(r.log_end_offset),
                directory_id=None if directory_id == ZERO_UUID_TEXT else directory_id,
                last_fetch_timestamp=ts("last_fetch_timestamp"),
                last_caught_up_timestamp=ts("last_caught_up_timestamp"),
                endpoints=endpoints.get(rid, ()),
            )

        return QuorumState(
            leader_id=int(p.leader_id),
            leader_epoch=int(p.leader_epoch),
            high_watermark=int(p.high_watermark),
            voters=tuple(replica(r) for r in p.current_voters),
            observers=tuple(replica(r) for r in p.observers),
            cluster_id=cluster_id,
        )

    # ------------------------------------------------------------------ UnregisterBroker
    def unregister_broker(self, broker_id: int) -> None:
        from kadmin.cluster.messages import UnregisterBrokerRequest

        address, resp = self.send_any(lambda: UnregisterBrokerRequest(broker_id=broker_id))
        if resp.error_code == BROKER_ID_NOT_REGISTERED:  # an unknown id: exit 1 as everywhere, not "rejected"
            raise NotFound(f"UnregisterBroker at {address}: {error_name(resp.error_code)}: broker {broker_id} is not "
                           "registered", code="broker_id_not_registered")
        if resp.error_code:
            raise self.rejected(resp.error_code, resp.error_message, address, "UnregisterBroker")

    @staticmethod
    def rejected(code: int, message: str | None, address: str, api: str) -> KadminError:
        """The error for an error code in an answer: AuthFailed for an authorization error, else Rejected."""
        detail = f"{api} at {address}: {error_name(code)}" + (f" ({message})" if message else "")
        if code in AUTH_ERRORS:
            return AuthFailed(detail)
        if code == NOT_LEADER_OR_FOLLOWER:
            return Rejected(f"{detail}: this node is not the quorum leader", code="not_leader_or_follower")
        return Rejected(detail, code=ERROR_NAMES.get(code, "error").lower())


class ControllerConnection:
    """ControlledShutdown (API key 7) to the active controller of a ZooKeeper-mode cluster, over the one
    Kafka client (KraftClient's connection to that one address)."""

    def __init__(self, address: str, node_id: int, config: Mapping[str, Any], timeout: float,
                 deadline: float | None = None) -> None:
        self.node_id = node_id
        self.address = address
        self.client = KraftClient(address, config, timeout, controllers=False, peer="the controller",
                                  deadline=deadline)

    def controlled_shutdown(self, broker_id: int, broker_epoch: int) -> ShutdownReply:
        """Send ControlledShutdown at the highest version both sides speak (v1-v3; v2+ carry the epoch)."""
        from kadmin.cluster.messages import ControlledShutdownRequest

        try:
            resp = self._send(ControlledShutdownRequest(broker_id=broker_id, broker_epoch=broker_epoch))
        except Rejected as e:
            if e.code != "unsupported_version":
                raise
            raise Unsupported(f"the broker at {self.address} does not support ControlledShutdown (Kafka 4.0 "
                              "removed it; KRaft clusters shut down through BrokerHeartbeat)",
                              code="unsupported_version") from e
        remaining = [(p.topic_name, p.partition_index) for p in resp.remaining_partitions]
        return ShutdownReply(int(resp.version), int(resp.error_code), remaining)

    def _send(self, request: Any) -> Any:
        """Send to the controller, retrying a refused connection within the timeout: a ZooKeeper-mode broker
        registers (and may be elected controller) before its listeners accept connections, so a controller
        that has just started refuses for a moment. A refused connection sent nothing, so a retry is safe.
        All of it within one request's time (KraftClient.bound())."""
        deadline = time.monotonic() + self.client.bound()
        pause = 0.05
        while True:
            try:
                return self.client.send_to(self.address, request, deadline)
            except ClusterUnreachable as e:
                if not _refused(e) or time.monotonic() + pause >= deadline:
                    raise
            self.client.close()  # a new connection next time, without kafka-python's reconnect backoff
            time.sleep(pause)  # the listener is not open yet: nothing to wait on but time
            pause = min(pause * 2, 1.0)

    def close(self) -> None:
        self.client.close()


def _refused(e: BaseException) -> bool:
    """Whether a connection failed because nothing listens at the address (ECONNREFUSED)."""
    cause: BaseException | None = e
    while cause is not None:
        if isinstance(cause, ConnectionRefusedError) or "ECONNREFUSED" in str(cause):
            return True
        cause = cause.__cause__ or cause.__context__
    return False


def _quorum_request() -> Any:
    from kafka.protocol.admin.cluster import DescribeQuorumRequest

    t = DescribeQuorumRequest.TopicData
    return DescribeQuorumRequest(topics=[t(topic_name=METADATA_TOPIC, partitions=[t.PartitionData(partition_index=0)])])
