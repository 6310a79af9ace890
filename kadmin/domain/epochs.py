"""KIP-380's broker generations and the cluster's max broker epoch. Pure functions."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from kadmin.domain.models import Generation, Registered


@dataclass(frozen=True)
class Bounce:
    id: int
    old_epoch: int
    new_epoch: int


@dataclass(frozen=True)
class EpochDiff:
    """KIP-380's classification of the live brokers against a cached view."""

    new: tuple[int, ...] = ()
    dead: tuple[int, ...] = ()
    bounced: tuple[Bounce, ...] = ()
    unchanged: tuple[int, ...] = ()
    went_backwards: tuple[Bounce, ...] = field(default=())

    @property
    def changed(self) -> bool:
        return bool(self.new or self.dead or self.bounced or self.went_backwards)


def classify(before: Mapping[int, int], after: Mapping[int, int]) -> EpochDiff:
    """Classify brokers as KIP-380's controller does on a BrokerChange event.

    new: live now, not before; dead: before, not live now; bounced: in both with a larger epoch now;
    unchanged: the same epoch. An epoch that went *down* cannot happen within one ZooKeeper
    ensemble (czxids only grow); it is reported in `went_backwards` so the caller can warn.
    """
    new = sorted(set(after) - set(before))
    dead = sorted(set(before) - set(after))
    bounced: list[Bounce] = []
    backwards: list[Bounce] = []
    unchanged: list[int] = []
    for bid in sorted(set(before) & set(after)):
        old, cur = before[bid], after[bid]
        if cur > old:
            bounced.append(Bounce(bid, old, cur))
        elif cur < old:
            backwards.append(Bounce(bid, old, cur))
        else:
            unchanged.append(bid)
    return EpochDiff(tuple(new), tuple(dead), tuple(bounced), tuple(unchanged), tuple(backwards))


def max_broker_epoch(epochs: Mapping[int, int]) -> tuple[int, int] | None:
    """The max broker epoch: the largest epoch over live brokers, with the broker holding it.

    Returns (epoch, broker_id), or None when no broker is live. Ties cannot happen in ZooKeeper
    mode (each czxid is a distinct zxid); the lowest id wins should they ever occur.
    """
    if not epochs:
        return None
    bid = min(epochs, key=lambda b: (-epochs[b], b))
    return epochs[bid], bid


EventKind = Literal["registered", "deregistered", "bounced", "updated"]


@dataclass(frozen=True)
class RegistrationEvent:
    event: EventKind
    id: int
    epoch: int | None
    old_epoch: int | None


def registration_events(
    before: Mapping[int, Generation],
    after: Mapping[int, Generation],
    last_epochs: Mapping[int, int] | None = None,
) -> list[RegistrationEvent]:
    """The events that turn `before` into `after`, in broker-id order.

    A broker present in both with a different epoch is `bounced`, however briefly it was gone (the
    fast-bounce case KIP-380 was written for). A broker that re-registers after its deregistration
    was seen is `bounced` too, relative to its last epoch in `last_epochs`; only a broker never seen
    before is `registered`. The same epoch with a new mzxid is `updated` (setData on the live
    znode, as Kafka's updateBrokerInfo does).
    """
    last_epochs = last_epochs or {}
    events: list[RegistrationEvent] = []
    for bid in sorted(set(before) | set(after)):
        old, cur = before.get(bid), after.get(bid)
        if old is None and cur is not None:
            prev = last_epochs.get(bid)
            if prev is not None and prev != cur.epoch:
                events.append(RegistrationEvent("bounced", bid, cur.epoch, prev))
            else:
                events.append(RegistrationEvent("registered", bid, cur.epoch, None))
        elif cur is None and old is not None:
            events.append(RegistrationEvent("deregistered", bid, None, old.epoch))
        elif old is not None and cur is not None:
            if cur.epoch != old.epoch:
                events.append(RegistrationEvent("bounced", bid, cur.epoch, old.epoch))
            elif cur.mzxid != old.mzxid:
                events.append(RegistrationEvent("updated", bid, cur.epoch, old.epoch))
    return events



def registration_changes(before: Mapping[int, Registered], after: Mapping[int, Registered],
                         last_epochs: Mapping[int, int] | None = None) -> list[dict[str, Any]]:
    """`brokers watch`'s events between two readings of the registrations, in both modes (without `at`).

    Registrations with a broker epoch (ZooKeeper mode) follow KIP-380 (registration_events: registered,
    deregistered, bounced, updated); those without one (KRaft, DescribeCluster) follow their fenced
    state and endpoint (kraft_registrations.poll_events: registered, unregistered, fenced, unfenced,
    endpoint_changed), with `epoch` and `old_epoch` null and the state's keys after them."""
    from kadmin.domain.addresses import host_port
    from kadmin.domain.kraft_registrations import Seen, poll_events

    if any(r.epoch is not None for r in (*before.values(), *after.values())):
        def generations(regs: Mapping[int, Registered]) -> dict[int, Generation]:
            return {i: Generation(r.epoch, r.mzxid or 0) for i, r in regs.items() if r.epoch is not None}

        return [{"event": e.event, "id": e.id, "epoch": e.epoch, "old_epoch": e.old_epoch}
                for e in registration_events(generations(before), generations(after), last_epochs)]

    def seen(regs: Mapping[int, Registered]) -> dict[int, Seen]:
        return {i: Seen(r.fenced, host_port(r.host or "", r.port or 0), r.rack) for i, r in regs.items()}

    return [{"event": ev["event"], "id": ev["id"], "epoch": None, "old_epoch": None,
             **{k: v for k, v in ev.items() if k not in ("event", "id")}}
            for ev in poll_events(seen(before), seen(after))]
