"""`kadmin quorum describe/check`: the metadata quorum of a KRaft cluster or a ZooKeeper ensemble."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kadmin.domain import quorum as q_rules
from kadmin.domain.quorum import CheckLimits, QuorumState
from kadmin.domain.text import plural
from kadmin.errors import ClusterUnreachable
from kadmin.exit_codes import Verdict
from kadmin.payloads import (
    EnsembleMember,
    Latency,
    QuorumCheck,
    QuorumClock,
    QuorumDescription,
    QuorumFinding,
    QuorumReplica,
    ServingMember,
)
from kadmin.results import Result


def ensemble_member(extra: Mapping[str, Any]) -> EnsembleMember:
    """What the four-letter words said of a ZooKeeper member (domain.quorum.from_zookeeper's `extra`): the
    answering members' keys only when it answered (it has a zxid)."""
    if "zxid" not in extra:
        return EnsembleMember(extra["address"], extra["mode"], extra["error"])
    latency = extra["latency_ms"]
    return ServingMember(extra["address"], extra["mode"], extra["error"], zxid=extra["zxid"],
                         zxid_epoch=extra["zxid_epoch"], older_epoch=extra["older_epoch"],
                         latency_ms=Latency(latency["min"], latency["avg"], latency["max"]),
                         outstanding=extra["outstanding"])


def quorum_replica(q: QuorumState, r: q_rules.ReplicaState, st: str) -> QuorumReplica:
    return QuorumReplica(
        id=r.id, directory_id=r.directory_id, log_end_offset=r.log_end_offset, lag=q_rules.lag(q, r),
        last_fetch_timestamp=r.last_fetch_timestamp, last_caught_up_timestamp=r.last_caught_up_timestamp,
        status=st, endpoints=tuple(r.endpoints),
        zookeeper=ensemble_member(r.extra) if q.mode == "zookeeper" else None,
    )


def quorum_description(q: QuorumState) -> QuorumDescription:
    """The `quorum describe` data (also `quorum check`'s `quorum`)."""
    ml = q_rules.max_follower_lag(q)
    by_id = {id(r): st for r, st in q_rules.rows(q)}
    return QuorumDescription(
        cluster_id=q.cluster_id, leader_id=q.leader_id, leader_epoch=q.leader_epoch, high_watermark=q.high_watermark,
        max_follower_lag=ml.lag if ml else None, max_follower_lag_time_ms=ml.lag_time_ms if ml else None,
        voters=tuple(quorum_replica(q, v, by_id[id(v)]) for v in q.voters),
        observers=tuple(quorum_replica(q, o, by_id[id(o)]) for o in q.observers),
        mode=q.mode,
    )


def describe(q: QuorumState) -> Result[QuorumDescription]:
    """The quorum as `quorum describe` reports it; exit 4 when it has no leader (kafka-metadata-quorum's
    text, which the view prints under -o plain, needs one: kadmin/render/quorum_text.py)."""
    if q.leader is None:
        down = [r for r in q.voters if r.down]
        detail = f" ({len(down)} of {plural(len(q.voters), 'voter')} unreachable)" if down else ""
        raise ClusterUnreachable(f"the metadata quorum has no leader right now{detail}; try again shortly")
    warnings = []
    if q.mode == "zookeeper" and any(r.down for r in q.voters + q.observers):
        warnings.append("some ensemble members did not answer: shown as Down")
    return Result(data=quorum_description(q), warnings=warnings)


def check(q: QuorumState, limits: CheckLimits, now_ms: int) -> Result[QuorumCheck]:
    findings = q_rules.check(q, limits, now_ms)
    level = q_rules.exit_level(findings)
    name = {0: "OK", 1: "WARNING", 2: "CRITICAL"}[level]
    clock = q_rules.leader_clock(q, now_ms)
    data = QuorumCheck(
        status=name.lower(),
        findings=tuple(QuorumFinding(f.level, f.code, f.message) for f in findings),
        clock=QuorumClock(source=clock.source, now_ms=clock.now_ms, local_skew_ms=clock.skew_ms,
                          check_quorum_ms=limits.check_quorum_ms),
        quorum=quorum_description(q),
    )
    summary = f"{name}: " + ("; ".join(f.message for f in findings) if findings else
                            f"leader {q.leader_id}, {plural(len(q.voters), 'voter')} caught up within the limits")
    return Result(data=data, exit_code=Verdict(level), message=summary)
