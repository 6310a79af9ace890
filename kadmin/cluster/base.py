"""The seam between the services and a cluster: typed capabilities, and the Backend that holds a mode's.

A service names in its signature the capability it needs (a Protocol below: Partitions, Registrations,
BrokerEpochs, LeadershipMoves, ControllerLinks, BrokerIds, QuorumSource, Unregistration, FeatureFlags,
MigrationSource, ClusterIdentity). kadmin/cluster/connect.py's `open_backend` decides the mode, once, and builds a
Backend whose properties hand out that mode's implementations, opened on first use. A capability the
mode (or the address given) lacks is absent: asking for it raises the one exit-3 error naming the
command and what to use instead. Implementations return domain values, never library objects. The rarer
capabilities' value types are defined in kadmin/cluster/values.py and named here: a gate does not create them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol, TypeVar

from kadmin.errors import ConfigError
from kadmin.results import Problem, Progress

if TYPE_CHECKING:  # annotations only: a gate that reads registrations does not build the drain's or quorum's types
    from kadmin.cluster.values import (  # noqa: F401 - KraftBroker: named through here too
        ClusterDescription,
        IdState,
        KraftBroker,
        QuorumSetting,
        ShutdownReply,
    )
    from kadmin.domain.drain import Key, PartitionView, Unknown
    from kadmin.domain.features import FeatureState
    from kadmin.domain.lease import Holder, LeaseTry
    from kadmin.domain.migration import Observation
    from kadmin.domain.models import Broker, Controller, Coverage, Generation, PartitionState, Registered, Stat
    from kadmin.domain.quorum import QuorumState
    from kadmin.domain.roll_estimate import UpdateMetadataSizes


@dataclass(frozen=True)
class BrokerListing:
    brokers: list[Broker]
    controller: Controller | None
    problems: list[Problem] = field(default_factory=list)


@dataclass(frozen=True)
class Znode:
    path: str
    data: bytes | None
    stat: Stat


@dataclass(frozen=True)
class WatchTick:
    """The live broker generations at one moment; `resynced` after a reconnect or new session."""

    generations: dict[int, Generation]
    resynced: bool = False
    reason: str = "change"


@dataclass(frozen=True)
class PartitionScan:
    partitions: list[PartitionState]
    live: frozenset[int]
    problems: list[Problem] = field(default_factory=list)
    # topics whose znode could not be read (name -> why): their partitions are unknown, so every
    # verdict that could depend on them (can-stop, check) must treat them as blocking
    unreadable: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class PartitionStream:
    """A PartitionScan whose partitions arrive as they are read (ZkCluster.iter_partitions), so a verdict
    over a million of them keeps only what it needs. `problems` grows while `partitions` is consumed:
    read it after. One stream at a time per cluster, consumed (or closed) before the next read."""

    partitions: Iterator[PartitionState]
    live: frozenset[int]
    problems: list[Problem] = field(default_factory=list)
    unreadable: dict[str, str] = field(default_factory=dict)


class Contention(Exception):
    """A conditional write lost a race (a version or existence check failed): read again and retry."""


Mode = Literal["zookeeper", "kraft"]
# a Problem code that is a warning, not a read error: no broker answered DescribeConfigs, so min ISR
# came from ZooKeeper and --min-isr-default (ZooKeeper mode with --bootstrap-server)
MIN_ISR_FALLBACK = "min_isr_fallback"
Note = Callable[[str], None]


@dataclass(frozen=True)
class RegistrationTick:
    """The registered brokers at one moment (`resynced`: read again whole after a lost connection).
    `fencing`: "none" in ZooKeeper mode (no such state), "listed" when fenced brokers are listed with
    their state (DescribeCluster v2+), "unlisted" when only unfenced ones are (DescribeCluster v0-v1)."""

    brokers: dict[int, Registered]
    fencing: Literal["none", "listed", "unlisted"]
    version: int | None = None  # the DescribeCluster version (KRaft)
    problems: list[Problem] = field(default_factory=list)
    resynced: bool = False


def error_name(code: int) -> str:
    """Kafka's name for an error code (`STALE_BROKER_EPOCH`), read from kafka-python on first use."""
    from kadmin.cluster.kafka import error_name as name

    return name(code)


def update_metadata_sizes(partitions: Sequence[PartitionState], brokers: Sequence[Registered]) -> UpdateMetadataSizes:
    """The encoded sizes of a full UpdateMetadata request's entries for these partitions and live brokers, from the
    request's schema (kadmin/cluster/update_metadata.py, on kafka-python's message classes, loaded on first use)."""
    from kadmin.cluster.update_metadata import sizes

    return sizes(partitions, brokers)


QUORUM_FETCH_TIMEOUT = "controller.quorum.fetch.timeout.ms"


# ---------------------------------------------------------------------------------------------- capabilities
class Partitions(Protocol):
    """Partition state, live brokers and the controller: both modes (KRaft: through brokers)."""

    mode: str
    description: str

    # min_isr_default: the operator's --min-isr-default (None: not given). ZooKeeper mode takes it (else 1) as
    # the brokers' static level, which ZooKeeper does not keep; KRaft only for a broker whose levels it cannot read
    def scan_partitions(self, topics: Sequence[str] | None = None, progress: Progress | None = None,
                        min_isr_default: int | None = None) -> PartitionScan: ...

    # The same, handed over as it is read, so a verdict over a million partitions keeps only what it needs
    def iter_partitions(self, topics: Sequence[str] | None = None, progress: Progress | None = None,
                        min_isr_default: int | None = None) -> PartitionStream: ...

    # What proves a scan saw every partition (read before the scan): the partitions each of `brokers` (None:
    # every registered broker) hosts on disk, whatever the principal may Describe. None: the scan is complete by
    # construction (ZooKeeper lists every topic to whoever can read /brokers/topics).
    def coverage(self, brokers: Sequence[int] | None = None) -> Coverage | None: ...

    # The registered brokers that may lead (ZooKeeper: registered; KRaft: registered and unfenced), read now
    def live_brokers(self, fresh: bool = True) -> frozenset[int]: ...

    # watch_states yields every key's ISR now, then as it changes (ZooKeeper: watches; KRaft: polling with
    # backoff); None for a partition that cannot be read. A key whose ISR is `settled` is yielded that once
    # and no longer followed (neither re-read nor polled).
    def watch_states(self, keys: Sequence[tuple[str, int]], timeout: float | None,
                     settled: Callable[[tuple[int, ...]], bool] | None = None,
                     ) -> Iterator[list[tuple[tuple[str, int], tuple[int, ...] | None]]]: ...

    def cluster_id(self) -> str | None: ...

    def controller(self) -> tuple[Controller | None, list[Problem]]: ...


class Registrations(Protocol):
    """Broker registrations in both modes (ZooKeeper: /brokers/ids and watches on it; KRaft: DescribeCluster
    with fenced brokers, polled with backoff). `epochs`: a registration carries its broker epoch;
    `fencing`: it carries a fenced state."""

    epochs: bool
    fencing: bool

    def registrations(self) -> RegistrationTick: ...

    # The registrations now, then as they change, until `timeout` (None: forever). The first read must
    # succeed; `on_note` hears how the changes are followed (KRaft: the polling interval, a failed poll).
    def watch_registrations(self, timeout: float | None, on_note: Note | None = None) -> Iterator[RegistrationTick]:
        ...


class BrokerEpochs(Protocol):
    """ZooKeeper mode: the registration znodes with their epochs (czxid) and /controller."""

    description: str

    def list_brokers(self) -> BrokerListing: ...

    def get_broker(self, broker_id: int) -> tuple[Broker | None, list[Problem]]: ...

    def watch_brokers(self, timeout: float | None) -> Iterator[WatchTick]: ...

    def controller(self) -> tuple[Controller | None, list[Problem]]: ...


class EpochsAndPartitions(BrokerEpochs, Partitions, Protocol):
    """What a ZooKeeper-mode controlled shutdown reads: the registrations, /controller and the partitions."""


class LeadershipMoves(Protocol):
    """Reorder replicas and elect preferred leaders (`brokers drain`/`undrain`): the Kafka protocol through
    brokers (AdminDrain), or Kafka's admin znodes in ZooKeeper mode (ZkDrain)."""

    mode: str  # how the moves are asked for, recorded in the drain file: "protocol" or "zookeeper"
    where: str
    unknown: tuple[Unknown, ...]  # what the last partitions() could not tell (a gate must not take it as none)

    def partitions(self, in_flight: bool = True) -> list[PartitionView]: ...

    def reassign(self, plan: Mapping[Key, tuple[int, ...]]) -> dict[Key, str]: ...

    def reassigned(self, keys: Iterable[Key]) -> bool: ...

    def elect_preferred(self, keys: Iterable[Key]) -> dict[Key, str]: ...

    # Whether a new election may be asked for now (ZooKeeper: /admin/preferred_replica_election is gone)
    def election_free(self) -> bool: ...

    # What the last partitions() could not show of what `brokers` host (KRaft: their log dirs list partitions of
    # topics the principal may not Describe, which Metadata leaves out; or the log dirs could not be listed):
    # a verdict on what they lead must not take them as none (ZooKeeper lists every topic: none)
    def unseen(self, brokers: Sequence[int]) -> list[Unknown]: ...

    # The cluster's leadership lease (kadmin/domain/lease.py): one try to take it for `holder` (now_ms: the wall
    # clock, for a stale one), and giving back the one taken (a warning when it could not be given back)
    lease_where: str

    def try_lease(self, holder: Holder, now_ms: int) -> LeaseTry: ...

    def release_lease(self) -> str | None: ...

    def close(self) -> None: ...


class ControllerLink(Protocol):
    def controlled_shutdown(self, broker_id: int, broker_epoch: int) -> ShutdownReply: ...

    def close(self) -> None: ...


class ControllerLinks(Protocol):
    """ZooKeeper mode: connections to the active controller for ControlledShutdown (API key 7)."""

    security_protocol: str

    def connect(self, address: str, node_id: int) -> ControllerLink: ...


class BrokerIds(Protocol):
    """ZooKeeper mode: broker-id assignment state (/brokers/hosts, /brokers/seqid) and its writes."""

    def id_state(self, with_assignments: bool = True, progress: Progress | None = None) -> IdState: ...

    # One ZooKeeper multi: bump /brokers/hosts (version-checked), optionally consume /brokers/seqid versions,
    # then create, update or (broker_id None) delete /brokers/hosts/<host>. Contention when a check fails.
    def write_mapping(self, host: str, broker_id: int | None, *, hosts_version: int, mapping_version: int | None,
                      seqid_version: int | None = None, seqid_steps: int = 1) -> None: ...


class QuorumSource(Protocol):
    """The metadata quorum: KRaft's DescribeQuorum, or the ZooKeeper ensemble's four-letter words."""

    # The quorum's voters are the cluster's own nodes (KRaft controllers, which a roll restarts), not servers of
    # another system (ZooKeeper's, which a roll never touches)
    voters_are_nodes: bool

    def describe_quorum(self) -> tuple[QuorumState, int]: ...

    # The voters' controller.quorum.fetch.timeout.ms (KRaft: the controllers' own, else a broker's, which carries the
    # same setting for its raft client); value None with why when it cannot be read. Raises only when the cluster
    # cannot be reached at all.
    def quorum_fetch_timeout(self) -> QuorumSetting: ...


class Unregistration(Protocol):
    """KRaft: UnregisterBroker (KIP-631), and the registrations to check first."""

    controllers: bool  # reached through --bootstrap-controller (which cannot list the brokers, KIP-919)

    def describe_brokers(self) -> ClusterDescription: ...

    def unregister_broker(self, broker_id: int) -> None: ...


class FeatureFlags(Protocol):
    """KRaft feature flags (KIP-584): the finalized levels (ApiVersions v3+) with every registered node's supported
    ranges (a node that could not be asked says why), and UpdateFeatures' upgrades (`validate_only`: checked by the
    controller, nothing changed)."""

    def feature_state(self) -> FeatureState: ...

    def update_features(self, levels: Mapping[str, int], validate_only: bool) -> None: ...


class MigrationSource(Protocol):
    """A ZooKeeper -> KRaft migration's sources (ZooKeeper, the controllers, the brokers; each as given) read at once;
    what could not be read is in the observation's `unread`, never raised, unless nothing at all could be asked."""

    def observe(self) -> Observation: ...


class ClusterIdentity(Protocol):
    source: str  # where the id is read: "zookeeper /cluster/id", "DescribeCluster"

    def cluster_id(self) -> str | None: ...


# The rarer capabilities' value types (kadmin/cluster/values.py), created when one is first named here
VALUES = ("IdState", "KraftBroker", "ClusterDescription", "QuorumSetting", "ShutdownReply")

if not TYPE_CHECKING:
    def __getattr__(name: str) -> type:
        if name not in VALUES:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        from kadmin.cluster import values

        cls = getattr(values, name)
        globals()[name] = cls
        return cls


# ---------------------------------------------------------------------------------------------- the backend
@dataclass(frozen=True)
class Missing:
    """Why a mode lacks a capability, for the exit-3 message: "<command> <why>; <instead>"."""

    why: str
    instead: str = ""
    code: str = "kraft_unsupported"

    def error(self, command: str) -> ConfigError:
        return ConfigError(f"{command} {self.why}" + (f"; {self.instead}" if self.instead else ""), code=self.code)


T = TypeVar("T")
Maker = Callable[[], object]


class Backend:
    """A mode's capabilities, opened on first use and closed together. Built only by connect.open_backend."""

    def __init__(self, mode: Mode, command: str, makers: Mapping[str, Maker],
                 missing: Mapping[str, Missing], close: Callable[[], None] | None = None,
                 explain: Callable[[str], ConfigError | None] | None = None) -> None:
        self.mode = mode
        self.command = command
        self._makers = dict(makers)
        self._missing = dict(missing)
        self._explain = explain  # a better error for a missing capability, found by asking the cluster (or None)
        self._open: dict[str, object] = {}
        self._close = close  # closes every client the makers made (one may serve several capabilities)

    def _get(self, name: str, kind: type[T]) -> T:
        if name not in self._open:
            if name not in self._makers:
                raise self._lacks(name)
            self._open[name] = self._makers[name]()
        return self._open[name]  # type: ignore[return-value]

    @property
    def partitions(self) -> Partitions:
        return self._get("partitions", Partitions)  # type: ignore[type-abstract]

    @property
    def registrations(self) -> Registrations:
        return self._get("registrations", Registrations)  # type: ignore[type-abstract]

    @property
    def epochs(self) -> EpochsAndPartitions:
        return self._get("epochs", EpochsAndPartitions)  # type: ignore[type-abstract]

    @property
    def leadership(self) -> LeadershipMoves:
        return self._get("leadership", LeadershipMoves)  # type: ignore[type-abstract]

    @property
    def controller_links(self) -> ControllerLinks:
        return self._get("controller_links", ControllerLinks)  # type: ignore[type-abstract]

    @property
    def broker_ids(self) -> BrokerIds:
        return self._get("broker_ids", BrokerIds)  # type: ignore[type-abstract]

    @property
    def quorum(self) -> QuorumSource:
        return self._get("quorum", QuorumSource)  # type: ignore[type-abstract]

    @property
    def unregistration(self) -> Unregistration:
        return self._get("unregistration", Unregistration)  # type: ignore[type-abstract]

    @property
    def features(self) -> FeatureFlags:
        return self._get("features", FeatureFlags)  # type: ignore[type-abstract]

    @property
    def migration(self) -> MigrationSource:
        return self._get("migration", MigrationSource)  # type: ignore[type-abstract]

    @property
    def identity(self) -> ClusterIdentity:
        return self._get("identity", ClusterIdentity)  # type: ignore[type-abstract]

    def has(self, name: str) -> bool:
        """Whether the mode (and the addresses given) serve capability `name`: a question, never an error."""
        return name in self._makers

    def require(self, name: str) -> None:
        """Raise the exit-3 error now when the mode lacks `name` (a check before any work is done): a capability,
        or "fencing" (registrations with a fenced state: KRaft)."""
        if name not in self._makers:
            raise self._lacks(name)

    def _lacks(self, name: str) -> ConfigError:
        """The exit-3 error for a capability the mode lacks: the cluster's own answer where it has a better one
        (brokers of a ZooKeeper-mode cluster reached through --bootstrap-server), else the mode's reason."""
        better = self._explain(name) if self._explain is not None else None
        return better or self._missing.get(name, Missing(f"cannot use this cluster for {name}")).error(self.command)

    def close(self) -> None:
        """Close every connection the capabilities opened (never masks the result: errors are ignored)."""
        if self._close is not None:
            self._close()
        else:
            seen: set[int] = set()
            for cap in reversed(list(self._open.values())):
                close = getattr(cap, "close", None)
                if close is not None and id(cap) not in seen:
                    seen.add(id(cap))
                    with contextlib.suppress(Exception):  # closing must never mask the result
                        close()
        self._open.clear()
