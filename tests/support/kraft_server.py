"""A protocol-level KRaft test server: brokers and controllers answering the Kafka protocol.

Requests are decoded and responses encoded with kio (`kio.index` + `kio.serial`), a codec written
from Kafka's JSON message schemas and independent of kafka-python, which kadmin uses as its client:
an encoding slip in kadmin or kafka-python is not cancelled out by the same library on the other end.

Served, per listening node and its role (broker / controller):
- ApiVersions (18) v0-v4 on both, with the KIP-511 fallback; from v3 the feature flags (KIP-584): the node's
  SupportedFeatures (`Scenario.supported_features`, or `node_features[id]` for a node of another release; below v4
  a feature whose minimum is 0 is left out, as Kafka does since KAFKA-17492), FinalizedFeaturesEpoch and
  FinalizedFeatures (`finalized_features`, a feature at level 0 not listed). `node_apis[id]` overrides the
  role's advertised range of an API on one node (e.g. ApiVersions up to v2: a node without feature flags);
- Metadata (3) v0-v13 on brokers: unfenced brokers, cluster id, controller id, no topics.
  Controllers do not advertise it (KRaft controllers do not answer Metadata);
- DescribeCluster (60) v0-v2. Brokers list the brokers (fenced ones only with v2 and
  IncludeFencedBrokers); controllers want EndpointType=2 and list the controllers with
  ControllerId = the raft leader; a mismatch is answered as Kafka's AuthHelper does;
- DescribeQuorum (55) v0-v2 on both (a broker answers as if it forwarded to the leader; a
  controller that is not the leader answers NOT_LEADER_OR_FOLLOWER, as Kafka's raft client does);
- UnregisterBroker (64) v0 on both;
- DescribeLogDirs (35) v1-v4 on brokers: one log dir holding no partition (no topics exist here), or
  `Scenario.log_dirs_error` (e.g. CLUSTER_AUTHORIZATION_FAILED: a principal without Describe on the Cluster);
- DescribeConfigs (32) v1-v4 on both, as Kafka's ConfigHelper answers them: BROKER resources, where a node
  describes itself (its id, or ""), `Scenario.configs[id]` as static values, and another id is INVALID_REQUEST;
  TOPIC resources at brokers, the asked keys of a scenario topic: its own value (`Topic.configs`, TOPIC_CONFIG,
  with the node's static value as the next synonym), else the node's static value, else Kafka's default ("1"
  for min.insync.replicas); an unknown topic is UNKNOWN_TOPIC_OR_PARTITION. `Scenario.describe_configs_errors[id]`
  answers every resource at that node with that code;
- DescribeTopicPartitions (75) v0 and ListConfigResources (74) v1 on brokers, when a test advertises them
  (`Scenario.broker_apis`; not by default, so the partition reads fall back to Metadata): the scenario's `topics`,
  paged as Kafka's DescribeTopicPartitionsRequestHandler pages them (names in order from the cursor's, whether it
  exists or not for an all-topics read; at most `page_partitions` a page), and their names as TOPIC resources
  (or `list_config_resources_error`). `closes_after[(node id, api key)]` = n: that node answers n such requests,
  then closes the connection on every later one (a broker that fails mid-way through a read);
- ListPartitionReassignments (46) v0 on brokers, when a test advertises it: none in flight;
- UpdateFeatures (57) v0-v1 on both (a broker answers as if it forwarded to the active controller; another
  controller answers NOT_CONTROLLER), as Kafka's FeatureControlManager decides it: all or nothing, each level
  within every node's supported range and, for an upgrade, not below the finalized one, else
  INVALID_UPDATE_VERSION; ValidateOnly changes nothing, else the levels are finalized (the epoch goes up).
  `Scenario.update_features_error` answers every request with that code instead. The error is the top-level
  one and each feature's (UpdateFeaturesResponse.createWithErrors).

A request whose key or version the endpoint does not advertise closes the connection, as does
a request that does not decode exactly (trailing bytes included), except ApiVersions above the
advertised range, which gets Kafka's KIP-511 answer: UNSUPPORTED_VERSION in a v0 body listing
ApiVersions' own range.

Everything a test needs lives in a mutable `Scenario`, read at request time. Use `KraftServer`
(blocking, its own event-loop thread) from tests:

    scenario = Scenario.cluster(brokers=3, controllers=3)
    with KraftServer(scenario) as server:
        server.bootstrap("broker")        # "127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3"
        server.address(3000, "controller")
        server.update(lambda s: setattr(s.quorum, "leader_id", 3001))   # between requests
        server.requests_for(DESCRIBE_QUORUM)
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime
import functools
import io
import logging
import random
import struct
import sys
import threading
import uuid
from collections.abc import Callable, Coroutine
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from kio.index import load_request_schema, load_response_schema
from kio.schema.api_versions.v0.response import ApiVersion as ApiVersionV0
from kio.schema.api_versions.v0.response import ApiVersionsResponse as ApiVersionsResponseV0
from kio.schema.errors import ErrorCode
from kio.schema.request_header.v1.header import RequestHeader as RequestHeaderV1
from kio.schema.request_header.v2.header import RequestHeader as RequestHeaderV2
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i8, i16, i64

log = logging.getLogger(__name__)
T = TypeVar("T")

Role = Literal["broker", "controller"]

# API keys served.
METADATA = 3
API_VERSIONS = 18
DESCRIBE_QUORUM = 55
DESCRIBE_CLUSTER = 60
UNREGISTER_BROKER = 64
DESCRIBE_LOG_DIRS = 35
DESCRIBE_CONFIGS = 32
UPDATE_FEATURES = 57
LIST_CONFIG_RESOURCES = 74
LIST_PARTITION_REASSIGNMENTS = 46
DESCRIBE_TOPIC_PARTITIONS = 75
RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4
TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 4, 5  # DescribeConfigs' ConfigSource

# Error codes (org.apache.kafka.common.protocol.Errors).
NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
NOT_LEADER_OR_FOLLOWER = 6
CLUSTER_AUTHORIZATION_FAILED = 31
UNSUPPORTED_VERSION = 35
NOT_CONTROLLER = 41
INVALID_REQUEST = 42
INVALID_UPDATE_VERSION = 95
BROKER_ID_NOT_REGISTERED = 102
MISMATCHED_ENDPOINT_TYPE = 114
UNSUPPORTED_ENDPOINT_TYPE = 115

# DescribeCluster EndpointType (KIP-919).
ENDPOINT_BROKERS = 1
ENDPOINT_CONTROLLERS = 2
_ENDPOINT_NAMES = {ENDPOINT_BROKERS: "BROKER", ENDPOINT_CONTROLLERS: "CONTROLLER"}

METADATA_TOPIC = "__cluster_metadata"
INT32_MIN = -(2**31)  # "authorized operations not requested"
# CLUSTER operations without an authorizer: CREATE 5, ALTER 7, DESCRIBE 8, CLUSTER_ACTION 9,
# DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11, IDEMPOTENT_WRITE 12 (Utils.to32BitField).
CLUSTER_OPERATIONS = sum(1 << op for op in (5, 7, 8, 9, 10, 11, 12))
MAX_FRAME = 100 * 1024 * 1024

# What a 3.9/4.0 node advertises for the APIs served here (versions kio 0.6.5 can encode; UpdateFeatures as 3.9:
# v2, 4.0's, has no per-feature results).
BROKER_APIS: dict[int, tuple[int, int]] = {
    API_VERSIONS: (0, 4),
    METADATA: (0, 12),
    DESCRIBE_QUORUM: (0, 2),
    DESCRIBE_CLUSTER: (0, 2),
    UNREGISTER_BROKER: (0, 0),
    DESCRIBE_LOG_DIRS: (1, 4),
    DESCRIBE_CONFIGS: (1, 4),
    UPDATE_FEATURES: (0, 1),
}
CONTROLLER_APIS: dict[int, tuple[int, int]] = {
    API_VERSIONS: (0, 4),
    DESCRIBE_QUORUM: (0, 2),
    DESCRIBE_CLUSTER: (0, 2),
    UNREGISTER_BROKER: (0, 0),
    DESCRIBE_CONFIGS: (1, 4),
    UPDATE_FEATURES: (0, 1),
}
# The feature levels a Kafka 4.3 node supports (metadata.version 3.3-IV3 to 4.3-IV0), and what a cluster formatted
# at 3.9 has finalized (metadata.version 3.9-IV0; the others at 0, so not listed): rolled to 4.3, not yet upgraded.
SUPPORTED_FEATURES: dict[str, tuple[int, int]] = {
    "metadata.version": (7, 30),
    "kraft.version": (0, 1),
    "transaction.version": (0, 2),
    "group.version": (0, 1),
    "eligible.leader.replicas.version": (0, 1),
    "share.version": (0, 1),
    "streams.version": (0, 1),
}
FINALIZED_FEATURES: dict[str, int] = {"metadata.version": 21}

_I32 = struct.Struct(">i")
_PEEK = struct.Struct(">hhi")  # api key, api version, correlation id: the same in every header


# ------------------------------------------------------------------------------- scenario
@dataclass
class Partition:
    """One partition of a topic, as DescribeTopicPartitions describes it."""

    leader: int
    replicas: list[int]
    isr: list[int]
    error_code: int = 0
    leader_epoch: int = 0


@dataclass
class Topic:
    name: str
    partitions: list[Partition]
    topic_id: uuid.UUID = field(default_factory=uuid.uuid4)
    configs: dict[str, str] = field(default_factory=dict)  # its own (TOPIC_CONFIG) values: DescribeConfigs


@dataclass
class Node:
    """A broker or controller. `port` 0 means: the server listens on a free port at start()
    and writes it here; with `listen=False` nothing listens and host/port are advertised as given
    (an unreachable node)."""

    node_id: int
    rack: str | None = None
    fenced: bool = False  # brokers only: left out of Metadata/DescribeCluster unless v2 asks for them
    host: str = "127.0.0.1"
    port: int = 0
    listen: bool = True
    listener_name: str = "PLAINTEXT"  # DescribeQuorum v2 Nodes name a controller's listener


@dataclass
class Replica:
    """One voter or observer of the metadata log (DescribeQuorum ReplicaState)."""

    replica_id: int
    directory_id: uuid.UUID | None = None  # v2 only; None is sent as the zero Uuid
    log_end_offset: int = -1
    last_fetch_timestamp: int = -1  # v1+
    last_caught_up_timestamp: int = -1  # v1+


@dataclass
class Listener:
    name: str
    host: str
    port: int


@dataclass
class VoterNode:
    """DescribeQuorum v2 `Nodes` entry: a voter's endpoints."""

    node_id: int
    listeners: list[Listener]


@dataclass
class Quorum:
    leader_id: int = -1  # -1: no leader
    leader_epoch: int = 0
    high_watermark: int = -1
    voters: list[Replica] = field(default_factory=list)
    observers: list[Replica] = field(default_factory=list)
    # None: each voter that is one of the scenario's controllers, with its listener.
    nodes: list[VoterNode] | None = None
    # Top-level ErrorCode (e.g. 31): Kafka then sends no topics and no nodes.
    error_code: int = NONE
    error_message: str | None = None
    # None: automatic, as Kafka does: a controller that is not the leader answers
    # NOT_LEADER_OR_FOLLOWER (6); brokers (which forward) and the leader answer 0.
    # An int forces that partition error on every endpoint (0 included).
    partition_error: int | None = None
    partition_error_message: str | None = None


@dataclass
class Scenario:
    cluster_id: str = "MkU3OEVBNTcwNTJENDM2Qg"
    brokers: list[Node] = field(default_factory=list)
    controllers: list[Node] = field(default_factory=list)
    quorum: Quorum = field(default_factory=Quorum)
    broker_apis: dict[int, tuple[int, int]] = field(default_factory=lambda: dict(BROKER_APIS))
    controller_apis: dict[int, tuple[int, int]] = field(default_factory=lambda: dict(CONTROLLER_APIS))
    # ControllerId in Metadata and DescribeCluster from a broker. Kafka's KRaft brokers report a
    # random alive broker there (the controllers are not reachable by clients); None does that.
    broker_reported_controller_id: int | None = None
    # ClusterAuthorizedOperations when a request asks for it (Metadata v8-v10, DescribeCluster).
    cluster_authorized_operations: int = CLUSTER_OPERATIONS
    log_dirs_error: int = NONE  # DescribeLogDirs' answer to every request (e.g. CLUSTER_AUTHORIZATION_FAILED)
    # UnregisterBroker: an error code per broker id. Otherwise an unknown id gets 102 and a known
    # one succeeds and is removed from `brokers` (its listener keeps running).
    unregister_errors: dict[int, int] = field(default_factory=dict)
    # DescribeConfigs: each node's own configuration (node id -> {name: value}), and an error code per node id
    # for every resource asked of it (e.g. CLUSTER_AUTHORIZATION_FAILED: no DescribeConfigs on the Cluster)
    configs: dict[int, dict[str, str]] = field(default_factory=dict)
    describe_configs_errors: dict[int, int] = field(default_factory=dict)
    # Per node id: {api key: (min, max)} advertised instead of the role's (e.g. {API_VERSIONS: (0, 2)}).
    node_apis: dict[int, dict[int, tuple[int, int]]] = field(default_factory=dict)
    # Feature flags (ApiVersions v3+, UpdateFeatures): the range every node supports, unless `node_features` gives a
    # node its own (a node of another release); the finalized levels (0 is not listed) and their epoch.
    supported_features: dict[str, tuple[int, int]] = field(default_factory=lambda: dict(SUPPORTED_FEATURES))
    node_features: dict[int, dict[str, tuple[int, int]]] = field(default_factory=dict)
    finalized_features: dict[str, int] = field(default_factory=lambda: dict(FINALIZED_FEATURES))
    features_epoch: int = 1000
    # UpdateFeatures: this error code (and message) to every request, instead of deciding it
    update_features_error: int = NONE
    update_features_error_message: str | None = None
    # DescribeTopicPartitions (paged: at most page_partitions a page) and ListConfigResources; Metadata lists none
    topics: list[Topic] = field(default_factory=list)
    page_partitions: int = 2000
    list_config_resources_error: int = NONE
    # (node id, api key) -> the requests of that API the node answers before it closes the connection on each later one
    closes_after: dict[tuple[int, int], int] = field(default_factory=dict)

    @classmethod
    def cluster(
        cls,
        brokers: int = 3,
        controllers: int = 3,
        *,
        first_broker_id: int = 1,
        first_controller_id: int = 3000,
        high_watermark: int = 1000,
        now_ms: int = 1_764_000_000_000,
    ) -> Scenario:
        """A healthy cluster: the first controller leads (epoch 5), every voter caught up
        (LEO = HW), brokers observe at HW; directory ids are derived from the node ids."""
        bs = [Node(first_broker_id + i) for i in range(brokers)]
        cs = [Node(first_controller_id + i, listener_name="CONTROLLER") for i in range(controllers)]

        def replica(node_id: int) -> Replica:
            return Replica(node_id, uuid.UUID(int=node_id + 1), high_watermark, now_ms, now_ms)

        quorum = Quorum(
            leader_id=cs[0].node_id if cs else -1,
            leader_epoch=5,
            high_watermark=high_watermark,
            voters=[replica(c.node_id) for c in cs],
            observers=[replica(b.node_id) for b in bs],
        )
        return cls(brokers=bs, controllers=cs, quorum=quorum)

    def nodes(self, role: Role) -> list[Node]:
        return self.brokers if role == "broker" else self.controllers

    def apis(self, role: Role) -> dict[int, tuple[int, int]]:
        return self.broker_apis if role == "broker" else self.controller_apis

    def apis_of(self, role: Role, node_id: int) -> dict[int, tuple[int, int]]:
        """What the node advertises: its role's APIs, with `node_apis[node_id]` over them."""
        return {**self.apis(role), **self.node_apis.get(node_id, {})}

    def features_of(self, node_id: int) -> dict[str, tuple[int, int]]:
        """The feature levels a node supports."""
        return self.node_features.get(node_id, self.supported_features)


@dataclass(frozen=True)
class Endpoint:
    role: Role
    node_id: int
    port: int


@dataclass(frozen=True)
class RecordedRequest:
    """One decoded request: `header` is kio's RequestHeader, `body` kio's request dataclass
    (None for an ApiVersions answered with the KIP-511 fallback, whose body is not read)."""

    endpoint: Endpoint
    api_key: int
    api_version: int
    header: Any
    body: Any


# ------------------------------------------------------------------------------- kio helpers
def build(cls: type[T], **kw: Any) -> T:
    """Instantiate a kio dataclass with the kwargs that exist in this version of the schema."""
    names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    return cls(**{k: v for k, v in kw.items() if k in names})


def nested(schema: type, name: str) -> Any:
    """A nested entity class of a kio message (they live in the message's module)."""
    return getattr(sys.modules[schema.__module__], name)


def encode(schema: type, correlation_id: int, body: Any) -> bytes:
    """Response header (kio picks v0/v1 per API and version, ApiVersions' v0 quirk included) + body."""
    header_schema = schema.__header_schema__  # type: ignore[attr-defined]
    buf = io.BytesIO()
    entity_writer(header_schema)(buf, header_schema(correlation_id=correlation_id))
    entity_writer(schema)(buf, body)
    return buf.getvalue()


class _Close(Exception):
    """Close the connection without answering (what Kafka does with a request it cannot serve)."""


NO_THROTTLE = datetime.timedelta(0)


# ------------------------------------------------------------------------------- the server
class AsyncKraftServer:
    """The asyncio server: one listener per node with `listen=True`, in both roles."""

    def __init__(self, scenario: Scenario, host: str = "127.0.0.1") -> None:
        self.scenario = scenario
        self.host = host
        self.requests: list[RecordedRequest] = []
        self.endpoints: dict[tuple[Role, int], Endpoint] = {}
        self._servers: list[asyncio.Server] = []
        self._connections: set[asyncio.StreamWriter] = set()
        self._random = random.Random(0)
        self._answered: dict[tuple[int, int], int] = {}  # (node id, api key) -> requests answered (closes_after)

    async def start(self) -> None:
        roles: tuple[Role, ...] = ("broker", "controller")
        for role in roles:
            for node in self.scenario.nodes(role):
                if not node.listen:
                    continue
                server = await asyncio.start_server(
                    functools.partial(self._serve, role=role, node_id=node.node_id),
                    self.host,
                    node.port,
                )
                self._servers.append(server)
                node.host = self.host
                node.port = server.sockets[0].getsockname()[1]
                self.endpoints[(role, node.node_id)] = Endpoint(role, node.node_id, node.port)

    async def stop(self) -> None:
        for server in self._servers:
            server.close()
        for writer in list(self._connections):
            writer.close()
        for server in self._servers:
            with contextlib.suppress(Exception):
                await server.wait_closed()
        self._servers.clear()

    # ---------------------------------------------------------------- connections
    async def _serve(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, role: Role, node_id: int
    ) -> None:
        """One connection; requests are handled one at a time, in order."""
        endpoint = self.endpoints[(role, node_id)]
        self._connections.add(writer)
        try:
            while True:
                try:
                    (size,) = _I32.unpack(await reader.readexactly(4))
                except asyncio.IncompleteReadError:
                    return  # the client closed the connection
                if not 8 <= size <= MAX_FRAME:
                    log.warning("%s %d: frame of %d bytes: closing", role, node_id, size)
                    return
                frame = await reader.readexactly(size)
                try:
                    response = self._handle(endpoint, frame)
                except _Close as e:
                    log.info("%s %d: %s: closing the connection", role, node_id, e)
                    return
                writer.write(_I32.pack(len(response)) + response)
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError) as e:
            log.debug("%s %d: connection ended: %s", role, node_id, e)
        except Exception:
            log.exception("%s %d: request failed; closing the connection", role, node_id)
        finally:
            self._connections.discard(writer)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    def _handle(self, endpoint: Endpoint, frame: bytes) -> bytes:
        api_key, api_version, correlation_id = _PEEK.unpack_from(frame, 0)
        supported = self.scenario.apis_of(endpoint.role, endpoint.node_id).get(api_key)
        if supported is None:
            raise _Close(f"api key {api_key} is not advertised")
        if api_key == API_VERSIONS and api_version > supported[1]:
            return self._unsupported_api_versions(endpoint, frame, api_version, correlation_id, supported)
        if not supported[0] <= api_version <= supported[1]:
            raise _Close(f"api key {api_key} v{api_version} is outside the advertised {supported}")
        handler = self._handlers.get(api_key)
        if handler is None:
            raise _Close(f"api key {api_key} is advertised but not served")
        try:
            request_schema = load_request_schema(api_key, api_version)
            response_schema = load_response_schema(api_key, api_version)
        except Exception as e:  # kio.index.UnknownEntity: advertised beyond what kio can encode
            raise _Close(f"kio has no schema for api key {api_key} v{api_version}: {e}") from e
        try:
            header, offset = entity_reader(request_schema.__header_schema__)(frame, 0)
            body, size = entity_reader(request_schema)(frame, offset)  # readers return bytes consumed
        except Exception as e:
            raise _Close(f"malformed api key {api_key} v{api_version} request: {e}") from e
        if offset + size != len(frame):
            raise _Close(f"{len(frame) - offset - size} trailing bytes after api key {api_key} v{api_version}")
        self.requests.append(RecordedRequest(endpoint, api_key, api_version, header, body))
        key = (endpoint.node_id, api_key)
        if key in self.scenario.closes_after:
            if self._answered.get(key, 0) >= self.scenario.closes_after[key]:
                raise _Close(f"node {endpoint.node_id} fails from here on (closes_after)")
            self._answered[key] = self._answered.get(key, 0) + 1
        return encode(response_schema, correlation_id, handler(self, endpoint, api_version, body, response_schema))

    # ---------------------------------------------------------------- ApiVersions
    def _unsupported_api_versions(
        self, endpoint: Endpoint, frame: bytes, api_version: int, correlation_id: int, supported: tuple[int, int]
    ) -> bytes:
        """KIP-511: a newer ApiVersions than advertised gets UNSUPPORTED_VERSION in a v0 body
        whose api_keys holds only ApiVersions' own range (ApiVersionsRequest.getErrorResponse);
        the body of the request is not read (its schema may be unknown to the server)."""
        header_schema = RequestHeaderV2 if api_version >= 3 else RequestHeaderV1
        try:
            header, _ = entity_reader(header_schema)(frame, 0)
        except Exception as e:
            raise _Close(f"malformed ApiVersions v{api_version} header: {e}") from e
        self.requests.append(RecordedRequest(endpoint, API_VERSIONS, api_version, header, None))
        entry = ApiVersionV0(api_key=i16(API_VERSIONS), min_version=i16(supported[0]), max_version=i16(supported[1]))
        body = ApiVersionsResponseV0(error_code=ErrorCode.unsupported_version, api_keys=(entry,))
        return encode(ApiVersionsResponseV0, correlation_id, body)

    def _api_versions(self, endpoint: Endpoint, version: int, request: Any, schema: type) -> Any:
        """ApiVersionsResponse as Kafka's ApiVersionManager builds it: the node's APIs and, from v3 (tagged fields),
        its supported feature ranges (below v4 without those whose minimum is 0, KAFKA-17492) and the finalized
        levels with their epoch (min level = max level, KIP-778)."""
        s = self.scenario
        entry = nested(schema, "ApiVersion")
        keys = tuple(
            build(entry, api_key=key, min_version=lo, max_version=hi)
            for key, (lo, hi) in sorted(s.apis_of(endpoint.role, endpoint.node_id).items())
        )
        features: dict[str, Any] = {}
        if version >= 3:
            supported_cls, finalized_cls = nested(schema, "SupportedFeatureKey"), nested(schema, "FinalizedFeatureKey")
            features = {
                "supported_features": tuple(
                    supported_cls(name=name, min_version=i16(lo), max_version=i16(hi))
                    for name, (lo, hi) in sorted(s.features_of(endpoint.node_id).items())
                    if lo > 0 or version >= 4
                ),
                "finalized_features_epoch": i64(s.features_epoch),
                "finalized_features": tuple(
                    finalized_cls(name=name, max_version_level=i16(level), min_version_level=i16(level))
                    for name, level in sorted(s.finalized_features.items())
                    if level > 0
                ),
            }
        return build(schema, error_code=ErrorCode.none, api_keys=keys, throttle_time=NO_THROTTLE, **features)

    # ---------------------------------------------------------------- Metadata
    def _broker_controller_id(self, alive: list[Node]) -> int:
        if self.scenario.broker_reported_controller_id is not None:
            return self.scenario.broker_reported_controller_id
        return self._random.choice(alive).node_id if alive else -1

    def _metadata(self, endpoint: Endpoint, version: int, request: Any, schema: type) -> Any:
        alive = [b for b in self.scenario.brokers if not b.fenced]
        broker = nested(schema, "MetadataResponseBroker")
        topic = nested(schema, "MetadataResponseTopic")
        names = [name for t in request.topics or () if (name := getattr(t, "name", None))]
        ask_ops = getattr(request, "include_cluster_authorized_operations", False)
        return build(
            schema,
            throttle_time=NO_THROTTLE,
            error_code=ErrorCode.none,  # v13+
            brokers=tuple(build(broker, node_id=b.node_id, host=b.host, port=b.port, rack=b.rack) for b in alive),
            cluster_id=self.scenario.cluster_id,
            controller_id=self._broker_controller_id(alive),
            topics=tuple(  # no topics exist here: every named one is unknown
                build(
                    topic,
                    error_code=ErrorCode.unknown_topic_or_partition,
                    name=n,
                    topic_id=None,
                    is_internal=False,
                    partitions=(),
                    topic_authorized_operations=INT32_MIN,
                )
                for n in names
            ),
            cluster_authorized_operations=self.scenario.cluster_authorized_operations if ask_ops else INT32_MIN,
        )

    # ---------------------------------------------------------------- DescribeCluster
    def _describe_cluster(self, endpoint: Endpoint, version: int, request: Any, schema: type) -> Any:
        """AuthHelper.computeDescribeClusterResponse (no authorizer)."""
        requested = getattr(request, "endpoint_type", ENDPOINT_BROKERS)  # v1+; v0 means brokers
        expected = ENDPOINT_BROKERS if endpoint.role == "broker" else ENDPOINT_CONTROLLERS
        if requested not in _ENDPOINT_NAMES:
            code, message = UNSUPPORTED_ENDPOINT_TYPE, f"Unsupported endpoint type {requested}"
        elif requested != expected:
            code = MISMATCHED_ENDPOINT_TYPE
            message = (
                f"The request was sent to an endpoint of type {_ENDPOINT_NAMES[expected]}, "
                f"but we wanted an endpoint of type {_ENDPOINT_NAMES[requested]}"
            )
        else:
            code, message = NONE, None
        if code != NONE:
            return build(
                schema,
                throttle_time=NO_THROTTLE,
                error_code=ErrorCode(INVALID_REQUEST if version == 0 else code),
                error_message=message,
                cluster_id="",
                brokers=(),
            )
        broker = nested(schema, "DescribeClusterBroker")
        if endpoint.role == "broker":
            include_fenced = getattr(request, "include_fenced_brokers", False)  # v2+
            nodes = [b for b in self.scenario.brokers if include_fenced or not b.fenced]
            controller_id = self._broker_controller_id([b for b in self.scenario.brokers if not b.fenced])
        else:
            nodes = list(self.scenario.controllers)
            controller_id = self.scenario.quorum.leader_id
        if controller_id not in {n.node_id for n in nodes}:
            controller_id = -1  # "to avoid confusing the client"
        ask_ops = request.include_cluster_authorized_operations
        return build(
            schema,
            throttle_time=NO_THROTTLE,
            error_code=ErrorCode.none,
            error_message=None,
            endpoint_type=expected,
            cluster_id=self.scenario.cluster_id,
            controller_id=controller_id,
            brokers=tuple(
                build(broker, broker_id=n.node_id, host=n.host, port=n.port, rack=n.rack, is_fenced=n.fenced)
                for n in nodes
            ),
            cluster_authorized_operations=self.scenario.cluster_authorized_operations if ask_ops else INT32_MIN,
        )

    # ---------------------------------------------------------------- DescribeQuorum
    def _describe_quorum(self, endpoint: Endpoint, version: int, request: Any, schema: type) -> Any:
        """KafkaRaftClient.handleDescribeQuorumRequest."""
        q = self.scenario.quorum
        topic_cls, partition_cls = nested(schema, "TopicData"), nested(schema, "PartitionData")
        if q.error_code != NONE:
            return build(schema, error_code=ErrorCode(q.error_code), error_message=q.error_message, topics=(), nodes=())

        def error_partition(index: int, code: int, message: str | None) -> Any:
            return build(
                partition_cls,
                partition_index=index,
                error_code=ErrorCode(code),
                error_message=message,
                leader_id=0,  # the schema defaults Kafka leaves in an error answer
                leader_epoch=0,
                high_watermark=0,
                current_voters=(),
                observers=(),
            )

        topics = request.topics
        valid = (
            len(topics) == 1
            and topics[0].topic_name == METADATA_TOPIC
            and [p.partition_index for p in topics[0].partitions] == [0]
        )
        if not valid:  # DescribeQuorumRequest.getPartitionLevelErrorResponse
            out = tuple(
                build(
                    topic_cls,
                    topic_name=t.topic_name,
                    partitions=tuple(
                        error_partition(p.partition_index, UNKNOWN_TOPIC_OR_PARTITION, None) for p in t.partitions
                    ),
                )
                for t in topics
            )
            return build(schema, error_code=ErrorCode.none, error_message=None, topics=out, nodes=())

        code = q.partition_error
        if code is None:
            code = NOT_LEADER_OR_FOLLOWER if endpoint.role == "controller" and endpoint.node_id != q.leader_id else NONE
        if code != NONE:  # DescribeQuorumResponse.singletonErrorResponse
            partition = error_partition(0, code, q.partition_error_message)
            only = build(topic_cls, topic_name=METADATA_TOPIC, partitions=(partition,))
            return build(schema, error_code=ErrorCode.none, error_message=None, topics=(only,), nodes=())

        replica_cls = nested(schema, "ReplicaState")

        def state(r: Replica) -> Any:
            return build(
                replica_cls,
                replica_id=r.replica_id,
                replica_directory_id=r.directory_id,
                log_end_offset=r.log_end_offset,
                last_fetch_timestamp=r.last_fetch_timestamp,
                last_caught_up_timestamp=r.last_caught_up_timestamp,
            )

        partition = build(
            partition_cls,
            partition_index=0,
            error_code=ErrorCode.none,
            error_message=None,
            leader_id=q.leader_id,
            leader_epoch=q.leader_epoch,
            high_watermark=q.high_watermark,
            current_voters=tuple(state(r) for r in q.voters),
            observers=tuple(state(r) for r in q.observers),
        )
        nodes: tuple[Any, ...] = ()
        if version >= 2:
            node_cls, listener_cls = nested(schema, "Node"), nested(schema, "Listener")
            nodes = tuple(
                node_cls(
                    node_id=n.node_id,
                    listeners=tuple(listener_cls(name=ln.name, host=ln.host, port=ln.port) for ln in n.listeners),
                )
                for n in self.voter_nodes()
            )
        only = build(topic_cls, topic_name=METADATA_TOPIC, partitions=(partition,))
        return build(schema, error_code=ErrorCode.none, error_message=None, topics=(only,), nodes=nodes)

    def voter_nodes(self) -> list[VoterNode]:
        """DescribeQuorum v2 `Nodes`: the scenario's, else each voter that is a known controller."""
        q = self.scenario.quorum
        if q.nodes is not None:
            return q.nodes
        controllers = {c.node_id: c for c in self.scenario.controllers}
        return [
            VoterNode(c.node_id, [Listener(c.listener_name, c.host, c.port)])
            for r in q.voters
            if (c := controllers.get(r.replica_id)) is not None
        ]

    # ---------------------------------------------------------------- UnregisterBroker
    def _unregister_broker(self, endpoint: Endpoint, version: int, request: Any, schema: type) -> Any:
        broker_id = request.broker_id
        code = self.scenario.unregister_errors.get(broker_id)
        registered = [b for b in self.scenario.brokers if b.node_id == broker_id]
        if code is None:
            code = NONE if registered else BROKER_ID_NOT_REGISTERED
        message = None
        if code == BROKER_ID_NOT_REGISTERED:
            message = f"Broker ID {broker_id} is not currently registered"
        elif code == NONE:
            self.scenario.brokers = [b for b in self.scenario.brokers if b.node_id != broker_id]
        return build(schema, throttle_time=NO_THROTTLE, error_code=ErrorCode(code), error_message=message)

    def _describe_log_dirs(self, endpoint: Endpoint, version: int, request: Any, schema: type) -> Any:
        """KafkaApis.handleDescribeLogDirsRequest: the broker's log dirs (one here, holding no partition), or
        the scenario's error for the whole request (v3+ carries it; below v3 a refusal is an empty list)."""
        code = self.scenario.log_dirs_error
        if code:
            return build(schema, throttle_time=NO_THROTTLE, error_code=ErrorCode(code), results=())
        result = nested(schema, "DescribeLogDirsResult")
        one = build(result, error_code=ErrorCode.none, log_dir=f"/kraft-server/{endpoint.node_id}/data", topics=())
        return build(schema, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, results=(one,))

    def _describe_topic_partitions(self, endpoint: Endpoint, version: int, request: Any, schema: type) -> Any:
        """DescribeTopicPartitionsRequestHandler and KRaftMetadataCache.describeTopicResponse (no authorizer): the
        topics from the cursor's name on, in name order (all of them, or those named; a named cursor topic must be
        among the names), partitions from the cursor's index in its topic, at most min(the request's limit,
        page_partitions) a page; the next cursor where the page ends. An unknown named topic is
        UNKNOWN_TOPIC_OR_PARTITION; an all-topics read skips a cursor topic that does not exist."""
        s = self.scenario
        by_name = {t.name: t for t in s.topics}
        cursor = request.cursor
        after = cursor.topic_name if cursor is not None else ""
        if request.topics:
            names = sorted({t.name for t in request.topics if t.name >= after})
            if cursor is not None and cursor.topic_name not in names:
                raise _Close(f"the cursor topic {cursor.topic_name} is not among the topics (INVALID_REQUEST)")
        else:
            names = sorted(n for n in by_name if n >= after)
        topic_cls, partition_cls = nested(schema, "DescribeTopicPartitionsResponseTopic"), nested(
            schema, "DescribeTopicPartitionsResponsePartition")
        cursor_cls = nested(schema, "Cursor")
        left = min(int(request.response_partition_limit), s.page_partitions)
        topics: list[Any] = []
        next_cursor = None
        for name in names:
            t = by_name.get(name)
            if t is None:
                if request.topics:
                    topics.append(build(topic_cls, error_code=ErrorCode.unknown_topic_or_partition, name=name,
                                        topic_id=None, partitions=()))
                continue
            first = cursor.partition_index if cursor is not None and name == cursor.topic_name else 0
            if left == 0:
                next_cursor = build(cursor_cls, topic_name=name, partition_index=first)
                break
            page = t.partitions[first:first + left]
            topics.append(build(topic_cls, error_code=ErrorCode.none, name=name, topic_id=t.topic_id, partitions=tuple(
                build(partition_cls, error_code=ErrorCode(p.error_code), partition_index=first + i, leader_id=p.leader,
                      leader_epoch=p.leader_epoch, replica_nodes=tuple(p.replicas), isr_nodes=tuple(p.isr),
                      eligible_leader_replicas=(), last_known_elr=(), offline_replicas=())
                for i, p in enumerate(page))))
            left -= len(page)
            if first + len(page) < len(t.partitions):
                next_cursor = build(cursor_cls, topic_name=name, partition_index=first + len(page))
                break
        return build(schema, throttle_time=NO_THROTTLE, topics=tuple(topics), next_cursor=next_cursor)

    def _list_config_resources(self, endpoint: Endpoint, version: int, request: Any, schema: type) -> Any:
        """KafkaApis.handleListConfigResources, TOPIC resources only: every topic's name (or the scenario's error)."""
        code = self.scenario.list_config_resources_error
        resource = nested(schema, "ConfigResource")
        wanted = not request.resource_types or RESOURCE_TOPIC in request.resource_types
        listed = () if code or not wanted else tuple(
            build(resource, resource_name=t.name, resource_type=i8(RESOURCE_TOPIC)) for t in self.scenario.topics)
        return build(schema, throttle_time=NO_THROTTLE, error_code=ErrorCode(code), config_resources=listed)

    def _list_partition_reassignments(self, endpoint: Endpoint, version: int, request: Any, schema: type) -> Any:
        """ListPartitionReassignments (a broker forwards it to the active controller): none in flight."""
        return build(schema, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, error_message=None, topics=())

    def _describe_configs(self, endpoint: Endpoint, version: int, request: Any, schema: type) -> Any:
        """ConfigHelper.describeConfigs: a BROKER resource, a node describes itself only (its id or "", else
        INVALID_REQUEST with Kafka's message), its values as static ones; a TOPIC resource at a broker, the topic's
        own value, else the node's static one, else Kafka's default (synonyms when asked; an unknown topic is
        UNKNOWN_TOPIC_OR_PARTITION)."""
        result_cls, entry_cls = nested(schema, "DescribeConfigsResult"), nested(schema, "DescribeConfigsResourceResult")
        synonym_cls = nested(schema, "DescribeConfigsSynonym")
        own = self.scenario.configs.get(endpoint.node_id, {})
        topics = {t.name: t for t in self.scenario.topics}

        def topic_entry(t: Topic, k: str) -> Any:
            levels = ([(TOPIC_CONFIG, t.configs[k])] if k in t.configs else []) + (
                [(STATIC_BROKER_CONFIG, own[k])] if k in own else []) or [(DEFAULT_CONFIG, "1")]
            return build(entry_cls, name=k, value=levels[0][1], read_only=False, config_source=i8(levels[0][0]),
                         is_sensitive=False, config_type=i8(3), documentation=None,
                         synonyms=tuple(build(synonym_cls, name=k, value=v, source=i8(src)) for src, v in levels)
                         if request.include_synonyms else ())

        def result(r: Any) -> Any:
            code, message, entries = self.scenario.describe_configs_errors.get(endpoint.node_id, NONE), None, ()
            if code == NONE and r.resource_type == RESOURCE_TOPIC and endpoint.role == "broker":
                t = topics.get(r.resource_name)
                if t is None:
                    code, message = UNKNOWN_TOPIC_OR_PARTITION, f"Topic {r.resource_name} does not exist"
                else:
                    entries = tuple(topic_entry(t, k) for k in (r.configuration_keys or ["min.insync.replicas"]))
            elif code == NONE and r.resource_type != RESOURCE_BROKER:
                code, message = INVALID_REQUEST, f"Unsupported resource type {r.resource_type} here"
            elif code == NONE and r.resource_name not in ("", str(endpoint.node_id)):
                code = INVALID_REQUEST
                message = (f"Unexpected broker id, expected {endpoint.node_id} or empty string, but received "
                           f"{r.resource_name}")
            elif code == NONE:
                keys = own if r.configuration_keys is None else [k for k in r.configuration_keys if k in own]
                entries = tuple(build(
                    entry_cls, name=k, value=own[k], read_only=True, config_source=i8(STATIC_BROKER_CONFIG),
                    is_sensitive=False, config_type=i8(3), documentation=None,
                    synonyms=tuple(build(synonym_cls, name=k, value=own[k], source=i8(STATIC_BROKER_CONFIG))
                                   for _ in range(1 if request.include_synonyms else 0)))
                    for k in keys)
            return build(result_cls, error_code=ErrorCode(code), error_message=message,
                         resource_type=i8(r.resource_type), resource_name=r.resource_name, configs=entries)

        return build(schema, throttle_time=NO_THROTTLE, results=tuple(result(r) for r in request.resources))

    # ---------------------------------------------------------------- UpdateFeatures
    def _update_features(self, endpoint: Endpoint, version: int, request: Any, schema: type) -> Any:
        """ControllerApis.handleUpdateFeatures: the active controller decides (a broker forwards to it, another
        controller answers NOT_CONTROLLER); one error for the request, also each feature's below v2."""
        s = self.scenario
        if endpoint.role == "controller" and endpoint.node_id != s.quorum.leader_id:
            code, message = NOT_CONTROLLER, None
        elif s.update_features_error != NONE:
            code, message = s.update_features_error, s.update_features_error_message
        else:
            code, message = self._feature_updates_error(request.feature_updates)
            if code == NONE and not getattr(request, "validate_only", False):  # v1+
                for u in request.feature_updates:
                    if u.max_version_level > 0:
                        s.finalized_features[u.feature] = int(u.max_version_level)
                    else:
                        s.finalized_features.pop(u.feature, None)
                s.features_epoch += 1  # Kafka's is the offset of the record: it goes up
        result_cls = nested(schema, "UpdatableFeatureResult")
        results = tuple(build(result_cls, feature=u.feature, error_code=ErrorCode(code), error_message=message)
                        for u in request.feature_updates)
        return build(schema, throttle_time=NO_THROTTLE, error_code=ErrorCode(code), error_message=message,
                     results=results)

    def _feature_updates_error(self, updates: Any) -> tuple[int, str | None]:
        """FeatureControlManager.updateFeature for each update, the first error winning (nothing is applied then):
        a level some node (the controllers first) does not support, or an upgrade below the finalized level."""
        s = self.scenario
        nodes = [("Controller", c.node_id) for c in s.controllers] + [("Broker", b.node_id) for b in s.brokers]
        for u in updates:
            level, feature = int(u.max_version_level), u.feature
            for kind, node_id in nodes:
                lo, hi = s.features_of(node_id).get(feature, (0, 0))
                if level > 0 and not lo <= level <= hi:
                    return INVALID_UPDATE_VERSION, (f"Invalid update version {level} for feature {feature}. "
                                                    f"{kind} {node_id} only supports versions {lo}-{hi}")
            # v1+: UpgradeType 1 is an upgrade only; v0: AllowDowngrade false
            upgrade_only = int(u.upgrade_type) == 1 if hasattr(u, "upgrade_type") else not u.allow_downgrade
            if upgrade_only and level < s.finalized_features.get(feature, 0):
                return INVALID_UPDATE_VERSION, (f"Invalid update version {level} for feature {feature}. Can't "
                                                "downgrade the version of this feature without setting the upgrade "
                                                "type to either safe or unsafe downgrade.")
        return NONE, None

    _handlers: dict[int, Callable[[AsyncKraftServer, Endpoint, int, Any, type], Any]] = {
        API_VERSIONS: _api_versions,
        METADATA: _metadata,
        DESCRIBE_CLUSTER: _describe_cluster,
        DESCRIBE_QUORUM: _describe_quorum,
        UNREGISTER_BROKER: _unregister_broker,
        DESCRIBE_LOG_DIRS: _describe_log_dirs,
        DESCRIBE_CONFIGS: _describe_configs,
        UPDATE_FEATURES: _update_features,
        DESCRIBE_TOPIC_PARTITIONS: _describe_topic_partitions,
        LIST_CONFIG_RESOURCES: _list_config_resources,
        LIST_PARTITION_REASSIGNMENTS: _list_partition_reassignments,
    }


class KraftServer:
    """Blocking wrapper: the asyncio server on its own event-loop thread.

    `start()` binds every listener (ports are then in the scenario's nodes and in `port()`);
    `stop()` closes them and ends the thread; also a context manager. Starting again after
    stop() listens on the same ports (a restarted node), and `requests` are kept."""

    def __init__(self, scenario: Scenario | None = None, host: str = "127.0.0.1") -> None:
        self.scenario = scenario if scenario is not None else Scenario.cluster()
        self._server = AsyncKraftServer(self.scenario, host)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def _run(self, coro: Coroutine[Any, Any, T], timeout: float = 10.0) -> T:
        assert self._loop is not None, "not started"
        fut: Future[T] = asyncio.run_coroutine_threadsafe(coro, self._loop)
        return fut.result(timeout)

    def start(self) -> KraftServer:
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
            self._thread = threading.Thread(target=self._loop.run_forever, name="kraft-test-server", daemon=True)
            self._thread.start()
            self._run(self._server.start())
        return self

    def stop(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        with contextlib.suppress(Exception):
            self._run(self._server.stop())
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        loop.close()
        self._loop = self._thread = None

    def __enter__(self) -> KraftServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---------------------------------------------------------------- addresses
    def port(self, node_id: int, role: Role = "broker") -> int:
        return self._server.endpoints[(role, node_id)].port

    def address(self, node_id: int, role: Role = "broker") -> str:
        return f"{self._server.host}:{self.port(node_id, role)}"

    def bootstrap(self, role: Role = "broker") -> str:
        """Comma-separated addresses of every listening node of a role, e.g. for bootstrap_servers."""
        return ",".join(f"{self._server.host}:{e.port}" for (r, _), e in self._server.endpoints.items() if r == role)

    # ---------------------------------------------------------------- scenario and records
    def update(self, change: Callable[[Scenario], object]) -> None:
        """Apply `change(scenario)` on the server's loop, i.e. atomically between two requests."""
        assert self._loop is not None, "not started"

        async def apply() -> None:
            change(self.scenario)

        self._run(apply())

    @property
    def requests(self) -> list[RecordedRequest]:
        return list(self._server.requests)

    def requests_for(self, api_key: int, role: Role | None = None) -> list[RecordedRequest]:
        return [r for r in self._server.requests if r.api_key == api_key and role in (None, r.endpoint.role)]

    def clear_requests(self) -> None:
        self._server.requests.clear()
