"""Where KRaftClient.quorum_fetch_timeout reads controller.quorum.fetch.timeout.ms, against the kio test server
(tests/support/kraft_server.py): the controllers first (the voters' DescribeQuorum v2 endpoints, or the controllers
given with --bootstrap-controller), the quorum leader's value first; a broker's own value when no controller answers;
None with why (and the ACL) when nothing can be read. Real Kafka: tests/kafka/test_real_kraft_quorum.py (plain) and
tests/kafka/test_real_kraft_acl.py (SASL and ACLs)."""

from __future__ import annotations

import contextlib
import re
import socket
from collections.abc import Iterator

import pytest

from kadmin.cluster.base import QUORUM_FETCH_TIMEOUT, QuorumSetting
from kadmin.cluster.connect import open_backend
from kadmin.cluster.kraft import KraftClient
from kadmin.config import ConnectionSettings, Sourced
from kadmin.errors import ClusterUnreachable, ConfigError
from tests.support.kraft_server import (
    CLUSTER_AUTHORIZATION_FAILED,
    DESCRIBE_CONFIGS,
    DESCRIBE_QUORUM,
    KraftServer,
    Listener,
    Scenario,
    VoterNode,
)

pytestmark = pytest.mark.integration
CONTROLLED_SHUTDOWN = 7  # advertised by a ZooKeeper-mode broker only (kadmin/cluster/kraft.py zookeeper_mode)
CONTROLLERS, BROKERS = "1500", "2500"  # neither is Kafka's default (2000): a read tells whose value it got
DEAD_PORT = 1  # nothing listens on 127.0.0.1:1: a connection is refused at once


@contextlib.contextmanager
def dead_ports(n: int) -> Iterator[list[int]]:
    """`n` loopback ports bound and never listening: a connection to each is refused at once."""
    with contextlib.ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(n)]
        for s in socks:
            s.bind(("127.0.0.1", 0))
        yield [s.getsockname()[1] for s in socks]


def scenario() -> Scenario:
    sc = Scenario.cluster(brokers=2, controllers=3)  # controller 3000 leads
    sc.configs = {n.node_id: {QUORUM_FETCH_TIMEOUT: CONTROLLERS} for n in sc.controllers}
    sc.configs.update({n.node_id: {QUORUM_FETCH_TIMEOUT: BROKERS} for n in sc.brokers})
    return sc


@pytest.fixture
def sc() -> Scenario:
    return scenario()


@pytest.fixture
def server(sc: Scenario) -> Iterator[KraftServer]:
    with KraftServer(sc) as srv:
        yield srv


def read(server: KraftServer, role: str = "broker", via: str | None = None) -> QuorumSetting:
    flag = "bootstrap-controller" if role == "controller" else "bootstrap-server"
    settings = ConnectionSettings({flag: Sourced(via or server.bootstrap(role), "flag"),  # type: ignore[arg-type]
                                   "connect-timeout": Sourced(2.0, "flag")})
    backend = open_backend(settings, "roll")
    try:
        return backend.quorum.quorum_fetch_timeout()
    finally:
        backend.close()


def asked_at(server: KraftServer) -> list[tuple[str, int, list[str]]]:
    """Each DescribeConfigs the server answered: (role, node id, the BROKER resource names asked)."""
    return sorted((r.endpoint.role, r.endpoint.node_id, [x.resource_name for x in r.body.resources])
                  for r in server.requests_for(DESCRIBE_CONFIGS))


def test_through_the_brokers_the_voters_endpoints_are_asked_and_the_leaders_value_taken(server: KraftServer) -> None:
    got = read(server)
    assert got == QuorumSetting(QUORUM_FETCH_TIMEOUT, 1500, "controller 3000 (DescribeConfigs)")
    # every voter asked at once, each for its own id, at the endpoint DescribeQuorum v2 lists; no broker asked
    assert asked_at(server) == [("controller", 3000, ["3000"]), ("controller", 3001, ["3001"]),
                                ("controller", 3002, ["3002"])]
    assert [r.api_version for r in server.requests_for(DESCRIBE_QUORUM)] == [2]


def test_through_the_controllers_given(server: KraftServer) -> None:
    assert read(server, "controller") == QuorumSetting(QUORUM_FETCH_TIMEOUT, 1500, "controller 3000 (DescribeConfigs)")
    assert {role for role, _, _ in asked_at(server)} == {"controller"}


def test_controllers_that_disagree_are_named_beside_the_leaders_value(sc: Scenario, server: KraftServer) -> None:
    server.update(lambda s: s.configs[3002].update({QUORUM_FETCH_TIMEOUT: "4000"}))
    got = read(server)
    assert (got.value, got.source) == (1500, "controller 3000 (DescribeConfigs); the controllers disagree: "
                                             "controller 3002 has 4000")


def test_a_leader_that_cannot_be_reached_leaves_another_voters_value(sc: Scenario) -> None:
    with dead_ports(1) as [port]:
        sc.controllers[0].listen, sc.controllers[0].port = False, port
        with KraftServer(sc) as server:
            got = read(server)
    assert (got.value, got.source) == (1500, "controller 3001 (DescribeConfigs)")


def test_describe_quorum_without_endpoints_falls_back_to_a_brokers_own_value(sc: Scenario) -> None:
    sc.broker_apis[DESCRIBE_QUORUM] = (0, 1)  # Kafka before 3.9: no Nodes
    with KraftServer(sc) as server:
        got = read(server)
        assert {role for role, _, _ in asked_at(server)} == {"broker"}
    assert got.value == 2500
    assert got.source.startswith("broker ") and " (DescribeConfigs): the controllers could not be asked: " \
        "DescribeQuorum lists no endpoints for the voters (Kafka 3.9+ lists them, KIP-853): give " \
        "--bootstrap-controller" in got.source, got.source


def test_voters_that_cannot_be_reached_fall_back_to_a_brokers_value_saying_why(sc: Scenario) -> None:
    with dead_ports(3) as ports:
        for c, port in zip(sc.controllers, ports, strict=True):
            c.listen, c.port = False, port
        with KraftServer(sc) as server:
            got = read(server)
    assert got.value == 2500 and got.source.startswith("broker ")
    for cid, port in zip((3000, 3001, 3002), ports, strict=True):
        assert f"controller {cid} at 127.0.0.1:{port}: cannot reach 127.0.0.1:{port}" in got.source, got.source
    assert "kadmin must reach a controller at an endpoint DescribeQuorum lists, with --command-config's security, " \
           "or be given --bootstrap-controller" in got.source


def test_refused_everywhere_is_none_naming_the_acl(sc: Scenario, server: KraftServer) -> None:
    server.update(lambda s: s.describe_configs_errors.update(
        {n.node_id: CLUSTER_AUTHORIZATION_FAILED for n in [*s.controllers, *s.brokers]}))
    got = read(server)
    assert got.value is None
    assert re.fullmatch(r"unknown: the controllers could not be asked: controllers 3000, 3001, 3002: DescribeConfigs: "
                        r"CLUSTER_AUTHORIZATION_FAILED; broker [12]: DescribeConfigs: CLUSTER_AUTHORIZATION_FAILED; "
                        r"kadmin needs DescribeConfigs on the Cluster resource for the principal it connects as",
                        got.source), got.source
    # only one broker is asked (all would say the same)
    assert [role for role, _, _ in asked_at(server)].count("broker") == 1


def test_refused_by_the_controllers_only_is_the_brokers_value(sc: Scenario, server: KraftServer) -> None:
    server.update(lambda s: s.describe_configs_errors.update(
        {n.node_id: CLUSTER_AUTHORIZATION_FAILED for n in s.controllers}))
    got = read(server)
    assert got.value == 2500 and "CLUSTER_AUTHORIZATION_FAILED" in got.source and got.source.startswith("broker ")


def test_describe_quorum_refused_names_describe_on_the_cluster(sc: Scenario, server: KraftServer) -> None:
    server.update(lambda s: setattr(s.quorum, "error_code", CLUSTER_AUTHORIZATION_FAILED))
    got = read(server)
    assert got.value == 2500
    assert "DescribeQuorum" in got.source and "(kadmin needs Describe on the Cluster to list the voters)" in got.source


def test_through_the_controllers_there_is_no_broker_to_fall_back_to(sc: Scenario, server: KraftServer) -> None:
    server.update(lambda s: s.describe_configs_errors.update(
        {n.node_id: CLUSTER_AUTHORIZATION_FAILED for n in s.controllers}))
    got = read(server, "controller")
    assert got.value is None
    assert "no broker to ask instead: the controllers (--bootstrap-controller) do not describe the brokers" \
        in got.source
    assert "DescribeConfigs on the Cluster" in got.source


def test_a_value_that_is_no_whole_number_is_not_taken(sc: Scenario, server: KraftServer) -> None:
    server.update(lambda s: [s.configs[n.node_id].update({QUORUM_FETCH_TIMEOUT: "2s"})
                             for n in [*s.controllers, *s.brokers]])
    got = read(server)
    assert got.value is None and "value '2s' is not a positive whole number of ms" in got.source


def test_a_cluster_that_cannot_be_reached_raises() -> None:
    client = KraftClient(f"127.0.0.1:{DEAD_PORT}", {"security_protocol": "PLAINTEXT"}, 2.0, controllers=False)
    try:
        with pytest.raises(ClusterUnreachable):
            client.quorum_fetch_timeout()
    finally:
        client.close()


def test_voters_listed_at_one_address_are_each_asked_for_their_own_id_there(sc: Scenario) -> None:
    """A misconfigured quorum whose voters share an endpoint: one request names them all, each answer is read."""
    with KraftServer(sc) as server:
        at = server.address(3001, "controller")
        server.update(lambda s: setattr(s.quorum, "nodes", [VoterNode(c, [Listener("CONTROLLER", "127.0.0.1",
                                                                                     int(at.rsplit(":", 1)[1]))])
                                                            for c in (3000, 3001, 3002)]))
        got = read(server)
        assert asked_at(server) == [("controller", 3001, ["3000", "3001", "3002"])]
    assert (got.value, got.source) == (1500, "controller 3001 (DescribeConfigs)")


def test_brokers_of_a_zookeeper_mode_cluster_have_no_quorum_to_ask(sc: Scenario) -> None:
    """ApiVersions says ZooKeeper mode (ControlledShutdown, no DescribeQuorum): exit 3 as `quorum describe`, not a
    broker's value of a setting no quorum uses."""
    sc.broker_apis[CONTROLLED_SHUTDOWN] = (1, 3)
    del sc.broker_apis[DESCRIBE_QUORUM]
    with KraftServer(sc) as server, pytest.raises(ConfigError) as e:
        read(server)
    assert e.value.code == "zookeeper_mode" and not server.requests_for(DESCRIBE_CONFIGS)
