"""Typed payloads of pieces the payloads share (kadmin/payloads/__init__.py says what a payload is)."""

from __future__ import annotations

from dataclasses import dataclass

from kadmin.results import Payload


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
