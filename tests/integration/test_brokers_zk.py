"""`kadmin brokers` against a real ZooKeeper holding Kafka's exact znodes."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from kazoo.client import KazooClient
from kazoo.security import make_digest_acl

from kadmin.sandbox.fleet import BrokerSpec

pytestmark = pytest.mark.integration

LIST_KEYS = {"id", "host", "port", "rack", "endpoints", "listener_security_protocol_map", "jmx_port", "version",
             "timestamp_ms", "features", "epoch", "session", "is_controller", "state"}


def kazoo(zk: str) -> KazooClient:
    k = KazooClient(hosts=zk)
    k.start(timeout=10)
    return k


def test_list_reads_every_registration_version_with_czxid_epochs(run, fleet, zk):
    fleet.register(BrokerSpec(1, host="b1", port=9092, version=5, rack="r1"))
    fleet.register(BrokerSpec(2, host="b2", port=9092, version=4))
    fleet.register(BrokerSpec(3, host="b3", port=9092, version=2))
    fleet.register(BrokerSpec(4, data=b'{"version":1,"host":"b4","port":9092,"jmx_port":-1,"timestamp":"17"}'))
    fleet.register(BrokerSpec(5, data=json.dumps({
        "version": 3, "host": None, "port": -1, "jmx_port": -1, "timestamp": "18", "rack": "r2",
        "endpoints": ["SASL_SSL://b5:9094"]}).encode()))
    code, doc, err = run.json("brokers", "list")
    assert code == 0, err
    assert doc["status"] == "success" and doc["command"] == "brokers list"
    rows = {r["id"]: r for r in doc["data"]}
    assert sorted(rows) == [1, 2, 3, 4, 5]
    assert all(set(r) == LIST_KEYS for r in rows.values())
    k = kazoo(zk)
    try:
        for bid, row in rows.items():
            _, stat = k.get(f"/brokers/ids/{bid}")
            assert row["epoch"] == stat.czxid  # KIP-380: the epoch is the czxid
            assert row["session"] == f"0x{stat.ephemeralOwner:x}"
            assert stat.version == 1  # create + setData(version 0), as Kafka registers
        controller = json.loads(k.get("/controller")[0])["brokerid"]
    finally:
        k.stop()
    assert [b for b, r in rows.items() if r["is_controller"]] == [controller]
    assert [rows[b]["version"] for b in (1, 2, 3, 4, 5)] == [5, 4, 2, 1, 3]
    assert rows[1]["rack"] == "r1" and rows[1]["features"] == {}
    assert rows[4]["endpoints"] == ["PLAINTEXT://b4:9092"] and rows[4]["timestamp_ms"] == 17
    assert rows[5]["host"] is None and rows[5]["port"] == -1
    assert rows[5]["listener_security_protocol_map"] == {"SASL_SSL": "SASL_SSL"}
    assert all(r["state"] == "registered" for r in rows.values())


def test_plain_output_is_columns_on_a_pipe(run, fleet):
    fleet.register(BrokerSpec(7, host="b7", port=9092))
    r = run("brokers", "list")
    lines = r.stdout.splitlines()
    assert lines[0].split()[:5] == ["ID", "HOST", "PORT", "RACK", "EPOCH"]
    assert lines[1].split()[:3] == ["7", "b7", "9092"]
    assert r.stderr == ""


def test_invalid_registration_is_partial_and_named(run, fleet):
    fleet.register(BrokerSpec(1))
    fleet.register(BrokerSpec(2, data=b'{"version":5,"host":'))
    code, doc, err = run.json("brokers", "list")
    assert code == 5
    assert doc["status"] == "partial" and doc["exit_code"] == 5
    assert doc["errors"][0]["code"] == "invalid_znode" and "/brokers/ids/2" in doc["errors"][0]["message"]
    bad = [r for r in doc["data"] if r["id"] == 2][0]
    assert bad["state"] == "invalid" and bad["epoch"] > 0
    assert "warning: /brokers/ids/2: invalid JSON" in err


def test_show_gives_raw_data_and_stat(run, fleet, zk):
    epoch = fleet.register(BrokerSpec(3, host="h3", port=9093))
    code, doc, _ = run.json("brokers", "show", "3")
    assert code == 0
    d = doc["data"]
    assert d["epoch"] == epoch == d["stat"]["czxid"]
    assert json.loads(d["raw"])["host"] == "h3"
    assert d["stat"]["version"] == 1 and d["path"] == "/brokers/ids/3"
    code, doc, err = run.json("brokers", "show", "99")
    assert code == 1 and doc["errors"][0]["code"] == "not_found"
    assert "broker 99 is not registered" in err


def test_max_epoch_is_the_largest_czxid(run, fleet):
    epochs = [fleet.register(BrokerSpec(i)) for i in (1, 2, 3)]
    _, newest = fleet.bounce(1)
    r = run("brokers", "max-epoch", "-o", "plain")
    assert r.exit_code == 0 and r.stdout == f"{newest}\n"
    code, doc, _ = run.json("brokers", "max-epoch")
    assert doc["data"] == {"max_broker_epoch": newest, "broker_id": 1, "brokers": 3}
    assert newest > max(epochs)


def test_max_epoch_with_no_brokers_exits_1(run, fleet):
    r = run("brokers", "max-epoch", "-o", "plain")
    assert r.exit_code == 1 and r.stdout.strip() == ""


def test_diff_classifies_new_dead_bounced_unchanged(run, fleet, tmp_path):
    for i in (1, 2, 3):
        fleet.register(BrokerSpec(i))
    saved = tmp_path / "before.json"
    saved.write_text(run("brokers", "list", "-o", "json").stdout)
    old3, new3 = fleet.bounce(3)
    fleet.stop(2)
    fleet.register(BrokerSpec(4))
    code, doc, err = run.json("brokers", "diff", "--since", str(saved))
    assert code == 0
    then = {str(b["id"]): b["epoch"] for b in json.loads(saved.read_text())["data"]}
    now = {str(b["id"]): b["epoch"] for b in json.loads(run("brokers", "list", "-o", "json").stdout)["data"]}
    assert doc["data"] == {"new": [4], "dead": [2], "bounced": [{"id": 3, "old_epoch": old3, "new_epoch": new3}],
                           "unchanged": [1], "old_epochs": then, "new_epochs": now}
    assert then["2"] is not None and "2" not in now  # the dead broker's last epoch is the saved listing's
    assert run("brokers", "diff", "--since", str(saved), "--exit-code").exit_code == 1
    saved.write_text(run("brokers", "list", "-o", "json").stdout)
    assert run("brokers", "diff", "--since", str(saved), "--exit-code").exit_code == 0


@pytest.mark.parametrize("content", ["", "{\"kadmin_result_version\": 1, \"data\": [{\"id\": 1}]}", "[1, 2", "{}"])
def test_diff_rejects_a_bad_saved_file(run, fleet, tmp_path, content):
    f = tmp_path / "saved.json"
    f.write_text(content)
    r = run("brokers", "diff", "--since", str(f))
    assert r.exit_code == 2
    assert r.stderr.startswith("kadmin: error: --since") and len(r.stderr.splitlines()) == 1


def test_wrong_chroot_is_a_configuration_error(zk_server, fleet, run_nozk):
    fleet.register(BrokerSpec(1))
    r = run_nozk("brokers", "list", "-z", zk_server.connect_string + "/no-such-chroot")
    assert r.exit_code == 3
    assert "chroot is probably wrong" in r.stderr and "Traceback" not in r.stderr


def test_unreachable_cluster_exits_4_within_timeout_without_traceback():
    start = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "kadmin", "brokers", "list", "-z", "127.0.0.1:1",
                        "--connect-timeout", "2"], capture_output=True, text=True, timeout=30)
    elapsed = time.monotonic() - start
    assert p.returncode == 4
    assert p.stderr.count("\n") == 1 and "cannot connect to ZooKeeper 127.0.0.1:1" in p.stderr
    assert "Traceback" not in p.stderr and p.stdout == ""
    assert elapsed < 2 + 5  # the timeout plus interpreter start-up, never the 10 s default


def test_every_member_refusing_or_not_resolving_is_said_at_once():
    """Issue 21 §2: kazoo retries a refused connection until the time-out; kadmin says "refused" at once when
    every member refuses or does not resolve, naming the default port it used for a member without one."""
    start = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "kadmin", "brokers", "list", "-z", "127.0.0.1,nosuchhost.invalid:2181",
                        "--connect-timeout", "30"], capture_output=True, text=True, timeout=60)
    elapsed = time.monotonic() - start
    assert p.returncode == 4 and p.stderr.count("\n") == 1, p.stderr
    assert "127.0.0.1 (port 2181, the default) refused the connection" in p.stderr, p.stderr
    assert "nosuchhost.invalid:2181 does not resolve" in p.stderr, p.stderr
    assert elapsed < 15  # never the 30 s time-out (start-up and a busy machine included)


def test_digest_acls_need_zk_auth(zk_server, chroot, tmp_path, run_nozk):
    from kadmin.sandbox.fleet import ThreadedFleet

    acl = [make_digest_acl("kafka", "s3cret", all=True)]
    f = ThreadedFleet(zk_server.hosts, chroot=chroot, auth=[("digest", "kafka:s3cret")], acl=acl)
    try:
        f.setup_cluster()
        f.register(BrokerSpec(1))
        zk = zk_server.connect_string + chroot
        denied = run_nozk("brokers", "list", "-z", zk)
        assert denied.exit_code == 4 and "not authorized" in denied.stderr and "--zk-auth" in denied.stderr
        ok = run_nozk("brokers", "list", "-z", zk, "--zk-auth", "digest:kafka:s3cret", "-o", "json")
        assert ok.exit_code == 0 and [b["id"] for b in json.loads(ok.stdout)["data"]] == [1]
        secret = tmp_path / "zk-auth"
        secret.write_text("digest:kafka:s3cret\n")
        from_file = run_nozk("brokers", "list", "-z", zk, "--zk-auth", f"@{secret}")
        assert from_file.exit_code == 0
        wrong = run_nozk("brokers", "list", "-z", zk, "--zk-auth", "digest:kafka:wrong")
        assert wrong.exit_code == 4
    finally:
        f.shutdown()


def test_context_file_supplies_the_cluster(fleet, zk, tmp_path, run_nozk):
    fleet.register(BrokerSpec(1))
    cfg = tmp_path / "config" / "kadmin"
    cfg.mkdir(parents=True)
    (cfg / "config.toml").write_text(f'[contexts.lab]\nzookeeper = "{zk}"\n')
    r = run_nozk("brokers", "list", "--context", "lab", "-o", "json", "-v")
    assert r.exit_code == 0 and json.loads(r.stdout)["data"][0]["id"] == 1
    assert "from context lab" in r.stderr
    assert run_nozk("brokers", "list", "--context", "nope").exit_code == 3


def test_an_emulated_broker_restarted_before_its_crashed_session_expires_fails_as_kafka_does(run, fleet, kz):
    """Real Kafka 3.9 (tests/kafka/test_real_zk_bounces.py): a broker started while its SIGKILLed
    predecessor's session still holds /brokers/ids/<id> exits at startup (NODEEXISTS, owner != current
    session); it does not wait for the expiry. The emulator does the same."""
    from kadmin.sandbox.fleet import BrokerStartupError

    old = fleet.register(BrokerSpec(1))
    fleet.crash(1)  # no close: the znode stays until ZooKeeper expires the session (4 s here)
    _, stat = kz.get("/brokers/ids/1")
    assert stat.czxid == old and stat.ephemeralOwner != 0
    with pytest.raises(BrokerStartupError, match="node already exists and owner"):
        fleet.register(BrokerSpec(1))
    _, still = kz.get("/brokers/ids/1")
    assert still.czxid == old  # nothing changed: the old registration stands
    assert run("brokers", "wait", "1", "--gone", "--timeout", "60").exit_code == 0
    new = fleet.register(BrokerSpec(1))
    assert new > old
