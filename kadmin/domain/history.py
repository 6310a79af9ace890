"""Broker generations from registration events: bounces, downtime, the max broker epoch over time.

Pure: the pipeline collects the (few) registration events per broker and hands them here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class RegEvent:
    broker_id: int
    position: int  # zxid (ZooKeeper) or offset (KRaft): the order of events
    ts_ms: int
    registered: bool  # False: the registration ends (deregistered, fenced, in controlled shutdown)
    epoch: int | None
    incarnation_id: str | None = None  # KRaft: the broker process's incarnation (RegisterBrokerRecord)


@dataclass(frozen=True)
class Generation:
    broker_id: int
    epoch: int | None
    start_ms: int
    start_position: int
    end_ms: int | None  # None: still registered at the end of the history
    gap_ms: int | None  # from this generation's end to the next one's start (the downtime)


def amends(current: RegEvent, later: RegEvent) -> bool:
    """Whether the registration `later` amends `current` rather than starting a new generation:
    the same broker epoch re-sent, or (KRaft) a new registration by the same process (same
    incarnation id), which Kafka records without the broker having stopped."""
    if later.epoch is not None and later.epoch == current.epoch:
        return True
    return later.incarnation_id is not None and later.incarnation_id == current.incarnation_id


def ends(current: RegEvent, end: RegEvent) -> bool:
    """Whether `end` ends the generation `current` started: an end event that names another broker
    epoch (a stale fence, a record of an older registration) does not."""
    return end.epoch is None or current.epoch is None or end.epoch == current.epoch


def generations(events: Iterable[RegEvent]) -> list[Generation]:
    """Each registration starts a generation (unless it `amends` the open one); the first end event
    of the same epoch after it ends it: a deregistration (ZooKeeper), an UnregisterBrokerRecord, a
    fence or the start of a controlled shutdown (KRaft: the broker stopped serving; a fence that an unfence of
    the same registration follows is a fence episode, folded out before this by kadmin.domain.fences, so it
    never reaches here). In a fast bounce
    where no end was logged, the next registration ends it. The downtime (`gap_ms`) runs from that
    end to the next registration."""
    by_broker: dict[int, list[RegEvent]] = {}
    for e in events:
        by_broker.setdefault(e.broker_id, []).append(e)
    out: list[Generation] = []
    for bid in sorted(by_broker):
        evs = sorted(by_broker[bid], key=lambda e: (e.position, not e.registered))
        start: RegEvent | None = None
        end: RegEvent | None = None
        for e in evs:
            if e.registered:
                if start is not None and amends(start, e):
                    continue
                if start is not None:
                    end_ms = end.ts_ms if end is not None else e.ts_ms
                    out.append(Generation(bid, start.epoch, start.ts_ms, start.position, end_ms, e.ts_ms - end_ms))
                start, end = e, None
            elif start is not None and end is None and ends(start, e):
                end = e
        if start is not None:
            out.append(Generation(bid, start.epoch, start.ts_ms, start.position,
                                  end.ts_ms if end is not None else None, None))
    return out


def percentile(values: Sequence[int], q: float) -> int | None:
    """Nearest-rank percentile; None for no values."""
    if not values:
        return None
    s = sorted(values)
    k = max(0, min(len(s) - 1, int(-(-q * len(s) // 1)) - 1))
    return s[k]


@dataclass(frozen=True)
class BounceStats:
    broker_id: int
    generations: int
    bounces: int
    downtime_p50_ms: int | None
    downtime_p90_ms: int | None
    downtime_max_ms: int | None


def bounce_stats(gens: Sequence[Generation]) -> list[BounceStats]:
    out = []
    for bid in sorted({g.broker_id for g in gens}):
        mine = [g for g in gens if g.broker_id == bid]
        gaps = [g.gap_ms for g in mine if g.gap_ms is not None]
        out.append(BounceStats(bid, len(mine), max(0, len(mine) - 1), percentile(gaps, 0.5), percentile(gaps, 0.9),
                               max(gaps) if gaps else None))
    return out


def max_epoch_over_time(gens: Sequence[Generation]) -> list[tuple[int, int | None, int | None]]:
    """The max broker epoch over live brokers at every change: (ts, max epoch, broker id)."""
    changes: list[tuple[int, int, Generation]] = []
    for g in gens:
        changes.append((g.start_ms, 1, g))
        if g.end_ms is not None:
            changes.append((g.end_ms, 0, g))
    live: dict[int, Generation] = {}
    out: list[tuple[int, int | None, int | None]] = []
    for ts, kind, g in sorted(changes, key=lambda c: (c[0], c[1], c[2].start_position)):
        if kind == 1:
            live[g.broker_id] = g
        elif live.get(g.broker_id) is g:
            del live[g.broker_id]
        best = max((x for x in live.values() if x.epoch is not None), key=lambda x: x.epoch or 0, default=None)
        point = (ts, best.epoch if best else None, best.broker_id if best else None)
        if not out or out[-1][1:] != point[1:]:
            out.append(point)
    return out
