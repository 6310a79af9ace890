"""`kadmin roll`'s pure rules (kadmin/domain/roll.py, roll_events.py): the order, the nodes chosen, each node's
steps from the one table, the batches (with can-stop's rules for a batch, kadmin/domain/partitions.py
`stop_together_blockers`, and the default rule that a batch holds one replica of a partition at most), what a
node shows (stopped, back: never without evidence that it went down), the journal's typed events replayed into
each node's phase, and what a resumed run may not ask differently."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kadmin.domain import roll as dom
from kadmin.domain import roll_events as ev
from kadmin.domain.models import PartitionState
from kadmin.domain.partitions import shared_partitions, stop_together_blockers
from kadmin.domain.roll import NodeSeen, Request, RollNode, Topology, Traits
from kadmin.domain.roll_events import NodeProgress

ZK = Traits("epoch", True, False)
KRAFT_TRAITS = Traits("unfenced", False, True)

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
    # the active controller when it is a broker that is no quorum node goes last (no rule reads the mode: a KRaft
    # quorum never elects a broker-only node, so this is ZooKeeper mode's rule)
    (Topology("kraft", KRAFT, 1), [4, 3001, 3002, 3003, 2, 3, 1]),
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
ZK_BROKER = ("can_stop", "drain", "shutdown", "others_healthy", "stop", "wait_stopped", "start", "wait_restarted",
             "wait_in_sync", "undrain", "wait_healthy", "settle")
KRAFT_BROKER = ("can_stop", "drain", "others_healthy", "stop", "wait_stopped", "start", "wait_restarted",
                "wait_in_sync", "undrain", "wait_healthy", "settle")
KRAFT_CONTROLLER = ("quorum_check", "others_healthy", "stop", "wait_stopped", "start", "wait_caught_up", "settle")
KRAFT_COMBINED = ("quorum_check", "can_stop", "drain", "others_healthy", "stop", "wait_stopped", "start",
                  "wait_restarted", "wait_caught_up", "wait_in_sync", "undrain", "wait_healthy", "settle")


def with_restart(s: tuple[str, ...]) -> tuple[str, ...]:
    i = s.index("stop")
    assert s[i:i + 3] == ("stop", "wait_stopped", "start")
    return s[:i] + ("restart",) + s[i + 3:]


@pytest.mark.parametrize(("node", "traits", "base"), [
    (b(1), ZK, ZK_BROKER),
    (b(1), KRAFT_TRAITS, KRAFT_BROKER),
    (c(3001), KRAFT_TRAITS, KRAFT_CONTROLLER),
    (bc(4), KRAFT_TRAITS, KRAFT_COMBINED),
])
@pytest.mark.parametrize("restart_hook", [False, True])
@pytest.mark.parametrize("only_if", [False, True])
@pytest.mark.parametrize("node_hooks", [False, True])
@pytest.mark.parametrize("soak", [False, True])
def test_steps(node: RollNode, traits: Traits, base: tuple[str, ...], restart_hook: bool, only_if: bool,
               node_hooks: bool, soak: bool) -> None:
    expected = with_restart(base) if restart_hook else base
    if only_if:
        expected = ("only_if",) + expected
    if node_hooks:  # before the first change (the drain, else the stop), after the node is healthy and soaked
        first = next(s for s in expected if s in ("drain", "others_healthy", "stop", "restart"))
        i = expected.index(first)
        expected = expected[:i] + ("before_node",) + expected[i:]
        expected = expected[:-1] + ("after_node",) + expected[-1:]
    if soak:
        i = expected.index("after_node") if node_hooks else len(expected) - 1
        expected = expected[:i] + ("soak",) + expected[i:]
    asked = {"restart" if restart_hook else "stop_start"} | ({"only_if"} if only_if else set()) \
        | ({"before_node", "after_node"} if node_hooks else set()) | ({"soak"} if soak else set())
    got = dom.steps(node, traits, frozenset(asked))
    assert got == expected
    # always in the contract's order, each once, every one of them a known step
    assert list(got) == sorted(got, key=dom.STEP_ORDER.index)
    assert len(set(got)) == len(got)


def test_shutdown_where_the_backend_can_ask_for_it_and_the_quorum_steps_where_voters_are_nodes() -> None:
    for node, traits in [(b(1), KRAFT_TRAITS), (c(1), KRAFT_TRAITS), (bc(1), KRAFT_TRAITS), (b(1), ZK)]:
        s = dom.steps(node, traits, frozenset({"stop_start"}))
        assert ("shutdown" in s) == traits.controlled_shutdown
        assert ("quorum_check" in s) == ("wait_caught_up" in s) == (node.is_controller and traits.quorum_nodes)
        assert ("can_stop" in s) == ("drain" in s) == ("undrain" in s) == node.is_broker
        assert "others_healthy" in s


def test_the_table_of_steps() -> None:
    """One table: names unique, stages never going back, the hooks that change a node mutations, the gates and
    the drain the only steps a resumed run repeats (before the stop), a receipt for every role."""
    names = [s.name for s in dom.STEPS]
    assert len(names) == len(set(names)) and tuple(names) == dom.STEP_ORDER
    assert [s.stage for s in dom.STEPS] == sorted(s.stage for s in dom.STEPS)
    # every hook step a mutation but those that only ask or tell (--only-if, --before-node, --after-node)
    assert {s.name for s in dom.STEPS if s.hook and not s.mutates} == {"only_if", "before_node", "after_node"}
    assert {s.name for s in dom.STEPS if s.again} == {"quorum_check", "can_stop", "drain", "shutdown",
                                                      "others_healthy"}
    assert all(s.stage == dom.BEFORE for s in dom.STEPS if s.again)
    assert set(dom.RECEIPTS) == {s.name for s in dom.STEPS if s.stage == dom.RECEIPT}
    assert dom.receipt_step(b(1), ZK) == "wait_restarted" and dom.receipt_step(c(1), KRAFT_TRAITS) == "wait_caught_up"


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
    last = t.leading_broker
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
        "nodes": [{"id": 5, "role": "broker"}], "order": [5], "step_timeout": 600, "pid": 1}


def replay(events: list[dict[str, Any]]) -> ev.RollState:
    return ev.replay(ev.parse(e) for e in events)


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
SEEN = {"event": "seen_stopped", "at": "t-seen", "node": 5, "role": "broker", "how": "fenced", "step": "stop"}


def confirmed(went_down: bool) -> dict[str, Any]:
    return {"event": "confirmed", "at": "t-confirmed", "node": 5, "went_down": went_down, "pid": 3}


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
    ([*walk(*BROKER_TO_STOP, "stop:started"), SEEN], "stopped"),  # seen going while its hook ran
    ([*walk(*BROKER_TO_STOP, "stop:failed"), SEEN], "stopped"),
    (walk(*BROKER_TO_STOP, "stop", "wait_stopped:started"), "stopping"),
    (walk(*BROKER_TO_STOP, "stop", "wait_stopped"), "stopped"),
    (walk(*BROKER_TO_STOP, "stop", "wait_stopped", "start:started"), "starting"),
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
    # the operator's word: it went down (counts as seen), or it never did (its stop is forgotten)
    ([*walk(*BROKER_TO_STOP, "stop"), confirmed(True)], "stopped"),
    ([*walk(*BROKER_TO_STOP, "stop"), confirmed(False)], "before_stop"),
    ([*walk(*BROKER_TO_STOP, "restart"), confirmed(False)], "before_stop"),
    ([*walk(*BROKER_TO_STOP, "stop", "wait_stopped", "start", "wait_restarted", "wait_in_sync", "undrain",
            "wait_healthy", "settle"), {"event": "node_done", "at": "t", "node": 5, "role": "broker",
                                        "status": "done"}], "done"),
    ([step("only_if", "started"), step("only_if", "done", detail={"restart": False, "exit_code": 1}),
      {"event": "node_done", "at": "t", "node": 5, "role": "broker", "status": "skipped"}], "skipped"),
])
def test_replay_phase(events: list[dict[str, Any]], phase: str) -> None:
    assert replay(events).progress(5).phase == phase


def test_replay_collects_steps_details_timings_evidence_and_the_roll() -> None:
    events = [
        HEAD,
        step("can_stop", "started"), step("can_stop", "done", elapsed_s=0.5),
        step("drain", "started", detail={"drain_file": "/d/drain-5.json"}),
        step("drain", "done", elapsed_s=1, detail={"drain_file": "/d/drain-5.json"}),
        step("stop", "started", detail={"old_epoch": 10}),
        {"event": "roll_failed", "at": "x", "node": 5, "step": "stop", "reason": "hook_failed", "message": "m",
         "exit_code": 9},
        {"event": "roll_resumed", "at": "y", "pid": 2},
        step("drain", "started", detail={"drain_file": "/d/drain-5-2.json"}),  # a rerun's drain: the first stands
        step("stop", "done", elapsed_s=2.25, detail={"watched": True}),
        SEEN,
        {"event": "something_newer", "node": 5, "step": "x"},  # unknown events are ignored
        {"event": "roll_done", "at": "z", "elapsed_s": 9.0},
    ]
    st = replay(events)
    np = st.nodes[5]
    assert list(st.nodes) == [5]
    assert np.started == ["can_stop", "drain", "stop", "drain"]
    assert np.done == ["can_stop", "drain", "stop"]
    assert np.drain_file == "/d/drain-5.json" and np.old_epoch == 10
    assert np.detail == {"drain_file": "/d/drain-5.json", "old_epoch": 10, "watched": True}
    assert np.elapsed == {"can_stop": 0.5, "drain": 1.0, "stop": 2.25}
    assert np.seen_stopped == "fenced" and np.last("drain") == "started" and np.attempts("drain") == 2
    assert (np.first_at, np.last_at) == ("t-can_stop-started", "t-seen")
    assert st.head is not None and st.head.cluster_id == "C" and st.runs == 2
    assert st.last_failure is None  # a resumed run clears the failure of the run before (`roll status`)
    failed = replay(events[:7]).last_failure
    assert failed is not None and failed.reason == "hook_failed"
    assert st.finished is not None and st.finished.elapsed_s == 9.0


@pytest.mark.parametrize("bad", [
    {"event": "step", "at": "t", "node": "5", "role": "broker", "step": "stop", "status": "started"},  # a str node
    {"event": "step", "at": "t", "node": True, "role": "broker", "step": "stop", "status": "started"},  # a bool
    {"event": "step", "at": "t", "role": "broker", "step": "stop", "status": "started"},  # no node
    {"event": "step", "at": "t", "node": 5, "role": "broker", "step": "stop", "status": "done", "elapsed_s": "n/a"},
    {"event": "roll_failed", "at": "t", "node": 1, "step": "stop", "reason": "r", "message": "m", "exit_code": 1,
     "down": ["a"]},
    {"event": "roll_started", "at": "t"},
])
def test_a_known_event_with_a_wrong_key_cannot_be_trusted(bad: dict[str, Any]) -> None:
    with pytest.raises(ev.BadEvent):
        ev.parse(bad)


@pytest.mark.parametrize("obj", [
    HEAD, SEEN, confirmed(True),
    step("drain", "done", elapsed_s=1.5, detail={"drain_file": "/d/x.json"}),
    step("stop", "failed", elapsed_s=0.25, message="the --stop hook exited 3"),
    {"event": "node_done", "at": "t", "node": 5, "role": "broker", "status": "done", "elapsed_s": 4.0,
     "detail": {"old_epoch": 1, "new_epoch": 2}},
    {"event": "roll_failed", "at": "t", "node": None, "step": None, "reason": "interrupted", "message": "m",
     "exit_code": 130, "down": [2], "drained": [2, 3]},
    {"event": "roll_resumed", "at": "t", "pid": 9, "allow_unavailable": ["scratch-*"], "fetch_timeout_ms": 1500,
     "fetch_timeout_source": "controller 3001"},
    {"event": "roll_done", "at": "t", "elapsed_s": 1.0},
])
def test_one_serializer_the_keys_round_trip(obj: dict[str, Any]) -> None:
    """The NDJSON keys are a contract: parse then to_json gives the same keys (a journal of version 1 gains the
    defaults of the keys added since: the batch rule it used, no --allow-unavailable)."""
    e = ev.parse(obj)
    assert e is not None
    back = ev.to_json(e)
    extra = {"batch_rule": "min-isr", "allow_unavailable": []} if obj is HEAD else {}
    if obj is HEAD:
        back["nodes"] = [{k: v for k, v in n.items() if v is not None} for n in back["nodes"]]
    assert back == {**{k: float(v) if k == "elapsed_s" else v for k, v in obj.items()}, **extra}
    assert list(back)[:2] == ["event", "at"]


@pytest.mark.parametrize(("events", "failed"), [
    (walk("can_stop", "drain:failed"), "drain"),
    (walk("can_stop", "drain:failed", "drain"), None),  # a failed step, then a later success, clears it
    (walk("can_stop", "drain:failed", "drain:started"), "drain"),  # started again: not cleared yet
    (walk("can_stop", "drain", "shutdown", "stop:failed", "stop", "wait_stopped"), None),
    (walk("can_stop:failed", "can_stop:failed"), "can_stop"),
    ([*walk("can_stop", "drain:failed"), {"event": "node_done", "at": "t", "node": 5, "role": "broker",
                                          "status": "done"}], "drain"),
])
def test_replay_failed(events: list[dict[str, Any]], failed: str | None) -> None:
    assert replay(events).progress(5).failed == failed


def test_the_engines_incremental_replay_agrees_with_replay() -> None:
    """The engine applies each event as it journals it (RollState.apply): the same state as a replay of the
    journal by a resumed run."""
    events = [HEAD, *walk("can_stop", "drain:failed", "drain", "shutdown", "stop"), step("x", "done", node=6),
              {"event": "roll_failed", "at": "t", "node": 5, "step": "stop", "reason": "error", "message": "m",
               "exit_code": 1}, {"event": "roll_resumed", "at": "t", "pid": 1}, SEEN,
              *walk("wait_stopped", "start", "wait_restarted", "settle"),
              {"event": "node_done", "at": "t", "node": 5, "role": "broker", "status": "done"},
              {"event": "roll_done", "at": "t", "elapsed_s": 1}]
    for k in range(len(events) + 1):
        st = ev.RollState()
        for e in events[:k]:
            st.apply(ev.parse(e))
        assert st == replay(events[:k]), k


def test_node_progress_defaults() -> None:
    np = NodeProgress(7)
    assert (np.role, np.phase, np.failed, np.finished, np.seen_stopped, np.only_if) == \
        ("broker", "untouched", None, False, None, None)


# ------------------------------------------------------------------------------------------------ what is seen
B, C = b(1), c(3001)


@pytest.mark.parametrize(("node", "traits", "seen", "old", "stopped"), [
    (B, ZK, NodeSeen(1, registered=False), 10, True),
    (B, ZK, NodeSeen(1, registered=True, epoch=10), 10, False),  # the registration of before: it never went
    (B, ZK, NodeSeen(1, registered=True, epoch=12), 10, True),  # a new registration: it went (and came back)
    (B, ZK, NodeSeen(1, registered=True, epoch=12), None, False),  # no epoch of before to compare
    (B, KRAFT_TRAITS, NodeSeen(1, registered=True, fenced=True), None, True),
    (B, KRAFT_TRAITS, NodeSeen(1, registered=False), None, True),
    (B, KRAFT_TRAITS, NodeSeen(1, registered=True, fenced=False), None, False),
    (C, KRAFT_TRAITS, NodeSeen(3001, voter=True, fetch_age_ms=2500, quorum_leader=3002), None, True),
    (C, KRAFT_TRAITS, NodeSeen(3001, voter=True, fetch_age_ms=None, quorum_leader=3002), None, True),
    (C, KRAFT_TRAITS, NodeSeen(3001, voter=True, fetch_age_ms=100, quorum_leader=3002), None, False),
    (C, KRAFT_TRAITS, NodeSeen(3001, voter=True, leads_quorum=True, fetch_age_ms=0, quorum_leader=3001), None, False),
])
def test_stopped(node: RollNode, traits: Traits, seen: NodeSeen, old: int | None, stopped: bool) -> None:
    assert (dom.stopped(node, traits, seen, old, 2000) is None) == stopped


@pytest.mark.parametrize(("node", "step", "traits", "seen", "old", "seen_stopped", "back"), [
    # an epoch receipt: a greater epoch is the evidence itself
    (B, "wait_restarted", ZK, NodeSeen(1, registered=True, epoch=12), 10, False, True),
    (B, "wait_restarted", ZK, NodeSeen(1, registered=True, epoch=10), 10, True, False),
    (B, "wait_restarted", ZK, NodeSeen(1, registered=False), 10, True, False),
    (B, "wait_restarted", ZK, NodeSeen(1, registered=True, epoch=12), None, True, True),
    (B, "wait_restarted", ZK, NodeSeen(1, registered=True, epoch=12), None, False, False),
    # unfenced: only after it was seen stopped (journaled)
    (B, "wait_restarted", KRAFT_TRAITS, NodeSeen(1, registered=True, fenced=False), None, True, True),
    (B, "wait_restarted", KRAFT_TRAITS, NodeSeen(1, registered=True, fenced=False), None, False, False),
    (B, "wait_restarted", KRAFT_TRAITS, NodeSeen(1, registered=True, fenced=True), None, True, False),
    # a controller: caught up within the limit, after it was seen stopped
    (C, "wait_caught_up", KRAFT_TRAITS, NodeSeen(3001, True, voter=True, fetch_age_ms=10, caught_up_age_ms=10,
                                                 quorum_leader=3002), None, True, True),
    (C, "wait_caught_up", KRAFT_TRAITS, NodeSeen(3001, voter=True, fetch_age_ms=10, caught_up_age_ms=10,
                                                 quorum_leader=3002), None, False, False),
    (C, "wait_caught_up", KRAFT_TRAITS, NodeSeen(3001, voter=True, fetch_age_ms=10, caught_up_age_ms=5000,
                                                 quorum_leader=3002), None, True, False),
    (C, "wait_caught_up", KRAFT_TRAITS, NodeSeen(3001, voter=True, fetch_age_ms=10, caught_up_age_ms=10,
                                                 quorum_leader=None), None, True, False),
])
def test_back_never_without_evidence_that_it_went_down(node: RollNode, step: str, traits: Traits, seen: NodeSeen,
                                                       old: int | None, seen_stopped: bool, back: bool) -> None:
    assert (dom.back(node, step, traits, seen, old_epoch=old, seen_stopped=seen_stopped,
                     fetch_timeout_ms=2000) is None) == back


@pytest.mark.parametrize(("node", "before", "seen", "changed"), [
    (C, "dirA", NodeSeen(3001, voter=True, directory_id="dirA"), False),  # back as the voter it was
    (C, "dirA", NodeSeen(3001, voter=True, directory_id="dirB", observer=True), True),  # a new disk: an observer
    (C, None, NodeSeen(3001, voter=True, directory_id="dirB", observer=True), True),  # before unknown: still not it
    (C, "dirA", NodeSeen(3001, directory_id="dirA", observer=True), False),  # removed from the voters, same disk
    (C, None, NodeSeen(3001, voter=True), False),  # a static quorum: no directory ids
    (bc(4), "dirA", NodeSeen(4, registered=True, voter=True, directory_id="dirB", observer=True), True),
    (B, None, NodeSeen(1, registered=True, directory_id="dirB", observer=True), False),  # a broker is an observer
])
def test_identity_changed(node: RollNode, before: str | None, seen: NodeSeen, changed: bool) -> None:
    why = dom.identity_changed(node, before, seen)
    assert (why is not None) == changed
    if why is not None:  # what to do, with the ids to give
        assert f"remove-controller --controller-id {node.id} --controller-directory-id {before or 'OLD_DIRECTORY_ID'}" \
            in why and "add-controller" in why and str(seen.directory_id) in why



def test_shared_partitions() -> None:
    parts = [part("t", 0, [1, 2, 3], min_isr=1), part("t", 1, [4, 5, 6], min_isr=1)]
    assert [(x.topic, x.partition) for x in shared_partitions(parts, {1, 2})] == [("t", 0)]
    assert shared_partitions(parts, {1, 4}) == []
    assert not stop_together_blockers(parts, {1, 2}, set(range(1, 7)))  # min ISR 1 alone would allow it



# ------------------------------------------------------------------------------------------------ differences
def head(nodes: list[int] | None = None, controllers: str = "first", parallel: int = 1,
         batch_rule: str | None = "distinct") -> dict[str, Any]:
    h = {"event": "roll_started", "nodes_asked": nodes, "controllers": controllers, "parallel": parallel}
    return h if batch_rule is None else {**h, "batch_rule": batch_rule}


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
    # the batch rule matters with --parallel only; a journal of before the rule batched by min ISR
    (head(parallel=2), Request(None, "first", 2, "min-isr"), ["--batch-rule min-isr (it has distinct)"]),
    (head(parallel=2, batch_rule=None), Request(None, "first", 2), ["--batch-rule distinct (it has min-isr)"]),
    (head(parallel=2, batch_rule=None), Request(None, "first", 2, "min-isr"), []),
    (head(batch_rule=None), Request(None, "first", 1), []),
])
def test_differences(had: dict[str, Any], asked: Request, says: list[str]) -> None:
    assert dom.differences(had, asked) == says


# ------------------------------------------------------------------ receipt "mode" (a migration's phase)
def test_a_mode_receipt_is_the_phase_mode_and_nothing_else() -> None:
    t = dom.Traits("mode", controlled_shutdown=False, quorum_nodes=False, target_mode="kraft")
    b = dom.RollNode(1, "broker")
    running_old = dom.NodeSeen(1, registered=True, mode="zk_migrating")
    gone = dom.NodeSeen(1, registered=False)
    back = dom.NodeSeen(1, registered=True, mode="kraft")
    assert dom.stopped(b, t, running_old, None, 2000) == "broker 1 still answers in zk_migrating mode"
    assert dom.stopped(b, t, gone, None, 2000) is None
    assert dom.stopped(b, t, back, None, 2000) is None  # only a restart gives the phase's mode
    assert dom.stop_evidence(b, t, back, None, 2000) == "new_mode"
    assert dom.back(b, "wait_restarted", t, running_old, old_epoch=None, seen_stopped=True,
                    fetch_timeout_ms=2000) == "broker 1 answers in zk_migrating mode, not kraft yet"
    assert dom.back(b, "wait_restarted", t, gone, old_epoch=None, seen_stopped=True,
                    fetch_timeout_ms=2000) == "broker 1 is not registered"
    assert dom.back(b, "wait_restarted", t, back, old_epoch=None, seen_stopped=False, fetch_timeout_ms=2000) is None


def test_a_finalized_controller_is_back_only_caught_up_too() -> None:
    t = dom.Traits("mode", controlled_shutdown=False, quorum_nodes=True, target_mode="finalized")
    c = dom.RollNode(3001, "controller")
    lagging = dom.NodeSeen(3001, voter=True, fetch_age_ms=50, caught_up_age_ms=9000, quorum_leader=3002,
                           mode="finalized")
    caught = replace(lagging, caught_up_age_ms=10)
    assert dom.back(c, "wait_caught_up", t, replace(caught, mode="migrating"), old_epoch=None, seen_stopped=True,
                    fetch_timeout_ms=2000) == "controller 3001 runs migrating, not finalized yet"
    assert "caught up 9000 ms ago" in str(dom.back(c, "wait_caught_up", t, lagging, old_epoch=None,
                                                   seen_stopped=True, fetch_timeout_ms=2000))
    assert dom.back(c, "wait_caught_up", t, caught, old_epoch=None, seen_stopped=False, fetch_timeout_ms=2000) is None
