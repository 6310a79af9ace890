"""Typed payloads of `kadmin ids` (kadmin/payloads/__init__.py says what a payload is)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kadmin.payloads.common import TopicPartition
from kadmin.results import Payload


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
