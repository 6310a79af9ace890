"""`kadmin partitions ...`, `brokers can-stop` and `brokers wait --in-sync`."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from kadmin import payloads  # payloads.X: a group's payload classes are built when first named
from kadmin.cluster.base import MIN_ISR_FALLBACK as FALLBACK
from kadmin.cluster.base import Partitions, PartitionScan, PartitionStream
from kadmin.domain import partitions as rules
from kadmin.domain.models import Coverage, PartitionState
from kadmin.domain.text import plural
from kadmin.errors import NotFound
from kadmin.exit_codes import ExitCode, Verdict
from kadmin.results import Problem, Progress, Result

if TYPE_CHECKING:
    from kadmin.payloads import CanStop, InSync, PartitionRow, PartitionsCheck, UnseenBroker

T = TypeVar("T")


def partition_row(p: PartitionState) -> PartitionRow:
    """A `partitions list` row: a JSON contract (keys pinned by a test)."""
    return payloads.PartitionRow(
        topic=p.topic,
        partition=p.partition,
        leader=p.leader,
        leader_epoch=p.leader_epoch,
        partition_epoch=p.partition_epoch,
        replicas=p.replicas,
        isr=p.isr,
        adding_replicas=p.adding_replicas,
        removing_replicas=p.removing_replicas,
        min_isr=p.min_isr,
        topic_id=p.topic_id,
        min_isr_source=p.min_isr_source,
        effective_min_isr=rules.effective_min_isr(p),
        deleting=p.deleting,
        elr=p.elr,
        last_known_elr=p.last_known_elr,
    )


@dataclass(frozen=True)
class Filters:
    topic: str | None = None
    broker: int | None = None
    under_replicated: bool = False
    offline: bool = False
    under_min_isr: bool = False
    at_min_isr: bool = False

    def keep(self, p: PartitionState, live: frozenset[int]) -> bool:
        if self.broker is not None and self.broker not in p.replicas:
            return False
        health = [
            (self.under_replicated, rules.is_under_replicated(p)),
            (self.offline, rules.is_offline(p, live)),
            (self.under_min_isr, rules.is_under_min_isr(p, live)),
            (self.at_min_isr, rules.is_at_min_isr(p)),
        ]
        asked = [hit for on, hit in health if on]
        return not asked or any(asked)  # health filters combine with OR, like kafka-topics


def scan(cluster: Partitions, topics: list[str] | None, progress: Progress | None,
         min_isr_default: int | None) -> PartitionScan:
    return cluster.scan_partitions(topics, progress=progress, min_isr_default=min_isr_default)


def stream(cluster: Partitions, topics: list[str] | None, progress: Progress | None,
           min_isr_default: int | None) -> PartitionStream:
    """The scan as a stream (ZooKeeper: each state znode decoded as it arrives and dropped once judged)."""
    return cluster.iter_partitions(topics, progress=progress, min_isr_default=min_isr_default)


def covering(cluster: Partitions, wanted: rules.TopicFilter | None,
             brokers: list[int] | None = None) -> Coverage | None:
    """The brokers' log dirs, read before the scan, when a verdict must prove it saw every partition: not when
    the operator named the topics (asked for by name, a topic the principal may not Describe is an error)."""
    if wanted is not None and wanted.names is not None:
        return None
    return cluster.coverage(brokers)


def covered(cluster: Partitions, wanted: rules.TopicFilter | None, brokers: list[int] | None,
            read: Callable[[], T], at_once: bool = True) -> tuple[Coverage | None, T]:
    """covering() and `read` (the scan). In order (`at_once` False): the log dirs first, so any partition they
    list that the scan does not show is one the principal may not see (issue 14). At once (the log dirs read on
    a thread while the scan reads, when they are needed at all): the slower of the two reads is the wait, not
    their sum (the log dirs of 13,000 partitions take a broker 0.3-0.7 s). A partition the log dirs list that
    the scan does not show may then also be one created between the two reads, so a caller that finds one
    reads both again in order and answers from that: a hidden partition is confirmed by the ordered read, never
    explained away; the at-once read decides alone only when it shows every partition the log dirs list, which
    is what the ordered read shows too (a partition created after either read is outside both)."""
    if not at_once or (wanted is not None and wanted.names is not None):
        cov = covering(cluster, wanted, brokers)
        return cov, read()
    got: list[Coverage | None | BaseException] = []

    def log_dirs() -> None:
        try:
            got.append(covering(cluster, wanted, brokers))
        except BaseException as e:  # noqa: BLE001 - raised on the caller's thread
            got.append(e)

    t = threading.Thread(target=log_dirs, name="kadmin-log-dirs", daemon=True)
    t.start()
    answer = read()  # should it raise, the log dirs' thread ends by itself (its requests have deadlines)
    t.join()
    if isinstance(got[0], BaseException):
        raise got[0]
    return got[0], answer


def unseen_brokers(unread: Iterable[tuple[int, str]]) -> tuple[UnseenBroker, ...]:
    """The `unseen` list: each broker whose log dirs could not be listed, and why (what would let kadmin)."""
    return tuple(payloads.UnseenBroker(b, why) for b, why in sorted(unread))


def recorded(parts: Iterable[PartitionState], seen: set[rules.Key], named: set[int]) -> Iterable[PartitionState]:
    """The partitions as they pass, their keys in `seen` and the brokers their assignments name in `named`."""
    for p in parts:
        seen.add((p.topic, p.partition))
        named.update(p.replicas)
        yield p


def not_listed(named: set[int], coverage: Coverage) -> dict[int, str]:
    """Brokers an assignment names that DescribeCluster did not list (down, or fenced before Kafka 4.0's
    DescribeCluster v2): their log dirs could not be asked for."""
    return {b: (f"broker {b} is named by an assignment but DescribeCluster does not list it (not registered, or fenced "
                "before Kafka 4.0): its log dirs could not be listed, so partitions only it hosts cannot be seen")
            for b in named if b not in coverage.hosted and b not in coverage.unread}


def split_problems(problems: list[Problem]) -> tuple[list[Problem], list[str]]:
    """split_warnings over a problem list (a stream's, once consumed)."""
    return [e for e in problems if e.code != FALLBACK], [e.message for e in problems if e.code == FALLBACK]


def split_warnings(s: PartitionScan) -> tuple[PartitionScan, list[str]]:
    """The scan without its warnings (ZooKeeper mode with --bootstrap-server: a broker that did not answer
    DescribeConfigs, so min ISR came from ZooKeeper and --min-isr-default), and those warnings, said on
    stderr: they are no read error (ZooKeeper answered), but never silent."""
    problems, said = split_problems(s.problems)
    if not said:
        return s, []
    return dataclasses.replace(s, problems=problems), said


def require_known_broker(s: PartitionScan, broker_id: int, listed: bool = False) -> None:
    """A broker that is neither registered nor named by any assignment does not exist: say so (exit 1)
    rather than answer for it ("can stop: all 0 partitions"). While a topic is unreadable it may be
    named there, so then the caller's verdict (not safe) stands instead; and a broker DescribeCluster
    lists (`listed`, from the coverage) exists, whatever partitions the principal sees of it."""
    if not listed:
        _require_known(broker_id, s.live, lambda: rules.names_broker(s.partitions, broker_id), s.unreadable)


def _require_known(broker_id: int, live: frozenset[int], named: Callable[[], bool], unreadable: dict[str, str]) -> None:
    if broker_id not in live and not unreadable and not named():
        raise NotFound(f"no broker {broker_id}: it is not registered and no partition assignment names it",
                       code="unknown_broker")


def verdict_problems(s: PartitionScan, broker_id: int) -> tuple[list[Problem], list[Problem]]:
    """The scan's problems split in two: those a verdict about `broker_id` depends on (an unreadable
    topic, or anything about a partition it hosts or that partition's topic), and the rest."""
    if not s.problems:
        return [], []
    hosted = {(p.topic, p.partition) for p in s.partitions if broker_id in p.replicas}
    topics = {t for t, _ in hosted}
    relevant: list[Problem] = []
    other: list[Problem] = []
    for e in s.problems:
        hit = e.topic is not None and (e.topic in s.unreadable or (e.topic, e.partition) in hosted
                                        or (e.partition is None and e.topic in topics))
        (relevant if hit else other).append(e)
    return relevant, other


def list_partitions(
    cluster: Partitions, filters: Filters, progress: Progress | None = None, min_isr_default: int | None = None
) -> Result[list[PartitionRow]]:
    s = stream(cluster, [filters.topic] if filters.topic else None, progress, min_isr_default)
    rows = []  # the rows only (they are printed), never every PartitionState as well
    named = False
    for p in s.partitions:
        if filters.broker is not None and not named:
            named = rules.names_broker((p,), filters.broker)
        if filters.keep(p, s.live):
            rows.append(partition_row(p))
    if filters.broker is not None and filters.topic is None:
        _require_known(filters.broker, s.live, lambda: named, s.unreadable)
    problems, warnings = split_problems(s.problems)
    return Result(data=rows, errors=problems, warnings=warnings)


def check(cluster: Partitions, progress: Progress | None = None, min_isr_default: int | None = None,
          wanted: rules.TopicFilter | None = None) -> Result[PartitionsCheck]:
    """Every partition (or the `wanted` topics) judged; on KRaft held against the brokers' log dirs, so a
    partition the principal may not see is a finding (CRITICAL), and a broker whose log dirs could not be
    listed (unseen) makes a check that would otherwise pass UNKNOWN (3): it cannot be shown to cover all."""
    def judged(at_once: bool) -> tuple[Coverage | None, PartitionStream, rules.CheckSummary, set[rules.Key], set[int]]:
        cov, s = covered(cluster, wanted, None, lambda: stream(cluster, wanted.names if wanted else None, progress,
                                                                min_isr_default), at_once)
        seen: set[rules.Key] = set()
        named: set[int] = set()
        parts: Iterable[PartitionState] = s.partitions
        if wanted is not None and wanted.names is None:
            parts = (p for p in parts if wanted(p.topic))
        if cov is not None:
            parts = recorded(parts, seen, named)
        return cov, s, rules.check_summary(parts, s.live, s.unreadable), seen, named  # one pass: none kept

    cov, s, summary_of, seen, named = judged(at_once=True)
    if cov is not None and rules.unseen_partitions(cov, seen, None, wanted)[0]:
        cov, s, summary_of, seen, named = judged(at_once=False)  # hidden, or created between the reads?
    problems, warnings = split_problems(s.problems)
    health = summary_of.health
    if problems:
        health = rules.Health.CRITICAL  # e.g. a /brokers/ids child that is no broker id: the live set is in doubt
    found = summary_of.findings
    unread: dict[int, str] = {}
    if cov is not None:
        hidden, unread = rules.unseen_partitions(cov, seen, None, wanted)
        unread.update(not_listed(named, cov))
        found = found + [rules.Finding(t, p, (rules.hidden_reason(t, on),)) for (t, p), on in hidden]
        if hidden:
            health = rules.Health.CRITICAL
    verdict = Verdict(int(health))
    if (unread or summary_of.unknown) and health != rules.Health.CRITICAL:
        verdict = Verdict.UNKNOWN
    deleting = summary_of.deleting
    count = summary_of.partitions
    data = payloads.PartitionsCheck(
        status=verdict.name.lower(),
        partitions=count,
        findings=tuple(payloads.CheckFinding(f.topic, f.partition, f.reasons) for f in found),
        deleting=tuple(deleting),
        unseen=unseen_brokers(unread.items()),
    )
    bad = sum(1 for f in found if f.partition is not None)
    unreadable = f"; {plural(len(s.unreadable), 'topic')} unreadable" if s.unreadable else ""
    skipped = f" ({plural(len(deleting), 'topic')} queued for deletion not checked)" if deleting else ""
    blind = (f"; partitions only broker{'s' if len(unread) > 1 else ''} {', '.join(map(str, sorted(unread)))} "
             "host could not be seen") if unread else ""
    summary = {
        Verdict.OK: f"OK: {plural(count, 'partition')} healthy{skipped}",
        Verdict.WARNING: f"WARNING: {len(found)} of {plural(count, 'partition')} under-replicated",
        Verdict.CRITICAL: f"CRITICAL: {bad} of {plural(count, 'partition')} need attention "
        f"(offline, under min ISR or unreadable){unreadable}"
        + (f"; {plural(len(problems), 'problem')} reading znodes" if problems else "") + blind,
        Verdict.UNKNOWN: (f"UNKNOWN: cannot show every partition was seen{blind} " if unread else
                          f"UNKNOWN: the min.insync.replicas of {plural(summary_of.unknown, 'partition')} short of "
                          "a replica could not be read ") +
        f"({len(found)} of {plural(count, 'partition')} seen need attention)",
    }[verdict]
    # The monitoring convention: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN. Problems reading znodes are named in
    # the findings and in `errors` and make the check critical, so a partial read never passes as healthy.
    return Result(data=data, errors=problems, warnings=warnings, exit_code=verdict, message=summary)


def verdict_payload(v: rules.StopVerdict) -> CanStop:
    return payloads.CanStop(
        broker_id=v.broker_id,
        safe=v.safe,
        hosted_partitions=v.hosted,
        blocking=tuple(payloads.Blocked(b.topic, b.partition, b.reason) for b in v.blocking),
        never_satisfiable=tuple(payloads.Blocked(b.topic, b.partition, b.reason) for b in v.never),
        unseen=unseen_brokers(v.unseen),
    )


def stop_verdict(cluster: Partitions, broker_id: int, progress: Progress | None = None,
                 min_isr_default: int | None = None,
                 wanted: rules.TopicFilter | None = None) -> tuple[rules.StopVerdict, PartitionScan]:
    def judged(at_once: bool) -> tuple[rules.StopVerdict, PartitionScan]:
        cov, s = covered(cluster, wanted, [broker_id],
                         lambda: scan(cluster, wanted.names if wanted else None, progress, min_isr_default), at_once)
        return rules.can_stop(s.partitions, broker_id, s.live, s.unreadable, cov, wanted), s

    v, s = judged(at_once=True)
    if v.hidden:
        v, s = judged(at_once=False)  # hidden, or created between the reads? the ordered read answers
    return v, s


def verdict_summary(v: rules.StopVerdict) -> str:
    """Why a broker cannot stop: partitions that would lose leader or min ISR, and what could not be read."""
    parts = sum(1 for b in v.blocking if b.partition is not None)
    topics = len(v.blocking) - parts
    said = [f"{plural(parts, 'partition')} would lose leader or min ISR or could not be read"] if parts else []
    if topics:
        said.append(f"{plural(topics, 'topic')} could not be read (they may host it)")
    if v.never:
        said.append(f"{len(v.never)} can never satisfy min ISR")
    said += [f"not every partition it hosts could be seen: {why}" for _, why in v.unseen]
    return ", ".join(said)


def can_stop(cluster: Partitions, broker_id: int, progress: Progress | None = None, min_isr_default: int | None = None,
             wanted: rules.TopicFilter | None = None) -> Result[CanStop]:
    return stop_gate(cluster, broker_id, progress, min_isr_default, wanted)[0]


def stop_gate(cluster: Partitions, broker_id: int, progress: Progress | None = None,
              min_isr_default: int | None = None, wanted: rules.TopicFilter | None = None,
              allow: rules.TopicFilter | None = None) -> tuple[Result[CanStop], list[rules.Blocker], PartitionScan]:
    """can_stop, and (a roll's `--allow-unavailable`) the partitions of the `allow` topics that would become
    unavailable and do not block: read and judged like the rest, named, never hidden. What could not be read
    still blocks whatever `allow` says. The scan it judged is returned too (a roll names what holds a gate)."""
    v, s = stop_verdict(cluster, broker_id, progress, min_isr_default, wanted)
    keep, let = rules.allowed(v.blocking, allow)
    if let:
        v = dataclasses.replace(v, blocking=tuple(keep))
    require_known_broker(s, broker_id, v.listed)
    relevant, other = verdict_problems(s, broker_id)
    warnings = [] if broker_id in s.live else [f"broker {broker_id} is not registered now"]
    warnings += [e.message for e in other]
    if v.safe:
        msg = (f"broker {broker_id} can stop: all {v.hosted} partitions it hosts"
               + (f" of topics {', '.join(wanted.patterns)}" if wanted else "") + " keep a leader and min ISR")
    else:
        msg = f"broker {broker_id} cannot stop safely: {verdict_summary(v)}"
    if let:
        warnings.append(f"allowed to become unavailable: {describe_keys((b.topic, b.partition) for b in let)}")
    # Anything the verdict depends on that could not be read blocks it (exit 1) and is in `errors`.
    return Result(data=verdict_payload(v), errors=relevant, warnings=warnings,
                  exit_code=ExitCode.OK if v.safe else ExitCode.CONDITION_NOT_MET, message=msg), let, s


def describe_keys(keys: Iterable[tuple[str, int | None]], limit: int = 8) -> str:
    """`t-0, t-1, u` (a partition of None: the whole topic)."""
    ks = sorted(keys, key=lambda k: (k[0], -1 if k[1] is None else k[1]))
    text = ", ".join(t if p is None else f"{t}-{p}" for t, p in ks[:limit])
    return text + (f" (+{len(ks) - limit} more)" if len(ks) > limit else "")


def wait_in_sync(
    cluster: Partitions,
    broker_id: int,
    timeout: float,
    on_status: Callable[[str], None] | None = None,
    progress: Progress | None = None,
    clock: Callable[[], float] = time.monotonic,
    asked: float | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> Result[InSync]:
    """Block until broker_id is in the ISR of every partition that lists it as a replica, and may lead.

    One full scan finds the partitions still waiting for the broker; after that only those are
    followed (cluster.watch_states): in ZooKeeper mode their state znodes are watched and re-read
    when ZooKeeper says they changed (one read per change, not a scan); on KRaft their topics are
    polled with DescribeTopicPartitions, every 0.5 s doubling to 5 s. A partition is followed until the
    broker is in its ISR (then it is neither re-read nor polled), a topic until all of its are.

    Met only when the broker is also live (KRaft: unfenced; Kafka keeps a fenced sole ISR member in the ISR
    of a leaderless partition while ELR is off) and, on KRaft, every partition its log dirs list was seen:
    a partition of a topic the principal may not Describe cannot be shown in sync (not met at once), and
    log dirs not yet listable (the broker still starting) are asked for again until the timeout.
    """
    w = _InSyncWait(cluster, broker_id, timeout, on_status, clock, sleep)
    w.first_look(progress)
    w.follow()
    w.await_live()
    return w.result(asked or timeout)


class _InSyncWait:
    """`wait_in_sync`'s state: what still waits, what cannot be seen, and what was last said on stderr."""

    def __init__(self, cluster: Partitions, broker_id: int, timeout: float,
                 on_status: Callable[[str], None] | None, clock: Callable[[], float],
                 sleep: Callable[[float], None]) -> None:
        self.cluster, self.broker_id, self.timeout = cluster, broker_id, timeout
        self.on_status, self.clock, self.sleep = on_status, clock, sleep
        self.start = clock()
        self.hidden: list[tuple[rules.Key, tuple[int, ...]]] = []
        self.blind: dict[int, str] = {}
        self.refused = False  # the broker refused to list its log dirs: asking again will not help
        self.last_said = ""
        self.live = False
        self.seen: set[rules.Key] = set()

    def left(self) -> float:
        return max(0.0, self.timeout - (self.clock() - self.start))

    def say(self, said: str) -> None:
        if self.on_status and said != self.last_said:
            self.on_status(said)
            self.last_said = said

    def look(self, c: Coverage | None) -> None:
        if c is not None:
            self.hidden, self.blind = rules.unseen_partitions(c, self.seen, [self.broker_id])
            self.refused = self.broker_id in c.refused

    def first_look(self, progress: Progress | None) -> None:
        """One full scan: the partitions waiting for the broker, and (KRaft) its log dirs against what was seen."""
        bid = self.broker_id
        cov = self.cluster.coverage([bid])
        s, _ = split_warnings(scan(self.cluster, None, progress, 1))  # min ISR plays no part in being in sync
        # a broker not registered yet but named by assignments is waited for
        require_known_broker(s, bid, cov is not None and bid in cov.listed)
        self.unreadable = len(s.unreadable)
        # an unreadable topic may hold partitions the broker is not in sync with: the answer is partial then
        self.unread = [e for e in s.problems if e.topic is not None and e.topic in s.unreadable]
        self.waiting = {(p.topic, p.partition) for p in rules.out_of_sync(s.partitions, bid)}
        self.hosted = sum(1 for p in s.partitions if bid in p.replicas)
        self.seen = {(p.topic, p.partition) for p in s.partitions} if cov is not None else set()
        self.live = bid in s.live
        self.look(cov)

    def follow(self) -> None:
        """Follow the waiting partitions' ISRs until the broker is in all of them (or a verdict is reached)."""
        bid = self.broker_id
        if not self.waiting or self.hidden or self.refused:
            return
        self.say_waiting()
        for changed in self.cluster.watch_states(sorted(self.waiting), timeout=self.left(),
                                                 settled=lambda isr: bid in isr):
            for key, isr in changed:
                if isr is not None and bid in isr:
                    self.waiting.discard(key)
            if self.blind:  # its log dirs not listed yet (still starting): ask again
                self.look(self.cluster.coverage([bid]))
            if not self.waiting or self.hidden or self.refused:
                break
            self.say_waiting()

    def say_waiting(self) -> None:
        bid, n = self.broker_id, len(self.waiting)
        self.say(f"broker {bid} back in the ISR of {self.hosted - n} of {plural(self.hosted, 'partition')}; "
                 f"not yet in the ISR of {plural(n, 'partition')}: {describe_keys(self.waiting)}")

    def await_live(self) -> None:
        """In every ISR: it must also be live, and its log dirs seen."""
        bid, pause = self.broker_id, 0.25
        while not self.waiting and not self.hidden:
            self.live = bid in self.cluster.live_brokers(fresh=True)
            if self.blind and not self.refused:
                self.look(self.cluster.coverage([bid]))
            if (self.live and not self.blind) or self.hidden or self.refused or self.left() <= 0:
                break
            self.say(f"broker {bid} is in every ISR it belongs in but "
                     + ("is not live (fenced)" if not self.live else
                        f"its log dirs could not be listed: {self.blind[bid]}"))
            self.sleep(min(pause, self.left()))
            pause = min(pause * 2, 2.0)

    def result(self, timeout: float) -> Result[InSync]:
        bid, hidden, blind, waiting, unread = self.broker_id, self.hidden, self.blind, self.waiting, self.unread
        met = not waiting and not hidden and not blind and self.live
        data = payloads.InSync(
            broker_id=bid,
            in_sync=met,
            hosted_partitions=self.hosted,
            waiting=tuple(payloads.TopicPartition(t, p) for t, p in sorted(waiting)),
            waited_ms=int((self.clock() - self.start) * 1000),
            live=self.live,
            unseen=unseen_brokers(blind.items()) + tuple(payloads.UnseenPartition(bid, t, p, rules.hidden_reason(t, on))
                                                         for (t, p), on in hidden),
        )
        if hidden:
            return Result(data=data, exit_code=ExitCode.CONDITION_NOT_MET, errors=unread,
                          message=f"broker {bid} hosts {plural(len(hidden), 'partition')} this principal cannot see "
                          f"({describe_keys(k for k, _ in hidden)}): whether it is in their ISR is unknown; "
                          f"{rules.hidden_reason(hidden[0][0][0], hidden[0][1])}")
        if self.refused:
            return Result(data=data, exit_code=ExitCode.CONDITION_NOT_MET, errors=unread,
                          message=f"broker {bid} cannot be shown in sync: {blind[bid]}")
        if waiting:
            return Result(data=data, exit_code=ExitCode.CONDITION_NOT_MET, errors=unread,
                          message=f"timed out after {timeout:g}s: broker {bid} is still missing from the "
                          f"ISR of {plural(len(waiting), 'partition')}: {describe_keys(waiting)}")
        if not met:
            why = f"its log dirs could not be listed: {blind[bid]}" if blind else "it is not live (fenced)"
            return Result(data=data, exit_code=ExitCode.CONDITION_NOT_MET, errors=unread,
                          message=f"timed out after {timeout:g}s: broker {bid} is in every ISR it belongs "
                          f"in, but {why}")
        return Result(data=data, errors=unread,
                      message=f"broker {bid} is in the ISR of all {self.hosted} partitions it hosts"
                      + (f" that could be read ({plural(self.unreadable, 'topic')} could not)" if unread else ""))
