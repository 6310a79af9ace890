"""A scan streams: `partitions check` and `ids missing` keep only what their verdict needs (issue 13 §4).

20,000 partitions (400 topics x 50) on a real ZooKeeper, seeded with the BulkWriter; brokers 1-3
registered, broker 7 (never registered) named as a replica of every 100th partition, broker 1
out of the ISR of every 37th.
"""

from __future__ import annotations

import gc
import tracemalloc
import weakref
from typing import Any

import pytest

from kadmin.cluster.zookeeper import ZkCluster, ZkConnection
from kadmin.domain import partitions as rules
from kadmin.domain import znodes
from kadmin.payloads import TopicPartition
from kadmin.sandbox.bulk_writer import BulkWriter
from kadmin.sandbox.fleet import BrokerSpec
from kadmin.services import ids as ids_svc
from kadmin.services import partitions as svc

pytestmark = pytest.mark.integration

TOPICS, PARTS = 400, 50
CONFIG = b'{"version":1,"config":{"min.insync.replicas":"2"}}'


def layout(g: int) -> tuple[list[int], list[int]]:
    """(replicas, isr) of global partition g."""
    reps = [(g + k) % 3 + 1 for k in range(3)]
    if g % 100 == 0:
        reps[2] = 7
    isr = [b for b in reps if b != 7 and not (g % 37 == 0 and g % 100 != 0 and b == 1)]
    return reps, isr


def items() -> Any:
    for t in range(TOPICS):
        name = f"t{t:04d}"
        parts = {p: layout(t * PARTS + p) for p in range(PARTS)}
        yield f"/brokers/topics/{name}", znodes.encode_topic({p: r for p, (r, _) in parts.items()}, topic_id=None)
        yield f"/brokers/topics/{name}/partitions", None
        for p, (reps, isr) in parts.items():
            yield f"/brokers/topics/{name}/partitions/{p}", None
            leader = reps[0] if reps[0] in isr else isr[0]
            yield f"/brokers/topics/{name}/partitions/{p}/state", znodes.encode_partition_state(leader, 0, 1, isr)
        yield f"/config/topics/{name}", CONFIG


@pytest.fixture
def big(fleet, zk_server, chroot, zk):
    for b in (1, 2, 3):
        fleet.register(BrokerSpec(b))
    with BulkWriter(zk_server.hosts, chroot=chroot, timeout=30) as w:
        w.create_many(items())
    hosts, _, root = zk.partition("/")
    c = ZkCluster(ZkConnection(hosts=hosts, chroot="/" + root)).start()
    yield c
    c.close()


def peak_bytes(fn: Any) -> tuple[Any, int]:
    gc.collect()
    tracemalloc.start()
    try:
        got = fn()
        return got, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_check_streams_the_states_and_answers_as_the_whole_scan_does(big):
    result, peak = peak_bytes(lambda: svc.check(big))
    # the answer is the one the rules give over the whole scan held in a list
    s = big.scan_partitions()
    found = rules.findings(s.partitions, s.live, s.unreadable)
    assert len(s.partitions) == TOPICS * PARTS
    assert result.data.partitions == TOPICS * PARTS
    assert result.data.status == rules.health(s.partitions, s.live, s.unreadable).name.lower() == "warning"
    assert result.data.to_json()["findings"] == [{"topic": f.topic, "partition": f.partition,
                                                  "reasons": list(f.reasons)} for f in found]
    assert len(found) == len({g for g in range(TOPICS * PARTS) if g % 100 == 0 or g % 37 == 0})
    # 20,000 PartitionStates held at once take ~8 MB; streamed, the topic assignments are what stays
    _, whole = peak_bytes(lambda: big.scan_partitions())
    assert whole > 6_000_000
    assert peak < whole / 2, f"check peaked at {peak:,} bytes (the whole scan: {whole:,})"


def test_each_partition_is_dropped_once_consumed(big):
    s = big.iter_partitions()
    alive: list[weakref.ref[Any]] = []
    n = 0
    for p in s.partitions:
        alive.append(weakref.ref(p))
        n += 1
    del p
    gc.collect()
    assert n == TOPICS * PARTS
    assert sum(1 for r in alive if r() is not None) == 0
    assert s.problems == []


def test_id_state_keeps_the_assignments_of_unregistered_ids_only(big):
    st = big.id_state()
    assert set(st.assigned) == {7}
    assert len(st.assigned[7]) == TOPICS * PARTS // 100
    doc = ids_svc.missing(big).data
    assert [(m.broker_id, m.partitions) for m in doc] == [(7, TOPICS * PARTS // 100)]
    assert doc[0].assignments[:2] == (TopicPartition("t0000", 0), TopicPartition("t0002", 0))


def test_list_streams_and_still_knows_every_broker_an_assignment_names(run, fleet, kz):
    fleet.register(BrokerSpec(1))
    fleet.create_topic("a", {0: [1], 1: [1]})
    fleet.create_topic("b", {0: [1, 7]})  # broker 7 is named by the last partition read only
    code, doc, _ = run.json("partitions", "list", "--broker", "7")
    assert code == 0 and [(r["topic"], r["partition"]) for r in doc["data"]] == [("b", 0)]
    r = run("partitions", "list", "--broker", "99")
    assert r.exit_code == 1 and "no broker 99" in r.stderr
    code, doc, _ = run.json("partitions", "list")
    assert [(r["topic"], r["partition"]) for r in doc["data"]] == [("a", 0), ("a", 1), ("b", 0)]
