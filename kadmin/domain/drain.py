"""Leadership drain (Cruise Control's demote) as pure planning: no I/O.

`drain ID` reorders each partition's replicas (the replica set is unchanged, so no data moves) and then
asks for preferred-leader elections. ID always goes last. Where ID leads, the others are put in the
order under which the election can succeed: the in-sync replicas first (live ones before any known not
to be live), then the out-of-sync ones, each group in its current order; Kafka's preferred leader is
the first replica, and it is elected only if it is in sync and live (replicas [1,3,2] with ISR [1,2]
and broker 3 down: `drain 1` gives [2,3,1], not [3,2,1]). Where ID does not lead, only ID moves, to
the end (nothing changes where it is last already): the others' order does not decide whether ID
leads, so it is left as it is. ID leads nothing afterwards, unless it is the only in-sync replica of a
partition (no one else may take over). `undrain ID --from FILE` puts the saved order back and elects
the preferred leaders again.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

FILE_VERSION = 1
FILE_KIND = "kadmin-drain"

Key = tuple[str, int]


@dataclass(frozen=True)
class PartitionView:
    """One partition as the cluster reports it now."""

    topic: str
    partition: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int  # -1: none
    reassigning: bool = False  # a reassignment is in flight (adding/removing replicas, or listed as ongoing)
    # replicas known not to be live (Metadata's offline_replicas: a broker fenced, unregistered or with the
    # partition's log dir offline; ZooKeeper: no /brokers/ids registration); () when unknown
    offline: tuple[int, ...] = ()

    @property
    def key(self) -> Key:
        return (self.topic, self.partition)


@dataclass
class DrainPlan:
    broker_id: int
    hosted: list[PartitionView] = field(default_factory=list)  # every partition with ID as a replica
    reorder: dict[Key, tuple[int, ...]] = field(default_factory=dict)  # new order (ID last), only where it changes
    elect: list[Key] = field(default_factory=list)  # preferred-leader elections to ask for
    only_isr: list[Key] = field(default_factory=list)  # ID is the only ISR member: its leadership cannot move
    sole_replica: list[Key] = field(default_factory=list)  # ID is the only replica: nothing to move to
    in_flight: list[Key] = field(default_factory=list)  # affected partitions with a reassignment in flight
    skipped: list[Key] = field(default_factory=list)  # left alone (in flight, --force)

    @property
    def stuck(self) -> set[Key]:
        """Partitions whose leadership by ID does not move: it cannot (naming them is all drain can do), or
        drain leaves them alone (--force past a reassignment in flight)."""
        return set(self.only_isr) | set(self.sole_replica) | set(self.skipped)


Brokers = int | Collection[int]  # one broker, or a roll's batch drained together


def _ids(brokers: Brokers) -> frozenset[int]:
    return frozenset((brokers,)) if isinstance(brokers, int) else frozenset(brokers)


def demoted(replicas: Sequence[int], brokers: Brokers) -> tuple[int, ...]:
    """The replicas with the broker(s) moved to the end, every replica keeping its order otherwise."""
    ids = _ids(brokers)
    return tuple(r for r in replicas if r not in ids) + tuple(r for r in replicas if r in ids)


def isr_first(replicas: Sequence[int], brokers: Brokers, isr: Iterable[int],
              offline: Iterable[int] = ()) -> tuple[int, ...]:
    """The order that lets a preferred-leader election take the leadership off the broker(s): the other
    in-sync replicas first (live ones before those known not to be), then the out-of-sync ones, each
    group in its current order, the broker(s) last. The same set: only the order changes."""
    ids, in_sync, down = _ids(brokers), set(isr), set(offline)
    others = [r for r in replicas if r not in ids]
    order = ([r for r in others if r in in_sync and r not in down] + [r for r in others if r in in_sync and r in down]
             + [r for r in others if r not in in_sync])
    return tuple(order) + tuple(r for r in replicas if r in ids)


def electable(p: PartitionView, broker: int) -> bool:
    """Kafka elects a preferred leader only if it is in sync and live (as far as the view knows)."""
    return broker in p.isr and broker not in p.offline


def plan_drain(parts: Iterable[PartitionView], brokers: Brokers, skip_in_flight: bool = False) -> DrainPlan:
    """What `drain broker_id` does to each partition that has it as a replica. Several brokers (a roll's batch,
    stopping together) are drained as one: every one of them goes last, and "only ISR" / "only replica" mean
    that no replica outside them is in sync / exists (`DrainPlan.broker_id` is then the lowest id).

    Where broker_id leads: the `isr_first` order (in-sync first, broker_id last) and an election,
    unless broker_id is the only in-sync replica (`only_isr`). Elsewhere: broker_id moved to the end, the
    others left in their order (nothing changes where it is last already), and an election only where
    the new first replica is electable and does not lead yet (as Kafka's automatic rebalance would).

    A partition with a reassignment in flight is affected (listed in `in_flight`); with
    `skip_in_flight` (--force) it is left alone: reordering it would replace the reassignment's target.
    """
    ids = _ids(brokers)
    plan = DrainPlan(min(ids))
    for p in sorted(parts, key=lambda x: x.key):
        if ids.isdisjoint(p.replicas):
            continue
        plan.hosted.append(p)
        if p.reassigning:
            plan.in_flight.append(p.key)
            if skip_in_flight:
                plan.skipped.append(p.key)
                continue
        leads = p.leader in ids
        if set(p.replicas) <= ids:
            if leads:
                plan.sole_replica.append(p.key)
            continue
        target = isr_first(p.replicas, ids, p.isr, p.offline) if leads else demoted(p.replicas, ids)
        if target != tuple(p.replicas):
            plan.reorder[p.key] = target
        if leads:
            if set(p.isr) <= ids:
                plan.only_isr.append(p.key)
            else:
                plan.elect.append(p.key)
        elif p.leader != target[0] and electable(p, target[0]):
            plan.elect.append(p.key)  # the new first replica is in sync: elect it, as Kafka's rebalance would
    return plan


def led_by(parts: Iterable[PartitionView], brokers: Brokers, keys: set[Key] | None = None) -> list[Key]:
    """The partitions (among `keys`, default all) that the broker (or any of the brokers) leads."""
    ids = _ids(brokers)
    return sorted(p.key for p in parts if p.leader in ids and (keys is None or p.key in keys))


def drain_file(broker_id: int, plan: DrainPlan, created: str, cluster: Mapping[str, Any]) -> dict[str, Any]:
    """The saved original order (versioned JSON), for `undrain --from`: every partition ID hosts (those
    left alone by --force excepted), so undrain elects each one's preferred leader again, reordered or not."""
    return {
        "version": FILE_VERSION,
        "kind": FILE_KIND,
        "broker_id": broker_id,
        "created": created,
        "cluster": dict(cluster),
        # "set": the order this drain leaves (reordered or not): an undrain that finds another order there knows a
        # later drain (or a reassignment) came after it, and that one is undone first (stacked drains)
        "partitions": [{"topic": p.topic, "partition": p.partition, "replicas": list(p.replicas),
                        "set": list(plan.reorder.get(p.key, p.replicas))}
                       for p in plan.hosted if p.key not in plan.skipped and broker_id in p.replicas],
    }


class BadDrainFile(ValueError):
    pass


@dataclass(frozen=True)
class Unknown:
    """What a reading of the partitions could not tell: a whole topic (partition None, replicas unknown) or one
    partition's leader (its replicas known), and why."""

    topic: str
    partition: int | None
    replicas: tuple[int, ...] | None
    why: str

    def concerns(self, brokers: Brokers) -> bool:
        """Whether the broker(s) may host it (a topic whose assignment is unknown may be hosted by any broker)."""
        return self.replicas is None or not _ids(brokers).isdisjoint(self.replicas)

    @property
    def name(self) -> str:
        return self.topic if self.partition is None else f"{self.topic}-{self.partition}"


@dataclass(frozen=True)
class SavedDrain:
    """A drain file: the broker it drained, the cluster's id (None: not recorded, by a kadmin before issue 22 or
    because it could not be read then) and the original order."""

    broker_id: int
    cluster_id: str | None
    order: dict[Key, tuple[int, ...]]
    set_order: dict[Key, tuple[int, ...]] = field(default_factory=dict)  # what the drain left (files since issue 34)


def parse_drain_file(doc: Any, broker_id: int) -> dict[Key, tuple[int, ...]]:
    """{(topic, partition): original replicas} from a drain file of broker `broker_id`; BadDrainFile says what
    is wrong."""
    saved = parse_saved_drain(doc)
    if saved.broker_id != broker_id:
        raise BadDrainFile(f"the file is for broker {saved.broker_id!r}, not {broker_id}")
    return saved.order


def parse_saved_drain(doc: Any) -> SavedDrain:
    """A drain file, whichever broker it is for; BadDrainFile says what is wrong."""
    if not isinstance(doc, dict) or doc.get("kind") != FILE_KIND:
        raise BadDrainFile("not a kadmin drain file (no \"kind\": \"kadmin-drain\")")
    if doc.get("version") != FILE_VERSION:
        raise BadDrainFile(f"drain file version {doc.get('version')!r} is not supported (this kadmin reads "
                           f"version {FILE_VERSION})")
    if type(doc.get("broker_id")) is not int:
        raise BadDrainFile("\"broker_id\" is not an int")
    cluster = doc.get("cluster")
    cluster_id = cluster.get("id") if isinstance(cluster, dict) else None
    if cluster_id is not None and not isinstance(cluster_id, str):
        raise BadDrainFile("\"cluster\".\"id\" is not a string")
    out: dict[Key, tuple[int, ...]] = {}
    set_order: dict[Key, tuple[int, ...]] = {}
    parts = doc.get("partitions")
    if not isinstance(parts, list):
        raise BadDrainFile("\"partitions\" is not a list")
    for i, p in enumerate(parts):
        ok = (isinstance(p, dict) and isinstance(p.get("topic"), str) and type(p.get("partition")) is int
              and isinstance(p.get("replicas"), list) and p["replicas"]
              and all(type(r) is int for r in p["replicas"]) and len(set(p["replicas"])) == len(p["replicas"]))
        if not ok:
            raise BadDrainFile(f"partitions[{i}] is not {{\"topic\": str, \"partition\": int, \"replicas\": "
                               "[distinct ints]}")
        out[(p["topic"], p["partition"])] = tuple(p["replicas"])
        if "set" in p:
            left = p["set"]
            if not (isinstance(left, list) and all(type(r) is int for r in left) and set(left) == set(p["replicas"])):
                raise BadDrainFile(f"partitions[{i}].set is not its replicas in another order")
            set_order[(p["topic"], p["partition"])] = tuple(left)
    return SavedDrain(doc["broker_id"], cluster_id, out, set_order)


@dataclass
class UndrainPlan:
    broker_id: int
    restore: dict[Key, tuple[int, ...]] = field(default_factory=dict)  # saved order to put back
    already: list[Key] = field(default_factory=list)  # already in the saved order
    changed: list[Key] = field(default_factory=list)  # the replica set changed since the drain: left alone
    gone: list[Key] = field(default_factory=list)  # no longer exists
    in_flight: list[Key] = field(default_factory=list)
    skipped: list[Key] = field(default_factory=list)
    elect: list[Key] = field(default_factory=list)  # every saved partition whose saved order now applies
    # in neither the saved order nor the order the drain set: reordered after it (a later drain stacked on it)
    stacked: list[Key] = field(default_factory=list)

    def preferred(self, saved: Mapping[Key, tuple[int, ...]]) -> dict[Key, int]:
        return {k: saved[k][0] for k in self.elect}


def plan_undrain(saved: Mapping[Key, tuple[int, ...]], parts: Iterable[PartitionView], broker_id: int,
                 skip_in_flight: bool = False, set_order: Mapping[Key, tuple[int, ...]] | None = None
                 ) -> UndrainPlan:
    """Put back each saved order whose replica set is still the same set (no data moves). With `set_order` (what
    the drain left), a partition in neither order was reordered after the drain: `stacked`."""
    now = {p.key: p for p in parts}
    plan = UndrainPlan(broker_id)
    for key in sorted(saved):
        p = now.get(key)
        if p is None:
            plan.gone.append(key)
            continue
        if set(p.replicas) != set(saved[key]):
            plan.changed.append(key)
            continue
        if p.reassigning:
            plan.in_flight.append(key)
            if skip_in_flight:
                plan.skipped.append(key)
                continue
        if tuple(p.replicas) == saved[key]:
            plan.already.append(key)
        else:
            if set_order and key in set_order and tuple(p.replicas) != set_order[key]:
                plan.stacked.append(key)
            plan.restore[key] = saved[key]
        plan.elect.append(key)
    return plan


def not_preferred(parts: Iterable[PartitionView], preferred: Mapping[Key, int]) -> list[Key]:
    """Partitions (of `preferred`) whose leader is not the preferred one although it is in sync."""
    out = []
    for p in parts:
        want = preferred.get(p.key)
        if want is not None and p.leader != want and want in p.isr:
            out.append(p.key)
    return sorted(out)


def keys_text(keys: Iterable[Key], limit: int = 10) -> str:
    ks = sorted(keys)
    text = ", ".join(f"{t}-{p}" for t, p in ks[:limit])
    return text + (f" and {len(ks) - limit} more" if len(ks) > limit else "")


def keys_json(keys: Iterable[Key]) -> list[dict[str, Any]]:
    return [{"topic": t, "partition": p} for t, p in sorted(keys)]
