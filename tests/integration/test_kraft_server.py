"""tests/support/kraft_server.py: the kio-based KRaft test server, checked on its own terms.

Requests are built with kafka-python's request classes and sent over kafka-python's raw
connection code (no Metadata bootstrap: controllers do not answer Metadata), so the server's kio
codec meets an independent one. UnregisterBroker (which kafka-python does not ship) and the
KIP-511 bytes are built and read by hand with `struct`.
"""

from __future__ import annotations

import socket
import struct
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kafka import KafkaAdminClient
from kafka.errors import IncompatibleBrokerVersion, KafkaTimeoutError
from kafka.net.manager import KafkaConnectionManager
from kafka.net.selector import NetworkSelector
from kafka.protocol.admin.cluster import DescribeClusterRequest, DescribeQuorumRequest, UpdateFeaturesRequest
from kafka.protocol.metadata import MetadataRequest
from kafka.protocol.metadata.api_versions import ApiVersionsRequest

from tests.support.kafka_wire import closes_connection, exchange, request
from tests.support.kraft_server import (
    API_VERSIONS,
    DESCRIBE_CLUSTER,
    DESCRIBE_QUORUM,
    METADATA,
    UNREGISTER_BROKER,
    UPDATE_FEATURES,
    KraftServer,
    Listener,
    Node,
    Quorum,
    Replica,
    Scenario,
    VoterNode,
)

pytestmark = pytest.mark.integration

NOW = 1_764_000_000_000
CLUSTER_ID = "Ek8tjqq1QBWfnaoyHFZqDg"


# ------------------------------------------------------------------------- kafka-python, raw
class RawKafka:
    """One kafka-python connection to one address, without the Metadata bootstrap that
    KafkaAdminClient does (which a KRaft controller cannot answer).

    get_connection() connects and runs ApiVersions (with the KIP-511 fallback); the request is
    sent at min(client max, advertised max, the request's max_version). refresh_metadata_on_err
    must be False: otherwise a connection error starts the Metadata refresh loop."""

    def __init__(self, address: str, **config: Any) -> None:
        self.net = NetworkSelector(client_id="kadmin-test")
        self.manager = KafkaConnectionManager(
            self.net, bootstrap_servers=address, client_id="kadmin-test", request_timeout_ms=5000, **config
        )
        self.node_id = self.manager.cluster.bootstrap_brokers()[0].node_id  # "bootstrap-0"
        self.net.start()

    async def _send(self, request: Any) -> Any:
        conn = self.manager.get_connection(self.node_id, refresh_metadata_on_err=False)
        await conn  # connected, ApiVersions done
        return await conn.send_request(request)

    def send(self, request: Any) -> Any:
        return self.manager.run(self._send, request)

    def close(self) -> None:
        self.manager.close()
        self.net.stop()
        self.net.close()

    def __enter__(self) -> RawKafka:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def describe_quorum(max_version: int | None = None) -> Any:
    topic = DescribeQuorumRequest.TopicData
    return DescribeQuorumRequest(
        topics=[topic(topic_name="__cluster_metadata", partitions=[topic.PartitionData(partition_index=0)])],
        max_version=max_version,
    )


def describe_cluster(endpoint_type: int = 1, include_fenced: bool = False, max_version: int | None = None) -> Any:
    kw: dict[str, Any] = {"include_cluster_authorized_operations": False, "max_version": max_version}
    if endpoint_type != 1:
        kw["endpoint_type"] = endpoint_type
    if include_fenced:
        kw["include_fenced_brokers"] = True
    return DescribeClusterRequest(**kw)


# ------------------------------------------------------------------------- fixtures
def quorum_scenario() -> Scenario:
    """Distinct values everywhere, -1 timestamps and a missing directory id included."""
    s = Scenario(
        cluster_id=CLUSTER_ID,
        brokers=[Node(1, rack="a"), Node(2, rack="b"), Node(3, rack=None, fenced=True)],
        controllers=[
            Node(3000, rack="a", listener_name="CONTROLLER"),
            Node(3001, listener_name="CONTROLLER"),
            Node(3002, listener_name="CONTROLLER"),
        ],
        quorum=Quorum(
            leader_id=3000,
            leader_epoch=7,
            high_watermark=123_456,
            voters=[
                Replica(3000, uuid.UUID(int=0xA0), 123_457, NOW, NOW),
                Replica(3001, uuid.UUID(int=0xA1), 123_450, NOW - 12, NOW - 30),
                Replica(3002, None, 123_416, -1, -1),
            ],
            observers=[Replica(1, uuid.UUID(int=0xB1), 123_453, NOW - 5, NOW - 7)],
        ),
        broker_reported_controller_id=2,
    )
    return s


@pytest.fixture
def server() -> Iterator[KraftServer]:
    with KraftServer(quorum_scenario()) as srv:
        yield srv


def replica_dict(r: Replica, version: int) -> dict[str, Any]:
    """What kafka-python decodes for a ReplicaState at `version` (zero Uuid -> None)."""
    d: dict[str, Any] = {"replica_id": r.replica_id}
    if version >= 2:
        d["replica_directory_id"] = str(r.directory_id) if r.directory_id else None
    d["log_end_offset"] = r.log_end_offset
    if version >= 1:
        d["last_fetch_timestamp"] = r.last_fetch_timestamp
        d["last_caught_up_timestamp"] = r.last_caught_up_timestamp
    return d


# ------------------------------------------------------------------------- KafkaAdminClient
def test_admin_client_bootstraps_from_a_broker_and_describes_the_cluster(server: KraftServer) -> None:
    admin = KafkaAdminClient(bootstrap_servers=server.bootstrap("broker"), request_timeout_ms=5000)
    try:
        cluster = admin.describe_cluster()
    finally:
        admin.close()
    assert cluster["cluster_id"] == CLUSTER_ID
    assert cluster["controller_id"] == 2  # a broker, as KRaft brokers report
    assert cluster["brokers"] == [
        {"broker_id": 1, "host": "127.0.0.1", "port": server.port(1), "rack": "a", "is_fenced": False},
        {"broker_id": 2, "host": "127.0.0.1", "port": server.port(2), "rack": "b", "is_fenced": False},
        {"broker_id": 3, "host": "127.0.0.1", "port": server.port(3), "rack": None, "is_fenced": True},
    ]  # kafka-python's describe_cluster() sends IncludeFencedBrokers=true
    seen = [(r.api_key, r.api_version, r.endpoint.role) for r in server.requests]
    assert seen[:2] == [(API_VERSIONS, 4, "broker"), (METADATA, 12, "broker")]
    assert (DESCRIBE_CLUSTER, 2, "broker") in seen
    metadata = server.requests_for(METADATA)[0]
    assert metadata.header.client_id.startswith("kafka-python")


def test_admin_client_cannot_bootstrap_from_a_controller(server: KraftServer) -> None:
    """Why kadmin needs the raw connection for controllers: no Metadata there, so bootstrap fails."""
    with pytest.raises(KafkaTimeoutError):
        KafkaAdminClient(
            bootstrap_servers=server.address(3000, "controller"), request_timeout_ms=2000, bootstrap_timeout_ms=300
        )
    assert server.requests_for(API_VERSIONS, "controller")
    assert not server.requests_for(METADATA)  # kafka-python never sends an API that is not advertised


def test_kafka_python_describe_metadata_quorum_breaks_on_v1(server: KraftServer) -> None:
    """A canary for the kafka-python 3.0.12 bug kadmin works around (it pops `error_message`,
    a v2-only field); when this fails, kafka-python fixed it."""
    server.update(lambda s: s.broker_apis.__setitem__(DESCRIBE_QUORUM, (0, 1)))
    admin = KafkaAdminClient(bootstrap_servers=server.bootstrap("broker"), request_timeout_ms=5000)
    try:
        with pytest.raises(KeyError, match="error_message"):
            admin.describe_metadata_quorum()
    finally:
        admin.close()
    assert [r.api_version for r in server.requests_for(DESCRIBE_QUORUM)] == [1]


@pytest.mark.parametrize("cap", [1, 8, 12, 13])
def test_metadata_lists_unfenced_brokers(server: KraftServer, cap: int) -> None:
    server.update(lambda s: s.broker_apis.__setitem__(METADATA, (0, cap)))
    with RawKafka(server.address(2)) as kafka:
        response = kafka.send(MetadataRequest(topics=None))
    assert response.version == cap
    assert [(b.node_id, b.host, b.port, b.rack) for b in response.brokers] == [
        (1, "127.0.0.1", server.port(1), "a"),
        (2, "127.0.0.1", server.port(2), "b"),
    ]
    assert (response.controller_id, response.topics) == (2, [])
    if cap >= 2:
        assert response.cluster_id == CLUSTER_ID


# ------------------------------------------------------------------------- DescribeQuorum
@pytest.mark.parametrize("version", [0, 1, 2])
def test_describe_quorum_capped_by_the_controller(server: KraftServer, version: int) -> None:
    """The controller advertises DescribeQuorum up to `version`; the negotiated response carries
    LEO always, timestamps from v1, directory ids, error messages and Nodes from v2."""
    server.update(lambda s: s.controller_apis.__setitem__(DESCRIBE_QUORUM, (0, version)))
    with RawKafka(server.address(3000, "controller")) as kafka:
        response = kafka.send(describe_quorum())
    assert response.version == version
    assert [(r.api_version, r.endpoint.node_id) for r in server.requests_for(DESCRIBE_QUORUM)] == [(version, 3000)]

    got = response.to_dict()
    q = server.scenario.quorum
    expected_partition: dict[str, Any] = {"partition_index": 0, "error_code": 0}
    if version >= 2:
        expected_partition["error_message"] = None
    expected_partition |= {
        "leader_id": 3000,
        "leader_epoch": 7,
        "high_watermark": 123_456,
        "current_voters": [replica_dict(r, version) for r in q.voters],
        "observers": [replica_dict(r, version) for r in q.observers],
    }
    assert got["topics"] == [{"topic_name": "__cluster_metadata", "partitions": [expected_partition]}]
    assert got["error_code"] == 0
    if version >= 2:
        assert got["error_message"] is None
        assert got["nodes"] == [
            {
                "node_id": c,
                "listeners": [{"name": "CONTROLLER", "host": "127.0.0.1", "port": server.port(c, "controller")}],
            }
            for c in (3000, 3001, 3002)
        ]
    else:
        assert "nodes" not in got and "error_message" not in got


def test_describe_quorum_max_version_pins_one_request(server: KraftServer) -> None:
    with RawKafka(server.address(3000, "controller")) as kafka:
        versions = [kafka.send(describe_quorum(max_version=v)).API_VERSION for v in (1, None, 0)]
    assert versions == [1, 2, 0]
    assert [r.api_version for r in server.requests_for(DESCRIBE_QUORUM)] == [1, 2, 0]


def test_describe_quorum_explicit_nodes_and_forwarding_broker(server: KraftServer) -> None:
    nodes = [VoterNode(3000, [Listener("CONTROLLER", "c0.example", 9093), Listener("SSL", "c0.example", 9094)])]
    server.update(lambda s: setattr(s.quorum, "nodes", nodes))
    with RawKafka(server.address(2)) as kafka:  # a broker answers (Kafka forwards it to the leader)
        response = kafka.send(describe_quorum())
    partition = response.topics[0].partitions[0]
    assert (partition.error_code, partition.leader_id) == (0, 3000)
    assert response.to_dict()["nodes"] == [
        {
            "node_id": 3000,
            "listeners": [
                {"name": "CONTROLLER", "host": "c0.example", "port": 9093},
                {"name": "SSL", "host": "c0.example", "port": 9094},
            ],
        }
    ]


def test_describe_quorum_errors(server: KraftServer) -> None:
    def partition_of(response: Any) -> Any:
        return response.topics[0].partitions[0]

    with RawKafka(server.address(3001, "controller")) as follower:
        p = partition_of(follower.send(describe_quorum()))  # not the leader: Kafka's automatic answer
        assert (p.error_code, p.leader_id, p.current_voters, p.observers) == (6, 0, [], [])

        server.update(lambda s: setattr(s.quorum, "leader_id", 3001))  # leadership moved
        p = partition_of(follower.send(describe_quorum()))
        assert (p.error_code, p.leader_id, p.high_watermark) == (0, 3001, 123_456)

        server.update(lambda s: setattr(s.quorum, "partition_error", 6))  # forced on every endpoint
        p = partition_of(follower.send(describe_quorum()))
        assert p.error_code == 6

        server.update(lambda s: setattr(s.quorum, "error_code", 31))
        response = follower.send(describe_quorum())
        assert (response.error_code, response.topics, response.nodes) == (31, [], [])

        server.update(lambda s: setattr(s.quorum, "error_code", 0))
        topic = DescribeQuorumRequest.TopicData
        wrong = DescribeQuorumRequest(
            topics=[topic(topic_name="other", partitions=[topic.PartitionData(partition_index=1)])]
        )
        response = follower.send(wrong)
        assert response.to_dict()["topics"][0]["topic_name"] == "other"
        assert (partition_of(response).partition_index, partition_of(response).error_code) == (1, 3)


# ------------------------------------------------------------------------- DescribeCluster
@pytest.mark.parametrize("version", [0, 1, 2])
def test_describe_cluster_on_a_broker(server: KraftServer, version: int) -> None:
    with RawKafka(server.address(1)) as kafka:
        plain = kafka.send(describe_cluster(max_version=version))
        with_fenced = kafka.send(describe_cluster(include_fenced=True)) if version == 2 else None
    assert plain.version == version
    got = plain.to_dict()
    assert (got["error_code"], got["cluster_id"], got["controller_id"]) == (0, CLUSTER_ID, 2)
    brokers = [(b["broker_id"], b["host"], b["port"], b["rack"]) for b in got["brokers"]]
    assert brokers == [(1, "127.0.0.1", server.port(1), "a"), (2, "127.0.0.1", server.port(2), "b")]
    assert ("endpoint_type" in got) == (version >= 1)
    assert all(("is_fenced" in b) == (version >= 2) for b in got["brokers"])
    if with_fenced is not None:
        fenced = [(b["broker_id"], b["is_fenced"]) for b in with_fenced.to_dict()["brokers"]]
        assert fenced == [(1, False), (2, False), (3, True)]
        assert server.requests_for(DESCRIBE_CLUSTER)[-1].body.include_fenced_brokers is True


@pytest.mark.parametrize("version", [1, 2])
def test_describe_cluster_on_a_controller(server: KraftServer, version: int) -> None:
    with RawKafka(server.address(3002, "controller")) as kafka:
        response = kafka.send(describe_cluster(endpoint_type=2, max_version=version))
        server.update(lambda s: setattr(s.quorum, "leader_id", -1))
        leaderless = kafka.send(describe_cluster(endpoint_type=2, max_version=version))
    assert response.version == version
    assert (response.error_code, response.endpoint_type, response.controller_id) == (0, 2, 3000)
    assert [(b.broker_id, b.port, b.rack) for b in response.brokers] == [
        (3000, server.port(3000, "controller"), "a"),
        (3001, server.port(3001, "controller"), None),
        (3002, server.port(3002, "controller"), None),
    ]
    assert leaderless.controller_id == -1


@pytest.mark.parametrize(
    ("role", "node", "endpoint_type", "version", "code"),
    [
        ("broker", 1, 2, 2, 114),  # MISMATCHED_ENDPOINT_TYPE
        ("controller", 3000, 1, 1, 114),
        ("controller", 3000, 1, 0, 42),  # v0 means brokers; INVALID_REQUEST at v0
        ("broker", 1, 3, 1, 115),  # UNSUPPORTED_ENDPOINT_TYPE
    ],
)
def test_describe_cluster_endpoint_type_errors(
    server: KraftServer, role: Any, node: int, endpoint_type: int, version: int, code: int
) -> None:
    with RawKafka(server.address(node, role)) as kafka:
        response = kafka.send(describe_cluster(endpoint_type=endpoint_type, max_version=version))
    assert response.version == version
    assert (response.error_code, response.cluster_id, response.brokers, response.controller_id) == (code, "", [], -1)
    if code == 114:
        expected, wanted = ("BROKER", "CONTROLLER") if role == "broker" else ("CONTROLLER", "BROKER")
        assert response.error_message == (
            f"The request was sent to an endpoint of type {expected}, but we wanted an endpoint of type {wanted}"
        )


# ------------------------------------------------------------------------- ApiVersions, closing
def test_kip511_fallback(server: KraftServer) -> None:
    server.update(lambda s: s.broker_apis.__setitem__(API_VERSIONS, (0, 2)))
    # By hand: ApiVersions v4 (header v2; body: compact strings + tags) against max 2.
    body = b"\x05kadm\x021\x00"
    response = exchange(server.port(1), request(API_VERSIONS, 4, body, header_version=2, corr=41))
    # Response header v0 (no tag byte), v0 body: error 35, [ApiVersions 0..2].
    assert response == struct.pack(">ihi" + "hhh", 41, 35, 1, API_VERSIONS, 0, 2)
    # kafka-python retries with v2 and goes on.
    server.clear_requests()
    with RawKafka(server.address(1)) as kafka:
        assert kafka.send(describe_cluster()).error_code == 0
    assert [(r.api_key, r.api_version) for r in server.requests] == [
        (API_VERSIONS, 4),
        (API_VERSIONS, 2),
        (DESCRIBE_CLUSTER, 2),
    ]
    assert server.requests[0].body is None and server.requests[0].header.client_id == "kadmin-test"


def test_a_controller_closes_on_metadata(server: KraftServer) -> None:
    # Metadata v12: topics null, allow_auto_topic_creation, include_topic_authorized_operations, tags.
    metadata_v12 = request(METADATA, 12, b"\x00\x01\x00\x00", header_version=2)
    assert closes_connection(server.port(3000, "controller"), metadata_v12)
    assert not server.requests_for(METADATA)
    # The same bytes on a broker are answered: the request was well-formed.
    assert struct.unpack_from(">i", exchange(server.port(1), metadata_v12))[0] == 7
    assert server.requests_for(METADATA)[0].endpoint.role == "broker"
    # kafka-python does not even send it to a controller (not in its ApiVersions).
    with RawKafka(server.address(3000, "controller")) as kafka, pytest.raises(IncompatibleBrokerVersion):
        kafka.send(MetadataRequest(topics=None))


def test_unadvertised_api_and_version_close_the_connection(server: KraftServer) -> None:
    server.update(lambda s: s.broker_apis.pop(UNREGISTER_BROKER))
    unregister = request(UNREGISTER_BROKER, 0, struct.pack(">i", 1) + b"\x00", header_version=2)
    assert closes_connection(server.port(1), unregister)
    describe_v3 = request(DESCRIBE_CLUSTER, 3, b"\x00\x01\x00\x00", header_version=2)
    assert closes_connection(server.port(1), describe_v3)
    trailing = request(UNREGISTER_BROKER, 0, struct.pack(">i", 1) + b"\x00\x00", header_version=2)
    assert closes_connection(server.port(3000, "controller"), trailing)
    assert server.requests == []


# ------------------------------------------------------------------------- UnregisterBroker
def unregister(port: int, broker_id: int) -> tuple[int, int, str | None]:
    """UnregisterBroker v0 by hand: header v2, BrokerId int32, no tags; response header v1,
    ThrottleTimeMs int32, ErrorCode int16, ErrorMessage compact nullable string, tags."""
    response = exchange(port, request(UNREGISTER_BROKER, 0, struct.pack(">i", broker_id) + b"\x00", header_version=2))
    corr, header_tags, throttle, error = struct.unpack_from(">iBih", response)
    assert (corr, header_tags, throttle) == (7, 0, 0)
    n = response[11]  # uvarint length + 1 (messages here are short); 0 = null
    message = None if n == 0 else response[12 : 12 + n - 1].decode()
    assert response[12 + max(n - 1, 0) :] == b"\x00"  # no tagged fields, nothing after
    return error, throttle, message


def test_unregister_broker(server: KraftServer) -> None:
    assert unregister(server.port(3000, "controller"), 2) == (0, 0, None)
    assert [b.node_id for b in server.scenario.brokers] == [1, 3]
    assert unregister(server.port(1), 2) == (102, 0, "Broker ID 2 is not currently registered")
    server.update(lambda s: s.unregister_errors.__setitem__(1, 31))
    assert unregister(server.port(1), 1) == (31, 0, None)
    assert [b.node_id for b in server.scenario.brokers] == [1, 3]
    bodies = [(r.endpoint.role, r.body.broker_id) for r in server.requests_for(UNREGISTER_BROKER)]
    assert bodies == [("controller", 2), ("broker", 2), ("broker", 1)]
    with RawKafka(server.address(1)) as kafka:  # gone from DescribeCluster too
        assert [b.broker_id for b in kafka.send(describe_cluster(include_fenced=True)).brokers] == [1, 3]


# ------------------------------------------------------------------------- feature flags
def api_versions(max_version: int | None = None) -> Any:
    return ApiVersionsRequest(client_software_name="kadmin-test", client_software_version="0", max_version=max_version)


def update_features(levels: dict[str, int], validate_only: bool = False, upgrade_type: int = 1,
                    max_version: int | None = None) -> Any:
    key = UpdateFeaturesRequest.FeatureUpdateKey
    return UpdateFeaturesRequest(timeout_ms=5000, validate_only=validate_only, max_version=max_version,
                                 feature_updates=[key(feature=f, max_version_level=lv, upgrade_type=upgrade_type)
                                                  for f, lv in levels.items()])


def features_of(response: Any) -> tuple[dict[str, tuple[int, int]], int, dict[str, tuple[int, int]]]:
    """(supported ranges, finalized epoch, finalized (min level, max level)) as kafka-python decodes them."""
    return ({f.name: (f.min_version, f.max_version) for f in response.supported_features},
            response.finalized_features_epoch,
            {f.name: (f.min_version_level, f.max_version_level) for f in response.finalized_features})


@pytest.mark.parametrize(("role", "node"), [("broker", 2), ("controller", 3001)])
def test_api_versions_carries_the_feature_flags(server: KraftServer, role: Any, node: int) -> None:
    """v4: every supported feature; v3: those whose minimum is 0 left out (KAFKA-17492); below v3: none."""
    server.update(lambda s: s.node_features.__setitem__(2, {"metadata.version": (1, 21), "kraft.version": (0, 1)}))
    with RawKafka(server.address(node, role)) as kafka:
        v4, v3, v2 = (kafka.send(api_versions(v)) for v in (4, 3, 2))
    assert (v4.version, v3.version, v2.version) == (4, 3, 2)
    supported, epoch, finalized = features_of(v4)
    if node == 2:  # a node of another release
        assert supported == {"metadata.version": (1, 21), "kraft.version": (0, 1)}
    else:
        assert supported["metadata.version"] == (7, 30) and supported["transaction.version"] == (0, 2)
        assert len(supported) == 7
    assert (epoch, finalized) == (1000, {"metadata.version": (21, 21)})
    assert features_of(v3) == ({"metadata.version": supported["metadata.version"]}, 1000, finalized)
    assert "supported_features" not in v2.to_dict()
    assert {k.api_key: (k.min_version, k.max_version) for k in v4.api_keys}[UPDATE_FEATURES] == (0, 1)


def test_node_apis_caps_one_node(server: KraftServer) -> None:
    """ApiVersions at most v2 on broker 1 alone: kafka-python falls back (KIP-511) and gets no feature flags there."""
    server.update(lambda s: s.node_apis.__setitem__(1, {API_VERSIONS: (0, 2)}))
    with RawKafka(server.address(1)) as one, RawKafka(server.address(2)) as two:
        assert (one.send(api_versions()).version, two.send(api_versions()).version) == (2, 4)
    assert [(r.endpoint.node_id, r.api_version) for r in server.requests_for(API_VERSIONS)][-1] == (2, 4)


@pytest.mark.parametrize("version", [0, 1])
def test_update_features_validates_then_finalizes(server: KraftServer, version: int) -> None:
    """Through a broker (forwarded) and at the active controller: ValidateOnly changes nothing (v1), an upgrade
    finalizes every level at once and raises the epoch; each feature's result carries the request's error."""
    levels = {"metadata.version": 25, "kraft.version": 1}
    with RawKafka(server.address(1)) as broker, RawKafka(server.address(3000, "controller")) as leader:
        if version == 1:
            checked = broker.send(update_features(levels, validate_only=True, max_version=1))
            assert (checked.version, checked.error_code) == (1, 0)
            assert [(r.feature, r.error_code, r.error_message) for r in checked.results] == [
                ("metadata.version", 0, None), ("kraft.version", 0, None)]
            assert server.scenario.finalized_features == {"metadata.version": 21}
        done = leader.send(update_features(levels, max_version=version))
        assert (done.version, done.error_code, done.error_message) == (version, 0, None)
        assert features_of(broker.send(api_versions()))[1:] == (
            1001, {"metadata.version": (25, 25), "kraft.version": (1, 1)})
    sent = [getattr(r.body, "validate_only", False) for r in server.requests_for(UPDATE_FEATURES)]  # v1+
    assert sent == ([True, False] if version == 1 else [False])


@pytest.mark.parametrize(
    ("change", "levels", "at", "code", "message"),
    [
        (None, {"metadata.version": 31}, 1, 95,
         "Invalid update version 31 for feature metadata.version. Controller 3000 only supports versions 7-30"),
        (lambda s: s.node_features.__setitem__(2, {"metadata.version": (1, 21)}), {"kraft.version": 1}, 1, 95,
         "Invalid update version 1 for feature kraft.version. Broker 2 only supports versions 0-0"),
        (None, {"metadata.version": 20}, 1, 95,
         "Invalid update version 20 for feature metadata.version. Can't downgrade the version of this feature "
         "without setting the upgrade type to either safe or unsafe downgrade."),
        (None, {"metadata.version": 25}, 3001, 41, None),  # not the active controller
        (lambda s: (setattr(s, "update_features_error", 96), setattr(s, "update_features_error_message", "no")),
         {"metadata.version": 25}, 2, 96, "no"),
    ],
    ids=["unsupported-by-a-controller", "unsupported-by-a-broker", "downgrade", "not-controller", "forced"],
)
def test_update_features_errors_change_nothing(server: KraftServer, change: Any, levels: dict[str, int], at: int,
                                               code: int, message: str | None) -> None:
    if change is not None:
        server.update(change)
    role: Any = "controller" if at >= 3000 else "broker"
    with RawKafka(server.address(at, role)) as kafka:
        response = kafka.send(update_features({**levels, "group.version": 1}))
    assert (response.version, response.error_code, response.error_message) == (1, code, message)
    assert [(r.feature, r.error_code, r.error_message) for r in response.results] == [
        (f, code, message) for f in [*levels, "group.version"]]
    assert (server.scenario.finalized_features, server.scenario.features_epoch) == ({"metadata.version": 21}, 1000)


def test_stop_frees_the_ports() -> None:
    srv = KraftServer(Scenario.cluster(brokers=3, controllers=3)).start()
    port = srv.port(1)
    srv.stop()
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", port)) != 0
