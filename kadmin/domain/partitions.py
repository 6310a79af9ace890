"""Partition health and "can this broker stop safely?". Pure functions over PartitionState."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Set
from dataclasses import dataclass
from enum import IntEnum

from kadmin.domain.models import PartitionState


def is_offline(p: PartitionState, live: Set[int]) -> bool:
    """No leader (-1, or the state is missing), or the leader is not a live broker."""
    return p.leader is None or p.leader < 0 or p.leader not in live


def is_under_replicated(p: PartitionState) -> bool:
    return len(p.isr) < len(p.replicas)


def is_under_min_isr(p: PartitionState) -> bool:
    return p.leader is None or len(p.isr) < p.min_isr


def is_at_min_isr(p: PartitionState) -> bool:
    return p.leader is not None and len(p.isr) == p.min_isr


class Health(IntEnum):
    """`kadmin partitions check` exit codes: the monitoring convention (OK / WARNING / CRITICAL)."""

    OK = 0
    WARNING = 1  # some partitions under-replicated
    CRITICAL = 2  # some partitions offline or under min ISR


@dataclass(frozen=True)
class Finding:
    topic: str
    partition: int | None  # None: the whole topic (its znode could not be read)
    reasons: tuple[str, ...]


NO_TOPICS: Mapping[str, str] = {}


def findings(partitions: Iterable[PartitionState], live: Set[int],
             unreadable: Mapping[str, str] = NO_TOPICS) -> list[Finding]:
    """What is wrong, partition by partition; `unreadable` topics (name -> why) come first, whole."""
    out = [Finding(t, None, (why,)) for t, why in sorted(unreadable.items())]
    for p in partitions:
        reasons = []
        if p.problem:
            reasons.append(p.problem)
        if is_offline(p, live):
            reasons.append("offline" if p.leader is None or p.leader < 0 else f"leader {p.leader} is not live")
        if p.leader is not None and is_under_min_isr(p):
            reasons.append(f"under min ISR ({len(p.isr)} < {p.min_isr})")
        if is_under_replicated(p):
            reasons.append(f"under-replicated (ISR {len(p.isr)} of {len(p.replicas)})")
        if reasons:
            out.append(Finding(p.topic, p.partition, tuple(reasons)))
    return out


def health(partitions: Iterable[PartitionState], live: Set[int], unreadable: Mapping[str, str] = NO_TOPICS) -> Health:
    """CRITICAL also when anything it depends on could not be read: an unreadable topic, or a partition
    with a `problem` (its state or its topic's min.insync.replicas): a partial read never passes."""
    if unreadable:
        return Health.CRITICAL
    worst = Health.OK
    for p in partitions:
        if p.problem or is_offline(p, live) or is_under_min_isr(p):
            return Health.CRITICAL
        if is_under_replicated(p):
            worst = Health.WARNING
    return worst


@dataclass(frozen=True)
class Blocker:
    topic: str
    partition: int | None  # None: the whole topic (unreadable: it may or may not be hosted)
    reason: str


@dataclass(frozen=True)
class StopVerdict:
    broker_id: int
    hosted: int  # partitions that list the broker as a replica
    blocking: tuple[Blocker, ...]
    never: tuple[Blocker, ...]  # replication factor below min ISR: can never pass

    @property
    def safe(self) -> bool:
        return not self.blocking and not self.never


def can_stop(partitions: Iterable[PartitionState], broker_id: int, live: Set[int],
             unreadable: Mapping[str, str] = NO_TOPICS) -> StopVerdict:
    """Would every partition hosted by `broker_id` keep a leader and at least min ISR without it?

    After the stop the ISR is the live ISR members other than the broker (the controller shrinks
    the ISR of a stopped replica); the leader is kept if it is another live broker, else the first
    remaining ISR member takes over. Partitions whose replication factor is below min ISR are
    reported apart: no broker order can ever make them pass.

    What could not be read blocks: a hosted partition with a `problem` (its state, or its topic's
    min.insync.replicas), and every `unreadable` topic (name -> why), which may host the broker.
    """
    blocking: list[Blocker] = [Blocker(t, None, why) for t, why in sorted(unreadable.items())]
    never: list[Blocker] = []
    hosted = 0
    remaining_live = set(live) - {broker_id}
    for p in partitions:
        if broker_id not in p.replicas:
            continue
        hosted += 1
        if p.problem:
            blocking.append(Blocker(p.topic, p.partition, p.problem))
            continue
        if len(p.replicas) < p.min_isr:
            never.append(Blocker(p.topic, p.partition,
                                 f"replication factor {len(p.replicas)} is below min.insync.replicas {p.min_isr}"))
            continue
        if p.leader is None:
            blocking.append(Blocker(p.topic, p.partition, p.problem or "no partition state"))
            continue
        isr_after = [r for r in p.isr if r in remaining_live]
        if not isr_after:
            blocking.append(Blocker(p.topic, p.partition, "would go offline: no other live replica in the ISR"))
        elif len(isr_after) < p.min_isr:
            blocking.append(Blocker(p.topic, p.partition,
                                    f"ISR would drop to {len(isr_after)} ({','.join(map(str, isr_after))}), "
                                    f"below min.insync.replicas {p.min_isr}"))
    return StopVerdict(broker_id, hosted, tuple(blocking), tuple(never))


def out_of_sync(partitions: Iterable[PartitionState], broker_id: int) -> list[PartitionState]:
    """Partitions that list the broker as a replica but do not have it in the ISR."""
    return [p for p in partitions if broker_id in p.replicas and broker_id not in p.isr]


def names_broker(partitions: Iterable[PartitionState], broker_id: int) -> bool:
    """Does any assignment name the broker (as a replica, or being added or removed)?"""
    return any(broker_id in p.replicas or broker_id in p.adding_replicas or broker_id in p.removing_replicas
               for p in partitions)
