"""Partition health against real Apache Kafka 3.9.1 (ZooKeeper mode): kadmin agrees with TopicCommand.

Three real brokers run once for the module. In each state (healthy; one broker stopped with a topic
queued for deletion; two brokers stopped; min.insync.replicas as a dynamic cluster default and per
broker; a reassignment held in flight by a throttle) kadmin's `partitions list` filters and
`partitions check` must agree, as sets of (topic, partition), with Kafka's own
`TopicCommand --describe --under-replicated-partitions | --under-min-isr-partitions |
--at-min-isr-partitions | --unavailable-partitions` over all topics.

The one documented exception (KAFKA-15583): a partition whose replica count is below its configured
min.insync.replicas. TopicCommand 3.9 compares the ISR with the configured value
(`PartitionDescription.isUnderMinIsr`: `!hasLeader() || isr.size() < minIsrCount()`, and
`isAtMinIsrPartitions`: `minIsrCount() == isr.size()`), so it lists such a partition under min ISR even
with every replica in sync, and never at min ISR. Since 3.7 the leader itself enforces
`min(min.insync.replicas, replica count)` (Partition.effectiveMinIsr: acks=all writes succeed, the
broker's UnderMinIsr/AtMinIsr metrics use it) and so does kadmin: under min ISR only without a leader or
with an ISR below the replica count, at min ISR with a full ISR. `exceptions()` checks exactly that.

Topics queued for deletion: TopicCommand does not list them once the controller has started deleting
(it sends UpdateMetadata with LeaderDuringDelete, and the brokers drop them from their metadata);
kadmin lists them marked `deleting` and leaves them out of `check` and `can-stop`.

Nothing waits on time: every state is waited for on the state znodes, and the comparison is repeated
(until a deadline) only while ZooKeeper's state moved during it or the brokers' metadata caches (which
TopicCommand reads) have not caught up with ZooKeeper yet.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from kazoo.exceptions import NoNodeError

from kadmin.sandbox.zkserver import Ensemble
from tests.support.kafka import (
    TOPIC_COMMAND,
    RealCluster,
    config_command,
    describe_all,
    produce,
    reassign,
    settle,
    tool,
    wait_for,
    zk_mode_cluster,
)

pytestmark = [pytest.mark.kafka, pytest.mark.integration, pytest.mark.slow]

IDS = (1, 2, 3)
# No preferred-leader rebalancing moving leaders in the middle of a state; a controlled shutdown that
# cannot move a leader (its partition has no other live replica) gives up after one quick retry.
BROKER_EXTRA = {"auto.leader.rebalance.enable": "false", "controlled.shutdown.max.retries": "1",
                "controlled.shutdown.retry.backoff.ms": "500"}

# name: ({partition: replicas}, topic configs). Broker 1 hosts only RF-3 partitions (so it can stop with
# a min ISR of 2); brokers 2 and 3 host the RF-1 and RF-2 ones (offline once both stop).
TOPICS: dict[str, tuple[dict[int, list[int]], dict[str, str]]] = {
    "rf1": ({0: [2], 1: [3]}, {}),
    "rf2": ({0: [2, 3], 1: [3, 2]}, {}),
    "rf3": ({0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]}, {}),
    "rf3-min2": ({0: [1, 2, 3], 1: [2, 3, 1]}, {"min.insync.replicas": "2"}),
    "rf2-min2": ({0: [2, 3]}, {"min.insync.replicas": "2"}),
    "rf2-min3": ({0: [2, 3]}, {"min.insync.replicas": "3"}),  # replicas below min ISR: the exception
}

# kadmin's filter -> TopicCommand's
FILTERS = {"--under-replicated": "--under-replicated-partitions", "--under-min-isr": "--under-min-isr-partitions",
           "--at-min-isr": "--at-min-isr-partitions", "--offline": "--unavailable-partitions"}

Key = tuple[str, int]


def create_topics(k: RealCluster, topics: dict[str, tuple[dict[int, list[int]], dict[str, str]]]) -> None:
    """Create topics through Kafka (CreateTopics with explicit assignments) and wait for their leaders."""
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=k.bootstrap, request_timeout_ms=120000)
    try:
        admin.create_topics([NewTopic(name, replica_assignments=assignment, topic_configs=configs)
                             for name, (assignment, configs) in topics.items()], timeout_ms=120000)
    finally:
        admin.close()
    want = {(t, p) for t, (a, _) in topics.items() for p in a}
    wait_for(lambda: want <= {key for key, s in k.partition_states(topics).items() if s["leader"] >= 0}, 300,
             f"leaders for {sorted(want)}")


@pytest.fixture(scope="module")
def kafka(zk_server: Ensemble, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealCluster]:
    with zk_mode_cluster(zk_server, tmp_path_factory.mktemp("kafka39-partitions"), IDS,
                         extra=BROKER_EXTRA) as cluster:
        create_topics(cluster, TOPICS)
        yield cluster


# ---------------------------------------------------------------------------------------------------
# What ZooKeeper holds, what kadmin says, what TopicCommand says


def zk_snapshot(k: RealCluster) -> Any:
    """Everything partition health depends on, raw: topic znodes, state znodes, configs, deletions."""
    out: dict[str, Any] = {}
    for base in ("/brokers/topics", "/config/topics", "/config/brokers", "/admin/delete_topics", "/brokers/ids"):
        try:
            children = sorted(k.kz.get_children(base))
        except NoNodeError:
            continue
        for c in children:
            try:
                out[f"{base}/{c}"] = k.kz.get(f"{base}/{c}")[0]
            except NoNodeError:
                continue
    for (t, p), st in k.partition_states().items():
        out[f"state {t}-{p}"] = json.dumps(st, sort_keys=True)
    return out


def live_bootstrap(k: RealCluster) -> str:
    return ",".join(b.bootstrap for b in k.brokers.values() if b.alive())


def kadmin_views(k: RealCluster) -> tuple[dict[Key, dict[str, Any]], dict[str, set[Key]]]:
    """`partitions list` (every row) and, per health filter, the keys kadmin lists."""
    code, doc, err = k.run.json("partitions", "list")
    assert code == 0, err
    rows = {(r["topic"], r["partition"]): r for r in doc["data"]}
    views = {}
    for flag in FILTERS:
        code, doc, err = k.run.json("partitions", "list", flag)
        assert code == 0, err
        views[flag] = {(r["topic"], r["partition"]) for r in doc["data"]}
    return rows, views


def topic_command_views(k: RealCluster) -> dict[str, set[Key]]:
    """TopicCommand --describe with each filter (all topics), run side by side."""
    bootstrap = live_bootstrap(k)
    with ThreadPoolExecutor(len(FILTERS)) as pool:
        got = {flag: pool.submit(describe_all, k, tc_flag, bootstrap=bootstrap) for flag, tc_flag in FILTERS.items()}
        return {flag: set(f.result()) for flag, f in got.items()}


def exceptions(rows: dict[Key, dict[str, Any]]) -> set[Key]:
    """Partitions whose replica count is below their configured min ISR (KAFKA-15583, see the module doc)."""
    return {key for key, r in rows.items() if len(r["replicas"]) < r["min_isr"]}


def disagreements(rows: dict[Key, dict[str, Any]], kad: dict[str, set[Key]], tc: dict[str, set[Key]]) -> list[str]:
    deleting = {key for key, r in rows.items() if r["deleting"]}
    exc = exceptions(rows) - deleting
    out = []
    for flag in FILTERS:
        mine, theirs = kad[flag] - exc - deleting, tc[flag] - exc
        if mine != theirs:
            out.append(f"{flag}: kadmin only {sorted(mine - theirs)}, TopicCommand only {sorted(theirs - mine)}")
        shown = tc[flag] & deleting
        if shown:
            out.append(f"{flag}: TopicCommand lists partitions of topics being deleted: {sorted(shown)}")
    for key in sorted(exc):
        r = rows[key]
        leader = r["leader"] is not None and r["leader"] >= 0
        # TopicCommand: configured min ISR; the broker and kadmin: min(min ISR, replicas)
        expect = {"--under-min-isr": (True, not leader or len(r["isr"]) < len(r["replicas"])),
                  "--at-min-isr": (False, len(r["isr"]) == len(r["replicas"]))}
        for flag, (in_tc, in_kadmin) in expect.items():
            if (key in tc[flag], key in kad[flag]) != (in_tc, in_kadmin):
                out.append(f"{flag} {key} (RF {len(r['replicas'])} < min ISR {r['min_isr']}): TopicCommand "
                           f"{key in tc[flag]} (expected {in_tc}), kadmin {key in kad[flag]} (expected {in_kadmin})")
    return out


def agree(k: RealCluster, timeout: float = 300.0) -> tuple[dict[Key, dict[str, Any]], dict[str, set[Key]],
                                                         dict[str, set[Key]]]:
    """Compare kadmin with TopicCommand on one settled state; repeat only while ZooKeeper moved during the
    comparison, or the brokers' metadata (what TopicCommand reads) lags; fail with the differences.
    Returns kadmin's rows, kadmin's filtered keys and TopicCommand's, by kadmin filter."""
    Views = tuple[dict[Key, dict[str, Any]], dict[str, set[Key]], dict[str, set[Key]]]

    def attempt() -> tuple[Views | None, str]:
        before = zk_snapshot(k)
        rows, kad = kadmin_views(k)
        tc = topic_command_views(k)
        moved = zk_snapshot(k) != before
        diffs = disagreements(rows, kad, tc)
        if not moved and not diffs:
            return (rows, kad, tc), ""
        return None, ("ZooKeeper's state kept moving" if moved else
                      "kadmin and TopicCommand disagree:\n" + "\n".join(diffs))

    rows, kad, tc = settle(attempt, timeout)
    check_agrees(k, rows, kad)
    return rows, kad, tc


def check_agrees(k: RealCluster, rows: dict[Key, dict[str, Any]], kad: dict[str, set[Key]]) -> None:
    """`partitions check`: its findings are the listed partitions (under-replicated, under min ISR,
    offline) of topics not being deleted, and its exit code the worst of them."""
    deleting = {key for key, r in rows.items() if r["deleting"]}
    critical = (kad["--under-min-isr"] | kad["--offline"]) - deleting
    warning = kad["--under-replicated"] - deleting
    code, doc, err = k.run.json("partitions", "check")
    found = {(f["topic"], f["partition"]) for f in doc["data"]["findings"]}
    assert found == critical | warning, err
    assert code == (2 if critical else 1 if warning else 0), err
    assert doc["data"]["deleting"] == sorted({t for t, _ in deleting})


def produce_error(k: RealCluster, topic: str, partition: int) -> str | None:
    """Write one record with acks=all and no retries: None, or the error class the leader answered with."""
    from kafka import KafkaProducer
    from kafka.errors import KafkaError

    producer = KafkaProducer(bootstrap_servers=live_bootstrap(k), acks="all", retries=0)
    try:
        producer.send(topic, value=b"x", partition=partition).get(timeout=60)
        return None
    except KafkaError as e:
        return type(e).__name__
    finally:
        producer.close(timeout=30)


def wait_settled(k: RealCluster, down: set[int], timeout: float = 300.0) -> None:
    """The controller has acted on `down`: no stopped broker leads or is in an ISR (except the last ISR
    member of a partition without a leader, which ZooKeeper keeps), and every running one is registered."""
    def ok() -> bool:
        if set(k.registrations()) != set(IDS) - down:
            return False
        for st in k.partition_states().values():
            if st["leader"] in down or (set(st["isr"]) & down and st["leader"] != -1):
                return False
        return True
    wait_for(ok, timeout, f"the controller to act on brokers {sorted(down)} stopped")


def wait_in_sync(k: RealCluster, timeout: float = 300.0) -> None:
    """Every broker running and registered, every partition led and fully in sync (adding replicas aside)."""
    k.ready()

    def ok() -> bool:
        for st in k.partition_states().values():
            if st["leader"] < 0 or len(st["isr"]) < len(st["replicas"]):
                return False
        return True
    wait_for(ok, timeout, "every partition fully in sync")


def set_broker_configs(k: RealCluster, default: str | None, per_broker: dict[int, str | None]) -> None:
    """min.insync.replicas as a dynamic cluster default and per broker (None: deleted), through
    ConfigCommand, then seen in /config/brokers/<entity>."""
    def entity_args(entity: int | None) -> list[str]:
        return ["--entity-type", "brokers", "--entity-default"] if entity is None else \
            ["--entity-type", "brokers", "--entity-name", str(entity)]

    def current(entity: int | None) -> str | None:
        try:
            data = k.kz.get(f"/config/brokers/{'<default>' if entity is None else entity}")[0]
        except NoNodeError:
            return None
        return json.loads(data)["config"].get("min.insync.replicas")

    def alter(entity: int | None, value: str | None) -> None:
        if value is None:
            config_command(k, *entity_args(entity), "--alter", "--delete-config", "min.insync.replicas",
                           bootstrap=live_bootstrap(k))
        else:
            config_command(k, *entity_args(entity), "--alter", "--add-config", f"min.insync.replicas={value}",
                           bootstrap=live_bootstrap(k))

    wanted: dict[int | None, str | None] = {None: default}
    wanted.update((e, v) for e, v in per_broker.items())
    todo = {e: v for e, v in wanted.items() if current(e) != v}
    with ThreadPoolExecutor(max(1, len(todo))) as pool:  # one JVM each, side by side
        for f in [pool.submit(alter, e, v) for e, v in todo.items()]:
            f.result()
    wait_for(lambda: all(current(e) == v for e, v in wanted.items()), 60, f"/config/brokers to hold {wanted}")


# ---------------------------------------------------------------------------------------------------
# States


def test_healthy_cluster(kafka: RealCluster) -> None:
    set_broker_configs(kafka, None, {1: None, 2: None, 3: None})
    wait_in_sync(kafka)
    rows, kad, tc = agree(kafka)
    assert kad["--under-replicated"] == kad["--offline"] == set()
    # the exception, as Kafka 3.9 shows it: TopicCommand says under min ISR, the broker (and kadmin) at min ISR
    assert exceptions(rows) == {("rf2-min3", 0)} and kad["--under-min-isr"] == set()
    assert kad["--at-min-isr"] == {("rf1", 0), ("rf1", 1), ("rf2-min2", 0), ("rf2-min3", 0)}
    assert {rows[k]["min_isr_source"] for k in rows if k[0].startswith("rf3-min2")} == {"topic"}
    assert rows[("rf2", 0)]["min_isr_source"] == "default" and rows[("rf2", 0)]["min_isr"] == 1


def test_one_broker_stopped_with_a_topic_queued_for_deletion(kafka: RealCluster) -> None:
    wait_in_sync(kafka)
    create_topics(kafka, {"doomed": ({0: [1, 3], 1: [3, 1]}, {})})
    kafka.brokers[3].stop()
    wait_settled(kafka, {3})
    # what Kafka's DeleteTopics handler writes (KafkaZkClient.createDeleteTopicPath); with replica 3
    # down the controller starts the deletion but cannot finish it: the topic stays queued
    kafka.kz.create("/admin/delete_topics/doomed")
    wait_for(lambda: all(s["leader"] == -1 for s in kafka.partition_states(["doomed"]).values()), 300,
             "the controller to start deleting doomed (its partitions lose their leader)")
    assert kafka.kz.exists("/admin/delete_topics/doomed") and kafka.kz.exists("/brokers/topics/doomed")
    rows, kad, tc = agree(kafka)
    doomed = {("doomed", 0), ("doomed", 1)}
    assert {k for k, r in rows.items() if r["deleting"]} == doomed
    assert doomed <= kad["--offline"]  # listed, marked, but not checked
    assert kad["--offline"] - doomed == {("rf1", 1)}
    assert kad["--under-replicated"] - doomed == {("rf2", 0), ("rf2", 1), ("rf3", 0), ("rf3", 1), ("rf3", 2),
                                                  ("rf3-min2", 0), ("rf3-min2", 1), ("rf2-min2", 0), ("rf2-min3", 0)}
    # rf2-min2 and rf2-min3: ISR 1 below 2 (rf2-min3's effective min ISR is min(3, 2) = 2)
    assert kad["--under-min-isr"] - doomed == {("rf1", 1), ("rf2-min2", 0), ("rf2-min3", 0)}
    r = kafka.run("partitions", "list", "--topic", "doomed")
    assert all(line.split()[-1] == "deleting" for line in r.stdout.splitlines()[1:]), r.stdout
    # TopicCommand no longer lists the topic at all
    everything = describe_all(kafka, bootstrap=live_bootstrap(kafka))
    assert not {k for k in everything if k[0] == "doomed"}
    # back: broker 3 returns, the deletion completes
    wait_in_sync(kafka)
    wait_for(lambda: not kafka.kz.exists("/brokers/topics/doomed") and not kafka.kz.exists(
        "/admin/delete_topics/doomed"), 300, "doomed to be deleted once broker 3 is back")


def test_two_brokers_stopped(kafka: RealCluster) -> None:
    wait_in_sync(kafka)
    kafka.brokers[3].stop()
    kafka.brokers[2].stop()
    wait_settled(kafka, {2, 3})
    rows, kad, tc = agree(kafka)
    offline = {("rf1", 0), ("rf1", 1), ("rf2", 0), ("rf2", 1), ("rf2-min2", 0), ("rf2-min3", 0)}
    assert kad["--offline"] == offline  # the RF-1 and RF-2 partitions, all on brokers 2 and 3
    assert kad["--under-min-isr"] == offline | {("rf3-min2", 0), ("rf3-min2", 1)}
    assert all(rows[k]["leader"] == -1 for k in offline)
    wait_in_sync(kafka)


def test_dynamic_cluster_default_and_can_stop(kafka: RealCluster) -> None:
    """min.insync.replicas=2 as the dynamic cluster default: can-stop says yes exactly for the broker
    whose stop leaves no partition offline or under min ISR, and stopping it for real shows that."""
    set_broker_configs(kafka, "2", {1: None, 2: None, 3: None})
    wait_in_sync(kafka)
    rows, kad, tc = agree(kafka)
    assert rows[("rf2", 0)]["min_isr"] == 2 and rows[("rf2", 0)]["min_isr_source"] == "cluster-default"
    assert rows[("rf3-min2", 0)]["min_isr_source"] == "topic"
    assert exceptions(rows) == {("rf1", 0), ("rf1", 1), ("rf2-min3", 0)}
    verdicts = {}
    for b in IDS:
        code, doc, err = kafka.run.json("brokers", "can-stop", str(b))
        assert code == (0 if doc["data"]["safe"] else 1), err
        assert doc["data"]["never_satisfiable"] == []  # RF below min ISR is no reason of its own any more
        verdicts[b] = {(x["topic"], x["partition"]) for x in doc["data"]["blocking"]}
    assert verdicts == {
        1: set(),
        2: {("rf1", 0), ("rf2", 0), ("rf2", 1), ("rf2-min2", 0), ("rf2-min3", 0)},
        3: {("rf1", 1), ("rf2", 0), ("rf2", 1), ("rf2-min2", 0), ("rf2-min3", 0)},
    }
    # broker 1 can stop: after a real stop, TopicCommand finds nothing offline or under min ISR
    # (but the exception partitions, whose configured min ISR is above their replica count)
    kafka.brokers[1].stop()
    wait_settled(kafka, {1})
    rows, kad, tc = agree(kafka)
    assert tc["--offline"] == set() and tc["--under-min-isr"] - exceptions(rows) == set()
    assert kad["--offline"] == kad["--under-min-isr"] == set()
    # broker 3 cannot: stopping it (with 1 back) puts exactly its blocking partitions offline or under min ISR
    wait_in_sync(kafka)
    kafka.brokers[3].stop()
    wait_settled(kafka, {3})
    rows, kad, tc = agree(kafka)
    assert tc["--offline"] | tc["--under-min-isr"] == verdicts[3] | exceptions(rows)
    # Whose per-broker value applies: the leader's (Partition.appendRecordsToLeader checks the leader's log
    # config). Kafka's elections made 2 lead rf3-1 ([2,3,1]) and 1 lead rf3-2 ([3,1,2]), both with ISR 1,2.
    states = kafka.partition_states(["rf3"])
    assert (states[("rf3", 1)]["leader"], states[("rf3", 2)]["leader"]) == (2, 1), states
    set_broker_configs(kafka, "2", {2: "3"})
    wait_for(lambda: produce_error(kafka, "rf3", 1) == "NotEnoughReplicasError", 300,
             "broker 2 to refuse acks=all writes to rf3-1 (ISR 2 < its min.insync.replicas 3)")
    assert produce_error(kafka, "rf3", 2) is None  # led by 1: the cluster default 2 applies
    rows = {(r["topic"], r["partition"]): r for r in kafka.run.json("partitions", "list", "--topic", "rf3")[1]["data"]}
    assert (rows[("rf3", 1)]["min_isr"], rows[("rf3", 1)]["min_isr_source"]) == (3, "broker:2")
    assert (rows[("rf3", 2)]["min_isr"], rows[("rf3", 2)]["min_isr_source"]) == (2, "cluster-default")
    under = {(r["topic"], r["partition"]) for r in kafka.run.json("partitions", "list", "--under-min-isr")[1]["data"]}
    assert ("rf3", 1) in under and ("rf3", 2) not in under
    # (TopicCommand cannot say this: it applies the value of whichever broker answered DescribeConfigs to
    # every partition of the topic, ConfigHelper.describeConfigs)
    set_broker_configs(kafka, "2", {2: None})
    wait_in_sync(kafka)


def test_dynamic_per_broker_values_override_the_cluster_default(kafka: RealCluster) -> None:
    set_broker_configs(kafka, "2", {1: "1", 2: "1", 3: "1"})
    wait_in_sync(kafka)
    rows, kad, tc = agree(kafka)
    for key, r in rows.items():
        if key[0].endswith(("min2", "min3")):
            assert r["min_isr_source"] == "topic", r
        else:
            assert (r["min_isr"], r["min_isr_source"]) == (1, f"broker:{r['leader']}"), r
    assert exceptions(rows) == {("rf2-min3", 0)}
    assert kad["--at-min-isr"] == {("rf1", 0), ("rf1", 1), ("rf2-min2", 0), ("rf2-min3", 0)}
    # only broker 3 differs now: its partitions take its value, the others keep theirs
    set_broker_configs(kafka, "2", {1: "1", 2: "1", 3: None})
    rows = {(r["topic"], r["partition"]): r for r in kafka.run.json("partitions", "list")[1]["data"]}
    for key, r in rows.items():
        if not key[0].endswith(("min2", "min3")):
            expected = (2, "cluster-default") if r["leader"] == 3 else (1, f"broker:{r['leader']}")
            assert (r["min_isr"], r["min_isr_source"]) == expected, r


def test_reassignment_in_flight(kafka: RealCluster, tmp_path: Path) -> None:
    """A reassignment held in flight by a 1 B/s throttle: the replicas being added are not missing ones."""
    # one min.insync.replicas everywhere: TopicCommand reads the answering broker's (see above)
    set_broker_configs(kafka, None, {1: None, 2: None, 3: None})
    wait_in_sync(kafka)
    create_topics(kafka, {"moving": ({0: [1]}, {})})
    produce(kafka, "moving", 0, count=4000, size=1000)  # ~4 MB: more than a throttled follower can fetch
    reassign(kafka, {("moving", 0): [2, 3]}, "--execute", "--throttle", "1", work_dir=tmp_path)

    def in_flight() -> bool:
        doc = json.loads(kafka.kz.get("/brokers/topics/moving")[0])
        return doc["adding_replicas"].get("0") == [2, 3] and kafka.partition_states(["moving"])[("moving", 0)][
            "isr"] == [1]
    wait_for(in_flight, 300, "the reassignment of moving-0 to start")
    rows, kad, tc = agree(kafka)
    assert in_flight(), "the reassignment completed during the comparison: the throttle did not hold it"
    r = rows[("moving", 0)]
    assert (r["replicas"], r["adding_replicas"], r["removing_replicas"], r["isr"]) == ([2, 3, 1], [2, 3], [1], [1])
    assert ("moving", 0) not in kad["--under-replicated"]  # ISR 1 of RF 3 - 2 adding
    out = tool(kafka.home, TOPIC_COMMAND, "--bootstrap-server", kafka.bootstrap, "--describe", "--topic",
               "moving").stdout
    assert "Adding Replicas: 2,3" in out  # TopicCommand sees the same reassignment
