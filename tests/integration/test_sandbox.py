"""`kadmin sandbox` end to end: real processes started, bounced and stopped by pid."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from kadmin.sandbox.zkserver import pid_alive

pytestmark = pytest.mark.integration


def kadmin(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kadmin", *args], capture_output=True, text=True, env=env,
                          timeout=120)


def test_sandbox_lifecycle(tmp_path):
    env = {**os.environ, "KADMIN_SANDBOX_DIR": str(tmp_path / "sb")}
    up = kadmin("sandbox", "up", "--brokers", "4", "-o", "json", env=env)
    assert up.returncode == 0, up.stderr
    data = json.loads(up.stdout)["data"]
    zk = data["zookeeper"]
    assert zk.endswith("/kafka") and sorted(data["brokers"]) == ["1", "2", "3", "4"]
    pids = [m["pid"] for m in data["ensemble"]] + [data["daemon"]["pid"]]
    try:
        env["KADMIN_ZOOKEEPER"] = zk
        listed = json.loads(kadmin("brokers", "list", "-o", "json", env=env).stdout)["data"]
        assert [b["id"] for b in listed] == [1, 2, 3, 4]
        assert all(b["version"] == 5 and b["state"] == "registered" for b in listed)
        assert sum(b["is_controller"] for b in listed) == 1
        epochs = {b["id"]: b["epoch"] for b in listed}

        # idempotent: a second `up` reports the running sandbox
        again = kadmin("sandbox", "up", "-o", "json", env=env)
        assert again.returncode == 0 and json.loads(again.stdout)["data"]["already_running"] is True

        b = json.loads(kadmin("sandbox", "bounce", "2", "-o", "json", env=env).stdout)["data"]
        assert b["old_epoch"] == epochs[2] and b["new_epoch"] > epochs[2]
        wait = kadmin("brokers", "wait", "2", "--epoch-gt", str(epochs[2]), "--timeout", "5", env=env)
        assert wait.returncode == 0

        controller = next(x["id"] for x in listed if x["is_controller"])
        assert kadmin("sandbox", "kill", str(controller), env=env).returncode == 0
        after = json.loads(kadmin("brokers", "list", "-o", "json", env=env).stdout)["data"]
        assert controller not in [x["id"] for x in after]
        assert sum(x["is_controller"] for x in after) == 1  # another broker took over
        assert kadmin("sandbox", "kill", str(controller), env=env).returncode == 1  # already stopped
        started = json.loads(kadmin("sandbox", "start", str(controller), "-o", "json", env=env).stdout)["data"]
        assert started["new_epoch"] > epochs[controller]

        status = kadmin("sandbox", "status", "-o", "json", env=env)
        assert status.returncode == 0 and len(json.loads(status.stdout)["data"]["brokers"]) == 4
    finally:
        down = kadmin("sandbox", "down", "-o", "json", env=env)
    assert down.returncode == 0
    assert not any(pid_alive(p) for p in pids)
    assert kadmin("sandbox", "status", env=env).returncode == 3  # no sandbox any more


def test_a_crashed_controller_is_replaced_after_its_session_expires(fleet, run):
    from kadmin.sandbox.fleet import BrokerSpec

    for i in (1, 2, 3):
        fleet.register(BrokerSpec(i))
    assert fleet.fleet.controller_id == 1
    fleet.crash(1)  # no close: ZooKeeper expires the session (4 s here)
    r = run("brokers", "wait", "1", "--gone", "--timeout", "20")
    assert r.exit_code == 0
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        rows = json.loads(run("brokers", "list", "-o", "json").stdout)["data"]
        if any(b["is_controller"] for b in rows):
            break
        time.sleep(0.1)
    assert [b["id"] for b in rows if b["is_controller"]] == [2]
