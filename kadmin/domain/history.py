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
    registered: bool  # False: deregistered
    epoch: int | None


@dataclass(frozen=True)
class Generation:
    broker_id: int
    epoch: int | None
    start_ms: int
    start_position: int
    end_ms: int | None  # None: still registered at the end of the history
    gap_ms: int | None  # from this generation's end to the next one's start (the downtime)


def generations(events: Iterable[RegEvent]) -> list[Generation]:
    """Each registration starts a generation; the next deregistration (or, in a fast bounce where
    no deregistration was logged, the next registration) ends it."""
    by_broker: dict[int, list[RegEvent]] = {}
    for e in events:
        by_broker.setdefault(e.broker_id, []).append(e)
    out: list[Generation] = []
    for bid in sorted(by_broker):
        evs = sorted(by_broker[bid], key=lambda e: (e.position, not e.registered))
        starts = [i for i, e in enumerate(evs) if e.registered]
        for n, i in enumerate(starts):
            start = evs[i]
            nxt = evs[starts[n + 1]] if n + 1 < len(starts) else None
            end_ev = next((e for e in evs[i + 1:] if not e.registered and (nxt is None or e.position < nxt.position)),
                          None)
            end_ms = end_ev.ts_ms if end_ev is not None else (nxt.ts_ms if nxt is not None else None)
            gap = (nxt.ts_ms - end_ms) if (nxt is not None and end_ms is not None) else None
            out.append(Generation(bid, start.epoch, start.ts_ms, start.position, end_ms, gap))
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
    """Seed 003's max broker epoch over live brokers at every change: (ts, max epoch, broker id)."""
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
