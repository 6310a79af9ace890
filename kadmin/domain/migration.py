"""Where a ZooKeeper -> KRaft migration (KIP-866) stands, decided from what Kafka writes and answers (pure).

The procedure is docs/migration-observed.md's, observed on real Kafka 3.9.1 and explained from Kafka's source:

- state: `/migration` absent (with Kafka's znodes there) is ZK; `kraft_controller_id` -1 is PRE_MIGRATION (the
  controllers wait for the brokers); a KRaft controller id is MIGRATION while the quorum leader still has migration
  enabled (ApiVersions v3's ZkMigrationReady), POST_MIGRATION once it has not (a finalized leader completes the
  migration). A KRaft cluster with no ZooKeeper cluster and no controller with migration enabled is NONE.
- a broker's mode: ApiVersions says it: ControlledShutdown (key 7) is served by ZooKeeper-mode brokers only, and
  ZkMigrationReady by those with migration enabled (zk_migrating); neither: kraft. The /brokers/ids znode
  corroborates (a ZooKeeper-mode broker has one). A DescribeQuorum observer is NOT a KRaft broker: migrating
  ZooKeeper-mode brokers observe the quorum too.
- the active controller: /controller (kraftControllerEpoch >= 0: a KRaft controller claimed it) until the
  controllers are finalized; DescribeCluster's controller id during a migration is a random broker, never used.

What could not be read is never guessed: the state is None with the states it could be, and `unread` says what
was missing and what would let it be read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from kadmin.domain.models import Controller

State = Literal["ZK", "PRE_MIGRATION", "MIGRATION", "POST_MIGRATION", "NONE"]
Mode = Literal["zk", "zk_migrating", "kraft"]
Level = Literal["ok", "warning", "critical", "unknown"]
STATES: tuple[State, ...] = ("ZK", "PRE_MIGRATION", "MIGRATION", "POST_MIGRATION", "NONE")
STUCK_AFTER_S = 1800.0  # PRE_MIGRATION for longer than this (since /migration was created) is stuck


@dataclass(frozen=True)
class MigrationZnode:
    """/migration (ZkData.MigrationZNode v0): the KRaft driver's ZkMigrationLeadershipState, with its Stat times."""

    kraft_controller_id: int
    kraft_controller_epoch: int
    kraft_metadata_offset: int
    kraft_metadata_epoch: int
    created_ms: int  # ctime: when the active migration controller created it (PRE_MIGRATION began)
    data_version: int  # grows with every dual write


@dataclass(frozen=True)
class ZkView:
    """What ZooKeeper holds: Kafka's znodes (`cluster`: /brokers/ids exists), /controller, /migration, and the
    registered broker ids."""

    cluster: bool
    controller: Controller | None
    migration: MigrationZnode | None
    broker_ids: tuple[int, ...]


@dataclass(frozen=True)
class QuorumView:
    leader: int | None
    epoch: int
    voters: tuple[int, ...]
    observers: tuple[int, ...]


@dataclass(frozen=True)
class NodeApis:
    """One node's ApiVersions answer: `zk_migration_ready` (tagged field 3, v3+; absent: false) and whether it
    serves ControlledShutdown (key 7). `error` (and the rest False) when it could not be asked."""

    id: int
    role: Literal["broker", "controller"]
    address: str | None
    zk_migration_ready: bool = False
    controlled_shutdown: bool = False
    error: str | None = None


@dataclass(frozen=True)
class Unread:
    what: str  # "ZooKeeper", "DescribeQuorum", "ApiVersions of broker 2"
    why: str
    needs: str  # which address or permission would let kadmin read it


@dataclass(frozen=True)
class Observation:
    """Everything read, each part None when it was not given or could not be read (an Unread says which)."""

    given: frozenset[str]  # of "zookeeper", "controllers", "brokers"
    zookeeper: ZkView | None
    quorum: QuorumView | None
    nodes: tuple[NodeApis, ...]
    listed_brokers: tuple[int, ...] = ()  # DescribeCluster through --bootstrap-server
    unread: tuple[Unread, ...] = ()
    now_ms: int = 0


@dataclass(frozen=True)
class BrokerMode:
    id: int
    mode: Mode | None  # None: unknown (`source` says why)
    source: str


@dataclass(frozen=True)
class ControllerNode:
    id: int
    address: str | None
    migration_enabled: bool | None  # ZkMigrationReady; None: not asked
    error: str | None


@dataclass(frozen=True)
class Controllers:
    voters: tuple[int, ...]
    observers: tuple[int, ...]
    leader: int | None
    epoch: int | None
    zookeeper_controller: int | None  # /controller's brokerid
    active: int | None
    active_is_kraft: bool | None
    nodes: tuple[ControllerNode, ...]


@dataclass(frozen=True)
class Finding:
    level: Literal["warning", "critical"]
    code: str
    message: str


@dataclass(frozen=True)
class Status:
    state: State | None
    possible_states: tuple[State, ...]
    brokers: tuple[BrokerMode, ...]
    controllers: Controllers
    rollback_possible: bool | None
    next_step: str
    rollback: str
    sources: Mapping[str, str]
    findings: tuple[Finding, ...]
    unread: tuple[Unread, ...]
    level: Level = field(default="ok")


# ----------------------------------------------------------------------------------------------- the state
def decide_state(o: Observation) -> tuple[tuple[State, ...], str]:
    """The states the observation allows (one: decided) and which sources said so."""
    z = o.zookeeper
    leader = _leader_apis(o)
    ctl_answered = [n for n in o.nodes if n.role == "controller" and n.error is None]
    if z is not None and z.cluster:
        if z.migration is None:
            return ("ZK",), "ZooKeeper: /migration absent (no KRaft controller with migration enabled claims it)"
        if z.migration.kraft_controller_id < 0:
            return ("PRE_MIGRATION",), ("ZooKeeper: /migration with kraft_controller_id -1 (the KRaft controllers "
                                        "wait for the brokers; the metadata is not copied yet)")
        where = f"ZooKeeper: /migration names KRaft controller {z.migration.kraft_controller_id}"
        if leader is not None:
            if leader.zk_migration_ready:
                return ("MIGRATION",), (f"{where}; the quorum leader {leader.id} has migration enabled "
                                        "(ApiVersions ZkMigrationReady)")
            return ("POST_MIGRATION",), (f"{where}; the quorum leader {leader.id} is finalized (ApiVersions: no "
                                         "ZkMigrationReady)")
        return ("MIGRATION", "POST_MIGRATION"), f"{where}; the quorum leader's ApiVersions could not be read"
    # no ZooKeeper cluster to read: the Kafka protocol alone
    if leader is not None or ctl_answered:
        enabled = leader.zk_migration_ready if leader is not None else any(n.zk_migration_ready for n in ctl_answered)
        who = f"the quorum leader {leader.id}" if leader is not None else "the controllers"
        if z is not None and not z.cluster and z.migration is None:
            if not enabled:
                return ("NONE",), f"ZooKeeper holds no Kafka cluster; {who} has no migration enabled (ApiVersions)"
            return ("PRE_MIGRATION",), (f"{who} has migration enabled (ApiVersions ZkMigrationReady) but ZooKeeper "
                                        "holds no Kafka cluster at this chroot")
        if enabled:
            return ("PRE_MIGRATION", "MIGRATION"), (f"{who} has migration enabled (ApiVersions ZkMigrationReady); "
                                                    "ZooKeeper's /migration tells which phase")
        return ("POST_MIGRATION", "NONE"), (f"{who} has no migration enabled (ApiVersions); ZooKeeper tells a "
                                            "finalized migration from a cluster that never migrated")
    if z is not None and not z.cluster:
        return STATES, "ZooKeeper holds no Kafka cluster at this chroot, and no controller answered"
    return STATES, "neither ZooKeeper nor the controllers could be read"


def _leader_apis(o: Observation) -> NodeApis | None:
    if o.quorum is None or o.quorum.leader is None:
        return None
    return next((n for n in o.nodes if n.role == "controller" and n.id == o.quorum.leader and n.error is None), None)


# ----------------------------------------------------------------------------------------------- the brokers
def broker_modes(o: Observation) -> tuple[BrokerMode, ...]:
    """Each broker's mode: its ApiVersions (key 7: ZooKeeper mode; ZkMigrationReady: migrating), with its znode."""
    z = o.zookeeper
    in_zk = set(z.broker_ids) if z is not None else set()
    apis = {n.id: n for n in o.nodes if n.role == "broker"}
    ids = set(in_zk) | set(apis) | set(o.listed_brokers)
    if o.quorum is not None:
        ids |= set(o.quorum.observers) - set(o.quorum.voters)
    out = []
    for i in sorted(ids):
        a = apis.get(i)
        znode = "its /brokers/ids znode" if i in in_zk else ("no /brokers/ids znode" if z is not None else "")
        if a is not None and a.error is None:
            if a.controlled_shutdown:
                mode: Mode = "zk_migrating" if a.zk_migration_ready else "zk"
                said = ("ControlledShutdown and ZkMigrationReady" if a.zk_migration_ready
                        else "ControlledShutdown, no ZkMigrationReady")
            else:
                mode, said = "kraft", "no ControlledShutdown (a KRaft broker)"
            out.append(BrokerMode(i, mode, "; ".join(filter(None, [f"ApiVersions: {said}", znode]))))
            continue
        why = ((a.error or "no answer") if a is not None
               else "no address to ask it ApiVersions (give --bootstrap-server)")
        if a is None and i not in in_zk and o.quorum is not None and i in o.quorum.observers:
            why = "a quorum observer (KRaft or migrating ZooKeeper-mode broker alike) with " + why
        out.append(BrokerMode(i, None, "; ".join(filter(None, [f"unknown: {why}", znode]))))
    return tuple(out)


# ----------------------------------------------------------------------------------------------- controllers
def controllers(o: Observation, state: State | None) -> tuple[Controllers, str]:
    z = o.zookeeper
    q = o.quorum
    nodes = tuple(ControllerNode(n.id, n.address, None if n.error else n.zk_migration_ready, n.error)
                  for n in sorted((n for n in o.nodes if n.role == "controller"), key=lambda n: n.id))
    zc = z.controller if z is not None else None
    zk_kraft = zc is not None and zc.kraft_controller_epoch >= 0
    active: int | None = None
    is_kraft: bool | None = None
    said = []
    if state in ("ZK", "PRE_MIGRATION"):
        active, is_kraft = (zc.broker_id, zk_kraft) if zc is not None else (None, None)
        said.append("/controller" if zc is not None else "/controller absent (no controller elected)")
    elif state == "MIGRATION":
        if zc is not None:
            active, is_kraft = zc.broker_id, zk_kraft
            said.append(f"/controller (kraftControllerEpoch {zc.kraft_controller_epoch})")
        elif q is not None:
            active, is_kraft = q.leader, q.leader is not None
            said.append("the quorum leader (/controller absent)")
    elif state in ("POST_MIGRATION", "NONE"):
        if q is not None:
            active, is_kraft = q.leader, True
            said.append("the quorum leader (DescribeQuorum)")
        else:
            is_kraft = True
            said.append("finalized: a KRaft controller (the quorum could not be read)")
    if q is not None:
        said.insert(0, "DescribeQuorum")
    if nodes:
        said.append("each controller's ApiVersions (ZkMigrationReady)")
    c = Controllers(q.voters if q else (), q.observers if q else (), q.leader if q else None, q.epoch if q else None,
                    zc.broker_id if zc is not None else None, active, is_kraft, nodes)
    return c, ", ".join(said) or "nothing could be read"


# ----------------------------------------------------------------------------------------------- words
ROLLBACK_NONE = "nothing to roll back: the cluster is in ZooKeeper mode"
ROLLBACK_CONTROLLERS = ("deprovision the KRaft controller quorum, then delete /migration (zookeeper-shell: get "
                        "/migration, then deleteall /migration) so that a migration can be tried again")
ROLLBACK_MIGRATING = ("deprovision the KRaft controller quorum; at once delete /controller (so that a broker becomes "
                      "the ZooKeeper-mode controller) and /migration; on each broker remove "
                      "zookeeper.metadata.migration.enable, controller.listener.names and controller.quorum.voters "
                      "(or .bootstrap.servers) and use broker.id, not node.id; then roll every broker")
ROLLBACK_KRAFT = ("on each KRaft broker remove process.roles, use broker.id, not node.id, and restore "
                  "zookeeper.connect (and other zookeeper.* settings), then roll them; then "
                  + ROLLBACK_MIGRATING + " a second time")
ROLLBACK_DONE = "not possible: the controllers are finalized (Kafka: reverting is not possible after the migration " \
                "is finalized)"


def words(state: State | None, brokers: Sequence[BrokerMode], ctl: Controllers) -> tuple[bool | None, str, str]:
    """(rollback_possible, the next step, what a rollback takes from here): Kafka's documented migration and its
    "Reverting to ZooKeeper mode During the Migration" table, per phase."""
    def ids(mode: Mode | None) -> str:
        return ", ".join(str(b.id) for b in brokers if b.mode == mode)

    zk, migrating, kraft, unknown = ids("zk"), ids("zk_migrating"), ids("kraft"), ids(None)
    unknown_note = f" (the mode of brokers {unknown} is unknown)" if unknown else ""
    if state is None:
        return None, "none until the state is known: give what `unread` names", "unknown until the state is known"
    if state == "ZK":
        if migrating:
            return True, (f"brokers {migrating} still have migration enabled and no KRaft controller claims the "
                          "cluster: finish the rollback (roll them without the migration settings), or start the "
                          "KRaft controllers with zookeeper.metadata.migration.enable=true"), ROLLBACK_MIGRATING
        return True, ("provision the KRaft controller quorum with zookeeper.metadata.migration.enable=true and "
                      "zookeeper.connect (formatted with this cluster's id)" + unknown_note), ROLLBACK_NONE
    if state == "PRE_MIGRATION":
        rollback = ROLLBACK_MIGRATING if migrating or kraft else ROLLBACK_CONTROLLERS
        if zk:
            return True, (f"roll brokers {zk} with zookeeper.metadata.migration.enable=true, controller.quorum.voters "
                          "(or .bootstrap.servers) and controller.listener.names: the controllers wait for every "
                          "ZooKeeper-mode broker" + unknown_note), rollback
        return True, ("wait for the KRaft controller to copy the metadata (its log: \"Completed migration of metadata "
                      "from ZooKeeper to KRaft\")" + unknown_note), rollback
    if state == "MIGRATION":
        rollback = ROLLBACK_KRAFT if kraft else ROLLBACK_MIGRATING
        if zk:
            return True, (f"brokers {zk} run in ZooKeeper mode without migration settings while the KRaft "
                          "controller is active: roll them with zookeeper.metadata.migration.enable=true"), rollback
        if migrating:
            return True, (f"roll brokers {migrating} into KRaft (process.roles=broker, node.id, no zookeeper.connect)"
                          + unknown_note), rollback
        pending = [str(n.id) for n in ctl.nodes if n.migration_enabled]
        if unknown:
            return True, "learn the brokers' modes (" + unknown_note.strip(" ()") + ") before finalizing", rollback
        if pending:
            leader = ctl.leader
            order = [p for p in pending if p != str(leader)] + [p for p in pending if p == str(leader)]
            return True, (f"finalize the controllers: roll {', '.join(order)} without "
                          "zookeeper.metadata.migration.enable and zookeeper.connect, the quorum leader last (then "
                          "no rollback is possible)"), rollback
        return True, ("finalize the controllers: roll each without zookeeper.metadata.migration.enable and "
                      "zookeeper.connect, the quorum leader last (then no rollback is possible)"), rollback
    if state == "POST_MIGRATION":
        return False, ("none: the migration is finalized; ZooKeeper is no longer used (its /controller and "
                       "/migration are stale) and can be decommissioned"), ROLLBACK_DONE
    return False, "none: a KRaft cluster that never migrated", "nothing to roll back: the cluster never migrated"


# ----------------------------------------------------------------------------------------------- findings
def findings(o: Observation, state: State | None, brokers: Sequence[BrokerMode], ctl: Controllers,
             stuck_after_s: float) -> tuple[Finding, ...]:
    out: list[Finding] = []
    z = o.zookeeper
    zk = [b.id for b in brokers if b.mode == "zk"]
    migrating = [b.id for b in brokers if b.mode == "zk_migrating"]
    kraft = [b.id for b in brokers if b.mode == "kraft"]
    if state == "MIGRATION" and zk:
        out.append(Finding("critical", "zk_broker_in_migration",
                           f"brokers {_ids(zk)} run in ZooKeeper mode without migration settings while the KRaft "
                           "controller is active (dual write): Kafka requires migration enabled on every "
                           "ZooKeeper-mode broker"))
    if state == "ZK" and migrating:
        out.append(Finding("warning", "migrating_without_controller",
                           f"brokers {_ids(migrating)} have migration enabled but no KRaft controller claims the "
                           "cluster (/migration absent): a rollback not finished, or the controllers not started"))
    if state == "ZK" and kraft:
        out.append(Finding("critical", "kraft_broker_in_zk_cluster",
                           f"brokers {_ids(kraft)} run in KRaft mode while the cluster is in ZooKeeper mode "
                           "(/migration absent)"))
    if state == "PRE_MIGRATION" and z is not None and z.migration is not None and o.now_ms:
        age_s = (o.now_ms - z.migration.created_ms) / 1000
        if age_s > stuck_after_s:
            since = f"{age_s / 60:.0f} min since /migration was created"
            if zk:
                out.append(Finding("warning", "stuck_waiting_for_brokers",
                                   f"stuck in PRE_MIGRATION ({since}): the controller waits for brokers {_ids(zk)}, "
                                   "in ZooKeeper mode without migration settings"))
            elif migrating and not [b for b in brokers if b.mode is None]:
                out.append(Finding("critical", "copy_not_done",
                                   f"stuck in PRE_MIGRATION ({since}): every broker has migration enabled but the "
                                   "metadata is not copied: read the active controller's log (KRaftMigrationDriver)"))
    if state in ("POST_MIGRATION", "NONE") and (zk or migrating):
        out.append(Finding("critical", "zk_broker_after_migration",
                           f"brokers {_ids(zk + migrating)} run in ZooKeeper mode, but the controllers are "
                           f"{'finalized' if state == 'POST_MIGRATION' else 'KRaft only'}"))
    return tuple(out)


def _ids(ids: Sequence[int]) -> str:
    return ", ".join(str(i) for i in ids)


def level_of(found: Sequence[Finding], state: State | None, unknown: bool) -> Level:
    if any(f.level == "critical" for f in found):
        return "critical"
    if state is None or unknown:
        return "unknown"
    return "warning" if found else "ok"


def decide(o: Observation, stuck_after_s: float = STUCK_AFTER_S) -> Status:
    possible, state_source = decide_state(o)
    state = possible[0] if len(possible) == 1 else None
    brokers = broker_modes(o)
    ctl, ctl_source = controllers(o, state)
    rollback_possible, next_step, rollback = words(state, brokers, ctl)
    if state is None and set(possible) <= {"PRE_MIGRATION", "MIGRATION"}:
        rollback_possible = True  # either way the controllers are not finalized
    found = findings(o, state, brokers, ctl, stuck_after_s)
    broker_source = "each broker's ApiVersions (ControlledShutdown, ZkMigrationReady)"
    if o.zookeeper is not None:
        broker_source += " and /brokers/ids"
    if o.listed_brokers:
        broker_source += "; the ids from DescribeCluster through --bootstrap-server too"
    sources = {"state": state_source, "brokers": broker_source, "controllers": ctl_source}
    unknown = any(b.mode is None for b in brokers) or any(n.migration_enabled is None for n in ctl.nodes)
    return Status(state, possible, brokers, ctl, rollback_possible, next_step, rollback, sources, found, o.unread,
                  level_of(found, state, unknown or bool(o.unread)))


# ----------------------------------------------------------------------------------------------- the phases
@dataclass(frozen=True)
class Phase:
    """A phase of the migration as a roll (`kadmin migration roll --phase NAME`): which nodes it restarts, the mode
    each must come back in (its receipt), the state it begins in and the state it ends at."""

    name: str
    role: Literal["broker", "controller"]
    entry: State
    target: str  # a broker's Mode, or a controller's "finalized"
    done: State  # the state once every node is back in `target`
    wants: str  # what the phase's hooks install, in words


PHASES: dict[str, Phase] = {p.name: p for p in (
    Phase("brokers-migrating", "broker", "PRE_MIGRATION", "zk_migrating", "MIGRATION",
          "zookeeper.metadata.migration.enable=true, controller.quorum.voters (or .bootstrap.servers), "
          "controller.listener.names and its listener's security protocol"),
    Phase("brokers-kraft", "broker", "MIGRATION", "kraft", "MIGRATION",
          "process.roles=broker, node.id (its broker.id), no zookeeper.connect, no migration flag"),
    Phase("controllers-finalize", "controller", "MIGRATION", "finalized", "POST_MIGRATION",
          "no zookeeper.metadata.migration.enable and no zookeeper.connect"),
)}
PHASE_NAMES = tuple(PHASES)


def controller_mode(migration_enabled: bool | None) -> str | None:
    """A controller's mode for a phase's receipt: migrating (ZkMigrationReady), finalized, or None (unread)."""
    return None if migration_enabled is None else ("migrating" if migration_enabled else "finalized")


def fitting_phase(s: Status) -> str | None:
    """The phase that fits the state `s` shows, or None (no phase fits: before the controllers, or finished)."""
    if s.state == "PRE_MIGRATION":
        return "brokers-migrating"
    if s.state == "MIGRATION":
        if s.brokers and all(b.mode == "kraft" for b in s.brokers):
            return "controllers-finalize"
        return "brokers-kraft"
    return None


def refusal(phase: Phase, s: Status, resumed: bool) -> str | None:
    """Why `phase` cannot begin (or continue) in the state `s` shows (None: it can). A resumed phase may find the
    state it ends at (its last node was done before the interruption). Unknown is refused: never a guess."""
    fits = fitting_phase(s)
    hint = f"; the phase that fits is {fits}" if fits else ""
    if s.state is None:
        return (f"the migration's state could not be read (it is {' or '.join(s.possible_states)}): "
                + "; ".join(f"{u.what}: {u.why} (needs {u.needs})" for u in s.unread))
    allowed = {phase.entry, phase.done} if resumed else {phase.entry}
    if s.state not in allowed:
        return f"--phase {phase.name} begins in {phase.entry}, and the cluster is in {s.state}{hint}"
    unknown = [b.id for b in s.brokers if b.mode is None]
    if unknown:
        return (f"the mode of brokers {_ids(unknown)} is unknown (give -b with every broker's address, and "
                "--bootstrap-controller)")
    if phase.name == "brokers-kraft" and not resumed and (zk := [b.id for b in s.brokers if b.mode == "zk"]):
        return f"brokers {_ids(zk)} run in ZooKeeper mode without migration settings: --phase brokers-migrating first"
    if phase.name == "controllers-finalize" and (left := [b.id for b in s.brokers if b.mode != "kraft"]):
        return (f"brokers {_ids(left)} are not KRaft brokers yet: --phase brokers-kraft first (finalizing ends "
                "ZooKeeper mode for good)")
    if phase.role == "controller" and not s.controllers.nodes:
        return "no controller answered: give --bootstrap-controller with every controller's address"
    return None


def todo(phase: Phase, s: Status) -> tuple[int, ...]:
    """The nodes of `phase` not yet in its target mode (a node already there needs no restart)."""
    if phase.role == "broker":
        return tuple(b.id for b in s.brokers if b.mode != phase.target)
    return tuple(n.id for n in s.controllers.nodes if controller_mode(n.migration_enabled) != phase.target)


def finished(phase: Phase, s: Status) -> str | None:
    """What the phase still lacks once every node of it is back (None: it is done)."""
    if s.state != phase.done:
        return f"the cluster is in {s.state or ' or '.join(s.possible_states)}, not {phase.done} yet"
    left = todo(phase, s)
    if left:
        return f"nodes {_ids(left)} are not {phase.target} yet"
    return None
