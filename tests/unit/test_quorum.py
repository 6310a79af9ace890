"""Seed 004's quorum rules and kafka-metadata-quorum's exact text (golden files)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kadmin.cluster.ensemble import MemberProbe, member_addresses
from kadmin.domain.quorum import (
    CheckLimits,
    QuorumState,
    ReplicaState,
    check,
    exit_level,
    from_zookeeper,
    lag,
    max_follower_lag,
)
from kadmin.render import quorum_text
from kadmin.services.quorum import quorum_description

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
NOW = 1_700_000_010_000


def quorum(**kw):
    """The scenario of protocol-notes §1: leader 3000, followers 3001 and 3002, observer 1."""
    voters = (
        ReplicaState(3000, 123457, "f0Rk8YxFQyO6VBchG9GSpg", NOW, NOW, ("CONTROLLER://c0:9093",)),
        ReplicaState(3001, 123457, "aTKmN4zQRp-b0eVcxrJrzw", NOW - 12, NOW - 12, ("CONTROLLER://c1:9093",)),
        ReplicaState(3002, 123416, "Qzd3hQvYS9qUt6C3iB_Ahg", NOW - 480, NOW - 950, ("CONTROLLER://[::1]:9093",)),
    )
    observers = (ReplicaState(1, 123453, None, NOW - 3, NOW - 3), ReplicaState(2, 123000, None, None, None))
    base = dict(leader_id=3000, leader_epoch=7, high_watermark=123456, voters=voters, observers=observers,
                cluster_id="MkU3OEVBNTcwNTJENDM2Qk")
    base.update(kw)
    return QuorumState(**base)


def status_of(q: QuorumState, **kw) -> str:
    """kafka-metadata-quorum's --status text of `q`, made as `quorum describe` makes it: from its payload."""
    return quorum_text.status_text(quorum_description(q), **kw)


def replication_of(q: QuorumState, **kw) -> str:
    return quorum_text.replication_text(quorum_description(q), **kw)


def test_lag_and_max_follower_lag_follow_kafkas_rule():
    q = quorum()
    assert [lag(q, r) for r in q.voters + q.observers] == [0, 0, 41, 4, 457]
    ml = max_follower_lag(q)
    assert (ml.replica_id, ml.lag, ml.lag_time_ms) == (3002, 41, 950)


def test_max_lag_time_is_minus_one_without_timestamps_and_zero_for_the_leader():
    q = quorum()
    v = q.voters
    no_ts = quorum(voters=(v[0], v[1], ReplicaState(3002, 10, None, None, None)))
    assert max_follower_lag(no_ts).lag_time_ms == -1
    all_equal = quorum(voters=(v[0], ReplicaState(3001, v[0].log_end_offset, None, NOW, NOW)))
    assert max_follower_lag(all_equal).replica_id == 3000 and max_follower_lag(all_equal).lag_time_ms == 0


@pytest.mark.parametrize("name, render", [
    ("status.txt", lambda q: status_of(q)),
    ("replication.txt", lambda q: replication_of(q)),
    ("replication-human.txt", lambda q: replication_of(q, human_readable=True, now_ms=NOW)),
    ("status-3.9.txt", lambda q: status_of(q, tool_format="3.9")),
    ("status-3.8.txt", lambda q: status_of(q, tool_format="3.8")),
    ("replication-3.8.txt", lambda q: replication_of(q, tool_format="3.8")),
])
def test_golden_kafka_metadata_quorum_text(name, render):
    assert render(quorum()) == (GOLDEN / name).read_text()


def test_replication_text_layout():
    text = replication_of(quorum())
    lines = text.split("\n")
    assert lines[-1] == "" and all(line.endswith("\t") for line in lines[:-1])
    assert [line.split()[-1] for line in lines[1:-1]] == ["Leader", "Follower", "Follower", "Observer", "Observer"]
    assert "AAAAAAAAAAAAAAAAAAAAAA" in lines[4]


def test_checks():
    q = quorum()
    f = check(q, CheckLimits(max_lag=100, max_lag_ms=2000), NOW)
    assert [(x.level, x.code) for x in f] == [("WARNING", "observer_lagging")]  # observer 2 is 457 behind
    assert exit_level(f) == 1
    f = check(q, CheckLimits(max_lag=10, max_lag_ms=100_000), NOW)
    assert sorted(x.code for x in f) == ["observer_lagging", "voter_lagging"]
    assert "voter 3002 is 41 offsets behind the leader (limit 10)" in [x.message for x in f]
    assert exit_level(check(q, CheckLimits(max_lag=10_000, max_lag_ms=100_000), NOW)) == 0
    down = quorum(voters=(q.voters[0], ReplicaState(3001, 0, down=True), q.voters[2]))
    f = check(down, CheckLimits(max_lag=10_000, max_lag_ms=100_000), NOW)
    assert [(x.level, x.code) for x in f] == [("WARNING", "voter_down")]
    two_down = quorum(voters=(q.voters[0], ReplicaState(3001, 0, down=True), ReplicaState(3002, 0, down=True)))
    f = check(two_down, CheckLimits(max_lag=10_000, max_lag_ms=100_000), NOW)
    assert f[0].code == "no_majority" and exit_level(f) == 2
    leaderless = check(quorum(leader_id=-1), CheckLimits(), NOW)
    assert leaderless[0].code == "no_leader" and exit_level(leaderless) == 2


def test_zombie_leader_and_restart():
    q = quorum()
    stale = tuple(ReplicaState(v.id, v.log_end_offset, v.directory_id, NOW - 10_000, v.last_caught_up_timestamp,
                               v.endpoints) if v.id != 3000 else v for v in q.voters)
    f = check(quorum(voters=stale), CheckLimits(max_lag=10_000, max_lag_ms=10**9, fetch_timeout_ms=2000), NOW)
    assert [x.code for x in f if x.level == "CRITICAL"] == ["zombie_leader"]
    lim = CheckLimits(max_lag=10, max_lag_ms=10**9, restart=3001)  # 3002 lags: only 3000 stays caught up
    assert "restart_unsafe" in {x.code for x in check(q, lim, NOW)}
    assert "restart_unsafe" not in {x.code for x in check(q, CheckLimits(max_lag=100, max_lag_ms=10**9,
                                                                         restart=3002), NOW)}


# --------------------------------------------------------------------------- quorum check: the leader's clock
# (issue 11 §3) Every DescribeQuorum timestamp is the leader's wall clock, and the leader stamps its own row with
# its current time when it answers: ages are measured against that, whatever this machine's clock says.

HOUR = 3_600_000


def leader_time_quorum(leader_now: int, fetch_ago: dict[int, int], caught_up_ago: dict[int, int] | None = None):
    """Leader 3000 answering at `leader_now` (its own row), followers 3001/3002 last fetching `fetch_ago` ms
    before that, on the leader's clock; everyone at the same log end offset."""
    caught_up_ago = caught_up_ago or fetch_ago
    voters = (ReplicaState(3000, 500, None, leader_now, leader_now),
              *(ReplicaState(i, 500, None, leader_now - fetch_ago[i], leader_now - caught_up_ago[i])
                for i in (3001, 3002)))
    return QuorumState(leader_id=3000, leader_epoch=4, high_watermark=500, voters=voters)


@pytest.mark.parametrize("skew", [-HOUR, 0, HOUR])
def test_check_measures_on_the_leaders_clock_not_the_local_one(skew):
    from kadmin.domain.quorum import leader_clock

    leader_now = NOW
    local = NOW + skew  # this machine's clock, an hour ahead of or behind the leader's
    healthy = leader_time_quorum(leader_now, {3001: 40, 3002: 90})
    assert check(healthy, CheckLimits(), local) == []  # an hour of skew raises nothing
    clock = leader_clock(healthy, local)
    assert (clock.source, clock.now_ms, clock.skew_ms) == ("leader", leader_now, skew)
    # a leader no follower fetched from for 3001 ms of its own time is a zombie, whatever the local clock says
    zombie = leader_time_quorum(leader_now, {3001: 3001, 3002: 60_000})
    f = check(zombie, CheckLimits(max_lag_ms=10**9), local)
    assert [x.code for x in f] == ["zombie_leader"]
    assert "only 1 of 3 voters (itself included) within 3000 ms" in f[0].message
    # a follower that last caught up 6 s ago (leader time) lags, another 1 s ago does not: skew hides nothing
    lagging = leader_time_quorum(leader_now, {3001: 10, 3002: 10}, {3001: 1000, 3002: 6000})
    f = check(lagging, CheckLimits(), local)
    assert [(x.code, x.message) for x in f] == [
        ("voter_lagging", "voter 3002 last caught up 6000 ms ago by the leader's clock (limit 5000 ms)")]
    # --restart: 3001 may go (3000 and 3002 are caught up on the leader's clock)... but 3002 may not
    assert check(leader_time_quorum(leader_now, {3001: 10, 3002: 10}), CheckLimits(restart=3001), local) == []
    f = check(lagging, CheckLimits(restart=3001), local)
    assert "restart_unsafe" in {x.code for x in f}


def test_zombie_window_is_kafkas_check_quorum_timeout():
    """LeaderState: checkQuorumTimeoutMs = (int) (fetchTimeoutMs * 1.5); fetched within it keeps the leader."""
    assert CheckLimits().check_quorum_ms == 3000
    assert CheckLimits(fetch_timeout_ms=1001).check_quorum_ms == 1501
    inside = leader_time_quorum(NOW, {3001: 2999, 3002: 9000})
    assert check(inside, CheckLimits(max_lag_ms=10**9), NOW) == []  # 1 follower + the leader: a majority
    past = leader_time_quorum(NOW, {3001: 3000, 3002: 9000})  # the timer has expired (remainingMs == 0)
    assert [x.code for x in check(past, CheckLimits(max_lag_ms=10**9), NOW)] == ["zombie_leader"]
    # the window follows the option: fetch timeout 10 s -> 15 s
    assert check(leader_time_quorum(NOW, {3001: 14_000, 3002: 20_000}),
                 CheckLimits(max_lag_ms=10**9, fetch_timeout_ms=10_000), NOW) == []
    # a single voter never resigns (timeUntilCheckQuorumExpires: Long.MAX_VALUE)
    alone = QuorumState(leader_id=3000, leader_epoch=1, high_watermark=5,
                        voters=(ReplicaState(3000, 5, None, NOW, NOW),))
    assert check(alone, CheckLimits(), NOW + HOUR) == []


def test_check_falls_back_to_the_local_clock_without_leader_timestamps():
    from kadmin.domain.quorum import leader_clock

    v0 = QuorumState(leader_id=3000, leader_epoch=4, high_watermark=500,
                     voters=(ReplicaState(3000, 500), ReplicaState(3001, 500), ReplicaState(3002, 500)))
    clock = leader_clock(v0, NOW)
    assert (clock.source, clock.now_ms, clock.skew_ms) == ("local", NOW, None)
    assert check(v0, CheckLimits(), NOW) == []


def test_a_voter_that_has_not_fetched_in_this_epoch_is_lagging_and_not_caught_up():
    """After an election the new leader knows no fetch from the old one yet: LogEndOffset and times are -1."""
    voters = (ReplicaState(3002, 900, None, NOW, NOW), ReplicaState(3001, -1), ReplicaState(3003, 900, None, NOW, NOW))
    q = QuorumState(leader_id=3002, leader_epoch=9, high_watermark=900, voters=voters)
    f = check(q, CheckLimits(), NOW - HOUR)
    assert [(x.level, x.code, x.message) for x in f] == [
        ("WARNING", "voter_lagging", "voter 3001 has not fetched from leader 3002 in epoch 9")]
    f = check(q, CheckLimits(restart=3003), NOW)
    assert [x.code for x in f if x.level == "CRITICAL"] == ["restart_unsafe"]
    assert "restart_unsafe" not in {x.code for x in check(q, CheckLimits(restart=3001), NOW)}


def test_the_39_and_41_formats_differ_only_in_an_absent_directory_id():
    """Kafka 3.9/4.0 print `"directoryId": null`; 4.1+ leave the key out; 3.9's replication table is 4.1's."""
    q = quorum()
    assert status_of(q, tool_format="3.9").replace(', "directoryId": null', "") == status_of(q)
    assert replication_of(q, tool_format="3.9") == replication_of(q)


@pytest.mark.parametrize("field", ["last_fetch_timestamp", "last_caught_up_timestamp"])
def test_human_readable_refuses_a_timestamp_ahead_of_the_clock_as_kafkas_tool_does(field):
    """Kafka's relativeTimeMs throws on a timestamp after now (clock drift): never "0 ms ago" silently."""
    from dataclasses import replace

    from kadmin.render.quorum_text import ClockDrift

    q = quorum()
    ahead = replace(q.voters[1], **{field: NOW + 250})
    drifted = quorum(voters=(q.voters[0], ahead, q.voters[2]))
    desc = "last fetch" if field == "last_fetch_timestamp" else "last caught up"
    with pytest.raises(ClockDrift) as e:
        replication_of(drifted, human_readable=True, now_ms=NOW)
    assert str(e.value) == ("Error while computing relative time, possible drift in system clock. "
                            f"Current timestamp is {NOW}, {desc} timestamp is {NOW + 250}")
    assert "\n" not in str(e.value)
    assert replication_of(drifted, now_ms=NOW).count(str(NOW + 250)) == 1  # raw: shown as it is
    # a timestamp equal to now is "0 ms ago" (Kafka: not before now is fine), one before the epoch fails
    assert "\t0 ms ago" in replication_of(q, human_readable=True, now_ms=NOW)
    with pytest.raises(ClockDrift):
        replication_of(quorum(voters=(q.voters[0], replace(q.voters[1], **{field: 0}), q.voters[2])),
                         human_readable=True, now_ms=NOW)


def test_describe_view_fails_with_one_line_and_exit_1_on_clock_drift():
    from dataclasses import replace

    from kadmin.errors import KadminError
    from kadmin.render import views
    from kadmin.services.quorum import describe

    q = quorum()
    drifted = quorum(observers=(replace(q.observers[0], last_fetch_timestamp=NOW + 5), q.observers[1]))
    data = describe(drifted).data
    with pytest.raises(KadminError) as e:
        views.quorum_describe(data, "replication", True, NOW, "4.1")  # made before anything is printed
    assert e.value.code == "clock_drift" and int(e.value.exit_code) == 1
    assert "possible drift in system clock" in e.value.message and "\n" not in e.value.message
    # without --human-readable the raw timestamps are shown, no error
    view = views.quorum_describe(data, "replication", False, NOW, "4.1")
    assert str(NOW + 5) in view(data).text


def _member(sid: int, mode: str, lines: dict[str, str]) -> MemberProbe:
    return MemberProbe(f"zk{sid}:2181", True, mode=mode, server_id=sid, zxid=0x100000005,
                       members={int(k.removeprefix("server.")): "participant" for k in lines},
                       member_addresses=member_addresses(lines))


def _down(address: str) -> MemberProbe:
    return MemberProbe(address, False, error="connection refused")


def _ids(q: QuorumState) -> dict[str, int]:
    return {r.extra["address"]: r.id for r in q.voters if r.down}


def test_a_zookeeper_member_down_is_named_by_its_address_in_the_membership() -> None:
    """Two of five down: each is the one member whose membership line says it is reached at the address asked
    (kazoo's connect string: the host alone where the line gives no client port); an address no member has, or
    one that fits two members, stays id -1, never a guess."""
    classic = {f"server.{i}": f"zk{i}:2888:3888:participant" for i in range(1, 6)}
    live = [_member(i, "leader" if i == 1 else "follower", classic) for i in (1, 2, 3)]
    q = from_zookeeper([*live, _down("zk4:2181"), _down("ZK5:2181")])
    assert _ids(q) == {"zk4:2181": 4, "ZK5:2181": 5}
    assert _ids(from_zookeeper([*live, _down("zk4:2181"), _down("10.0.0.5:2181")])) == {
        "zk4:2181": 4, "10.0.0.5:2181": -1}
    # every member on one host (a test box): the host names none of them; a client port in the line does
    one_host = {f"server.{i}": f"127.0.0.1:{i}888:{i}999" for i in range(1, 6)}
    live = [_member(i, "leader" if i == 1 else "follower", one_host) for i in (1, 2, 3)]
    assert _ids(from_zookeeper([*live, _down("127.0.0.1:2184"), _down("127.0.0.1:2185")])) == {
        "127.0.0.1:2184": -1, "127.0.0.1:2185": -1}
    ported = {k: f"{v};127.0.0.1:218{k[-1]}" for k, v in one_host.items()}
    live = [_member(i, "leader" if i == 1 else "follower", ported) for i in (1, 2, 3)]
    assert _ids(from_zookeeper([*live, _down("127.0.0.1:2184"), _down("127.0.0.1:2185")])) == {
        "127.0.0.1:2184": 4, "127.0.0.1:2185": 5}
    # a live member's address names nobody down; two addresses of one member: neither is named
    assert _ids(from_zookeeper([*live, _down("127.0.0.1:2181"), _down("127.0.0.1:2185")])) == {
        "127.0.0.1:2181": -1, "127.0.0.1:2185": 5}
    both = {**ported, "server.5": "127.0.0.1:5888:5999|127.0.0.2:5888:5999;0.0.0.0:2185"}
    live = [_member(i, "leader" if i == 1 else "follower", both) for i in (1, 2, 3)]
    assert _ids(from_zookeeper([*live, _down("127.0.0.1:2185"), _down("127.0.0.2:2185")])) == {
        "127.0.0.1:2185": -1, "127.0.0.2:2185": -1}
