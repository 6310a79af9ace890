"""ZooKeeper mode with --bootstrap-server too: min.insync.replicas from DescribeConfigs (real Kafka 3.9.1).

Three real brokers run once for the module with a static `min.insync.replicas=2` in their
server.properties, which ZooKeeper cannot show: with --zookeeper only (and no --min-isr-default) kadmin
takes 1 and cannot know better; with --bootstrap-server too, `partitions list/check`, `brokers can-stop`
and `brokers wait --in-sync` take the brokers' answer (source "static"), and kadmin's under/at-min-ISR
sets equal TopicCommand's with a broker stopped. A topic value and a dynamic cluster default still win
where Kafka says so; when no broker answers, ZooKeeper and --min-isr-default stand and stderr says so.

Nothing waits on time: every state is waited for on the state znodes, and a comparison with TopicCommand
is repeated (until a deadline) only while the two differ (TopicCommand reads the brokers' metadata
caches, which follow ZooKeeper).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from kadmin.sandbox.ports import free_port
from kadmin.sandbox.zkserver import Ensemble
from tests.support.kafka import RealCluster, config_command, describe_all, settle, wait_for, zk_mode_cluster

pytestmark = [pytest.mark.kafka, pytest.mark.integration, pytest.mark.slow]

IDS = (1, 2, 3)
BROKER_EXTRA = {"min.insync.replicas": "2", "auto.leader.rebalance.enable": "false",
                "controlled.shutdown.max.retries": "1", "controlled.shutdown.retry.backoff.ms": "500"}
Key = tuple[str, int]
# name: ({partition: replicas}, topic configs). Broker 1 hosts only RF-3 partitions.
TOPICS: dict[str, tuple[dict[int, list[int]], dict[str, str]]] = {
    "s-rf3": ({0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]}, {}),  # relies on the static value 2
    "s-rf3-min1": ({0: [1, 2, 3]}, {"min.insync.replicas": "1"}),  # its own value wins
    "s-rf2": ({0: [2, 3]}, {}),
}
FILTERS = {"--under-min-isr": "--under-min-isr-partitions", "--at-min-isr": "--at-min-isr-partitions",
           "--under-replicated": "--under-replicated-partitions", "--offline": "--unavailable-partitions"}


@pytest.fixture(scope="module")
def kafka(zk_server: Ensemble, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealCluster]:
    from kafka.admin import KafkaAdminClient, NewTopic

    with zk_mode_cluster(zk_server, tmp_path_factory.mktemp("kafka39-min-isr"), IDS, extra=BROKER_EXTRA) as k:
        admin = KafkaAdminClient(bootstrap_servers=k.bootstrap, request_timeout_ms=120000)
        try:
            admin.create_topics([NewTopic(name, replica_assignments=a, topic_configs=c)
                                 for name, (a, c) in TOPICS.items()], timeout_ms=120000)
        finally:
            admin.close()
        want = {(t, p) for t, (a, _) in TOPICS.items() for p in a}
        wait_for(lambda: want <= {key for key, s in k.partition_states(TOPICS).items() if s["leader"] >= 0}, 300,
                 f"leaders for {sorted(want)}")
        yield k


def live_bootstrap(k: RealCluster) -> str:
    return ",".join(b.bootstrap for b in k.brokers.values() if b.alive())


def kadmin(k: RealCluster, *args: str, bootstrap: bool = True) -> tuple[int, Any, str]:
    # -z as a flag too: a --bootstrap-server flag alone would beat KADMIN_ZOOKEEPER (KRaft mode)
    extra = ["-z", k.zk, "--bootstrap-server", live_bootstrap(k)] if bootstrap else []
    r = k.run(*args, *extra, "-o", "json")
    doc = json.loads(r.stdout) if r.stdout.strip() else {}
    return r.exit_code, doc.get("data"), r.stderr


def kadmin_b_only(k: RealCluster, *args: str) -> tuple[int, Any, str]:
    """Through `--bootstrap-server` alone (KRaft's way in; the flag beats KADMIN_ZOOKEEPER): what an operator gets
    who points kadmin at a ZooKeeper-mode cluster's brokers only."""
    r = k.run(*args, "--bootstrap-server", live_bootstrap(k), "-o", "json")
    doc = json.loads(r.stdout) if r.stdout.strip() else {}
    return r.exit_code, doc, r.stderr


def rows(k: RealCluster, bootstrap: bool = True, *args: str) -> dict[Key, dict[str, Any]]:
    code, data, err = kadmin(k, "partitions", "list", *args, bootstrap=bootstrap)
    assert code == 0, err
    return {(r["topic"], r["partition"]): r for r in data if r["topic"] in TOPICS}


def views(k: RealCluster, bootstrap: bool = True) -> dict[str, set[Key]]:
    return {flag: set(rows(k, bootstrap, flag)) for flag in FILTERS}


def topic_command(k: RealCluster) -> dict[str, set[Key]]:
    return {flag: {key for key in describe_all(k, tc, bootstrap=live_bootstrap(k)) if key[0] in TOPICS}
            for flag, tc in FILTERS.items()}


def agree(k: RealCluster, timeout: float = 300.0) -> dict[str, set[Key]]:
    """kadmin (ZooKeeper + --bootstrap-server) and TopicCommand list the same partitions under each filter;
    retried only while they differ (the brokers' metadata caches lag ZooKeeper), up to `timeout`. The
    documented exception (KAFKA-15583, see tests/kafka/test_real_zk_partitions.py), a replica count below
    the configured min ISR, is left out of the comparison: TopicCommand 3.9 compares the ISR with the
    configured value, the leader and kadmin with min(min ISR, replicas)."""
    def attempt() -> tuple[dict[str, set[Key]] | None, str]:
        exc = {key for key, r in rows(k).items() if len(r["replicas"]) < r["min_isr"]}
        mine, theirs = views(k), topic_command(k)
        mine, theirs = {f: v - exc for f, v in mine.items()}, {f: v - exc for f, v in theirs.items()}
        if mine == theirs:
            return theirs, ""
        diffs = [f"{f}: kadmin only {sorted(mine[f] - theirs[f])}, TopicCommand only {sorted(theirs[f] - mine[f])}"
                 for f in FILTERS if mine[f] != theirs[f]]
        return None, "kadmin and TopicCommand disagree:\n" + "\n".join(diffs)

    return settle(attempt, timeout, interval=1.0)


def out_of_isr(k: RealCluster, bid: int) -> bool:
    """The controller acted on broker `bid` being stopped: it leads nothing and is in no ISR."""
    states = k.partition_states(TOPICS)
    return bool(states) and all(s["leader"] != bid and bid not in s["isr"] for s in states.values())


def all_in_sync(k: RealCluster) -> bool:
    states = k.partition_states(TOPICS)
    return len(states) == 5 and all(sorted(s["isr"]) == sorted(s["replicas"]) for s in states.values())


def test_zookeeper_alone_cannot_see_the_static_value_the_brokers_report_it(kafka: RealCluster) -> None:
    zk_only = rows(kafka, bootstrap=False)
    with_brokers = rows(kafka)
    for key in [("s-rf3", 0), ("s-rf3", 1), ("s-rf3", 2), ("s-rf2", 0)]:
        assert (zk_only[key]["min_isr"], zk_only[key]["min_isr_source"]) == (1, "default")
        assert (with_brokers[key]["min_isr"], with_brokers[key]["min_isr_source"]) == (2, "static")
    assert (with_brokers[("s-rf3-min1", 0)]["min_isr"], with_brokers[("s-rf3-min1", 0)]["min_isr_source"]) == \
        (1, "topic")
    # ZooKeeper mode: no ELR there
    assert all(r["elr"] is None and r["last_known_elr"] is None for r in with_brokers.values())


def test_one_broker_stopped_min_isr_sets_equal_topic_commands(kafka: RealCluster) -> None:
    kafka.brokers[3].stop()
    try:
        wait_for(lambda: out_of_isr(kafka, 3), 300, "broker 3 out of every ISR")
        tc = agree(kafka)
        # the static value makes every RF-3 partition relying on it sit at min ISR (ISR 2 of min 2)
        assert {("s-rf3", 0), ("s-rf3", 1), ("s-rf3", 2), ("s-rf2", 0)} <= tc["--at-min-isr"] | tc["--under-min-isr"]
        # ZooKeeper alone (min ISR 1) disagrees with Kafka: it cannot know the static value
        assert views(kafka, bootstrap=False)["--at-min-isr"] != tc["--at-min-isr"]

        # can-stop: broker 1 would take s-rf3 below min ISR 2 (which ZooKeeper alone cannot see)
        code, v, err = kadmin(kafka, "brokers", "can-stop", "1")
        assert code == 1 and v["safe"] is False, err
        blocked = {(b["topic"], b["partition"]) for b in v["blocking"]}
        at_min_with_1 = {key for key in tc["--at-min-isr"] if key[0] == "s-rf3"}
        assert blocked == at_min_with_1 and ("s-rf3-min1", 0) not in blocked
        code, v, err = kadmin(kafka, "brokers", "can-stop", "1", bootstrap=False)
        assert code == 0 and v["safe"] is True, err
        # the brokers alone (no ZooKeeper) give the same verdict: a ZooKeeper-mode cluster is not the wrong
        # kind of cluster for a gate that reads partitions, and the brokers know the static min ISR
        code, doc, err = kadmin_b_only(kafka, "brokers", "can-stop", "1")
        assert code == 1 and doc["data"]["safe"] is False, err
        assert {(b["topic"], b["partition"]) for b in doc["data"]["blocking"]} == blocked
        code, doc, err = kadmin_b_only(kafka, "partitions", "check")
        # CRITICAL: s-rf2 (on 2 and 3) is under min ISR 2; and what only broker 3 hosts is named as unseen, since
        # Metadata hides topics a principal may not describe and broker 3's log dirs cannot be listed
        assert code == 2, json.dumps(doc, indent=1)
        under = {(f["topic"], f["partition"]) for f in doc["data"]["findings"]
                 if any(r.startswith("under min ISR") for r in f["reasons"])}
        assert under == tc["--under-min-isr"] == {("s-rf2", 0)}
        assert [u["broker_id"] for u in doc["data"]["unseen"]] == [3]
    finally:
        kafka.brokers[3].start()
        kafka.brokers[3].wait_registered(kafka.kz, timeout=300)
    # wait --in-sync with --bootstrap-server too returns once broker 3 is back in every ISR
    code, w, err = kadmin(kafka, "brokers", "wait", "3", "--in-sync", "--timeout", "300")
    assert code == 0 and w["in_sync"] is True, err
    assert all_in_sync(kafka)
    agree(kafka)


def test_a_dynamic_cluster_default_wins_over_the_static_value(kafka: RealCluster) -> None:
    r = config_command(kafka, "--entity-type", "brokers", "--entity-default", "--alter", "--add-config",
                       "min.insync.replicas=3")
    assert r.returncode == 0, r.stderr
    try:
        def seen() -> dict[Key, dict[str, Any]] | None:
            got = rows(kafka)
            return got if got[("s-rf3", 0)]["min_isr_source"] == "cluster-default" else None

        got = wait_for(seen, 300, "the brokers to report the dynamic cluster default")
        assert (got[("s-rf3", 0)]["min_isr"], got[("s-rf2", 0)]["min_isr"]) == (3, 3)
        assert (got[("s-rf3-min1", 0)]["min_isr"], got[("s-rf3-min1", 0)]["min_isr_source"]) == (1, "topic")
        tc = agree(kafka)
        assert {("s-rf3", 0), ("s-rf3", 1), ("s-rf3", 2)} <= tc["--at-min-isr"]  # ISR 3 of min 3
        # s-rf2 (2 replicas, min ISR 3): the exception, as in test_real_zk_partitions.py
        assert ("s-rf2", 0) in topic_command(kafka)["--under-min-isr"]
        assert ("s-rf2", 0) in views(kafka)["--at-min-isr"]
    finally:
        config_command(kafka, "--entity-type", "brokers", "--entity-default", "--alter", "--delete-config",
                       "min.insync.replicas")


def test_no_broker_answering_falls_back_to_zookeeper_and_says_so(kafka: RealCluster) -> None:
    dead = f"127.0.0.1:{free_port()}"
    r = kafka.run("partitions", "list", "--topic", "s-rf3", "--min-isr-default", "2", "-z", kafka.zk,
                  "--bootstrap-server", dead, "--connect-timeout", "5", "-o", "json")
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert {(x["min_isr"], x["min_isr_source"]) for x in doc["data"]} == {(2, "default")}
    assert dead in r.stderr and "--min-isr-default" in r.stderr
    r = kafka.run("partitions", "check", "-z", kafka.zk, "--bootstrap-server", dead, "--connect-timeout", "5")
    assert r.exit_code == 0 and "min.insync.replicas from ZooKeeper" in r.stderr, r.stderr


ZK_ONLY_THROUGH_BROKERS = [  # what a ZooKeeper-mode cluster serves only from ZooKeeper (or has not at all)
    ("brokers", "max-epoch"), ("brokers", "show", "1"), ("brokers", "wait", "1", "--epoch-gt", "0"),
    ("brokers", "shutdown", "1", "--dry-run"), ("ids", "missing"), ("quorum", "describe", "--status"),
    ("quorum", "check"), ("brokers", "unregister", "1", "--dry-run"),
]


@pytest.mark.parametrize("args", ZK_ONLY_THROUGH_BROKERS, ids=" ".join)
def test_the_brokers_alone_of_a_zookeeper_mode_cluster_are_named_as_such(kafka: RealCluster,
                                                                          args: tuple[str, ...]) -> None:
    """Issue 22: a command given `--bootstrap-server` alone that reaches a ZooKeeper-mode cluster says so, with
    exit 3 and one line naming --zookeeper, instead of a KRaft reason (or NOT_CONTROLLER, or 'broker is
    active')."""
    code, doc, err = kadmin_b_only(kafka, *args)
    assert code == 3, (code, err)
    assert [e["code"] for e in doc["errors"]] == ["zookeeper_mode"], doc
    lines = [line for line in err.splitlines() if line.startswith("kadmin: error:")]
    assert len(lines) == 1, err
    assert "is a broker of a ZooKeeper-mode cluster" in lines[0]
    want = "registration goes when" if args[1] == "unregister" else "give --zookeeper"
    assert want in lines[0], lines[0]
