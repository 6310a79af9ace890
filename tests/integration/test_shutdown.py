"""`kadmin brokers shutdown` end to end: kafka-python on the wire, the emulated controller deciding
against the real ZooKeeper (epoch = czxid, leadership moved in the real state znodes)."""

from __future__ import annotations

import json
import ssl
import time

import pytest
from kazoo.client import KazooClient

from kadmin.domain import znodes
from kadmin.sandbox.broker.server import ThreadedBroker
from kadmin.sandbox.fleet import BrokerSpec

pytestmark = pytest.mark.integration

CS = 7  # ControlledShutdown


class Cluster:
    def __init__(self, zk_server, chroot, fleet, zk):
        self.zk_server, self.chroot, self.fleet, self.zk = zk_server, chroot, fleet, zk
        self.servers: dict[int, ThreadedBroker] = {}
        self.kz = KazooClient(hosts=zk)
        self.kz.start(timeout=10)

    def add(self, bid, ssl_context=None, listener="PLAINTEXT", **kw):
        srv = ThreadedBroker(bid, self.zk_server.hosts, chroot=self.chroot, loop=self.fleet.loop,
                             ssl_context=ssl_context, listener=listener, **kw)
        port = srv.start()
        self.servers[bid] = srv
        if listener == "PLAINTEXT":
            self.fleet.register(BrokerSpec(bid, port=port))
        else:
            data = znodes.encode_registration(host="127.0.0.1", port=-1, endpoints=[f"{listener}://127.0.0.1:{port}"],
                                              timestamp_ms=int(time.time() * 1000),
                                              listener_security_protocol_map={listener: "SSL"})
            self.fleet.register(BrokerSpec(bid, data=data))
        return srv

    def state(self, topic, p):
        data, stat = self.kz.get(f"/brokers/topics/{topic}/partitions/{p}/state")
        return json.loads(data), stat.version

    def epoch(self, bid):
        return self.kz.get(f"/brokers/ids/{bid}")[1].czxid

    def close(self):
        for s in self.servers.values():
            s.stop()
        self.kz.stop()
        self.kz.close()


@pytest.fixture
def kc(zk_server, chroot, fleet, zk):
    c = Cluster(zk_server, chroot, fleet, zk)
    yield c
    c.close()


def three_brokers(kc):
    for b in (1, 2, 3):
        kc.add(b)
    kc.fleet.create_topic("orders", {0: [2, 1, 3], 1: [1, 2, 3], 2: [3, 2, 1]}, configs={"min.insync.replicas": "2"})
    assert kc.fleet.fleet.controller_id == 1


def test_shutdown_moves_leadership_with_the_czxid_as_epoch(run, kc):
    three_brokers(kc)
    epoch2 = kc.epoch(2)
    before = {p: kc.state("orders", p) for p in range(3)}
    code, doc, err = run.json("brokers", "shutdown", "2")
    assert code == 0, err
    d = doc["data"]
    assert {k: d[k] for k in ("broker_id", "broker_epoch", "controller_id", "attempts", "remaining_partitions",
                              "error")} == {"broker_id": 2, "broker_epoch": epoch2, "controller_id": 1,
                                            "attempts": 1, "remaining_partitions": [], "error": None}
    assert set(d) == {"broker_id", "broker_epoch", "controller_id", "attempts", "remaining_partitions", "error",
                      "shutting_down_until_restart", "epoch_fenced"}
    assert d["shutting_down_until_restart"] is True and d["epoch_fenced"] is True and "fencing" not in err
    # what crossed the wire, decoded by the test controller's own codec
    req = [r for r in kc.servers[1].requests if r.api_key == CS]
    assert len(req) == 1 and req[0].api_version == 3
    assert req[0].body == {"broker_id": 2, "broker_epoch": epoch2}
    # what the controller did in the real ZooKeeper
    (s0, v0), (s1, _) = kc.state("orders", 0), kc.state("orders", 1)
    assert s0["leader"] != 2 and s0["leader_epoch"] == before[0][0]["leader_epoch"] + 1 and 2 not in s0["isr"]
    assert v0 == before[0][1] + 1
    assert 2 not in s1["isr"] and s1["leader"] == 1


def test_pinned_older_controller_gets_v2_with_epoch(run, zk_server, chroot, kc):
    kc.add(1, controlled_shutdown_versions=(0, 2))
    kc.add(2)
    kc.fleet.create_topic("t", {0: [1, 2]})
    r = run("brokers", "shutdown", "2", "--force")
    assert r.exit_code == 0, r.stderr
    req = [x for x in kc.servers[1].requests if x.api_key == CS][0]
    assert req.api_version == 2 and req.body["broker_epoch"] == kc.epoch(2)


def test_stale_epoch_after_a_bounce_is_rejected(run, kc):
    three_brokers(kc)
    old = kc.epoch(3)
    kc.fleet.bounce(3)
    assert kc.epoch(3) > old
    code, doc, err = run.json("brokers", "shutdown", "3", "--epoch", str(old))
    assert code == 6
    assert doc["data"]["error"] == "STALE_BROKER_EPOCH" and doc["data"]["broker_epoch"] == old
    assert f"broker 3 has re-registered since epoch {old}" in err
    state, _ = kc.state("orders", 2)
    assert state["leader"] == 3  # nothing was drained


def test_controller_moving_between_the_read_and_the_request(run, kc):
    three_brokers(kc)
    moved = []

    async def move_controller(api_key, api_version):
        if api_key == CS and not moved:
            moved.append(True)
            admin = await kc.fleet.fleet.admin()
            await admin.delete("/controller")
            assert await kc.fleet.fleet.elect_controller(2) == 2

    kc.servers[1].broker.before_request = move_controller
    code, doc, err = run.json("brokers", "shutdown", "3")
    assert code == 0, err
    assert doc["data"]["controller_id"] == 2 and doc["data"]["attempts"] == 2
    assert [r.api_key for r in kc.servers[2].requests].count(CS) == 1
    assert kc.state("orders", 2)[0]["leader"] != 3


def test_unreachable_controller_exits_4(run, kc):
    three_brokers(kc)
    kc.servers[1].stop()
    start = time.monotonic()
    r = run("brokers", "shutdown", "2", "--timeout", "3")
    assert r.exit_code == 4, r.stderr
    assert "cannot reach the controller" in r.stderr and len(r.stderr.splitlines()) == 1
    assert time.monotonic() - start < 15


def test_refuses_unsafe_shutdown_without_force(run, kc):
    three_brokers(kc)
    kc.fleet.stop(3)  # now orders-0 (2,1,3) has ISR 2,1: stopping 2 drops it below min ISR 2
    code, doc, err = run.json("brokers", "shutdown", "2")
    assert code == 7 and doc["data"]["error"] == "UNSAFE" and "--force" in err
    assert not [r for r in kc.servers[1].requests if r.api_key == CS]
    dry = run("brokers", "shutdown", "2", "--dry-run", "-o", "json")
    assert dry.exit_code == 7
    dd = json.loads(dry.stdout)["data"]
    assert dd["dry_run"] and dd["request"]["broker_epoch"] == kc.epoch(2) and dd["can_stop"]["safe"] is False
    assert not [r for r in kc.servers[1].requests if r.api_key == CS]
    forced = run("brokers", "shutdown", "2", "--force")
    assert forced.exit_code == 0, forced.stderr


def test_remaining_partitions_and_wait(run, kc):
    three_brokers(kc)
    # replicas 2 and 4: broker 4 is not registered, so no other replica can take over
    kc.fleet.create_topic("stuck", {0: [2, 4]})
    code, doc, err = run.json("brokers", "shutdown", "2", "--force")
    assert code == 1 and doc["data"]["remaining_partitions"] == [{"topic": "stuck", "partition": 0}]
    assert "still leads 1 partition: stuck-0" in err
    assert doc["data"]["isr_only_this_broker"] == [{"topic": "stuck", "partition": 0}]  # ISR [2]
    assert "stuck-0 has only broker 2 in the ISR" in err and "move only after it restarts" in err
    start = time.monotonic()
    code, doc, err = run.json("brokers", "shutdown", "2", "--force", "--wait", "--timeout", "1.5")
    assert code == 1 and doc["data"]["attempts"] > 1 and time.monotonic() - start < 10


def test_shutdown_over_ssl(run, kc, certs, tmp_path):
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(certs / "server.pem")
    kc.add(1, ssl_context=ctx, listener="SSL")
    kc.add(2, ssl_context=ctx, listener="SSL")
    kc.fleet.create_topic("t", {0: [2, 1]})
    props = tmp_path / "client.properties"
    props.write_text(f"security.protocol=SSL\nssl.truststore.location={certs / 'ca.pem'}\nssl.truststore.type=PEM\n")
    r = run("brokers", "shutdown", "2", "--command-config", str(props), "--force", "-o", "json")
    assert r.exit_code == 0, r.stderr
    assert kc.state("t", 0)[0]["leader"] == 1
    plain = run("brokers", "shutdown", "2", "--force")  # no PLAINTEXT listener registered
    assert plain.exit_code == 3 and "registers no PLAINTEXT listener" in plain.stderr


def fake_migration(kc, kraft_id=3000, kraft_epoch=5):
    """What a KRaft controller writes when it takes over during a migration (KIP-866): /controller v2,
    PERSISTENT, brokerid = the KRaft controller's id (no /brokers/ids registration), kraftControllerEpoch >= 0.
    Replaced in one multi, as KafkaZkClient.tryRegisterKRaftControllerAsActiveController does."""
    tx = kc.kz.transaction()
    tx.delete("/controller")
    tx.create("/controller", znodes.encode_controller(kraft_id, int(time.time() * 1000), kraft_epoch))
    assert all(r is True or isinstance(r, str) for r in tx.commit())
    assert json.loads(kc.kz.get("/controller")[0]) == {"version": 2, "brokerid": kraft_id,
                                                       "timestamp": json.loads(kc.kz.get("/controller")[0])[
                                                           "timestamp"], "kraftControllerEpoch": kraft_epoch}


@pytest.mark.parametrize("flags", [(), ("--dry-run",), ("--force", "--wait", "--timeout", "5")])
def test_a_kraft_controller_during_migration_is_unsupported_not_unreachable(run, kc, flags):
    three_brokers(kc)
    fake_migration(kc)
    code, doc, err = run.json("brokers", "shutdown", "2", *flags)
    assert code == 8, err
    assert doc["status"] == "error" and doc["errors"][0]["code"] == "unsupported"
    assert len(err.strip().splitlines()) == 1, err
    assert "KRaft controller 3000 (kraftControllerEpoch 5)" in err and "migration" in err
    assert "unreachable" not in err and "cannot reach" not in err
    assert not [r for s in kc.servers.values() for r in s.requests if r.api_key == CS]
    # a ZooKeeper controller writes kraftControllerEpoch -1: served as usual
    tx = kc.kz.transaction()
    tx.delete("/controller")
    tx.create("/controller", znodes.encode_controller(1, int(time.time() * 1000), -1))
    tx.commit()
    assert run("brokers", "shutdown", "2", "--dry-run").exit_code == 0


def test_a_v1_only_controller_gets_no_epoch_and_kadmin_says_fencing_does_not_apply(run, kc):
    kc.add(1, controlled_shutdown_versions=(0, 1))  # Kafka 2.0/2.1
    kc.add(2)
    kc.fleet.create_topic("t", {0: [2, 1]})
    code, doc, err = run.json("brokers", "shutdown", "2", "--force")
    assert code == 0, err
    (req,) = [x for x in kc.servers[1].requests if x.api_key == CS]
    # v1 has no BrokerEpoch field: the controller's codec reads Kafka's default, -1 ("no epoch": never fenced)
    assert req.api_version == 1 and req.body == {"broker_id": 2, "broker_epoch": -1}
    assert doc["data"]["epoch_fenced"] is False
    assert "ControlledShutdown v1 only" in err and "epoch fencing does not apply" in err
    assert kc.state("t", 0)[0]["leader"] == 1
    assert "warning" in err.splitlines()[0]  # on stderr before the result; v2+ (above) has no such warning


def test_the_success_message_says_the_broker_stays_shutting_down(run, kc):
    three_brokers(kc)
    code, doc, err = run.json("brokers", "shutdown", "2")
    assert code == 0, err
    assert doc["data"]["shutting_down_until_restart"] is True
    assert "stays in the controller's shutting-down set until it restarts" in err
    r = run("brokers", "shutdown", "3", "--dry-run", "-o", "json")
    assert "shutting_down_until_restart" not in json.loads(r.stdout)["data"]  # nothing was sent


def test_a_controller_without_controlled_shutdown_is_unsupported(run, kc):
    """Kafka 4.0 removed ControlledShutdown: the controller's ApiVersions lists no key 7. Exit 8, one line."""
    kc.add(1, controlled_shutdown_versions=None)
    kc.add(2)
    kc.fleet.create_topic("t", {0: [2, 1]})
    code, doc, err = run.json("brokers", "shutdown", "2", "--force")
    assert code == 8, err
    assert doc["errors"][0]["code"] == "unsupported_version" and len(err.strip().splitlines()) == 1
    assert "does not support ControlledShutdown (Kafka 4.0 removed it" in err
    assert kc.state("t", 0)[0]["leader"] == 2
