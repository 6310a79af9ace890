"""Seed 004's quorum rules and kafka-metadata-quorum's exact text (golden files)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kadmin.domain.quorum import CheckLimits, QuorumState, ReplicaState, check, exit_level, lag, max_follower_lag
from kadmin.domain.quorum_text import replication_text, status_text

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
    ("status.txt", lambda q: status_text(q)),
    ("replication.txt", lambda q: replication_text(q)),
    ("replication-human.txt", lambda q: replication_text(q, human_readable=True, now_ms=NOW)),
])
def test_golden_kafka_metadata_quorum_text(name, render):
    assert render(quorum()) == (GOLDEN / name).read_text()


def test_replication_text_layout():
    text = replication_text(quorum())
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
