"""`quorum describe --zk-tls`: every ZooKeeper connection carries the TLS and auth settings.

Against a TLS-only port a connection without TLS never gets an answer (the cluster id came out as
None); against a port-unified server (`client.portUnification=true`) it would be accepted in
plaintext, digest credentials included. Both servers here hold /cluster/id under a digest ACL.
"""

from __future__ import annotations

import json

import pytest
from kazoo.client import KazooClient
from kazoo.security import make_digest_acl

from kadmin.cluster.zookeeper import ZkCluster
from kadmin.sandbox.ports import free_port
from kadmin.sandbox.zkserver import ZkServer, tls_config
from tests.conftest import started
from tests.integration.test_tls import otherhost_zk  # noqa: F401,F811 - a fixture (a TLS server for "otherhost")

pytestmark = pytest.mark.integration

CHROOT = "/qtls"
CLUSTER_ID = "tls-cluster-id-0001"


def seed(port: int) -> None:
    """/cluster/id readable only by digest user kadmin (written over the plain port)."""
    k = KazooClient(hosts=f"127.0.0.1:{port}", auth_data=[("digest", "kadmin:pw")])
    k.start(timeout=30)
    try:
        k.ensure_path(CHROOT + "/cluster")
        if not k.exists(CHROOT + "/cluster/id"):
            k.create(CHROOT + "/cluster/id", json.dumps({"version": "1", "id": CLUSTER_ID}).encode(),
                     acl=[make_digest_acl("kadmin", "pw", all=True)])
    finally:
        k.stop()
        k.close()


@pytest.fixture(scope="module")
def unified(tmp_path_factory, certs):
    """A standalone ZooKeeper whose plain client port also speaks TLS."""
    s = started(ZkServer(tmp_path_factory.mktemp("zkunified"), free_port(), tick_ms=250,
                         extra_cfg=tls_config(free_port(), certs / "server.pem", certs / "ca.pem",
                                              port_unification=True)))
    yield s
    s.stop()


@pytest.fixture
def tls_connections(mocker):
    """Every ZkCluster built during the command, by its connection settings."""
    return mocker.spy(ZkCluster, "__init__")


def describe(run_nozk, certs, tmp_path, port: int):
    auth = tmp_path / "zk-auth"
    auth.write_text("digest:kadmin:pw\n")
    return run_nozk("quorum", "describe", "--status", "-z", f"127.0.0.1:{port}{CHROOT}", "--zk-tls",
                    "--zk-tls-ca", str(certs / "ca.pem"), "--zk-auth", f"@{auth}", "-o", "json",
                    "--connect-timeout", "5")


def assert_all_tls(spy) -> None:
    conns = [call.args[1] for call in spy.call_args_list]
    assert conns, "no ZooKeeper connection was made"
    assert all(c.use_tls and c.tls_ca and c.auth for c in conns), conns


def test_describe_over_a_tls_only_port(tls_zk, certs, run_nozk, tmp_path, tls_connections):
    server, secure = tls_zk
    seed(server.client_port)
    r = describe(run_nozk, certs, tmp_path, secure)
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["data"]["cluster_id"] == CLUSTER_ID
    assert_all_tls(tls_connections)


def test_describe_on_a_port_unified_server_never_falls_back_to_plaintext(unified, certs, run_nozk, tmp_path,
                                                                         tls_connections):
    seed(unified.client_port)
    r = describe(run_nozk, certs, tmp_path, unified.client_port)
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["data"]["cluster_id"] == CLUSTER_ID
    assert_all_tls(tls_connections)


def test_describe_refuses_a_certificate_for_another_host_unless_told(otherhost_zk, certs, run_nozk):  # noqa: F811
    """The four-letter-word probes check the host name too (as Kafka's ZooKeeper client does by default)."""
    _, secure = otherhost_zk
    args = ["quorum", "describe", "--status", "-z", f"127.0.0.1:{secure}/tls", "--zk-tls", "--zk-tls-ca",
            str(certs / "ca.pem"), "-o", "json", "--connect-timeout", "5"]
    refused = run_nozk(*args)
    assert refused.exit_code == 4, refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1 and "IP address mismatch" in refused.stderr, refused.stderr
    ok = run_nozk(*args, "--zk-tls-no-hostname-check")
    assert ok.exit_code == 0, ok.stderr
    assert json.loads(ok.stdout)["data"]["leader_id"] is not None
