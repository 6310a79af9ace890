"""`kadmin quorum describe/check --zookeeper` against a real 3-node ensemble on loopback."""

from __future__ import annotations

import json
import time

import pytest
from kazoo.client import KazooClient

from kadmin.cluster.ensemble import is_not_serving
from kadmin.sandbox.ports import free_port
from kadmin.sandbox.zkserver import ZkServer, four_letter_word

pytestmark = pytest.mark.integration

REPLICA_KEYS = {"id", "directory_id", "log_end_offset", "lag", "last_fetch_timestamp", "last_caught_up_timestamp",
                "status", "endpoints", "zookeeper"}


def describe(run_nozk, zk):
    r = run_nozk("quorum", "describe", "--replication", "-z", zk, "-o", "json", "--connect-timeout", "2")
    return r.exit_code, json.loads(r.stdout), r.stderr


def write(zk_hosts):
    k = KazooClient(hosts=zk_hosts)
    k.start(timeout=20)
    k.ensure_path(f"/quorum-test/{time.monotonic_ns()}")
    k.stop()
    k.close()


def test_roles_and_exact_kafka_layout(ensemble, run_nozk):
    write(ensemble.connect_string)
    code, doc, err = describe(run_nozk, ensemble.connect_string)
    assert code == 0, err
    d = doc["data"]
    leader = next(s for s in ensemble.servers if s.mode() == "leader")
    assert d["leader_id"] == leader.myid and d["mode"] == "zookeeper"
    assert sorted(v["id"] for v in d["voters"]) == [1, 2, 3] and d["observers"] == []
    assert sorted(v["status"] for v in d["voters"]) == ["Follower", "Follower", "Leader"]
    assert all(set(v) == REPLICA_KEYS for v in d["voters"])
    hw = d["high_watermark"]
    assert d["leader_epoch"] == hw >> 32
    lead = next(v for v in d["voters"] if v["status"] == "Leader")
    assert lead["log_end_offset"] == hw & 0xFFFFFFFF and lead["lag"] == 0
    plain = run_nozk("quorum", "describe", "--replication", "-z", ensemble.connect_string, "-o", "plain").stdout
    lines = plain.split("\n")
    assert lines[0].split("\t")[:-1] == ["NodeId", "DirectoryId           ", "LogEndOffset", "Lag",
                                         "LastFetchTimestamp", "LastCaughtUpTimestamp", "Status  "]
    assert lines[1].startswith(f"{leader.myid}     \tAAAAAAAAAAAAAAAAAAAAAA\t") and lines[1].endswith("\tLeader  \t")
    status = run_nozk("quorum", "describe", "--status", "-z", ensemble.connect_string, "-o", "plain").stdout
    assert status.splitlines()[1] == f"LeaderId:               {leader.myid}"
    assert run_nozk("quorum", "check", "-z", ensemble.connect_string).exit_code == 0


def test_killed_follower_is_down_and_check_warns(ensemble, run_nozk):
    follower = next(s for s in ensemble.servers if s.mode() == "follower")
    follower.kill()
    try:
        code, doc, err = describe(run_nozk, ensemble.connect_string)
        assert code == 0 and "shown as Down" in err
        down = [v for v in doc["data"]["voters"] if v["status"] == "Down"]
        assert [v["id"] for v in down] == [follower.myid]  # the one id no live member accounts for
        assert down[0]["zookeeper"]["address"] == follower.address
        # with an address that is no member in the connect string, two are down: the follower is still named, by
        # its client address in the live members' membership lines; the stranger is not (-1)
        stranger = f"127.0.0.1:{free_port()}"
        code, doc, err = describe(run_nozk, f"{ensemble.connect_string},{stranger}")
        assert code == 0, err
        assert {v["zookeeper"]["address"]: v["id"] for v in doc["data"]["voters"] if v["status"] == "Down"} == {
            follower.address: follower.myid, stranger: -1}
        r = run_nozk("quorum", "check", "-z", ensemble.connect_string, "-o", "json")
        assert r.exit_code == 1
        assert [f["code"] for f in json.loads(r.stdout)["data"]["findings"]] == ["voter_down"]
        # restarting another voter now would leave one caught-up voter of three: critical
        other = next(s for s in ensemble.servers if s is not follower and s.mode() == "follower")
        r = run_nozk("quorum", "check", "-z", ensemble.connect_string, "--restart", str(other.myid))
        assert r.exit_code == 2 and "restarting node" in r.stderr
    finally:
        follower.write_config()
        follower.start()
        ensemble.wait_ready(60)


def test_killed_leader_is_replaced_with_a_new_epoch(ensemble, run_nozk):
    write(ensemble.connect_string)
    _, before, _ = describe(run_nozk, ensemble.connect_string)
    old = next(s for s in ensemble.servers if s.mode() == "leader")
    old.kill()
    try:
        # Until a new leader is elected and both survivors answer: a survivor too slow to answer its four-letter
        # words under load is Down too (and while no member serves, none can be named: no membership is known).
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            code, doc, _ = describe(run_nozk, ensemble.connect_string)
            if code == 0 and doc["data"]["leader_id"] not in (-1, old.myid) and \
                    sum(v["status"] == "Down" for v in doc["data"]["voters"]) == 1:
                break
            time.sleep(0.2)
        d = doc["data"]
        assert d["leader_id"] != old.myid
        assert d["leader_epoch"] > before["data"]["leader_epoch"]
        assert [v["status"] for v in d["voters"] if v["id"] == old.myid] == ["Down"]
    finally:
        old.write_config()
        old.start()
        ensemble.wait_ready(60)


def answer(s: ZkServer) -> str:
    try:
        return four_letter_word("127.0.0.1", s.client_port, "srvr", timeout=2.0)
    except OSError:
        return ""


def test_no_quorum_is_unreachable_without_a_crash(tmp_path, run_nozk):
    # one member of a 3-server ensemble whose peers never start: up, but not serving
    peers = [(1, free_port(), free_port()), (2, free_port(), free_port()), (3, free_port(), free_port())]
    s = ZkServer(tmp_path / "lonely", free_port(), myid=1, peers=peers, tick_ms=250)
    s.write_config()
    s.start()
    try:
        deadline = time.monotonic() + 60
        while not is_not_serving(answer(s)):  # up and answering: "not currently serving requests"
            assert time.monotonic() < deadline and s.alive(), "the lonely member never answered"
            time.sleep(0.05)
        r = run_nozk("quorum", "describe", "--status", "-z", f"{s.address},127.0.0.1:1", "--connect-timeout", "2")
        assert r.exit_code == 4 and "no leader" in r.stderr and "Traceback" not in r.stderr
        r = run_nozk("quorum", "check", "-z", f"{s.address},127.0.0.1:1", "--connect-timeout", "2", "-o", "json")
        assert r.exit_code == 2 and "no_leader" in r.stdout
    finally:
        s.stop()


def test_four_letter_words_not_whitelisted(tmp_path, run_nozk):
    s = ZkServer(tmp_path / "strict", free_port(), tick_ms=250, extra_cfg={"4lw.commands.whitelist": "srvr"})
    s.write_config()
    s.start()
    try:
        deadline = time.monotonic() + 30
        while s.mode() is None:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        r = run_nozk("quorum", "describe", "--status", "-z", s.address)
        assert r.exit_code == 3
        assert "4lw.commands.whitelist" in r.stderr and "conf" in r.stderr and len(r.stderr.splitlines()) == 1
    finally:
        s.stop()
