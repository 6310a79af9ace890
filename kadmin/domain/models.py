"""Domain shapes: frozen dataclasses, independent of any client library."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal


@dataclass(frozen=True)
class Stat:
    """A ZooKeeper znode Stat, with Kafka's names for what matters (czxid is the broker epoch)."""

    czxid: int
    mzxid: int
    ctime: int
    mtime: int
    version: int
    cversion: int
    aversion: int
    ephemeral_owner: int
    data_length: int
    num_children: int
    pzxid: int

    def as_dict(self) -> dict[str, int | str]:
        return {
            "czxid": self.czxid,
            "mzxid": self.mzxid,
            "ctime": self.ctime,
            "mtime": self.mtime,
            "version": self.version,
            "cversion": self.cversion,
            "aversion": self.aversion,
            "ephemeral_owner": f"0x{self.ephemeral_owner:x}",
            "data_length": self.data_length,
            "num_children": self.num_children,
            "pzxid": self.pzxid,
        }


@dataclass(frozen=True)
class Registration:
    """The JSON of /brokers/ids/<id> (BrokerIdZNode versions 1-5), decoded."""

    version: int
    host: str | None
    port: int
    endpoints: tuple[str, ...]
    listener_security_protocol_map: Mapping[str, str]
    jmx_port: int
    timestamp_ms: int | None
    rack: str | None = None
    features: Mapping[str, Mapping[str, int]] = field(default_factory=dict)


BrokerState = Literal["registered", "invalid", "active", "fenced"]


@dataclass(frozen=True)
class Broker:
    """One live broker registration: its id, its decoded JSON (None when invalid) and its znode Stat."""

    id: int
    stat: Stat
    raw: bytes
    registration: Registration | None
    error: str | None = None
    is_controller: bool = False

    @property
    def epoch(self) -> int:
        """KIP-380's broker epoch: the czxid of the registration znode."""
        return self.stat.czxid

    @property
    def session(self) -> int:
        return self.stat.ephemeral_owner

    @property
    def state(self) -> BrokerState:
        return "registered" if self.registration is not None else "invalid"


@dataclass(frozen=True)
class Registered:
    """One broker registration as both modes show it. ZooKeeper mode: the registration znode (`broker`),
    its czxid as the broker `epoch` (KIP-380) and its mzxid (a changed registration); `fenced` is None,
    as ZooKeeper mode has no such state. KRaft over the Kafka protocol (DescribeCluster): `fenced`
    (KIP-631), host, port and rack; `epoch` is None, as DescribeCluster serves none."""

    id: int
    host: str | None = None
    port: int | None = None
    rack: str | None = None
    epoch: int | None = None
    fenced: bool | None = None
    mzxid: int | None = None
    broker: Broker | None = None


@dataclass(frozen=True)
class Controller:
    """The content of /controller (ControllerZNode v1/v2)."""

    broker_id: int
    version: int
    timestamp_ms: int | None
    kraft_controller_epoch: int


@dataclass(frozen=True)
class Generation:
    """What watch compares between two reads: the epoch (czxid) and the last modification (mzxid)."""

    epoch: int
    mzxid: int


@dataclass(frozen=True)
class MinIsrConfig:
    """Every level min.insync.replicas can come from, in Kafka's order of precedence: the topic's own
    value (/config/topics/<t>), the dynamic per-broker value of the partition's leader
    (/config/brokers/<id>), the dynamic cluster default (/config/brokers/<default>), and the brokers'
    static server.properties value (not in ZooKeeper: `--min-isr-default`). None: not set there."""

    topic: int | None = None
    brokers: tuple[tuple[int, int], ...] = ()  # (broker id, value), sorted by id
    cluster_default: int | None = None
    static: int = 1
    # Brokers whose own levels (dynamic per-broker and static value) could not be read, with why (KRaft:
    # their DescribeConfigs failed or was never asked): a partition they may lead has an unknown min ISR,
    # unless the operator stated one (`default`, from --min-isr-default; source "default").
    unknown: tuple[tuple[int, str], ...] = ()
    default: int | None = None

    def unknown_why(self, broker: int) -> str | None:
        """Why `broker`'s own min.insync.replicas levels are unknown (None: known)."""
        if not self.unknown:  # the usual case, asked once or twice per partition by a scan's judging
            return None
        return next((why for b, why in self.unknown if b == broker), None)


@dataclass(frozen=True)
class Coverage:
    """What proves that a verdict saw every partition it depends on (KRaft, where a principal sees only the
    topics it may Describe): the partitions each broker hosts on disk, as its DescribeLogDirs lists them
    whatever the topic ACLs (it needs Describe on the Cluster resource), and the brokers whose log dirs
    could not be listed, with why and what would let kadmin list them. ZooKeeper mode has none (None):
    /brokers/topics lists every topic to whoever can read it."""

    hosted: dict[int, frozenset[tuple[str, int]]]  # broker id -> (topic, partition) in its log dirs
    unread: dict[int, str]  # broker id -> why its log dirs could not be listed
    listed: frozenset[int] = frozenset()  # the brokers DescribeCluster lists (registered; fenced too from v2)
    refused: frozenset[int] = frozenset()  # of `unread`, those that refused the principal: asking again will not help


@dataclass(frozen=True)
class PartitionState:
    """One partition: its assignment (topic znode) and its state (the state znode).

    `leader` is None when the state znode is missing or unreadable (then `problem` says why);
    `partition_epoch` is the state znode's dataVersion, Kafka's partition epoch.
    `min_isr` is the configured min.insync.replicas that applies now (the leader's, see MinIsrConfig),
    `min_isr_source` where it came from; `min_isr_config` (when known) gives the value under any
    other leader. `deleting`: the topic is queued in /admin/delete_topics.
    `elr` / `last_known_elr`: KIP-966's eligible leader replicas and last known ELR (DescribeTopicPartitions,
    Kafka 4.x with eligible.leader.replicas.version >= 1); None where the backend does not have them
    (ZooKeeper mode, brokers answering only Metadata).
    """

    topic: str
    partition: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...] = ()
    leader: int | None = None
    leader_epoch: int | None = None
    partition_epoch: int | None = None
    controller_epoch: int | None = None
    leader_recovery_state: int = 0
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()
    min_isr: int = 1
    topic_id: str | None = None
    problem: str | None = None
    min_isr_source: str = "default"
    min_isr_config: MinIsrConfig | None = None
    deleting: bool = False
    elr: tuple[int, ...] | None = None
    last_known_elr: tuple[int, ...] | None = None
    # `problem` is only that its min.insync.replicas could not be read (the partition itself was): a verdict needs
    # the value only when the ISR is short of a replica (with every replica in sync, no min ISR Kafka enforces,
    # min(min ISR, replica count), is missed)
    min_isr_unread: bool = False


_ROW_FIELDS: dict[str, object] = {}  # every PartitionState field's default (None for the three without), on first use
_ROW_NEEDED: set[str] = set()  # the fields without a default


def partition_row(**fields: object) -> PartitionState:
    """PartitionState(**fields), made at the cost of one dict: a frozen dataclass's `__init__` sets each field with
    its own `object.__setattr__` call (20 fields: ~4-7 µs a row on the project's busy 2-core machines, ~2-3 µs
    this way), and a KRaft scan makes 20,000 rows at once. The same row: equal, the same hash, as immutable; a
    name that is no field, or a field without a default left out, is a TypeError, as in PartitionState()."""
    if not _ROW_FIELDS:
        from dataclasses import MISSING
        from dataclasses import fields as of

        _ROW_NEEDED.update(f.name for f in of(PartitionState) if f.default is MISSING)
        _ROW_FIELDS.update({f.name: None if f.default is MISSING else f.default for f in of(PartitionState)})
    if not _ROW_NEEDED <= fields.keys() <= _ROW_FIELDS.keys():
        unknown, missing = sorted(fields.keys() - _ROW_FIELDS.keys()), sorted(_ROW_NEEDED - fields.keys())
        raise TypeError(f"PartitionState: no field {unknown[0]!r}" if unknown else f"PartitionState: {missing[0]!r} "
                        "missing")
    row = object.__new__(PartitionState)
    state = row.__dict__
    state.update(_ROW_FIELDS)
    state.update(fields)
    return row
