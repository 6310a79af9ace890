"""`kadmin roll`'s pure rules (kadmin/domain/roll.py): the order, the nodes chosen, each node's steps, the
batches (with can-stop's rules for a batch, kadmin/domain/partitions.py `stop_together_blockers`), the journal
replayed into each node's phase, and what a resumed run may not ask differently."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kadmin.domain import roll as dom
from kadmin.domain.models import PartitionState
from kadmin.domain.partitions import stop_together_blockers
from kadmin.domain.roll import NodeProgress, Request, RollNode, Topology

pytestmark = pytest.mark.timeout(120)


def b(i: int, rack: str | None = None) -> RollNode:
    return RollNode(i, "broker", f"h{i}", 9090 + i, rack)


def c(i: int) -> RollNode:
    return RollNode(i, "controller", f"c{i}", 9093)


def bc(i: int) -> RollNode:
    return RollNode(i, "combined", f"h{i}", 9090 + i)


def ids(nodes: Sequence[RollNode]) -> list[int]:
    return [n.id for n in nodes]


def batch_ids(batches: dom.Batches) -> list[tuple[int, ...]]:
    return [tuple(n.id for n in bt) for bt in batches]


# ------------------------------------------------------------------------------------------------ order
KRAFT = (b(1), b(2), b(3), bc(4), c(3001), c(3002), c(3003))


@pytest.mark.parametrize(("topology", "expected"), [
    # KRaft: the controllers and combined nodes first, the quorum leader last of them; then the brokers by id
    (Topology("kraft", KRAFT, 3002), [4, 3001, 3003, 3002, 1, 2, 3]),
    (Topology("kraft", KRAFT, 4), [3001, 3002, 3003, 4, 1, 2, 3]),  # a combined node leads
    (Topology("kraft", KRAFT, None), [4, 3001, 3002, 3003, 1, 2, 3]),  # no leader now: by id
    (Topology("kraft", KRAFT, 1), [4, 3001, 3002, 3003, 1, 2, 3]),  # a leader id that is a broker: no effect
    (Topology("kraft", (b(3), b(1), b(2)), None), [1, 2, 3]),  # brokers only
    (Topology("kraft", (c(3002), c(3001)), 3001), [3002, 3001]),  # controllers only
    # ZooKeeper mode: the brokers by id, the active controller last
    (Topology("zookeeper", (b(3), b(1), b(2)), 1), [2, 3, 1]),
    (Topology("zookeeper", (b(3), b(1), b(2)), 2), [1, 3, 2]),
    (Topology("zookeeper", (b(3), b(1), b(2)), 3), [1, 2, 3]),
    (Topology("zookeeper", (b(3), b(1), b(2)), None), [1, 2, 3]),
    (Topology("zookeeper", (b(3), b(1), b(2)), 9), [1, 2, 3]),  # a controller outside the roll
    (Topology("zookeeper", (), 1), []),
    # ... just after the brokers on its rack (none: by id)
    (Topology("zookeeper", (b(1, "a"), b(2, "b"), b(3, "c"), b(4, "a"), b(5, "b"), b(6, "c")), 4), [2, 3, 5, 6, 1, 4]),
    (Topology("zookeeper", (b(1, "a"), b(2, "b"), b(3, None), b(4, None)), 3), [1, 2, 4, 3]),
])
def test_order(topology: Topology, expected: list[int]) -> None:
    assert ids(dom.order(topology, topology.nodes)) == expected


def test_order_of_a_subset_keeps_the_rules() -> None:
    t = Topology("kraft", KRAFT, 3001)
    assert ids(dom.order(t, [b(2), c(3001), b(1), c(3003)])) == [3003, 3001, 1, 2]
    z = Topology("zookeeper", (b(1), b(2), b(3), b(4)), 2)
    assert ids(dom.order(z, [b(4), b(2), b(1)])) == [1, 4, 2]


@pytest.mark.parametrize(("wanted", "controllers", "expected"), [
    (None, "first", [1, 2, 3, 4, 3001, 3002, 3003]),  # every node, in the topology's order
    (None, "skip", [1, 2, 3]),  # --controllers skip: no controller, no combined node (it is a controller too)
    ([3001, 1], "first", [1, 3001]),
    ([3001, 1], "skip", [1]),
    ([4], "skip", []),  # a combined node is skipped with the controllers
    ([4, 3], "first", [3, 4]),
    ([99], "first", []),  # unknown ids are the service's business (select): nothing here
    ((), "first", []),
])
def test_chosen(wanted: list[int] | None, controllers: dom.ControllersPolicy, expected: list[int]) -> None:
    assert ids(dom.chosen(Topology("kraft", KRAFT, 3002), wanted, controllers)) == expected


def test_chosen_then_ordered_zookeeper() -> None:
    t = Topology("zookeeper", (b(1), b(2), b(3)), 1)
    assert ids(dom.order(t, dom.chosen(t, None, "skip"))) == [2, 3, 1]  # ZooKeeper brokers are no controllers
    assert ids(dom.order(t, dom.chosen(t, [1, 3], "first"))) == [3, 1]


def test_topology_node_and_roles() -> None:
    t = Topology("kraft", KRAFT, None)
    assert t.node(4) == bc(4) and t.node(99) is None
    assert (b(1).is_broker, b(1).is_controller) == (True, False)
    assert (c(1).is_broker, c(1).is_controller) == (False, True)
    assert (bc(1).is_broker, bc(1).is_controller) == (True, True)


# ------------------------------------------------------------------------------------------------ steps
ZK_BROKER = ("can_stop", "drain", "shutdown", "stop", "wait_stopped", "start", "wait_restarted", "wait_in_sync",
             "undrain", "wait_healthy", "settle")
KRAFT_BROKER = ("can_stop", "drain", "stop", "wait_stopped", "start", "wait_restarted", "wait_in_sync", "undrain",
                "wait_healthy", "settle")
KRAFT_CONTROLLER = ("quorum_check", "stop", "wait_stopped", "start", "wait_caught_up", "settle")
KRAFT_COMBINED = ("quorum_check", "can_stop", "drain", "stop", "wait_stopped", "start", "wait_restarted",
                  "wait_caught_up", "wait_in_sync", "undrain", "wait_healthy", "settle")


def with_restart(s: tuple[str, ...]) -> tuple[str, ...]:
    i = s.index("stop")
    assert s[i:i + 3] == ("stop", "wait_stopped", "start")
    return s[:i] + ("restart",) + s[i + 3:]


@pytest.mark.parametrize(("node", "mode", "base"), [
    (b(1), "zookeeper", ZK_BROKER),
    (b(1), "kraft", KRAFT_BROKER),
    (c(3001), "kraft", KRAFT_CONTROLLER),
    (bc(4), "kraft", KRAFT_COMBINED),
])
@pytest.mark.parametrize("restart_hook", [False, True])
@pytest.mark.parametrize("only_if", [False, True])
def test_steps(node: RollNode, mode: dom.Mode, base: tuple[str, ...], restart_hook: bool, only_if: bool) -> None:
    expected = with_restart(base) if restart_hook else base
    if only_if:
        expected = ("only_if",) + expected
    got = dom.steps(node, mode, restart_hook, only_if)
    assert got == expected
    # always in the contract's order, each once, every one of them a known step
    assert list(got) == sorted(got, key=dom.STEP_ORDER.index)
    assert len(set(got)) == len(got)


def test_only_zookeeper_brokers_have_shutdown_and_only_kraft_controllers_the_quorum_steps() -> None:
    for node, mode in [(b(1), "kraft"), (c(1), "kraft"), (bc(1), "kraft"), (b(1), "zookeeper")]:
        s = dom.steps(node, mode, False, False)
        assert ("shutdown" in s) == (mode == "zookeeper")
        assert ("quorum_check" in s) == ("wait_caught_up" in s) == (node.is_controller and mode == "kraft")
        assert ("can_stop" in s) == ("drain" in s) == ("undrain" in s) == node.is_broker


# ------------------------------------------------------------------------------------------------ batches
def part(topic: str, p: int, replicas: Sequence[int], isr: Sequence[int] | None = None, min_isr: int = 2,
         leader: int | None = None) -> PartitionState:
    isr = tuple(replicas if isr is None else isr)
    return PartitionState(topic, p, tuple(replicas), isr, isr[0] if leader is None and isr else leader,
                          min_isr=min_isr)


def safe_with(parts: Sequence[PartitionState], live: Sequence[int]) -> Callable[[Sequence[int]], bool]:
    """What the engine passes (services/roll.py _safe_together): can-stop's rules for the batch."""
    def safe(batch: Sequence[int]) -> bool:
        return not stop_together_blockers(parts, set(batch), set(live))

    return safe


def always(batch: Sequence[int]) -> bool:
    return True


def never(batch: Sequence[int]) -> bool:
    return False


SIX = [b(i) for i in range(1, 7)]
# two replica sets that share no broker: {1,2,3} and {4,5,6}, RF 3, min ISR 2
TWO_SETS = [part("t", 0, [1, 2, 3]), part("t", 1, [2, 3, 1]), part("u", 0, [4, 5, 6]), part("u", 1, [6, 4, 5])]


@pytest.mark.parametrize(("nodes", "parallel", "safe", "last", "expected"), [
    # --parallel 1: one node at a time, in the order given
    (SIX, 1, always, None, [(1,), (2,), (3,), (4,), (5,), (6,)]),
    # nothing would lose min ISR: batches of `parallel`, in the order given
    (SIX, 3, always, None, [(1, 2, 3), (4, 5, 6)]),
    (SIX, 4, always, None, [(1, 2, 3, 4), (5, 6)]),
    (SIX, 100, always, None, [(1, 2, 3, 4, 5, 6)]),
    # nothing may stop together: singles
    (SIX, 3, never, None, [(1,), (2,), (3,), (4,), (5,), (6,)]),
    # two brokers of one replica set would take its ISR (3) below min ISR 2: pairs across the sets
    (SIX, 2, safe_with(TWO_SETS, range(1, 7)), None, [(1, 4), (2, 5), (3, 6)]),
    (SIX, 6, safe_with(TWO_SETS, range(1, 7)), None, [(1, 4), (2, 5), (3, 6)]),
    # min ISR 1: two of a set may stop (one in-sync replica is left), never all three
    (SIX, 6, safe_with([part("t", 0, [1, 2, 3], min_isr=1), part("u", 0, [4, 5, 6], min_isr=1)], range(1, 7)), None,
     [(1, 2, 4, 5), (3, 6)]),
    # an ISR already short of a replica (2 is out of sync): 1 and 3 cannot stop together, 1 and 2 can
    (SIX[:3], 3, safe_with([part("t", 0, [1, 2, 3], isr=[1, 3], min_isr=1)], range(1, 7)), None, [(1, 2), (3,)]),
    # RF 2, min ISR 1: a broker never with its partition's other replica (it would go offline)
    (SIX[:4], 4, safe_with([part("t", 0, [1, 2], min_isr=1), part("t", 1, [3, 4], min_isr=1)], range(1, 5)), None,
     [(1, 3), (2, 4)]),
    # RF 2, min ISR 2 (what the leader enforces is capped at RF): not even one broker may stop; the plan
    # still lists each once (the run's can-stop gate says why)
    (SIX[:4], 4, safe_with([part("t", 0, [1, 2]), part("t", 1, [3, 4])], range(1, 5)), None,
     [(1,), (2,), (3,), (4,)]),
    # the ZooKeeper active controller (1, ordered last) joins only the batch that takes every other node
    ([b(2), b(3), b(4), b(1)], 2, always, 1, [(2, 3), (4, 1)]),
    ([b(2), b(3), b(4), b(1)], 3, always, 1, [(2, 3, 4), (1,)]),
    ([b(2), b(3), b(4), b(1)], 4, always, 1, [(2, 3, 4, 1)]),
    ([b(2), b(3), b(1)], 2, always, 1, [(2, 3), (1,)]),
    # ... not a batch with room left while another node is held back (2 and 3 share a partition)
    ([b(2), b(3), b(4), b(1)], 3, safe_with([part("t", 0, [2, 3, 9])], [1, 2, 3, 4, 9]), 1, [(2, 4), (3, 1)]),
    # ... and only where it may stop with them
    ([b(2), b(3), b(1)], 3, safe_with([part("t", 0, [1, 2, 3], min_isr=1)], [1, 2, 3]), 1, [(2, 3), (1,)]),
    ([b(2), b(3), b(1)], 3, safe_with([part("t", 0, [1, 2, 3])], [1, 2, 3]), 1, [(2,), (3,), (1,)]),
    # controllers (and combined nodes) never batched, and never pulled into a brokers' batch
    ([c(3001), c(3002), b(1), b(2), b(3)], 3, always, None, [(3001,), (3002,), (1, 2, 3)]),
    ([bc(4), b(1), b(2)], 3, always, None, [(4,), (1, 2)]),
    ([b(1), c(3001), b(2), bc(4), b(3)], 3, always, None, [(1, 2, 3), (3001,), (4,)]),
    ([], 3, always, None, []),
])
def test_plan_batches(nodes: list[RollNode], parallel: int, safe: Callable[[Sequence[int]], bool], last: int | None,
                      expected: list[tuple[int, ...]]) -> None:
    assert batch_ids(dom.plan_batches(nodes, parallel, safe, last)) == expected


def test_same_rack_first() -> None:
    """Brokers on the first one's rack join its batch before the others (a hint: safe_together decides)."""
    racked = [b(1, "a"), b(2, "b"), b(3, "a"), b(4, "b"), b(5, "a"), b(6, None)]
    assert batch_ids(dom.plan_batches(racked, 2, always)) == [(1, 3), (2, 4), (5, 6)]
    assert batch_ids(dom.plan_batches(racked, 3, always)) == [(1, 3, 5), (2, 4, 6)]
    # the first broker without a rack: no preference, the order given
    assert batch_ids(dom.plan_batches([b(1), b(2, "a"), b(3, "a")], 2, always)) == [(1, 2), (3,)]
    # a broker of another rack still joins when the rack has no one left who may stop with the first
    parts = [part("t", 0, [1, 3], min_isr=1), part("t", 1, [1, 5], min_isr=1)]  # 1 with 3 or 5: offline
    assert batch_ids(dom.plan_batches(racked, 2, safe_with(parts, range(1, 7)))) == [(1, 2), (3, 5), (4, 6)]


def test_the_zookeeper_controller_goes_with_a_rack_mate() -> None:
    """6 brokers in 3 racks, rack-aware RF-3 topics with min ISR 2 (only brokers of one rack may stop together),
    the active controller (4) on rack a with broker 1: three batches, the controller's with its rack-mate. With
    the brokers by id it took four (bench/roll.py: [1], [2, 5], [3, 6], [4]): broker 1 had no partner left."""
    racked = (b(1, "a"), b(2, "b"), b(3, "c"), b(4, "a"), b(5, "b"), b(6, "c"))
    parts = [part("t", p, [1 + p % 3, 1 + (p + 1) % 3, 1 + (p + 2) % 3]) for p in range(3)] + \
        [part("u", p, [4 + p % 3, 4 + (p + 1) % 3, 4 + (p + 2) % 3]) for p in range(3)] + \
        [part("v", p, [1 + p % 3, 4 + (p + 1) % 3, 1 + (p + 2) % 3 + 3 * (p % 2)]) for p in range(3)]
    safe = safe_with(parts, range(1, 7))
    assert not safe([1, 2]) and safe([1, 4]) and safe([2, 5])
    t = Topology("zookeeper", racked, 4)
    assert batch_ids(dom.plan_batches(dom.order(t, racked), 2, safe, 4)) == [(2, 5), (3, 6), (1, 4)]


def test_next_batch_asks_safe_together_with_the_whole_batch() -> None:
    asked: list[tuple[int, ...]] = []

    def safe(batch: Sequence[int]) -> bool:
        asked.append(tuple(batch))
        return len(batch) <= 2

    assert ids(dom.next_batch(SIX, 3, safe)) == [1, 2]
    assert asked == [(1, 2), (1, 2, 3), (1, 2, 4), (1, 2, 5), (1, 2, 6)]
    assert dom.next_batch([], 3, safe) == ()
    assert ids(dom.next_batch([c(3001), b(1)], 3, safe)) == [3001]


# a property: whatever the partitions, every node once, each batch within --parallel and able to stop at once
@st.composite
def clusters(draw: Any) -> tuple[Topology, list[PartitionState], int]:
    n = draw(st.integers(1, 8))
    kraft = draw(st.booleans())
    roles = draw(st.lists(st.sampled_from(["broker", "broker", "controller", "combined"] if kraft else ["broker"]),
                          min_size=n, max_size=n))
    racks = draw(st.lists(st.sampled_from([None, "a", "b"]), min_size=n, max_size=n))
    nodes = tuple(RollNode(i + 1, roles[i], None, None, racks[i]) for i in range(n))  # type: ignore[arg-type]
    brokers = [x.id for x in nodes if x.is_broker]
    leader = draw(st.sampled_from([None, *[x.id for x in nodes]]))
    parts = []
    if brokers:
        for p in range(draw(st.integers(0, 12))):
            replicas = draw(st.lists(st.sampled_from(brokers), min_size=1, max_size=min(3, len(brokers)),
                                     unique=True))
            isr = [r for r in replicas if draw(st.booleans())] or replicas[:1]
            parts.append(part("t", p, replicas, isr, min_isr=draw(st.integers(1, 3)),
                              leader=draw(st.sampled_from(isr))))
    return Topology("kraft" if kraft else "zookeeper", nodes, leader), parts, draw(st.integers(1, 5))


def may_stop_together(parts: Sequence[PartitionState], batch: set[int]) -> bool:
    """The rule restated on its own: every partition the batch hosts keeps min(min ISR, RF) in-sync replicas,
    and at least one (every broker is live here)."""
    for p in parts:
        if batch.isdisjoint(p.replicas):
            continue
        left = [r for r in p.isr if r not in batch]
        if len(left) < max(1, min(p.min_isr, len(p.replicas))):
            return False
    return True


@settings(max_examples=300, deadline=None)
@given(clusters())
def test_plan_batches_covers_every_node_once_and_each_batch_may_stop_together(
        cluster: tuple[Topology, list[PartitionState], int]) -> None:
    t, parts, parallel = cluster
    live = [x.id for x in t.nodes]
    ordered = dom.order(t, t.nodes)
    last = t.leader if t.mode == "zookeeper" else None
    batches = dom.plan_batches(ordered, parallel, safe_with(parts, live), last)
    flat = [x.id for bt in batches for x in bt]
    assert sorted(flat) == sorted(live) and len(flat) == len(set(flat))
    for i, bt in enumerate(batches):
        assert 1 <= len(bt) <= parallel
        if len(bt) > 1:
            assert not any(x.is_controller for x in bt)
            assert may_stop_together(parts, {x.id for x in bt}), (bt, parts)
        if last is not None and last in {x.id for x in bt}:
            assert i == len(batches) - 1  # the active controller: in the last batch only
        assert bt[0] == next(x for x in ordered if x.id not in {y.id for prev in batches[:i] for y in prev})
    if parallel == 1:
        assert [bt[0] for bt in batches] == list(ordered)


# ------------------------------------------------------------------------------------------------ the journal
HEAD = {"event": "roll_started", "at": "2026-01-01T00:00:00.000Z", "journal_version": 1, "cluster_id": "C",
        "mode": "zookeeper", "nodes_asked": None, "controllers": "first", "parallel": 1,
        "nodes": [{"id": 5, "role": "broker"}], "order": [5], "pid": 1}


def step(s: str, status: str, node: int = 5, role: str = "broker", **kw: Any) -> dict[str, Any]:
    return {"event": "step", "at": f"t-{s}-{status}", "node": node, "role": role, "step": s, "status": status, **kw}


def walk(*pairs: str, role: str = "broker") -> list[dict[str, Any]]:
    """`walk("can_stop", "drain:started")`: each step started and done, or only as far as the status given."""
    out = []
    for p in pairs:
        s, _, status = p.partition(":")
        out.append(step(s, "started", role=role))
        if status != "started":
            out.append(step(s, status or "done", role=role))
    return out


BROKER_TO_STOP = ("can_stop", "drain", "shutdown")


@pytest.mark.parametrize(("events", "phase"), [
    ([], "untouched"),
    ([HEAD], "untouched"),
    (walk("can_stop:started"), "before_stop"),
    (walk("only_if"), "before_stop"),
    (walk("quorum_check", role="controller"), "before_stop"),
    (walk(*BROKER_TO_STOP), "before_stop"),
    (walk("can_stop", "drain:failed"), "before_stop"),  # a failed drain: the process was not touched
    (walk(*BROKER_TO_STOP, "stop:started"), "stopping"),  # its stop hook may have run
    (walk(*BROKER_TO_STOP, "stop"), "stopping"),
    (walk(*BROKER_TO_STOP, "stop:failed"), "stopping"),
    (walk(*BROKER_TO_STOP, "stop", "wait_stopped:started"), "stopping"),
    (walk(*BROKER_TO_STOP, "stop", "wait_stopped"), "stopped"),
    (walk(*BROKER_TO_STOP, "stop", "wait_stopped", "start:started"), "starting"),  # never run a hook again
    (walk(*BROKER_TO_STOP, "stop", "wait_stopped", "start:failed"), "starting"),
    (walk(*BROKER_TO_STOP, "stop", "wait_stopped", "start"), "starting"),
    (walk(*BROKER_TO_STOP, "stop", "wait_stopped", "start", "wait_restarted:started"), "starting"),
    (walk(*BROKER_TO_STOP, "restart:started"), "starting"),
    (walk(*BROKER_TO_STOP, "restart"), "starting"),
    (walk(*BROKER_TO_STOP, "stop", "wait_stopped", "start", "wait_restarted"), "restarted"),
    (walk(*BROKER_TO_STOP, "restart", "wait_restarted", "wait_in_sync", "undrain:failed"), "restarted"),
    (walk("quorum_check", "stop", "wait_stopped", "start", "wait_caught_up", role="controller"), "restarted"),
    # a combined node is back once its broker is (wait_restarted), not on its controller's catching up alone
    (walk("quorum_check", "stop", "wait_stopped", "start", "wait_caught_up", role="combined"), "starting"),
    (walk("quorum_check", "stop", "wait_stopped", "start", "wait_restarted", role="combined"), "restarted"),
    ([*walk(*BROKER_TO_STOP, "stop", "wait_stopped", "start", "wait_restarted", "wait_in_sync", "undrain",
            "wait_healthy", "settle"), {"event": "node_done", "node": 5, "role": "broker", "status": "done"}], "done"),
    ([step("only_if", "started"), step("only_if", "done", detail={"restart": False, "exit_code": 1}),
      {"event": "node_done", "node": 5, "role": "broker", "status": "skipped"}], "skipped"),
])
def test_replay_phase(events: list[dict[str, Any]], phase: str) -> None:
    assert dom.replay(events).progress(5).phase == phase


def test_replay_collects_steps_details_timings_and_the_roll() -> None:
    events = [
        HEAD,
        step("can_stop", "started"), step("can_stop", "done", elapsed_s=0.5),
        step("drain", "started"), step("drain", "done", elapsed_s=1, detail={"drain_file": "/d/drain-5.json"}),
        step("stop", "started", detail={"old_epoch": 10}),
        {"event": "roll_failed", "at": "x", "node": 5, "step": "stop", "reason": "hook_failed", "exit_code": 9},
        {"event": "roll_resumed", "at": "y", "pid": 2},
        step("stop", "done", elapsed_s=2.25, detail={"seen_stopped": True}),
        step("settle", "skipped", elapsed_s="n/a"),
        {"event": "something_newer", "node": 5, "step": "x"},  # unknown events are ignored
        {"event": "step", "node": "5", "step": "stop", "status": "started"},  # no int node: ignored
        {"event": "roll_done", "at": "z", "elapsed_s": 9.0},
    ]
    st = dom.replay(events)
    np = st.nodes[5]
    assert list(st.nodes) == [5]
    assert np.started == ["can_stop", "drain", "stop"]
    assert np.done == ["can_stop", "drain", "stop", "settle"]
    assert np.detail == {"drain_file": "/d/drain-5.json", "old_epoch": 10, "seen_stopped": True}
    assert np.elapsed == {"can_stop": 0.5, "drain": 1.0, "stop": 2.25}  # a non-number elapsed_s is left out
    assert (np.first_at, np.last_at) == ("t-can_stop-started", "t-settle-skipped")
    assert st.head is HEAD and st.runs == 2
    assert st.last_failure is None  # a resumed run clears the failure of the run before (`roll status`)
    assert dom.replay(events[:7]).last_failure["reason"] == "hook_failed"  # type: ignore[index]
    assert st.finished is not None and st.finished["elapsed_s"] == 9.0


@pytest.mark.parametrize(("events", "failed"), [
    (walk("can_stop", "drain:failed"), "drain"),
    (walk("can_stop", "drain:failed", "drain"), None),  # a failed step, then a later success, clears it
    (walk("can_stop", "drain:failed", "drain:started"), "drain"),  # started again: not cleared yet
    (walk("can_stop", "drain", "shutdown", "stop:failed", "stop", "wait_stopped"), None),
    (walk("can_stop", "drain", "shutdown", "stop:failed", "stop:skipped"), None),
    (walk("can_stop:failed", "can_stop:failed"), "can_stop"),
    ([*walk("can_stop", "drain:failed"), {"event": "node_done", "node": 5, "status": "done"}], "drain"),
])
def test_replay_failed(events: list[dict[str, Any]], failed: str | None) -> None:
    assert dom.replay(events).progress(5).failed == failed


def test_the_engines_incremental_replay_agrees_with_replay() -> None:
    """services/roll.py applies each event as it journals it (RollState.apply): the same state as a replay of the
    journal by a resumed run."""
    events = [HEAD, *walk("can_stop", "drain:failed", "drain", "shutdown", "stop"), step("x", "done", node=6),
              {"event": "roll_failed", "node": 5}, {"event": "roll_resumed"},
              *walk("wait_stopped", "start", "wait_restarted", "settle"),
              {"event": "node_done", "node": 5, "role": "broker", "status": "done"}, {"event": "roll_done"}]
    for k in range(len(events) + 1):
        st = dom.RollState()
        for ev in events[:k]:
            st.apply(ev)
        assert st == dom.replay(events[:k]), k


def test_node_progress_defaults() -> None:
    np = NodeProgress(7)
    assert (np.role, np.phase, np.failed, np.finished) == ("broker", "untouched", None, False)


# ------------------------------------------------------------------------------------------------ differences
def head(nodes: list[int] | None = None, controllers: str = "first", parallel: int = 1) -> dict[str, Any]:
    return {"event": "roll_started", "nodes_asked": nodes, "controllers": controllers, "parallel": parallel}


@pytest.mark.parametrize(("had", "asked", "says"), [
    (head(), Request(None, "first", 1), []),
    (head([3, 1, 2]), Request((1, 2, 3), "first", 1), []),  # the order --nodes was given in does not matter
    (head([1, 2, 3]), Request((1, 2), "first", 1), ["--nodes 1,2 (the roll in the state directory has 1,2,3)"]),
    (head(None), Request((1,), "first", 1), ["--nodes 1 (the roll in the state directory has every node)"]),
    (head([1]), Request(None, "first", 1), ["--nodes every node (the roll in the state directory has 1)"]),
    (head(controllers="skip"), Request(None, "first", 1), ["--controllers first (it has skip)"]),
    (head(parallel=3), Request(None, "first", 2), ["--parallel 2 (it has 3)"]),
    (head([2, 1], "skip", 3), Request((1, 2), "skip", 3), []),
    (head([2], "skip", 3), Request((1,), "first", 1),
     ["--nodes 1 (the roll in the state directory has 2)", "--controllers first (it has skip)",
      "--parallel 1 (it has 3)"]),
])
def test_differences(had: dict[str, Any], asked: Request, says: list[str]) -> None:
    assert dom.differences(had, asked) == says
