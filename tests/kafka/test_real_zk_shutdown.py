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
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kadmin.sandbox.ports import free_port
from kadmin.sandbox.zkserver import Ensemble
from tests.conftest import Run
from tests.support.kafka import (
    KAFKA_3_9,
    TOPIC_COMMAND,
    RealCluster,
    ZkModeBroker,
    broker_states,
    confirmed,
    describe,
    kafka_home,
    tool,
    wait_count,
    wait_for,
    zk_mode_cluster,
)

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


def shown(kafka: RealCluster, want: dict[tuple[str, int], Any]) -> dict[tuple[str, int], Any] | None:
    """TopicCommand's view when it is `want` ({(topic, p): (leader, replicas, isr)}), else None; a JVM per topic
    only once the brokers' Metadata answer shows `want` (`confirmed`)."""
    return confirmed(lambda got: got == want, lambda: topic_command(kafka),
                     lambda: broker_states(kafka.bootstrap, TOPICS))


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
        want = {k: (st["leader"], st["replicas"], st["isr"]) for k, st in s.items()}
        return s if shown(kafka, want) is not None else None

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


def kadmin_shutdowns(kafka: RealCluster, at_least: int = 0) -> list[dict[str, Any]]:
    """The ControlledShutdown requests kadmin (client id "kadmin") sent, as the receiving brokers logged them."""
    def read() -> list[dict[str, Any]]:
        return [r for b in kafka.brokers.values() for r in b.requests(CONTROLLED_SHUTDOWN, client_id="kadmin")]

    # a request's log line is written once its response is sent: wait for the lines expected
    return wait_count(read, at_least, WAIT, f"{at_least} ControlledShutdown lines in the request logs")


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
        sent = kadmin_shutdowns(kafka, at_least=sent_before + 1)[sent_before:]
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

    sent = kadmin_shutdowns(kafka, at_least=sent_before + 1)[sent_before:]
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


# ---------------------------------------------------------------------------------------------------
# The shutting-down set, the controller itself, a controller killed mid --wait, IPv6

LEADER_ELECTION = "org.apache.kafka.tools.LeaderElectionCommand"


def server_log(kafka: RealCluster, broker_id: int) -> str:
    return kafka.brokers[broker_id].server_log.read_text(errors="replace")


def wait_topic_command(kafka: RealCluster, expected: dict[tuple[str, int], dict[str, Any]],
                       what: str) -> dict[tuple[str, int], Any]:
    """Wait until TopicCommand (the brokers' metadata) shows the state znodes' leaders and ISRs."""
    want = {k: (st["leader"], st["replicas"], st["isr"]) for k, st in expected.items()}
    return wait_for(lambda: shown(kafka, want), WAIT, what, interval=0.5)


def test_a_shut_down_broker_left_running_stays_out_of_isrs_and_leadership_until_it_restarts(
        kafka: RealCluster) -> None:
    before = healthy(kafka)
    victim = non_controllers(kafka)[0]
    controller = kafka.controller()
    if not any(st["leader"] == victim for st in before.values()):
        # so the controller moves leaderships off it: it then follows their new leaders (fetching)
        before = preferred_leaders(kafka)
    preferred = {k for k, st in before.items() if st["replicas"][0] == victim}
    assert preferred, before  # TopicCommand spreads preferred replicas: the victim is first of some
    epoch = epoch_of(kafka, victim)
    log_from = {b: len(server_log(kafka, b)) for b in IDS}

    code, doc, err = kafka.run.json("brokers", "shutdown", str(victim))
    try:
        assert code == 0, err
        assert doc["data"]["shutting_down_until_restart"] is True and doc["data"]["epoch_fenced"] is True
        assert f"broker {victim} stays in the controller's shutting-down set until it restarts" in err

        # Out of every ISR (followed and formerly led) and leading nothing, per ZooKeeper and TopicCommand.
        after = states(kafka)
        assert set(after) == all_partitions()
        assert all(victim not in st["isr"] and st["leader"] in IDS and st["leader"] != victim
                   for st in after.values()), after
        wait_topic_command(kafka, after, f"TopicCommand to show broker {victim} in no ISR")

        # It stays so, though it keeps fetching as a follower of the partitions it led (the controller
        # stopped only its other replicas, StopReplica) and of any partition whose leader changes. Make
        # leaders change: restart the other non-controller for real (its own controlled shutdown moves
        # its leaderships; back, it rejoins every ISR: it is eligible). The leaders try to take the
        # caught-up victim back into their ISRs (in ZooKeeper mode only the controller checks the
        # shutting-down set): the controller refuses each AlterPartition with INELIGIBLE_REPLICA.
        (other,) = (b for b in IDS if b not in (victim, controller))
        restart(kafka, other)
        wait_for(lambda: all(other in st["isr"] for st in states(kafka).values()), WAIT,
                 f"broker {other} back in every ISR")

        def refused() -> str | None:
            for b in IDS:
                if b == victim:
                    continue
                for line in server_log(kafka, b)[log_from[b]:].splitlines():
                    if (f"Failed to alter partition to PendingExpandIsr(newInSyncReplicaId={victim}," in line
                            and "since the controller rejected the request with INELIGIBLE_REPLICA" in line):
                        return line
            return None

        wait_for(refused, WAIT, f"a leader's ISR expansion with broker {victim} to be refused", interval=0.5)

        # A preferred leader election does not make it leader where it is the preferred replica.
        election = tool(kafka.home, LEADER_ELECTION, "--bootstrap-server", kafka.bootstrap,
                        "--election-type", "PREFERRED", "--all-topic-partitions", check=False)
        out = election.stdout + election.stderr
        for t, p in preferred:
            assert f"{t}-{p}" in out, out  # named among the failed elections
        assert "Preferred replica not available" in out or "PreferredLeaderNotAvailable" in out, out
        still = states(kafka)
        assert all(victim not in st["isr"] and st["leader"] != victim for st in still.values()), still
        assert kafka.brokers[victim].alive() and epoch_of(kafka, victim) == epoch
        assert kafka.controller() == controller
    finally:
        restart(kafka, victim)  # a new registration: the controller forgets the shutting-down state
    back = healthy(kafka)  # it rejoins every ISR
    assert all(victim in st["isr"] for st in back.values())
    led = preferred_leaders(kafka)  # and can lead again
    assert {k for k, st in led.items() if st["leader"] == victim} == preferred


def test_shutdown_of_the_controller_broker_itself(kafka: RealCluster) -> None:
    before = healthy(kafka)
    controller = kafka.controller()
    assert controller is not None
    if not any(st["leader"] == controller for st in before.values()):
        before = preferred_leaders(kafka)
    led_before = {k for k, st in before.items() if st["leader"] == controller}
    assert led_before, before
    epoch = epoch_of(kafka, controller)
    sent_before = len(kadmin_shutdowns(kafka))

    code, doc, err = kafka.run.json("brokers", "shutdown", str(controller))
    try:
        assert code == 0, err
        d = doc["data"]
        assert d["broker_id"] == d["controller_id"] == controller and d["broker_epoch"] == epoch
        assert d["remaining_partitions"] == [] and d["shutting_down_until_restart"] is True
        (req,) = kadmin_shutdowns(kafka, at_least=sent_before + 1)[sent_before:]  # the controller answered about itself
        assert req["request"] == {"brokerId": controller, "brokerEpoch": epoch}
        assert req["response"] == {"errorCode": 0, "remainingPartitions": []}
        assert req in kafka.brokers[controller].requests(CONTROLLED_SHUTDOWN, client_id="kadmin")
        assert f"[Controller id={controller}] Shutting down broker {controller}" in server_log(kafka, controller)

        # Kafka 3.9 moves the leaderships off the controller broker and takes it out of every ISR...
        after = states(kafka)
        assert all(st["leader"] in IDS and st["leader"] != controller and controller not in st["isr"]
                   for st in after.values()), after
        wait_topic_command(kafka, after, f"TopicCommand to show broker {controller} leading nothing")
        # ...but the controller role stays where it is until that broker stops.
        assert kafka.controller() == controller and epoch_of(kafka, controller) == epoch
        assert kafka.brokers[controller].alive()
    finally:
        restart(kafka, controller)
    wait_for(lambda: kafka.controller() in IDS, WAIT, "a controller")
    healthy(kafka)


def kadmin_process(kafka: RealCluster, *args: str) -> subprocess.Popen[str]:
    """kadmin as an operator runs it, in the background (a separate process: its own signals)."""
    env = {**os.environ, "KADMIN_ZOOKEEPER": kafka.zk}
    return subprocess.Popen([sys.executable, "-m", "kadmin", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, stdin=subprocess.DEVNULL)


def test_wait_follows_a_new_controller_when_the_controller_is_killed(kafka: RealCluster) -> None:
    """A partition whose only other replica is out of its ISR cannot move: the real controller answers
    with it in remainingPartitions (on record in its request log), so `--wait` keeps asking. And it stays
    stuck while that controller lives: Kafka 3.9's controller refuses every AlterPartition whose new ISR
    names a shutting-down broker, the leader itself included, so the ISR cannot grow back. Then the
    controller is killed (SIGKILL): kadmin must re-read /controller, follow the new one and finish. A new
    controller starts with an empty shutting-down set: the ISR can grow and the partition move; should
    kadmin's request reach the new controller first (it then refuses the expansion too), deleting the
    topic empties the answer. Either way kadmin ends at the new controller with nothing left."""
    healthy(kafka)
    old_controller = kafka.controller()
    assert old_controller is not None
    victim, follower = non_controllers(kafka)
    topic = f"pinned-{uuid.uuid4().hex[:8]}"
    tool(kafka.home, TOPIC_COMMAND, "--bootstrap-server", kafka.bootstrap, "--create", "--topic", topic,
         "--replica-assignment", f"{victim}:{follower}")
    key = (topic, 0)
    wait_for(lambda: (lambda s: s.get(key, {}).get("leader") == victim and sorted(s[key]["isr"]) ==
                      sorted([victim, follower]))(kafka.partition_states([topic])), WAIT, f"{topic}-0 led by {victim}")
    proc: subprocess.Popen[str] | None = None
    f = kafka.brokers[follower]
    try:
        f.stop(graceful=True, timeout=WAIT)
        wait_for(lambda: f.registration(kafka.kz) is None, WAIT, f"/brokers/ids/{follower} to go")
        wait_for(lambda: kafka.partition_states([topic]).get(key, {}).get("isr") == [victim], WAIT,
                 f"{topic}-0's ISR to shrink to [{victim}]")
        log_from = len(server_log(kafka, old_controller))

        # Without --wait: the controller's answer names the partition, whose whole ISR is the victim.
        code, doc, err = kafka.run.json("brokers", "shutdown", str(victim), "--force")
        assert code == 1, err
        assert doc["data"]["remaining_partitions"] == doc["data"]["isr_only_this_broker"] == [
            {"topic": topic, "partition": 0}]
        assert f"{topic}-0 has only broker {victim} in the ISR" in err

        proc = kadmin_process(kafka, "brokers", "shutdown", str(victim), "--force", "--wait", "--timeout", "900",
                              "-o", "json")

        def answered(broker_id: int) -> dict[str, Any] | None:
            for r in kafka.brokers[broker_id].requests(CONTROLLED_SHUTDOWN, client_id="kadmin"):
                if r["request"]["brokerId"] == victim and r["response"]["errorCode"] == 0 and (
                        {"topicName": topic, "partitionIndex": 0} in r["response"]["remainingPartitions"]):
                    return r
            return None

        wait_for(lambda: answered(old_controller), WAIT, f"controller {old_controller} to answer {topic}-0 remains")
        assert proc.poll() is None  # --wait: still asking

        # The follower comes back, but the controller will not let the shutting-down leader grow the ISR.
        f.start()
        f.wait_registered(kafka.kz, timeout=WAIT)
        refusal = (f"[Controller id={old_controller}] Rejecting AlterPartition request from node {victim} for "
                   f"{topic}-0 because it specified ineligible replicas Set({victim}) in the new ISR")
        wait_for(lambda: refusal in server_log(kafka, old_controller)[log_from:], WAIT, "the ISR expansion refused")
        assert kafka.partition_states([topic])[key]["isr"] == [victim] and proc.poll() is None

        kafka.brokers[old_controller].kill()  # a crash: /controller stays until its ZooKeeper session expires
        new_controller = wait_for(lambda: (lambda c: c if c in (victim, follower) else None)(kafka.controller()),
                                  WAIT, "a new controller")
        # kadmin asks the new controller (or has already finished there).
        wait_for(lambda: proc.poll() is not None or kafka.brokers[new_controller].requests(
            CONTROLLED_SHUTDOWN, client_id="kadmin"), WAIT, f"kadmin to reach the new controller {new_controller}")
        if proc.poll() is None and kafka.partition_states([topic])[key]["leader"] == victim:
            tool(kafka.home, TOPIC_COMMAND, "--bootstrap-server", kafka.brokers[follower].bootstrap, "--delete",
                 "--topic", topic)
        out, err = proc.communicate(timeout=WAIT * 2)
        assert proc.returncode == 0, err
        d = json.loads(out)["data"]
        assert d["controller_id"] == new_controller != old_controller
        assert d["remaining_partitions"] == [] and d["error"] is None and d["shutting_down_until_restart"] is True
        assert d["attempts"] >= 2
        # the final answer's log line is written once it was sent: wait for a complete answer to appear
        last = wait_for(lambda: next((r for r in reversed(kafka.brokers[new_controller].requests(
            CONTROLLED_SHUTDOWN, client_id="kadmin")) if r["response"]["remainingPartitions"] == []), None), WAIT,
            f"controller {new_controller} to log its final answer")
        assert last["request"] == {"brokerId": victim, "brokerEpoch": epoch_of(kafka, victim)}
        assert last["response"] == {"errorCode": 0, "remainingPartitions": []}
        s = kafka.partition_states([topic, *TOPICS])
        assert all(st["leader"] != victim for st in s.values()), s
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.communicate()
        for b in (follower, old_controller):
            if not kafka.brokers[b].alive():
                kafka.brokers[b].start()
        for b in (follower, old_controller):
            kafka.brokers[b].wait_registered(kafka.kz, timeout=WAIT)
        restart(kafka, victim)
        tool(kafka.home, TOPIC_COMMAND, "--bootstrap-server", kafka.bootstrap, "--delete", "--if-exists",
             "--topic", topic, check=False)
    healthy(kafka)


def ipv6_loopback() -> bool:
    import socket

    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


def test_shutdown_reaches_a_controller_on_an_ipv6_listener(zk_server: Ensemble, tmp_path: Path) -> None:
    if not ipv6_loopback():
        pytest.skip("this machine has no IPv6 loopback (::1)")
    from kazoo.client import KazooClient

    home = kafka_home(KAFKA_3_9)
    chroot = f"/kshut6-{uuid.uuid4().hex[:10]}"
    port = free_port()
    zk = zk_server.connect_string + chroot
    root = KazooClient(hosts=zk_server.connect_string)
    root.start(timeout=30)
    root.ensure_path(chroot)
    root.stop()
    root.close()
    broker = ZkModeBroker(home, 1, zk, tmp_path, port=port, request_log=True,
                          extra={"listeners": f"PLAINTEXT://[::1]:{port}"})
    kz = KazooClient(hosts=zk)
    kz.start(timeout=30)
    try:
        broker.start()
        epoch = broker.wait_registered(kz, timeout=WAIT)
        reg = json.loads(kz.get("/brokers/ids/1")[0])
        assert reg["host"] == "::1" and reg["endpoints"] == [f"PLAINTEXT://[::1]:{port}"]
        wait_for(lambda: kz.exists("/controller") and json.loads(kz.get("/controller")[0])["brokerid"] == 1,
                 WAIT, "broker 1 to be the controller")
        run = Run(zk)
        code, doc, err = run.json("brokers", "shutdown", "1", "--dry-run")
        assert code == 0, err
        assert doc["data"]["request"]["controller"] == f"[::1]:{port}"
        code, doc, err = run.json("brokers", "shutdown", "1")
        assert code == 0, err
        assert doc["data"]["controller_id"] == 1 and doc["data"]["broker_epoch"] == epoch
        (req,) = broker.await_requests(CONTROLLED_SHUTDOWN, client_id="kadmin")
        assert req["request"] == {"brokerId": 1, "brokerEpoch": epoch} and req["response"]["errorCode"] == 0
        assert req["requestHeader"]["requestApiVersion"] == 3
    finally:
        broker.kill()
        kz.stop()
        kz.close()
