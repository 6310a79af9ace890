"""Issue 21: ZooKeeper-mode drain goes through the cluster's retried, translated znode reads and writes.

Against a real ZooKeeper: a session without permission on /admin (a digest ACL it does not hold) is a kadmin
error (AuthFailed, exit 4, as `_translate` maps NoAuthError for every other read), one line naming the znode,
never an internal error (70); through the CLI and at the class level. And a create whose reply is lost on a
connection loss is read back, never mistaken for someone else's znode (NodeExists on a blind retry).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from kazoo.exceptions import ConnectionLoss, NoAuthError
from kazoo.security import OPEN_ACL_UNSAFE, make_digest_acl

from kadmin.cluster.drain import ELECTION_ZNODE, REASSIGN_ZNODE, ZkDrain
from kadmin.cluster.zookeeper import ZkCluster, ZkConnection
from kadmin.errors import AuthFailed, ClusterUnreachable
from kadmin.exit_codes import ExitCode
from kadmin.sandbox.fleet import BrokerSpec

pytestmark = pytest.mark.integration

ADMIN_ACL = [make_digest_acl("admin", "s3cret", all=True)]  # the kadmin session holds no such identity


@pytest.fixture
def drain_cluster(fleet, kz):  # type: ignore[no-untyped-def]
    """Brokers 1 and 2; broker 1 leads t-0 and follows in t-1; /admin exists (as a broker creates it)."""
    fleet.register(BrokerSpec(1))
    fleet.register(BrokerSpec(2))
    fleet.create_topic("t", {0: [1, 2], 1: [2, 1]})
    kz.ensure_path("/admin")
    return kz


@pytest.fixture
def cluster(zk: str) -> Iterator[ZkCluster]:
    hosts, _, chroot = zk.partition("/")
    c = ZkCluster(ZkConnection(hosts=hosts, chroot="/" + chroot, timeout=5.0)).start()
    yield c
    c.close()


def one_line(stderr: str) -> str:
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


def no_auth(cluster: ZkCluster, path: str) -> AuthFailed:
    """What the cluster's reads give for NoAuthError on `path` (the translation every other command uses)."""
    err = cluster._translate(path, NoAuthError())
    assert isinstance(err, AuthFailed) and err.exit_code == ExitCode.UNREACHABLE == 4
    return err


# ------------------------------------------------------------------------------------------ permissions
def test_cli_drain_without_create_permission_on_admin_is_exit_4_naming_the_znode(drain_cluster, zk, run_nozk,
                                                                                 tmp_path):
    kz = drain_cluster
    kz.set_acls("/admin", ADMIN_ACL)
    saved = tmp_path / "drain.json"
    r = run_nozk("brokers", "drain", "1", "-z", zk, "--save", str(saved), "--timeout", "1")
    assert r.exit_code == ExitCode.UNREACHABLE, (r.exit_code, r.stderr)
    line = one_line(r.stderr)
    assert REASSIGN_ZNODE in line and "not authorized" in line and "--zk-auth" in line, line
    assert "Traceback" not in r.stderr and "NoAuth" not in line and "internal" not in line.lower()
    code, doc, err = run_nozk.json("brokers", "drain", "1", "-z", zk, "--save", str(tmp_path / "j.json"),
                                   "--timeout", "1")
    assert code == 4 and doc["exit_code"] == 4 and doc["status"] == "error", (code, doc, err)
    assert [e["code"] for e in doc["errors"]] == ["auth_failed"] and REASSIGN_ZNODE in doc["errors"][0]["message"]
    # the identity the ACL names may create it: the message was about permission, nothing else
    r = run_nozk("brokers", "drain", "1", "-z", zk, "--zk-auth", "digest:admin:s3cret", "--save",
                 str(tmp_path / "ok.json"), "--timeout", "0.5")
    assert r.exit_code not in (4, 70), (r.exit_code, r.stderr)
    assert kz.exists(REASSIGN_ZNODE) is not None  # no controller here: it stays


def test_cli_drain_with_an_unreadable_reassignment_znode_is_exit_4_naming_it(drain_cluster, zk, run_nozk,
                                                                            tmp_path):
    kz = drain_cluster
    kz.create(REASSIGN_ZNODE, b'{"version":1,"partitions":[]}', acl=ADMIN_ACL)
    for extra in (["--dry-run"], []):
        r = run_nozk("brokers", "drain", "1", "-z", zk, "--save", str(tmp_path / "d.json"), "--timeout", "1", *extra)
        assert r.exit_code == ExitCode.UNREACHABLE, (extra, r.exit_code, r.stderr)
        line = one_line(r.stderr)
        assert f"not authorized to read {REASSIGN_ZNODE}" in line and "--zk-auth" in line, line


def test_class_level_no_auth_is_translated_like_every_other_read(drain_cluster, cluster):
    kz = drain_cluster
    kz.set_acls("/admin", ADMIN_ACL)
    d = ZkDrain(cluster)
    assert not hasattr(d, "zk")  # only the cluster's public znode methods
    assert d.partitions()  # reading: absent znodes are nothing in flight, whatever /admin's ACL
    with pytest.raises(AuthFailed) as e:
        d.reassign({("t", 0): (2, 1)})
    want = no_auth(cluster, REASSIGN_ZNODE)
    assert type(e.value) is type(want) and e.value.exit_code == want.exit_code == 4
    assert e.value.code == want.code == "auth_failed"
    assert REASSIGN_ZNODE in e.value.message and "\n" not in e.value.message, e.value.message
    with pytest.raises(AuthFailed) as e:
        d.elect_preferred([("t", 0)])
    assert ELECTION_ZNODE in e.value.message and e.value.exit_code == 4, e.value.message
    assert d.reassigned([("t", 0)]) and d.election_free()  # existence is not ACL-checked: still answered
    # a znode that exists but cannot be read: the read is translated too
    kz.add_auth("digest", "admin:s3cret")  # the test's own session, not kadmin's
    kz.set_acls("/admin", [*ADMIN_ACL, *OPEN_ACL_UNSAFE])  # world may create again
    kz.create(REASSIGN_ZNODE, b"{}", acl=ADMIN_ACL)
    with pytest.raises(AuthFailed) as e:
        d.partitions()
    assert e.value.message == no_auth(cluster, REASSIGN_ZNODE).message
    assert not d.reassigned([("t", 0)])


# ------------------------------------------------------------------------------ a lost reply to a create
class LoseReplies:
    """Wrap the kazoo client's create: `before` attempts fail without reaching the server, then `after`
    attempts reach it and lose the reply (the create is applied, ConnectionLoss is raised)."""

    def __init__(self, cluster: ZkCluster, before: int = 0, after: int = 0, meanwhile: Any = None) -> None:
        self.real = cluster.zk.create
        self.before, self.after, self.meanwhile = before, after, meanwhile
        self.calls = 0
        cluster.zk.create = self  # type: ignore[method-assign]

    def __call__(self, *a: Any, **kw: Any) -> Any:
        self.calls += 1
        if self.meanwhile is not None:
            self.meanwhile()
            self.meanwhile = None
        if self.before > 0:
            self.before -= 1
            raise ConnectionLoss()
        got = self.real(*a, **kw)
        if self.after > 0:
            self.after -= 1
            raise ConnectionLoss()
        return got


def test_a_create_applied_whose_reply_was_lost_is_ours(drain_cluster, cluster):
    kz = drain_cluster
    lost = LoseReplies(cluster, after=1)
    assert ZkDrain(cluster).reassign({("t", 0): (2, 1)}) == {}  # not "a reassignment is in flight"
    assert lost.calls == 1  # read back, not created again
    assert json.loads(kz.get(REASSIGN_ZNODE)[0])["partitions"] == [{"topic": "t", "partition": 0, "replicas": [2, 1]}]


def test_a_create_lost_before_it_reached_the_server_is_made_again(drain_cluster, cluster):
    kz = drain_cluster
    lost = LoseReplies(cluster, before=1)
    assert ZkDrain(cluster).elect_preferred([("t", 0)]) == {}
    assert lost.calls == 2
    assert json.loads(kz.get(ELECTION_ZNODE)[0]) == {"version": 1, "partitions": [{"topic": "t", "partition": 0}]}


def test_someone_elses_znode_found_after_a_lost_create_is_theirs(drain_cluster, cluster):
    kz = drain_cluster
    theirs = b'{"version":1,"partitions":[{"topic":"t","partition":1,"replicas":[1,2]}]}'
    LoseReplies(cluster, before=1, meanwhile=lambda: kz.create(REASSIGN_ZNODE, theirs))
    got = ZkDrain(cluster).reassign({("t", 0): (2, 1)})
    assert list(got) == [("t", 0)] and "REASSIGNMENT_IN_PROGRESS" in got[("t", 0)]
    assert kz.get(REASSIGN_ZNODE)[0] == theirs  # left as it was
    assert cluster.create_znode(REASSIGN_ZNODE, theirs) is False  # the same bytes, but not created here


def test_a_create_that_never_gets_through_is_unreachable_naming_the_znode(drain_cluster, cluster):
    kz = drain_cluster
    lost = LoseReplies(cluster, before=100)
    with pytest.raises(ClusterUnreachable) as e:
        ZkDrain(cluster).reassign({("t", 0): (2, 1)})
    assert e.value.exit_code == 4 and REASSIGN_ZNODE in e.value.message, e.value.message
    assert 1 < lost.calls < 10 and kz.exists(REASSIGN_ZNODE) is None


def test_znode_methods_answer_plainly(drain_cluster, cluster):
    kz = drain_cluster
    assert cluster.read_znode("/admin/nothing") is None and cluster.znode_exists("/admin/nothing") is False
    assert cluster.create_znode("/admin/new/deeper", b"x") is True  # makepath
    assert cluster.read_znode("/admin/new/deeper") == b"x" and cluster.znode_exists("/admin/new/deeper")
    assert cluster.create_znode("/admin/new/deeper", b"x") is False  # exists already: not created here
    assert kz.get("/admin/new/deeper")[0] == b"x"


def test_the_backend_closes_the_zookeeper_session_drain_opened(zk: str, fleet: Any) -> None:
    """The drain capability opens the ZooKeeper session itself (ZkDrain over a ZkCluster): closing the backend,
    as every command does when it ends, closes that session too (it leaked once the backend opened lazily)."""
    from kadmin.cluster.connect import open_backend
    from kadmin.config import ConnectionSettings, Sourced
    from tests.support.kafka import wait_for

    backend = open_backend(ConnectionSettings({"zookeeper": Sourced(zk, "flag")}), "brokers drain")
    moves = backend.leadership
    moves.partitions()  # the session is open and answering
    session = moves.cluster.zk  # type: ignore[attr-defined]
    assert session.connected
    backend.close()  # sends CloseSession; kazoo's own clean-up ends on its thread
    wait_for(lambda: not session.connected or None, 30, "the drain's ZooKeeper session to end")
