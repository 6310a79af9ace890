"""The metadata quorum (KIP-595): replica lag, max follower lag, health checks.

The same model serves a KRaft quorum (DescribeQuorum) and a ZooKeeper ensemble (four-letter
words), where the ensemble is the metadata quorum: the zxid plays the log end offset.
Pure functions; "now" is always passed in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from kadmin.domain.text import plural

Status = Literal["Leader", "Follower", "Observer", "Down"]
Level = Literal["WARNING", "CRITICAL"]


@dataclass(frozen=True)
class ReplicaState:
    id: int
    log_end_offset: int
    directory_id: str | None = None  # Kafka's base64 Uuid text; None when unknown (the zero Uuid)
    last_fetch_timestamp: int | None = None  # epoch ms; None when the response said -1
    last_caught_up_timestamp: int | None = None
    endpoints: tuple[str, ...] = ()
    down: bool = False
    extra: Mapping[str, Any] = field(default_factory=dict)  # ZooKeeper: zxid, latency, outstanding...


@dataclass(frozen=True)
class QuorumState:
    leader_id: int  # -1 when there is no leader
    leader_epoch: int
    high_watermark: int
    voters: tuple[ReplicaState, ...]
    observers: tuple[ReplicaState, ...] = ()
    cluster_id: str | None = None
    mode: Literal["kraft", "zookeeper"] = "kraft"

    @property
    def leader(self) -> ReplicaState | None:
        return next((v for v in self.voters if v.id == self.leader_id and not v.down), None)

    @property
    def majority(self) -> int:
        return len(self.voters) // 2 + 1


def lag(q: QuorumState, r: ReplicaState) -> int | None:
    """The leader's log end offset minus the replica's (observers too); None without a leader."""
    leader = q.leader
    if leader is None or r.down:
        return None
    if q.mode == "zookeeper":
        return r.extra.get("lag")  # zxids: unknown across epochs (see from_zookeeper)
    return leader.log_end_offset - r.log_end_offset


def status(q: QuorumState, r: ReplicaState, observer: bool) -> Status:
    if r.down:
        return "Down"
    if observer:
        return "Observer"
    return "Leader" if r.id == q.leader_id else "Follower"


@dataclass(frozen=True)
class MaxLag:
    replica_id: int
    lag: int
    lag_time_ms: int


def max_follower_lag(q: QuorumState) -> MaxLag | None:
    """Kafka's MetadataQuorumCommand rule: the voter with the smallest log end offset (first on ties).

    Its lag time is the leader's lastCaughtUpTimestamp minus its own, 0 when it is the leader,
    -1 when either timestamp is missing. Observers are not counted (Kafka's tool leaves them out).
    """
    leader = q.leader
    if leader is None:
        return None
    live = [v for v in q.voters if not v.down]
    slowest = min(live, key=lambda v: v.log_end_offset)  # min() keeps the first of equals
    if slowest.id == leader.id:
        time_ms = 0
    elif leader.last_caught_up_timestamp is not None and slowest.last_caught_up_timestamp is not None:
        time_ms = leader.last_caught_up_timestamp - slowest.last_caught_up_timestamp
    else:
        time_ms = -1
    return MaxLag(slowest.id, leader.log_end_offset - slowest.log_end_offset, time_ms)


def rows(q: QuorumState) -> list[tuple[ReplicaState, Status]]:
    """The replication table's order: the leader, the other voters, then the observers."""
    out: list[tuple[ReplicaState, Status]] = []
    leader = q.leader
    if leader is not None:
        out.append((leader, "Leader"))
    out += [(v, status(q, v, False)) for v in q.voters if leader is None or v is not leader]
    out += [(o, status(q, o, True)) for o in q.observers]
    return out


@dataclass(frozen=True)
class Finding:
    level: Level
    code: str
    message: str


# Kafka's LeaderState.CHECK_QUORUM_TIMEOUT_FACTOR (KAFKA-15489, Kafka 3.7+): the leader resigns when it has not
# been fetched from by a majority of the voters (itself counted) within 1.5 x controller.quorum.fetch.timeout.ms.
CHECK_QUORUM_FACTOR_NUM, CHECK_QUORUM_FACTOR_DEN = 3, 2


@dataclass(frozen=True)
class CheckLimits:
    max_lag: int = 1000
    max_lag_ms: int = 5000
    fetch_timeout_ms: int = 2000  # the controllers' controller.quorum.fetch.timeout.ms (Kafka's default)
    restart: int | None = None

    @property
    def check_quorum_ms(self) -> int:
        """The leader's check-quorum window: (int) (fetchTimeoutMs * 1.5), 3000 ms by default."""
        return self.fetch_timeout_ms * CHECK_QUORUM_FACTOR_NUM // CHECK_QUORUM_FACTOR_DEN


@dataclass(frozen=True)
class Clock:
    """The "now" lag times are measured against: the leader's clock when DescribeQuorum carries it."""

    now_ms: int
    source: Literal["leader", "local"]
    local_ms: int

    @property
    def skew_ms(self) -> int | None:
        """This machine's clock minus the leader's (plus the request's round trip); None on the local clock."""
        return self.local_ms - self.now_ms if self.source == "leader" else None


def leader_clock(q: QuorumState, local_ms: int) -> Clock:
    """The leader's "now" as it answered DescribeQuorum, else the local clock.

    Every KRaft timestamp in DescribeQuorum (v1+) is the leader's wall clock, and the leader fills its own
    row's LastFetchTimestamp and LastCaughtUpTimestamp with its current time when it answers (RaftUtil
    toReplicaState; MetadataQuorumCommand measures MaxFollowerLagTimeMs from that row too). Measuring ages
    against it makes them immune to skew between this machine and the controllers. Without it (v0, a
    ZooKeeper ensemble, no leader) the local clock is all there is.
    """
    leader = q.leader
    if q.mode == "kraft" and leader is not None:
        ts = leader.last_fetch_timestamp if leader.last_fetch_timestamp is not None else leader.last_caught_up_timestamp
        if ts is not None:
            return Clock(ts, "leader", local_ms)
    return Clock(local_ms, "local", local_ms)


def caught_up(q: QuorumState, r: ReplicaState, limits: CheckLimits, now_ms: int) -> bool:
    """Within max_lag of the leader, and (when KRaft says when) caught up within max_lag_ms of `now_ms`
    (the leader's clock: see leader_clock). A KRaft voter that has not fetched in this epoch is not."""
    lg = lag(q, r)
    if lg is None or lg > limits.max_lag:
        return False
    if q.mode == "kraft" and r.id != q.leader_id and r.log_end_offset < 0:
        return False
    if r.id == q.leader_id or r.last_caught_up_timestamp is None:
        return True
    return now_ms - r.last_caught_up_timestamp <= limits.max_lag_ms


def check(q: QuorumState, limits: CheckLimits, now_ms: int) -> list[Finding]:
    """Findings, worst first. No findings: OK. Any CRITICAL: the quorum cannot make progress safely.

    `now_ms` is this machine's clock; ages are measured on the leader's (leader_clock) when it is known.
    """
    found: list[Finding] = []
    now_ms = leader_clock(q, now_ms).now_ms
    window = limits.check_quorum_ms
    leader = q.leader
    up = [v for v in q.voters if not v.down]
    if leader is None:
        found.append(Finding("CRITICAL", "no_leader", "the quorum has no leader"))
    if len(up) < q.majority:
        found.append(Finding("CRITICAL", "no_majority",
                             f"only {len(up)} of {plural(len(q.voters), 'voter')} up (a majority needs {q.majority})"))
    for v in q.voters:
        if v.down:
            found.append(Finding("WARNING", "voter_down", f"voter {v.id} is down"))
    for o in q.observers:
        if o.down:
            found.append(Finding("WARNING", "observer_down", f"observer {o.id} is down"))
    if leader is not None:
        for r, st in rows(q):
            if st in ("Leader", "Down"):
                continue
            lg = lag(q, r)
            what = "voter" if st == "Follower" else "observer"
            fetched = r.last_fetch_timestamp
            stale = (f"; last fetched {now_ms - fetched} ms ago" if fetched is not None and now_ms - fetched > window
                     else "")
            if q.mode == "kraft" and r.log_end_offset < 0:
                # The leader has no fetch from it in this epoch (after an election, or a replica still starting).
                found.append(Finding("WARNING", f"{what}_lagging",
                                     f"{what} {r.id} has not fetched from leader {leader.id} in epoch "
                                     f"{q.leader_epoch}"))
            elif lg is not None and lg > limits.max_lag:
                unit = "transactions" if q.mode == "zookeeper" else "offsets"
                found.append(Finding("WARNING", f"{what}_lagging",
                                     f"{what} {r.id} is {lg} {unit} behind the leader (limit {limits.max_lag})"
                                     + stale))
            elif r.last_caught_up_timestamp is not None and now_ms - r.last_caught_up_timestamp > limits.max_lag_ms:
                found.append(Finding("WARNING", f"{what}_lagging",
                                     f"{what} {r.id} last caught up {now_ms - r.last_caught_up_timestamp} ms ago "
                                     f"by the leader's clock (limit {limits.max_lag_ms} ms){stale}"))
            if r.extra.get("older_epoch"):
                found.append(Finding("WARNING", "older_epoch",
                                     f"{what} {r.id} is on zxid epoch {r.extra.get('zxid_epoch')}, older than the "
                                     f"leader's {q.leader_epoch}"))
        # Kafka's check-quorum rule (LeaderState.updateCheckQuorumForFollowingVoter/timeUntilCheckQuorumExpires):
        # the leader resigns unless a majority of the voters, itself counted, fetched within the window (the timer
        # expires when exactly window ms have passed).
        fetched_from = [v for v in up if v.id == leader.id or (
            v.last_fetch_timestamp is not None and now_ms - v.last_fetch_timestamp < window)]  # Timer: expired at 0
        knows_fetches = any(v.last_fetch_timestamp is not None for v in up if v.id != leader.id)
        if q.mode == "kraft" and len(q.voters) > 1 and knows_fetches and len(fetched_from) < q.majority:
            found.append(Finding("CRITICAL", "zombie_leader",
                                 f"leader {leader.id} has been fetched from by only {len(fetched_from)} of "
                                 f"{len(q.voters)} voters (itself included) within {window} ms "
                                 f"(1.5 x fetch timeout {limits.fetch_timeout_ms} ms) by its own clock: "
                                 "it has lost the quorum and may no longer be the real leader"))
    if limits.restart is not None:
        ids = {v.id for v in q.voters}
        if limits.restart not in ids:
            found.append(Finding("WARNING", "restart_not_a_voter",
                                 f"node {limits.restart} is not a voter; restarting it does not affect the quorum"))
        else:
            others = [v for v in up if v.id != limits.restart and caught_up(q, v, limits, now_ms)]
            if len(others) < q.majority:
                found.append(Finding("CRITICAL", "restart_unsafe",
                                     f"restarting node {limits.restart} would leave {len(others)} caught-up voters "
                                     f"({', '.join(str(v.id) for v in others) or 'none'}), fewer than the "
                                     f"majority of {q.majority}"))
    found.sort(key=lambda f: f.level != "CRITICAL")
    return found


def exit_level(findings: Sequence[Finding]) -> int:
    """0 OK, 1 WARNING, 2 CRITICAL (the monitoring convention)."""
    if any(f.level == "CRITICAL" for f in findings):
        return 2
    return 1 if findings else 0


class ZkMember(Protocol):
    """What a four-letter-word probe of one ensemble member tells (kadmin.cluster.ensemble.MemberProbe)."""

    @property
    def address(self) -> str: ...

    @property
    def reachable(self) -> bool: ...

    @property
    def error(self) -> str | None: ...

    @property
    def mode(self) -> str | None: ...

    @property
    def server_id(self) -> int | None: ...

    @property
    def zxid(self) -> int | None: ...

    @property
    def latency_min_ms(self) -> float | None: ...

    @property
    def latency_avg_ms(self) -> float | None: ...

    @property
    def latency_max_ms(self) -> float | None: ...

    @property
    def outstanding(self) -> int | None: ...

    @property
    def members(self) -> Mapping[int, str]: ...

    @property
    def member_addresses(self) -> Mapping[int, tuple[str, ...]]: ...


def zxid_epoch(zxid: int) -> int:
    """The leader epoch of a zxid (its high 32 bits): it grows with each election."""
    return zxid >> 32


def zxid_counter(zxid: int) -> int:
    """The transaction counter of a zxid within its epoch (its low 32 bits)."""
    return zxid & 0xFFFFFFFF


def _named_by_address(down: Sequence[ZkMember], serving: Sequence[ZkMember], seen: set[int]) -> dict[str, int]:
    """The server id of each member that did not answer, from the membership lines the live members gave: the one
    member, not seen serving, whose client address (or, where the line gives no client port, whose host) is the
    address asked. An address is left out where that is not one member, or where two addresses asked would be the
    same member."""
    addresses: dict[int, tuple[str, ...]] = {}
    for p in serving:
        addresses.update(p.member_addresses)
    known = seen | {p.server_id for p in down if p.server_id is not None}
    found: dict[str, int] = {}
    for p in down:
        if p.server_id is not None:
            continue
        asked = p.address.lower()
        host = asked.rpartition(":")[0]
        ids = {sid for sid, where in addresses.items() if sid not in known and (asked in where or host in where)}
        if len(ids) == 1:
            found[p.address] = ids.pop()
    claimed = list(found.values())
    return {a: sid for a, sid in found.items() if claimed.count(sid) == 1}


def from_zookeeper(probes: Sequence[ZkMember]) -> QuorumState:
    """A ZooKeeper ensemble as a metadata quorum: NodeId = server id, LogEndOffset = the zxid counter,
    LeaderEpoch = the leader's zxid epoch, HighWatermark = the leader's zxid, Lag = the leader's zxid
    minus the member's (unknown, and flagged, for a member still on an older epoch)."""
    serving = [p for p in probes if p.reachable and p.mode and p.zxid is not None]
    leader = next((p for p in serving if p.mode in ("leader", "standalone")), None)
    roles: dict[int, str] = {}
    for p in serving:
        roles.update(p.members)
    seen = {p.server_id for p in serving if p.server_id is not None}
    unaccounted = sorted(set(roles) - seen)
    down = [p for p in probes if p not in serving]
    named = _named_by_address(down, serving, seen)
    voters: list[ReplicaState] = []
    observers: list[ReplicaState] = []
    lead_zxid = leader.zxid if leader is not None and leader.zxid is not None else None
    for p in probes:
        extra: dict[str, Any] = {"address": p.address, "mode": p.mode, "error": p.error}
        if p in down:
            sid = p.server_id if p.server_id is not None else named.get(p.address)
            if sid is None and len(down) == len(unaccounted) == 1:
                sid = unaccounted[0]  # the one member no live server accounts for
            r = ReplicaState(sid if sid is not None else -1, -1, down=True, extra=extra)
            (observers if roles.get(r.id) == "observer" else voters).append(r)
            continue
        assert p.zxid is not None
        # Right after an election the leader reports <epoch>00000000 and the followers their last
        # zxid of the old epoch until the first write: not behind, nothing was committed since.
        fresh_epoch = lead_zxid is not None and zxid_counter(lead_zxid) == 0
        older = lead_zxid is not None and zxid_epoch(p.zxid) < zxid_epoch(lead_zxid) and not fresh_epoch
        extra.update({
            "zxid": f"0x{p.zxid:x}",
            "zxid_epoch": zxid_epoch(p.zxid),
            "older_epoch": older,
            "latency_ms": {"min": p.latency_min_ms, "avg": p.latency_avg_ms, "max": p.latency_max_ms},
            "outstanding": p.outstanding,
        })
        if lead_zxid is not None and not older:
            extra["lag"] = 0 if fresh_epoch else lead_zxid - p.zxid
        r = ReplicaState(p.server_id if p.server_id is not None else -1, zxid_counter(p.zxid), extra=extra)
        (observers if p.mode == "observer" else voters).append(r)
    return QuorumState(
        leader_id=leader.server_id if leader is not None and leader.server_id is not None else -1,
        leader_epoch=zxid_epoch(lead_zxid) if lead_zxid is not None else -1,
        high_watermark=lead_zxid if lead_zxid is not None else -1,
        voters=tuple(voters),
        observers=tuple(observers),
        mode="zookeeper",
    )
