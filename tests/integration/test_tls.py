"""`--zk-tls`: kadmin reads a ZooKeeper over its TLS client port (Netty, PEM certificates)."""

from __future__ import annotations

import json

import pytest

from kadmin.sandbox.fleet import BrokerSpec, ThreadedFleet
from kadmin.sandbox.ports import free_port
from kadmin.sandbox.zkserver import ZkServer, tls_config
from tests.conftest import openssl, started

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
    plain = run_nozk("brokers", "list", "-z", f"127.0.0.1:{secure}/tls", "--connect-timeout", "2")
    assert plain.exit_code == 4 and "Traceback" not in plain.stderr
    wrong = run_nozk("brokers", "list", "-z", f"127.0.0.1:{secure}/tls", "--zk-tls", "--zk-tls-ca",
                     str(certs / "other-ca.pem"), "--connect-timeout", "2")
    assert wrong.exit_code == 4 and len(wrong.stderr.splitlines()) == 1


# ---------------------------------------------------------------------------------------------------
# Host name verification (Kafka's zookeeper.ssl.endpoint.identification.algorithm=HTTPS, its default)


@pytest.fixture(scope="module")
def otherhost_zk(tmp_path_factory, certs):
    """A TLS ZooKeeper whose certificate (from the test CA) names only DNS:otherhost, with two brokers
    registered under /tls; (server, TLS port)."""
    d = tmp_path_factory.mktemp("otherhost")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "other.key", "-out", "other.csr",
            "-subj", "/CN=otherhost", cwd=d)
    (d / "ext.cnf").write_text("subjectAltName=DNS:otherhost\n")
    openssl("x509", "-req", "-in", "other.csr", "-CA", str(certs / "ca.pem"), "-CAkey", str(certs / "ca.key"),
            "-CAcreateserial", "-CAserial", str(d / "ca.srl"), "-out", "other.crt", "-days", "2",
            "-extfile", "ext.cnf", cwd=d)
    (d / "other.pem").write_text((d / "other.key").read_text() + (d / "other.crt").read_text())
    secure = free_port()
    s = started(ZkServer(d / "zk", free_port(), tick_ms=250,
                         extra_cfg=tls_config(secure, d / "other.pem", certs / "ca.pem")), secure_port=secure)
    fleet = ThreadedFleet([("127.0.0.1", s.client_port)], chroot="/tls")
    fleet.setup_cluster()
    fleet.register(BrokerSpec(1))
    fleet.register(BrokerSpec(2))
    yield s, secure
    fleet.shutdown()
    s.stop()


def tls_list(run_nozk, certs, port: int, *extra: str):
    return run_nozk("brokers", "list", "-z", f"127.0.0.1:{port}/tls", "--zk-tls", "--zk-tls-ca",
                    str(certs / "ca.pem"), "--connect-timeout", "5", "-o", "json", *extra)


def test_a_certificate_for_another_host_is_refused_by_default(otherhost_zk, certs, run_nozk):
    _, secure = otherhost_zk
    r = tls_list(run_nozk, certs, secure)
    assert r.exit_code == 4, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    assert "IP address mismatch" in r.stderr and "--zk-tls-no-hostname-check" in r.stderr, r.stderr


def test_no_hostname_check_accepts_it_and_still_checks_the_ca(otherhost_zk, certs, run_nozk):
    _, secure = otherhost_zk
    r = tls_list(run_nozk, certs, secure, "--zk-tls-no-hostname-check")
    assert r.exit_code == 0, r.stderr
    assert [b["id"] for b in json.loads(r.stdout)["data"]] == [1, 2]
    wrong_ca = run_nozk("brokers", "list", "-z", f"127.0.0.1:{secure}/tls", "--zk-tls", "--zk-tls-ca",
                        str(certs / "other-ca.pem"), "--zk-tls-no-hostname-check", "--connect-timeout", "3")
    assert wrong_ca.exit_code == 4 and len(wrong_ca.stderr.strip().splitlines()) == 1, wrong_ca.stderr


def test_the_opt_out_from_the_environment_and_from_a_context(otherhost_zk, certs, run_nozk, tmp_path, monkeypatch):
    _, secure = otherhost_zk
    r = run_nozk("brokers", "list", "-z", f"127.0.0.1:{secure}/tls", "--zk-tls", "--zk-tls-ca",
                 str(certs / "ca.pem"), "--connect-timeout", "5", "-o", "json",
                 env={"KADMIN_ZK_TLS_NO_HOSTNAME_CHECK": "1"})
    assert r.exit_code == 0, r.stderr
    cfg = tmp_path / "kadmin" / "config.toml"
    cfg.parent.mkdir()
    cfg.write_text(f'[contexts.t]\nzookeeper = "127.0.0.1:{secure}/tls"\nzk-tls = true\n'
                   f'zk-tls-ca = "{certs / "ca.pem"}"\nzk-tls-no-hostname-check = true\n')
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    ok = run_nozk("brokers", "list", "--context", "t", "--connect-timeout", "5", "-o", "json")
    assert ok.exit_code == 0, ok.stderr
    cfg.write_text(cfg.read_text().replace("zk-tls-no-hostname-check = true", "zk-tls-no-hostname-check = false"))
    refused = run_nozk("brokers", "list", "--context", "t", "--connect-timeout", "5")
    assert refused.exit_code == 4, refused.stderr


def test_a_certificate_naming_the_address_connects_by_default(tls_server, certs, run_nozk):
    """The session's server certificate carries IP:127.0.0.1 (tests/conftest.py): checked and accepted,
    by the kazoo connection and by the pipelined reader alike (brokers list uses both)."""
    _, secure = tls_server
    r = tls_list(run_nozk, certs, secure)
    assert r.exit_code == 0, r.stderr
    assert [b["id"] for b in json.loads(r.stdout)["data"]] == [1, 2]
