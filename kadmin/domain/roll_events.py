"""The roll's journal as typed events (one class per event, one serializer), and its replay. Pure.

The journal (DIR/journal.ndjson, written by kadmin/services/roll_journal.py) is the roll's memory. Everything a
resumed run decides comes from `replay` of these events, from the hooks' status files (DIR/hooks, what a hook
did even while no kadmin watched) and from what the cluster shows now. The rule that matters most: a node is
journaled done only on evidence that it went down (`seen_stopped`, or a new broker epoch) and came back.

`to_json` and `parse` are the only serializer: the NDJSON keys are a contract (docs/roll.md) and each class's
fields are those keys, in order, after `event` and `at`. A field marked `omit` is written only when it has a
value (a step's `detail` and `message`). Unknown events (from a newer kadmin) parse to None and are ignored.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Union

from kadmin.domain.roll import STEP, RollNode

JOURNAL_VERSION = 2  # 2: seen_stopped and confirmed events, the drain file journaled when the drain starts
READABLE_VERSIONS = (1, 2)
OMIT = {"omit": True}


class BadEvent(ValueError):
    """A complete journal line that is no event this kadmin can trust (a known kind with a wrong key)."""


@dataclass(frozen=True)
class RollStarted:
    event: ClassVar[str] = "roll_started"
    at: str
    journal_version: int
    cluster_id: str | None
    mode: str
    nodes_asked: list[int] | None
    controllers: str
    parallel: int
    nodes: tuple[RollNode, ...]
    order: list[int]
    step_timeout: float
    pid: int
    batch_rule: str = "min-isr"  # a journal of version 1 has none: it batched by the min-ISR rule
    allow_unavailable: list[str] = field(default_factory=list)
    fetch_timeout_ms: int | None = field(default=None, metadata=OMIT)
    fetch_timeout_source: str | None = field(default=None, metadata=OMIT)


@dataclass(frozen=True)
class RollResumed:
    event: ClassVar[str] = "roll_resumed"
    at: str
    pid: int
    allow_unavailable: list[str] = field(default_factory=list)
    fetch_timeout_ms: int | None = field(default=None, metadata=OMIT)
    fetch_timeout_source: str | None = field(default=None, metadata=OMIT)


@dataclass(frozen=True)
class StepEvent:
    event: ClassVar[str] = "step"
    at: str
    node: int
    role: str
    step: str
    status: str  # started, done, failed
    elapsed_s: float = 0.0
    detail: dict[str, Any] = field(default_factory=dict, metadata=OMIT)
    message: str | None = field(default=None, metadata=OMIT)


@dataclass(frozen=True)
class SeenStopped:
    """kadmin saw the node stopped (`how`: unregistered, fenced, new_epoch, not_fetching), journaled at once:
    the first half of its receipt, which a resumed run must not have to see again."""

    event: ClassVar[str] = "seen_stopped"
    at: str
    node: int
    role: str
    how: str
    step: str  # what ran when it was seen (stop, restart, wait_stopped, ...)


@dataclass(frozen=True)
class Confirmed:
    """`kadmin roll confirm`: the operator says whether the node went down since its stop or restart hook began
    (when the cluster could not tell): `went_down` true counts as `seen_stopped`; false forgets the node's stop
    (its hook may run again: no restart happened)."""

    event: ClassVar[str] = "confirmed"
    at: str
    node: int
    went_down: bool
    pid: int


@dataclass(frozen=True)
class NodeDone:
    event: ClassVar[str] = "node_done"
    at: str
    node: int
    role: str
    status: str  # done, skipped
    elapsed_s: float = 0.0
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RollDone:
    event: ClassVar[str] = "roll_done"
    at: str
    elapsed_s: float


@dataclass(frozen=True)
class RollFailed:
    event: ClassVar[str] = "roll_failed"
    at: str
    node: int | None
    step: str | None
    reason: str
    message: str
    exit_code: int
    down: list[int] = field(default_factory=list, metadata=OMIT)  # nodes the roll left stopped (as far as seen)
    drained: list[int] = field(default_factory=list, metadata=OMIT)  # nodes left drained (not undrained yet)


@dataclass(frozen=True)
class Paused:
    """The roll holds before its next node or batch until `kadmin roll continue` (`by`: "roll pause", or
    "--pause-after" once that many nodes were done); `done`: the nodes done so far."""

    event: ClassVar[str] = "paused"
    at: str
    by: str
    done: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class Continued:
    """`kadmin roll continue` was seen: the roll goes on after `paused_s` seconds paused."""

    event: ClassVar[str] = "continued"
    at: str
    paused_s: float


@dataclass(frozen=True)
class GateWaiting:
    """A gate holding a node (`roll run -o ndjson` only; never journaled: a resumed run asks again): what it waits
    for, the partitions, voters or brokers holding it (`blockers`), and `cause`, a cause the roll cannot fix
    (a broker outside the roll down, a reassignment in flight), when it sees one. Emitted again as they change."""

    event: ClassVar[str] = "gate_waiting"
    at: str
    node: int
    role: str
    step: str
    why: str
    blockers: list[dict[str, Any]] = field(default_factory=list)
    cause: str | None = None


Event = (RollStarted | RollResumed | StepEvent | SeenStopped | Confirmed | NodeDone | RollDone | RollFailed | Paused
         | Continued)
KINDS: dict[str, type[Any]] = {c.event: c for c in typing.get_args(Event)}


def to_json(ev: Event | GateWaiting) -> dict[str, Any]:
    """The event as its NDJSON object: `event`, `at`, then its fields in order (an `omit` field only when set)."""
    out: dict[str, Any] = {"event": ev.event}
    for f in dataclasses.fields(ev):
        v = getattr(ev, f.name)
        if f.metadata.get("omit") and v in (None, {}, [], ()):
            continue
        out[f.name] = [n.to_json() for n in v] if f.name == "nodes" else v
    return out


def parse(d: Mapping[str, Any]) -> Event | None:
    """A journal object as its event; None for an event kind this kadmin does not know (a newer one's: ignored).
    A known kind whose keys do not have their types raises BadEvent (the journal cannot be trusted past it)."""
    cls = KINDS.get(str(d.get("event")))
    if cls is None:
        return None
    hints = typing.get_type_hints(cls)
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name not in d:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise BadEvent(f"a {cls.event} event without {f.name!r}")
            continue
        if d[f.name] is None and f.metadata.get("omit"):
            continue  # an optional key written as null: as if left out
        kwargs[f.name] = _typed(cls.event, f.name, hints[f.name], d[f.name])
    return typing.cast(Event, cls(**kwargs))


def _typed(kind: str, name: str, hint: Any, value: Any) -> Any:
    def bad() -> BadEvent:
        return BadEvent(f"a {kind} event's {name!r} is {value!r}")

    if name == "nodes":
        if not isinstance(value, list) or not all(isinstance(n, Mapping) and isinstance(n.get("id"), int)
                                                  for n in value):
            raise bad()
        return tuple(RollNode(int(n["id"]), n.get("role", "broker"), n.get("host"), n.get("port"), n.get("rack"))
                     for n in value)
    options = typing.get_args(hint) if typing.get_origin(hint) in (Union, types.UnionType) else (hint,)
    for opt in options:
        if opt is type(None) and value is None:
            return None
        base = typing.get_origin(opt) or opt
        if base is bool and isinstance(value, bool):
            return value
        if base is int and isinstance(value, int) and not isinstance(value, bool):
            return value
        if base is float and isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if base is str and isinstance(value, str):
            return value
        if base is list and isinstance(value, list):
            (item,) = typing.get_args(opt)
            return [_typed(kind, name, item, v) for v in value]
        if base is dict and isinstance(value, dict):
            return dict(value)
    raise bad()


# ------------------------------------------------------------------------------------------------ the replay
@dataclass
class NodeProgress:
    """What the journal says of one node."""

    node: int
    role: str = "broker"
    started: list[str] = field(default_factory=list)  # steps with a `started` event, in order
    # each step's `started` events in the whole journal (a `confirmed` that forgets a stop does not lower it): a
    # hook attempt's number, which names its status file (DIR/hooks/node-N.HOOK.ATTEMPT.status), is never reused
    tries: dict[str, int] = field(default_factory=dict)
    done: list[str] = field(default_factory=list)  # steps with a `done` event, in order
    ended: list[str] = field(default_factory=list)  # steps with a `done` or `failed` event, in order
    skipped: bool = False  # only_if said no
    finished: bool = False  # node_done
    failed: str | None = None  # the step of the last `failed` event (cleared by a later success)
    detail: dict[str, Any] = field(default_factory=dict)  # what steps recorded: epoch, drain_file, ...
    first_at: str | None = None
    last_at: str | None = None
    elapsed: dict[str, float] = field(default_factory=dict)  # step -> seconds (done steps)
    seen_stopped: str | None = None  # how it was seen stopped (seen_stopped, wait_stopped done, confirmed)
    only_if: bool | None = None  # --only-if's answer once journaled: True restart, False skip
    last_status: dict[str, str] = field(default_factory=dict)  # step -> its last status journaled

    @property
    def phase(self) -> str:
        """Where the node is: `untouched`, `before_stop` (gates or drain ran: the process was not touched),
        `stopping` (its stop hook may have run), `stopped` (seen stopped), `starting` (its start or restart hook
        may have run), `restarted` (its receipt was seen), `done` or `skipped`."""
        if self.finished:
            return "skipped" if self.skipped else "done"
        if "wait_restarted" in self.done or ("wait_caught_up" in self.done and self.role == "controller"):
            return "restarted"
        if any(s in self.started for s in ("start", "restart")):
            return "starting"
        if self.seen_stopped and "stop" in self.started:
            return "stopped"
        if "stop" in self.started:
            return "stopping"
        if self.started:
            return "before_stop"
        return "untouched"

    @property
    def stage(self) -> int:
        """The stage of the table a resumed run starts this node at (kadmin/domain/roll.py STEP.stage)."""
        return {"untouched": 0, "before_stop": 0, "stopping": 1, "stopped": 1, "starting": 2, "restarted": 3,
                "done": 5, "skipped": 5}[self.phase]

    def attempts(self, step: str) -> int:
        return self.tries.get(step, 0)

    def last(self, step: str) -> str | None:
        """The last status journaled for `step`: started, done, failed (None: never)."""
        return self.last_status.get(step)

    @property
    def old_epoch(self) -> int | None:
        v = self.detail.get("old_epoch")
        return v if isinstance(v, int) else None

    @property
    def old_directory_id(self) -> str | None:
        """A controller's metadata log directory id before its stop (its stop or restart step's `started`)."""
        v = self.detail.get("old_directory_id")
        return v if isinstance(v, str) else None

    @property
    def drain_file(self) -> str | None:
        """The roll's FIRST drain file of this node, journaled before the first reordering was sent: the
        original order, whatever drains came after (a rerun's drain saves an already reordered assignment)."""
        v = self.detail.get("drain_file")
        return v if isinstance(v, str) else None


@dataclass
class RollState:
    """The journal replayed: the roll's head (`roll_started`), each node's progress, whether it finished."""

    head: RollStarted | None = None
    nodes: dict[int, NodeProgress] = field(default_factory=dict)
    finished: RollDone | None = None
    last_failure: RollFailed | None = None  # the last roll_failed (a resumable stop)
    runs: int = 0  # roll_started + roll_resumed events
    last_run: RollStarted | RollResumed | None = None
    paused: Paused | None = None  # a pause not continued yet
    paused_after: bool = False  # --pause-after has paused this roll once (it does not again)

    def progress(self, node: int) -> NodeProgress:
        if node not in self.nodes:
            self.nodes[node] = NodeProgress(node)
        return self.nodes[node]

    def apply(self, ev: Event | None) -> None:
        """One event, in journal order: a replay applies every event, a run each one as it journals it."""
        if isinstance(ev, RollStarted):
            self.head, self.last_run = ev, ev
            self.runs += 1
        elif isinstance(ev, RollResumed):
            self.runs += 1
            self.last_run = ev
            self.last_failure = None  # the run that failed is over: this one goes on
        elif isinstance(ev, RollDone):
            self.finished = ev
        elif isinstance(ev, RollFailed):
            self.last_failure = ev
        elif isinstance(ev, Paused):
            self.paused = ev
            self.paused_after = self.paused_after or ev.by == "--pause-after"
        elif isinstance(ev, Continued):
            self.paused = None
        elif isinstance(ev, (StepEvent, NodeDone, SeenStopped, Confirmed)):
            _apply(self.progress(ev.node), ev)


def replay(events: Iterable[Event | None]) -> RollState:
    """The journal's events, in order, as a RollState (each through RollState.apply)."""
    st = RollState()
    for ev in events:
        st.apply(ev)
    return st


def _apply(np: NodeProgress, ev: StepEvent | NodeDone | SeenStopped | Confirmed) -> None:
    np.first_at = np.first_at or ev.at
    np.last_at = ev.at or np.last_at
    if isinstance(ev, SeenStopped):
        np.seen_stopped = np.seen_stopped or ev.how
        return
    if isinstance(ev, Confirmed):
        if ev.went_down:
            np.seen_stopped = np.seen_stopped or "confirmed"
        else:  # it never went down: its stop is forgotten (the hook may run again: no restart happened)
            gone = {s for s, spec in STEP.items() if spec.stage in (1, 2)}
            np.started = [s for s in np.started if s not in gone]
            np.done = [s for s in np.done if s not in gone]
            np.ended = [s for s in np.ended if s not in gone]
            for s in gone:
                np.last_status.pop(s, None)
            np.seen_stopped = None
            np.failed = None
        return
    np.role = ev.role
    for k, v in ev.detail.items():
        if k == "drain_file" and "drain_file" in np.detail:
            continue  # the first one stands (see NodeProgress.drain_file)
        np.detail[k] = v
    if isinstance(ev, NodeDone):
        np.finished = True
        np.skipped = ev.status == "skipped"
        return
    step, status = ev.step, ev.status
    np.last_status[step] = status
    if status == "started":
        np.started.append(step)
        np.tries[step] = np.tries.get(step, 0) + 1
    elif status == "done":
        np.done.append(step)
        np.ended.append(step)
        np.failed = None
        np.elapsed[step] = ev.elapsed_s
        if step == "wait_stopped":
            np.seen_stopped = np.seen_stopped or "wait_stopped"
        if step == "only_if" and isinstance(ev.detail.get("restart"), bool):
            np.only_if = ev.detail["restart"]
    elif status == "failed":
        np.ended.append(step)
        np.failed = step
