"""The connection contract and the safety idiom against a real ZooKeeper (and the KRaft test server).

- `--connect-timeout` and a command's `--timeout` are both honoured when both are given.
- A wrong chroot is exit 3 with one and the same line on every command, `quorum describe` included.
- Every command that changes the cluster acts when run, previews with `--dry-run` (changing
  nothing) and refuses what is unsafe with exit 7 unless `--force`; no `--apply`, no `--yes`
  (both accepted with a deprecation warning for one release, changing nothing).
"""

from __future__ import annotations

import json
import time

import pytest

from kadmin.sandbox.fleet import BrokerSpec
from tests.support.kraft_server import KraftServer, Scenario

pytestmark = pytest.mark.integration

UNREGISTER_BROKER = 64


# ------------------------------------------------------------------------------ both timeouts at once
def test_the_command_deadline_governs_a_wait_whatever_the_connect_timeout(run, fleet):
    fleet.register(BrokerSpec(1))
    start = time.monotonic()
    r = run("brokers", "wait", "9", "--registered", "--timeout", "0.5", "--connect-timeout", "30")
    assert r.exit_code == 1 and "timed out" in r.stderr, r.stderr
    assert time.monotonic() - start < 0.5 + 2.0
    # both given and both kept: a short connect timeout does not cut a longer wait that connected
    r = run("brokers", "wait", "1", "--registered", "--timeout", "30", "--connect-timeout", "5")
    assert r.exit_code == 0, r.stderr
    r = run("brokers", "wait", "9", "--registered", "--timeout", "1.5", "--connect-timeout", "0.5")
    assert r.exit_code == 1 and "timed out" in r.stderr, r.stderr  # waited past the 0.5 s connect timeout


# ------------------------------------------------------------------------------------------ wrong chroot
def one_line(r) -> str:  # type: ignore[no-untyped-def]
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    return lines[0]


@pytest.mark.parametrize("argv", [["quorum", "describe", "--status"], ["quorum", "describe", "--replication"],
                                  ["quorum", "check"]])
def test_quorum_on_a_wrong_chroot_exits_3_like_every_other_command(zk_server, fleet, run_nozk, argv):
    fleet.register(BrokerSpec(1))
    wrong = zk_server.connect_string + "/no-such-chroot"
    r = run_nozk(*argv, "-z", wrong, "-o", "plain")
    assert r.exit_code == 3, (r.exit_code, r.stdout, r.stderr)
    assert "ClusterId" not in r.stdout
    listing = run_nozk("brokers", "list", "-z", wrong)
    assert listing.exit_code == 3
    assert one_line(r) == one_line(listing)  # the same message as the others
    assert "chroot is probably wrong" in one_line(r)


def test_quorum_on_the_right_chroot_or_the_bare_ensemble_still_describes(zk_server, fleet, zk, run_nozk):
    fleet.register(BrokerSpec(1))
    r = run_nozk("quorum", "describe", "--status", "-z", zk, "-o", "plain")
    assert r.exit_code == 0 and "ClusterId:              kadmin-sandbox-cluster" in r.stdout, r.stderr
    # no chroot: a ZooKeeper ensemble is a quorum to describe even with no Kafka at its root
    r = run_nozk("quorum", "describe", "--status", "-z", zk_server.connect_string, "-o", "json")
    assert r.exit_code == 0 and json.loads(r.stdout)["data"]["cluster_id"] is None, r.stderr


# ------------------------------------------------------------------------------------- the safety idiom
@pytest.fixture
def ids_cluster(fleet, kz):
    """Broker 1 registered from 127.0.0.1; box-c maps to 1 too (garbage by the rule)."""
    fleet.register(BrokerSpec(1))
    kz.ensure_path("/brokers/hosts")
    kz.create("/brokers/hosts/box-c", b'{"version":0,"broker.id":1}')
    return kz


def test_ids_gc_deletes_when_run_and_previews_with_dry_run(run, ids_cluster):
    kz = ids_cluster
    code, doc, err = run.json("ids", "gc", "--dry-run")
    assert code == 0 and [(g["host"], g["deleted"]) for g in doc["data"]] == [("box-c", False)]
    assert kz.exists("/brokers/hosts/box-c") and "warning" not in err
    code, doc, err = run.json("ids", "gc")
    assert code == 0 and doc["data"][0]["deleted"] is True and not kz.exists("/brokers/hosts/box-c"), err


def test_ids_gc_apply_is_a_deprecated_no_op(run, ids_cluster):
    kz = ids_cluster
    code, doc, err = run.json("ids", "gc", "--apply")
    assert code == 0 and doc["data"][0]["deleted"] is True and not kz.exists("/brokers/hosts/box-c")
    assert err.startswith("kadmin: warning: --apply is deprecated in `kadmin ids gc`"), err
    r = run("ids", "gc", "--apply", "--dry-run")
    assert r.exit_code == 2 and "not both" in r.stderr


def test_ids_map_and_unmap_dry_run_change_nothing_and_map_refuses_without_force(run, ids_cluster):
    kz = ids_cluster
    code, doc, _ = run.json("ids", "map", "box-a", "3", "--dry-run")
    assert code == 0 and doc["data"]["dry_run"] is True and not kz.exists("/brokers/hosts/box-a")
    r = run("ids", "map", "box-b", "1", "--dry-run")  # 1 is registered from 127.0.0.1: refused, dry run or not
    assert r.exit_code == 7 and "--force" in r.stderr and not kz.exists("/brokers/hosts/box-b")
    assert run("ids", "map", "box-b", "1", "--force", "--dry-run").exit_code == 0
    assert not kz.exists("/brokers/hosts/box-b")
    assert run("ids", "map", "box-b", "1", "--force").exit_code == 0 and kz.exists("/brokers/hosts/box-b")
    code, doc, _ = run.json("ids", "unmap", "box-b", "--dry-run")
    assert code == 0 and doc["data"]["dry_run"] is True and kz.exists("/brokers/hosts/box-b")
    assert run("ids", "unmap", "box-b").exit_code == 0 and not kz.exists("/brokers/hosts/box-b")


def test_unregister_asks_nothing_refuses_an_active_broker_and_yes_is_a_deprecated_no_op(run_nozk):
    sc = Scenario.cluster(brokers=3)
    sc.brokers[2].fenced = True
    with KraftServer(sc) as srv:
        bs = srv.bootstrap()
        r = run_nozk("brokers", "unregister", "1", "--bootstrap-server", bs)  # active: refused
        assert r.exit_code == 7 and "--force" in r.stderr and not srv.requests_for(UNREGISTER_BROKER)
        r = run_nozk("brokers", "unregister", "3", "--bootstrap-server", bs)  # fenced: done, nothing asked
        assert r.exit_code == 0 and "Broker 3 is no longer registered." in r.stderr, r.stderr
        assert "warning" not in r.stderr
        r = run_nozk("brokers", "unregister", "2", "-y", "--force", "--bootstrap-server", bs)
        assert r.exit_code == 0, r.stderr
        assert r.stderr.startswith("kadmin: warning: --yes is deprecated in `kadmin brokers unregister`")
        assert [q.body.broker_id for q in srv.requests_for(UNREGISTER_BROKER)] == [3, 2]


# ------------------------------------------------------------------------- drain / undrain (ZooKeeper mode)
@pytest.fixture
def drain_cluster(fleet, kz):
    """Brokers 1 and 2; broker 1 leads t-0 and follows in t-1."""
    fleet.register(BrokerSpec(1))
    fleet.register(BrokerSpec(2))
    fleet.create_topic("t", {0: [1, 2], 1: [2, 1]})
    return kz


REASSIGN = "/admin/reassign_partitions"


def in_flight(kz, topic: str = "t", partition: int = 0) -> None:  # type: ignore[no-untyped-def]
    kz.create(REASSIGN, json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": partition, "replicas": [2, 1]}]}).encode(), makepath=True)


def test_drain_dry_run_changes_nothing_and_an_in_flight_reassignment_is_refused_without_force(run, drain_cluster,
                                                                                              tmp_path):
    kz = drain_cluster
    saved = tmp_path / "drain.json"
    code, doc, err = run.json("brokers", "drain", "1", "--dry-run", "--save", str(saved), "--timeout", "1")
    assert code == 0, err
    assert not kz.exists(REASSIGN) and not kz.exists("/admin/preferred_replica_election") and not saved.exists()
    in_flight(kz)
    before = kz.get(REASSIGN)[0]
    r = run("brokers", "drain", "1", "--save", str(saved), "--timeout", "1")
    assert r.exit_code == 7 and "--force" in r.stderr, r.stderr
    assert kz.get(REASSIGN)[0] == before and not saved.exists()
    # --force goes on (the partition in flight left alone); with no controller to act, nothing moves: exit 1
    r = run("brokers", "drain", "1", "--save", str(saved), "--timeout", "0.5", "--force")
    assert r.exit_code not in (0, 7) and saved.exists(), (r.exit_code, r.stderr)


def test_undrain_dry_run_changes_nothing_and_an_in_flight_reassignment_is_refused_without_force(run, drain_cluster,
                                                                                                tmp_path):
    kz = drain_cluster
    saved = tmp_path / "drain.json"
    run("brokers", "drain", "1", "--save", str(saved), "--timeout", "0.3")  # no controller: it times out
    assert saved.exists()
    for znode in (REASSIGN, "/admin/preferred_replica_election"):  # as the controller would, once done
        if kz.exists(znode):
            kz.delete(znode)
    code, doc, err = run.json("brokers", "undrain", "1", "--from", str(saved), "--dry-run", "--timeout", "1")
    assert code == 0, err
    assert not kz.exists(REASSIGN) and not kz.exists("/admin/preferred_replica_election")
    in_flight(kz, partition=1)
    before = kz.get(REASSIGN)[0]
    r = run("brokers", "undrain", "1", "--from", str(saved), "--timeout", "1")
    assert r.exit_code == 7 and "--force" in r.stderr, r.stderr
    assert kz.get(REASSIGN)[0] == before
    r = run("brokers", "undrain", "1", "--from", str(saved), "--timeout", "0.3", "--force")
    assert r.exit_code != 7, r.stderr


def test_unregister_dry_run_checks_and_sends_nothing(run_nozk):
    sc = Scenario.cluster(brokers=3)
    sc.brokers[2].fenced = True
    with KraftServer(sc) as srv:
        bs = srv.bootstrap()
        r = run_nozk("brokers", "unregister", "1", "--dry-run", "--bootstrap-server", bs)  # active: refused
        assert r.exit_code == 7 and "--force" in r.stderr
        code_doc = run_nozk("brokers", "unregister", "3", "--dry-run", "--bootstrap-server", bs, "-o", "json")
        assert code_doc.exit_code == 0, code_doc.stderr
        assert json.loads(code_doc.stdout)["data"] == {"broker_id": 3, "unregistered": False, "was": "fenced",
                                                        "dry_run": True}
        assert run_nozk("brokers", "unregister", "1", "--dry-run", "--force", "--bootstrap-server", bs).exit_code == 0
        assert not srv.requests_for(UNREGISTER_BROKER)
