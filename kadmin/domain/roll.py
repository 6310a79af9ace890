"""A rolling restart (`kadmin roll`): the nodes, their order, the batches, the one table of steps, and what a
cluster shows of a node (stopped? back?). Pure.

The journal's events and their replay are in kadmin/domain/roll_events.py; the engine that runs the steps is
kadmin/services/roll_engine.py. Nothing here asks which mode a cluster is in: what differs between clusters is
in `Traits` (what the cluster's backend can show and do), which the backend is asked for.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

Role = Literal["broker", "controller", "combined"]
Mode = Literal["zookeeper", "kraft"]
ControllersPolicy = Literal["first", "skip"]
BatchRule = Literal["distinct", "min-isr"]
BATCH_RULES: tuple[BatchRule, ...] = ("distinct", "min-isr")
DEFAULT_FETCH_TIMEOUT_MS = 2000  # Kafka's default controller.quorum.fetch.timeout.ms


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

    def label(self) -> str:
        return f"node {self.id} ({self.role})"

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "role": self.role, "host": self.host, "port": self.port, "rack": self.rack}


@dataclass(frozen=True)
class Topology:
    """The nodes a roll may restart. `leader`: the active controller now (a KRaft quorum's leader, or the broker
    a ZooKeeper-mode cluster elected); None when there is none now. `mode` only names the cluster's kind in
    the journal and the plan: no rule reads it."""

    mode: Mode
    nodes: tuple[RollNode, ...]
    leader: int | None

    def node(self, node_id: int) -> RollNode | None:
        return next((n for n in self.nodes if n.id == node_id), None)

    @property
    def leading_broker(self) -> int | None:
        """The active controller when it is a broker that is no quorum node (ZooKeeper mode's controller): it
        goes last, with its rack-mates just before it, and joins only the last batch."""
        n = None if self.leader is None else self.node(self.leader)
        return n.id if n is not None and not n.is_controller else None


@dataclass(frozen=True)
class Traits:
    """What a cluster's backend can show and do, as a roll needs it (asked of the backend, never of the mode).

    - `receipt`: how a broker proves it came back. "epoch": it registered again with a greater broker epoch (a
      new registration: the epoch is the proof it went away). "unfenced": it is registered and unfenced again
      after it was seen fenced or gone (the journal keeps that it was seen).
    - `controlled_shutdown`: the controller can be asked to move a broker's leaders off before its stop (the
      epoch-fenced ControlledShutdown, KIP-380).
    - `quorum_nodes`: the metadata quorum's voters are nodes of the cluster (controllers a roll restarts, with
      their own gate and receipt), not a separate ensemble.
    - receipt "mode" (a migration's phase, `target_mode`): a node proves it restarted by answering in the phase's
      mode (a broker's zk_migrating or kraft, a controller's finalized), which only a restart with the phase's
      configuration gives; a controller must also be caught up with the quorum leader again.
    """

    receipt: Literal["epoch", "unfenced", "mode"]
    controlled_shutdown: bool
    quorum_nodes: bool
    target_mode: str | None = None


def chosen(t: Topology, wanted: Sequence[int] | None, controllers: ControllersPolicy) -> tuple[RollNode, ...]:
    """The nodes of the roll: `wanted` (None: every node), without the controllers (combined nodes included:
    restarting one restarts a controller) when `controllers` is "skip"."""
    nodes = [n for n in t.nodes if wanted is None or n.id in wanted]
    if controllers == "skip":
        nodes = [n for n in nodes if not n.is_controller]
    return tuple(nodes)


def order(t: Topology, nodes: Iterable[RollNode]) -> tuple[RollNode, ...]:
    """The order to restart `nodes` in: the quorum's nodes first (controllers and combined nodes), one at a time,
    the quorum leader last of them; then the brokers by id, except the active controller when it is a broker
    (ZooKeeper mode), which goes last so that it moves once, just after the brokers on its rack (a batch of
    `--parallel` may then take it with them: rack-aware topics keep a partition's replicas on distinct racks).
    Recomputed before each node: an election moves the leader."""
    ns = list(nodes)
    controllers = sorted((n for n in ns if n.is_controller), key=lambda n: (n.id == t.leader, n.id))
    leading = t.leading_broker
    lead = next((n for n in ns if n.id == leading), None)
    rack = lead.rack if lead is not None else None

    def broker_key(n: RollNode) -> tuple[bool, bool, int]:
        return n.id == leading, rack is not None and n.rack == rack, n.id

    return tuple(controllers + sorted((n for n in ns if not n.is_controller), key=broker_key))


def next_batch(candidates: Sequence[RollNode], parallel: int, safe_together: Callable[[Sequence[int]], bool],
               last: int | None = None) -> tuple[RollNode, ...]:
    """The next batch: the first candidate, then other brokers in the order given (those on the first one's
    rack before the others: rack-aware topics keep a partition's replicas on distinct racks, so brokers of one
    rack tend to share none; a hint, never the proof) while the batch is smaller than `parallel` and
    `safe_together` (the batch rule, from the assignments, live ISRs and min ISR when the batch starts) says the
    batch with it may stop at once. `last` (the active controller when it is a broker) joins only a batch that
    takes every other remaining node. A controller (or combined node) is never batched."""
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


# ------------------------------------------------------------------------------------------------ the steps
# Stages: how far a step is from the start. A resumed node never runs a step of a stage before its own
# (NodeProgress.stage), and runs a step of BEFORE again (the gates, the drain) while its process is untouched.
BEFORE, STOPPING, STARTING, RECEIPT, BACK = 0, 1, 2, 3, 4
# when a step applies besides its roles: "controlled_shutdown" and "quorum_nodes" (Traits), else what the roll
# asks for: "only_if", "before_node", "after_node" (those hooks), "stop_start" (--stop and --start), "restart"
# (--restart), "soak" (--soak)
Needs = Literal["only_if", "controlled_shutdown", "quorum_nodes", "stop_start", "restart", "before_node",
                "after_node", "soak"]


@dataclass(frozen=True)
class Step:
    """One row of the table of steps: the run, the journal's replay, `roll plan`, docs/roll.md and the tests
    read it. `broker` / `controller`: which roles take it (a combined node takes both kinds). `mutates`: it
    changes the cluster or a node. `again`: a resumed run runs it again while the node's process is untouched
    (the gates, the drain: what they saw may have changed); any other step done is never run again. `hook`: an
    operator's command (its outcome, even one a dead kadmin never saw end, is in DIR/hooks)."""

    name: str
    stage: int
    broker: bool
    controller: bool
    needs: Needs | None
    mutates: bool
    again: bool
    hook: bool
    waits_for: str
    rerun: str  # what a resumed run does with it (docs/roll.md's crash-window table)


STEPS: tuple[Step, ...] = (
    Step("only_if", BEFORE, True, True, "only_if", False, False, True,
         "the `--only-if` command's exit code: 0 restarts the node, 1 skips it (`node_done` with `status: skipped`), "
         "anything else fails the hook (exit 9)",
         "decided once: a journaled answer stands; asked again only when it never ended"),
    Step("quorum_check", BEFORE, False, True, "quorum_nodes", False, True, False,
         "`quorum check --restart ID` finds nothing critical: a majority of the *other* voters stays caught up "
         "without this node",
         "asked again"),
    Step("can_stop", BEFORE, True, False, None, False, True, False,
         "`brokers can-stop ID`: every partition keeps a leader and min ISR (but those of `--allow-unavailable` "
         "topics, named), with the completeness rules of docs/partitions.md; a batch: the batch rule too",
         "asked again"),
    Step("before_node", BEFORE, True, True, "before_node", False, False, True,
         "your `--before-node` command returns 0 (after the node's gates, before its first change: silence its "
         "alerts); a failure stops the roll (exit 9) with the node untouched",
         "never run again once journaled done"),
    Step("drain", BEFORE, True, False, None, True, True, False,
         "`brokers drain ID`: leaderships moved off without moving data; the original order saved in "
         "`DIR/drain-ID.json`, whose path is journaled before the reordering is sent",
         "drained again (the file `drain-ID-2.json`); `undrain` restores the first file, the original order"),
    Step("shutdown", BEFORE, True, False, "controlled_shutdown", True, True, False,
         "`brokers shutdown ID --epoch E`: the epoch-fenced ControlledShutdown (E read now)",
         "asked again with the epoch read then"),
    Step("others_healthy", BEFORE, True, True, None, False, True, False,
         "nothing outside this node or batch is down, fenced, lagging or under-replicated (read afresh just "
         "before the stop: a second roll of the cluster, or any other failure, stops this one)",
         "asked again"),
    Step("stop", STOPPING, True, True, "stop_start", True, False, True,
         "your `--stop` command returns 0; kadmin watches the node meanwhile and journals `seen_stopped` when it "
         "sees it go",
         "never run again once journaled done; see the crash-window table"),
    Step("wait_stopped", STOPPING, True, True, "stop_start", False, False, False,
         "the node seen stopped: its registration with epoch E gone (or replaced); a KRaft broker fenced or "
         "unregistered; a controller not heard from for `controller.quorum.fetch.timeout.ms` and not leading",
         "waits again; a node it cannot tell stopped from back stops the roll (`roll confirm`)"),
    Step("start", STARTING, True, True, "stop_start", True, False, True,
         "your `--start` command returns 0",
         "run again only for this node, only when its receipt is missing and its own start hook never ended 0"),
    Step("restart", STARTING, True, True, "restart", True, False, True,
         "your `--restart` command returns 0; kadmin watches the node meanwhile and journals `seen_stopped` when "
         "it sees it go",
         "never run again once journaled done; see the crash-window table"),
    Step("wait_restarted", RECEIPT, True, False, None, False, False, False,
         "the restart receipt: registered with an epoch greater than E; or (KRaft) registered and unfenced "
         "after `seen_stopped` was journaled",
         "waits again"),
    Step("wait_caught_up", RECEIPT, False, True, "quorum_nodes", False, False, False,
         "after `seen_stopped` was journaled, the quorum leader heard a fetch from it and saw it caught up "
         "within `controller.quorum.fetch.timeout.ms`",
         "waits again"),
    Step("wait_in_sync", BACK, True, False, None, False, False, False,
         "`brokers wait ID --in-sync`: in the ISR of every partition it hosts",
         "waits again"),
    Step("undrain", BACK, True, False, None, True, False, False,
         "`brokers undrain ID --from DIR/drain-ID.json`: the original preferred leaders elected again",
         "restores the same first file again"),
    Step("wait_healthy", BACK, True, False, None, False, False, False,
         "`partitions check` OK again: no under-replicated partition anywhere",
         "waits again"),
    Step("soak", BACK, True, True, "soak", False, False, False,
         "`--soak` seconds, once per node or batch, with each node of it up the whole time: a broker keeps its "
         "registration (the same epoch; KRaft: registered and unfenced), a controller stays a voter heard from "
         "within `controller.quorum.fetch.timeout.ms`; else the roll stops (`crash_loop`, exit 1)",
         "soaks again, the whole time"),
    Step("after_node", BACK, True, True, "after_node", False, False, True,
         "your `--after-node` command returns 0 (once the node is healthy and soaked: lift its alert silence); a "
         "failure stops the roll (exit 9) after this node",
         "never run again once journaled done; run again after a failure"),
    Step("settle", BACK, True, True, None, False, False, False,
         "`--settle` seconds, once per node or batch (default 0)",
         "waits again"),
)
STEP = {s.name: s for s in STEPS}
STEP_ORDER = tuple(s.name for s in STEPS)
HOOK_STEPS = tuple(s.name for s in STEPS if s.hook)
RECEIPTS = ("wait_restarted", "wait_caught_up")


def applies(step: Step, node: RollNode, traits: Traits, asked: frozenset[str]) -> bool:
    """Does `step` apply to `node`: its role takes it, and what it needs the cluster has (`traits`) or the roll
    asks for (`asked`: "stop_start" or "restart", and any of "only_if", "before_node", "after_node", "soak")."""
    if not ((step.broker and node.is_broker) or (step.controller and node.is_controller)):
        return False
    if step.needs == "controlled_shutdown":
        return traits.controlled_shutdown
    if step.needs == "quorum_nodes":
        return traits.quorum_nodes
    return step.needs is None or step.needs in asked


def steps(node: RollNode, traits: Traits, asked: frozenset[str]) -> tuple[str, ...]:
    """The steps one node goes through, in order (the table's rows that apply to it)."""
    return tuple(s.name for s in STEPS if applies(s, node, traits, asked))


def receipt_step(node: RollNode, traits: Traits) -> str:
    """The step whose success proves the node back: a broker's registration, else a controller's catching up."""
    return "wait_restarted" if node.is_broker else "wait_caught_up"


# ------------------------------------------------------------------------------------------------ what is seen
@dataclass(frozen=True)
class NodeSeen:
    """One node as the cluster shows it at one moment. `registered` None: the node has no broker registration
    to look at (a controller); `fetch_age_ms` / `caught_up_age_ms`: by the quorum leader's clock, None where
    DescribeQuorum has no timestamp or the node is no voter. `directory_id`: the metadata log directory the quorum
    knows the node by (KIP-853; None: unknown, or a static quorum's voter); `observer`: the node fetches as an
    observer under another directory id than its voter entry's (or has no voter entry): not as the voter."""

    node: int
    registered: bool | None = None
    epoch: int | None = None
    fenced: bool | None = None
    voter: bool = False
    leads_quorum: bool = False
    fetch_age_ms: int | None = None
    caught_up_age_ms: int | None = None
    quorum_leader: int | None = None
    mode: str | None = None  # receipt "mode": the mode the node answers in (None: it does not answer)
    directory_id: str | None = None
    observer: bool = False


def _in_target_mode(traits: Traits, seen: NodeSeen) -> bool:
    return traits.receipt == "mode" and seen.mode is not None and seen.mode == traits.target_mode


def stopped(node: RollNode, traits: Traits, seen: NodeSeen, old_epoch: int | None, fetch_timeout_ms: int) -> str | None:
    """None when `seen` shows the node stopped (or gone and back: a new epoch), else what it shows instead."""
    if _in_target_mode(traits, seen):
        return None  # a node changes its mode only by restarting with the phase's configuration
    if node.is_broker:
        if not seen.registered:
            return None
        if traits.receipt == "mode":
            return f"broker {node.id} still answers in {seen.mode} mode"
        if traits.receipt == "epoch":
            if old_epoch is not None and seen.epoch != old_epoch:
                return None  # a new registration: it went away (and came back)
            return f"broker {node.id} is still registered (epoch {seen.epoch})"
        if seen.fenced:
            return None
        return f"broker {node.id} is registered and unfenced"
    if seen.leads_quorum:
        return f"controller {node.id} leads the quorum"
    if seen.fetch_age_ms is None or seen.fetch_age_ms > fetch_timeout_ms:
        return None
    return f"controller {node.id} fetched from the leader {seen.fetch_age_ms} ms ago"


def stop_evidence(node: RollNode, traits: Traits, seen: NodeSeen, old_epoch: int | None, fetch_timeout_ms: int) -> str:
    """How `seen` shows the node stopped, for the journal's `seen_stopped` event (call after `stopped` is None)."""
    if _in_target_mode(traits, seen) and (seen.registered or not node.is_broker):
        return "new_mode"
    if node.is_broker:
        if not seen.registered:
            return "unregistered"
        return "new_epoch" if traits.receipt == "epoch" else "fenced"
    return "not_fetching"


def back(node: RollNode, step: str, traits: Traits, seen: NodeSeen, *, old_epoch: int | None, seen_stopped: bool,
         fetch_timeout_ms: int) -> str | None:
    """The receipt of `step` (wait_restarted, wait_caught_up): None when `seen` proves the node back, else what
    is missing. Never without evidence that it went down: a greater epoch than the one before its stop (epoch
    receipts; with no epoch before the stop, that it was seen stopped), else `seen_stopped` (journaled)."""
    if step == "wait_restarted":
        if not seen.registered:
            return f"broker {node.id} is not registered"
        if traits.receipt == "mode":
            if _in_target_mode(traits, seen):
                return None
            return f"broker {node.id} answers in {seen.mode} mode, not {traits.target_mode} yet"
        if traits.receipt == "epoch":
            if seen.epoch is not None and (seen.epoch > old_epoch if old_epoch is not None else seen_stopped):
                return None
            return f"broker {node.id} is registered with epoch {seen.epoch}, not greater than {old_epoch}"
        if seen.fenced is not False:
            return f"broker {node.id} is fenced"
        if not seen_stopped:
            return (f"broker {node.id} is registered and unfenced, but kadmin never saw it stopped (fenced or gone): "
                    "a restart cannot be told from none")
        return None
    if seen.quorum_leader is None:
        return "the quorum has no leader"
    if traits.receipt == "mode" and not _in_target_mode(traits, seen):
        return f"controller {node.id} runs {seen.mode or 'in an unknown mode'}, not {traits.target_mode} yet"
    fetch, caught = seen.fetch_age_ms, seen.caught_up_age_ms
    if not (seen.leads_quorum or (fetch is not None and caught is not None and fetch <= fetch_timeout_ms
                                  and caught <= fetch_timeout_ms)):
        if fetch is None:
            return f"quorum leader {seen.quorum_leader} to hear from controller {node.id} (not heard from yet)"
        return (f"quorum leader {seen.quorum_leader} to hear from controller {node.id}: its last fetch {fetch} ms "
                f"ago, caught up {caught} ms ago (limit {fetch_timeout_ms} ms)")
    if not seen_stopped and traits.receipt != "mode":
        return (f"controller {node.id} is caught up, but kadmin never saw it stopped (not fetching): a restart cannot "
                "be told from none")
    return None


def soak_broken(node: RollNode, traits: Traits, before: NodeSeen, now: NodeSeen, fetch_timeout_ms: int) -> str | None:
    """During `--soak`: None while `now` shows the node up as it was at the soak's start (`before`), else what
    changed. A broker keeps its registration (the same epoch; KRaft: registered and unfenced); a controller
    stays a voter that leads or is heard from within `fetch_timeout_ms`."""
    if node.is_broker:
        if not now.registered:
            return f"broker {node.id} is no longer registered"
        if traits.receipt == "epoch" and now.epoch != before.epoch:
            return f"broker {node.id} registered again (epoch {before.epoch} -> {now.epoch}): it restarted"
        if traits.receipt != "epoch" and now.fenced:
            return f"broker {node.id} is fenced"
    if node.is_controller and traits.quorum_nodes:
        if not now.voter:
            return f"controller {node.id} is no longer a voter of the quorum"
        if not now.leads_quorum and (now.fetch_age_ms is None or now.fetch_age_ms > fetch_timeout_ms):
            return (f"the quorum leader has not heard from controller {node.id} for "
                    f"{'ever' if now.fetch_age_ms is None else f'{now.fetch_age_ms} ms'} (limit {fetch_timeout_ms} ms)")
    return None


# ------------------------------------------------------------------------------------------------ what holds a gate
@dataclass(frozen=True)
class Blocker:
    """One thing holding a gate: a partition (`topic`, `partition`), a voter or a broker, and why."""

    why: str
    topic: str | None = None
    partition: int | None = None
    voter: int | None = None
    broker: int | None = None

    def to_json(self) -> dict[str, Any]:
        keys = {"topic": self.topic, "partition": self.partition, "voter": self.voter, "broker": self.broker}
        return {**{k: v for k, v in keys.items() if v is not None}, "why": self.why}


@dataclass(frozen=True)
class Held:
    """A gate not met: what it says (`why`), what holds it (`blockers`, at most a page of them), and `cause`: a
    cause the roll cannot fix by waiting on its own nodes (a broker outside the step down, a reassignment in
    flight), when it sees one."""

    why: str
    blockers: tuple[Blocker, ...] = ()
    cause: str | None = None

    @property
    def text(self) -> str:
        return self.why + (f" ({self.cause})" if self.cause else "")


def until_time(text: str, now: datetime.datetime) -> float:
    """`--until`: ISO 8601 with an offset (`2026-11-29T06:00+01:00`, `...Z`), or `HH:MM` local time (the next such
    time after `now`, an aware local datetime), as a POSIX timestamp. ValueError says what is wrong."""
    t = text.strip()
    if len(t) == 5 and t[2] == ":" and t[:2].isdigit() and t[3:].isdigit():
        hh, mm = int(t[:2]), int(t[3:])
        if hh > 23 or mm > 59:
            raise ValueError(f"{text!r} is no time of day (HH:MM, 00:00 to 23:59)")
        at = now.replace(hour=hh, minute=mm, second=0, microsecond=0)
        if at <= now:
            at += datetime.timedelta(days=1)
        return at.timestamp()
    try:
        at = datetime.datetime.fromisoformat(t)
    except ValueError:
        raise ValueError(f"{text!r} is neither ISO 8601 with an offset (2026-11-29T06:00+01:00) nor HH:MM") from None
    if at.tzinfo is None:
        raise ValueError(f"{text!r} has no offset: give one (+01:00, Z), or HH:MM for local time")
    if at <= now:
        raise ValueError(f"{text!r} has passed already (now: {now.isoformat(timespec='seconds')})")
    return at.timestamp()


def identity_changed(node: RollNode, before: str | None, seen: NodeSeen) -> str | None:
    """None while `seen` is the node that stopped; else what changed and what to do. A controller that comes back
    with another metadata log directory (a replaced or wiped disk, formatted again) fetches as an observer, not as
    the voter it was (KIP-853): it never catches up as that voter until the operator replaces the voter. `before`:
    its directory id before the stop (None: not known)."""
    if not (node.is_controller and seen.observer) or (before is not None and seen.directory_id == before):
        return None
    old = before or "OLD_DIRECTORY_ID"
    return (f"controller {node.id} came back with another metadata log directory (directory id "
            f"{seen.directory_id or 'unknown'}, it had {before or 'another one'}): it fetches as an observer, not as "
            "the voter it was (KIP-853; a replaced or wiped disk). Replace the voter: `kafka-metadata-quorum "
            f"--bootstrap-controller HOST:PORT remove-controller --controller-id {node.id} --controller-directory-id "
            f"{old}`, then, from node {node.id}, `kafka-metadata-quorum --command-config <its server.properties> "
            "--bootstrap-controller HOST:PORT add-controller`: the roll goes on once it is a voter again")


# ------------------------------------------------------------------------------------------------ the request
@dataclass(frozen=True)
class Request:
    """What a `roll run` asks for, as the journal's head records it: a resumed run must ask for the same."""

    nodes: tuple[int, ...] | None  # --nodes, sorted (None: every node)
    controllers: ControllersPolicy
    parallel: int
    batch_rule: BatchRule = "distinct"


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
    had_rule = head.get("batch_rule") or "min-isr"  # a journal from before the rule was asked: the old one
    if asked.parallel > 1 and had_rule != asked.batch_rule:
        out.append(f"--batch-rule {asked.batch_rule} (it has {had_rule})")
    return out


def _ids(ids: Sequence[int] | None) -> str:
    return "every node" if ids is None else ",".join(map(str, ids))
