"""`kadmin ids` against a real ZooKeeper: every branch of seed 002's procedure, claims, repairs."""

from __future__ import annotations

import json

import pytest

from kadmin.sandbox.fleet import BrokerSpec

pytestmark = pytest.mark.integration


@pytest.fixture
def cluster(fleet, kz):
    """Brokers 1 and 2 live (registered from 127.0.0.1); topic t assigns 1, 2 and 3 (3 is missing)."""
    fleet.register(BrokerSpec(1))
    fleet.register(BrokerSpec(2))
    fleet.create_topic("t", {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]})
    return kz


def resolve(run, *args):
    code, doc, err = run.json("ids", "resolve", *args)
    return code, doc["data"], err


def test_every_rule(run, cluster, tmp_path):
    kz = cluster
    assert resolve(run, "--host", "x", "--config-id", "7")[1]["rule"] == "config"
    meta = tmp_path / "meta.properties"
    meta.write_text("version=1\nnode.id=8\ncluster.id=abc\n")
    code, d, err = resolve(run, "--host", "x", "--config-id", "7", "--meta-properties", str(meta))
    assert code == 1 and "disagrees" in err
    assert resolve(run, "--host", "x", "--meta-properties", str(meta))[1]["broker_id"] == 8
    meta.write_text("version=0\nbroker.id=4\n")
    assert resolve(run, "--host", "x", "--meta-properties", str(meta))[1] == {
        "broker_id": 4, "rule": "meta.properties", "host": "x", "missing_ids": [], "detail":
        "the id stored with the data in meta.properties"}
    # the one missing id
    code, d, _ = resolve(run, "--host", "x")
    assert (code, d["broker_id"], d["rule"], d["missing_ids"]) == (0, 3, "missing-id", [3])
    # a second missing id: human intervention
    fleet_topic = json.dumps({"version": 3, "partitions": {"0": [4]}, "adding_replicas": {}, "removing_replicas": {}})
    kz.create("/brokers/topics/u", fleet_topic.encode())
    code, d, err = resolve(run, "--host", "x")
    assert code == 1 and "2 ids are missing (3, 4): human intervention needed" in err
    # a host mapping wins over missing ids
    kz.create("/brokers/hosts/x", b'{"version":0,"broker.id":3}', makepath=True)
    assert resolve(run, "--host", "x")[1]["rule"] == "host-mapping"
    # ... unless its id is registered from another host
    kz.set("/brokers/hosts/x", b'{"version":0,"broker.id":1}')
    code, _, err = resolve(run, "--host", "x")
    assert code == 1 and "skipped: broker 1 is registered from 127.0.0.1" in err
    kz.delete("/brokers/topics/u")
    code, d, _ = resolve(run, "--host", "x")
    assert (d["broker_id"], d["rule"]) == (3, "missing-id")


def test_new_ids_come_from_the_seqid_version(run, fleet, kz):
    fleet.register(BrokerSpec(1))
    v = kz.get("/brokers/seqid")[1].version
    r = run("ids", "resolve", "--host", "fresh", "-o", "plain")
    assert r.stdout == f"{v + 1 + 1000}\n"
    assert run("ids", "resolve", "--host", "fresh", "--reserved-max", "2000", "-o", "plain").stdout == f"{v + 2001}\n"


def test_claim_is_durable_and_idempotent(run, cluster):
    kz = cluster
    dry = run.json("ids", "claim", "--host", "fresh", "--dry-run")[1]["data"]
    assert dry["dry_run"] is True and not kz.exists("/brokers/hosts/fresh")
    code, doc, err = run.json("ids", "claim", "--host", "fresh")
    assert code == 0 and doc["data"]["rule"] == "missing-id" and doc["data"]["broker_id"] == 3
    assert kz.get("/brokers/hosts/fresh")[0] == b'{"version":0,"broker.id":3}'
    v = kz.get("/brokers/seqid")[1].version
    code, doc, _ = run.json("ids", "claim", "--host", "other")  # 3 is spoken for: a new id
    assert doc["data"]["broker_id"] == v + 1 + 1000 and doc["data"]["rule"] == "new-id"
    assert kz.get("/brokers/seqid")[1].version == v + 1
    again = run.json("ids", "claim", "--host", "other")[1]["data"]
    assert again["broker_id"] == doc["data"]["broker_id"] and again["writes"] == []
    assert kz.get("/brokers/seqid")[1].version == v + 1  # nothing consumed twice


def test_hosts_map_unmap_gc(run, cluster):
    kz = cluster
    assert run("ids", "map", "box-a", "3").exit_code == 0
    r = run("ids", "map", "box-b", "1")
    assert r.exit_code == 7 and "registered from 127.0.0.1" in r.stderr
    assert run("ids", "map", "box-b", "3").exit_code == 7  # box-a holds 3
    assert run("ids", "map", "box-c", "1", "--force").exit_code == 0
    rows = {h["host"]: h for h in run.json("ids", "hosts")[1]["data"]}
    assert rows["box-a"] == {"host": "box-a", "broker_id": 3, "registered": False, "registered_from": None}
    assert rows["box-c"]["registered_from"] == "127.0.0.1"
    dry = run.json("ids", "gc", "--dry-run")[1]["data"]
    assert [(g["host"], g["deleted"]) for g in dry] == [("box-c", False)] and kz.exists("/brokers/hosts/box-c")
    applied = run.json("ids", "gc")[1]["data"]
    assert applied[0]["deleted"] is True and not kz.exists("/brokers/hosts/box-c")
    assert run("ids", "unmap", "box-a").exit_code == 0 and not kz.exists("/brokers/hosts/box-a")
    assert run("ids", "unmap", "box-a").exit_code == 1


def test_missing_lists_partitions(run, cluster):
    code, doc, _ = run.json("ids", "missing")
    assert code == 0
    assert doc["data"] == [{"broker_id": 3, "partitions": 3, "mapped_host": None, "assignments": [
        {"topic": "t", "partition": 0}, {"topic": "t", "partition": 1}, {"topic": "t", "partition": 2}]}]


def test_missing_counts_an_id_a_reassignment_is_adding_once_a_partition(run, cluster):
    """Every current replica registered, an unregistered id being added (adding_replicas, also listed in the
    replicas as Kafka does during a reassignment, or only in adding): its partitions count, each once."""
    cluster.create("/brokers/topics/moving", json.dumps({
        "version": 3, "partitions": {"0": [1, 2, 5], "1": [2, 1], "2": [1, 2]}, "adding_replicas": {"0": [5], "1": [5]},
        "removing_replicas": {}}).encode())
    code, doc, _ = run.json("ids", "missing")
    assert code == 0
    by_id = {d["broker_id"]: d for d in doc["data"]}
    assert sorted(by_id) == [3, 5]
    assert by_id[5]["partitions"] == 2 and by_id[5]["assignments"] == [
        {"topic": "moving", "partition": 0}, {"topic": "moving", "partition": 1}]


def test_invalid_mapping_is_partial(run, cluster):
    cluster.create("/brokers/hosts/bad", b"{nope", makepath=True)
    code, doc, err = run.json("ids", "hosts")
    assert code == 5 and "/brokers/hosts/bad: invalid JSON" in err


def test_kraft_mode_says_ids_are_static(run_nozk):
    r = run_nozk("ids", "resolve", "--host", "x", "--bootstrap-server", "127.0.0.1:9092")
    assert r.exit_code == 3 and "static in KRaft" in r.stderr
