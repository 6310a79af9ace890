"""KRaft through kafka-python against the kio test server (tests/support/kraft_server.py): quorum describe
and check, DescribeQuorum v0/v1/v2, brokers list (DescribeCluster v0-v2), unregister, cluster id.

Real KRaft quorums (Kafka 4.3.1 and 3.9.1) are tested in tests/kafka/test_real_kraft_quorum.py.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import time
import uuid
from pathlib import Path

import pytest

from tests.support.kraft_server import KraftServer, Listener, Quorum, Replica, Scenario, VoterNode

pytestmark = pytest.mark.integration
GOLDEN = Path(__file__).resolve().parents[1] / "golden"
NOW = 1_700_000_010_000
QUORUM_KEYS = {"cluster_id", "leader_id", "leader_epoch", "high_watermark", "max_follower_lag",
               "max_follower_lag_time_ms", "voters", "observers"}
REPLICA_KEYS = {"id", "directory_id", "log_end_offset", "lag", "last_fetch_timestamp", "last_caught_up_timestamp",
                "status", "endpoints"}


def dir_id(text: str) -> uuid.UUID:
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=="))


def golden_scenario() -> Scenario:
    """The quorum of tests/golden/*.txt (see tests/unit/test_quorum.py), served by brokers."""
    sc = Scenario.cluster(brokers=2, controllers=0)
    sc.cluster_id = "MkU3OEVBNTcwNTJENDM2Qk"
    sc.quorum = Quorum(
        leader_id=3000, leader_epoch=7, high_watermark=123456,
        voters=[Replica(3000, dir_id("f0Rk8YxFQyO6VBchG9GSpg"), 123457, NOW, NOW),
                Replica(3001, dir_id("aTKmN4zQRp-b0eVcxrJrzw"), 123457, NOW - 12, NOW - 12),
                Replica(3002, dir_id("Qzd3hQvYS9qUt6C3iB_Ahg"), 123416, NOW - 480, NOW - 950)],
        observers=[Replica(1, None, 123453, NOW - 3, NOW - 3), Replica(2, None, 123000, -1, -1)],
        nodes=[VoterNode(3000, [Listener("CONTROLLER", "c0", 9093)]),
               VoterNode(3001, [Listener("CONTROLLER", "c1", 9093)]),
               VoterNode(3002, [Listener("CONTROLLER", "::1", 9093)])],
    )
    return sc


@pytest.fixture
def golden_server():
    with KraftServer(golden_scenario()) as srv:
        yield srv


def test_plain_output_is_kafka_metadata_quorums_byte_for_byte(golden_server, run_nozk):
    bs = golden_server.bootstrap("broker")
    status = run_nozk("quorum", "describe", "--status", "--bootstrap-server", bs, "-o", "plain")
    assert status.exit_code == 0, status.stderr
    assert status.stdout == (GOLDEN / "status.txt").read_text()
    rep = run_nozk("quorum", "describe", "--replication", "--bootstrap-server", bs, "-o", "plain")
    assert rep.stdout == (GOLDEN / "replication.txt").read_text()
    hum = run_nozk("quorum", "describe", "--replication", "--human-readable", "--bootstrap-server", bs, "-o", "plain")
    rows = [line.split("\t") for line in hum.stdout.splitlines()]
    assert rows[1][4].strip().endswith(" ms ago") and rows[5][4].strip() == "-1"  # -1 stays -1


def test_json_contract_with_observer_lag(golden_server, run_nozk):
    r = run_nozk("quorum", "describe", "--replication", "--bootstrap-server", golden_server.bootstrap(), "-o", "json")
    d = json.loads(r.stdout)["data"]
    assert set(d) == QUORUM_KEYS
    assert (d["leader_id"], d["max_follower_lag"], d["max_follower_lag_time_ms"]) == (3000, 41, 950)
    assert all(set(x) == REPLICA_KEYS for x in d["voters"] + d["observers"])
    assert [o["lag"] for o in d["observers"]] == [4, 457]  # Kafka's tool leaves observers out of its max lag
    assert d["observers"][1]["last_fetch_timestamp"] is None
    assert d["voters"][2]["endpoints"] == ["CONTROLLER://[::1]:9093"]
    assert d["voters"][0]["directory_id"] == "f0Rk8YxFQyO6VBchG9GSpg"


@pytest.mark.parametrize("cap", [0, 1, 2])
def test_describe_quorum_versions(cap, run_nozk):
    sc = Scenario.cluster()
    sc.broker_apis[55] = (0, cap)
    with KraftServer(sc) as srv:
        r = run_nozk("quorum", "describe", "--replication", "--bootstrap-server", srv.bootstrap(), "-o", "json")
        assert r.exit_code == 0, r.stderr
        d = json.loads(r.stdout)["data"]
        assert [rq.api_version for rq in srv.requests_for(55)] == [cap]
        v = d["voters"][0]
        assert (v["last_fetch_timestamp"] is None) == (cap < 1)  # timestamps from v1
        assert (v["directory_id"] is None) == (cap < 2) and (v["endpoints"] == []) == (cap < 2)


def test_bootstrap_controller_finds_the_raft_leader(run_nozk):
    sc = Scenario.cluster()
    sc.quorum.leader_id = 3001
    with KraftServer(sc) as srv:
        r = run_nozk("quorum", "describe", "--status", "--bootstrap-controller", srv.address(3000, "controller"),
                     "-o", "plain")
        assert r.exit_code == 0, r.stderr
        assert "LeaderId:               3001" in r.stdout
        assert [rq.endpoint.node_id for rq in srv.requests_for(55)] == [3001]


def test_no_leader_and_not_leader_or_follower(run_nozk):
    sc = Scenario.cluster()
    sc.quorum.leader_id = -1
    with KraftServer(sc) as srv:
        r = run_nozk("quorum", "describe", "--status", "--bootstrap-server", srv.bootstrap())
        assert r.exit_code == 4 and "no leader" in r.stderr and "Traceback" not in r.stderr
        assert run_nozk("quorum", "check", "--bootstrap-server", srv.bootstrap()).exit_code == 2
        srv.update(lambda s: setattr(s.quorum, "partition_error", 6))
        r = run_nozk("quorum", "describe", "--status", "--bootstrap-server", srv.bootstrap())
        assert r.exit_code == 6 and "NOT_LEADER_OR_FOLLOWER" in r.stderr


def test_check_finds_a_zombie_leader_and_lagging_replicas(run_nozk):
    now = int(time.time() * 1000)
    sc = Scenario.cluster(now_ms=now)
    sc.quorum.voters[1].last_fetch_timestamp = now - 60_000
    sc.quorum.voters[2].last_fetch_timestamp = now - 60_000
    with KraftServer(sc) as srv:
        r = run_nozk("quorum", "check", "--bootstrap-server", srv.bootstrap(), "-o", "json")
        assert r.exit_code == 2
        assert [f["code"] for f in json.loads(r.stdout)["data"]["findings"]] == ["zombie_leader"]
    sc = Scenario.cluster(now_ms=now)
    sc.quorum.observers[0].log_end_offset -= 5000
    with KraftServer(sc) as srv:
        r = run_nozk("quorum", "check", "--bootstrap-server", srv.bootstrap(), "--max-lag-ms", "600000", "-o", "json")
        assert r.exit_code == 1
        assert [f["code"] for f in json.loads(r.stdout)["data"]["findings"]] == ["observer_lagging"]


@pytest.mark.parametrize("skew_ms", [-3_600_000, 3_600_000])
def test_check_measures_on_the_leaders_clock_whatever_the_local_one_says(skew_ms, run_nozk):
    """The controllers' clock an hour behind or ahead of this machine's: a healthy quorum is OK (measured
    locally, -1 h would be a zombie leader), and a follower that stopped fetching 60 s ago by the leader's
    clock is still found (measured locally, +1 h would hide it)."""
    leader_now = int(time.time() * 1000) + skew_ms
    with KraftServer(Scenario.cluster(now_ms=leader_now)) as srv:
        r = run_nozk("quorum", "check", "--bootstrap-server", srv.bootstrap(), "-o", "json")
        assert r.exit_code == 0, r.stdout + r.stderr
        clock = json.loads(r.stdout)["data"]["clock"]
        assert (clock["source"], clock["now_ms"], clock["check_quorum_ms"]) == ("leader", leader_now, 3000)
        assert abs(clock["local_skew_ms"] + skew_ms) < 60_000
    sc = Scenario.cluster(now_ms=leader_now)
    for v in sc.quorum.voters[1:]:
        v.last_fetch_timestamp = v.last_caught_up_timestamp = leader_now - 60_000
    with KraftServer(sc) as srv:
        r = run_nozk("quorum", "check", "--bootstrap-server", srv.bootstrap(), "-o", "json")
        assert r.exit_code == 2
        assert [f["code"] for f in json.loads(r.stdout)["data"]["findings"]] == [
            "zombie_leader", "voter_lagging", "voter_lagging"]


@pytest.mark.parametrize("cap", [0, 1, 2])
def test_kraft_brokers_list(cap, run_nozk):
    sc = Scenario.cluster(brokers=3)
    sc.brokers[1].fenced = True
    sc.brokers[0].rack = "r1"
    sc.broker_apis[60] = (0, cap)
    with KraftServer(sc) as srv:
        r = run_nozk("brokers", "list", "--bootstrap-server", srv.bootstrap(), "-o", "json")
        assert r.exit_code == 0, r.stderr
        rows = json.loads(r.stdout)["data"]
        assert all(len(x) == 14 and x["epoch"] is None for x in rows)
        states = {x["id"]: x["state"] for x in rows}
        if cap >= 2:
            assert states == {1: "active", 2: "fenced", 3: "active"}
        else:
            assert states == {1: "active", 3: "active"} and "fenced brokers are not listed" in r.stderr
        assert rows[0]["rack"] == "r1" and rows[0]["port"] == srv.port(1)


def test_unregister(run_nozk):
    sc = Scenario.cluster(brokers=3)
    sc.brokers[2].fenced = True
    sc.unregister_errors = {7: 31}
    with KraftServer(sc) as srv:
        bs = srv.bootstrap()
        r = run_nozk("brokers", "unregister", "1", "--bootstrap-server", bs)
        assert r.exit_code == 7 and "--force" in r.stderr and not srv.requests_for(64)
        r = run_nozk("brokers", "unregister", "3", "--bootstrap-server", bs)  # nothing asked (no --yes)
        assert r.exit_code == 0 and "Broker 3 is no longer registered." in r.stderr
        assert [q.body.broker_id for q in srv.requests_for(64)] == [3]
        r = run_nozk("brokers", "unregister", "9", "--bootstrap-server", bs)
        assert r.exit_code == 1 and "BROKER_ID_NOT_REGISTERED" in r.stderr  # an unknown id: exit 1, not 6
        r = run_nozk("brokers", "unregister", "7", "--bootstrap-server", bs)
        assert r.exit_code == 4  # CLUSTER_AUTHORIZATION_FAILED
        assert run_nozk("brokers", "unregister", "1", "--force", "--bootstrap-server", bs).exit_code == 0


def test_bootstrap_controller_neither_lists_controllers_as_brokers_nor_skips_the_active_check(run_nozk):
    """Controllers answer DescribeCluster for the BROKER endpoint type with MISMATCHED_ENDPOINT_TYPE
    (KIP-919; as real 3.9.1 and 4.3.1 do, tests/kafka/test_real_kraft_quorum.py): exit 3 naming
    --bootstrap-server; unregister sends nothing without --force."""
    sc = Scenario.cluster(brokers=3)
    with KraftServer(sc) as srv:
        ctl = srv.bootstrap("controller")
        r = run_nozk("brokers", "list", "--bootstrap-controller", ctl, "-o", "json")
        assert r.exit_code == 3 and "use --bootstrap-server" in r.stderr and '"data": null' in r.stdout
        r = run_nozk("brokers", "unregister", "1", "--bootstrap-controller", ctl)
        assert r.exit_code == 3 and "cannot check that broker 1 is not active" in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1 and not srv.requests_for(64)
        r = run_nozk("brokers", "unregister", "1", "--force", "--bootstrap-controller", ctl)
        assert r.exit_code == 0, r.stderr
        assert [q.body.broker_id for q in srv.requests_for(64)] == [1]


def test_ctrl_c_after_unregister_was_sent_reports_it(run_nozk, mocker):
    """UnregisterBroker sent and answered, then Ctrl-C: the broker is gone, so that is reported (exit 0)."""
    from kadmin.cluster.kraft import KraftClient

    real = KraftClient.unregister_broker

    def sent_then_ctrl_c(self, broker_id):
        real(self, broker_id)
        os.kill(os.getpid(), signal.SIGINT)

    mocker.patch.object(KraftClient, "unregister_broker", sent_then_ctrl_c)
    sc = Scenario.cluster(brokers=3)
    sc.brokers[2].fenced = True
    with KraftServer(sc) as srv:
        r = run_nozk("brokers", "unregister", "3", "--bootstrap-server", srv.bootstrap())
        assert r.exit_code == 0, r.stderr
        assert "Broker 3 is no longer registered." in r.stderr
        assert "interrupted after the change was committed" in r.stderr
        assert [q.body.broker_id for q in srv.requests_for(64)] == [3]


def test_unreachable_bootstrap_exits_4(run_nozk):
    start = time.monotonic()
    r = run_nozk("quorum", "describe", "--status", "--bootstrap-server", "127.0.0.1:1", "--connect-timeout", "2")
    assert r.exit_code == 4 and "Traceback" not in r.stderr and len(r.stderr.splitlines()) == 1
    assert time.monotonic() - start < 15


def test_cluster_id_and_check_id(run_nozk, tmp_path):
    with KraftServer(Scenario.cluster()) as srv:
        bs = srv.bootstrap()
        r = run_nozk("cluster", "id", "--bootstrap-server", bs, "-o", "plain")
        assert r.stdout == "MkU3OEVBNTcwNTJENDM2Qg\n"
        good = tmp_path / "good.properties"
        good.write_text("#\n#Sun Nov 22 03:00:00 UTC 2026\nnode.id=1\nversion=1\ncluster.id=MkU3OEVBNTcwNTJENDM2Qg\n")
        other = tmp_path / "other.properties"
        other.write_text("version=0\nbroker.id=2\ncluster.id=SomeOtherClusterIdAAAA\n")
        broken = tmp_path / "broken.properties"
        broken.write_text("version=1\ncluster.id=x\n")
        assert run_nozk("cluster", "check-id", str(good), "--bootstrap-server", bs).exit_code == 0
        r = run_nozk("cluster", "check-id", str(good), str(other), "--bootstrap-server", bs, "-o", "json")
        assert r.exit_code == 1 and str(other) in r.stderr
        assert [f["match"] for f in json.loads(r.stdout)["data"]["files"]] == [True, False]
        r = run_nozk("cluster", "check-id", str(broken), "--bootstrap-server", bs)
        assert r.exit_code == 2 and "requires node.id" in r.stderr


def test_cluster_id_in_zookeeper_mode(run, fleet):
    r = run("cluster", "id", "-o", "plain")
    assert r.exit_code == 0 and r.stdout == "kadmin-sandbox-cluster\n"


# ---------------------------------------------------------------------------------------------------
# partitions / can-stop / wait --in-sync over --bootstrap-server (real Kafka: tests/kafka/test_real_kraft_partitions.py)


def test_partitions_fall_back_to_metadata_without_describe_topic_partitions(run_nozk):
    """A broker without DescribeTopicPartitions (API 75, Kafka < 3.8; this test server): Metadata answers.
    No topics exist here: an empty, healthy listing; can-stop answers for a live broker, exit 1 for an unknown one."""
    sc = Scenario.cluster(brokers=3)
    with KraftServer(sc) as srv:
        bs = srv.bootstrap()
        r = run_nozk("partitions", "list", "--bootstrap-server", bs, "-o", "json")
        assert r.exit_code == 0, r.stderr
        assert json.loads(r.stdout)["data"] == [] and srv.requests_for(3)
        r = run_nozk("partitions", "check", "--bootstrap-server", bs, "-o", "json")
        assert r.exit_code == 0 and json.loads(r.stdout)["data"]["status"] == "ok", r.stderr
        r = run_nozk("brokers", "can-stop", "2", "--bootstrap-server", bs, "-o", "json")
        assert r.exit_code == 0 and json.loads(r.stdout)["data"]["safe"] is True, r.stderr
        r = run_nozk("brokers", "can-stop", "9", "--bootstrap-server", bs)
        assert r.exit_code == 1 and "no broker 9" in r.stderr, r.stderr


def test_partition_commands_refuse_controllers_in_one_line(run_nozk):
    """Controllers serve no partition state: --bootstrap-controller exits 3 naming --bootstrap-server."""
    for args in (("partitions", "list"), ("partitions", "check"), ("brokers", "can-stop", "1"),
                 ("brokers", "wait", "1", "--in-sync", "--timeout", "5")):
        r = run_nozk(*args, "--bootstrap-controller", "127.0.0.1:1")
        assert r.exit_code == 3 and "--bootstrap-server" in r.stderr, (args, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr


@pytest.mark.parametrize("cap", [1, 2])
def test_kraft_brokers_wait_and_watch(cap, run_nozk):
    """KRaft `brokers wait`/`watch` poll DescribeCluster; below v2 fenced brokers are not listed, so
    --fenced and --gone exit 3 there (a fenced broker and a gone one look the same). The real
    lifecycle (kill, fence, restart, unregister) is in tests/kafka/test_real_kraft_brokers.py."""
    sc = Scenario.cluster(brokers=3)
    sc.brokers[1].fenced = True
    sc.broker_apis[60] = (0, cap)
    with KraftServer(sc) as srv:
        bs = srv.bootstrap()
        r = run_nozk("brokers", "wait", "2", "--fenced", "--bootstrap-server", bs, "-o", "json")
        if cap < 2:
            assert r.exit_code == 3 and "needs DescribeCluster v2" in r.stderr
            r = run_nozk("brokers", "wait", "2", "--gone", "--bootstrap-server", bs)
            assert r.exit_code == 3 and "a fenced broker and a gone one look the same" in r.stderr
        else:
            data = json.loads(r.stdout)["data"]
            assert r.exit_code == 0 and data == {**data, "met": True, "fenced": True, "epoch": None}
            r = run_nozk("brokers", "wait", "2", "--unfenced", "--timeout", "0.5", "--bootstrap-server", bs)
            assert r.exit_code == 1 and "broker 2 is registered and fenced" in r.stderr
            assert "polling DescribeCluster every 0.25s" in r.stderr
        r = run_nozk("brokers", "wait", "1", "--registered", "--bootstrap-server", bs)
        assert r.exit_code == 0, r.stderr
        r = run_nozk("brokers", "wait", "1", "--epoch-gt", "3", "--bootstrap-server", bs)
        assert r.exit_code == 3 and "DescribeCluster does not carry" in r.stderr
        r = run_nozk("brokers", "watch", "--initial", "--count", "4" if cap >= 2 else "2", "--timeout", "30",
                     "--bootstrap-server", bs, "-o", "json")
        assert r.exit_code == 0, r.stderr
        events = [(e["event"], e["id"], e["fenced"]) for e in json.loads(r.stdout)["data"]]
        if cap >= 2:
            assert events == [("registered", 1, False), ("registered", 2, True), ("fenced", 2, True),
                              ("registered", 3, False)]
        else:
            assert events == [("registered", 1, False), ("registered", 3, False)]
            assert "fenced brokers are not listed" in r.stderr


def test_fenced_waits_are_kraft_only(run_nozk):
    r = run_nozk("brokers", "wait", "1", "--fenced", "--zookeeper", "127.0.0.1:1")
    assert r.exit_code == 3 and "KRaft broker state" in r.stderr


def test_log_dirs_refused_make_gates_unknown_never_safe(run_nozk):
    """Issue 20: DescribeLogDirs refused (no Describe on the Cluster): no verdict can show it saw every partition,
    so `partitions check` is UNKNOWN (not OK) and `can-stop` exit 1 (not 0), each naming the ACL that would let it."""
    sc = Scenario.cluster(brokers=3)
    sc.log_dirs_error = 31  # CLUSTER_AUTHORIZATION_FAILED
    with KraftServer(sc) as srv:
        bs = srv.bootstrap()
        r = run_nozk("partitions", "check", "--bootstrap-server", bs, "-o", "json")
        doc = json.loads(r.stdout)["data"]
        assert r.exit_code == 3 and doc["status"] == "unknown", r.stderr
        assert {u["broker_id"] for u in doc["unseen"]} == {1, 2, 3}
        assert all("Describe on the Cluster" in u["reason"] for u in doc["unseen"]), doc["unseen"]
        r = run_nozk("brokers", "can-stop", "2", "--bootstrap-server", bs, "-o", "json")
        doc = json.loads(r.stdout)["data"]
        assert r.exit_code == 1 and doc["safe"] is False and doc["unseen"][0]["broker_id"] == 2, r.stderr
        # the operator names the topics: asked for by name, no log dirs needed (none exist here: an empty verdict)
        r = run_nozk("partitions", "check", "--topic", "t", "--bootstrap-server", bs, "-o", "json")
        assert json.loads(r.stdout)["data"]["unseen"] == [], r.stderr
