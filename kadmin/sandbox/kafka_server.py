"""An emulated ZooKeeper-mode Kafka broker speaking the Kafka protocol (ApiVersions, Metadata,
ControlledShutdown), backed by the REAL ZooKeeper state of the sandbox.

What it is for: `kadmin brokers shutdown` sends ControlledShutdown (API key 7) to the controller
of a ZooKeeper-mode cluster. To rehearse that in the sandbox and to test it, this server answers
exactly as Kafka 3.9's ZK-mode `KafkaController.doControlledShutdown` does, reading and writing
the znodes that `Fleet` keeps (`/controller`, `/controller_epoch`, `/brokers/ids/*`, the topic and
partition-state znodes). kafka-python's `KafkaAdminClient` bootstraps against it (ApiVersions with
the KIP-511 fallback, then Metadata), so kadmin's real client code path is exercised.

The wire codec below is written from Kafka's JSON message schemas with `struct`, on purpose
independent of kafka-python and kio: a mistake in kadmin's client encoding must not be cancelled
out by the same library decoding it on the other end. It is also stricter than Kafka: a request
with trailing bytes is rejected (the connection is closed), so an encoding slip surfaces at once.

Emulation boundaries (a single process has no replicas, logs or controller channel):
- the controller's in-memory context is re-read from ZooKeeper at request time: live brokers and
  their epochs (czxids), `/controller`, `/controller_epoch`, assignments and partition states;
  the only memory kept is the set of shutting-down brokers, pruned the way Kafka's broker-change
  handling prunes it (a broker that deregistered or re-registered with a new epoch leaves it),
  and reset when this node stops being the controller or the controller epoch changes;
- LeaderAndIsr/StopReplica/UpdateMetadata requests to the other brokers are not sent;
- no authorizer: every operation is allowed (Kafka's behaviour without `authorizer.class.name`);
- Metadata is served from ZooKeeper directly (a real broker serves it from its metadata cache,
  which the controller keeps in sync with those znodes); `auto.create.topics.enable` is false.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import ssl
import struct
import threading
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeVar

from kadmin.cluster.zkwire import CheckVersion, NoNodeError, SetData, ZkSession
from kadmin.domain import znodes

log = logging.getLogger(__name__)
T = TypeVar("T")

# API keys served.
METADATA = 3
CONTROLLED_SHUTDOWN = 7
API_VERSIONS = 18

# Error codes (org.apache.kafka.common.protocol.Errors).
NONE = 0
UNKNOWN_SERVER_ERROR = -1
UNKNOWN_TOPIC_OR_PARTITION = 3
LEADER_NOT_AVAILABLE = 5
BROKER_NOT_AVAILABLE = 8
REPLICA_NOT_AVAILABLE = 9
STALE_CONTROLLER_EPOCH = 11
UNSUPPORTED_VERSION = 35
STALE_BROKER_EPOCH = 77

UNKNOWN_BROKER_EPOCH = -1  # AbstractControlRequest.UNKNOWN_BROKER_EPOCH: skips the epoch check
INT32_MIN = -(2**31)  # "authorized operations not requested"
# Utils.to32BitField of AclEntry.supportedOperations (no authorizer: all of them are allowed).
# TOPIC: READ 3, WRITE 4, CREATE 5, DELETE 6, ALTER 7, DESCRIBE 8, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11.
TOPIC_OPERATIONS = sum(1 << op for op in (3, 4, 5, 6, 7, 8, 10, 11))
# CLUSTER: CREATE 5, ALTER 7, DESCRIBE 8, CLUSTER_ACTION 9, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11, IDEMPOTENT_WRITE 12.
CLUSTER_OPERATIONS = sum(1 << op for op in (5, 7, 8, 9, 10, 11, 12))
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})

MAX_FRAME = 100 * 1024 * 1024  # socket.request.max.bytes
MAX_PARTITION_RETRIES = 50  # Kafka retries BADVERSION conflicts without limit; a sandbox should not hang
# kazoo error codes the state writes expect: RolledBack (0, the ops of a failed multi before the
# one that failed), NoNode (-101), BadVersion (-103). zkwire raises the first op's error, so a
# RolledBackError means "the setData failed" and BadVersionError may be either op: re-read to tell.
_WRITE_CONFLICT_CODES = frozenset({0, -101, -103})

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


# --------------------------------------------------------------------------------------- codec
class DecodeError(ValueError):
    """The request bytes do not match the schema."""


class Reader:
    """Reads Kafka protocol primitive types from a frame, front to back."""

    def __init__(self, buf: bytes, pos: int = 0) -> None:
        self.buf = buf
        self.pos = pos

    def _unpack(self, s: struct.Struct) -> int:
        if self.pos + s.size > len(self.buf):
            raise DecodeError(f"frame ends at byte {len(self.buf)}, reading {s.size} bytes at {self.pos}")
        (value,) = s.unpack_from(self.buf, self.pos)
        self.pos += s.size
        return int(value)

    def _bytes(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.buf):
            raise DecodeError(f"frame ends at byte {len(self.buf)}, reading {n} bytes at {self.pos}")
        out = self.buf[self.pos : self.pos + n]
        self.pos += n
        return out

    def int8(self) -> int:
        return self._unpack(_I8)

    def boolean(self) -> bool:
        return self.int8() != 0

    def int16(self) -> int:
        return self._unpack(_I16)

    def int32(self) -> int:
        return self._unpack(_I32)

    def int64(self) -> int:
        return self._unpack(_I64)

    def uvarint(self) -> int:
        value = shift = 0
        while True:
            b = self._bytes(1)[0]
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
            if shift > 28:
                raise DecodeError("unsigned varint longer than 5 bytes")

    def _text(self, n: int) -> str:
        try:
            return self._bytes(n).decode("utf-8")
        except UnicodeDecodeError as e:
            raise DecodeError(f"string is not UTF-8: {e}") from e

    def nullable_string(self) -> str | None:
        n = self.int16()
        return None if n == -1 else self._text(n)

    def string(self) -> str:
        s = self.nullable_string()
        if s is None:
            raise DecodeError("null in a non-nullable string")
        return s

    def compact_nullable_string(self) -> str | None:
        n = self.uvarint()
        return None if n == 0 else self._text(n - 1)

    def compact_string(self) -> str:
        s = self.compact_nullable_string()
        if s is None:
            raise DecodeError("null in a non-nullable compact string")
        return s

    def array_length(self) -> int | None:
        """int32 count; -1 is a null array."""
        n = self.int32()
        if n < -1:
            raise DecodeError(f"array length {n}")
        return None if n == -1 else n

    def tagged_fields(self) -> dict[int, bytes]:
        fields: dict[int, bytes] = {}
        for _ in range(self.uvarint()):
            tag = self.uvarint()
            fields[tag] = self._bytes(self.uvarint())
        return fields

    def expect_end(self) -> None:
        if self.pos != len(self.buf):
            raise DecodeError(f"{len(self.buf) - self.pos} trailing bytes after the request")


class Writer:
    """Appends Kafka protocol primitive types to a buffer."""

    def __init__(self) -> None:
        self.buf = bytearray()

    def int8(self, v: int) -> Writer:
        self.buf += _I8.pack(v)
        return self

    def boolean(self, v: bool) -> Writer:
        return self.int8(1 if v else 0)

    def int16(self, v: int) -> Writer:
        self.buf += _I16.pack(v)
        return self

    def int32(self, v: int) -> Writer:
        self.buf += _I32.pack(v)
        return self

    def int64(self, v: int) -> Writer:
        self.buf += _I64.pack(v)
        return self

    def uvarint(self, v: int) -> Writer:
        while v >= 0x80:
            self.buf.append((v & 0x7F) | 0x80)
            v >>= 7
        self.buf.append(v)
        return self

    def nullable_string(self, s: str | None) -> Writer:
        if s is None:
            return self.int16(-1)
        data = s.encode()
        self.int16(len(data))
        self.buf += data
        return self

    def compact_string(self, s: str) -> Writer:
        data = s.encode()
        self.uvarint(len(data) + 1)
        self.buf += data
        return self

    def array_length(self, n: int) -> Writer:
        return self.int32(n)

    def compact_array_length(self, n: int) -> Writer:
        return self.uvarint(n + 1)

    def int32_array(self, values: Iterable[int]) -> Writer:
        vs = list(values)
        self.int32(len(vs))
        for v in vs:
            self.int32(v)
        return self

    def empty_tagged_fields(self) -> Writer:
        return self.uvarint(0)

    def getvalue(self) -> bytes:
        return bytes(self.buf)


def is_flexible(api_key: int, api_version: int) -> bool:
    """`flexibleVersions` of the served messages: ApiVersions 3+, ControlledShutdown 3+, Metadata 9+."""
    first = {API_VERSIONS: 3, CONTROLLED_SHUTDOWN: 3, METADATA: 9}.get(api_key)
    return first is not None and api_version >= first


def request_header_version(api_key: int, api_version: int) -> int:
    """ControlledShutdown v0 alone uses header v0 (no client_id); flexible versions use v2."""
    if api_key == CONTROLLED_SHUTDOWN and api_version == 0:
        return 0
    return 2 if is_flexible(api_key, api_version) else 1


def response_header_version(api_key: int, api_version: int) -> int:
    """ApiVersions always answers with header v0, even when flexible (clients parse it before
    they know the broker's versions); other flexible responses use v1 (with tagged fields)."""
    if api_key == API_VERSIONS:
        return 0
    return 1 if is_flexible(api_key, api_version) else 0


class RecordedRequest(NamedTuple):
    """A decoded request, kept in `EmulatedBroker.requests` for assertions."""

    api_key: int
    api_version: int
    header: dict[str, Any]
    body: dict[str, Any]


# --------------------------------------------------------------------------------- ZK views
@dataclass(frozen=True)
class PartitionState:
    """/brokers/topics/<t>/partitions/<p>/state (TopicPartitionStateZNode) plus its zkVersion."""

    leader: int
    leader_epoch: int
    controller_epoch: int
    isr: tuple[int, ...]
    leader_recovery_state: int = 0
    zk_version: int = 0  # the partition epoch; the expected version of the next write

    @classmethod
    def decode(cls, data: bytes | None, zk_version: int) -> PartitionState:
        try:
            doc = json.loads((data or b"").decode("utf-8"))
            isr = doc["isr"]
            if not isinstance(isr, list) or not all(isinstance(r, int) for r in isr):
                raise ValueError(f"isr is {isr!r}")
            return cls(
                leader=int(doc["leader"]),
                leader_epoch=int(doc["leader_epoch"]),
                controller_epoch=int(doc["controller_epoch"]),
                isr=tuple(isr),
                leader_recovery_state=int(doc.get("leader_recovery_state", 0)),
                zk_version=zk_version,
            )
        except (UnicodeDecodeError, ValueError, KeyError, TypeError) as e:
            raise znodes.ZnodeFormatError(f"partition state: {e}") from e

    def encode(self) -> bytes:
        """Kafka's exact format (compact JSON; leader_recovery_state only when not RECOVERED)."""
        return znodes.encode_partition_state(
            self.leader, self.leader_epoch, self.controller_epoch, list(self.isr), self.leader_recovery_state
        )

    def new_leader_and_isr(self, leader: int, isr: Iterable[int], controller_epoch: int) -> PartitionState:
        """LeaderAndIsr.newLeaderAndIsr: leader_epoch + 1, recovery state kept; the controller
        epoch is the writing controller's."""
        return PartitionState(
            leader, self.leader_epoch + 1, controller_epoch, tuple(isr), self.leader_recovery_state, self.zk_version
        )


@dataclass(frozen=True)
class Partition:
    topic: str
    index: int
    replicas: tuple[int, ...]  # the assignment, in order (the election walks it in this order)
    state: PartitionState | None  # None: no state znode (no leadership info)

    @property
    def state_path(self) -> str:
        return f"/brokers/topics/{self.topic}/partitions/{self.index}/state"


@dataclass(frozen=True)
class LiveBroker:
    id: int
    epoch: int  # czxid of /brokers/ids/<id> (KIP-380)
    registration: znodes.Registration | None  # None when the znode cannot be decoded


@dataclass
class ControllerContext:
    """What this node, as the controller, knows at the time of one request."""

    epoch: int  # the /controller_epoch value: written into partition states
    epoch_zk_version: int  # fences every state write (Kafka's CheckOp on /controller_epoch)
    live: dict[int, LiveBroker] = field(default_factory=dict)


class KafkaError(Exception):
    """A request failed with a Kafka error code (Errors.forException of the controller's exception)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


# ------------------------------------------------------------------------------------ server
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
        # The controller's event queue runs one event at a time: ControlledShutdowns are serialized.
        self._controller_lock = asyncio.Lock()
        # Kafka's controllerContext.shuttingDownBrokerIds, with each broker's epoch at the time,
        # valid for the controller epoch (value, zkVersion) it was built under.
        self._shutting_down: dict[int, int] = {}
        self._context_epoch: tuple[int, int] | None = None

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> int:
        """Open the ZooKeeper session and listen; returns the bound port."""
        if self._zk is None:
            self._zk = await ZkSession.open(self.zk_hosts, chroot=self.chroot, timeout_ms=self.zk_timeout_ms)
        self._server = await asyncio.start_server(self._serve, self.host, self.port, ssl=self.ssl_context)
        self.port = int(self._server.sockets[0].getsockname()[1])
        log.info("emulated broker %d listening on %s:%d (%s)", self.node_id, self.host, self.port, self.listener)
        return self.port

    async def stop(self) -> None:
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
            header = self._read_header(r, api_key, api_version, correlation_id, header_version)
            body = self._read_body(r, api_key, api_version)
            r.expect_end()
        except DecodeError as e:
            log.warning("broker %d: malformed api_key %d v%d request: %s", self.node_id, api_key, api_version, e)
            return None
        self.requests.append(RecordedRequest(api_key, api_version, header, body))
        await self._call_hook(api_key, api_version)
        if api_key == API_VERSIONS:
            payload = self._api_versions_body(api_version, NONE, self.api_versions)
        elif api_key == METADATA:
            payload = await self._metadata(api_version, body)
        else:
            payload = await self._controlled_shutdown(api_version, body)
        head = Writer().int32(correlation_id)
        if response_header_version(api_key, api_version) >= 1:
            head.empty_tagged_fields()
        return head.getvalue() + payload

    @staticmethod
    def _read_header(r: Reader, api_key: int, api_version: int, correlation_id: int, version: int) -> dict[str, Any]:
        header: dict[str, Any] = {
            "api_key": api_key,
            "api_version": api_version,
            "correlation_id": correlation_id,
            "header_version": version,
        }
        if version >= 1:
            header["client_id"] = r.nullable_string()  # a legacy (int16) string even in header v2
        if version >= 2:
            header["tagged_fields"] = r.tagged_fields()
        return header

    @staticmethod
    def _read_body(r: Reader, api_key: int, api_version: int) -> dict[str, Any]:
        if api_key == API_VERSIONS:
            if api_version < 3:
                return {}
            body: dict[str, Any] = {
                "client_software_name": r.compact_string(),
                "client_software_version": r.compact_string(),
            }
            r.tagged_fields()
            return body
        if api_key == METADATA:
            n = r.array_length()
            if n is None and api_version == 0:
                raise DecodeError("null topics array in Metadata v0")
            topics = None if n is None else [r.string() for _ in range(n)]
            if api_version == 0 and topics == []:
                topics = None  # v0: an empty list means all topics
            body = {"topics": topics, "allow_auto_topic_creation": True}
            if api_version >= 4:
                body["allow_auto_topic_creation"] = r.boolean()
            if api_version >= 8:
                body["include_cluster_authorized_operations"] = r.boolean()
                body["include_topic_authorized_operations"] = r.boolean()
            return body
        # ControlledShutdown: BrokerId int32 0+, BrokerEpoch int64 2+ (default -1), tags from 3.
        body = {"broker_id": r.int32(), "broker_epoch": r.int64() if api_version >= 2 else UNKNOWN_BROKER_EPOCH}
        if api_version >= 3:
            r.tagged_fields()
        return body

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
        return Writer().int32(correlation_id).getvalue() + self._api_versions_body(0, UNSUPPORTED_VERSION, ranges)

    @staticmethod
    def _api_versions_body(version: int, error: int, ranges: dict[int, tuple[int, int]]) -> bytes:
        w = Writer().int16(error)
        keys = sorted(ranges.items())
        if version >= 3:
            w.compact_array_length(len(keys))
            for key, (lo, hi) in keys:
                w.int16(key).int16(lo).int16(hi).empty_tagged_fields()
            # throttle_time_ms, then the top-level tags (SupportedFeatures & co. are all tagged: none sent)
            return w.int32(0).empty_tagged_fields().getvalue()
        w.array_length(len(keys))
        for key, (lo, hi) in keys:
            w.int16(key).int16(lo).int16(hi)
        if version >= 1:
            w.int32(0)  # throttle_time_ms
        return w.getvalue()

    # ------------------------------------------------------------------ ZooKeeper reads
    async def _get(self, path: str) -> tuple[bytes | None, Any] | None:
        """getData, or None when the znode does not exist."""
        try:
            return await self.zk.get(path)
        except NoNodeError:
            return None

    async def _children(self, path: str) -> list[str]:
        try:
            return await self.zk.children(path)
        except NoNodeError:
            return []

    async def _live_brokers(self) -> dict[int, LiveBroker]:
        """getAllBrokerAndEpochsInCluster: every registration with its czxid (pipelined reads)."""
        ids = sorted(int(c) for c in await self._children("/brokers/ids") if c.lstrip("-").isdigit())
        results = await asyncio.gather(*(self._get(f"/brokers/ids/{i}") for i in ids))
        live: dict[int, LiveBroker] = {}
        for bid, res in zip(ids, results, strict=True):
            if res is None:
                continue  # deregistered between the listing and the read
            data, stat = res
            try:
                reg: znodes.Registration | None = znodes.decode_registration(data)
            except znodes.ZnodeFormatError as e:
                log.warning("broker %d: /brokers/ids/%d: %s", self.node_id, bid, e)
                reg = None
            live[bid] = LiveBroker(bid, stat.czxid, reg)
        return live

    async def _controller_id(self) -> int:
        res = await self._get("/controller")
        if res is None:
            return -1
        try:
            return znodes.decode_controller(res[0]).broker_id
        except znodes.ZnodeFormatError:
            return -1

    async def _cluster_id(self) -> str | None:
        res = await self._get("/cluster/id")
        if res is None:
            return None
        try:
            return znodes.decode_cluster_id(res[0])
        except znodes.ZnodeFormatError:
            return None

    async def _read_state(self, topic: str, index: int) -> PartitionState | None:
        res = await self._get(f"/brokers/topics/{topic}/partitions/{index}/state")
        return None if res is None else PartitionState.decode(res[0], res[1].version)

    async def _read_topic(self, topic: str) -> list[Partition] | None:
        """A topic's assignment and partition states; None when the topic znode does not exist."""
        res = await self._get(f"/brokers/topics/{topic}")
        if res is None:
            return None
        try:
            doc = json.loads((res[0] or b"{}").decode("utf-8"))
            assignment = {int(p): tuple(int(r) for r in rs) for p, rs in (doc.get("partitions") or {}).items()}
        except (UnicodeDecodeError, ValueError, TypeError, AttributeError) as e:
            raise znodes.ZnodeFormatError(f"/brokers/topics/{topic}: {e}") from e
        indexes = sorted(assignment)
        states = await asyncio.gather(*(self._read_state(topic, p) for p in indexes))
        return [Partition(topic, p, assignment[p], s) for p, s in zip(indexes, states, strict=True)]

    async def _all_partitions(self) -> list[Partition]:
        """Every partition of every topic not queued for deletion (/admin/delete_topics/<t>)."""
        deleting = set(await self._children("/admin/delete_topics"))
        topics = sorted(t for t in await self._children("/brokers/topics") if t not in deleting)
        per_topic = await asyncio.gather(*(self._read_topic(t) for t in topics))
        return [p for parts in per_topic if parts for p in parts]

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
            self._live_brokers(), self._cluster_id(), self._controller_id()
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
        existing = set(await self._children("/brokers/topics")) - set(await self._children("/admin/delete_topics"))
        wanted = sorted(existing) if names is None else list(dict.fromkeys(names))
        known = [t for t in wanted if t in existing]
        topics = await asyncio.gather(*(self._read_topic(t) for t in known))
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

    # ------------------------------------------------------------------ ControlledShutdown
    async def _controlled_shutdown(self, version: int, req: dict[str, Any]) -> bytes:
        async with self._controller_lock:
            try:
                remaining = await self._do_controlled_shutdown(req["broker_id"], req["broker_epoch"])
                error = NONE
            except KafkaError as e:
                log.info("broker %d: ControlledShutdown of %d: %s", self.node_id, req["broker_id"], e)
                error, remaining = e.code, []
            except Exception:  # noqa: BLE001 - Errors.forException(anything else) is UNKNOWN_SERVER_ERROR
                log.exception("broker %d: ControlledShutdown of %d failed", self.node_id, req["broker_id"])
                error, remaining = UNKNOWN_SERVER_ERROR, []
        w = Writer().int16(error)
        if version >= 3:
            w.compact_array_length(len(remaining))
            for topic, index in remaining:
                w.compact_string(topic).int32(index).empty_tagged_fields()
            w.empty_tagged_fields()
        else:
            w.array_length(len(remaining))
            for topic, index in remaining:
                w.nullable_string(topic).int32(index)
        return w.getvalue()

    async def _controller_context(self) -> ControllerContext:
        """isActive, the controller epoch and the live brokers, as of now. Raises STALE_CONTROLLER_EPOCH
        (ControllerMovedException) when this node is not the controller."""
        if await self._controller_id() != self.node_id:
            self._shutting_down.clear()  # onControllerResignation resets the context
            self._context_epoch = None
            raise KafkaError(STALE_CONTROLLER_EPOCH, "Controller moved to another broker. Aborting controlled shutdown")
        res = await self._get("/controller_epoch")
        if res is None:
            raise KafkaError(STALE_CONTROLLER_EPOCH, "no /controller_epoch")
        ctx = ControllerContext(epoch=int((res[0] or b"0").decode()), epoch_zk_version=res[1].version)
        if self._context_epoch != (ctx.epoch, ctx.epoch_zk_version):
            # Elected again since the last request (a new controller epoch): a fresh context.
            self._shutting_down.clear()
            self._context_epoch = (ctx.epoch, ctx.epoch_zk_version)
        ctx.live = await self._live_brokers()
        # processBrokerChange -> onBrokerFailure: dead and bounced (new epoch) brokers leave the set.
        self._shutting_down = {b: e for b, e in self._shutting_down.items() if b in ctx.live and ctx.live[b].epoch == e}
        return ctx

    async def _do_controlled_shutdown(self, broker_id: int, broker_epoch: int) -> list[tuple[str, int]]:
        """KafkaController.doControlledShutdown (3.9); returns the partitions the broker still leads."""
        ctx = await self._controller_context()
        if broker_epoch != UNKNOWN_BROKER_EPOCH:
            if broker_id not in ctx.live:
                # controllerContext.liveBrokerIdAndEpochs(id) is a Scala Map.apply: NoSuchElementException,
                # which Errors.forException maps to UNKNOWN_SERVER_ERROR. This check precedes the liveness one.
                raise KafkaError(UNKNOWN_SERVER_ERROR, f"key not found: {broker_id}")
            cached = ctx.live[broker_id].epoch
            if broker_epoch < cached:  # strictly older: a newer epoch than the cached one is accepted
                raise KafkaError(
                    STALE_BROKER_EPOCH,
                    f"Received controlled shutdown request from an old broker epoch {broker_epoch} for broker "
                    f"{broker_id}. Current broker epoch is {cached}.",
                )
        if broker_id not in ctx.live:  # liveOrShuttingDownBrokerIds: the shutting-down ones are registered too
            raise KafkaError(BROKER_NOT_AVAILABLE, f"Broker id {broker_id} does not exist.")
        self._shutting_down[broker_id] = ctx.live[broker_id].epoch

        # partitionsOnBroker(id) with RF > 1, with leadership info, topic not queued for deletion.
        partitions = await self._all_partitions()
        act_on = [p for p in partitions if broker_id in p.replicas and len(p.replicas) > 1 and p.state is not None]
        led = [p for p in act_on if p.state is not None and p.state.leader == broker_id]
        followed = [p for p in act_on if p.state is not None and p.state.leader != broker_id]
        for p in led:  # OnlinePartition with ControlledShutdownPartitionLeaderElectionStrategy
            await self._retry_write(ctx, p, self._elect_for_controlled_shutdown)
        for p in followed:  # OfflineReplica: shrink the ISR (StopReplica itself is not emulated)
            await self._retry_write(ctx, p, functools.partial(self._remove_replica_from_isr, broker_id))

        # partitionLeadersOnBroker(id): still led by it, RF > 1, not queued for deletion (read back).
        after = await self._all_partitions()
        return [
            (p.topic, p.index)
            for p in after
            if p.state is not None and p.state.leader == broker_id and len(p.replicas) > 1
        ]

    def _elect_for_controlled_shutdown(
        self, ctx: ControllerContext, p: Partition, state: PartitionState
    ) -> PartitionState | None:
        """Election.leaderForControlledShutdown: the first replica of the assignment that is live
        (shutting-down brokers count as live), in the ISR, and not shutting down; the ISR loses
        every shutting-down broker. None (no leader found) leaves the partition unchanged."""
        shutting = set(self._shutting_down)
        leader = next(
            (r for r in p.replicas if r in ctx.live and r in state.isr and r not in shutting),
            None,
        )
        if leader is None:
            log.info("broker %d: no leader for %s-%d in ISR %s", self.node_id, p.topic, p.index, list(state.isr))
            return None
        return state.new_leader_and_isr(leader, [r for r in state.isr if r not in shutting], ctx.epoch)

    @staticmethod
    def _remove_replica_from_isr(
        replica: int, ctx: ControllerContext, p: Partition, state: PartitionState
    ) -> PartitionState | None:
        """ZkReplicaStateMachine.doRemoveReplicasFromIsr: only when the replica is in the ISR; a sole
        ISR member stays (the ISR is never emptied); a leader that goes leaves no leader (-1);
        leader_epoch + 1 (newLeaderAndIsr) either way."""
        if replica not in state.isr:
            return None
        leader = -1 if state.leader == replica else state.leader
        isr = state.isr if len(state.isr) == 1 else tuple(r for r in state.isr if r != replica)
        return state.new_leader_and_isr(leader, isr, ctx.epoch)

    async def _retry_write(
        self,
        ctx: ControllerContext,
        p: Partition,
        change: Callable[[ControllerContext, Partition, PartitionState], PartitionState | None],
    ) -> None:
        """Read the state, compute the change, write it with the partition epoch as the expected
        version (fenced by the controller epoch's zkVersion); on BADVERSION read again and retry,
        as the controller's election and ISR-removal loops do."""
        for _ in range(MAX_PARTITION_RETRIES):
            state = await self._read_state(p.topic, p.index)
            if state is None:
                return  # no leadership info (the partition went away)
            if state.controller_epoch > ctx.epoch:
                # Written by a newer controller: Kafka aborts this partition's change (StateChangeFailed).
                log.info("broker %d: %s-%d has controller epoch %d > %d", self.node_id, p.topic, p.index,
                         state.controller_epoch, ctx.epoch)
                return
            new = change(ctx, p, state)
            if new is None:
                return
            if await self._write_state(ctx, p.state_path, new):
                return
        log.warning("broker %d: %s-%d: gave up after %d conflicting writes", self.node_id, p.topic, p.index,
                    MAX_PARTITION_RETRIES)

    async def _write_state(self, ctx: ControllerContext, path: str, state: PartitionState) -> bool:
        """True when written; False on a partition-epoch conflict (retry); raises STALE_CONTROLLER_EPOCH
        when the controller epoch moved (KafkaZkClient's CheckOp failed: ControllerMovedException)."""
        try:
            fence = CheckVersion("/controller_epoch", ctx.epoch_zk_version)
            await self.zk.multi([fence, SetData(path, state.encode(), state.zk_version)])
            return True
        except Exception as e:
            if getattr(e, "code", None) not in _WRITE_CONFLICT_CODES:
                raise
        res = await self._get("/controller_epoch")
        if res is None or res[1].version != ctx.epoch_zk_version:
            raise KafkaError(STALE_CONTROLLER_EPOCH, "Controller epoch zkVersion check fails")
        return False


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
