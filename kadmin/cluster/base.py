"""The interface the services use. Implementations return domain models, never library objects."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from kadmin.domain.models import Broker, Controller, Coverage, Generation, PartitionState, Stat
from kadmin.results import Problem, Progress


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


@dataclass(frozen=True)
class IdState:
    """What broker-id assignment reads: registrations, host mappings, /brokers/seqid, assignments."""

    registered: dict[int, str | None]
    mappings: dict[str, tuple[int, int]]  # host -> (broker id, znode data version)
    seqid_version: int  # -1 when /brokers/seqid does not exist
    hosts_version: int  # /brokers/hosts' data version: every write bumps it (claims serialize on it)
    # broker id -> (topic, partition) naming it as a replica (or adding it), for the ids NOT registered
    # (in `registered`) only: all any verdict needs, and bounded at a million partitions
    assigned: dict[int, list[tuple[str, int]]]
    problems: list[Problem] = field(default_factory=list)
    invalid_mappings: dict[str, tuple[str, int]] = field(default_factory=dict)  # host -> (why, data version)


class Contention(Exception):
    """A conditional write lost a race (a version or existence check failed): read again and retry."""


class Cluster(Protocol):
    mode: str
    description: str

    def list_brokers(self) -> BrokerListing: ...

    def get_broker(self, broker_id: int) -> tuple[Broker | None, list[Problem]]: ...

    def watch_brokers(self, timeout: float | None) -> Iterator[WatchTick]: ...

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

    # What the rolling-bounce commands read in both modes (ZkCluster: ZooKeeper; KraftCluster: the Kafka
    # protocol). watch_states yields every key's ISR now, then as it changes (ZooKeeper: watches; KRaft:
    # polling with backoff); None for a partition that cannot be read. A key whose ISR is `settled` is
    # yielded that once and no longer followed (neither re-read nor polled).
    def watch_states(self, keys: Sequence[tuple[str, int]], timeout: float | None,
                     settled: Callable[[tuple[int, ...]], bool] | None = None,
                     ) -> Iterator[list[tuple[tuple[str, int], tuple[int, ...] | None]]]: ...

    def cluster_id(self) -> str | None: ...

    def controller(self) -> tuple[Controller | None, list[Problem]]: ...

    def close(self) -> None: ...
