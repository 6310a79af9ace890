"""The services' waiting and retrying, on fake clusters and a fake clock: no ZooKeeper, no wall time.

Each service takes its clock and sleep as parameters; here both are a FakeTime, whose sleep only
moves its clock. Deadlines, backoff sequences and retry counts are then exact, and the tests
against real servers need no timing assertions of their own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from kadmin.cluster.base import Contention, IdState, PartitionScan, RegistrationTick, ShutdownReply, WatchTick
from kadmin.domain.models import (
    Broker,
    Controller,
    Coverage,
    Generation,
    PartitionState,
    Registered,
    Registration,
    Stat,
)
from kadmin.errors import ClusterUnreachable, ConditionNotMet, KadminError
from kadmin.exit_codes import ExitCode
from kadmin.payloads import TopicPartition
from kadmin.services import brokers, ids, partitions, shutdown

pytestmark = pytest.mark.timeout(30)


class FakeTime:
    """A monotonic clock that only `sleep` (or a fake cluster) moves."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        assert seconds >= 0
        self.slept.append(seconds)
        self.now += seconds


def gens(**by_id: tuple[int, int] | int) -> dict[int, Generation]:
    """gens(b1=5, b2=(7, 9)): broker id -> Generation(epoch, mzxid); a bare int is epoch == mzxid."""
    out = {}
    for k, v in by_id.items():
        epoch, mzxid = v if isinstance(v, tuple) else (v, v)
        out[int(k[1:])] = Generation(epoch, mzxid)
    return out


@dataclass
class TickCluster:
    """watch_brokers yields scripted ticks; each tick first moves the fake clock by `step` seconds."""

    ticks: Sequence[WatchTick]
    time: FakeTime = field(default_factory=FakeTime)
    step: float = 1.0
    mode: str = "zookeeper"
    description: str = "fake"
    pulled: int = 0
    timeouts: list[float | None] = field(default_factory=list)

    epochs = True
    fencing = False

    def watch_registrations(self, timeout: float | None, on_note: Any = None) -> Iterator[RegistrationTick]:
        """The ticks as ZooKeeper mode's backend hands them over (kadmin/cluster/zookeeper ZkCluster)."""
        self.timeouts.append(timeout)
        for t in self.ticks:
            self.time.now += self.step
            self.pulled += 1
            yield RegistrationTick({i: Registered(i, epoch=g.epoch, mzxid=g.mzxid) for i, g in t.generations.items()},
                                   "none", resynced=t.resynced)

    def close(self) -> None:
        pass


def events(cluster: TickCluster, **kw: Any) -> list[tuple[str, int, int | None, int | None]]:
    return [(e.event, e.id, e.epoch, e.old_epoch) for e in brokers.watch(cluster, **kw)]  # type: ignore[arg-type]


# ---------------------------------------------------------------------------- brokers watch
def test_watch_a_bounce_seen_in_one_tick_or_across_two_is_bounced() -> None:
    one = TickCluster([WatchTick(gens(b1=5, b2=7), reason="initial"), WatchTick(gens(b1=5, b2=20))])
    assert events(one) == [("bounced", 2, 20, 7)]
    # the old registration went in one tick, the new one came in the next (or after a resync)
    two = TickCluster([WatchTick(gens(b1=5, b2=7), reason="initial"), WatchTick(gens(b1=5)),
                       WatchTick(gens(b1=5, b2=20), resynced=True, reason="resync")])
    assert events(two) == [("deregistered", 2, None, 7), ("bounced", 2, 20, 7)]


def test_watch_a_broker_it_never_saw_is_registered_even_after_a_resync() -> None:
    """What the ensemble test in test_watch_wait relies on: a watch that started before broker 2's
    registration reached its server calls broker 2's first appearance `registered`, whatever its epoch."""
    c = TickCluster([WatchTick(gens(b1=5), reason="initial"),
                     WatchTick(gens(b1=5, b2=20), resynced=True, reason="resync")])
    resyncs: list[str] = []
    assert events(c, on_note=resyncs.append) == [("registered", 2, 20, None)]
    assert resyncs == ["reconnected: re-read every registration"]


def test_watch_initial_update_and_count() -> None:
    c = TickCluster([WatchTick(gens(b1=5, b2=7), reason="initial"), WatchTick(gens(b1=(5, 6), b2=7)),
                     WatchTick(gens(b1=(5, 6))), WatchTick(gens(b1=(5, 6), b3=30))])
    assert events(c, initial=True, count=3) == [("registered", 1, 5, None), ("registered", 2, 7, None),
                                                ("updated", 1, 5, 5)]
    assert c.pulled == 2  # --count stops the stream: no further tick is read


def test_watch_count_not_reached_raises_and_passes_its_timeout_on() -> None:
    c = TickCluster([WatchTick(gens(b1=5), reason="initial"), WatchTick(gens(b1=9))])
    with pytest.raises(ConditionNotMet, match=r"saw 1 of 3 events before the timeout \(2\.5s\)"):
        events(c, count=3, timeout=2.5)
    assert c.timeouts == [2.5]


def test_watch_stamps_events_with_its_clock() -> None:
    c = TickCluster([WatchTick(gens(), reason="initial"), WatchTick(gens(b4=44))])
    [ev] = list(brokers.watch(c, clock=lambda: 86400.25))  # type: ignore[arg-type]
    assert ev.at == "1970-01-02T00:00:00.250Z"
    assert ev.to_json() == {"event": "registered", "id": 4, "epoch": 44, "old_epoch": None,
                            "at": "1970-01-02T00:00:00.250Z"}


# ---------------------------------------------------------------------------- brokers wait
@pytest.mark.parametrize(("cond", "met_at"), [
    (brokers.WaitCondition("epoch_gt", 2, epoch=7), 3),  # 7, gone, 7 again cannot meet it; 20 does
    (brokers.WaitCondition("gone", 2), 2),
    (brokers.WaitCondition("registered", 3), 4),
])
def test_wait_ends_on_the_first_tick_that_meets_its_condition(cond: brokers.WaitCondition, met_at: int) -> None:
    ticks = [WatchTick(gens(b1=5, b2=7), reason="initial"), WatchTick(gens(b1=5)), WatchTick(gens(b1=5, b2=20)),
             WatchTick(gens(b1=5, b2=20, b3=30)), WatchTick(gens())]
    if cond.kind == "epoch_gt":
        ticks.insert(2, WatchTick(gens(b1=5, b2=7)))
        met_at += 1
    c = TickCluster(ticks, step=0.25)
    r = brokers.wait(c, cond, timeout=60, clock=c.time)  # type: ignore[arg-type]
    assert r.exit_code == ExitCode.OK and r.data.met is True
    assert c.pulled == met_at and r.data.waited_ms == 250 * met_at
    assert c.timeouts == [60]


def test_wait_that_times_out_says_what_is_missing() -> None:
    c = TickCluster([WatchTick(gens(b2=7), reason="initial"), WatchTick(gens(b2=(7, 8)))], step=2.5)
    r = brokers.wait(c, brokers.WaitCondition("epoch_gt", 2, epoch=7), timeout=5, clock=c.time)  # type: ignore[arg-type]
    assert r.exit_code == ExitCode.CONDITION_NOT_MET
    assert r.data.to_json() == {"broker_id": 2, "condition": "epoch_gt", "met": False, "epoch": 7, "waited_ms": 5000}
    assert r.message == "timed out after 5s: broker 2 is registered with epoch 7, not greater than 7"


# ---------------------------------------------------------------------------- brokers shutdown
def stat(czxid: int) -> Stat:
    return Stat(czxid, czxid, 0, 0, 1, 0, 0, 0x100, 10, 0, czxid)


def broker(bid: int, epoch: int) -> Broker:
    reg = Registration(5, f"b{bid}", 9092, (f"PLAINTEXT://b{bid}:9092",), {"PLAINTEXT": "PLAINTEXT"}, -1, 0)
    return Broker(bid, stat(epoch), b"{}", reg)


@dataclass
class ControllerCluster:
    """Brokers 1-3 (epoch 10 * id); the controller id moves when a test says so."""

    controller_id: int = 1
    reads: int = 0

    def get_broker(self, bid: int) -> tuple[Broker | None, list[Any]]:
        return (broker(bid, 10 * bid) if bid in (1, 2, 3) else None), []

    def controller(self) -> tuple[Controller, list[Any]]:
        self.reads += 1
        return Controller(self.controller_id, 1, 0, -1), []

    def scan_partitions(self, topics: Any = None, progress: Any = None, min_isr_default: int = 1) -> PartitionScan:
        return PartitionScan([], frozenset({1, 2, 3}))


class Controllers:
    """connect(): one connection per (endpoint, controller); each answers from a shared script."""

    def __init__(self, script: list[ShutdownReply | Exception], cluster: ControllerCluster,
                 moves: dict[int, int] | None = None) -> None:
        self.script = script
        self.cluster = cluster
        self.moves = moves or {}  # after attempt N, the controller is broker M
        self.opened: list[tuple[str, int]] = []
        self.closed = 0
        self.requests: list[tuple[int, int, int]] = []  # (controller, broker id, epoch)
        self.security_protocol = "PLAINTEXT"

    def connect(self, endpoint: str, controller_id: int) -> Any:
        self.opened.append((endpoint, controller_id))
        outer = self

        class Conn:
            def controlled_shutdown(self, broker_id: int, broker_epoch: int) -> ShutdownReply:
                outer.requests.append((controller_id, broker_id, broker_epoch))
                n = len(outer.requests)
                if n in outer.moves:
                    outer.cluster.controller_id = outer.moves[n]
                answer = outer.script[min(n, len(outer.script)) - 1]
                if isinstance(answer, Exception):
                    raise answer
                return answer

            def close(self) -> None:
                outer.closed += 1

        return Conn()


def reply(code: int = 0, remaining: int = 0) -> ShutdownReply:
    return ShutdownReply(3, code, [("t", p) for p in range(remaining)])


def run_shutdown(cluster: ControllerCluster, ctl: Controllers, t: FakeTime, *, wait: bool = False,
                 timeout: float = 30.0, epoch: int | None = None) -> Any:
    return shutdown.shutdown(cluster, ctl, 2, epoch=epoch, wait=wait, timeout=timeout,  # type: ignore[arg-type]
                             dry_run=False, force=True, sleep=t.sleep, clock=t)


def test_shutdown_follows_a_controller_that_moved() -> None:
    c, t = ControllerCluster(), FakeTime()
    ctl = Controllers([reply(41), reply(0)], c, moves={1: 3})  # broker 1 is no longer the controller
    r = run_shutdown(c, ctl, t)
    assert r.exit_code == ExitCode.OK
    assert r.data.attempts == 2 and r.data.controller_id == 3 and r.data.error is None
    assert ctl.requests == [(1, 2, 20), (3, 2, 20)]  # the epoch read from the registration, every time
    assert [cid for _, cid in ctl.opened] == [1, 3] and ctl.closed == 2
    assert t.slept == [0.2]


def test_shutdown_gives_up_on_not_controller_at_its_deadline() -> None:
    c, t = ControllerCluster(), FakeTime()
    ctl = Controllers([reply(11)], c)  # STALE_CONTROLLER_EPOCH, forever
    r = run_shutdown(c, ctl, t, timeout=10.0)
    assert r.exit_code == ExitCode.REJECTED and "no controller accepted the request within 10s" in r.message
    assert t.slept == [0.2, 0.4, 0.8, 1.6, 2.0, 2.0, 2.0]  # doubling, capped at 2 s, never past the deadline
    assert sum(t.slept) <= 10.0 < sum(t.slept) + 2.0
    assert r.data.attempts == len(t.slept) + 1 and len(ctl.opened) == 1  # the same controller: one connection


def test_shutdown_waits_for_leaderships_to_move_off() -> None:
    c, t = ControllerCluster(), FakeTime()
    ctl = Controllers([reply(0, remaining=3), reply(0, remaining=1), reply(0)], c)
    r = run_shutdown(c, ctl, t, wait=True)
    assert r.exit_code == ExitCode.OK and r.data.attempts == 3 and r.data.remaining_partitions == ()
    assert t.slept == [0.2, 0.4]


def test_shutdown_still_leading_at_the_deadline_is_condition_not_met() -> None:
    c, t = ControllerCluster(), FakeTime()
    ctl = Controllers([reply(0, remaining=2)], c)
    r = run_shutdown(c, ctl, t, wait=True, timeout=3.5)
    assert r.exit_code == ExitCode.CONDITION_NOT_MET and "still leads 2 partitions: t-0, t-1 after 3.5s" in r.message
    assert t.slept == [0.2, 0.4, 0.8, 1.6] and r.data.attempts == 5  # the next 2 s would pass the deadline
    # without --wait: one request, no sleep
    t2 = FakeTime()
    r = run_shutdown(c, Controllers([reply(0, remaining=2)], c), t2)
    assert r.exit_code == ExitCode.CONDITION_NOT_MET and r.data.attempts == 1 and t2.slept == []


def test_shutdown_stale_epoch_is_final() -> None:
    c, t = ControllerCluster(), FakeTime()
    ctl = Controllers([reply(77)], c)
    r = run_shutdown(c, ctl, t, epoch=5)
    assert r.exit_code == ExitCode.REJECTED and r.data.error == "STALE_BROKER_EPOCH"
    assert r.data.attempts == 1 and t.slept == [] and ctl.requests == [(1, 2, 5)]


def test_shutdown_unreachable_controller_retries_only_when_it_moved() -> None:
    c, t = ControllerCluster(), FakeTime()
    ctl = Controllers([ClusterUnreachable("controller 1 went away"), reply(0)], c, moves={1: 2})
    r = run_shutdown(c, ctl, t)
    assert r.exit_code == ExitCode.OK and ctl.requests == [(1, 2, 20), (2, 2, 20)] and t.slept == [0.2]

    c, t = ControllerCluster(), FakeTime()
    ctl = Controllers([ClusterUnreachable("controller 1 is down")], c)  # and /controller still names it
    with pytest.raises(ClusterUnreachable, match="controller 1 is down"):
        run_shutdown(c, ctl, t)
    assert t.slept == [] and ctl.closed == 1


# ---------------------------------------------------------------------------- brokers wait --in-sync
@dataclass
class IsrCluster:
    partitions: list[PartitionState]
    changes: list[list[tuple[tuple[str, int], tuple[int, ...] | None]]]
    time: FakeTime = field(default_factory=FakeTime)
    step: float = 1.0
    watched: list[tuple[list[tuple[str, int]], float]] = field(default_factory=list)
    settled: Callable[[tuple[int, ...]], bool] | None = None
    # KRaft's answers, one per read (the last repeats): the brokers' log dirs, and the live (unfenced) brokers
    coverages: list[Coverage | None] = field(default_factory=lambda: [None])
    lives: list[frozenset[int]] = field(default_factory=lambda: [frozenset({1, 2, 3})])
    slept: list[float] = field(default_factory=list)

    def scan_partitions(self, topics: Any = None, progress: Any = None, min_isr_default: Any = None) -> PartitionScan:
        self.time.now += 0.5  # the scan itself takes time
        return PartitionScan(self.partitions, self.lives[0])

    def coverage(self, brokers: Any = None) -> Coverage | None:
        return self.coverages.pop(0) if len(self.coverages) > 1 else self.coverages[0]

    def live_brokers(self, fresh: bool = True) -> frozenset[int]:
        return self.lives.pop(0) if len(self.lives) > 1 else self.lives[0]

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.time.now += seconds

    def watch_states(self, keys: Sequence[tuple[str, int]], timeout: float,
                     settled: Callable[[tuple[int, ...]], bool] | None = None) -> Iterator[list[Any]]:
        self.watched.append((list(keys), timeout))
        self.settled = settled
        for batch in self.changes:
            self.time.now += self.step
            yield batch


def part(p: int, replicas: tuple[int, ...], isr: tuple[int, ...]) -> PartitionState:
    return PartitionState("t", p, replicas, isr, leader=isr[0], leader_epoch=1, partition_epoch=1)


def test_wait_in_sync_watches_only_the_waiting_partitions_until_all_rejoin() -> None:
    c = IsrCluster([part(0, (1, 2), (2,)), part(1, (2, 1), (2,)), part(2, (2, 3), (2, 3)), part(3, (1, 2), (1, 2))],
                   [[(("t", 0), (2, 1))], [(("t", 2), (2,))], [(("t", 1), None)], [(("t", 1), (2, 1))]])
    said: list[str] = []
    r = partitions.wait_in_sync(c, 1, timeout=30, on_status=said.append, clock=c.time)
    assert r.exit_code == ExitCode.OK and r.data.in_sync is True and r.data.hosted_partitions == 3
    assert c.watched == [([("t", 0), ("t", 1)], 29.5)]  # its timeout less the scan's time
    # said at the start and then once per change of what waits, not once per change seen
    assert said == ["broker 1 back in the ISR of 1 of 3 partitions; not yet in the ISR of 2 partitions: t-0, t-1",
                    "broker 1 back in the ISR of 2 of 3 partitions; not yet in the ISR of 1 partition: t-1"]
    assert r.data.waited_ms == 4500
    # a partition is followed until the broker is in its ISR: the cluster stops reading/polling it then
    assert c.settled is not None and c.settled((2, 1)) and not c.settled((2, 3))


def test_wait_in_sync_that_times_out_names_the_partitions() -> None:
    c = IsrCluster([part(0, (1, 2), (2,)), part(1, (2, 1), (2,))], [[(("t", 0), (2, 1))]], step=9.5)
    r = partitions.wait_in_sync(c, 1, timeout=10, clock=c.time)
    assert r.exit_code == ExitCode.CONDITION_NOT_MET and r.data.waiting == (TopicPartition("t", 1),)
    assert r.message == "timed out after 10s: broker 1 is still missing from the ISR of 1 partition: t-1"
    assert r.data.waited_ms == 10_000


def test_wait_in_sync_already_in_sync_watches_nothing() -> None:
    c = IsrCluster([part(0, (1, 2), (2, 1))], [])
    r = partitions.wait_in_sync(c, 1, timeout=10, clock=c.time)
    assert r.exit_code == ExitCode.OK and c.watched == [] and r.data.waited_ms == 500


# ---------------------------------------------------------------------------- ids claim
@dataclass
class IdCluster:
    """Every write_mapping loses the race `lose` times, then succeeds."""

    lose: int
    reads: int = 0
    writes: list[dict[str, Any]] = field(default_factory=list)

    def id_state(self, with_assignments: bool = True, progress: Any = None) -> IdState:
        self.reads += 1
        return IdState(registered={}, mappings={}, seqid_version=-1, hosts_version=self.reads, assigned={})

    def write_mapping(self, host: str, broker_id: int | None, **kw: Any) -> None:
        self.writes.append({"host": host, "broker_id": broker_id, **kw})
        if len(self.writes) <= self.lose:
            raise Contention("version check failed")


def test_claim_reads_again_and_backs_off_after_each_lost_race() -> None:
    c, t = IdCluster(lose=3), FakeTime()
    r = ids.claim(c, "h1", 7, None, 1000, dry_run=False, sleep=t.sleep)
    assert r.exit_code == ExitCode.OK and r.data.broker_id == 7 and r.data.attempts == 4
    assert c.reads == 4  # a fresh read before every attempt ...
    assert [w["hosts_version"] for w in c.writes] == [1, 2, 3, 4]  # ... whose versions guard the write
    assert t.slept == pytest.approx([0.01, 0.02, 0.03])


def test_claim_gives_up_after_max_attempts_with_a_capped_backoff() -> None:
    c, t = IdCluster(lose=10**6), FakeTime()
    with pytest.raises(KadminError, match=f"gave up after {ids.MAX_ATTEMPTS} attempts") as e:
        ids.claim(c, "h1", 7, None, 1000, dry_run=False, sleep=t.sleep)
    assert e.value.code == "contention"
    assert len(c.writes) == len(t.slept) == ids.MAX_ATTEMPTS
    assert max(t.slept) == 0.2 and t.slept[:3] == pytest.approx([0.01, 0.02, 0.03])


def logdirs(hosted: dict[int, set[tuple[str, int]]], unread: dict[int, str] | None = None) -> Coverage:
    return Coverage({b: frozenset(k) for b, k in hosted.items()}, unread or {}, frozenset({1, 2, 3}))


def test_wait_in_sync_on_kraft_is_not_met_for_a_partition_the_principal_cannot_see() -> None:
    """Issue 20: broker 1's log dirs list `hidden-0`, which DescribeTopicPartitions did not show: whether 1 is in
    its ISR is unknown, so the wait is not met, at once (no visibility comes with time), naming the ACL."""
    c = IsrCluster([part(0, (1, 2), (2, 1))], [], coverages=[logdirs({1: {("t", 0), ("hidden", 0)}})])
    r = partitions.wait_in_sync(c, 1, timeout=10, clock=c.time, sleep=c.sleep)
    assert r.exit_code == ExitCode.CONDITION_NOT_MET and r.data.in_sync is False and c.slept == []
    assert [(u["topic"], u["partition"]) for u in r.data.to_json()["unseen"]] == [("hidden", 0)]
    assert "Describe on Topic:hidden" in r.message


def test_wait_in_sync_on_kraft_waits_for_the_broker_to_be_unfenced() -> None:
    """In every ISR but fenced (Kafka keeps a fenced sole ISR member while ELR is off): met once it is unfenced."""
    c = IsrCluster([part(0, (1, 2), (2, 1))], [], coverages=[logdirs({1: {("t", 0)}})],
                   lives=[frozenset({2, 3}), frozenset({2, 3}), frozenset({2, 3}), frozenset({1, 2, 3})])
    said: list[str] = []
    r = partitions.wait_in_sync(c, 1, timeout=10, clock=c.time, sleep=c.sleep, on_status=said.append)
    assert r.exit_code == ExitCode.OK and r.data.in_sync is True and r.data.live is True
    assert len(c.slept) == 3 and said == ["broker 1 is in every ISR it belongs in but is not live (fenced)"]


def test_wait_in_sync_on_kraft_times_out_while_the_broker_stays_fenced() -> None:
    c = IsrCluster([part(0, (1, 2), (2, 1))], [], coverages=[logdirs({1: {("t", 0)}})], lives=[frozenset({2, 3})])
    r = partitions.wait_in_sync(c, 1, timeout=5, clock=c.time, sleep=c.sleep)
    assert r.exit_code == ExitCode.CONDITION_NOT_MET and r.data.live is False and r.data.waiting == ()
    assert r.message == "timed out after 5s: broker 1 is in every ISR it belongs in, but it is not live (fenced)"


def test_wait_in_sync_on_kraft_asks_again_for_log_dirs_not_listable_yet() -> None:
    """The broker still starting: its log dirs are asked for again until they are listed (then met)."""
    c = IsrCluster([part(0, (1, 2), (2, 1))], [], coverages=[
        logdirs({}, {1: "its log dirs could not be listed (cannot reach)"}),
        logdirs({}, {1: "its log dirs could not be listed (cannot reach)"}), logdirs({1: {("t", 0)}})])
    r = partitions.wait_in_sync(c, 1, timeout=10, clock=c.time, sleep=c.sleep)
    assert r.exit_code == ExitCode.OK and r.data.unseen == () and len(c.slept) == 1


def test_wait_in_sync_on_kraft_ends_at_once_when_the_log_dirs_are_refused() -> None:
    """No Describe on the Cluster: asking again will not help, so the wait is not met at once (not at the timeout)."""
    refused = Coverage({}, {1: "its log dirs could not be listed (CLUSTER_AUTHORIZATION_FAILED)"}, frozenset({1, 2, 3}),
                       frozenset({1}))
    c = IsrCluster([part(0, (1, 2), (2,))], [], coverages=[refused])
    r = partitions.wait_in_sync(c, 1, timeout=300, clock=c.time, sleep=c.sleep)
    assert r.exit_code == ExitCode.CONDITION_NOT_MET and c.watched == [] and c.slept == []
    assert "CLUSTER_AUTHORIZATION_FAILED" in r.message and r.data.unseen[0].broker_id == 1
