"""kadmin against three real Apache Kafka 3.9.1 brokers in ZooKeeper mode (not emulated ones).

The brokers are the worker's shared ones (tests/kafka/conftest.py), against the session's ZooKeeper
under one chroot. Each test first waits until all three are registered, so the tests do not depend on
each other's order (nor on the modules that used the cluster before).
What is compared is what Kafka itself wrote or says: the raw znodes, the brokers' own log lines,
and Kafka's TopicCommand.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kazoo.exceptions import NoNodeError

from tests.support.kafka import TOPIC_COMMAND, RealCluster, describe, last_logged_epoch, tool, wait_for
from tests.support.zkwatch import wait_for_new_watcher, watchers

pytestmark = [pytest.mark.kafka, pytest.mark.integration, pytest.mark.slow]

IDS = (1, 2, 3)


@pytest.fixture
def kafka(zk_kafka: RealCluster) -> RealCluster:
    """The worker's shared cluster (tests/kafka/conftest.py): every broker up and registered."""
    return zk_kafka



def test_brokers_list_is_what_the_real_brokers_registered(kafka: RealCluster) -> None:
    kafka.ready()
    before = kafka.registrations()
    code, doc, err = kafka.run.json("brokers", "list")
    after = kafka.registrations()
    assert code == 0, err
    assert {b: s.czxid for b, (_, s) in before.items()} == {b: s.czxid for b, (_, s) in after.items()}, \
        "a broker re-registered while the test read (a ZooKeeper session expired under load?)"
    rows = {r["id"]: r for r in doc["data"]}
    assert sorted(rows) == sorted(after) == list(IDS)
    controller = kafka.controller()
    for bid, (znode, stat) in after.items():
        row, broker = rows[bid], kafka.brokers[bid]
        # what a real 3.9.1 broker writes
        assert znode["version"] == 5
        assert znode["port"] == broker.port and znode["host"] == "127.0.0.1"
        assert znode["endpoints"] == [f"PLAINTEXT://127.0.0.1:{broker.port}"]
        assert stat.version == 1  # CheckedEphemeral: create(null) + setData(version 0)
        # kadmin reports exactly that
        assert row["host"] == znode["host"]
        assert row["port"] == znode["port"]
        assert row["endpoints"] == znode["endpoints"]
        assert row["listener_security_protocol_map"] == znode["listener_security_protocol_map"]
        assert row["jmx_port"] == znode["jmx_port"]
        assert row["version"] == znode["version"]
        assert row["features"] == znode["features"]
        assert row["timestamp_ms"] == int(znode["timestamp"])
        assert row["rack"] == znode.get("rack")
        assert row["epoch"] == stat.czxid
        assert row["epoch"] == last_logged_epoch(broker, stat.czxid)  # the broker's own word for its epoch
        assert row["session"] == f"0x{stat.ephemeralOwner:x}"
        assert row["is_controller"] is (bid == controller)
        assert row["state"] == "registered"


def test_a_real_graceful_restart_is_a_bounce(kafka: RealCluster, tmp_path: Path) -> None:
    kafka.ready()
    controller = kafka.controller()
    victim = kafka.brokers[min(b for b in IDS if b != controller)]
    saved = tmp_path / "before.json"
    listed = kafka.run("brokers", "list", "-o", "json")
    assert listed.exit_code == 0, listed.stderr
    saved.write_text(listed.stdout)
    old = next(r["epoch"] for r in json.loads(listed.stdout)["data"] if r["id"] == victim.id)

    # A rolling-bounce script's wait, started before the restart: its watch must see the new epoch.
    port, path = kafka.zk_server.servers[0].client_port, kafka.chroot + victim.znode
    seen = watchers(port, path)
    env = {**os.environ, "KADMIN_ZOOKEEPER": kafka.zk}
    waiter = subprocess.Popen([sys.executable, "-m", "kadmin", "brokers", "wait", str(victim.id), "--epoch-gt",
                               str(old), "--timeout", "400", "-o", "json"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        wait_for_new_watcher(port, path, seen, alive=lambda: waiter.poll() is None, timeout=120)
        t0 = time.monotonic()
        before_restart, new = victim.restart(kafka.kz)  # SIGTERM, exit, start, registered again
        restart_s = time.monotonic() - t0
        out, err = waiter.communicate(timeout=120)
    finally:
        if waiter.poll() is None:
            waiter.kill()
            waiter.wait()
    assert before_restart == old and new > old
    assert waiter.returncode == 0, err
    assert json.loads(out)["data"]["epoch"] == new
    assert last_logged_epoch(victim, new) == new

    code, doc, err = kafka.run.json("brokers", "diff", "--since", str(saved))
    assert code == 0, err
    assert {k: v for k, v in doc["data"].items() if k not in ("old_epochs", "new_epochs")} == {
        "new": [], "dead": [], "bounced": [{"id": victim.id, "old_epoch": old, "new_epoch": new}],
        "unchanged": sorted(b for b in IDS if b != victim.id)}, f"restart took {restart_s:.1f}s"
    again = kafka.run("brokers", "wait", str(victim.id), "--epoch-gt", str(old), "--timeout", "30")
    assert again.exit_code == 0, again.stderr


def test_partitions_list_agrees_with_topic_command(kafka: RealCluster) -> None:
    kafka.ready()
    topic, n = "zk-mode", 3
    tool(kafka.home, TOPIC_COMMAND, "--bootstrap-server", kafka.bootstrap, "--create", "--if-not-exists",
         "--topic", topic, "--partitions", str(n), "--replication-factor", "3")

    def states() -> dict[int, tuple[int, int]] | None:
        """{partition: (leader, state znode version)} once every partition has a leader."""
        got = {}
        for p in range(n):
            try:
                data, stat = kafka.kz.get(f"/brokers/topics/{topic}/partitions/{p}/state")
            except NoNodeError:
                return None
            leader = json.loads(data)["leader"]
            if leader < 0:
                return None
            got[p] = (leader, stat.version)
        return got

    # The controller writes the state znodes after TopicCommand returns, and the brokers learn them
    # after that (UpdateMetadata). Compare once ZooKeeper did not change while both were read and
    # TopicCommand's answer is complete; a real disagreement shows at the deadline.
    deadline = time.monotonic() + 180
    while True:
        v1 = wait_for(states, 300, f"leaders for all partitions of {topic}")
        code, doc, err = kafka.run.json("partitions", "list", "--topic", topic)
        assert code == 0, err
        desc = describe(kafka, topic)
        v2 = states()
        mine = {r["partition"]: (r["leader"], r["replicas"], r["isr"]) for r in doc["data"]}
        theirs = desc["partitions"]
        if v1 == v2 and len(theirs) == n and mine == theirs:
            break
        if time.monotonic() > deadline:
            assert mine == theirs, f"kadmin (ZooKeeper) vs TopicCommand (broker metadata):\n{desc['raw']}"
            pytest.fail(f"ZooKeeper kept changing: {v1} then {v2}")
        time.sleep(0.5)
    assert sorted(mine) == list(range(n))
    assert all(len(replicas) == 3 and sorted(isr) == sorted(replicas) for _, replicas, isr in mine.values())
    assert {r["topic_id"] for r in doc["data"]} == {desc["topic_id"]}
