"""KRaft registrations: replaying metadata records, diffing listings, polled DescribeCluster events,
and the KRaft `brokers wait`/`watch` loops on scripted DescribeCluster answers and a fake clock."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from kadmin.cluster.base import ClusterDescription, KraftBroker
from kadmin.cluster.kraft_cluster import KraftRegistrations
from kadmin.domain.kraft_registrations import (
    Registration,
    Saved,
    Seen,
    apply,
    backoff,
    classify,
    poll_events,
    registration_json,
)
from kadmin.errors import ClusterUnreachable, ConditionNotMet, ConfigError
from kadmin.exit_codes import ExitCode
from kadmin.services import brokers

pytestmark = pytest.mark.timeout(30)


def register(bid: int, epoch: int, incarnation: str = "inc-a", fenced: bool = True) -> dict[str, Any]:
    return {"broker_id": bid, "broker_epoch": epoch, "incarnation_id": incarnation, "fenced": fenced,
            "in_controlled_shutdown": False, "rack": None,
            "end_points": [{"name": "PLAINTEXT", "host": "h1", "port": 9092, "security_protocol": 0},
                           {"name": "SSL", "host": "::1", "port": 9093, "security_protocol": 1}],
            "features": [{"name": "metadata.version", "min_supported_version": 7, "max_supported_version": 30}]}


def replay(*records: tuple[str, dict[str, Any], int]) -> dict[int, Registration]:
    regs: dict[int, Registration] = {}
    for name, fields, offset in records:
        apply(regs, name, fields, offset)
    return regs


def test_register_then_unfence_then_controlled_shutdown_then_fence() -> None:
    regs = replay(("RegisterBrokerRecord", register(1, 10), 10))
    r = regs[1]
    assert (r.epoch, r.incarnation_id, r.fenced, r.offset, r.state) == (10, "inc-a", True, 10, "fenced")
    assert r.endpoints == ("PLAINTEXT://h1:9092", "SSL://[::1]:9093")
    assert r.listener_security_protocol_map == {"PLAINTEXT": "PLAINTEXT", "SSL": "SSL"}
    assert r.features == {"metadata.version": {"min_version": 7, "max_version": 30}}
    apply(regs, "BrokerRegistrationChangeRecord", {"broker_id": 1, "broker_epoch": 10, "fenced": -1}, 11)
    assert regs[1].state == "active" and regs[1].offset == 10  # the offset stays the registration's
    apply(regs, "BrokerRegistrationChangeRecord", {"broker_id": 1, "broker_epoch": 10, "fenced": 0,
                                                   "in_controlled_shutdown": 1}, 12)
    assert regs[1].state == "controlled_shutdown" and regs[1].fenced is False
    apply(regs, "FenceBrokerRecord", {"id": 1, "epoch": 10}, 13)
    assert regs[1].fenced is True


def test_records_of_an_older_epoch_do_not_touch_a_newer_registration() -> None:
    regs = replay(("RegisterBrokerRecord", register(1, 10), 10), ("RegisterBrokerRecord", register(1, 20, "b"), 20),
                  ("UnfenceBrokerRecord", {"id": 1, "epoch": 10}, 21),
                  ("UnregisterBrokerRecord", {"broker_id": 1, "broker_epoch": 10}, 22))
    assert regs[1].epoch == 20 and regs[1].fenced is True
    apply(regs, "UnregisterBrokerRecord", {"broker_id": 1, "broker_epoch": 20}, 23)
    assert regs == {}


def test_other_records_are_ignored() -> None:
    assert replay(("TopicRecord", {"name": "t"}, 1), ("FeatureLevelRecord", {"name": "x"}, 2)) == {}


def test_diff_bounce_is_a_new_incarnation_or_a_larger_epoch_not_an_amended_registration() -> None:
    before = {1: Saved(10, "a"), 2: Saved(11, "b"), 3: Saved(12, "c"), 4: Saved(13, None), 5: Saved(14, "e")}
    after = {1: Saved(10, "a"),  # amended registration: same incarnation, same epoch
             2: Saved(30, "b2"),  # a restart
             3: Saved(12, "c2"),  # a new process (new incarnation) even without a larger epoch
             4: Saved(40, None),  # no incarnation known: the epoch decides
             6: Saved(50, "f")}
    d = classify(before, after)
    assert (d.new, d.dead, d.unchanged) == ((6,), (5,), (1,))
    assert [b.id for b in d.bounced] == [2, 3, 4] and d.went_backwards == ()
    assert d.changed
    d = classify({1: Saved(20, "a")}, {1: Saved(10, "a")})
    assert [b.id for b in d.went_backwards] == [1] and d.bounced == ()
    assert not classify({1: Saved(10, "a")}, {1: Saved(10, "a")}).changed


def test_poll_events() -> None:
    a = Seen(False, "h:1")
    assert poll_events({}, {1: a}) == [{"event": "registered", "id": 1, "fenced": False, "endpoint": "h:1"}]
    assert [e["event"] for e in poll_events({}, {1: Seen(True, "h:1")})] == ["registered", "fenced"]
    assert poll_events({1: a}, {1: a}) == []
    assert poll_events({1: a}, {1: Seen(True, "h:1")})[0]["event"] == "fenced"
    assert poll_events({1: Seen(True, "h:1")}, {1: a})[0]["event"] == "unfenced"
    ev = poll_events({1: a}, {1: Seen(False, "h:2")})
    assert ev == [{"event": "endpoint_changed", "id": 1, "fenced": False, "endpoint": "h:2", "old_endpoint": "h:1"}]
    assert poll_events({1: a}, {})[0]["event"] == "unregistered"
    # below DescribeCluster v2 the fencing state is unknown (None): no fenced/unfenced event is made up
    assert poll_events({1: Seen(None, "h:1")}, {1: Seen(False, "h:1")}) == []


def test_backoff() -> None:
    seq = [backoff(None)]
    for _ in range(8):
        seq.append(backoff(seq[-1]))
    assert seq == [0.25, 0.375, 0.5625, 0.84375, 1.265625, 1.8984375, 2.0, 2.0, 2.0]


# ---------------------------------------------------------------------------- the polling loops
class FakeTime:
    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        self.slept.append(s)
        self.now += s


@dataclass
class Scripted:
    """DescribeCluster answers in order (the last one repeats); an exception instance is raised."""

    answers: Sequence[Any]
    version: int = 2
    calls: int = 0

    def describe_brokers(self) -> ClusterDescription:
        a = self.answers[min(self.calls, len(self.answers) - 1)]
        self.calls += 1
        if isinstance(a, Exception):
            raise a
        return ClusterDescription("cid", 1, [KraftBroker(i, "h", 9000 + i, None, f) for i, f in a.items()],
                                  self.version)


def polled(client: Scripted, t: FakeTime) -> KraftRegistrations:
    """The KRaft backend's registrations over scripted DescribeCluster answers, on a fake clock."""
    return KraftRegistrations(client, clock=t, sleep=t.sleep)  # type: ignore[arg-type]


def test_wait_fenced_polls_with_backoff_until_it_holds() -> None:
    t = FakeTime()
    notes: list[str] = []
    c = Scripted([{1: False, 2: False}, {1: False, 2: False}, ClusterUnreachable("h:9002 gone"),
                  {1: False, 2: True}])
    r = brokers.wait(polled(c, t), brokers.WaitCondition("fenced", 2), 60, clock=t,
                           on_note=notes.append)
    assert r.exit_code == ExitCode.OK and r.data.met is True and r.data.fenced is True
    assert list(r.data.to_json()) == ["broker_id", "condition", "met", "epoch", "fenced", "waited_ms"]  # KRaft: fenced
    assert t.slept == [0.25, 0.375, 0.5625]
    assert notes[0] == "polling DescribeCluster every 0.25s, backing off to every 2s"
    assert "retrying" in notes[1]


def test_wait_times_out_with_exit_1_and_says_why() -> None:
    t = FakeTime()
    r = brokers.wait(polled(Scripted([{2: True}]), t), brokers.WaitCondition("unfenced", 2), 10, clock=t, asked=10)
    assert r.exit_code == ExitCode.CONDITION_NOT_MET and r.data.met is False
    assert r.message == "timed out after 10s: broker 2 is registered and fenced"
    assert sum(t.slept) == pytest.approx(10)
    r = brokers.wait(polled(Scripted([{1: False}]), t), brokers.WaitCondition("registered", 2), 1, clock=t)
    assert r.message == "timed out after 1s: broker 2 is not registered"


def test_wait_below_describe_cluster_v2() -> None:
    t = FakeTime()
    for kind in ("fenced", "gone"):
        with pytest.raises(ConfigError, match="needs DescribeCluster v2"):
            brokers.wait(polled(Scripted([{1: False}], version=1), t), brokers.WaitCondition(kind, 2), 5,  # type: ignore[arg-type]
                               clock=t)
    r = brokers.wait(polled(Scripted([{2: False}], version=1), t), brokers.WaitCondition("registered", 2), 5,
                           clock=t)
    assert r.exit_code == ExitCode.OK and "only unfenced brokers are listed" in r.warnings[0]
    r = brokers.wait(polled(Scripted([{1: False}], version=1), t), brokers.WaitCondition("registered", 2), 5,
                           clock=t)
    assert r.exit_code == ExitCode.CONDITION_NOT_MET
    assert r.message == ("timed out after 5s: broker 2 is not listed (DescribeCluster v1 lists only unfenced "
                         "brokers: it is fenced or not registered)")


def test_watch_reports_a_bounce_and_counts() -> None:
    t = FakeTime()
    c = Scripted([{1: False, 2: False}, {1: False, 2: True}, {1: False}, {1: False, 2: True}, {1: False, 2: False}])
    evs = list(brokers.watch(polled(c, t), count=4, timeout=60, clock=t))
    assert [(e.event, e.id) for e in evs] == [("fenced", 2), ("unregistered", 2), ("registered", 2), ("fenced", 2)]
    assert all(e.epoch is None and e.old_epoch is None and e.at.endswith("Z") for e in evs)
    keys = ["event", "id", "epoch", "old_epoch", "at", "fenced", "endpoint"]
    assert [list(e.to_json()) for e in evs[:2]] == [keys, keys]
    t2 = FakeTime()
    with pytest.raises(ConditionNotMet, match="saw 0 of 1 events"):
        list(brokers.watch(polled(Scripted([{1: False}]), t2), count=1, timeout=5,
                           clock=t2))
    t3 = FakeTime()
    evs = list(brokers.watch(polled(Scripted([{1: False}]), t3), count=1,
                             timeout=5, initial=True, clock=t3))
    assert [(e.event, e.id) for e in evs] == [("registered", 1)]


def test_saved_listing_with_incarnations() -> None:
    text = ('{"kadmin_result_version": 1, "command": "brokers list", "data": ['
            '{"id": 1, "epoch": 5, "incarnation_id": "abc"}, {"id": 2, "epoch": 7}]}')
    assert brokers.parse_saved_registrations(text, "f") == {1: Saved(5, "abc"), 2: Saved(7, None)}


# ---------------------------------------------------------------------------- a metadata dir (written by kio)
def _metadata_dir(tmp_path: Any, truncate_active: bool = False) -> Any:
    import uuid

    from tests.support import kraft_log_writer as w

    inc = {b: uuid.UUID(int=b) for b in (1, 2, 3, 4)}
    ep = [("PLAINTEXT", "h", 9092, 0)]
    feats = [("metadata.version", 7, 30)]
    part = tmp_path / "meta" / "__cluster_metadata-0"
    # snapshot 00..05-1: brokers 1 (epoch 2) and 2 (epoch 3) registered and unfenced
    w.write_file(part / "00000000000000000005-0000000001.checkpoint", [
        w.batch(0, 1, 1000, [w.snapshot_header(1000)], control_type=w.SNAPSHOT_HEADER),
        w.batch(0, 1, 1000, [w.register_broker(3, 1, inc[1], 2, ep, feats, None, fenced=False),
                             w.register_broker(3, 2, inc[2], 3, ep, feats, "r2", fenced=False)]),
        w.batch(2, 1, 1000, [w.snapshot_footer()], control_type=w.SNAPSHOT_FOOTER)])
    # the log from 0: records before the snapshot's end are in it already (replayed from the snapshot)
    w.write_file(part / "00000000000000000000.log", [
        w.batch(0, 1, 1000, [w.register_broker(3, 4, inc[4], 0, ep, feats, None)]),  # before the snapshot: not replayed
        w.batch(1, 1, 1000, [w.no_op(), w.no_op(), w.no_op(), w.no_op()]),
        w.batch(5, 1, 1000, [w.register_broker(3, 3, inc[3], 5, ep, feats, None),
                             w.unfence_broker(3, 5),
                             w.broker_registration_change(1, 2, 3, fenced=0, in_controlled_shutdown=1)])])
    last = w.batch(8, 1, 1000, [w.register_broker(3, 1, inc[4], 8, ep, feats, None), w.fence_broker(2, 3)])
    w.write_file(part / "00000000000000000008.log", [last[:-5] if truncate_active else last])
    return tmp_path / "meta"


def test_read_registrations_replays_the_newest_snapshot_then_the_log(tmp_path: Any) -> None:
    regs, damage, info = brokers.read_registrations(_metadata_dir(tmp_path))
    assert damage == [] and info["snapshot"] == "00000000000000000005-0000000001.checkpoint"
    assert sorted(regs) == [1, 2, 3]  # broker 4's record precedes the snapshot's end: not in the state
    assert (regs[1].epoch, regs[1].offset, regs[1].source, regs[1].fenced) == (8, 8, "log", True)
    assert (regs[2].epoch, regs[2].offset, regs[2].source, regs[2].state, regs[2].rack) == (
        3, None, "snapshot", "fenced", "r2")
    assert (regs[3].epoch, regs[3].state) == (5, "active")
    r = brokers.list_metadata_dir(tmp_path / "meta" / "__cluster_metadata-0")  # the partition dir works too
    assert r.exit_code == ExitCode.OK and [row.id for row in r.data] == [1, 2, 3]
    # each row's JSON form is the domain's row, key for key and in order
    assert [json.dumps(row.to_json()) for row in r.data] == [json.dumps(registration_json(regs[i])) for i in (1, 2, 3)]


def test_a_batch_being_written_at_the_end_is_a_warning_not_damage(tmp_path: Any) -> None:
    r = brokers.list_metadata_dir(_metadata_dir(tmp_path, truncate_active=True))
    assert r.exit_code == ExitCode.OK and any("write in progress" in w for w in r.warnings)
    rows = {row.id: row for row in r.data}
    assert rows[1].epoch == 2 and rows[2].state == "controlled_shutdown"  # the last batch is not read


def test_metadata_dir_errors(tmp_path: Any) -> None:
    from kadmin.errors import UsageError

    with pytest.raises(UsageError, match="no such directory"):
        brokers.list_metadata_dir(tmp_path / "nope")
    with pytest.raises(UsageError, match="no __cluster_metadata-0"):
        brokers.list_metadata_dir(tmp_path)
