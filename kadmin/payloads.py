"""Each command's typed payload: the command's JSON contract in one place (issue 21).

A payload is a frozen dataclass whose fields are the keys of the command's JSON object, in order
(kadmin.results.Payload: `to_json()` is the JSON form; a key that is there only sometimes is said in the
payload's own `to_json()`). Services build them, views read their fields, the renderer prints their JSON
form. Here, below both services and render (which may not import each other), for `brokers`, `partitions`,
`quorum`, `cluster` and `ids`, with the pieces they share; the other command groups (`history`, `sandbox`) have
theirs in kadmin/payloads_ops.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kadmin.results import Payload


# ---------------------------------------------------------------------------- pieces the payloads share
@dataclass(frozen=True)
class TopicPartition(Payload):
    topic: str
    partition: int


@dataclass(frozen=True)
class UnseenBroker(Payload):
    """A broker whose log dirs could not be listed (KRaft), and why: what would let kadmin list them."""

    broker_id: int
    reason: str


@dataclass(frozen=True)
class UnseenPartition(Payload):
    """A partition the broker's log dirs list that the principal cannot see (`brokers wait --in-sync`)."""

    broker_id: int
    topic: str
    partition: int
    reason: str


# ---------------------------------------------------------------------------- brokers
@dataclass(frozen=True)
class BrokerRow(Payload):
    """A `brokers list` row in both modes: a registration znode (ZooKeeper mode), or what DescribeCluster
    serves with the same keys (KRaft: no epoch, version, JMX port, listener names, features, session or
    controller: null or empty; `state` fenced or active)."""

    id: int
    host: str | None
    port: int | None
    rack: str | None
    endpoints: tuple[str, ...]
    listener_security_protocol_map: Mapping[str, str]
    jmx_port: int | None
    version: int | None
    timestamp_ms: int | None
    features: Mapping[str, Mapping[str, int]]
    epoch: int | None
    session: str | None  # the registration's ZooKeeper session, 0x-hex
    is_controller: bool | None
    state: str


@dataclass(frozen=True)
class LoggedBrokerRow(BrokerRow):
    """A `brokers list --metadata-dir` row: the keys of `brokers list`, then what the metadata log adds."""

    incarnation_id: str | None
    fenced: bool
    in_controlled_shutdown: bool
    offset: int | None  # the RegisterBrokerRecord's log offset; None when it came from a snapshot
    source: str  # "log" or "snapshot"


@dataclass(frozen=True)
class BrokerShow(Payload):
    """`brokers show`: the `brokers list` row's keys, then the znode's path, raw text and stat, and `error`
    (only when the registration does not parse)."""

    broker: BrokerRow
    path: str
    raw: str
    stat: Mapping[str, int | str]
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {**self.broker.to_json(), "path": self.path, "raw": self.raw, "stat": dict(self.stat)}
        if self.error:
            out["error"] = self.error
        return out


@dataclass(frozen=True)
class MaxEpoch(Payload):
    max_broker_epoch: int | None
    broker_id: int | None
    brokers: int


@dataclass(frozen=True)
class Bounced(Payload):
    id: int
    old_epoch: int
    new_epoch: int


@dataclass(frozen=True)
class Reincarnated(Bounced):
    """A bounce between two KRaft listings: with each side's incarnation id (None when a side does not know it)."""

    old_incarnation_id: str | None
    new_incarnation_id: str | None


@dataclass(frozen=True)
class BrokersDiff(Payload):
    new: tuple[int, ...]
    dead: tuple[int, ...]
    bounced: tuple[Bounced, ...]
    unchanged: tuple[int, ...]
    # the two listings' epochs by broker id, so a dead broker shows its last epoch and a new one its first
    old_epochs: Mapping[int, int]
    new_epochs: Mapping[int, int]


@dataclass(frozen=True)
class BrokerEvent(Payload):
    """A `brokers watch` event (one NDJSON line). ZooKeeper mode: registered, deregistered, bounced, updated."""

    event: str
    id: int
    epoch: int | None
    old_epoch: int | None
    at: str  # ISO 8601, UTC, milliseconds


@dataclass(frozen=True)
class FencingEvent(BrokerEvent):
    """A KRaft event (DescribeCluster: no epoch): registered, unregistered, fenced, unfenced, endpoint_changed;
    `old_endpoint` only in endpoint_changed."""

    fenced: bool | None
    endpoint: str
    old_endpoint: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = super().to_json()
        if self.old_endpoint is None:
            del out["old_endpoint"]
        return out


@dataclass(frozen=True)
class BrokerWait(Payload):
    """`brokers wait --registered/--gone/--epoch-gt/--fenced/--unfenced`. `fenced` is a key only when the
    registrations have a fenced state (`fencing`: KRaft); `fencing` itself is no key."""

    broker_id: int
    condition: str
    met: bool
    epoch: int | None
    fenced: bool | None
    waited_ms: int
    fencing: bool = False

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"broker_id": self.broker_id, "condition": self.condition, "met": self.met,
                               "epoch": self.epoch}
        if self.fencing:
            out["fenced"] = self.fenced
        out["waited_ms"] = self.waited_ms
        return out


@dataclass(frozen=True)
class Unregistered(Payload):
    """`brokers unregister`: `was` fenced, active or None (not listed); `dry_run` is a key only with --dry-run."""

    broker_id: int
    unregistered: bool
    was: str | None
    dry_run: bool = False

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = super().to_json()
        if not self.dry_run:
            del out["dry_run"]
        return out


# ---------------------------------------------------------------------------- partitions
@dataclass(frozen=True)
class PartitionRow(Payload):
    """A `partitions list` row."""

    topic: str
    partition: int
    leader: int | None
    leader_epoch: int | None
    partition_epoch: int | None
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    adding_replicas: tuple[int, ...]
    removing_replicas: tuple[int, ...]
    min_isr: int
    topic_id: str | None
    # added keys: where min_isr comes from ("topic", "broker:<id>", "cluster-default", "static" as the
    # brokers report it, "default" as --min-isr-default states it, or "unknown"),
    # what the leader enforces (min(min_isr, replicas), Kafka 3.7+),
    # and whether the topic is queued for deletion (left out of `check` and `can-stop`)
    min_isr_source: str
    effective_min_isr: int
    deleting: bool
    # KIP-966 (DescribeTopicPartitions, Kafka 4.x): eligible leader replicas and the last known ELR;
    # None where the backend does not have them (ZooKeeper mode, brokers answering only Metadata)
    elr: tuple[int, ...] | None
    last_known_elr: tuple[int, ...] | None

    def to_json(self) -> dict[str, Any]:  # written out: a listing may have a million rows
        return {
            "topic": self.topic,
            "partition": self.partition,
            "leader": self.leader,
            "leader_epoch": self.leader_epoch,
            "partition_epoch": self.partition_epoch,
            "replicas": list(self.replicas),
            "isr": list(self.isr),
            "adding_replicas": list(self.adding_replicas),
            "removing_replicas": list(self.removing_replicas),
            "min_isr": self.min_isr,
            "topic_id": self.topic_id,
            "min_isr_source": self.min_isr_source,
            "effective_min_isr": self.effective_min_isr,
            "deleting": self.deleting,
            "elr": None if self.elr is None else list(self.elr),
            "last_known_elr": None if self.last_known_elr is None else list(self.last_known_elr),
        }


@dataclass(frozen=True)
class CheckFinding(Payload):
    topic: str
    partition: int | None  # None: the whole topic (it could not be read)
    reasons: tuple[str, ...]


@dataclass(frozen=True)
class PartitionsCheck(Payload):
    status: str  # the verdict: ok, warning, critical, unknown
    partitions: int
    findings: tuple[CheckFinding, ...]
    deleting: tuple[str, ...]  # topics queued for deletion: not checked, as Kafka's controller skips them
    # added: brokers whose log dirs could not be listed (KRaft), so the check cannot show it saw every partition
    unseen: tuple[UnseenBroker, ...]


@dataclass(frozen=True)
class Blocked(Payload):
    topic: str
    partition: int | None  # None: the whole topic (unreadable: it may or may not host the broker)
    reason: str


@dataclass(frozen=True)
class CanStop(Payload):
    """`brokers can-stop`'s verdict (also in `brokers shutdown`'s refusal and dry run)."""

    broker_id: int
    safe: bool
    hosted_partitions: int
    blocking: tuple[Blocked, ...]
    never_satisfiable: tuple[Blocked, ...]  # kept for the contract: always empty since Kafka 3.7 (KAFKA-15583)
    # added (KRaft): the broker's log dirs could not be listed, so not every partition it hosts was seen
    unseen: tuple[UnseenBroker, ...]


@dataclass(frozen=True)
class InSync(Payload):
    """`brokers wait --in-sync`."""

    broker_id: int
    in_sync: bool
    hosted_partitions: int
    waiting: tuple[TopicPartition, ...]
    waited_ms: int
    # added: whether the broker may lead (KRaft: unfenced), and what kept the wait from seeing every partition
    # the broker hosts (its log dirs not listed; a partition its log dirs list, not visible)
    live: bool
    unseen: tuple[UnseenBroker | UnseenPartition, ...]


# ---------------------------------------------------------------------------- brokers shutdown
@dataclass(frozen=True)
class ShutdownRequest(Payload):
    """What `brokers shutdown --dry-run` would send."""

    api_key: int
    versions: str
    broker_id: int
    broker_epoch: int
    controller: str  # host:port


@dataclass(frozen=True)
class Shutdown(Payload):
    """`brokers shutdown`'s keys in every outcome; each outcome adds its own (the subclasses)."""

    broker_id: int
    broker_epoch: int
    controller_id: int | None
    attempts: int
    remaining_partitions: tuple[TopicPartition, ...]
    error: str | None


@dataclass(frozen=True)
class ShutdownRefused(Shutdown):
    """Refused before anything was sent: can-stop says no (error UNSAFE)."""

    can_stop: CanStop


@dataclass(frozen=True)
class ShutdownDryRun(Shutdown):
    dry_run: bool
    request: ShutdownRequest
    can_stop: CanStop | None  # None with --force (no verdict asked for)


@dataclass(frozen=True)
class ShutdownSent(Shutdown):
    """Sent: `epoch_fenced` is None until a controller answered (False for ControlledShutdown v0/v1);
    `isr_only_this_broker` is a key only when the broker still leads partitions at the end."""

    shutting_down_until_restart: bool
    epoch_fenced: bool | None
    isr_only_this_broker: tuple[TopicPartition, ...] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = super().to_json()
        if self.isr_only_this_broker is None:
            del out["isr_only_this_broker"]
        return out


# ---------------------------------------------------------------------------- brokers drain / undrain
@dataclass(frozen=True)
class Reorder(Payload):
    topic: str
    partition: int
    replicas: tuple[int, ...]
    new_replicas: tuple[int, ...]


@dataclass(frozen=True)
class MoveRefused(Payload):
    """A partition whose reassignment or election the cluster refused, and its error."""

    topic: str
    partition: int
    error: str


@dataclass(frozen=True)
class NotPreferred(Payload):
    topic: str
    partition: int
    preferred: int
    leader: int  # -1: none
    preferred_in_sync: bool


@dataclass(frozen=True)
class Drain(Payload):
    """`brokers drain`: `led_after` is a key only once the leaders were moved (not refused, not --dry-run)."""

    drain_version: int
    broker_id: int
    mode: str
    dry_run: bool
    file: str | None  # None with --dry-run
    hosted: int
    led_before: int
    reorder: tuple[Reorder, ...]
    elect: tuple[TopicPartition, ...]
    in_flight: tuple[TopicPartition, ...]
    skipped: tuple[TopicPartition, ...]
    only_isr: tuple[TopicPartition, ...]
    sole_replica: tuple[TopicPartition, ...]
    refused: tuple[MoveRefused, ...]
    remaining: tuple[TopicPartition, ...]
    led_after: int | None = None
    # submitted partitions another reassignment changed during the drain (issue 22); with led_after only
    changed_by_others: tuple[TopicPartition, ...] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = super().to_json()
        if self.led_after is None:
            del out["led_after"]
        if self.changed_by_others is None:
            del out["changed_by_others"]
        return out


@dataclass(frozen=True)
class Undrain(Payload):
    """`brokers undrain`: `led_after` is a key only once the order was restored (not refused, not --dry-run)."""

    drain_version: int
    broker_id: int
    mode: str
    dry_run: bool
    file: str
    saved: int
    restore: tuple[Reorder, ...]
    already: tuple[TopicPartition, ...]
    changed: tuple[TopicPartition, ...]
    gone: tuple[TopicPartition, ...]
    in_flight: tuple[TopicPartition, ...]
    skipped: tuple[TopicPartition, ...]
    elect: tuple[TopicPartition, ...]
    refused: tuple[MoveRefused, ...]
    not_preferred: tuple[NotPreferred, ...]
    led_after: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = super().to_json()
        if self.led_after is None:
            del out["led_after"]
        return out


# ---------------------------------------------------------------------------- quorum
@dataclass(frozen=True)
class Latency(Payload):
    """A ZooKeeper member's request latency (`srvr`), in ms; None where it did not say."""

    min: float | None
    avg: float | None
    max: float | None


@dataclass(frozen=True)
class EnsembleMember(Payload):
    """ZooKeeper mode: what a member's four-letter words said (a quorum replica's `zookeeper` object). A member
    that did not answer has these keys only (`error` says why); one that answered is a `ServingMember`."""

    address: str
    mode: str | None  # leader, follower, observer, standalone
    error: str | None


@dataclass(frozen=True)
class ServingMember(EnsembleMember):
    zxid: str  # 0x-hex
    zxid_epoch: int
    older_epoch: bool  # on an older zxid epoch than the leader's: its lag is unknown
    latency_ms: Latency
    outstanding: int | None


@dataclass(frozen=True)
class QuorumReplica(Payload):
    """A voter or observer of `quorum describe`; `zookeeper` is a key only in ZooKeeper mode."""

    id: int
    directory_id: str | None  # None: the zero Uuid (kafka-metadata-quorum: AAAAAAAAAAAAAAAAAAAAAA)
    log_end_offset: int
    lag: int | None  # None: no leader, down, or (ZooKeeper) on an older zxid epoch
    last_fetch_timestamp: int | None
    last_caught_up_timestamp: int | None
    status: str  # Leader, Follower, Observer, Down
    endpoints: tuple[str, ...]
    zookeeper: EnsembleMember | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = super().to_json()
        if self.zookeeper is None:
            del out["zookeeper"]
        return out


@dataclass(frozen=True)
class QuorumDescription(Payload):
    """`quorum describe` (and `quorum check`'s `quorum`). The max follower lag is None without a leader.
    `mode` is a key only in ZooKeeper mode ("mode": "zookeeper")."""

    cluster_id: str | None
    leader_id: int  # -1: none
    leader_epoch: int
    high_watermark: int
    max_follower_lag: int | None
    max_follower_lag_time_ms: int | None
    voters: tuple[QuorumReplica, ...]
    observers: tuple[QuorumReplica, ...]
    mode: str = "kraft"  # or "zookeeper"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = super().to_json()
        if self.mode != "zookeeper":
            del out["mode"]
        return out


@dataclass(frozen=True)
class QuorumFinding(Payload):
    level: str  # WARNING, CRITICAL
    code: str
    message: str


@dataclass(frozen=True)
class QuorumClock(Payload):
    """What `quorum check` measured ages against: the leader's clock (DescribeQuorum v1+) or this machine's."""

    source: str  # leader, local
    now_ms: int
    local_skew_ms: int | None  # this machine's clock minus the leader's; None on the local clock
    check_quorum_ms: int


@dataclass(frozen=True)
class QuorumCheck(Payload):
    status: str  # the verdict: ok, warning, critical
    findings: tuple[QuorumFinding, ...]
    clock: QuorumClock
    quorum: QuorumDescription


# ---------------------------------------------------------------------------- cluster
@dataclass(frozen=True)
class ClusterId(Payload):
    cluster_id: str
    source: str  # where it was read: ZooKeeper's /cluster/id, or DescribeCluster


@dataclass(frozen=True)
class MetaPropertiesFile(Payload):
    """A `cluster check-id` file: what its meta.properties says; `match` None when it names no cluster id (or
    could not be read: then `error` says why, and the file's keys are None)."""

    path: str
    version: int | None
    node_id: int | None
    cluster_id: str | None
    match: bool | None
    error: str | None


@dataclass(frozen=True)
class ClusterIdCheck(Payload):
    cluster_id: str
    files: tuple[MetaPropertiesFile, ...]


# ---------------------------------------------------------------------------- ids
@dataclass(frozen=True)
class IdDecision(Payload):
    """`ids resolve`: the broker id the host should use and the rule that decided it (docs/ids.md)."""

    broker_id: int
    rule: str
    host: str
    missing_ids: tuple[int, ...]
    detail: str


@dataclass(frozen=True)
class IdClaim(IdDecision):
    """`ids claim`: the decision, the writes of its one multi and how many attempts it took (0: none sent).
    `dry_run` is a key only when nothing was written: with --dry-run, or with nothing to write (False)."""

    writes: tuple[str, ...]
    attempts: int
    dry_run: bool | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = super().to_json()
        if self.dry_run is None:
            del out["dry_run"]
        return out


@dataclass(frozen=True)
class MissingId(Payload):
    """`ids missing`: an id some replica assignment names that is not registered, and the host mapped to it."""

    broker_id: int
    partitions: int
    mapped_host: str | None
    assignments: tuple[TopicPartition, ...]


@dataclass(frozen=True)
class HostMapping(Payload):
    """`ids hosts`: a /brokers/hosts mapping, and whether (and from where) its id is registered now."""

    host: str
    broker_id: int
    registered: bool
    registered_from: str | None


@dataclass(frozen=True)
class Mapped(Payload):
    """`ids map`: `dry_run` is a key only with --dry-run, `previous` (the id it mapped to, None: no mapping)
    only once it changed."""

    host: str
    broker_id: int
    changed: bool
    dry_run: bool = False
    previous: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = super().to_json()
        if not self.dry_run:
            del out["dry_run"]
        if not self.changed:
            del out["previous"]
        return out


@dataclass(frozen=True)
class Unmapped(Payload):
    """`ids unmap`: the id the host mapped to; an invalid mapping has none (None) and says why (`invalid`, a key
    only then). `dry_run` is a key only with --dry-run."""

    host: str
    broker_id: int | None
    invalid: str | None = None
    dry_run: bool = False

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = super().to_json()
        if self.invalid is None:
            del out["invalid"]
        if not self.dry_run:
            del out["dry_run"]
        return out


@dataclass(frozen=True)
class StaleMapping(Payload):
    """`ids gc`: a mapping host -> N while broker N is registered from another host, and whether it was deleted."""

    host: str
    broker_id: int
    registered_from: str
    deleted: bool
