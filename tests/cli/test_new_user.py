"""What a new user meets first: the install line kadmin prints, and the sandbox's answers on a pipe.

The sandbox tests run the real `kadmin sandbox` (a real ZooKeeper and the emulated brokers' daemon) in
a temporary directory and stop it at the end.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import pytest

from kadmin.sandbox.manager import process_identity

DISTRIBUTION = "kadmin-kafka"  # pyproject's [project].name: `kadmin` on PyPI is a Kerberos module

pytestmark = pytest.mark.timeout(120)


def test_the_distribution_name_is_not_the_pypi_kerberos_module():
    import tomllib

    project = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())["project"]
    assert project["name"] == DISTRIBUTION
    assert project["scripts"] == {"kadmin": "kadmin.cli.main:main"}  # the command stays `kadmin`


def test_history_without_pyspark_says_an_install_that_works(run_nozk, tmp_path, monkeypatch):
    """kadmin is not on PyPI (README: install from a clone): `pip install 'kadmin-kafka[spark]'` cannot work; the
    extra from the clone, or from the wheel `make dist` builds, does."""
    from kadmin import __version__

    # PySpark missing, at the edge: its import fails as it does where the extra is not installed
    monkeypatch.setitem(sys.modules, "pyspark", None)
    monkeypatch.setitem(sys.modules, "pyspark.sql", None)
    log = tmp_path / "events.ndjson"
    log.write_text(json.dumps({"event": "registered", "id": 1, "epoch": 5, "at": "2026-11-21T22:00:00.000Z"}) + "\n")
    r = run_nozk("history", "ingest", str(log), "--cluster", "c1", "--out", str(tmp_path / "table"))
    assert r.exit_code == 3, r.stderr
    assert len(r.stderr.splitlines()) == 1 and "Traceback" not in r.stderr, r.stderr
    assert "history needs PySpark" in r.stderr and "pip install '.[spark]'" in r.stderr, r.stderr
    wheel = f"{DISTRIBUTION.replace('-', '_')}-{__version__}-py3-none-any.whl"  # the wheel's name (PEP 427)
    assert f"pip install '{wheel}[spark]'" in r.stderr, r.stderr
    assert f"pip install '{DISTRIBUTION}[spark]'" not in r.stderr and "pip install 'kadmin[" not in r.stderr


# ---------------------------------------------------------------------------- sandbox
@pytest.fixture
def sandbox(run_nozk, tmp_path):
    """Runs `kadmin sandbox` commands on a sandbox in tmp_path; `down` at the end whatever happened."""
    env = {"KADMIN_SANDBOX_DIR": str(tmp_path / "sb")}

    def sb(*args: str):
        return run_nozk("sandbox", *args, env=env)

    yield sb
    sb("down")


def test_sandbox_up_refuses_another_broker_count_than_the_running_one(sandbox):
    up = sandbox("up", "--brokers", "2", "-o", "json")
    assert up.exit_code == 0, up.stderr
    assert sorted(json.loads(up.stdout)["data"]["brokers"]) == ["1", "2"]
    assert "up: 2 brokers on" in up.stderr

    other = sandbox("up", "--brokers", "3")
    assert other.exit_code == 3 and other.stdout == ""
    [line] = other.stderr.strip().splitlines()
    assert "--brokers 3" in line and "has 2 brokers" in line and "`kadmin sandbox down` first" in line

    # the same count, or none given, reports the running sandbox
    for args in (("--brokers", "2"), ()):
        again = sandbox("up", *args, "-o", "json")
        assert again.exit_code == 0, again.stderr
        assert json.loads(again.stdout)["data"]["already_running"] is True
        assert "already running: 2 brokers" in again.stderr
    assert sandbox("up", "--ensemble", "3").exit_code == 3


def test_sandbox_status_names_the_process_that_is_down_and_down_lists_rows(sandbox):
    up = sandbox("up", "--brokers", "1", "-o", "json")
    assert up.exit_code == 0, up.stderr
    assert "up: 1 broker on" in up.stderr
    daemon = json.loads(up.stdout)["data"]["daemon"]["pid"]

    ok = sandbox("status")
    assert ok.exit_code == 0 and ok.stderr == ""

    # the emulated brokers' daemon crashes: `up` ran in this process, so the daemon is its child to reap
    os.kill(daemon, signal.SIGKILL)
    os.waitpid(daemon, 0)
    assert process_identity(daemon) is None
    st = sandbox("status")  # on a pipe: plain
    assert st.exit_code == 1
    assert f"not running: emulated-brokers (pid {daemon})" in st.stderr
    assert "zookeeper" not in st.stderr.split("not running:")[1]  # ZooKeeper is up

    down = sandbox("down")
    assert down.exit_code == 0, down.stderr
    rows = [ln.split() for ln in down.stdout.splitlines()]
    assert rows[0] == ["PROCESS", "PID", "STATE", "REASON"]
    assert [r[:3] for r in rows[1:]] == [["zookeeper", rows[1][1], "stopped"],
                                        ["brokers", str(daemon), "already-gone"]]
    assert "stopped 1 process;" in down.stderr
