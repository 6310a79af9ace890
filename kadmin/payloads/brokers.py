"""Typed payloads of `kadmin brokers`: list, show, max-epoch, diff, watch, wait, unregister
(kadmin/payloads/__init__.py says what a payload is)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kadmin.results import Payload


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
