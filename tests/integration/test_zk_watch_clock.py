"""ZkCluster's one watch loop on its injected clock: real ZooKeeper watches, a fake clock for the deadline."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kadmin.cluster.zookeeper import ZkCluster, ZkConnection
from kadmin.domain import znodes
from kadmin.sandbox.fleet import BrokerSpec

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

HOUR = 3600.0


class Clock:
    """Monotonic seconds that move only when the test moves them."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def cluster(zk: str, fleet, clock: Clock) -> Iterator[ZkCluster]:  # fleet: Kafka's paths exist
    hosts, _, chroot = zk.partition("/")
    c = ZkCluster(ZkConnection(hosts=hosts, chroot="/" + chroot), clock=clock).start()
    yield c
    c.close()


def test_broker_watch_sees_changes_and_ends_at_its_deadline_on_the_injected_clock(cluster, fleet, clock):
    e1 = fleet.register(BrokerSpec(1))
    listeners = len(cluster.zk.state_listeners)
    ticks = cluster.watch_brokers(timeout=HOUR)
    first = next(ticks)
    assert first.reason == "initial" and set(first.generations) == {1}
    assert len(cluster.zk.state_listeners) == listeners + 1  # the loop's resync listener
    clock.now += HOUR - 1  # not yet: a change still comes through
    e2 = fleet.register(BrokerSpec(2))
    tick = next(ticks)
    assert tick.reason == "change" and not tick.resynced and set(tick.generations) == {1, 2}
    assert tick.generations[1].epoch == e1 and tick.generations[2].epoch == e2
    clock.now += 1  # the hour is up on the watch's clock (not on the wall's): it ends at once
    assert next(ticks, None) is None
    assert len(cluster.zk.state_listeners) == listeners  # and takes its listener with it


def test_state_watch_sees_an_isr_change_and_ends_at_its_deadline_on_the_injected_clock(cluster, fleet, kz, clock):
    for b in (1, 2):
        fleet.register(BrokerSpec(b))
    fleet.create_topic("t", {0: [1, 2], 1: [2, 1]})
    states = cluster.watch_states([("t", 0), ("t", 1)], timeout=HOUR)
    assert next(states) == [(("t", 0), (1, 2)), (("t", 1), (2, 1))]
    clock.now += HOUR / 2
    kz.set("/brokers/topics/t/partitions/1/state", znodes.encode_partition_state(2, 1, 1, [2]))
    assert next(states) == [(("t", 1), (2,))]  # one read: the znode that changed
    clock.now += HOUR / 2
    assert next(states, None) is None


def test_state_watch_no_longer_reads_a_settled_key(cluster, fleet, kz, clock):
    for b in (1, 2):
        fleet.register(BrokerSpec(b))
    fleet.create_topic("t", {0: [1, 2], 1: [2, 1]})
    state = "/brokers/topics/t/partitions/{}/state".format
    kz.set(state(1), znodes.encode_partition_state(2, 1, 1, [2]))
    states = cluster.watch_states([("t", 0), ("t", 1)], timeout=HOUR, settled=lambda isr: 1 in isr)
    assert next(states) == [(("t", 0), (1, 2)), (("t", 1), (2,))]  # t-0 is settled: yielded this once
    kz.set(state(0), znodes.encode_partition_state(1, 2, 2, [1]))  # fires the watch set on t-0: not read
    kz.set(state(0), znodes.encode_partition_state(1, 3, 3, [1, 2]))  # no watch on it any more
    kz.set(state(1), znodes.encode_partition_state(2, 1, 2, [2, 1]))
    assert next(states) == [(("t", 1), (2, 1))]  # only the key still followed
    kz.set(state(1), znodes.encode_partition_state(2, 1, 3, [2]))  # settled: no longer watched either
    clock.now += HOUR
    assert next(states, None) is None


def test_no_deadline_means_no_end(cluster, fleet, clock):
    ticks = cluster.watch_brokers(timeout=None)
    assert next(ticks).generations == {}
    clock.now += 100 * HOUR
    epoch = fleet.register(BrokerSpec(3))
    assert next(ticks).generations[3].epoch == epoch
    ticks.close()
