"""`kadmin partitions`, `brokers can-stop` and `brokers wait --in-sync` against Kafka-format znodes."""

from __future__ import annotations

import json
import threading

import pytest

from kadmin.sandbox.fleet import BrokerSpec
from tests.zkwatch import wait_for_new_watcher, watchers

pytestmark = pytest.mark.integration

ROW_KEYS = {"topic", "partition", "leader", "leader_epoch", "partition_epoch", "replicas", "isr", "adding_replicas",
            "removing_replicas", "min_isr", "topic_id"}


def state(leader, isr, leader_epoch=0, controller_epoch=1, lrs=None):
    doc = {"version": 1, "leader": leader, "leader_epoch": leader_epoch, "controller_epoch": controller_epoch,
           "isr": isr}
    if lrs is not None:
        doc["leader_recovery_state"] = lrs
    return json.dumps(doc, separators=(",", ":")).encode()


def put_topic(kz, name, topic_doc, states, min_isr=None):
    kz.create(f"/brokers/topics/{name}", json.dumps(topic_doc, separators=(",", ":")).encode())
    for p, data in states.items():
        kz.create(f"/brokers/topics/{name}/partitions/{p}", None, makepath=True)
        if data is not None:
            kz.create(f"/brokers/topics/{name}/partitions/{p}/state", data)
    if min_isr is not None:
        kz.create(f"/config/topics/{name}", json.dumps({"version": 1, "config": {"min.insync.replicas": str(min_isr)}})
                  .encode())


@pytest.fixture
def cluster(fleet, kz):
    for i in (1, 2, 3):
        fleet.register(BrokerSpec(i))
    # v1 (2.3): only partitions
    put_topic(kz, "legacy", {"version": 1, "partitions": {"0": [1, 2], "1": [2, 3]}},
              {0: state(1, [1, 2]), 1: state(2, [2])})
    # v2 (2.4): reassignment in progress
    put_topic(kz, "moving", {"version": 2, "partitions": {"0": [1, 2, 3]}, "adding_replicas": {"0": [3]},
                             "removing_replicas": {}}, {0: state(1, [1, 2], leader_epoch=5)})
    # v3 (3.9) with topic_id, min ISR 2, a leaderless partition, one recovering, one without state
    put_topic(kz, "orders", {"version": 3, "topic_id": "QmFzZTY0VG9waWNJZEFBQQ", "partitions":
                             {"0": [1, 2, 3], "1": [2, 3, 1], "2": [3, 1, 2], "3": [1, 2, 3]},
                             "adding_replicas": {}, "removing_replicas": {}},
              {0: state(1, [1, 2, 3], leader_epoch=3), 1: state(-1, [2]), 2: state(3, [3, 1], lrs=1), 3: None},
              min_isr=2)
    return kz


def rows_by_key(doc):
    return {(r["topic"], r["partition"]): r for r in doc["data"]}


def test_list_reads_topic_versions_states_and_configs(run, cluster):
    kz = cluster
    code, doc, err = run.json("partitions", "list")
    assert code == 5  # the missing state znode makes the result partial
    assert doc["status"] == "partial" and any("orders/partitions/3/state" in e["message"] for e in doc["errors"])
    rows = rows_by_key(doc)
    assert all(set(r) == ROW_KEYS for r in rows.values())
    assert len(rows) == 7
    assert rows[("legacy", 0)]["min_isr"] == 1 and rows[("legacy", 0)]["topic_id"] is None
    assert rows[("moving", 0)]["adding_replicas"] == [3] and rows[("moving", 0)]["leader_epoch"] == 5
    o0 = rows[("orders", 0)]
    assert (o0["leader"], o0["isr"], o0["min_isr"], o0["topic_id"]) == (1, [1, 2, 3], 2, "QmFzZTY0VG9waWNJZEFBQQ")
    assert o0["partition_epoch"] == kz.get("/brokers/topics/orders/partitions/0/state")[1].version
    assert rows[("orders", 1)]["leader"] == -1
    assert rows[("orders", 3)]["leader"] is None and rows[("orders", 3)]["isr"] == []
    kz.set("/brokers/topics/orders/partitions/0/state", state(2, [2, 3], leader_epoch=4))
    again = rows_by_key(run.json("partitions", "list", "--topic", "orders")[1])
    assert again[("orders", 0)]["partition_epoch"] == o0["partition_epoch"] + 1  # the zkVersion
    assert set(again) == {("orders", p) for p in range(4)}


@pytest.mark.parametrize("flags, expected", [
    (["--under-replicated"], {("legacy", 1), ("moving", 0), ("orders", 1), ("orders", 2), ("orders", 3)}),
    (["--offline"], {("orders", 1), ("orders", 3)}),
    (["--under-min-isr"], {("orders", 1), ("orders", 3)}),
    (["--at-min-isr"], {("legacy", 1), ("orders", 2)}),  # legacy-1: ISR [2] with the default min ISR 1
    (["--offline", "--at-min-isr"], {("legacy", 1), ("orders", 1), ("orders", 2), ("orders", 3)}),
    (["--broker", "1", "--topic", "legacy"], {("legacy", 0)}),
])
def test_filters(run, cluster, flags, expected):
    _, doc, _ = run.json("partitions", "list", *flags)
    assert set(rows_by_key(doc)) == expected


def test_min_isr_default(run, cluster):
    _, doc, _ = run.json("partitions", "list", "--topic", "legacy", "--min-isr-default", "2")
    assert {r["min_isr"] for r in doc["data"]} == {2}


def test_invalid_state_json_is_named(run, cluster):
    cluster.set("/brokers/topics/legacy/partitions/0/state", b'{"version":1,"leader":')
    code, doc, err = run.json("partitions", "list", "--topic", "legacy")
    assert code == 5 and "legacy/partitions/0/state: invalid JSON" in err
    assert rows_by_key(doc)[("legacy", 0)]["leader"] is None


def test_check_exit_codes(run, fleet, kz):
    for i in (1, 2, 3):
        fleet.register(BrokerSpec(i))
    put_topic(kz, "a", {"version": 3, "partitions": {"0": [1, 2, 3]}}, {0: state(1, [1, 2, 3])}, min_isr=2)
    r = run("partitions", "check")
    assert r.exit_code == 0 and "OK: 1 partitions healthy" in r.stderr
    kz.set("/brokers/topics/a/partitions/0/state", state(1, [1, 2]))
    code, doc, _ = run.json("partitions", "check")
    assert code == 1 and doc["data"]["status"] == "warning"
    assert doc["data"]["findings"] == [{"topic": "a", "partition": 0, "reasons": ["under-replicated (ISR 2 of 3)"]}]
    kz.set("/brokers/topics/a/partitions/0/state", state(1, [1]))
    r = run("partitions", "check")
    assert r.exit_code == 2 and "a\t0" not in r.stdout and "under min ISR (1 < 2)" in r.stdout


def test_can_stop(run, fleet, kz):
    for i in (1, 2, 3):
        fleet.register(BrokerSpec(i))
    put_topic(kz, "safe", {"version": 3, "partitions": {"0": [1, 2, 3]}}, {0: state(1, [1, 2, 3])}, min_isr=2)
    assert run("brokers", "can-stop", "1").exit_code == 0
    put_topic(kz, "tight", {"version": 3, "partitions": {"0": [1, 2, 3]}}, {0: state(2, [1, 2])}, min_isr=2)
    put_topic(kz, "rf1", {"version": 3, "partitions": {"0": [1]}}, {0: state(1, [1])}, min_isr=2)
    code, doc, err = run.json("brokers", "can-stop", "1")
    assert code == 1 and doc["data"]["safe"] is False and doc["data"]["hosted_partitions"] == 3
    assert [(b["topic"], b["partition"]) for b in doc["data"]["blocking"]] == [("tight", 0)]
    assert [(b["topic"], b["partition"]) for b in doc["data"]["never_satisfiable"]] == [("rf1", 0)]
    assert "cannot stop safely" in err
    assert run("brokers", "can-stop", "3").exit_code == 0  # 3 is not in tight's ISR, not in rf1


def test_wait_in_sync_follows_isr_changes(run, fleet, kz, zk_server, chroot):
    for i in (1, 2, 3):
        fleet.register(BrokerSpec(i))
    put_topic(kz, "t", {"version": 3, "partitions": {"0": [1, 2], "1": [2, 1], "2": [2, 3]}},
              {0: state(2, [2]), 1: state(2, [2]), 2: state(2, [2, 3])})
    r = run("brokers", "wait", "1", "--in-sync", "--timeout", "0.5")
    assert r.exit_code == 1 and "t-0, t-1" in r.stderr

    port, t0 = zk_server.servers[0].client_port, f"{chroot}/brokers/topics/t/partitions/0/state"
    before = watchers(port, t0)

    def rejoin():
        # once the wait watches t-0 (it has read every waiting partition) ...
        session = wait_for_new_watcher(port, t0, before)
        kz.set("/brokers/topics/t/partitions/0/state", state(2, [2, 1], leader_epoch=1))
        # ... and once it has re-read t-0 after that change (watching it again), so that it reports t-1 alone
        wait_for_new_watcher(port, t0, watchers(port, t0) - {session})
        kz.set("/brokers/topics/t/partitions/2/state", state(2, [2]))  # unrelated change
        kz.set("/brokers/topics/t/partitions/1/state", state(2, [2, 1], leader_epoch=1))

    th = threading.Thread(target=rejoin)
    th.start()
    code, doc, err = run.json("brokers", "wait", "1", "--in-sync", "--timeout", "120")
    th.join()
    assert code == 0, err
    assert doc["data"]["in_sync"] is True and doc["data"]["hosted_partitions"] == 2 and doc["data"]["waiting"] == []
    assert "not yet in the ISR of 2 partitions: t-0, t-1" in err
    assert "not yet in the ISR of 1 partitions: t-1" in err


def test_plain_outputs_of_the_partition_commands(run, cluster):
    r = run("partitions", "list", "--topic", "orders")
    assert r.stdout.splitlines()[0].split() == ["TOPIC", "PARTITION", "LEADER", "LEADER_EPOCH", "PARTITION_EPOCH",
                                                "REPLICAS", "ISR", "MIN_ISR", "ADDING", "REMOVING"]
    assert r.stdout.splitlines()[1].split()[:7] == ["orders", "0", "1", "3", "0", "1,2,3", "1,2,3"]
    r = run("brokers", "wait", "1", "--in-sync", "--timeout", "0.3")
    assert r.exit_code == 1 and r.stdout.startswith("1\tin_sync\tnot-met\t")
    r = run("brokers", "can-stop", "2", "-o", "table")
    assert "VERDICT" in r.stdout
