"""`kadmin brokers drain` / `undrain` against real Apache Kafka: 3.9.1 in ZooKeeper mode, 4.3.1 in KRaft.

ZooKeeper mode: three real 3.9.1 brokers under a chroot of the session's ZooKeeper, drained both ways
kadmin offers: Kafka's admin znodes (--zookeeper only) and the Kafka protocol (--bootstrap-server too).
KRaft: a 4.3.1 sandbox (3 controllers + 3 brokers) started once through kadmin's own CLI.

What is checked is what Kafka's own TopicCommand says: after `drain` the broker leads nothing and every
replica set is the same set as before (only the order changed: no data moved); after `undrain` the
original order is back and every partition is led by its original preferred replica. A reassignment
held in flight by a 1 B/s throttle makes drain refuse (exit 7); a partition whose only in-sync replica
is the broker is named. Nothing waits on time: every wait is on TopicCommand's answer or a znode.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from kadmin.domain.lease import LEASE_TOPIC, LEASE_ZNODE
from kadmin.sandbox.zkserver import Ensemble
from tests.support.kafka import (
    KAFKA_4,
    REASSIGN_COMMAND,
    TOPIC_COMMAND,
    RealCluster,
    broker_states,
    every_topic_but_the_lease,
    kafka_home,
    produce,
    tool,
    topic_lines,
    wait_for,
    wait_seen,
    zk_mode_cluster,
)
from tests.support.sandbox import Sandbox

pytestmark = [pytest.mark.kafka, pytest.mark.integration, pytest.mark.slow]

IDS = (1, 2, 3)
WAIT = 240.0  # generous: two busy cores, other suites running alongside
# No automatic preferred-leader rebalance moving leaders in the middle of a check.
BROKER_EXTRA = {"auto.leader.rebalance.enable": "false"}
Key = tuple[str, int]
Assignment = dict[int, list[int]]


def layout() -> Assignment:
    """Each broker first, second and last somewhere (RF 3: Kafka wants one replica count per topic)."""
    return {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2], 3: [1, 3, 2], 4: [2, 1, 3], 5: [3, 2, 1]}


def new_topic(bootstrap: str, assignment: Mapping[int, list[int]], prefix: str = "drain") -> str:
    from kafka.admin import KafkaAdminClient, NewTopic

    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=60000)
    try:
        admin.create_topics([NewTopic(name, replica_assignments=dict(assignment))], timeout_ms=60000)
    finally:
        admin.close()
    return name


def topic_state(home: Path, bootstrap: str, topics: list[str] | None = None) -> dict[Key, tuple[int, list[int],
                                                                                              list[int]]]:
    """TopicCommand --describe: {(topic, partition): (leader, replicas, isr)}; leader none is -1; empty while the
    broker asked has not yet got a named topic (topic_lines)."""
    parts = topic_lines(home, bootstrap, topics)

    def ints(s: str) -> list[int]:
        return [int(x) for x in s.split(",") if x]

    return {k: (-1 if f["Leader"] == "none" else int(f["Leader"]), ints(f["Replicas"]), ints(f["Isr"]))
            for k, f in parts.items()}


def wait_state(home: Path, bootstrap: str, topics: list[str] | None, ok: Any, what: str) -> dict[Key, Any]:
    """Wait until TopicCommand's state is `ok`; TopicCommand's JVM starts only once the brokers' Metadata answer,
    read in this process, is `ok` already (or could not be read)."""
    return wait_seen(lambda st: bool(st) and ok(st), lambda: topic_state(home, bootstrap, topics),
                     lambda: broker_states(bootstrap, topics), WAIT, what, interval=0.5)


def healthy(assignments: Mapping[str, Assignment]) -> Any:
    """Every partition led by its first replica with a full ISR, replicas in the created order."""
    def ok(st: Mapping[Key, tuple[int, list[int], list[int]]]) -> bool:
        want = {(t, p): r for t, a in assignments.items() for p, r in a.items()}
        return all(k in st and st[k][1] == r and st[k][0] == r[0] and sorted(st[k][2]) == sorted(r)
                   for k, r in want.items())
    return ok


def drained(st: Mapping[Key, tuple[int, list[int], list[int]]], assignments: Mapping[str, Assignment],
            broker: int) -> bool:
    """What TopicCommand shows once drained (its brokers' metadata may trail the controller by a moment)."""
    try:
        assert_drained(st, assignments, broker)
    except AssertionError:
        return False
    return True


def assert_drained(st: Mapping[Key, tuple[int, list[int], list[int]]], assignments: Mapping[str, Assignment],
                   broker: int) -> None:
    for (t, p), (leader, replicas, _isr) in st.items():
        if t not in assignments:
            continue
        before = assignments[t][p]
        assert sorted(replicas) == sorted(before), f"{t}-{p}: replica set changed {before} -> {replicas}"
        assert leader != broker, f"{t}-{p} still led by {broker}: {st[(t, p)]}"
        if broker in before and len(before) > 1:
            assert replicas[-1] == broker and [r for r in replicas if r != broker] == [
                r for r in before if r != broker], f"{t}-{p}: {before} -> {replicas}"


def drain_past_a_stopped_preferred_replica(home: Path, bootstrap: str, run_json: Any, stop: Any, start: Any,
                                           work: Path, extra: list[str]) -> None:
    """Issue 20: replicas [1,3,2], broker 3 stopped, ISR [1,2] led by 1. Moving only 1 last ([3,2,1]) makes
    3 the preferred leader, which is not in sync: the election fails and 1 keeps leading. `drain 1` must
    put the in-sync 2 first ([2,3,1]) so that 2 takes over. Then broker 3 is started again and `undrain`
    gives every partition back its leader and order (for the tests after this one). Run before the
    in-flight tests: their cancelled topics stay on broker 1 alone, which would leave 1 leading here."""
    a = {0: [1, 3, 2]}
    topic = new_topic(bootstrap, a)
    wait_state(home, bootstrap, [topic], healthy({topic: a}), f"{topic} created and in sync")
    # every topic but the drain's lease, by name (every_topic_but_the_lease): what the restore must give back
    every = every_topic_but_the_lease(home, bootstrap)
    before = topic_state(home, bootstrap, every)
    saved = work / "d.json"
    stop()
    try:
        wait_state(home, bootstrap, [topic], lambda st: st[(topic, 0)][0] == 1 and sorted(st[(topic, 0)][2]) == [
            1, 2], "ISR [1,2] led by 1")
        code, doc, err = run_json("brokers", "drain", "1", "--save", str(saved), "--timeout", "60", *extra)
        assert code == 0, err
        d = doc["data"]
        assert {"topic": topic, "partition": 0, "replicas": [1, 3, 2], "new_replicas": [2, 3, 1]} in d["reorder"]
        assert d["remaining"] == [] and d["only_isr"] == []
        st = wait_state(home, bootstrap, [topic], lambda st: st[(topic, 0)][0] == 2, "leader 2, per TopicCommand")
        assert st[(topic, 0)][1] == [2, 3, 1] and sorted(st[(topic, 0)][2]) == [1, 2]  # same set: nothing moved
    finally:
        start()
    wait_state(home, bootstrap, every, lambda st: all(sorted(i) == sorted(r) for _, r, i in st.values()),
               "every ISR full again")
    code, doc, err = run_json("brokers", "undrain", "1", "--from", str(saved), *extra)
    assert code == 0, err
    assert (topic, 0) in {(r["topic"], r["partition"]) for r in doc["data"]["restore"]}
    # every order as before and every partition broker 1 hosts led by its preferred replica again (the
    # leaderships that stopping broker 3 moved elsewhere stay where they went: none of drain's business)
    hosted = {(p["topic"], p["partition"]) for p in json.loads(saved.read_text())["partitions"]}
    assert (topic, 0) in hosted

    def restored(st: Mapping[Key, tuple[int, list[int], list[int]]]) -> bool:
        return st.keys() == before.keys() and all(
            st[k][1] == r and sorted(st[k][2]) == sorted(i) and (k not in hosted or st[k][0] == r[0])
            for k, (_, r, i) in before.items())
    wait_state(home, bootstrap, every, restored, "the original order back, broker 1's partitions led as preferred")


# ---------------------------------------------------------------------------------------------------
# ZooKeeper mode (Kafka 3.9.1)


@pytest.fixture(scope="module")
def kafka(zk_server: Ensemble, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealCluster]:
    with zk_mode_cluster(zk_server, tmp_path_factory.mktemp("kafka39-drain"), IDS, chroot_prefix="kdrain",
                         extra=BROKER_EXTRA) as cluster:
        yield cluster


def zk_topic(k: RealCluster, assignment: Assignment) -> str:
    name = new_topic(k.bootstrap, assignment)
    wait_state(k.home, k.bootstrap, [name], healthy({name: assignment}), f"{name} created and in sync")
    return name


def not_the_controller(k: RealCluster) -> str:
    """One broker that is not the controller: it answers ListPartitionReassignments and
    AlterPartitionReassignments NOT_CONTROLLER, and ElectLeaders NOT_CONTROLLER per partition, so kadmin must
    take them on to the controller Metadata names, as Kafka's admin client does."""
    controller = wait_for(k.controller, WAIT, "a controller")
    return next(b.bootstrap for i, b in sorted(k.brokers.items()) if i != controller)


@pytest.mark.parametrize("via", ["znodes", "protocol"])
def test_zk_drain_then_undrain(kafka: RealCluster, tmp_path: Path, via: str) -> None:
    a = layout()
    topic = zk_topic(kafka, a)
    # -z as a flag too: a --bootstrap-server flag alone beats the KADMIN_ZOOKEEPER Run sets (KRaft mode)
    extra = ["-z", kafka.zk, "--bootstrap-server", not_the_controller(kafka)] if via == "protocol" else []
    saved = tmp_path / "drain-1.json"

    code, doc, err = kafka.run.json("brokers", "drain", "1", "--dry-run", "--save", str(saved), *extra)
    assert code == 0, err
    assert not saved.exists() and doc["data"]["dry_run"] is True
    assert {(r["topic"], r["partition"]) for r in doc["data"]["reorder"] if r["topic"] == topic} == {
        (topic, p) for p, r in a.items() if 1 in r and r[-1] != 1}

    if via == "znodes":  # the default file: under $XDG_STATE_HOME/kadmin/drain/, its path on stdout (plain)
        r = kafka.run("brokers", "drain", "1", "-o", "plain")
        assert r.exit_code == 0, r.stderr
        saved = Path(r.stdout.strip())
        assert saved.parent == Path(os.environ["XDG_STATE_HOME"]) / "kadmin" / "drain" and saved.is_file()
        assert "it now leads none" in r.stderr and f"undrain 1 --from {saved}" in r.stderr
        # issue 21 §2: how many leaderships it moved, not only the end state
        assert re.search(r"moved (\d+) leaderships? off broker 1", r.stderr), r.stderr
    else:
        code, doc, err = kafka.run.json("brokers", "drain", "1", "--save", str(saved), *extra)
        assert code == 0, err
        d = doc["data"]
        assert d["mode"] == "protocol" and d["remaining"] == [] and d["led_before"] > 0
        assert d["file"] == str(saved) and str(saved) in err
        # the lease topic through a broker that is not the controller: CreateTopics and DeleteTopics go on to it
        assert "no lease" not in err and "not given back" not in err, err
    # TopicCommand, every topic (internal ones too)
    wait_state(kafka.home, kafka.bootstrap, None, lambda st: drained(st, {topic: a}, 1) and all(
        leader != 1 for leader, _, _ in st.values()), "broker 1 leading nothing, per TopicCommand")
    f = json.loads(saved.read_text())
    assert (f["version"], f["kind"], f["broker_id"]) == (1, "kadmin-drain", 1)
    assert {(p["topic"], p["partition"]): p["replicas"] for p in f["partitions"] if p["topic"] == topic} == {
        (topic, p): r for p, r in a.items() if 1 in r}

    code, doc, err = kafka.run.json("brokers", "undrain", "1", "--from", str(saved), *extra)
    assert code == 0, err
    assert "no lease" not in err and "not given back" not in err, err
    assert doc["data"]["not_preferred"] == []
    wait_state(kafka.home, kafka.bootstrap, [topic], healthy({topic: a}), "the original leaders and order back")


def drained_together_then_undrained(home: Path, bootstrap: str, connection: Mapping[str, str], topic: str,
                                    a: Assignment, tmp_path: Path) -> None:
    """A roll's batch (`roll run --parallel`) drains its brokers 1 and 2 as one: one reordering with both last,
    one election, a drain file per broker; and puts them back as one. Proven with TopicCommand; the topic is
    deleted at the end (RF 2 on 1 and 3: with 3 stopped, 1 would be their only ISR in the tests below)."""
    from kadmin.cluster.connect import open_backend
    from kadmin.config import ConnectionSettings, Sourced
    from kadmin.services import drain as dsvc

    files = {1: tmp_path / "drain-1.json", 2: tmp_path / "drain-2.json"}
    backend = open_backend(ConnectionSettings({k: Sourced(v, "flag") for k, v in connection.items()}), "roll run")
    try:
        res = dsvc.drain_together(backend.leadership, backend.identity, files, timeout=WAIT)
        # 4: [1, 2] has no replica outside the batch: named, and left led by 1 or 2 (a batch's gate refuses it)
        assert int(res.exit_code) == 1 and "still lead 1 partition(s)" in (res.message or ""), res.message
        assert [(p.topic, p.partition) for p in res.data.sole_replica] == [(topic, 4)]
        st = wait_state(home, bootstrap, [topic], lambda st: all(st[(topic, p)][0] == 3 for p in range(4)),
                        "partitions 0-3 led by 3, per TopicCommand")
        assert {p: st[(topic, p)][1] for p in range(4)} == {0: [3, 1], 1: [3, 2], 2: [3, 1], 3: [3, 2]}
        for i, f in files.items():  # each broker's file: the original order of the partitions it hosts
            doc = json.loads(f.read_text())
            assert doc["broker_id"] == i
            assert {p["partition"]: p["replicas"] for p in doc["partitions"] if p["topic"] == topic} == {
                p: r for p, r in a.items() if i in r}

        res = dsvc.undrain_together(backend.leadership, backend.identity, files, timeout=WAIT)
        assert int(res.exit_code) == 0, res.message
    finally:
        backend.close()
    wait_state(home, bootstrap, [topic], healthy({topic: a}), "the original leaders and order back")
    delete_topic(home, bootstrap, topic)


BATCH_LAYOUT = {0: [1, 3], 1: [2, 3], 2: [3, 1], 3: [3, 2], 4: [1, 2]}


def delete_topic(home: Path, bootstrap: str, name: str) -> None:
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=60000)
    try:
        admin.delete_topics([name], timeout_ms=60000)
    finally:
        admin.close()
    wait_state(home, bootstrap, None, lambda st: all(t != name for t, _ in st), f"{name} deleted")


def test_zk_brokers_drained_together_then_undrained_together(kafka: RealCluster, tmp_path: Path) -> None:
    topic = zk_topic(kafka, BATCH_LAYOUT)
    drained_together_then_undrained(kafka.home, kafka.bootstrap, {"zookeeper": kafka.zk}, topic, BATCH_LAYOUT,
                                    tmp_path)


def test_zk_drain_names_the_partitions_it_is_the_only_in_sync_replica_of(kafka: RealCluster,
                                                                          tmp_path: Path) -> None:
    a = {0: [2, 3], 1: [3, 2]}
    topic = zk_topic(kafka, a)
    b3 = kafka.brokers[3]
    b3.stop()
    try:
        wait_state(kafka.home, kafka.brokers[1].bootstrap, [topic],
                   lambda st: st[(topic, 0)][2] == [2] and st[(topic, 1)][0] == 2, "ISR of 2 only")
        saved = tmp_path / "d.json"
        code, doc, err = kafka.run.json("brokers", "drain", "2", "--save", str(saved), "--timeout", "20")
        assert code == 1, err
        assert {(r["topic"], r["partition"]) for r in doc["data"]["only_isr"]} >= {(topic, 0), (topic, 1)}
        assert {(topic, 0), (topic, 1)} <= {(r["topic"], r["partition"]) for r in doc["data"]["remaining"]}
        assert "only in-sync replica" in err and f"{topic}-0" in err
    finally:
        kafka.ready(timeout=WAIT)  # restarts broker 3
    # once in sync again, undrain gives broker 2 back what it preferred to lead
    wait_state(kafka.home, kafka.bootstrap, [topic], lambda st: all(len(v[2]) == 2 for v in st.values()),
               "ISR full again")
    code, doc, err = kafka.run.json("brokers", "undrain", "2", "--from", str(saved))
    assert code == 0, err
    wait_state(kafka.home, kafka.bootstrap, [topic], healthy({topic: a}), "the original leaders and order back")


@pytest.mark.parametrize("via", ["znodes", "protocol"])
def test_zk_drain_elects_an_in_sync_replica_when_the_preferred_one_is_down(kafka: RealCluster, tmp_path: Path,
                                                                           via: str) -> None:
    kafka.ready(timeout=WAIT)
    # -z as a flag too: a --bootstrap-server flag alone beats the KADMIN_ZOOKEEPER Run sets (KRaft mode)
    extra = ["-z", kafka.zk, "--bootstrap-server", not_the_controller(kafka)] if via == "protocol" else []
    drain_past_a_stopped_preferred_replica(kafka.home, kafka.bootstrap, kafka.run.json, kafka.brokers[3].stop,
                                           lambda: kafka.ready(timeout=WAIT), tmp_path, extra)


def hold_reassignment(home: Path, bootstrap: str, work: Path, leader: int, target: list[int],
                      produce_to: Any) -> tuple[str, Path]:
    """A topic on `leader` alone being moved to `target` under a 1 B/s throttle: held in flight."""
    topic = new_topic(bootstrap, {0: [leader]}, prefix="moving")
    produce_to(topic)
    plan = {"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": target,
                                          "log_dirs": ["any"] * len(target)}]}
    f = work / f"reassign-{topic}.json"
    f.write_text(json.dumps(plan))
    tool(home, REASSIGN_COMMAND, "--bootstrap-server", bootstrap, "--reassignment-json-file", str(f), "--execute",
         "--throttle", "1")
    return topic, f


def cancel(home: Path, bootstrap: str, plan: Path) -> None:
    tool(home, REASSIGN_COMMAND, "--bootstrap-server", bootstrap, "--reassignment-json-file", str(plan), "--cancel")


@pytest.mark.parametrize("via", ["znodes", "protocol"])
def test_zk_drain_refuses_while_a_reassignment_is_in_flight(kafka: RealCluster, tmp_path: Path, via: str) -> None:
    kafka.ready(timeout=WAIT)
    a = layout()
    other = zk_topic(kafka, a)
    topic, plan = hold_reassignment(kafka.home, kafka.bootstrap, tmp_path, 1, [2, 3],
                                    lambda t: produce(kafka, t, 0, count=4000, size=1000))
    # -z as a flag too: a --bootstrap-server flag alone beats the KADMIN_ZOOKEEPER Run sets (KRaft mode)
    extra = ["-z", kafka.zk, "--bootstrap-server", not_the_controller(kafka)] if via == "protocol" else []
    try:
        wait_state(kafka.home, kafka.bootstrap, [topic], lambda st: st[(topic, 0)][1] == [2, 3, 1],
                   f"{topic}-0 being reassigned")
        saved = tmp_path / "d.json"
        code, doc, err = kafka.run.json("brokers", "drain", "1", "--save", str(saved), *extra)
        assert code == 7, err
        assert doc["data"]["in_flight"] == [{"topic": topic, "partition": 0}]
        assert f"{topic}-0" in err and "--force" in err and not saved.exists()
        st = topic_state(kafka.home, kafka.bootstrap, [other])
        assert all(st[(other, p)][:2] == (r[0], r) for p, r in a.items())  # nothing changed
        # --force drains the rest and leaves the reassigning partition alone: still led by 1, named
        code, doc, err = kafka.run.json("brokers", "drain", "1", "--force", "--save", str(saved), "--timeout", "30",
                                        *extra)
        assert code == 1, err
        d = doc["data"]
        assert {"topic": topic, "partition": 0} in d["remaining"] and {"topic": topic, "partition": 0} in d["skipped"]
        assert all(r in d["skipped"] or r in d["sole_replica"] for r in d["remaining"])  # earlier tests' RF-1 topics
        wait_state(kafka.home, kafka.bootstrap, [other], lambda st: drained(st, {other: a}, 1), "the rest drained")
        assert topic_state(kafka.home, kafka.bootstrap, [topic])[(topic, 0)][1] == [2, 3, 1]  # untouched
        code, doc, err = kafka.run.json("brokers", "undrain", "1", "--from", str(saved), *extra)
        assert code == 0, err
    finally:
        cancel(kafka.home, kafka.bootstrap, plan)
    wait_state(kafka.home, kafka.bootstrap, [topic], lambda st: st[(topic, 0)][1] == [1], "reassignment cancelled")
    wait_state(kafka.home, kafka.bootstrap, [other], healthy({other: a}), "the original leaders and order back")


# ---------------------------------------------------------------------------------------------------
# KRaft (Kafka 4.3.1 sandbox: 3 controllers + brokers 1-3)


class KraftSandbox(Sandbox):
    def __init__(self, directory: Path) -> None:
        super().__init__(directory)
        self.home = kafka_home(KAFKA_4)
        self.bootstrap = ""

    def json(self, *args: str) -> tuple[int, Any, str]:  # the whole envelope, {} when nothing was printed
        r = self.run(*args, "-o", "json")
        return r.returncode, json.loads(r.stdout) if r.stdout.strip() else {}, r.stderr



def test_zk_two_drains_at_once_both_succeed_and_lead_nothing(kafka: RealCluster, tmp_path: Path) -> None:
    """ZooKeeper mode through Kafka's admin znodes (--zookeeper only): the lease is an ephemeral znode, gone once
    both have ended."""
    topic = zk_topic(kafka, layout())
    env = {k: v for k, v in os.environ.items() if not k.startswith("KADMIN_")}
    done = two_drains_at_once(kafka.home, kafka.bootstrap, ["-z", kafka.zk], env, topic, tmp_path,
                              lambda: {k: int(v["leader"]) for k, v in kafka.partition_states([topic]).items()})
    assert not any("no lease" in err for _, _, err in done.values()), done
    assert kafka.kz.exists(LEASE_ZNODE) is None


@pytest.fixture(scope="module")
def kraft(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KraftSandbox]:
    import signal

    from kadmin.sandbox.manager import process_identity

    sb = KraftSandbox(tmp_path_factory.mktemp("kraft-drain") / "sb")
    started: list[int] = []
    try:
        up = sb.run("sandbox", "up", "--kafka-home", str(sb.home), "--mode", "kraft", "--brokers", "3", "-o", "json")
        assert up.returncode == 0, up.stderr
        sb.bootstrap = json.loads(up.stdout)["data"]["bootstrap_servers"]
        started = sb.pids()
        yield sb
    finally:
        if (sb.dir / "state.json").exists():
            started = started or sb.pids()
            sb.run("sandbox", "down")
        for pid in started:
            if process_identity(pid) is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


def kraft_topic(sb: KraftSandbox, assignment: Assignment) -> str:
    name = new_topic(sb.bootstrap, assignment)
    wait_state(sb.home, sb.bootstrap, [name], healthy({name: assignment}), f"{name} created and in sync")
    return name


def test_kraft_drain_then_undrain(kraft: KraftSandbox, tmp_path: Path) -> None:
    a = layout()
    topic = kraft_topic(kraft, a)
    saved = tmp_path / "drain-1.json"
    code, doc, err = kraft.json("brokers", "drain", "1", "--bootstrap-server", kraft.bootstrap, "--save", str(saved))
    assert code == 0, err
    assert doc["data"]["mode"] == "protocol" and doc["data"]["remaining"] == []
    wait_state(kraft.home, kraft.bootstrap, None, lambda st: drained(st, {topic: a}, 1) and all(
        leader != 1 for leader, _, _ in st.values()), "broker 1 leading nothing, per TopicCommand")
    code, doc, err = kraft.json("brokers", "undrain", "1", "--bootstrap-server", kraft.bootstrap, "--from",
                                str(saved))
    assert code == 0, err
    wait_state(kraft.home, kraft.bootstrap, [topic], healthy({topic: a}), "the original leaders and order back")


def test_kraft_brokers_drained_together_then_undrained_together(kraft: KraftSandbox, tmp_path: Path) -> None:
    topic = kraft_topic(kraft, BATCH_LAYOUT)
    drained_together_then_undrained(kraft.home, kraft.bootstrap, {"bootstrap-server": kraft.bootstrap}, topic,
                                    BATCH_LAYOUT, tmp_path)


def test_kraft_drain_elects_an_in_sync_replica_when_the_preferred_one_is_down(kraft: KraftSandbox,
                                                                              tmp_path: Path) -> None:
    def stop() -> None:
        code, _, err = kraft.json("sandbox", "kill", "3")  # SIGTERM: a controlled shutdown
        assert code == 0, err

    def start() -> None:
        code, _, err = kraft.json("sandbox", "start", "3")
        assert code == 0, err

    drain_past_a_stopped_preferred_replica(kraft.home, kraft.bootstrap, kraft.json, stop, start, tmp_path,
                                           ["--bootstrap-server", kraft.bootstrap])


def test_kraft_drain_of_a_broker_back_from_a_restart_leading_nothing_succeeds(kraft: KraftSandbox,
                                                                            tmp_path: Path) -> None:
    """Seen in a real roll (issue 38, run 23): broker 1, back from a restart, led nothing, so its drain had nothing
    left to move once the controller applied the reordering, and the verdict was read at once. The broker that
    answered had not caught up yet and showed the old order: "another reassignment changed ... during the drain",
    exit 1, the roll stopped with broker 1 drained. The drain now reads until its own order shows. Run before the
    in-flight tests (their cancelled topics stay on broker 1 alone)."""
    a = layout()
    topic = kraft_topic(kraft, a)
    code, _, err = kraft.json("sandbox", "kill", "1")  # SIGTERM: a controlled shutdown moves its leaderships away
    assert code == 0, err
    try:
        wait_state(kraft.home, kraft.bootstrap, [topic], lambda st: all(leader != 1 for leader, _, _ in st.values()),
                   "broker 1 leading nothing while it is down")
    finally:
        code, _, err = kraft.json("sandbox", "start", "1")
        assert code == 0, err
    wait_state(kraft.home, kraft.bootstrap, None, lambda st: all(sorted(i) == sorted(r) for _, r, i in st.values()),
               "every ISR full again")
    saved = tmp_path / "d.json"
    code, doc, err = kraft.json("brokers", "drain", "1", "--bootstrap-server", kraft.bootstrap, "--save",
                                str(saved), "--timeout", "60")
    assert code == 0, err
    assert doc["data"]["remaining"] == [] and doc["data"]["changed_by_others"] == [], doc
    assert {(r["topic"], r["partition"]) for r in doc["data"]["reorder"]} >= {(topic, p) for p, r in a.items()
                                                                             if r[-1] != 1}
    wait_state(kraft.home, kraft.bootstrap, [topic], lambda st: drained(st, {topic: a}, 1),
               "broker 1 last everywhere and leading nothing, per TopicCommand")
    code, doc, err = kraft.json("brokers", "undrain", "1", "--bootstrap-server", kraft.bootstrap, "--from",
                                str(saved))
    assert code == 0, err
    wait_state(kraft.home, kraft.bootstrap, [topic], healthy({topic: a}), "the original leaders and order back")


def test_kraft_drain_refuses_while_a_reassignment_is_in_flight(kraft: KraftSandbox, tmp_path: Path) -> None:
    from kafka import KafkaProducer

    def fill(topic: str) -> None:
        producer = KafkaProducer(bootstrap_servers=kraft.bootstrap, acks=1, linger_ms=20, batch_size=256 * 1024)
        try:
            value = os.urandom(1000)
            futures = [producer.send(topic, value=value, partition=0) for _ in range(4000)]
            producer.flush(timeout=300)
            for f in futures:
                f.get(timeout=300)
        finally:
            producer.close(timeout=30)

    topic, plan = hold_reassignment(kraft.home, kraft.bootstrap, tmp_path, 1, [2, 3], fill)
    try:
        wait_state(kraft.home, kraft.bootstrap, [topic], lambda st: sorted(st[(topic, 0)][1]) == [1, 2, 3],
                   f"{topic}-0 being reassigned")
        code, doc, err = kraft.json("brokers", "drain", "1", "--bootstrap-server", kraft.bootstrap, "--save",
                                    str(tmp_path / "d.json"))
        assert code == 7, err
        assert doc["data"]["in_flight"] == [{"topic": topic, "partition": 0}] and f"{topic}-0" in err
        assert not (tmp_path / "d.json").exists()
    finally:
        cancel(kraft.home, kraft.bootstrap, plan)


def test_kraft_drain_names_the_partitions_it_is_the_only_in_sync_replica_of(kraft: KraftSandbox,
                                                                            tmp_path: Path) -> None:
    a = {0: [2, 3]}
    topic = kraft_topic(kraft, a)
    code, _, err = kraft.json("sandbox", "kill", "3")
    assert code == 0, err
    try:
        wait_state(kraft.home, kraft.bootstrap, [topic], lambda st: st[(topic, 0)][2] == [2], "ISR of 2 only")
        code, doc, err = kraft.json("brokers", "drain", "2", "--bootstrap-server", kraft.bootstrap, "--save",
                                    str(tmp_path / "d.json"), "--timeout", "20")
        assert code == 1, err
        assert {"topic": topic, "partition": 0} in doc["data"]["only_isr"]
        assert {"topic": topic, "partition": 0} in doc["data"]["remaining"]
        assert "only in-sync replica" in err and f"{topic}-0" in err
    finally:
        code, _, err = kraft.json("sandbox", "start", "3")
        assert code == 0, err
    wait_state(kraft.home, kraft.bootstrap, [topic], lambda st: sorted(st[(topic, 0)][2]) == [2, 3], "ISR full")
    code, doc, err = kraft.json("brokers", "undrain", "2", "--bootstrap-server", kraft.bootstrap, "--from",
                                str(tmp_path / "d.json"))
    assert code == 0, err
    wait_state(kraft.home, kraft.bootstrap, [topic], healthy({topic: a}), "the original leaders and order back")


# ---------------------------------------------------------------------------------------------------
# Issue 22 §2: mutations that cannot lie (KRaft 4.3.1, through --bootstrap-server)


def replicas_of(st: Mapping[Key, tuple[int, list[int], list[int]]]) -> dict[Key, list[int]]:
    return {k: v[1] for k, v in st.items()}


def two_drains_at_once(home: Path, bootstrap: str, conn: list[str], env: Mapping[str, str], topic: str,
                       tmp_path: Path, controller_leaders: Callable[[], Mapping[Key, int]] | None = None,
                       ) -> dict[int, tuple[int, Any, str]]:
    """Drains of brokers 2 and 3 started together (one process each), each wanting every partition of an RF-3
    topic in another order. With the cluster's leadership lease one waits for the other and plans from what it
    left: both succeed, and once both have ended neither broker leads anything: at once in what the controller
    wrote (`controller_leaders`, where the test can read it: ZooKeeper's state znodes, what kadmin's verdict
    reads), and per TopicCommand once the brokers' metadata has caught up with it (in ZooKeeper mode the
    controller's UpdateMetadata follows its znode writes; read at once, a broker still named broker 3 the leader
    of the partitions it had just given up, CI of stop 50). Before the lease, one of two runs on 4.3.1 ended with
    `drain 2` exit 0 while broker 2 led 3 partitions for good: the other drain, planned from an older reading, put
    it first again after drain 2 had verified. Then both are undone, the later one first (it stacked on the
    other), and the original order is back."""
    import subprocess
    import sys

    before = replicas_of(topic_state(home, bootstrap, [topic]))
    files = {b: tmp_path / f"drain-{b}.json" for b in (2, 3)}
    procs = {b: subprocess.Popen([sys.executable, "-m", "kadmin", "brokers", "drain", str(b), *conn, "--save",
                                  str(files[b]), "--timeout", "120", "-o", "json"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(env),
                                 stdin=subprocess.DEVNULL) for b in (2, 3)}
    done: dict[int, tuple[int, Any, str]] = {}
    for b, p in procs.items():
        out, err = p.communicate(timeout=300)
        done[b] = (p.returncode, json.loads(out) if out.strip() else {}, err)
    assert [code for code, _, _ in done.values()] == [0, 0], done
    if controller_leaders is not None:
        leaders = controller_leaders()
        assert leaders.keys() == before.keys(), (leaders, before)  # every partition's state read, none missed
        assert not [k for k, b in leaders.items() if b in (2, 3)], (leaders, done)  # what each said: "leads none"
    st = wait_state(home, bootstrap, [topic], lambda st: not any(leader in (2, 3) for leader, _, _ in st.values()),
                    "brokers 2 and 3 leading nothing, per TopicCommand")
    assert all(r[-2:] in ([2, 3], [3, 2]) for r in replicas_of(st).values()), st
    # the later drain saved the earlier one's order as its original: undone first, as stacked drains are
    def original(b: int) -> dict[Key, list[int]]:
        return {(r["topic"], r["partition"]): r["replicas"] for r in json.loads(files[b].read_text())["partitions"]}

    later = [b for b in (2, 3) if any(k in before and before[k] != r for k, r in original(b).items())]
    assert len(later) == 1, (later, done)
    for b in (later[0], 5 - later[0]):
        r = subprocess.run([sys.executable, "-m", "kadmin", "brokers", "undrain", str(b), *conn, "--from",
                            str(files[b]), "--timeout", "120"], capture_output=True, text=True, env=dict(env),
                           stdin=subprocess.DEVNULL, timeout=300)
        assert r.returncode == 0, r.stderr
    wait_state(home, bootstrap, [topic], lambda now: replicas_of(now) == before, "the original order back")
    return done


def test_kraft_two_drains_at_once_both_succeed_and_lead_nothing(kraft: KraftSandbox, tmp_path: Path) -> None:
    topic = kraft_topic(kraft, layout())
    done = two_drains_at_once(kraft.home, kraft.bootstrap, ["--bootstrap-server", kraft.bootstrap], kraft.env, topic,
                              tmp_path)
    assert not any("no lease" in err for _, _, err in done.values()), done  # the super user may take it
    # the lease topic was given back: it is nowhere once both have ended
    assert LEASE_TOPIC not in tool(kraft.home, TOPIC_COMMAND, "--bootstrap-server", kraft.bootstrap, "--list").stdout


def test_kraft_ctrl_c_after_the_reordering_was_submitted_stops_before_the_election(
        kraft: KraftSandbox, tmp_path: Path, mocker: Any) -> None:
    """Ctrl-C lands right after AlterPartitionReassignments was sent: no election follows; exit 130 saying what
    state the cluster is in and the undrain command that restores it, which then does."""
    import signal

    from kadmin.cluster.drain import AdminDrain
    from tests.conftest import Run

    a = layout()
    topic = kraft_topic(kraft, a)
    real = AdminDrain.reassign
    elections: list[Any] = []

    def submitted_then_ctrl_c(self: AdminDrain, plan: Any) -> Any:
        refused = real(self, plan)
        os.kill(os.getpid(), signal.SIGINT)  # deferred by kadmin (the change is committed)
        return refused

    mocker.patch.object(AdminDrain, "reassign", submitted_then_ctrl_c)
    spy = mocker.patch.object(AdminDrain, "elect_preferred", side_effect=lambda *x: elections.append(x) or {})
    saved = tmp_path / "d.json"
    r = Run(None)("brokers", "drain", "1", "--bootstrap-server", kraft.bootstrap, "--save", str(saved), "--timeout",
                  "60")
    assert r.exit_code == 130, r.stderr
    assert spy.call_count == 0 and elections == []  # no election after the Ctrl-C
    assert "after the reordering was submitted and before the election" in r.stderr, r.stderr
    undo = f"kadmin brokers undrain 1 --from {saved}"
    assert undo in r.stderr, r.stderr
    # reordered (1 last), and 1 still leads what it led: the election never happened
    st = wait_state(kraft.home, kraft.bootstrap, [topic], lambda now: all(v[1][-1] == 1 for k, v in now.items()
                                                                        if 1 in a[k[1]]), "1 last everywhere")
    assert any(leader == 1 for leader, _, _ in st.values()), st
    mocker.stopall()
    code, _, err = kraft.json(*undo.split()[1:], "--bootstrap-server", kraft.bootstrap)
    assert code == 0, err
    wait_state(kraft.home, kraft.bootstrap, [topic], healthy({topic: a}), "the original leaders and order back")


def test_kraft_undrain_refuses_a_file_of_another_cluster(kraft: KraftSandbox, tmp_path: Path) -> None:
    a = {0: [3, 1, 2]}  # broker 3: the earlier tests leave a single-replica topic on 1
    topic = kraft_topic(kraft, a)
    saved = tmp_path / "d.json"
    code, _, err = kraft.json("brokers", "drain", "3", "--bootstrap-server", kraft.bootstrap, "--save", str(saved))
    assert code == 0, err
    doc = json.loads(saved.read_text())
    cluster_id = doc["cluster"]["id"]
    code, info, err = kraft.json("cluster", "id", "--bootstrap-server", kraft.bootstrap)
    assert code == 0 and cluster_id == info["data"]["cluster_id"], (doc, info)  # the file records its cluster
    other = tmp_path / "other.json"
    other.write_text(json.dumps({**doc, "cluster": {**doc["cluster"], "id": "someOtherClusterIdAA"}}))
    r = kraft.run("brokers", "undrain", "3", "--bootstrap-server", kraft.bootstrap, "--from", str(other))
    assert r.returncode == 3, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "someOtherClusterIdAA" in r.stderr and "--force" in r.stderr
    st = topic_state(kraft.home, kraft.bootstrap, [topic])
    assert st[(topic, 0)][1] == [1, 2, 3]  # nothing was restored
    r = kraft.run("brokers", "undrain", "2", "--bootstrap-server", kraft.bootstrap, "--from", str(saved))
    assert r.returncode == 2 and "for broker 3, not 2" in r.stderr, r.stderr  # another broker's file
    code, _, err = kraft.json("brokers", "undrain", "3", "--bootstrap-server", kraft.bootstrap, "--from", str(other),
                              "--force")
    assert code == 0 and "--force" in err, err
    wait_state(kraft.home, kraft.bootstrap, [topic], healthy({topic: a}), "the original leaders and order back")


def test_kraft_a_lease_topic_left_behind_is_no_finding_and_the_next_drain_takes_it_over(kraft: KraftSandbox,
                                                                                        tmp_path: Path) -> None:
    """A lease topic a killed kadmin left (here made by hand with TopicCommand, on broker 3 only, holding Kafka's
    default retention: long expired as a lease) is no partition kadmin's gates judge, and no hidden one: it holds no
    data. The next drain takes it over as stale and deletes it when it ends."""
    tool(kraft.home, TOPIC_COMMAND, "--bootstrap-server", kraft.bootstrap, "--create", "--topic", LEASE_TOPIC,
         "--replica-assignment", "3")
    code, doc, err = kraft.json("brokers", "can-stop", "3", "--bootstrap-server", kraft.bootstrap)
    assert code == 0 and LEASE_TOPIC not in err + json.dumps(doc), err
    code, doc, err = kraft.json("partitions", "list", "--bootstrap-server", kraft.bootstrap)
    assert code == 0 and LEASE_TOPIC not in {r["topic"] for r in doc["data"]}, err
    saved = tmp_path / "d.json"
    code, doc, err = kraft.json("brokers", "drain", "3", "--bootstrap-server", kraft.bootstrap, "--save", str(saved))
    assert code == 0 and "no lease" not in err, err
    assert LEASE_TOPIC not in {r["topic"] for r in json.loads(saved.read_text())["partitions"]}
    listed = tool(kraft.home, TOPIC_COMMAND, "--bootstrap-server", kraft.bootstrap, "--list").stdout.split()
    assert LEASE_TOPIC not in listed  # taken over, then given back (deleted)
    code, _, err = kraft.json("brokers", "undrain", "3", "--bootstrap-server", kraft.bootstrap, "--from", str(saved))
    assert code == 0, err
