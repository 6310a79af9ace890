"""Partition health and "can this broker stop safely?". Pure functions over PartitionState.

The rules are Kafka 3.9's (ZooKeeper mode): TopicCommand's --under-replicated-partitions,
--under-min-isr-partitions, --at-min-isr-partitions and --unavailable-partitions, and the broker's own
min ISR check, with one deliberate difference: since Kafka 3.7 (KAFKA-15583) a leader enforces
`min(min.insync.replicas, replica count)`, and so does kadmin, while TopicCommand 3.9 compares the ISR
with the configured value (a partition whose replication factor is below its min.insync.replicas is
"under min ISR" for TopicCommand even with every replica in sync, yet the broker accepts acks=all writes).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping, Sequence, Set
from dataclasses import dataclass
from enum import IntEnum

from kadmin.domain.models import Coverage, MinIsrConfig, PartitionState

# min_isr_source values: the brokers' static level (server.properties, as the brokers report it), and a value
# the operator stated (--min-isr-default: ZooKeeper does not keep the static level; in KRaft it stands in only
# for a broker whose own levels could not be read), never shown as if a broker had reported it
STATIC = "static"
DEFAULT = "default"
UNKNOWN = "unknown"  # the leader's own levels could not be read and no --min-isr-default was stated
Key = tuple[str, int]


def min_isr_for(cfg: MinIsrConfig, leader: int | None) -> tuple[int, str]:
    """The configured min.insync.replicas of a partition led by `leader`, and where it comes from.

    A leader checks writes against its own log config: the topic's value, else the leader broker's
    dynamic value (/config/brokers/<id>), else the dynamic cluster default, else the static one.
    """
    if cfg.topic is not None:
        return cfg.topic, "topic"
    if leader is not None and cfg.unknown_why(leader) is not None:  # its own levels could not be read:
        if cfg.default is not None:  # the operator's statement stands in
            return cfg.default, DEFAULT
        # the value it would have without a level of its own, marked unknown (a verdict never relies on it)
        return (cfg.cluster_default if cfg.cluster_default is not None else cfg.static), UNKNOWN
    if leader is not None:
        for broker, value in cfg.brokers:
            if broker == leader:
                return value, f"broker:{broker}"
    if cfg.cluster_default is not None:
        return cfg.cluster_default, "cluster-default"
    return cfg.static, STATIC


def min_isr_unknown(cfg: MinIsrConfig | None, leader: int | None) -> str | None:
    """Why the min.insync.replicas a partition has under `leader` is unknown (None: it is known): it has no
    topic value, the leader's own levels could not be read, and the operator stated no --min-isr-default."""
    if cfg is None or cfg.topic is not None or cfg.default is not None or leader is None:
        return None
    return cfg.unknown_why(leader)


def current_min_isr(cfg: MinIsrConfig, leader: int | None, replicas: Iterable[int]) -> tuple[int, str]:
    """The leader's min.insync.replicas; without a leader, the strictest value any replica would
    apply once elected (ties: the first replica's source)."""
    if leader is not None and leader >= 0:
        return min_isr_for(cfg, leader)
    best: tuple[int, str] | None = None
    for r in replicas:
        got = min_isr_for(cfg, r)
        if best is None or got[0] > best[0]:
            best = got
    return best if best is not None else min_isr_for(cfg, None)


def effective_min_isr(p: PartitionState, min_isr: int | None = None) -> int:
    """What the leader enforces since Kafka 3.7 (KAFKA-15583): min(min.insync.replicas, replica count),
    the replicas being every assigned one (adding replicas included, as Partition.scala counts them)."""
    return min(p.min_isr if min_isr is None else min_isr, max(1, len(p.replicas)))


def replication_factor(p: PartitionState) -> int:
    """The replicas minus those being added by a reassignment (TopicCommand's getReplicationFactor)."""
    adding = set(p.adding_replicas)
    return sum(1 for r in p.replicas if r not in adding)


def has_leader(p: PartitionState, live: Set[int] | None = None) -> bool:
    """A leader that is a broker (and, given `live`, a registered one: a metadata answer names no other)."""
    return p.leader is not None and p.leader >= 0 and (live is None or p.leader in live)


def is_offline(p: PartitionState, live: Set[int]) -> bool:
    """No leader (-1, or the state is missing), or the leader is not a live broker."""
    return p.leader is None or p.leader < 0 or p.leader not in live


def is_under_replicated(p: PartitionState) -> bool:
    """ISR smaller than the replication factor; the replicas a reassignment is adding do not count."""
    return len(p.isr) < replication_factor(p)


def is_under_min_isr(p: PartitionState, live: Set[int] | None = None) -> bool:
    """No (live) leader, or an ISR below the effective min ISR (TopicCommand: no leader counts too)."""
    return not has_leader(p, live) or len(p.isr) < effective_min_isr(p)


def is_at_min_isr(p: PartitionState) -> bool:
    """The ISR is exactly the effective min ISR (a partition without a state znode has no known ISR)."""
    return p.leader is not None and len(p.isr) == effective_min_isr(p)


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


def plainly_healthy(p: PartitionState, live: Set[int]) -> bool:
    """The usual partition, in one look: readable, a live leader, no replica being added, every replica in the
    ISR and the ISR at or above the effective min ISR. True implies finding() None and partition_health() OK
    (False decides nothing): a scan of 20,000 healthy partitions asks only this."""
    isr = len(p.isr)
    return (not p.problem and p.leader is not None and p.leader >= 0 and p.leader in live and not p.adding_replicas
            and isr >= len(p.replicas) and isr >= min(p.min_isr, max(1, len(p.replicas))))


def min_isr_moot(p: PartitionState) -> bool:
    """Its problem is only an unread min.insync.replicas, and every replica is in the ISR (none being added): no
    min ISR Kafka enforces (min(min ISR, replica count), KAFKA-15583) is missed, whatever the value. A check
    reading configs while a broker stops (its levels unreachable) is then not blinded for such a partition."""
    return p.min_isr_unread and not p.adding_replicas and len(set(p.isr)) >= len(p.replicas) > 0


def min_isr_unknown_only(p: PartitionState) -> bool:
    """Its one problem is an unread min ISR that matters (the ISR is short of a replica): nothing says whether it
    is under min ISR, so a check can neither pass it nor call it CRITICAL: UNKNOWN (unless offline)."""
    return p.min_isr_unread and not min_isr_moot(p)


def finding(p: PartitionState, live: Set[int]) -> Finding | None:
    """What is wrong with one partition (None: nothing, or its topic is queued for deletion)."""
    if p.deleting or plainly_healthy(p, live):
        return None
    reasons = []
    if p.problem and not min_isr_moot(p):
        reasons.append(p.problem)
    if is_offline(p, live):
        reasons.append("offline" if p.leader is None or p.leader < 0 else f"leader {p.leader} is not live")
    if p.leader is not None and not p.min_isr_unread and len(p.isr) < effective_min_isr(p):
        reasons.append(f"under min ISR ({len(p.isr)} < {effective_min_isr(p)})")
    if is_under_replicated(p):
        reasons.append(f"under-replicated (ISR {len(p.isr)} of {replication_factor(p)})")
    return Finding(p.topic, p.partition, tuple(reasons)) if reasons else None


def findings(partitions: Iterable[PartitionState], live: Set[int],
             unreadable: Mapping[str, str] = NO_TOPICS) -> list[Finding]:
    """What is wrong, partition by partition; `unreadable` topics (name -> why) come first, whole.
    Topics queued for deletion are left out, as Kafka's controller leaves them out of its counts."""
    out = [Finding(t, None, (why,)) for t, why in sorted(unreadable.items())]
    out += [f for p in partitions if (f := finding(p, live)) is not None]
    return out


def partition_health(p: PartitionState, live: Set[int]) -> Health:
    """One partition's part of the verdict (OK for a topic queued for deletion). A partition whose only problem is
    an unread min ISR is judged on what is known: CRITICAL offline; else, with every replica in sync, as if read
    (min_isr_moot); else WARNING here, and the check says UNKNOWN (min_isr_unknown_only): never OK, never a
    CRITICAL page for a partition that may be fine."""
    if p.deleting:
        return Health.OK
    if p.min_isr_unread and not is_offline(p, live):
        return Health.WARNING if is_under_replicated(p) else Health.OK
    if p.problem or is_offline(p, live) or is_under_min_isr(p, live):
        return Health.CRITICAL
    return Health.WARNING if is_under_replicated(p) else Health.OK


def health(partitions: Iterable[PartitionState], live: Set[int], unreadable: Mapping[str, str] = NO_TOPICS) -> Health:
    """CRITICAL also when anything it depends on could not be read: an unreadable topic, or a partition
    with a `problem` (its state or its min.insync.replicas): a partial read never passes.
    Topics queued for deletion are left out."""
    if unreadable:
        return Health.CRITICAL
    worst = Health.OK
    for p in partitions:
        worst = max(worst, partition_health(p, live))
        if worst == Health.CRITICAL:
            return worst
    return worst


@dataclass(frozen=True)
class CheckSummary:
    health: Health
    findings: list[Finding]
    partitions: int  # how many were read, deleting ones included
    deleting: list[str]  # topics queued for deletion, sorted
    unknown: int = 0  # partitions whose verdict an unread min ISR keeps from being known (min_isr_unknown_only)


def check_summary(partitions: Iterable[PartitionState], live: Set[int],
                  unreadable: Mapping[str, str] = NO_TOPICS) -> CheckSummary:
    """health(), findings(), the count and the topics queued for deletion in ONE pass over `partitions`
    (a stream: each partition is dropped once judged, so a million of them need no list)."""
    found = [Finding(t, None, (why,)) for t, why in sorted(unreadable.items())]
    worst = Health.CRITICAL if unreadable else Health.OK
    count = unknown = 0
    deleting: set[str] = set()
    for p in partitions:
        count += 1
        if p.deleting:
            deleting.add(p.topic)
            continue
        f = finding(p, live)
        if f is None:  # nothing wrong: partition_health() is OK
            continue
        found.append(f)
        if min_isr_unknown_only(p) and not is_offline(p, live):
            unknown += 1
        if worst != Health.CRITICAL:
            worst = max(worst, partition_health(p, live))
    return CheckSummary(worst, found, count, sorted(deleting), unknown)


@dataclass(frozen=True)
class Blocker:
    topic: str
    partition: int | None  # None: the whole topic (unreadable: it may or may not be hosted)
    reason: str
    # the partition was read and would become unavailable (offline, or below min ISR for acks=all writes): what
    # an operator may accept for named topics (`roll --allow-unavailable`), unlike what could not be read
    unavailable: bool = False


@dataclass(frozen=True)
class StopVerdict:
    broker_id: int
    hosted: int  # partitions that list the broker as a replica
    blocking: tuple[Blocker, ...]
    # Kept for the JSON contract (never_satisfiable), always empty now: before Kafka 3.7 a partition whose
    # replication factor is below min.insync.replicas could never take acks=all writes; since KAFKA-15583
    # the leader enforces min(min ISR, replica count), so such a partition is judged like any other.
    never: tuple[Blocker, ...] = ()
    # what kept the verdict from seeing every partition the broker hosts: (broker id, why its log dirs could
    # not be listed)
    unseen: tuple[tuple[int, str], ...] = ()
    listed: bool = False  # the coverage's DescribeCluster lists the broker: it exists, whatever the scan saw
    hidden: int = 0  # of `blocking`, the partitions its log dirs list that the scan did not show

    @property
    def safe(self) -> bool:
        return not self.blocking and not self.never and not self.unseen


def can_stop(partitions: Iterable[PartitionState], broker_id: int, live: Set[int],
             unreadable: Mapping[str, str] = NO_TOPICS, coverage: Coverage | None = None,
             wanted: TopicFilter | None = None) -> StopVerdict:
    """Would every partition hosted by `broker_id` keep a leader and at least min ISR without it?

    After the stop the ISR is the live ISR members other than the broker (the controller shrinks
    the ISR of a stopped replica); the leader is kept if it is another live broker, else the
    controller elects the first replica in assignment order that is still in that ISR (Kafka's
    controlled-shutdown and offline elections). The min ISR is then the one the leader after the stop
    enforces: its own configured value (per-broker configs differ), capped by the replica count.
    Topics queued for deletion are left out, as the controller leaves them out.

    What could not be read blocks: a hosted partition with a `problem` (its state, or its
    min.insync.replicas), every `unreadable` topic (name -> why), which may host the broker, a partition
    whose min ISR under the leader after the stop is unknown, and (given a `coverage`, KRaft) every
    partition the broker's log dirs list that the scan did not see (a topic the principal may not
    Describe), or the broker's log dirs themselves when they could not be listed (`unseen`). `wanted`:
    only these topics (the operator's --topic), so what is outside them neither counts nor blocks.
    """
    blocking: list[Blocker] = [Blocker(t, None, why) for t, why in sorted(unreadable.items())
                               if wanted is None or wanted(t)]
    seen: set[Key] = set()
    hosted = _stop_blockers(partitions, frozenset({broker_id}), live, wanted, blocking, seen)
    unseen: tuple[tuple[int, str], ...] = ()
    hidden_count = 0
    if coverage is not None:
        hidden, unread = unseen_partitions(coverage, seen, [broker_id], wanted)
        blocking += [Blocker(t, p, hidden_reason(t, brokers)) for (t, p), brokers in hidden]
        unseen = tuple(sorted(unread.items()))
        hidden_count = len(hidden)
    return StopVerdict(broker_id, hosted, tuple(blocking), unseen=unseen,
                       listed=coverage is not None and broker_id in coverage.listed, hidden=hidden_count)


def _stop_blockers(partitions: Iterable[PartitionState], stopping: frozenset[int], live: Set[int],
                   wanted: TopicFilter | None, blocking: list[Blocker], seen: set[Key]) -> int:
    """can_stop's rules for `stopping` (one broker, or a batch stopped together): append to `blocking` what
    would lose its leader or min ISR, add every partition's key to `seen`; the count of partitions hosted."""
    hosted = 0
    remaining_live = set(live) - stopping
    for p in partitions:
        seen.add((p.topic, p.partition))
        if stopping.isdisjoint(p.replicas) or p.deleting or (wanted is not None and not wanted(p.topic)):
            continue
        hosted += 1
        if p.problem:
            blocking.append(Blocker(p.topic, p.partition, p.problem))
            continue
        if p.leader is None:
            blocking.append(Blocker(p.topic, p.partition, "no partition state"))
            continue
        isr_after = [r for r in p.isr if r in remaining_live]
        if not isr_after:
            blocking.append(Blocker(p.topic, p.partition, "would go offline: no other live replica in the ISR", True))
            continue
        leader = p.leader if p.leader in remaining_live else next((r for r in p.replicas if r in isr_after), None)
        if leader is None:  # the ISR names a live broker that is no replica: no election can pick it
            blocking.append(Blocker(p.topic, p.partition, "would go offline: no live replica in the ISR", True))
            continue
        why = min_isr_unknown(p.min_isr_config, leader)
        if why is not None:
            blocking.append(Blocker(p.topic, p.partition, f"min.insync.replicas under leader {leader} (after the "
                                    f"stop) is unknown: {why}"))
            continue
        configured, source = (min_isr_for(p.min_isr_config, leader) if p.min_isr_config is not None
                              else (p.min_isr, p.min_isr_source))
        need = effective_min_isr(p, configured)
        if len(isr_after) < need:
            # a broker-level value depends on the leader: say whose (the topic's or static one does not)
            whose = f" (leader {leader}, {source})" if source.startswith(("broker:", "cluster-default")) else ""
            blocking.append(Blocker(p.topic, p.partition,
                                    f"ISR would drop to {len(isr_after)} ({','.join(map(str, isr_after))}), "
                                    f"below min.insync.replicas {need}{whose}", True))
    return hosted


def stop_together_blockers(partitions: Iterable[PartitionState], brokers: Set[int], live: Set[int]) -> list[Blocker]:
    """What would lose its leader or min ISR if `brokers` stopped at once (can_stop's rules, for a batch of a
    parallel roll): empty when they may stop together."""
    blocking: list[Blocker] = []
    _stop_blockers(partitions, frozenset(brokers), live, None, blocking, set())
    return blocking


def shared_partitions(partitions: Iterable[PartitionState], brokers: Set[int]) -> list[Blocker]:
    """The partitions of which `brokers` hold two replicas or more (its replicas, and any being added or removed):
    a parallel roll's default batch rule takes no two of them at once, whatever min ISR allows (with Kafka's
    default min ISR of 1, the min-ISR rule alone would stop two of three replicas)."""
    out = []
    for p in partitions:
        held = set(brokers).intersection(p.replicas + p.adding_replicas + p.removing_replicas)
        if len(held) > 1 and not p.deleting:
            out.append(Blocker(p.topic, p.partition, f"brokers {','.join(map(str, sorted(held)))} are replicas of "
                               "it (a batch holds one replica of a partition at most)"))
    return out


def allowed(blocking: Iterable[Blocker], allow: TopicFilter | None) -> tuple[list[Blocker], list[Blocker]]:
    """(what still blocks, what `allow` lets become unavailable): only a partition that was read and would go
    offline or under min ISR, of a topic `allow` names; what could not be read always blocks."""
    keep: list[Blocker] = []
    let: list[Blocker] = []
    for b in blocking:
        (let if allow is not None and b.unavailable and b.partition is not None and allow(b.topic) else keep).append(b)
    return keep, let


def out_of_sync(partitions: Iterable[PartitionState], broker_id: int) -> list[PartitionState]:
    """Partitions that list the broker as a replica but do not have it in the ISR."""
    return [p for p in partitions if broker_id in p.replicas and broker_id not in p.isr]


def names_broker(partitions: Iterable[PartitionState], broker_id: int) -> bool:
    """Does any assignment name the broker (as a replica, or being added or removed)?"""
    return any(broker_id in p.replicas or broker_id in p.adding_replicas or broker_id in p.removing_replicas
               for p in partitions)


GLOB = frozenset("*?[")


@dataclass(frozen=True)
class TopicFilter:
    """The operator's --topic NAME|PATTERN (repeatable; shell-style `*`, `?`, `[...]`): a verdict about these
    topics only. Exact names are asked for by name (a topic the principal may not Describe is then an error,
    not silently absent); a pattern is matched against every topic seen or listed in a broker's log dirs."""

    patterns: tuple[str, ...]

    @property
    def names(self) -> list[str] | None:
        """The topics to ask for by name; None when a pattern needs every topic."""
        if any(GLOB & set(p) for p in self.patterns):
            return None
        return sorted(set(self.patterns))

    def __call__(self, topic: str) -> bool:
        return any(fnmatch.fnmatchcase(topic, p) for p in self.patterns)


def unseen_partitions(coverage: Coverage, seen: Set[Key], brokers: Sequence[int] | None = None,
                      wanted: TopicFilter | None = None) -> tuple[list[tuple[Key, tuple[int, ...]]], dict[int, str]]:
    """What a scan did not see, against the brokers' log dirs: the partitions listed there but absent from the
    scan (a topic the principal may not Describe), each with the brokers that host it, and the brokers (of
    `brokers`; None: all) whose log dirs could not be listed (id -> why). `wanted` keeps those topics only."""
    where: dict[Key, list[int]] = {}
    for b, keys in sorted(coverage.hosted.items()):
        if brokers is not None and b not in brokers:
            continue
        for key in keys - seen:  # a set difference: 40,000 hosted replicas, all seen, in a few ms
            if wanted is None or wanted(key[0]):
                where.setdefault(key, []).append(b)
    unread = {b: why for b, why in coverage.unread.items() if brokers is None or b in brokers}
    return [(k, tuple(v)) for k, v in sorted(where.items())], unread


def hidden_reason(topic: str, brokers: Sequence[int]) -> str:
    """Why a partition listed in log dirs blocks a verdict: the principal cannot see it, and what would let it."""
    on = ", ".join(map(str, brokers))
    who = f"brokers {on} host" if len(brokers) > 1 else f"broker {on} hosts"
    return (f"not visible: {who} it (DescribeLogDirs) but DescribeTopicPartitions does not show topic "
            f"{topic} to this principal (needs Describe on Topic:{topic}); its leader and ISR are unknown")
