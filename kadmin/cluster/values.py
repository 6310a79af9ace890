"""The value types of the seam's rarer capabilities: broker-id state (BrokerIds), KRaft broker descriptions
(Unregistration), quorum settings (QuorumSource) and controlled shutdown's replies (ControllerLinks).

Named through kadmin.cluster.base like every other seam type (`from kadmin.cluster.base import IdState`), and
defined here so that a command that builds none of them does not create them: a frozen dataclass costs ~0.4 ms
to create on Python 3.11 (an `exec` per generated method), and a gate (`brokers max-epoch`, `wait`, `can-stop`)
builds none of these (issue 38 §4).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kadmin.results import Problem


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


@dataclass(frozen=True)
class KraftBroker:
    id: int
    host: str
    port: int
    rack: str | None
    fenced: bool | None  # None: unknown (DescribeCluster below v2 lists only unfenced brokers: False)


@dataclass(frozen=True)
class ClusterDescription:
    cluster_id: str | None
    controller_id: int
    brokers: list[KraftBroker]
    version: int

    def addresses(self) -> dict[int, tuple[str, int]]:
        """Each broker's advertised (host, port): where its own DescribeConfigs and DescribeLogDirs are asked."""
        return {b.id: (b.host, b.port) for b in self.brokers}


@dataclass(frozen=True)
class QuorumSetting:
    """A quorum setting as read from the cluster. value None: it could not be read (`source` says why, and what
    permission or address would let kadmin read it)."""

    name: str  # "controller.quorum.fetch.timeout.ms"
    value: int | None
    # where the value was read ("controller 3001 (DescribeConfigs)"; "broker 1 (DescribeConfigs): the controllers
    # could not be asked: ..."), or why it is unknown
    source: str


@dataclass(frozen=True)
class ShutdownReply:
    version: int
    error_code: int
    remaining: list[tuple[str, int]]
