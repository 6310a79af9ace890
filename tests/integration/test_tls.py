"""`--zk-tls`: kadmin reads a ZooKeeper over its TLS client port (Netty, PEM certificates)."""

from __future__ import annotations

import json

import pytest

from kadmin.sandbox.fleet import BrokerSpec, ThreadedFleet

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def tls_server(tls_zk):
    s, secure = tls_zk
    fleet = ThreadedFleet([("127.0.0.1", s.client_port)], chroot="/tls")  # brokers use the plain port
    fleet.setup_cluster()
    fleet.register(BrokerSpec(1))
    fleet.register(BrokerSpec(2))
    yield s, secure
    fleet.shutdown()


def test_list_over_tls(tls_server, certs, run_nozk):
    _, secure = tls_server
    r = run_nozk("brokers", "list", "-z", f"127.0.0.1:{secure}/tls", "--zk-tls", "--zk-tls-ca",
                 str(certs / "ca.pem"), "-o", "json")
    assert r.exit_code == 0, r.stderr
    assert [b["id"] for b in json.loads(r.stdout)["data"]] == [1, 2]


def test_tls_port_without_tls_or_with_the_wrong_ca_is_unreachable(tls_server, certs, run_nozk):
    _, secure = tls_server
    plain = run_nozk("brokers", "list", "-z", f"127.0.0.1:{secure}/tls", "--timeout", "2")
    assert plain.exit_code == 4 and "Traceback" not in plain.stderr
    wrong = run_nozk("brokers", "list", "-z", f"127.0.0.1:{secure}/tls", "--zk-tls", "--zk-tls-ca",
                     str(certs / "other-ca.pem"), "--timeout", "2")
    assert wrong.exit_code == 4 and len(wrong.stderr.splitlines()) == 1
