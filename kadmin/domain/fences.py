"""Broker generations with KRaft fence episodes. Pure: `kadmin.pipeline.reports` collects the few lifecycle
events per broker and hands them here.

The rule (docs/history.md): on KRaft a controller fences a broker whose heartbeats lapse (FenceBrokerRecord, or
BrokerRegistrationChangeRecord Fenced=1). When the same registration is unfenced again (UnfenceBrokerRecord or
Fenced=-1 naming an epoch of the open generation) before any new registration, deregistration or controlled
shutdown, the broker never stopped: its generation CONTINUES, and the fenced interval is a fence episode of that
generation (`fenced_ms`, `fence_episodes`), neither downtime nor a bounce. A fence that no unfence of the same
registration follows ends the generation at the fence, as a deregistration does: the downtime runs from the fence
to the next registration (a new epoch, a bounce), and a fence still open when the history ends ends the
generation there. A controlled shutdown always ends the generation. The registrations that amend the open one
(`kadmin.domain.history.amends`: same epoch, or same incarnation) neither end nor interrupt a fence episode.

Fence episodes are folded out here; what remains (registrations, and the ends that really end a generation) goes
to `kadmin.domain.history.generations`, whose rules (first end of the generation's epoch, fast bounces, gaps)
are unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from kadmin.domain import history as h

REGISTERED, DEREGISTERED, FENCED, UNFENCED, CONTROLLED_SHUTDOWN = (
    "broker_registered", "broker_deregistered", "broker_fenced", "broker_unfenced", "broker_controlled_shutdown")
LIFECYCLE = (REGISTERED, DEREGISTERED, FENCED, UNFENCED, CONTROLLED_SHUTDOWN)
# one record may say two things (BrokerRegistrationChangeRecord Fenced=1 and InControlledShutdown=1): in this order
_ORDER = {REGISTERED: 0, FENCED: 1, UNFENCED: 2, CONTROLLED_SHUTDOWN: 3, DEREGISTERED: 4}


@dataclass(frozen=True)
class LifeEvent:
    broker_id: int
    position: int  # zxid (ZooKeeper) or offset (KRaft)
    ts_ms: int
    event: str  # one of LIFECYCLE
    epoch: int | None
    incarnation_id: str | None = None


@dataclass(frozen=True)
class FenceEpisode:
    broker_id: int
    generation_position: int  # the start_position of the generation it belongs to
    start_ms: int  # the fence
    end_ms: int  # the unfence of the same registration

    @property
    def fenced_ms(self) -> int:
        return self.end_ms - self.start_ms


@dataclass(frozen=True)
class History:
    generations: list[h.Generation]
    episodes: list[FenceEpisode] = field(default_factory=list)

    def episodes_of(self, g: h.Generation) -> list[FenceEpisode]:
        return [e for e in self.episodes if e.broker_id == g.broker_id and e.generation_position == g.start_position]

    def fenced_ms(self, g: h.Generation) -> int:
        return sum(e.fenced_ms for e in self.episodes_of(g))


def _reg(e: LifeEvent, epoch: int | None) -> h.RegEvent:
    return h.RegEvent(e.broker_id, e.position, e.ts_ms, e.event == REGISTERED, epoch, e.incarnation_id)


class _Broker:
    """One broker's events, in log order, folded (see `fold_fences`)."""

    def __init__(self, out: list[h.RegEvent], episodes: list[FenceEpisode]) -> None:
        self.out, self.episodes = out, episodes
        self.start: h.RegEvent | None = None  # the registration that started the open generation
        self.epochs: set[int] = set()  # its epoch and those of the registrations amending it
        self.ended = False  # an end of the open generation has gone out
        self.fence: LifeEvent | None = None  # an open fence of the open generation

    def mine(self, e: LifeEvent) -> bool:
        return self.start is not None and (e.epoch is None or self.start.epoch is None or e.epoch in self.epochs)

    def end(self, e: LifeEvent) -> None:
        if self.start is not None and self.mine(e):
            # an end naming an amended epoch ends the generation like one naming its first epoch
            self.out.append(_reg(e, self.start.epoch if e.epoch is not None else None))
            self.ended = True
        else:
            self.out.append(_reg(e, e.epoch))  # stale, or before any registration: the domain ignores it

    def close_fence(self) -> None:
        """The fenced registration did not come back: its generation ended at the fence."""
        if self.fence is not None:
            self.end(self.fence)
            self.fence = None

    def add(self, e: LifeEvent) -> None:
        if e.event == REGISTERED:
            reg = _reg(e, e.epoch)
            if self.start is not None and h.amends(self.start, reg):
                if e.epoch is not None:
                    self.epochs.add(e.epoch)
                self.out.append(reg)  # an amendment: a fence stays open (Kafka keeps the fenced state)
                return
            self.close_fence()
            self.out.append(reg)
            self.start, self.ended = reg, False
            self.epochs = {e.epoch} if e.epoch is not None else set()
        elif e.event == FENCED:
            if self.fence is not None and self.mine(e):
                return  # fenced again while fenced: the open episode goes on
            if not self.ended and self.mine(e):
                self.fence = e
            else:
                self.end(e)
        elif e.event == UNFENCED:
            if self.fence is not None and self.start is not None and self.mine(e):
                self.episodes.append(FenceEpisode(e.broker_id, self.start.position, self.fence.ts_ms, e.ts_ms))
                self.fence = None
        else:  # deregistered, controlled shutdown
            self.close_fence()
            self.end(e)


def fold_fences(events: Iterable[LifeEvent]) -> tuple[list[h.RegEvent], list[FenceEpisode]]:
    """The registration events for `kadmin.domain.history.generations`, fence episodes taken out (module doc)."""
    by_broker: dict[int, list[LifeEvent]] = {}
    for e in events:
        by_broker.setdefault(e.broker_id, []).append(e)
    out: list[h.RegEvent] = []
    episodes: list[FenceEpisode] = []
    for bid in sorted(by_broker):
        b = _Broker(out, episodes)
        for e in sorted(by_broker[bid], key=lambda x: (x.position, _ORDER.get(x.event, 9))):
            b.add(e)
        b.close_fence()  # still fenced when the history ends
    return out, episodes


def history(events: Iterable[LifeEvent]) -> History:
    regs, episodes = fold_fences(events)
    return History(h.generations(regs), episodes)


@dataclass(frozen=True)
class FenceStats:
    broker_id: int
    fence_episodes: int
    fenced_ms: int  # all episodes together
    fenced_max_ms: int | None


def fence_stats(hist: History) -> dict[int, FenceStats]:
    out: dict[int, FenceStats] = {}
    for bid in sorted({g.broker_id for g in hist.generations}):
        mine = [e.fenced_ms for e in hist.episodes if e.broker_id == bid]
        out[bid] = FenceStats(bid, len(mine), sum(mine), max(mine) if mine else None)
    return out


def rejoin_windows(hist: History) -> list[tuple[int, int, int | None]]:
    """(broker, start, end) of each bounce's rejoin window: a generation after the broker's first, from its start
    to its end or its first fence episode, whichever comes first (the ISR expands after an unfence rejoin after
    the fence, not after the bounce)."""
    gens: Sequence[h.Generation] = hist.generations
    out = []
    for i, g in enumerate(gens):
        if i == 0 or gens[i - 1].broker_id != g.broker_id:
            continue
        fences = [e.start_ms for e in hist.episodes_of(g)]
        ends = [t for t in (g.end_ms, min(fences, default=None)) if t is not None]
        out.append((g.broker_id, g.start_ms, min(ends) if ends else None))
    return out
