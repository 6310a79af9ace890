"""Typed payloads of `kadmin brokers shutdown`, `drain` and `undrain`: leadership moved away and back
(kadmin/payloads/__init__.py says what a payload is)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kadmin.payloads.can_stop import CanStop
from kadmin.payloads.common import TopicPartition
from kadmin.results import Payload


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


# brokers drain / undrain
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
