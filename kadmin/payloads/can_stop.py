"""The typed payload of `brokers can-stop`, the gate a roll asks before each broker (also in `brokers shutdown`'s
refusal and dry run): a module of its own, as the other gates' (kadmin/payloads/gates.py), so that the gate builds
its one payload class and not the partitions group's. Blocked and UnseenBroker are built when a verdict has them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kadmin.results import Payload

if TYPE_CHECKING:
    from kadmin.payloads.common import UnseenBroker
    from kadmin.payloads.partitions import Blocked


@dataclass(frozen=True)
class CanStop(Payload):
    """`brokers can-stop`'s verdict (also in `brokers shutdown`'s refusal and dry run)."""

    broker_id: int
    safe: bool
    hosted_partitions: int
    blocking: tuple[Blocked, ...]
    never_satisfiable: tuple[Blocked, ...]  # kept for the contract: always empty since Kafka 3.7 (KAFKA-15583)
    # added (KRaft): the broker's log dirs could not be listed, so not every partition it hosts was seen
    unseen: tuple[UnseenBroker, ...]
