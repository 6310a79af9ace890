"""What a roll costs: its time (from a journal's measured steps) and, in ZooKeeper mode, the controller's failover
at its end (the full UpdateMetadata fan-out, seed 003). Pure.

The time: `role_times` reads a replayed journal (kadmin/domain/roll_events.py) into the mean time a node of each
role took, split into the operator's hooks and kadmin's own steps (gates, drain, undrain, waits); `plan_estimate`
sums a plan's batches with it (a batch counts once: its slowest node); `time_left` is the one estimate of the time
left that `roll run`'s live view, its final report and `roll status` show.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kadmin.domain.roll import STEP
from kadmin.domain.roll_events import RollState


# ------------------------------------------------------------------------------------------------ time
@dataclass(frozen=True)
class RoleTimes:
    """The nodes of one role a journal has done (restarted, not skipped): how many, and the mean seconds one took,
    split into the hooks' steps (`hook` in the step table: --stop, --start, --restart, --only-if, ...) and kadmin's
    own (gates, drain, undrain, waits)."""

    role: str
    nodes: int
    mean_s: float
    kadmin_s: float
    hooks_s: float


def role_times(state: RollState) -> dict[str, RoleTimes]:
    """Per role, the nodes `state` shows done: the steps each journaled done, added up (a step done twice, in two
    runs, counts its last time). A role no node of which is done has no entry: nothing is made up for it."""
    took: dict[str, list[tuple[float, float]]] = {}
    for np in state.nodes.values():
        if not np.finished or np.skipped or not np.elapsed:
            continue
        hooks = sum(s for step, s in np.elapsed.items() if step in STEP and STEP[step].hook)
        own = sum(s for step, s in np.elapsed.items() if not (step in STEP and STEP[step].hook))
        took.setdefault(np.role, []).append((own, hooks))
    out = {}
    for role, times in sorted(took.items()):
        n = len(times)
        own, hooks = sum(t[0] for t in times) / n, sum(t[1] for t in times) / n
        out[role] = RoleTimes(role, n, round(own + hooks, 3), round(own, 3), round(hooks, 3))
    return out


@dataclass(frozen=True)
class PlannedNode:
    id: int
    role: str
    skip: bool = False  # --only-if says it would be skipped: no restart, no time


@dataclass(frozen=True)
class PlanEstimate:
    """`total_s`: the batches one after the other, each as long as its slowest node with an estimate; `per_node`:
    each node's estimate (None: no node of its role in the journal); `unestimated`: those nodes, whose time the
    total leaves out (it is then a lower bound)."""

    total_s: float
    per_node: dict[int, float | None]
    unestimated: tuple[int, ...]


def plan_estimate(batches: Sequence[Sequence[PlannedNode]], basis: Mapping[str, RoleTimes]) -> PlanEstimate:
    per: dict[int, float | None] = {}
    total = 0.0
    for batch in batches:
        longest = 0.0
        for n in batch:
            t = 0.0 if n.skip else (basis[n.role].mean_s if n.role in basis else None)
            per[n.id] = t
            longest = max(longest, t or 0.0)
        total += longest
    return PlanEstimate(round(total, 3), per, tuple(i for i, t in per.items() if t is None))


@dataclass(frozen=True)
class Progress:
    """One node of a roll for `time_left`: its role, `done` (restarted), `pending` (untouched) or else under way,
    and the seconds it has taken so far (a done node: all of them)."""

    role: str
    status: str  # done, running, pending (a skipped node is left out)
    seconds: float = 0.0


def time_left(nodes: Sequence[Progress], parallel: int = 1) -> float | None:
    """The seconds a roll has left: each node not done takes the mean time of the done nodes of its role (of any
    role where none of its own is done); the nodes under way (a batch) end with the last of them; the pending ones
    go in batches of `parallel`, each as long as one node. None when no node is done yet, or every one is."""
    done = [n for n in nodes if n.status == "done"]
    left = [n for n in nodes if n.status != "done"]
    if not done or not left:
        return None
    mean_all = sum(n.seconds for n in done) / len(done)
    by_role: dict[str, list[float]] = {}
    for n in done:
        by_role.setdefault(n.role, []).append(n.seconds)

    def mean(role: str) -> float:
        own = by_role.get(role)
        return sum(own) / len(own) if own else mean_all

    running = max((max(0.0, mean(n.role) - n.seconds) for n in left if n.status != "pending"), default=0.0)
    pending = sorted((mean(n.role) for n in left if n.status == "pending"), reverse=True)
    step = max(1, parallel)
    batches = sum(pending[i] for i in range(0, len(pending), step))  # each batch as long as its slowest
    return round(running + batches, 3)


# ------------------------------------------------------------------------------------------------ the failover
GIB = 1 << 30
FAILOVER_WARN_BYTES = GIB  # the full UpdateMetadata fan-out above which `roll plan` warns


@dataclass(frozen=True)
class UpdateMetadataSizes:
    """The encoded sizes of a full UpdateMetadata request's parts, from the request's schema (the cluster layer
    encodes them): its fixed fields, a partition's entry (its topic's entry shared among its partitions), and a
    live broker's entry; the means over the cluster's partitions and brokers."""

    fixed_bytes: int
    partition_bytes: float
    broker_bytes: float


@dataclass(frozen=True)
class FailoverCost:
    """What the new controller sends when a ZooKeeper-mode roll moves the controller: one full UpdateMetadata
    request to each live broker, each holding every partition and every live broker."""

    partitions: int
    live_brokers: int
    request_bytes: int
    update_metadata_bytes: int
    threshold_bytes: int
    warning: str | None


def failover_cost(partitions: int, live_brokers: int, sizes: UpdateMetadataSizes,
                  threshold: int = FAILOVER_WARN_BYTES) -> FailoverCost:
    """The full fan-out: `live_brokers` requests, each of `partitions` partition entries and `live_brokers` broker
    entries. Over `threshold` a warning says so: the controller holds every request at once, as objects and as
    encoded buffers (seed 003), so its heap needs several times these bytes."""
    request = sizes.fixed_bytes + partitions * sizes.partition_bytes + live_brokers * sizes.broker_bytes
    total = live_brokers * request
    warning = None
    if total > threshold:
        warning = (f"the controller moves at the end of the roll: the new one sends {live_brokers} full "
                   f"UpdateMetadata requests of {partitions} partitions each, {size_text(total)} encoded, all held at "
                   f"once, as objects too (several times that in heap); check that the heap of every broker that "
                   f"may become the controller can take it")
    return FailoverCost(partitions, live_brokers, int(request), int(total), threshold, warning)


def size_text(n: float) -> str:
    for unit, scale in (("GiB", GIB), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{int(n)} bytes"


def clock_text(seconds: float) -> str:
    """`42s`, `1m05s`, `1h02m05s`."""
    s = int(round(seconds))
    return f"{s // 3600}h{s % 3600 // 60:02d}m{s % 60:02d}s" if s >= 3600 else \
        f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"
