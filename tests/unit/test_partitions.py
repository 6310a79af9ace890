"""Partition health and the can-stop rule, as pure functions."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kadmin.domain import partitions as rules
from kadmin.domain.models import PartitionState


def ps(replicas, isr, leader, min_isr=2, topic="t", partition=0, problem=None):
    return PartitionState(topic=topic, partition=partition, replicas=tuple(replicas), isr=tuple(isr), leader=leader,
                          leader_epoch=0, partition_epoch=0, min_isr=min_isr, problem=problem)


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
        ps([1], [1], 1, partition=3, min_isr=2),  # RF 1 < min ISR 2: never
        ps([2, 3], [2, 3], 2, partition=4),  # not hosted
        ps([1, 2, 3], [1, 2, 3], 2, partition=5, min_isr=3),  # would drop to 2 < 3
    ]
    v = rules.can_stop(parts, 1, LIVE)
    assert v.hosted == 5 and not v.safe
    assert [(b.partition, b.reason.split(":")[0].split(" (")[0]) for b in v.blocking] == [
        (1, "ISR would drop to 1"), (2, "would go offline"), (5, "ISR would drop to 2")]
    assert [b.partition for b in v.never] == [3]
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
        ok = bool(after) and len(after) >= p.min_isr and len(p.replicas) >= p.min_isr
        flagged = any(b.partition == p.partition for b in v.blocking + v.never)
        assert flagged == (not ok)
    assert v.safe == all(
        (broker not in p.replicas) or (len([r for r in p.isr if r != broker]) >= max(1, p.min_isr)
                                       and len(p.replicas) >= p.min_isr)
        for p in parts)


def test_out_of_sync():
    parts = [ps([1, 2], [2], 2, partition=0), ps([1, 2], [1, 2], 1, partition=1), ps([2, 3], [2], 2, partition=2)]
    assert [p.partition for p in rules.out_of_sync(parts, 1)] == [0]
