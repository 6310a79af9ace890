"""`kadmin brokers shutdown` and `brokers can-stop` against three real Apache Kafka 3.9.1 brokers (ZK mode).

The cluster runs once for the module under its own chroot of the session's ZooKeeper, with Kafka's
JSON request log on, so what the real controller received and answered is on record. Topics are
created with Kafka's TopicCommand: `orders` (RF 3, min.insync.replicas=2) and `audit` (RF 3,
min.insync.replicas=1). Each test starts from a healthy cluster (every broker registered, every ISR
full) and leaves one behind, restarting for real whatever it stopped. Every wait is on something
observable: znodes, Kafka's tools' output, a process's exit.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from kadmin.sandbox.zkserver import Ensemble
from tests.support.kafka import TOPIC_COMMAND, RealCluster, describe, tool, wait_for, zk_mode_cluster

pytestmark = [pytest.mark.kafka, pytest.mark.integration, pytest.mark.slow]

IDS = (1, 2, 3)
TOPICS = {"orders": (6, 2), "audit": (3, 1)}  # name: (partitions, min.insync.replicas), all RF 3
CONTROLLED_SHUTDOWN = 7
STALE_BROKER_EPOCH = 77
WAIT = 240.0  # generous: two busy cores, another suite running alongside


@pytest.fixture(scope="module")
def kafka(zk_server: Ensemble, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealCluster]:
    with zk_mode_cluster(zk_server, tmp_path_factory.mktemp("kafka39-shutdown"), IDS, chroot_prefix="kshut",
                         request_log=True) as cluster:
        for topic, (partitions, min_isr) in TOPICS.items():
            tool(cluster.home, TOPIC_COMMAND, "--bootstrap-server", cluster.bootstrap, "--create", "--topic", topic,
                 "--partitions", str(partitions), "--replication-factor", "3",
                 "--config", f"min.insync.replicas={min_isr}")
        yield cluster


# ---------------------------------------------------------------------------------------------------
# What real Kafka says


def states(kafka: RealCluster) -> dict[tuple[str, int], dict[str, Any]]:
    """The state znodes of our topics' partitions: {(topic, p): {"leader", "isr", "replicas", ...}}."""
    return kafka.partition_states(TOPICS)


def all_partitions() -> set[tuple[str, int]]:
    return {(t, p) for t, (n, _) in TOPICS.items() for p in range(n)}


def topic_command(kafka: RealCluster, *flags: str, bootstrap: str | None = None) -> dict[tuple[str, int], Any]:
    """TopicCommand --describe of every topic of ours: {(topic, p): (leader, replicas, isr)}."""
    out = {}
    for t in TOPICS:
        for p, row in describe(kafka, t, *flags, bootstrap=bootstrap)["partitions"].items():
            out[(t, p)] = row
    return out


def healthy(kafka: RealCluster) -> dict[tuple[str, int], dict[str, Any]]:
    """Wait until every broker is registered and every partition of ours has a leader and its full ISR
    in ZooKeeper, and TopicCommand (the brokers' metadata) says the same; the state znodes."""
    kafka.ready(timeout=WAIT)

    def full() -> dict[tuple[str, int], dict[str, Any]] | None:
        s = states(kafka)
        ok = set(s) == all_partitions() and all(
            st["leader"] in IDS and sorted(st["isr"]) == sorted(st["replicas"]) == list(IDS) for st in s.values())
        return s if ok else None

    wait_for(full, WAIT, "every partition led with a full ISR (state znodes)", interval=0.25)

    def agreed() -> dict[tuple[str, int], dict[str, Any]] | None:
        s = full()
        if s is None:
            return None
        tc = topic_command(kafka)
        return s if tc == {k: (st["leader"], st["replicas"], st["isr"]) for k, st in s.items()} else None

    return wait_for(agreed, WAIT, "TopicCommand to agree with the state znodes", interval=0.5)


def preferred_leaders(kafka: RealCluster) -> dict[tuple[str, int], dict[str, Any]]:
    """Kafka's LeaderElectionCommand (preferred, all partitions); wait until each leader is its first replica."""
    tool(kafka.home, "org.apache.kafka.tools.LeaderElectionCommand", "--bootstrap-server", kafka.bootstrap,
         "--election-type", "preferred", "--all-topic-partitions")

    def done() -> dict[tuple[str, int], dict[str, Any]] | None:
        s = states(kafka)
        return s if all(st["leader"] == st["replicas"][0] for st in s.values()) else None

    return wait_for(done, WAIT, "every leader to be its preferred replica", interval=0.25)


def non_controllers(kafka: RealCluster) -> list[int]:
    controller = kafka.controller()
    assert controller in IDS
    return sorted(b for b in IDS if b != controller)


def epoch_of(kafka: RealCluster, broker_id: int) -> int:
    got = kafka.brokers[broker_id].registration(kafka.kz)
    assert got is not None, f"broker {broker_id} is not registered"
    return int(got[1].czxid)


def kadmin_shutdowns(kafka: RealCluster) -> list[dict[str, Any]]:
    """The ControlledShutdown requests kadmin (client id "kadmin") sent, as the receiving brokers logged them."""
    return [r for b in kafka.brokers.values() for r in b.requests(CONTROLLED_SHUTDOWN, client_id="kadmin")]


def restart(kafka: RealCluster, broker_id: int) -> tuple[int, int]:
    """A real restart (SIGTERM: Kafka's own controlled shutdown; start; registered with a new epoch)."""
    b = kafka.brokers[broker_id]
    old, new = b.restart(kafka.kz, graceful=True, timeout=WAIT)
    assert new > old
    return old, new


# ---------------------------------------------------------------------------------------------------


def test_shutdown_moves_every_leadership_off_a_real_broker(kafka: RealCluster) -> None:
    before = healthy(kafka)
    controller = kafka.controller()
    leads = {b: sum(st["leader"] == b for st in before.values()) for b in non_controllers(kafka)}
    if not any(leads.values()):  # restarts (other tests) left every leadership on the controller
        before = preferred_leaders(kafka)
        leads = {b: sum(st["leader"] == b for st in before.values()) for b in leads}
    victim = max(leads, key=lambda b: (leads[b], -b))
    assert leads[victim] > 0, before  # something to move
    epoch = epoch_of(kafka, victim)
    sent_before = len(kadmin_shutdowns(kafka))

    code, doc, err = kafka.run.json("brokers", "shutdown", str(victim))
    try:
        assert code == 0, err
        assert doc["data"]["broker_id"] == victim
        assert doc["data"]["broker_epoch"] == epoch
        assert doc["data"]["controller_id"] == controller
        assert doc["data"]["error"] is None and doc["data"]["remaining_partitions"] == []

        # What the real controller received and answered (its JSON request log): v3, the czxid.
        sent = kadmin_shutdowns(kafka)[sent_before:]
        assert len(sent) == doc["data"]["attempts"] == 1, sent
        (req,) = sent
        assert req["requestHeader"]["requestApiVersion"] == 3
        assert req["request"] == {"brokerId": victim, "brokerEpoch": epoch}
        assert req["response"]["errorCode"] == 0 and req["response"]["remainingPartitions"] == []
        assert kafka.brokers[controller].requests(CONTROLLED_SHUTDOWN, client_id="kadmin")[-1] == req
        log = kafka.brokers[controller].server_log.read_text(errors="replace")
        assert f"[Controller id={controller}] Shutting down broker {victim}" in log

        # The broker leads nothing now: in ZooKeeper (the controller's writes) and per TopicCommand.
        after = states(kafka)
        assert set(after) == all_partitions()
        led = {k: st["leader"] for k, st in after.items() if st["leader"] == victim}
        assert led == {}, f"broker {victim} still leads {led} per the state znodes"
        assert all(st["leader"] in IDS for st in after.values())
        # The controller also took it out of every ISR (leaders: elected without it; followed: OfflineReplica).
        assert all(victim not in st["isr"] for st in after.values()), after

        def leaders_moved() -> dict[tuple[str, int], Any] | None:
            tc = topic_command(kafka)
            return tc if set(tc) == all_partitions() and all(
                row[0] in IDS and row[0] != victim for row in tc.values()) else None

        tc = wait_for(leaders_moved, WAIT, f"TopicCommand to show no partition led by {victim}", interval=0.5)
        assert {k: row[0] for k, row in tc.items()} == {k: st["leader"] for k, st in after.items()}

        # The broker process keeps running (only the controller knows it is shutting down) and registered.
        assert kafka.brokers[victim].alive()
        assert epoch_of(kafka, victim) == epoch
    finally:
        restart(kafka, victim)  # back to normal: a real restart clears the controller's shutting-down set
    healthy(kafka)


def test_a_stale_epoch_is_fenced_by_the_real_controller(kafka: RealCluster) -> None:
    healthy(kafka)
    victim = non_controllers(kafka)[-1]
    old, new = restart(kafka, victim)
    # The broker back in every ISR proves the controller knows its new epoch (AlterPartition must carry it).
    healthy(kafka)
    controller = kafka.controller()
    sent_before = len(kadmin_shutdowns(kafka))

    code, doc, err = kafka.run.json("brokers", "shutdown", str(victim), "--epoch", str(old))
    assert code == 6, err
    assert doc["data"]["error"] == "STALE_BROKER_EPOCH"
    assert doc["data"]["broker_epoch"] == old and doc["data"]["controller_id"] == controller
    assert f"has re-registered since epoch {old}" in err
    assert f"registered with epoch {new}, not {old}" in err

    sent = kadmin_shutdowns(kafka)[sent_before:]
    assert len(sent) == 1, sent
    (req,) = sent
    assert req["requestHeader"]["requestApiVersion"] == 3
    assert req["request"] == {"brokerId": victim, "brokerEpoch": old}
    assert req["response"]["errorCode"] == STALE_BROKER_EPOCH
    log = kafka.brokers[controller].server_log.read_text(errors="replace")
    assert (f"Received controlled shutdown request from an old broker epoch {old} for broker {victim}. "
            f"Current broker epoch is {new}.") in log

    # Refused, so nothing moved: the broker is still in every ISR and nothing changed.
    assert kafka.brokers[victim].alive() and epoch_of(kafka, victim) == new
    assert all(victim in st["isr"] for st in states(kafka).values())


def expected_blockers(kafka: RealCluster, broker_id: int) -> set[tuple[str, int]]:
    """The partitions whose ISR would drop below min.insync.replicas (or empty) if `broker_id` stopped,
    from the real state znodes of every topic and the topic configs Kafka wrote."""
    live = {bid for bid in IDS if kafka.brokers[bid].registration(kafka.kz) is not None}
    out = set()
    for (t, p), st in kafka.partition_states().items():
        if broker_id not in st["replicas"]:
            continue
        min_isr = int(kafka.topic_config(t).get("min.insync.replicas", "1"))  # the brokers' static default is 1
        isr_after = [r for r in st["isr"] if r != broker_id and r in live]
        if not isr_after or len(isr_after) < min_isr:
            out.add((t, p))
    return out


def test_can_stop_agrees_with_the_real_cluster(kafka: RealCluster) -> None:
    healthy(kafka)
    for bid in IDS:
        r = kafka.run("brokers", "can-stop", str(bid))
        assert r.exit_code == 0, f"can-stop {bid} on a healthy cluster:\n{r.stdout}\n{r.stderr}"
        assert expected_blockers(kafka, bid) == set()
    code, doc, err = kafka.run.json("brokers", "can-stop", str(IDS[0]))
    assert code == 0 and doc["data"]["safe"] is True and doc["data"]["blocking"] == [], err
    assert doc["data"]["hosted_partitions"] == len(all_partitions())

    stopped, asked = non_controllers(kafka)  # both non-controllers: the controller stays put
    b = kafka.brokers[stopped]
    blocking: set[tuple[str, int]] = set()
    try:
        b.stop(graceful=True, timeout=WAIT)  # SIGTERM: Kafka's own controlled shutdown, then the exit
        assert not b.alive()
        wait_for(lambda: b.registration(kafka.kz) is None, WAIT, f"/brokers/ids/{stopped} to go")

        def shrunk() -> dict[tuple[str, int], dict[str, Any]] | None:
            s = states(kafka)
            return s if set(s) == all_partitions() and all(
                stopped not in st["isr"] and len(st["isr"]) == 2 and st["leader"] in IDS and st["leader"] != stopped
                for st in s.values()) else None

        wait_for(shrunk, WAIT, f"every ISR to drop broker {stopped} (state znodes)", interval=0.25)
        others = ",".join(kafka.brokers[i].bootstrap for i in IDS if i != stopped)

        def tc_shrunk() -> dict[tuple[str, int], Any] | None:
            tc = topic_command(kafka, bootstrap=others)
            return tc if set(tc) == all_partitions() and all(stopped not in row[2] for row in tc.values()) else None

        tc = wait_for(tc_shrunk, WAIT, f"TopicCommand to show every ISR without broker {stopped}", interval=0.5)
        zk = states(kafka)
        assert tc == {k: (st["leader"], st["replicas"], st["isr"]) for k, st in zk.items()}

        # Now: nothing is under min ISR, but every orders partition is exactly at it (ISR 2 = min 2).
        for t, (_, min_isr) in TOPICS.items():
            assert describe(kafka, t, "--under-min-isr-partitions", bootstrap=others)["partitions"] == {}
            at_min = describe(kafka, t, "--at-min-isr-partitions", bootstrap=others)["partitions"]
            assert set(at_min) == ({p for (tt, p) in all_partitions() if tt == t} if min_isr == 2 else set())

        code, doc, err = kafka.run.json("brokers", "can-stop", str(asked))
        assert code == 1, err
        assert doc["data"]["safe"] is False and doc["data"]["never_satisfiable"] == []
        blocking = {(x["topic"], x["partition"]) for x in doc["data"]["blocking"]}
        # Exactly the partitions whose ISR stopping `asked` would leave below min ISR, per the real state...
        assert blocking == expected_blockers(kafka, asked)
        # ...which per TopicCommand are the at-min-ISR partitions with `asked` in the ISR: all of orders.
        at_min_with_asked = {(t, p) for t in TOPICS
                             for p, (_, _, isr) in describe(kafka, t, "--at-min-isr-partitions",
                                                            bootstrap=others)["partitions"].items()
                             if asked in isr}
        assert blocking == at_min_with_asked == {(t, p) for (t, p) in all_partitions() if t == "orders"}
        (survivor,) = (i for i in IDS if i not in (stopped, asked))  # the controller
        for x in doc["data"]["blocking"]:
            assert x["reason"] == f"ISR would drop to 1 ({survivor}), below min.insync.replicas 2", x
        # The other live broker (the controller) is blocked the same way; the stopped one is not.
        assert kafka.controller() == survivor
        assert kafka.run("brokers", "can-stop", str(survivor)).exit_code == 1
        # A shutdown without --force refuses (exit 7) with the same verdict, and sends nothing.
        sent_before = len(kadmin_shutdowns(kafka))
        code, doc, err = kafka.run.json("brokers", "shutdown", str(asked))
        assert code == 7, err
        assert {(x["topic"], x["partition"]) for x in doc["data"]["can_stop"]["blocking"]} == blocking
        assert len(kadmin_shutdowns(kafka)) == sent_before

        # Reality: stop `asked` too (its own controlled shutdown moves its leaders to the controller, the
        # only broker left). What Kafka then reports under min ISR is exactly what can-stop predicted.
        a = kafka.brokers[asked]
        a.stop(graceful=True, timeout=WAIT)
        assert not a.alive()
        wait_for(lambda: a.registration(kafka.kz) is None, WAIT, f"/brokers/ids/{asked} to go")
        wait_for(lambda: all(st["isr"] == [survivor] and st["leader"] == survivor for st in states(kafka).values()),
                 WAIT, f"every ISR to shrink to [{survivor}] (state znodes)", interval=0.25)
        alone = kafka.brokers[survivor].bootstrap

        def under_min() -> set[tuple[str, int]] | None:
            tc = topic_command(kafka, bootstrap=alone)
            if set(tc) != all_partitions() or any(row[2] != [survivor] for row in tc.values()):
                return None  # the survivor's metadata has not caught up yet
            return {(t, p) for t in TOPICS
                    for p in describe(kafka, t, "--under-min-isr-partitions", bootstrap=alone)["partitions"]}

        assert wait_for(under_min, WAIT, "TopicCommand's view after both stops", interval=0.5) == blocking
    finally:
        for bid in (stopped, asked):
            if not kafka.brokers[bid].alive():
                kafka.brokers[bid].start()
        for bid in (stopped, asked):
            kafka.brokers[bid].wait_registered(kafka.kz, timeout=WAIT)
    healthy(kafka)
    assert kafka.run("brokers", "can-stop", str(asked)).exit_code == 0
    assert json.loads(kafka.run("brokers", "can-stop", str(stopped), "-o", "json").stdout)["data"]["safe"] is True
