"""The roll's reading of a cluster through the backend (kadmin/services/roll_cluster.py BackendRollCluster), on stub
capabilities: the traits it asks of the backend (never the mode), the topology (which nodes, which role, who leads),
what a node shows, and whether the cluster is healthy enough for a roll to begin (`unhealthy`)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from kadmin.cluster.base import RegistrationTick
from kadmin.domain.drain import PartitionView
from kadmin.domain.models import Registered
from kadmin.domain.quorum import QuorumState, ReplicaState
from kadmin.domain.roll import NodeSeen, RollNode, Traits
from kadmin.exit_codes import ExitCode
from kadmin.results import Result
from kadmin.services import roll_cluster as svc
from kadmin.services import roll_engine
from kadmin.services.roll_cluster import BackendRollCluster

pytestmark = pytest.mark.timeout(30)

NOW = 1_764_000_000_000


def replica(i: int, leo: int = 1000, caught_up: int = NOW, endpoints: tuple[str, ...] = ()) -> ReplicaState:
    return ReplicaState(i, leo, None, NOW, caught_up, endpoints)


def zk_member(i: int, lag: int = 0, leader: bool = False) -> ReplicaState:
    """A ZooKeeper ensemble member as the four-letter words describe it (domain.quorum.from_zookeeper's `extra`)."""
    extra = {"address": f"127.0.0.1:{2180 + i}", "mode": "leader" if leader else "follower", "error": None,
             "zxid": 100 - lag, "zxid_epoch": 1, "older_epoch": False, "latency_ms": {"min": 0, "avg": 0, "max": 0},
             "outstanding": 0, "lag": lag}
    return ReplicaState(i, 100 - lag, extra=extra)


def quorum(voters: tuple[ReplicaState, ...], observers: tuple[ReplicaState, ...] = (), leader: int = 3001,
           mode: str = "kraft") -> QuorumState:
    return QuorumState(leader, 5, 1000, voters, observers, mode=mode)  # type: ignore[arg-type]


HEALTHY = quorum((replica(3001), replica(3002), replica(3003)), (replica(1), replica(2)))


def backend(mode: str = "kraft", regs: dict[int, Registered] | None = None, q: QuorumState = HEALTHY,
            controller: int | None = None, moving: list[PartitionView] | None = None) -> Any:
    zk = mode == "zookeeper"

    def ctl() -> tuple[Any, list[Any]]:
        return None if controller is None else SimpleNamespace(broker_id=controller), []

    return SimpleNamespace(
        mode=mode,
        has=lambda name: zk and name in ("controller_links", "epochs"),
        registrations=SimpleNamespace(registrations=lambda: RegistrationTick(dict(regs or {}), "listed"),
                                      epochs=zk, fencing=not zk),
        quorum=SimpleNamespace(describe_quorum=lambda: (q, NOW), voters_are_nodes=not zk),
        epochs=SimpleNamespace(controller=ctl),
        leadership=SimpleNamespace(partitions=lambda: list(moving or [])),
        partitions=SimpleNamespace(controller=ctl),
    )


def rc(b: Any) -> BackendRollCluster:
    return BackendRollCluster(lambda: b)


def unhealthy(b: Any) -> list[str]:
    return rc(b).unhealthy(2000)


def test_traits_are_asked_of_the_backend() -> None:
    assert rc(backend("zookeeper")).traits() == Traits("epoch", True, False)
    assert rc(backend("kraft")).traits() == Traits("unfenced", False, True)


# ------------------------------------------------------------------------------------------------ topology
@pytest.mark.parametrize(("endpoints", "expected"), [
    (("CONTROLLER://c1.example:9093",), ("c1.example", 9093)),
    (("CONTROLLER://[::1]:9093",), ("::1", 9093)),
    (("c2:19093",), ("c2", 19093)),
    (("CONTROLLER://nohost",), (None, None)),
    (("CONTROLLER://:9093", "SSL://c3:9094"), ("c3", 9094)),  # the first usable one
    ((), (None, None)),
])
def test_endpoint_host_port(endpoints: tuple[str, ...], expected: tuple[str | None, int | None]) -> None:
    assert svc.endpoint_host_port(endpoints) == expected


def test_kraft_topology_brokers_controllers_and_combined_nodes() -> None:
    regs = {1: Registered(1, "b1", 9092, "r1", fenced=False), 2: Registered(2, "b2", 9092, "r2", fenced=True),
            4: Registered(4, "n4", 9092)}
    q = quorum((replica(4), replica(3001, endpoints=("CONTROLLER://c1:9093",)), replica(3002)), leader=3001)
    t = rc(backend("kraft", regs, q)).topology()
    assert (t.mode, t.leader) == ("kraft", 3001)
    assert t.nodes == (RollNode(1, "broker", "b1", 9092, "r1"), RollNode(2, "broker", "b2", 9092, "r2"),
                       RollNode(4, "combined", "n4", 9092), RollNode(3001, "controller", "c1", 9093),
                       RollNode(3002, "controller", None, None))  # DescribeQuorum before 3.9: no endpoint


def test_kraft_topology_without_a_leader_and_with_the_rolls_own_nodes() -> None:
    """A node the roll stopped is not registered now: the journal's nodes (`known`) stay in the topology."""
    q = quorum((replica(3001),), leader=-1)
    stopped = RollNode(2, "broker", "b2", 9092)
    t = rc(backend("kraft", {1: Registered(1, "b1", 9092)}, q)).topology(known=[stopped, RollNode(1, "broker")])
    assert t.leader is None
    assert [n.id for n in t.nodes] == [1, 2, 3001] and t.node(2) == stopped
    assert t.node(1) == RollNode(1, "broker", "b1", 9092)  # what the cluster says wins over the journal


def test_zookeeper_topology_and_its_active_controller() -> None:
    regs = {3: Registered(3, "h3", 9092, epoch=30), 1: Registered(1, "h1", 9092, "a", epoch=10)}
    t = rc(backend("zookeeper", regs, controller=3)).topology()
    assert (t.mode, t.leader) == ("zookeeper", 3)
    assert t.nodes == (RollNode(1, "broker", "h1", 9092, "a"), RollNode(3, "broker", "h3", 9092))
    assert rc(backend("zookeeper", regs, controller=None)).topology().leader is None


def test_observe_one_read_for_every_node() -> None:
    regs = {1: Registered(1, "b1", 9092, fenced=True), 4: Registered(4, "n4", 9092, fenced=False)}
    q = quorum((replica(4), replica(3001)), leader=3001)
    seen = rc(backend("kraft", regs, q)).observe([RollNode(1, "broker"), RollNode(2, "broker"),
                                                  RollNode(4, "combined"), RollNode(3001, "controller")])
    assert seen[1] == NodeSeen(1, True, None, True, False, False, None, None, 3001)
    assert seen[2] == NodeSeen(2, False, None, None, False, False, None, None, 3001)
    assert seen[4].registered and seen[4].voter and seen[4].fetch_age_ms == 0
    assert seen[3001] == NodeSeen(3001, None, None, None, True, True, 0, 0, 3001)


def test_observe_a_controller_back_with_another_directory_is_an_observer() -> None:
    """KIP-853: the voter set keeps (3002, dirA); the node fetches as (3002, dirB), an observer. An older observer
    entry (dirC) is not the one it fetches as now; brokers are observers too and say nothing of it."""
    def r(i: int, d: str | None, fetched: int = NOW) -> ReplicaState:
        return ReplicaState(i, 1000, d, fetched, fetched)

    q = quorum((r(3001, "d1"), r(3002, "dirA", NOW - 60_000)), (r(1, "b1"), r(3002, "dirC", NOW - 9000),
                                                                r(3002, "dirB")))
    seen = rc(backend("kraft", {}, q)).observe([RollNode(3001, "controller"), RollNode(3002, "controller")])
    assert (seen[3001].directory_id, seen[3001].observer) == ("d1", False)
    assert (seen[3002].directory_id, seen[3002].observer) == ("dirB", True)
    assert seen[3002].voter and seen[3002].fetch_age_ms == 60_000  # as the voter: not heard from
    # the voter replaced (remove-controller, add-controller): the old one lingers among the observers (Kafka 4.3.1)
    replaced = quorum((r(3001, "d1"), r(3002, "dirB")), (r(3002, "dirA", NOW - 5000),))
    seen = rc(backend("kraft", {}, replaced)).observe([RollNode(3002, "controller")])
    assert (seen[3002].directory_id, seen[3002].observer) == ("dirB", False)


def test_a_registration_that_cannot_be_read_is_no_answer() -> None:
    from kadmin.results import Problem

    b = backend("zookeeper")
    b.registrations.registrations = lambda: RegistrationTick({}, "none", problems=[Problem("bad", "/brokers/ids/2")])
    with pytest.raises(svc.Unreadable, match="/brokers/ids/2"):
        rc(b).observe([RollNode(2, "broker")])


def test_select_names_an_unknown_node() -> None:
    from kadmin.domain.roll import Request, Topology
    from kadmin.errors import UsageError

    t = Topology("zookeeper", (RollNode(1, "broker"), RollNode(2, "broker")), None)
    assert [n.id for n in roll_engine.select(t, Request((2,), "first", 1))] == [2]
    with pytest.raises(UsageError, match=r"^--nodes: 7, 9: no such node \(the cluster has 1, 2\)$"):
        roll_engine.select(t, Request((1, 7, 9), "first", 1))


# ------------------------------------------------------------------------------------------------ unhealthy
@pytest.fixture
def partitions_ok(monkeypatch: pytest.MonkeyPatch) -> list[Result[Any]]:
    """The partitions check's verdict, as the test sets it (OK unless changed)."""
    from kadmin.services import partitions as psvc

    verdict = [Result(data=None, exit_code=ExitCode.OK, message=None)]
    monkeypatch.setattr(psvc, "check", lambda cluster, *a, **kw: verdict[0])
    return verdict


def test_a_healthy_cluster(partitions_ok: list[Result[Any]]) -> None:
    assert unhealthy(backend("kraft")) == []
    assert unhealthy(backend("zookeeper", q=quorum((zk_member(1, leader=True),), leader=1,
                                                       mode="zookeeper"))) == []


@pytest.mark.parametrize("q", [
    quorum((replica(3001, leo=5000), replica(3002, leo=10), replica(3003, leo=5000))),  # 4990 offsets behind
    quorum((replica(3001), replica(3002, caught_up=NOW - 600_000), replica(3003))),  # caught up 10 min ago
    quorum((replica(3001), replica(3002), ReplicaState(3003, -1, down=True))),  # a voter down
])
def test_a_kraft_voter_that_lags_or_is_down_refuses_a_roll(partitions_ok: list[Result[Any]], q: QuorumState) -> None:
    """A WARNING about a voter: restarting a controller then could leave the quorum without a caught-up majority."""
    why = unhealthy(backend("kraft", q=q))
    assert len(why) == 1 and why[0].startswith("quorum check: "), why


def test_a_lagging_observer_does_not(partitions_ok: list[Result[Any]]) -> None:
    q = quorum((replica(3001, leo=5000), replica(3002, leo=5000)), (replica(1, leo=10), replica(2, leo=5000)))
    assert unhealthy(backend("kraft", q=q)) == []


def test_zookeeper_mode_refuses_only_on_a_critical_quorum(partitions_ok: list[Result[Any]]) -> None:
    lagging = quorum((zk_member(1, leader=True), zk_member(2, lag=5000), zk_member(3)), leader=1, mode="zookeeper")
    assert unhealthy(backend("zookeeper", q=lagging)) == []
    no_leader = quorum((zk_member(1), zk_member(2), zk_member(3)), leader=-1, mode="zookeeper")
    assert [w.split(":")[0] for w in unhealthy(backend("zookeeper", q=no_leader))] == ["quorum check"]


def test_no_quorum_leader_refuses(partitions_ok: list[Result[Any]]) -> None:
    why = unhealthy(backend("kraft", q=quorum((replica(3001), replica(3002)), leader=-1)))
    assert len(why) == 1 and "no leader" in why[0]


def test_partitions_and_reassignments(partitions_ok: list[Result[Any]]) -> None:
    partitions_ok[0] = Result(data=None, exit_code=ExitCode.CONDITION_NOT_MET, message="1 under-replicated")
    moving = [PartitionView("t", 0, (1, 2), (1, 2), 1, reassigning=True), PartitionView("t", 1, (1, 2), (1, 2), 1)]
    assert unhealthy(backend("kraft", moving=moving)) == ["partitions check: 1 under-replicated",
                                                              "a reassignment is in flight for t-0"]
