"""`kadmin partitions`, `brokers can-stop` and `brokers wait --in-sync` against Kafka-format znodes."""

from __future__ import annotations

import json
import threading

import pytest

from kadmin.sandbox.fleet import BrokerSpec
from tests.support.zkwatch import wait_for_new_watcher, watchers

pytestmark = pytest.mark.integration

ROW_KEYS = {"topic", "partition", "leader", "leader_epoch", "partition_epoch", "replicas", "isr", "adding_replicas",
            "removing_replicas", "elr", "last_known_elr", "min_isr", "topic_id", "min_isr_source", "effective_min_isr",
            "deleting"}


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
    # moving-0: ISR 1,2 of replicas 1,2,3 while 3 is being added: not under-replicated (TopicCommand's RF is 3 - 1)
    (["--under-replicated"], {("legacy", 1), ("orders", 1), ("orders", 2), ("orders", 3)}),
    (["--offline"], {("orders", 1), ("orders", 3)}),
    (["--under-min-isr"], {("orders", 1), ("orders", 3)}),
    (["--at-min-isr"], {("legacy", 1), ("orders", 2)}),  # legacy-1: ISR [2] with the default min ISR 1
    (["--offline", "--at-min-isr"], {("legacy", 1), ("orders", 1), ("orders", 2), ("orders", 3)}),
    (["--unavailable"], {("orders", 1), ("orders", 3)}),  # kafka-topics' name for --offline
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
    assert r.exit_code == 0 and "OK: 1 partition healthy" in r.stderr
    code, doc, _ = run.json("partitions", "check")
    assert (code, doc["status"], doc["exit_code"], doc["data"]["status"]) == (0, "ok", 0, "ok")
    kz.set("/brokers/topics/a/partitions/0/state", state(1, [1, 2]))
    code, doc, _ = run.json("partitions", "check")
    assert code == 1 and doc["data"]["status"] == "warning"
    assert (doc["status"], doc["exit_code"]) == ("warning", 1)  # the envelope agrees (it said "success")
    assert doc["data"]["findings"] == [{"topic": "a", "partition": 0, "reasons": ["under-replicated (ISR 2 of 3)"]}]
    kz.set("/brokers/topics/a/partitions/0/state", state(1, [1]))
    r = run("partitions", "check")
    assert r.exit_code == 2 and "a\t0" not in r.stdout and "under min ISR (1 < 2)" in r.stdout
    code, doc, _ = run.json("partitions", "check")
    assert (code, doc["status"], doc["exit_code"], doc["data"]["status"]) == (2, "critical", 2, "critical")


def test_can_stop(run, fleet, kz):
    for i in (1, 2, 3):
        fleet.register(BrokerSpec(i))
    put_topic(kz, "safe", {"version": 3, "partitions": {"0": [1, 2, 3]}}, {0: state(1, [1, 2, 3])}, min_isr=2)
    assert run("brokers", "can-stop", "1").exit_code == 0
    put_topic(kz, "tight", {"version": 3, "partitions": {"0": [1, 2, 3]}}, {0: state(2, [1, 2])}, min_isr=2)
    put_topic(kz, "rf1", {"version": 3, "partitions": {"0": [1]}}, {0: state(1, [1])}, min_isr=2)
    code, doc, err = run.json("brokers", "can-stop", "1")
    assert code == 1 and doc["data"]["safe"] is False and doc["data"]["hosted_partitions"] == 3
    # rf1: RF 1 below min ISR 2 is writable since Kafka 3.7 (effective min ISR 1); stopping 1 takes it offline
    assert [(b["topic"], b["partition"], b["reason"].split(":")[0]) for b in doc["data"]["blocking"]] == [
        ("rf1", 0, "would go offline"), ("tight", 0, "ISR would drop to 1 (2), below min.insync.replicas 2")]
    assert doc["data"]["never_satisfiable"] == []
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
    assert "not yet in the ISR of 1 partition: t-1" in err


def test_plain_outputs_of_the_partition_commands(run, cluster):
    r = run("partitions", "list", "--topic", "orders")
    assert r.stdout.splitlines()[0].split() == ["TOPIC", "PARTITION", "LEADER", "LEADER_EPOCH", "PARTITION_EPOCH",
                                                "REPLICAS", "ISR", "MIN_ISR", "ADDING", "REMOVING", "MIN_ISR_SOURCE",
                                                "DELETING"]
    assert r.stdout.splitlines()[1].split() == ["orders", "0", "1", "3", "0", "1,2,3", "1,2,3", "2", "-", "-",
                                                "topic", "-"]
    r = run("brokers", "wait", "1", "--in-sync", "--timeout", "0.3")
    assert r.exit_code == 1 and r.stdout.startswith("1\tin_sync\tnot-met\t")
    r = run("brokers", "can-stop", "2", "-o", "table")
    assert "VERDICT" in r.stdout


def config(values):
    return json.dumps({"version": 1, "config": values}, separators=(",", ":")).encode()


def test_min_isr_falls_back_to_the_leaders_broker_config_then_the_cluster_default(run, fleet, kz):
    """Kafka's order: /config/topics/<t>, /config/brokers/<leader>, /config/brokers/<default>, static."""
    for i in (1, 2, 3):
        fleet.register(BrokerSpec(i))
    put_topic(kz, "own", {"version": 3, "partitions": {"0": [1, 2, 3]}}, {0: state(1, [1, 2, 3])}, min_isr=1)
    put_topic(kz, "t", {"version": 3, "partitions": {"0": [1, 2, 3], "1": [2, 3, 1], "2": [3, 1, 2], "3": [2, 1]}},
              {0: state(1, [1, 2, 3]), 1: state(2, [2, 3, 1]), 2: state(3, [3, 1, 2]), 3: state(-1, [2])})
    rows = rows_by_key(run.json("partitions", "list", "--min-isr-default", "2")[1])
    assert {r["min_isr_source"] for r in rows.values() if r["topic"] == "t"} == {"default"}
    kz.create("/config/brokers/<default>", config({"min.insync.replicas": "2", "log.retention.ms": "1000"}),
              makepath=True)
    kz.create("/config/brokers/1", config({"min.insync.replicas": "3"}))
    kz.create("/config/brokers/2", config({"leader.replication.throttled.rate": "1"}))  # no min ISR of its own
    code, doc, err = run.json("partitions", "list")
    assert code == 0, err
    got = {k: (r["min_isr"], r["min_isr_source"], r["effective_min_isr"]) for k, r in rows_by_key(doc).items()}
    assert got == {
        ("own", 0): (1, "topic", 1),
        ("t", 0): (3, "broker:1", 3),  # led by 1
        ("t", 1): (2, "cluster-default", 2),  # led by 2
        ("t", 2): (2, "cluster-default", 2),
        ("t", 3): (3, "broker:1", 2),  # no leader: the strictest replica (1) would apply 3, capped by RF 2
    }
    assert set(rows_by_key(run.json("partitions", "list", "--at-min-isr")[1])) == {("t", 0)}  # ISR 3 = broker 1's 3
    r = run("partitions", "list", "--topic", "t")
    assert [line.split()[-2] for line in r.stdout.splitlines()[1:]] == ["broker:1", "cluster-default",
                                                                       "cluster-default", "broker:1"]
    # can-stop judges with the min ISR of the leader after the stop. Stopping 3: 1 keeps leading t-0 with
    # ISR 1,2 below its 3, and 1 (first in t-2's assignment still in sync) takes t-2 over, with its 3 too;
    # t-1 stays with 2 (the default 2: ISR 2,1 is enough)
    code, doc, _ = run.json("brokers", "can-stop", "3")
    assert code == 1 and [(b["topic"], b["partition"]) for b in doc["data"]["blocking"]] == [("t", 0), ("t", 2)]
    assert all(b["reason"].endswith("below min.insync.replicas 3 (leader 1, broker:1)")
               for b in doc["data"]["blocking"])
    # stopping 1: 2 takes t-0 over (default 2: ISR 2,3 is enough); only t-3 (ISR 2 alone, no leader) blocks
    code, doc, _ = run.json("brokers", "can-stop", "1")
    assert code == 1 and [(b["topic"], b["partition"]) for b in doc["data"]["blocking"]] == [("t", 3)]


def test_unparsable_broker_level_min_isr_is_named_and_blocks(run, fleet, kz):
    for i in (1, 2, 3):
        fleet.register(BrokerSpec(i))
    put_topic(kz, "own", {"version": 3, "partitions": {"0": [1, 2, 3]}}, {0: state(1, [1, 2, 3])}, min_isr=1)
    put_topic(kz, "t", {"version": 3, "partitions": {"0": [1, 3], "1": [2, 3], "2": [3, 2]}},
              {0: state(1, [1, 3]), 1: state(2, [2]), 2: state(3, [3, 2])})
    kz.create("/config/brokers/2", config({"min.insync.replicas": "two"}), makepath=True)
    code, doc, err = run.json("partitions", "check")
    assert code == 2 and "/config/brokers/2: min.insync.replicas is" in err  # the unparsable znode: CRITICAL
    # t-1 led by 2, short of a replica: its min ISR, unknown, decides; t-0 and own are not concerned; t-2 may be
    # led by 2 too, but with every replica in sync no min ISR is missed, whatever the value (issue 34 §2b)
    findings = {(f["topic"], f["partition"]): f["reasons"] for f in doc["data"]["findings"]}
    assert list(findings) == [("t", 1)] and any("min.insync.replicas unknown" in r for r in findings[("t", 1)])
    assert run("brokers", "can-stop", "3").exit_code == 1  # t-1 is hosted by 3: the verdict is not safe
    kz.set("/config/brokers/2", config({"min.insync.replicas": "1"}))
    kz.create("/config/brokers/<default>", b"{not json")
    code, doc, err = run.json("partitions", "check")
    assert code == 2 and "/config/brokers/<default>" in err
    # every partition without a value of its own may fall back to the default: only t-1's ISR is short of one
    assert [(f["topic"], f["partition"]) for f in doc["data"]["findings"]] == [("t", 1)]


def test_topics_queued_for_deletion_are_listed_marked_and_not_checked(run, fleet, kz):
    for i in (1, 2, 3):
        fleet.register(BrokerSpec(i))
    put_topic(kz, "fine", {"version": 3, "partitions": {"0": [1, 2, 3]}}, {0: state(1, [1, 2, 3])}, min_isr=2)
    put_topic(kz, "gone", {"version": 3, "partitions": {"0": [1, 3], "1": [3, 1]}},
              {0: state(-1, [1]), 1: state(-1, [1])})
    assert run("partitions", "check").exit_code == 2  # offline: critical while it is not being deleted
    kz.create("/admin/delete_topics/gone", makepath=True)
    code, doc, err = run.json("partitions", "check")
    assert code == 0 and doc["data"]["findings"] == [] and doc["data"]["deleting"] == ["gone"], err
    assert "1 topic queued for deletion not checked" in err
    rows = rows_by_key(run.json("partitions", "list")[1])
    assert {k: r["deleting"] for k, r in rows.items()} == {("fine", 0): False, ("gone", 0): True, ("gone", 1): True}
    assert set(rows_by_key(run.json("partitions", "list", "--offline")[1])) == {("gone", 0), ("gone", 1)}
    r = run("partitions", "list", "--topic", "gone")
    assert [line.split()[-1] for line in r.stdout.splitlines()[1:]] == ["deleting", "deleting"]
    code, doc, _ = run.json("brokers", "can-stop", "3")
    assert code == 0 and doc["data"]["hosted_partitions"] == 1  # only fine-0 counts


def test_leaderless_partition_is_under_min_isr_whatever_its_isr(run, fleet, kz):
    """TopicCommand --under-min-isr-partitions: `!hasLeader() || isr.size() < minIsrCount()`."""
    for i in (1, 2, 3):
        fleet.register(BrokerSpec(i))
    put_topic(kz, "t", {"version": 3, "partitions": {"0": [1, 2], "1": [1, 2]}},
              {0: state(-1, [1, 2]), 1: state(4, [4, 1])})  # 1: the leader is not registered
    assert set(rows_by_key(run.json("partitions", "list", "--under-min-isr")[1])) == {("t", 0), ("t", 1)}


def test_replication_factor_below_min_isr_is_writable_since_kafka_3_7(run, fleet, kz):
    """KAFKA-15583: a leader enforces min(min.insync.replicas, replicas); RF 2 with min ISR 3 in full sync is
    at min ISR, not under it, and `check` is OK (TopicCommand 3.9 would list it under min ISR)."""
    for i in (1, 2, 3):
        fleet.register(BrokerSpec(i))
    put_topic(kz, "t", {"version": 3, "partitions": {"0": [1, 2]}}, {0: state(1, [1, 2])}, min_isr=3)
    r = run("partitions", "check")
    assert r.exit_code == 0, r.stdout + r.stderr
    assert set(rows_by_key(run.json("partitions", "list", "--at-min-isr")[1])) == {("t", 0)}
    assert set(rows_by_key(run.json("partitions", "list", "--under-min-isr")[1])) == set()
    kz.set("/brokers/topics/t/partitions/0/state", state(1, [1]))
    assert run("partitions", "check").exit_code == 2
