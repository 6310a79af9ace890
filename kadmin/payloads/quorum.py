"""Typed payloads of `kadmin quorum` (kadmin/payloads/__init__.py says what a payload is)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kadmin.results import Payload


@dataclass(frozen=True)
class Latency(Payload):
    """A ZooKeeper member's request latency (`srvr`), in ms; None where it did not say."""

    min: float | None
    avg: float | None
    max: float | None


@dataclass(frozen=True)
class EnsembleMember(Payload):
    """ZooKeeper mode: what a member's four-letter words said (a quorum replica's `zookeeper` object). A member
    that did not answer has these keys only (`error` says why); one that answered is a `ServingMember`."""

    address: str
    mode: str | None  # leader, follower, observer, standalone
    error: str | None


@dataclass(frozen=True)
class ServingMember(EnsembleMember):
    zxid: str  # 0x-hex
    zxid_epoch: int
    older_epoch: bool  # on an older zxid epoch than the leader's: its lag is unknown
    latency_ms: Latency
    outstanding: int | None


@dataclass(frozen=True)
class QuorumReplica(Payload):
    """A voter or observer of `quorum describe`; `zookeeper` is a key only in ZooKeeper mode."""

    id: int
    directory_id: str | None  # None: the zero Uuid (kafka-metadata-quorum: AAAAAAAAAAAAAAAAAAAAAA)
    log_end_offset: int
    lag: int | None  # None: no leader, down, or (ZooKeeper) on an older zxid epoch
    last_fetch_timestamp: int | None
    last_caught_up_timestamp: int | None
    status: str  # Leader, Follower, Observer, Down
    endpoints: tuple[str, ...]
    zookeeper: EnsembleMember | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = super().to_json()
        if self.zookeeper is None:
            del out["zookeeper"]
        return out


@dataclass(frozen=True)
class QuorumDescription(Payload):
    """`quorum describe` (and `quorum check`'s `quorum`). The max follower lag is None without a leader.
    `mode` is a key only in ZooKeeper mode ("mode": "zookeeper")."""

    cluster_id: str | None
    leader_id: int  # -1: none
    leader_epoch: int
    high_watermark: int
    max_follower_lag: int | None
    max_follower_lag_time_ms: int | None
    voters: tuple[QuorumReplica, ...]
    observers: tuple[QuorumReplica, ...]
    mode: str = "kraft"  # or "zookeeper"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = super().to_json()
        if self.mode != "zookeeper":
            del out["mode"]
        return out


@dataclass(frozen=True)
class QuorumFinding(Payload):
    level: str  # WARNING, CRITICAL
    code: str
    message: str


@dataclass(frozen=True)
class QuorumClock(Payload):
    """What `quorum check` measured ages against: the leader's clock (DescribeQuorum v1+) or this machine's."""

    source: str  # leader, local
    now_ms: int
    local_skew_ms: int | None  # this machine's clock minus the leader's; None on the local clock
    check_quorum_ms: int


@dataclass(frozen=True)
class QuorumCheck(Payload):
    status: str  # the verdict: ok, warning, critical
    findings: tuple[QuorumFinding, ...]
    clock: QuorumClock
    quorum: QuorumDescription
