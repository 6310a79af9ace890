"""Typed payloads of `kadmin migration` (kadmin/payloads/__init__.py says what a payload is)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kadmin.results import Payload


@dataclass(frozen=True)
class MigrationBroker(Payload):
    id: int
    mode: str | None  # zk, zk_migrating, kraft; None: unknown (`source` says why)
    source: str


@dataclass(frozen=True)
class MigrationControllerNode(Payload):
    id: int
    address: str | None
    migration_enabled: bool | None  # ApiVersions' ZkMigrationReady; None: it could not be asked (`error`)
    error: str | None


@dataclass(frozen=True)
class MigrationControllers(Payload):
    """The quorum (DescribeQuorum: `voters`, `observers`, `leader`), the ZooKeeper controller (/controller's
    brokerid), the active controller and whether it is a KRaft one, and each controller's migration flag."""

    voters: tuple[int, ...]
    observers: tuple[int, ...]
    leader: int | None
    leader_epoch: int | None
    zookeeper_controller: int | None
    active: int | None
    active_is_kraft: bool | None
    nodes: tuple[MigrationControllerNode, ...]


@dataclass(frozen=True)
class MigrationFinding(Payload):
    level: str  # WARNING, CRITICAL
    code: str
    message: str


@dataclass(frozen=True)
class MigrationUnread(Payload):
    what: str
    why: str
    needs: str


@dataclass(frozen=True)
class MigrationStatus(Payload):
    """`migration status`: Kafka's ZkMigrationState name (None: not decidable from what could be read;
    `possible_states` lists what it may be), each broker's mode, the controllers, the rollback words, which source
    gave what, and the check's verdict."""

    status: str  # the verdict: ok, warning, critical, unknown
    state: str | None
    possible_states: tuple[str, ...]
    brokers: tuple[MigrationBroker, ...]
    controllers: MigrationControllers
    rollback_possible: bool | None
    next_step: str
    rollback: str
    sources: Mapping[str, str]
    findings: tuple[MigrationFinding, ...]
    unread: tuple[MigrationUnread, ...]
