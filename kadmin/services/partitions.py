"""`kadmin partitions ...`, `brokers can-stop` and `brokers wait --in-sync`."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from kadmin.cluster.base import Cluster, PartitionScan, Progress
from kadmin.domain import partitions as rules
from kadmin.domain.models import PartitionState
from kadmin.exit_codes import ExitCode
from kadmin.services.result import Result


def partition_json(p: PartitionState) -> dict[str, Any]:
    """A `partitions list` row: a JSON contract (keys pinned by a test)."""
    return {
        "topic": p.topic,
        "partition": p.partition,
        "leader": p.leader,
        "leader_epoch": p.leader_epoch,
        "partition_epoch": p.partition_epoch,
        "replicas": list(p.replicas),
        "isr": list(p.isr),
        "adding_replicas": list(p.adding_replicas),
        "removing_replicas": list(p.removing_replicas),
        "min_isr": p.min_isr,
        "topic_id": p.topic_id,
    }


@dataclass(frozen=True)
class Filters:
    topic: str | None = None
    broker: int | None = None
    under_replicated: bool = False
    offline: bool = False
    under_min_isr: bool = False
    at_min_isr: bool = False

    def keep(self, p: PartitionState, live: frozenset[int]) -> bool:
        if self.broker is not None and self.broker not in p.replicas:
            return False
        health = [
            (self.under_replicated, rules.is_under_replicated(p)),
            (self.offline, rules.is_offline(p, live)),
            (self.under_min_isr, rules.is_under_min_isr(p)),
            (self.at_min_isr, rules.is_at_min_isr(p)),
        ]
        asked = [hit for on, hit in health if on]
        return not asked or any(asked)  # health filters combine with OR, like kafka-topics


def scan(cluster: Cluster, topic: str | None, progress: Progress | None, min_isr_default: int) -> PartitionScan:
    return cluster.scan_partitions([topic] if topic else None, progress=progress, min_isr_default=min_isr_default)


def list_partitions(
    cluster: Cluster, filters: Filters, progress: Progress | None = None, min_isr_default: int = 1
) -> Result:
    s = scan(cluster, filters.topic, progress, min_isr_default)
    rows = [partition_json(p) for p in s.partitions if filters.keep(p, s.live)]
    return Result(command="partitions list", data=rows, errors=s.problems)


def check(cluster: Cluster, progress: Progress | None = None, min_isr_default: int = 1) -> Result:
    s = scan(cluster, None, progress, min_isr_default)
    health = rules.health(s.partitions, s.live)
    found = rules.findings(s.partitions, s.live)
    data = {
        "status": health.name.lower(),
        "partitions": len(s.partitions),
        "findings": [{"topic": f.topic, "partition": f.partition, "reasons": list(f.reasons)} for f in found],
    }
    summary = {
        rules.Health.OK: f"OK: {len(s.partitions)} partitions healthy",
        rules.Health.WARNING: f"WARNING: {len(found)} of {len(s.partitions)} partitions under-replicated",
        rules.Health.CRITICAL: f"CRITICAL: {len(found)} of {len(s.partitions)} partitions need attention "
        "(offline or under min ISR)",
    }[health]
    # The monitoring convention: 0 OK, 1 WARNING, 2 CRITICAL. Problems reading znodes are named in
    # the findings and make the partition critical, so a partial read never passes as healthy.
    return Result(command="partitions check", data=data, warnings=[e.message for e in s.problems],
                  exit_code=ExitCode(int(health)), message=summary)


def verdict_json(v: rules.StopVerdict) -> dict[str, Any]:
    return {
        "broker_id": v.broker_id,
        "safe": v.safe,
        "hosted_partitions": v.hosted,
        "blocking": [{"topic": b.topic, "partition": b.partition, "reason": b.reason} for b in v.blocking],
        "never_satisfiable": [{"topic": b.topic, "partition": b.partition, "reason": b.reason} for b in v.never],
    }


def stop_verdict(cluster: Cluster, broker_id: int, progress: Progress | None = None,
                 min_isr_default: int = 1) -> tuple[rules.StopVerdict, PartitionScan]:
    s = scan(cluster, None, progress, min_isr_default)
    return rules.can_stop(s.partitions, broker_id, s.live), s


def can_stop(cluster: Cluster, broker_id: int, progress: Progress | None = None, min_isr_default: int = 1) -> Result:
    v, s = stop_verdict(cluster, broker_id, progress, min_isr_default)
    warnings = [] if broker_id in s.live else [f"broker {broker_id} is not registered now"]
    if v.safe:
        msg = f"broker {broker_id} can stop: all {v.hosted} partitions it hosts keep a leader and min ISR"
    else:
        msg = (f"broker {broker_id} cannot stop safely: {len(v.blocking)} partitions would lose their leader or "
               f"min ISR" + (f", {len(v.never)} can never satisfy min ISR" if v.never else ""))
    return Result(command="brokers can-stop", data=verdict_json(v), errors=[], warnings=warnings,
                  exit_code=ExitCode.OK if v.safe else ExitCode.CONDITION_NOT_MET, message=msg)


def describe_keys(keys: Iterable[tuple[str, int]], limit: int = 8) -> str:
    ks = sorted(keys)
    text = ", ".join(f"{t}-{p}" for t, p in ks[:limit])
    return text + (f" (+{len(ks) - limit} more)" if len(ks) > limit else "")


def wait_in_sync(
    cluster: Any,
    broker_id: int,
    timeout: float,
    on_status: Callable[[str], None] | None = None,
    progress: Progress | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> Result:
    """Block until broker_id is in the ISR of every partition that lists it as a replica.

    One full scan finds the partitions still waiting for the broker; after that only their state
    znodes are watched and re-read when ZooKeeper says they changed, so keeping up costs one read
    per change, not a scan.
    """
    start = clock()
    s = scan(cluster, None, progress, 1)
    waiting = {(p.topic, p.partition) for p in rules.out_of_sync(s.partitions, broker_id)}
    hosted = sum(1 for p in s.partitions if broker_id in p.replicas)
    last_said = ""
    if waiting:
        for changed in cluster.watch_states(sorted(waiting), timeout=max(0.0, timeout - (clock() - start))):
            for key, isr in changed:
                if isr is not None and broker_id in isr:
                    waiting.discard(key)
            if not waiting:
                break
            said = f"broker {broker_id} not yet in the ISR of {len(waiting)} partitions: {describe_keys(waiting)}"
            if on_status and said != last_said:
                on_status(said)
                last_said = said
    data = {
        "broker_id": broker_id,
        "in_sync": not waiting,
        "hosted_partitions": hosted,
        "waiting": [{"topic": t, "partition": p} for t, p in sorted(waiting)],
        "waited_ms": int((clock() - start) * 1000),
    }
    if waiting:
        return Result(command="brokers wait", data=data, exit_code=ExitCode.CONDITION_NOT_MET,
                      message=f"timed out after {timeout:g}s: broker {broker_id} is still missing from the ISR of "
                      f"{len(waiting)} partitions: {describe_keys(waiting)}")
    return Result(command="brokers wait", data=data,
                  message=f"broker {broker_id} is in the ISR of all {hosted} partitions it hosts")
