"""Each command's typed payload, continued: typed payloads for history and sandbox (issue 21).

As in kadmin/payloads.py: a payload is a frozen dataclass whose fields are the keys of the command's JSON
object, in order (kadmin.results.Payload: `to_json()` is the JSON form; a key that is there only sometimes is
said in the payload's own `to_json()`). Services build them, views read their fields, the renderer prints their
JSON form. Here, below the services, the sandbox and render (which may not import each other), for `history`
(`ingest`, and one row type per `report` kind) and `sandbox`.

The sandbox manager (kadmin/sandbox/manager.py) answers in JSON values (dicts), which its callers and tests
read; each sandbox payload's `from_json` (and `sandbox_bounce`, `sandbox_kill`, `sandbox_start`, which pick the
engine's variant) reads such a dict, and `to_json()` gives it back as it was.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kadmin.results import Payload


# ---------------------------------------------------------------------------- history ingest
@dataclass(frozen=True)
class IngestDamage(Payload):
    """A damaged file: where the damage starts; the records before it were kept."""

    file: str
    offset: int
    reason: str


@dataclass(frozen=True)
class NothingIngested(Payload):
    """`history ingest` that found no log to read (exit 1, or 5 with unreadable directories)."""

    cluster: str
    out: str
    files: int
    events_parsed: int
    events_added: int
    skipped: tuple[str, ...]  # files given by name that are no log kadmin reads
    unreadable: tuple[str, ...]  # directories that could not be listed


@dataclass(frozen=True)
class Ingested(Payload):
    """`history ingest`: what was read and added; `run_id` None when nothing was committed."""

    cluster: str
    out: str
    files: int
    ranges: int
    bytes: int
    events_parsed: int
    events_added: int
    damage: tuple[IngestDamage, ...]
    skipped: tuple[str, ...]
    unreadable: tuple[str, ...]
    run_id: str | None


# ---------------------------------------------------------------------------- history report (a row per kind)
@dataclass(frozen=True)
class GenerationRow(Payload):
    """`history report generations`: one broker registration, from start to end (ISO 8601, UTC)."""

    broker_id: int
    epoch: int | None
    start: str | None
    end: str | None  # None: still registered at the end of the history
    gap_ms: int | None  # the downtime until the next generation
    fence_episodes: int
    fenced_ms: int


@dataclass(frozen=True)
class BouncesRow(Payload):
    """`history report bounces`: per broker."""

    broker_id: int
    generations: int
    bounces: int
    downtime_p50_ms: int | None
    downtime_p90_ms: int | None
    downtime_max_ms: int | None
    fence_episodes: int
    fenced_ms: int
    fenced_max_ms: int | None


@dataclass(frozen=True)
class ControllersRow(Payload):
    """`history report controllers`: an election (`elected`, `quorum_leader`) or a resignation (`resigned`)."""

    at: str | None
    event: str
    controller_id: int | None
    controller_epoch: int | None


@dataclass(frozen=True)
class IsrChurnRow(Payload):
    """`history report isr-churn`: per broker."""

    broker_id: int
    isr_shrinks: int
    isr_expands: int
    rejoins: int
    rejoin_p50_ms: int | None
    rejoin_max_ms: int | None


@dataclass(frozen=True)
class EpochsRow(Payload):
    """`history report epochs`: the max broker epoch from this time on, and the broker that holds it."""

    at: str | None
    max_broker_epoch: int | None
    broker_id: int | None


ReportRow = GenerationRow | BouncesRow | ControllersRow | IsrChurnRow | EpochsRow

# each `history report` kind's row (kadmin.pipeline.reports.KINDS)
REPORT_ROWS: Mapping[str, type[ReportRow]] = {
    "bounces": BouncesRow,
    "generations": GenerationRow,
    "controllers": ControllersRow,
    "isr-churn": IsrChurnRow,
    "epochs": EpochsRow,
}


def report_row(kind: str, row: Mapping[str, Any]) -> ReportRow:
    """A report's row (kadmin.pipeline.reports answers in dicts) as its kind's payload: the same keys, in order
    (a key missing or left over is a TypeError, never a silent change of the report's JSON)."""
    return REPORT_ROWS[kind](**row)


# ---------------------------------------------------------------------------- sandbox up / status
@dataclass(frozen=True)
class SandboxZkMember(Payload):
    """A ZooKeeper server the sandbox runs; `mode` (standalone, leader, follower) None when it does not serve."""

    myid: int
    address: str
    pid: int | None
    alive: bool
    mode: str | None

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> SandboxZkMember:
        return cls(doc["myid"], doc["address"], doc["pid"], doc["alive"], doc["mode"])


@dataclass(frozen=True)
class SandboxDaemon(Payload):
    """The emulated brokers' process (on real Kafka: no pid, not alive)."""

    pid: int | None
    alive: bool


@dataclass(frozen=True)
class SandboxProcess(Payload):
    """A process the sandbox started: role zookeeper, emulated-brokers (id None), broker or controller;
    `registered` None where it does not apply (ZooKeeper, the emulated brokers' process). `phase` is a migration
    sandbox node's configured phase (broker zk, migrating, kraft; controller migrating, finalized), else None."""

    role: str
    id: int | None
    pid: int | None
    port: int | None
    alive: bool
    registered: bool | None
    phase: str | None = None

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> SandboxProcess:
        return cls(doc["role"], doc["id"], doc["pid"], doc["port"], doc["alive"], doc["registered"],
                   doc.get("phase"))


@dataclass(frozen=True)
class SandboxStatus(Payload):
    """`sandbox status`. `cluster_id`, `bootstrap_servers` and `bootstrap_controllers` are keys only on real
    Kafka (`engine` kafka); an emulated sandbox's are None."""

    dir: str | None
    zookeeper: str | None  # the connect string with its chroot; None in KRaft mode
    ensemble: tuple[SandboxZkMember, ...]
    daemon: SandboxDaemon | None
    brokers: Mapping[int, int | None]  # registered broker id -> epoch (None: KRaft, DescribeCluster has none)
    stopped_brokers: tuple[int, ...]
    controller: int | None
    engine: str  # emulated, kafka
    mode: str | None  # zk, kraft, migration
    kafka_version: str | None
    kafka_home: str | None
    cluster_id: str | None
    bootstrap_servers: str | None
    bootstrap_controllers: str | None
    processes: tuple[SandboxProcess, ...]

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = super().to_json()
        if self.engine != "kafka":
            for key in ("cluster_id", "bootstrap_servers", "bootstrap_controllers"):
                del out[key]
        return out

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> SandboxStatus:
        """What the manager's `status()` says; a key it lacks reads as None (or empty; engine: emulated)."""
        daemon = doc.get("daemon")
        return SandboxStatus(
            dir=doc.get("dir"),
            zookeeper=doc.get("zookeeper"),
            ensemble=tuple(SandboxZkMember.from_json(m) for m in doc.get("ensemble") or ()),
            daemon=None if daemon is None else SandboxDaemon(daemon["pid"], daemon["alive"]),
            brokers=dict(doc.get("brokers") or {}),
            stopped_brokers=tuple(doc.get("stopped_brokers") or ()),
            controller=doc.get("controller"),
            engine=doc.get("engine") or "emulated",
            mode=doc.get("mode"),
            kafka_version=doc.get("kafka_version"),
            kafka_home=doc.get("kafka_home"),
            cluster_id=doc.get("cluster_id"),
            bootstrap_servers=doc.get("bootstrap_servers"),
            bootstrap_controllers=doc.get("bootstrap_controllers"),
            processes=tuple(SandboxProcess.from_json(p) for p in doc.get("processes") or ()),
        )


@dataclass(frozen=True)
class SandboxUp(SandboxStatus):
    """`sandbox up`: the status, and whether the sandbox was running already."""

    already_running: bool

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> SandboxUp:
        return SandboxUp(**vars(SandboxStatus.from_json(doc)), already_running=bool(doc.get("already_running")))


@dataclass(frozen=True)
class SandboxPhase(Payload):
    """`sandbox phase`: a migration sandbox node's server.properties rewritten for `phase`; `running` says the
    node runs the old configuration until it is started again."""

    id: int
    role: str  # broker, controller
    phase: str
    old_phase: str | None
    running: bool
    config: str

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> SandboxPhase:
        return cls(doc["id"], doc["role"], doc["phase"], doc["old_phase"], doc["running"], doc["config"])


# ---------------------------------------------------------------------------- sandbox down
@dataclass(frozen=True)
class StoppedProcess(Payload):
    """A process `down` stopped, or found already gone; why it counted as the sandbox's, or as gone."""

    process: str  # brokers, zookeeper<myid>, broker-<id>, controller-<id>
    pid: int
    reason: str

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> StoppedProcess:
        return cls(doc["process"], doc["pid"], doc["reason"])


@dataclass(frozen=True)
class SandboxDown(Payload):
    dir: str
    stopped: tuple[StoppedProcess, ...]
    already_gone: tuple[StoppedProcess, ...]

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> SandboxDown:
        return cls(doc["dir"], tuple(StoppedProcess.from_json(p) for p in doc["stopped"]),
                   tuple(StoppedProcess.from_json(p) for p in doc["already_gone"]))


# ---------------------------------------------------------------------------- sandbox bounce / kill / start
# Each in three variants: an emulated broker; a real Kafka broker (adds its pid, and how long it took to stop);
# a real KRaft controller (3001...: `role` controller, no epochs, its log end offset once caught up).
@dataclass(frozen=True)
class SandboxBounce(Payload):
    """`sandbox bounce` of an emulated broker: its epochs before and after."""

    id: int
    old_epoch: int | None
    new_epoch: int | None  # None on KRaft (DescribeCluster has no epochs)
    controller: int | None


@dataclass(frozen=True)
class SandboxKafkaBounce(SandboxBounce):
    old_pid: int
    pid: int
    stop_seconds: float


@dataclass(frozen=True)
class SandboxKill(Payload):
    id: int
    old_epoch: int | None
    controller: int | None


@dataclass(frozen=True)
class SandboxKafkaKill(SandboxKill):
    pid: int
    hard: bool
    stop_seconds: float


@dataclass(frozen=True)
class SandboxStart(Payload):
    id: int
    new_epoch: int | None
    controller: int | None


@dataclass(frozen=True)
class SandboxKafkaStart(SandboxStart):
    pid: int


@dataclass(frozen=True)
class SandboxControllerStart(Payload):
    """`sandbox start` of a KRaft controller: `controller` is the quorum leader it caught up with."""

    id: int
    role: str  # controller
    controller: int | None
    pid: int
    log_end_offset: int | None


@dataclass(frozen=True)
class SandboxControllerBounce(SandboxControllerStart):
    old_pid: int
    stop_seconds: float


@dataclass(frozen=True)
class SandboxControllerKill(Payload):
    id: int
    role: str  # controller
    controller: int | None  # the quorum leader after it stopped
    pid: int
    hard: bool
    stop_seconds: float


def _controller(doc: Mapping[str, Any]) -> bool:
    return doc.get("role") == "controller"


def sandbox_bounce(doc: Mapping[str, Any]) -> SandboxBounce | SandboxControllerBounce:
    """What the manager's `bounce()` says, as its engine's payload."""
    if _controller(doc):
        return SandboxControllerBounce(doc["id"], doc["role"], doc["controller"], doc["pid"], doc["log_end_offset"],
                                       old_pid=doc["old_pid"], stop_seconds=doc["stop_seconds"])
    if "pid" in doc:
        return SandboxKafkaBounce(doc["id"], doc["old_epoch"], doc["new_epoch"], doc["controller"],
                                  old_pid=doc["old_pid"], pid=doc["pid"], stop_seconds=doc["stop_seconds"])
    return SandboxBounce(doc["id"], doc["old_epoch"], doc["new_epoch"], doc["controller"])


def sandbox_kill(doc: Mapping[str, Any]) -> SandboxKill | SandboxControllerKill:
    """What the manager's `kill()` says, as its engine's payload."""
    if _controller(doc):
        return SandboxControllerKill(doc["id"], doc["role"], doc["controller"], doc["pid"], doc["hard"],
                                     doc["stop_seconds"])
    if "pid" in doc:
        return SandboxKafkaKill(doc["id"], doc["old_epoch"], doc["controller"], pid=doc["pid"], hard=doc["hard"],
                                stop_seconds=doc["stop_seconds"])
    return SandboxKill(doc["id"], doc["old_epoch"], doc["controller"])


def sandbox_start(doc: Mapping[str, Any]) -> SandboxStart | SandboxControllerStart:
    """What the manager's `start()` says, as its engine's payload."""
    if _controller(doc):
        return SandboxControllerStart(doc["id"], doc["role"], doc["controller"], doc["pid"], doc["log_end_offset"])
    if "pid" in doc:
        return SandboxKafkaStart(doc["id"], doc["new_epoch"], doc["controller"], pid=doc["pid"])
    return SandboxStart(doc["id"], doc["new_epoch"], doc["controller"])


# ---------------------------------------------------------------------------- roll (issue 23)
@dataclass(frozen=True)
class RollPlanNode(Payload):
    """One node of `roll plan`: its place (`batch`, 1-based), its steps, and whether --only-if skips it
    (None: no --only-if)."""

    node: int
    role: str
    host: str | None
    port: int | None
    rack: str | None
    batch: int
    steps: tuple[str, ...]
    skip: bool | None
    unavailable: tuple[str, ...] = ()  # what --allow-unavailable lets become unavailable while it restarts


@dataclass(frozen=True)
class RollPlan(Payload):
    """`roll plan`: the order and batches a `roll run` would start with (recomputed before each batch), and
    whether the cluster is healthy enough to begin (`healthy`; `unhealthy` says why not)."""

    mode: str
    cluster_id: str | None
    leader: int | None
    controllers: str
    parallel: int
    batch_rule: str
    allow_unavailable: tuple[str, ...]
    batches: tuple[tuple[int, ...], ...]
    nodes: tuple[RollPlanNode, ...]
    healthy: bool
    unhealthy: tuple[str, ...]


@dataclass(frozen=True)
class RollStepTime(Payload):
    step: str
    elapsed_s: float


@dataclass(frozen=True)
class RollNodeResult(Payload):
    """One node of a roll's result or status. `status`: done, skipped, in_progress, failed or pending; `step`:
    the last step it reached (None: untouched); epochs where the mode shows them (ZooKeeper)."""

    node: int
    role: str
    status: str
    phase: str
    step: str | None
    steps: tuple[RollStepTime, ...]
    old_epoch: int | None
    new_epoch: int | None
    started_at: str | None
    finished_at: str | None
    elapsed_s: float | None


@dataclass(frozen=True)
class RollFailure(Payload):
    node: int | None
    step: str | None
    reason: str  # gate_not_met, cannot_tell, hook_failed, refused, interrupted, unreachable, error
    message: str
    exit_code: int
    down: tuple[int, ...] = ()  # nodes left stopped (or possibly stopped: a stop hook begun, no receipt since)
    drained: tuple[int, ...] = ()  # nodes left drained


@dataclass(frozen=True)
class RollConfirm(Payload):
    """`roll confirm`: what the operator said of a node, and its phase before and after."""

    state_dir: str
    node: int
    went_down: bool
    phase_before: str
    phase_after: str


@dataclass(frozen=True)
class RollPause(Payload):
    """`roll pause` / `roll continue`: the state directory, whether it is paused now, and whether this changed it."""

    state_dir: str
    paused: bool
    changed: bool


@dataclass(frozen=True)
class RollReport(Payload):
    """`roll run` (the final result) and `roll status`: the roll in the state directory. `status`: done,
    failed (resumable: run the same command again), interrupted, refused (nothing touched), window_closed
    (`--until` passed: run the same command again, without it or with a new window), or running / paused
    (status only: another `roll run` holds the directory; paused: until `roll continue`)."""

    state_dir: str
    cluster_id: str | None
    mode: str | None
    status: str
    nodes: tuple[RollNodeResult, ...]
    failure: RollFailure | None
    started_at: str | None
    finished_at: str | None
    elapsed_s: float | None
