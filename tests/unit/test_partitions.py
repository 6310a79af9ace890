"""Partition health and the can-stop rule, as pure functions."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kadmin.domain import partitions as rules
from kadmin.domain.models import MinIsrConfig, PartitionState


def ps(replicas, isr, leader, min_isr=2, topic="t", partition=0, problem=None, adding=(), deleting=False, cfg=None):
    return PartitionState(topic=topic, partition=partition, replicas=tuple(replicas), isr=tuple(isr), leader=leader,
                          leader_epoch=0, partition_epoch=0, min_isr=min_isr, problem=problem,
                          adding_replicas=tuple(adding), deleting=deleting, min_isr_config=cfg)


LIVE = frozenset({1, 2, 3})


def test_health_levels():
    healthy = ps([1, 2, 3], [1, 2, 3], 1)
    urp = ps([1, 2, 3], [1, 2], 1)
    at_min = ps([1, 2], [1, 2], 1)
    assert rules.health([healthy, at_min], LIVE) == rules.Health.OK
    assert rules.health([healthy, urp], LIVE) == rules.Health.WARNING
    assert rules.health([urp, ps([1, 2, 3], [1], 1)], LIVE) == rules.Health.CRITICAL  # under min ISR
    assert rules.health([ps([1, 2, 3], [1, 2, 3], -1)], LIVE) == rules.Health.CRITICAL  # no leader
    assert rules.health([ps([4, 1], [4, 1], 4, min_isr=1)], LIVE) == rules.Health.CRITICAL  # leader not live
    assert rules.health([ps([1, 2], [], None, problem="no state znode")], LIVE) == rules.Health.CRITICAL
    assert rules.is_at_min_isr(at_min) and not rules.is_at_min_isr(healthy)


def test_findings_name_the_reasons():
    f = rules.findings([ps([1, 2, 3], [1], -1, partition=4)], LIVE)
    assert f[0].partition == 4
    assert f[0].reasons == ("offline", "under min ISR (1 < 2)", "under-replicated (ISR 1 of 3)")


def test_can_stop_table():
    parts = [
        ps([1, 2, 3], [1, 2, 3], 1, partition=0),  # fine: ISR 2,3 after
        ps([1, 2, 3], [1, 2], 1, partition=1),  # ISR drops to 1 < 2
        ps([1, 2], [1], 1, partition=2, min_isr=1),  # no other ISR member: offline
        ps([1], [1], 1, partition=3, min_isr=2),  # RF 1 < min ISR 2: effective min ISR 1, goes offline
        ps([2, 3], [2, 3], 2, partition=4),  # not hosted
        ps([1, 2, 3], [1, 2, 3], 2, partition=5, min_isr=3),  # would drop to 2 < 3
    ]
    v = rules.can_stop(parts, 1, LIVE)
    assert v.hosted == 5 and not v.safe
    assert [(b.partition, b.reason.split(":")[0].split(" (")[0]) for b in v.blocking] == [
        (1, "ISR would drop to 1"), (2, "would go offline"), (3, "would go offline"), (5, "ISR would drop to 2")]
    assert v.never == ()  # KAFKA-15583: no partition is "never writable" any more
    assert rules.can_stop(parts[:1] + parts[4:5], 1, LIVE).safe


def test_dead_isr_members_do_not_count():
    # broker 3 is in the ISR znode but not registered: after stopping 1, only 2 is really in sync
    v = rules.can_stop([ps([1, 2, 3], [1, 2, 3], 1)], 1, frozenset({1, 2}))
    assert not v.safe and "ISR would drop to 1" in v.blocking[0].reason


@given(st.lists(st.tuples(st.lists(st.integers(1, 5), min_size=1, max_size=4, unique=True),
                          st.integers(0, 4), st.integers(1, 3)), max_size=20),
       st.integers(1, 5))
def test_safe_means_every_hosted_partition_keeps_leader_and_min_isr(specs, broker):
    live = frozenset(range(1, 6))
    parts = []
    for i, (replicas, k, min_isr) in enumerate(specs):
        isr = replicas[: max(1, k)] if k else replicas[:1]
        parts.append(ps(replicas, isr, isr[0], min_isr=min_isr, partition=i))
    v = rules.can_stop(parts, broker, live)
    for p in parts:
        if broker not in p.replicas:
            continue
        after = [r for r in p.isr if r != broker]
        ok = bool(after) and len(after) >= min(p.min_isr, len(p.replicas))  # the effective min ISR (Kafka 3.7+)
        flagged = any(b.partition == p.partition for b in v.blocking + v.never)
        assert flagged == (not ok)
    assert v.safe == all(
        (broker not in p.replicas) or len([r for r in p.isr if r != broker]) >= max(1, min(p.min_isr, len(p.replicas)))
        for p in parts)


def test_out_of_sync():
    parts = [ps([1, 2], [2], 2, partition=0), ps([1, 2], [1, 2], 1, partition=1), ps([2, 3], [2], 2, partition=2)]
    assert [p.partition for p in rules.out_of_sync(parts, 1)] == [0]


def test_min_isr_resolution_order():
    """Kafka's precedence: topic, then the leader's dynamic broker value, the dynamic cluster default, static."""
    full = MinIsrConfig(topic=3, brokers=((1, 2), (2, 4)), cluster_default=5, static=6)
    assert rules.min_isr_for(full, 1) == (3, "topic")
    no_topic = MinIsrConfig(brokers=((1, 2), (2, 4)), cluster_default=5, static=6)
    assert rules.min_isr_for(no_topic, 1) == (2, "broker:1")
    assert rules.min_isr_for(no_topic, 2) == (4, "broker:2")
    assert rules.min_isr_for(no_topic, 3) == (5, "cluster-default")  # broker 3 has no value of its own
    assert rules.min_isr_for(MinIsrConfig(brokers=((1, 2),), static=6), 3) == (6, "static")
    # a partition uses its leader's value; without a leader, the strictest any replica would apply
    assert rules.current_min_isr(no_topic, 2, [1, 2, 3]) == (4, "broker:2")
    assert rules.current_min_isr(no_topic, -1, [1, 2]) == (4, "broker:2")
    assert rules.current_min_isr(no_topic, -1, [3]) == (5, "cluster-default")


def test_under_replicated_leaves_out_adding_replicas():
    """TopicCommand's getReplicationFactor: during a reassignment the replicas being added do not count."""
    moving = ps([1, 2, 3, 4], [1, 2, 3], 1, min_isr=1, adding=[4])
    assert not rules.is_under_replicated(moving)
    assert rules.health([moving], LIVE | {4}) == rules.Health.OK
    lagging = ps([1, 2, 3, 4], [1, 2], 1, min_isr=1, adding=[4])
    assert rules.is_under_replicated(lagging)
    assert rules.findings([lagging], LIVE | {4})[0].reasons == ("under-replicated (ISR 2 of 3)",)


def test_effective_min_isr_is_capped_by_the_replica_count():
    """KAFKA-15583 (3.7+): the leader enforces min(min.insync.replicas, replicas)."""
    rf2 = ps([1, 2], [1, 2], 1, min_isr=3)
    assert rules.effective_min_isr(rf2) == 2
    assert not rules.is_under_min_isr(rf2, LIVE) and rules.is_at_min_isr(rf2)
    assert rules.health([rf2], LIVE) == rules.Health.OK
    assert rules.is_under_min_isr(ps([1, 2], [1], 1, min_isr=3), LIVE)
    # can-stop judges it like any other partition: never refused for "RF below min ISR" as such
    v = rules.can_stop([rf2, ps([3], [3], 3, min_isr=2, partition=1)], 3, LIVE)
    assert v.never == () and [b.reason for b in v.blocking] == ["would go offline: no other live replica in the ISR"]
    v = rules.can_stop([ps([1, 2, 3], [1, 2, 3], 1, min_isr=5)], 3, LIVE)
    assert v.safe is False and "below min.insync.replicas 3" in v.blocking[0].reason
    assert rules.can_stop([ps([1, 2, 3], [1, 2, 3], 1, min_isr=5)], 4, LIVE).safe


def test_no_leader_or_dead_leader_is_under_min_isr():
    """TopicCommand --under-min-isr-partitions lists a partition without a leader whatever its ISR."""
    offline = ps([1, 2], [2], -1, min_isr=1)
    assert rules.is_under_min_isr(offline) and rules.is_under_min_isr(offline, LIVE)
    stale = ps([4, 1], [4, 1], 4, min_isr=1)  # the leader is not registered: a metadata answer has no leader
    assert not rules.is_under_min_isr(stale) and rules.is_under_min_isr(stale, LIVE)
    assert rules.is_at_min_isr(offline)  # as TopicCommand: at-min compares sizes only


def test_topics_queued_for_deletion_are_left_out_of_check_and_can_stop():
    gone = ps([1, 2], [2], -1, topic="gone", deleting=True)
    fine = ps([1, 2, 3], [1, 2, 3], 1, topic="fine")
    assert rules.health([gone, fine], LIVE) == rules.Health.OK
    assert rules.findings([gone, fine], LIVE) == []
    v = rules.can_stop([gone, fine], 2, LIVE)
    assert v.safe and v.hosted == 1
    assert rules.health([ps([1, 2], [2], -1, topic="gone")], LIVE) == rules.Health.CRITICAL  # the same, not deleting


def test_can_stop_uses_the_min_isr_of_the_leader_after_the_stop():
    """Broker 1 has a dynamic min.insync.replicas of 3; the cluster default is 1. The controller elects
    the first replica in assignment order still in the ISR; its own value applies then."""
    cfg = MinIsrConfig(brokers=((1, 3),), cluster_default=1)
    led_by_2 = ps([2, 1, 3], [2, 1, 3], 2, min_isr=1, cfg=cfg)
    v = rules.can_stop([led_by_2], 2, LIVE)  # 1 takes over: ISR 1,3 is below its 3
    assert not v.safe and v.blocking[0].reason == ("ISR would drop to 2 (1,3), below min.insync.replicas 3 "
                                                   "(leader 1, broker:1)")
    assert rules.can_stop([led_by_2], 3, LIVE).safe  # 2 stays the leader, min ISR 1
    led_by_1 = ps([1, 2, 3], [1, 2, 3], 1, min_isr=3, cfg=cfg)
    assert rules.can_stop([led_by_1], 1, LIVE).safe  # 2 takes over, with the cluster default 1
    assert not rules.can_stop([led_by_1], 3, LIVE).safe  # 1 stays the leader: ISR 1,2 < 3


@given(st.lists(st.integers(1, 5), max_size=4, unique=True), st.lists(st.integers(1, 6), max_size=4, unique=True),
       st.one_of(st.none(), st.integers(-1, 6)), st.integers(1, 4), st.lists(st.integers(1, 5), max_size=2),
       st.sampled_from([None, "min.insync.replicas unknown: x"]), st.booleans())
def test_the_plainly_healthy_fast_path_never_hides_a_finding(replicas, isr, leader, min_isr, adding, problem, deleting):
    # check_summary() and finding() skip the full rules for plainly_healthy() partitions: it must imply them
    p = ps(replicas, isr, leader, min_isr=min_isr, adding=adding, problem=problem, deleting=deleting)
    full = rules.partition_health(p, LIVE)  # the full rules, no fast path
    if rules.plainly_healthy(p, LIVE):
        assert full == rules.Health.OK and not p.problem
    summary = rules.check_summary([p], LIVE)
    assert summary.health == (rules.Health.OK if deleting else full)
    assert bool(summary.findings) == (not deleting and rules.finding(p, LIVE) is not None)
    assert rules.health([p], LIVE) == summary.health


def test_an_unread_min_isr_is_judged_on_what_is_known():
    """A partition read whole whose min.insync.replicas could not be read (its leader's levels unreachable: a broker
    stopping while the check reads the configs) is never a CRITICAL page unless it is offline: with every replica
    in sync no min ISR Kafka enforces is missed (OK); short of a replica, the check cannot know (UNKNOWN, never OK);
    any other problem (its state unreadable) stays CRITICAL (issue 34 §2b, seen in a KRaft roll under load)."""
    live = {1, 2, 3}
    why = "min.insync.replicas unknown: broker 1's min.insync.replicas: cannot reach 127.0.0.1:9092"

    def p(isr, leader=1, unread=True, problem=why):
        return PartitionState("t", 0, (1, 2, 3), tuple(isr), leader, min_isr=2, problem=problem,
                              min_isr_unread=unread)

    full, short, offline = p((1, 2, 3)), p((1, 2)), p((2, 3), leader=-1)
    assert rules.finding(full, live) is None and rules.partition_health(full, live) == rules.Health.OK
    assert rules.partition_health(short, live) == rules.Health.WARNING
    assert rules.finding(short, live).reasons == (why, "under-replicated (ISR 2 of 3)")
    assert rules.partition_health(offline, live) == rules.Health.CRITICAL
    assert rules.partition_health(p((1, 2, 3), unread=False, problem="no state znode"), live) == rules.Health.CRITICAL
    summary = rules.check_summary([full, short], live)
    assert (summary.health, summary.unknown, len(summary.findings)) == (rules.Health.WARNING, 1, 1)
    assert rules.check_summary([full], live).unknown == 0
    assert rules.check_summary([short, offline], live).health == rules.Health.CRITICAL


def test_a_row_made_by_partition_row_is_the_row_partitionstate_makes():
    """The KRaft scan's rows (partition_row, one dict instead of a setattr per field) are PartitionState's own: equal,
    the same hash and repr, as frozen, replaced alike; a wrong or missing field is a TypeError as in the class."""
    import dataclasses

    from kadmin.domain.models import partition_row

    odd = {int: 7, str: "x", bool: True}
    full: dict[str, object] = {}
    for f in dataclasses.fields(PartitionState):  # every field away from its default: a new field is covered too
        kind = f.type if isinstance(f.type, str) else str(f.type)
        full[f.name] = ((3, 1) if "tuple" in kind else MinIsrConfig(topic=2) if "MinIsrConfig" in kind
                        else True if kind == "bool" else odd[str] if kind.startswith("str") else odd[int])
    for fields in (full, {"topic": "t", "partition": 0, "replicas": (1, 2)}):
        row, made = partition_row(**fields), PartitionState(**fields)  # type: ignore[arg-type]
        assert row == made and hash(row) == hash(made) and repr(row) == repr(made)
        assert dataclasses.replace(row, leader=2) == dataclasses.replace(made, leader=2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        row.topic = "u"  # type: ignore[misc]
    with pytest.raises(TypeError, match="no field 'topc'"):
        partition_row(topc="t", partition=0, replicas=())
    with pytest.raises(TypeError, match="'replicas' missing"):
        partition_row(topic="t", partition=0)
