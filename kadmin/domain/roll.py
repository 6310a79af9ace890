"""A rolling restart (`kadmin roll`, issue 23): the order, the batches, the steps and the journal's rules. Pure.

The journal is the roll's memory: NDJSON events appended one by one (kadmin/services/roll_journal.py writes
them, fsynced). Everything a resumed run decides comes from `replay` of those events plus what the cluster
shows now: which nodes are done, which step each other node reached, and from there what may be run again.
The rule that matters most: a node is never restarted twice. Once its start (or restart) hook may have run,
a resumed run waits for the node's receipt and never runs a hook for it again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["broker", "controller", "combined"]
Mode = Literal["zookeeper", "kraft"]
ControllersPolicy = Literal["first", "skip"]
JOURNAL_VERSION = 1

# The steps, in the order they run; their names are a contract (the NDJSON events and the journal carry them).
BEFORE_STOP = ("only_if", "quorum_check", "can_stop", "drain", "shutdown")
STOPPING = ("stop", "wait_stopped")
STARTING = ("start", "restart")
AFTER_START = ("wait_restarted", "wait_caught_up", "wait_in_sync", "undrain", "wait_healthy", "settle")
STEP_ORDER = BEFORE_STOP + STOPPING + STARTING + AFTER_START


@dataclass(frozen=True)
class RollNode:
    id: int
    role: Role
    host: str | None = None
    port: int | None = None
    rack: str | None = None

    @property
    def is_controller(self) -> bool:
        return self.role in ("controller", "combined")

    @property
    def is_broker(self) -> bool:
        return self.role in ("broker", "combined")


@dataclass(frozen=True)
class Topology:
    """The nodes a roll may restart. `leader`: the KRaft quorum leader, or the ZooKeeper-mode active
    controller (a broker id); None when there is none now."""

    mode: Mode
    nodes: tuple[RollNode, ...]
    leader: int | None

    def node(self, node_id: int) -> RollNode | None:
        return next((n for n in self.nodes if n.id == node_id), None)


def chosen(t: Topology, wanted: Sequence[int] | None, controllers: ControllersPolicy) -> tuple[RollNode, ...]:
    """The nodes of the roll: `wanted` (None: every node), without the controllers (combined nodes included:
    restarting one restarts a controller) when `controllers` is "skip"."""
    nodes = [n for n in t.nodes if wanted is None or n.id in wanted]
    if controllers == "skip":
        nodes = [n for n in nodes if not n.is_controller]
    return tuple(nodes)


def order(t: Topology, nodes: Iterable[RollNode]) -> tuple[RollNode, ...]:
    """The order to restart `nodes` in. KRaft: the controllers (and combined nodes) first, one at a time, the
    quorum leader last of them; then the brokers. ZooKeeper mode: the brokers, the active controller last (it
    moves once), just after the brokers on its rack (a batch of `--parallel` may then take it with them:
    rack-aware topics keep a partition's replicas on distinct racks). Within a group, by id. Recomputed before
    each node: an election moves the leader."""
    ns = list(nodes)

    def last(n: RollNode) -> tuple[bool, int]:
        return n.id == t.leader, n.id

    if t.mode == "kraft":
        return tuple(sorted((n for n in ns if n.is_controller), key=last)
                     + sorted((n for n in ns if not n.is_controller), key=lambda n: n.id))
    leader = next((n for n in ns if n.id == t.leader), None)
    rack = leader.rack if leader is not None else None

    def zk(n: RollNode) -> tuple[bool, bool, int]:
        return n.id == t.leader, rack is not None and n.rack == rack, n.id

    return tuple(sorted(ns, key=zk))


def steps(node: RollNode, mode: Mode, restart_hook: bool, only_if: bool) -> tuple[str, ...]:
    """The steps one node goes through (see docs/roll.md)."""
    out: list[str] = ["only_if"] if only_if else []
    if node.is_controller and mode == "kraft":
        out.append("quorum_check")
    if node.is_broker:
        out += ["can_stop", "drain"]
        if mode == "zookeeper":
            out.append("shutdown")
    out += ["restart"] if restart_hook else ["stop", "wait_stopped", "start"]
    if node.is_broker:
        out.append("wait_restarted")
    if node.is_controller and mode == "kraft":
        out.append("wait_caught_up")
    if node.is_broker:
        out += ["wait_in_sync", "undrain", "wait_healthy"]
    out.append("settle")
    return tuple(out)


def next_batch(candidates: Sequence[RollNode], parallel: int, safe_together: Callable[[Sequence[int]], bool],
               last: int | None = None) -> tuple[RollNode, ...]:
    """The next batch: the first candidate, then other brokers in the order given (those on the first one's
    rack before the others: rack-aware topics keep a partition's replicas on distinct racks, so brokers of one
    rack tend to share none; a hint, never the proof) while the batch is smaller than `parallel` and
    `safe_together` (computed from the live ISRs and min ISR when the batch starts) says the batch with it may
    stop at once. `last` (ZooKeeper mode's active controller) joins only a batch that takes every other
    remaining node. A controller (or combined node) is never batched."""
    if not candidates:
        return ()
    first = candidates[0]
    if first.is_controller or parallel <= 1:
        return (first,)
    batch = [first]
    rest = sorted((c for c in candidates[1:] if not c.is_controller and c.id != last),
                  key=lambda c: first.rack is None or c.rack != first.rack)  # stable: the given order within
    for c in rest:
        if len(batch) >= parallel:
            break
        if safe_together([n.id for n in batch] + [c.id]):
            batch.append(c)
    held = [c for c in candidates[1:] if c.id == last]
    if held and len(batch) == len(candidates) - 1 and len(batch) < parallel \
            and safe_together([n.id for n in batch] + [held[0].id]):
        batch.append(held[0])
    return tuple(batch)


Batches = tuple[tuple[RollNode, ...], ...]


def plan_batches(ordered: Sequence[RollNode], parallel: int, safe_together: Callable[[Sequence[int]], bool],
                 last: int | None = None) -> Batches:
    """Every batch, as `next_batch` would make them one after the other on a cluster that stays as it is now."""
    remaining = list(ordered)
    out: list[tuple[RollNode, ...]] = []
    while remaining:
        b = next_batch(remaining, parallel, safe_together, last)
        out.append(b)
        ids = {n.id for n in b}
        remaining = [n for n in remaining if n.id not in ids]
    return tuple(out)


# ------------------------------------------------------------------------------------------------ the journal
@dataclass
class NodeProgress:
    """What the journal says of one node."""

    node: int
    role: str = "broker"
    started: list[str] = field(default_factory=list)  # steps with a `started` event, in order
    done: list[str] = field(default_factory=list)  # steps with a `done` event, in order
    skipped: bool = False  # only_if said no
    finished: bool = False  # node_done
    failed: str | None = None  # the step of the last `failed` event (cleared by a later success)
    detail: dict[str, Any] = field(default_factory=dict)  # what steps recorded: epoch, drain_file, ...
    first_at: str | None = None
    last_at: str | None = None
    elapsed: dict[str, float] = field(default_factory=dict)  # step -> seconds (done steps)

    @property
    def phase(self) -> str:
        """Where the node is: `untouched`, `before_stop` (gates or drain ran: the process was not touched),
        `stopping` (its stop hook may have run), `stopped` (seen stopped), `starting` (its start or restart hook
        may have run: wait for its receipt, never run a hook again), `restarted` (the receipt was seen), `done`
        or `skipped`."""
        if self.finished:
            return "skipped" if self.skipped else "done"
        if "wait_restarted" in self.done or ("wait_caught_up" in self.done and self.role == "controller"):
            return "restarted"
        if any(s in self.started for s in STARTING):
            return "starting"
        if "wait_stopped" in self.done:
            return "stopped"
        if "stop" in self.started:
            return "stopping"
        if self.started:
            return "before_stop"
        return "untouched"


@dataclass
class RollState:
    """The journal replayed: the roll's head (`roll_started`), each node's progress, whether it finished."""

    head: Mapping[str, Any] | None = None
    nodes: dict[int, NodeProgress] = field(default_factory=dict)
    finished: Mapping[str, Any] | None = None  # roll_done
    last_failure: Mapping[str, Any] | None = None  # the last roll_failed (a resumable stop)
    runs: int = 0  # roll_started + roll_resumed events

    def progress(self, node: int) -> NodeProgress:
        if node not in self.nodes:
            self.nodes[node] = NodeProgress(node)
        return self.nodes[node]

    def apply(self, ev: Mapping[str, Any]) -> None:
        """One event, in journal order: a replay applies every event, a run each one as it journals it. Unknown
        events and keys are ignored (a newer kadmin may add some); a step's `detail` is merged into its node's."""
        kind = ev.get("event")
        if kind == "roll_started":
            self.head = ev
            self.runs += 1
        elif kind == "roll_resumed":
            self.runs += 1
            self.last_failure = None  # the run that failed is over: this one goes on
        elif kind == "roll_done":
            self.finished = ev
        elif kind == "roll_failed":
            self.last_failure = ev
        elif kind in ("step", "node_done") and isinstance(ev.get("node"), int):
            _apply(self.progress(ev["node"]), ev)


def replay(events: Iterable[Mapping[str, Any]]) -> RollState:
    """The journal's events, in order, as a RollState (each through RollState.apply)."""
    st = RollState()
    for ev in events:
        st.apply(ev)
    return st


def _apply(np: NodeProgress, ev: Mapping[str, Any]) -> None:
    np.role = str(ev.get("role", np.role))
    at = ev.get("at")
    np.first_at = np.first_at or at
    np.last_at = at or np.last_at
    detail = ev.get("detail")
    if isinstance(detail, Mapping):
        np.detail.update(detail)
    if ev.get("event") == "node_done":
        np.finished = True
        np.skipped = ev.get("status") == "skipped"
        return
    step, status = str(ev.get("step")), ev.get("status")
    if status == "started":
        np.started.append(step)
    elif status in ("done", "skipped"):
        np.done.append(step)
        np.failed = None
        if isinstance(ev.get("elapsed_s"), (int, float)):
            np.elapsed[step] = float(ev["elapsed_s"])
    elif status == "failed":
        np.failed = step


@dataclass(frozen=True)
class Request:
    """What a `roll run` asks for, as the journal's head records it: a resumed run must ask for the same."""

    nodes: tuple[int, ...] | None  # --nodes, sorted (None: every node)
    controllers: ControllersPolicy
    parallel: int


def differences(head: Mapping[str, Any], asked: Request) -> list[str]:
    """What `asked` changes from the unfinished roll's head (`--nodes 1,2 (the roll in DIR has 1,2,3)`)."""
    out = []
    had_nodes = head.get("nodes_asked")
    had = tuple(sorted(had_nodes)) if isinstance(had_nodes, list) else None
    if had != asked.nodes:
        out.append(f"--nodes {_ids(asked.nodes)} (the roll in the state directory has {_ids(had)})")
    if head.get("controllers") != asked.controllers:
        out.append(f"--controllers {asked.controllers} (it has {head.get('controllers')})")
    if head.get("parallel") != asked.parallel:
        out.append(f"--parallel {asked.parallel} (it has {head.get('parallel')})")
    return out


def _ids(ids: Sequence[int] | None) -> str:
    return "every node" if ids is None else ",".join(map(str, ids))
