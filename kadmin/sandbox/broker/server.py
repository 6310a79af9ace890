"""An emulated ZooKeeper-mode Kafka broker speaking the Kafka protocol (ApiVersions, Metadata,
ControlledShutdown), backed by the REAL ZooKeeper state of the sandbox; as the controller it also carries out
what Kafka's admin znodes ask (/admin/reassign_partitions, /admin/preferred_replica_election: `controller.py`).

What it is for: `kadmin brokers shutdown` sends ControlledShutdown (API key 7) to the controller
of a ZooKeeper-mode cluster. To rehearse that in the sandbox and to test it, this server answers
exactly as Kafka 3.9's ZK-mode `KafkaController.doControlledShutdown` does (`controller.py`),
reading and writing the znodes that `Fleet` keeps (`/controller`, `/controller_epoch`,
`/brokers/ids/*`, the topic and partition-state znodes). kafka-python's `KafkaAdminClient`
bootstraps against it (ApiVersions with the KIP-511 fallback, then Metadata), so kadmin's real
client code path is exercised. The wire codec (`codec.py`) is independent of kafka-python and kio.

Emulation boundaries (a single process has no replicas, logs or controller channel): see
`controller.py` for the controller's; besides, no authorizer: every operation is allowed (Kafka's
behaviour without `authorizer.class.name`); Metadata is served from ZooKeeper directly (a real
broker serves it from its metadata cache, which the controller keeps in sync with those znodes);
`auto.create.topics.enable` is false.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import struct
import threading
from collections.abc import Awaitable, Callable, Coroutine
from concurrent.futures import Future
from typing import Any, TypeVar

from kadmin.domain import znodes
from kadmin.sandbox.broker.codec import (
    API_VERSIONS,
    CONTROLLED_SHUTDOWN,
    LEADER_NOT_AVAILABLE,
    MAX_FRAME,
    METADATA,
    NONE,
    REPLICA_NOT_AVAILABLE,
    UNKNOWN_TOPIC_OR_PARTITION,
    UNSUPPORTED_VERSION,
    DecodeError,
    Reader,
    RecordedRequest,
    Writer,
    api_versions_body,
    controlled_shutdown_body,
    read_body,
    read_header,
    request_header_version,
    response_header_version,
)
from kadmin.sandbox.broker.controller import Controller, LiveBroker, Partition
from kadmin.sandbox.zkwire import ZkSession

log = logging.getLogger(__name__)
T = TypeVar("T")
_I32 = struct.Struct(">i")  # the frame length

INT32_MIN = -(2**31)  # "authorized operations not requested"
# Utils.to32BitField of AclEntry.supportedOperations (no authorizer: all of them are allowed).
# TOPIC: READ 3, WRITE 4, CREATE 5, DELETE 6, ALTER 7, DESCRIBE 8, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11.
TOPIC_OPERATIONS = sum(1 << op for op in (3, 4, 5, 6, 7, 8, 10, 11))
# CLUSTER: CREATE 5, ALTER 7, DESCRIBE 8, CLUSTER_ACTION 9, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11, IDEMPOTENT_WRITE 12.
CLUSTER_OPERATIONS = sum(1 << op for op in (5, 7, 8, 9, 10, 11, 12))
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})


BeforeRequest = Callable[[int, int], Awaitable[None] | None]


class EmulatedBroker:
    """One ZooKeeper-mode broker (node `node_id`) serving ApiVersions, Metadata and ControlledShutdown.

    All methods are coroutines on one event loop; see `ThreadedBroker` for blocking use.
    """

    def __init__(
        self,
        node_id: int,
        zk_hosts: list[tuple[str, int]],
        chroot: str = "",
        host: str = "127.0.0.1",
        port: int = 0,
        listener: str = "PLAINTEXT",
        ssl_context: ssl.SSLContext | None = None,
        controlled_shutdown_versions: tuple[int, int] | None = (0, 3),
        before_request: BeforeRequest | None = None,
        zk_timeout_ms: int = 6000,
        zk_session: ZkSession | None = None,
    ) -> None:
        self.node_id = node_id
        self.zk_hosts = list(zk_hosts)
        self.chroot = chroot
        self.host = host
        self.port = port
        self.listener = listener
        self.ssl_context = ssl_context
        self.before_request = before_request
        self.zk_timeout_ms = zk_timeout_ms
        # The advertised ranges (ApiVersions' answer). Metadata stops at v8, the last non-flexible
        # version: kafka-python 3.0.12 negotiates v8 when offered 0-8.
        self.api_versions: dict[int, tuple[int, int]] = {METADATA: (0, 8), API_VERSIONS: (0, 3)}
        if controlled_shutdown_versions is not None:
            lo, hi = controlled_shutdown_versions
            if not 0 <= lo <= hi <= 3:
                raise ValueError(f"ControlledShutdown versions {lo}-{hi}: Kafka defines 0-3")
            self.api_versions[CONTROLLED_SHUTDOWN] = (lo, hi)
        self.requests: list[RecordedRequest] = []
        # A shared session (the sandbox serves many brokers from one process) is not ours to close.
        self._zk: ZkSession | None = zk_session
        self._owns_zk = zk_session is None
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.StreamWriter] = set()
        self.controller = Controller(node_id, lambda: self.zk)

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> int:
        """Open the ZooKeeper session and listen; returns the bound port."""
        if self._zk is None:
            self._zk = await ZkSession.open(self.zk_hosts, chroot=self.chroot, timeout_ms=self.zk_timeout_ms)
        self._server = await asyncio.start_server(self._serve, self.host, self.port, ssl=self.ssl_context)
        self.port = int(self._server.sockets[0].getsockname()[1])
        self.controller.start_watching()  # /controller and the admin znodes, acted on while it is the controller
        log.info("emulated broker %d listening on %s:%d (%s)", self.node_id, self.host, self.port, self.listener)
        return self.port

    async def stop(self) -> None:
        await self.controller.stop_watching()
        if self._server is not None:
            self._server.close()
            for w in list(self._connections):
                w.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
            self._server = None
        if self._zk is not None and self._owns_zk:
            await self._zk.close()
            self._zk = None

    @property
    def zk(self) -> ZkSession:
        if self._zk is None:
            raise RuntimeError("EmulatedBroker is not started")
        return self._zk

    # ------------------------------------------------------------------ connections
    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One connection: requests are handled one at a time, in order (Kafka mutes a channel
        while its request is in flight)."""
        self._connections.add(writer)
        try:
            while True:
                try:
                    (size,) = _I32.unpack(await reader.readexactly(4))
                except asyncio.IncompleteReadError:
                    return  # the client closed the connection
                if not 8 <= size <= MAX_FRAME:
                    log.warning("broker %d: frame of %d bytes: closing the connection", self.node_id, size)
                    return
                frame = await reader.readexactly(size)
                response = await self._handle_frame(frame)
                if response is None:
                    return  # as Kafka does with a request it cannot parse or serve: close
                writer.write(_I32.pack(len(response)) + response)
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError) as e:
            log.debug("broker %d: connection ended: %s", self.node_id, e)
        except Exception:  # noqa: BLE001 - e.g. ZooKeeper unreachable while serving Metadata: close
            log.exception("broker %d: request failed; closing the connection", self.node_id)
        finally:
            self._connections.discard(writer)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _handle_frame(self, frame: bytes) -> bytes | None:
        """Decode, record, call the hook, handle; returns the response (header + body) or None to close."""
        r = Reader(frame)
        api_key, api_version, correlation_id = r.int16(), r.int16(), r.int32()
        supported = self.api_versions.get(api_key)
        if api_key == API_VERSIONS and supported is not None and api_version > supported[1]:
            return await self._unsupported_api_versions(r, api_version, correlation_id)
        if supported is None or not supported[0] <= api_version <= supported[1]:
            log.warning("broker %d: unsupported api_key %d v%d: closing", self.node_id, api_key, api_version)
            return None
        header_version = request_header_version(api_key, api_version)
        try:
            header = read_header(r, api_key, api_version, correlation_id, header_version)
            body = read_body(r, api_key, api_version)
            r.expect_end()
        except DecodeError as e:
            log.warning("broker %d: malformed api_key %d v%d request: %s", self.node_id, api_key, api_version, e)
            return None
        self.requests.append(RecordedRequest(api_key, api_version, header, body))
        await self._call_hook(api_key, api_version)
        if api_key == API_VERSIONS:
            payload = api_versions_body(api_version, NONE, self.api_versions)
        elif api_key == METADATA:
            payload = await self._metadata(api_version, body)
        else:
            error, remaining = await self.controller.controlled_shutdown(body["broker_id"], body["broker_epoch"])
            payload = controlled_shutdown_body(api_version, error, remaining)
        head = Writer().int32(correlation_id)
        if response_header_version(api_key, api_version) >= 1:
            head.empty_tagged_fields()
        return head.getvalue() + payload

    async def _call_hook(self, api_key: int, api_version: int) -> None:
        if self.before_request is not None:
            result = self.before_request(api_key, api_version)
            if result is not None:
                await result

    # ------------------------------------------------------------------ ApiVersions
    async def _unsupported_api_versions(self, r: Reader, api_version: int, correlation_id: int) -> bytes:
        """KIP-511: a newer ApiVersions than supported gets UNSUPPORTED_VERSION in a v0 body whose
        api_keys holds only ApiVersions' own range (ApiVersionsRequest.getErrorResponse); the
        client retries with the highest version in it."""
        header: dict[str, Any] = {
            "api_key": API_VERSIONS,
            "api_version": api_version,
            "correlation_id": correlation_id,
            "header_version": 2,  # every ApiVersions version after 3 will be flexible
        }
        with contextlib.suppress(DecodeError):  # best effort: the rest is not needed to answer
            header["client_id"] = r.nullable_string()
        self.requests.append(RecordedRequest(API_VERSIONS, api_version, header, {}))
        await self._call_hook(API_VERSIONS, api_version)
        ranges = {API_VERSIONS: self.api_versions[API_VERSIONS]}
        return Writer().int32(correlation_id).getvalue() + api_versions_body(0, UNSUPPORTED_VERSION, ranges)

    # ------------------------------------------------------------------ Metadata
    def _endpoint(self, broker: LiveBroker) -> tuple[str, int] | None:
        """The broker's endpoint on this server's listener (a broker without one is not listed)."""
        if broker.registration is None:
            return None
        for ep in broker.registration.endpoints:
            name, host, port = znodes.parse_endpoint(ep)
            if name == self.listener:
                return host or "", port
        return None

    async def _metadata(self, version: int, req: dict[str, Any]) -> bytes:
        live, cluster_id, controller_id = await asyncio.gather(
            self.controller.live_brokers(), self.controller.cluster_id(), self.controller.controller_id()
        )
        reachable = {bid: ep for bid, b in live.items() if (ep := self._endpoint(b)) is not None}
        w = Writer()
        if version >= 3:
            w.int32(0)  # throttle_time_ms
        w.array_length(len(reachable))
        for bid, (host, port) in sorted(reachable.items()):
            reg = live[bid].registration
            w.int32(bid).nullable_string(host).int32(port)
            if version >= 1:
                w.nullable_string(reg.rack if reg else None)
        if version >= 2:
            w.nullable_string(cluster_id)
        if version >= 1:
            w.int32(controller_id)
        topics = await self._topic_metadata(req["topics"])
        topic_ops = TOPIC_OPERATIONS if req.get("include_topic_authorized_operations") else INT32_MIN
        w.array_length(len(topics))
        for name, partitions in topics:
            w.int16(NONE if partitions else UNKNOWN_TOPIC_OR_PARTITION).nullable_string(name)
            if version >= 1:
                w.boolean(name in INTERNAL_TOPICS)
            w.array_length(len(partitions))
            for p in partitions:
                self._write_partition(w, version, p, set(reachable))
            if version >= 8:
                w.int32(topic_ops)
        if version >= 8:
            w.int32(CLUSTER_OPERATIONS if req.get("include_cluster_authorized_operations") else INT32_MIN)
        return w.getvalue()

    async def _topic_metadata(self, names: list[str] | None) -> list[tuple[str, list[Partition]]]:
        """(name, partitions with a state) per topic; empty partitions = UNKNOWN_TOPIC_OR_PARTITION.
        None asks for all topics (those with partition state); [] for none. A topic queued for deletion
        (/admin/delete_topics/<t>) is unknown: a real 3.9 controller removes it from the brokers'
        metadata as soon as it begins the deletion, even one that cannot finish."""
        zk = self.controller
        existing = set(await zk.children("/brokers/topics")) - set(await zk.children("/admin/delete_topics"))
        wanted = sorted(existing) if names is None else list(dict.fromkeys(names))
        known = [t for t in wanted if t in existing]
        topics = await asyncio.gather(*(self.controller.read_topic(t) for t in known))
        found = dict(zip(known, topics, strict=True))
        out = [(t, [p for p in (found.get(t) or []) if p.state is not None]) for t in wanted]
        return [(t, ps) for t, ps in out if ps] if names is None else out

    @staticmethod
    def _write_partition(w: Writer, version: int, p: Partition, alive: set[int]) -> None:
        """ZkMetadataCache.getPartitionMetadata: a leader without an endpoint on this listener is
        LEADER_NOT_AVAILABLE (leader -1); v0 also drops unavailable replicas (REPLICA_NOT_AVAILABLE)."""
        assert p.state is not None
        replicas, isr = list(p.replicas), list(p.state.isr)
        if version == 0:
            replicas, isr = [r for r in replicas if r in alive], [r for r in isr if r in alive]
        if p.state.leader not in alive:
            error, leader = LEADER_NOT_AVAILABLE, -1
        elif len(replicas) < len(p.replicas) or len(isr) < len(p.state.isr):
            error, leader = REPLICA_NOT_AVAILABLE, p.state.leader
        else:
            error, leader = NONE, p.state.leader
        w.int16(error).int32(p.index).int32(leader)
        if version >= 7:
            w.int32(p.state.leader_epoch)
        w.int32_array(replicas).int32_array(isr)
        if version >= 5:
            w.int32_array([])  # offline_replicas: replicas on failed log dirs; none here


class ThreadedBroker:
    """An EmulatedBroker with blocking start/stop, on its own event-loop thread or on a given loop
    (e.g. a ThreadedFleet's: then a `before_request` coroutine can await the Fleet's methods)."""

    def __init__(self, *args: Any, loop: asyncio.AbstractEventLoop | None = None, **kwargs: Any) -> None:
        self._thread: threading.Thread | None = None
        if loop is None:
            loop = asyncio.new_event_loop()
            self._thread = threading.Thread(target=loop.run_forever, name="kadmin-kafka-server", daemon=True)
            self._thread.start()
        self.loop = loop
        self.broker = EmulatedBroker(*args, **kwargs)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 30.0) -> T:
        fut: Future[T] = asyncio.run_coroutine_threadsafe(coro, self.loop)
        return fut.result(timeout)

    def start(self) -> int:
        return self.run(self.broker.start())

    @property
    def port(self) -> int:
        return self.broker.port

    @property
    def requests(self) -> list[RecordedRequest]:
        return self.broker.requests

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self.run(self.broker.stop(), timeout=10)
        if self._thread is not None:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(5)
