"""Typed payloads of the gates scripts call in loops, `brokers max-epoch` and `brokers wait`: a module of their own,
so that a gate builds its one payload class and no other (kadmin/payloads/__init__.py says what a payload is)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kadmin.results import Payload


@dataclass(frozen=True)
class MaxEpoch(Payload):
    max_broker_epoch: int | None
    broker_id: int | None
    brokers: int


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
