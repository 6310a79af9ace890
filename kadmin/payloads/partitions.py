"""Typed payloads of `kadmin partitions` and of the gates over partitions (`brokers can-stop`, `brokers wait
--in-sync`) (kadmin/payloads/__init__.py says what a payload is)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kadmin.payloads.common import TopicPartition, UnseenBroker, UnseenPartition
from kadmin.results import Payload


@dataclass(frozen=True)
class PartitionRow(Payload):
    """A `partitions list` row."""

    topic: str
    partition: int
    leader: int | None
    leader_epoch: int | None
    partition_epoch: int | None
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    adding_replicas: tuple[int, ...]
    removing_replicas: tuple[int, ...]
    min_isr: int
    topic_id: str | None
    # added keys: where min_isr comes from ("topic", "broker:<id>", "cluster-default", "static" as the
    # brokers report it, "default" as --min-isr-default states it, or "unknown"),
    # what the leader enforces (min(min_isr, replicas), Kafka 3.7+),
    # and whether the topic is queued for deletion (left out of `check` and `can-stop`)
    min_isr_source: str
    effective_min_isr: int
    deleting: bool
    # KIP-966 (DescribeTopicPartitions, Kafka 4.x): eligible leader replicas and the last known ELR;
    # None where the backend does not have them (ZooKeeper mode, brokers answering only Metadata)
    elr: tuple[int, ...] | None
    last_known_elr: tuple[int, ...] | None

    def to_json(self) -> dict[str, Any]:  # written out: a listing may have a million rows
        return {
            "topic": self.topic,
            "partition": self.partition,
            "leader": self.leader,
            "leader_epoch": self.leader_epoch,
            "partition_epoch": self.partition_epoch,
            "replicas": list(self.replicas),
            "isr": list(self.isr),
            "adding_replicas": list(self.adding_replicas),
            "removing_replicas": list(self.removing_replicas),
            "min_isr": self.min_isr,
            "topic_id": self.topic_id,
            "min_isr_source": self.min_isr_source,
            "effective_min_isr": self.effective_min_isr,
            "deleting": self.deleting,
            "elr": None if self.elr is None else list(self.elr),
            "last_known_elr": None if self.last_known_elr is None else list(self.last_known_elr),
        }


@dataclass(frozen=True)
class CheckFinding(Payload):
    topic: str
    partition: int | None  # None: the whole topic (it could not be read)
    reasons: tuple[str, ...]


@dataclass(frozen=True)
class PartitionsCheck(Payload):
    status: str  # the verdict: ok, warning, critical, unknown
    partitions: int
    findings: tuple[CheckFinding, ...]
    deleting: tuple[str, ...]  # topics queued for deletion: not checked, as Kafka's controller skips them
    # added: brokers whose log dirs could not be listed (KRaft), so the check cannot show it saw every partition
    unseen: tuple[UnseenBroker, ...]


@dataclass(frozen=True)
class Blocked(Payload):
    topic: str
    partition: int | None  # None: the whole topic (unreadable: it may or may not host the broker)
    reason: str


@dataclass(frozen=True)
class InSync(Payload):
    """`brokers wait --in-sync`."""

    broker_id: int
    in_sync: bool
    hosted_partitions: int
    waiting: tuple[TopicPartition, ...]
    waited_ms: int
    # added: whether the broker may lead (KRaft: unfenced), and what kept the wait from seeing every partition
    # the broker hosts (its log dirs not listed; a partition its log dirs list, not visible)
    live: bool
    unseen: tuple[UnseenBroker | UnseenPartition, ...]
