"""Shared fixtures: a real ZooKeeper on loopback (the sandbox's own launcher) and emulated brokers.

A missing ZooKeeper or Java is an error here, never a skip: CI must fail when it cannot test.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kadmin.cli.app import app
from kadmin.sandbox.fleet import ThreadedFleet
from kadmin.sandbox.ports import free_port
from kadmin.sandbox.zkserver import Ensemble, ZkServer, tls_config
from tests.support import spark_jvm
from tests.support.hung import hung  # noqa: F401 - a fixture for every test (a server that never answers)

pytest_plugins = ["tests.support.schedule"]  # the order for pytest-xdist: the longest scopes first

# A runner that starts the suite as a background job without job control (nohup, `cmd &` in a
# script, some CI agents) hands it SIGINT ignored, and an ignored signal stays ignored across exec:
# kadmin would then rightly ignore Ctrl-C too, in this process and in every child it starts. The
# Ctrl-C tests are about a user's terminal, where SIGINT interrupts: give the suite that.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# every Spark JVM of the suite: C1 only, and the class-data archive (tests/support/spark_jvm.py)
for _k, _v in spark_jvm.ENV.items():
    os.environ.setdefault(_k, _v)

_spark_cds = spark_jvm.Builder()


def _runs_spark(config: pytest.Config) -> bool:
    """Whether this run includes the Spark tests (the whole suite, tests/pipeline or tests/kafka)."""
    for a in config.args or ["tests"]:
        path = os.path.relpath(os.path.abspath(str(a).split("::")[0]), config.rootpath)
        if path in (".", "tests") or path.startswith(("tests/pipeline", "tests/kafka")):
            return True
    return False


def pytest_sessionstart(session: pytest.Session) -> None:
    """The Spark class-data archive's build, beside the run, when it is missing (from the process that runs or
    hands out the tests, not from each xdist worker)."""
    if not hasattr(session.config, "workerinput") and _runs_spark(session.config):
        _spark_cds.start()


def pytest_sessionfinish(session: pytest.Session) -> None:
    _spark_cds.stop()


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No user config, contexts or KADMIN_* variables leak into a test."""
    for k in list(os.environ):
        if k.startswith("KADMIN_"):
            monkeypatch.delenv(k)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))


@pytest.fixture(scope="session")
def zk_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ensemble]:
    ens = Ensemble(tmp_path_factory.mktemp("zk"), size=1, tick_ms=250)
    ens.start(timeout=60)
    yield ens
    ens.stop()


@pytest.fixture
def chroot() -> str:
    return f"/t-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def zk(zk_server: Ensemble, chroot: str) -> str:
    """The connection string of a fresh chroot on the session's ZooKeeper."""
    return zk_server.connect_string + chroot


@pytest.fixture
def fleet(zk_server: Ensemble, chroot: str) -> Iterator[ThreadedFleet]:
    """Emulated brokers registering under the test's chroot, each from its own session."""
    f = ThreadedFleet(zk_server.hosts, chroot=chroot, session_timeout_ms=4000)
    f.setup_cluster()
    yield f
    f.shutdown()


@pytest.fixture
def kz(zk: str, fleet: ThreadedFleet) -> Iterator[Any]:
    """A kazoo client on the test's chroot (after the fleet created Kafka's paths), to write and check znodes."""
    from kazoo.client import KazooClient

    k = KazooClient(hosts=zk)
    k.start(timeout=10)
    yield k
    k.stop()
    k.close()


class Run:
    """Invoke the real Typer app in-process; stdout and stderr kept apart."""

    def __init__(self, zk: str | None) -> None:
        self.zk = zk
        self.runner = CliRunner()

    def __call__(self, *args: str, env: dict[str, str] | None = None) -> Any:
        e = {"KADMIN_ZOOKEEPER": self.zk} if self.zk else {}
        e.update(env or {})
        return self.runner.invoke(app, list(args), env=e)

    def json(self, *args: str, **kw: Any) -> tuple[int, dict[str, Any], str]:
        r = self(*args, "-o", "json", **kw)
        return r.exit_code, json.loads(r.stdout), r.stderr


@pytest.fixture
def run(zk: str) -> Run:
    return Run(zk)


@pytest.fixture
def run_nozk() -> Run:
    return Run(None)


def openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


@pytest.fixture(scope="session")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A test CA, a second unrelated CA, and a server key+certificate for 127.0.0.1 (PEM, via openssl)."""
    d = tmp_path_factory.mktemp("tls")
    for name in ("ca", "other-ca"):
        openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.pem",
                "-days", "2", "-subj", f"/CN=kadmin-test-{name}", cwd=d)
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
            "-subj", "/CN=127.0.0.1", cwd=d)
    (d / "ext.cnf").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", "server.crt", "-days", "2", "-extfile", "ext.cnf", cwd=d)
    (d / "server.pem").write_text((d / "server.key").read_text() + (d / "server.crt").read_text())
    return d


@pytest.fixture(scope="session")
def tls_zk(tmp_path_factory: pytest.TempPathFactory, certs: Path) -> Iterator[tuple[ZkServer, int]]:
    """A standalone ZooKeeper with a plain client port and a TLS one (Netty, PEM): (server, TLS port)."""
    secure = free_port()
    s = started(ZkServer(tmp_path_factory.mktemp("zktls"), free_port(), tick_ms=250,
                         extra_cfg=tls_config(secure, certs / "server.pem", certs / "ca.pem")), secure_port=secure)
    yield s, secure
    s.stop()


def started(s: ZkServer, timeout: float = 60, secure_port: int | None = None) -> ZkServer:
    """Write the server's config, start it and return it once it serves (its `srvr` names a mode) and, with
    `secure_port`, once that port takes connections too: ZooKeeper opens its TLS port after the plain one, and
    under load a test reached it first (connection refused, run 25)."""
    s.write_config()
    s.start()
    deadline = time.monotonic() + timeout
    while s.mode() is None or secure_port is not None and not _listening(secure_port):
        assert time.monotonic() < deadline and s.alive(), f"ZooKeeper on port {s.client_port} did not start"
        time.sleep(0.05)
    return s


def _listening(port: int) -> bool:
    import socket

    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


@pytest.fixture(scope="session")
def ensemble(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ensemble]:
    """A 3-server ensemble on loopback. A test that kills a member must start it again."""
    ens = Ensemble(tmp_path_factory.mktemp("ens"), size=3, tick_ms=250)
    ens.start(timeout=90)
    yield ens
    ens.stop()
