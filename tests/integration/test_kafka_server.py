"""kadmin.sandbox.broker: the emulated ZK-mode broker, spoken to with hand-built bytes.

Requests and expected responses are written here straight from Kafka's message schemas, with
`struct`, independently of the server's own codec; ZooKeeper state is checked with kazoo.
"""

from __future__ import annotations

import json
import ssl
import struct
from collections.abc import Iterator

import pytest
from kafka import KafkaAdminClient
from kazoo.client import KazooClient

from kadmin.domain import znodes
from kadmin.sandbox.broker.server import ThreadedBroker
from kadmin.sandbox.fleet import BrokerSpec, ThreadedFleet
from tests.support.kafka_wire import closes_connection, exchange, request

pytestmark = pytest.mark.integration

METADATA, CONTROLLED_SHUTDOWN, API_VERSIONS = 3, 7, 18
CLUSTER_ID = "kadmin-sandbox-cluster"  # Fleet.setup_cluster's default


# ------------------------------------------------------------------------- wire helpers
def cs_body(version: int, broker_id: int, epoch: int = -1) -> bytes:
    """ControlledShutdownRequest: BrokerId int32; BrokerEpoch int64 from v2; tagged fields from v3."""
    body = struct.pack(">i", broker_id)
    if version >= 2:
        body += struct.pack(">q", epoch)
    if version >= 3:
        body += b"\x00"
    return body


def cs_header_version(version: int) -> int:
    return {0: 0, 1: 1, 2: 1, 3: 2}[version]


def parse_cs_response(version: int, frame: bytes) -> tuple[int, int, list[tuple[str, int]]]:
    """(correlation id, error code, remaining partitions); v3 is compact, with response header v1."""
    (corr,) = struct.unpack_from(">i", frame, 0)
    pos = 4
    if version >= 3:
        assert frame[pos] == 0, "response header v1: empty tagged fields"
        pos += 1
    (error,) = struct.unpack_from(">h", frame, pos)
    pos += 2
    remaining = []
    if version >= 3:
        assert frame[pos] < 0x80  # one-byte varints suffice for these small answers
        count = frame[pos] - 1
        pos += 1
        for _ in range(count):
            n = frame[pos] - 1
            topic = frame[pos + 1 : pos + 1 + n].decode()
            (index,) = struct.unpack_from(">i", frame, pos + 1 + n)
            assert frame[pos + 5 + n] == 0  # the entry's tagged fields
            pos += 6 + n
            remaining.append((topic, index))
        assert frame[pos:] == b"\x00"  # the body's tagged fields, then nothing
    else:
        (count,) = struct.unpack_from(">i", frame, pos)
        pos += 4
        for _ in range(count):
            (n,) = struct.unpack_from(">h", frame, pos)
            topic = frame[pos + 2 : pos + 2 + n].decode()
            (index,) = struct.unpack_from(">i", frame, pos + 2 + n)
            pos += 6 + n
            remaining.append((topic, index))
        assert pos == len(frame)
    return corr, error, remaining


def shutdown(port: int, version: int, broker_id: int, epoch: int = -1, corr: int = 7,
             ssl_ctx: ssl.SSLContext | None = None) -> tuple[int, list[tuple[str, int]]]:
    frame = exchange(port, request(CONTROLLED_SHUTDOWN, version, cs_body(version, broker_id, epoch),
                                   header_version=cs_header_version(version), corr=corr), ssl_ctx)
    got_corr, error, remaining = parse_cs_response(version, frame)
    assert got_corr == corr
    return error, remaining


# ------------------------------------------------------------------------------ fixtures
@pytest.fixture
def cluster(fleet: ThreadedFleet, zk_server, chroot: str) -> Iterator[dict[int, ThreadedBroker]]:
    """Brokers 1-3, each registered with the port of its own emulated broker (so every broker a
    Metadata answer lists is reachable); broker 1 is the controller.

    orders: p0 led by 1, p1 led by 2, p2 led by 3 (RF 3); solo: RF 1 on broker 1;
    stuck: replicas [1, 4] with 4 never registered, so its ISR is [1] and nobody can take over.
    """
    brokers: dict[int, ThreadedBroker] = {}
    try:
        for i in (1, 2, 3):
            b = ThreadedBroker(i, zk_server.hosts, chroot=chroot, loop=fleet.loop)
            b.start()
            brokers[i] = b
            fleet.register(BrokerSpec(i, port=b.port))
        assert fleet.controller_id == 1
        fleet.create_topic("orders", {0: [1, 2, 3], 1: [2, 1, 3], 2: [3, 2, 1]})
        fleet.create_topic("solo", {0: [1]})
        fleet.create_topic("stuck", {0: [1, 4]})
        yield brokers
    finally:
        for b in brokers.values():
            b.stop()


@pytest.fixture
def kz(zk_server, chroot: str) -> Iterator[KazooClient]:
    k = KazooClient(hosts=zk_server.connect_string + chroot)
    k.start(timeout=15)
    yield k
    k.stop()
    k.close()


def state(kz: KazooClient, topic: str, partition: int) -> tuple[dict, int, bytes]:
    """(decoded state, zkVersion = partition epoch, raw bytes)."""
    data, stat = kz.get(f"/brokers/topics/{topic}/partitions/{partition}/state")
    return json.loads(data), stat.version, data


def controller_epoch(kz: KazooClient) -> int:
    return int(kz.get("/controller_epoch")[0])


# ------------------------------------------------------------------------------ ApiVersions
def test_our_encoder_matches_the_documented_v3_body():
    assert cs_body(3, 1, 4711) == bytes.fromhex("00000001 0000000000001267 00")


def test_api_versions_v0(cluster):
    frame = exchange(cluster[1].port, request(API_VERSIONS, 0, b"", header_version=1, corr=11))
    expected = struct.pack(">ihi", 11, 0, 3) + struct.pack(">hhh", 3, 0, 8) + struct.pack(">hhh", 7, 0, 3) \
        + struct.pack(">hhh", 18, 0, 3)  # v0: no throttle_time_ms
    assert frame == expected


def test_api_versions_v3_is_flexible_but_answers_with_header_v0(cluster):
    body = b"\x07kadmin" + b"\x040.1" + b"\x00"  # compact strings (length + 1), empty tags
    frame = exchange(cluster[1].port, request(API_VERSIONS, 3, body, header_version=2, corr=12))
    expected = (
        struct.pack(">i", 12)  # response header v0: no tagged-field byte, even for v3
        + struct.pack(">h", 0)
        + b"\x04"  # compact array: 3 entries
        + struct.pack(">hhh", 3, 0, 8) + b"\x00"
        + struct.pack(">hhh", 7, 0, 3) + b"\x00"
        + struct.pack(">hhh", 18, 0, 3) + b"\x00"
        + struct.pack(">i", 0)  # throttle_time_ms
        + b"\x00"
    )
    assert frame == expected
    rec = cluster[1].requests[-1]
    assert rec.body == {"client_software_name": "kadmin", "client_software_version": "0.1"}
    assert rec.header["client_id"] == "kadmin-test" and rec.header["header_version"] == 2


def test_api_versions_v4_gets_the_kip511_answer(cluster):
    body = b"\x07kadmin" + b"\x040.1" + b"\x00"
    frame = exchange(cluster[1].port, request(API_VERSIONS, 4, body, header_version=2, corr=13))
    # A v0 body: UNSUPPORTED_VERSION (35) and ApiVersions' own range, which the client retries with.
    assert frame == struct.pack(">ihi", 13, 35, 1) + struct.pack(">hhh", 18, 0, 3)


def test_without_controlled_shutdown_key_7_is_not_advertised_or_served(fleet, zk_server, chroot):
    b = ThreadedBroker(1, zk_server.hosts, chroot=chroot, loop=fleet.loop, controlled_shutdown_versions=None)
    b.start()
    capped = ThreadedBroker(1, zk_server.hosts, chroot=chroot, loop=fleet.loop, controlled_shutdown_versions=(0, 2))
    capped.start()
    try:
        frame = exchange(b.port, request(API_VERSIONS, 0, b"", header_version=1))
        assert frame[4:] == struct.pack(">hi", 0, 2) + struct.pack(">hhhhhh", 3, 0, 8, 18, 0, 3)
        # Like Kafka with a request it cannot parse: the connection is closed, nothing answered.
        assert closes_connection(b.port, request(CONTROLLED_SHUTDOWN, 1, cs_body(1, 1), header_version=1))
        assert closes_connection(capped.port, request(CONTROLLED_SHUTDOWN, 3, cs_body(3, 1), header_version=2))
        assert shutdown(capped.port, 2, 1, -1)[0] == 11  # served (no /controller here at all)
    finally:
        b.stop()
        capped.stop()


def test_a_request_with_trailing_bytes_is_rejected(cluster):
    # ControlledShutdown v1 has no epoch field: an epoch sent anyway is a client encoding bug.
    assert closes_connection(cluster[1].port, request(CONTROLLED_SHUTDOWN, 1, cs_body(2, 1, 5), header_version=1))


# ---------------------------------------------------------------------- ControlledShutdown
@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_controlled_shutdown_moves_leadership_and_shrinks_isrs(cluster, fleet, kz, version):
    epoch = fleet.epochs[1] if version >= 2 else -1
    cepoch = controller_epoch(kz)
    error, remaining = shutdown(cluster[1].port, version, 1, epoch)

    # stuck-0 cannot move (its only other replica is not live); solo-0 has RF 1, which
    # partitionLeadersOnBroker leaves out (`partitionReplicaAssignment(tp).size > 1`).
    assert (error, remaining) == (0, [("stuck", 0)])
    doc, version0, raw = state(kz, "orders", 0)  # led by 1: the first live ISR replica of [1, 2, 3] but 1
    assert raw == b'{"version":1,"leader":2,"leader_epoch":1,"controller_epoch":%d,"isr":[2,3]}' % cepoch
    assert version0 == 1  # written with the partition epoch as the expected version
    doc, v, _ = state(kz, "orders", 1)  # followed by 1: the ISR shrinks, the leader stays
    assert (doc["leader"], doc["leader_epoch"], doc["isr"], v) == (2, 1, [2, 3], 1)
    doc, v, _ = state(kz, "orders", 2)
    assert (doc["leader"], doc["leader_epoch"], doc["isr"], v) == (3, 1, [3, 2], 1)
    for topic in ("solo", "stuck"):
        doc, v, _ = state(kz, topic, 0)
        assert (doc["leader"], doc["leader_epoch"], doc["isr"], v) == (1, 0, [1], 0)

    rec = cluster[1].requests[-1]
    assert (rec.api_key, rec.api_version, rec.body) == (7, version, {"broker_id": 1, "broker_epoch": epoch})
    assert rec.header["header_version"] == cs_header_version(version)
    assert ("client_id" in rec.header) == (version >= 1)  # request header v0 has none


def test_shutting_down_brokers_stay_out_until_they_bounce(cluster, fleet, kz):
    assert shutdown(cluster[1].port, 3, 2, fleet.epochs[2])[0] == 0
    fleet.create_topic("later", {0: [3, 2, 1]}, controller_epoch=controller_epoch(kz))  # ISR [3, 2, 1]
    # Broker 3 goes too: broker 2 is still registered but shutting down, so it is not elected, and
    # the new ISR drops every shutting-down broker, not just the one asking.
    assert shutdown(cluster[1].port, 3, 3, fleet.epochs[3]) == (0, [])
    doc, _, _ = state(kz, "later", 0)
    assert (doc["leader"], doc["isr"]) == (1, [1])

    # A bounce (a new epoch) takes broker 2 out of the shutting-down set (onBrokerFailure).
    fleet.bounce(2)
    assert fleet.controller_id == 1
    fleet.create_topic("again", {0: [3, 2, 1]}, controller_epoch=controller_epoch(kz))
    assert shutdown(cluster[1].port, 3, 3, fleet.epochs[3]) == (0, [])
    doc, _, _ = state(kz, "again", 0)
    assert (doc["leader"], doc["isr"]) == (2, [2, 1])


def test_stale_broker_epoch_is_rejected(cluster, fleet, kz):
    old = fleet.epochs[2]
    _, new = fleet.bounce(2)
    assert new > old
    assert shutdown(cluster[1].port, 2, 2, old) == (77, [])
    assert shutdown(cluster[1].port, 3, 2, old) == (77, [])
    assert shutdown(cluster[1].port, 3, 1, fleet.epochs[1] - 1) == (77, [])  # one less is already stale
    assert all(state(kz, "orders", p)[1] == 0 for p in range(3))  # nothing written


def test_a_newer_epoch_than_the_cached_one_is_accepted(cluster, fleet):
    # The check is `brokerEpoch < cachedBrokerEpoch`: only older epochs are stale.
    assert shutdown(cluster[1].port, 3, 2, fleet.epochs[2] + 1000) == (0, [])


def test_unknown_epoch_skips_the_epoch_check(cluster, fleet):
    fleet.bounce(2)
    assert shutdown(cluster[1].port, 2, 2, -1) == (0, [])
    assert shutdown(cluster[1].port, 1, 3) == (0, [])  # v1 has no epoch field at all


def test_a_broker_that_is_not_the_controller_answers_stale_controller_epoch(cluster, fleet, kz):
    assert shutdown(cluster[2].port, 3, 1, fleet.epochs[1]) == (11, [])  # ControllerMovedException, not 41
    assert state(kz, "orders", 0)[1] == 0


def test_controller_moving_just_before_the_request(cluster, fleet):
    async def move_controller(api_key: int, api_version: int) -> None:
        if api_key == CONTROLLED_SHUTDOWN:
            await fleet.fleet.stop(1)  # broker 1 goes: broker 2 wins the next election

    cluster[1].broker.before_request = move_controller
    assert shutdown(cluster[1].port, 3, 3, fleet.epochs[3]) == (11, [])
    assert fleet.controller_id == 2
    cluster[1].broker.before_request = None
    assert shutdown(cluster[2].port, 3, 3, fleet.epochs[3]) == (0, [])


def test_an_unregistered_broker(cluster):
    assert shutdown(cluster[1].port, 1, 9) == (8, [])  # BROKER_NOT_AVAILABLE
    # With an epoch, liveBrokerIdAndEpochs(9) runs first and throws NoSuchElementException.
    assert shutdown(cluster[1].port, 2, 9, 5) == (-1, [])


def test_a_concurrent_state_change_is_read_again_and_retried(cluster, fleet, kz, monkeypatch):
    broker = cluster[1].broker
    write = broker.controller._write_state
    raced = []

    async def racing_write(ctx, path, new_state):
        if path.endswith("/orders/partitions/0/state") and not raced:
            # The leader shrank its ISR (AlterPartition) between the controller's read and write.
            raced.append(path)
            await broker.zk.set(path, b'{"version":1,"leader":1,"leader_epoch":0,"controller_epoch":1,"isr":[1,3]}', 0)
        return await write(ctx, path, new_state)

    monkeypatch.setattr(broker.controller, "_write_state", racing_write)
    assert shutdown(cluster[1].port, 3, 1, fleet.epochs[1]) == (0, [("stuck", 0)])
    doc, version, _ = state(kz, "orders", 0)
    assert (doc["leader"], doc["leader_epoch"], doc["isr"], version) == (3, 1, [3], 2)  # 2 left the ISR


def test_a_controller_epoch_change_fences_the_writes(cluster, fleet, kz, monkeypatch):
    broker = cluster[1].broker
    write = broker.controller._write_state

    async def new_controller_epoch(ctx, path, new_state):
        await broker.zk.set("/controller_epoch", str(ctx.epoch).encode(), -1)  # its zkVersion moves
        return await write(ctx, path, new_state)

    monkeypatch.setattr(broker.controller, "_write_state", new_controller_epoch)
    assert shutdown(cluster[1].port, 3, 1, fleet.epochs[1]) == (11, [])
    assert state(kz, "orders", 0)[1] == 0


# ------------------------------------------------------------------------- kafka-python
def test_kafka_python_admin_bootstraps_and_describes_the_cluster(cluster, fleet):
    admin = KafkaAdminClient(bootstrap_servers=f"127.0.0.1:{cluster[1].port}", request_timeout_ms=5000)
    try:
        info = admin.describe_cluster()  # DescribeCluster is not advertised: the Metadata fallback
        assert info["cluster_id"] == CLUSTER_ID and info["controller_id"] == 1
        assert sorted((b["broker_id"], b["host"], b["port"]) for b in info["brokers"]) == [
            (i, "127.0.0.1", cluster[i].port) for i in (1, 2, 3)
        ]
        (orders,) = admin.describe_topics(["orders"])
        assert [(p["partition_index"], p["leader_id"], p["isr_nodes"]) for p in orders["partitions"]] == [
            (0, 1, [1, 2, 3]), (1, 2, [2, 1, 3]), (2, 3, [3, 2, 1])
        ]
        assert sorted(admin.list_topics()) == ["orders", "solo", "stuck"]
    finally:
        admin.close()
    seen = [(r.api_key, r.api_version) for r in cluster[1].requests[:3]]
    assert seen == [(API_VERSIONS, 4), (API_VERSIONS, 3), (METADATA, 8)]  # KIP-511 fallback, then v8


def test_a_topic_queued_for_deletion_is_gone_from_metadata(cluster, fleet, kz):
    """As on real 3.9.1 (tests/kafka/test_real_zk_partitions.py): once /admin/delete_topics/<t> exists,
    the brokers' metadata no longer has the topic, while its znodes remain until the deletion completes."""
    kz.create("/admin/delete_topics/solo")
    admin = KafkaAdminClient(bootstrap_servers=f"127.0.0.1:{cluster[2].port}", request_timeout_ms=5000)
    try:
        assert sorted(admin.list_topics()) == ["orders", "stuck"]
    finally:
        admin.close()
    assert kz.exists("/brokers/topics/solo/partitions/0/state")


def test_tls_listener(fleet, zk_server, chroot, certs):
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(certs / "server.pem")
    b = ThreadedBroker(1, zk_server.hosts, chroot=chroot, loop=fleet.loop, listener="SSL", ssl_context=server_ctx)
    b.start()
    try:
        # An SSL-only broker, as Kafka registers it: no PLAINTEXT endpoint, so host null and port -1.
        data = znodes.encode_registration(host=None, port=-1, endpoints=[f"SSL://127.0.0.1:{b.port}"],
                                          timestamp_ms=0, listener_security_protocol_map={"SSL": "SSL"})
        fleet.register(BrokerSpec(1, data=data))
        client_ctx = ssl.create_default_context(cafile=str(certs / "ca.pem"))
        assert shutdown(b.port, 3, 1, fleet.epochs[1], ssl_ctx=client_ctx) == (0, [])

        admin = KafkaAdminClient(bootstrap_servers=f"127.0.0.1:{b.port}", security_protocol="SSL",
                                 ssl_cafile=str(certs / "ca.pem"), request_timeout_ms=5000)
        try:
            brokers = admin.describe_cluster()["brokers"]
        finally:
            admin.close()
        assert [(x["broker_id"], x["host"], x["port"]) for x in brokers] == [(1, "127.0.0.1", b.port)]
    finally:
        b.stop()
